#!/usr/bin/env bash
# The pgbouncer layer (make test-pgbouncer): fixed_window and the example
# service behind PgBouncer in transaction mode, the pooler most
# installations put in front of PostgreSQL.  Each check is a script of this
# directory named NNN_*.sh, run in turn as the unprivileged account; each
# starts what it needs (common.sh: a cluster and the pooler in front, ended
# with the check), says what it found and exits non-zero on a failure.  A
# new check is a new file.
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
source "$(dirname "$0")/../../scripts/lib.sh"

here=$(cd "$(dirname "$0")" && pwd)
failed=()
for check in "$here"/[0-9][0-9][0-9]_*.sh; do
    fw_log "pgbouncer: $(basename "$check")"
    bash "$check" || failed+=("$(basename "$check")")
done
[ ${#failed[@]} -eq 0 ] || { echo "pgbouncer checks failed: ${failed[*]}" >&2; exit 1; }
