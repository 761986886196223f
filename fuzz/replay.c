/*
 * replay.c - runs a libFuzzer harness over files without libFuzzer, so the
 * committed corpus is a regression test for any compiler (and, in the
 * ASan+UBSan pass of `make test`, a sanitizer check).
 *
 *   replay_<harness> FILE|DIR...    prints "replay: N inputs", exits 0
 *
 * An input that crashes the harness crashes this program, naming the file
 * on stderr first.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLAY_MAX (8u << 20)

static unsigned long inputs;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    static uint8_t buf[REPLAY_MAX];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    fprintf(stderr, "replay: %s\n", path);
    /* a copy of exactly n bytes, so ASan sees reads past the input */
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy)
        return -1;
    memcpy(copy, buf, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
    inputs++;
    return 0;
}

static int run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char sub[4096];
        if (e->d_name[0] == '.')
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        rc |= run_file(sub);
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc; i++)
        rc |= run_path(argv[i]);
    printf("replay: %lu inputs\n", inputs);
    return rc ? 1 : 0;
}
