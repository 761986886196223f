/*
 * peeruid.c - unit test of src/lib/peeruid.c on made-up listings in the
 * kernel's form: a peer's uid found by its address and port and the
 * server's port, near misses of each not taken, an IPv4 peer found among
 * the IPv6 sockets by its v4-mapped form, and no listing at all.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "lib/peeruid.h"
#include "scratch.h"

static int test_no;
static void ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
}

static const char head[] =
    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";

static void write_file(const char *dir, const char *name, const char *body)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(head, f);
        fputs(body, f);
        fclose(f);
    }
}

static struct sockaddr_in v4(const char *ip, unsigned port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, ip, &a.sin_addr);
    return a;
}

/* The uid found for ip:port connecting to server, or -1. */
static long uid_of(const char *dir, const char *ip, unsigned port, unsigned server)
{
    struct sockaddr_in a = v4(ip, port);
    uid_t uid;
    return peeruid_tcp((const struct sockaddr *)&a, sizeof a, server, dir, &uid) == 0 ? (long)uid : -1;
}

int main(void)
{
    char dir[512];
    if (!scratch_make(dir, sizeof dir, "peeruid")) {
        printf("Bail out! no scratch directory\n");
        return 1;
    }
    /* The kernel writes an IPv4 address as its 32-bit word as held in
     * memory: 127.0.0.1 is 0100007F on a little-endian machine. */
    struct sockaddr_in lo = v4("127.0.0.1", 0);
    char me[16], two[16];
    snprintf(me, sizeof me, "%08X", (unsigned)lo.sin_addr.s_addr);
    struct sockaddr_in lo2 = v4("127.0.0.2", 0);
    snprintf(two, sizeof two, "%08X", (unsigned)lo2.sin_addr.s_addr);
    char tcp[2048];
    snprintf(tcp, sizeof tcp,
             /* the server's listening socket and its side of the connection */
             "   0: %s:20D1 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 11 1\n"
             "   1: %s:20D1 %s:A000 01 00000000:00000000 00:00000000 00000000     0        0 12 1\n"
             /* the client: uid 1000, port 0xA000 to 8401 */
             "   2: %s:A000 %s:20D1 01 00000000:00000000 00:00000000 00000000  1000        0 13 1\n"
             /* another user's connection from the same port to another server */
             "   3: %s:A001 %s:1F90 01 00000000:00000000 00:00000000 00000000  1001        0 14 1\n"
             /* 127.0.0.2:A001 to this server, uid 1002 */
             "   4: %s:A001 %s:20D1 01 00000000:00000000 00:00000000 00000000  1002        0 15 1\n",
             me, me, me, me, me, me, me, two, me);
    write_file(dir, "tcp", tcp);
    write_file(dir, "tcp6",
               /* ::ffff:127.0.0.1 port 0xB000 to 8401, uid 1003 (words as held in memory) */
               "   0: 0000000000000000FFFF00000100007F:B000 0000000000000000FFFF00000100007F:20D1 01 "
               "00000000:00000000 00:00000000 00000000  1003        0 16 1\n");

    ok(uid_of(dir, "127.0.0.1", 0xA000, 8401) == 1000, "the client's socket: uid 1000");
    ok(uid_of(dir, "127.0.0.1", 0xA001, 8401) == -1, "a port of another connection, to another server: not found");
    ok(uid_of(dir, "127.0.0.1", 0xA000, 8402) == -1, "the right peer, another server port: not found");
    ok(uid_of(dir, "127.0.0.2", 0xA001, 8401) == 1002, "127.0.0.2's, by its whole address: uid 1002");
    ok(uid_of(dir, "127.0.0.3", 0xA001, 8401) == -1, "an address one off: not found");
    ok(uid_of(dir, "127.0.0.1", 0x20D1, 0xA000) == 0, "the server's own side names the server's uid, as it should");
    int le = lo.sin_addr.s_addr == 0x0100007Fu; /* the tcp6 line above is written for a little-endian machine */
    if (le)
        ok(uid_of(dir, "127.0.0.1", 0xB000, 8401) == 1003, "an IPv6 socket's connection to IPv4: found by its v4-mapped form");
    else
        printf("ok %d # SKIP the tcp6 line is a little-endian machine's\n", ++test_no);
    ok(uid_of("/nonexistent-dir", "127.0.0.1", 0xA000, 8401) == -1, "no listing: not found");
    struct sockaddr_in6 six;
    memset(&six, 0, sizeof six);
    six.sin6_family = AF_INET6;
    six.sin6_port = htons(0xA000);
    six.sin6_addr = in6addr_loopback;
    uid_t uid;
    ok(peeruid_tcp((const struct sockaddr *)&six, sizeof six, 8401, dir, &uid) == -1, "::1 not listed: not found");
    scratch_remove(dir);
    printf("1..%d\n", test_no);
    return 0;
}
