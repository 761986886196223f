# many_funcs.sh - a traced program of many distinct functions and its exact
# counts, for the tests of summary mode's tables (runtime/120, stream/461).
# Source it after lib.sh.
#
# many_funcs_build N EXE: EXE, a C program of N small instrumented
# functions f0..f(N-1) and two threads: thread 0 calls f0 upward, thread
# 1 from f(N-1) down, and thread t calls f_i 1 + (i + t) % 3 times; main
# and worker are instrumented too.  Built at -O0 without -g (symbols come
# from the symbol table): 20,000 functions take about 10 s to compile.
# many_funcs_expect N: "name calls" lines, sorted, for every function.
many_funcs_build() {
    local n=$1 exe=$2
    {
        echo '#include <pthread.h>'
        echo '#include <stdio.h>'
        echo 'typedef int (*fn_t)(int);'
        awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "__attribute__((noinline)) int f%d(int x) { return x + %d; }\n", i, i % 97 }'
        echo "#define NF $n"
        echo "static fn_t const fs[NF] = {"
        awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "f%d,%s", i, i % 16 == 15 ? "\n" : " " }'
        echo '};'
        cat << 'EOC'
static __attribute__((noinline)) void *worker(void *arg)
{
    int t = (int)(long)arg, s = 0;
    for (int j = 0; j < NF; j++) {
        int i = t ? NF - 1 - j : j;
        for (int k = 0; k <= (i + t) % 3; k++)
            s += fs[i](k);
    }
    return (void *)(long)s;
}
int main(void)
{
    pthread_t th[2];
    for (long t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, worker, (void *)t);
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
    puts("many: done");
    return 0;
}
EOC
    } > "$exe.c"
    [ -f "$T/trace.o" ] || cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" || return 1
    cc -O0 -finstrument-functions -o "$exe" "$exe.c" "$T/trace.o" -pthread
}

many_funcs_expect() {
    awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) print "f" i, 1 + i % 3 + 1 + (i + 1) % 3; print "main 1"; print "worker 2" }' |
        sort
}
