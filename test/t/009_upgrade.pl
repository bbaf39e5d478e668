# Every change to the SQL objects ships as an upgrade script, tested by
# updating a live installation: version 1.0 is created (from
# fixed_window--1.0.sql), holds counters in shared memory and in the table,
# statistics and a trigger, and is updated with ALTER EXTENSION ... UPDATE to
# the default version of the control file (1.6).  After the update the
# counters of both backends are still there and answer as before, the views
# and admin functions work with their 1.0.1 behaviour, and every member
# object, with its definition, privileges and comment, equals that of a fresh
# CREATE EXTENSION in another database.  Then the 1.1 additions in the updated
# database: named policies (fw_define, fw_limit(name, key)) on both backends,
# next to the 1.0 inline counters, which answer as before; fw_counters' new
# last column period (NULL for inline counters) and fw_stats' shadow_denied.
# Then 1.2's fw_headers in the updated database.
# A second database takes the path one step at a time, 1.0 -> 1.0.1 -> the
# default, with its counters kept, and ends with the objects of a fresh
# installation.  A third, a live 1.2 whose fw_postgrest spent before it
# failed, is updated, and refuses before it spends.  A fourth, a live 1.2.1
# showing what issue 19 found (a leaky function reading fw_overrides, a
# refund by any role, a definition no call could use, a new key denied
# forever, a standby-hostile fw_counters), is updated to 1.3 with its
# counters, and each is fixed.  A fifth, a live 1.3 with counters in shared
# memory and in the table, is updated to 1.4: each counter stays where it was
# and answers as before, and only superusers may resize shared memory.  A
# sixth, a live 1.4 whose fw_stats an admin took from PUBLIC, granted to a
# role and built a view on, is updated to 1.5: fw_stats keeps its rows, its
# grants and that view, and gains no_room; fw_capacity appears, readable by
# PUBLIC.  A seventh, a live 1.5 whose table counted 1,100 limit names (past
# the 1,024 that 1.6 keeps apart), some of them deleted, whose fw_stats and
# fw_capacity an admin took from PUBLIC, granted to a role and built a view
# on, is updated to 1.6: fw_stats keeps every row, each name its statistics,
# the grants and that view stay, the counters of both stores answer as
# before; names made after the update are counted together until
# fw_stats_reset(); fw_metrics appears, readable by PUBLIC, and
# fw_metric_name, which only the owner reads.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $node = new_node('upgrade', shmem => 0, extension => 0, conf => q{
shared_preload_libraries = 'fixed_window'
fixed_window.max_counters = 1000
fixed_window.debug_now = '2026-07-01 12:00:00+00'
});

# The version a new CREATE EXTENSION installs, from the control file.
my $default = $node->safe_psql('postgres',
	q{SELECT default_version FROM pg_available_extensions WHERE name = 'fixed_window'});
is($default, '1.6', 'the control file names 1.6 as the default version');
is( $node->safe_psql('postgres', q{
		SELECT string_agg(source || ' ' || path, ', ' ORDER BY source)
		FROM pg_extension_update_paths('fixed_window')
		WHERE target = '1.6' AND path IS NOT NULL}),
	'1.0 1.0--1.0.1--1.1--1.2--1.2.1--1.3--1.4--1.5--1.6, 1.0.1 1.0.1--1.1--1.2--1.2.1--1.3--1.4--1.5--1.6, '
	  . '1.1 1.1--1.2--1.2.1--1.3--1.4--1.5--1.6, 1.2 1.2--1.2.1--1.3--1.4--1.5--1.6, '
	  . '1.2.1 1.2.1--1.3--1.4--1.5--1.6, 1.3 1.3--1.4--1.5--1.6, 1.4 1.4--1.5--1.6, 1.5 1.5--1.6',
	'update paths to 1.6: from every earlier version, each step in turn');

my $db = 'updated';
$node->safe_psql('postgres', "CREATE DATABASE $db");
$node->safe_psql($db, "CREATE EXTENSION fixed_window VERSION '1.0'");
is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	'1.0', 'version 1.0 installed');

# Counters in shared memory and in the table; a trigger; statistics.
in_turn($node, $db, q{
	SELECT fw_limit('api', 's1', 5, '1 hour', cost => 2);
	SELECT fw_limit('api', 's2', 5, '1 hour') FROM generate_series(1, 6);
	-- storage: table
	SELECT fw_limit('api', 't1', 5, '1 hour', cost => 3);
	SELECT fw_limit('api', 't2', 5, '1 hour') FROM generate_series(1, 6);
	SELECT fw_limit('gc', 'g', 1, '1 second');
	-- storage: default
	CREATE TABLE signups (id int, ip text);
	CREATE TRIGGER signup_quota BEFORE INSERT ON signups
		FOR EACH ROW EXECUTE FUNCTION fw_trigger('sig', 'ip', '2', '1 hour');
	INSERT INTO signups VALUES (1, 'a'), (2, 'a');
});

# What the installation answers, on both backends.
sub answers
{
	my ($d) = @_;
	return in_turn($node, $d // $db, q{
		SELECT string_agg(k || ':' || (SELECT ok || '/' || remaining
			FROM fw_check('api', k, 5, '1 hour', cost => 1)), ',' ORDER BY k)
		FROM unnest(ARRAY['s1', 's2']) k;
		-- storage: table
		SELECT string_agg(k || ':' || (SELECT ok || '/' || remaining
			FROM fw_check('api', k, 5, '1 hour', cost => 1)), ',' ORDER BY k)
		FROM unnest(ARRAY['t1', 't2']) k;
		SELECT string_agg(concat_ws('/', name, key, storage, window_start, window_end, remaining, rate, capacity),
			',' ORDER BY storage, name, key)
		FROM fw_counters;
		SELECT string_agg(concat_ws('/', name, calls, allowed, denied, last_denied_at, since), ',' ORDER BY name)
		FROM fw_stats;
	});
}

# The columns of a view, in order.
sub columns
{
	my ($d, $view) = @_;
	return $node->safe_psql($d, qq{
		SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
		FROM pg_attribute WHERE attrelid = '$view'::regclass AND attnum > 0 AND NOT attisdropped});
}
my $counters_columns = columns($db, 'fw_counters');
my $stats_columns = columns($db, 'fw_stats');

my $before = answers();
like($before, qr{^s1:true/2,s2:false/0\nt1:true/1,t2:false/0\n}, 'version 1.0 answers on both backends');
like($before, qr{api/s1/shmem/.*api/t1/table/}s, 'fw_counters lists both backends');

my ($ret, $out, $err) = $node->psql($db, 'ALTER EXTENSION fixed_window UPDATE');
is($ret, 0, 'ALTER EXTENSION fixed_window UPDATE') or diag($err);
is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	$default, "updated to $default");
is(answers(), $before, 'counters of both backends, fw_counters and fw_stats answer the same after the update');

# The trigger made with 1.0 still limits.
($ret, $out, $err) = $node->psql($db, "INSERT INTO signups VALUES (3, 'a')");
like($err, qr/rate limit "sig" exceeded/, 'the trigger still denies a third row');
$node->safe_psql($db, "INSERT INTO signups VALUES (4, 'b')");

# Counting goes on: a shared-memory call and a table call.
in_turn($node, $db, q{
	SELECT fw_limit('api', 's1', 5, '1 hour');
	-- storage: table
	SELECT fw_limit('api', 't1', 5, '1 hour');
});
is( in_turn($node, $db, q{
		SELECT (fw_check('api', 's1', 5, '1 hour', cost => 0)).remaining;
		-- storage: table
		SELECT (fw_check('api', 't1', 5, '1 hour', cost => 0)).remaining;
	}),
	"2\n1", 'both counters go on spending');

# fw_gc: the one-second table row has passed by 12:00:05; its statistics are
# kept (fw_stat, by the trigger on fw_counter).
is( $node->safe_psql($db, q{
		SET fixed_window.debug_now = '2026-07-01 12:00:05+00';
		SELECT fw_gc()}),
	'1', 'fw_gc deletes the passed row');
is($node->safe_psql($db, "SELECT calls FROM fw_stats WHERE name = 'gc'"), '1',
	'and its statistics are kept');
is($node->safe_psql($db, "SELECT count(*) FROM fw_counter WHERE name = 'api'"), '2',
	'live table rows are kept');

# fw_stats: 16 calls of api (1 + 6 in shared memory, 1 + 6 in the table,
# then one more each), 2 + 1 of sig; fw_stats_reset lists nothing after.
is( $node->safe_psql($db, q{
		SELECT string_agg(concat_ws('/', name, calls, allowed, denied), ',' ORDER BY name) FROM fw_stats}),
	'api/16/14/2,gc/1/1/0,sig/4/3/1', 'fw_stats counts every call');
$node->safe_psql($db, 'SELECT fw_stats_reset()');
is($node->safe_psql($db, 'SELECT count(*) FROM fw_stats'), '0',
	'after fw_stats_reset fw_stats lists nothing (1.0.1: only limits with calls)');
in_turn($node, $db, q{
	SELECT fw_limit('api', 's3', 5, '1 hour');
	-- storage: table
	SELECT fw_limit('api', 't3', 5, '1 hour');
});
is($node->safe_psql($db, q{SELECT concat_ws('/', name, calls, allowed, denied) FROM fw_stats}),
	'api/2/2/0', 'new calls are counted again');

# fw_reset on both backends.
is($node->safe_psql($db, "SELECT fw_reset('api', 's2')"), '1', 'fw_reset removes a shared-memory counter');
is($node->safe_psql($db, "SELECT fw_reset('api', 't2')"), '1', 'fw_reset removes a table counter');
is( in_turn($node, $db, q{
		SELECT (fw_check('api', 's2', 5, '1 hour', cost => 0)).remaining;
		-- storage: table
		SELECT (fw_check('api', 't2', 5, '1 hour', cost => 0)).remaining;
	}),
	"5\n5", 'both keys start afresh');

# The objects of the updated installation equal those of a fresh one.
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION fixed_window');

# Every member object of the extension, with its definition (see the file).
my $members_sql = slurp_file(dirname(__FILE__) . '/extension_objects.sql');
sub members
{
	my ($d, $extname) = @_;
	return $node->safe_psql($d, $members_sql,
		extra_params => [ '-v', 'extname=' . ($extname // 'fixed_window') ]);
}

my $updated = members($db);
my $fresh = members('fresh');
like($fresh, qr/^extension fixed_window \Q$default\E in schema public/, 'the listing names the extension');
my $count = () = $fresh =~ /^(?:function|type|table|view) /mg;
cmp_ok($count, '>=', 19, "the listing has $count member objects");
like($fresh, qr/^function fw_displayable\(timestamp with time zone\)$/m, 'including the function 1.0.1 added');
# PostgreSQL 17 prints the view's columns unqualified, 15 as s.calls
# (docs/testing.md, "Other PostgreSQL versions").
like($fresh, qr/HAVING sum\((?:s\.)?calls\) > 0::numeric/, 'and the 1.0.1 definition of fw_stats');
like($fresh, qr/^function fw_define\(text,integer,interval,timestamp with time zone,integer,boolean,text\)$/m,
	'and the 1.1 objects: fw_define');
like($fresh, qr/^function fw_headers\(text,fw_window_result\[\]\)$/m, 'and the 1.2 objects: fw_headers');
like($fresh, qr/^function fw_postgrest\(text,text,integer\)$/m, 'and fw_postgrest');
like($fresh, qr/^table fw_policy$/m, 'the table fw_policy');
like($fresh, qr/^table fw_override$/m, 'the table fw_override');
like($fresh, qr/^view fw_policies$/m, 'the view fw_policies');
like($fresh, qr/^view fw_overrides$/m, 'the view fw_overrides');
like($fresh, qr/^extension .* config \{[^}]*fw_policy[^}]*\} /, 'fw_policy is a configuration table');
like($fresh, qr/^extension .* config \{[^}]*fw_override[^}]*\} /, 'fw_override too');
is($updated, $fresh, 'an updated 1.0 installation has exactly the objects of a fresh one');

# ---------------------------------------------------------------------------
# 1.1 in the updated database.
# ---------------------------------------------------------------------------
is(columns($db, 'fw_counters'), "$counters_columns, period interval",
	'fw_counters keeps its columns and gains period as the last one');
is(columns($db, 'fw_stats'), "$stats_columns, shadow_denied bigint, no_room bigint",
	'fw_stats keeps its columns and gains shadow_denied (1.1), then no_room (1.5), at the end');

# The inline counters as they stand: fw_check (spending nothing) on both
# backends, and fw_counters.
my $inline = q{
	SELECT string_agg(k || ':' || (SELECT concat_ws('/', ok, remaining)
		FROM fw_check('api', k, 5, '1 hour', cost => 1)), ',' ORDER BY k)
	FROM unnest(ARRAY['s1', 's2', 's3']) k;
	-- storage: table
	SELECT string_agg(k || ':' || (SELECT concat_ws('/', ok, remaining)
		FROM fw_check('api', k, 5, '1 hour', cost => 1)), ',' ORDER BY k)
	FROM unnest(ARRAY['t1', 't2', 't3']) k;
	SELECT string_agg(concat_ws('/', name, key, storage, window_start, window_end, remaining, rate, capacity),
		',' ORDER BY storage, name, key)
	FROM fw_counters WHERE period IS NULL;
};
my $inline_before = in_turn($node, $db, $inline);
like($inline_before, qr{^s1:t/1,s2:t/4,s3:t/3\nt1:t/0,t2:t/4,t3:t/3\n}, 'the inline counters answer as before');
is( $node->safe_psql($db, q{
		SELECT string_agg(concat_ws('/', storage, key, coalesce(period::text, 'NULL')), ',' ORDER BY storage, key)
		FROM fw_counters WHERE name = 'api'}),
	'shmem/s1/NULL,shmem/s3/NULL,table/t1/NULL,table/t3/NULL', 'their period in fw_counters is NULL');

# A policy of 3 an hour and 10 a day, with a shadow window of 1 a minute;
# the same key on both backends.
$node->safe_psql($db, q{
	SELECT fw_define('pol', 3, '1 hour');
	SELECT fw_define('pol', 10, '1 day', comment => 'daily');
	SELECT fw_define('pol', 1, '1 minute', shadow => true);
});
is( $node->safe_psql($db, q{
		SELECT string_agg(concat_ws('/', name, period, rate, shadow, comment), ',' ORDER BY period) FROM fw_policies}),
	'pol/00:01:00/1/t,pol/01:00:00/3/f,pol/1 day/10/f/daily', 'fw_define in the updated database');
# (The cost refers to g so that every row calls fw_limit again.)
my $named = q{
	SELECT string_agg(concat_ws('/', r.ok, r.remaining), ',' ORDER BY g)
	FROM generate_series(1, 4) g, LATERAL fw_limit('pol', 'k', least(g, 1)) r};
is($node->safe_psql($db, $named), 't/2,t/1,t/0,f/0', 'fw_limit(name, key) in shared memory');
is(on_storage($node, $db, 'table', $named), 't/2,t/1,t/0,f/0',
	'fw_limit(name, key) in the table');
is( $node->safe_psql($db, q{
		SELECT string_agg(concat_ws('/', storage, key, period, remaining), ',' ORDER BY storage, period)
		FROM fw_counters WHERE name = 'pol'}),
	'shmem/k/00:01:00/0,shmem/k/01:00:00/0,shmem/k/24:00:00/7,table/k/00:01:00/0,table/k/01:00:00/0,table/k/24:00:00/7',
	'fw_counters: one counter per window, with its period, on both backends');
is( $node->safe_psql($db, q{
		SELECT concat_ws('/', name, calls, allowed, denied, shadow_denied) FROM fw_stats WHERE name = 'pol'}),
	'pol/8/6/2/4', 'fw_stats: each named call once; shadow_denied counts the allowed calls the shadow window refused');
is($node->safe_psql($db, q{SELECT shadow_denied FROM fw_stats WHERE name = 'api'}), '0',
	'and 0 for the inline limit');

# A policy named like the inline limit keeps its own counters.
$node->safe_psql($db, q{SELECT fw_define('api', 1, '1 hour')});
is($node->safe_psql($db, q{
		SELECT string_agg(concat_ws('/', r.ok, r.remaining), ',' ORDER BY g)
		FROM generate_series(1, 2) g, LATERAL fw_limit('api', 's1', least(g, 1)) r}),
	't/0,f/0', 'a policy named api spends its own counter of s1');
is(in_turn($node, $db, $inline), $inline_before, 'the inline counters of api are untouched by it');
cmp_ok($node->safe_psql($db, q{SELECT fw_reset('pol', 'k')}), '>=', 6,
	'fw_reset(name, key) removes the counters of every window on both backends');
is($node->safe_psql($db, q{SELECT count(*) FROM fw_counters WHERE name = 'pol'}), '0', 'none is left');
is($node->safe_psql($db, $named), 't/2,t/1,t/0,f/0', 'the key starts afresh');

# ---------------------------------------------------------------------------
# 1.2 in the updated database: the headers of an inline call's answer.
is($node->safe_psql($db, q{
	SELECT fw_headers(r, 5, '1 minute', 'api')->>'RateLimit'
	FROM fw_check('headers', 'k', 5, '1 minute') AS r}),
	'"api";r=4;t=60', '1.2: fw_headers in the updated database (fw_check counts the call it asks about)');

# One step at a time: 1.0 -> 1.0.1 -> 1.2, with counters kept.
# ---------------------------------------------------------------------------
my $step = 'stepwise';
$node->safe_psql('postgres', "CREATE DATABASE $step");
$node->safe_psql($step, "CREATE EXTENSION fixed_window VERSION '1.0'");
in_turn($node, $step, q{
	SELECT fw_limit('api', 's1', 5, '1 hour', cost => 2);
	SELECT fw_limit('api', 's2', 5, '1 hour') FROM generate_series(1, 6);
	-- storage: table
	SELECT fw_limit('api', 't1', 5, '1 hour', cost => 3);
	SELECT fw_limit('api', 't2', 5, '1 hour') FROM generate_series(1, 6);
});
my $step_before = answers($step);
like($step_before, qr{^s1:true/2,s2:false/0\nt1:true/1,t2:false/0\n}, "$step: version 1.0 answers on both backends");
is(columns($step, 'fw_counters'), $counters_columns, "$step: the 1.0 columns of fw_counters");

$node->safe_psql($step, q{ALTER EXTENSION fixed_window UPDATE TO '1.0.1'});
is($node->safe_psql($step, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	'1.0.1', "$step: updated to 1.0.1");
is(answers($step), $step_before, "$step: 1.0.1 answers the same");

($ret, $out, $err) = $node->psql($step, 'ALTER EXTENSION fixed_window UPDATE');
is($ret, 0, "$step: ALTER EXTENSION fixed_window UPDATE from 1.0.1") or diag($err);
is($node->safe_psql($step, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	$default, "$step: updated to $default");
is(answers($step), $step_before, "$step: $default answers the same, counters of both backends kept");
is(members($step), $fresh, "$step: it has exactly the objects of a fresh installation");
is(in_turn($node, $step, q{
		SELECT fw_define('pol', 2, '1 hour');
		SELECT string_agg(concat_ws('', (fw_limit('pol', 'k')).ok), ',') FROM generate_series(1, 3);
		-- storage: table
		SELECT string_agg(concat_ws('', (fw_limit('pol', 'k')).ok), ',') FROM generate_series(1, 3);
		SELECT count(*) FROM fw_counters WHERE name = 'pol' AND period = '1 hour';
		SELECT count(*) FROM fw_counters WHERE name = 'api' AND period IS NULL;}),
	"\nt,t,f\nt,t,f\n2\n4", "$step: named policies work on both backends; inline counters have period NULL");
is(in_turn($node, $step, q{
		SELECT (fw_limit('api', 's1', 5, '1 hour')).remaining;
		-- storage: table
		SELECT (fw_limit('api', 't1', 5, '1 hour')).remaining;}),
	"2\n1", "$step: the inline counters go on spending");

# ---------------------------------------------------------------------------
# A live 1.2: its fw_postgrest spends, then fails on a response.headers it
# cannot extend.  Updated to 1.2.1, the same call fails before it spends.
my $live = 'live12';
$node->safe_psql('postgres', "CREATE DATABASE $live");
$node->safe_psql($live, "CREATE EXTENSION fixed_window VERSION '1.2'");
my $bad_call = q{
	SELECT fw_define('pgrst', 5, '1 hour');
	SET response.headers = '{"X-Not": "an array"}';
	SELECT fw_postgrest('pgrst', 'k');};
my $remaining = q{SELECT remaining FROM fw_check('pgrst', 'k', cost => 0)};
($ret, $out, $err) = $node->psql($live, $bad_call);
isnt($ret, 0, "$live: 1.2's fw_postgrest fails on a response.headers object");
is($node->safe_psql($live, $remaining), '4', "$live: and 1.2 had spent");
$node->safe_psql($live, 'ALTER EXTENSION fixed_window UPDATE');
is($node->safe_psql($live, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	$default, "$live: updated to $default");
($ret, $out, $err) = $node->psql($live, "\\set VERBOSITY verbose\n$bad_call");
like($err, qr/ERROR:  22023: response.headers is not a JSON array of header objects/,
	"$live: the same call is refused with 22023");
is($node->safe_psql($live, $remaining), '4', "$live: before anything is spent");
is($node->safe_psql($live, q{
	BEGIN;
	SET LOCAL response.headers = '[{"Cache-Control": "no-store"}]';
	SELECT fw_postgrest('pgrst', 'k');
	SELECT current_setting('response.headers')::jsonb->1;
	COMMIT;}),
	"\n" . '{"RateLimit": "\"pgrst\";r=3;t=3600"}',
	"$live: an allowed call adds its headers after the ones set before");
is(members($live), $fresh, "$live: it has exactly the objects of a fresh installation");

# ---------------------------------------------------------------------------
# A live 1.2.1, updated to 1.3.
my $live121 = 'live121';
$node->safe_psql('postgres', "CREATE DATABASE $live121");
$node->safe_psql($live121, "CREATE EXTENSION fixed_window VERSION '1.2.1'");
$node->safe_psql('postgres', q{
	DO $$ BEGIN
	    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'plain') THEN
	        CREATE ROLE plain;
	    END IF;
	END $$});
in_turn($node, $live121, q{
	CREATE SCHEMA m AUTHORIZATION plain;
	SELECT fw_define('sec', 5, '1 hour');
	SELECT fw_override('sec', 'secret@example.com', 100, '1 hour');
	SELECT fw_limit('sec', 'spent');
	-- storage: table
	SELECT fw_limit('sec', 'spent-in-table', 3);
});
# What 1.3 changes, asked as the role "plain" where it matters.
my $probe = q{
	SET ROLE plain;
	CREATE OR REPLACE FUNCTION m.leak(text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001
	    AS $$BEGIN RAISE NOTICE 'leaked: %', $1; RETURN true; END$$;
	SELECT count(*) FROM fw_overrides WHERE m.leak(key);
	SELECT fw_refund('sec', 'spent', 1);
};
($ret, $out, $err) = $node->psql($live121, $probe);
like($err, qr/leaked: secret\@example\.com/, "$live121: 1.2.1's fw_overrides shows a leaky function others' keys");
unlike($err, qr/permission denied/, "$live121: and any role may refund");
($ret, $out, $err) = $node->psql($live121, q{SELECT fw_define('far', 10, '300000 years')});
is($ret, 0, "$live121: and a definition no call can use is taken");
$node->safe_psql($live121, q{SELECT fw_undefine('far')});
# A denial's retry time is the library's answer: it holds from the moment
# the new library is installed, before the objects are updated.
is( $node->safe_psql($live121, q{
		SET fixed_window.debug_now = '2026-07-01 12:00:30+00';
		SELECT (fw_limit('new', 'k', 5, '1 minute', capacity => 10, cost => 8)).retry_after;
		SET fixed_window.debug_now = '2026-07-01 12:01:00+00';
		SELECT (fw_check('new', 'k', 5, '1 minute', capacity => 10, cost => 8)).ok;}),
	"00:00:30\nt", "$live121: with the new library, a new key denied is allowed at its retry time");
my $list_counters = q{
	SELECT string_agg(concat_ws('/', name, key, storage, remaining), ',' ORDER BY storage, key) FROM fw_counters};
my $counters121 = $node->safe_psql($live121, $list_counters);

$node->safe_psql($live121, 'ALTER EXTENSION fixed_window UPDATE');
is($node->safe_psql($live121, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	$default, "$live121: updated to $default");
is($node->safe_psql($live121, $list_counters), $counters121, "$live121: its counters, of both backends, are kept");
($ret, $out, $err) = $node->psql($live121, $probe);
unlike($err, qr/leaked: secret/, "$live121: fw_overrides hides others' keys from a leaky function");
like($err, qr/permission denied for function fw_refund/, "$live121: fw_refund is no longer for every role");
($ret, $out, $err) = $node->psql($live121, "\\set VERBOSITY verbose\nSELECT fw_define('far', 10, '300000 years')");
like($err, qr/ERROR:  22008: window boundary out of range/, "$live121: a definition no call can use is refused");
is(members($live121), $fresh, "$live121: it has exactly the objects of a fresh installation");

# ---------------------------------------------------------------------------
# A live 1.3, updated to 1.4: where its counters live does not change.
my $live13 = 'live13';
$node->safe_psql('postgres', "CREATE DATABASE $live13");
$node->safe_psql($live13, "CREATE EXTENSION fixed_window VERSION '1.3'");
in_turn($node, $live13, q{
	SELECT fw_limit('l13', 'in-shmem', 5, '1 hour', cost => 2);
	-- storage: table
	SELECT fw_limit('l13', 'in-table', 5, '1 hour', cost => 3);
});
my $counters13 = $node->safe_psql($live13, $list_counters);
$node->safe_psql($live13, "ALTER EXTENSION fixed_window UPDATE TO '1.4'");
is($node->safe_psql($live13, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	'1.4', "$live13: updated to 1.4");
is($node->safe_psql($live13, $list_counters), $counters13,
	"$live13: each counter is kept where it was, in shared memory or in the table");
is($node->safe_psql($live13, q{SELECT fw_storage_in_use()}), 'shmem',
	"$live13: a preloaded server's calls keep using shared memory (storage = auto)");
($ret, $out, $err) = $node->psql($live13, q{SET ROLE plain; SELECT fw_resize_counters(2000)});
like($err, qr/permission denied for function fw_resize_counters/, "$live13: an ordinary role cannot resize shared memory");
$node->safe_psql($live13, 'ALTER EXTENSION fixed_window UPDATE');
is(members($live13), $fresh, "$live13: it has exactly the objects of a fresh installation");

# ---------------------------------------------------------------------------
# A live 1.4, updated to 1.5: fw_stats keeps its rows, its grants and the
# views built on it, and gains no_room; fw_capacity is readable by PUBLIC.
# A live installation of a version, as an admin left it: counters of a limit
# in both stores (3 calls in shared memory, 2 in the table, 1 allowed in
# each), the views named taken from PUBLIC and granted to a role of
# monitoring, and a view built on fw_stats granted to it too.
sub live_monitored
{
	my ($d, $version, $limit, $role, @views) = @_;
	my $views = join(', ', @views);
	$node->safe_psql('postgres', "CREATE DATABASE $d");
	$node->safe_psql($d, "CREATE EXTENSION fixed_window VERSION '$version'");
	in_turn($node, $d, qq{
		SELECT fw_limit('$limit', 'in-shmem', 1, '1 hour') FROM generate_series(1, 3);
		-- storage: table
		SELECT fw_limit('$limit', 'in-table', 1, '1 hour') FROM generate_series(1, 2);
		DO \$\$ BEGIN
		    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$role') THEN
		        CREATE ROLE $role;
		    END IF;
		END \$\$;
		REVOKE SELECT ON $views FROM PUBLIC;
		GRANT SELECT ON $views TO $role;
		CREATE VIEW dashboard AS SELECT name, calls, denied FROM fw_stats;
		GRANT SELECT ON dashboard TO $role;
	});
}

# The admin gives back what live_monitored took.
sub give_back
{
	my ($d, $role, @views) = @_;
	my $views = join(', ', @views);
	$node->safe_psql($d, qq{DROP VIEW dashboard; GRANT SELECT ON $views TO PUBLIC; REVOKE SELECT ON $views FROM $role});
}

my $live14 = 'live14';
live_monitored($live14, '1.4', 'l14', 'monitor14', 'fw_stats');
my $stats14 = q{SET ROLE monitor14; SELECT name, calls, allowed, denied FROM fw_stats WHERE name = 'l14'};
is($node->safe_psql($live14, $stats14), 'l14|5|2|3', "$live14: the role granted fw_stats reads it on 1.4");
$node->safe_psql($live14, "ALTER EXTENSION fixed_window UPDATE TO '1.5'");
is($node->safe_psql($live14, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	'1.5', "$live14: updated to 1.5");
is($node->safe_psql($live14, $stats14), 'l14|5|2|3', "$live14: fw_stats keeps its rows and its grant");
is($node->safe_psql($live14, q{SET ROLE monitor14; SELECT no_room FROM fw_stats WHERE name = 'l14'}),
	'0', "$live14: and counts calls that found no room");
($ret, $out, $err) = $node->psql($live14, q{SET ROLE plain; SELECT count(*) FROM fw_stats});
like($err, qr/permission denied for view fw_stats/, "$live14: PUBLIC's revoked SELECT stays revoked");
is($node->safe_psql($live14, q{SET ROLE monitor14; SELECT name, calls, denied FROM dashboard WHERE name = 'l14'}),
	'l14|5|3', "$live14: a view built on fw_stats still works");
is( $node->safe_psql($live14, q{
		SET ROLE plain;
		SELECT string_agg(storage || ' ' || scope || ' ' || used, ', ' ORDER BY storage, scope)
		FROM fw_capacity WHERE storage = 'table' OR scope = 'database' AND name = current_database()}),
	'shmem database 1, table database 1', "$live14: an ordinary role reads fw_capacity");
give_back($live14, 'monitor14', 'fw_stats');
$node->safe_psql($live14, 'ALTER EXTENSION fixed_window UPDATE');
is(members($live14), $fresh, "$live14: with its grants back, it has exactly the objects of a fresh installation");

# ---------------------------------------------------------------------------
# A live 1.5, updated to 1.6.  The library is 1.6's already, as on a server
# whose package was upgraded before ALTER EXTENSION ... UPDATE.
my $live15 = 'live15';
live_monitored($live15, '1.5', 'l15', 'monitor15', 'fw_stats', 'fw_capacity');
# 1,100 names more on the table, the first 50 denied once, then deleted.
on_storage($node, $live15, 'table', q{
	SELECT count(*) FROM (SELECT fw_limit('l15_' || g, 'k', 1, '1 hour') FROM generate_series(1, 1100) g) AS c;
	SELECT fw_limit('l15_' || g, 'k', 1, '1 hour') FROM generate_series(1, 50) g;
	SELECT sum(fw_reset('l15_' || g)) FROM generate_series(1, 50) g;
});
my $stats15 = q{
	SET ROLE monitor15;
	SELECT count(*), count(name), sum(calls), sum(allowed), sum(denied),
	       string_agg(name || ':' || calls || ':' || denied, ',' ORDER BY name) FILTER (WHERE name IN ('l15', 'l15_1', 'l15_1100'))
	FROM fw_stats};
my $before15 = $node->safe_psql($live15, $stats15);
is($before15, '1101|1101|1155|1102|53|l15:5:3,l15_1:2:1,l15_1100:1:0',
	"$live15: fw_stats on 1.5, 1,101 names, 50 of them with deleted rows");
my $counters15 = $node->safe_psql($live15, $list_counters);
$node->safe_psql($live15, "ALTER EXTENSION fixed_window UPDATE TO '1.6'");
is($node->safe_psql($live15, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	'1.6', "$live15: updated to 1.6");
is($node->safe_psql($live15, $stats15), $before15,
	"$live15: fw_stats keeps every row, each name its own, and its grant");
is($node->safe_psql($live15, $list_counters), $counters15, "$live15: the counters of both stores are kept");
($ret, $out, $err) = $node->psql($live15, q{SET ROLE plain; SELECT count(*) FROM fw_stats});
like($err, qr/permission denied for view fw_stats/, "$live15: PUBLIC's revoked SELECT on fw_stats stays revoked");
($ret, $out, $err) = $node->psql($live15, q{SET ROLE plain; SELECT count(*) FROM fw_capacity});
like($err, qr/permission denied for view fw_capacity/, "$live15: and on fw_capacity");
is( $node->safe_psql($live15, q{SET ROLE monitor15; SELECT count(*), sum(calls) FROM dashboard}),
	'1101|1155', "$live15: the view built on fw_stats still works");
is( $node->safe_psql($live15, q{
		SET ROLE monitor15;
		SELECT capacity, used FROM fw_capacity WHERE storage = 'table' AND scope = 'statistics'}),
	'1024|1101', "$live15: fw_capacity, granted as before, shows the table's 1,101 names, past its 1,024");
is( $node->safe_psql($live15, q{
		SET ROLE plain;
		SELECT count(*), count(name), sum(calls) FROM fw_metrics WHERE storage = 'table'}),
	'1101|1101|1152', "$live15: fw_metrics, for PUBLIC, has every name the table counted");
($ret, $out, $err) = $node->psql($live15, q{SET ROLE plain; SELECT count(*) FROM fw_metric_name});
like($err, qr/permission denied for table fw_metric_name/, "$live15: fw_metric_name is not PUBLIC's");
# Names made after the update are counted together, until a reset frees
# the names.
my $unnamed15 = q{
	SELECT coalesce(name, '(unnamed)') || ':' || calls FROM fw_metrics
	WHERE storage = 'table' AND (name IS NULL OR name = 'l15_new')};
is( on_storage($node, $live15, 'table', q{
		SELECT ok FROM fw_limit('l15_new', 'k', 1, '1 hour');} . $unnamed15),
	"t\n(unnamed):1", "$live15: a name made after the update is counted together");
is( on_storage($node, $live15, 'table', q{
		SELECT fw_stats_reset();
		SELECT ok FROM fw_limit('l15_new', 'k2', 1, '1 hour');} . $unnamed15),
	"\nt\nl15_new:1", "$live15: after fw_stats_reset(), it has a place of its own");
give_back($live15, 'monitor15', 'fw_stats', 'fw_capacity');
is(members($live15), $fresh, "$live15: with its grants back, it has exactly the objects of a fresh installation");

$node->stop;
done_testing();
