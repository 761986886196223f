#!/usr/bin/perl
# layering.pl ROOT - check that the #include lines and command calls under
# ROOT (a checkout: src/, runtime/, stream/) keep the layering that
# docs/architecture.md states.  Prints one line per crossing, as
# "path:line: what", and exits 1 if there was any; prints nothing and exits
# 0 when the tree keeps the rules.  tests/01-layering.t runs it on the
# checkout and on scratch copies with planted crossings.
#
# The rules:
#   - runtime/ and stream/ are copied into users' projects: they include
#     runtime/'s own headers and the system's, nothing of the host tool.
#   - src/ holds folders only.  A file in src/F/ includes a header of its own
#     folder by its bare name, another folder's as "G/name.h", and only
#     from the folders F may use (%may below); runtime/'s headers (the
#     formats) by bare name, from every folder but lib/.
#   - <...> includes name system headers, never one of ours.
#   - Commands never call each other: a command file in src/cmd/ calls no
#     cmd_<other>(); only main.c dispatches.
use strict;
use warnings;

my $root = shift // '.';

# Who may include whom.  Outputs read the analysis, never the reverse; serve/
# writes what read/ reads and takes file names from it; lib/ stands alone.
my %may = (
    lib      => [],
    read     => [qw(lib)],
    analysis => [qw(lib read)],
    out      => [qw(lib read analysis)],
    serve    => [qw(lib read)],
    cmd      => [qw(lib read analysis out serve)],
);
my %runtime_ok = map { $_ => 1 } qw(read analysis out serve cmd);

my @bad;
sub bad { push @bad, "$_[0]:$_[1]: $_[2]" }

sub slurp_lines {
    my ($path) = @_;
    open my $fh, '<', "$root/$path" or die "layering.pl: cannot read $root/$path: $!\n";
    my @l = <$fh>;
    close $fh;
    return @l;
}

sub names_in {
    my ($dir) = @_;
    opendir my $dh, "$root/$dir" or return ();
    my @n = grep { !/^\./ } readdir $dh;
    closedir $dh;
    return sort @n;
}

my %runtime_hdr = map { $_ => 1 } grep { /\.h$/ } names_in('runtime');
my @folders = grep { -d "$root/src/$_" } names_in('src');
my %ours = map { $_ => 1 } @folders;

# Every #include of one file, checked by $judge->(name, quoted?) which
# returns an error or undef.
sub check_includes {
    my ($path, $judge) = @_;
    my $n = 0;
    for my $line (slurp_lines($path)) {
        $n++;
        next unless $line =~ /^\s*#\s*include\s*([<"])([^>"]+)[>"]/;
        my ($q, $name) = ($1 eq '"', $2);
        if (!$q) {
            my ($top) = $name =~ m{^([^/]+)/};
            bad($path, $n, "<$name> names one of our headers; use quotes")
                if ($top && $ours{$top}) || $runtime_hdr{$name};
            next;
        }
        my $why = $judge->($name);
        bad($path, $n, "includes \"$name\": $why") if defined $why;
    }
}

for my $dir (qw(runtime stream)) {
    for my $f (grep { /\.[ch]$/ } names_in($dir)) {
        check_includes("$dir/$f", sub {
            my ($name) = @_;
            return undef if $runtime_hdr{$name};
            return "$dir/ stands alone in users' projects: only runtime/'s own headers";
        });
    }
}

for my $f (grep { -f "$root/src/$_" } names_in('src')) {
    bad("src/$f", 0, "a file directly in src/: put it in the folder of its role");
}

for my $dir (@folders) {
    my %here = map { $_ => 1 } names_in("src/$dir");
    my $allowed = $may{$dir};
    if (!$allowed) {
        bad("src/$dir/$_", 0, "in a folder docs/architecture.md does not know (add it there and here)")
            for sort keys %here;
        next;
    }
    my %ok = map { $_ => 1 } @$allowed;
    for my $f (grep { /\.[ch]$/ } sort keys %here) {
        my $path = "src/$dir/$f";
        check_includes($path, sub {
            my ($name) = @_;
            return "no ../ paths; include from src/ as \"folder/name.h\"" if $name =~ m{\.\./};
            if ($name =~ m{^([^/]+)/([^/]+)$}) {
                my ($g, $h) = ($1, $2);
                return "that is this folder's own header: include it as \"$h\"" if $g eq $dir;
                return "no such header" unless -f "$root/src/$g/$h";
                return undef if $ok{$g};
                return "$dir/ may include " . (@$allowed ? join(', ', map { "$_/" } @$allowed) : 'nothing of src/')
                    . ", not $g/";
            }
            return "not a file of src/$dir/ or runtime/; another folder's header is \"folder/$name\""
                if $name =~ m{/} || !($here{$name} || $runtime_hdr{$name});
            return "$dir/ holds plain containers and needs no trace format"
                if !$here{$name} && !$runtime_ok{$dir};
            return undef;
        });
    }
}

# Commands never call each other.
if (-d "$root/src/cmd") {
    for my $f (grep { /\.c$/ && $_ ne 'main.c' } names_in('src/cmd')) {
        (my $own = $f) =~ s/\.c$//;
        my $n = 0;
        for my $line (slurp_lines("src/cmd/$f")) {
            $n++;
            while ($line =~ /\bcmd_(\w+)\s*\(/g) {
                bad("src/cmd/$f", $n, "calls cmd_$1(): commands never call each other") if $1 ne $own;
            }
        }
    }
}

print "$_\n" for @bad;
exit(@bad ? 1 : 0);
