/*
 * trace_stream.c - callsight's on-device streaming client.
 *
 *   traced process --(POSIX shm ring)--> trace_stream --(zstd, TCP)--> callsight serve
 *
 * trace_stream starts before the traced program.  It creates the shared
 * memory ring named on its command line (or maps it, if the tracer was
 * first), connects to `callsight serve`, waits for a tracer to attach, and
 * then forwards everything the tracer writes: it drains the ring in chunks
 * without ever taking the ring's lock, compresses each chunk into one zstd
 * frame and sends it.  It makes version-2 rings, which every tracer
 * reads, unless --ring-version 3 asks for the newer kind (trace_shm.h:
 * writers copy outside the lock and commit each batch, so one that loses
 * its CPU mid-copy holds up no other; tracers that predate it refuse it);
 * it reads both.  It exits once every tracer has detached (several
 * processes may share one ring: its header counts them) and the ring is
 * empty, and removes the ring: the client owns the ring's lifetime.
 *
 * Faults.  Every tracer holds a shared flock on the ring for its lifetime;
 * when an exclusive one succeeds while `writers` > 0, the tracers counted
 * there died without detaching: drain, say so (chunk TRACER_LOST), exit 3.
 * When the server is not there (refused at start, or gone: cut) the client
 * stops taking from the ring, which keeps what the tracers write for the
 * next connection (once it is full they drop new events, counted in its
 * header, as on a slow link), and connects again with a doubling backoff
 * for up to --retry seconds; after every handshake a RESUME chunk names
 * the stream and carries its totals, so serve counts the gap exactly (only
 * a chunk in flight at the cut can be in it).  Events lost to the link
 * (left in the ring, a chunk the cut broke, the tracers' drops while no
 * connection was up) make the exit status 4.
 *
 * The traced process never does I/O and never waits for this client; when
 * the ring is full the tracer drops events and counts them in the ring
 * header.  trace_stream forwards that count as a notice chunk whenever it
 * changes, so loss always reaches the host.
 *
 * The ring and the wire protocol are defined in trace_shm.h, the event
 * record in trace.h; both must sit beside this file.  It stands alone:
 *
 *   cc -O2 -o trace_stream trace_stream.c -lzstd
 *
 * On a device without libzstd, -DTRACE_STREAM_NO_LIBZSTD (and no -lzstd)
 * builds a client that sends the same zstd frames made of raw, uncompressed
 * blocks (RFC 8878), which every zstd decoder accepts: serve needs no
 * change, the link carries about 8x the bytes (docs/devices.md).
 *
 * Codec.  Built with libzstd, it offers the server the "stack + shuffle"
 * coding of event chunks (TRACE_CHUNK_EVENTS_CODED, specified in
 * trace_shm.h): a handshake flag, answered by a 16-byte ack from servers
 * that decode it.  It never waits for the ack: it looks for it (without
 * blocking) before each chunk and codes every chunk after it arrived, about
 * 4x fewer bytes on the wire and less compression CPU per event, since zstd
 * runs much faster on the coded records.  An older server never acks, and
 * the stream stays plain.  --codec none turns the offer off.
 *
 * Flight recorder.  With --flight-recorder the ring gets a block after its
 * storage and the tracers overwrite its oldest whole batches instead of
 * dropping new ones; nothing but heartbeats is sent until a trigger
 * (SIGUSR1, a TRACE_TRIGGER call that was slow, a tracer that died, a
 * request the server passes down from `callsight trigger`), and
 * then the ring's contents go as one snapshot on a connection of their
 * own (see "flight recorder" below, ts_recorder.c).
 *
 * Summaries.  With TRACE_MODE=summary the tracer writes per-thread
 * snapshots of per-function totals into the ring; unless --summary-threads,
 * this client merges each process's threads into one snapshot every
 * --summary-ms, sent as increments to a server that takes them, so a busy
 * program costs a few KB/s on the link (see "summaries, merged per
 * process" below, ts_merge.c).
 *
 * The wire is little-endian; the ring is in the device's own byte order, so
 * a big-endian device converts every record before sending (and before
 * coding).  On a 32-bit target the 64-bit atomics of the ring header must
 * be lock-free (they are shared between processes); the program checks
 * this at start.
 *
 * Assembled.  In callsight's tree this file is a list of parts, included
 * in order after their private header ts_internal.h: the arguments
 * (ts_args.c), the wire's byte order (ts_order.c; the codec is trace_wire.h's),
 * the ring reader (ts_ring.c), the
 * frames (ts_frames.c), the link (ts_link.c), live control
 * (ts_control.c) and its key (ts_auth.c), the summary merger
 * (ts_merge.c), the sender's life (ts_sender.c), the drain loop
 * (ts_drain.c), the flight recorder (ts_recorder.c) and main (ts_main.c).
 * So the program is still one translation unit, everything in it static,
 * built with one cc line (in the tree: cc -O2 -Iruntime -o trace_stream
 * stream/trace_stream.c -lzstd).  The build flattens it back into one
 * file, the parts in place of these #includes: the file `callsight init`
 * installs, which the cc line above builds.
 */
#include "ts_internal.h"

#include "ts_args.c"
#include "ts_order.c"
#include "ts_ring.c"
#include "ts_frames.c"
#include "ts_link.c"
#include "ts_control.c"
#include "ts_auth.c"
#include "ts_merge.c"
#include "ts_sender.c"
#include "ts_drain.c"
#include "ts_recorder.c"
#include "ts_main.c"
