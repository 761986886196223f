#!/usr/bin/env bash
# 674-scan-escapes.t - a project's file names reach the terminal escaped
# (issue 29): a source named with ESC and a newline is listed by scan as
# e\x1b[31m\x0a..., one line, and forges no "  on   forged.c" row; where
# the call graph cannot be read for that name, the error on stderr is
# escaped as well.  Before, both were printed raw.
source "$(dirname "$0")/../lib/lib.sh"
plan 4

P=$T/p
mkdir -p "$P"
printf 'int evil(int x) { return x; }\n' > "$P/e"$'\e'"[31m"$'\n'"  on   forged.c"
printf 'int evil(int);\nint main(void) { return evil(0); }\n' > "$P/main.c"
ESC='e\x1b[31m\x0a  on   forged.c'
clean() { perl -e 'local $/; $_ = <STDIN>; exit(!utf8::decode($_) || /[\x00-\x08\x0b-\x1f\x7f-\x9f]/ ? 1 : 0)' < "$1"; }

(cd "$P" && "$CS" scan . > "$T/scan.out" 2> "$T/scan.err")
is "$? $(wc -l < "$T/scan.out") $(grep -c '^  on   forged.c' "$T/scan.out")" "0 3 0" \
    "scan: exit 0, a header and one line per source, no forged row"
clean "$T/scan.out"
is "$? $(grep -cF "  on   $ESC  no trace.config" "$T/scan.out")" "0 1" "the name escaped: \\x1b \\x0a, nothing raw"

# With an include-func scan and select read the call graph, written under
# that name; whatever they say about it says the name escaped.
printf 'include-func main\n' > "$P/trace.config"
(cd "$P" && "$CS" scan . > "$T/g.out" 2> "$T/g.err")
clean "$T/g.err" && clean "$T/g.out"
ok $? "scan with include-func: stdout and stderr hold no control byte"
(cd "$P" && "$CS" select . --function main > "$T/s.out" 2> "$T/s.err")
clean "$T/s.err" && clean "$T/s.out"
ok $? "select: stdout and stderr hold no control byte"
