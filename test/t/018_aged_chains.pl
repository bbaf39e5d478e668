# An aged table of counters.  A call that walks a hash chain under its
# partition's exclusive lock unlinks the counters it meets that answer as
# no counter would (their windows ended and they do not roll tokens over),
# so that chains do not keep keys that come no more until a reclaim needs
# their slots.  It never forgets a counter that rolls tokens over (a reclaim
# alone may, when room is needed), nor one whose window the real clock has
# not seen end, whatever fixed_window.debug_now says.
#
# Counters are counted with fw_shmem_counters(), which, unlike the view
# fw_counters, shows those whose windows ended.  A small table (2,000 slots, 2,048 chains), far from full, so that no
# reclaim runs: what goes, goes on the way.  fw_refund of keys without a
# counter walks their chains, holding the lock exclusively, and creates
# nothing; 40,000 of them walk every chain.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $node = new_node('aged', conf => q{
fixed_window.max_counters = 2000
fixed_window.database_share = 100
fixed_window.role_share = 100
});

# A day ago, and ten seconds later: in the past for the real clock, which
# bounds what may be forgotten.
my ($t0, $t10) = split /\|/, $node->safe_psql('postgres', q{
	SELECT date_trunc('second', now() - interval '1 day'),
	       date_trunc('second', now() - interval '1 day') + interval '10 seconds'});

sub count_of
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM fw_shmem_counters() WHERE name = '$name'");
}

# Every chain walked by a call that holds the lock exclusively.
sub walk_every_chain
{
	my ($clock) = @_;
	my $set = $clock ? "SET fixed_window.debug_now = '$clock';" : '';
	$node->safe_psql('postgres', qq{$set
		SELECT count(*) FROM generate_series(1, 40000) g
		WHERE fw_refund('walker', g::text, 1, '1 hour') IS NOT NULL});
}

# Live on the real clock: 100 counters of 1-day windows.  Then, at
# $t0, a counter with rollover (rate 1, capacity 5)
# spends its one token; 1,500 counters without rollover, of 1-second
# windows; 300 live ones, of 1-hour windows.  Nothing has ended at $t0.
$node->safe_psql('postgres', qq{
	SELECT count(*) FROM generate_series(1, 100) g
	WHERE (fw_limit('real', g::text, 1, '1 day')).ok;
	SET fixed_window.debug_now = '$t0';
	SELECT (fw_limit('roll', 'r', 1, '1 second', capacity => 5)).ok;
	SELECT count(*) FROM generate_series(1, 1500) g
	WHERE (fw_limit('dead', g::text, 1, '1 second')).ok;
	SELECT count(*) FROM generate_series(1, 300) g
	WHERE (fw_limit('live', g::text, 1, '1 hour')).ok;
});
is(count_of('dead'), '1500', 'the 1,500 short-lived counters are in the table');

# fw_check holds the locks shared: it forgets nothing.
$node->safe_psql('postgres', qq{
	SET fixed_window.debug_now = '$t10';
	SELECT count(*) FROM generate_series(1, 40000) g
	WHERE (fw_check('walker', g::text, 1, '1 hour')).ok});
is(count_of('dead'), '1500', 'fw_check forgets no counter');

# At $t0 + 10 s every chain is walked: the short-lived counters without
# rollover go; the others stay.
walk_every_chain($t10);
is(count_of('dead'), '0', 'counters whose windows ended, without rollover, were unlinked on the way');
is(count_of('walker'), '0', 'fw_refund of keys without a counter creates none');
is(count_of('live'), '300', 'live counters stay');
is(count_of('real'), '100', 'counters of the real clock stay');
is(count_of('roll'), '1', 'a counter that rolls tokens over stays');
# It kept the tokens ten windows granted (up to its capacity of 5): 4 left
# after this call, where a new key would have 0.
is( $node->safe_psql('postgres', qq{
		SET fixed_window.debug_now = '$t10';
		SELECT (fw_limit('roll', 'r', 1, '1 second', capacity => 5)).remaining}),
	'4', 'the counter with rollover answers with its saved tokens');

# A session whose clock is set two days ahead forgets no counter whose
# window the real clock has not seen end.
walk_every_chain("@{[ $node->safe_psql('postgres', q{SELECT now() + interval '2 days'}) ]}");
is(count_of('real'), '100', 'a clock set ahead does not forget live counters');
is(count_of('live'), '0', 'counters whose windows ended by the real clock go');

$node->stop;
done_testing();
