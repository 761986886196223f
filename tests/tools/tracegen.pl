#!/usr/bin/perl
# tracegen.pl - test helper: write a synthetic callsight trace file from a
# line-per-record spec on stdin.
#
#   tracegen.pl OUT < spec
#
#   H key=value ...          the 80-byte header (magic version esize hsize
#                            flags bias hz t0t t0n hook pid seq); flags bit
#                            0x4 makes the rest of the file big-endian
#   E TS FUNC TID [SITE]     enter (SITE: the call site, default 0)
#   X TS FUNC TID            exit
#   M TS CODE PAYLOAD TID    marker
#   N TID NAME               thread-name marker (TRACE_MARK_THREAD_NAME, 21):
#                            name bytes 0-7 in call_site, 8-15 in ts, each
#                            packed little-endian as a number
#   D TS FUNC SITE TID PART [N]
#                            a module-list record (TRACE_KIND_MODULE, 5):
#                            PART in pad[0], N (default 0) in pad[1], the
#                            fields as trace.h's "loaded modules" gives them
#   RAW N                    N zero bytes (a partial record, say)
# Numbers may be decimal or 0x-hex.
use strict;
use warnings;
no warnings 'portable';

my $out = shift or die "usage: tracegen.pl OUT < spec\n";
open(my $o, '>:raw', $out) or die "tracegen: $out: $!\n";
my $L = '<';
sub num { my $v = shift; $v =~ /^0x/i ? hex($v) : $v }
sub rec { my ($ts, $fn, $site, $tid, $kind) = @_;
          print $o pack("Q$L Q$L Q$L L$L C x3", $ts, $fn, $site, $tid, $kind) }

while (<STDIN>) {
    my @f = split;
    next unless @f;
    if ($f[0] eq 'H') {
        my %h = (magic => "MLTRACE", version => 2, esize => 32, hsize => 80, flags => 0,
                 bias => 0, hz => 0, t0t => 0, t0n => 0, hook => 0, pid => 1, seq => 0);
        for (@f[1..$#f]) { my ($k, $v) = split /=/; $h{$k} = $k eq 'magic' ? $v : num($v) }
        $L = ($h{flags} & 4) ? '>' : '<';
        print $o pack("a8 L$L L$L L$L L$L Q$L Q$L Q$L Q$L Q$L L$L L$L Q$L", $h{magic},
            $h{version}, $h{esize}, $h{hsize}, $h{flags}, $h{bias}, $h{hz}, $h{t0t}, $h{t0n},
            $h{hook}, $h{pid}, $h{seq}, 0);
        print $o "\xee" x ($h{hsize} - 80) if $h{hsize} > 80;
    } elsif ($f[0] eq 'E') {
        rec(num($f[1]), num($f[2]), num($f[4] // 0), $f[3], 0);
    } elsif ($f[0] eq 'X') {
        rec(num($f[1]), num($f[2]), 0, $f[3], 1);
    } elsif ($f[0] eq 'M') {
        rec(num($f[1]), num($f[2]), num($f[3]), $f[4], 2);
    } elsif ($f[0] eq 'N') {
        my (undef, $tid, @name) = @f;
        my ($lo, $hi) = unpack("Q< Q<", substr(join(' ', @name) . "\0" x 16, 0, 16));
        rec($hi, 21, $lo, $tid, 2);
    } elsif ($f[0] eq 'D') {
        print $o pack("Q$L Q$L Q$L L$L C C C x", num($f[1]), num($f[2]), num($f[3]), $f[4], 5, $f[5], $f[6] // 0);
    } elsif ($f[0] eq 'RAW') {
        print $o "\0" x $f[1];
    } else {
        die "tracegen: bad line: $_";
    }
}
close $o or die "tracegen: $out: $!\n";
