# Starting the example service, for its test and for make demo.  Sourced
# after scripts/lib.sh, not run.
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.

# service_start SERVICE_DIR RUN_DIR [VAR=value...]: load schema.sql into the
# database that the PG* variables name, copy the service and the Node.js
# package it uses (clients/node, fixed-window-pg) into RUN_DIR in their
# places in the repository, RUN_DIR/examples/service and RUN_DIR/clients/node,
# so that its dependency "file:../../clients/node" finds the package there,
# install its dependencies (npm ci, pinned by package-lock.json: pg from the
# npm registry, fixed-window-pg as a link to the copy), and start it on a
# free port with the given environment, as the unprivileged account.  Sets
# service_url, and service_dir, where the copy is; the log is
# RUN_DIR/service.log, node's process id in RUN_DIR/service.pid.
# Everything it starts runs from RUN_DIR, so that fw_left_running RUN_DIR
# finds whatever service_stop left.
service_start() {
    local here=$1 run=$2 part; shift 2
    command -v node >/dev/null && command -v npm >/dev/null ||
        { echo "the example service needs node and npm (apt-get install nodejs npm)" >&2; return 1; }
    fw_as_user psql -X -q -v ON_ERROR_STOP=1 -f "$here/schema.sql" >/dev/null
    for part in examples/service clients/node; do
        mkdir -p "$run/$part"
        tar -C "$here/../../$part" --exclude=node_modules --exclude='*.tgz' -cf - . | tar -C "$run/$part" -xf -
    done
    [ "$(id -u)" -eq 0 ] && chown -R "$FW_RUN_USER" "$run/examples" "$run/clients"
    service_dir=$run/examples/service
    fw_log "installing the service's dependencies (npm ci)"
    (cd "$service_dir" && fw_as_user npm ci --silent --no-audit --no-fund --cache "$run/npm-cache" >/dev/null)
    # sh execs node, so that the process id it writes is node's
    fw_as_user env PORT=0 "$@" sh -c 'echo $$ >"$1/service.pid" && exec node "$2/server.js"' sh "$run" "$service_dir" \
        >"$run/service.log" 2>&1 &
    service_run=$run
    local _
    for _ in $(seq 100); do
        grep -q '^listening on ' "$run/service.log" && break
        kill -0 $! 2>/dev/null || break
        sleep 0.1
    done
    service_url=$(sed -n 's/^listening on //p' "$run/service.log")
    [ -n "$service_url" ] || { echo "the service did not start:" >&2; cat "$run/service.log" >&2; return 1; }
    fw_log "service at $service_url"
}

# service_stop: stop the service service_start started, if it runs, and
# wait for it to end.
service_stop() {
    [ -n "${service_run:-}" ] && [ -f "$service_run/service.pid" ] && fw_stop_pid "$(cat "$service_run/service.pid")"
    return 0
}
