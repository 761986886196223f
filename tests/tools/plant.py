#!/usr/bin/env python3
"""plant.py - check that the suite catches what it claims to: plant known bugs
one at a time in a scratch clone of this checkout (its committed HEAD) and
run the tests that should fail.  tests/README.md lists the bugs and which
test catches each; keep the two in step when you add one.

  python3 tests/tools/plant.py [N ...]      default: every bug

For each bug: clone into $TMPDIR/callsight-plant-N, change one spot (the text
must be found exactly once, so a plant that no longer applies says so),
`make check-build`, run its tests, print "N what: test:FAILS|passes ...",
remove the clone.  A bug every one of whose tests passes is a hole in the
suite.  Exit status 1 when any bug went uncaught or could not be planted.
A developer's tool: minutes of CPU, not part of make test.
"""
import os, shutil, subprocess, sys, tempfile

# number: (what, file, text found once, replaced by, the tests that must catch it);
# file None: the fuzz corpora emptied instead.
BUGS = {
 1: ("device dropped counter one short per dropped batch", "runtime/trace_ring.c",
     "    ring_add_dropped(t->tid, t->n - t->nmarks);\n    tl_note_drop(t);", "    ring_add_dropped(t->tid, t->n - t->nmarks - 1);\n    tl_note_drop(t);",
     ["tests/stream/441-stream-overflow.t"]),
 2: ("device dropped counter never incremented", "runtime/trace_ring.c",
     "    atomic_fetch_add_explicit(RING_U64(dropped), events, memory_order_relaxed);", "    (void)events;",
     ["tests/stream/441-stream-overflow.t"]),
 3: ("per-thread lost count halved (tl_note_drop)", "runtime/trace_thread.c",
     "    t->lost += t->n - t->nmarks;", "    t->lost += (t->n - t->nmarks) / 2;",
     ["tests/stream/441-stream-overflow.t"]),
 4: ("the no-libzstd trace_stream offering the codec", "stream/ts_internal.h",
     "#define CODEC_DEFAULT 0", "#define CODEC_DEFAULT 1",
     ["tests/stream/446-stream-no-libzstd.t"]),
 5: ("the ring copy skipping its second memcpy when a batch wraps", "runtime/trace_ring.c",
     "    if (len > first)\n        memcpy(g_ring_data, (const unsigned char *)src + first, (size_t)(len - first));", "",
     ["tests/stream/440-stream-workload.t"]),
 6: ("percentiles taken at a bucket's lower edge", "src/analysis/hist.c",
     "    return lo + ((uint64_t)1 << (shift - 1));", "    return lo;",
     ["build/tests/hist", "tests/runtime/110-file-mode.t", "tests/analyze/221-analyze-report.t"]),
 7: ("the tracer's time never taken out (marker 29 ignored)", "src/analysis/analysis.c",
     "        callstack_exclude(&t->cs, ev->call_site);", "        (void)t;",
     ["tests/runtime/113-tracer-time-file.t", "tests/runtime/114-tracer-time-stream.t", "tests/runtime/110-file-mode.t"]),
 8: ("TRACE_SHM_WAIT_US read but never used", "runtime/trace_lifecycle.c",
     "    g_wait_ns = cfg_u64(\"TRACE_SHM_WAIT_US\", 0, CFG_WAIT_US_MAX, 0) * 1000u;", "    (void)cfg_u64(\"TRACE_SHM_WAIT_US\", 0, CFG_WAIT_US_MAX, 0);",
     ["tests/runtime/114-tracer-time-stream.t"]),
 9: ("serve never counts the tracers' waits", "src/serve/conn.c",
     "        c->waits++;\n", "",
     ["tests/runtime/114-tracer-time-stream.t"]),
 10: ("an empty fuzz corpus", None, None, None, ["tests/fuzz/552-fuzz-corpus.t", "tests/fuzz/553-fuzz-codec-corpus.t"]),
 12: ("a thread TRACE_THREADS picks up mid-call inheriting nothing", "runtime/trace_hooks.c",
     "            t->inherited += depth > 0 ? (uint32_t)depth : 0;\n", "",
     ["tests/runtime/116-trace-threads.t"]),
 14: ("a .flags file rewritten even when its flags did not change", "src/cmd/flags.c",
     "        if (!strcmp(old, want))\n            return 0;\n", "",
     ["tests/select/669-select-make.t"]),
 15: ("trace.config patterns matched as substrings, as GCC's file list is", "src/select/config.c",
     "        if (fnmatch(p[i], s[at - np + i], FNM_PERIOD) != 0)",
     "        if (!strstr(s[at - np + i], p[i]) && fnmatch(p[i], s[at - np + i], FNM_PERIOD) != 0)",
     ["build/tests/config", "tests/select/669-select-make.t"]),
 13: ("TRACE_THREADS read but never applied", "runtime/trace_hooks.c",
     "    if (g_threads[0] && !tl_name_selected()) {", "    if (0 && g_threads[0] && !tl_name_selected()) {",
     ["tests/runtime/116-trace-threads.t"]),
 16: ("GCC's substring match not guarded: a name inside a selected one's is listed", "src/select/choose.c",
     "size_t clash = ch->on[i] ? SIZE_MAX : takes_selected(ch, unit, text);",
     "size_t clash = SIZE_MAX;\n                (void)takes_selected;",
     ["tests/select/670-select-funcs.t"]),
 17: ("two static functions of one name merged into one", "src/select/graph.c",
     "snprintf(key, sizeof key, \"%s:%u:%s\", file, line, it->a + plen + 1);",
     "snprintf(key, sizeof key, \"%s\", it->a + plen + 1);",
     ["build/tests/graph", "tests/select/670-select-funcs.t"]),
 18: ("include-func one level too shallow", "src/select/graph.c",
     "if (depth >= 0 && level[at] >= depth)", "if (depth >= 0 && level[at] + 1 >= depth)",
     ["build/tests/graph", "tests/select/670-select-funcs.t"]),
 19: ("a unit's call graph not compiled again when a header it reads changes", "src/select/graph_build.c",
     "return !strcmp(old, cmd) && !deps_newer(d, &st);", "return !strcmp(old, cmd) && (deps_newer(d, &st) || 1);",
     ["tests/select/670-select-funcs.t"]),
 20: ("summary mode's histogram one sub-bucket off", "runtime/trace.h",
     "slot = (uint32_t)(v >> (e - 5u)) & (TRACE_SUMMARY_SUB - 1u);",
     "slot = (uint32_t)((v >> (e - 5u)) + 1u) & (TRACE_SUMMARY_SUB - 1u);",
     ["build/tests/summary_hist"]),
 21: ("a torn last summary snapshot not reported", "src/analysis/analysis.c",
     "    run->a->summary_damaged += st->damaged + (uint64_t)st->reading;",
     "    run->a->summary_damaged += st->damaged;",
     ["tests/runtime/117-summary-file.t"]),
 22: ("summary mode: the tracer's snapshot time left in open frames", "runtime/trace_summary.c",
     "    ns = ns > tr ? ns - tr : 0;\n", "    ns = ns > tr ? ns : 0;\n",
     ["tests/runtime/117-summary-file.t"]),
 23: ("trace_stream sending summaries to a server that did not say it takes them", "stream/ts_link.c",
     "    s->peer.sum_ok = (features & TRACE_ACK_SUMMARIES) != 0;", "    s->peer.sum_ok = 1;\n    (void)features;",
     ["tests/runtime/118-summary-stream.t"]),
 24: ("trace_stream merging a thread's whole totals again, not what it gained", "stream/ts_merge.c",
     "    uint64_t calls = f->calls - (was ? was->calls : 0);", "    uint64_t calls = f->calls;",
     ["tests/runtime/118-summary-stream.t"]),
 25: ("analyze adding each snapshot's totals, not its difference from the one before", "src/analysis/analysis.c",
     "        funcstats_add_summary(&a->funcs, id, d.calls, d.incl_ns, d.self_ns);",
     "        funcstats_add_summary(&a->funcs, id, d.fn->calls, d.incl_ns, d.self_ns);",
     ["tests/runtime/117-summary-file.t", "tests/runtime/119-summary-intervals.t"]),
 26: ("serve's increments never finding a function they already hold", "src/serve/sums.c",
     "            if (t->fn[t->hash[i] - 1u].addr == addr) {", "            if (t->fn[t->hash[i] - 1u].addr == addr + 1) {",
     ["tests/runtime/118-summary-stream.t", "tests/runtime/119-summary-intervals.t"]),
 27: ("the series widened without merging its intervals", "src/analysis/timeline.c",
     "            tl->e[i].interval >>= 1;", "            (void)0;",
     ["build/tests/timeline"]),
 28: ("trace_stream's increments not started afresh on a new connection", "stream/ts_merge.c",
     "            d->sent_calls = d->sent_incl = d->sent_self = 0;", "            (void)d;",
     ["tests/runtime/118-summary-stream.t"]),
 29: ("trace_stream draining the ring while disconnected, losing what it takes", "stream/ts_drain.c",
     "        if (s->sock < 0) { /* the ring keeps it all for the next connection */",
     "        if (s->sock < 0 && ring_take(r, s->raw, CHUNK_RAW) == -2) {",
     ["tests/stream/439-stream-outage.t", "tests/stream/445-stream-reconnect.t"]),
 30: ("trace_stream sending the resume key with every heartbeat", "stream/ts_link.c",
     "    return send_resume(s);\n}",
     "    return send_resume(s) || (s->resume.keyed && send_small(s, TRACE_CHUNK_RESUME_KEY, s->resume.key, sizeof s->resume.key));\n}",
     ["tests/stream/438-stream-resume-key.t"]),
 31: ("trace_stream's exit status blind to the tracers' drops while disconnected", "stream/ts_main.c",
     "    if (s->discarded || outage_drops(s) || s->link.snap_lost)", "    if (s->discarded || s->link.snap_lost)",
     ["tests/stream/439-stream-outage.t"]),
 32: ("the flush deadline (TRACE_FLUSH_MS) never checked", "runtime/trace_thread.c",
     "    return (t->n >= t->flush_at) | (now >= t->flush_by);", "    return t->n >= t->flush_at;",
     ["tests/runtime/155-flush-ms.t"]),
 33: ("top taking every cut for a gap: a resumable stream never shown reconnecting", "src/analysis/live.c",
     "a->loss_mark == TRACE_MARK_STREAM_CUT && quiet < l->reconnect_s", "0",
     ["build/tests/live", "tests/top/556-top-live.t"]),
 34: ("top's rows blind to summary snapshots", "src/analysis/live.c",
     "    struct sink s = {.ctx = l, .close = on_close, .summary = on_summary};",
     "    struct sink s = {.ctx = l, .close = on_close};\n    (void)on_summary;",
     ["tests/top/556-top-live.t"]),
 35: ("top --once without analyze's pre-passes (times off in the last digits)", "src/cmd/top.c",
     "if (live_prepare(l, msg, sizeof msg) < 0 || live_refresh", "if (live_refresh",
     ["tests/top/554-top.t"]),
 36: ("trace_stream taking a version-3 batch that is still being copied as done", "stream/ts_ring.c",
     "        return b->commit == pos;", "        return 1;",
     ["tests/stream/457-stream-ring-version.t"]),
 37: ("serve summing the directory again without the writes under way", "src/serve/files.c",
     "    disk_used = sum + disk_pending;", "    disk_used = sum;",
     ["build/tests/stream_dircap"]),
 38: ("serve keeping a failed write's bytes accounted", "src/serve/files.c",
     "        disk_settle(n * REC, cut ? 0 : n * REC);", "        disk_settle(n * REC, ((void)cut, n * REC));",
     ["build/tests/stream_dircap"]),
 40: ("top reading every series in detail: no --max-series cap (series_of)", "src/analysis/live.c",
     "    if (l->nseries >= l->max_series)\n        return 0;\n", "",
     ["tests/top/557-top-many-series.t"]),
 41: ("serve's summary totals never refused at the budget for all connections (charge)", "src/serve/sums.c",
     "        if (cur > lim || more > lim - cur) {", "        if ((void)lim, 0) {",
     ["tests/serve/354-serve-summary-budget.t"]),
 42: ("a summary snapshot left open never closed: --snapshot-timeout ignored (snapshot_deadline)", "src/serve/conn.c",
     "    if (!c->sums || c->o->snapshot_secs <= 0 || !sums_oldest_open(c->sums, open))",
     "    if (1)",
     ["tests/serve/354-serve-summary-budget.t"]),
 43: ("a recursive function's inclusive time summed at every frame, not once per outermost call", "src/analysis/funcstats.c",
     "    if (!nested)\n", "    if ((void)nested, 1)\n",
     ["tests/analyze/236-analyze-recursion-incl.t"]),
 44: ("summary mode's default table back to 256 functions (TRACE_SUMMARY_FUNCS, cfg_mode)", "runtime/trace_config.c",
     "cfg_u64(\"TRACE_SUMMARY_FUNCS\", 16, 65536, 65536)", "cfg_u64(\"TRACE_SUMMARY_FUNCS\", 16, 65536, 256)",
     ["tests/runtime/120-summary-many-funcs.t", "tests/stream/461-stream-summary-many-funcs.t"]),
 45: ("a dropped batch counted in the ring's dropped total but not in its thread's slot of the loss table", "runtime/trace_ring.c",
     "    ring_add_dropped(t->tid, t->n - t->nmarks);\n    tl_note_drop(t);",
     "    atomic_fetch_add_explicit(RING_U64(dropped), t->n - t->nmarks, memory_order_relaxed);\n    tl_note_drop(t);",
     ["tests/stream/462-stream-loss-per-thread.t"]),
 46: ("--format chrome writing frames cut short as whole calls: no args.cut, none counted", "src/out/out_chrome.c",
     "(how == CALLSTACK_CUT ? REC_CUT : 0)", "((void)how, 0)",
     ["tests/analyze/234-analyze-chrome.t"]),
 47: ("callsight run --summary running the program in event mode", "src/cmd/run.c",
     "    if (o.summary)\n        env[ne++] = \"TRACE_MODE=summary\";\n", "",
     ["tests/run/675-run-stream-options.t"]),
 48: ("the runtime's dlopen not reading the set of modules again (plugins seen at flushes only)", "runtime/trace_modules.c",
     "    if (h)\n        mod_dl_changed();\n", "    (void)h;\n",
     ["tests/analyze/235-analyze-plugin-churn.t"]),
 49: ("analyze never passing a closed module's time: the next plugin's calls named the closed one's", "src/analysis/analysis.c",
     "    if (ev->ts > t->mods_until) /* a closed module's time passed */", "    if (ev->ts > t->mods_until && 0)",
     ["tests/analyze/235-analyze-plugin-churn.t"]),
 50: ("analyze's advice naming the least busy functions, not the busiest", "src/out/advice.c",
     "    return cx != cy ? (cx < cy ? 1 : -1) : (x > y) - (x < y);", "    return cx != cy ? (cx < cy ? -1 : 1) : (x > y) - (x < y);",
     ["tests/stream/463-stream-advice.t"]),
 51: ("analyze --thread taking no glob: 'worker-*' selects nothing", "src/analysis/analysis.c",
     "    return fnmatch(want, t->name, 0) == 0;", "    return strcmp(want, t->name) == 0;",
     ["tests/analyze/237-analyze-filter-feedback.t"]),
 52: ("analyze --function matching a component's tail: able::insert taken for Table::insert", "src/read/symbols.c",
     "    return glob ? fnmatch(w, h, 0) == 0 : strcmp(h, w) == 0;",
     "    return glob ? fnmatch(w, h, 0) == 0 : strlen(h) >= strlen(w) && !strcmp(h + strlen(h) - strlen(w), w);",
     ["tests/analyze/240-analyze-cxx-function.t"]),
 54: ("analyze's text table with a fixed unit again: a call over a second is a 7-digit us count (cell_call)", "src/out/report.c",
     "    unsigned u = unit_for(0, ns);", "    unsigned u = 1;",
     ["tests/analyze/245-analyze-table-widths.t"]),
 55: ("analyze merging every file-mode run in a directory: the newest never picked out (trace_runs_keep)", "src/read/trace_runs.c",
     "        if (run == TRACE_RUNS_NONE || run == keep)", "        if (run == TRACE_RUNS_NONE || run != keep || run == keep)",
     ["tests/analyze/250-analyze-runs.t"]),
 56: ("analyze blind to the runtime's exit record: every process taken for killed (on_marker)", "src/analysis/analysis.c",
     "        src->exit_anchors++;\n", "",
     ["tests/analyze/251-analyze-killed.t"]),
 53: ("analyze --format tree showing each path's incl as its self time", "src/out/out_tree.c",
     "    cols(w->out, n->calls, w->incl[node], n->self_ns);", "    cols(w->out, n->calls, w->incl[node], w->incl[node]);",
     ["tests/analyze/241-analyze-tree.t", "tests/analyze/242-analyze-tree-workload.t"]),
 57: ("summary mode adding a recursive call's inclusive time again at every frame", "runtime/trace_summary.c",
     "        e->incl += nested ? 0 : ns;\n", "        e->incl += ((void)nested, ns);\n",
     ["tests/runtime/157-summary-recursion-incl.t"]),
 58: ("callers naming a call from inlined code by the caller's own call site, a frame further out", "src/analysis/analysis.c",
     "    f->tag.site_inlined = 1;\n", "    f->tag.site_inlined = 0;\n",
     ["tests/analyze/255-analyze-callers-inlined.t"]),
 59: ("analyze --function taking a glob as a plain name: 'ins*' selects nothing", "src/read/symbols.c",
     "    return name_match(have, want, strpbrk(want, \"*?[\") != NULL);", "    return name_match(have, want, 0);",
     ["tests/analyze/240-analyze-cxx-function.t"]),
 60: ("live control deciding a call's exit by the setting then, not by its enter's decision", "runtime/trace_control.c",
     "    return d < CTL_DEPTH && (t->ctl_skip[d >> 6] >> (d & 63u) & 1u);",
     "    return d < CTL_DEPTH && t->ctl_flags && ((t->ctl_flags & TRACE_CTL_PAUSED) || ((t->ctl_flags & TRACE_CTL_OFF) ? ctl_listed(t, func) : !ctl_listed(t, func)));",
     ["tests/runtime/158-control-file.t"]),
 61: ("analyze's table on a terminal never narrowed: an 80-column terminal wraps every C++ row", "src/cmd/analyze.c",
     "        o.report.columns = terminal_columns(out);", "        o.report.columns = 0 * terminal_columns(out);",
     ["tests/analyze/256-analyze-terminal-width.t"]),
 65: ("trace_stream reading the next control request while an answer is still owed: the earlier answer is lost", "stream/ts_link.c",
     "(s->peer.req_ok || s->peer.ctl_ok) && !s->ctl.due;", "(s->peer.req_ok || s->peer.ctl_ok);",
     ["tests/stream/465-stream-control.t"]),
 66: ("serve relaying control to a connection whose trace_stream never offered it", "src/serve/conn.c",
     "    else if (id && !listed[found]->ctl_acked)\n", "    else if (id && !listed[found]->ctl_acked && 0)\n",
     ["tests/stream/465-stream-control.t"]),
 67: ("live control's subtree never left: after the function's first call, everything counts as under it", "runtime/trace_control.c",
     "    if (t->ctl_in == d + 1u)\n        t->ctl_in = 0;", "    if (t->ctl_in == d + 1u && 0)\n        t->ctl_in = 0;",
     ["tests/runtime/162-control-subtree.t"]),
 68: ("live control's --threads never leaving a thread out: every thread records whatever its name", "runtime/trace_control.c",
     "        if (!tl_name_in(globs)) {", "        if (!tl_name_in(globs) && 0) {",
     ["tests/runtime/163-control-threads.t"]),
 69: ("top's O naming the first row's function by an address one off: the device turns nothing off", "src/out/top_view.c",
     "            *addr = e->addr;", "            *addr = e->addr + 1;",
     ["tests/top/559-top-control.t"]),
 64: ("live control's trigger rule never taken: a thread keeps TRACE_TRIGGER's whatever the setting says", "runtime/trace_control.c",
     "    if (flags & TRACE_CTL_TRIGGER) {\n        uint64_t f =", "    if (0) {\n        uint64_t f =",
     ["tests/runtime/161-control-trigger.t"]),
 62: ("summary mode writing an empty exit snapshot for a thread TRACE_THREADS left out: one thread too many", "runtime/trace_lifecycle.c",
     "        if (gate != TL_IGNORED) /* a thread", "        if (1) /* a thread",
     ["tests/runtime/160-summary-threads.t"]),
 11: ("a successful flush never noting its own time", "runtime/trace_flush.c",
     "    if (!final && !stopped())\n        tl_note_tracer(t, start, waited);", "",
     ["tests/runtime/113-tracer-time-file.t"]),
 39: ("analyze keeping every module of a list: --max-modules never applied", "src/read/modlist.c",
     "    m->drop = m->budget && m->n >= m->budget->per_list;", "    m->drop = 0;",
     ["build/tests/modlist", "tests/analyze/239-analyze-module-caps.t"]),
 70: ("include-func switching on functions of an excluded file (apply_include_func)", "src/select/choose.c",
     "        if (mark[i] && !ch->on[i] && verdict[i] != 0) {", "        if (mark[i] && !ch->on[i] && (verdict[i] != 0 || 1)) {",
     ["tests/select/682-select-lines-together.t"]),
 71: ("analyze taking an --exe whose build-id matches in its first 8 bytes (bin_new)", "src/analysis/analysis.c",
     "            a->exes[e].build_id[1] == id[1]) {", "            (a->exes[e].build_id[1] == id[1] || 1)) {",
     ["tests/analyze/260-buildid-near-miss.t"]),
 72: ("ctl taking an --exe whose build-id matches in its first 8 bytes (resolve)", "src/cmd/ctl.c",
     "(words[0] != want[0] || words[1] != want[1])", "(words[0] != want[0])",
     ["tests/analyze/260-buildid-near-miss.t"]),
 73: ("analyze keeping a trigger whatever --thread or --function selected (on_trigger)", "src/analysis/analysis.c",
     "    if (!t->exit_selected) {", "    if (0 && !t->exit_selected) {",
     ["tests/analyze/261-trigger-selection.t"]),
 74: ("a unit's call-graph command kept when its compile fails: a partial graph taken for fresh (start_unit)", "src/select/graph_build.c",
     "    if (unit_path(b->objdir, src, \".cg.cmd\", c, sizeof c) == 0)\n        unlink(c);",
     "    if (unit_path(b->objdir, src, \".cg.cmd\", c, sizeof c) == 0)\n        (void)c;",
     ["tests/select/683-select-graph-files.t"]),
}
def plant(src, n):
    """Plant bug n in a clone of src; True when one of its tests fails."""
    what, path, a, b, tests = BUGS[n]
    work = os.path.join(tempfile.gettempdir(), "callsight-plant-%d" % n)
    shutil.rmtree(work, ignore_errors=True)
    subprocess.run(["git", "clone", "-q", src, work], check=True)
    try:
        if path:
            p = os.path.join(work, path)
            text = open(p).read()
            if text.count(a) != 1:
                print("%d %s: CANNOT PLANT (the spot in %s is gone: update this tool)" % (n, what, path))
                return False
            open(p, "w").write(text.replace(a, b))
        else:
            for d in ("trace_reader", "stream_codec"):
                for f in os.listdir(os.path.join(work, "fuzz/corpus", d)):
                    os.remove(os.path.join(work, "fuzz/corpus", d, f))
        if subprocess.run("make -j2 check-build > build.log 2>&1", shell=True, cwd=work).returncode:
            print("%d %s: BUILD FAILED (see %s/build.log)" % (n, what, work))
            return False
        caught = []
        for t in tests:
            cmd = ["prove", t] if t.endswith(".t") else ["prove", "--exec", "", t]
            r = subprocess.run(cmd, cwd=work, env=dict(os.environ, CALLSIGHT_BUILD=work + "/build"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            caught.append((t.split("/")[-1], r.returncode != 0))
        print("%d %s: %s" % (n, what, " ".join("%s:%s" % (t, "FAILS" if f else "passes") for t, f in caught)))
        return any(f for _, f in caught)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    which = [int(x) for x in sys.argv[1:]] or sorted(BUGS)
    bad = [n for n in which if not plant(root, n)]
    if bad:
        print("plant: not caught or not planted: %s" % " ".join(map(str, bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
