/*
 * ts_main.c - the program (part of trace_stream.c): the signals, one
 * stream run from its first connection to its last lines and exit status,
 * and main().
 */
#include "ts_internal.h"

static void on_snapshot_signal(int sig)
{
    (void)sig;
    snapshot_requested = snapshot_requested + 1; /* counted: one coming while we look is not lost */
}

static void on_stop_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

/* sig handled by handler with flags (no SA_RESTART anywhere: a blocking
 * connect or send notices the signal). */
static void on_signal(int sig, void (*handler)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigaction(sig, &sa, NULL);
}

static void install_signals(void)
{
    on_signal(SIGPIPE, SIG_IGN, 0);
    /* A second SIGINT or SIGTERM kills. */
    on_signal(SIGINT, on_stop_signal, SA_RESETHAND);
    on_signal(SIGTERM, on_stop_signal, SA_RESETHAND);
}

/* --flight-recorder: SIGUSR1 asks for a snapshot (without it, SIGUSR1 ends
 * the program as it always has). */
static void install_snapshot_signal(void)
{
    on_signal(SIGUSR1, on_snapshot_signal, 0);
}

/* What the link cost a stream that ended connected; "" when nothing. */
static void link_summary(const struct sender *s, char *extra, size_t len)
{
    uint64_t dropped = outage_drops(s);
    extra[0] = 0;
    if (s->resume.conn_seq > 1 || s->discarded || dropped)
        snprintf(extra, len, ", %" PRIu32 " connections, lost to the link: %" PRIu64 " discarded, %" PRIu64
                 " dropped by the tracers while disconnected", s->resume.conn_seq, s->discarded, dropped);
}

/* The last lines of a stream that ended connected, and its exit status. */
static int stream_report(const struct ring *r, const struct sender *s, const struct options *o)
{
    char extra[192];
    if (s->codec && !o->quiet)
        fprintf(stderr, "trace_stream: %" PRIu64 " of %" PRIu64 " event chunks coded\n", s->coded_chunks,
                s->chunks);
    link_summary(s, extra, sizeof extra);
    if (s->merge && s->merge->merged && !o->quiet)
        fprintf(stderr, "trace_stream: merged %" PRIu64 " thread snapshots into %" PRIu64
                        " per-process ones (%" PRIu64 " increment records)\n",
                s->merge->merged, s->merge->sent, s->merge->inc_sent);
    if (s->merge && s->merge->damaged)
        fprintf(stderr, "trace_stream: %" PRIu64 " thread snapshots were torn or damaged and not merged (each "
                        "later whole one still holds every count before it)\n", s->merge->damaged);
    if (s->sum_dropped)
        fprintf(stderr, "trace_stream: the server does not take summary snapshots (it predates them, or "
                        "did not answer within %u ms): %" PRIu64 " summary records not sent, counted as "
                        "dropped\n", TRACE_ACK_WAIT_MS, s->sum_dropped);
    /* More than 5% lost (and 1000 events at least, as analyze's advice): the levers, named (analyze names the busiest functions);
     * before the counts, which stay the last line */
    uint64_t made = s->events + s->dropped_sent;
    if (s->dropped_sent >= 1000 && made > s->events && s->dropped_sent * 20 > made)
        fprintf(stderr, "trace_stream: %.1f%% of the events were dropped: TRACE_MODE=summary counts every call on "
                        "the device at a few KB/s; `callsight analyze` names the functions that made most (leave them "
                        "out in trace.config); a bigger TRACE_SHM_SIZE or a TRACE_SHM_WAIT_US rides out bursts\n",
                100.0 * (double)s->dropped_sent / (double)made);
    fprintf(stderr,
            "trace_stream: forwarded %" PRIu64 " events in %" PRIu64 " chunks (%" PRIu64
            " bytes on the wire), dropped %" PRIu64 "%s\n",
            s->events, s->chunks, s->wire_bytes, s->dropped_sent, extra);
    if (s->discarded || outage_drops(s) || s->link.snap_lost)
        return EXIT_LINK_LOST;
    return r->vanished ? EXIT_TRACER_LOST : 0;
}

/* Everything after the ring is ours; the first connection may not be up
 * yet.  0, 1 error, EXIT_TRACER_LOST or EXIT_LINK_LOST. */
static int stream(struct ring *r, struct sender *s, const struct options *o)
{
    int rc = wait_for_tracer(r, s, o->quiet);
    if (rc <= 0) {
        if (rc == 0 && (s->sock >= 0 || s->parked))
            fprintf(stderr, "trace_stream: stopped before a tracer attached; nothing sent\n");
        return rc < 0 || (s->sock < 0 && !s->parked) ? end_failed(r, s) : 0;
    }
    /* A first look at the tracers' liveness locks now, while the one that
     * just attached surely holds its own (see ring_dead_writers). */
    r->vanished = ring_dead_writers(r);
    if (s->sock >= 0 && send_hello(s, r->hdr))
        return end_failed(r, s);
    if (!o->quiet)
        fprintf(stderr, "trace_stream: tracer attached; %s%s:%s%s\n",
                r->recording ? "recording, snapshots go to " : s->sock >= 0 ? "streaming to " : "the ring keeps its events until ",
                o->host, o->port, s->sock >= 0 || r->rec ? "" : " answers");
    if (stream_modes(r, s, o))
        return end_failed(r, s);
    /* The last merged snapshots, on a connection that is up (a cut on the
     * way marks them due again, and the next connection gets them whole). */
    for (int tries = 0; s->merge && tries < 3; tries++) {
        while (ack_pending(s, r)) /* a new connection: whether it takes them */
            if (idle_wait(s, 5))
                return end_failed(r, s);
        if (merge_emit(s, s->merge, 1) || reach_server_at_end(s, r->hdr))
            return end_failed(r, s);
        if (!merge_due(s))
            break;
    }
    /* A final look, so a drop counted after the last chunk is still reported. */
    if (send_losses(s) || send_notice_if_changed(s, r->hdr) || (r->vanished && report_vanished(r, s)))
        return end_failed(r, s);
    if (s->sock < 0 && reach_server_at_end(s, r->hdr))
        return end_failed(r, s);
    return stream_report(r, s, o);
}

/*
 * The first connection: up, or refused (nobody listening yet, or the
 * server turned us away).  Refused, trace_stream keeps trying within
 * --retry as after a cut, and the ring keeps what the tracers write
 * meanwhile; --retry 0 ends it at once, as it always has.
 */
static int start(struct ring *r, struct sender *s)
{
    s->ring = r->hdr;
    s->losses = r->losses;
    s->ctl.block = r->ctl;
    s->ctl.ring = r;
    resume_key_init(s); /* the main connection's only: a snapshot's sends no resume notice */
    s->link.ever_up = s->sock >= 0;
    if (s->sock >= 0)
        return stream(r, s, s->o);
    sender_down(s);
    if (s->o->retry_s == 0) {
        s->link.gave_up = 1;
        return link_end(r, s);
    }
    fprintf(stderr, "trace_stream: retrying for up to %ld s; meanwhile the ring keeps what the tracers write "
                    "(once it is full they drop new events, counted)\n", s->o->retry_s);
    return stream(r, s, s->o);
}

int main(int argc, char **argv)
{
    struct options o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (o.auth_key && auth_load(o.auth_key))
        return 2;
    install_signals();
    if (o.recorder)
        install_snapshot_signal();
    struct ring r = {.name = o.shm, .share_gid = o.share_gid, .want_ctl = o.allow_control, .fd = -1,
                     .stuck_at = UINT64_MAX};
    if (!atomic_is_lock_free((_Atomic uint64_t *)&r.tail)) {
        fprintf(stderr, "trace_stream: this target has no lock-free 64-bit atomics; the ring "
                        "cannot be shared between processes\n");
        return 1;
    }
    if (ring_open(&r, o.quiet, o.recorder, (uint32_t)o.ring_version))
        return 1;
    int status = 1;
    struct sender s;
    int sock = net_connect(o.host, o.port, 0);
    if (sock >= 0 && !o.quiet)
        fprintf(stderr, "trace_stream: connected to %s:%s\n", o.host, o.port);
    if (sender_init(&s, sock, &o) == 0)
        status = start(&r, &s);
    sender_free(&s);
    ring_close(&r);
    return status;
}
