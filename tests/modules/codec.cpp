// codec.cpp - an instrumented C++ plugin, built twice: -DCODEC=a and
// -DCODEC=b give codec_a.so and codec_b.so, each with its own namespace, a
// class with a method and a function template (test 235).
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NS CAT(codec_, CODEC)

namespace NS {
struct Codec {
    int encode(int v);
};

int Codec::encode(int v)
{
    return v * 3 + 1;
}

template <typename T> T twice(T v)
{
    return v + v;
}
} // namespace NS

extern "C" int codec_run(int n)
{
    NS::Codec c;
    int s = 0;
    for (int i = 0; i < n; i++)
        s += NS::twice(c.encode(i));
    return s;
}
