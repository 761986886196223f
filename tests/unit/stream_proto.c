/*
 * proto.c - unit tests (TAP) of serve's wire-protocol checks,
 * src/serve/proto.c: handshakes in both byte orders and every way to get
 * one wrong, the chunk-length limits at and just past their edges, and zstd
 * frames that are good, corrupt, trailing, mis-sized or expanding.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "serve/proto.h"
#include "trace.h"

static int n_test, failed;

static void ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++n_test, what);
    failed |= !cond;
}

static void put(unsigned char *p, int bytes, uint64_t v, int big)
{
    for (int i = 0; i < bytes; i++)
        p[big ? bytes - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

static void hello(unsigned char *h, int big, uint32_t version, uint32_t size)
{
    memset(h, 0, TRACE_STREAM_HANDSHAKE_SIZE);
    memcpy(h, "TKSTREAM", 8);
    put(h + 8, 4, version, big);
    put(h + 12, 4, size, big);
    put(h + 16, 4, TRACE_FLAG_TICKS, big);
    put(h + 24, 8, 0x55550000, big);
    put(h + 32, 8, 2400000000u, big);
    put(h + 40, 8, 0x0102030405060708u, big);
    put(h + 48, 8, 222, big);
    put(h + 56, 8, 33, big);
}

static void test_hello(void)
{
    unsigned char h[TRACE_STREAM_HANDSHAKE_SIZE];
    char why[PROTO_WHY_MAX];
    struct proto_hello s;
    for (int big = 0; big <= 1; big++) {
        hello(h, big, 2, 32);
        int rc = proto_hello_decode(h, &s, why, sizeof why);
        ok(rc == 0 && s.swapped == big, big ? "big-endian handshake accepted, marked swapped"
                                            : "little-endian handshake accepted");
        ok(s.flags == TRACE_FLAG_TICKS && s.load_bias == 0x55550000 && s.tick_hz == 2400000000u &&
               s.t0_ticks == 0x0102030405060708u && s.t0_ns == 222 && s.hook_ns == 33,
           "every calibration field decoded in host order");
    }
    hello(h, 0, 2, 32);
    h[7] = 'X';
    ok(proto_hello_decode(h, &s, why, sizeof why) == -1 && strstr(why, "bad handshake magic"),
       "bad magic refused");
    hello(h, 0, 3, 32);
    ok(proto_hello_decode(h, &s, why, sizeof why) == -1 &&
           !strcmp(why, "unsupported protocol version 3 (expected 2)"),
       "version 3 refused");
    hello(h, 1, 1, 32);
    ok(proto_hello_decode(h, &s, why, sizeof why) == -1 &&
           !strcmp(why, "unsupported protocol version 1 (expected 2)"),
       "big-endian version 1 refused, reported as 1");
    hello(h, 1, 2, 24);
    ok(proto_hello_decode(h, &s, why, sizeof why) == -1 &&
           !strcmp(why, "event size 24 not supported (expected 32)"),
       "big-endian event size 24 refused");
}

static int check(uint32_t type, uint32_t raw, uint32_t z)
{
    char why[PROTO_WHY_MAX];
    struct proto_chunk c = {type, raw, z};
    return proto_chunk_check(&c, why, sizeof why);
}

static void test_chunk_limits(void)
{
    uint32_t max = TRACE_STREAM_MAX_RAW;
    uint32_t bound = (uint32_t)ZSTD_compressBound(max);
    ok(check(0, max, bound) == 0, "largest chunk at zstd's bound is accepted");
    ok(check(0, max + 32, 100) == -1, "raw_len one record over the limit is refused");
    ok(check(0, 0xffffffffu, 0xffffffffu) == -1, "raw_len 4 GiB is refused");
    ok(check(0, max, bound + 1) == -1, "zstd_len one past the bound is refused");
    ok(check(0, 64, 0) == -1, "zstd_len 0 is refused");
    ok(check(0, 33, 20) == -1, "events length not a multiple of 32 is refused");
    ok(check(1, 8, 17) == 0, "notice of 8 bytes accepted");
    ok(check(1, 16, 17) == -1, "notice of 16 bytes refused");
    ok(check(200, 0, (uint32_t)PROTO_FRAME_CAP) == 0, "unknown type up to the frame buffer: skippable");
    ok(check(200, 0, (uint32_t)PROTO_FRAME_CAP + 1) == -1, "unknown type longer than any frame refused");

    unsigned char raw[12];
    struct proto_chunk c;
    put(raw, 4, 1, 1);
    put(raw + 4, 4, 8, 1);
    put(raw + 8, 4, 17, 1);
    proto_chunk_decode(raw, 1, &c);
    ok(c.type == 1 && c.raw_len == 8 && c.zstd_len == 17, "big-endian chunk header decoded");
}

static void test_frames(void)
{
    enum { N = 256 };
    static unsigned char raw[N * 32], frame[2 * ZSTD_COMPRESSBOUND(N * 32)], out[N * 32 + 64];
    char why[PROTO_WHY_MAX];
    ZSTD_DCtx *d = ZSTD_createDCtx();
    for (size_t i = 0; i < sizeof raw; i++)
        raw[i] = (unsigned char)(i * 7 / 64);
    size_t z = ZSTD_compress(frame, sizeof frame, raw, sizeof raw, 1);
    ok(proto_frame_decode(d, frame, z, out, sizeof raw, why, sizeof why) == 0 &&
           !memcmp(out, raw, sizeof raw),
       "a good frame decodes to exactly raw_len bytes");
    ok(proto_frame_decode(d, frame, z, out, sizeof raw - 32, why, sizeof why) == -1 &&
           strstr(why, "chunk header says"),
       "a frame declaring another size is refused");
    memcpy(frame + z, frame, z);
    ok(proto_frame_decode(d, frame, 2 * z, out, sizeof raw, why, sizeof why) == -1 &&
           strstr(why, "after the zstd frame"),
       "two frames in one chunk are refused");
    ok(proto_frame_decode(d, frame, z - 1, out, sizeof raw, why, sizeof why) == -1,
       "a frame cut short is refused");
    unsigned char junk[64];
    memset(junk, 0xab, sizeof junk);
    ok(proto_frame_decode(d, junk, sizeof junk, out, sizeof raw, why, sizeof why) == -1 &&
           strstr(why, "corrupt zstd frame"),
       "bytes that are no zstd frame are refused");

    /* A frame that does not declare its size and expands past raw_len. */
    ZSTD_CCtx *c = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
    z = ZSTD_compress2(c, frame, sizeof frame, raw, sizeof raw);
    ZSTD_freeCCtx(c);
    ok(proto_frame_decode(d, frame, z, out, 1024, why, sizeof why) == -1 &&
           strstr(why, "more than the 1024 bytes"),
       "a frame expanding past raw_len is refused without a larger buffer");
    ok(proto_frame_decode(d, frame, z, out, sizeof raw, why, sizeof why) == 0,
       "the same frame with the right raw_len decodes");
    ok(proto_frame_decode(d, frame, z, out, sizeof raw + 32, why, sizeof why) == -1 &&
           strstr(why, "decompressed to"),
       "an undeclared frame shorter than raw_len is refused");
    ZSTD_freeDCtx(d);
}

static void test_swap(void)
{
    unsigned char e[32] = {0}, want[32] = {0};
    put(e, 8, 0x1122334455667788u, 1);
    put(e + 8, 8, 0x401000, 1);
    put(e + 16, 8, 0x500001, 1);
    put(e + 24, 4, 4242, 1);
    e[28] = 1;
    put(want, 8, 0x1122334455667788u, 0);
    put(want + 8, 8, 0x401000, 0);
    put(want + 16, 8, 0x500001, 0);
    put(want + 24, 4, 4242, 0);
    want[28] = 1;
    proto_events_swap(e, sizeof e);
    ok(!memcmp(e, want, 32), "a big-endian record becomes the little-endian one, kind untouched");
    unsigned char p[8];
    put(p, 8, 1234, 1);
    ok(proto_notice_count(p, 1) == 1234, "big-endian notice count");
    put(p, 8, 1234, 0);
    ok(proto_notice_count(p, 0) == 1234, "little-endian notice count");
}

/* The chunk types added for faults: fixed payload sizes, and the resume notice decoded in either order. */
static void test_fault_chunks(void)
{
    char why[PROTO_WHY_MAX];
    struct proto_chunk c = {TRACE_CHUNK_RESUME, TRACE_STREAM_RESUME_SIZE, 20};
    ok(proto_chunk_known(TRACE_CHUNK_RESUME) && proto_chunk_known(TRACE_CHUNK_TRACER_LOST) &&
           proto_chunk_known(TRACE_CHUNK_SUMMARY_INCREMENTS) && proto_chunk_known(TRACE_CHUNK_RESUME_KEY) &&
           proto_chunk_known(TRACE_CHUNK_CONTROL_ANSWER) && proto_chunk_known(TRACE_CHUNK_AUTH_HELLO) &&
           proto_chunk_known(TRACE_CHUNK_AUTH_PROOF) && !proto_chunk_known(10),
       "resume, tracer-lost, summary-increment, resume-key, control-answer and key chunks are known, type 10 is not");
    struct proto_chunk ca = {TRACE_CHUNK_CONTROL_ANSWER, TRACE_STREAM_CTL_ANSWER_SIZE, 30};
    struct proto_chunk cb = {TRACE_CHUNK_CONTROL_ANSWER, TRACE_STREAM_CTL_ANSWER_SIZE - 1, 30};
    ok(proto_chunk_check(&ca, why, sizeof why) == 0 && proto_chunk_check(&cb, why, sizeof why) == -1,
       "a control answer is 128 bytes exactly");
    struct proto_chunk k = {TRACE_CHUNK_RESUME_KEY, TRACE_STREAM_RESUME_KEY_SIZE, 25};
    ok(proto_chunk_check(&k, why, sizeof why) == 0, "a 16-byte resume key is well formed");
    k.raw_len = 15;
    ok(proto_chunk_check(&k, why, sizeof why) == -1 && !strcmp(why, "resume key raw_len 15 (expected 16)"),
       "a resume key of another length is refused: resume key raw_len 15 (expected 16)");
    ok(proto_chunk_check(&c, why, sizeof why) == 0, "a 40-byte resume notice passes");
    c.raw_len = 48;
    ok(proto_chunk_check(&c, why, sizeof why) != 0 && strstr(why, "expected 40"), "any other size is refused");
    c = (struct proto_chunk){TRACE_CHUNK_TRACER_LOST, 16, 20};
    ok(proto_chunk_check(&c, why, sizeof why) != 0 && strstr(why, "expected 8"),
       "a tracer-lost notice must be 8 bytes");
    unsigned char p[TRACE_STREAM_RESUME_SIZE] = {0};
    struct proto_resume r;
    for (int big = 0; big < 2; big++) {
        put(p + 0, 8, 0x0123456789abcdefu, big);
        put(p + 8, 8, 1700000000000000000u, big);
        put(p + 16, 4, 3, big);
        put(p + 24, 8, 5000, big);
        put(p + 32, 8, 77, big);
        proto_resume_decode(p, big, &r);
        ok(r.stream_id == 0x0123456789abcdefu && r.start_ns == 1700000000000000000u && r.conn_seq == 3 &&
               r.sent == 5000 && r.discarded == 77,
           big ? "big-endian resume notice decoded" : "little-endian resume notice decoded");
    }
}

/* The flight recorder's snapshot requests: the offer in a handshake is
 * seen, never copied into a file's flags, and a request reads as
 * trace_wire.h lays it out. */
static void test_requests(void)
{
    unsigned char raw[TRACE_STREAM_HANDSHAKE_SIZE] = {0}, req[TRACE_STREAM_REQUEST_SIZE];
    struct proto_hello h;
    char why[256];
    memcpy(raw, TRACE_STREAM_MAGIC, 8);
    put(raw + 8, 4, TRACE_STREAM_VERSION, 0);
    put(raw + 12, 4, TRACE_EVENT_SIZE, 0);
    put(raw + 16, 4, TRACE_FLAG_TICKS | TRACE_STREAM_FLAG_REQUEST_OFFER, 0);
    ok(proto_hello_decode(raw, &h, why, sizeof why) == 0 && proto_hello_requests_offered(raw) &&
           h.flags == TRACE_FLAG_TICKS,
       "a request offer is seen, and stays out of the file's flags");
    put(raw + 16, 4, TRACE_FLAG_TICKS, 0);
    ok(!proto_hello_requests_offered(raw), "no offer, no requests");
    proto_request_encode(req, 0x01020304u);
    ok(memcmp(req, "TKSNAP\0\0", 8) == 0 && req[8] == 4 && req[9] == 3 && req[10] == 2 && req[11] == 1 &&
           req[12] == 0 && req[15] == 0,
       "a request: TKSNAP, then its seq little-endian, then zero");
}

int main(void)
{
    test_requests();
    test_fault_chunks();
    test_hello();
    test_chunk_limits();
    test_frames();
    test_swap();
    printf("1..%d\n", n_test);
    return failed;
}
