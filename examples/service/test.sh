#!/usr/bin/env bash
# The example service's test (a layer of make test): a throwaway cluster
# with fixed_window preloaded and the schema, the service's dependencies from
# the npm registry (npm ci, pinned by package-lock.json), the service on a
# free port, and its tests over HTTP.  Runs as an unprivileged user; make
# test installs Node.js and npm first when they are missing.
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
source "$(dirname "$0")/../../scripts/lib.sh"
here=$FW_ROOT/examples/service

command -v node >/dev/null && command -v npm >/dev/null ||
    { echo "the example service needs node and npm (apt-get install nodejs npm)" >&2; exit 1; }

dir=$(fw_private_dir)
service_pid=
cleanup() {
    [ -n "$service_pid" ] && kill "$service_pid" 2>/dev/null || true
    fw_cluster_stop "$dir"
    rm -rf "$dir"
}
trap cleanup EXIT

fw_cluster_start "$dir" "shared_preload_libraries = 'fixed_window'"
psql -X -q -v ON_ERROR_STOP=1 -f "$here/schema.sql" >/dev/null

fw_log "installing the service's dependencies (npm ci)"
(cd "$here" && npm ci --silent --no-audit --no-fund --cache "$dir/npm-cache" >/dev/null)

PORT=0 FW_TEST_CLOCK=1 node "$here/server.js" >"$dir/service.log" 2>&1 &
service_pid=$!
for _ in $(seq 100); do
    grep -q '^listening on ' "$dir/service.log" && break
    kill -0 "$service_pid" 2>/dev/null || { cat "$dir/service.log" >&2; exit 1; }
    sleep 0.1
done
url=$(sed -n 's/^listening on //p' "$dir/service.log")
[ -n "$url" ] || { echo "the service did not start" >&2; cat "$dir/service.log" >&2; exit 1; }
fw_log "service at $url"

if ! SERVICE_URL=$url node --test "$here/test/"; then
    echo "--- service log" >&2
    cat "$dir/service.log" >&2
    exit 1
fi
