/*
 * elf_buildid.h - the GNU build-id of an ELF file, read from the file itself.
 *
 * analyze uses it to prove that --exe is the binary that was traced: the
 * runtime records the same note's first bytes in-band (TRACE_MARK_BUILD_ID,
 * trace.h).  Binaries for other machines are analyzed too, so 32- and
 * 64-bit files in either byte order are read; nothing in the file is
 * trusted (every offset and size is bounds-checked).
 */
#ifndef CALLSIGHT_ELF_BUILDID_H
#define CALLSIGHT_ELF_BUILDID_H

#include <stddef.h>
#include <stdint.h>

#define ELF_BUILDID_MAX 64u /* longer ids are cut (real ones are 8-20 bytes) */
/* The largest file read as ELF: a debug file of a big program is a few GB;
 * a larger one, or one that is not a regular file, is refused. */
#define ELF_BUILDID_MAX_FILE ((uint64_t)16 << 30)

struct elf_buildid {
    unsigned char id[ELF_BUILDID_MAX];
    size_t len; /* 0: the file has no build-id note */
};

/*
 * Read path's NT_GNU_BUILD_ID note: from its PT_NOTE segments, else from
 * its SHT_NOTE sections.  0 ok (out->len == 0 when there is none); -1 with
 * a one-line reason in msg when the file cannot be read or is not ELF.
 */
int elf_buildid_read(const char *path, struct elf_buildid *out, char *msg, size_t msglen);

/* The first 16 bytes, zero-padded, as TRACE_MARK_BUILD_ID carries them:
 * bytes 0-7 in words[0], 8-15 in words[1], byte i at bits 8i. */
void elf_buildid_words(const struct elf_buildid *b, uint64_t words[2]);

/* Hex of the 16 bytes in words (32 digits and a NUL: 33 bytes). */
void elf_buildid_hex(const uint64_t words[2], char out[33]);

#endif
