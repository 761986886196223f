# callsight - build, test and demo.
#
#   make          build/callsight (host tool) and build/trace_stream (device client)
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

# src/ holds one folder per role (docs/architecture.md); sources include
# each other's headers as "folder/name.h" from src/.
HOST_SRC  := $(filter-out src/cmd/main.c,$(wildcard src/*/*.c))
HOST_HDR  := $(wildcard src/*/*.h)
HOST_OBJ  := $(HOST_SRC:src/%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/embedded_data.o
HOST_LIBS := -lncurses -ljansson -lzstd -lcrypto -ldebuginfod -ldw -lelf -ldl -lpthread -lm
UNIT_SRC  := $(wildcard tests/unit/*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
EXAMPLES  := workload workload-nopie forker tidreuse resident
EX_BIN    := $(EXAMPLES:%=$(BUILD)/examples/%)

.PHONY: all deps deps-test demo test test-loaded check check-build clean asan-test
all: deps $(BUILD)/callsight $(BUILD)/trace_stream

deps:
	@scripts/deps.sh check >/dev/null 2>&1 || scripts/deps.sh install
deps-test:
	@scripts/deps.sh check test >/dev/null 2>&1 || scripts/deps.sh install test

$(BUILD)/obj/%.o: src/%.c $(HOST_HDR) runtime/trace.h runtime/trace_shm.h runtime/trace_wire.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -D_GNU_SOURCE -Isrc -Iruntime -c $< -o $@

$(BUILD)/callsight: $(BUILD)/obj/cmd/main.o $(HOST_OBJ)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(HOST_LIBS)

$(BUILD)/trace_stream: stream/trace_stream.c runtime/trace.h runtime/trace_shm.h runtime/trace_wire.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Iruntime -o $@ $< $(LDFLAGS_ALL) -lzstd

# The files `callsight init` installs, built into callsight by tools/embed.c
# (src/cmd/embedded.h), so an installed callsight needs no source tree.
EMBEDDED := runtime/trace.c runtime/trace.h runtime/trace_shm.h runtime/trace_wire.h stream/trace_stream.c \
            wiring/callsight.mk wiring/callsight.cmake wiring/trace.config
$(BUILD)/tools/embed: tools/embed.c
	@mkdir -p $(@D)
	$(CC) $(STRICT) -O2 -o $@ $<
$(BUILD)/gen/embedded_data.c: $(BUILD)/tools/embed $(EMBEDDED)
	@mkdir -p $(@D)
	$(BUILD)/tools/embed $@ $(EMBEDDED)
$(BUILD)/obj/embedded_data.o: $(BUILD)/gen/embedded_data.c src/cmd/embedded.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Isrc -c $< -o $@

# The runtime is compiled without -finstrument-functions, always.
$(BUILD)/runtime/trace.o: runtime/trace.c runtime/trace.h runtime/trace_shm.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -Iruntime -c $< -o $@

# Workloads: instrumented, linked with the runtime.  -g so names resolve.
INSTR := -finstrument-functions -g -O2 -Wall -Wextra -Iruntime $(SANFLAGS)
$(BUILD)/examples/workload: examples/workload.c $(BUILD)/runtime/trace.o
	@mkdir -p $(@D)
	$(CC) $(INSTR) -fPIE -pie -o $@ $^ -pthread
$(BUILD)/examples/workload-nopie: examples/workload.c $(BUILD)/runtime/trace.o
	@mkdir -p $(@D)
	$(CC) $(INSTR) -fno-pie -no-pie -o $@ $^ -pthread
$(BUILD)/examples/%: examples/%.c $(BUILD)/runtime/trace.o
	@mkdir -p $(@D)
	$(CC) $(INSTR) -o $@ $^ -pthread

$(BUILD)/tests/%: tests/unit/%.c $(HOST_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_ALL) -D_GNU_SOURCE -Iruntime -Isrc -o $@ $^ $(LDFLAGS_ALL) $(HOST_LIBS)

# Everything the tests drive.
check-build: all deps-test $(EX_BIN) $(UNIT_BIN)

# One pass of the suite against $(BUILD).
check: check-build
	CALLSIGHT_BUILD=$(abspath $(BUILD)) prove -f tests/*.t $(UNIT_BIN)

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
