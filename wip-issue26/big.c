#include <stdio.h>
__attribute__((aligned(65536))) int big[4] = {1,2,3,4};
int main(void) { printf("%d %lu\n", big[2], (unsigned long)big & 0xffff); return 0; }
