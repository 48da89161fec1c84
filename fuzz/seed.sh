#!/usr/bin/env bash
# Seeds the fuzz corpora (git-ignored) from the real declaration files of the repository.
# Usage: bash fuzz/seed.sh   (from anywhere)
set -euo pipefail
fuzz_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$fuzz_dir")"

phase="$fuzz_dir/corpus/phase_schema"
target="$fuzz_dir/corpus/target_toml"
mkdir -p "$phase" "$target"

cp "$root/PhaseSchema.json" "$phase/ours-PhaseSchema.json"
for file in "$root"/tests/fixtures/neverc/PhaseSchema*.json; do
    cp "$file" "$phase/neverc-$(basename "$file")"
done
for file in "$root"/targets/*.toml; do
    cp "$file" "$target/$(basename "$file")"
done

# The plugin ABI declarations, and LTO cache pruning policies.
mkdir -p "$fuzz_dir/corpus/abi_toml" "$fuzz_dir/corpus/cache_policy"
cp "$root"/abi/*.toml "$fuzz_dir/corpus/abi_toml/"
printf '%s' 'prune_interval=20m:prune_after=1h:cache_size=75%:cache_size_bytes=10g:cache_size_files=1000000' \
    > "$fuzz_dir/corpus/cache_policy/full"
printf '%s' 'cache_size_bytes=0x10k:prune_after=0s:' > "$fuzz_dir/corpus/cache_policy/hex"

# The audit reads the same schemas, and plugin manifests.
mkdir -p "$fuzz_dir/corpus/audit_schema" "$fuzz_dir/corpus/plugin_manifest"
cp "$phase"/* "$fuzz_dir/corpus/audit_schema/"
printf '%s\n' 'plugin = "commit-hook"' 'providers = ["linker", "lto"]' '[[phases]]' 'name = "neverc.link.commit"' \
    'observe = ["BEFORE", "AFTER_COMMIT"]' 'intercept = true' > "$fuzz_dir/corpus/plugin_manifest/commit.toml"
printf '%s' '{"plugin": "p", "providers": ["image-verifier"], "phases": [{"name": "neverc.link.layout", "replace": true, "skip_with_proof": true}]}' \
    > "$fuzz_dir/corpus/plugin_manifest/layout.json"

# Calling-convention parsers: plans, specs and signatures from the tests, and modules clang-14 writes.
mkdir -p "$fuzz_dir/corpus/cc_plan" "$fuzz_dir/corpus/cc_spec" "$fuzz_dir/corpus/cc_signature" "$fuzz_dir/corpus/ll_module"
printf '%s' 'neverc-cc-plan-v1;schema=llvm-x86_64-unknown-linux-gnu;target=0:0;cc=0:0;stack=16;returns=r,0,0,4,4,51,0,0;arguments=r,0,0,4,4,54,0,0|r,1,0,4,4,56,0,0|r,2,0,4,4,119,0,0;callee-saved=' > "$fuzz_dir/corpus/cc_plan/derived"
printf '%s' 'neverc-cc-plan-v1;callee-saved=12;arguments=r,0,0,4,4,11,0,0|s,1,0,8,8,0,0,3;returns=;stack=16;cc=768:1024;target=256:512;schema=x' > "$fuzz_dir/corpus/cc_plan/unordered"
index=0
for spec in 'gpr:rcx,rdx,r8;ret:rax' 'args:rcx,stack,r8;ret:rax' 'gpr:rcx;xmm:xmm5,xmm4;ret:rax;ret_xmm:xmm0;csr:r12' 'gpr:x9,x10;fpr:v5;ret:x0;csr:x28' 'ARG_GPR:a0;fpr:fa1;RET:a0'; do
    index=$((index + 1))
    printf '%s' "$spec" > "$fuzz_dir/corpus/cc_spec/spec$index"
done
index=0
for signature in 'i32 (i32, i64, ptr byval(%struct.Q) align 8)' 'void (%struct.P* noalias sret(%struct.P) align 8 %0, i64 noundef %1)' 'noundef zeroext i1 (half, fp128, x86_fp80, { i64, i64 }, <{ i8, i32 }>, <4 x float>, [4 x double], ...)'; do
    index=$((index + 1))
    printf '%s' "$signature" > "$fuzz_dir/corpus/cc_signature/signature$index"
done
if command -v clang-14 >/dev/null; then
    for source in "$root"/runtime/callconv/tests/fixtures/cc/*.c; do
        clang-14 -S -emit-llvm -O2 --target=x86_64-unknown-linux-gnu "$source" -o "$fuzz_dir/corpus/ll_module/$(basename "$source" .c).ll"
    done
fi
# Lowering reads the same modules, for every target, and the tests' modules with plans of their own.
mkdir -p "$fuzz_dir/corpus/ll_lower"
cp "$fuzz_dir"/corpus/ll_module/*.ll "$fuzz_dir/corpus/ll_lower/" 2>/dev/null || true
if command -v clang-14 >/dev/null; then
    for source in "$root"/runtime/callconv/tests/fixtures/cc/*.c; do
        clang-14 -S -emit-llvm -O2 --target=aarch64-unknown-linux-gnu "$source" -o "$fuzz_dir/corpus/ll_lower/$(basename "$source" .c)-aarch64.ll"
        clang-14 -S -emit-llvm -O2 --target=riscv64-unknown-linux-gnu "$source" -o "$fuzz_dir/corpus/ll_lower/$(basename "$source" .c)-riscv64.ll"
    done
fi

# Object readers: every object and archive of the link fixtures (built with gcc first).
mkdir -p "$fuzz_dir/corpus/link_inputs"
if command -v gcc >/dev/null && command -v g++ >/dev/null; then
    out="$(mktemp -d)"
    bash "$root/runtime/link/tests/fixtures/programs/build.sh" "$out" >/dev/null
    bash "$root/runtime/link/tests/fixtures/programs/foreign/foreign.sh" "$out" >/dev/null || true
    for file in "$out"/*/*.o "$out"/*/*.a "$out"/foreign/*.obj; do
        [ -f "$file" ] && cp "$file" "$fuzz_dir/corpus/link_inputs/$(basename "$(dirname "$file")")-$(basename "$file")"
    done
    rm -rf "$out"
fi
# Pairs of an object and a shared library it imports from (functions, data it copies, a thread-local
# variable), as read_pair in link_inputs.rs splits them: the object's length (u32, little-endian), the object,
# the library.
if command -v gcc >/dev/null && command -v python3 >/dev/null; then
    out="$(mktemp -d)"
    printf '%s\n' 'int counter = 3; __thread int slot; int add(int a) { return a + counter; }' \
        'int table[4] = {1, 2, 3, 4}; const char *name(void) { return "lib"; }' >"$out/lib.c"
    printf '%s\n' 'extern int counter; extern __thread int slot; extern int table[4]; int add(int);' \
        'const char *name(void); int (*hook)(int) = add;' \
        'int main(void) { slot = 1; return add(counter) + table[2] + hook(1) + (name() != 0) + slot; }' >"$out/main.c"
    gcc -O2 -fPIC -shared "$out/lib.c" -o "$out/libpair.so"
    for flags in "-fPIE" "-fno-pie"; do
        gcc -O2 $flags -c "$out/main.c" -o "$out/main.o"
        python3 - "$out/main.o" "$out/libpair.so" "$fuzz_dir/corpus/link_inputs/pair${flags}" <<'PY'
import struct, sys
obj, lib = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
open(sys.argv[3], "wb").write(struct.pack("<I", len(obj)) + obj + lib)
PY
    done
    rm -rf "$out"
fi
# RISC-V objects (paired relocations, relaxation, compressed code) and a pair importing from a RISC-V shared
# library, from tests/fixtures/riscv64.
if command -v riscv64-linux-gnu-gcc >/dev/null && command -v python3 >/dev/null; then
    out="$(mktemp -d)"
    for source in "$root"/tests/fixtures/riscv64/*.c; do
        riscv64-linux-gnu-gcc -O2 -ffreestanding -c "$source" -o "$fuzz_dir/corpus/link_inputs/riscv64-$(basename "$source" .c).o"
    done
    riscv64-linux-gnu-gcc -O2 -fPIC -shared "$root/tests/fixtures/riscv64/shlib.c" -o "$out/libshared.so"
    riscv64-linux-gnu-gcc -O2 -fPIC -c "$root/tests/fixtures/riscv64/shmain.c" -o "$out/main.o"
    python3 - "$out/main.o" "$out/libshared.so" "$fuzz_dir/corpus/link_inputs/pair-riscv64" <<'PY'
import struct, sys
obj, lib = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
open(sys.argv[3], "wb").write(struct.pack("<I", len(obj)) + obj + lib)
PY
    rm -rf "$out"
fi
# Relocatable output merges the same objects (archives are not its input: the link's readers extract them).
mkdir -p "$fuzz_dir/corpus/object_merge"
find "$fuzz_dir/corpus/link_inputs" -maxdepth 1 -name '*.o' -exec cp {} "$fuzz_dir/corpus/object_merge/" \;

# Bitcode symbol tables: a few objects clang-14 writes with -flto and -flto=thin (ELF, a two-module split LTO
# unit, Mach-O inside the bitcode wrapper, COFF).
mkdir -p "$fuzz_dir/corpus/bitcode_symtab"
if command -v clang-14 >/dev/null && command -v clang++-14 >/dev/null; then
    out="$(mktemp -d)"
    printf '%s\n' 'extern int u(int); extern int w(void) __attribute__((weak)); int d = 1; int z; static int s;' \
        '__thread int t; __attribute__((visibility("hidden"))) int h; __attribute__((used)) static int k;' \
        '__attribute__((section("x"))) int x = 2; int f(int a) { return u(a) + s + k + (w ? w() : 0); }' \
        'int g(int) __attribute__((weak, alias("f"))); __asm__(".globl m\nm: ret");' > "$out/basic.c"
    printf '%s\n' 'int c; __attribute__((aligned(64))) int a;' > "$out/common.c"
    printf '%s\n' 'inline int i(int x) { return x; } template <typename T> T t(T x) { return x; }' \
        'struct A { virtual int f(); virtual ~A(); }; int A::f() { return 1; } A::~A() {}' \
        'int use(A *a) { return i(1) + t<long>(2) + a->f(); }' > "$out/cxx.cpp"
    (
        cd "$out"
        clang-14 -c -flto basic.c -o basic-full.o
        clang-14 -c -flto=thin basic.c -o basic-thin.o
        clang-14 -c -flto -fcommon common.c -o common-full.o
        clang++-14 -c -flto cxx.cpp -o cxx-full.o
        clang++-14 -c -flto=thin -fsplit-lto-unit -fwhole-program-vtables -fvisibility=hidden cxx.cpp -o cxx-split.o
        clang-14 -c -flto --target=x86_64-apple-macosx11 common.c -o common-macho.o
        clang-14 -c -flto --target=x86_64-pc-windows-msvc common.c -o common-coff.o
    )
    cp "$out"/*.o "$fuzz_dir/corpus/bitcode_symtab/"
    rm -rf "$out"
fi

# The Link API driver reads any bytes as calls: a few fixed sequences start it off (every slot in turn, and
# pseudo-random runs).
mkdir -p "$fuzz_dir/corpus/link_api"
for seed in 1 2 3 4; do
    LC_ALL=C awk -v seed="$seed" 'BEGIN { srand(seed); for (i = 0; i < 2048; i++) printf "%c", int(rand() * 255) + 1 }' \
        > "$fuzz_dir/corpus/link_api/random$seed"
done
LC_ALL=C awk 'BEGIN { for (slot = 1; slot <= 56; slot++) for (i = 0; i < 24; i++) printf "%c", (i == 0 ? slot : 4 + i) }' \
    > "$fuzz_dir/corpus/link_api/slots"

# Saved regressions join the corpora, so a run starts from every input that once failed.
for name in phase_schema target_toml cc_plan cc_spec cc_signature ll_module ll_lower link_inputs object_merge bitcode_symtab \
    link_api; do
    if [ -d "$fuzz_dir/regressions/$name" ]; then
        find "$fuzz_dir/regressions/$name" -maxdepth 1 -type f ! -name '.*' ! -name '*.md' \
            -exec cp {} "$fuzz_dir/corpus/$name/" \;
    fi
done

echo "phase_schema: $(find "$phase" -type f | wc -l) files; target_toml: $(find "$target" -type f | wc -l) files"

# The linker scripts libraries ship (Debian's libm.a and libc.so), and response files.
mkdir -p "$fuzz_dir/corpus/linker_script" "$fuzz_dir/corpus/response_file"
printf '%s\n' '/* GNU ld script */' 'OUTPUT_FORMAT(elf64-x86-64)' \
    'GROUP ( /usr/lib/x86_64-linux-gnu/libm-2.36.a /usr/lib/x86_64-linux-gnu/libmvec.a )' \
    > "$fuzz_dir/corpus/linker_script/libm.a"
printf '%s\n' 'OUTPUT_FORMAT(elf64-x86-64)' \
    'GROUP ( /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libc_nonshared.a  AS_NEEDED ( /lib64/ld-linux-x86-64.so.2 ) )' \
    > "$fuzz_dir/corpus/linker_script/libc.so"
printf '%s\n' 'INPUT(-lfoo, "bar baz.o"); GROUP(a.a b.a)' > "$fuzz_dir/corpus/linker_script/mixed"
printf '%s\n' '-o out "a b.o" '"'"'c\'"'"'d'"'"' e\ f @nested -lm' > "$fuzz_dir/corpus/response_file/quoted"

# Redis replies, as the LTO cache's client reads them: three control bytes (the piece size, whether the limit is
# small, the small limit) and then what a server sends: the replies to AUTH, SELECT, GET and SET, errors, nested
# arrays, and a header that claims more than the limit.
mkdir -p "$fuzz_dir/corpus/redis_reply"
printf '\000\000\000+OK\r\n$5\r\nhello\r\n$-1\r\n' > "$fuzz_dir/corpus/redis_reply/get"
printf '\003\000\000-WRONGPASS invalid username-password pair\r\n-NOAUTH Authentication required.\r\n' \
    > "$fuzz_dir/corpus/redis_reply/errors"
printf '\001\000\000*3\r\n:-9223372036854775808\r\n*2\r\n$0\r\n\r\n*-1\r\n*0\r\n:42\r\n' > "$fuzz_dir/corpus/redis_reply/arrays"
printf '\007\001\004$2147483648\r\nAAAA' > "$fuzz_dir/corpus/redis_reply/claim"

# The ld front end's expansions: files f0..f7 separated by NUL bytes (response files, scripts, objects).
mkdir -p "$fuzz_dir/corpus/ld_expansion"
printf -- '-o prog start.o @f1 f2\0-lf3 @f4\0INPUT(f5 f5 -lf3)\0GROUP(f5)\0@f1\0\177ELF\2\1\1' > "$fuzz_dir/corpus/ld_expansion/chain"
printf -- '@f1 @f1\0@f2 @f2\0@f3 @f3\0@f1' > "$fuzz_dir/corpus/ld_expansion/fan-out"
printf -- 'f1\0INPUT(f2 f2 f2)\0INPUT(f3 f3 f3)\0INPUT(f1)' > "$fuzz_dir/corpus/ld_expansion/scripts"
