/*
 * live.c - the Live page's event stream (see live.h).  Each frame is
 * `callsight top DIR --once --exe ...`'s output, captured through a pipe
 * (at most UI_LIVE_FRAME bytes; the rest is read and dropped), and sent
 * as one server-sent event: "event: frame", then a "data:" line per line
 * of the frame (a carriage return in it dropped, so the event's framing
 * stays the server's), then a blank line.
 */
#include "live.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


struct ui_live {
    struct ui_traces *t;
    char *real;           /* the trace directory */
    char *ev;             /* the event being sent */
    size_t len, off;
    struct timespec next; /* when the next frame is due */
    int frames;
};

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static int live_open;

struct ui_live *ui_live_open(struct ui_traces *t, struct ui_trace *tr)
{
    pthread_mutex_lock(&live_lock);
    int full = live_open >= UI_LIVE_MAX;
    if (!full)
        live_open++;
    pthread_mutex_unlock(&live_lock);
    if (full)
        return NULL;
    struct ui_live *l = calloc(1, sizeof *l);
    if (l && !(l->real = strdup(tr->real))) {
        free(l);
        l = NULL;
    }
    if (!l) {
        pthread_mutex_lock(&live_lock);
        live_open--;
        pthread_mutex_unlock(&live_lock);
        return NULL;
    }
    l->t = t;
    clock_gettime(CLOCK_MONOTONIC, &l->next);
    return l;
}

void ui_live_close(struct ui_live *l)
{
    if (!l)
        return;
    free(l->ev);
    free(l->real);
    free(l);
    pthread_mutex_lock(&live_lock);
    live_open--;
    pthread_mutex_unlock(&live_lock);
}

/* top's frame into buf (at most len - 1 bytes, NUL-terminated). */
static void run_top(struct ui_live *l, char *buf, size_t len)
{
    char *argv[8 + 2 * UI_EXES_MAX];
    int n = 1;
    argv[n++] = "top";
    argv[n++] = l->real; /* absolute: never taken for an option */
    argv[n++] = "--once";
    for (size_t i = 0; i < l->t->nexes; i++) {
        argv[n++] = "--exe";
        argv[n++] = (char *)l->t->exes[i];
    }
    argv[n] = NULL;
    int status = ui_run(l->t, argv, buf, len);
    size_t got = strlen(buf);
    if (status != 0 && got + 64 < len)
        snprintf(buf + got, len - got, "%s(callsight top: status %d)", got && buf[got - 1] != '\n' ? "\n" : "",
                 status);
}

/* The frame as one event in l->ev.  0, or -1 out of memory. */
static int make_event(struct ui_live *l)
{
    char *frame = malloc(UI_LIVE_FRAME);
    if (!frame)
        return -1;
    run_top(l, frame, UI_LIVE_FRAME);
    free(l->ev);
    l->ev = NULL;
    l->len = l->off = 0;
    FILE *f = open_memstream(&l->ev, &l->len);
    if (!f) {
        free(frame);
        return -1;
    }
    fprintf(f, "event: frame\nid: %d\n", ++l->frames);
    for (char *line = frame, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!*line && (!next || !*next))
            break; /* the frame's last newline */
        fputs("data: ", f);
        for (char *c = line; *c; c++)
            if (*c != '\r')
                fputc(*c, f);
        fputc('\n', f);
    }
    fputc('\n', f);
    free(frame);
    return fclose(f) == 0 ? 0 : -1;
}

ssize_t ui_live_read(struct ui_live *l, char *buf, size_t max)
{
    if (l->off == l->len) {
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &l->next, NULL) == EINTR)
            ;
        if (make_event(l) < 0)
            return -1;
        clock_gettime(CLOCK_MONOTONIC, &l->next);
        l->next.tv_sec += 1;
    }
    size_t n = l->len - l->off < max ? l->len - l->off : max;
    memcpy(buf, l->ev + l->off, n);
    l->off += n;
    return (ssize_t)n;
}
