// shapes.cpp - an instrumented C++ shared library (test 229): a namespace,
// a class template used with two types, and an exception thrown two
// instrumented frames below the one that catches it.
#include <stdexcept>

namespace shapes {

template <typename T> struct Box {
    T v;
    T twice() const { return v + v; }
};

static int area(int w, int h)
{
    if (w < 0)
        throw std::invalid_argument("negative width");
    return w * h;
}

static int checked_area(int w, int h)
{
    return area(w, h) + 0;
}

int measure(int i)
{
    try {
        return checked_area(i % 3 == 0 ? -1 : i, 2);
    } catch (const std::invalid_argument &) {
        return -1;
    }
}

} // namespace shapes

extern "C" int shapes_run(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++) {
        shapes::Box<int> b{i};
        shapes::Box<double> d{i * 0.5};
        s += shapes::measure(i) + b.twice() + (int)d.twice();
    }
    return s;
}
