target triple = "x86_64-pc-linux-gnu"
define i32 @f(i32 %a, i32 %b) #0 {
  ret i32 0
}

attributes #0 = { nounwind "neverc-callconv"="gpr:bogus,rdx;ret:rax" }
