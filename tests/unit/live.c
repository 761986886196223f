/*
 * live.c - unit test of the live analysis behind callsight top
 * (src/analysis/live.c): a serve directory written a little at a time,
 * refreshed in between.  Each source's state follows what its files say:
 * dropping in the interval whose records brought the device's drop count,
 * streaming after, ended once quiet (idle while serve lists its connection,
 * with the bytes it took on the link); cut after serve's gap marker;
 * reconnecting after a resumable stream's cut marker, cut once that is
 * older than reconnect_s, streaming again when records follow.  Counts
 * are exact: totals, the last interval's, and a torn record read only
 * once it is whole.  The frame gives ended sources' rows up first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/live.h"
#include "out/top_view.h"
#include "trace.h"
#include "scratch.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static char dir[160]; /* scratch_make: under $TMPDIR */

static FILE *open_file(uint32_t id, const char *mode)
{
    char p[300];
    snprintf(p, sizeof p, "%s/trace.stream.%u.0.bin", dir, (unsigned)id);
    FILE *f = fopen(p, mode);
    if (!f) {
        perror(p);
        exit(1);
    }
    return f;
}

static void put(FILE *f, const void *p, size_t n)
{
    if (fwrite(p, 1, n, f) != n) {
        perror("write");
        exit(1);
    }
}

/* A stream file's header: times in ns, so no calibration is involved. */
static void header(uint32_t id)
{
    trace_file_header_t h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, TRACE_FILE_MAGIC, sizeof TRACE_FILE_MAGIC);
    h.version = TRACE_FILE_VERSION;
    h.event_size = TRACE_EVENT_SIZE;
    h.header_size = TRACE_FILE_HEADER_SIZE;
    h.pid = id;
    FILE *f = open_file(id, "wb");
    put(f, &h, sizeof h);
    fclose(f);
}

static uint64_t clock_ns = 1000;

static void record(trace_event_t *e, uint64_t func, uint64_t payload, uint32_t tid, uint8_t kind)
{
    memset(e, 0, sizeof *e);
    e->ts = clock_ns += 100;
    e->func = func;
    e->call_site = payload;
    e->tid = tid;
    e->kind = kind;
}

/* n calls of one function on thread 7, then `torn` bytes of one more record. */
static void calls(uint32_t id, int n, size_t torn)
{
    trace_event_t e;
    FILE *f = open_file(id, "ab");
    for (int i = 0; i < n; i++) {
        record(&e, 0x401000, 0x402000, 7, TRACE_KIND_ENTER);
        put(f, &e, sizeof e);
        record(&e, 0x401000, 0x402000, 7, TRACE_KIND_EXIT);
        put(f, &e, sizeof e);
    }
    if (torn) {
        record(&e, 0x401000, 0x402000, 7, TRACE_KIND_ENTER);
        put(f, &e, torn);
    }
    fclose(f);
}

/* The rest of a record torn after `torn` bytes: the exit that closes it. */
static void finish_torn(uint32_t id, size_t torn)
{
    trace_event_t e;
    FILE *f = open_file(id, "ab");
    record(&e, 0x401000, 0x402000, 7, TRACE_KIND_ENTER);
    clock_ns -= 100; /* the same record the torn bytes began */
    record(&e, 0x401000, 0x402000, 7, TRACE_KIND_ENTER);
    put(f, (const char *)&e + torn, sizeof e - torn);
    record(&e, 0x401000, 0x402000, 7, TRACE_KIND_EXIT);
    put(f, &e, sizeof e);
    fclose(f);
}

static void marker(uint32_t id, uint64_t code, uint64_t payload)
{
    trace_event_t e;
    FILE *f = open_file(id, "ab");
    record(&e, code, payload, 0, TRACE_KIND_MARKER);
    put(f, &e, sizeof e);
    fclose(f);
}

static char frame_text[8192];

static void frame_line(void *ctx, const char *text)
{
    (void)ctx;
    size_t n = strlen(frame_text);
    snprintf(frame_text + n, sizeof frame_text - n, "%s\n", text);
}

static struct live l;
static char msg[256];

static int refresh(void)
{
    int rc = live_refresh(&l, 1.0, msg, sizeof msg);
    if (rc < 0)
        printf("# live_refresh: %s\n", msg);
    return rc == 0;
}

static enum live_state state(size_t src)
{
    return src < l.nsrcs ? l.srcs[src].state : (enum live_state)-1;
}

static uint64_t all_calls(void)
{
    uint64_t n = 0;
    for (size_t i = 0; i < l.nall; i++)
        n += l.all[i].calls;
    return n;
}

int main(void)
{
    printf("1..27\n");
    if (!scratch_make(dir, sizeof dir, "callsight-live")) {
        perror("mkdtemp");
        return 1;
    }
    if (live_init(&l, dir, NULL, 0, stdout, "# live") < 0)
        return 1;
    ok(refresh() && l.nsrcs == 0, "an empty directory: no sources, no error");

    header(1);
    calls(1, 10, 0);
    marker(1, TRACE_MARK_DEVICE_DROPPED, 50);
    ok(refresh() && l.nsrcs == 1 && l.srcs[0].records == 21, "stream 1: its 21 records read");
    ok(state(0) == LIVE_DROPPING && l.srcs[0].dropped == 50 && l.srcs[0].i_dropped == 50,
       "the device's 50 drops came this interval: dropping");
    ok(all_calls() == 10 && l.all[0].i_calls == 10, "10 calls, all in this interval");
    ok(refresh() && state(0) == LIVE_STREAMING && l.srcs[0].dropped == 50 && l.srcs[0].i_dropped == 0,
       "next interval, nothing new: streaming (its file changed just now), 50 dropped in all");

    calls(1, 3, 13);
    ok(refresh() && l.srcs[0].records == 27 && all_calls() == 13 && l.all[0].i_calls == 3,
       "3 more calls and 13 bytes of a record: 6 records read, the torn one left");
    finish_torn(1, 13);
    ok(refresh() && l.srcs[0].records == 29 && all_calls() == 14 && l.all[0].i_calls == 1,
       "the torn record completed: read whole, with its exit, 1 call more");
    l.streaming_s = 0;
    ok(refresh() && state(0) == LIVE_ENDED, "quiet (no change within streaming_s): ended");
    live_wire_begin(&l);
    live_wire(&l, 1, 1000);
    live_wire_end(&l);
    ok(state(0) == LIVE_IDLE && !l.srcs[0].have_wire, "serve lists its connection: idle, no rate from one count");
    live_wire_begin(&l);
    live_wire_end(&l);
    ok(refresh() && state(0) == LIVE_ENDED, "serve lists it no more: ended");
    live_wire_begin(&l);
    live_wire(&l, 1, 1500);
    live_wire(&l, 77, 9); /* a connection with nothing read yet: no source */
    live_wire_end(&l);
    ok(state(0) == LIVE_IDLE && !l.srcs[0].have_wire, "listed again after a refresh without: a new base, no rate");
    ok(refresh() && (live_wire_begin(&l), live_wire(&l, 1, 1800), live_wire_end(&l), 1) &&
           l.srcs[0].have_wire && l.srcs[0].i_wire == 300,
       "listed at two refreshes in a row: 300 bytes on the link since the last");
    l.streaming_s = 2;

    header(2);
    calls(2, 4, 0);
    marker(2, TRACE_MARK_STREAM_GAP, 0);
    ok(refresh() && l.nsrcs == 2 && state(1) == LIVE_CUT, "stream 2 ends with serve's gap marker: cut");
    ok(l.srcs[1].records == 9 && all_calls() == 18, "its 4 calls counted with stream 1's 14");

    header(3);
    calls(3, 2, 0);
    marker(3, TRACE_MARK_STREAM_CUT, 4);
    ok(refresh() && state(2) == LIVE_RECONNECTING, "stream 3 ends with a cut marker, just now: reconnecting");
    ok(state(1) == LIVE_CUT, "stream 2 still cut");
    l.reconnect_s = 0;
    ok(refresh() && state(2) == LIVE_CUT, "the cut older than reconnect_s: cut");
    l.reconnect_s = LIVE_RECONNECT_S;
    marker(3, TRACE_MARK_STREAM_RESUMED, 0);
    calls(3, 5, 0);
    ok(refresh() && state(2) == LIVE_STREAMING, "resumed, records after the cut: streaming again");
    ok(l.srcs[2].records == 16 && l.srcs[2].i_records == 11, "its records: 16 in all, 11 this interval");
    ok(all_calls() == 25 && l.a.calls_selected == 25, "25 calls in all, as the analysis counts them");

    uint64_t per_src[3] = {0, 0, 0};
    for (size_t i = 0; i < l.nrows; i++)
        if (l.rows[i].src < 3)
            per_src[l.rows[i].src] += l.rows[i].calls;
    ok(per_src[0] == 14 && per_src[1] == 4 && per_src[2] == 7, "each source's rows: 14, 4 and 7 calls");
    ok(!strcmp(live_state_word(LIVE_RECONNECTING), "reconnecting") &&
           !strcmp(live_state_word(LIVE_DROPPING), "dropping") && !strcmp(live_state_word(LIVE_CUT), "cut"),
       "the states' words");

    /* the frame keeps room: two source rows, the ended ones give way first */
    l.streaming_s = 0;
    ok(refresh() && state(0) == LIVE_ENDED && state(1) == LIVE_CUT && state(2) == LIVE_ENDED,
       "quiet: streams 1 and 3 ended, 2 cut");
    struct top_view v;
    top_view_init(&v, &l, NULL, 0);
    v.max_sources = 2;
    frame_text[0] = 0;
    ok(top_view_frame(&v, "t", frame_line, NULL) == 0 && !strstr(frame_text, " 1 stream 1 ") &&
           strstr(frame_text, " 2 stream 2 ") && strstr(frame_text, " 3 stream 3 ") &&
           strstr(frame_text, "... and 1 ended source, not shown"),
       "2 source rows: the cut one and the latest ended; the other counted, not shown");
    v.source = 0;
    frame_text[0] = 0;
    ok(top_view_frame(&v, "t", frame_line, NULL) == 0 && strstr(frame_text, "> 1 stream 1 ") &&
           !strstr(frame_text, " 3 stream 3 "),
       "the chosen source is always shown");
    top_view_free(&v);
    calls(1, 0, 13); /* torn at the end: said by live_finish, not counted */
    live_finish(&l);
    ok(l.a.events == 2 * 25, "finished: every call's two events counted, 50");
    ok(l.a.unclosed_enters == 0 && l.a.unmatched_exits == 0, "nothing left open or unmatched");
    live_free(&l);

    return scratch_remove(dir) == 0 ? 0 : 1;
}
