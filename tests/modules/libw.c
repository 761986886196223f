/* libw.c - an instrumented shared library linked at build time (test 229). */
static int w_inner(int i)
{
    return i * 3 + 1;
}

int w_outer(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += w_inner(i);
    return s;
}
