# Every change to the SQL objects ships as an upgrade script, tested by
# updating a live installation: version 1.0 is created (from
# fixed_window--1.0.sql), holds counters in shared memory and in the table,
# statistics and a trigger, and is updated with ALTER EXTENSION ... UPDATE.
# After the update the counters of both backends are still there and answer
# as before, the views and admin functions work with their 1.0.1 behaviour,
# and every member object, with its definition, privileges and comment,
# equals that of a fresh CREATE EXTENSION in another database.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'fixed_window'
fixed_window.max_counters = 1000
fixed_window.debug_now = '2026-07-01 12:00:00+00'
});
$node->start;

my $db = 'updated';
$node->safe_psql('postgres', "CREATE DATABASE $db");
$node->safe_psql($db, "CREATE EXTENSION fixed_window VERSION '1.0'");
is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	'1.0', 'version 1.0 installed');

# Counters in shared memory and in the table; a trigger; statistics.
$node->safe_psql($db, q{
	SELECT fw_limit('api', 's1', 5, '1 hour', cost => 2);
	SELECT fw_limit('api', 's2', 5, '1 hour') FROM generate_series(1, 6);
	SET fixed_window.storage = 'table';
	SELECT fw_limit('api', 't1', 5, '1 hour', cost => 3);
	SELECT fw_limit('api', 't2', 5, '1 hour') FROM generate_series(1, 6);
	SELECT fw_limit('gc', 'g', 1, '1 second');
	RESET fixed_window.storage;
	CREATE TABLE signups (id int, ip text);
	CREATE TRIGGER signup_quota BEFORE INSERT ON signups
		FOR EACH ROW EXECUTE FUNCTION fw_trigger('sig', 'ip', '2', '1 hour');
	INSERT INTO signups VALUES (1, 'a'), (2, 'a');
});

# What the installation answers, on both backends.
sub answers
{
	return $node->safe_psql($db, q{
		SELECT string_agg(k || ':' || (SELECT ok || '/' || remaining
			FROM fw_check('api', k, 5, '1 hour', cost => 1)), ',' ORDER BY k)
		FROM unnest(ARRAY['s1', 's2']) k;
		SET fixed_window.storage = 'table';
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

my $before = answers();
like($before, qr{^s1:true/2,s2:false/0\nt1:true/1,t2:false/0\n}, 'version 1.0 answers on both backends');
like($before, qr{api/s1/shmem/.*api/t1/table/}s, 'fw_counters lists both backends');

my ($ret, $out, $err) = $node->psql($db, 'ALTER EXTENSION fixed_window UPDATE');
is($ret, 0, 'ALTER EXTENSION fixed_window UPDATE') or diag($err);
is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'fixed_window'"),
	'1.0.1', 'updated to 1.0.1');
is(answers(), $before, 'counters of both backends, fw_counters and fw_stats answer the same after the update');

# The trigger made with 1.0 still limits.
($ret, $out, $err) = $node->psql($db, "INSERT INTO signups VALUES (3, 'a')");
like($err, qr/rate limit "sig" exceeded/, 'the trigger still denies a third row');
$node->safe_psql($db, "INSERT INTO signups VALUES (4, 'b')");

# Counting goes on: a shared-memory call and a table call.
$node->safe_psql($db, q{
	SELECT fw_limit('api', 's1', 5, '1 hour');
	SET fixed_window.storage = 'table';
	SELECT fw_limit('api', 't1', 5, '1 hour');
});
is( $node->safe_psql($db, q{
		SELECT (fw_check('api', 's1', 5, '1 hour', cost => 0)).remaining;
		SET fixed_window.storage = 'table';
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
$node->safe_psql($db, q{
	SELECT fw_limit('api', 's3', 5, '1 hour');
	SET fixed_window.storage = 'table';
	SELECT fw_limit('api', 't3', 5, '1 hour');
});
is($node->safe_psql($db, q{SELECT concat_ws('/', name, calls, allowed, denied) FROM fw_stats}),
	'api/2/2/0', 'new calls are counted again');

# fw_reset on both backends.
is($node->safe_psql($db, "SELECT fw_reset('api', 's2')"), '1', 'fw_reset removes a shared-memory counter');
is($node->safe_psql($db, "SELECT fw_reset('api', 't2')"), '1', 'fw_reset removes a table counter');
is( $node->safe_psql($db, q{
		SELECT (fw_check('api', 's2', 5, '1 hour', cost => 0)).remaining;
		SET fixed_window.storage = 'table';
		SELECT (fw_check('api', 't2', 5, '1 hour', cost => 0)).remaining;
	}),
	"5\n5", 'both keys start afresh');

# The objects of the updated installation equal those of a fresh one.
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION fixed_window');

my $members = q{
WITH m AS (
    SELECT d.classid, d.objid, d.objsubid
    FROM pg_depend d
    JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
    WHERE e.extname = 'fixed_window' AND d.deptype = 'e'
)
SELECT (SELECT format('extension %s %s in schema %s, relocatable %s, config %s %s',
                      extname, extversion, extnamespace::regnamespace, extrelocatable,
                      coalesce(extconfig::text, '-'), coalesce(extcondition::text, '-'))
        FROM pg_extension WHERE extname = 'fixed_window')
    || E'\n' ||
    string_agg(x.descr || E'\n' || x.def, E'\n' ORDER BY x.descr)
FROM (
    SELECT pg_describe_object(m.classid, m.objid, m.objsubid) AS descr,
        concat_ws(E'\n',
            '  comment: ' || coalesce(obj_description(m.objid, m.classid::regclass::text), '-'),
            CASE m.classid
            WHEN 'pg_proc'::regclass THEN
                (SELECT '  acl: ' || coalesce(p.proacl::text, 'default') || E'\n  owner: ' || p.proowner::regrole
                        || E'\n' || pg_get_functiondef(p.oid)
                 FROM pg_proc p WHERE p.oid = m.objid)
            WHEN 'pg_type'::regclass THEN
                (SELECT '  type: ' || t.typtype::text || ' ' || format_type(t.oid, NULL)
                        || ' acl: ' || coalesce(t.typacl::text, 'default')
                        || ' owner: ' || t.typowner::regrole
                        || coalesce(E'\n  attributes: ' || (
                            SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', '
                                              ORDER BY a.attnum)
                            FROM pg_attribute a
                            WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped), '')
                 FROM pg_type t WHERE t.oid = m.objid)
            WHEN 'pg_class'::regclass THEN
                (SELECT concat_ws(E'\n',
                    '  relkind: ' || c.relkind::text || ' persistence: ' || c.relpersistence::text
                        || ' acl: ' || coalesce(c.relacl::text, 'default')
                        || ' owner: ' || c.relowner::regrole
                        || ' options: ' || coalesce(c.reloptions::text, '-'),
                    CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid, true) END,
                    (SELECT string_agg(format('  column %s %s%s%s%s acl %s comment %s',
                                a.attname, format_type(a.atttypid, a.atttypmod),
                                CASE WHEN a.attcollation <> 0 THEN ' collate ' || a.attcollation::regcollation END,
                                CASE WHEN a.attnotnull THEN ' not null' END,
                                ' default ' || pg_get_expr(ad.adbin, ad.adrelid),
                                coalesce(a.attacl::text, 'default'),
                                coalesce(col_description(c.oid, a.attnum), '-')),
                            E'\n' ORDER BY a.attnum)
                     FROM pg_attribute a
                     LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                     WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
                    (SELECT string_agg('  index ' || pg_get_indexdef(i.indexrelid), E'\n' ORDER BY 1)
                     FROM pg_index i WHERE i.indrelid = c.oid),
                    (SELECT string_agg('  constraint ' || co.conname || ' ' || pg_get_constraintdef(co.oid),
                                       E'\n' ORDER BY co.conname)
                     FROM pg_constraint co WHERE co.conrelid = c.oid),
                    (SELECT string_agg('  ' || pg_get_triggerdef(tg.oid, true), E'\n' ORDER BY tg.tgname)
                     FROM pg_trigger tg WHERE tg.tgrelid = c.oid AND NOT tg.tgisinternal),
                    (SELECT string_agg('  rule ' || r.rulename || ' ' || pg_get_ruledef(r.oid, true),
                                       E'\n' ORDER BY r.rulename)
                     FROM pg_rewrite r WHERE r.ev_class = c.oid AND c.relkind <> 'v'),
                    (SELECT string_agg('  policy ' || pol.polname, E'\n' ORDER BY pol.polname)
                     FROM pg_policy pol WHERE pol.polrelid = c.oid))
                 FROM pg_class c WHERE c.oid = m.objid)
            END) AS def
    FROM m
) AS x
};

my $updated = $node->safe_psql($db, $members);
my $fresh = $node->safe_psql('fresh', $members);
like($fresh, qr/^extension fixed_window 1\.0\.1 in schema public/, 'the listing names the extension');
my $count = () = $fresh =~ /^(?:function|type|table|view) /mg;
cmp_ok($count, '>=', 19, "the listing has $count member objects");
like($fresh, qr/^function fw_displayable\(timestamp with time zone\)$/m, 'including the function 1.0.1 added');
like($fresh, qr/HAVING sum\(s\.calls\) > 0::numeric/, 'and the 1.0.1 definition of fw_stats');
is($updated, $fresh, 'an updated 1.0 installation has exactly the objects of a fresh one');

$node->stop;
done_testing();
