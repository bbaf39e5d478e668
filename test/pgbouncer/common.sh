# What the checks of the pgbouncer layer share (test/pgbouncer/NNN_*.sh).
# Sourced, not run.
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

# pooled_cluster [postgresql.conf lines...] -- [pgbouncer.ini lines...]: a
# throwaway cluster with fixed_window created in its database postgres,
# and PgBouncer in transaction mode in front of it (fw_pgbouncer_start,
# with pgbouncer's usual ignore_startup_parameters).  Both end, and are
# checked to have ended, when the shell exits: run it in a subshell to
# have several in turn.  Sets dir, PGHOST and PGPORT (the cluster itself)
# and FW_POOLER_PORT.
pooled_cluster() {
    local conf=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do conf+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    dir=$(fw_private_dir)
    trap 'fw_pgbouncer_stop "$dir"; fw_cluster_stop "$dir"; rm -rf "$dir"; fw_left_running "$dir"' EXIT
    fw_cluster_start "$dir" "${conf[@]}"
    fw_as_user psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION fixed_window'
    fw_pgbouncer_start "$dir" "$@"
}

# pooled CMD...: a client program (psql, pgbench) connected through the
# pooler, as the unprivileged account.
pooled() {
    fw_as_user env PGPORT="$FW_POOLER_PORT" "$@"
}
