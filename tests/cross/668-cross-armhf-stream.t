#!/usr/bin/env bash
# Streaming from a cross-compiled armhf device (32-bit ARM, CLOCK_MONOTONIC),
# end to end on 127.0.0.1: the runtime, the workload and trace_stream built
# with -DTRACE_STREAM_NO_LIBZSTD (no libzstd for the target) by Debian's
# arm-linux-gnueabihf toolchain, all static, run under qemu-arm-static into
# the host's `callsight serve`; analyze with the target's addr2line: exact
# counts, every name resolved (tests/lib/cross_lib.sh).
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
source "$TESTS/lib/cross_lib.sh"
cross_stream_mode cross-armhf arm-linux-gnueabihf arm
exit $_failed
