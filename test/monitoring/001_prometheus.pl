# The monitoring of examples/monitoring, end to end: a throwaway cluster
# preloading the library, Debian's postgres_exporter running
# examples/monitoring/queries.yaml as an ordinary role, and a Prometheus
# server scraping it every second with examples/monitoring/alerts.yml, all on
# loopback ports of their own.  Calls that allow and deny, and one that
# finds no room; then, through Prometheus' HTTP API, the PromQL an operator
# would type: the denials' rate is above zero for the limit that denied and
# for no other, the capacity gauges (1.6's names, and 1.5's, kept one
# release) equal what fw_capacity says, and each counter is counted once,
# and the alert for calls without room fires.  Then a second cluster without
# preload, counting on the table backend, its own exporter: an ordinary role
# makes 3,000 limit names, and the exporter's series stay within the table's
# 1,024 names a database, before and after fw_gc(), the name counted before
# them keeping its series; the admin's choice of names (fw_metric_name) is
# what the exporter then exports.  Nothing sleeps longer than the scrape
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

# The exporters and Prometheus end with the test, also when it dies.
my @started;
END
{
	for my $process (@started)
	{
		eval { $process->kill_kill if $process->pumpable; };
	}
}

# An exporter, as the ordinary role fw_monitor of a node, on a free loopback
# port; returns the process and its port.
my $tmp = PostgreSQL::Test::Utils::tempdir;
sub start_exporter
{
	my ($of, $name, @args) = @_;
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	local $ENV{DATA_SOURCE_NAME} = sprintf('host=%s port=%d user=fw_monitor dbname=postgres sslmode=disable',
		$of->host, $of->port);
	my $process = IPC::Run::start(
		[
			$exporter_bin, "--web.listen-address=127.0.0.1:$port",
			"--extend.query-path=$examples/queries.yaml", '--disable-settings-metrics',
			'--log.level=warn', @args
		],
		'>', "$tmp/$name.log", '2>&1');
	push @started, $process;
	return ($process, $port);
}
my ($exporter, $exporter_port) = start_exporter($node, 'exporter');
my $exporter_log = "$tmp/exporter.log";
my $prometheus_port = PostgreSQL::Test::Cluster::get_free_port();

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
like($scrape, qr/^# TYPE fixed_window_shmem_counters_live gauge$/m, 'the capacity is a gauge');
like($scrape, qr/^fixed_window_shmem_counters_limit(\{[^}]*\})? 1000$/m, 'of 1000 slots');
like($scrape, qr/^fixed_window_shmem_database_counters_live\{datname="postgres"[^}]*\} 1000$/m,
	"the database's counters, labelled datname");
like($scrape, qr/^fixed_window_shmem_role_counters_live\{rolname="postgres"[^}]*\} 1000$/m,
	"the role's, labelled rolname");
like($scrape, qr/^fixed_window_shmem_stats_names(\{[^}]*\})? 3$/m, 'three names with statistics');
like($scrape, qr/^fixed_window_shmem_stats_names_limit(\{[^}]*\})? 1024$/m, 'of 1,024');
# 1.5's names stay one release, deprecated.
like($scrape, qr/^fixed_window_slots_capacity\{name="",scope="counters"[^}]*\} 1000$/m,
	"1.5's fixed_window_slots_capacity is still exported");
like($scrape, qr/^# HELP fixed_window_slots_live Deprecated/m, 'and says it is deprecated');
# A label "name" is a limit's name, but on the deprecated metrics.
my @other_names = grep { /^fixed_window_/ && /\bname="/ && !/^fixed_window_(slots_\w+|\w+_total|\w+_timestamp_seconds)\{/ }
  split /\n/, $scrape;
is(join("\n", @other_names), '', 'no other metric has a label "name"');
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
push @started, $prometheus;

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

# The capacity gauges say what fw_capacity says, under 1.6's names and
# 1.5's.
my $view = $node->safe_psql('postgres', q{
	SELECT capacity, used, live, reclaimable FROM fw_capacity WHERE scope = 'counters'});
my %gauges = (
	'1.6' => [
		'fixed_window_shmem_counters_limit',
		'fixed_window_shmem_counters_live + fixed_window_shmem_counters_reclaimable',
		'fixed_window_shmem_counters_live',
		'fixed_window_shmem_counters_reclaimable'
	],
	'1.5' => [ map { "fixed_window_slots_${_}{scope=\"counters\"}" } qw(capacity used live reclaimable) ]);
for my $names (sort keys %gauges)
{
	my $gauges = '';
	wait_for(sub {
		$gauges = join('|', map { promql_value($_) // 'none' } @{ $gauges{$names} });
		return $gauges eq $view ? $gauges : undef;
	});
	is($gauges, $view, "the capacity gauges of $names equal fw_capacity ($view)");
}
is(promql_value('fixed_window_shmem_database_counters_live{datname="postgres"} / fixed_window_shmem_database_counters_limit{datname="postgres"}'),
	'1', "the database's share, all live");
is(promql_value('fixed_window_slots_live{scope="database",name="postgres"} / fixed_window_slots_capacity{scope="database",name="postgres"}'),
	'1', "the database's share, all live, under 1.5's names");
# Each counter is counted once: the databases' and the roles' add up to the
# table's.
is( join('|', map { promql_value("sum($_)") // 'none' }
		  qw(fixed_window_shmem_counters_live fixed_window_shmem_database_counters_live
		  fixed_window_shmem_role_counters_live)),
	'1000|1000|1000', "the databases' and the roles' live counters each add up to the table's");
is( promql_value('fixed_window_shmem_database_stats_names{datname="postgres"} * 1024 / fixed_window_shmem_database_stats_names_limit'),
	'3', "the database's statistics: 3 names of its share, 1,024");

# The rules loaded, and the alert for calls without room fires.
my $rules = $http->get("http://127.0.0.1:$prometheus_port/api/v1/rules");
my @loaded = map { map { $_->{name} . ':' . $_->{health} } @{ $_->{rules} } }
  @{ decode_json($rules->{content})->{data}{groups} };
is( join(' ', sort @loaded),
	'FixedWindowCountersNearlyFull:ok FixedWindowDenialsRising:ok FixedWindowLimitDenying:ok FixedWindowMetricsUnreadable:ok FixedWindowNoRoom:ok FixedWindowStatisticsNearlyFull:ok',
	'Prometheus loaded the six rules of alerts.yml');
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

# ---------------------------------------------------------------------------
# The table backend: a server that does not preload the library keeps
# counters and their statistics in the table (storage auto).  An ordinary
# role makes 3,000 limit names; one name was counted before them.
my $table = PostgreSQL::Test::Cluster->new('table');
$table->init;
$table->append_conf('postgresql.conf', q{
fixed_window.debug_now = '2026-07-01 12:00:00+00'
});
$table->start;
$table->safe_psql('postgres', q{
	CREATE EXTENSION fixed_window;
	CREATE ROLE fw_monitor LOGIN;
	CREATE ROLE mallory LOGIN;
});
is( $table->safe_psql('postgres', q{
		SELECT fw_storage_in_use(), count(*) FILTER (WHERE (fw_limit('e2e_api', 'k', 1, '1 hour')).ok)
		FROM generate_series(1, 3)}),
	'table|1', 'the table backend: e2e_api allows 1 of 3 calls');
is( $table->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT fw_limit('flood' || g, 'k', 1, '1 hour') FROM generate_series(1, 3000) g) AS c},
		extra_params => [ '-U', 'mallory' ]),
	'3000', 'an ordinary role makes 3,000 limit names');

my ($table_exporter, $table_port) = start_exporter($table, 'table_exporter');

# The table's metrics from its exporter: the series of each metric, as
# labels => value.
sub table_metrics
{
	my %series;
	my $body = wait_for(sub {
		my $r = $http->get("http://127.0.0.1:$table_port/metrics");
		return ($r->{success} && $r->{content} =~ /^fixed_window_calls_total/m) ? $r->{content} : undef;
	}) // '';
	unlike($body, qr/^pg_exporter_last_scrape_error(\{[^}]*\})? 1$/m, 'every query of queries.yaml ran on the table');
	while ($body =~ /^(fixed_window_\w+)(\{[^}]*\})? (\S+)$/mg)
	{
		$series{$1}{ $2 // '' } = $3;
	}
	return \%series;
}
# The value of the only series of a metric whose labels match a pattern.
sub only
{
	my ($metrics, $metric, $pattern) = @_;
	my @values = map { $metrics->{$metric}{$_} } grep { /$pattern/ } keys %{ $metrics->{$metric} // {} };
	return @values == 1 ? $values[0] : 'series: ' . scalar(@values);
}

my $bound = 1024;
my $metrics = table_metrics();
my $series = scalar keys %{ $metrics->{fixed_window_calls_total} // {} };
note("fixed_window_calls_total: $series series after 3,000 names");
ok($series <= $bound, "3,000 names give at most $bound series of fixed_window_calls_total ($series)");
is(only($metrics, 'fixed_window_calls_total', qr/name="e2e_api"/), '3',
	'the name counted before them keeps its series: e2e_api, 3 calls');
is(only($metrics, 'fixed_window_unnamed_calls_total', qr/storage="table"/), 3000 - ($bound - 1),
	'the calls of the names past the bound are counted together');
is(only($metrics, 'fixed_window_table_stats_names', qr/datname="postgres"/), $bound,
	'the table holds statistics for 1,024 names');
is(only($metrics, 'fixed_window_table_stats_names_limit', qr/datname="postgres"/), $bound, 'of 1,024');

# fw_gc() deletes every row, whose statistics stay: within the bound too.
is( $table->safe_psql('postgres', q{
		SET fixed_window.debug_now = '2026-07-01 14:00:00+00';
		SELECT fw_gc()}),
	'3001', 'fw_gc() deletes the 3,001 rows');
$table->safe_psql('postgres', q{
	SELECT count(*) FROM (SELECT fw_limit('later' || g, 'k', 1, '1 hour') FROM generate_series(1, 500) g) AS c},
	extra_params => [ '-U', 'mallory' ]);
$metrics = table_metrics();
$series = scalar keys %{ $metrics->{fixed_window_calls_total} // {} };
ok($series <= $bound, "after fw_gc() and 500 names more, at most $bound series ($series)");
is(only($metrics, 'fixed_window_calls_total', qr/name="e2e_api"/), '3', 'e2e_api keeps its series and its calls');
is(only($metrics, 'fixed_window_unnamed_calls_total', qr/storage="table"/), 3500 - ($bound - 1),
	'the names past the bound, deleted rows and new ones, counted together');

# The admin chooses the names exported: a pattern in fw_metric_name.
($ret, $out, $err) = $table->psql('postgres', q{INSERT INTO fw_metric_name VALUES ('flood%')},
	extra_params => [ '-U', 'mallory' ]);
like($err, qr/permission denied for table fw_metric_name/, 'an ordinary role cannot choose the names exported');
$table->safe_psql('postgres', q{INSERT INTO fw_metric_name VALUES ('e2e\_%')});
$metrics = table_metrics();
is(join(",", sort map { /[{,]name="([^"]*)"/ } keys %{ $metrics->{fixed_window_calls_total} }),
	'e2e_api', "the admin's choice: only e2e_api has series of its own");
is(only($metrics, 'fixed_window_unnamed_calls_total', qr/storage="table"/), 3500,
	'every other call is counted together');

$table_exporter->kill_kill;

# ---------------------------------------------------------------------------
# --auto-discover-databases runs the per-database queries in every database:
# one without the extension, one whose schema the exporter's role may not
# use.  Neither fails the scrape; a gauge names the database it cannot read,
# and its series appear once the grant is given, with no search_path set.
$table->safe_psql('postgres', q{
	CREATE DATABASE plain;
	CREATE DATABASE walled;
});
$table->safe_psql('walled', q{
	CREATE SCHEMA fw;
	CREATE EXTENSION fixed_window SCHEMA fw;
	SELECT fw.fw_limit('walled_api', 'k', 1, '1 hour') FROM generate_series(1, 2);
});
my ($discover_exporter, $discover_port) =
  start_exporter($table, 'discover_exporter', '--auto-discover-databases', '--exclude-databases=template0,template1');
sub discover_scrape
{
	my ($pattern) = @_;
	return wait_for(sub {
		my $r = $http->get("http://127.0.0.1:$discover_port/metrics");
		return ($r->{success} && $r->{content} =~ $pattern) ? $r->{content} : undef;
	}) // '';
}
$scrape = discover_scrape(qr/^fixed_window_metrics_readable\{datname="walled"/m);
like($scrape, qr/^fixed_window_metrics_readable\{datname="walled"[^}]*\} 0$/m,
	'a database whose schema the role may not use: fixed_window_metrics_readable 0, named');
like($scrape, qr/^fixed_window_metrics_readable\{datname="postgres"[^}]*\} 1$/m, 'a database it reads: 1');
unlike($scrape, qr/^fixed_window_metrics_readable\{datname="plain"/m, 'a database without the extension: no series');
like($scrape, qr/^fixed_window_calls_total\{datname="postgres",name="e2e_api"[^}]*\} 3$/m,
	'the readable database is scraped');
unlike($scrape, qr/^pg_exporter_last_scrape_error(\{[^}]*\})? 1$/m,
	'neither the database without the extension nor the one without the grant fails the scrape')
  or diag(slurp_file("$tmp/discover_exporter.log"));
$table->safe_psql('walled', q{GRANT USAGE ON SCHEMA fw TO fw_monitor});
$scrape = discover_scrape(qr/^fixed_window_metrics_readable\{datname="walled"[^}]*\} 1$/m);
like($scrape, qr/^fixed_window_calls_total\{datname="walled",name="walled_api"[^}]*\} 2$/m,
	'once granted, its series, with the extension in a schema not on the search_path');
like($scrape, qr/^fixed_window_table_rows\{datname="walled"[^}]*\} 1$/m, 'and its table backend');

$discover_exporter->kill_kill;
$table->stop;
done_testing();
