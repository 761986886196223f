/*
 * trace_shm.h - the shared-memory ring between traced processes and trace_stream.
 *
 * Streaming moves events off a device without any I/O in the traced
 * process.  Three parties share the path; this header is its first hop,
 * the ring (the second, the TCP wire, is in trace_wire.h, which the
 * traced program never needs):
 *
 *   traced process --(POSIX shm ring)--> trace_stream --(TCP)--> callsight serve
 *
 * The ring (TRACE_SHM=/name) is a 96-byte trace_shm_header_t followed by
 * `capacity` bytes of event storage, in the device's native byte order,
 * and, after the storage, one optional block: the flight recorder's, or
 * the per-thread loss table (both below, each found by its magic).
 *
 *   0      8    12   16   20   24     32     40       48   52  56  ...  96
 *   +------+----+----+----+----+------+------+--------+----+---+--------+----
 *   |magic |ver |cap |wrtr|lock| head | tail |dropped |flgs|pad|clock.. | storage
 *   +------+----+----+----+----+------+------+--------+----+---+--------+----
 *
 * The ring's contract (both versions):
 *   - Writers (any thread of any attached tracer) serialize on `lock`, take
 *     it for a bounded time only, and put whole batches of events.  A writer
 *     that cannot get the lock, or finds too little room, drops its batch and
 *     adds the count to `dropped`.  Writers never wait for the reader.
 *   - The single reader (trace_stream) never takes the lock: it reads `head`
 *     with acquire, copies out of [tail, head), then publishes `tail` with
 *     release.
 *   - head and tail are monotonic byte counters; bytes in use = head - tail;
 *     storage offset = counter % capacity.  capacity is a multiple of 32, so
 *     one record never straddles the end of storage.
 *   - Nothing in the header is trusted by the reader: head - tail > capacity,
 *     or a magic or version that changes, is a broken ring.
 *
 * Version 2 (TRACE_SHM_VERSION, the format of ../shared/FORMATS.md; the default):
 * a writer copies its records at head while it holds the lock and then
 * publishes head; [tail, head) is all records.  A holder that loses its CPU
 * in the middle of its copy (preempted: eight threads on two cores) keeps
 * every other writer out until it runs again, and they drop.
 *
 * Version 3 (TRACE_SHM_VERSION_COMMIT): the lock covers only the reservation.
 *   - A writer, holding the lock, writes a trace_shm_batch_t at head with
 *     `commit` = ~position (not yet), publishes head past the header and
 *     its records (release), and lets the lock go.  Then it copies its
 *     records after the header and stores `commit` = position (release).
 *   - The reader walks [tail, head) batch by batch: a header whose commit
 *     (acquire) equals its position is done, and its records are taken
 *     (the header is not forwarded); ~position is still being copied, and
 *     the reader stops there; any other value, or a record count that runs
 *     past head, is a broken ring.  tail moves over whole batches only.
 *   - A writer that dies between reservation and commit leaves its batch
 *     uncommitted for good.  The reader skips such a batch, adding its
 *     `events` to `dropped`, once its `tid` no longer exists (kill(tid, 0)
 *     fails with ESRCH) or no tracer is attached or alive; a live writer
 *     that is merely slow is waited for (the other writers keep going until
 *     the ring is full, then drop and count).
 * A ring's creator chooses the version: 2 unless trace_stream is asked for
 * 3 (--ring-version 3; --flight-recorder rings are always 2), so tracers and
 * readers that know only 2 keep working by default.  A tracer of this tree
 * writes either; one that knows only 2 refuses a version-3 ring
 * ("unsupported ring version", and writes files), and a reader that knows
 * only 2 refuses one in the same words: ask for 3 only where every tracer
 * attaching is of this tree or newer.
 *
 * Needs only <stdint.h>; C11.  TRACE_SHM_VERSION is bumped on any layout
 * change (version 3 is a new layout beside 2, not instead of it).
 */
#ifndef CALLSIGHT_TRACE_SHM_H
#define CALLSIGHT_TRACE_SHM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- shared-memory ring ------------------------------------------------ */

#define TRACE_SHM_MAGIC "TKSHM" /* 5 chars, NUL-padded to 8 */
#define TRACE_SHM_VERSION 2u        /* copies under the lock: the default, what every party reads */
#define TRACE_SHM_VERSION_COMMIT 3u /* reservations under the lock, copies outside it: on request */
#define TRACE_SHM_HEADER_SIZE 96u
#define TRACE_SHM_DEFAULT_SIZE (16u * 1024u * 1024u) /* TRACE_SHM_SIZE default */
#define TRACE_SHM_MIN_CAPACITY (64u * 32u)            /* below this, refuse */

/*
 * Fields shared between processes are accessed with C11 atomics through
 * casts in the code that owns them (writers, lock, head, tail, dropped);
 * they are plain integers here so that the layout stays the documented one.
 */
typedef struct trace_shm_header {
    char magic[8];      /* "TKSHM\0\0\0"; written last by the creator */
    uint32_t version;   /* TRACE_SHM_VERSION_COMMIT or TRACE_SHM_VERSION */
    uint32_t capacity;  /* storage bytes after the header, multiple of 32 */
    uint32_t writers;   /* tracer processes attached right now; each also holds
                         * a shared flock on the segment while it lives */
    uint32_t lock;      /* spinlock: 0 free, else the holder's tid; a writer that
                         * gives up takes it over if that thread is gone */
    uint64_t head;      /* monotonic write offset, bytes (writers, release) */
    uint64_t tail;      /* monotonic read offset, bytes (reader, release) */
    uint64_t dropped;   /* enter/exit events dropped because no room / no lock */
    /* Lower half: written by a tracer before it increments `writers`. */
    uint32_t flags;     /* TRACE_FLAG_* of the tracer's timestamps */
    uint32_t pad;       /* zero */
    uint64_t load_bias; /* PIE relocation offset of the traced binary */
    uint64_t tick_hz;   /* ticks per second; 0 = ts are ns */
    uint64_t t0_ticks;  /* clock anchor at start, ticks ... */
    uint64_t t0_ns;     /* ... and CLOCK_MONOTONIC ns at that instant */
    uint64_t hook_ns;   /* measured cost of one hook */
} trace_shm_header_t;

_Static_assert(sizeof(trace_shm_header_t) == TRACE_SHM_HEADER_SIZE, "ring header is 96 bytes");
_Static_assert(offsetof(trace_shm_header_t, magic) == 0, "magic at 0");
_Static_assert(offsetof(trace_shm_header_t, version) == 8, "version at 8");
_Static_assert(offsetof(trace_shm_header_t, capacity) == 12, "capacity at 12");
_Static_assert(offsetof(trace_shm_header_t, writers) == 16, "writers at 16");
_Static_assert(offsetof(trace_shm_header_t, lock) == 20, "lock at 20");
_Static_assert(offsetof(trace_shm_header_t, head) == 24, "head at 24");
_Static_assert(offsetof(trace_shm_header_t, tail) == 32, "tail at 32");
_Static_assert(offsetof(trace_shm_header_t, dropped) == 40, "dropped at 40");
_Static_assert(offsetof(trace_shm_header_t, flags) == 48, "flags at 48");
_Static_assert(offsetof(trace_shm_header_t, pad) == 52, "pad at 52");
_Static_assert(offsetof(trace_shm_header_t, load_bias) == 56, "load_bias at 56");
_Static_assert(offsetof(trace_shm_header_t, tick_hz) == 64, "tick_hz at 64");
_Static_assert(offsetof(trace_shm_header_t, t0_ticks) == 72, "t0_ticks at 72");
_Static_assert(offsetof(trace_shm_header_t, t0_ns) == 80, "t0_ns at 80");
_Static_assert(offsetof(trace_shm_header_t, hook_ns) == 88, "hook_ns at 88");

/*
 * TRACE_SHM_FEATURE_COMMIT, in the loss table's `features` (below; not in
 * the header, whose lower half the first tracer rewrites, older ones
 * included): a version-2 ring whose reader (trace_stream of this tree,
 * which sets the bit when it makes the ring, before the magic; a flight
 * recorder's has no loss table) takes version 3's committed batches among
 * version 2's plain records.  So writers that know the bit reserve under
 * the lock and copy outside it, as in version 3, while writers that know
 * only version 2 (older tracers, the tool callsight follows) copy under the
 * lock as always: everyone shares one default ring, and no writer
 * preempted mid-copy holds the others up.  The rules, beside version 2's:
 *   - A committing writer's batch starts with a trace_shm_batch_t whose
 *     `mark` is TRACE_SHM_BATCH_MARK: the byte where a record has its kind,
 *     with a value no record's kind has (trace.h), so the reader tells a
 *     batch header from a plain record by that byte.  The header is written
 *     before head covers it; its commit word goes ~position, then position,
 *     exactly as in version 3.
 *   - A plain record (any other byte there) is whole once head covers it:
 *     a version-2 writer publishes head only after its copy.
 *   - The reader walks from tail: plain records are taken as they are; a
 *     committed batch's records without its header; it stops at a batch
 *     still being copied (a dead writer's is skipped and counted, as in
 *     version 3).  tail only ever moves past whole units.
 * A reader that knows only version 2 never makes a ring with the bit, and
 * a tracer that makes the ring (no trace_stream yet) leaves it clear.
 */
#define TRACE_SHM_FEATURE_COMMIT 0x1u
#define TRACE_SHM_BATCH_MARK 0xb7u

/*
 * Version 3: the 32-byte header before each batch's records in the storage
 * (a record's size, so wrapping stays on record boundaries).  Written by
 * its writer under the ring's lock before head covers it, except `commit`,
 * which is stored again, atomically, when the records are in.
 */
typedef struct trace_shm_batch {
    uint64_t commit;   /* ~position while copying; position (of this header) once done */
    uint32_t records;  /* records after this header, >= 1 */
    uint32_t events;   /* of them enter/exit events: what `dropped` gets if the batch is skipped */
    uint32_t tid;      /* the writing thread, for the reader's liveness check */
    uint32_t pad;      /* zero */
    uint32_t reserved; /* zero */
    uint8_t mark;      /* TRACE_SHM_BATCH_MARK in a version-2 ring with TRACE_SHM_FEATURE_COMMIT
                        * (a record's kind byte); zero in a version-3 ring */
    uint8_t pad2[3];   /* zero */
} trace_shm_batch_t;

_Static_assert(sizeof(trace_shm_batch_t) == 32, "batch header is one record");
_Static_assert(offsetof(trace_shm_batch_t, commit) == 0, "commit at 0");
_Static_assert(offsetof(trace_shm_batch_t, records) == 8, "records at 8");
_Static_assert(offsetof(trace_shm_batch_t, events) == 12, "events at 12");
_Static_assert(offsetof(trace_shm_batch_t, tid) == 16, "tid at 16");
_Static_assert(offsetof(trace_shm_batch_t, pad) == 20, "pad at 20");
_Static_assert(offsetof(trace_shm_batch_t, reserved) == 24, "reserved at 24");
_Static_assert(offsetof(trace_shm_batch_t, mark) == 28, "mark where a record's kind is");

/* ---- flight recorder ---------------------------------------------------
 *
 * `trace_stream --flight-recorder` makes a version-2 ring (its writers move
 * tail over whole batches under the lock, which needs the copies under it
 * too) with a segment TRACE_SHM_RECORDER_SIZE
 * bytes longer than header and storage, and puts this block right after
 * the storage (offset TRACE_SHM_HEADER_SIZE + capacity).  A tracer that
 * finds it (the segment is long enough and the magic is there) writes
 * every put as one batch: a TRACE_MARK_BATCH record first (trace.h), then
 * the records, so that whole batches can be told apart in the storage.
 * Older tracers and clients never look past the storage: a ring without
 * the block works as it always has.
 *
 * The contract, in addition to the ring's:
 *   - `state` is written only under the ring's lock, and read by writers
 *     under it.  The reader sets both states; a tracer sets SHIPPING only,
 *     when it asks for a snapshot, so that nothing before the slow call is
 *     overwritten while the reader comes.
 *   - RECORDING: a writer that finds too little room does not drop: it
 *     moves `tail` forward over the oldest whole batches (walking their
 *     BATCH records) until its batch fits, and adds their enter/exit
 *     events to `overwritten`.  Only lock holders write tail then; the
 *     reader reads nothing from the storage.  A BATCH record that does not
 *     describe a batch inside [tail, head) (a tracer that writes no
 *     batches shares the ring, or a broken one) makes the writer discard
 *     everything up to head.
 *   - SHIPPING: the ring works as any ring (writers drop when it is full,
 *     the reader owns tail).  The reader switches to it to take a snapshot
 *     (tail is then a batch boundary, so no batch is torn) and back to
 *     RECORDING only with its own tail on a batch boundary.
 *   - `triggers` is incremented by a tracer whose TRACE_TRIGGER call was
 *     slow, after the batch holding that call's exit is in the ring and
 *     the state is SHIPPING; the reader takes a snapshot when it changes,
 *     or, declining (too many per hour), turns the ring back to RECORDING.
 *     (A tracer of this tree turns only RECORDING into SHIPPING.)
 *
 * Switched live (`callsight ctl DIR --recorder on|off`, docs/control.md):
 * a ring made by trace_stream --allow-control has this block right before
 * its control block, which says so (TRACE_CTL_HAS_RECORDER): after the
 * storage of a --flight-recorder ring, as above, or after the loss table
 * of any other, OFF from the start.  Tracers that predate this find the
 * first where they always did and never see the second.
 *   - OFF: the ring is an ordinary one (the reader drains it, writers drop
 *     when it is full and never overwrite); a tracer of this tree writes as
 *     it would into a ring without the block (committed batches under
 *     TRACE_SHM_FEATURE_COMMIT, no BATCH records), which it decides under
 *     the lock, put by put.  Older tracers treat OFF as SHIPPING.
 *   - On: the reader, holding the lock, makes it SHIPPING and notes head;
 *     from then on every writer copies under the lock with a BATCH record
 *     first.  It drains up to that head (waiting for batches still being
 *     copied outside the lock, as always), so its tail is then a batch
 *     boundary with only whole batches after it, and makes it RECORDING.
 *     Refused while `writers` > `aware` (a tracer that knows nothing of the
 *     block would have its records overwritten unaccounted for).
 *   - Off: the reader, holding the lock, makes it OFF and takes tail back
 *     from the writers; what the ring holds then (its last recording) is
 *     drained as any records are.
 *   - The reader says both in its main connection's series
 *     (TRACE_MARK_RECORDER, trace.h), which has a hole between the two.
 */
#define TRACE_SHM_RECORDER_MAGIC "TKFLIGHT" /* exactly 8 chars, no NUL */
#define TRACE_SHM_RECORDER_VERSION 1u
#define TRACE_SHM_RECORDER_SIZE 64u

enum trace_recorder_state {
    TRACE_RECORDER_RECORDING = 1, /* writers overwrite the oldest whole batches */
    TRACE_RECORDER_SHIPPING = 2,  /* a snapshot is being sent: writers drop when full */
    TRACE_RECORDER_OFF = 3        /* live control turned it off: streaming (below) */
};

typedef struct trace_shm_recorder {
    char magic[8];        /* "TKFLIGHT"; written last by the creator */
    uint32_t version;     /* TRACE_SHM_RECORDER_VERSION */
    uint32_t state;       /* enum trace_recorder_state (reader, under the lock) */
    uint64_t overwritten; /* enter/exit events overwritten so far (writers, under the lock) */
    uint64_t triggers;    /* slow TRACE_TRIGGER calls that asked for a snapshot (tracers) */
    uint64_t held;        /* slow calls that did not ask: one asked less than TRACE_TRIGGER_GAP_MS before */
    uint32_t aware;       /* tracer processes attached now that know TRACE_RECORDER_OFF (a ring whose
                           * control block has TRACE_CTL_HAS_RECORDER; they count themselves in before
                           * `writers`, out after it) */
    uint32_t pad;         /* zero */
    uint64_t reserved[2]; /* zero */
} trace_shm_recorder_t;

_Static_assert(sizeof(trace_shm_recorder_t) == TRACE_SHM_RECORDER_SIZE, "recorder block is 64 bytes");
_Static_assert(offsetof(trace_shm_recorder_t, magic) == 0, "magic at 0");
_Static_assert(offsetof(trace_shm_recorder_t, version) == 8, "version at 8");
_Static_assert(offsetof(trace_shm_recorder_t, state) == 12, "state at 12");
_Static_assert(offsetof(trace_shm_recorder_t, overwritten) == 16, "overwritten at 16");
_Static_assert(offsetof(trace_shm_recorder_t, triggers) == 24, "triggers at 24");
_Static_assert(offsetof(trace_shm_recorder_t, held) == 32, "held at 32");
_Static_assert(offsetof(trace_shm_recorder_t, aware) == 40, "aware at 40");
_Static_assert(offsetof(trace_shm_recorder_t, reserved) == 48, "reserved at 48");

/* ---- per-thread losses ------------------------------------------------
 *
 * Which thread lost the events counted in `dropped`.  A thread says what it
 * lost in a TRACE_MARK_THREAD_LOST at the head of its next flush that gets
 * in (trace.h); a thread whose later flushes never get in (the ring stays
 * full until it ends) never says.  So the ring's creator may put this
 * table right after the storage (offset TRACE_SHM_HEADER_SIZE + capacity,
 * the segment TRACE_SHM_LOSSES_SIZE bytes longer), where the flight
 * recorder's block would be: a ring has one or the other, never both
 * (--flight-recorder rings have no table).  Its magic and version are the
 * negotiation: it is written before the ring's magic, so whoever sees the
 * ring sees the table.  Older tracers and clients never look past the
 * storage (an older tracer maps the first TRACE_SHM_RECORDER_SIZE bytes of
 * it and finds no recorder magic), so a ring without the table, or a table
 * nobody writes, works as it always has.
 *
 * The contract:
 *   - Coverage: every event a party that knows the table adds to `dropped`
 *     it adds here first, to its thread's slot: a tracer's dropped batches
 *     and the hooks it dropped while busy (the same events its
 *     THREAD_LOST markers count), trace_stream's version-3 batches whose
 *     writer died (the batch's tid).  So, once every writer is gone, sum of
 *     slots + `other` = `dropped` minus what tracers that predate the table
 *     dropped, and those are the only drops the table leaves out.
 *   - A writer finds its tid's slot, or claims the first free one (CAS of
 *     `tid` from 0; a slot is never freed: a tid reused later adds to the
 *     same slot, as the analyzer keeps one thread per tid), and adds with
 *     fetch_add, relaxed: no lock, bounded (TRACE_SHM_LOSS_SLOTS looks).
 *     Every slot taken: it adds to `other`.
 *   - trace_stream reads the counts (relaxed; they only grow, and are
 *     final once `writers` is 0) and sends them in-band, cumulative, as
 *     TRACE_MARK_THREAD_DROPPED records (trace.h).  Those say what each
 *     thread lost; its THREAD_LOST markers still repair its call stack,
 *     and their counts are the same events again, so a reader counts a
 *     thread's loss from one or the other, never both.
 *   - Nothing here is trusted by the reader: a count that goes down, or a
 *     slots value that is not TRACE_SHM_LOSS_SLOTS, is ignored.
 */
#define TRACE_SHM_LOSSES_MAGIC "TKLOSSES" /* exactly 8 chars, no NUL */
#define TRACE_SHM_LOSSES_VERSION 1u
#define TRACE_SHM_LOSS_SLOTS 252u
#define TRACE_SHM_LOSSES_SIZE 4096u

typedef struct trace_shm_loss_slot {
    uint32_t tid;    /* 0 while free; claimed by CAS, never given back */
    uint32_t pad;    /* zero */
    uint64_t events; /* enter/exit events of this tid counted in `dropped` (fetch_add) */
} trace_shm_loss_slot_t;

typedef struct trace_shm_losses {
    char magic[8];        /* "TKLOSSES"; written before the ring's magic by its creator */
    uint32_t version;     /* TRACE_SHM_LOSSES_VERSION */
    uint32_t slots;       /* TRACE_SHM_LOSS_SLOTS */
    uint64_t other;       /* events of threads that found every slot taken (fetch_add) */
    uint32_t features;    /* TRACE_SHM_FEATURE_* of the ring's reader (its creator's; zero from older
                           * creators and from tracers) */
    uint32_t pad;         /* zero */
    uint64_t reserved[4]; /* zero */
    trace_shm_loss_slot_t slot[TRACE_SHM_LOSS_SLOTS];
} trace_shm_losses_t;

_Static_assert(sizeof(trace_shm_loss_slot_t) == 16, "loss slot is 16 bytes");
_Static_assert(offsetof(trace_shm_loss_slot_t, tid) == 0, "tid at 0");
_Static_assert(offsetof(trace_shm_loss_slot_t, pad) == 4, "pad at 4");
_Static_assert(offsetof(trace_shm_loss_slot_t, events) == 8, "events at 8");
_Static_assert(sizeof(trace_shm_losses_t) == TRACE_SHM_LOSSES_SIZE, "loss table is 4096 bytes");
_Static_assert(offsetof(trace_shm_losses_t, magic) == 0, "magic at 0");
_Static_assert(offsetof(trace_shm_losses_t, version) == 8, "version at 8");
_Static_assert(offsetof(trace_shm_losses_t, slots) == 12, "slots at 12");
_Static_assert(offsetof(trace_shm_losses_t, other) == 16, "other at 16");
_Static_assert(offsetof(trace_shm_losses_t, features) == 24, "features at 24");
_Static_assert(offsetof(trace_shm_losses_t, reserved) == 32, "reserved at 32");
_Static_assert(offsetof(trace_shm_losses_t, slot) == 64, "slots at 64");

/* ---- live control ------------------------------------------------------
 *
 * What a running process records, changed from outside it (docs/control.md,
 * issue 31).  Two places hold this block:
 *   - file mode: with TRACE_CONTROL=1 the runtime creates it alone in an
 *     owner-only segment named /callsight-ctl-<uid>-<pid> (O_CREAT|O_EXCL,
 *     mode 0600, unlinked at exit), which `callsight ctl --pid PID` opens
 *     and writes;
 *   - a ring: trace_stream --allow-control makes its ring's segment
 *     TRACE_CTL_SIZE longer and puts the block in those last bytes (after
 *     the loss table or the recorder's block), magic before the ring's.
 *     Every tracer of this tree that attaches finds it there (the
 *     segment's size has room for it, and its magic, version and size are
 *     right) and obeys it; trace_stream writes it for the host (its
 *     TRACE_STREAM_CTL_* requests, trace_wire.h).  A tracer that predates
 *     it maps only what comes before and never looks.  The block's
 *     load_bias, build_id and pid are then trace_stream's (zero, zero, its
 *     pid): the processes on a ring may run different programs.
 * A process with neither never maps one, and its hooks run as before.
 *
 * The contract:
 *   - The runtime fills the block, magic last; it never writes `gen` or a
 *     setting.  `applied` it raises (relaxed, max) when a thread applies a
 *     generation, so that a writer can tell whether anyone has.
 *   - A writer (one at a time: it holds an exclusive flock on the segment)
 *     reads `gen` (even), writes its whole setting into buffer
 *     (gen / 2 + 1) % 2 with its function table, then stores gen + 2
 *     (release).  Each setting replaces the one before whole: nothing is
 *     ever half applied.
 *   - Each thread, at its next hook, sees the new `gen` (acquire), reads
 *     setting (gen / 2) % 2 and records TRACE_MARK_CONTROL (trace.h) at that
 *     point of its events.  Its decision for a call is made at the call's
 *     enter and kept with the frame, so the call's exit is recorded
 *     exactly when its enter was, whatever generation comes in between.
 *   - Functions are link-time addresses (the runtime address less the
 *     program's load bias, so the same for every process of one program on
 *     a ring, whatever ASLR did) of the program whose build-id the setting
 *     names, in an open-addressing table of
 *     TRACE_CTL_SLOTS slots (0 empty; slot = the address's hash, then the
 *     next ones), at most TRACE_CTL_FUNCS_MAX of them, each found within
 *     TRACE_CTL_PROBE_MAX slots of its hash: a writer refuses a table that
 *     would not be, rather than truncate it.  The hash is
 *     (addr * 0x9e3779b97f4a7c15) >> (64 - 13).
 *     A process of another program (its build-id not the setting's, when
 *     the setting names one) takes an OFF set as empty and an ONLY set as
 *     matching nothing: the names were another binary's.
 *   - Nothing a writer puts here is trusted beyond the bounds above: the
 *     hooks read at most TRACE_CTL_PROBE_MAX slots, and flags they do not
 *     know are ignored.
 */
#define TRACE_CTL_MAGIC "TKCONTRL" /* exactly 8 chars, no NUL */
#define TRACE_CTL_HAS_RECORDER 0x1u /* blocks: the recorder's block (trace_shm_recorder_t) is the
                                       TRACE_SHM_RECORDER_SIZE bytes right before this one, switched
                                       by the ring's reader ("flight recorder" above) */
#define TRACE_CTL_VERSION 1u
#define TRACE_CTL_SLOTS 8192u
#define TRACE_CTL_SLOT_BITS 13u
#define TRACE_CTL_FUNCS_MAX 4096u
#define TRACE_CTL_PROBE_MAX 8u
#define TRACE_CTL_SETTING_SIZE 1024u
#define TRACE_CTL_SIZE (64u + 2u * TRACE_CTL_SETTING_SIZE + 2u * TRACE_CTL_SLOTS * 8u)

#define TRACE_CTL_PAUSED 0x1u /* no call recorded from a thread's next hook on */
#define TRACE_CTL_OFF 0x2u    /* the table's functions are not recorded */
#define TRACE_CTL_ONLY 0x4u   /* only the table's functions are recorded (with OFF: OFF wins) */
#define TRACE_CTL_UNDER 0x8u  /* only calls inside a call of `under`, at most under_depth levels below it
                                 (0: it alone; TRACE_CTL_DEPTH_ANY: all), not with OFF or ONLY */
#define TRACE_CTL_DEPTH_ANY 0xffffffffu
#define TRACE_CTL_THREADS 0x10u /* only threads whose name matches one of `threads` (globs, as TRACE_THREADS) */
#define TRACE_CTL_THREADS_MAX 255u /* bytes of globs, as TRACE_THREADS's limit */
#define TRACE_CTL_MODE 0x40u    /* new calls are recorded in the setting's `mode`: events or summaries; without
                                   it, in TRACE_MODE's as at start (never with TRACE_MODE=both) */
#define TRACE_CTL_MODE_EVENTS 1u
#define TRACE_CTL_MODE_SUMMARY 2u
#define TRACE_CTL_TRIGGER 0x20u /* the trigger is the setting's trig_func > trig_ns (trig_func 0: none at
                                   all), in place of TRACE_TRIGGER's; without it, TRACE_TRIGGER's as at start */

typedef struct trace_ctl_setting {
    uint32_t flags;     /* TRACE_CTL_* */
    uint32_t nfuncs;    /* functions in this setting's table */
    uint64_t build_id[2]; /* the program the table's functions (and under) are of, bytes 0-15 (zero: any) */
    uint64_t under;       /* TRACE_CTL_UNDER: the function, link-time */
    uint32_t under_depth; /* ... levels below it recorded */
    uint32_t pad;         /* zero */
    char threads[256];    /* TRACE_CTL_THREADS: comma-separated globs, NUL-terminated */
    uint64_t trig_func;   /* TRACE_CTL_TRIGGER: the function, link-time, of the program build_id names (0: none) */
    uint64_t trig_ns;     /* ... a call of it slower than this fires (nonzero with a function) */
    uint32_t mode;        /* TRACE_CTL_MODE: TRACE_CTL_MODE_EVENTS or _SUMMARY; else zero */
    uint32_t pad2;        /* zero */
    uint64_t reserved[88]; /* zero: room for the settings of later steps */
} trace_ctl_setting_t;

typedef struct trace_shm_control {
    char magic[8];       /* "TKCONTRL"; written last by the runtime */
    uint32_t version;    /* TRACE_CTL_VERSION */
    uint32_t size;       /* TRACE_CTL_SIZE */
    uint64_t gen;        /* 0 at start (nothing set); even; + 2 per change (writer, release) */
    uint64_t applied;    /* the highest generation a thread has applied (runtime) */
    uint64_t load_bias;  /* the program's (file mode; zero on a ring): informative, the tables are link-time */
    uint64_t build_id[2]; /* the program's GNU build-id, bytes 0-15 (zero: none), to check the writer's --exe */
    uint32_t pid;        /* the process that made the block */
    uint32_t blocks;     /* TRACE_CTL_HAS_*: the other blocks its maker put in the segment (zero from
                          * trace_streams that predate it, and in file mode) */
    trace_ctl_setting_t setting[2];
    uint64_t funcs[2][TRACE_CTL_SLOTS];
} trace_shm_control_t;

_Static_assert(sizeof(trace_ctl_setting_t) == TRACE_CTL_SETTING_SIZE, "a setting is 1 KiB");
_Static_assert(offsetof(trace_ctl_setting_t, flags) == 0, "flags at 0");
_Static_assert(offsetof(trace_ctl_setting_t, nfuncs) == 4, "nfuncs at 4");
_Static_assert(offsetof(trace_ctl_setting_t, build_id) == 8, "build_id at 8");
_Static_assert(offsetof(trace_ctl_setting_t, under) == 24, "under at 24");
_Static_assert(offsetof(trace_ctl_setting_t, under_depth) == 32, "under_depth at 32");
_Static_assert(offsetof(trace_ctl_setting_t, threads) == 40, "threads at 40");
_Static_assert(offsetof(trace_ctl_setting_t, trig_func) == 296, "trig_func at 296");
_Static_assert(offsetof(trace_ctl_setting_t, trig_ns) == 304, "trig_ns at 304");
_Static_assert(offsetof(trace_ctl_setting_t, mode) == 312, "mode at 312");
_Static_assert(sizeof(trace_shm_control_t) == TRACE_CTL_SIZE, "control block size");
_Static_assert(offsetof(trace_shm_control_t, magic) == 0, "magic at 0");
_Static_assert(offsetof(trace_shm_control_t, version) == 8, "version at 8");
_Static_assert(offsetof(trace_shm_control_t, size) == 12, "size at 12");
_Static_assert(offsetof(trace_shm_control_t, gen) == 16, "gen at 16");
_Static_assert(offsetof(trace_shm_control_t, applied) == 24, "applied at 24");
_Static_assert(offsetof(trace_shm_control_t, load_bias) == 32, "load_bias at 32");
_Static_assert(offsetof(trace_shm_control_t, build_id) == 40, "build_id at 40");
_Static_assert(offsetof(trace_shm_control_t, pid) == 56, "pid at 56");
_Static_assert(offsetof(trace_shm_control_t, blocks) == 60, "blocks at 60");
_Static_assert(offsetof(trace_shm_control_t, setting) == 64, "settings at 64");
_Static_assert(offsetof(trace_shm_control_t, funcs) == 64 + 2 * TRACE_CTL_SETTING_SIZE, "tables after the settings");
_Static_assert(TRACE_CTL_SLOTS == 1u << TRACE_CTL_SLOT_BITS, "slots a power of two");

/* The slot an address's probe starts at (both ends use this). */
#if defined(__GNUC__)
__attribute__((no_instrument_function)) /* the runtime may be built with -finstrument-functions */
#endif
static inline uint32_t trace_ctl_slot(uint64_t addr)
{
    return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> (64u - TRACE_CTL_SLOT_BITS));
}

/*
 * The writer's side of the contract above, for both writers (callsight ctl
 * --pid and trace_stream): publish a whole new setting, the caller being
 * the block's only writer (it holds the flock, or is the ring's one
 * trace_stream).  With keep, the functions (their table, OFF or ONLY, and
 * build-id) stay those of the setting applied now and funcs is ignored
 * (pause and resume), and so does the subtree of TRACE_CTL_UNDER; without,
 * under and depth are the subtree's; threads (NULL or "": every thread)
 * the thread globs, trig (with TRACE_CTL_TRIGGER in flags) the trigger's
 * function and limit, and mode (with TRACE_CTL_MODE) the mode, kept too
 * with keep.  NULL and *gen the new
 * generation, or why nothing changed.
 */
#if defined(__GNUC__)
__attribute__((no_instrument_function))
#endif
static inline const char *trace_ctl_publish(trace_shm_control_t *c, uint32_t flags, const uint64_t build_id[2],
                                            const uint64_t *funcs, uint32_t n, uint64_t under, uint32_t depth,
                                            const char *threads, const uint64_t trig[2], uint32_t mode, int keep,
                                            uint64_t *gen)
{
    uint64_t g = atomic_load_explicit((_Atomic uint64_t *)&c->gen, memory_order_acquire);
    if (g & 1u)
        return "the block's generation is odd: not written by a callsight writer";
    uint32_t cur = (uint32_t)(g / 2u) & 1u, k = cur ^ 1u, used = 0;
    uint64_t *tab = c->funcs[k];
    uint64_t bid[2] = {build_id ? build_id[0] : 0, build_id ? build_id[1] : 0};
    const uint32_t sets =
        TRACE_CTL_OFF | TRACE_CTL_ONLY | TRACE_CTL_UNDER | TRACE_CTL_THREADS | TRACE_CTL_TRIGGER | TRACE_CTL_MODE;
    uint64_t tf = trig && (flags & TRACE_CTL_TRIGGER) ? trig[0] : 0, tn = tf ? trig[1] : 0;
    char globs[TRACE_CTL_THREADS_MAX + 1] = {0};
    size_t tl = threads ? strlen(threads) : 0;
    if (tl > TRACE_CTL_THREADS_MAX)
        return "thread globs longer than 255 bytes";
    if (!keep && tl)
        memcpy(globs, threads, tl);
    flags = (flags & ~TRACE_CTL_THREADS) | (!keep && tl ? TRACE_CTL_THREADS : 0);
    if ((flags & TRACE_CTL_UNDER) && !keep && (!under || (flags & (TRACE_CTL_OFF | TRACE_CTL_ONLY))))
        return "a subtree needs its function, and goes with neither off nor only";
    if (!keep && (flags & TRACE_CTL_TRIGGER) && tf && !tn)
        return "a trigger needs a limit above 0 ns";
    if (!keep && (flags & TRACE_CTL_MODE) && mode != TRACE_CTL_MODE_EVENTS && mode != TRACE_CTL_MODE_SUMMARY)
        return "a mode is events or summary";
    if (keep && g) {
        memcpy(tab, c->funcs[cur], sizeof c->funcs[k]);
        flags = (flags & ~sets) | (c->setting[cur].flags & sets);
        used = c->setting[cur].nfuncs;
        bid[0] = c->setting[cur].build_id[0];
        bid[1] = c->setting[cur].build_id[1];
        under = c->setting[cur].under;
        depth = c->setting[cur].under_depth;
        memcpy(globs, c->setting[cur].threads, TRACE_CTL_THREADS_MAX);
        tf = c->setting[cur].trig_func;
        tn = c->setting[cur].trig_ns;
        mode = c->setting[cur].mode;
    } else if (keep) {
        memset(tab, 0, sizeof c->funcs[k]);
        flags &= ~sets;
    } else {
        if (n > TRACE_CTL_FUNCS_MAX)
            return "more functions than a setting holds (4096)";
        memset(tab, 0, sizeof c->funcs[k]);
        for (uint32_t j = 0; j < n; j++) {
            uint32_t i = trace_ctl_slot(funcs[j]), p = 0;
            while (p < TRACE_CTL_PROBE_MAX && tab[i] && tab[i] != funcs[j]) {
                i = (i + 1u) & (TRACE_CTL_SLOTS - 1u);
                p++;
            }
            if (p == TRACE_CTL_PROBE_MAX)
                return "the functions do not fit the table (a slot more than 8 from its hash)";
            if (!funcs[j])
                return "a function at address 0";
            used += !tab[i];
            tab[i] = funcs[j];
        }
    }
    memset(&c->setting[k], 0, sizeof c->setting[k]);
    c->setting[k].flags = flags;
    c->setting[k].nfuncs = used;
    c->setting[k].build_id[0] = bid[0];
    c->setting[k].build_id[1] = bid[1];
    c->setting[k].under = flags & TRACE_CTL_UNDER ? under : 0;
    c->setting[k].under_depth = flags & TRACE_CTL_UNDER ? depth : 0;
    if (flags & TRACE_CTL_THREADS)
        memcpy(c->setting[k].threads, globs, sizeof globs);
    c->setting[k].trig_func = flags & TRACE_CTL_TRIGGER ? tf : 0;
    c->setting[k].trig_ns = flags & TRACE_CTL_TRIGGER ? tn : 0;
    c->setting[k].mode = flags & TRACE_CTL_MODE ? mode : 0;
    /* release: pairs with the hooks' acquire load of gen (and a reader's),
     * so whoever sees g + 2 sees the setting and table above whole */
    atomic_store_explicit((_Atomic uint64_t *)&c->gen, g + 2u, memory_order_release);
    *gen = g + 2u;
    return NULL;
}

#endif /* CALLSIGHT_TRACE_SHM_H */
