/*
 * segname.c - parse and make the names of serve's stream files (see
 * segname.h).
 */
#include "segname.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int segname_parse(const char *name, uint32_t *id, uint32_t *seq)
{
    static const char prefix[] = "trace.stream.";
    if (strncmp(name, prefix, sizeof prefix - 1))
        return 0;
    const char *p = name + sizeof prefix - 1;
    char *end;
    if (*p < '0' || *p > '9')
        return 0;
    errno = 0;
    unsigned long a = strtoul(p, &end, 10);
    if (errno || a == 0 || a > UINT32_MAX || *end != '.' || end[1] < '0' || end[1] > '9')
        return 0;
    unsigned long b = strtoul(end + 1, &end, 10);
    if (errno || b > UINT32_MAX || strcmp(end, ".bin"))
        return 0;
    *id = (uint32_t)a;
    *seq = (uint32_t)b;
    return 1;
}

int segname_path(char *path, size_t len, const char *dir, uint32_t id, uint32_t seq)
{
    int n = snprintf(path, len, "%s/trace.stream.%u.%u.bin", dir, (unsigned)id, (unsigned)seq);
    if (n < 0 || (size_t)n >= len) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}
