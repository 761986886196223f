/*
 * fileopen.c - opening a file that untrusted data names, as what it claims
 * to be (see fileopen.h).
 */
#include "fileopen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* fd open, checked as a regular file under the cap, made blocking.  fd or
 * -1 (closed, said). */
static int check_regular(int fd, const char *path, uint64_t max_bytes, char *msg, size_t msglen)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(msg, msglen, "%s: not a regular file", path);
    } else if ((uint64_t)st.st_size > max_bytes) {
        snprintf(msg, msglen, "%s: larger than %llu MB, not read", path,
                 (unsigned long long)(max_bytes >> 20));
    } else {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0)
            return fd;
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
    }
    close(fd);
    return -1;
}

int fileopen_regular(const char *path, uint64_t max_bytes, char *msg, size_t msglen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
        return -1;
    }
    return check_regular(fd, path, max_bytes, msg, msglen);
}

/* fd's size bytes into a new buffer; a file that grew or shrank since its
 * fstat is refused rather than read in part. */
static char *read_all(int fd, size_t size, const char *path, char *msg, size_t msglen)
{
    char *buf = malloc(size + 1);
    if (!buf) {
        snprintf(msg, msglen, "%s: out of memory", path);
        return NULL;
    }
    size_t got = 0;
    ssize_t r = 1;
    char extra;
    while (got < size && r > 0) {
        r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR)
            r = 1;
        else if (r > 0)
            got += (size_t)r;
    }
    if (r >= 0 && got == size && (r = read(fd, &extra, 1)) == 0) {
        buf[size] = '\0';
        return buf;
    }
    snprintf(msg, msglen, "%s: %s", path, r < 0 ? strerror(errno) : "changed while being read");
    free(buf);
    return NULL;
}

int fileopen_read(const char *path, uint64_t max_bytes, char **buf, size_t *len, char *msg, size_t msglen)
{
    int fd = fileopen_regular(path, max_bytes, msg, msglen);
    if (fd < 0)
        return -1;
    struct stat st;
    *buf = NULL;
    if (fstat(fd, &st) != 0)
        snprintf(msg, msglen, "%s: %s", path, strerror(errno));
    else
        *buf = read_all(fd, (size_t)st.st_size, path, msg, msglen);
    close(fd);
    *len = *buf ? (size_t)st.st_size : 0;
    return *buf ? 0 : -1;
}

int fileopen_in_root(const char *root, const char *path, uint64_t max_bytes, char *real, size_t reallen,
                     char *msg, size_t msglen)
{
    int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rfd < 0) {
        snprintf(msg, msglen, "%s: %s", root, strerror(errno));
        return -1;
    }
    /* The kernel resolves within the root (Linux 5.6 and later): `..`,
     * absolute links and magic links all stay in it. */
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    const char *rel = path;
    while (*rel == '/')
        rel++;
    int fd = (int)syscall(SYS_openat2, rfd, *rel ? rel : ".", &how, sizeof how);
    int e = errno;
    close(rfd);
    if (fd < 0) {
        snprintf(msg, msglen, "%s in %s: %s", path, root,
                 e == ENOSYS ? "this kernel cannot confine a lookup to a directory (openat2)" : strerror(e));
        return -1;
    }
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, real, reallen - 1);
    if (n < 0 || (size_t)n >= reallen - 1) {
        snprintf(msg, msglen, "%s in %s: cannot tell where it is", path, root);
        close(fd);
        return -1;
    }
    real[n] = '\0';
    return check_regular(fd, real, max_bytes, msg, msglen);
}
