// routes.cpp - C++ names as --function takes them (test 240): a class
// template's method, a plain class's method of the same name, and another.
#include <cstdio>
#include <string>
namespace net {
template <typename K> struct RoutingTable {
    int n = 0;
    void insert(const K &k) { n += (int)k.size(); }
    int lookup(const K &k) const { return (int)k.size() + n; }
};
struct Table { int n = 0; void insert(int v) { n += v; } };
}
int main()
{
    net::RoutingTable<std::string> rt;
    net::Table t;
    for (int i = 0; i < 5; i++) rt.insert("abc");
    for (int i = 0; i < 3; i++) t.insert(i);
    std::printf("%d %d %d\n", rt.lookup("x"), rt.n, t.n);
    return 0;
}
