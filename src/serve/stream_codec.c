/*
 * stream_codec.c - the "stack + shuffle" coding of event chunks (see
 * stream_codec.h; the format is in runtime/trace_wire.h).
 *
 * Speed matters on both ends (trace_stream on the device, serve per
 * connection), so the byte transposition works on blocks of 8 records: the
 * 8 records' k-th 64-bit words form an 8x8 byte matrix, transposed with
 * three rounds of shifts and masks into 8 plane words, each stored with one
 * 8-byte write.  The prediction step is a few integer operations per record
 * on a direct-mapped table: no probing, no hashing, nothing to clear per
 * chunk (a generation number marks the slots of earlier chunks stale, and a
 * bit per stack entry stands in for zeroing the stack).
 */
#include "stream_codec.h"

#include <stdint.h>
#include <stdlib.h>

#include "trace.h"
#include "trace_wire.h"

#define SLOTS TRACE_CODEC_THREAD_SLOTS
#define DEPTH TRACE_CODEC_STACK_DEPTH
#define WORDS (TRACE_EVENT_SIZE / 8u) /* 64-bit words per record */
#define BLOCK 8u                      /* records per transposition block */

_Static_assert(DEPTH <= 64, "one valid bit per stack entry in a u64");
_Static_assert(TRACE_EVENT_SIZE == 32, "4 words per record");

struct frame {
    uint64_t func, site;
};

struct slot {
    uint32_t gen;        /* the chunk this state belongs to; any other: empty */
    uint32_t tid;
    uint32_t depth;      /* modulo 2^32, as the format says */
    uint64_t ts, enter_func;
    uint64_t valid;      /* bit k: stack[k] written since the reset; else it reads as 0 */
    struct frame stack[DEPTH];
};

struct stream_codec {
    uint32_t gen; /* this chunk's generation; 0 is never one */
    struct slot slot[SLOTS];
};

struct stream_codec *stream_codec_new(void) { return calloc(1, sizeof(struct stream_codec)); }

void stream_codec_free(struct stream_codec *c) { free(c); }

/* Every chunk starts from empty state: a new generation makes every slot stale. */
static void begin_chunk(struct stream_codec *c)
{
    if (++c->gen == 0) {
        for (uint32_t i = 0; i < SLOTS; i++)
            c->slot[i].gen = 0;
        c->gen = 1;
    }
}

static inline struct slot *slot_of(struct stream_codec *c, uint32_t tid)
{
    struct slot *s = &c->slot[tid & (SLOTS - 1)];
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

static inline struct frame top(const struct slot *s)
{
    uint32_t k = (s->depth - 1u) & (DEPTH - 1);
    uint64_t keep = 0 - ((s->valid >> k) & 1u);
    struct frame f = {s->stack[k].func & keep, s->stack[k].site & keep};
    return f;
}

static inline void push(struct slot *s, uint64_t func, uint64_t site)
{
    uint32_t k = s->depth & (DEPTH - 1);
    s->stack[k].func = func;
    s->stack[k].site = site;
    s->valid |= (uint64_t)1 << k;
    s->depth++;
    s->enter_func = func;
}

/* w: ts, func, call_site, then tid | kind << 32 | pad << 40. */
static unsigned kind_of(const uint64_t w[WORDS]) { return (unsigned)(w[3] >> 32) & 0xffu; }

static inline void encode_one(struct stream_codec *c, uint64_t w[WORDS])
{
    struct slot *s = slot_of(c, (uint32_t)w[3]);
    unsigned kind = kind_of(w);
    uint64_t ts = w[0];
    w[0] = ts - s->ts;
    s->ts = ts;
    if (kind == TRACE_KIND_ENTER) {
        uint64_t func = w[1], site = w[2];
        w[1] = func ^ s->enter_func;
        w[2] = site - top(s).func;
        push(s, func, site);
    } else if (kind == TRACE_KIND_EXIT) {
        struct frame f = top(s);
        w[1] ^= f.func;
        w[2] ^= f.site;
        s->depth--;
    }
}

static inline void decode_one(struct stream_codec *c, uint64_t w[WORDS])
{
    struct slot *s = slot_of(c, (uint32_t)w[3]);
    unsigned kind = kind_of(w);
    w[0] += s->ts;
    s->ts = w[0];
    if (kind == TRACE_KIND_ENTER) {
        w[1] ^= s->enter_func;
        w[2] += top(s).func;
        push(s, w[1], w[2]);
    } else if (kind == TRACE_KIND_EXIT) {
        struct frame f = top(s);
        w[1] ^= f.func;
        w[2] ^= f.site;
        s->depth--;
    }
}

/* ---- bytes and the 8x8 transposition ----------------------------------- */

/*
 * Written out byte by byte so that they mean the same on any host; gcc and
 * clang turn each into one load or store (a loop they leave as 8 steps).
 */
static inline uint64_t load_le64(const unsigned char *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

static inline void store_le64(unsigned char *p, uint64_t v)
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

/* One exchange of the transposition: the bits of x under mask << shift
 * trade places with the bits of y under mask. */
#define SWAP_BITS(x, y, shift, mask)                                                                   \
    do {                                                                                               \
        uint64_t t_ = (((x) >> (shift)) ^ (y)) & (mask);                                               \
        (x) ^= t_ << (shift);                                                                          \
        (y) ^= t_;                                                                                     \
    } while (0)

/*
 * a_r's byte b becomes a_b's byte r, for 8 words a0..a7: swap 4x4, then
 * 2x2, then 1x1 blocks.  A macro over the caller's locals, not a function
 * over an array: the compiler then keeps all 8 words in registers (an array
 * made it store and reload them, stalling on every block).
 */
#define M32 UINT64_C(0x00000000ffffffff)
#define M16 UINT64_C(0x0000ffff0000ffff)
#define M8 UINT64_C(0x00ff00ff00ff00ff)
#define TRANSPOSE8(a0, a1, a2, a3, a4, a5, a6, a7)                                                     \
    do {                                                                                               \
        SWAP_BITS(a0, a4, 32, M32);                                                                    \
        SWAP_BITS(a1, a5, 32, M32);                                                                    \
        SWAP_BITS(a2, a6, 32, M32);                                                                    \
        SWAP_BITS(a3, a7, 32, M32);                                                                    \
        SWAP_BITS(a0, a2, 16, M16);                                                                    \
        SWAP_BITS(a1, a3, 16, M16);                                                                    \
        SWAP_BITS(a4, a6, 16, M16);                                                                    \
        SWAP_BITS(a5, a7, 16, M16);                                                                    \
        SWAP_BITS(a0, a1, 8, M8);                                                                      \
        SWAP_BITS(a2, a3, 8, M8);                                                                      \
        SWAP_BITS(a4, a5, 8, M8);                                                                      \
        SWAP_BITS(a6, a7, 8, M8);                                                                      \
    } while (0)

static inline void load_record(const unsigned char *p, uint64_t w[WORDS])
{
    for (unsigned j = 0; j < WORDS; j++)
        w[j] = load_le64(p + 8 * j);
}

static inline void store_record(unsigned char *p, const uint64_t w[WORDS])
{
    for (unsigned j = 0; j < WORDS; j++)
        store_le64(p + 8 * j, w[j]);
}

/* ---- whole chunks ------------------------------------------------------- */

/*
 * Chunks go through in tiles of TILE records: code a tile into words, then
 * transpose it into the planes one 64-bit field at a time.  Doing all 32
 * planes at once would keep 32 write streams exactly n bytes apart; with n
 * a power of 2 (a full 1 MiB chunk) they all fall into the same cache set
 * and evict each other, which ran 5x slower.  8 streams at a time fit.
 */
#define TILE 256u
_Static_assert(TILE % BLOCK == 0, "whole blocks per tile");

/* Planes of records [i, i + m) (m a multiple of BLOCK) from their coded words. */
static void tile_to_planes(uint64_t w[][WORDS], unsigned char *out, size_t n, size_t i, size_t m)
{
    for (unsigned j = 0; j < WORDS; j++)
        for (size_t t = 0; t < m; t += BLOCK) {
            uint64_t a0 = w[t][j], a1 = w[t + 1][j], a2 = w[t + 2][j], a3 = w[t + 3][j];
            uint64_t a4 = w[t + 4][j], a5 = w[t + 5][j], a6 = w[t + 6][j], a7 = w[t + 7][j];
            TRANSPOSE8(a0, a1, a2, a3, a4, a5, a6, a7);
            unsigned char *o = out + 8 * j * n + i + t;
            store_le64(o, a0);
            store_le64(o + n, a1);
            store_le64(o + 2 * n, a2);
            store_le64(o + 3 * n, a3);
            store_le64(o + 4 * n, a4);
            store_le64(o + 5 * n, a5);
            store_le64(o + 6 * n, a6);
            store_le64(o + 7 * n, a7);
        }
}

static void planes_to_tile(const unsigned char *in, size_t n, size_t i, size_t m, uint64_t w[][WORDS])
{
    for (unsigned j = 0; j < WORDS; j++)
        for (size_t t = 0; t < m; t += BLOCK) {
            const unsigned char *p = in + 8 * j * n + i + t;
            uint64_t a0 = load_le64(p), a1 = load_le64(p + n), a2 = load_le64(p + 2 * n);
            uint64_t a3 = load_le64(p + 3 * n), a4 = load_le64(p + 4 * n), a5 = load_le64(p + 5 * n);
            uint64_t a6 = load_le64(p + 6 * n), a7 = load_le64(p + 7 * n);
            TRANSPOSE8(a0, a1, a2, a3, a4, a5, a6, a7);
            w[t][j] = a0, w[t + 1][j] = a1, w[t + 2][j] = a2, w[t + 3][j] = a3;
            w[t + 4][j] = a4, w[t + 5][j] = a5, w[t + 6][j] = a6, w[t + 7][j] = a7;
        }
}

void stream_codec_encode(struct stream_codec *c, const unsigned char *in, unsigned char *out, size_t n)
{
    uint64_t w[TILE][WORDS];
    size_t full = n - n % BLOCK, i;
    begin_chunk(c);
    for (i = 0; i < full; i += TILE) {
        size_t m = full - i < TILE ? full - i : TILE;
        for (size_t t = 0; t < m; t++) {
            load_record(in + (i + t) * TRACE_EVENT_SIZE, w[t]);
            encode_one(c, w[t]);
        }
        tile_to_planes(w, out, n, i, m);
    }
    for (i = full; i < n; i++) {
        load_record(in + i * TRACE_EVENT_SIZE, w[0]);
        encode_one(c, w[0]);
        for (unsigned k = 0; k < TRACE_EVENT_SIZE; k++)
            out[k * n + i] = (unsigned char)(w[0][k / 8] >> (8 * (k % 8)));
    }
}

void stream_codec_decode(struct stream_codec *c, const unsigned char *in, unsigned char *out, size_t n)
{
    uint64_t w[TILE][WORDS];
    size_t full = n - n % BLOCK, i;
    begin_chunk(c);
    for (i = 0; i < full; i += TILE) {
        size_t m = full - i < TILE ? full - i : TILE;
        planes_to_tile(in, n, i, m, w);
        for (size_t t = 0; t < m; t++) {
            decode_one(c, w[t]);
            store_record(out + (i + t) * TRACE_EVENT_SIZE, w[t]);
        }
    }
    for (i = full; i < n; i++) {
        uint64_t r[WORDS] = {0, 0, 0, 0};
        for (unsigned k = 0; k < TRACE_EVENT_SIZE; k++)
            r[k / 8] |= (uint64_t)in[k * n + i] << (8 * (k % 8));
        decode_one(c, r);
        store_record(out + i * TRACE_EVENT_SIZE, r);
    }
}
