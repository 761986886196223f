/*
 * ts_order.c - records put into the wire's byte order (part of
 * trace_stream.c).  The byte helpers and the event codec themselves are
 * trace_wire.h's, the same code serve, bench and the fuzzers run.
 */
#include "ts_internal.h"

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    return first == 1;
}

/* Rewrite one native-order record in place as little-endian. */
static void event_to_le(unsigned char *p)
{
    trace_event_t ev;
    memcpy(&ev, p, sizeof ev);
    wire_put_le64(p + offsetof(trace_event_t, ts), ev.ts);
    wire_put_le64(p + offsetof(trace_event_t, func), ev.func);
    wire_put_le64(p + offsetof(trace_event_t, call_site), ev.call_site);
    wire_put_le32(p + offsetof(trace_event_t, tid), ev.tid);
}
