/*
 * proc.c - running another program by its argv, never through a shell
 * (see proc.h).
 */
#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int proc_split(const char *cmd, size_t extra, struct proc_words *w, char *err, size_t errlen)
{
    size_t n = strlen(cmd), words = 0;
    /* At most n / 2 + 1 words; their bytes fit in n + the NULs. */
    size_t slots = n / 2 + 2 + extra;
    char **argv = malloc(slots * sizeof *argv + n + 1 + n / 2 + 1);
    w->argv = NULL;
    w->argc = 0;
    if (!argv) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char *out = (char *)(argv + slots);
    const char *p = cmd;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        argv[words++] = out;
        char quote = 0;
        for (; *p; p++) {
            if (quote == '\'') {
                if (*p == '\'')
                    quote = 0;
                else
                    *out++ = *p;
            } else if (quote == '"') {
                if (*p == '"')
                    quote = 0;
                else if (*p == '\\' && p[1] && strchr("\"\\$`", p[1]))
                    *out++ = *++p;
                else
                    *out++ = *p;
            } else if (*p == '\'' || *p == '"') {
                quote = *p;
            } else if (*p == '\\' && p[1]) {
                *out++ = *++p;
            } else if (*p == ' ' || *p == '\t' || *p == '\n') {
                break;
            } else {
                *out++ = *p;
            }
        }
        if (quote) {
            free(argv);
            snprintf(err, errlen, "unclosed %c in the command '%s'", quote, cmd);
            return -1;
        }
        *out++ = '\0';
    }
    if (!words) {
        free(argv);
        snprintf(err, errlen, "the command '%s' is empty", cmd);
        return -1;
    }
    for (size_t i = words; i < slots; i++)
        argv[i] = NULL;
    w->argv = argv;
    w->argc = (int)words;
    return 0;
}

void proc_words_free(struct proc_words *w)
{
    free(w->argv);
    w->argv = NULL;
    w->argc = 0;
}

const char *proc_arg_path(const char *path, char *buf, size_t len)
{
    if (path[0] != '-' && path[0] != '@')
        return path;
    if ((size_t)snprintf(buf, len, "./%s", path) >= len)
        return NULL;
    return buf;
}

pid_t proc_start(char *const argv[], const char *dir, int out_fd, const char *setenv_name,
                 const char *setenv_value, char *err, size_t errlen)
{
    /* The child says through this pipe why exec failed; a successful exec
     * closes it (O_CLOEXEC), so the parent reads end of file. */
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        int e = 0, step = 0;
        if (dir && chdir(dir) < 0)
            e = errno, step = 1;
        if (!e && out_fd >= 0) {
            int nul = open("/dev/null", O_RDONLY);
            if (nul < 0 || dup2(nul, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0)
                e = errno, step = 2;
        }
        /* The commands that run tools are single-threaded, so setenv
         * between fork and exec is safe here. */
        if (!e && setenv_name && setenv(setenv_name, setenv_value, 1) < 0)
            e = errno, step = 2;
        if (!e) {
            execvp(argv[0], argv);
            e = errno;
        }
        int msg[2] = {e, step};
        if (write(fds[1], msg, sizeof msg) < 0) {
            /* nothing more to say */
        }
        _exit(127);
    }
    close(fds[1]);
    int msg[2];
    ssize_t got;
    while ((got = read(fds[0], msg, sizeof msg)) < 0 && errno == EINTR)
        ;
    close(fds[0]);
    if (got == (ssize_t)sizeof msg) {
        proc_wait(pid);
        snprintf(err, errlen, msg[1] == 1 ? "cannot run '%s' in %s: %s" : "cannot run '%s'%.0s: %s", argv[0],
                 dir ? dir : "", strerror(msg[0]));
        return -1;
    }
    return pid;
}

int proc_wait(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

int proc_capture(char *const argv[], const char *dir, char *line, size_t len)
{
    int fds[2];
    char err[256];
    if (len)
        line[0] = '\0';
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = proc_start(argv, dir, fds[1], NULL, NULL, err, sizeof err);
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        if (len)
            snprintf(line, len, "%s", err);
        return 127;
    }
    FILE *f = fdopen(fds[0], "r");
    if (!f) {
        close(fds[0]);
        proc_wait(pid);
        return -1;
    }
    if (len && fgets(line, (int)len, f))
        line[strcspn(line, "\n")] = '\0';
    while (fgetc(f) != EOF) /* let it finish writing */
        ;
    fclose(f);
    return proc_wait(pid);
}
