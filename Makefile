# callsight - build, test and demo.
#
#   make          build/callsight (host tool) and build/trace_stream (device client),
#                 and build/dist/: the one-file runtime and client users copy
#   make demo     run the main job end to end on this machine
#   make test     every test through prove, then again under ASan+UBSan
#   make test-loaded  make test 3 times beside two CPU-bound processes
#   make clean
#
# Missing Debian packages are installed by scripts/deps.sh, which runs only
# when `scripts/deps.sh check` finds something missing.

BUILD   ?= build
CC      ?= cc
SAN     ?=
OPT     ?= -O2
STRICT  := -std=c11 -Wall -Wextra -pedantic -Werror
ifeq ($(SAN),1)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
endif
CFLAGS_ALL := $(STRICT) $(OPT) -g $(SANFLAGS) $(CFLAGS)
LDFLAGS_ALL := $(SANFLAGS) $(LDFLAGS)
# Each compile writes the headers it read to $@.d (included at the end), so a
# header's change rebuilds what includes it, and only that.
DEPFLAGS = -MMD -MP -MF $@.d -MT $@
# What a compile-and-link rule passes on: its source and the objects it
# names, not what its .d file added to its prerequisites (the headers, and
# a .c that the source #includes, as tests/unit/summary_hist.c does).
LINK_IN = $< $(filter %.o,$^)

# src/ holds one folder per role (docs/architecture.md); sources include
# each other's headers as "folder/name.h" from src/.
HOST_SRC  := $(filter-out src/cmd/main.c,$(wildcard src/*/*.c))
HOST_OBJ  := $(HOST_SRC:src/%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/embedded_data.o $(BUILD)/obj/ui_web_data.o
HOST_LIBS := -lmicrohttpd -lsqlite3 -lncurses -ljansson -lzstd -lcrypto -ldebuginfod -ldw -lelf -ldl -lpthread -lm
UNIT_SRC  := $(wildcard tests/unit/*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
EXAMPLES  := workload workload-nopie forker tidreuse resident
EX_BIN    := $(EXAMPLES:%=$(BUILD)/examples/%)
# The end-to-end tests, one folder per topic (tests/README.md), run in the
# order of their numbers; tests/tsan/ is tsan-test's.
E2E_T     := $(shell printf '%s\n' tests/*/[0-9]*.t | sort -t/ -k3)

.PHONY: all deps deps-test demo test test-loaded check check-build clean asan-test dist
all: deps $(BUILD)/callsight $(BUILD)/trace_stream dist

deps:
	@scripts/deps.sh check >/dev/null 2>&1 || scripts/deps.sh install
deps-test:
	@scripts/deps.sh check test >/dev/null 2>&1 || scripts/deps.sh install test

# Everything compiled against a system library waits for deps (order-only:
# it never forces a rebuild), so that `make -j` on a fresh machine does not
# compile before scripts/deps.sh has installed the headers.
$(BUILD)/obj/%.o: src/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -D_GNU_SOURCE -Isrc -Iruntime -c $< -o $@

$(BUILD)/callsight: $(BUILD)/obj/cmd/main.o $(HOST_OBJ)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(HOST_LIBS)

# What users copy: the runtime and trace_stream, each flattened by
# tools/flatten.c from its files by concern into one file that needs only
# trace.h beside it (docs/runtime.md).  Everything in the tree that runs the
# runtime or trace_stream is built from these, so every test exercises the
# files `callsight init` installs.
DIST := $(BUILD)/dist
$(BUILD)/tools/flatten: tools/flatten.c
	@mkdir -p $(@D)
	$(CC) $(STRICT) -O2 -o $@ $<
$(DIST)/trace.c: $(BUILD)/tools/flatten $(wildcard runtime/*.c runtime/*.h)
	@mkdir -p $(@D)
	$(BUILD)/tools/flatten $@ runtime/trace.c --keep trace.h
$(DIST)/trace_stream.c: $(BUILD)/tools/flatten $(wildcard stream/*.c stream/*.h runtime/*.h)
	@mkdir -p $(@D)
	$(BUILD)/tools/flatten $@ stream/trace_stream.c -I runtime --keep trace.h
$(DIST)/trace.h: runtime/trace.h
	@mkdir -p $(@D)
	cp $< $@
dist: $(DIST)/trace.c $(DIST)/trace_stream.c $(DIST)/trace.h

# This machine's trace_stream takes --auth-key (-DTS_AUTH, libcrypto, which
# the host tool links anyway); a device's may be built without it.
$(BUILD)/trace_stream: $(DIST)/trace_stream.c $(DIST)/trace.h | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -DTS_AUTH -o $@ $< $(LDFLAGS_ALL) -lzstd -lcrypto

# The files `callsight init` installs, built into callsight by tools/embed.c
# (src/cmd/embedded.h), so an installed callsight needs no source tree.
EMBEDDED := $(DIST)/trace.c runtime/trace.h $(DIST)/trace_stream.c \
            wiring/callsight.mk wiring/callsight.cmake wiring/trace.config
$(BUILD)/tools/embed: tools/embed.c
	@mkdir -p $(@D)
	$(CC) $(STRICT) -O2 $(DEPFLAGS) -o $@ $<
$(BUILD)/gen/embedded_data.c: $(BUILD)/tools/embed $(EMBEDDED)
	@mkdir -p $(@D)
	$(BUILD)/tools/embed $@ $(EMBEDDED)
$(BUILD)/obj/embedded_data.o: $(BUILD)/gen/embedded_data.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -Isrc -c $< -o $@
# The pages `callsight ui` serves (src/ui/web/: plain HTML, CSS and ES
# modules, no build step of their own), built in the same way (src/ui/web.h).
UI_WEB := $(sort $(wildcard src/ui/web/*.html src/ui/web/*.css src/ui/web/*.js))
$(BUILD)/gen/ui_web_data.c: $(BUILD)/tools/embed $(UI_WEB)
	@mkdir -p $(@D)
	$(BUILD)/tools/embed --table ui_web ui/web.h $@ $(UI_WEB)
$(BUILD)/obj/ui_web_data.o: $(BUILD)/gen/ui_web_data.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -Isrc -c $< -o $@

# The runtime is compiled without -finstrument-functions, always.
$(BUILD)/runtime/trace.o: $(DIST)/trace.c $(DIST)/trace.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -c $< -o $@

# Workloads: instrumented, linked with the runtime.  -g so names resolve.
INSTR := -finstrument-functions -g -O2 -Wall -Wextra -Iruntime $(SANFLAGS)
$(BUILD)/examples/workload: examples/workload.c $(BUILD)/runtime/trace.o
	@mkdir -p $(@D)
	$(CC) $(INSTR) $(DEPFLAGS) -fPIE -pie -o $@ $(LINK_IN) -pthread
$(BUILD)/examples/workload-nopie: examples/workload.c $(BUILD)/runtime/trace.o
	@mkdir -p $(@D)
	$(CC) $(INSTR) $(DEPFLAGS) -fno-pie -no-pie -o $@ $(LINK_IN) -pthread
$(BUILD)/examples/%: examples/%.c $(BUILD)/runtime/trace.o
	@mkdir -p $(@D)
	$(CC) $(INSTR) $(DEPFLAGS) -o $@ $(LINK_IN) -pthread

$(BUILD)/tests/%: tests/unit/%.c $(HOST_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -D_GNU_SOURCE -Iruntime -Isrc -o $@ $(LINK_IN) $(LDFLAGS_ALL) $(HOST_LIBS)

# The helper programs the end-to-end tests drive (tests/tools/, each with its
# usage at the top), built with this pass's compiler and flags, so the ASan
# pass runs them under ASan too. Tests take them from $CALLSIGHT_BUILD/tests/tools/.
TOOL_DIR  := $(BUILD)/tests/tools
TOOLS     := streamgen ringwriter attack hostile lockhog rateproxy mutate
TOOL_BIN  := $(TOOLS:%=$(TOOL_DIR)/%)
TOOL_LIBS_streamgen := -lzstd
TOOL_LIBS_attack    := -lzstd
$(TOOL_BIN): $(TOOL_DIR)/%: tests/tools/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) $(DEPFLAGS) -Iruntime -o $@ $< $(LDFLAGS_ALL) $(TOOL_LIBS_$*)
# An LD_PRELOAD shim goes into programs built with or without ASan, so it
# carries no sanitizer runtime of its own.
$(TOOL_DIR)/slowwrite.so: tests/tools/slowwrite.c
	@mkdir -p $(@D)
	$(CC) $(STRICT) $(OPT) -g $(DEPFLAGS) -shared -fPIC -o $@ $< -ldl
# Traced workloads with known shapes (tests/recorder/, snapshot_victim.c),
# instrumented and linked with the runtime as the examples are; libloop
# finds libw.so (tests/modules/) beside itself.
TRACED    := slowcall wrap16 ctl_phases snapshot_victim libloop
TRACED_BIN := $(TRACED:%=$(TOOL_DIR)/%)
TRACED_O  := -finstrument-functions -g -O1 -Wall -Wextra -Iruntime $(SANFLAGS)
$(TOOL_DIR)/slowcall $(TOOL_DIR)/wrap16 $(TOOL_DIR)/ctl_phases: $(TOOL_DIR)/%: tests/recorder/%.c $(BUILD)/runtime/trace.o
	@mkdir -p $(@D)
	$(CC) $(TRACED_O) $(DEPFLAGS) -o $@ $(LINK_IN) -pthread
$(TOOL_DIR)/snapshot_victim: tests/tools/snapshot_victim.c $(BUILD)/runtime/trace.o
	@mkdir -p $(@D)
	$(CC) $(TRACED_O) $(DEPFLAGS) -o $@ $(LINK_IN) -pthread
$(TOOL_DIR)/libw.so: tests/modules/libw.c
	@mkdir -p $(@D)
	$(CC) -O0 -g -fPIC -shared -finstrument-functions $(SANFLAGS) $(DEPFLAGS) -o $@ $<
$(TOOL_DIR)/libloop: tests/recorder/libloop.c $(BUILD)/runtime/trace.o $(TOOL_DIR)/libw.so
	@mkdir -p $(@D)
	$(CC) -O0 -g -finstrument-functions $(SANFLAGS) $(DEPFLAGS) -o $@ $< $(BUILD)/runtime/trace.o \
	    -L$(TOOL_DIR) -lw -Wl,-rpath,'$$ORIGIN' -pthread

# Everything the tests drive.
check-build: all deps-test $(EX_BIN) $(UNIT_BIN) $(TOOL_BIN) $(TOOL_DIR)/slowwrite.so $(TRACED_BIN)

# One pass of the suite against $(BUILD), PROVE_JOBS tests at a time: most
# of them wait on sockets, children and deadlines rather than compute, so
# two at once halve the wall time on two cores (PROVE_JOBS=1 for one at a
# time, as when a failure needs a quiet machine).  The floods of serve and
# analyze (serve/35x, analyze/238-239: hundreds of connections, memory
# bounds measured) run after the rest, one at a time and beside no other
# test, so that each finds the machine as its bounds assume (beside the
# browser tests, serve/351's stream once missed its place).
PROVE_JOBS ?= 2
FLOOD_T := $(filter tests/serve/35% tests/analyze/238-% tests/analyze/239-%,$(E2E_T))
check: check-build
	CALLSIGHT_BUILD=$(abspath $(BUILD)) prove -f -j$(PROVE_JOBS) $(filter-out $(FLOOD_T),$(E2E_T)) $(UNIT_BIN)
	CALLSIGHT_BUILD=$(abspath $(BUILD)) prove -f $(FLOOD_T)

asan-test:
	$(MAKE) check BUILD=$(BUILD)/asan SAN=1 OPT=-O1

test: deps
	$(MAKE) check
	$(MAKE) asan-test
	$(MAKE) fuzz-ci
	$(MAKE) tsan-test

# The suite must hold on a busy machine (a user compiling beside it):
# make test LOADED_RUNS times in a row while two `yes` compete for the CPUs.
LOADED_RUNS ?= 3
test-loaded: deps
	@scripts/test-loaded.sh $(BUILD) $(LOADED_RUNS)

demo: all $(BUILD)/examples/workload
	@scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD) traces

# The mutation runner (tests/tools/mutate.c, docs/testing.md): small
# mutants of runtime/, stream/ and src/, each built alone in a scratch copy
# and run against its area's tests (tests/mutate.map).  N mutants drawn
# by SEED: 300 by default, the issue's measure (hours; N=0: every one, days),
# CHANGED=1 (or BASE=rev) takes the lines changed against HEAD (or rev),
# FILES='src/select/*' one area, KEYS='FILE:LINE:COL:KIND ...' given
# mutants again, ASAN=1 the ASan build, RESUME=LOG the verdicts an earlier
# run of the same sample printed, taken as they are (a run in pieces).
# Niced: the machine is shared.
N              ?= 300
SEED           ?= 1
MUTATE_TIMEOUT ?= 300
.PHONY: mutate
mutate: $(TOOL_DIR)/mutate
	nice -n 10 $(TOOL_DIR)/mutate -n $(N) -s $(SEED) -t $(MUTATE_TIMEOUT) -j $(PROVE_JOBS) \
	    $(if $(BASE),-b '$(BASE)',$(if $(CHANGED),-b HEAD)) $(foreach f,$(FILES),-f '$(f)') \
	    $(foreach k,$(KEYS),-k '$(k)') $(if $(ASAN),-a) $(if $(ALL),-A) $(if $(RESUME),-r '$(RESUME)')

# Benchmarks (bench/README.md): `make bench`, or `make bench QUICK=1` for the
# under-a-minute run the test suite uses to keep the harness from rotting.
-include bench/bench.mk

# make install [PREFIX=/usr/local] [DESTDIR=]: the host tool, the device
# client (for this machine) and the man page.
PREFIX ?= /usr/local
.PHONY: install
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/callsight $(BUILD)/trace_stream $(DESTDIR)$(PREFIX)/bin/
	install -m 644 docs/callsight.1 $(DESTDIR)$(PREFIX)/share/man/man1/callsight.1

# Fuzzing (fuzz/fuzz.mk) and the TSan run over the ring (tests/tsan/tsan.mk).
-include fuzz/fuzz.mk
-include tests/tsan/tsan.mk

# The headers each object was built from (DEPFLAGS).
-include $(wildcard $(BUILD)/obj/*.o.d $(BUILD)/obj/*/*.o.d $(BUILD)/runtime/*.d $(BUILD)/*.d \
                    $(BUILD)/examples/*.d $(BUILD)/tests/*.d $(TOOL_DIR)/*.d $(BUILD)/tools/*.d \
                    $(BUILD)/bench/*.d $(BUILD)/tsan/*.d)
