#!/usr/bin/env python3
"""Writes the C sources of bench/link_scale.sh's generated program: unit.c, compiled once per unit with
-DP=uN (every name it defines carries the prefix, so the units link side by side), and main.c for COUNT units,
which calls each unit's entry point and prints a checksum.

Usage: gen_scale.py DIR COUNT
"""
import pathlib
import sys

FUNCTIONS = 120

out, count = pathlib.Path(sys.argv[1]), int(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
unit = [
    "#include <stdio.h>",
    "#include <string.h>",
    "#define CAT2(a, b) a##_##b",
    "#define CAT(a, b) CAT2(a, b)",
    "#define N(name) CAT(P, name)",
    "int N(entry)(int seed);",
    "long N(counter);",
    "static char buffer[64];",
]
for index in range(FUNCTIONS):
    unit.append(f"int N(f{index})(int x);")
# A table of function pointers (relocated data) and of strings (merged string literals).
unit.append("int (*const N(table)[])(int) = {" + ", ".join(f"N(f{index})" for index in range(FUNCTIONS)) + "};")
unit.append("const char *const N(words)[] = {" + ", ".join(f'"word {index % 40}"' for index in range(FUNCTIONS)) + "};")
for index in range(FUNCTIONS):
    callee = (index * 7 + 3) % FUNCTIONS
    body = [f"int N(f{index})(int x) {{", "    N(counter)++;"]
    if index % 10 == 0:
        body.append(f'    snprintf(buffer, sizeof buffer, "%s %d", N(words)[{index}], x);')
        body.append("    x += (int)strlen(buffer);")
    if callee > index:
        body.append(f"    if (x & 1) return N(table)[{callee}](x / 2) + {index};")
    body.append(f"    return x * {index % 13 + 1} + {index};")
    body.append("}")
    unit.extend(body)
unit.append("int N(entry)(int seed) {")
unit.append("    int sum = 0;")
unit.append(f"    for (int i = 0; i < {FUNCTIONS}; i++) sum += N(table)[i](seed + i);")
unit.append("    return sum + (int)N(counter);")
unit.append("}")
(out / "unit.c").write_text("\n".join(unit) + "\n")

main = ["#include <stdio.h>"]
main += [f"int u{index}_entry(int seed);" for index in range(count)]
main.append("int main(void) {")
main.append("    unsigned sum = 0;")
main += [f"    sum = sum * 31 + (unsigned)u{index}_entry({index});" for index in range(count)]
main.append('    printf("%u\\n", sum);')
main.append("    return 0;")
main.append("}")
(out / f"main-{count}.c").write_text("\n".join(main) + "\n")
