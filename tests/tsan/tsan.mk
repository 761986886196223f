# tests/tsan/tsan.mk - `make tsan-test`: the runtime's threaded paths and the
# shm ring under ThreadSanitizer.  The runtime, the workload (many threads)
# and trace_stream (the one reader) are built with -fsanitize=thread, from
# the one-file copies users get ($(DIST), the Makefile);
# tests/tsan/ring.t runs two workload processes into one ring at once and
# checks that TSan reports nothing and that received + dropped = generated;
# tests/tsan/recorder.t takes flight-recorder snapshots while they write.
# callsight itself is built under TSan too (in $(TSAN_BUILD)/host, by this
# Makefile with BUILD and SANFLAGS set): tests/tsan/serve.t runs serve's
# per-connection reader and writer threads through every way a stream ends,
# and the chunk queue's unit test runs under TSan as well; tests/tsan/jobs.t
# runs analyze --jobs (threads reading series, merged by the caller).
# TSan sees the threads of each process; the ring's cross-process protocol
# is the same code, so its races show up between threads of one process.

TSAN_BUILD := $(BUILD)/tsan
TSAN_FLAGS := -fsanitize=thread -g -O1

.PHONY: tsan-test tsan-host

$(TSAN_BUILD)/trace.o: $(DIST)/trace.c $(DIST)/trace.h
	@mkdir -p $(@D)
	$(CC) $(STRICT) $(TSAN_FLAGS) $(DEPFLAGS) -c $< -o $@
$(TSAN_BUILD)/workload: examples/workload.c $(TSAN_BUILD)/trace.o
	@mkdir -p $(@D)
	$(CC) -finstrument-functions $(TSAN_FLAGS) $(DEPFLAGS) -Wall -Wextra -Iruntime -fPIE -pie -o $@ $(LINK_IN) -pthread
$(TSAN_BUILD)/trace_stream: $(DIST)/trace_stream.c $(DIST)/trace.h
	@mkdir -p $(@D)
	$(CC) $(STRICT) $(TSAN_FLAGS) $(DEPFLAGS) -o $@ $< -lzstd

tsan-host:
	$(MAKE) BUILD=$(TSAN_BUILD)/host SANFLAGS=-fsanitize=thread OPT=-O1 $(TSAN_BUILD)/host/callsight \
	    $(TSAN_BUILD)/host/tests/chunkq

tsan-test: all $(TOOL_BIN) tsan-host $(TSAN_BUILD)/workload $(TSAN_BUILD)/trace_stream
	CALLSIGHT_BUILD=$(abspath $(BUILD)) TSAN_BUILD=$(abspath $(TSAN_BUILD)) prove -f tests/tsan/ring.t tests/tsan/recorder.t \
	    tests/tsan/serve.t tests/tsan/jobs.t $(TSAN_BUILD)/host/tests/chunkq
