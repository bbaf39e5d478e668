# The monitoring of examples/monitoring, end to end: a throwaway cluster
# preloading the library, Debian's postgres_exporter running
# examples/monitoring/queries.yaml as an ordinary role, and a Prometheus
# server scraping it every second with examples/monitoring/alerts.yml, all on
# loopback ports of their own.  Calls that allow and deny, and one that
# finds no room; then, through Prometheus' HTTP API, the PromQL an operator
# would type: the denials' rate is above zero for the limit that denied and
# for no other, the capacity gauges equal what fw_capacity says, and the
# alert for calls without room fires.  Nothing sleeps longer than the scrape
# interval it configures; every wait has a deadline.
use strict;
use warnings;

use File::Basename;
use File::Spec;
use HTTP::Tiny;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(sleep time);

my $examples = File::Spec->rel2abs(dirname(__FILE__) . '/../../examples/monitoring');
my $exporter_bin = '/usr/bin/prometheus-postgres-exporter';
my $prometheus_bin = '/usr/bin/prometheus';
for my $bin ($exporter_bin, $prometheus_bin)
{
	BAIL_OUT("$bin is missing: install prometheus and prometheus-postgres-exporter "
		  . "(scripts/test.sh does, as root)")
	  unless -x $bin;
}

my $scrape_seconds = 1;
my $deadline_seconds = 60;

my $node = PostgreSQL::Test::Cluster->new('monitoring');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'fixed_window'
fixed_window.max_counters = 1000
fixed_window.database_share = 100
fixed_window.role_share = 100
});
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION fixed_window;
	CREATE ROLE fw_monitor LOGIN;
});

# One limit allows 2 of 5 calls, another allows all; 996 keys of a third
# take every slot left.
my $calls = q{
	SELECT count(*) FILTER (WHERE (fw_limit('e2e_login', 'alice', 2, '1 hour')).ok)
		FROM generate_series(1, 5) g;
	SELECT count(*) FILTER (WHERE (fw_limit('e2e_quiet', 'bob' || g, 10, '1 hour')).ok)
		FROM generate_series(1, 3) g;
	SELECT count(*) FILTER (WHERE (fw_limit('e2e_fill', g::text, 1, '1 hour')).ok)
		FROM generate_series(1, 996) g;
};
is($node->safe_psql('postgres', $calls), "2\n3\n996", 'calls allowed and denied, the table full');
is( $node->safe_psql('postgres', q{
		SELECT used, live, live_percent FROM fw_capacity WHERE scope = 'counters'}),
	'1000|1000|100.0', 'fw_capacity: every slot live');

# The exporter, as an ordinary role, on a free loopback port.
my $tmp = PostgreSQL::Test::Utils::tempdir;
my $exporter_port = PostgreSQL::Test::Cluster::get_free_port();
my $prometheus_port = PostgreSQL::Test::Cluster::get_free_port();
my $exporter_log = "$tmp/exporter.log";
local $ENV{DATA_SOURCE_NAME} = sprintf('host=%s port=%d user=fw_monitor dbname=postgres sslmode=disable',
	$node->host, $node->port);
my $exporter = IPC::Run::start(
	[
		$exporter_bin, "--web.listen-address=127.0.0.1:$exporter_port",
		"--extend.query-path=$examples/queries.yaml", '--disable-settings-metrics',
		'--log.level=warn'
	],
	'>', $exporter_log, '2>&1');

my $http = HTTP::Tiny->new(timeout => 10);

# Call f every scrape interval until it returns something defined, or the
# deadline passes; returns the last answer.
sub wait_for
{
	my ($f) = @_;
	my $until = time() + $deadline_seconds;
	my $answer;
	while (1)
	{
		$answer = $f->();
		return $answer if defined $answer || time() > $until;
		sleep($scrape_seconds);
	}
}

my $scrape = wait_for(sub {
	my $r = $http->get("http://127.0.0.1:$exporter_port/metrics");
	return ($r->{success} && $r->{content} =~ /^fixed_window_denied_total/m) ? $r->{content} : undef;
});
ok($scrape, 'the exporter serves fixed_window metrics')
  or diag(slurp_file($exporter_log));
$scrape //= '';
my @ours = grep { /^(# (HELP|TYPE) )?fixed_window_/ } split /\n/, $scrape;
note("the exporter's fixed_window metrics:\n" . join("\n", @ours));
like($scrape, qr/^# TYPE fixed_window_denied_total counter$/m, 'denials are a counter');
like($scrape, qr/^fixed_window_denied_total\{datname="postgres",name="e2e_login"[^}]*\} 3$/m,
	'three denials of e2e_login');
like($scrape, qr/^fixed_window_calls_total\{datname="postgres",name="e2e_login"[^}]*\} 5$/m,
	'five calls of e2e_login');
like($scrape, qr/^fixed_window_denied_total\{datname="postgres",name="e2e_quiet"[^}]*\} 0$/m,
	'none of e2e_quiet');
like($scrape, qr/^fixed_window_since_timestamp_seconds\{datname="postgres",name="e2e_login"[^}]*storage="shmem"\} \d/m,
	'since when e2e_login is counted, in shared memory');
like($scrape, qr/^# TYPE fixed_window_slots_live gauge$/m, 'the capacity is a gauge');
like($scrape, qr/^fixed_window_slots_capacity\{name="",scope="counters"[^}]*\} 1000$/m,
	'of 1000 slots');
unlike($scrape, qr/^pg_exporter_last_scrape_error(\{[^}]*\})? 1$/m, 'every query of queries.yaml ran');

# Prometheus, scraping the exporter every second, with the alert rules.
mkdir "$tmp/data";
PostgreSQL::Test::Utils::append_to_file("$tmp/prometheus.yml", qq{
global:
  scrape_interval: ${scrape_seconds}s
  evaluation_interval: ${scrape_seconds}s
rule_files:
  - $examples/alerts.yml
scrape_configs:
  - job_name: postgres
    static_configs:
      - targets: ['127.0.0.1:$exporter_port']
});
my $prometheus_log = "$tmp/prometheus.log";
my $prometheus = IPC::Run::start(
	[
		$prometheus_bin, "--config.file=$tmp/prometheus.yml",
		"--storage.tsdb.path=$tmp/data", "--web.listen-address=127.0.0.1:$prometheus_port",
		'--log.level=warn'
	],
	'>', $prometheus_log, '2>&1');

# An instant query's vector, as [labels, value] pairs.
sub promql
{
	my ($query) = @_;
	my $r = $http->get("http://127.0.0.1:$prometheus_port/api/v1/query?"
		  . $http->www_form_urlencode({ query => $query }));
	return undef unless $r->{success};
	my $body = decode_json($r->{content});
	return undef unless $body->{status} eq 'success';
	return [ map { [ $_->{metric}, $_->{value}[1] ] } @{ $body->{data}{result} } ];
}

# The value of a query that returns one series, or undef.
sub promql_value
{
	my $v = promql($_[0]);
	return ($v && @$v == 1) ? $v->[0][1] : undef;
}

is( wait_for(sub { my $v = promql_value('fixed_window_denied_total{name="e2e_login"}');
			return (defined $v && $v eq '3') ? $v : undef; }),
	'3', 'Prometheus has scraped the three denials')
  or diag(slurp_file($prometheus_log));
is(wait_for(sub { promql_value('fixed_window_no_room_total{name="e2e_fill"}') }),
	'0', 'and no call of e2e_fill without room yet');

# More denials, and a new key that finds no room.
$node->safe_psql('postgres', q{
	SELECT fw_limit('e2e_login', 'alice', 2, '1 hour') FROM generate_series(1, 4)});
my ($ret, $out, $err) = $node->psql('postgres', q{SELECT fw_limit('e2e_fill', 'one more', 1, '1 hour')});
like($err, qr/no room for a new rate limit counter/, 'a new key finds no room');
is($node->safe_psql('postgres', q{SELECT denied, no_room FROM fw_stats WHERE name = 'e2e_login' OR name = 'e2e_fill' ORDER BY name}),
	"0|1\n7|0", 'fw_stats counts them');

my $query = 'rate(fixed_window_denied_total[1m]) > 0';
my $rising = wait_for(sub {
	my $v = promql($query);
	return ($v && @$v) ? $v : undef;
});
ok($rising, "PromQL: $query");
is(join(',', map { $_->[0]{name} } @{ $rising // [] }), 'e2e_login',
	'for the limit that denied, and no other');
note("PromQL answer of $query: " . encode_json($rising // []));

# The capacity gauges say what fw_capacity says.
my $view = $node->safe_psql('postgres', q{
	SELECT capacity, used, live, reclaimable FROM fw_capacity WHERE scope = 'counters'});
my $gauges = '';
wait_for(sub {
	$gauges = join('|', map { promql_value("fixed_window_slots_${_}{scope=\"counters\"}") // 'none' }
		  qw(capacity used live reclaimable));
	return $gauges eq $view ? $gauges : undef;
});
is($gauges, $view, "the capacity gauges equal fw_capacity ($view)");
is(promql_value('fixed_window_slots_live{scope="database",name="postgres"} / fixed_window_slots_capacity{scope="database",name="postgres"}'),
	'1', "the database's share, all live");

# The rules loaded, and the alert for calls without room fires.
my $rules = $http->get("http://127.0.0.1:$prometheus_port/api/v1/rules");
my @loaded = map { map { $_->{name} . ':' . $_->{health} } @{ $_->{rules} } }
  @{ decode_json($rules->{content})->{data}{groups} };
is( join(' ', sort @loaded),
	'FixedWindowCountersNearlyFull:ok FixedWindowDenialsRising:ok FixedWindowLimitDenying:ok FixedWindowNoRoom:ok FixedWindowStatisticsNearlyFull:ok',
	'Prometheus loaded the five rules of alerts.yml');
my $firing = wait_for(sub {
	my $r = $http->get("http://127.0.0.1:$prometheus_port/api/v1/alerts");
	return undef unless $r->{success};
	my @a = grep { $_->{state} eq 'firing' && $_->{labels}{alertname} eq 'FixedWindowNoRoom' }
	  @{ decode_json($r->{content})->{data}{alerts} };
	return @a ? $a[0] : undef;
});
is($firing && $firing->{labels}{name}, 'e2e_fill', 'FixedWindowNoRoom fires for e2e_fill');
note('the alert: ' . encode_json($firing // {}));

$prometheus->kill_kill;
$exporter->kill_kill;
$node->stop;
done_testing();
