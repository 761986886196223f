# fuzz/fuzz.mk - fuzzing serve's wire parser, trace_stream's control requests, its decoder of coded event
# chunks, the trace-file reader, the call graph reader, trace.config and
# summary snapshots, serve's summary increments, module lists and analyze's
# whole pass over a trace file.
#
#   make fuzz            each harness for FUZZ_SECS (default 300) under
#                        clang -fsanitize=fuzzer,address,undefined
#   make fuzz-ci         the same for FUZZ_CI_SECS (10) each; part of `make test`
#   (check-build)        replay_<harness>: the harness built with $(CC) and no
#                        libFuzzer, run over fuzz/corpus/<harness>/ by
#                        tests/fuzz/552-fuzz-corpus.t (stream_codec's by
#                        tests/fuzz/553-fuzz-codec-corpus.t), so the corpus is a
#                        regression test in both passes of `make test`
#
# One harness per file: fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput.
# The committed corpus is fuzz/corpus/<name>/; new inputs a run finds go to
# $(BUILD)/fuzz/work-<name>/ (copy the interesting ones into the corpus),
# crashes to $(BUILD)/fuzz/crash-<name>-*.

FUZZ_CC       ?= clang
FUZZ_SECS     ?= 300
FUZZ_CI_SECS  ?= 10
FUZZ_HARNESS  := stream_proto trace_reader stream_codec callgraph trace_config summary stream_sums modlist analyze stream_ctl
FUZZ_FLAGS    := -std=c11 -g -O1 -D_GNU_SOURCE -Iruntime -Isrc -fsanitize=fuzzer,address,undefined \
                 -fno-sanitize-recover=undefined
FUZZ_BIN      := $(FUZZ_HARNESS:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_REPLAY   := $(FUZZ_HARNESS:%=$(BUILD)/fuzz/replay_%)

# What each harness links besides itself.
FUZZ_DEPS_stream_proto := src/serve/proto.c
FUZZ_LIBS_stream_proto := -lzstd
FUZZ_DEPS_trace_reader := src/read/trace_reader.c
FUZZ_LIBS_trace_reader := -lm
FUZZ_DEPS_stream_codec := # trace_wire.h only
FUZZ_LIBS_stream_codec :=
FUZZ_DEPS_callgraph := src/select/graph.c src/lib/strmap.c src/lib/vec.c src/lib/fileopen.c
FUZZ_LIBS_callgraph :=
FUZZ_DEPS_trace_config := src/select/config.c src/lib/fileopen.c
FUZZ_LIBS_trace_config :=
FUZZ_DEPS_summary := src/analysis/summary.c
FUZZ_LIBS_summary :=
FUZZ_DEPS_stream_ctl := # trace_wire.h only
FUZZ_LIBS_stream_ctl :=
FUZZ_DEPS_stream_sums := src/serve/sums.c
FUZZ_LIBS_stream_sums :=
FUZZ_DEPS_modlist := src/read/modlist.c src/lib/vec.c
FUZZ_LIBS_modlist :=
# the pass, not live.c (top's driver of it over a directory: it lists files) nor naming.c (symbols)
FUZZ_DEPS_analyze := $(filter-out src/analysis/live.c src/analysis/naming.c,$(wildcard src/analysis/*.c)) src/read/trace_reader.c src/read/modlist.c \
                     src/read/addrindex.c src/read/elf_buildid.c src/lib/fileopen.c src/lib/strmap.c src/lib/textesc.c src/lib/u64map.c src/lib/vec.c \
                     src/out/notes.c
FUZZ_LIBS_analyze := -lm -lpthread # jobs.c: the pass in parts (the harness runs one)

.PHONY: fuzz fuzz-ci fuzz-build

$(BUILD)/fuzz/fuzz_stream_proto: fuzz/fuzz_stream_proto.c $(FUZZ_DEPS_stream_proto) $(wildcard src/*/*.h) runtime/trace_wire.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_DEPS_stream_proto) $(FUZZ_LIBS_stream_proto)
$(BUILD)/fuzz/fuzz_trace_reader: fuzz/fuzz_trace_reader.c $(FUZZ_DEPS_trace_reader) $(wildcard src/*/*.h) runtime/trace.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_DEPS_trace_reader) $(FUZZ_LIBS_trace_reader)

$(BUILD)/fuzz/fuzz_stream_codec: fuzz/fuzz_stream_codec.c $(FUZZ_DEPS_stream_codec) $(wildcard src/*/*.h) runtime/trace_wire.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< $(FUZZ_DEPS_stream_codec) $(FUZZ_LIBS_stream_codec)

$(BUILD)/fuzz/replay_stream_proto: fuzz/replay.c fuzz/fuzz_stream_proto.c $(FUZZ_DEPS_stream_proto) $(wildcard src/*/*.h) runtime/trace_wire.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -D_GNU_SOURCE -Iruntime -Isrc -o $@ fuzz/replay.c fuzz/fuzz_stream_proto.c $(FUZZ_DEPS_stream_proto) $(LDFLAGS_ALL) $(FUZZ_LIBS_stream_proto)
$(BUILD)/fuzz/replay_trace_reader: fuzz/replay.c fuzz/fuzz_trace_reader.c $(FUZZ_DEPS_trace_reader) $(wildcard src/*/*.h) runtime/trace.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -D_GNU_SOURCE -Iruntime -Isrc -o $@ fuzz/replay.c fuzz/fuzz_trace_reader.c $(FUZZ_DEPS_trace_reader) $(LDFLAGS_ALL) $(FUZZ_LIBS_trace_reader)

$(BUILD)/fuzz/replay_stream_codec: fuzz/replay.c fuzz/fuzz_stream_codec.c $(FUZZ_DEPS_stream_codec) $(wildcard src/*/*.h) runtime/trace_wire.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -D_GNU_SOURCE -Iruntime -Isrc -o $@ fuzz/replay.c fuzz/fuzz_stream_codec.c $(FUZZ_DEPS_stream_codec) $(LDFLAGS_ALL) $(FUZZ_LIBS_stream_codec)

# The newer harnesses by one rule each (the ones above predate it).
define fuzz_rules
$(BUILD)/fuzz/fuzz_$(1): fuzz/fuzz_$(1).c $$(FUZZ_DEPS_$(1)) $$(wildcard src/*/*.h)
	@mkdir -p $$(@D)
	$$(FUZZ_CC) $$(FUZZ_FLAGS) -o $$@ $$< $$(FUZZ_DEPS_$(1)) $$(FUZZ_LIBS_$(1))
$(BUILD)/fuzz/replay_$(1): fuzz/replay.c fuzz/fuzz_$(1).c $$(FUZZ_DEPS_$(1)) $$(wildcard src/*/*.h)
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS_ALL) -D_GNU_SOURCE -Iruntime -Isrc -o $$@ fuzz/replay.c fuzz/fuzz_$(1).c $$(FUZZ_DEPS_$(1)) $$(LDFLAGS_ALL) $$(FUZZ_LIBS_$(1))
endef
$(foreach h,callgraph trace_config summary stream_sums modlist analyze stream_ctl,$(eval $(call fuzz_rules,$(h))))

# The replay programs are part of what the tests drive.
check-build: $(FUZZ_REPLAY)

fuzz-build: $(FUZZ_BIN)

# run_fuzz SECONDS: every harness in turn; any crash or sanitizer report fails.
define run_fuzz
	@for h in $(FUZZ_HARNESS); do \
	    mkdir -p $(BUILD)/fuzz/work-$$h; \
	    echo "fuzz: $$h for $(1) s"; \
	    $(BUILD)/fuzz/fuzz_$$h -max_total_time=$(1) -timeout=10 -rss_limit_mb=2048 \
	        -artifact_prefix=$(BUILD)/fuzz/crash-$$h- $(BUILD)/fuzz/work-$$h fuzz/corpus/$$h \
	        > $(BUILD)/fuzz/$$h.log 2>&1 \
	        || { tail -n 40 $(BUILD)/fuzz/$$h.log; echo "fuzz: $$h FAILED (log: $(BUILD)/fuzz/$$h.log)"; exit 1; }; \
	    grep -E '^Done [0-9]+ runs' $(BUILD)/fuzz/$$h.log | tail -n 1 | sed "s/^/fuzz: $$h: /"; \
	done
endef

fuzz: deps-test fuzz-build
	$(call run_fuzz,$(FUZZ_SECS))

# In `make test`: a short run, only where clang can build libFuzzer programs,
# and a loud line where it cannot.
fuzz-ci: deps-test
	@if printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' | \
	    $(FUZZ_CC) -fsanitize=fuzzer -x c - -o /dev/null >/dev/null 2>&1; then \
	    $(MAKE) --no-print-directory fuzz FUZZ_SECS=$(FUZZ_CI_SECS); \
	else \
	    echo "*** fuzz-ci: SKIPPED: $(FUZZ_CC) cannot build libFuzzer programs here (scripts/deps.sh installs clang) ***"; \
	fi
