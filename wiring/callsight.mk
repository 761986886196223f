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
# `make instr` (or `make instrument`) builds app.instr, and when
# callsight/trace_stream.c is here (`callsight init --stream`) the device
# client callsight/trace_stream.
#
# Choosing what gets hooks: with a trace.config beside your Makefile (see
# `callsight init`, docs/selection.md), only the sources it selects are
# compiled with CALLSIGHT_INSTR; the others get no hooks at all.  Each
# object depends on its CALLSIGHT_OBJDIR/SOURCE.flags, which `callsight
# flags --write` rewrites only when that source's selection changes, so
# editing trace.config recompiles exactly the objects whose flags changed.
# This needs the callsight tool on the build host (CALLSIGHT).  A config
# that picks single functions (exclude-func, include-func) or names a header
# needs the call graph too: callsight compiles each source once more, with
# your CC, CPPFLAGS and CFLAGS plus -O0 -fcallgraph-info (GCC 10 or newer),
# into CALLSIGHT_OBJDIR/SOURCE.cg.ci, and again only when the source, a
# header it reads or those flags change.
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
#   CALLSIGHT_CONFIG   the selection (trace.config); without it every source is
#                      instrumented and the callsight tool is not needed
#   CALLSIGHT          the callsight tool (callsight, from PATH)

callsight_goal := $(.DEFAULT_GOAL)
CALLSIGHT_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
CALLSIGHT_OBJDIR ?= callsight-obj
CALLSIGHT_INSTR ?= -finstrument-functions -g
CALLSIGHT_RUNTIME_CFLAGS ?= -O2 -g
CALLSIGHT_LDLIBS ?= -pthread
CALLSIGHT_ZSTD ?= -lzstd
CALLSIGHT_CONFIG ?= trace.config
CALLSIGHT ?= callsight
callsight_runtime_o := $(CALLSIGHT_OBJDIR)/callsight-runtime/trace.o
callsight_stream := $(if $(wildcard $(CALLSIGHT_DIR)/trace_stream.c),$(CALLSIGHT_DIR)/trace_stream)
callsight_srcs := $(sort $(foreach p,$(CALLSIGHT_PROGRAMS),$($(p)_SRCS)))
# A source's name is the project's, not a script or an option: quoted for
# the shell in every command line, and ./ before one that starts with - or @
# (gcc would read @opts.c as more options).
callsight_q = '$(subst ','\'',$(1))'
callsight_src = $(call callsight_q,$(if $(filter -% @%,$(1)),./$(1),$(1)))
callsight_qsrcs := $(foreach s,$(callsight_srcs),$(call callsight_q,$(s)))

# The selection is brought up to date while this file is read, before any
# object is considered, and only when an instrumented goal is asked for.
ifneq ($(filter instr instrument %.instr,$(MAKECMDGOALS)),)
ifneq ($(wildcard $(CALLSIGHT_CONFIG)),)
ifeq ($(shell command -v $(CALLSIGHT) 2>/dev/null),)
$(error callsight: $(CALLSIGHT_CONFIG) needs the callsight tool on this build host, and '$(CALLSIGHT)' is not found: set CALLSIGHT=/path/to/callsight, or remove $(CALLSIGHT_CONFIG) to instrument every source)
endif
callsight_sel := $(shell $(CALLSIGHT) flags --config $(CALLSIGHT_CONFIG) --instr "$(CALLSIGHT_INSTR)" \
                   --graph-cc $(call callsight_q,$(CC) $(CPPFLAGS) $(CFLAGS)) \
                   --graph-cxx $(call callsight_q,$(CXX) $(CPPFLAGS) $(CXXFLAGS)) \
                   --write $(CALLSIGHT_OBJDIR) \
                   -- $(callsight_qsrcs) >&2 && echo ok)
ifneq ($(callsight_sel),ok)
$(error callsight: $(CALLSIGHT_CONFIG) could not be applied (the line above says why))
endif
else
callsight_sel := $(shell for s in $(callsight_qsrcs); do f=$(CALLSIGHT_OBJDIR)/$$s.flags; \
                   [ "$$(cat "$$f" 2>/dev/null)" = "$(CALLSIGHT_INSTR)" ] || \
                   { mkdir -p "$${f%/*}" && printf '%s\n' "$(CALLSIGHT_INSTR)" > "$$f"; }; done)
endif
endif

.PHONY: instr instrument callsight-clean
instr: $(CALLSIGHT_PROGRAMS:%=%.instr) $(callsight_stream)
instrument: instr

# callsight_program NAME: NAME.instr from NAME_SRCS.
define callsight_program
$(1).instr: $$(addsuffix .o,$$(basename $$($(1)_SRCS:%=$$(CALLSIGHT_OBJDIR)/%))) $$(callsight_runtime_o)
	$$(CC) $$(CFLAGS) $$(CALLSIGHT_INSTR) $$(LDFLAGS) -o $$(call callsight_q,$$@) $$(foreach f,$$^,$$(call callsight_q,$$(f))) $$($(1)_LDLIBS) $$(LDLIBS) $$(CALLSIGHT_LDLIBS)
endef
$(foreach p,$(CALLSIGHT_PROGRAMS),$(eval $(call callsight_program,$(p))))

# Each object's flags are those of its .flags file: the selection's.  The
# compiler lists the headers each object read (-MMD), so a header's edit
# recompiles the objects that include it.
$(CALLSIGHT_OBJDIR)/%.o: %.c $(CALLSIGHT_OBJDIR)/%.c.flags
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP $(shell cat $(call callsight_q,$(CALLSIGHT_OBJDIR)/$<.flags)) -c -o $(call callsight_q,$@) $(call callsight_src,$<)

$(CALLSIGHT_OBJDIR)/%.o: %.cpp $(CALLSIGHT_OBJDIR)/%.cpp.flags
	@mkdir -p $(@D)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -MMD -MP $(shell cat $(call callsight_q,$(CALLSIGHT_OBJDIR)/$<.flags)) -c -o $(call callsight_q,$@) $(call callsight_src,$<)

-include $(addsuffix .d,$(basename $(callsight_srcs:%=$(CALLSIGHT_OBJDIR)/%)))

$(CALLSIGHT_OBJDIR)/%.flags: ;

# The runtime must not be instrumented: its own flags, not your CFLAGS.
$(callsight_runtime_o): $(CALLSIGHT_DIR)/trace.c $(CALLSIGHT_DIR)/trace.h
	@mkdir -p $(@D)
	$(CC) $(CALLSIGHT_RUNTIME_CFLAGS) -c -o $@ $<

$(CALLSIGHT_DIR)/trace_stream: $(CALLSIGHT_DIR)/trace_stream.c $(CALLSIGHT_DIR)/trace.h
	$(CC) -O2 $(LDFLAGS) -o $@ $< $(CALLSIGHT_ZSTD)

callsight-clean:
	rm -rf $(CALLSIGHT_OBJDIR) $(CALLSIGHT_PROGRAMS:%=%.instr) $(callsight_stream)

.DEFAULT_GOAL := $(callsight_goal)
