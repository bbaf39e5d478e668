# A setting means the admin's value (issue 30, findings 1 and 2).  Every
# setting of the extension is set by the admin (postgresql.conf, ALTER
# SYSTEM, ALTER DATABASE), then an ordinary login role passes another value
# in its connection's options (PGOPTIONS).  On a server that preloads the
# library the connection is refused; on one that does not, the role's value
# is refused when the library loads and the admin's value stands: not the
# setting's default, and the admin's values for the database and for the
# role (ALTER DATABASE, ALTER ROLE by a superuser) stand above the files'.
# fixed_window.storage is set for the whole server or a
# whole database only (one key, one counter): per role or per session it is
# refused, so that two sessions never count one key in two stores.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib $FindBin::RealBin;
use FwTest;

# The admin's value of each setting, and another a role tries.
my %admin = (
	'fixed_window.storage' => 'shmem',
	'fixed_window.fail_open' => 'on',
	'fixed_window.debug_now' => '2026-07-01 12:00:00+00',
	'fixed_window.database_share' => '20',
	'fixed_window.role_share' => '10',
	'fixed_window.max_counters' => '3000',
	'fixed_window.save' => 'off',);
my %tried = (
	'fixed_window.storage' => 'table',
	'fixed_window.fail_open' => 'off',
	'fixed_window.debug_now' => '2030-01-01T00:00:00+00',
	'fixed_window.database_share' => '100',
	'fixed_window.role_share' => '100',
	'fixed_window.max_counters' => '100000',
	'fixed_window.save' => 'on',);

# psql as a role, with connection options; returns (exit code, stdout, stderr).
sub as_role
{
	my ($node, $db, $role, $options, $sql) = @_;
	local $ENV{PGOPTIONS} = $options // '';
	my ($ret, $out, $err) = $node->psql($db, $sql, extra_params => [ '-U', $role ]);
	return ($ret, $out, $err);
}

for my $preload (0, 1)
{
	my $mode = $preload ? 'preloaded' : 'not preloaded';
	my $node = new_node(
		$preload ? 'settings_preload' : 'settings_dynamic',
		shmem => 0,
		extension => 0,
		conf => ($preload ? "shared_preload_libraries = 'fixed_window'\n" : '')
		  . join('', map { "$_ = '$admin{$_}'\n" } grep { $_ ne 'fixed_window.max_counters' } sort keys %admin));
	# one setting by ALTER SYSTEM, which needs the library loaded to know it
	$node->safe_psql('postgres', qq{
		LOAD 'fixed_window';
		ALTER SYSTEM SET fixed_window.max_counters = $admin{'fixed_window.max_counters'};
		SELECT pg_reload_conf();
	});
	$node->safe_psql('postgres', q{
		CREATE ROLE mallory LOGIN;
		CREATE ROLE alice LOGIN;
		CREATE ROLE bob LOGIN;
		CREATE DATABASE app;
		CREATE DATABASE tab;
	});
	$node->safe_psql($_, 'CREATE EXTENSION fixed_window') for qw(app tab);

	# The admin's values for the database and for the role, set by a
	# superuser: they stand above the files'.
	$node->safe_psql('postgres', q{
		ALTER DATABASE app SET fixed_window.debug_now = '2026-08-01 00:00:00+00';
		ALTER ROLE mallory SET fixed_window.fail_open = off;
	});
	my %want = (%admin,
		'fixed_window.debug_now' => '2026-08-01 00:00:00+00',
		'fixed_window.fail_open' => 'off');
	$tried{'fixed_window.fail_open'} = 'on';

	# A plain session of the role, no options: the admin's values.
	for my $name (sort keys %admin)
	{
		my ($ret, $out, $err) = as_role($node, 'app', 'mallory', '',
			qq{SELECT fw_now() IS NOT NULL; SELECT current_setting('$name')});
		is($out, "t\n$want{$name}", "$mode: a plain session sees the admin's $name");
	}

	# The role passes another value in its connection's options.
	for my $name (sort keys %admin)
	{
		my ($ret, $out, $err) = as_role($node, 'app', 'mallory', "-c $name=$tried{$name}",
			qq{SELECT fw_now() IS NOT NULL; SELECT current_setting('$name')});
		if ($preload)
		{
			isnt($ret, 0, "$mode: a role's $name in its connection options refuses the connection");
			like($err, qr/FATAL/, "$mode: with a FATAL error");
		}
		else
		{
			is($ret, 0, "$mode: a role's $name in its connection options leaves the session usable");
			is((split /\n/, $out)[-1], $want{$name},
				"$mode: the admin's $name stands, not the role's nor the default");
			like($err, qr/WARNING:  permission denied to set parameter "\Q$name\E"|cannot be changed now/,
				"$mode: the refused $name is reported");
		}
	}
	$tried{'fixed_window.fail_open'} = 'off';

	# The issue's case: the role's own value of storage gives it no second quota.
	my $login = q{SELECT count(*) FILTER (WHERE (fw_limit('login', 'mallory', 3, '1 hour')).ok)
		FROM generate_series(1, 10)};
	my ($ret, $out, $err) = as_role($node, 'app', 'mallory', '', $login);
	is($out, '3', "$mode: a plain session spends the quota of 3");
	($ret, $out, $err) = as_role($node, 'app', 'mallory', '-c fixed_window.storage=shmem',
		"SELECT fw_storage_in_use(); $login");
	is($out, $preload ? '' : "shmem\n0", "$mode: naming the storage in the options gives no second quota");

	# Storage by database: ALTER DATABASE, for every role of it.
	$node->safe_psql('postgres', q{ALTER DATABASE tab SET fixed_window.storage = 'table'});
	($ret, $out, $err) = as_role($node, 'tab', 'mallory', '', 'SELECT fw_storage_in_use()');
	is($out, 'table', "$mode: ALTER DATABASE chooses the storage of a database");

	# Storage by role: refused, so one key is one counter (finding 2).
	($ret, $out, $err) = $node->psql('app', q{LOAD 'fixed_window'; ALTER ROLE bob SET fixed_window.storage = 'table'});
	isnt($ret, 0, "$mode: ALTER ROLE ... SET fixed_window.storage is refused");
	like($err, qr/parameter "fixed_window.storage" can be set only for the whole server or a whole database/,
		"$mode: saying where it can be set");
	($ret, $out, $err) = $node->psql('app', q{LOAD 'fixed_window'; ALTER ROLE bob IN DATABASE app SET fixed_window.storage = 'table'});
	isnt($ret, 0, "$mode: so is ALTER ROLE ... IN DATABASE ... SET");
	# set before the library is loaded, it is known only as a placeholder
	$node->safe_psql('app', q{ALTER ROLE bob SET fixed_window.storage = 'table'})
	  unless $preload;
	my $api = q{SELECT count(*) FILTER (WHERE (fw_limit('api', 'user-42', 5, '1 hour')).ok)
		FROM generate_series(1, 10)};
	my $allowed = 0;
	for my $role (qw(alice bob))
	{
		($ret, $out, $err) = as_role($node, 'app', $role, '', $api);
		$allowed += $out;
	}
	is($allowed, 5, "$mode: alice and bob together are allowed the rate of one key");
	is($node->safe_psql('app', q{SELECT count(*) FROM fw_counters WHERE name = 'api'}),
		'1', "$mode: one counter for the key");
	$node->safe_psql('app', q{ALTER ROLE bob RESET fixed_window.storage});

	# A session's SET, even a superuser's: behind a transaction pooler it
	# would reach the next clients of that server connection.
	($ret, $out, $err) = $node->psql('app', q{LOAD 'fixed_window'; SET fixed_window.storage = 'table'});
	isnt($ret, 0, "$mode: SET fixed_window.storage is refused, to a superuser too");
	like($err, qr/ERROR:  parameter "fixed_window.storage" can be set only for the whole server or a whole database/,
		"$mode: with the reason");
	($ret, $out, $err) = $node->psql('app', q{LOAD 'fixed_window'; BEGIN; SET LOCAL fixed_window.storage = 'table'});
	isnt($ret, 0, "$mode: so is SET LOCAL");
	($ret, $out, $err) = as_role($node, 'app', 'postgres', '-c fixed_window.storage=table', 'SELECT fw_storage_in_use()');
	if ($preload)
	{
		isnt($ret, 0, "$mode: a superuser's connection options naming the storage are refused");
	}
	else
	{
		is($out, 'shmem', "$mode: a superuser's connection options do not choose the storage");
	}
	is($node->safe_psql('app', q{SELECT fw_storage_in_use()}), 'shmem', "$mode: the server's storage stands");
	$node->safe_psql('app', q{CREATE FUNCTION in_table() RETURNS text LANGUAGE sql AS 'SELECT fw_storage_in_use()'});
	($ret, $out, $err) = $node->psql('app', q{LOAD 'fixed_window'; ALTER FUNCTION in_table() SET fixed_window.storage = 'table'});
	isnt($ret, 0, "$mode: ALTER FUNCTION ... SET fixed_window.storage is refused");

	# Any number of made-up names of the prefix beside the real ones.
	my $junk = join(' ', map { sprintf('-c fixed_window.a%02d=1', $_) } 1 .. 20);
	($ret, $out, $err) = as_role($node, 'app', 'mallory',
		"$junk -c fixed_window.storage=table -c fixed_window.role_share=100",
		q{SELECT fw_storage_in_use() || '|' || current_setting('fixed_window.role_share')});
	if ($preload)
	{
		isnt($ret, 0, "$mode: 20 made-up names and the role's values refuse the connection");
	}
	else
	{
		is($out, 'shmem|10', "$mode: 20 made-up names beside the role's values leave the admin's standing");
	}

	# The admin changed the files and has not reloaded: the values in force
	# cannot be read again, and a session given a value it may not set
	# makes no call until a reload.
	$node->safe_psql('app', q{LOAD 'fixed_window'; ALTER SYSTEM SET fixed_window.role_share = 100});
	($ret, $out, $err) = as_role($node, 'app', 'mallory', '-c fixed_window.role_share=1',
		q{SELECT (fw_limit('pending', 'k', 1, '1 hour')).ok});
	if ($preload)
	{
		isnt($ret, 0, "$mode: pending files: the role's value refuses the connection");
	}
	else
	{
		like($err, qr/ERROR:  the settings of fixed_window in this session are not known/,
			"$mode: pending files: the session given a refused value makes no call");
	}
	($ret, $out, $err) = as_role($node, 'app', 'mallory', '',
		q{SELECT fw_now() IS NOT NULL; SELECT current_setting('fixed_window.role_share')});
	is($out, "t\n10", "$mode: a plain session has the value in force, not the pending one");
	$node->reload;
	$node->poll_query_until('app', q{SELECT current_setting('fixed_window.role_share', true) = '100'})
	  or die 'the reload was not read';
	($ret, $out, $err) = as_role($node, 'app', 'mallory', $preload ? '' : '-c fixed_window.role_share=1',
		q{SELECT fw_now() IS NOT NULL; SELECT current_setting('fixed_window.role_share')});
	is($out, "t\n100", "$mode: once reloaded, the admin's new value stands");
	# the data directory changes whenever the server writes a file in it:
	# only the configuration files themselves count
	mkdir($node->data_dir . '/scratch') or die "mkdir: $!";
	rmdir($node->data_dir . '/scratch') or die "rmdir: $!";
	($ret, $out, $err) = as_role($node, 'app', 'mallory', $preload ? '' : '-c fixed_window.role_share=1',
		q{SELECT (fw_limit('dir', 'k', 1, '1 hour')).ok; SELECT current_setting('fixed_window.role_share')});
	is($out, "t\n100", "$mode: a change of the data directory alone does not stop a session");
	$node->safe_psql('app', q{LOAD 'fixed_window'; ALTER SYSTEM RESET fixed_window.role_share; SELECT pg_reload_conf()});

	$node->stop;
}

done_testing();
