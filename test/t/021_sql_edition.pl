# The SQL edition (fixed_window_sql, issue 34), its three ways in and the way
# out, on one server that does not load the library:
#
#   (a) alice owns database app and is not a superuser: she creates the
#       trusted extension fixed_window_sql there, allows herself the test
#       clock (fw_setting_grant), and a sequence of inline and named calls
#       (several windows, an override, an exemption, a refund, a reset, a
#       calendar month, denials and their retry_after, errors and their
#       SQLSTATEs and messages) answers exactly what the C extension on its
#       table backend answers, in database c, for the superuser;
#   (b) mallory, an ordinary role, sets fixed_window.debug_now and
#       fixed_window.fail_open in app: her calls are judged at the real
#       clock, her errors stay errors, her denials denials;
#   (c) carol, who may only create in schema rl of database plain (no
#       extension, no other privilege), installs the plain script with
#       psql -f, calls it, and runs it again: counters and policies stay; a
#       newer plain script upgrades it in place, and an older one is then
#       refused; the plain script refuses a schema that holds the extension;
#   (d) pg_tle's install script, run against a stub of
#       pgtle.install_extension that records its arguments, records a script
#       that, run as pg_tle runs it into an empty schema, makes the edition;
#   (e) examples/sql_edition/move_to_c.sql moves database move from the
#       edition to the C extension keeping policies and overrides.
#
# The clock is fixed; nothing sleeps.
use strict;
use warnings;

use File::Basename qw(dirname);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

my $root = dirname(__FILE__) . '/../..';
my $tmp = PostgreSQL::Test::Utils::tempdir;

# product($name): the edition's product made now from the tree's sources.
sub product
{
	my ($what) = @_;
	my $file = "$tmp/$what.sql";
	system('bash', "$root/scripts/sql_edition.sh", $what, $file) == 0
	  or BAIL_OUT("scripts/sql_edition.sh $what failed");
	return $file;
}

# psql as a role; returns (exit code, stdout, stderr).
sub as_role
{
	my ($node, $db, $role, $sql, @params) = @_;
	my ($out, $err);
	my $ret = $node->psql($db, $sql, stdout => \$out, stderr => \$err,
		extra_params => [ '-U', $role, @params ]);
	return ($ret, $out, $err);
}

sub safe_as_role
{
	my ($node, $db, $role, $sql) = @_;
	my ($ret, $out, $err) = as_role($node, $db, $role, $sql);
	die "psql as $role in $db failed: $err" if $ret != 0;
	return $out;
}

my $node = new_node('sql_edition', shmem => 0, extension => 0);
$node->safe_psql('postgres', q{
	CREATE ROLE alice LOGIN;
	CREATE ROLE mallory LOGIN;
	CREATE ROLE carol LOGIN;
	CREATE DATABASE app OWNER alice;
	CREATE DATABASE c;
	CREATE DATABASE plain;
	CREATE DATABASE tle;
	CREATE DATABASE move;
});

# (a) The trusted edition, created by the database's owner.
safe_as_role($node, 'app', 'alice', q{
	CREATE EXTENSION fixed_window_sql;
	INSERT INTO fw_setting_grant (setting, role_name) VALUES ('fixed_window.debug_now', 'alice');
});
is($node->safe_psql('app', q{
	SELECT extowner::regrole || ' ' || extversion || ' ' || r.rolsuper
	FROM pg_extension e JOIN pg_roles r ON r.oid = e.extowner WHERE extname = 'fixed_window_sql'}),
	'alice 1.6 false', 'alice, no superuser, created fixed_window_sql 1.6');
is($node->safe_psql('app', q{
	SELECT string_agg(DISTINCT c.relowner::regrole::text, ',')
	FROM pg_class c WHERE c.relname IN ('fw_counter', 'fw_policy', 'fw_override', 'fw_setting_grant')}),
	'alice', "the tables its SECURITY DEFINER functions write are alice's");
is($node->safe_psql('app', q{
	SELECT count(*) FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
	JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'fixed_window_sql'
	WHERE p.prosecdef AND p.proowner <> 'alice'::regrole}),
	'0', "every SECURITY DEFINER function is alice's, none the bootstrap superuser's");
$node->safe_psql('c', 'CREATE EXTENSION fixed_window');

my $calls = q{
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE q;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
SET fixed_window.debug_now = '2026-03-01 12:00:00+00';
SELECT fw_limit('api', 'k1', 2, '1 minute') FROM generate_series(1, 3);
SELECT * FROM fw_check('api', 'k1', 2, '1 minute');
SELECT fw_limit('day', 'k1', 5, '1 day', '2026-01-01 06:00:00+00', 2, 8);
SELECT fw_limit('month', 'k1', 1, '1 month') FROM generate_series(1, 2);
SELECT fw_define('plan', 3, '1 hour');
SELECT fw_define('plan', 5, '1 day', comment => 'daily');
SELECT fw_define('plan', 2, '1 minute', shadow => true);
SELECT fw_override('plan', 'vip', 6, '1 hour');
SELECT fw_exempt('plan', 'root');
SELECT fw_limit('plan', 'u1') FROM generate_series(1, 4);
SELECT fw_limit('plan', 'vip') FROM generate_series(1, 7);
SELECT fw_limit('plan', 'root') FROM generate_series(1, 4);
SELECT fw_refund('plan', 'u1', 1);
SELECT fw_limit('plan', 'u1', 2);
SELECT * FROM fw_limit_windows('plan', 'u2', 1);
SET fixed_window.debug_now = '2026-03-01 12:59:59.5+00';
SELECT fw_limit('api', 'k1', 2, '1 minute');
SELECT * FROM fw_check('plan', 'u1');
SET fixed_window.debug_now = '2026-03-01 13:00:00+00';
SELECT fw_limit('plan', 'u1') FROM generate_series(1, 3);
SET fixed_window.debug_now = '2026-03-31 23:59:59+00';
SELECT fw_limit('month', 'k1', 1, '1 month');
SET fixed_window.debug_now = '2026-04-01 00:00:00+00';
SELECT fw_limit('month', 'k1', 1, '1 month');
SELECT pg_temp.try($$SELECT fw_limit('api', 'k1', 0, '1 minute')$$);
SELECT pg_temp.try($$SELECT fw_limit('api', 'k1', 1, '-1 minute')$$);
SELECT pg_temp.try($$SELECT fw_limit('api', NULL, 1, '1 minute')$$);
SELECT pg_temp.try($$SELECT fw_limit('nope', 'k1')$$);
SELECT pg_temp.try($$SELECT fw_define('plan', 1, '0 seconds')$$);
SELECT pg_temp.try($$SELECT fw_override('plan', 'vip', 1, '2 hours')$$);
SELECT fw_reset('api', 'k1');
SELECT fw_limit('api', 'k1', 2, '1 minute');
SELECT name, period, rate, capacity, start, shadow, comment FROM fw_policies ORDER BY name, period;
SELECT name, key, period, rate, capacity, exempt, created_by = current_user FROM fw_overrides ORDER BY 1, 2, 3;
};
my $c_answers = $node->safe_psql('c', $calls);
my ($ret, $sql_answers, $err) = as_role($node, 'app', 'alice', $calls);
is($err, '', 'alice\'s calls raise no error');
is($sql_answers, $c_answers,
	'alice, owner of app, gets the C extension\'s answers from fixed_window_sql, errors included');
like($c_answers, qr/^\(f,00:00:\d\d,0,/m, 'the sequence has a denial with its retry_after');
like($c_answers, qr/^22023: /m, 'and an error with its SQLSTATE');

# A role whose name needs quoting spends as any other; on the real clock a
# policy's windows are those the call decided (an hour from 1970, so that
# now() of the same transaction lies in it but for a call made in the last
# microseconds of an hour); the internal functions are the owner's only.
$node->safe_psql('postgres', 'CREATE ROLE "Web-App" LOGIN');
safe_as_role($node, 'app', 'alice', q{SELECT fw_define('hourly', 5, '1 hour')});
is(safe_as_role($node, 'app', 'Web-App', q{
	SELECT ok, remaining FROM fw_limit('quoted', 'k', 2, '1 minute');
	SELECT window_start = date_trunc('hour', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
	       AND window_end = window_start + interval '1 hour' AND remaining = 4
	FROM fw_limit_windows('hourly', 'k', 1)}),
	"t|1
t", 'a role named "Web-App" spends; fw_limit_windows gives the window the call decided');
($ret, undef, $err) = as_role($node, 'app', 'mallory',
	q{SELECT fw_inline('s', 'quoted', 'k', 2, '1 minute', '1970-01-01+00', 1, NULL)});
like($err, qr/permission denied for function fw_inline/, 'an ordinary role cannot call an internal function');

# (b) An ordinary role's test clock and fail_open change nothing.
my $real = safe_as_role($node, 'app', 'mallory', q{
	SET fixed_window.debug_now = '2100-01-01 00:00:00+00';
	SET fixed_window.fail_open = on;
	SELECT (fw_limit('mallory', 'k', 1, '1 day')).ok;
	SELECT (fw_limit('mallory', 'k', 1, '1 day')).ok;
	SELECT (fw_check('mallory', 'k', 1, '1 day')).reset_after <= '1 day';
});
is($real, "t\nf\nt", "mallory's calls are counted and denied as anyone's");
is($node->safe_psql('app', q{
	SELECT window_start <= now() AND window_end > now() FROM fw_counter WHERE name = 'mallory'}),
	't', "mallory's fixed_window.debug_now is ignored: her calls are judged at the real clock");
my $out;
($ret, $out, $err) = as_role($node, 'app', 'mallory', q{
	SET fixed_window.fail_open = on;
	SELECT fw_limit('mallory', 'k', 0, '1 day');
}, '-v', 'VERBOSITY=sqlstate');
isnt($ret, 0, "with mallory's fail_open an error stays an error");
like($err, qr/ERROR:\s+22023/, '... with its SQLSTATE');

# (c) The plain script, by a role that may only create in one schema.
$node->safe_psql('plain', q{
	REVOKE ALL ON DATABASE plain FROM PUBLIC;
	GRANT CONNECT ON DATABASE plain TO carol;
	CREATE SCHEMA rl;
	GRANT USAGE, CREATE ON SCHEMA rl TO carol;
});
my $plain = product('plain');
my @plain_run = ('-X', '-q', '-v', 'schema=rl', '-f', $plain);
($ret, $out, $err) = as_role($node, 'plain', 'carol', '', @plain_run);
is($ret, 0, 'carol installs the plain script into schema rl with psql -f') or diag($err);
is($node->safe_psql('plain', q{
	SELECT has_database_privilege('carol', 'plain', 'CREATE')::text
	       || has_database_privilege('carol', 'plain', 'TEMP')::text
	       || (SELECT rolsuper FROM pg_roles WHERE rolname = 'carol')::text}),
	'falsefalsefalse', 'carol has no privilege on the database beyond CONNECT');
my $plain_calls = q{
	SET search_path = rl;
	SET fixed_window.debug_now = '2026-03-01 12:00:00+00';
	SELECT fw_limit('api', 'k', 3, '1 hour');
	SELECT * FROM fw_check('plan', 'k');
};
safe_as_role($node, 'plain', 'carol', q{
	SET search_path = rl;
	INSERT INTO fw_setting_grant (setting, role_name) VALUES ('fixed_window.debug_now', 'carol');
	SELECT fw_define('plan', 2, '1 hour', comment => 'hourly');
	SELECT fw_override('plan', 'vip', 4, '1 hour');
});
my $first = safe_as_role($node, 'plain', 'carol', $plain_calls);
like($first, qr/^\(t,,2,/m, 'the plain edition answers calls');
my $state = q{
	SELECT name, key, tokens, window_start FROM rl.fw_counter ORDER BY 1, 2;
	SELECT * FROM rl.fw_policy ORDER BY 1, 2;
	SELECT * FROM rl.fw_override ORDER BY 1, 2, 3;
	SELECT version FROM rl.fw_sql_edition;
};
my $before = $node->safe_psql('plain', $state);
($ret, $out, $err) = as_role($node, 'plain', 'carol', '', @plain_run);
is($ret, 0, 'carol runs the plain script again over itself') or diag($err);
is($node->safe_psql('plain', $state), $before, 'counters, policies and overrides stay');
like($before, qr/^1\.6$/m, 'the schema records the version installed');
my $second = safe_as_role($node, 'plain', 'carol', $plain_calls);
like($second, qr/^\(t,,1,/m, "the counter kept what was spent before the script ran again");
# a newer plain script (the same, as 1.7) upgrades in place; then 1.6's is refused
my $newer = "$tmp/plain_1.7.sql";
PostgreSQL::Test::Utils::append_to_file($newer,
	slurp_file($plain) =~ s/string_to_array\('1\.6'/string_to_array('1.7'/r
	  =~ s/this script''s 1\.6'/this script''s 1.7'/r =~ s/^VALUES \('1\.6'/VALUES ('1.7'/mr);
($ret, $out, $err) = as_role($node, 'plain', 'carol', '', '-X', '-q', '-v', 'schema=rl', '-f', $newer);
is($ret, 0, 'a newer plain script runs over the installed one') or diag($err);
is($node->safe_psql('plain', 'SELECT string_agg(version, \',\' ORDER BY version) FROM rl.fw_sql_edition'),
	'1.6,1.7', 'the schema records both versions');
like(safe_as_role($node, 'plain', 'carol', $plain_calls), qr/^\(t,,0,/m, 'and the counter is still there');
($ret, $out, $err) = as_role($node, 'plain', 'carol', '', @plain_run);
isnt($ret, 0, 'the older plain script is then refused');
like($err, qr/holds fixed_window_sql 1\.7, newer than this script's 1\.6/, '... saying why');
($ret, $out, $err) = as_role($node, 'app', 'alice', '', '-X', '-q', '-v', 'schema=public', '-f', $plain);
isnt($ret, 0, 'the plain script refuses a schema that holds the extension');
like($err, qr/schema "public" holds the extension fixed_window_sql/, '... saying so');

# (d) pg_tle's script, against a stub that records what it is given.
$node->safe_psql('tle', q{
	CREATE SCHEMA pgtle;
	CREATE TABLE pgtle.installed (name text, version text, description text, ext text, requires text[]);
	CREATE FUNCTION pgtle.install_extension(name text, version text, description text, ext text,
	                                        requires text[] DEFAULT NULL)
	RETURNS text LANGUAGE sql
	AS $$ INSERT INTO pgtle.installed VALUES (name, version, description, ext, requires) RETURNING 'OK' $$;
});
my $pgtle = product('pgtle');
($ret, $out, $err) = $node->psql('tle', '', stdout => \$out, stderr => \$err,
	extra_params => [ '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-f', $pgtle ]);
is($ret, 0, 'the pg_tle script runs') or diag($err);
is($node->safe_psql('tle', q{
	SELECT name || ' ' || version || ' ' || (description <> '') || ' ' || (requires IS NULL)
	       || ' ' || (ext ~ '(?n)^\s*\\\\echo') || ' ' || (ext ~ '\$_pgtle_(i_|o_)?\$')
	FROM pgtle.installed}),
	'fixed_window_sql 1.6 true true false false',
	'it installs fixed_window_sql 1.6, described, without \\echo or pg_tle\'s own quotes');
# as pg_tle's CREATE EXTENSION runs it: \echo lines dropped, @extschema@ and
# @extowner@ replaced by quoted identifiers
my $ext = $node->safe_psql('tle', q{
	SELECT replace(replace(regexp_replace(ext, '^\\\\echo.*$', '', 'ng'),
	               '@extschema@', quote_ident('Edition')), '@extowner@', quote_ident(current_user))
	FROM pgtle.installed});
$node->safe_psql('tle', 'CREATE SCHEMA "Edition"');
($ret, $out, $err) = $node->psql('tle', "BEGIN;\n$ext\nCOMMIT;", stdout => \$out, stderr => \$err,
	extra_params => [ '-X', '-q', '-v', 'ON_ERROR_STOP=1' ]);
is($ret, 0, 'the recorded script makes the edition in an empty schema') or diag($err);
is($node->safe_psql('tle', q{
	SET search_path = public;
	SELECT ("Edition".fw_limit('a', 'b', 1, '1 minute')).ok}),
	't', 'and it answers a call');

# (e) From the SQL edition to the C extension, policies and overrides kept.
$node->safe_psql('move', q{
	CREATE EXTENSION fixed_window_sql;
	SELECT fw_define('api', 10, '1 minute');
	SELECT fw_define('api', 100, '1 hour', start => '2026-01-01 00:30:00+00', capacity => 150,
	                 shadow => true, comment => 'hourly, ''quoted''');
	SELECT fw_define('nightly', 5, '1 day', start => NULL);
	SELECT fw_override('api', 'vip', 50, '1 minute');
	SELECT fw_override('api', 'vip', 500, '1 hour', 600);
	SELECT fw_exempt('api', 'root');
	INSERT INTO fw_metric_name VALUES ('api%');
	REVOKE EXECUTE ON FUNCTION fw_limit(text, text, integer) FROM PUBLIC;
	GRANT EXECUTE ON FUNCTION fw_limit(text, text, integer) TO carol;
	REVOKE SELECT ON fw_counters FROM PUBLIC;
	GRANT EXECUTE ON FUNCTION fw_refund(text, text, integer) TO carol;
});
my $privileges = q{
	SELECT has_function_privilege('mallory', 'fw_limit(text, text, integer)', 'EXECUTE'),
	       has_function_privilege('carol', 'fw_limit(text, text, integer)', 'EXECUTE'),
	       has_table_privilege('mallory', 'fw_counters', 'SELECT'),
	       has_function_privilege('carol', 'fw_refund(text, text, integer)', 'EXECUTE'),
	       has_function_privilege('mallory', 'fw_check(text, text, integer)', 'EXECUTE')};
is($node->safe_psql('move', $privileges), 'f|t|f|t|t', 'privileges of the edition before the move');
my $definitions = q{
	SELECT * FROM fw_policy ORDER BY name, period;
	SELECT * FROM fw_override ORDER BY name, key, period NULLS FIRST;
	SELECT * FROM fw_metric_name ORDER BY 1;
};
my $saved = $node->safe_psql('move', $definitions);
($ret, $out, $err) = $node->psql('move', '', stdout => \$out, stderr => \$err,
	extra_params => [ '-X', '-q', '-f', "$root/examples/sql_edition/move_to_c.sql" ]);
is($ret, 0, 'examples/sql_edition/move_to_c.sql runs') or diag($err);
is($node->safe_psql('move', q{
	SELECT string_agg(extname || ' ' || extversion, ',' ORDER BY extname) FROM pg_extension
	WHERE extname LIKE 'fixed_window%'}),
	'fixed_window 1.6', 'the database now has the C extension, and not the edition');
is($node->safe_psql('move', $definitions), $saved,
	'policies, overrides, the exemption and the metric names are those the edition had');
is($node->safe_psql('move', q{
	SET fixed_window.debug_now = '2026-03-01 12:00:00+00';
	SELECT (fw_limit('api', 'vip')).remaining, (fw_limit('api', 'root')).ok, (fw_limit('api', 'u')).remaining}),
	'49|t|9', 'and the C extension applies them');
is($node->safe_psql('move', $privileges), 'f|t|f|t|t',
	'the privileges granted and revoked on the edition hold on the C extension');

$node->stop;
done_testing();
