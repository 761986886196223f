/*
 * trace_messages.c - the runtime's messages.
 *
 * One line on stderr, "callsight: " first.  write(2), not stdio: it may run
 * inside a flush, which may run inside a signal handler.
 *
 * Part of the runtime: trace.c includes it after trace_internal.h and the
 * parts before it, so all of them are one translation unit.
 */

TR_NOINSTR __attribute__((sentinel)) static void say(const char *first, ...)
{
    char line[1024];
    size_t len = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *)) {
        if (len == 0)
            len = strlen(strcpy(line, "callsight: "));
        size_t n = strlen(s);
        if (n > sizeof line - 1 - len)
            n = sizeof line - 1 - len;
        memcpy(line + len, s, n);
        len += n;
    }
    va_end(ap);
    line[len++] = '\n';
    ssize_t r = write(STDERR_FILENO, line, len);
    (void)r;
}

/* Text of v in base 10, or base 8 for v below 8^20, in buf (at least 21
 * bytes), at least `width` digits; returns where it starts. */
TR_NOINSTR static const char *num_base(uint64_t v, unsigned base, int width, char *buf)
{
    char *p = buf + 20;
    *p = '\0';
    do
        *--p = (char)('0' + v % base);
    while ((v /= base) || buf + 20 - p < width);
    return p;
}

/* Decimal text of v in buf (at least 21 bytes); returns where it starts. */
TR_NOINSTR static const char *num(uint64_t v, char *buf)
{
    return num_base(v, 10, 0, buf);
}

