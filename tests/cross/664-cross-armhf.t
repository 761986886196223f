#!/usr/bin/env bash
# A cross-compiled device in file mode, end to end under qemu-user:
# armhf (32-bit ARM; no trusted counter, CLOCK_MONOTONIC).
# Built with Debian's arm-linux-gnueabihf toolchain, analyzed on the host with
# its addr2line; exact counts, every name resolved (tests/lib/cross_lib.sh).
source "$(dirname "$0")/../lib/lib.sh"
source "$TESTS/lib/workload_expect.sh"
source "$TESTS/lib/cross_lib.sh"
cross_file_mode cross-armhf arm-linux-gnueabihf arm 0
exit $_failed
