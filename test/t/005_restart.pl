# Shared-memory counters survive a clean restart (written at shutdown, read
# at start; counters whose window ended meanwhile and that answer as no
# counter would are dropped, those that roll tokens over are kept: they hold
# more than a new key, and a denied call's retry time counts on them);
# fixed_window.save = off keeps nothing; a
# truncated, corrupt or other-version file is ignored with a LOG message
# (when the table is created: at start when the library is preloaded, at
# the first call otherwise);
# after a crash the server comes back with no counters.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $node = new_node('restart', conf => q{
fixed_window.max_counters = 1000
restart_after_crash = on
});

# Real clock: a day-long counter, its window starting now, stays live across
# the restarts, a one-microsecond one is over long before the server is back.
my $start = $node->safe_psql('postgres', 'SELECT now()');
$node->safe_psql('postgres', qq{
	SELECT fw_limit('keep', 'k', 10, '1 day', '$start', cost => 7);
	SELECT fw_limit('gone', 'k', 10, '1 microsecond');
	SELECT fw_limit('long', repeat('x', 2048), 10, '1 day', '$start', cost => 3);
	SELECT fw_limit('roll', 'k', 10, '1 microsecond', cost => 10, capacity => 50);
});

sub remaining
{
	my ($name, $key) = @_;
	return $node->safe_psql('postgres',
		"SELECT remaining FROM fw_check('$name', $key, 10, '1 day', '$start', cost => 0)");
}

$node->restart;
is(remaining('keep', "'k'"), '3', 'a live counter survives a clean restart');
is(remaining('long', "repeat('x', 2048)"), '7', 'with a 2 kB key too');
is($node->safe_psql('postgres', "SELECT count(*) FROM fw_counters WHERE name = 'gone'"),
	'0', 'an ended counter is not brought back');
# 'roll' emptied its window before the restart; windows have passed since,
# and it holds its capacity, 50, where a new key would hold the rate, 10
is( $node->safe_psql('postgres',
		"SELECT remaining FROM fw_check('roll', 'k', 10, '1 microsecond', cost => 0, capacity => 50)"),
	'50', 'an ended counter that rolls tokens over is brought back');
ok($node->log_contains(qr/fixed_window loaded 3 of 4 saved counters/), 'the load is logged');

# A corrupt file: ignored with a LOG message, the server starts.
$node->stop;
my $file = $node->data_dir . '/pg_stat/fixed_window.stat';
ok(-f $file, 'the counters were saved at shutdown');
open(my $fh, '+<', $file) or die "open $file: $!";
binmode $fh;
seek($fh, 20, 0);
print $fh "garbage";
close $fh;
my $log_offset = -s $node->logfile;
$node->start;
# (read when the table is created: at start when preloaded, else at the first call)
is(remaining('keep', "'k'"), '10', 'no counter is loaded from a corrupt file');
ok($node->log_contains(qr/ignoring file "pg_stat\/fixed_window.stat"\n.*DETAIL:  The file is truncated, corrupt or of another format/, $log_offset),
	'it is ignored with a LOG message');

# A truncated file: the same.
$node->safe_psql('postgres', "SELECT fw_limit('keep', 'k', 10, '1 day', '$start', cost => 7)");
$node->stop;
truncate($file, (-s $file) - 9) or die "truncate: $!";
$log_offset = -s $node->logfile;
$node->start;
is(remaining('keep', "'k'"), '10', 'no counter is loaded from a truncated file');
ok($node->log_contains(qr/ignoring file .*\n.*DETAIL:  The file is truncated, corrupt/, $log_offset), 'it is ignored');

# A file of another format version (the header's second word): the same.
$node->safe_psql('postgres', "SELECT fw_limit('keep', 'k', 10, '1 day', '$start', cost => 7)");
$node->stop;
open($fh, '+<', $file) or die "open $file: $!";
binmode $fh;
seek($fh, 4, 0);
print $fh pack('L', 99);
close $fh;
$log_offset = -s $node->logfile;
$node->start;
is(remaining('keep', "'k'"), '10', 'no counter is loaded from a file of another format version');
ok($node->log_contains(qr/ignoring file .*\n.*DETAIL:  .*of another format/, $log_offset),
	'it is ignored');

# fixed_window.save = off: nothing is kept.
$node->safe_psql('postgres', "SELECT fw_limit('keep', 'k', 10, '1 day', '$start', cost => 7)");
$node->append_conf('postgresql.conf', 'fixed_window.save = off');
$node->restart;
is(remaining('keep', "'k'"), '10', 'save = off keeps nothing');
ok(!-f $file, 'and leaves no file');
$node->append_conf('postgresql.conf', 'fixed_window.save = on');
$node->restart;

# A crash: immediate stop, and a backend killed with SIGKILL.
$node->safe_psql('postgres', "SELECT fw_limit('keep', 'k', 10, '1 day', '$start', cost => 7)");
$node->stop('immediate');
$node->start;
is(remaining('keep', "'k'"), '10', 'after an immediate stop counters start empty');

$node->safe_psql('postgres', "SELECT fw_limit('keep', 'k', 10, '1 day', '$start', cost => 7)");
my $victim = $node->background_psql('postgres');
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');
kill 'KILL', $victim_pid;
$victim->quit;
$node->poll_query_until('postgres', 'SELECT true') or die 'server did not come back';
is(remaining('keep', "'k'"), '10', 'after a backend is killed the server restarts with empty counters');

$node->stop;
done_testing();
