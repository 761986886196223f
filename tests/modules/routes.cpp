// routes.cpp - C++ names as --function takes them (test 240): a class
// template's method, a plain class's method of the same name, another,
// and a function template whose demangled name is very long.
#include <cstdio>
#include <map>
#include <string>
#include <vector>
namespace net {
template <typename K> struct RoutingTable {
    int n = 0;
    void insert(const K &k) { n += (int)k.size(); }
    int lookup(const K &k) const { return (int)k.size() + n; }
};
struct Table { int n = 0; void insert(int v) { n += v; } };
}
// A name of over 1,000 characters once demangled (the map's types spelled out).
typedef std::map<std::string, std::map<std::string, std::vector<std::string>>> Deep;
template <typename T> static int deep_size(const T &t)
{
    return (int)t.size();
}

int main()
{
    Deep deep;
    deep["a"]["b"].push_back("c");
    std::printf("%d\n", deep_size(deep) + deep_size(deep));
    net::RoutingTable<std::string> rt;
    net::Table t;
    for (int i = 0; i < 5; i++) rt.insert("abc");
    for (int i = 0; i < 3; i++) t.insert(i);
    std::printf("%d %d %d\n", rt.lookup("x"), rt.n, t.n);
    return 0;
}
