# callsight.mk - the instrumented profile of this project, for GNU make.
#
# Written by `callsight init`.  Your normal build is untouched and keeps zero
# hooks; this adds NAME.instr twins of your programs: your sources compiled
# with -finstrument-functions -g, linked with callsight's runtime (trace.c,
# compiled without instrumentation) and -pthread.  In your Makefile, before
# this include and after your own variables:
#
#     CALLSIGHT_PROGRAMS := app          # the programs to instrument
#     app_SRCS := main.c util.c          # each one's C (or C++) sources
#     app_LDLIBS := -lm                  # (optional) its libraries
#     include callsight/callsight.mk
#
# `make instr` builds app.instr, and when callsight/trace_stream.c is here
# (`callsight init --stream`) the device client callsight/trace_stream.
# `make callsight-clean` removes what this file built.  Sources are
# compiled with your CC, CPPFLAGS and CFLAGS, so cross-compiling is
# `make instr CC=aarch64-linux-gnu-gcc`.  Including this file does not
# change your default goal.
#
# Settings (set them before the include to change them):
#   CALLSIGHT_OBJDIR   where instrumented objects go (callsight-obj)
#   CALLSIGHT_INSTR    flags added to your sources (-finstrument-functions -g)
#   CALLSIGHT_RUNTIME_CFLAGS   flags for trace.c (-O2 -g)
#   CALLSIGHT_LDLIBS   what every .instr links (-pthread; glibc < 2.34: add -lrt)
#   CALLSIGHT_ZSTD     how trace_stream gets zstd (-lzstd; -DTRACE_STREAM_NO_LIBZSTD:
#                      none, frames go uncompressed)

callsight_goal := $(.DEFAULT_GOAL)
CALLSIGHT_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
CALLSIGHT_OBJDIR ?= callsight-obj
CALLSIGHT_INSTR ?= -finstrument-functions -g
CALLSIGHT_RUNTIME_CFLAGS ?= -O2 -g
CALLSIGHT_LDLIBS ?= -pthread
CALLSIGHT_ZSTD ?= -lzstd
callsight_runtime_o := $(CALLSIGHT_OBJDIR)/callsight-runtime/trace.o
callsight_stream := $(if $(wildcard $(CALLSIGHT_DIR)/trace_stream.c),$(CALLSIGHT_DIR)/trace_stream)

.PHONY: instr callsight-clean
instr: $(CALLSIGHT_PROGRAMS:%=%.instr) $(callsight_stream)

# callsight_program NAME: NAME.instr from NAME_SRCS.
define callsight_program
$(1).instr: $$(addsuffix .o,$$(basename $$($(1)_SRCS:%=$$(CALLSIGHT_OBJDIR)/%))) $$(callsight_runtime_o)
	$$(CC) $$(CFLAGS) $$(CALLSIGHT_INSTR) $$(LDFLAGS) -o $$@ $$^ $$($(1)_LDLIBS) $$(LDLIBS) $$(CALLSIGHT_LDLIBS)
endef
$(foreach p,$(CALLSIGHT_PROGRAMS),$(eval $(call callsight_program,$(p))))

$(CALLSIGHT_OBJDIR)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(CALLSIGHT_INSTR) -c -o $@ $<

$(CALLSIGHT_OBJDIR)/%.o: %.cpp
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(CALLSIGHT_INSTR) -c -o $@ $<

# The runtime must not be instrumented: its own flags, not your CFLAGS.
$(callsight_runtime_o): $(CALLSIGHT_DIR)/trace.c $(CALLSIGHT_DIR)/trace.h $(CALLSIGHT_DIR)/trace_shm.h
	@mkdir -p $(@D)
	$(CC) $(CALLSIGHT_RUNTIME_CFLAGS) -c -o $@ $<

$(CALLSIGHT_DIR)/trace_stream: $(CALLSIGHT_DIR)/trace_stream.c $(CALLSIGHT_DIR)/trace.h $(CALLSIGHT_DIR)/trace_shm.h
	$(CC) -O2 $(LDFLAGS) -o $@ $< $(CALLSIGHT_ZSTD)

callsight-clean:
	rm -rf $(CALLSIGHT_OBJDIR) $(CALLSIGHT_PROGRAMS:%=%.instr) $(callsight_stream)

.DEFAULT_GOAL := $(callsight_goal)
