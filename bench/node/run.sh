#!/usr/bin/env bash
# make bench's Node.js rows: fixed-window-pg (clients/node) beside
# rate-limiter-flexible's RateLimiterPostgres, @acpr/rate-limit-postgresql,
# express-rate-limit's MemoryStore and SELECT 1, on one pg.Pool in one Node
# process (bench/node/bench.mjs says how each is measured).
#
#   bench/node/run.sh [OUT.md]
#
# Starts a throwaway server of its own, preloaded as make bench's first one
# (bench/rows.sh), with more slots: every round's keys are fresh, and they
# stay for their minute.  The package is copied and its development
# dependencies installed (npm ci), as clients/node/test.sh does; the Node
# process runs as the unprivileged account.  Writes the Markdown table (a
# heading, the date and the machine, the rows) to OUT.md when given, and
# prints it.  bench/run.sh calls it after its own tables and appends OUT.md
# to bench/results/latest.md.
#
# Knobs (environment): BENCH_RUNS (rounds, 3), BENCH_NODE_CHECKS (20000),
# BENCH_NODE_KEYS (10000), BENCH_NODE_LIMIT (5), BENCH_NODE_WINDOW_MS
# (60000), BENCH_NODE_IN_FLIGHT (8), BENCH_NODE_POOL (8), BENCH_NODE_HITS
# (1000, the exactness test), BENCH_NODE_WARMUP (4000), BENCH_NODE_ONLY
# (contender ids, comma separated: see bench.mjs), BENCH_NODE_FSYNC (on).
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
source "$(dirname "$0")/../../scripts/lib.sh"
source "$FW_ROOT/bench/rows.sh"
out=${1:-}
[ -z "$out" ] || out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

fw_base_packages
fw_node_packages

dir=$(fw_private_dir)
cleanup() {
    fw_cluster_stop "$dir"
    rm -rf "$dir"
    fw_left_running "$dir"
}
trap cleanup EXIT

# Five fixed_window contenders take up to 20,000 counters a round each:
# 1,000,000 slots hold them and the warm-up's with room to spare.  Commits
# are durable here (fsync on, PostgreSQL's default; the other bench servers
# turn it off): what a logged table costs RateLimiterPostgres is part of what
# the rows compare.  BENCH_NODE_FSYNC=off measures as the other servers do.
fw_cluster_start "$dir" "${bench_preloaded[@]}" "fixed_window.max_counters = 1000000" \
    "fsync = ${BENCH_NODE_FSYNC:-on}"
fw_as_user psql -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE bench_node" >/dev/null
fw_as_user psql -X -q -v ON_ERROR_STOP=1 -d bench_node -c "CREATE EXTENSION fixed_window" >/dev/null

# The package as test.sh installs it, with the pinned development
# dependencies: the competitors and the frameworks.
mkdir "$dir/pkg"
tar -C "$FW_ROOT/clients/node" --exclude=node_modules --exclude='*.tgz' -cf - . | tar -C "$dir/pkg" -xf -
[ "$(id -u)" -eq 0 ] && chown -R "$FW_RUN_USER" "$dir/pkg"
fw_log "installing the Node.js package's development dependencies (npm ci)"
(cd "$dir/pkg" && fw_as_user npm --silent --no-audit --no-fund --cache "$dir/npm-cache" ci >/dev/null)

# The table goes to a file the unprivileged account may write, then to OUT.
fw_log "the Node.js rows"
fw_as_user env FW_NODE_PACKAGE="$dir/pkg" BENCH_NODE_OUT="$dir/node.md" \
    PGHOST="$PGHOST" PGPORT="$PGPORT" PGUSER=postgres PGDATABASE=bench_node \
    node "$FW_ROOT/bench/node/bench.mjs" >/dev/null
[ -z "$out" ] || cp "$dir/node.md" "$out"
cat "$dir/node.md"
