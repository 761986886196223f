/*
 * elf_buildid.c - unit test of the build-id reader (src/read/elf_buildid.c) on
 * small ELF files made here: 32- and 64-bit, both byte orders, the note in
 * a PT_NOTE segment after another note, or only in an SHT_NOTE section;
 * no note; not ELF; and a note whose sizes run past its segment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "read/elf_buildid.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static unsigned char img[1024];

static void put(size_t at, uint64_t v, unsigned n, int big)
{
    for (unsigned i = 0; i < n; i++)
        img[at + (big ? n - 1 - i : i)] = (unsigned char)(v >> (8 * i));
}

/* A note at `at`: namesz, descsz, type, name padded to 4, desc.  Returns
 * the offset after it. */
static size_t note(size_t at, const char *name, uint32_t type, const unsigned char *desc, uint32_t dlen,
                   int big)
{
    uint32_t nlen = (uint32_t)strlen(name) + 1;
    put(at, nlen, 4, big);
    put(at + 4, dlen, 4, big);
    put(at + 8, type, 4, big);
    memcpy(img + at + 12, name, nlen);
    at += 12 + ((nlen + 3u) & ~3u);
    memcpy(img + at, desc, dlen);
    return at + ((dlen + 3u) & ~3u);
}

/* An ELF file with one note area at 512 (length from the notes), described
 * by a program header (as_section 0) or a section header (1). */
static size_t make(int is64, int big, int as_section, const unsigned char *id, uint32_t idlen)
{
    static const unsigned char other[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    memset(img, 0, sizeof img);
    memcpy(img, "\177ELF", 4);
    img[4] = is64 ? 2 : 1;
    img[5] = big ? 2 : 1;
    size_t end = note(512, "XYZ", 3, other, sizeof other, big); /* not GNU: skipped */
    if (id)
        end = note(end, "GNU", 3, id, idlen, big);
    uint64_t size = end - 512, table = 256;
    if (!as_section) {
        put(is64 ? 32 : 28, table, is64 ? 8 : 4, big);         /* e_phoff */
        put(is64 ? 54 : 42, is64 ? 56 : 32, 2, big);           /* e_phentsize */
        put(is64 ? 56 : 44, 1, 2, big);                        /* e_phnum */
        put(table, 4, 4, big);                                 /* PT_NOTE */
        put(table + (is64 ? 8 : 4), 512, is64 ? 8 : 4, big);   /* p_offset */
        put(table + (is64 ? 32 : 16), size, is64 ? 8 : 4, big); /* p_filesz */
        put(table + (is64 ? 48 : 28), 4, is64 ? 8 : 4, big);   /* p_align */
    } else {
        put(is64 ? 40 : 32, table, is64 ? 8 : 4, big);         /* e_shoff */
        put(is64 ? 58 : 46, is64 ? 64 : 40, 2, big);           /* e_shentsize */
        put(is64 ? 60 : 48, 1, 2, big);                        /* e_shnum */
        put(table + 4, 7, 4, big);                             /* SHT_NOTE */
        put(table + (is64 ? 24 : 16), 512, is64 ? 8 : 4, big); /* sh_offset */
        put(table + (is64 ? 32 : 20), size, is64 ? 8 : 4, big); /* sh_size */
        put(table + (is64 ? 48 : 32), 4, is64 ? 8 : 4, big);   /* sh_addralign */
    }
    return end;
}

static int read_img(const char *path, size_t len, struct elf_buildid *b)
{
    char msg[256];
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(img, 1, len, f) != len || fclose(f) != 0)
        return -2;
    return elf_buildid_read(path, b, msg, sizeof msg);
}

int main(void)
{
    unsigned char id[20];
    char path[] = "/tmp/callsight-elfid.XXXXXX", hex[33];
    struct elf_buildid b;
    uint64_t w[2];
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    for (int i = 0; i < 20; i++)
        id[i] = (unsigned char)(0xa0 + i);
    printf("1..8\n");

    int good = 1;
    for (int is64 = 0; is64 < 2; is64++)
        for (int big = 0; big < 2; big++) {
            size_t len = make(is64, big, 0, id, sizeof id);
            good &= read_img(path, len, &b) == 0 && b.len == 20 && !memcmp(b.id, id, 20);
        }
    ok(good, "PT_NOTE: 32/64-bit, little/big-endian, after a foreign note");
    good = 1;
    for (int is64 = 0; is64 < 2; is64++)
        for (int big = 0; big < 2; big++) {
            size_t len = make(is64, big, 1, id, 8);
            good &= read_img(path, len, &b) == 0 && b.len == 8 && !memcmp(b.id, id, 8);
        }
    ok(good, "SHT_NOTE only (no program headers), an 8-byte id");

    elf_buildid_words(&b, w);
    elf_buildid_hex(w, hex);
    ok(w[0] == 0xa7a6a5a4a3a2a1a0ull && w[1] == 0 && !strcmp(hex, "a0a1a2a3a4a5a6a70000000000000000"),
       "a short id packs byte i at bits 8i, zero-padded to 16 bytes");
    b.len = 20;
    memcpy(b.id, id, 20);
    elf_buildid_words(&b, w);
    elf_buildid_hex(w, hex);
    ok(!strcmp(hex, "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"), "a 20-byte id: its first 16 bytes");

    size_t len = make(1, 1, 0, NULL, 0);
    ok(read_img(path, len, &b) == 0 && b.len == 0, "no build-id note: 0 and len 0");
    len = make(0, 0, 0, id, sizeof id);
    put(512 + 24 + 4, 0xfffffff0u, 4, 0); /* the GNU note's descsz (after the 24-byte XYZ note) */
    ok(read_img(path, len, &b) == 0 && b.len == 0, "a descsz past the segment is not read");
    memcpy(img, "#!/b", 4);
    ok(read_img(path, len, &b) == -1, "not ELF: an error");
    ok(elf_buildid_read("/nonexistent/x", &b, hex, sizeof hex) == -1, "a missing file: an error");
    unlink(path);
    return 0;
}
