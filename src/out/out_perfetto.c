/*
 * out_perfetto.c - the Perfetto timeline writer (see out_perfetto.h).
 *
 * Field numbers are those of Perfetto's public protos (trace_packet.proto,
 * track_descriptor.proto, track_event.proto, interned_data.proto).
 */
#include "out_perfetto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/textesc.h"

enum {
    TRACE_PACKET = 1,
    PKT_TIMESTAMP = 8, PKT_SEQ_ID = 10, PKT_TRACK_EVENT = 11, PKT_INTERNED = 12,
    PKT_SEQ_FLAGS = 13, PKT_TRACK_DESC = 60, PKT_FIRST_ON_SEQ = 87,
    DESC_UUID = 1, DESC_NAME = 2, DESC_PROCESS = 3, DESC_THREAD = 4, DESC_PARENT = 5,
    PROC_PID = 1, PROC_NAME = 6,
    THR_PID = 1, THR_TID = 2, THR_NAME = 5,
    EV_TYPE = 9, EV_NAME_IID = 10, EV_TRACK = 11, EV_NAME = 23,
    INTERNED_EVENT_NAMES = 2, NAME_IID = 1, NAME_NAME = 2
};
enum { SLICE_BEGIN = 1, SLICE_END = 2, INSTANT = 3 };
enum { SEQ_CLEARED = 1, SEQ_NEEDS_STATE = 2 };

#define SEQ_ID 1

/* A name from a device or a binary as a string field: Perfetto shows it as
 * text, so a control byte or one that is not UTF-8 goes as \xNN
 * (textesc.h), as in every other output. */
static void name_field(struct pb *b, uint32_t field, const char *s)
{
    size_t n = strlen(s);
    if (textesc_clean_prefix(s, TEXTESC_TERMINAL) == n) {
        pb_str(b, field, s);
        return;
    }
    char *e = malloc(4 * n + 1); /* every byte at most \xNN */
    if (!e) {
        b->oom = 1;
        return;
    }
    pb_str(b, field, textesc(e, 4 * n + 1, s, TEXTESC_TERMINAL));
    free(e);
}

/* Process tracks: one per analysis process, so the programs that shared a
 * stream's ring show as the processes they were. */
static uint64_t process_uuid(uint32_t proc)
{
    return (uint64_t)1 << 32 | proc;
}

static uint64_t thread_uuid(uint32_t index)
{
    return (uint64_t)2 << 32 | index;
}

int out_perfetto_init(struct out_perfetto *p, const struct analysis *a, const char *dir)
{
    memset(p, 0, sizeof *p);
    p->a = a;
    p->body = out_temp_file(dir, "perfetto");
    return p->body ? 0 : -1;
}

void out_perfetto_free(struct out_perfetto *p)
{
    if (p->body)
        fclose(p->body);
    pb_free(&p->pkt);
    pb_free(&p->ev);
    pb_free(&p->sub);
    pb_free(&p->frame);
    free(p->threads);
    free(p->procs);
    memset(p, 0, sizeof *p);
}

/* The track state for index i, zeroed when first reached; NULL oom. */
static struct out_perfetto_track *track(struct out_perfetto_track **v, size_t *cap, size_t i)
{
    if (i >= *cap) {
        size_t c = *cap ? *cap : 16;
        while (c <= i)
            c *= 2;
        struct out_perfetto_track *n = realloc(*v, c * sizeof *n);
        if (!n)
            return NULL;
        memset(n + *cap, 0, (c - *cap) * sizeof *n);
        *v = n;
        *cap = c;
    }
    return &(*v)[i];
}

/* Write p->pkt as one Trace.packet to f. */
static void flush_packet(struct out_perfetto *p, FILE *f)
{
    if (p->pkt.oom || p->err) {
        p->err = p->err ? p->err : ENOMEM;
        return;
    }
    pb_clear(&p->frame);
    pb_msg(&p->frame, TRACE_PACKET, &p->pkt);
    if (p->frame.oom)
        p->err = ENOMEM;
    else if (fwrite(p->frame.p, 1, p->frame.n, f) != p->frame.n)
        p->err = errno ? errno : EIO;
}

/* The TrackDescriptor built in p->ev, as a packet of its own. */
static void flush_descriptor(struct out_perfetto *p)
{
    pb_clear(&p->pkt);
    pb_uint(&p->pkt, PKT_SEQ_ID, SEQ_ID);
    pb_msg(&p->pkt, PKT_TRACK_DESC, &p->ev);
    flush_packet(p, p->body);
}

static void describe_process(struct out_perfetto *p, uint32_t proc)
{
    char name[64];
    out_process_label(p->a, proc, name, sizeof name);
    pb_clear(&p->sub);
    pb_uint(&p->sub, PROC_PID, out_process_pid(p->a, proc));
    pb_str(&p->sub, PROC_NAME, name);
    pb_clear(&p->ev);
    pb_uint(&p->ev, DESC_UUID, process_uuid(proc));
    pb_msg(&p->ev, DESC_PROCESS, &p->sub);
    flush_descriptor(p);
}

/* The process's track, described on first use; NULL oom. */
static struct out_perfetto_track *process_track(struct out_perfetto *p, uint32_t proc)
{
    struct out_perfetto_track *tr = track(&p->procs, &p->capprocs, proc);
    if (!tr) {
        p->err = ENOMEM;
        return NULL;
    }
    if (!tr->described) {
        describe_process(p, proc);
        tr->described = 1;
    }
    return tr;
}

static void describe_thread(struct out_perfetto *p, const struct analysis_thread *t)
{
    char label[64];
    analysis_thread_label(t, label, sizeof label);
    pb_clear(&p->sub);
    pb_uint(&p->sub, THR_PID, out_process_pid(p->a, t->proc));
    pb_uint(&p->sub, THR_TID, t->tid);
    name_field(&p->sub, THR_NAME, t->name[0] ? t->name : label);
    pb_clear(&p->ev);
    pb_uint(&p->ev, DESC_UUID, thread_uuid(t->index));
    pb_uint(&p->ev, DESC_PARENT, process_uuid(t->proc));
    pb_msg(&p->ev, DESC_THREAD, &p->sub);
    flush_descriptor(p);
}

/* The thread's track, described (with its source) on first use. */
static struct out_perfetto_track *thread_track(struct out_perfetto *p, const struct analysis_thread *t)
{
    if (!process_track(p, t->proc))
        return NULL;
    struct out_perfetto_track *tr = track(&p->threads, &p->capthreads, t->index);
    if (!tr) {
        p->err = ENOMEM;
        return NULL;
    }
    if (!tr->described) {
        describe_thread(p, t);
        tr->described = 1;
    }
    return tr;
}

/* One TrackEvent packet; ts is kept from going backwards on its track. */
static void event(struct out_perfetto *p, struct out_perfetto_track *tr, uint64_t uuid, int64_t ts,
                  int type, uint64_t iid, const char *name)
{
    if (tr->have_ts && ts < tr->last_ts)
        ts = tr->last_ts;
    tr->last_ts = ts;
    tr->have_ts = 1;
    pb_clear(&p->ev);
    pb_uint(&p->ev, EV_TYPE, (uint64_t)type);
    pb_uint(&p->ev, EV_TRACK, uuid);
    if (name)
        name_field(&p->ev, EV_NAME, name);
    else if (iid)
        pb_uint(&p->ev, EV_NAME_IID, iid);
    pb_clear(&p->pkt);
    pb_uint(&p->pkt, PKT_TIMESTAMP, ts > 0 ? (uint64_t)ts : 0);
    pb_uint(&p->pkt, PKT_SEQ_ID, SEQ_ID);
    pb_uint(&p->pkt, PKT_SEQ_FLAGS, SEQ_NEEDS_STATE);
    pb_msg(&p->pkt, PKT_TRACK_EVENT, &p->ev);
    flush_packet(p, p->body);
}

static void on_thread(void *ctx, const struct analysis_thread *t)
{
    struct out_perfetto *p = ctx;
    /* A renamed thread that already has a track gets it described again. */
    if (t->index < p->capthreads && p->threads[t->index].described)
        describe_thread(p, t);
}

/* End a pending flush slice before the track's next event at ts: at its
 * own end, or at ts when that comes first (the flush's duration was
 * measured with the device's clock rate, the events' times with ours; and
 * a hostile duration must not drag the track's time along). */
static void settle_flush(struct out_perfetto *p, struct out_perfetto_track *tr, uint64_t uuid, int64_t ts)
{
    if (!tr->flush_open)
        return;
    tr->flush_open = 0;
    event(p, tr, uuid, tr->flush_end < ts ? tr->flush_end : ts, SLICE_END, 0, NULL);
}

static void on_open(void *ctx, const struct analysis_thread *t, const struct callstack *s,
                    struct callstack_frame *f)
{
    struct out_perfetto *p = ctx;
    struct out_perfetto_track *tr;
    (void)s;
    if (!f->tag.selected || !(tr = thread_track(p, t)))
        return;
    settle_flush(p, tr, thread_uuid(t->index), f->start);
    event(p, tr, thread_uuid(t->index), f->start, SLICE_BEGIN, f->func + 1,
          f->placeholder ? "[lost frames]" : NULL);
}

static void on_close(void *ctx, const struct analysis_thread *t, const struct callstack_frame *f,
                     int64_t ts, enum callstack_end how, uint64_t incl, uint64_t self)
{
    struct out_perfetto *p = ctx;
    struct out_perfetto_track *tr;
    (void)how;
    (void)incl;
    (void)self;
    if (!f->tag.selected || !(tr = thread_track(p, t)))
        return;
    settle_flush(p, tr, thread_uuid(t->index), ts);
    event(p, tr, thread_uuid(t->index), ts, SLICE_END, 0, NULL);
}

static void on_instant(void *ctx, const struct analysis_thread *t, uint32_t src, int64_t ts,
                       const char *what)
{
    struct out_perfetto *p = ctx;
    uint32_t proc = p->a->src[src].proc; /* a source's own notes: its default process */
    struct out_perfetto_track *tr = t ? thread_track(p, t) : process_track(p, proc);
    if (!tr)
        return;
    if (t)
        settle_flush(p, tr, thread_uuid(t->index), ts);
    event(p, tr, t ? thread_uuid(t->index) : process_uuid(proc), ts, INSTANT, 0, what);
}

/* A flush shows as a slice of its own inside whatever it interrupted, so
 * the timeline, which keeps real timestamps, says where the time went. */
static void on_tracer(void *ctx, const struct analysis_thread *t, int64_t ts, uint64_t ns)
{
    struct out_perfetto *p = ctx;
    struct out_perfetto_track *tr = thread_track(p, t);
    if (!tr)
        return;
    int64_t room = ts > 0 ? INT64_MAX - ts : INT64_MAX; /* untrusted: never overflow */
    settle_flush(p, tr, thread_uuid(t->index), ts);
    event(p, tr, thread_uuid(t->index), ts, SLICE_BEGIN, 0, "[callsight flush]");
    tr->flush_open = 1;
    tr->flush_end = ns > (uint64_t)room ? INT64_MAX : ts + (int64_t)ns;
}

struct sink out_perfetto_sink(struct out_perfetto *p)
{
    return (struct sink){.ctx = p, .thread = on_thread, .open = on_open, .close = on_close,
                         .instant = on_instant, .tracer = on_tracer};
}

/* The first packet: every function's name, interned for the sequence. */
static void write_names(struct out_perfetto *p, const struct out_view *v, FILE *out)
{
    struct pb names = {0};
    char hex[32];
    for (size_t i = 0; i < v->a->funcs.n; i++) {
        pb_clear(&p->sub);
        pb_uint(&p->sub, NAME_IID, i + 1);
        name_field(&p->sub, NAME_NAME, out_func_name(v, (uint32_t)i, hex, sizeof hex));
        pb_msg(&names, INTERNED_EVENT_NAMES, &p->sub);
    }
    pb_clear(&p->pkt);
    pb_uint(&p->pkt, PKT_SEQ_ID, SEQ_ID);
    pb_uint(&p->pkt, PKT_SEQ_FLAGS, SEQ_CLEARED | SEQ_NEEDS_STATE);
    pb_uint(&p->pkt, PKT_FIRST_ON_SEQ, 1);
    pb_msg(&p->pkt, PKT_INTERNED, &names);
    flush_packet(p, out);
    pb_free(&names);
}

static void copy_body(struct out_perfetto *p, FILE *out)
{
    char buf[65536];
    size_t n;
    if (fflush(p->body) != 0 || fseek(p->body, 0, SEEK_SET) != 0) {
        p->err = errno;
        return;
    }
    while (!p->err && (n = fread(buf, 1, sizeof buf, p->body)) > 0)
        if (fwrite(buf, 1, n, out) != n)
            p->err = errno ? errno : EIO;
    if (!p->err && ferror(p->body))
        p->err = EIO;
}

int out_perfetto_finish(struct out_perfetto *p, const struct out_view *v, FILE *out)
{
    for (size_t i = 0; i < p->capthreads; i++) /* flushes still open at the end of their track */
        settle_flush(p, &p->threads[i], thread_uuid((uint32_t)i), p->threads[i].flush_end);
    if (!p->err)
        write_names(p, v, out);
    if (!p->err)
        copy_body(p, out);
    if (p->err) {
        errno = p->err;
        return -1;
    }
    return 0;
}
