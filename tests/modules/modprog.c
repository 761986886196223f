/*
 * modprog.c - a program with modules (test 229): it calls libw.so, linked at
 * build time, then dlopens plug_a.so, calls it and closes it; dlopens
 * plug_b.so (the loader puts it where plug_a was), then plug_a.so again
 * (elsewhere now), calls both and closes them.  Between a close and the
 * next open, and after each open, it makes enough calls of its own that
 * the thread's buffer is flushed: module changes are seen at flushes, so
 * this way each module's events are told apart by the list in force.
 * Last it opens plug_a.so once more and calls it after a flush, then
 * closes it before the next: the flush's list no longer has it.
 * It prints where each plugin was loaded.
 *
 *   modprog DIR    (DIR holds plug_a.so and plug_b.so)
 */
#define _GNU_SOURCE /* dlinfo */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

int w_outer(int n);

static int spin(int i)
{
    return i + 1;
}

/* More calls than a thread buffer holds (runtime/trace_internal.h, TRACE_BUF_EVENTS). */
static void flush_calls(void)
{
    volatile int s = 0;
    for (int i = 0; i < 3000; i++)
        s += spin(i);
}

static void *open_plugin(const char *dir, const char *name, int calls)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "modprog: %s\n", dlerror());
        exit(1);
    }
    int (*run)(int) = (int (*)(int))dlsym(h, "plug_run");
    struct link_map *lm = NULL;
    if (!run || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0) {
        fprintf(stderr, "modprog: %s: no plug_run\n", path);
        exit(1);
    }
    printf("modprog: %s at 0x%lx\n", name, (unsigned long)lm->l_addr);
    printf("modprog: %s run %d\n", name, run(calls));
    return h;
}

static void run_plugin(void *h, int calls)
{
    int (*run)(int) = (int (*)(int))dlsym(h, "plug_run");
    printf("modprog: run again %d\n", run ? run(calls) : -1);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: modprog DIR\n");
        return 2;
    }
    printf("modprog: w_outer %d\n", w_outer(10));
    void *a = open_plugin(argv[1], "plug_a.so", 7);
    flush_calls();
    dlclose(a);
    flush_calls();
    void *b = open_plugin(argv[1], "plug_b.so", 5);
    flush_calls();
    a = open_plugin(argv[1], "plug_a.so", 3);
    flush_calls();
    dlclose(a);
    dlclose(b);
    flush_calls();
    /* calls of a plugin closed before the flush that carries them */
    a = open_plugin(argv[1], "plug_a.so", 0);
    flush_calls();
    run_plugin(a, 4);
    dlclose(a);
    flush_calls();
    return 0;
}
