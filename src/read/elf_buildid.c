/*
 * elf_buildid.c - the GNU build-id of an ELF file (see elf_buildid.h).
 *
 * Only what the note needs is parsed: the ELF header's class and byte
 * order, the program headers (PT_NOTE), and, when no segment holds the
 * note, the section headers (SHT_NOTE).  Fields are decoded byte by byte
 * in the file's order, so the host's order and word size do not matter.
 */
#define _FILE_OFFSET_BITS 64
#include "elf_buildid.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileopen.h"

#define EB_PT_NOTE 4u
#define EB_SHT_NOTE 7u
#define EB_NT_GNU_BUILD_ID 3u
#define EB_NOTES_MAX (1u << 20) /* bytes of one note area read, at most */
#define EB_HEADERS_MAX 4096u    /* program or section headers looked at */

struct elf {
    FILE *f;
    int is64, big;
    uint64_t size; /* of the file */
};

static uint64_t get(const unsigned char *p, unsigned n, int big)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[big ? i : n - 1 - i] << (8 * (n - 1 - i));
    return v;
}

/* n bytes at off, all inside the file; 0 ok, -1 not. */
static int read_at(const struct elf *e, uint64_t off, void *buf, size_t n)
{
    if (off > e->size || n > e->size - off)
        return -1;
    if (fseeko(e->f, (off_t)off, SEEK_SET) != 0 || fread(buf, 1, n, e->f) != n)
        return -1;
    return 0;
}

/* The build-id among notes (namesz, descsz, type; name and descriptor
 * padded to `align`); 1 found, 0 not. */
static int find_in_notes(const unsigned char *p, uint64_t size, uint64_t align, int big,
                         struct elf_buildid *out)
{
    uint64_t pad = align == 8 ? 7u : 3u, off = 0;
    while (size - off >= 12u) {
        uint64_t namesz = get(p + off, 4, big), descsz = get(p + off + 4, 4, big);
        uint64_t type = get(p + off + 8, 4, big);
        uint64_t name = off + 12u, desc = name + ((namesz + pad) & ~pad);
        if (desc > size || descsz > size - desc)
            return 0;
        if (type == EB_NT_GNU_BUILD_ID && namesz == 4u && !memcmp(p + name, "GNU", 4) && descsz) {
            out->len = descsz < ELF_BUILDID_MAX ? (size_t)descsz : ELF_BUILDID_MAX;
            memcpy(out->id, p + desc, out->len);
            return 1;
        }
        off = desc + ((descsz + pad) & ~pad);
        if (off > size)
            return 0;
    }
    return 0;
}

/* Read one note area and look in it; 1 found, 0 not (or unreadable). */
static int find_in_area(const struct elf *e, uint64_t off, uint64_t size, uint64_t align,
                        struct elf_buildid *out)
{
    static unsigned char buf[EB_NOTES_MAX];
    if (size < 12u || size > sizeof buf || read_at(e, off, buf, (size_t)size) < 0)
        return 0;
    return find_in_notes(buf, size, align, e->big, out);
}

/* Program headers (PT_NOTE) when `sections` is 0, else section headers
 * (SHT_NOTE).  1 found, 0 not. */
static int find_in_table(const struct elf *e, const unsigned char *eh, int sections,
                         struct elf_buildid *out)
{
    int b = e->big;
    /* e_phoff/e_shoff, e_phentsize/e_shentsize and e_phnum/e_shnum */
    uint64_t table = e->is64 ? get(eh + (sections ? 40 : 32), 8, b) : get(eh + (sections ? 32 : 28), 4, b);
    unsigned at = e->is64 ? (sections ? 58u : 54u) : (sections ? 46u : 42u);
    uint64_t entsize = get(eh + at, 2, b), count = get(eh + at + 2, 2, b);
    uint64_t need = e->is64 ? (sections ? 64u : 56u) : (sections ? 40u : 32u);
    unsigned char ent[64];
    if (!table || entsize < need || count > EB_HEADERS_MAX)
        return 0;
    for (uint64_t i = 0; i < count; i++) {
        if (read_at(e, table + i * entsize, ent, (size_t)need) < 0)
            return 0;
        uint64_t type, off, size, align;
        if (sections) {
            type = get(ent + 4, 4, b);
            off = e->is64 ? get(ent + 24, 8, b) : get(ent + 16, 4, b);
            size = e->is64 ? get(ent + 32, 8, b) : get(ent + 20, 4, b);
            align = e->is64 ? get(ent + 48, 8, b) : get(ent + 32, 4, b);
        } else {
            type = get(ent, 4, b);
            off = e->is64 ? get(ent + 8, 8, b) : get(ent + 4, 4, b);
            size = e->is64 ? get(ent + 32, 8, b) : get(ent + 16, 4, b);
            align = e->is64 ? get(ent + 48, 8, b) : get(ent + 28, 4, b);
        }
        if (type == (sections ? EB_SHT_NOTE : EB_PT_NOTE) && find_in_area(e, off, size, align, out))
            return 1;
    }
    return 0;
}

int elf_buildid_read(const char *path, struct elf_buildid *out, char *msg, size_t msglen)
{
    unsigned char eh[64];
    struct elf e = {0};
    memset(out, 0, sizeof *out);
    /* Opened as what it claims to be: a module's path comes from a device
     * and may name a FIFO or a device node here. */
    int fd = fileopen_regular(path, ELF_BUILDID_MAX_FILE, msg, msglen);
    if (fd < 0)
        return -1;
    if (!(e.f = fdopen(fd, "rb"))) {
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    int rc = -1;
    if (fseeko(e.f, 0, SEEK_END) == 0 && ftello(e.f) > 0)
        e.size = (uint64_t)ftello(e.f);
    if (read_at(&e, 0, eh, 52) < 0 || memcmp(eh, "\177ELF", 4) != 0)
        snprintf(msg, msglen, "%s: not an ELF file", path);
    else if ((eh[4] != 1 && eh[4] != 2) || (eh[5] != 1 && eh[5] != 2))
        snprintf(msg, msglen, "%s: unknown ELF class or byte order", path);
    else if (eh[4] == 2 && read_at(&e, 0, eh, 64) < 0)
        snprintf(msg, msglen, "%s: truncated ELF header", path);
    else {
        e.is64 = eh[4] == 2;
        e.big = eh[5] == 2;
        if (!find_in_table(&e, eh, 0, out))
            (void)find_in_table(&e, eh, 1, out);
        rc = 0;
    }
    fclose(e.f);
    return rc;
}

void elf_buildid_words(const struct elf_buildid *b, uint64_t words[2])
{
    words[0] = words[1] = 0;
    for (size_t i = 0; i < 16 && i < b->len; i++)
        words[i / 8] |= (uint64_t)b->id[i] << (8 * (i % 8));
}

void elf_buildid_hex(const uint64_t words[2], char out[33])
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 16; i++) {
        unsigned v = (unsigned)(words[i / 8] >> (8 * (i % 8))) & 0xffu;
        out[2 * i] = digits[v >> 4];
        out[2 * i + 1] = digits[v & 15u];
    }
    out[32] = 0;
}
