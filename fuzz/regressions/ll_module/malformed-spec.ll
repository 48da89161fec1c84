target triple = "x86_64-pc-linux-gnu"
define i32 @f(i32 %p) #0 {
  ret i32 0
}

attributes #0 = { "neverc-callconv"="gpr:(" }
