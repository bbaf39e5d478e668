# Scale-out through the router (fixed_window_proxy on PL/Proxy): three shard
# servers with shared-memory counters and one router server.  Checked:
#
# - routing: the jump consistent hash of fw_jump_hash is the paper's,
#   exactly, against a Python implementation written here (random 64-bit
#   keys, counts from 1 to 2^31 - 1, and a key for which the paper's
#   floating-point division answers otherwise); a new router routes by jump,
#   and every (name, key) goes to the shard an application computes on its
#   own side (here in Python, from MD5), and its counters are there and
#   nowhere else; fw_shard(name, key, n) keeps 1.2's modulo (in Perl);
# - exactness: pgbench with 16 sessions through the router, on one hot key
#   and on 1,000 keys of a named policy, across real one-second window
#   boundaries, allows exactly min(rate, calls) in every window of every key;
# - a lost shard: its keys fail with SQLSTATE 08001 naming it (or, with
#   fail_open, are allowed with a warning), other keys are served, and when
#   it is back calls resume with its counters kept (clean restart);
# - resharding from 3 to 6 shards with ALTER SERVER while pgbench runs: no
#   call fails, a key stays or moves to a new shard, never to another old
#   one, about half move, a moved key starts fresh in its new shard (at most
#   one window's rate extra, the documented bound) and a key that stays
#   keeps its counter; a router session in a transaction open across the
#   change sends each key to its old shard or its new one, never a third
#   (the router's routing and PL/Proxy's shards change together).
use strict;
use warnings;

use Digest::MD5 qw(md5);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

require_plproxy();

my $seconds = 7;
my $hot_rate = 1000;
my $keys_rate = 2;

# 1.2's rule, the modulo, as an application computes it in Perl.
sub modulo_shard
{
	my ($name, $key, $n) = @_;
	my $bytes = do { use bytes; length($name) };
	return (unpack('N', md5("$bytes:$name$key")) & 0x7fffffff) % $n;
}

# Jump consistent hashing as the paper gives it (Lamport and Veach, 2014),
# in Python, whose integers are exact: the test's own, not the router's.
# Reads one question a line, tab-separated, and answers each on a line:
#   jump KEY N            the paper's hash of the 64-bit KEY among N
#   float KEY N           the same, its division in floating point as the
#                         paper's C code does it
#   shard NAME KEY N      the shard of (NAME, KEY) among N by jump: the
#                         hash of its slot, fw_shard_hash modulo 16384
#   cases SEED COUNT      COUNT lines "KEY N HASH", random 64-bit keys
#   rounding              a key whose floating-point hash among 2^30 is not
#                         its exact one
my $reference = <<'PYTHON';
import hashlib, random, sys

MASK = (1 << 64) - 1
STEP = 2862933555777941757

def jump(key, n, exact=True):
    key &= MASK
    b, j = -1, 0
    while j < n:
        b = j
        key = (key * STEP + 1) & MASK
        if exact:
            j = (b + 1) * (1 << 31) // ((key >> 33) + 1)
        else:
            j = int(float(b + 1) * (float(1 << 31) / float((key >> 33) + 1)))
    return b

def signed(key):
    return key - (1 << 64) if key >= 1 << 63 else key

def shard_hash(name, key):
    n = name.encode()
    digest = hashlib.md5(str(len(n)).encode() + b":" + n + key.encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF

def rounding():
    # Work back from the second step: b = 48, then (k >> 33) + 1 = 98, so
    # that 49 * 2^31 / 98 = 2^30 exactly, which double precision rounds to
    # 2^30 - 1; and a first step that jumps to 48.
    back = pow(STEP, -1, 1 << 64)
    for low in range(1 << 33):
        k2 = (97 << 33) | low
        k1 = ((k2 - 1) * back) & MASK
        if (1 << 31) // ((k1 >> 33) + 1) == 48:
            return signed(((k1 - 1) * back) & MASK)

for line in sys.stdin:
    q = line.rstrip("\n").split("\t")
    if q[0] == "jump":
        print(jump(int(q[1]), int(q[2])))
    elif q[0] == "float":
        print(jump(int(q[1]), int(q[2]), exact=False))
    elif q[0] == "shard":
        print(jump(shard_hash(q[1], q[2]) % 16384, int(q[3])))
    elif q[0] == "cases":
        rng = random.Random(int(q[1]))
        counts = [1, 2, 3, 4, 5, 7, 8, 10, 16, 100, 1000, 16384, 65536, 2**31 - 1]
        keys = [0, 1, MASK, (1 << 63) - 1, 1 << 63]
        keys += [rng.getrandbits(64) for _ in range(int(q[2]))]
        for key in keys:
            n = counts[rng.randrange(len(counts))]
            print(signed(key), n, jump(key, n))
    elif q[0] == "rounding":
        print(rounding())
PYTHON

# Asks the reference; returns its answers, one a question.
sub reference
{
	my @questions = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'python3', '-c', $reference ],
		'<', \join('', map { join("\t", @$_) . "\n" } @questions), '>', \$out, '2>', \$err)
	  or BAIL_OUT("the Python reference failed (python3 is needed): $err");
	return split /\n/, $out;
}

# The shard of (name, key) among n by jump, as an application computes it.
sub shard_of
{
	my ($name, $n, @keys) = @_;
	my @shards = reference(map { [ 'shard', $name, $_, $n ] } @keys);
	return map { $keys[$_] => $shards[$_] } 0 .. $#keys;
}

my @shards;
foreach my $i (0 .. 2)
{
	push @shards, new_shard("shard$i", conf => q{
max_connections = 80
fixed_window.database_share = 100
fixed_window.role_share = 100
});
}

my $router = new_router('router', conf => 'max_connections = 40');
$router->safe_psql('postgres', 'CREATE DATABASE router');
# Windows of an hour anchored at the test's start: none ends while it runs.
my $t0 = $router->safe_psql('postgres', 'SELECT now()');
$router->safe_psql('router', q{
CREATE EXTENSION fixed_window_proxy CASCADE;
-- what a call raised, as SQLSTATE: message
CREATE FUNCTION try(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
});
is($router->safe_psql('router', "SELECT try(\$\$SELECT fw_limit('api', 'k', 1, '1 hour', start => '$t0')\$\$)"),
	'42704: the router has no shards', 'a router without the server fw_shards says so');
shards_server($router, 'router', map { shard_connstr($_, 'fw') } @shards);

# -- routing ---------------------------------------------------------------

is($router->safe_psql('router', 'SELECT count(*) FROM fw_shards'), '3', 'the router lists three shards');

# The jump consistent hash, exactly: random keys and counts, and a key for
# which the paper's floating-point division rounds an exact quotient down.
my @cases = map { [ split / / ] } reference([ 'cases', 20261126, 2000 ]);
is($router->safe_psql('router', 'SELECT count(*) FROM (VALUES '
		. join(', ', map { "('$_->[0]'::bigint, $_->[1], $_->[2])" } @cases)
		. ') AS c(k, n, hash) WHERE fw_jump_hash(k, n) IS DISTINCT FROM hash'),
	'0', 'fw_jump_hash is the paper\'s hash of ' . scalar(@cases) . ' keys, as the Python reference computes it');
my ($rounding) = reference(['rounding']);
my ($exact, $float) = reference([ 'jump', $rounding, 2**30 ], [ 'float', $rounding, 2**30 ]);
is($exact, 48, "the key $rounding, among 2^30 shards: its exact hash is 48");
cmp_ok($float, '>=', 2**30 - 1, 'the paper\'s floating-point division makes it another');
is($router->safe_psql('router', "SELECT fw_jump_hash('$rounding', 1073741824)"), '48',
	'fw_jump_hash divides exactly');
is($router->safe_psql('router', q{
	SELECT try('SELECT fw_jump_hash(1, 0)') || ' / ' || try('SELECT fw_jump_hash(NULL, 3)')
	       || ' / ' || try('SELECT fw_jump_hash(1, NULL)') || ' / ' || try($$SELECT fw_shard('a', 'b', 3, 'mod')$$)}),
	'22023: shard count must be at least 1 / 22004: argument "key" must not be null'
	  . ' / 22004: shard count must be at least 1 / 22023: routing method must be "modulo" or "jump"',
	'and refuses what has no hash');

# A new router routes by jump: every key goes to the shard of its slot.
my @keys = map { "k$_" } 1 .. 1000;
my %jump3 = shard_of('place', 3, @keys);
my %expected;
push @{ $expected{ $jump3{$_} } }, $_ foreach @keys;
is($router->safe_psql('router', 'SELECT fw_routing_method(), (SELECT count(*) FROM fw_routing)'),
	'jump|0', 'a new router routes by jump, with no row in fw_routing');
is($router->safe_psql('router', q{
	SELECT string_agg(fw_key_shard('place', 'k' || g) || ' ' || fw_shard('place', 'k' || g, 3, 'jump'),
	                  ',' ORDER BY g)
	FROM generate_series(1, 1000) AS g}),
	join(',', map { "$jump3{$_} $jump3{$_}" } @keys),
	'fw_key_shard and fw_shard by jump are the rule an application computes (in Python, from MD5)');
is($router->safe_psql('router', q{
	SELECT string_agg(fw_shard('place', 'k' || g, 3) || ' ' || fw_shard('place', 'k' || g, 3, 'modulo'),
	                  ',' ORDER BY g)
	FROM generate_series(1, 1000) AS g}),
	join(',', map { my $s = modulo_shard('place', $_, 3); "$s $s" } @keys),
	'fw_shard(name, key, n) keeps 1.2\'s modulo, the rule an application computes in Perl');
cmp_ok(scalar(@{ $expected{$_} // [] }), '>', 250, "shard $_ owns a fair share of 1,000 keys")
  foreach 0 .. 2;

is($router->safe_psql('router', qq{
	SELECT count(*) FROM generate_series(1, 1000) AS g
	WHERE (fw_limit('place', 'k' || g, 10, '1 hour', start => '$t0')).ok}),
	'1000', '1,000 keys called through the router');
foreach my $i (0 .. 2)
{
	is($shards[$i]->safe_psql('fw', q{
		SELECT string_agg(key, ',' ORDER BY key) FROM fw_counters WHERE name = 'place'}),
		join(',', sort @{ $expected{$i} }),
		"shard $i holds exactly the counters of its keys");
}
is($router->safe_psql('router', q{
	SELECT count(*) FROM fw_counters
	WHERE name = 'place' AND shard = fw_key_shard(name, key)}),
	'1000', "the router's fw_counters gathers every shard and says where each counter is");
is($router->safe_psql('router', "SELECT calls, allowed, denied FROM fw_stats WHERE name = 'place'"),
	'1000|1000|0', "the router's fw_stats sums every shard");
like($router->safe_psql('router', "SELECT try('SELECT fw_shard(''a'', ''b'', 0)')"),
	qr/^22023: shard count must be at least 1/, 'fw_shard refuses a count below 1');

# An ordinary role reaches the shards as itself (the user mapping names no
# user), so it must exist there too; the shards' grants apply.
$_->safe_psql('postgres', 'CREATE ROLE app LOGIN') foreach ($router, @shards);
is($router->safe_psql('router', "SELECT ok FROM fw_limit('api', 'app-key', 5, '1 hour', start => '$t0')", extra_params => [ '-U', 'app' ]),
	't', 'an ordinary role calls through the router');
is($router->safe_psql('router', "SELECT try(\$\$SELECT fw_define('x', 1, '1 hour', start => '$t0')\$\$)", extra_params => [ '-U', 'app' ]),
	'42501: permission denied for function fw_define', 'but may not define policies');
is($router->safe_psql('router', "SELECT try('UPDATE fw_router SET fail_open = true')", extra_params => [ '-U', 'app' ]),
	'42501: permission denied for table fw_router', 'nor fail open');
is($router->safe_psql('router', "SELECT count(*) FILTER (WHERE key IS NULL), count(*) FILTER (WHERE key = 'app-key') FROM fw_counters",
		extra_params => [ '-U', 'app' ]),
	'1000|1', "and sees its own keys only, as each shard shows it");

# -- exactness under load, across real window boundaries -------------------

# router and shards share the machine's clock, so the log names each call's
# window as in t/007
$router->safe_psql('router', slurp_file(dirname(__FILE__) . '/window_log.sql'));
$router->safe_psql('router', q{
SELECT fw_define('per_key', 2, '1 second', comment => 'load test');
CREATE FUNCTION load_call(run text, k text, rate integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    t0 timestamptz := clock_timestamp();
    r fw_result;
BEGIN
    IF run = 'hot' THEN
        r := fw_limit('hot', k, rate, '1 second');
    ELSE
        r := fw_limit('per_key', k);
    END IF;
    INSERT INTO calls VALUES (run, k, r.ok, t0, clock_timestamp(), r.reset_after);
END
$$;
});
is($router->safe_psql('router', "SELECT shards FROM fw_policies WHERE name = 'per_key'"),
	'{0,1,2}', 'a policy defined on the router is defined on every shard');

foreach my $case ([ 'hot', $hot_rate, "'hot'" ], [ 'keys', $keys_rate, "'k' || :k" ])
{
	my ($run, $rate, $key) = @$case;
	$router->pgbench(
		"--no-vacuum --client=16 --jobs=2 --protocol=prepared --time=$seconds",
		0,
		[qr{processed: \d+}],
		[qr{^$}],
		"16 sessions through the router for $seconds seconds ($run)",
		{
			"012_$run" => qq{
	\\set k random(1, 1000)
	SELECT load_call('$run', $key, $rate);
	}
		},
		'router');

	note "$run: calls, allowed: "
	  . $router->safe_psql('router',
		"SELECT count(*), count(*) FILTER (WHERE ok) FROM calls WHERE run = '$run'");
	is($router->safe_psql('router',
			"SELECT count(*) FROM call_windows WHERE run = '$run' AND (ambiguous OR inconsistent)"),
		'0', "every call's window is known ($run)");
	is($router->safe_psql('router', qq{
			SELECT count(*) FROM per_window WHERE run = '$run' AND allowed <> least($rate, calls)}),
		'0', "every key allowed exactly min($rate, calls) in every window ($run)");
	cmp_ok($router->safe_psql('router', qq{
			SELECT count(DISTINCT window_end) FROM per_window WHERE run = '$run' AND full_window}),
		'>=', 5, "at least five full windows ($run)");
	my ($windows, $saturated) = split /\|/, $router->safe_psql('router', qq{
		SELECT count(*), count(*) FILTER (WHERE calls > $rate) FROM per_window WHERE run = '$run'});
	my $report = "$run: $saturated of $windows (key, window) pairs had more calls than the rate $rate";
	$saturated > 0 ? note $report : diag "$report: too slow to reach the limit";
}
is($router->safe_psql('router', q{
	SELECT count(DISTINCT fw_key_shard('per_key', key)) FROM calls WHERE run = 'keys'}),
	'3', 'the load on 1,000 keys reached all three shards');

# -- a lost shard -----------------------------------------------------------

my %down = shard_of('down', 3, @keys);
my ($key0) = grep { $down{$_} == 0 } @keys;
my ($key1) = grep { $down{$_} == 1 } @keys;
is($router->safe_psql('router', "SELECT ok FROM fw_limit('down', '$key1', 2, '1 hour', start => '$t0', cost => 2)"),
	't', "shard 1's key spends its two tokens");

$shards[1]->stop;
like($router->safe_psql('router', "SELECT try(\$\$SELECT fw_limit('down', '$key1', 2, '1 hour', start => '$t0')\$\$)"),
	qr/^08001: shard 1 of the router is unreachable$/,
	"a call for a key of the stopped shard fails with 08001 naming it");
my ($ret, $out, $err) = $router->psql('router', "SELECT fw_limit('down', '$key1', 2, '1 hour', start => '$t0')",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  08001: shard 1 of the router is unreachable\nDETAIL:  The shard connects with "host=.* dbname=fw"\. PL\/Proxy reported: PL\/Proxy function .*PQconnect/,
	'the error says how the shard is reached and what PL/Proxy saw');
is($router->safe_psql('router', "SELECT ok FROM fw_limit('down', '$key0', 2, '1 hour', start => '$t0')"),
	't', 'keys of the other shards are served');
is($router->safe_psql('router', "SELECT fw_key_shard('down', '$key0') <> 1"), 't', '(that key is not on shard 1)');
like($router->safe_psql('router', "SELECT try('SELECT count(*) FROM fw_counters')"),
	qr/^08001: shard 1 of the router is unreachable$/, 'fw_counters names the lost shard');
like($router->safe_psql('router', "SELECT try(\$\$SELECT fw_refund('down', '$key1', 2, '1 hour', start => '$t0')\$\$)"),
	qr/^08001: shard 1 /, 'a refund fails too');
like($router->safe_psql('router', "SELECT try(\$\$SELECT fw_define('other', 1, '1 hour', start => '$t0')\$\$)"),
	qr/^08001: shard 1 /, 'a definition fails naming the shard');

$router->safe_psql('router', 'UPDATE fw_router SET fail_open = true');
($ret, $out, $err) = $router->psql('router',
	"SELECT ok, remaining IS NULL FROM fw_limit('down', '$key1', 2, '1 hour', start => '$t0')");
is($out, 't|t', 'with fail_open the call is allowed, remaining unknown');
like($err, qr/WARNING:  shard 1 of the router is unreachable: its keys are allowed uncounted/,
	'with a warning');
like($router->safe_psql('router', "SELECT try(\$\$SELECT fw_refund('down', '$key1', 2, '1 hour', start => '$t0')\$\$)"),
	qr/^08001: /, 'fail_open admits calls, it does not pretend refunds');
$router->safe_psql('router', 'UPDATE fw_router SET fail_open = false');

$shards[1]->start;
is($router->safe_psql('router', "SELECT ok FROM fw_limit('down', '$key1', 2, '1 hour', start => '$t0')"),
	'f', 'the shard is back without touching the router, with its counter (a clean restart keeps them)');

# A role that breaks its own connection to a shard (here a setting of its own
# that makes its sessions fail to start) is refused, not taken for a lost
# shard: with fail_open that would admit it uncounted.
$router->safe_psql('router', 'UPDATE fw_router SET fail_open = true');
$shards[1]->safe_psql('fw', "ALTER ROLE app IN DATABASE fw SET local_preload_libraries = 'nope'", extra_params => [ '-U', 'app' ]);
like($router->safe_psql('router', "SELECT try(\$\$SELECT fw_limit('down', '$key1', 2, '1 hour', start => '$t0')\$\$)", extra_params => [ '-U', 'app' ]),
	qr/^XX000: PL\/Proxy function .*FATAL: .*nope/s, 'a connection the shard refuses to the role is an error even with fail_open');
$shards[1]->safe_psql('fw', 'ALTER ROLE app IN DATABASE fw RESET local_preload_libraries');
$router->safe_psql('router', 'UPDATE fw_router SET fail_open = false');
is($router->safe_psql('router', "SELECT count(*) FROM fw_counters WHERE name = 'down'"),
	'2', 'fw_counters gathers every shard again');
# the definition that failed reached shard 0 only; repeating it completes it
is($router->safe_psql('router', "SELECT shards FROM fw_policies WHERE name = 'other'"),
	'{0}', 'fw_policies shows which shards a failed definition reached');
$router->safe_psql('router', "SELECT fw_define('other', 1, '1 hour', start => '$t0')");
is($router->safe_psql('router', "SELECT shards FROM fw_policies WHERE name = 'other'"),
	'{0,1,2}', 'repeating the definition completes it');

# -- resharding from 3 to 6 shards ------------------------------------------

# Keys of 'move' spend their whole window before the change.
$router->safe_psql('router', qq{
	SELECT fw_define('move', 3, '1 hour', start => '$t0');
	SELECT fw_define('flow', 1000000000, '1 hour', start => '$t0');
	SELECT count(*) FROM generate_series(1, 1000) AS g WHERE (fw_limit('move', 'k' || g, 3)).ok});
my %move3 = shard_of('move', 3, @keys);
my %move6 = shard_of('move', 6, @keys);
my @moved = grep { $move6{$_} != $move3{$_} } @keys;
is(scalar(grep { $move6{$_} < 3 } @moved), 0, 'from 3 to 6 shards a key stays or goes to a new shard');
cmp_ok(scalar(@moved), '>', 400, 'about half the keys move (more than 400 of 1,000)');
cmp_ok(scalar(@moved), '<', 600, 'about half the keys move (fewer than 600 of 1,000)');

# A router session in a transaction open across the change.  Its keys move,
# and would land on a third shard, another old one, were the router to
# reckon with the new count while PL/Proxy still maps with the old one.
my %open3 = shard_of('open', 3, @keys);
my %open6 = shard_of('open', 6, @keys);
my @crossing = (grep { $open6{$_} >= 3 && $open6{$_} % 3 != $open3{$_} } @keys)[ 0 .. 9 ];
my $open = $router->background_psql('router', on_error_stop => 1);
my $cross = join(', ', map { "'$_'" } @crossing);
my $spend_crossing = qq{SELECT string_agg((fw_limit('open', k, 1, '1 hour', start => '$t0')).ok::text, ',')
                        FROM unnest(ARRAY[$cross]) AS k};
$open->query_safe('BEGIN');
is($open->query_safe($spend_crossing), join(',', ('true') x 10), 'ten keys spend their token in a transaction');

# The new shards: a database on each server (on new machines in production),
# with the definitions copied from a shard before they take keys.
foreach my $i (0 .. 2)
{
	$shards[$i]->safe_psql('postgres', 'CREATE DATABASE fw_b');
	$shards[$i]->safe_psql('fw_b', 'CREATE EXTENSION fixed_window');
	my $dump = '';
	IPC::Run::run([ 'pg_dump', '--data-only', '--table=fw_policy', '--table=fw_override',
			'-h', $shards[0]->host, '-p', $shards[0]->port, 'fw' ], '>', \$dump)
	  or die "pg_dump failed";
	$shards[$i]->safe_psql('fw_b', $dump);
}

# The change, while 8 sessions call through the router.
my $script = $router->basedir . '/flow.sql';
PostgreSQL::Test::Utils::append_to_file($script,
	"\\set k random(1, 1000)\nSELECT (fw_limit('flow', 'k' || :k)).ok;\n");
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[ 'pgbench', '--no-vacuum', '--client=8', '--jobs=2', '--time=4', '--file', $script,
	  '-h', $router->host, '-p', $router->port, 'router' ],
	'>', \$bench_out, '2>', \$bench_err);
$router->poll_query_until('router', "SELECT count(*) > 0 FROM fw_stats WHERE name = 'flow'")
  or die "pgbench did not start: $bench_err";
$router->safe_psql('router', qq{
ALTER SERVER fw_shards OPTIONS (
    ADD p3 '@{[ shard_connstr($shards[0], 'fw_b') ]}',
    ADD p4 '@{[ shard_connstr($shards[1], 'fw_b') ]}',
    ADD p5 '@{[ shard_connstr($shards[2], 'fw_b') ]}')});
$bench->finish;
# in the same transaction, on each key's old shard or on its new one
note 'the ten keys in the transaction, after the change: '
  . $open->query_safe($spend_crossing) . ' (false: their old shard, true: their new one)';
$open->query_safe('COMMIT');
$open->query_safe($spend_crossing);
$open->quit;
my %open_shards;
foreach (split /\n/, $router->safe_psql('router', "SELECT key, shard FROM fw_counters WHERE name = 'open'"))
{
	my ($key, $shard) = split /\|/;
	push @{ $open_shards{$key} }, $shard;
}
is(join(',', map { my $k = $_; scalar(grep { $_ != $open3{$k} && $_ != $open6{$k} } @{ $open_shards{$k} }) } @crossing),
	join(',', (0) x 10),
	'a transaction open across the change sent each key to its old shard or its new one, never a third');
is(join(',', map { my $k = $_; scalar(grep { $_ == $open6{$k} } @{ $open_shards{$k} }) } @crossing), join(',', (1) x 10),
	'and after it, to its new one');
is($bench->result(0), 0, 'pgbench through the router ran on across the change');
like($bench_out, qr/processed: [1-9]/, 'and made calls');
unlike($bench_err, qr/ERROR|abort/i, 'no call failed');
is($router->safe_psql('router', q{
	SELECT count(DISTINCT shard) FILTER (WHERE shard >= 3) FROM fw_counters WHERE name = 'flow'}),
	'3', 'after the change calls reached the new shards');
is($router->safe_psql('router', "SELECT shards FROM fw_policies WHERE name = 'move'"),
	'{0,1,2,3,4,5}', 'every shard, old and new, holds the definitions');

# After the change: a moved key starts fresh (its window's rate again, at most
# one window of over-admission); a key that stayed keeps its spent counter.
is($router->safe_psql('router', q{
	SELECT string_agg(g::text, ',' ORDER BY g) FROM generate_series(1, 1000) AS g
	WHERE (fw_limit('move', 'k' || g, 3)).ok}),
	join(',', sort { $a <=> $b } map { substr($_, 1) } @moved),
	'exactly the moved keys are allowed again, the others stay denied');
is($router->safe_psql('router', q{
	SELECT count(*) FROM generate_series(1, 1000) AS g WHERE (fw_limit('move', 'k' || g)).ok}),
	'0', 'and a moved key then holds its new window: at most twice the rate in the window of the change');

foreach my $node ($router, @shards) { $node->stop; }
done_testing();
