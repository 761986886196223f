/*
 * net_allow.c - unit test of serve's --allow prefixes (src/serve/net.c): parsing
 * IPv4 and IPv6 prefixes and single hosts, refusing malformed ones, and
 * matching peers, with IPv4-mapped IPv6 peers counted as IPv4.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "serve/net.h"

static int test_no, failed;
static void ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    failed |= !cond;
}

/* Whether the peer at IP (IPv6 when it holds a ':', else IPv4) may connect. */
static int match(const struct net_allow *a, const char *ip)
{
    struct sockaddr_in sa4;
    struct sockaddr_in6 sa6;
    memset(&sa4, 0, sizeof sa4);
    memset(&sa6, 0, sizeof sa6);
    sa4.sin_family = AF_INET;
    sa6.sin6_family = AF_INET6;
    if (strchr(ip, ':')) {
        inet_pton(AF_INET6, ip, &sa6.sin6_addr);
        return net_allow_match(a, (struct sockaddr *)&sa6);
    }
    inet_pton(AF_INET, ip, &sa4.sin_addr);
    return net_allow_match(a, (struct sockaddr *)&sa4);
}

int main(void)
{
    struct net_allow a;
    char err[128];
    memset(&a, 0, sizeof a);
    ok(match(&a, "203.0.113.9") && match(&a, "2001:db8::1"), "no --allow: everyone may connect");

    char host[NET_NAME_MAX];
    net_host_of("203.0.113.9:5555", host, sizeof host);
    ok(!strcmp(host, "203.0.113.9"), "a peer's host: its IPv4 address, without the port");
    net_host_of("[2001:db8:1:2:aa:bb:cc:dd]:5555", host, sizeof host);
    ok(!strcmp(host, "[2001:db8:1:2::]/64"), "an IPv6 peer is its /64");
    net_host_of("[::ffff:192.0.2.7]:80", host, sizeof host);
    ok(!strcmp(host, "192.0.2.7"), "an IPv4-mapped peer is its IPv4 address");

    ok(net_allow_parse("10.0.0.0/8,192.168.1.7,fd00::/8,2001:db8::/126", &a, err, sizeof err) == 0 && a.n == 4,
       "four prefixes parse");
    ok(match(&a, "10.255.1.2"), "10.255.1.2 is in 10.0.0.0/8");
    ok(!match(&a, "11.0.0.1"), "11.0.0.1 is not");
    ok(match(&a, "192.168.1.7") && !match(&a, "192.168.1.8"), "a host without /N is that host only");
    ok(match(&a, "fdab::1") && !match(&a, "fe80::1"), "fd00::/8 holds fdab::1, not fe80::1");
    ok(match(&a, "2001:db8::3") && !match(&a, "2001:db8::4"), "a /126 holds four addresses");
    ok(match(&a, "::ffff:10.1.2.3") && !match(&a, "::ffff:11.1.2.3"),
       "IPv4-mapped IPv6 peers are matched as IPv4");

    ok(net_allow_parse("0.0.0.0/0", &a, err, sizeof err) == 0 && match(&a, "198.51.100.1") &&
           !match(&a, "2001:db8::1"),
       "0.0.0.0/0 admits every IPv4 peer and no IPv6 one");
    ok(net_allow_parse("10.0.0.0/33", &a, err, sizeof err) != 0 && strstr(err, "10.0.0.0/33"),
       "a prefix longer than the address is refused, named");
    ok(net_allow_parse("10.0.0.0/8,,", &a, err, sizeof err) != 0, "an empty item is refused");
    ok(net_allow_parse("host.example", &a, err, sizeof err) != 0, "a name is refused: addresses only");
    ok(net_allow_parse("1.2.3.4/x", &a, err, sizeof err) != 0, "a non-numeric length is refused");
    char many[NET_ALLOW_MAX * 12 + 16] = "";
    for (int i = 0; i <= NET_ALLOW_MAX; i++)
        strcat(many, i ? ",10.0.0.1" : "10.0.0.1");
    ok(net_allow_parse(many, &a, err, sizeof err) != 0, "more than NET_ALLOW_MAX prefixes are refused");
    printf("1..%d\n", test_no);
    return failed;
}
