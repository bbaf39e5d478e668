# What the TAP suites of fixed_window share: their servers, set up one way,
# and calls on a chosen storage.  A suite loads it as PostgreSQL's own suites
# load theirs (src/bin/pg_rewind/t/RewindTest.pm):
#
#   use FindBin;
#   use lib $FindBin::RealBin;
#   use FwTest;
#
# Servers:
#
#   shmem_conf()           the line of postgresql.conf by which the suites'
#                          servers keep counters in shared memory: preloading
#                          the library (make test-tap), or, with
#                          FW_SHMEM=dynamic (make test-tap-dsm), storage
#                          "shmem" without preload, in dynamic shared memory
#   edition()              'sql' when FW_EDITION=sql (make test-tap-sql):
#                          the suites that honour it call the SQL edition,
#                          fixed_window_sql, on servers that do not load the
#                          library; else 'c'
#   extension_name()       the extension that edition is: fixed_window_sql or
#                          fixed_window
#   new_node($name, %opt)  a server, started, with the extension in database
#                          postgres (extension_name()); the options:
#                            init => [...]     arguments of init
#                            conf => $text     lines of postgresql.conf, after
#                                              shmem_conf()'s
#                            shmem => 0        without shmem_conf()'s line
#                            extension => 0    without the extension
#
# The router's (fixed_window_proxy on PL/Proxy):
#
#   require_plproxy()      stops the whole run (BAIL_OUT) when PL/Proxy is
#                          not installed: a router suite never skips
#   new_shard($name, %opt) a server that preloads the library, started, with
#                          a database of each name of databases => [...] (fw
#                          when not given) holding the extension; init and
#                          conf as new_node's
#   new_router($name, %opt) a server without the library, started; init and
#                          conf as new_node's
#   shard_connstr($node, $db)
#                          the connection string of a shard's database
#   shards_server($router, $db, @connstrs)
#                          the server fw_shards of the router in $db, over
#                          those shards (p0, p1, ...), with a user mapping
#                          and USAGE for PUBLIC
#
# Calls on a chosen storage, for suites that put counters in both stores.
# fixed_window.storage is chosen for a whole database (or the server), never
# for a session, so these run the SQL in a session of a database set to that
# storage for the time (ALTER DATABASE ... SET), then reset it:
#
#   on_storage($node, $db, 'table', $sql)  runs $sql with $db's calls on the
#                                          table; returns its output
#   in_turn($node, $db, $sql)              runs $sql in parts: a line
#                                          "-- storage: table" starts a part
#                                          on the table, "-- storage: default"
#                                          one on the server's storage;
#                                          returns the parts' outputs, one
#                                          after another, as one session's
package FwTest;

use strict;
use warnings;

use Exporter 'import';
use PostgreSQL::Test::Cluster;
use Test::More;

our @EXPORT = qw(
  edition extension_name shmem_conf new_node
  require_plproxy new_shard new_router shard_connstr shards_server
  on_storage in_turn
);

sub edition
{
	return ($ENV{FW_EDITION} // '') eq 'sql' ? 'sql' : 'c';
}

sub extension_name
{
	return edition() eq 'sql' ? 'fixed_window_sql' : 'fixed_window';
}

sub shmem_conf
{
	return '' if edition() eq 'sql';
	return ($ENV{FW_SHMEM} // '') eq 'dynamic'
	  ? "fixed_window.storage = shmem\n"
	  : "shared_preload_libraries = 'fixed_window'\n";
}

sub new_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(@{ $opt{init} // [] });
	my $conf = (($opt{shmem} // 1) ? shmem_conf() : '') . ($opt{conf} // '');
	$node->append_conf('postgresql.conf', $conf) if $conf ne '';
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION ' . extension_name())
	  if $opt{extension} // 1;
	return $node;
}

sub require_plproxy
{
	my $pkglibdir = `pg_config --pkglibdir`;
	chomp $pkglibdir;
	BAIL_OUT("PL/Proxy is not installed ($pkglibdir/plproxy.so is missing): "
		  . "apt-get install postgresql-15-plproxy, or run make test as root")
	  unless -f "$pkglibdir/plproxy.so";
	return;
}

sub new_shard
{
	my ($name, %opt) = @_;
	my $shard = new_node(
		$name,
		init => $opt{init},
		conf => "shared_preload_libraries = 'fixed_window'\n" . ($opt{conf} // ''),
		shmem => 0,
		extension => 0);
	foreach my $db (@{ $opt{databases} // ['fw'] })
	{
		$shard->safe_psql('postgres', "CREATE DATABASE $db");
		$shard->safe_psql($db, 'CREATE EXTENSION fixed_window');
	}
	return $shard;
}

sub new_router
{
	my ($name, %opt) = @_;
	return new_node($name, %opt, shmem => 0, extension => 0);
}

sub shard_connstr
{
	my ($node, $db) = @_;
	return 'host=' . $node->host . ' port=' . $node->port . " dbname=$db";
}

sub shards_server
{
	my ($router, $db, @connstrs) = @_;
	my $shards = join(",\n", map { "    p$_ '$connstrs[$_]'" } 0 .. $#connstrs);
	$router->safe_psql($db, qq{
CREATE SERVER fw_shards FOREIGN DATA WRAPPER plproxy OPTIONS (
    modular_mapping '1',
$shards);
CREATE USER MAPPING FOR PUBLIC SERVER fw_shards;
GRANT USAGE ON FOREIGN SERVER fw_shards TO PUBLIC;
});
	return;
}

sub on_storage
{
	my ($node, $db, $storage, $sql) = @_;
	$node->safe_psql('postgres', "ALTER DATABASE $db SET fixed_window.storage = '$storage'");
	my $out = $node->safe_psql($db, $sql);
	$node->safe_psql('postgres', "ALTER DATABASE $db RESET fixed_window.storage");
	return $out;
}

sub in_turn
{
	my ($node, $db, $sql) = @_;
	my @outputs;
	my $storage = 'default';
	for my $part (split /^\s*-- storage: (\w+)\s*$/m, $sql)
	{
		if ($part =~ /^(table|shmem|default)$/)
		{
			$storage = $part;
			next;
		}
		next if $part !~ /\S/;
		my $out = $storage eq 'default'
		  ? $node->safe_psql($db, $part)
		  : on_storage($node, $db, $storage, $part);
		push @outputs, $out if $out ne '';
	}
	return join("\n", @outputs);
}

1;
