#!/usr/bin/env bash
# A cross-compiled device in file mode, end to end under qemu-user:
# s390x (64-bit big-endian: the runtime writes little-endian files).
# Built with Debian's s390x-linux-gnu toolchain, analyzed on the host with
# its addr2line; exact counts, every name resolved (tests/lib/cross_lib.sh).
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
source "$TESTS/lib/cross_lib.sh"
cross_file_mode cross-s390x s390x-linux-gnu s390x 0
exit $_failed
