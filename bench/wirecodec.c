/*
 * wirecodec.c - offline study: how small could the wire get?
 *
 *   wirecodec [--events N] [--chunks 65536,1048576] [--levels 1,3] FILE...
 *
 * trace_stream compresses each chunk of raw 32-byte records into one zstd
 * frame.  This program takes real records (callsight trace files, e.g. the
 * stream file serve wrote for the demo workload), cuts them into chunks the
 * way trace_stream does, and for each chunk size, zstd level and candidate
 * transform reports the wire bytes per event (12-byte chunk header + frame,
 * summed over chunks, divided by records) and the CPU cost of transform +
 * compression.  Every transform is applied per chunk with fresh state, so a
 * chunk still decodes on its own, and every chunk is decoded and compared
 * with the original (a transform that does not round-trip fails the run).
 *
 * Transforms (record fields little-endian; tid and kind always stay as they
 * are, so the decoder can look up the same per-thread state):
 *   none     the records as trace_stream sends them today
 *   shuffle  byte transposition: byte 0 of every record, then byte 1, ...
 *   delta    per tid: ts - previous ts, func XOR previous func,
 *            call_site - previous call_site
 *   delta+shuffle
 *   stack    per tid: ts - previous ts; a shadow call stack predicts the
 *            rest: an enter's func XOR the thread's previous enter's func,
 *            its call_site - the caller's func (the stack top); an exit's
 *            func and call_site XOR the stack top (both 0 when it matches)
 *   stack+shuffle
 *   codec    what the wire carries as TRACE_CHUNK_EVENTS_CODED
 *            (trace_wire.h, what trace_stream and serve run): stack+shuffle
 *            with a direct-mapped thread table, a circular 64-deep stack
 *            and a blocked 8x8 transposition, written for speed
 * Markers (kind 2) take part only in the ts delta.
 *
 * Output: one line per (chunk, level, transform):
 *   wirecodec chunk=B level=L transform=NAME events=E bytes_per_event=X
 *       ratio=R encode_mb_s=M transform_mb_s=X verified=1
 * encode_mb_s is raw MB (10^6 bytes) per CPU second of this thread for
 * transform + compression, transform_mb_s the same for the transform alone
 * (none has no transform: its figure is 0).
 *
 * C11; libzstd.  Build:
 *   cc -std=c11 -O2 -I runtime -o wirecodec wirecodec.c -lzstd
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zstd.h>

#include "trace.h"
#include "trace_wire.h"

#define EV TRACE_EVENT_SIZE
#define TID_SLOTS 1024u /* per-chunk thread table; the last slot is shared overflow */
#define STACK_MAX 64u

struct tstate {
    uint32_t tid;
    int used;
    uint64_t ts, func, site, enter_func;
    uint32_t depth;
    uint64_t sfunc[STACK_MAX], ssite[STACK_MAX];
};

static struct tstate *tab;
static uint32_t used_slots[TID_SLOTS], nused;

static void tab_reset(void)
{
    for (uint32_t i = 0; i < nused; i++)
        memset(&tab[used_slots[i]], 0, sizeof *tab);
    nused = 0;
}

/* Deterministic in the sequence of tids, so encoder and decoder agree. */
static struct tstate *tab_get(uint32_t tid)
{
    uint32_t h = (tid * 2654435761u) % (TID_SLOTS - 1);
    for (uint32_t probe = 0; probe < TID_SLOTS - 1; probe++, h = (h + 1) % (TID_SLOTS - 1)) {
        struct tstate *s = &tab[h];
        if (s->used && s->tid == tid)
            return s;
        if (!s->used) {
            if (nused >= (TID_SLOTS - 1) * 3 / 4)
                break;
            s->used = 1;
            s->tid = tid;
            used_slots[nused++] = h;
            return s;
        }
    }
    struct tstate *o = &tab[TID_SLOTS - 1]; /* shared by every tid past the table's fill */
    if (!o->used) {
        o->used = 1;
        used_slots[nused++] = TID_SLOTS - 1;
    }
    return o;
}

/* ---- per-record transforms: enc != 0 encodes, else decodes in place ---- */

/* `r` holds the input record; `o` gets the output.  The state update uses
 * the original values: on encode those are the input, on decode the output. */
static void xf_delta(const unsigned char *r, unsigned char *o, int enc)
{
    memcpy(o, r, EV);
    struct tstate *s = tab_get(wire_le32(r + 24));
    uint64_t ts = wire_le64(r), func = wire_le64(r + 8), site = wire_le64(r + 16);
    if (enc) {
        wire_put_le64(o, ts - s->ts);
        wire_put_le64(o + 8, func ^ s->func);
        wire_put_le64(o + 16, site - s->site);
    } else {
        ts += s->ts;
        func ^= s->func;
        site += s->site;
        wire_put_le64(o, ts);
        wire_put_le64(o + 8, func);
        wire_put_le64(o + 16, site);
    }
    s->ts = enc ? ts : wire_le64(o);
    s->func = enc ? func : wire_le64(o + 8);
    s->site = enc ? site : wire_le64(o + 16);
}

static void xf_stack(const unsigned char *r, unsigned char *o, int enc)
{
    memcpy(o, r, EV);
    struct tstate *s = tab_get(wire_le32(r + 24));
    uint8_t kind = r[28];
    uint64_t ts = wire_le64(r), func = wire_le64(r + 8), site = wire_le64(r + 16);
    uint64_t top_func = 0, top_site = 0;
    int top_known = s->depth > 0 && s->depth <= STACK_MAX;
    if (top_known) {
        top_func = s->sfunc[s->depth - 1];
        top_site = s->ssite[s->depth - 1];
    }
    uint64_t ts0 = enc ? ts : ts + s->ts; /* the original ts */
    wire_put_le64(o, enc ? ts - s->ts : ts0);
    s->ts = ts0;
    if (kind == TRACE_KIND_ENTER) {
        uint64_t f = func ^ s->enter_func; /* XOR is its own inverse */
        uint64_t st = enc ? site - top_func : site + top_func;
        wire_put_le64(o + 8, f);
        wire_put_le64(o + 16, st);
        uint64_t of = enc ? func : f, os = enc ? site : st; /* the originals */
        if (s->depth < STACK_MAX) {
            s->sfunc[s->depth] = of;
            s->ssite[s->depth] = os;
        }
        s->depth++;
        s->enter_func = of;
    } else if (kind == TRACE_KIND_EXIT) {
        wire_put_le64(o + 8, func ^ top_func);
        wire_put_le64(o + 16, site ^ top_site);
        if (s->depth > 0)
            s->depth--;
    }
}

/* Byte transposition of n records: lane k of record i goes to k * n + i. */
static void shuffle(const unsigned char *in, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < EV; k++)
            out[k * n + i] = in[i * EV + k];
}

static void unshuffle(const unsigned char *in, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < EV; k++)
            out[i * EV + k] = in[k * n + i];
}

enum { T_NONE, T_SHUFFLE, T_DELTA, T_DELTA_SHUFFLE, T_STACK, T_STACK_SHUFFLE, T_CODEC, T_COUNT };
static const char *const names[T_COUNT] = {"none",  "shuffle",       "delta", "delta+shuffle",
                                           "stack", "stack+shuffle", "codec"};
static struct wire_codec *codec;

/* Transforms n records from in to out (tmp: scratch of the same size). */
static void encode(int t, const unsigned char *in, unsigned char *out, unsigned char *tmp, size_t n)
{
    tab_reset();
    const unsigned char *src = in;
    if (t == T_CODEC) {
        wire_codec_encode(codec, in, out, n);
        return;
    }
    if (t == T_DELTA || t == T_DELTA_SHUFFLE || t == T_STACK || t == T_STACK_SHUFFLE) {
        unsigned char *dst = (t == T_DELTA || t == T_STACK) ? out : tmp;
        for (size_t i = 0; i < n; i++)
            (t <= T_DELTA_SHUFFLE ? xf_delta : xf_stack)(in + i * EV, dst + i * EV, 1);
        src = dst;
        if (t == T_DELTA || t == T_STACK)
            return;
    }
    if (t == T_NONE)
        memcpy(out, in, n * EV);
    else
        shuffle(src, out, n);
}

static void decode(int t, const unsigned char *in, unsigned char *out, unsigned char *tmp, size_t n)
{
    tab_reset();
    const unsigned char *src = in;
    if (t == T_NONE) {
        memcpy(out, in, n * EV);
        return;
    }
    if (t == T_CODEC) {
        wire_codec_decode(codec, in, out, n);
        return;
    }
    if (t == T_SHUFFLE || t == T_DELTA_SHUFFLE || t == T_STACK_SHUFFLE) {
        unshuffle(in, t == T_SHUFFLE ? out : tmp, n);
        if (t == T_SHUFFLE)
            return;
        src = tmp;
    }
    for (size_t i = 0; i < n; i++)
        (t == T_DELTA || t == T_DELTA_SHUFFLE ? xf_delta : xf_stack)(src + i * EV, out + i * EV, 0);
}

/* ---- driver ------------------------------------------------------------ */

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static unsigned char *load(int nfiles, char **files, uint64_t max_events, size_t *len)
{
    size_t cap = 0;
    unsigned char *buf = NULL;
    *len = 0;
    for (int i = 0; i < nfiles && *len / EV < max_events; i++) {
        FILE *f = fopen(files[i], "rb");
        unsigned char h[TRACE_FILE_HEADER_SIZE];
        if (!f || fread(h, 1, sizeof h, f) != sizeof h || memcmp(h, TRACE_FILE_MAGIC, 8) != 0 ||
            fseek(f, (long)wire_le32(h + 16), SEEK_SET) != 0) {
            fprintf(stderr, "wirecodec: %s: not a callsight trace file\n", files[i]);
            exit(1);
        }
        for (;;) {
            if (cap - *len < EV * 4096) {
                cap = cap ? cap * 2 : (size_t)64 << 20;
                buf = realloc(buf, cap);
                if (!buf) {
                    fprintf(stderr, "wirecodec: out of memory\n");
                    exit(1);
                }
            }
            size_t want = (cap - *len) / EV;
            if (want > max_events - *len / EV)
                want = (size_t)(max_events - *len / EV);
            size_t got = fread(buf + *len, EV, want, f);
            *len += got * EV;
            if (got < want || *len / EV >= max_events)
                break;
        }
        fclose(f);
    }
    return buf;
}

static int parse_list(const char *s, long *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        out[n++] = strtol(s, &end, 10);
        if (end == s)
            return -1;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    long chunk_list[8] = {65536, 1048576}, level_list[8] = {1, 3};
    int nchunks = 2, nlevels = 2, i = 1;
    uint64_t max_events = UINT64_MAX;
    for (; i + 1 < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
        if (!strcmp(argv[i], "--events"))
            max_events = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--chunks"))
            nchunks = parse_list(argv[i + 1], chunk_list, 8);
        else if (!strcmp(argv[i], "--levels"))
            nlevels = parse_list(argv[i + 1], level_list, 8);
        else
            nchunks = -1;
        if (nchunks <= 0 || nlevels <= 0 || max_events == 0)
            break;
    }
    for (int c = 0; c < nchunks; c++)
        if (chunk_list[c] < (long)EV || chunk_list[c] % EV || chunk_list[c] > (4L << 20))
            nchunks = -1;
    if (nchunks <= 0 || nlevels <= 0 || max_events == 0 || i >= argc) {
        fprintf(stderr, "usage: wirecodec [--events N] [--chunks B,B..] [--levels L,L..] FILE...\n");
        return 2;
    }
    size_t len;
    unsigned char *all = load(argc - i, argv + i, max_events, &len);
    size_t maxchunk = 0;
    for (int c = 0; c < nchunks; c++)
        maxchunk = (size_t)chunk_list[c] > maxchunk ? (size_t)chunk_list[c] : maxchunk;
    size_t bound = ZSTD_compressBound(maxchunk);
    unsigned char *xf = malloc(maxchunk), *tmp = malloc(maxchunk), *back = malloc(maxchunk),
                  *frame = malloc(bound), *raw = malloc(maxchunk);
    tab = calloc(TID_SLOTS, sizeof *tab);
    codec = calloc(1, sizeof *codec);
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    ZSTD_DCtx *dctx = ZSTD_createDCtx();
    if (!len || !xf || !tmp || !back || !frame || !raw || !tab || !codec || !cctx || !dctx) {
        fprintf(stderr, "wirecodec: no events, or out of memory\n");
        return 1;
    }
    int bad = 0;
    for (int c = 0; c < nchunks; c++)
        for (int l = 0; l < nlevels; l++)
            for (int t = 0; t < T_COUNT; t++) {
                size_t cs = (size_t)chunk_list[c];
                uint64_t wire = 0;
                double cpu = 0, xcpu = 0;
                int verified = 1;
                for (size_t off = 0; off < len; off += cs) {
                    size_t n = (len - off < cs ? len - off : cs) / EV;
                    double t0 = cpu_s();
                    const unsigned char *src = all + off; /* none: as trace_stream does, no copy */
                    if (t != T_NONE) {
                        encode(t, all + off, xf, tmp, n);
                        src = xf;
                    }
                    xcpu += cpu_s() - t0;
                    size_t z = ZSTD_compressCCtx(cctx, frame, bound, src, n * EV, (int)level_list[l]);
                    cpu += cpu_s() - t0;
                    if (ZSTD_isError(z)) {
                        fprintf(stderr, "wirecodec: zstd: %s\n", ZSTD_getErrorName(z));
                        return 1;
                    }
                    wire += 12 + z;
                    size_t d = ZSTD_decompressDCtx(dctx, raw, maxchunk, frame, z);
                    if (ZSTD_isError(d) || d != n * EV)
                        verified = 0;
                    else {
                        decode(t, raw, back, tmp, n);
                        verified &= memcmp(back, all + off, n * EV) == 0;
                    }
                }
                bad |= !verified;
                printf("wirecodec chunk=%zu level=%ld transform=%s events=%zu bytes_per_event=%.3f ratio=%.2f "
                       "encode_mb_s=%.0f transform_mb_s=%.0f verified=%d\n",
                       cs, level_list[l], names[t], len / EV, (double)wire / (double)(len / EV),
                       (double)len / (double)wire, cpu > 0 ? (double)len / 1e6 / cpu : 0.0,
                       t != T_NONE && xcpu > 0 ? (double)len / 1e6 / xcpu : 0.0, verified);
                fflush(stdout);
            }
    return bad;
}
