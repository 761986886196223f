#!/usr/bin/perl
# layering.pl ROOT [FILE...] - check that the includes and command calls
# under ROOT (a checkout: src/, runtime/, stream/) keep the layering that
# docs/architecture.md states.  Prints one line per crossing, as
# "path:line: what" (line 0 when the compiler found it, not a line of the
# file), and exits 1 if there was any; prints nothing and exits 0 when the
# tree keeps the rules.  FILEs (relative to ROOT) limit the per-file checks
# to them; the tree-wide ones always run.  tests/tree/001-layering.t runs it on
# the checkout and on scratch copies with planted crossings.
#
# Two views of each file, so that neither a spelling the compiler accepts
# nor a style slip gets through:
#   - the preprocessor's (cc -MM -MG): every header a file pulls in, however
#     the #include was written (macros, comments, line splices, digraphs,
#     <../src/...>, symlinks, other files included), must be one its layer
#     may use.  Layers are ordered, so checking what a file pulls in at
#     any depth checks its direct includes too.
#   - the lines': a header of the file's own folder by its bare name,
#     another folder's as "G/name.h", no ../, and none of ours in <>.
# And with cc -E: no cmd_<name> outside main.c but a command's own.
#
# The rules:
#   - runtime/ and stream/ are copied into users' projects: they include
#     their own folder's files (a unity file's parts), runtime/'s own
#     headers and the system's, nothing of the host tool.
#     The runtime speaks only the ring: nothing else of runtime/ pulls in
#     trace_wire.h (the TCP wire, trace_stream's and serve's).
#   - src/ holds folders of .c and .h files only, each folder one of %may:
#     a file in src/F/ may include its own folder and those %may lists, and
#     the formats (runtime/'s headers) from every folder but lib/.
#   - Commands never call each other: a command file in src/cmd/ names no
#     cmd_<other>, nothing outside src/cmd/ names any; only main.c
#     dispatches.
use strict;
use warnings;
use Cwd qw(realpath);

my ($root, @only) = @ARGV;
$root //= '.';
$root = realpath($root) or die "layering.pl: no such directory\n";
my $cc = $ENV{CC} || 'cc';

# Who may include whom.  Outputs read the analysis, never the reverse; serve/
# writes what read/ reads, and needs nothing of it (its own file names and
# resume search are serve's); lib/ stands alone.
my %may = (
    lib      => [],
    read     => [qw(lib)],
    analysis => [qw(lib read)],
    out      => [qw(lib read analysis)],
    serve    => [qw(lib)],
    select   => [qw(lib)],
    ui       => [qw(lib)],
    cmd      => [qw(lib read analysis out serve select ui)],
);
my %runtime_ok = map { $_ => 1 } qw(read analysis out serve cmd);  # the formats; not lib/, select/

my @bad;
sub bad { push @bad, "$_[0]:$_[1]: $_[2]" }

sub slurp {
    my ($path) = @_;
    open my $fh, '<', "$root/$path" or die "layering.pl: cannot read $root/$path: $!\n";
    local $/;
    my $s = <$fh>;
    close $fh;
    return $s;
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

# The layer a path (relative to the root) is in: a src/ folder's name,
# "runtime", "stream", or undef outside all three.
sub layer_of {
    my ($rel) = @_;
    return $1 if $rel =~ m{^src/([^/]+)/};
    return $1 if $rel =~ m{^(runtime|stream)/};
    return undef;
}

# What a file of layer $from may pull in: a hash of layers.
sub allowed_layers {
    my ($from) = @_;
    return { runtime => 1 } if $from eq 'runtime';
    return { runtime => 1, stream => 1 } if $from eq 'stream';
    my %ok = map { $_ => 1 } ($from, @{ $may{$from} });
    $ok{runtime} = 1 if $runtime_ok{$from};
    return \%ok;
}

# ---- tree-wide: what may sit where ----
for my $dir ('src', 'runtime', 'stream', map { "src/$_" } @folders) {
    for my $n (names_in($dir)) {
        my $p = "$dir/$n";
        if (-l "$root/$p") {
            bad($p, 0, "a symlink: put the file itself where it belongs");
        } elsif ($p eq 'src/ui/web' && -d "$root/$p") {
            # callsight ui's pages: HTML, CSS and ES modules, embedded at build time
            bad("$p/$_", 0, "only .html, .css and .js files here") for grep { !/\.(html|css|js)$/ } names_in($p);
        } elsif ($dir eq 'src' && -f "$root/$p") {
            bad($p, 0, "a file directly in src/: put it in the folder of its role");
        } elsif ($dir ne 'src' && $n !~ /\.[ch]$/) {
            bad($p, 0, "only .c and .h files here (an included file of another kind hides its includes)");
        }
    }
}
for my $dir (grep { !$may{$_} } @folders) {
    bad("src/$dir/$_", 0, "in a folder docs/architecture.md does not know (add it there and here)")
        for names_in("src/$dir");
}

# ---- the files to check ----
my @files;
for my $dir ('runtime', 'stream', map { "src/$_" } grep { $may{$_} } @folders) {
    push @files, map { "$dir/$_" } grep { /\.[ch]$/ && !-l "$root/$dir/$_" } names_in($dir);
}
if (@only) {
    my %want = map { $_ => 1 } @only;
    @files = grep { $want{$_} } @files;
}

# The lines' view.
sub check_lines {
    my ($path, $layer) = @_;
    my ($dir) = $path =~ m{^(.*)/[^/]+$};
    my $n = 0;
    for my $line (split /\n/, slurp($path)) {
        $n++;
        next unless $line =~ /^\s*#\s*include\s*([<"])([^>"]+)[>"]/;
        my ($q, $name) = ($1 eq '"', $2);
        if (!$q) {
            my ($top) = $name =~ m{^([^/]+)/};
            bad($path, $n, "<$name> names one of our headers; use quotes")
                if ($top && ($ours{$top} || $top eq '.' || $top eq '..')) || $runtime_hdr{$name};
            next;
        }
        my $why;
        if ($layer eq 'runtime' || $layer eq 'stream') {
            # its own parts and private header by their bare names (the
            # build flattens them into one file), and runtime/'s headers
            $why = "$layer/ stands alone in users' projects: only its own files and runtime/'s headers"
                unless $runtime_hdr{$name} || ($name !~ m{/} && -f "$root/$dir/$name");
        } elsif ($name =~ m{\.\./}) {
            $why = "no ../ paths; include from src/ as \"folder/name.h\"";
        } elsif ($name =~ m{^([^/]+)/([^/]+)$}) {
            my ($g, $h) = ($1, $2);
            my $allowed = $may{$layer};
            if ($g eq $layer) {
                $why = "that is this folder's own header: include it as \"$h\"";
            } elsif (!-f "$root/src/$g/$h") {
                $why = "no such header";
            } elsif (!grep { $_ eq $g } @$allowed) {
                $why = "$layer/ may include " . (@$allowed ? join(', ', map { "$_/" } @$allowed) : 'nothing of src/')
                    . ", not $g/";
            }
        } elsif ($name =~ m{/} || !(-f "$root/$dir/$name" || $runtime_hdr{$name})) {
            $why = "not a file of $dir/ or runtime/; another folder's header is \"folder/$name\"";
        } elsif (!-f "$root/$dir/$name" && !$runtime_ok{$layer}) {
            $why = "$layer/ needs no trace format";
        }
        bad($path, $n, "includes \"$name\": $why") if defined $why;
    }
}

# Runs cc with -D_GNU_SOURCE -Isrc -Iruntime (as the Makefile builds) on
# one file from the root; its standard output, or undef with the reason.
sub run_cc {
    my ($path, @args) = @_;
    my $pid = open(my $fh, '-|') // die "layering.pl: fork: $!\n";
    if (!$pid) {
        chdir $root or exit 127;
        open STDERR, '>', '/dev/null';
        exec $cc, @args, '-x', 'c', '-std=c11', '-D_GNU_SOURCE', '-Isrc', '-Iruntime', $path;
        exit 127;
    }
    local $/;
    my $out = <$fh> // '';
    close $fh;
    return $? == 0 ? $out : undef;
}

# The preprocessor's view: everything the file pulls in.
sub check_deps {
    my ($path, $layer) = @_;
    my $out = run_cc($path, '-MM', '-MG');
    if (!defined $out) {
        bad($path, 0, "$cc -MM could not read its includes");
        return;
    }
    $out =~ s/\\\n/ /g;
    $out =~ s/^[^:]*://;
    my $ok = allowed_layers($layer);
    my %seen;
    for my $dep (split ' ', $out) {
        my $real = realpath("$root/$dep") // next; # -MG: missing, the lines' view says so
        next if $seen{$real}++ || $real eq "$root/$path";
        next unless index($real, "$root/") == 0;
        my $rel = substr($real, length($root) + 1);
        my $to = layer_of($rel);
        if ($layer eq 'runtime' && $rel eq 'runtime/trace_wire.h' && $path ne $rel) {
            bad($path, 0, "pulls in $rel: the runtime speaks only the ring; the wire is trace_stream's and serve's");
            next;
        }
        next if defined $to && $ok->{$to} && $rel !~ m{^src/[^/]+/[^/]+/};
        my $what = defined $to ? "$to/" : "a file outside src/, runtime/ and stream/";
        my $rule = $layer eq 'runtime' || $layer eq 'stream'
            ? "$layer/ stands alone in users' projects"
            : "$layer/ may include " . join(', ', map { "$_/" } sort grep { $_ ne $layer } keys %$ok);
        bad($path, 0, "pulls in $rel ($what): $rule");
    }
}

# cc -E's view of a .c file of src/: the names cmd_<x> in its own lines.
sub check_cmd_names {
    my ($path, $layer) = @_;
    return if $path eq 'src/cmd/main.c';
    my $out = run_cc($path, '-E') // return; # check_deps has said it cannot be read
    my ($own) = $layer eq 'cmd' ? $path =~ m{/([^/]+)\.c$} : ('');
    my $in_file = 1;
    my %said;
    for my $line (split /\n/, $out) {
        if ($line =~ /^# \d+ "([^"]*)"/) {
            $in_file = $1 eq $path;
            next;
        }
        next unless $in_file;
        while ($line =~ /\bcmd_(\w+)/g) {
            next if $1 eq $own || $said{$1}++;
            bad($path, 0, $layer eq 'cmd' ? "names cmd_$1: commands never call each other"
                                          : "names cmd_$1: only main.c dispatches to commands");
        }
    }
}

for my $path (@files) {
    my $layer = layer_of($path);
    check_lines($path, $layer);
    check_deps($path, $layer);
    check_cmd_names($path, $layer) if $path =~ /^src\/.*\.c$/;
}

print "$_\n" for @bad;
exit(@bad ? 1 : 0);
