/* plug.c - an instrumented plugin, built twice: -DPLUG=a and -DPLUG=b give
 * plug_a.so and plug_b.so, each with its own function names (test 229). */
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NAME(f) CAT(CAT(plug_, PLUG), CAT(_, f))

static int NAME(leaf)(int i)
{
    return i ^ 0x5a;
}

int plug_run(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += NAME(leaf)(i);
    return s;
}
