#!/bin/sh
# deps.sh - make sure this Debian machine has what callsight's build, demo and
# tests need beyond gcc, make and git.
#
#   scripts/deps.sh check     exit 0 when nothing is missing, else list it
#   scripts/deps.sh install   install what is missing (apt-get as root;
#                             otherwise print the exact command and fail)
#   scripts/deps.sh check test, install test
#                             the same, plus what make test needs (prove,
#                             python3, protoc, chromium, clang, tmux)
#   scripts/deps.sh check bench, install bench
#                             what `make demo` needs, plus what `make bench` alone needs
#                             (uftrace, the peer it is measured against, and the
#                             sqlite3 shell)
#   scripts/deps.sh install cmake|cross|cross-aarch64|cross-armhf|cross-s390x
#                             cmake, or cross gcc + binutils + qemu-user for
#                             the init and device tests (tests/init, tests/cross)
#   scripts/deps.sh install stream-aarch64   cross-aarch64 plus libzstd-dev:arm64
#                             (enables the arm64 architecture in dpkg)
#
# The Makefile runs `install` only when `check` fails, so a machine that has
# everything never touches apt.
set -u

missing=""
need() { missing="$missing $1"; }

have_header() {
    printf '#include <%s>\nint main(void){return 0;}\n' "$1" |
        cc -x c - -o /dev/null ${2:+"$2"} >/dev/null 2>&1
}

# cmake, cross-aarch64, cross-armhf, cross-s390x, cross (all three): what the
# init and device tests need (tests/init/, tests/cross/ install them on demand).
# cross_need TRIPLE DEBIAN-ARCH QEMU: a static-linking cross gcc, its
# binutils (addr2line) and qemu-user to run the result.
cross_need() {
    printf "int main(void){return 0;}\n" |
        "$1-gcc" -static -x c - -o /dev/null >/dev/null 2>&1 || need "gcc-$1 libc6-dev-$2-cross"
    command -v "$1-addr2line" >/dev/null 2>&1 || need "binutils-$1"
    command -v "qemu-$3-static" >/dev/null 2>&1 || need qemu-user-static
}
# cross_zstd TRIPLE DEBIAN-ARCH: the target's static libzstd (multiarch), for
# building trace_stream for it.
cross_zstd() {
    printf "#include <zstd.h>\nint main(void){return (int)ZSTD_versionNumber();}\n" |
        "$1-gcc" -static -x c - -o /dev/null -lzstd >/dev/null 2>&1 || need "libzstd-dev:$2"
}
check_cross() {
    case "$group" in cmake) command -v cmake >/dev/null 2>&1 || need cmake ;; esac
    case "$group" in cross-aarch64 | cross | stream-aarch64) cross_need aarch64-linux-gnu arm64 aarch64 ;; esac
    case "$group" in stream-aarch64) cross_zstd aarch64-linux-gnu arm64 ;; esac
    case "$group" in cross-armhf | cross) cross_need arm-linux-gnueabihf armhf arm ;; esac
    case "$group" in cross-s390x | cross) cross_need s390x-linux-gnu s390x s390x ;; esac
}

check() {
    missing=""
    command -v cc >/dev/null 2>&1 || need gcc
    # gcc only recommends the C library's headers and start files: a
    # machine without recommends (debootstrap --include=gcc) cannot link
    have_header stdio.h || need libc6-dev
    have_header zstd.h -lzstd || need libzstd-dev
    have_header jansson.h -ljansson || need libjansson-dev # diff reads reports with it
    # serve keeps a SHA-256 of each stream's resume key, never the key (libcrypto)
    have_header openssl/evp.h -lcrypto || need libssl-dev
    # analyze asks debuginfod servers for shared objects' debug files
    have_header elfutils/debuginfod.h -ldebuginfod || need libdebuginfod-dev
    # and names functions with libdw (elfutils), for any target's ELF
    have_header elfutils/libdwfl.h -ldw || need libdw-dev
    command -v addr2line >/dev/null 2>&1 || need binutils
    # top's full-screen view draws with ncurses
    have_header ncurses.h -lncurses || need libncurses-dev
    # analyze --format sqlite and callsight sql (docs/sql.md)
    have_header sqlite3.h -lsqlite3 || need libsqlite3-dev
    # callsight ui's web server (docs/ui.md)
    have_header microhttpd.h -lmicrohttpd || need libmicrohttpd-dev
    # make demo needs no more than the above; make test, make bench and
    # make fuzz need what follows
    if [ "$group" = test ]; then
        command -v prove >/dev/null 2>&1 || need perl
        command -v g++ >/dev/null 2>&1 || need g++ # C++ names in trace.config (tests/select/670)
        command -v pgrep >/dev/null 2>&1 || need procps # finding the processes tests signal (36, 50, 71)
        command -v tmux >/dev/null 2>&1 || need tmux # a real terminal for top's screen (tests/top/554)
        # libFuzzer for make fuzz / fuzz-ci: clang and its sanitizer runtimes
        printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; return (int)n * 0; }\n' |
            clang -fsanitize=fuzzer,address,undefined -x c - -o /dev/null >/dev/null 2>&1 ||
            need "clang libclang-rt-dev"
        # analyze's formats checked by independent readers in the tests:
        # JSON, XML and PNG (python3), Perfetto's protobuf (protoc), the
        # flame graph rendered by a browser (headless chromium)
        command -v python3 >/dev/null 2>&1 || need python3
        command -v protoc >/dev/null 2>&1 || need protobuf-compiler
        command -v chromium >/dev/null 2>&1 || need chromium
        # callsight ui's pages driven in headless chromium (tests/ui/)
        command -v chromedriver >/dev/null 2>&1 || need chromium-driver
        command -v curl >/dev/null 2>&1 || need curl
        # a local debuginfod server for the shared objects' test (tests/analyze/229)
        command -v debuginfod >/dev/null 2>&1 || need debuginfod
    fi
    if [ "$group" = bench ]; then
        command -v uftrace >/dev/null 2>&1 || need uftrace
        command -v sqlite3 >/dev/null 2>&1 || need sqlite3 # the .import the database build is measured against
    fi
    check_cross
    [ -z "$missing" ]
}

group=${2:-} # "" (build and demo), test, bench, or a device group
case "$group" in
"" | test | bench | cmake | cross | cross-aarch64 | cross-armhf | cross-s390x | stream-aarch64) ;;
*) echo "deps.sh: unknown group '$group' (known: test bench cmake cross cross-aarch64 cross-armhf cross-s390x stream-aarch64)" >&2; exit 2 ;;
esac

case "${1:-check}" in
check)
    if check; then exit 0; fi
    echo "missing Debian packages:$missing"
    exit 1
    ;;
install)
    check && exit 0
    cmd="apt-get install -y --no-install-recommends$missing"
    if [ "$(id -u)" != 0 ]; then
        echo "callsight needs:$missing" >&2
        echo "run as root:  apt-get update && $cmd" >&2
        exit 1
    fi
    echo "deps.sh: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    # a target library (libzstd-dev:arm64) needs its architecture enabled
    for a in $(echo "$missing" | tr " " "\n" | sed -n "s/.*://p" | sort -u); do
        dpkg --add-architecture "$a" || exit 1
    done
    apt-get update -q && $cmd || exit 1
    check || { echo "deps.sh: still missing:$missing" >&2; exit 1; }
    ;;
*)
    echo "usage: scripts/deps.sh check|install [test|bench|cmake|cross|cross-aarch64|cross-armhf|cross-s390x|stream-aarch64]" >&2
    exit 2
    ;;
esac
