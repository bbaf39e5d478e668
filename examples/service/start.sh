# Starting the example service, for its test and for make demo.  Sourced
# after scripts/lib.sh, not run.
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

# service_start SERVICE_DIR RUN_DIR [VAR=value...]: load schema.sql into the
# database that the PG* variables name, install the service's dependencies
# from the npm registry (npm ci, pinned by package-lock.json), and start the
# service on a free port with the given environment, as the unprivileged
# account.  Sets service_url and service_pid; the log is RUN_DIR/service.log.
service_start() {
    local here=$1 run=$2; shift 2
    command -v node >/dev/null && command -v npm >/dev/null ||
        { echo "the example service needs node and npm (apt-get install nodejs npm)" >&2; return 1; }
    fw_as_user psql -X -q -v ON_ERROR_STOP=1 -f "$here/schema.sql" >/dev/null
    fw_log "installing the service's dependencies (npm ci)"
    (cd "$here" && fw_as_user npm ci --silent --no-audit --no-fund --cache "$run/npm-cache" >/dev/null)
    fw_as_user env PORT=0 "$@" node "$here/server.js" >"$run/service.log" 2>&1 &
    service_pid=$!
    local _
    for _ in $(seq 100); do
        grep -q '^listening on ' "$run/service.log" && break
        kill -0 "$service_pid" 2>/dev/null || break
        sleep 0.1
    done
    service_url=$(sed -n 's/^listening on //p' "$run/service.log")
    [ -n "$service_url" ] || { echo "the service did not start:" >&2; cat "$run/service.log" >&2; return 1; }
    fw_log "service at $service_url"
}

# service_stop: stop the service service_start started, if it runs.
service_stop() {
    [ -n "${service_pid:-}" ] && kill "$service_pid" 2>/dev/null || true
}
