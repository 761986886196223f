/*
 * lockhog.c - test helper: holds the shm ring's writer lock on and off, as
 * a preempted tracer would.
 *
 *   lockhog SHM HOLD_MS GAP_MS SECONDS
 *
 * Maps the ring SHM (trace_shm.h), then for SECONDS: takes the lock (CAS 0
 * -> its pid, so the runtime sees a live holder and never takes it over),
 * holds it HOLD_MS, releases it, sleeps GAP_MS.  Stops early on SIGTERM.
 * Prints "lockhog: holding the lock" once it first has it (a test waits for
 * that line), and at the end "lockhog: held the lock N times".
 *
 * Built by make (check-build) into $(BUILD)/tests/tools/; by hand:
 *   cc -std=c11 -I runtime -o lockhog lockhog.c
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "trace_shm.h"
#include "toolkit.h"

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: lockhog SHM HOLD_MS GAP_MS SECONDS\n");
        return 2;
    }
    long hold = atol(argv[2]), gap = atol(argv[3]);
    double until = now_s() + atof(argv[4]);
    int fd = shm_open(argv[1], O_RDWR, 0);
    void *map = fd < 0 ? MAP_FAILED : mmap(NULL, TRACE_SHM_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        perror("lockhog: the ring");
        return 1;
    }
    signal(SIGTERM, on_term);
    _Atomic uint32_t *lock = (_Atomic uint32_t *)(void *)&((trace_shm_header_t *)map)->lock;
    unsigned long held = 0;
    while (!stop && now_s() < until) {
        uint32_t free_value = 0;
        if (atomic_compare_exchange_strong(lock, &free_value, (uint32_t)getpid())) {
            if (!held++) {
                printf("lockhog: holding the lock\n");
                fflush(stdout);
            }
            tk_sleep_ms(hold);
            atomic_store(lock, 0);
        }
        tk_sleep_ms(gap);
    }
    printf("lockhog: held the lock %lu times\n", held);
    return 0;
}
