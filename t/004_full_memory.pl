# Bounded memory: when every counter slot is taken, counters that answer as
# no counter would are reclaimed; a live counter is never evicted (that
# would over-admit); with none to reclaim, fixed_window.fail_open decides
# between a clear error (SQLSTATE 53400) and allowing with a warning.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('full');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'fixed_window'
fixed_window.max_counters = 1000
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION fixed_window');

sub at
{
	my ($time, $sql) = @_;
	return $node->psql('postgres',
		"SET fixed_window.debug_now = '$time';\n\\set VERBOSITY verbose\n$sql");
}

# 1000 one-second counters fill every slot.
my ($ret, $out, $err) = at('2026-07-01 12:00:00+00',
	"SELECT count(*) FILTER (WHERE (fw_limit('fill', g::text, 1, '1 second')).ok) FROM generate_series(1, 1000) g");
is($out, '1000', 'a thousand counters fit');

# In the same second all are live: a new key is refused, clearly.
($ret, $out, $err) = at('2026-07-01 12:00:00.5+00', "SELECT ok FROM fw_limit('fill', 'new', 1, '1 second')");
isnt($ret, 0, 'a new key fails while every counter is live');
like($err, qr/ERROR:  53400: no room for a new rate limit counter/, 'with SQLSTATE 53400');
like($err, qr/HINT:  Raise fixed_window.max_counters/, 'naming the setting to raise');
unlike($err, qr/out of shared memory/, 'not dynahash\'s generic error');

# ... and the live counters still deny: nothing was evicted.
($ret, $out, $err) = at('2026-07-01 12:00:00.5+00', "SELECT ok FROM fw_limit('fill', '7', 1, '1 second')");
is($out, 'f', 'a spent live counter is not forgotten');

# fail_open: allowed, uncounted, with one warning per minute and session.
($ret, $out, $err) = at('2026-07-01 12:00:00.5+00',
	"SET fixed_window.fail_open = on;\nSELECT ok FROM fw_limit('fill', 'new', 1, '1 second');\nSELECT ok FROM fw_limit('fill', 'new2', 1, '1 second');");
is($out, "t\nt", 'fail_open allows calls for new keys');
my @warnings = ($err =~ /WARNING:  53400: rate limit counters are full/g);
is(scalar @warnings, 1, 'one warning for two calls');

# Only superusers may turn it on.
$node->safe_psql('postgres', 'CREATE ROLE plain');
($ret, $out, $err) = $node->psql('postgres', "SET ROLE plain; SET fixed_window.fail_open = on;");
like($err, qr/permission denied to set parameter "fixed_window.fail_open"/, 'fail_open is superuser-only');

# One second later every window has ended: the counters are reclaimed.
($ret, $out, $err) = at('2026-07-01 12:00:01+00', "SELECT ok, remaining FROM fw_limit('fill', 'new', 1, '1 second')");
is($out, 't|0', 'a new key gets a reclaimed slot');
is($node->safe_psql('postgres', q{
	SET fixed_window.debug_now = '2026-07-01 12:00:01+00';
	SELECT count(*) FROM fw_counters WHERE name = 'fill'}), '1', 'dead counters were reclaimed');

# Counters of a current hour are live for the hour: full again, and no amount
# of asking evicts them.
($ret, $out, $err) = at('2026-07-01 12:00:02+00',
	"SELECT count(*) FILTER (WHERE (fw_limit('hour', g::text, 1, '1 hour')).ok) FROM generate_series(1, 999) g");
is($out, '999', 'the free slots fill with hourly counters');
# Half an hour later only the one-second counter 'new' is dead: its slot is
# the only one to reclaim.
($ret, $out, $err) = at('2026-07-01 12:30:00+00', "SELECT ok FROM fw_limit('hour', 'one more', 1, '1 hour')");
is($out, 't', 'the dead one-second counter makes room for one more');
($ret, $out, $err) = at('2026-07-01 12:30:00+00', "SELECT ok FROM fw_limit('hour', 'two more', 1, '1 hour')");
like($err, qr/53400/, 'then the table is full of live counters');
($ret, $out, $err) = at('2026-07-01 12:30:00+00', "SELECT ok FROM fw_limit('hour', '5', 1, '1 hour')");
is($out, 'f', 'an hourly counter still denies half an hour later');

$node->stop;
done_testing();
