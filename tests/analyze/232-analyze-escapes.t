#!/usr/bin/env bash
# 232-analyze-escapes.t - strings a device names reach no output raw (issue
# 29): a module whose path holds ESC, a newline, CR, DEL and the bytes 0xff
# 0xfe is shown as \x1b, \x0a ... in the text report, its notes, callers,
# folded, the Perfetto timeline's names and `callsight sql`'s output of the
# SQLite database; the SVG stays well-formed XML
# and the JSON parses, both valid UTF-8.  Before, the ESC sequence reached
# the terminal, the newline forged a "note: forged" line, and the SVG was
# not UTF-8.
source "$(dirname "$0")/../lib/lib.sh"
plan 18

cc -O2 -c -o "$T/trace.o" "$DIST/trace.c" -I"$DIST" || exit 1
cat > "$T/prog.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
static int spin(int i) { return i + 1; }
int main(int argc, char **argv)
{
    void *h = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
    int (*run)(int) = h ? (int (*)(int))dlsym(h, "plug_run") : NULL;
    if (!run) { fprintf(stderr, "prog: %s\n", dlerror()); return 1; }
    volatile int s = 0;
    for (int i = 0; i < 3000; i++) s += spin(i); /* a flush: the module list is written */
    s += run(3);
    for (int i = 0; i < 3000; i++) s += spin(i);
    return 0;
}
C
BAD="h"$'\e'"[31m"$'\n'"note: forged"$'\r'$'\x7f'$'\xff\xfe'".so"
ESC='h\x1b[31m\x0anote: forged\x0d\x7f\xff\xfe.so'
cc -O0 -g -finstrument-functions -o "$T/prog" "$T/prog.c" "$T/trace.o" -pthread -ldl &&
    cc -O0 -g -fPIC -shared -finstrument-functions -DPLUG=a -o "$T/$BAD" "$TESTS/modules/plug.c" &&
    TRACE_ENABLE=1 TRACE_DIR="$T/tr" "$T/prog" "$T/$BAD"
ok $? "a program that loads a module by a hostile name builds and runs traced"

# clean FILE: valid UTF-8, no control character but newline and tab (C0, DEL, C1).
clean() { perl -e 'local $/; $_ = <STDIN>; exit(!utf8::decode($_) || /[\x00-\x08\x0b-\x1f\x7f-\x9f]/ ? 1 : 0)' < "$1"; }
forged() { grep -c '^note: forged' "$1"; }
analyze() { timeout 20 "$CS" analyze "$T/tr" --exe "$T/prog" --top 0 "$@"; }

analyze > "$T/a.txt" 2> "$T/a.err"
is "$? $(forged "$T/a.txt")" "0 0" "the module's file there: exit 0, no forged line"
clean "$T/a.txt"
ok $? "the text report holds no control byte and is UTF-8"
is "$(grep -cF "plug_run [$ESC] (plug.c:" "$T/a.txt")" 1 "the module is shown escaped, as \\x1b \\x0a \\x0d \\x7f \\xff \\xfe"

# The module's file gone: its functions are named by offset, NAME+0x..., and a note names the path.
mv "$T/$BAD" "$T/gone.so"
analyze > "$T/b.txt" 2> "$T/b.err"
is "$? $(forged "$T/b.txt") $(wc -c < "$T/b.err")" "0 0 0" "the file gone: exit 0, no forged line, nothing on stderr"
clean "$T/b.txt"
ok $? "no control byte in the report or its notes"
is "$(grep -cF "  $ESC+0x" "$T/b.txt") $(grep -F "module $T/$ESC " "$T/b.txt" | grep -c '^note: pid ')" \
    "2 1" "both functions as $ESC+0x..., and the note names the path escaped"

analyze --format callers > "$T/c.txt" 2> "$T/c.err"
clean "$T/c.txt"
is "$? $(forged "$T/c.txt") $(grep -cF " -> $ESC+0x" "$T/c.txt")" "0 0 2" "callers: clean, no forged line, the callee escaped"

analyze --format folded > "$T/f.txt" 2> "$T/f.err"
clean "$T/f.txt"
is "$? $(grep -cv ' [0-9][0-9]*$' "$T/f.txt") $(grep -cF ";$ESC+0x" "$T/f.txt")" "0 0 2" \
    "folded: clean, every line a stack and a count (none forged), the frames escaped"

analyze --format svg > "$T/s.svg" 2> "$T/s.err"
clean "$T/s.svg"
ok $? "svg: valid UTF-8, no control byte"
if command -v xmllint > /dev/null; then
    xmllint --noout "$T/s.svg" 2> "$T/x.err"
    ok $? "svg: well-formed XML (xmllint)"
else
    perl -e 'local $/; $_ = <STDIN>; exit(/<[^>]*<|&(?!amp;|lt;|gt;|quot;|#)/ ? 1 : 0)' < "$T/s.svg"
    ok $? "svg: no bare < or & (no xmllint here)"
fi
is "$(grep -cF "$ESC+0x" "$T/s.svg" | grep -c '^[1-9]')" 1 "svg: the frames escaped"

analyze --format json > "$T/j.json" 2> "$T/j.err"
clean "$T/j.json"
ok $? "json: valid UTF-8, no control byte"
is "$(T=$T perl -MJSON::PP -e 'local $/; my $d = decode_json(<STDIN>);
      print scalar(grep { defined $_->{name} && index($_->{name}, "h\e[31m\nnote: forged\r\x7f\\xff\\xfe.so+0x") == 0 } @{$d->{functions}}), " ",
            scalar(grep { index($_, "module $ENV{T}/h\e[31m\nnote: forged\r\x7f\\xff\\xfe.so ") >= 0 && /is not named/ } @{$d->{notes}})' < "$T/j.json" 2>&1)" \
    "2 1" "json parses: the names keep every byte that is UTF-8 (\\u001b ...) and the others as \\\\xff"

# Perfetto: a binary format, so no clean(): the names are string fields
# that its UI shows as text, so they carry the escapes and no raw ESC
# sequence.
analyze --format perfetto -o "$T/t.pf" 2> "$T/t.err"
is "$? $(grep -caF "$ESC+0x" "$T/t.pf" | grep -c '^[1-9]')" "0 1" "perfetto: the frames' names escaped"
# (any byte may stand in a varint: the ESC sequence is what may not)
is "$(grep -caF "$BAD" "$T/t.pf") $(grep -caF $'\e[31m' "$T/t.pf")" "0 0" "perfetto: neither the raw path nor its ESC sequence"

# sqlite: the names are stored as text (valid UTF-8: \xff kept as the four
# characters \xff, the control bytes as they are), and callsight sql shows
# no control byte in any style: the table, CSV and JSON.
analyze --format sqlite -o "$T/d.db" 2> "$T/d.err"
for style in "" --csv --json; do
    "$CS" sql "$T/d.db" $style "SELECT name FROM function WHERE name LIKE 'h%'; SELECT text FROM notes" > "$T/q$style.txt"
done
clean "$T/q.txt" && clean "$T/q--csv.txt" && clean "$T/q--json.txt"
is "$? $(cat "$T/q.txt" "$T/q--csv.txt" | grep -c '^note: forged')" "0 0" "sqlite, sql: no control byte and no forged line in the table, CSV or JSON"
is "$(grep -cF "$ESC+0x" "$T/q.txt") $(grep -cF "$ESC+0x" "$T/q--csv.txt") $(grep -cF 'h\u001b[31m\u000anote: forged\u000d\u007f\\xff\\xfe.so+0x' "$T/q--json.txt")" \
    "2 2 2" "sql: both functions' names escaped for the terminal in the table and CSV, as JSON in JSON"
