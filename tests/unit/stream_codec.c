/*
 * stream_codec.c - unit tests (TAP) of the "stack + shuffle" event coding,
 * trace_wire.h's wire_codec_encode() and wire_codec_decode() (what
 * trace_stream and serve both run), of its little-endian helpers, and of the codec's handshake flag and ack in
 * src/serve/proto.c: one chunk coded by hand against the format in
 * trace_wire.h, round trips of every kind of chunk (markers, reserved kinds,
 * odd and colliding tids, stacks deeper than the shadow stack, chunks of
 * 0 to 17 records for the transposition's tail), and random bytes fed to
 * the decoder, which must give records that code back to the same bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/proto.h"
#include "trace.h"
#include "trace_wire.h"
#include "unit.h"

#define EV TRACE_EVENT_SIZE

static int n_test, failed;

static void ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++n_test, what);
    failed |= !cond;
}

static void record(unsigned char *p, uint64_t ts, uint64_t func, uint64_t site, uint32_t tid, uint8_t kind)
{
    memset(p, 0, EV);
    wire_put_le64(p, ts);
    wire_put_le64(p + 8, func);
    wire_put_le64(p + 16, site);
    wire_put_le32(p + 24, tid);
    p[28] = kind;
}

/* Byte k of coded record i of an n-record chunk. */
static uint64_t coded_field(const unsigned char *out, size_t n, size_t i, int off, int bytes)
{
    unsigned char b[8] = {0};
    for (int k = 0; k < bytes; k++)
        b[k] = out[(size_t)(off + k) * n + i];
    return wire_le64(b);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void) { return unit_xorshift(&rng_state); }

/* Code n records, decode them back: 1 when the records come back bit for bit. */
static int round_trip(struct wire_codec *c, const unsigned char *in, size_t n)
{
    unsigned char *coded = malloc(n * EV + 1), *back = malloc(n * EV + 1);
    wire_codec_encode(c, in, coded, n);
    wire_codec_decode(c, coded, back, n);
    int same = memcmp(back, in, n * EV) == 0;
    free(coded);
    free(back);
    return same;
}

/* The format by hand: enter main, enter f from main, exit f, a marker, on one thread. */
static void test_known_chunk(struct wire_codec *c)
{
    unsigned char in[4 * EV], out[4 * EV];
    record(in + 0 * EV, 1000, 0x401000, 0x7000, 7, TRACE_KIND_ENTER);
    record(in + 1 * EV, 1010, 0x402000, 0x401020, 7, TRACE_KIND_ENTER);
    record(in + 2 * EV, 1030, 0x402000, 0x401020, 7, TRACE_KIND_EXIT);
    record(in + 3 * EV, 1031, 21, 0x6e69616d, 7, TRACE_KIND_MARKER);
    in[3 * EV + 29] = 0xab; /* pad travels as it is */
    wire_codec_encode(c, in, out, 4);
    ok(coded_field(out, 4, 0, 0, 8) == 1000 && coded_field(out, 4, 0, 8, 8) == 0x401000 &&
           coded_field(out, 4, 0, 16, 8) == 0x7000,
       "first record of a thread: ts, func and call_site against zero state");
    ok(coded_field(out, 4, 1, 0, 8) == 10 && coded_field(out, 4, 1, 8, 8) == (0x402000 ^ 0x401000) &&
           coded_field(out, 4, 1, 16, 8) == 0x20,
       "enter: ts delta, func ^ previous enter, call_site - caller's func");
    ok(coded_field(out, 4, 2, 0, 8) == 20 && coded_field(out, 4, 2, 8, 8) == 0 && coded_field(out, 4, 2, 16, 8) == 0,
       "exit matching the stack top codes as 0, 0");
    ok(coded_field(out, 4, 3, 0, 8) == 1 && coded_field(out, 4, 3, 8, 8) == 21 &&
           coded_field(out, 4, 3, 16, 8) == 0x6e69616d,
       "marker: only the ts delta");
    ok(coded_field(out, 4, 3, 24, 4) == 7 && coded_field(out, 4, 3, 28, 1) == TRACE_KIND_MARKER &&
           coded_field(out, 4, 3, 29, 1) == 0xab,
       "tid, kind and pad unchanged, in planes 24-31");
    ok(out[0] == (1000 & 0xff) && out[1] == 10 && out[2] == 20 && out[3] == 1 && out[4] == (1000 >> 8),
       "plane 0 holds every record's low ts byte, then plane 1 starts");
}

static void test_chunk_state_resets(struct wire_codec *c)
{
    unsigned char in[2 * EV], a[2 * EV], b[2 * EV];
    record(in, 500, 0x1000, 0x2000, 3, TRACE_KIND_ENTER);
    record(in + EV, 600, 0x1000, 0x2000, 3, TRACE_KIND_EXIT);
    wire_codec_encode(c, in, a, 2);
    wire_codec_encode(c, in, b, 2);
    ok(memcmp(a, b, sizeof a) == 0, "the same chunk codes the same way twice: state resets per chunk");
}

/* Random but plausible: threads calling down and back, markers, reserved kinds. */
static void make_chunk(unsigned char *buf, size_t n, int tids, int max_depth)
{
    uint32_t depth[8] = {0};
    uint64_t ts[8] = {0}, stack[8][300];
    for (size_t i = 0; i < n; i++) {
        int t = (int)(rnd() % (uint64_t)tids);
        uint32_t tid = t == 0 ? 0 : t == 1 ? UINT32_MAX : (uint32_t)(100 + 64 * t); /* colliding slots */
        uint64_t r = rnd() % 100;
        ts[t] += rnd() % 50;
        if (r < 3) {
            record(buf + i * EV, ts[t], TRACE_MARK_THREAD_NAME, rnd(), tid, TRACE_KIND_MARKER);
        } else if (r < 4) {
            record(buf + i * EV, rnd(), rnd(), rnd(), tid, (uint8_t)(3 + rnd() % 253)); /* any kind byte */
            buf[i * EV + 29 + rnd() % 3] = (unsigned char)rnd();
        } else if (depth[t] == 0 || (r < 55 && depth[t] < (uint32_t)max_depth)) {
            uint64_t f = 0x400000 + (rnd() % 40) * 0x40;
            uint64_t site = depth[t] ? stack[t][depth[t] - 1] + rnd() % 64 : 0x7f00;
            record(buf + i * EV, ts[t], f, site, tid, TRACE_KIND_ENTER);
            stack[t][depth[t]++] = f;
        } else {
            depth[t]--;
            record(buf + i * EV, ts[t], stack[t][depth[t]], rnd() % 5 ? 0 : rnd(), tid, TRACE_KIND_EXIT);
        }
    }
}

static void test_round_trips(struct wire_codec *c)
{
    size_t n = 20000;
    unsigned char *buf = malloc(n * EV);
    int all = 1;
    for (size_t k = 0; k <= 17; k++) {
        make_chunk(buf, k, 3, 10);
        all &= round_trip(c, buf, k);
    }
    ok(all, "chunks of 0 to 17 records (empty, tails shorter than a block) round-trip");
    make_chunk(buf, n, 8, 20);
    ok(round_trip(c, buf, n), "8 threads, tids 0, 2^32-1 and ones sharing a slot, markers, odd kinds");
    make_chunk(buf, n, 2, 290);
    ok(round_trip(c, buf, n), "stacks 290 deep, past the 64-entry shadow stack");
    make_chunk(buf, 4096, 1, 5);
    for (size_t i = 0; i < 4096; i++)
        buf[i * EV + 28] = TRACE_KIND_EXIT;
    ok(round_trip(c, buf, 4096), "exits only: the stack underflows and wraps");
    for (size_t i = 0; i < n * EV; i++)
        buf[i] = (unsigned char)rnd();
    ok(round_trip(c, buf, n), "random bytes as records round-trip");
    free(buf);
}

/* The decoder takes anything: its output must code back to the input. */
static void test_decode_random(struct wire_codec *c)
{
    int all = 1;
    for (int round = 0; round < 50; round++) {
        size_t n = (size_t)(rnd() % 3000);
        unsigned char *in = malloc(n * EV + 1), *out = malloc(n * EV + 1), *again = malloc(n * EV + 1);
        for (size_t i = 0; i < n * EV; i++)
            in[i] = (unsigned char)(round % 2 ? rnd() % 3 : rnd()); /* also many zeros: tids collide */
        wire_codec_decode(c, in, out, n);
        wire_codec_encode(c, out, again, n);
        all &= memcmp(again, in, n * EV) == 0;
        free(in);
        free(out);
        free(again);
    }
    ok(all, "random bytes decode to records that code back to the same bytes (50 chunks)");
}

static void test_proto(void)
{
    unsigned char ack[TRACE_STREAM_ACK_SIZE], h[TRACE_STREAM_HANDSHAKE_SIZE] = {0};
    proto_ack_encode(ack, TRACE_CODEC_STACK_SHUFFLE, 0);
    ok(memcmp(ack, "TKACK\0\0\0\1\0\0\0\0\0\0\0", 16) == 0, "the ack: magic TKACK, codecs 1, features 0");
    proto_ack_encode(ack, 0, TRACE_ACK_SUMMARIES);
    ok(memcmp(ack, "TKACK\0\0\0\0\0\0\0\1\0\0\0", 16) == 0, "a summary-only ack: codecs 0, features 1");
    struct proto_hello hello;
    char why[PROTO_WHY_MAX];
    memcpy(h, "TKSTREAM", 8);
    wire_put_le32(h + 8, TRACE_STREAM_VERSION);
    wire_put_le32(h + 12, TRACE_EVENT_SIZE);
    wire_put_le32(h + 16, TRACE_FLAG_TICKS | TRACE_STREAM_FLAG_CODEC_OFFER);
    ok(proto_hello_decode(h, &hello, why, sizeof why) == 0 && proto_hello_codec_offered(h) &&
           hello.flags == TRACE_FLAG_TICKS,
       "a handshake's codec offer is seen, and kept out of the flags files get");
    wire_put_le32(h + 16, TRACE_FLAG_TICKS);
    ok(proto_hello_decode(h, &hello, why, sizeof why) == 0 && !proto_hello_codec_offered(h),
       "no offer: none seen");
    struct proto_chunk ch = {TRACE_CHUNK_EVENTS_CODED, 64, 20};
    ok(proto_chunk_known(TRACE_CHUNK_EVENTS_CODED) && proto_chunk_check(&ch, why, sizeof why) == 0,
       "a coded events chunk is a known type with events' lengths");
    ch.raw_len = 40;
    ok(proto_chunk_check(&ch, why, sizeof why) == -1 && strstr(why, "multiple of 32") != NULL,
       "a coded chunk of 40 bytes is refused");
}

/* The little-endian helpers every party reads and writes the wire with. */
static void test_le(void)
{
    unsigned char b[8], w[8] = {0};
    const unsigned char want[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    wire_put_le64(b, UINT64_C(0x0807060504030201));
    ok(memcmp(b, want, 8) == 0 && wire_le64(b) == UINT64_C(0x0807060504030201) && wire_le32(b) == 0x04030201u &&
           wire_le16(b) == 0x0201u && wire_be32(b) == 0x01020304u && wire_be64(b) == UINT64_C(0x0102030405060708),
       "wire_le16/32/64 and wire_be32/64 read bytes 1..8 in their orders, and wire_put_le64 writes them");
    wire_put_le32(w, 0x04030201u);
    wire_put_le16(w + 4, 0x0605u);
    ok(memcmp(w, want, 6) == 0 && w[6] == 0 && w[7] == 0, "wire_put_le32 and wire_put_le16 write only their bytes");
}

int main(void)
{
    printf("1..%d\n", 6 + 1 + 5 + 1 + 6 + 2);
    struct wire_codec *c = calloc(1, sizeof *c);
    if (!c)
        return 1;
    test_known_chunk(c);
    test_chunk_state_resets(c);
    test_round_trips(c);
    test_decode_random(c);
    test_proto();
    test_le();
    free(c);
    return failed;
}
