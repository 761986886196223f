/*
 * pb.h - just enough protobuf encoding to write a Perfetto trace: varint
 * and length-delimited fields into a growable byte buffer.
 *
 * A nested message is built in a buffer of its own and added to its parent
 * with pb_msg, which writes its length first, as the wire format wants.
 * A failed allocation sets `oom` and makes later calls do nothing.
 */
#ifndef CALLSIGHT_PB_H
#define CALLSIGHT_PB_H

#include <stddef.h>
#include <stdint.h>

struct pb {
    uint8_t *p;
    size_t n, cap;
    int oom;
};

void pb_free(struct pb *b);
/* Empty the buffer, keeping its storage. */
void pb_clear(struct pb *b);
/* Field `field` as a varint (wire type 0). */
void pb_uint(struct pb *b, uint32_t field, uint64_t v);
/* Field `field` as len bytes (wire type 2). */
void pb_bytes(struct pb *b, uint32_t field, const void *data, size_t len);
void pb_str(struct pb *b, uint32_t field, const char *s);
/* Field `field` holding the message built in sub. */
void pb_msg(struct pb *b, uint32_t field, const struct pb *sub);

#endif
