/*
 * stream_codec.h - the "stack + shuffle" coding of event chunks
 * (TRACE_CHUNK_EVENTS_CODED; the format is specified in runtime/trace_wire.h).
 *
 * serve decodes with it; tests, the fuzzer and the benchmarks also encode
 * with it.  trace_stream carries its own encoder, since it must stand alone
 * as one file; tests/48-stream-codec.t checks the two agree bit for bit.
 *
 * The coding is a bijection on whole records, so decoding cannot fail: any
 * input of n * 32 bytes decodes to n records, with state bounded by the
 * table below and no index taken from the input unmasked.
 */
#ifndef CALLSIGHT_STREAM_CODEC_H
#define CALLSIGHT_STREAM_CODEC_H

#include <stddef.h>

/* Per-thread prediction state; one per connection (or per encoder). */
struct stream_codec;

/* NULL when out of memory.  About 70 KiB. */
struct stream_codec *stream_codec_new(void);
void stream_codec_free(struct stream_codec *c);

/* Code n records from in (n * 32 bytes, little-endian) into out; in != out. */
void stream_codec_encode(struct stream_codec *c, const unsigned char *in, unsigned char *out, size_t n);

/* The inverse: n coded records from in into n records in out; in != out. */
void stream_codec_decode(struct stream_codec *c, const unsigned char *in, unsigned char *out, size_t n);

#endif
