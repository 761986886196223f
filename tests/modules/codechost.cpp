// codechost.cpp - a C++ plugin host (test 235): it loads codec_a.so, runs
// it on the main thread and on a worker, unloads it, then loads codec_b.so
// (the loader puts it where codec_a was) and does the same, all within one
// flush interval: neither plugin is loaded at any flush of either thread.
// Prints where each plugin was loaded.
//
//   codechost DIR    (DIR holds codec_a.so and codec_b.so)
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <cstdio>
#include <cstdlib>

typedef int (*run_fn)(int);

static sem_t go, done;
static run_fn worker_run;
static int worker_n;

static void *worker(void *)
{
    for (int round = 0; round < 2; round++) {
        sem_wait(&go);
        std::printf("codechost: worker run %d\n", worker_run(worker_n));
        sem_post(&done);
    }
    return nullptr;
}

static void *load(const char *dir, const char *name, run_fn *run)
{
    char path[4096];
    std::snprintf(path, sizeof path, "%s/%s", dir, name);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    struct link_map *lm = nullptr;
    void *sym = h ? dlsym(h, "codec_run") : nullptr;
    if (!sym || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0) {
        std::fprintf(stderr, "codechost: %s: %s\n", path, dlerror());
        std::exit(1);
    }
    *run = reinterpret_cast<run_fn>(sym);
    std::printf("codechost: %s at 0x%lx\n", name, (unsigned long)lm->l_addr);
    return h;
}

static void use(const char *dir, const char *name, int main_n, int thread_n)
{
    run_fn run;
    void *h = load(dir, name, &run);
    std::printf("codechost: %s run %d\n", name, run(main_n));
    worker_run = run;
    worker_n = thread_n;
    sem_post(&go);
    sem_wait(&done);
    dlclose(h);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: codechost DIR\n");
        return 2;
    }
    pthread_t t;
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    pthread_create(&t, nullptr, worker, nullptr);
    use(argv[1], "codec_a.so", 7, 2);
    use(argv[1], "codec_b.so", 5, 3);
    pthread_join(t, nullptr);
    return 0;
}
