#!/usr/bin/env bash
# A cross-compiled device in file mode, end to end under qemu-user:
# aarch64 (64-bit little-endian; the cntvct_el0 clock path).
# Built with Debian's aarch64-linux-gnu toolchain, analyzed on the host with
# its addr2line; exact counts, every name resolved (tests/lib/cross_lib.sh).
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
source "$TESTS/lib/cross_lib.sh"
cross_file_mode cross-aarch64 aarch64-linux-gnu aarch64 1
exit $_failed
