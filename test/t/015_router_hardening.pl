# The router (fixed_window_proxy 1.1 and later) against what 1.0 got wrong (issue 19):
#
# - item 10: answers depend on no setting of a shard or of the router's
#   session (DateStyle, IntervalStyle, TimeZone, extra_float_digits): 1.0
#   read a shard's '13/11/2026' under DateStyle 'SQL, DMY' as an error
#   (22008), after the shard had spent;
# - item 12: routed statements name their functions qualified: a role whose
#   search_path on a shard is '' still reaches them (1.0: 42883);
# - item 11: a shard's restart ends the router's open connections; a call
#   sent on one is sent again, spending exactly once (1.0: 57P01 for every
#   router session's first call); a connection ended by pg_terminate_backend
#   fails a call that spends with 08006 and sends one that does not again;
# - item 14: fw_headers and fw_postgrest on the router, as on a shard;
# - item 1: the router's views over rows a role may not see are security
#   barriers: a leaky function of the role's sees only its own keys;
# - issue 30, item 15: a live 1.2 router updated to 1.3 routes every key
#   where 1.2 did (by modulo) until its admin switches, at the instant set
#   in fw_routing, to jump consistent hashing; sessions with calls planned
#   before take the switch at their next call;
# - issue 30, review of item 15: only the DDL of the server fw_shards
#   compiles the routing: an ordinary role creating a server of its own
#   from a snapshot older than the admin's change of shards no longer writes
#   routing from it (1.3 before: 228 of 1,000 keys routed elsewhere than the
#   fleet), nor holds the admin's changes up while its transaction is open;
#   a compilation from a snapshot older than the last compilation fails
#   with 40001 (1.3 before: it compiled without that change); where the
#   triggers do not fire (a data-only restore with --disable-triggers,
#   session_replication_role = replica, single-user mode) fw_key_shard and
#   fw_routing_method fail with 55000, the routing out of date, until
#   fw_route_compile() (1.3 before: they answered).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename;
use IPC::Run;
use Time::HiRes qw(time);

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

require_plproxy();

my $clock = '2026-11-13 10:00:30+00';    # a day above 12
my @shards;
foreach my $i (0 .. 1)
{
	my $shard = new_shard("hshard$i");
	$shard->safe_psql('postgres', 'CREATE ROLE app LOGIN');
	$shard->safe_psql('fw', qq{
		GRANT EXECUTE ON FUNCTION fw_refund(text, text, integer) TO app;
		ALTER DATABASE fw SET fixed_window.debug_now = '$clock';
	});
	push @shards, $shard;
}

my $router = new_router('hrouter');
$router->safe_psql('postgres', q{
	CREATE DATABASE router;
	CREATE ROLE app LOGIN;
});
# A router in database d, of a version (the current one when empty), over
# the two shards.
sub router_over_shards
{
	my ($d, $version) = @_;
	$router->safe_psql($d,
		qq{CREATE EXTENSION fixed_window_proxy @{[ $version ? "VERSION '$version'" : '' ]} CASCADE});
	shards_server($router, $d, map { shard_connstr($_, 'fw') } @shards);
}
router_over_shards('router', '');
$router->safe_psql('router', q{
GRANT EXECUTE ON FUNCTION fw_refund(text, text, integer) TO app;
SELECT fw_define('mix', 5, '1 minute', capacity => 10);
SELECT fw_define('mix', 100, '1 month');
SELECT fw_override('mix', 'vip', 50, '1 minute');
});

# The shard of a key.
sub shard_of
{
	my ($name, $key) = @_;
	return $router->safe_psql('router', "SELECT fw_key_shard('$name', '$key')");
}

# Settings as hostile as can be, everywhere: every shard's database, for
# every session (the router's connections included), and the router's own
# session.  search_path = '' on the shards finds only pg_catalog.
foreach my $shard (@shards)
{
	$shard->safe_psql('fw', q{
		ALTER DATABASE fw SET DateStyle = 'SQL, DMY';
		ALTER DATABASE fw SET IntervalStyle = 'sql_standard';
		ALTER DATABASE fw SET TimeZone = 'Pacific/Chatham';
		ALTER DATABASE fw SET extra_float_digits = -15;
		ALTER DATABASE fw SET search_path = '';
	});
}
my $hostile = q{
	SET DateStyle = 'German';
	SET TimeZone = 'America/St_Johns';
	SET IntervalStyle = 'postgres_verbose';
	SET extra_float_digits = -15;
	SET search_path = '';
};
my $plain = q{
	SET DateStyle = 'ISO, YMD';
	SET TimeZone = 'UTC';
	SET IntervalStyle = 'postgres';
	SET extra_float_digits = 1;
	SET search_path = public;
};

# A query run on the router under the hostile settings, its rows written
# out under plain ones; and the same query run on the key's shard directly,
# under plain settings.
sub routed
{
	my ($query) = @_;
	return $router->safe_psql('router',
		"$hostile\nCREATE TEMP TABLE answer AS $query;\n$plain\nSELECT a::text FROM answer AS a ORDER BY 1;");
}

sub direct
{
	my ($shard, $query) = @_;
	return $shards[$shard]->safe_psql('fw', "$plain\nSELECT a::text FROM ($query) AS a ORDER BY 1;");
}

# -- item 10: windows, spent through the router, as the shard has them ------

my $s = shard_of('mix', 'k');
my $through = routed(q{SELECT * FROM public.fw_limit_windows('mix', 'k', 8)});
is( $through,
	'("1 mon",100,100,f,t,,100,421:59:30,"2026-11-01 00:00:00+00","2026-12-01 00:00:00+00")' . "\n"
	  . '(00:01:00,5,10,f,f,00:00:30,5,00:00:30,"2026-11-13 10:00:00+00","2026-11-13 10:01:00+00")',
	'fw_limit_windows through the router under hostile settings everywhere: the windows of 13 November');
is(direct($s, q{SELECT * FROM public.fw_check_windows('mix', 'k', 8)}), $through,
	'and the shard answers the same directly');
is( routed(q{SELECT * FROM public.fw_limit_windows('mix', 'k', 3)}),
	'("1 mon",100,100,f,t,,97,421:59:30,"2026-11-01 00:00:00+00","2026-12-01 00:00:00+00")' . "\n"
	  . '(00:01:00,5,10,f,t,,2,00:00:30,"2026-11-13 10:00:00+00","2026-11-13 10:01:00+00")',
	'a cost of 3 is allowed');
is(direct($s, q{SELECT * FROM public.fw_check_windows('mix', 'k', 0)}),
	'("1 mon",100,100,f,t,,97,421:59:30,"2026-11-01 00:00:00+00","2026-12-01 00:00:00+00")' . "\n"
	  . '(00:01:00,5,10,f,t,,2,00:00:30,"2026-11-13 10:00:00+00","2026-11-13 10:01:00+00")',
	'and was spent once in each window');

# an inline call: the period and start go to the shard intact, and the
# shard's answer comes back intact
my $inline = q{SELECT * FROM public.fw_limit('x', 'k', 5, '1 day 2 hours 0.000001 seconds',
	'2026-11-13 01:00:00.5+00', cost => 2, capacity => 6)};
$s = shard_of('x', 'k');
is(routed($inline), '(t,,3,16:59:30.500001)', 'an inline call with a start and a period in microseconds');
is(direct($s, q{SELECT * FROM public.fw_check('x', 'k', 5, '1 day 2 hours 0.000001 seconds',
	'2026-11-13 01:00:00.5+00', cost => 0, capacity => 6)}),
	'(t,,3,16:59:30.500001)', 'the shard counted it in that window');

# the views, gathered under hostile settings
is( routed(q{SELECT name, key, storage, window_start, window_end, remaining, period
             FROM public.fw_counters WHERE name IN ('mix', 'x')}),
	join("\n",
		'(mix,k,shmem,"2026-11-01 00:00:00+00","2026-12-01 00:00:00+00",97,"1 mon")',
		'(mix,k,shmem,"2026-11-13 10:00:00+00","2026-11-13 10:01:00+00",2,00:01:00)',
		'(x,k,shmem,"2026-11-13 01:00:00.5+00","2026-11-14 03:00:00.500001+00",3,)'),
	'fw_counters');
is( routed(q{SELECT name, period, rate, capacity, start, shards FROM public.fw_policies WHERE name = 'mix'}),
	qq{(mix,"1 mon",100,100,"1970-01-01 00:00:00+00","{0,1}")\n(mix,00:01:00,5,10,"1970-01-01 00:00:00+00","{0,1}")},
	'fw_policies');
is( routed(q{SELECT name, key, period, rate, shards FROM public.fw_overrides}),
	'(mix,vip,00:01:00,50,"{0,1}")', 'fw_overrides');
is( routed(q{SELECT name, calls, allowed, denied, last_denied_at FROM public.fw_stats WHERE name = 'mix'}),
	'(mix,2,1,1,"2026-11-13 10:00:30+00")', 'fw_stats');

# -- item 14: HTTP on the router ----------------------------------------------

is( $router->safe_psql('router', q{
		SELECT fw_headers('mix', ARRAY(SELECT w FROM fw_check_windows('mix', 'k') AS w))}),
	$shards[shard_of('mix', 'k')]->safe_psql('fw', q{
		SELECT public.fw_headers('mix', ARRAY(SELECT w FROM public.fw_check_windows('mix', 'k') AS w))}),
	'fw_headers of a policy on the router, as on the shard');
is( $router->safe_psql('router', q{
		SELECT fw_headers(r, 5, '1 minute', 'inline') FROM fw_check('y', 'k', 5, '1 minute') AS r}),
	$shards[0]->safe_psql('fw', q{
		SELECT public.fw_headers(r, 5, '1 minute', 'inline') FROM public.fw_check('y', 'k', 5, '1 minute') AS r}),
	'and of an inline answer');

# the router checks and names periods in SQL as fixed_window does in C
my @periods = ('1 minute', '60 seconds', '1 mon', '30 days', '1 mon 2 days 3 hours', '0.5 seconds',
	'1 day -1 hour', '1.000001 seconds', '12 months', '1000 years', '-1 hour', '1 mon -1 day',
	'0 seconds', '1 microsecond', '2147483647 days');
my $ids = join(', ', map { "('$_')" } @periods);
my $id_of = q{
	CREATE FUNCTION pg_temp.id_of(p interval, rate integer, name text) RETURNS text LANGUAGE plpgsql AS $$
	BEGIN
	    RETURN %s;
	EXCEPTION WHEN OTHERS THEN
	    RETURN SQLSTATE || ' ' || SQLERRM;
	END $$;};
my $router_ids = $router->safe_psql('router',
	sprintf($id_of, 'public.fw_header_window_id(name, rate, p)')
	  . "SELECT string_agg(p || ' ' || pg_temp.id_of(p::interval, r, n), E'\\n' ORDER BY p, r, n)
	     FROM (VALUES $ids) AS v(p), (VALUES (1), (0)) AS r(r), (VALUES ('n'), (repeat('n', 257))) AS n(n)");
my $shard_ids = $shards[0]->safe_psql('fw',
	sprintf($id_of, 'public.fw_window_id(name, NULL, rate, p, NULL, NULL)')
	  . "SET IntervalStyle = 'sql_standard'; SELECT string_agg(p || ' ' || pg_temp.id_of(p::interval, r, n), E'\\n' ORDER BY p, r, n)
	     FROM (VALUES $ids) AS v(p), (VALUES (1), (0)) AS r(r), (VALUES ('n'), (repeat('n', 257))) AS n(n)");
$shard_ids =~ s/The period given was "[^"]*"/The period given was .../g;
$router_ids =~ s/The period given was "[^"]*"/The period given was .../g;
is($router_ids, $shard_ids, 'the router names periods, and refuses them, as fixed_window does');
like($router_ids, qr/^1 mon 2 days 3 hours P1MT183600S$/m, '(a month and the rest in seconds)');

# fw_postgrest on the router: headers added when allowed, 429 when denied
is( $router->safe_psql('router', q{
		BEGIN;
		SET LOCAL response.headers = '[{"Cache-Control": "no-store"}]';
		SELECT fw_postgrest('mix', 'pgrst');
		SELECT current_setting('response.headers')::jsonb->>0, current_setting('response.headers')::jsonb->1;
		COMMIT;}),
	qq{\n{"Cache-Control": "no-store"}|{"RateLimit": "\\"mix/PT60S\\";r=4;t=30, \\"mix/P1M\\";r=99;t=1519170"}},
	'fw_postgrest on the router adds the headers of an allowed call');
my ($ret, $out, $err) = $router->psql('router', q{SELECT fw_postgrest('mix', 'pgrst', 9)},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  PGRST: \{"code" : "PT429".*\nDETAIL:  \{"status" : 429, "headers" : \{.*"Retry-After": "30"/,
	'and ends a denied one with 429 and Retry-After');

# -- item 1: the router's views to an ordinary role --------------------------

$router->safe_psql('router', q{
	SELECT fw_limit('secret', 'superuser-key', 5, '1 hour');
	CREATE SCHEMA m AUTHORIZATION app;});
$shards[0]->safe_psql('fw', "GRANT EXECUTE ON FUNCTION public.fw_override(text, text, integer, interval, integer) TO app");
$shards[1]->safe_psql('fw', "GRANT EXECUTE ON FUNCTION public.fw_override(text, text, integer, interval, integer) TO app");
$router->safe_psql('router', "GRANT EXECUTE ON FUNCTION fw_override(text, text, integer, interval, integer),
	fw_each_shard(text, text, text, integer, interval, timestamptz, integer, boolean, text),
	fw_route_definition(integer, text, text, text, integer, interval, timestamptz, integer, boolean, text) TO app");
($ret, $out, $err) = $router->psql('router', q{
	CREATE FUNCTION m.leak(text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001
	    AS $$BEGIN IF $1 IS NOT NULL THEN RAISE NOTICE 'leaked: %', $1; END IF; RETURN true; END$$;
	SELECT fw_override('mix', 'app-made', 7, '1 minute');
	SELECT (fw_limit('secret', 'app-key', 5, '1 hour')).ok;
	SELECT key FROM fw_overrides WHERE m.leak(key) ORDER BY key;
	SELECT key FROM fw_counters WHERE m.leak(key) AND name = 'secret' ORDER BY key;},
	extra_params => [ '-U', 'app' ]);
like($out, qr/^\s*t\napp-made\napp-key\s*$/, 'an ordinary role sees its own keys through the router');
my @leaked = $err =~ /leaked: (.*)/g;
is(join(',', sort @leaked), 'app-key,app-made', 'and its leaky function sees no other');

# -- item 11: a shard's restart ---------------------------------------------

# A session of the router that made a call keeps its connection to the
# shard; PL/Proxy tests an idle connection before using it only after two
# seconds.  Restart the shard and call again within them: the call goes out
# on the dead connection, the shard's old server ended.
$s = shard_of('boot', 'kA');
my $key_b = (grep { shard_of('boot', $_) == $s } map { "kB$_" } 1 .. 20)[0];
my $session_a = $router->background_psql('router', on_error_stop => 0,
	extra_params => [ '-U', 'app' ]);
my $session_b = $router->background_psql('router', on_error_stop => 0,
	extra_params => [ '-U', 'app' ]);
# a window of a century, live on the real clock too: a clean restart keeps it
my $call_a = q{SELECT ok, remaining FROM fw_limit('boot', 'kA', 10, '100 years', '2000-01-01 00:00+00')};
my $check_b = "SELECT ok, remaining FROM fw_check('boot', '$key_b', 10, '100 years', '2000-01-01 00:00+00', cost => 0)";
my $remaining_direct = q{SELECT remaining FROM public.fw_check('boot', 'kA', 10, '100 years', '2000-01-01 00:00+00', cost => 0)};

my ($restarted, $answer, $failed, $answer_b, $failed_b, $before);
foreach my $try (1 .. 3)
{
	$before = $shards[$s]->safe_psql('fw', $remaining_direct);
	is($session_a->query($call_a), 't|' . ($before - 1), "a call before the restart (try $try)");
	$session_b->query($check_b);
	my $t0 = time;
	$shards[$s]->restart;
	($answer, $failed) = $session_a->query($call_a);
	($answer_b, $failed_b) = $session_b->query($check_b);
	$restarted = time - $t0;
	last if $restarted < 1.8;
	note sprintf('the restart and the calls took %.1f s: PL/Proxy may have tested the connections itself; again', $restarted);
}
note sprintf('restart and calls within %.2f s', $restarted);
is($answer, 't|' . ($before - 2), 'the first call after the restart is answered') or diag($session_a->{stderr});
is($shards[$s]->safe_psql('fw', $remaining_direct), $before - 2,
	'and spent once (the restart kept the counter: a clean one)');
unlike($session_a->{stderr}, qr/ERROR/, 'without an error');
is($answer_b, "t|10", 'a check after the restart is answered too');
$session_a->{stderr} = $session_b->{stderr} = '';

# pg_terminate_backend: the shard's server did not restart; a call that
# spends may have run when its connection ended, so it is not sent again.
$before = $shards[$s]->safe_psql('fw', $remaining_direct);
is($session_a->query($call_a), 't|' . ($before - 1), 'a call');
$before--;
$shards[$s]->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'app' AND datname = 'fw'");
($answer, $failed) = $session_a->query($call_a);
like($session_a->{stderr}, qr/ERROR:  connection to shard $s of the router ended during the call/,
	'a call that spends, its connection ended by pg_terminate_backend, fails with 08006');
like($session_a->{stderr}, qr/DETAIL:  The shard ended the router's connection with SQLSTATE 57P01/,
	'saying why');
is($shards[$s]->safe_psql('fw', $remaining_direct), $before, 'and spent nothing (it never ran)');
$session_a->{stderr} = '';
is($session_a->query($call_a), 't|' . ($before - 1), 'the next call is answered');
($answer_b, $failed_b) = $session_b->query($check_b);
is($answer_b, 't|10', 'a check whose connection was ended is sent again');
$session_a->quit;
$session_b->quit;

# -- the update of a live 1.0 router ------------------------------------------

my $members_sql = slurp_file(dirname(__FILE__) . '/extension_objects.sql');
sub router_members
{
	my ($d) = @_;
	return $router->safe_psql($d, $members_sql, extra_params => [ '-v', 'extname=fixed_window_proxy' ]);
}
$router->safe_psql('postgres', 'CREATE DATABASE router10');
$router->safe_psql('postgres', 'CREATE DATABASE router11');
# A fresh router, told to route by modulo as a router updated from 1.2 does:
# the function that routes is compiled from that.
$router->safe_psql('router11', q{
	CREATE EXTENSION fixed_window_proxy CASCADE;
	INSERT INTO fw_routing VALUES ('-infinity', 'modulo');});
router_over_shards('router10', '1.0');
($ret, $out, $err) = $router->psql('router10', q{SELECT * FROM fw_check_windows('mix', 'k')});
like($err, qr/REMOTE ERROR: function fw_check_windows\(text, text, integer\) does not exist/,
	"1.0 names fixed_window's functions unqualified: a shard's search_path = '' defeats it");
$router->safe_psql('router10', 'ALTER EXTENSION fixed_window_proxy UPDATE');
is($router->safe_psql('router10', "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window_proxy'"),
	'1.3', 'the live 1.0 router is updated to 1.3');
is(router_members('router10'), router_members('router11'),
	'and has exactly the objects of a fresh 1.3 router');
# it routes as 1.0 did, by modulo (a fresh router routes by jump)
my $modulo_shard = $router->safe_psql('router10', "SELECT fw_shard('mix', 'k', 2)");
is($router->safe_psql('router10', "SELECT fw_key_shard('mix', 'k')"), $modulo_shard,
	'and routes by modulo, as it did');
my $windows = "$plain\nSELECT period, remaining FROM %sfw_check_windows('mix', 'k', 0) ORDER BY 1";
is($router->safe_psql('router10', sprintf($windows, '')),
	$shards[$modulo_shard]->safe_psql('fw', sprintf($windows, 'public.')),
	'its calls reach that shard');

# -- 1.2: the reading of a shard's answer is inlined (issue 22) ----------------

# In 1.1, fw_wire_span was STRICT and IMMUTABLE around STABLE, non-strict
# format(): the planner could not inline it, and each routed call planned
# it anew.  A live 1.1 router updated to 1.2 has the objects of a fresh one,
# plans fw_wire_answer without a call of fw_wire_span, and reads the same
# answers.
$router->safe_psql('postgres', 'CREATE DATABASE router_11');
$router->safe_psql('router_11', "CREATE EXTENSION fixed_window_proxy VERSION '1.1' CASCADE");
my $wire_plan = q{
	SET plan_cache_mode = force_generic_plan;
	PREPARE wire(fw_wire_result) AS SELECT fw_wire_answer($1);
	EXPLAIN (VERBOSE, COSTS OFF) EXECUTE wire(ROW(false, 1.5, 0, 3599.000001, 0));
	PREPARE wire_window(fw_wire_window) AS SELECT fw_wire_answer($1);
	EXPLAIN (VERBOSE, COSTS OFF)
	EXECUTE wire_window(ROW('PT1H', 5, 5, false, true, NULL, 4, 60, 1700000000, 1700003600, 0));
};
like($router->safe_psql('router_11', $wire_plan), qr/fw_wire_span\(/,
	'1.1 calls fw_wire_span in a routed answer\'s plan');
my $wire_answers = q{
	SET TimeZone = 'UTC';
	SELECT fw_wire_answer(ROW(false, 1.5, 0, 3599.000001, 0)::fw_wire_result),
	       fw_wire_answer(ROW(true, NULL, 4, 86400, 0)::fw_wire_result),
	       fw_wire_answer(ROW('P1M', 5, 6, true, false, 0.000001, 0, 59.999999, -1.5,
	                          'Infinity', 0)::fw_wire_window),
	       fw_wire_span(NULL) IS NULL, fw_wire_span(123456789.123456), fw_wire_span(-7261.5),
	       fw_wire_span(0), fw_wire_time(1700000000.5), fw_wire_time(-86400.000001),
	       fw_wire_time('Infinity'), fw_wire_time('-Infinity'), fw_wire_time(NULL) IS NULL;
};
my $answers_11 = $router->safe_psql('router_11', $wire_answers);
$router->safe_psql('router_11', 'ALTER EXTENSION fixed_window_proxy UPDATE');
is(router_members('router_11'), router_members('router11'),
	'the live 1.1 router is updated to 1.3, with the objects of a fresh one');
my $plan_12 = $router->safe_psql('router_11', $wire_plan);
unlike($plan_12, qr/fw_wire_\w+\(/,
	'1.2 inlines every fw_wire_ function into the plans of a routed answer and window');
like($plan_12, qr/format\(.*format\(.*format\(/s, 'which read the shard\'s numbers in place');
is($router->safe_psql('router_11', $wire_answers), $answers_11,
	'and reads the same answers as 1.1');

# -- 1.3: routing by jump, switched to at an instant (issue 30, item 15) ------

# A live 1.2 router whose keys have spent their one token of a century (a
# window live on the real clock, that no test outlives).
$router->safe_psql('postgres', 'CREATE DATABASE router12');
router_over_shards('router12', '1.2');
my $spend = q{SELECT string_agg(g::text, ',' ORDER BY g) FROM generate_series(1, 200) AS g
              WHERE (fw_limit('switch', 'k' || g, 1, '100 years', '2000-01-01 00:00+00')).ok};
my $counters = q{SELECT string_agg(key || ':' || shard, ',' ORDER BY key, shard) FROM fw_counters WHERE name = 'switch'};
is(scalar(split /,/, $router->safe_psql('router12', $spend)), 200, '1.2: 200 keys spend their token');
my $on_12 = $router->safe_psql('router12', $counters);
my $by_modulo = $router->safe_psql('router12', q{
	SELECT string_agg('k' || g || ':' || fw_shard('switch', 'k' || g, 2), ',' ORDER BY 'k' || g)
	FROM generate_series(1, 200) AS g});
is($on_12, $by_modulo, '1.2 routes each key to fw_shard_hash(name, key) modulo 2');

# A session that routed before the update and calls on after it.
my $session = $router->background_psql('router12', on_error_stop => 1, extra_params => [ '-U', 'app' ]);
is($session->query_safe($spend), '', 'and are denied, in a session that calls on across what follows');

$router->safe_psql('router12', 'ALTER EXTENSION fixed_window_proxy UPDATE');
is($router->safe_psql('router12', q{
	SELECT extversion, fw_routing_method(), (SELECT string_agg(since || ' ' || method, ',') FROM fw_routing)
	FROM pg_extension WHERE extname = 'fixed_window_proxy'}),
	'1.3|modulo|-infinity modulo', 'the live 1.2 router is updated to 1.3, and routes by modulo');
is(router_members('router12'), router_members('router11'),
	'with exactly the objects of a fresh 1.3 router told to route by modulo');
is($router->safe_psql('router12', $spend), '', 'every key is found where 1.2 left it: all are denied');
is($session->query_safe($spend), '', 'through a session of 1.2 too');
is($router->safe_psql('router12', $counters), $on_12, 'and no counter is anywhere else');
is($router->safe_psql('router12', q{
	SELECT string_agg('k' || g || ':' || fw_key_shard('switch', 'k' || g), ',' ORDER BY 'k' || g)
	FROM generate_series(1, 200) AS g}), $by_modulo, 'fw_key_shard says so');

# A switch scheduled for later changes nothing before its instant.
$router->safe_psql('router12', "INSERT INTO fw_routing VALUES ('2999-01-01 00:00+00', 'jump')");
is($router->safe_psql('router12', 'SELECT fw_routing_method()'), 'modulo', 'a switch set for 2999 is not in force');
is($router->safe_psql('router12', $spend), '', 'and the keys are routed as before');
is($session->query_safe($spend), '', 'in every session');

# The instant comes (here: the switch is moved to the past).  The router
# routes by jump: the keys whose shard differs start afresh there.
$router->safe_psql('router12', "UPDATE fw_routing SET since = now() - interval '1 second' WHERE method = 'jump'");
is($router->safe_psql('router12', 'SELECT fw_routing_method()'), 'jump', 'the switch is in force');
my @by_jump = split /,/, $router->safe_psql('router12', q{
	SELECT string_agg(g::text, ',' ORDER BY g) FROM generate_series(1, 200) AS g
	WHERE fw_shard('switch', 'k' || g, 2, 'jump') <> fw_shard('switch', 'k' || g, 2, 'modulo')});
cmp_ok(scalar(@by_jump), '>', 60, 'about half the keys have another shard by jump (more than 60 of 200)');
cmp_ok(scalar(@by_jump), '<', 140, 'about half the keys have another shard by jump (fewer than 140 of 200)');
is($session->query_safe($spend), join(',', @by_jump),
	'a session that called before the switch routes by jump at its next call: exactly those keys are allowed again');
is($router->safe_psql('router12', $spend), '', 'and then denied, in every session');
is($router->safe_psql('router12', q{
	SELECT count(*) FROM fw_counters
	WHERE name = 'switch' AND shard = fw_shard(name, key, 2, 'jump') AND shard = fw_key_shard(name, key)}),
	'200', 'each key has its counter on its shard by jump, which fw_key_shard names');
$session->quit;

# A router restored from pg_dump routes as the one dumped.
my $dumped = '';
IPC::Run::run([ 'pg_dump', '-h', $router->host, '-p', $router->port, 'router12' ], '>', \$dumped)
  or die 'pg_dump failed';
$router->safe_psql('postgres', 'CREATE DATABASE router12_restored');
$router->safe_psql('router12_restored', $dumped);
my $routing = q{SELECT (SELECT string_agg(since || ' ' || method, ',' ORDER BY since) FROM fw_routing),
                       fw_routing_method(), pg_get_functiondef('fw_run_on'::regproc)};
is($router->safe_psql('router12_restored', $routing), $router->safe_psql('router12', $routing),
	'a router restored from pg_dump has the same routing');

# The routing is the router's configuration: PUBLIC reads it, and only its
# owner changes it.
is($router->safe_psql('router12', 'SELECT count(*) FROM fw_routing', extra_params => [ '-U', 'app' ]),
	'2', 'an ordinary role reads fw_routing');
($ret, $out, $err) = $router->psql('router12', "INSERT INTO fw_routing VALUES (now(), 'modulo')",
	extra_params => [ '-U', 'app' ]);
like($err, qr/ERROR:  permission denied for table fw_routing/, 'but does not change it');
($ret, $out, $err) = $router->psql('router12', 'SELECT fw_route_compile()', extra_params => [ '-U', 'app' ]);
like($err, qr/ERROR:  permission denied for function fw_route_compile/, 'nor the routing');

# -- 1.3: who compiles the routing, and from what (issue 30, review of item 15)

# Routers listing four shards (two of them twice: only their count matters
# here), and a role that may create servers of a wrapper of its own.
my @connstr = map { shard_connstr($_, 'fw') } @shards;
$router->safe_psql('postgres', q{
	CREATE ROLE mallory LOGIN;
	CREATE DATABASE router_ddl;
	CREATE DATABASE router_rr;});
foreach my $d ('router_ddl', 'router_rr')
{
	$router->safe_psql($d, qq{
		CREATE EXTENSION fixed_window_proxy CASCADE;
		CREATE SERVER fw_shards FOREIGN DATA WRAPPER plproxy OPTIONS (modular_mapping '1',
		    p0 '$connstr[0]', p1 '$connstr[1]', p2 '$connstr[0]', p3 '$connstr[1]');});
}
$router->safe_psql('router_ddl', q{
	CREATE FOREIGN DATA WRAPPER mallorys;
	GRANT USAGE ON FOREIGN DATA WRAPPER mallorys TO mallory;});
my $misrouted = q{SELECT count(*) FILTER (WHERE fw_key_shard('api', g::text)
                                              <> fw_shard('api', g::text, fw_shard_count(), 'jump')),
                          fw_shard_count()
                  FROM generate_series(1, 1000) AS g};
is($router->safe_psql('router_ddl', $misrouted), '0|4', 'a router over four shards routes by jump among them');

# The routing compiled is the one a compilation now writes.
sub compiled_is_current
{
	my ($d) = @_;
	my $now = $router->safe_psql($d, q{SELECT pg_get_functiondef('fw_run_on'::regproc)});
	my $again = $router->safe_psql($d, q{
		BEGIN;
		SELECT fw_route_compile();
		SELECT pg_get_functiondef('fw_run_on'::regproc);
		ROLLBACK;});
	$again =~ s/^\n//;
	return $now eq $again;
}

# An ordinary role's server DDL, from a snapshot taken before the admin
# dropped two shards, wrote the routing of four (1.3 before: 228 of 1,000
# keys sent elsewhere than the fleet routes them, until the next change).
my $mallory = $router->background_psql('router_ddl', on_error_stop => 0, extra_params => [ '-U', 'mallory' ]);
is($mallory->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM fw_shards'), '4',
	"a role's snapshot lists four shards");
$router->safe_psql('router_ddl', 'ALTER SERVER fw_shards OPTIONS (DROP p2, DROP p3)');
$mallory->query_safe('CREATE SERVER mine FOREIGN DATA WRAPPER mallorys; ALTER SERVER mine OPTIONS (ADD a \'1\'); COMMIT');
is($router->safe_psql('router_ddl', $misrouted), '0|2',
	'the admin drops two: an ordinary role creating and altering a server of its own from that snapshot leaves the routing alone');
ok(compiled_is_current('router_ddl'), 'which is the routing of the two shards');

# A transaction of that role that changed a server of its own holds up no
# change of the shards or the routing (1.3 before: both waited for it).
$mallory->query_safe('BEGIN; CREATE SERVER mine2 FOREIGN DATA WRAPPER mallorys; DROP SERVER mine');
($ret, $out, $err) = $router->psql('router_ddl', qq{
	SET lock_timeout = '5s';
	ALTER SERVER fw_shards OPTIONS (ADD p2 '$connstr[0]');
	INSERT INTO fw_routing VALUES ('2999-01-01 00:00+00', 'jump');
	SELECT fw_shard_count();});
is($out, '3', "while it is open, the admin adds a shard and a switch at once") or diag($err);
$mallory->query_safe('ROLLBACK');
is($router->safe_psql('router_ddl', $misrouted), '0|3', 'and the router routes among the three');
ok(compiled_is_current('router_ddl'), 'as a compilation now does');
foreach my $lock ('SELECT FROM fw_routing_compiled FOR KEY SHARE', 'BEGIN; LOCK TABLE fw_routing_compiled IN SHARE MODE')
{
	($ret, $out, $err) = $router->psql('router_ddl', $lock, extra_params => [ '-U', 'mallory' ]);
	like($err, qr/ERROR:  permission denied for table fw_routing_compiled/,
		"nor can the role hold compilations up itself: $lock is denied");
}

# The server that gets the name fw_shards compiles; a router whose server
# lost it routes nothing.
$router->safe_psql('router_ddl', 'ALTER SERVER fw_shards RENAME TO fw_before');
($ret, $out, $err) = $router->psql('router_ddl', q{SELECT fw_key_shard('api', 'k')});
like($err, qr/ERROR:  the router has no shards/, 'fw_shards renamed, the router has no shards');
is($router->safe_psql('router_ddl', 'SELECT fw_routing_method()'), 'jump', '(its routing is not out of date)');
$router->safe_psql('router_ddl', qq{
	CREATE SERVER fw_after FOREIGN DATA WRAPPER plproxy OPTIONS (modular_mapping '1',
	    p0 '$connstr[0]', p1 '$connstr[1]', p2 '$connstr[0]', p3 '$connstr[1]', p4 '$connstr[0]');
	ALTER SERVER fw_after RENAME TO fw_shards;});
is($router->safe_psql('router_ddl', $misrouted), '0|5', 'a server of five renamed fw_shards: the router routes among them');

# A compilation never writes from a snapshot older than the last one: an
# admin's REPEATABLE READ transaction that took its snapshot before another
# admin changed the routing or the shards is refused when it changes the
# routing (1.3 before: it compiled without that change).
my $admin = $router->background_psql('router_rr', on_error_stop => 0);
$admin->query_safe('\set VERBOSITY verbose');
foreach my $change ("INSERT INTO fw_routing VALUES ('2998-01-01 00:00+00', 'modulo')",
	'ALTER SERVER fw_shards OPTIONS (DROP p3)')
{
	$admin->query_safe('BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM fw_routing');
	$router->safe_psql('router_rr', $change);
	$admin->query("INSERT INTO fw_routing VALUES ('2997-01-01 00:00+00', 'jump')");
	like($admin->{stderr}, qr/ERROR:  40001: could not compile the router's routing from this transaction's snapshot/,
		"a switch inserted from a snapshot taken before another admin's \"$change\" is refused");
	$admin->query('COMMIT');
	$admin->{stderr} = '';
	ok(compiled_is_current('router_rr'), 'and the routing is that of the change');
}
($ret, $out, $err) = $router->psql('router_rr', q{
	BEGIN ISOLATION LEVEL REPEATABLE READ;
	INSERT INTO fw_routing VALUES ('2997-01-01 00:00+00', 'jump');
	COMMIT;},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
is($ret, 0, 'one that nobody preceded compiles in REPEATABLE READ') or diag($err);
ok(compiled_is_current('router_rr'), 'the routing of all the switches');

# Two admins inserting switches at once, in READ COMMITTED: the second
# compiles after the first commits, with both rows.
my $other = $router->background_psql('router_rr', on_error_stop => 1);
my $other_pid = $other->query_safe('SELECT pg_backend_pid()');
$admin->query_safe("BEGIN; INSERT INTO fw_routing VALUES ('2996-01-01 00:00+00', 'modulo')");
$other->query_until(qr/sent/, "\\echo sent\nINSERT INTO fw_routing VALUES ('2995-01-01 00:00+00', 'jump');\n");
$router->poll_query_until('router_rr',
	"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $other_pid")
  or die 'the second admin did not wait for the first';
$admin->query_safe('COMMIT');
is($other->query_safe('SELECT count(*) FROM fw_routing'), '4', 'two admins insert a switch each at once');
ok(compiled_is_current('router_rr'), 'and the routing compiled last has both');
$other->quit;
$admin->quit;
$mallory->quit;

# Where the triggers do not fire, nothing compiles the routing: the router
# says so, wherever it names a key's shard or its method, until a superuser
# compiles it (1.3 before: it answered from routing that calls no longer
# followed).
my $out_of_date = qr/ERROR:  55000: the router's compiled routing is out of date\n(?:.*\n)*HINT:  .*SELECT fw_route_compile\(\)/;
my $stale_answers = sub {
	my ($d, $what) = @_;
	foreach my $query (q{SELECT fw_key_shard('api', 'k')}, q{SELECT fw_routing_method()})
	{
		($ret, $out, $err) = $router->psql($d, $query, extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		like($err, $out_of_date, "$what: $query says the routing is out of date");
	}
	$router->safe_psql($d, 'SELECT fw_route_compile()');
	ok(compiled_is_current($d), "$what: fw_route_compile() compiles it");
};

# a data-only restore with --disable-triggers, of a router on modulo into a
# new one
$router->safe_psql('postgres', 'CREATE DATABASE router_modulo');
$router->safe_psql('router_modulo', q{
	CREATE EXTENSION fixed_window_proxy CASCADE;
	INSERT INTO fw_routing VALUES ('-infinity', 'modulo');});
$dumped = '';
IPC::Run::run([ 'pg_dump', '--data-only', '--disable-triggers', '-h', $router->host, '-p', $router->port,
		'router_modulo' ], '>', \$dumped)
  or die 'pg_dump failed';
$router->safe_psql('postgres', 'CREATE DATABASE router_restored');
router_over_shards('router_restored', '');
$router->safe_psql('router_restored', $dumped);
is($router->safe_psql('router_restored', 'TABLE fw_routing'), '-infinity|modulo',
	'a data-only restore with --disable-triggers fills fw_routing');
$stale_answers->('router_restored', 'a restore with --disable-triggers');
is($router->safe_psql('router_restored', q{SELECT fw_key_shard('api', 'k') = fw_shard('api', 'k', 2)}), 't',
	'and then the router routes by modulo');

# a change of fw_routing with session_replication_role = replica
$router->safe_psql('router_restored', q{
	SET session_replication_role = replica;
	INSERT INTO fw_routing VALUES ('2999-01-01 00:00+00', 'jump');});
$stale_answers->('router_restored', 'session_replication_role = replica');

# a shard added in single-user mode (no event trigger fires)
$router->stop;
my $single_out = '';
IPC::Run::run([ 'postgres', '--single', '-D', $router->data_dir, 'router_restored' ],
	'<', \"ALTER SERVER fw_shards OPTIONS (ADD p2 '$connstr[0]');\n", '>&', \$single_out)
  or die "postgres --single failed: $single_out";
$router->start;
is($router->safe_psql('router_restored', 'SELECT fw_shard_count()'), '3', 'a shard is added in single-user mode');
$stale_answers->('router_restored', 'single-user mode');

$router->stop;
$_->stop foreach @shards;
done_testing();
