#!/usr/bin/perl
# tracecheck.pl - test helper: read trace.stream files and check the events
# streamgen/ringwriter generate (event i: ts = 1000 + 10 i, func = 0x401000 +
# (i % 13) * 0x40, call_site = 0x500000 + i, tid = 7 + i % 5, kind = i % 2).
#
#   tracecheck.pl [--first I] [--ids] FILE...   files of one connection, in seq order
#
# Prints one "header ..." line per file, then one summary line:
#   events=N mismatched=M markers=CODE:PAYLOAD,... tail=B
# events counts enter/exit records, which must be events I, I+1, ... in order
# (mismatched counts those that are not); markers lists the kind-2 records;
# tail counts bytes after the last whole record (0 for a valid file).
# The stream-id marker serve starts a resumable stream's series with (code
# 25, tid 0, a random payload) and the key-hash marker after it (code 36)
# are left out, unless --ids lists them as "25" and "36".
use strict;
use warnings;

my ($i, $ids) = (0, 0);
while (@ARGV && $ARGV[0] =~ /^--(first|ids)$/) {
    shift;
    if ($1 eq 'first') { $i = shift; } else { $ids = 1; }
}
my ($events, $bad, $tail, @markers) = (0, 0, 0);
for my $file (@ARGV) {
    open(my $fh, '<:raw', $file) or die "tracecheck: $file: $!\n";
    local $/;
    my $data = <$fh>;
    close $fh;
    die "tracecheck: $file: shorter than a header\n" if length($data) < 80;
    my ($magic, $ver, $esz, $hsz, $flags, $bias, $hz, $t0t, $t0n, $hook, $pid, $seq, $res) =
        unpack("a8 L< L< L< L< Q< Q< Q< Q< Q< L< L< Q<", $data);
    $magic =~ s/\0+$//;
    print "header magic=$magic version=$ver event_size=$esz header_size=$hsz flags=$flags ",
        "load_bias=$bias tick_hz=$hz t0_ticks=$t0t t0_ns=$t0n hook_ns=$hook pid=$pid seq=$seq ",
        "reserved=$res\n";
    my $n = int((length($data) - $hsz) / 32);
    $tail += (length($data) - $hsz) % 32;
    for my $k (0 .. $n - 1) {
        my ($ts, $func, $site, $tid, $kind, $pad) =
            unpack("Q< Q< Q< L< C a3", substr($data, $hsz + 32 * $k, 32));
        if ($kind == 2 && ($func == 25 || $func == 36) && $tid == 0) {
            push @markers, "$func" if $ids;
            next;
        }
        if ($kind == 2) {
            push @markers, "$func:$site";
            next;
        }
        $events++;
        $bad++ unless $ts == 1000 + 10 * $i && $func == 0x401000 + ($i % 13) * 0x40
            && $site == 0x500000 + $i && $tid == 7 + $i % 5 && $kind == $i % 2
            && $pad eq "\0\0\0";
        $i++;
    }
}
print "events=$events mismatched=$bad markers=", join(',', @markers), " tail=$tail\n";
