/*
 * clockcost.c - what reading the clock costs on this machine.
 *
 * Every traced event stamps a time, so the clock read is a floor under any
 * hook's cost: callsight's runtime reads the cycle counter (rdtsc on x86-64,
 * cntvct_el0 on aarch64) where it is invariant, else CLOCK_MONOTONIC.  On a
 * virtual machine either may cost several times what it does on bare metal;
 * bench/run.sh prints this beside the hook costs so they can be read
 * against it.
 *
 * Output, one line: clockcost counter_ns=X mono_ns=Y
 * (best of 5 rounds of 2 million back-to-back reads; counter_ns is 0 where
 * this architecture has no counter callsight uses).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define READS 2000000

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t counter(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return 0;
#endif
}

int main(void)
{
    double best_counter = 1e30, best_mono = 1e30;
    uint64_t sink = 0;
    for (int round = 0; round < 5; round++) {
        uint64_t t0 = mono_ns();
        for (int i = 0; i < READS; i++)
            sink += counter();
        uint64_t t1 = mono_ns();
        for (int i = 0; i < READS; i++)
            sink += mono_ns();
        uint64_t t2 = mono_ns();
        double c = (double)(t1 - t0) / READS, m = (double)(t2 - t1) / READS;
        best_counter = c < best_counter ? c : best_counter;
        best_mono = m < best_mono ? m : best_mono;
    }
#if !defined(__x86_64__) && !defined(__aarch64__)
    best_counter = 0;
#endif
    printf("clockcost counter_ns=%.2f mono_ns=%.2f sink=%u\n", best_counter, best_mono, (unsigned)(sink & 1));
    return 0;
}
