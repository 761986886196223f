#!/usr/bin/perl
# rawstats.pl - exact per-function statistics computed straight from trace
# files, independently of callsight's reader, for checking its percentiles.
#
#   rawstats.pl EXE FILE...    prints "name calls p50_ns p99_ns max_ns" rows
#
# It follows FORMATS.md on its own: 80-byte (header_size) header, 32-byte
# little-endian records, ticks converted with the header's calibration,
# enter/exit matched per tid, the tracer's own time (marker 29: ns in
# the payload) taken out of every call open on its thread when it happened,
# nearest-rank order statistics.  Names come from
# `nm` on EXE with the header's load_bias.  Uses only core Perl.
use strict;
use warnings;

my ($exe, @files) = @ARGV;
die "usage: rawstats.pl EXE FILE...\n" unless $exe && @files;

my %sym;
open(my $nm, '-|', 'nm', '--defined-only', $exe) or die "nm: $!\n";
while (<$nm>) {
    $sym{hex $1} = $3 if /^([0-9a-f]+) ([tTwW]) (\S+)$/;
}
close $nm;

my (%durs, %stack, %anchor, %tracer);

# Per FORMATS.md an exit clock anchor (marker 6: ts = ticks, payload = ns)
# sets the rate across the start and exit anchors; find it first.
for my $f (@files) {
    my $data = slurp($f);
    my ($hsz, $pid) = (unpack("x16 V", $data), unpack("x64 V", $data));
    for (my $o = $hsz; $o + 32 <= length $data; $o += 32) {
        my ($ts, $func, $site, $tid, $kind) = unpack("Q< Q< Q< V C", substr($data, $o, 32));
        $anchor{$pid} = [$ts, $site] if $kind == 2 && $func == 6;
    }
}

sub slurp { open(my $fh, "<:raw", $_[0]) or die "$_[0]: $!\n"; local $/; my $d = <$fh>; close $fh; $d }
# Files of one thread must be read in seq order: sort by pid, tid, seq.
my @sorted = sort {
    my @x = $a =~ /trace\.(\d+)\.(\d+)\.(\d+)\.bin$/;
    my @y = $b =~ /trace\.(\d+)\.(\d+)\.(\d+)\.bin$/;
    $x[0] <=> $y[0] || $x[1] <=> $y[1] || $x[2] <=> $y[2]
} @files;
for my $f (@sorted) {
    my $data = slurp($f);
    my ($magic, $ver, $esz, $hsz, $flags, $bias, $hz, $t0t, $t0n, $hook, $pid) =
        unpack("a8 V V V V Q< Q< Q< Q< Q< V", $data);
    my $anc = $anchor{$pid};
    my $ns_per_tick = !$hz ? 1 : $anc ? ($anc->[1] - $t0n) / ($anc->[0] - $t0t) : 1e9 / $hz;
    die "$f: not a trace file\n" unless $magic eq "MLTRACE\0" && $esz == 32;
    my $n = int((length($data) - $hsz) / 32);
    for my $i (0 .. $n - 1) {
        my ($ts, $func, $site, $tid, $kind) =
            unpack('Q< Q< Q< V C', substr($data, $hsz + 32 * $i, 32));
        my $ns = $hz ? $t0n + ($ts - $t0t) * $ns_per_tick : $ts;
        my $key = "$tid";
        my $excl = $tracer{$key} // 0;
        if ($kind == 0) {
            push @{ $stack{$key} }, [$func - $bias, $ns, $excl];
        } elsif ($kind == 1) {
            my $top = pop @{ $stack{$key} } or next;
            my $d = $ns - $top->[1] - ($excl - $top->[2]);
            push @{ $durs{$top->[0]} }, $d > 0 ? $d : 0;
        } elsif ($kind == 2 && $func == 29) {
            $tracer{$key} = $excl + $site;
        } elsif ($kind == 2 && $func == 20) {
            delete $stack{$key};    # thread exit
        }
    }
}

for my $addr (sort keys %durs) {
    my @d = sort { $a <=> $b } @{ $durs{$addr} };
    my $rank = sub { my $k = int(($_[0] * @d + 99) / 100); $k = 1 if $k < 1; $d[$k - 1] };
    printf "%s %d %.0f %.0f %.0f\n", $sym{$addr} // sprintf('0x%x', $addr),
        scalar @d, $rank->(50), $rank->(99), $d[-1];
}
