#!/bin/sh
# deps.sh - make sure this Debian machine has what callsight's build, demo and
# tests need beyond gcc, make and git.
#
#   scripts/deps.sh check     exit 0 when nothing is missing, else list it
#   scripts/deps.sh install   install what is missing (apt-get as root;
#                             otherwise print the exact command and fail)
#
# The Makefile runs `install` only when `check` fails, so a machine that has
# everything never touches apt.
set -u

missing=""
need() { missing="$missing $1"; }

have_header() {
    printf '#include <%s>\nint main(void){return 0;}\n' "$1" |
        cc -x c - -o /dev/null "$2" >/dev/null 2>&1
}

check() {
    missing=""
    command -v cc >/dev/null 2>&1 || need gcc
    have_header zstd.h -lzstd || need libzstd-dev
    command -v addr2line >/dev/null 2>&1 || need binutils
    command -v prove >/dev/null 2>&1 || need perl
    [ -z "$missing" ]
}

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
    apt-get update -q && $cmd || exit 1
    check || { echo "deps.sh: still missing:$missing" >&2; exit 1; }
    ;;
*)
    echo "usage: scripts/deps.sh check|install" >&2
    exit 2
    ;;
esac
