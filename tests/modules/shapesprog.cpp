// shapesprog.cpp - a C++ program calling the instrumented libshapes.so
// (test 229).
#include <cstdio>

extern "C" int shapes_run(int n);

namespace app {
int twelve() { return shapes_run(12); }
} // namespace app

int main()
{
    std::printf("shapes: %d\n", app::twelve());
    return 0;
}
