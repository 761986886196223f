#!/usr/bin/perl
# archwalk.pl - checks docs/architecture.md's walk of one event against the
# tree: every function the walk names as `name()` must be defined in one of
# the files that the same section (### heading) of the walk names, so a
# function moved to another file or renamed makes the page fail here.
#
#   perl tests/tools/archwalk.pl ROOT [PAGE]
#
# Prints one line per name it cannot place, and per file path (with a /)
# the walk names that is not in the tree, and a last line "checked N
# functions in M files"; exits 1 if any was not found, 2 on a usage error.
# Paths are taken as written from ROOT, or from ROOT/src (the page's habit).
# tests/tree/001-layering.t runs it on the checkout and on planted copies.
use strict;
use warnings;

my $root = shift // do { print STDERR "usage: archwalk.pl ROOT [PAGE]\n"; exit 2 };
my $page = shift // "$root/docs/architecture.md";
open(my $fh, '<', $page) or do { print STDERR "archwalk: $page: $!\n"; exit 2 };
my @lines = <$fh>;
close $fh;

# The sections of the walk: from "## One event" up to the next "## ".
my (%files, %funcs, @order, $sec, $in, $missing);
for my $l (@lines) {
    if ($l =~ /^## /) { $in = ($l =~ /^## One event/) ? 1 : 0; $sec = 'intro'; next }
    next unless $in;
    if ($l =~ /^### (.*)/) { $sec = $1; next }
    while ($l =~ /`([^`\s]+)`/g) {
        my $t = $1;
        if ($t =~ /^([A-Za-z_][A-Za-z0-9_]*)\(\)$/) {
            push @{ $funcs{$sec} }, $1;
        } elsif ($t =~ m{^[\w./-]+\.[ch]$}) {
            my $p = -e "$root/$t" ? "$root/$t" : -e "$root/src/$t" ? "$root/src/$t" : undef;
            if (defined $p) { push @{ $files{$sec} }, $p }
            elsif ($t =~ m{/}) { print "$sec: $t is not in the tree\n"; $missing = 1 }
        }
    }
    push @order, $sec unless grep { $_ eq $sec } @order;
}

my %text;
sub slurp {
    my $p = shift;
    return $text{$p} //= do { local $/; open(my $f, '<', $p) or die "archwalk: $p: $!\n"; <$f> };
}

my ($bad, $n, %seen) = ($missing ? 1 : 0, 0);
for my $s (@order) {
    my @fs = @{ $files{$s} // [] };
    for my $fn (@{ $funcs{$s} // [] }) {
        $n++;
        # A definition: the name at a line's start after its type, its
        # parameters, then an opening brace (maybe on the next line).
        my $def = qr/^(?:[A-Za-z_][\w \t\*]*[\s\*])?\Q$fn\E\s*\([^;{]*\)\s*(?:\n\s*)?\{/m;
        next if grep { slurp($_) =~ $def } @fs;
        # A macro counts too (a hook the page names may be one).
        next if grep { slurp($_) =~ /^#\s*define\s+\Q$fn\E\b/m } @fs;
        print "$s: $fn() is defined in none of the files this section names\n";
        $bad = 1;
    }
    $seen{$_} = 1 for @fs;
}
printf "checked %d functions in %d files\n", $n, scalar keys %seen;
exit $bad;
