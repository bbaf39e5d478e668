# Shared helpers of fixed_window's scripts (test, demo, bench).  Sourced, not run.
#
# Everything here works on a fresh Debian machine: as root it installs what
# is missing from Debian's packages and runs PostgreSQL as the unprivileged
# "postgres" account; as another user it expects the packages and a
# writable PostgreSQL install directory, and runs PostgreSQL as that user.
# Clusters live in private temporary directories with their own socket
# directory, never touching the system cluster.

set -euo pipefail

FW_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FW_PG_MAJOR=${FW_PG_MAJOR:-15}
# The server's programs.  FW_PG_BIN may name another copy of them (see
# docs/development.md, "Two working trees on one machine").
FW_PG_BIN=${FW_PG_BIN:-/usr/lib/postgresql/$FW_PG_MAJOR/bin}
FW_RUN_USER=${FW_RUN_USER:-postgres}
export PATH="$FW_PG_BIN:$PATH"

fw_log() { printf '==> %s\n' "$*" >&2; }

# fw_packages PKG...: install the Debian packages that are missing.
# FW_INSTALL says whether to: "auto" (the default) installs them only when
# running as root (not under fakeroot); "yes" installs them, through sudo
# when not root; "no" never installs and stops, naming what is missing.
FW_INSTALL=${FW_INSTALL:-auto}
fw_packages() {
    local missing=() p sudo=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    case "$FW_INSTALL" in
    auto) if [ "$(id -u)" -ne 0 ] || [ -n "${FAKEROOTKEY:-}" ]; then
              missing_packages "${missing[@]}"; return 1
          fi ;;
    yes) [ "$(id -u)" -eq 0 ] || sudo=(sudo) ;;
    no) missing_packages "${missing[@]}"; return 1 ;;
    *) echo "FW_INSTALL must be auto, yes or no, not \"$FW_INSTALL\"" >&2; return 1 ;;
    esac
    fw_log "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
}
missing_packages() {
    echo "missing packages: $*" >&2
    echo "install them (apt-get install $*), or run again with FW_INSTALL=yes to have them installed" >&2
}

fw_base_packages() {
    fw_packages make gcc "postgresql-$FW_PG_MAJOR" "postgresql-server-dev-$FW_PG_MAJOR" \
        "postgresql-contrib" libipc-run-perl "$@"
}

# Node.js and npm, for the example service (examples/service).
fw_node_packages() {
    command -v node >/dev/null && command -v npm >/dev/null || fw_packages nodejs npm
}

# Build the extension and install it into the server's directories.
fw_build_install() {
    local pg_config="$FW_PG_BIN/pg_config"
    fw_log "building and installing fixed_window"
    make -C "$FW_ROOT" -s PG_CONFIG="$pg_config" >/dev/null
    make -C "$FW_ROOT" -s PG_CONFIG="$pg_config" install >/dev/null
}

# fw_as_user CMD...: run a command as the unprivileged account when root.
fw_as_user() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$FW_RUN_USER" -- env PATH="$PATH" HOME=/tmp "$@"
    else
        "$@"
    fi
}

# fw_private_dir: a temporary directory the unprivileged account owns.
fw_private_dir() {
    local dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/fixed_window.XXXXXX")
    [ "$(id -u)" -eq 0 ] && chown "$FW_RUN_USER" "$dir"
    chmod 700 "$dir"
    echo "$dir"
}

# fw_cluster_start DIR [postgresql.conf lines...]: initdb and start a
# throwaway cluster in DIR, reachable only through the socket in DIR.
# Sets PGHOST, PGPORT, PGDATABASE for the caller.
fw_cluster_start() {
    local dir=$1; shift
    fw_as_user initdb -D "$dir/data" -A trust -U postgres --no-sync >/dev/null
    {
        echo "listen_addresses = ''"
        echo "unix_socket_directories = '$dir'"
        echo "port = 5499"
        echo "fsync = off"
        printf '%s\n' "$@"
    } >>"$dir/data/postgresql.conf"
    fw_as_user pg_ctl -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
    export PGHOST=$dir PGPORT=5499 PGUSER=postgres PGDATABASE=postgres
}

fw_cluster_stop() {
    local dir=$1
    [ -f "$dir/data/postmaster.pid" ] && fw_as_user pg_ctl -D "$dir/data" -m fast -w stop >/dev/null || true
}

# fw_pgbouncer_start DIR [pgbouncer.ini lines...]: PgBouncer in transaction
# mode in front of the cluster the PG* variables name (fw_cluster_start), as
# the unprivileged account, listening only on a socket in DIR (port 6432),
# with the ignore_startup_parameters most installations set
# (extra_float_digits, for JDBC); the lines given come after these and
# replace them.  Every login role of the cluster at this moment may connect
# (auth_type trust); PGUSER may use the admin console (database pgbouncer).
# Sets FW_POOLER_PORT; the log is DIR/pgbouncer.log.
fw_pgbouncer_start() {
    local dir=$1 _; shift
    fw_as_user psql -X -At -c 'SELECT format($$"%s" ""$$, replace(rolname, $$"$$, $$""$$)) FROM pg_roles WHERE rolcanlogin' \
        >"$dir/pgbouncer.users"
    {
        echo "[databases]"
        echo "* = host=$PGHOST port=$PGPORT"
        echo "[pgbouncer]"
        echo "unix_socket_dir = $dir"
        echo "listen_port = 6432"
        echo "pool_mode = transaction"
        echo "auth_type = trust"
        echo "auth_file = $dir/pgbouncer.users"
        echo "admin_users = $PGUSER"
        echo "ignore_startup_parameters = extra_float_digits"
        echo "logfile = $dir/pgbouncer.log"
        echo "pidfile = $dir/pgbouncer.pid"
        printf '%s\n' "$@"
    } >"$dir/pgbouncer.ini"
    [ "$(id -u)" -eq 0 ] && chown "$FW_RUN_USER" "$dir/pgbouncer.users" "$dir/pgbouncer.ini"
    fw_as_user /usr/sbin/pgbouncer -d -q "$dir/pgbouncer.ini"
    for _ in $(seq 100); do
        [ -S "$dir/.s.PGSQL.6432" ] && break
        sleep 0.1
    done
    [ -S "$dir/.s.PGSQL.6432" ] || { echo "pgbouncer did not start:" >&2; cat "$dir/pgbouncer.log" >&2; return 1; }
    FW_POOLER_PORT=6432
}

# fw_pgbouncer_stop DIR: stop the PgBouncer fw_pgbouncer_start started, if it runs.
fw_pgbouncer_stop() {
    local dir=$1
    [ -f "$dir/pgbouncer.pid" ] && fw_stop_pid "$(cat "$dir/pgbouncer.pid")"
    return 0
}

# fw_stop_pid PID: SIGTERM to a process this script started, then SIGKILL
# if it has not ended within ten seconds.
fw_stop_pid() {
    local pid=$1 _
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

# fw_left_running DIR: after a script's clean-up, fail if any process whose
# command line names DIR (a cluster, a pooler or a service it started there)
# still runs; name each and end it.
fw_left_running() {
    local dir=$1 left pid
    left=$(pgrep -a -f -- "$dir") || return 0
    echo "still running after $dir was cleaned up:" >&2
    echo "$left" >&2
    for pid in $(echo "$left" | cut -d' ' -f1); do fw_stop_pid "$pid"; done
    return 1
}
