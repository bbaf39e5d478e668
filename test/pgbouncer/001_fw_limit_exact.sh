#!/usr/bin/env bash
# fw_limit through PgBouncer in transaction mode stays exact: 16 pgbench
# clients sharing 4 server connections call a limit of 25 a minute on 10
# keys, in 5 windows one after the other (the debug clock, which each
# transaction sets for itself, as SET LOCAL does), and every key allows
# exactly min(25, calls) in every window.  On shared memory (preloaded)
# and on the table.
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
source "$(dirname "$0")/common.sh"

rate=25 clients=16 transactions=60 windows=5
script=$(mktemp)
trap 'rm -f "$script"' EXIT
cat >"$script" <<SQL
\set k random(1, 10)
BEGIN;
SELECT set_config('fixed_window.debug_now', (timestamptz '2026-01-01 00:00:00+00' + :w * interval '1 minute')::text, true);
INSERT INTO calls SELECT :k, :w, ok FROM fw_limit('pooled', 'key-' || :k, $rate, '1 minute');
COMMIT;
SQL
chmod a+r "$script"

for storage in shmem table; do
    (
        case $storage in
        shmem) pooled_cluster "shared_preload_libraries = 'fixed_window'" -- "default_pool_size = 4" ;;
        table) pooled_cluster "fixed_window.storage = table" -- "default_pool_size = 4" ;;
        esac
        fw_as_user psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE TABLE calls (k int, w int, ok bool)'
        for w in $(seq 0 $((windows - 1))); do
            pooled pgbench -n -c "$clients" -j 2 -t "$transactions" -D w="$w" -f "$script" >"$dir/pgbench.log" 2>&1 ||
                { cat "$dir/pgbench.log" >&2; exit 1; }
        done
        in_use=$(fw_as_user psql -X -At -c 'SELECT fw_storage_in_use()')
        [ "$in_use" = "$storage" ] || { echo "the calls went to $in_use, not to $storage" >&2; exit 1; }
        fw_as_user psql -X -At -q -v ON_ERROR_STOP=1 -o "$dir/windows" <<SQL
CREATE VIEW windows AS
    SELECT k, w, count(*) AS calls, count(*) FILTER (WHERE ok) AS allowed FROM calls GROUP BY k, w;
SELECT format('$storage: %s calls, %s of %s key-windows at the rate', sum(calls),
              count(*) FILTER (WHERE allowed = $rate), count(*)) FROM windows;
SELECT format('key-%s, window %s: %s of %s calls allowed, not exact', k, w, allowed, calls)
    FROM windows WHERE allowed <> least(calls, $rate) ORDER BY k, w;
SQL
        cat "$dir/windows"
        [ "$(wc -l <"$dir/windows")" -eq 1 ] && grep -q "^$storage: $((clients * transactions * windows)) calls" "$dir/windows"
    ) || exit 1
done
