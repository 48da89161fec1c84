#!/usr/bin/env python3
"""Writes an LLVM IR module with N small functions (default 1,000,000) for the materialization benchmark.

Each function has one of eight clang-style signatures and calls the previous function, so the materializer
plans headers, rewrites call sites and keeps the rest byte-identical.
"""
import sys

count = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
out = sys.stdout
signatures = [
    ("i32", "i32 noundef %0, i32 noundef %1, i32 noundef %2", "i32 noundef 1, i32 noundef 2, i32 noundef 3"),
    ("i64", "i64 noundef %0, i64 noundef %1", "i64 noundef 1, i64 noundef 2"),
    ("float", "float noundef %0, float noundef %1", "float noundef 1.0, float noundef 2.0"),
    ("double", "i32 noundef %0, double noundef %1, i64 noundef %2", "i32 noundef 1, double noundef 2.0, i64 noundef 3"),
    ("i32", "i32 noundef %0", "i32 noundef 7"),
    ("i64", "i8* noundef %0, i64 noundef %1", "i8* noundef null, i64 noundef 4"),
    ("i32", "i32 noundef %0, i32 noundef %1, i32 noundef %2, i32 noundef %3, i32 noundef %4", "i32 noundef 1, i32 noundef 2, i32 noundef 3, i32 noundef 4, i32 noundef 5"),
    ("void", "", ""),
]
out.write('target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"\n')
out.write('target triple = "x86_64-pc-linux-gnu"\n\n')
for n in range(count):
    ret, params, args = signatures[n % len(signatures)]
    out.write(f"define dso_local {ret} @f{n}({params}) local_unnamed_addr #0 {{\n")
    if n > 0:
        pret, _, pargs = signatures[(n - 1) % len(signatures)]
        call = f"call {pret} @f{n - 1}({pargs})"
        out.write(f"  %r = tail {call}\n" if pret != "void" else f"  tail {call}\n")
    if ret == "void":
        out.write("  ret void\n}\n\n")
    elif ret in ("float", "double"):
        out.write(f"  ret {ret} 0.0\n}}\n\n")
    else:
        out.write(f"  ret {ret} 0\n}}\n\n")
out.write('attributes #0 = { nounwind "frame-pointer"="none" }\n')
