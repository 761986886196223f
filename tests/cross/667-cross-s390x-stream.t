#!/usr/bin/env bash
# Streaming from a cross-compiled s390x device (64-bit big-endian), end to
# end on 127.0.0.1: the runtime, the workload and trace_stream built with
# -DTRACE_STREAM_NO_LIBZSTD (no libzstd for the target) by Debian's
# s390x-linux-gnu toolchain, all static, run under qemu-s390x-static into the
# host's `callsight serve`.  The ring is big-endian; the client converts, so
# the wire and the file are little-endian; analyze with the target's
# addr2line: exact counts, every name resolved (tests/lib/cross_lib.sh).
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
source "$TESTS/lib/cross_lib.sh"
cross_stream_mode cross-s390x s390x-linux-gnu s390x
exit $_failed
