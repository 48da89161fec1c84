#include <stdio.h>
#include <pthread.h>
_Alignas(64) __thread int x;
_Alignas(4096) __thread char buf[10];
__thread int init1 = 42;
_Alignas(128) __thread long init2 = 7;
static void *show(void *arg) {
    x += 5; buf[3] = 'q'; init1++; init2 *= 3;
    printf("%s: x%%64=%lu buf%%4096=%lu init2%%128=%lu x=%d buf3=%c init1=%d init2=%ld\n", (const char *)arg,
           (unsigned long)&x % 64, (unsigned long)buf % 4096, (unsigned long)&init2 % 128, x, buf[3] ? buf[3] : '0', init1, init2);
    return 0;
}
int main(void) {
    show("main");
    pthread_t t;
    pthread_create(&t, 0, show, "thread");
    pthread_join(t, 0);
    show("main");
    return 0;
}
