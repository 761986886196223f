/*
 * timeline.c - unit test of the per-interval series (src/analysis/timeline.c):
 * entries added up per interval and function, a run longer than the room
 * widened (totals kept, intervals aligned), more distinct functions than
 * the room dropped and counted, times before the start in the first.
 */
#include <stdio.h>
#include <stdlib.h>

#include "analysis/timeline.h"

static int test_no;
static int ok(int cond, const char *what)
{
    printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
    return cond;
}

static uint64_t calls_of(const struct timeline *tl, uint32_t id)
{
    uint64_t n = 0;
    for (size_t i = 0; i < tl->n; i++)
        n += tl->e[i].id == id ? tl->e[i].calls : 0;
    return n;
}

static int ordered(const struct timeline *tl)
{
    for (size_t i = 1; i < tl->n; i++) {
        const struct timeline_entry *a = &tl->e[i - 1], *b = &tl->e[i];
        if (a->interval > b->interval || (a->interval == b->interval && a->id >= b->id))
            return 0;
    }
    return 1;
}

int main(void)
{
    struct timeline tl;
    printf("1..8\n");
    timeline_init(&tl, 1000, 100);
    timeline_add(&tl, 1050, 7, 3, 30, 10);
    timeline_add(&tl, 1099, 7, 2, 20, 5);
    timeline_add(&tl, 1100, 7, 1, 1, 1);
    timeline_add(&tl, 1250, 2, 4, 4, 4);
    timeline_add(&tl, 10, 9, 1, 1, 1); /* before the start */
    timeline_finish(&tl);
    ok(tl.n == 4 && ordered(&tl), "one entry per interval and function, in order");
    ok(tl.e[0].interval == 0 && tl.e[0].id == 7 && tl.e[0].calls == 5 && tl.e[0].incl_ns == 50 &&
           tl.e[0].self_ns == 15 && tl.e[1].id == 9 && tl.e[2].interval == 1 && tl.e[3].interval == 2,
       "calls and times added up; an end at the boundary opens the next; before the start is the first");
    timeline_free(&tl);

    /* Three functions every interval, for more intervals than the room. */
    size_t steps = TIMELINE_MAX_ENTRIES / 2 + 12345;
    timeline_init(&tl, 0, 1000);
    for (size_t k = 0; k < steps; k++)
        for (uint32_t id = 0; id < 3; id++)
            timeline_add(&tl, (int64_t)(k * 1000 + 999), id, id + 1, 1, 1);
    timeline_finish(&tl);
    ok(tl.n <= TIMELINE_MAX_ENTRIES && tl.dropped == 0 && ordered(&tl), "a long run stays within the room");
    uint64_t times = tl.width_ns / 1000;
    ok(tl.width_ns % 1000 == 0 && times > 1 && (times & (times - 1)) == 0,
       "its intervals were widened by doubling");
    ok(calls_of(&tl, 0) == steps && calls_of(&tl, 1) == 2 * steps && calls_of(&tl, 2) == 3 * steps,
       "every call is still in the series");
    ok(tl.e[tl.n - 1].interval == (uint64_t)(((steps - 1) * 1000 + 999) / tl.width_ns),
       "the last interval is where the last call fell, at the new width");
    timeline_free(&tl);

    /* More distinct functions in one interval than the room holds. */
    timeline_init(&tl, 0, 1000);
    for (uint32_t id = 0; id < TIMELINE_MAX_ENTRIES + 10; id++)
        timeline_add(&tl, 5, id, 1, 1, 1);
    timeline_finish(&tl);
    ok(tl.n == TIMELINE_MAX_ENTRIES && tl.dropped == 10, "what finds no room is dropped and counted");
    ok(tl.width_ns == 1000, "widening that cannot help is not done");
    timeline_free(&tl);
    return 0;
}
