/*
 * advice.c - which lever fits a trace that lost events (see advice.h).
 *
 * Only numbers the trace holds go into the words: events kept and
 * dropped, the span they cover, and the calls of each function.  Each
 * completed call made two events (its entry and exit), so the functions
 * with most calls are the ones to leave out; summary mode keeps every
 * call's count on the device whatever the link takes.
 */
#include "advice.h"

#include <stdlib.h>
#include <string.h>

#include "lib/textesc.h"

/* Function ids by calls, most first (ties by id, so the words are stable). */
static const struct funcstats *sort_fs;
static int by_calls(const void *pa, const void *pb)
{
    uint32_t x = *(const uint32_t *)pa, y = *(const uint32_t *)pb;
    uint64_t cx = sort_fs->v[x].calls, cy = sort_fs->v[y].calls;
    return cx != cy ? (cx < cy ? 1 : -1) : (x > y) - (x < y);
}

/* The fewest busiest functions whose calls make 90% of the calls: their
 * names (up to ADVICE_NAMES, each with its share) into buf; how many. */
static size_t busiest(const struct out_view *v, char *buf, size_t len, double *share)
{
    const struct funcstats *fs = &v->a->funcs;
    uint64_t total = 0;
    for (size_t i = 0; i < fs->n; i++)
        total += fs->v[i].calls;
    *share = 0;
    buf[0] = '\0';
    if (!total)
        return 0;
    uint32_t *ids = malloc(fs->n * sizeof *ids);
    if (!ids)
        return (size_t)-1;
    for (size_t i = 0; i < fs->n; i++)
        ids[i] = (uint32_t)i;
    sort_fs = fs;
    qsort(ids, fs->n, sizeof *ids, by_calls);
    uint64_t sum = 0;
    size_t k = 0, used = 0;
    for (; k < fs->n && sum * 10 < total * 9 && fs->v[ids[k]].calls; k++) {
        sum += fs->v[ids[k]].calls;
        if (k < ADVICE_NAMES && used < len) {
            char raw[256];
            const char *name = out_func_name(v, ids[k], raw, sizeof raw);
            int n = snprintf(buf + used, len - used, "%s%s (%.0f%%)", k ? ", " : "", name,
                             100.0 * (double)fs->v[ids[k]].calls / (double)total);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    if (k > ADVICE_NAMES && used < len)
        snprintf(buf + used, len - used, " and %zu more", k - ADVICE_NAMES);
    free(ids);
    *share = 100.0 * (double)sum / (double)total;
    return k;
}

/* "31.2 M" for 31234567. */
static void rate(char *buf, size_t len, double per_s)
{
    if (per_s >= 1e6)
        snprintf(buf, len, "%.1f M", per_s / 1e6);
    else if (per_s >= 1e3)
        snprintf(buf, len, "%.1f k", per_s / 1e3);
    else
        snprintf(buf, len, "%.0f", per_s);
}

int advice_each(const struct out_view *v, void (*fn)(void *ctx, const char *note), void *ctx)
{
    const struct analysis *a = v->a;
    uint64_t dropped = analysis_dropped(a), kept = a->events, made = kept + dropped;
    if (dropped < ADVICE_MIN_DROPPED || made < kept || dropped * 100 <= (uint64_t)ADVICE_DROPPED_PCT * made)
        return 0;
    char line[2048], names[1200], made_s[32], kept_s[32];
    double span = (double)analysis_span(a) / 1e9;
    if (span > 0) {
        rate(made_s, sizeof made_s, (double)made / span);
        rate(kept_s, sizeof kept_s, (double)kept / span);
        snprintf(line, sizeof line, "advice: %.1f%% of the events were dropped (%llu of %llu): over the %.3f s "
                 "traced the program made %s events/s and the trace kept %s/s", 100.0 * (double)dropped / (double)made,
                 (unsigned long long)dropped, (unsigned long long)made, span, made_s, kept_s);
    } else {
        snprintf(line, sizeof line, "advice: %.1f%% of the events were dropped (%llu of %llu)",
                 100.0 * (double)dropped / (double)made, (unsigned long long)dropped, (unsigned long long)made);
    }
    fn(ctx, line);
    fn(ctx, "advice: TRACE_MODE=summary (callsight run --summary) counts every call exactly on the device and "
            "sends a few KB/s, however fast the program calls");
    double share;
    size_t k = busiest(v, names, sizeof names, &share);
    if (k == (size_t)-1) {
        fn(ctx, "advice: out of memory naming the busiest functions");
        return -1;
    }
    if (k) {
        snprintf(line, sizeof line, "advice: %zu function%s made %.0f%% of the calls kept: %s; trace.config's "
                 "exclude-func NAME leaves %s out (callsight scan lists what is traced)", k, k == 1 ? "" : "s", share,
                 names, k == 1 ? "it" : "them");
        fn(ctx, line);
    }
    fn(ctx, "advice: for bursts, a bigger ring (TRACE_SHM_SIZE) holds more; TRACE_SHM_WAIT_US lets the program "
            "wait a bounded time for room instead of dropping (it says how long it waited); trace_stream "
            "--flight-recorder with TRACE_TRIGGER keeps only what led up to a slow call");
    return 0;
}

static void print_line(void *ctx, const char *note)
{
    fputs("note: ", ctx);
    textesc_put(ctx, note);
    fputc('\n', ctx);
}

int advice_write_text(const struct out_view *v, FILE *out)
{
    return advice_each(v, print_line, out);
}
