/*
 * trace.h - callsight's event record and trace-file layout.
 *
 * This header is shared by every part of callsight: the runtime compiled into
 * the traced program (trace.c) writes these records, trace_stream forwards
 * them, and the host tool (callsight serve / analyze) reads them.  The layouts
 * are fixed for interoperability with trace files already in the field, so
 * every size and offset is asserted below; change nothing here without
 * bumping TRACE_FILE_VERSION.
 *
 * Everything on disk and on the wire is little-endian.  Readers must honour
 * TRACE_FLAG_BIGENDIAN (files written by other agents in big-endian order).
 *
 * Event record, 32 bytes:
 *
 *   0        8        16       24   28 29   32
 *   +--------+--------+--------+----+--+---+
 *   |   ts   |  func  |  site  |tid |k |pad|
 *   +--------+--------+--------+----+--+---+
 *
 * Trace file: an 80-byte trace_file_header_t, then events to the end.
 *
 * Needs only <stdint.h>; C11.  One function, trace_summary_bucket, static
 * inline: the summary histogram's rule, the same code on both sides.
 */
#ifndef CALLSIGHT_TRACE_H
#define CALLSIGHT_TRACE_H

#include <stddef.h>
#include <stdint.h>

/* ---- event record ------------------------------------------------------ */

enum trace_kind {
    TRACE_KIND_ENTER = 0,  /* function entered */
    TRACE_KIND_EXIT = 1,   /* function returned */
    TRACE_KIND_MARKER = 2, /* in-band note; func holds a trace_mark code */
    TRACE_KIND_HWC = 3,    /* reserved: hardware counters */
    TRACE_KIND_SUMMARY = 4, /* TRACE_MODE=summary: part of a snapshot (below) */
    TRACE_KIND_MODULE = 5   /* part of a list of the loaded modules (below) */
};

typedef struct trace_event {
    uint64_t ts;        /* ns, or raw clock ticks when TRACE_FLAG_TICKS */
    uint64_t func;      /* runtime address of the function (marker: code) */
    uint64_t call_site; /* return address in the caller (marker: payload) */
    uint32_t tid;       /* kernel thread id */
    uint8_t kind;       /* enum trace_kind */
    uint8_t pad[3];     /* zero */
} trace_event_t;

#define TRACE_EVENT_SIZE 32u

_Static_assert(sizeof(trace_event_t) == TRACE_EVENT_SIZE, "event is 32 bytes");
_Static_assert(offsetof(trace_event_t, ts) == 0, "ts at 0");
_Static_assert(offsetof(trace_event_t, func) == 8, "func at 8");
_Static_assert(offsetof(trace_event_t, call_site) == 16, "call_site at 16");
_Static_assert(offsetof(trace_event_t, tid) == 24, "tid at 24");
_Static_assert(offsetof(trace_event_t, kind) == 28, "kind at 28");
_Static_assert(offsetof(trace_event_t, pad) == 29, "pad at 29");

/*
 * Marker codes (event.func when kind == TRACE_KIND_MARKER).  ts is the time
 * of the note unless the code says otherwise; call_site is the payload.  A
 * reader skips codes it does not know and never treats a marker as an exit.
 * Codes 1-11 are shared with the reference implementation; 16 and up are
 * callsight's own.
 */
enum trace_mark {
    TRACE_MARK_BUDGET = 1,      /* capture stopped, byte budget reached; payload: budget bytes */
    TRACE_MARK_DISK_FLOOR = 2,  /* capture stopped, free disk below floor; payload: floor bytes */
    TRACE_MARK_WRITE_ERROR = 3, /* capture stopped, a write failed; payload: errno */
    TRACE_MARK_EVENT_LIMIT = 4, /* capture stopped, event limit reached; payload: the limit */
    TRACE_MARK_WRAP = 5,        /* flight recorder discarded older data; payload: events lost */
    TRACE_MARK_CLOCK_ANCHOR = 6, /* at exit: ts = raw ticks, payload = CLOCK_MONOTONIC ns then */
    /* 7-11 reserved (hardware counters in the reference implementation) */

    /*
     * This thread lost events: the ring was full or its lock could not be
     * had.  Payload: how many enter/exit events the thread lost since its
     * previous successful flush.  Always followed at once by
     * TRACE_MARK_THREAD_RESYNC.  Written at the head of the thread's next
     * successful flush, so it sits exactly where the hole is.
     */
    TRACE_MARK_THREAD_LOST = 16,
    /*
     * The thread's call depth around the hole, so the analyzer can repair
     * its shadow stack.  Payload: low 32 bits = the lowest depth reached
     * inside the lost events (frames below it are intact), high 32 bits =
     * the depth after them (frames above the low mark were entered inside
     * the hole; their exits are losses, not unmatched exits).  Both are
     * int32 in two's complement, relative to the thread's first event.
     */
    TRACE_MARK_THREAD_RESYNC = 17,
    /*
     * Written by serve: the device reported its cumulative dropped-event
     * count (a notice chunk).  Payload: that count.  The last one in a
     * stream is the stream's total.
     */
    TRACE_MARK_DEVICE_DROPPED = 18,
    /*
     * Written by serve: the connection ended abnormally or a stream resumed
     * after a gap.  Payload: events known lost in the gap (0 = unknown).
     */
    TRACE_MARK_STREAM_GAP = 19,
    /*
     * The thread ended (flushed by its exit).  A later thread that reuses the
     * tid starts from an empty stack.  Payload: 0.
     */
    TRACE_MARK_THREAD_EXIT = 20,
    /*
     * The thread's name (pthread_setname_np / prctl), written at the head of
     * its first flush and again when it changed.  The name is at most 16
     * bytes, NUL-padded: bytes 0-7 in call_site and bytes 8-15 in ts, each
     * packed little-endian (byte i at bits 8i), so it survives the same byte
     * swapping as every other field.
     */
    TRACE_MARK_THREAD_NAME = 21,
    /*
     * Written by serve: the device's client found that tracer processes
     * died without detaching (killed).  Whatever they had buffered and not
     * flushed is lost, count unknown; their threads' open frames never
     * close.  Payload: how many processes.
     */
    TRACE_MARK_TRACER_VANISHED = 22,
    /*
     * Written by serve: the connection of a resumable stream (its client
     * sent a TRACE_CHUNK_RESUME) was cut.  Loss is unknown at this point;
     * if the stream reconnects, its files continue in the same series with
     * TRACE_MARK_STREAM_RESUMED.  Payload: records received on the stream
     * so far (all its connections).
     */
    TRACE_MARK_STREAM_CUT = 23,
    /*
     * Written by serve: a stream reconnected after a cut; the files
     * continue here.  Payload: exactly how many records were lost between
     * the last record before it and the first after it (0 = none).  When
     * that is not 0 a TRACE_MARK_STREAM_GAP with the same count follows at
     * once.  Every thread's call stack may have a hole here.
     */
    TRACE_MARK_STREAM_RESUMED = 24,
    /*
     * Written by serve as the first record of a resumable stream's file
     * series (tid 0), so that a restarted serve finds the series again when
     * the stream reconnects and counts exactly what it holds.  ts: the
     * stream's start time (CLOCK_REALTIME ns on the device, not a trace
     * time).  Payload: the stream's random id.
     */
    TRACE_MARK_STREAM_ID = 25,
    /*
     * The GNU build-id of the traced executable (its NT_GNU_BUILD_ID note),
     * so the analyzer can prove that --exe is the binary that ran.  File
     * mode: the first record of every file; stream mode: at the head of the
     * process's first flush after it attaches (and again in a forked
     * child).  Only the first 16 bytes are carried, zero-padded when the
     * build-id is shorter (md5/uuid ids are 16, sha1 ids 20): bytes 0-7 in
     * call_site and bytes 8-15 in ts, packed like THREAD_NAME.  Readers
     * compare those 16 bytes.  Not written when the program has no build-id.
     * Stream mode: part of the process's announcement (TRACE_MARK_PROCESS).
     */
    TRACE_MARK_BUILD_ID = 26,
    /*
     * Stream mode: the thread belongs to process `payload` (its pid).  At
     * the head of each thread's first flush into the ring, and again in a
     * forked child, before any other record of the thread, so that the
     * records of several processes sharing one ring can be told apart (a
     * reused tid starts a new thread, which says it again).  When it is the
     * process's first flush since it attached, TRACE_MARK_LOAD_BIAS and
     * (if it has one) TRACE_MARK_BUILD_ID follow at once, same tid: the
     * process's announcement.  ts: the time.
     */
    TRACE_MARK_PROCESS = 27,
    /*
     * Stream mode: the load bias of the process of this thread (see
     * TRACE_MARK_PROCESS), which the ring header and handshake carry only
     * for the first process that attached.  Payload: the bias.  ts: time.
     */
    TRACE_MARK_LOAD_BIAS = 28,
    /*
     * The tracer had this thread from ts for `payload` nanoseconds: a flush
     * (file mode's write and any segment rotation; stream mode's copy into
     * the ring, its wait for the lock or for room, a deferred attempt that
     * failed).  It sits in the thread's records where the flush happened,
     * after the event whose hook flushed, so the analyzer takes the time out
     * of every frame open there.  A reader that does not know it counts
     * the time in those frames, as before it existed.
     */
    TRACE_MARK_TRACER_TIME = 29,
    /*
     * Stream mode with TRACE_SHM_WAIT_US: of the TRACER_TIME just before
     * it, `payload` ns went on waiting for a busy lock or a full ring, past
     * the first try.  Counted and shown by serve and analyze: waiting
     * perturbs the program being measured.  ts: when the flush began.
     */
    TRACE_MARK_TRACER_WAIT = 30,
    /*
     * Flight-recorder rings only (trace_shm.h): the first record of every
     * put, so that writers overwriting the oldest data drop whole batches.
     * Payload: low 32 bits = records in the batch, this one included;
     * high 32 bits = its enter/exit events.  ts: the time of the put.
     * Readers skip it.
     */
    TRACE_MARK_BATCH = 31,
    /*
     * TRACE_TRIGGER=NAME>LIMIT: the call of NAME whose exit is this
     * thread's latest (same tid; a TRACER_TIME may come between) took
     * longer than LIMIT.  Payload: how long it took, ns.  ts: the time of
     * that exit.  TRACE_MARK_TRIGGER_FRAME records follow.
     */
    TRACE_MARK_TRIGGER = 32,
    /*
     * Right after TRACE_MARK_TRIGGER, one per function open around the
     * slow call, outermost first (at most 64, the innermost): so that the
     * stack is whole even when the entries of its outer frames were
     * overwritten long ago.  Payload: the function (runtime address).  ts:
     * its depth (0 = outermost of the thread).
     */
    TRACE_MARK_TRIGGER_FRAME = 35,
    /*
     * Written by trace_stream --flight-recorder as the first record (tid 0)
     * of a snapshot's connection: what the records after it are.  ts: when
     * the trigger was seen (trace time: ticks when the stream's are).
     * Payload: low 8 bits = enum trace_snapshot_cause; bits 8-31 = the
     * snapshot's number (1, 2, ...).  TRACE_MARK_WRAP (tid 0) follows at
     * once: events overwritten before the snapshot's first record since
     * the previous snapshot (or the start).  Every thread's first records
     * may be exits of calls whose entries were overwritten: truncated.
     */
    TRACE_MARK_SNAPSHOT = 33,
    /*
     * Written by trace_stream --flight-recorder (tid 0) on its main
     * connection, once at its start (which marks that series as the
     * recorder's, whose device drop count covers its snapshots' threads'
     * losses too) and again when these counts change: triggers that took
     * no snapshot.  Payload: low 32 bits = over --max-triggers; high 32 bits
     * = slow calls that did not ask, within TRACE_TRIGGER_GAP_MS of one
     * that did (trace_shm.h).  Both cumulative, saturating.
     */
    TRACE_MARK_TRIGGERS_SKIPPED = 34,
    /*
     * Written by serve (tid 0) right after TRACE_MARK_STREAM_ID in a series
     * whose stream sent a resume key (trace_shm.h): payload = the first 8
     * bytes of SHA-256 of the key, as a little-endian u64.  A serve
     * restarted into the directory checks a resume against it; the key
     * itself never reaches a file.  Readers ignore it.
     */
    TRACE_MARK_STREAM_KEY = 36,
    /*
     * Written by trace_stream from the ring's loss table (trace_shm.h),
     * whenever a count in it changed and at the end: payload = the
     * cumulative count of enter/exit events the device dropped for the
     * thread `tid`, the same events its THREAD_LOST markers count (so a
     * reader takes a thread's loss from the last of these when it has one,
     * else from its markers, never from both); tid 0: the threads that
     * found the table full, together.  Older readers skip it.
     */
    TRACE_MARK_THREAD_DROPPED = 40,
    /*
     * Live control (trace_shm.h's control block, docs/control.md): the
     * thread applied a new setting here, at this point of its events.
     * ts = the clock then; payload = the generation (2, 4, ...); pad[0] =
     * the setting's TRACE_CTL_* flags (0x80: this thread's name matches
     * none of the setting's thread globs, so it records nothing; 0x20:
     * the setting's own trigger times this thread's calls), pad[1..2]
     * = how many functions its table holds, or a subtree's depth
     * (little-endian).  Calls open then keep the decision made
     * at their enter.  Older readers skip it.
     */
    TRACE_MARK_CONTROL = 41,
    /*
     * Live control switched this thread's mode here, right after the
     * TRACE_MARK_CONTROL of the generation that did: the calls it enters
     * from here on are recorded as events (events after this marker) or
     * summarized (in its summary snapshots, trace.h below); a call open
     * then stays in the mode it began in.  Payload: generation << 8 |
     * mode (1 events, 2 summary).  Older readers skip it.
     */
    TRACE_MARK_MODE = 42,
    /*
     * Written by trace_stream (tid 0) in its main connection's series when
     * live control turns the ring's flight recorder on or off (trace_shm.h,
     * "flight recorder").  On: everything before it was sent; from here the
     * ring keeps only its most recent events, which go as snapshots on
     * connections of their own.  Off: the ring's last recording follows,
     * then the stream as before.  Between the two the series has a hole
     * made on purpose: calls open across it are truncated, not unmatched,
     * and none of it is loss.  Payload: 1 on; 2 | events overwritten while
     * it recorded << 8, off.  Older readers skip it.
     */
    TRACE_MARK_RECORDER = 43
};
#define TRACE_RECORDER_MARK_ON 1u
#define TRACE_RECORDER_MARK_OFF 2u
#define TRACE_CTL_MARK_LEFT_OUT 0x80u /* TRACE_MARK_CONTROL pad[0]: the thread is not among the setting's */

/* A tracer asks for at most one snapshot per this many ms (a storm of slow
 * calls is counted in the recorder block's `held`, trace_shm.h, and the
 * client bounds snapshots per hour). */
#define TRACE_TRIGGER_GAP_MS 100u

enum trace_snapshot_cause {
    TRACE_SNAPSHOT_SIGNAL = 1,  /* SIGUSR1 to trace_stream */
    TRACE_SNAPSHOT_CALL = 2,    /* a TRACE_TRIGGER call was slow */
    TRACE_SNAPSHOT_DEATH = 3,   /* a tracer process died without detaching */
    TRACE_SNAPSHOT_REQUEST = 4  /* the host asked (reserved) */
};

/* ---- summary snapshots -------------------------------------------------
 *
 * TRACE_MODE=summary: instead of events, each thread keeps per-function
 * aggregates and writes them as snapshots, into the files or the ring where
 * its events would go: every TRACE_SUMMARY_MS, at thread exit
 * and at process exit.  Snapshots are cumulative (each holds the thread's
 * totals so far), so a lost or torn one costs time resolution only, never
 * counts; a reader takes the last whole one of each thread.  A file that
 * holds them says TRACE_FILE_VERSION_SUMMARY, so an older reader refuses
 * it instead of misreading it.
 *
 * Every record is an ordinary 32-byte record with kind TRACE_KIND_SUMMARY,
 * the thread's tid, and its part in pad[0] (enum trace_summary_part):
 *
 *   BEGIN    ts = when (the thread's clock), func = the snapshot's number
 *            (1, 2, ... per thread), call_site = functions that follow
 *   FUNC     ts = inclusive ns (sum), func = the function's runtime address,
 *            call_site = completed calls; pad[1] = TRACE_SUMMARY_FUNC_LOWER
 *            when these are a lower bound (trace_stream's merged snapshots:
 *            a thread of the process whose table filled up lacks the
 *            function, so calls of it may be in META's ts); 0 otherwise,
 *            and from runtimes and clients before it, which readers then
 *            ignore (an older reader ignores the flag: the note of META's
 *            count still stands)
 *   TIMES    ts = self ns (sum), func = min ns, call_site = max ns (of one
 *            call's inclusive time), for the FUNC just before
 *   BUCKETS  two histogram buckets of that function: ts = count of bucket
 *            A, func = count of bucket B, call_site = A << 32 | B (B =
 *            0xffffffff: none); counts are cumulative
 *   META     ts = calls of functions beyond the thread's table (not
 *            attributed; once it is not 0 the table is full and holds
 *            what it will hold, so a reader knows that any function the
 *            table lacks may have lost calls to it: a lower bound), func = calls deeper than its shadow stack (not
 *            timed: their time stays in the caller), call_site = exits that
 *            matched no open call; pad[1] = TRACE_SUMMARY_META_LOWER_SAID
 *            or 0 (below)
 *   END      ts = when, func = the snapshot's number again (a snapshot
 *            without its END is torn and ignored), call_site = ns the
 *            tracer took from the thread (snapshots), already excluded;
 *            pad[1] = TRACE_SUMMARY_ENDS | which end (enum
 *            trace_summary_end): a reader that finds no PROCESS_EXIT
 *            snapshot of a process, and threads whose last one is
 *            PERIODIC, knows the program ended without exiting (killed);
 *            pad[1] = 0 (runtimes before it) says nothing
 *
 * Times are inclusive of callees and exclude the tracer's own time.  The
 * histogram is of each call's inclusive ns, log-linear: buckets 0..63 count
 * the values 0..63 exactly; bucket 64 + 32 * (b - 1) + s (b >= 1, s <
 * 32) counts [ (32 + s) << b, (33 + s) << b ), so every bucket is at most
 * 1/32 of its lower edge wide; the last bucket also takes every larger
 * value (max is exact anyway).
 */
enum trace_summary_part {
    TRACE_SUMMARY_BEGIN = 1,
    TRACE_SUMMARY_FUNC = 2,
    TRACE_SUMMARY_TIMES = 3,
    TRACE_SUMMARY_BUCKETS = 4,
    TRACE_SUMMARY_META = 5,
    TRACE_SUMMARY_END = 6
};

enum trace_summary_end {
    TRACE_SUMMARY_PERIODIC = 0,     /* every TRACE_SUMMARY_MS */
    TRACE_SUMMARY_THREAD_EXIT = 1,  /* the thread's last, at its exit */
    TRACE_SUMMARY_PROCESS_EXIT = 2  /* the exiting thread's last, at process exit */
};
#define TRACE_SUMMARY_ENDS 0x80u /* END's pad[1] carries a trace_summary_end */
#define TRACE_SUMMARY_FUNC_LOWER 0x01u /* FUNC's pad[1]: its counts are a lower bound */
/* META's pad[1]: this snapshot's FUNCs carry TRACE_SUMMARY_FUNC_LOWER
 * wherever it applies (trace_stream's merged snapshots, and serve's whole
 * ones written from them, say so).  A merged snapshot that counts calls
 * beyond a table without saying so comes from an older trace_stream or
 * serve, and a reader must take every row of it as a lower bound. */
#define TRACE_SUMMARY_META_LOWER_SAID 0x01u

#define TRACE_SUMMARY_EXACT 64u   /* buckets counted one value each */
#define TRACE_SUMMARY_SUB 32u     /* sub-buckets per power of two above */
#define TRACE_SUMMARY_NBUCKETS 1408u /* 64 + 32 * 42: up to 2^48 ns (78 hours) */
#define TRACE_SUMMARY_NO_BUCKET 0xffffffffu
/* The tid of a process's threads merged into one series of snapshots by
 * trace_stream (its pid in the low bits; real tids stay below 2^22): an
 * ordinary thread to a reader, named "N threads" by a THREAD_NAME marker
 * and bound to its process by a PROCESS marker before each snapshot. */
#define TRACE_SUMMARY_MERGED_TID 0x80000000u

_Static_assert(TRACE_SUMMARY_NBUCKETS == TRACE_SUMMARY_EXACT + TRACE_SUMMARY_SUB * 42u, "42 powers of two");

/* The buckets in blocks: block 0 the exact ones, block b >= 1 the 32 of
 * [2^(b+5), 2^(b+6)), bucket 64 + 32 * (b - 1) + s. */
#define TRACE_SUMMARY_BLOCKS 43u
_Static_assert(TRACE_SUMMARY_NBUCKETS == TRACE_SUMMARY_EXACT + TRACE_SUMMARY_SUB * (TRACE_SUMMARY_BLOCKS - 1u),
               "the last block ends the buckets");

/* The bucket of a duration of v ns, by the rule above (the last bucket
 * also takes every larger value), and in *block its block.  The one
 * definition of the rule: the runtime buckets each call's time with it, and
 * the analyzer's own histogram of event traces (src/analysis/hist.c) with
 * it too, so a summary's percentiles are those an event trace of the same
 * calls gives. */
#if defined(__GNUC__)
__attribute__((no_instrument_function)) /* the runtime may be built with -finstrument-functions */
#endif
static inline uint32_t trace_summary_bucket(uint64_t v, uint32_t *block)
{
    if (v < TRACE_SUMMARY_EXACT) {
        *block = 0;
        return (uint32_t)v;
    }
#if defined(__GNUC__) || defined(__clang__)
    uint32_t e = 63u - (uint32_t)__builtin_clzll(v); /* 6..63 */
#else
    uint32_t e = 0;
    for (uint64_t x = v; x >>= 1;)
        e++;
#endif
    uint32_t b = e - 5u, slot = (uint32_t)(v >> (e - 5u)) & (TRACE_SUMMARY_SUB - 1u);
    if (b >= TRACE_SUMMARY_BLOCKS) {
        *block = TRACE_SUMMARY_BLOCKS - 1u;
        return TRACE_SUMMARY_NBUCKETS - 1u;
    }
    *block = b;
    return TRACE_SUMMARY_EXACT + TRACE_SUMMARY_SUB * (b - 1u) + slot;
}

/* ---- loaded modules ----------------------------------------------------
 *
 * The program and the shared objects loaded into it (libraries linked at
 * build time, plugins opened with dlopen), so that an address is named by
 * the module mapped there when its event happened.  Each thread writes the
 * whole list into its own records before the first batch of a flush that
 * follows a change in the set of loaded objects (the runtime looks at every
 * flush, never on a hook's fast path): at its first flush, after a dlopen
 * or dlclose, in a forked child.  A list describes the thread's later
 * records until the thread's next list; since it heads a batch recorded
 * before it, a reader also keeps the modules of the list before that are
 * gone now, unless a new one took their addresses.  So an address that one
 * module left and another took between two flushes of a thread that ran
 * code in both counts to the later one.
 *
 * Every record is an ordinary 32-byte record with kind TRACE_KIND_MODULE,
 * the thread's tid, and its part in pad[0] (enum trace_module_part):
 *
 *   LIST      ts = when, func = the process's list number (it grows with
 *             each change), call_site = modules that follow
 *   BEGIN     ts = the module's number (1, 2, ... per process, kept while it
 *             stays loaded), func = its load bias (added to its link-time
 *             addresses), call_site = TRACE_MODULE_MAIN for the program
 *             itself, TRACE_MODULE_GONE for a module already closed
 *             (see END), else 0
 *   TEXT      ts = the module's number, func = the lowest runtime address of
 *             its executable segments, call_site = the end of the highest
 *             (exclusive)
 *   BUILD_ID  its GNU build-id's first 24 bytes: bytes 0-7 in ts, 8-15 in
 *             func, 16-23 in call_site, byte i at bits 8i (as THREAD_NAME);
 *             pad[1] = the id's length in bytes (1-24 kept; longer ids are
 *             cut to 24 and say 24); absent when the module has none
 *   PATH      the next 1-24 bytes of its path as the loader opened it
 *             (packed as BUILD_ID; pad[1] = how many); absent when it has
 *             none (the vDSO, an unnamed program)
 *   END       ts = the module's number, func = the path's length in bytes
 *             (the PATH records' sum: a reader checks it), call_site = 0,
 *             or for a closed module (BEGIN says TRACE_MODULE_GONE) the
 *             time (as ts) by which it had gone: the thread's records up
 *             to then may be its, later ones are not.  The runtime hears
 *             of each dlopen and dlclose as it happens, and a thread's
 *             next list carries the modules closed since its last one, so
 *             a plugin that lived between two flushes is listed, and one
 *             that another took the place of is told apart by the time.
 *             Readers before these fields take a closed module as loaded.
 *   LIST_END  ts = when, func = the list's number again, call_site =
 *             modules left out because the runtime's table was full
 *
 * A list whose records are not all there, in this order, is damaged and
 * must be ignored (the thread's earlier list stays in force); markers may
 * come between its records (a new file segment's head), other kinds tear
 * it.  Readers that do not know the kind skip it.
 */
enum trace_module_part {
    TRACE_MODULE_LIST = 1,
    TRACE_MODULE_BEGIN = 2,
    TRACE_MODULE_TEXT = 3,
    TRACE_MODULE_BUILD_ID = 4,
    TRACE_MODULE_PATH = 5,
    TRACE_MODULE_END = 6,
    TRACE_MODULE_LIST_END = 7
};

#define TRACE_MODULE_MAIN 1u          /* BEGIN's call_site: the program itself */
#define TRACE_MODULE_GONE 2u          /* BEGIN's call_site: closed by END's call_site */
#define TRACE_MODULE_BYTES 24u        /* bytes a BUILD_ID or PATH record carries */
#define TRACE_MODULE_PATH_MAX 4096u   /* a longer path is a damaged list */

/* ---- trace file -------------------------------------------------------- */

#define TRACE_FILE_MAGIC "MLTRACE" /* 7 chars + NUL fill the 8-byte field */
#define TRACE_FILE_VERSION 2u
#define TRACE_FILE_VERSION_SUMMARY 3u /* the file holds summary snapshots, not events */
#define TRACE_FILE_HEADER_SIZE 80u

/* Header flags; also used in the shm ring header and the stream handshake. */
#define TRACE_FLAG_TICKS 0x1u     /* ts are raw ticks: convert with tick_hz */
#define TRACE_FLAG_WRAPPED 0x2u   /* earlier segments were discarded */
#define TRACE_FLAG_BIGENDIAN 0x4u /* file is big-endian (never written by us) */
/* File mode: the writer records its exit (TRACE_MARK_CLOCK_ANCHOR) when the
 * process exits, whatever its clock: a process of such files whose calls are
 * still open at the end and that has no anchor was killed.  Older readers
 * ignore it; files without it (older runtimes, other writers) claim nothing. */
#define TRACE_FLAG_EXIT_RECORD 0x8u

typedef struct trace_file_header {
    char magic[8];        /* "MLTRACE\0" */
    uint32_t version;     /* TRACE_FILE_VERSION */
    uint32_t event_size;  /* TRACE_EVENT_SIZE */
    uint32_t header_size; /* readers skip this many bytes, never assume 80; 80 or a multiple of 32 */
    uint32_t flags;       /* TRACE_FLAG_* */
    uint64_t load_bias;   /* subtract from addresses before symbolizing */
    uint64_t tick_hz;     /* ticks per second; 0 = ts are already ns */
    uint64_t t0_ticks;    /* clock at start, in ticks ... */
    uint64_t t0_ns;       /* ... and CLOCK_MONOTONIC ns at the same instant */
    uint64_t hook_ns;     /* measured cost of one hook; 0 = not measured */
    uint32_t pid;         /* process id (stream file: the connection id) */
    uint32_t seq;         /* segment number, from 0 */
    uint64_t reserved;    /* zero */
} trace_file_header_t;

_Static_assert(sizeof(trace_file_header_t) == TRACE_FILE_HEADER_SIZE, "file header is 80 bytes");
_Static_assert(offsetof(trace_file_header_t, magic) == 0, "magic at 0");
_Static_assert(offsetof(trace_file_header_t, version) == 8, "version at 8");
_Static_assert(offsetof(trace_file_header_t, event_size) == 12, "event_size at 12");
_Static_assert(offsetof(trace_file_header_t, header_size) == 16, "header_size at 16");
_Static_assert(offsetof(trace_file_header_t, flags) == 20, "flags at 20");
_Static_assert(offsetof(trace_file_header_t, load_bias) == 24, "load_bias at 24");
_Static_assert(offsetof(trace_file_header_t, tick_hz) == 32, "tick_hz at 32");
_Static_assert(offsetof(trace_file_header_t, t0_ticks) == 40, "t0_ticks at 40");
_Static_assert(offsetof(trace_file_header_t, t0_ns) == 48, "t0_ns at 48");
_Static_assert(offsetof(trace_file_header_t, hook_ns) == 56, "hook_ns at 56");
_Static_assert(offsetof(trace_file_header_t, pid) == 64, "pid at 64");
_Static_assert(offsetof(trace_file_header_t, seq) == 68, "seq at 68");
_Static_assert(offsetof(trace_file_header_t, reserved) == 72, "reserved at 72");

/* ---- runtime API (implemented in trace.c) ------------------------------ */

/*
 * The compiler calls these two hooks around every instrumented function
 * (gcc/clang -finstrument-functions).  Nothing else needs calling: the
 * runtime configures itself from the environment at start (TRACE_ENABLE,
 * TRACE_DIR, TRACE_SHM, ...) and flushes at thread and process exit.
 */
void __cyg_profile_func_enter(void *func, void *call_site);
void __cyg_profile_func_exit(void *func, void *call_site);

#endif /* CALLSIGHT_TRACE_H */
