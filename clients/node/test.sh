#!/usr/bin/env bash
# The Node.js package's tests (a layer of make test): a throwaway cluster
# with fixed_window preloaded, set up as the README says (the extension in
# the schema fw, the roles app and fw_admin with their grants), PgBouncer in
# transaction mode in front of it, and three more databases as the shards of
# a router.  The package is packed (npm pack), its tarball installed into a
# scratch project and loaded there as ESM and as CommonJS, its types
# checked, and its test files run with Node's test runner against the
# cluster, one file at a time: they restart the database.
#
#   test.sh [FILE...]   only the test files named (e.g. express.test.mjs)
#
# Runs as the unprivileged account; installs Node.js, npm and PgBouncer
# first when they are missing (as root).  Whatever it started has ended when
# it ends (fw_left_running).
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
source "$(dirname "$0")/../../scripts/lib.sh"
here=$FW_ROOT/clients/node

fw_node_packages
command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ] || fw_packages pgbouncer

dir=$(fw_private_dir)
cleanup() {
    fw_pgbouncer_stop "$dir"
    fw_cluster_stop "$dir"
    rm -rf "$dir"
    fw_left_running "$dir"
}
trap cleanup EXIT

fw_cluster_start "$dir" "shared_preload_libraries = 'fixed_window'" "max_connections = 200"
fw_as_user psql -X -q -v ON_ERROR_STOP=1 -f "$here/test/setup.sql" >/dev/null
fw_pgbouncer_start "$dir" "server_login_retry = 1" "max_client_conn = 400" "default_pool_size = 20"

# The package as npm would install it, and its development dependencies
# (pinned by package-lock.json) for the tests.
mkdir "$dir/pkg"
tar -C "$here" --exclude=node_modules --exclude='*.tgz' -cf - . | tar -C "$dir/pkg" -xf -
[ "$(id -u)" -eq 0 ] && chown -R "$FW_RUN_USER" "$dir/pkg"
npm=(npm --silent --no-audit --no-fund --cache "$dir/npm-cache")
fw_log "installing the package's development dependencies (npm ci)"
(cd "$dir/pkg" && fw_as_user "${npm[@]}" ci >/dev/null)

failed=()
if [ $# -eq 0 ]; then
    fw_log "npm pack, and the tarball installed and loaded as ESM and CommonJS"
    if ! (cd "$dir/pkg" && fw_as_user bash test/pack.sh "$dir/npm-cache"); then failed+=(pack); fi
    fw_log "the TypeScript declarations (tsc --noEmit)"
    (cd "$dir/pkg" && fw_as_user node_modules/.bin/tsc -p test/tsconfig.json) || failed+=(types)
    mapfile -t files < <(cd "$here/test" && ls -- *.test.mjs)
    set -- "${files[@]}"
fi
for test in "$@"; do
    fw_as_user env README_MAIN="$FW_ROOT/README.md" PG_DATA="$dir/data" POOLER_PORT="$FW_POOLER_PORT" PGHOST="$PGHOST" PGPORT="$PGPORT" \
        PGUSER=postgres PGDATABASE=postgres node --test --test-reporter=spec "$dir/pkg/test/$test" || failed+=("$test")
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "failed: ${failed[*]}" >&2
    echo "--- server log (the last 60 lines)" >&2
    tail -n 60 "$dir/server.log" >&2
    exit 1
fi
