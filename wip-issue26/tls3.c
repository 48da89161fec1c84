#include <stdio.h>
_Alignas(64) __thread int x;
_Alignas(16384) __thread char buf[10];
int main(void) { x = 3; buf[1] = 4; printf("%lu %lu %d %d\n", (unsigned long)&x % 64, (unsigned long)buf % 16384, x, buf[1]); return 0; }
