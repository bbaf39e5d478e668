#!/usr/bin/env bash
# The example service's test (a layer of make test): a throwaway cluster
# with fixed_window preloaded and the schema, the service on a free port
# (start.sh), and its tests over HTTP.  Runs as an unprivileged user; make
# test installs Node.js and npm first when they are missing.  Whatever it
# started has ended when it ends (fw_left_running).
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
source "$(dirname "$0")/../../scripts/lib.sh"
here=$FW_ROOT/examples/service
source "$here/start.sh"

dir=$(fw_private_dir)
cleanup() {
    service_stop
    fw_cluster_stop "$dir"
    rm -rf "$dir"
    fw_left_running "$dir"
}
trap cleanup EXIT

fw_cluster_start "$dir" "shared_preload_libraries = 'fixed_window'"
# The tests stand for the proxy in front of the service: they connect from
# 127.0.0.1 and say in X-Forwarded-For whom they forward.  They restart the
# database (PG_DATA) and hold locks, so the deadline of a call is short.
service_start "$here" "$dir" FW_TEST_CLOCK=1 TRUSTED_PROXIES=127.0.0.1 STATEMENT_TIMEOUT_MS=1000

if ! fw_as_user env SERVICE_URL="$service_url" PG_DATA="$dir/data" PGHOST="$PGHOST" PGPORT="$PGPORT" \
        PGUSER="$PGUSER" PGDATABASE="$PGDATABASE" node --test "$dir/service/test/"; then
    echo "--- service log" >&2
    cat "$dir/service.log" >&2
    exit 1
fi
