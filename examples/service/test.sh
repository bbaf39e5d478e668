#!/usr/bin/env bash
# The example service's test (a layer of make test): a throwaway cluster
# with fixed_window preloaded and the schema, the service on a free port
# (start.sh), and its tests over HTTP.  "test.sh pgbouncer" runs them with
# PgBouncer in transaction mode between the service and the cluster
# (fw_pgbouncer_start), adding the pooler's own tests (a check of the
# pgbouncer layer).  Runs as an unprivileged user; make test installs
# Node.js, npm and PgBouncer first when they are missing.  Whatever it
# started has ended when it ends (fw_left_running).
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
source "$(dirname "$0")/../../scripts/lib.sh"
here=$FW_ROOT/examples/service
source "$here/start.sh"
pooler=${1:-}

dir=$(fw_private_dir)
cleanup() {
    service_stop
    fw_pgbouncer_stop "$dir"
    fw_cluster_stop "$dir"
    rm -rf "$dir"
    fw_left_running "$dir"
}
trap cleanup EXIT

fw_cluster_start "$dir" "shared_preload_libraries = 'fixed_window'"
service_port=$PGPORT
tests=(address.test.js service.test.js restart.test.js config.test.js stop.test.js)
if [ "$pooler" = pgbouncer ]; then
    # pgbouncer's usual settings, but for server_login_retry (15 s), which
    # would keep the service at 503 so long after each restart (pooler.test.js)
    fw_pgbouncer_start "$dir" "server_login_retry = 1"
    service_port=$FW_POOLER_PORT
    tests=(service.test.js restart.test.js config.test.js stop.test.js pooler.test.js)
elif [ -n "$pooler" ]; then
    echo "usage: $0 [pgbouncer]" >&2; exit 2
fi
# The tests stand for the proxy in front of the service: they connect from
# 127.0.0.1 and say in X-Forwarded-For whom they forward.  They restart the
# database (PG_DATA) and hold locks, so the deadline of a call is short.
service_start "$here" "$dir" PGPORT="$service_port" FW_TEST=1 TRUSTED_PROXIES=127.0.0.1 STATEMENT_TIMEOUT_MS=1000

# One file at a time: they restart the database and count its sessions.
failed=()
for test in "${tests[@]}"; do
    fw_as_user env SERVICE_URL="$service_url" SERVICE_PGHOST="$PGHOST" SERVICE_PGPORT="$service_port" \
        POOLER="$pooler" PG_DATA="$dir/data" PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER="$PGUSER" \
        PGDATABASE="$PGDATABASE" node --test "$service_dir/test/$test" || failed+=("$test")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "failed: ${failed[*]}" >&2
    echo "--- service log" >&2
    cat "$dir/service.log" >&2
    echo "--- server log (the last 100 lines)" >&2
    tail -n 100 "$dir/server.log" >&2
    exit 1
fi
