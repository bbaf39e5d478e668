#!/usr/bin/env bash
# One key, one counter behind a transaction pooler (issue 30, finding 2).
# A client's SET stays on the server connection PgBouncer gave it, and
# reaches the next clients of that connection: a SET of
# fixed_window.storage would make them count a key in another store, where
# it has a fresh counter (on 1.5 a key spent to its rate of 100 allowed 100
# more).  The SET is refused, as is a role's storage; through one server
# connection, 100 calls spend the key's rate, a client's SET then fails, and
# the next 100 calls are all denied, with one counter for the key.
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
source "$(dirname "$0")/common.sh"

pooled_cluster "shared_preload_libraries = 'fixed_window'" -- "default_pool_size = 1"
# (in the cluster's directory, which the cluster's end removes)
calls=$dir/calls.sql
cat >"$calls" <<'SQL'
INSERT INTO calls SELECT ok FROM fw_limit('split', 'user-42', 100, '1 hour');
SQL
chmod a+r "$calls"
fw_as_user psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE TABLE calls (ok bool)'
pooled pgbench -n -c 4 -j 2 -t 25 -f "$calls" >"$dir/pgbench.log" 2>&1 || { cat "$dir/pgbench.log" >&2; exit 1; }

# the storage of a role, through the pooler: refused
if pooled psql -X -q -c "ALTER ROLE $PGUSER SET fixed_window.storage = 'table'" >/dev/null 2>&1; then
    echo "ALTER ROLE ... SET fixed_window.storage was accepted" >&2
    exit 1
fi

# a client sets the storage of its session, through the pooler
if out=$(pooled psql -X -q -c "SET fixed_window.storage = 'table'" 2>&1); then
    echo "SET fixed_window.storage was accepted through the pooler" >&2
    refused=no
else
    refused=yes
    grep -q 'parameter "fixed_window.storage" can be set only for the whole server or a whole database' <<<"$out" ||
        { echo "SET fixed_window.storage failed, but not as expected: $out" >&2; exit 1; }
fi

pooled pgbench -n -c 4 -j 2 -t 25 -f "$calls" >"$dir/pgbench.log" 2>&1 || { cat "$dir/pgbench.log" >&2; exit 1; }
got=$(fw_as_user psql -X -At -v ON_ERROR_STOP=1 -c "
    SELECT count(*) FILTER (WHERE ok) || ' of ' || count(*) || ' calls allowed, '
           || (SELECT count(*) FROM fw_counters WHERE name = 'split') || ' counter(s)'
    FROM calls")
echo "storage split: $got (the SET refused: $refused)"
[ "$refused" = yes ] && [ "$got" = "100 of 200 calls allowed, 1 counter(s)" ]
