/*
 * fuzz_trace_config.c - libFuzzer harness for the trace.config parser and
 * its path patterns (src/select/config.c): the input is a whole config,
 * parsed, and each rule's pattern matched against a few paths the way
 * `callsight flags` matches sources (and the pattern against itself).
 *
 * Built by fuzz/fuzz.mk with clang -fsanitize=fuzzer,address,undefined, and
 * with fuzz/replay.c (any C compiler) to replay the corpus in the tests.
 */
#include <stddef.h>
#include <stdint.h>

#include "select/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const paths[] = {"main.c", "src/net/a.c", "src/net/data.c", "/abs/x_test.c", "a//b/./c.h"};
    struct config c;
    char err[CONFIG_ERR_MAX];
    if (config_parse(&c, "trace.config", (const char *)data, size, err, sizeof err) < 0)
        return 0;
    const struct config_rule *why;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        (void)config_selects(&c, paths[i], &why);
    for (size_t i = 0; i < c.n; i++)
        (void)config_matches(c.rules[i].arg, c.rules[i].arg);
    config_free(&c);
    return 0;
}
