target triple = "x86_64-pc-linux-gnu"
%T = type { %T, [2 x %T] }
define i32 @f(%T %p) #0 {
  ret i32 0
}

attributes #0 = { "neverc-callconv"="gpr:rdi;ret:rax" }
