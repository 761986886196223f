/*
 * ts_codec.c - the little-endian helpers and the event codec (part of
 * trace_stream.c): records put into the wire's byte order, and
 * TRACE_CHUNK_EVENTS_CODED's encoder.  Kept as the single file had them, in
 * a part of their own, so that the codec and helpers shared with serve,
 * bench and the fuzzers can take their place.
 */
#include "ts_internal.h"

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* Rewrite one native-order record in place as little-endian. */
static void event_to_le(unsigned char *p)
{
    trace_event_t ev;
    memcpy(&ev, p, sizeof ev);
    put_le64(p + offsetof(trace_event_t, ts), ev.ts);
    put_le64(p + offsetof(trace_event_t, func), ev.func);
    put_le64(p + offsetof(trace_event_t, call_site), ev.call_site);
    put_le32(p + offsetof(trace_event_t, tid), ev.tid);
}

static uint32_t get_le32(const unsigned char *c)
{
    return (uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* ---- the codec ----------------------------------------------------------
 * TRACE_CHUNK_EVENTS_CODED, as trace_shm.h specifies it: per thread, a
 * timestamp delta and a shadow call stack predicting func and call_site,
 * then byte planes.  (callsight serve decodes it with src/serve/stream_codec.c;
 * its tests check the two agree on every bit.)  Speed: the planes are
 * written in tiles of CODEC_TILE records, each tile one 64-bit field at a
 * time as 8x8 byte transpositions, so 8 write streams are live rather than
 * 32 that, for a 1 MiB chunk, would all fall into one cache set.
 */
#define CODEC_SLOTS TRACE_CODEC_THREAD_SLOTS
#define CODEC_DEPTH TRACE_CODEC_STACK_DEPTH
#define CODEC_TILE 256u
_Static_assert(CODEC_DEPTH <= 64, "one valid bit per stack entry in a u64");

struct codec_slot {
    uint32_t gen;   /* the chunk this state belongs to; any other: empty */
    uint32_t tid;
    uint32_t depth; /* modulo 2^32, as the format says */
    uint64_t ts, enter_func;
    uint64_t valid; /* bit k: stack entry k written since the reset; else it reads as 0 */
    uint64_t func[CODEC_DEPTH], site[CODEC_DEPTH];
};

struct codec {
    uint32_t gen; /* this chunk's generation; 0 is never one */
    struct codec_slot slot[CODEC_SLOTS];
    uint64_t w[CODEC_TILE][4]; /* one tile's coded records: ts, func, call_site, the rest */
};

/* Byte by byte so they mean the same on any host; compilers make each one load or store. */
static inline uint64_t codec_load(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static inline void codec_store(unsigned char *p, uint64_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
    p[4] = (unsigned char)(v >> 32);
    p[5] = (unsigned char)(v >> 40);
    p[6] = (unsigned char)(v >> 48);
    p[7] = (unsigned char)(v >> 56);
}

static inline struct codec_slot *codec_slot_of(struct codec *c, uint32_t tid)
{
    struct codec_slot *s = &c->slot[tid & (CODEC_SLOTS - 1)];
    if (s->gen != c->gen || s->tid != tid) {
        s->gen = c->gen;
        s->tid = tid;
        s->depth = 0;
        s->ts = 0;
        s->enter_func = 0;
        s->valid = 0;
    }
    return s;
}

/* One record's words (ts, func, call_site, tid | kind << 32 | pad << 40), in place. */
static inline void codec_record(struct codec *c, uint64_t w[4])
{
    struct codec_slot *s = codec_slot_of(c, (uint32_t)w[3]);
    unsigned kind = (unsigned)(w[3] >> 32) & 0xffu;
    uint32_t k = (s->depth - 1u) & (CODEC_DEPTH - 1); /* the top */
    uint64_t keep = 0 - ((s->valid >> k) & 1u);
    uint64_t ts = w[0];
    w[0] = ts - s->ts;
    s->ts = ts;
    if (kind == TRACE_KIND_ENTER) {
        uint64_t func = w[1], site = w[2];
        w[1] = func ^ s->enter_func;
        w[2] = site - (s->func[k] & keep);
        k = s->depth & (CODEC_DEPTH - 1);
        s->func[k] = func;
        s->site[k] = site;
        s->valid |= (uint64_t)1 << k;
        s->depth++;
        s->enter_func = func;
    } else if (kind == TRACE_KIND_EXIT) {
        w[1] ^= s->func[k] & keep;
        w[2] ^= s->site[k] & keep;
        s->depth--;
    }
}

/* The transposition's exchange: bits of x under mask << shift trade places with y's under mask. */
#define CODEC_SWAP(x, y, shift, mask)                                                                  \
    do {                                                                                               \
        uint64_t t_ = (((x) >> (shift)) ^ (y)) & (mask);                                               \
        (x) ^= t_ << (shift);                                                                          \
        (y) ^= t_;                                                                                     \
    } while (0)

/* 8 consecutive records' field j (coded) to planes 8j .. 8j+7 at record i: an
 * 8x8 byte transposition (4x4, 2x2, 1x1 block swaps) on locals, so it stays
 * in registers. */
static inline void codec_block(uint64_t (*w)[4], unsigned j, unsigned char *o, size_t n)
{
    uint64_t a0 = w[0][j], a1 = w[1][j], a2 = w[2][j], a3 = w[3][j];
    uint64_t a4 = w[4][j], a5 = w[5][j], a6 = w[6][j], a7 = w[7][j];
    const uint64_t m32 = 0x00000000ffffffffu, m16 = 0x0000ffff0000ffffu, m8 = 0x00ff00ff00ff00ffu;
    CODEC_SWAP(a0, a4, 32, m32);
    CODEC_SWAP(a1, a5, 32, m32);
    CODEC_SWAP(a2, a6, 32, m32);
    CODEC_SWAP(a3, a7, 32, m32);
    CODEC_SWAP(a0, a2, 16, m16);
    CODEC_SWAP(a1, a3, 16, m16);
    CODEC_SWAP(a4, a6, 16, m16);
    CODEC_SWAP(a5, a7, 16, m16);
    CODEC_SWAP(a0, a1, 8, m8);
    CODEC_SWAP(a2, a3, 8, m8);
    CODEC_SWAP(a4, a5, 8, m8);
    CODEC_SWAP(a6, a7, 8, m8);
    codec_store(o, a0);
    codec_store(o + n, a1);
    codec_store(o + 2 * n, a2);
    codec_store(o + 3 * n, a3);
    codec_store(o + 4 * n, a4);
    codec_store(o + 5 * n, a5);
    codec_store(o + 6 * n, a6);
    codec_store(o + 7 * n, a7);
}

static void codec_load_record(const unsigned char *p, uint64_t w[4])
{
    for (unsigned j = 0; j < 4; j++)
        w[j] = codec_load(p + 8 * j);
}

/* Code n little-endian records from in into out (n * 32 bytes each). */
static void codec_encode(struct codec *c, const unsigned char *in, unsigned char *out, size_t n)
{
    size_t full = n - n % 8, i;
    if (++c->gen == 0) { /* a new chunk: every slot is stale */
        for (unsigned k = 0; k < CODEC_SLOTS; k++)
            c->slot[k].gen = 0;
        c->gen = 1;
    }
    for (i = 0; i < full; i += CODEC_TILE) {
        size_t m = full - i < CODEC_TILE ? full - i : CODEC_TILE;
        for (size_t t = 0; t < m; t++) {
            codec_load_record(in + (i + t) * TRACE_EVENT_SIZE, c->w[t]);
            codec_record(c, c->w[t]);
        }
        for (unsigned j = 0; j < 4; j++)
            for (size_t t = 0; t < m; t += 8)
                codec_block(c->w + t, j, out + 8 * j * n + i + t, n);
    }
    for (i = full; i < n; i++) { /* the last n % 8 records, byte by byte */
        uint64_t w[4];
        codec_load_record(in + i * TRACE_EVENT_SIZE, w);
        codec_record(c, w);
        for (unsigned k = 0; k < TRACE_EVENT_SIZE; k++)
            out[k * n + i] = (unsigned char)(w[k / 8] >> (8 * (k % 8)));
    }
}
