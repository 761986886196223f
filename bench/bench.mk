# bench/bench.mk - benchmarks (bench/README.md); included by the Makefile.
#
#   make bench            everything, full length (minutes); installs uftrace
#                         through `scripts/deps.sh install bench` if missing
#   make bench QUICK=1    every row once, short runs (under a minute); no
#                         install: the uftrace row says it was skipped
#
# Programs go to $(BUILD)/bench/.  hookbench is built three ways from one
# source: plain (untraced baseline), -finstrument-functions with callsight's
# runtime, and -pg for uftrace.  Only the runtime-linked build takes
# $(SANFLAGS), so the suite's ASan pass can run the quick bench too; so
# does topfollow, which links the host tool's objects (built with them).

BENCH_OUT    := $(BUILD)/bench
BENCH_CFLAGS := -std=c11 -O2 -g -Wall -Wextra -pedantic -Werror
BENCH_PROGS  := hookbench-plain hookbench-instr hookbench-pg clockcost runstat streamsend wirecodec topfollow
BENCH_BIN    := $(BENCH_PROGS:%=$(BENCH_OUT)/%)

.PHONY: bench bench-build bench-deps
bench: bench-deps all $(BUILD)/examples/workload bench-build
	@bench/run.sh $(BUILD) $(if $(filter 1,$(QUICK)),--quick)

bench-build: $(BENCH_BIN)

# The peer (uftrace) only for the full run; QUICK=1 needs nothing beyond `make`.
bench-deps:
	@if [ "$(QUICK)" != 1 ]; then \
	    scripts/deps.sh check bench >/dev/null 2>&1 || scripts/deps.sh install bench; fi

$(BENCH_OUT)/hookbench-plain: bench/hookbench.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) $(DEPFLAGS) -Iruntime -o $@ $< -pthread

$(BENCH_OUT)/hookbench-instr: bench/hookbench.c $(BUILD)/runtime/trace.o
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) $(SANFLAGS) $(DEPFLAGS) -Iruntime -finstrument-functions -o $@ $(LINK_IN) -pthread

# uftrace record needs -pg (mcount) or -finstrument-functions; -pg is its
# native and cheaper path.
$(BENCH_OUT)/hookbench-pg: bench/hookbench.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) $(DEPFLAGS) -Iruntime -pg -o $@ $< -pthread

$(BENCH_OUT)/clockcost $(BENCH_OUT)/runstat: $(BENCH_OUT)/%: bench/%.c
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) $(DEPFLAGS) -o $@ $<

# Both code chunks with trace_wire.h's codec, the one trace_stream and serve run.
$(BENCH_OUT)/streamsend: bench/streamsend.c runtime/trace.h runtime/trace_wire.h
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -Iruntime -o $@ bench/streamsend.c -lzstd -pthread

$(BENCH_OUT)/wirecodec: bench/wirecodec.c runtime/trace.h runtime/trace_wire.h
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) -Iruntime -o $@ bench/wirecodec.c -lzstd

# top's refresh is measured through the host tool's own objects, as the unit
# tests link them, so the figure is the code `callsight top` runs.
$(BENCH_OUT)/topfollow: bench/topfollow.c $(HOST_OBJ)
	@mkdir -p $(@D)
	$(CC) $(BENCH_CFLAGS) $(SANFLAGS) $(DEPFLAGS) -D_GNU_SOURCE -Iruntime -Isrc -o $@ $(LINK_IN) $(LDFLAGS_ALL) $(HOST_LIBS)
