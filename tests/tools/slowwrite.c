/*
 * slowwrite.c - test helper, an LD_PRELOAD shim: every pwrite() (the
 * runtime's file-mode write) first sleeps SLOWWRITE_MS milliseconds
 * (default 5), so that a test can see where a slow flush's time goes.
 * Built by make (check-build) into $(BUILD)/tests/tools/, with no
 * sanitizer (it goes into programs built with or without); by hand:
 *   cc -shared -fPIC -o slowwrite.so slowwrite.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static void nap(void)
{
    const char *s = getenv("SLOWWRITE_MS");
    long ms = s ? atol(s) : 5;
    struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&d, &d) != 0) {
    }
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pwrite");
    nap();
    return real(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pwrite64");
    nap();
    return real(fd, buf, n, off);
}
