#!/usr/bin/env bash
# 682-select-lines-together.t - trace.config's lines combined (issue 32):
# each kind is tested alone in 669 and 670; here an include-func's subtree
# meets an exclude of a file, of a folder and of a header (exclude wins:
# the subtree never switches on a function of an excluded file), include
# of a folder meets include-func and exclude-func FILE:NAME, two
# include-func lines add up, and an exclude glob wins inside an included
# folder; and a config of as many lines as it may have.  Each with the
# exact set of functions and their exact counts (examples/multidir/main.c's
# table, ROUNDS 100).
source "$(dirname "$0")/../lib/lib.sh"
plan 8

source "$TESTS/lib/multidir_project.sh"
multidir_project

traced inc_ex_file "include-func run 1
exclude src/net/a.c"
is "$(cat "$T/inc_ex_file.rows")" "clamp app.h 100
mix hash_mix.c 100
net_data data.c 100
run main.c 100
util_hash hash.c 203
util_hash_mix hash_mix.c 100" \
    "include-func run 1 + exclude src/net/a.c: run's subtree without net_a, whose file is excluded"

traced inc_ex_dir "include-func run
exclude src/util/*"
is "$(cat "$T/inc_ex_dir.rows")" "clamp app.h 100
helper a.c 100
helper data.c 200
net_a a.c 100
net_data data.c 100
run main.c 100" \
    "include-func run + exclude src/util/*: the whole subtree but util_hash, util_hash_mix and mix"

traced inc_ex_hdr "exclude include/app.h
include-func run 1"
is "$(cat "$T/inc_ex_hdr.rows")" "mix hash_mix.c 100
net_a a.c 100
net_data data.c 100
run main.c 100
util_hash hash.c 203
util_hash_mix hash_mix.c 100" \
    "exclude of a header, before an include-func: its inline clamp stays out of the subtree"

traced dir_func "include src/net/*
include-func run 0
exclude-func src/net/data.c:helper"
is "$(cat "$T/dir_func.rows")" "helper a.c 100
net_a a.c 100
net_data data.c 100
run main.c 100" \
    "include of a folder + include-func run 0 + exclude-func FILE:NAME: the folder, run alone, one helper out"

traced two_funcs "include-func net_a 1
include-func hash_selftest 1"
is "$(cat "$T/two_funcs.rows")" "hash_selftest hash_test.c 1
helper a.c 100
net_a a.c 100
util_hash hash.c 203" \
    "two include-func lines: both subtrees, util_hash counted from all its callers"

traced dir_glob "include src/util/*
exclude *_test.c"
is "$(cat "$T/dir_glob.rows")" "mix hash_mix.c 100
util_hash hash.c 203
util_hash_mix hash_mix.c 100" \
    "include src/util/* + exclude *_test.c: the glob wins inside the included folder"
# At the limit: 1023 excludes of files that do not exist and the
# include-func, 1024 lines (CONFIG_MAX_RULES); every rule is read, and no
# more (the ASan pass sees a read past them).
{ for i in $(seq 1 1023); do echo "exclude src/none/f$i.c"; done; echo "include-func run 1"; } > "$T/limit.config"
traced limit "$(cat "$T/limit.config")"
is "$(cat "$T/limit.rows")" "$RUN1_ROWS" "a trace.config of 1024 lines, its limit: the include-func at the end applied"
exit $_failed
