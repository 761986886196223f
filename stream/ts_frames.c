/*
 * ts_frames.c - one zstd frame per chunk (part of trace_stream.c):
 * libzstd's, or raw blocks when built with -DTRACE_STREAM_NO_LIBZSTD.
 */
#include "ts_internal.h"

/* ---- zstd frames ----------------------------------------------------------
 * One frame per chunk: compressed by libzstd, or, built with
 * -DTRACE_STREAM_NO_LIBZSTD, stored in raw blocks (RFC 8878 section 3.1):
 *
 *   magic 28 B5 2F FD | descriptor A0: single segment, 4-byte content size |
 *   content size (LE32) | blocks: 3-byte LE header (bit 0 last, bits 1-2
 *   type 0 = raw, bits 3-23 size <= 128 KiB) then the bytes as they are
 *
 * No checksum and no dictionary.  A single-segment frame's window is its
 * content size, so a decoder needs no more memory than the chunk itself.
 */
#ifndef TRACE_STREAM_NO_LIBZSTD
static int frame_init(struct sender *s)
{
    s->cctx = ZSTD_createCCtx();
    return s->cctx ? 0 : -1;
}

static void frame_free(struct sender *s) { ZSTD_freeCCtx(s->cctx); }

static size_t frame_bound(size_t len) { return ZSTD_compressBound(len); }

/* The frame's length in dst, 0 on failure (reported). */
static size_t frame_make(struct sender *s, unsigned char *dst, size_t cap, const void *src, size_t len)
{
    size_t z = ZSTD_compressCCtx(s->cctx, dst, cap, src, len, s->level);
    if (ZSTD_isError(z)) {
        fprintf(stderr, "trace_stream: zstd compression failed: %s\n", ZSTD_getErrorName(z));
        return 0;
    }
    return z;
}
#else
#define FRAME_MAGIC 0xFD2FB528u
#define FRAME_DESCRIPTOR 0xA0u /* FCS flag 2 (4 bytes), single segment */
#define FRAME_HEAD 9u          /* magic, descriptor, content size */
#define FRAME_BLOCK_MAX ((size_t)128 * 1024)
#define FRAME_BLOCK_HEAD 3u

static int frame_init(struct sender *s)
{
    (void)s;
    return 0;
}

static void frame_free(struct sender *s) { (void)s; }

/* At least one block, even for no bytes. */
static size_t frame_bound(size_t len)
{
    size_t blocks = len ? (len + FRAME_BLOCK_MAX - 1) / FRAME_BLOCK_MAX : 1;
    return FRAME_HEAD + blocks * FRAME_BLOCK_HEAD + len;
}

static void frame_le(unsigned char *p, uint32_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static size_t frame_make(struct sender *s, unsigned char *dst, size_t cap, const void *src, size_t len)
{
    const unsigned char *in = src;
    size_t at = FRAME_HEAD, done = 0;
    (void)s;
    if (len > UINT32_MAX || frame_bound(len) > cap) {
        fprintf(stderr, "trace_stream: a chunk of %zu bytes does not fit a frame\n", len);
        return 0;
    }
    frame_le(dst, FRAME_MAGIC, 4);
    dst[4] = FRAME_DESCRIPTOR;
    frame_le(dst + 5, (uint32_t)len, 4);
    do {
        size_t n = len - done < FRAME_BLOCK_MAX ? len - done : FRAME_BLOCK_MAX;
        uint32_t last = done + n == len;
        frame_le(dst + at, (uint32_t)n << 3 | 0u << 1 | last, FRAME_BLOCK_HEAD);
        if (n)
            memcpy(dst + at + FRAME_BLOCK_HEAD, in + done, n);
        at += FRAME_BLOCK_HEAD + n;
        done += n;
    } while (done < len);
    return at;
}
#endif
