# shellcheck shell=bash
# The rows of make bench that bench/run.sh and bench/versions.sh share:
# the objects they call, the pgbench scripts, their labels, medians and
# ratios.  Sourced after scripts/lib.sh, not run.

# The settings of every bench server, and of those that preload the library
# (run.sh's first and aged servers, every server of versions.sh).
# shellcheck disable=SC2034
bench_common=("fixed_window.max_counters = 200000" "fixed_window.database_share = 100"
              "fixed_window.role_share = 100" "max_connections = 100")
bench_preloaded=("shared_preload_libraries = 'fixed_window'" "${bench_common[@]}" "shared_buffers = 256MB")

# bench_build_install: a plain build of the extension (no assertions, the
# flags of pg_config; make test's build has both), installed.
bench_build_install() {
    unset COPT
    make -C "$FW_ROOT" -s clean >/dev/null
    fw_build_install
}

# bench_prepare [PSQL OPTION...]: on the server psql reaches with these
# options, the extension, the PL/pgSQL recipe (bench/recipe.sql), the
# policies of the named rows, and the database of the table backend's rows
# (bench_table), whose calls keep counters in the table: storage is chosen
# for a database, not a session.  Where the SQL edition is installed (not in
# the versions before it), a database of its own, bench_sql, with the same
# one-window policy.
bench_prepare() {
    fw_as_user psql -X -q -v ON_ERROR_STOP=1 "$@" -c "CREATE EXTENSION fixed_window" -f "$FW_ROOT/bench/recipe.sql" \
        -c "SELECT fw_define('policy1', 1000000000, '1 hour')" \
        -c "SELECT fw_define('policy2', 1000000000, '1 hour'), fw_define('policy2', 1000000000, '1 minute')" \
        -c "CREATE DATABASE bench_table" \
        -c "ALTER DATABASE bench_table SET fixed_window.storage = 'table'" >/dev/null
    fw_as_user psql -X -q -v ON_ERROR_STOP=1 "$@" -d bench_table -c "CREATE EXTENSION fixed_window" >/dev/null
    if [ "$(fw_as_user psql -X -At "$@" -c "SELECT count(*) FROM pg_available_extensions WHERE name = 'fixed_window_sql'")" = 1 ]; then
        fw_as_user psql -X -q -v ON_ERROR_STOP=1 "$@" -c "CREATE DATABASE bench_sql" >/dev/null
        fw_as_user psql -X -q -v ON_ERROR_STOP=1 "$@" -d bench_sql -c "CREATE EXTENSION fixed_window_sql" \
            -c "SELECT fw_define('policy1', 1000000000, '1 hour')" >/dev/null
    fi
}

# bench_write_scripts DIR: the pgbench scripts of every row into DIR, one
# ROW.sql each, readable by the unprivileged account; KEYS random keys.
bench_write_scripts() {
    local scripts=$1 storage random="\\set k random(1, $KEYS)"
    mkdir -p "$scripts"
    # write_script ROW LINE...: the script of ROW, a line each
    write_script() { printf '%s\n' "${@:2}" >"$scripts/$1.sql"; }
    write_script select1 'SELECT 1;'
    write_script param "$random" 'SELECT :k::text;'
    # The floors the goals of issue 22 name: a function returning a row for a
    # key, and a key parameter's test.
    write_script upper_row "$random" 'SELECT * FROM upper(:k::text);'
    write_script is_not_null "$random" 'SELECT (:k::text) IS NOT NULL;'
    # fw_limit answers as the recipe and Redis do, with the decision alone; one
    # row shows the cost of all four columns through SELECT * FROM.
    # sql_*: the same calls on the SQL edition (database bench_sql)
    for storage in shmem table sql; do
        write_script "${storage}_random" "$random" "SELECT (fw_limit('bench', :k::text, 1000000000, '1 hour')).ok;"
        write_script "${storage}_hot" "SELECT (fw_limit('bench', 'hot', 1000000000, '1 hour')).ok;"
    done
    # Named policies, on shared memory: the same call as shmem_random through a
    # policy of one window (the same rate and period), and of two windows.
    write_script policy_one "$random" "SELECT (fw_limit('policy1', :k::text)).ok;"
    write_script policy_two "$random" "SELECT (fw_limit('policy2', :k::text)).ok;"
    write_script sql_policy_one "$random" "SELECT (fw_limit('policy1', :k::text)).ok;"
    write_script policy_many "$random" "SELECT (fw_limit('many', :k::text)).ok;"
    # Through the router: the same call as shmem_random, and the same hop with
    # SELECT 1 on the shard in place of fw_limit.
    write_script router_random "$random" "SELECT (fw_limit('bench', :k::text, 1000000000, '1 hour')).ok;"
    write_script router_select1 "$random" "SELECT fw_route_ping('bench', :k::text);"
    # The router's hop alone, without its fault handling (a PL/pgSQL exception
    # block, that is a subtransaction, around each call).
    write_script router_unguarded "$random" \
        "SELECT (fw_route_limit('bench', :k::text, 1000000000, '1 hour', '1970-01-01 00:00:00+00', 1, NULL)).ok;"
    write_script shmem_random_row "$random" "SELECT * FROM fw_limit('bench', :k::text, 1000000000, '1 hour');"
    write_script recipe_random "$random" "SELECT recipe_limit('bench', :k::text, 1000000000, '1 hour');"
    write_script recipe_hot "SELECT recipe_limit('bench', 'hot', 1000000000, '1 hour');"
    write_script bulk_hashtext "SELECT count(*) FROM generate_series(1, 1000000) g WHERE hashtext((g % 100000)::text) <> 0;"
    # the same keys in an order that takes each call's slot far from the last
    # one's (7919 is prime to 100,000): the fresh table's keys were first called
    # in the order of g, and took slots in that order
    write_script bulk_scattered "SELECT count(*) FROM generate_series(1, 1000000) g WHERE (fw_limit('bulk', ((g % 100000) * 7919 % 100000)::text, 1000000, '1 hour')).ok;"
    for storage in shmem table; do
        write_script "bulk_$storage" "SELECT count(*) FROM generate_series(1, 1000000) g WHERE (fw_limit('bulk', (g % 100000)::text, 1000000, '1 hour')).ok;"
    done
    [ "$(id -u)" -ne 0 ] || chown -R "$FW_RUN_USER" "$scripts"
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

label() {
    case $1 in
        select1) echo '`SELECT 1` (the floor)' ;;
        param) echo 'the floor with a random key parameter: `SELECT :k::text`' ;;
        upper_row) echo 'a function'"'"'s row for a random key: `SELECT * FROM upper(:k::text)`' ;;
        is_not_null) echo 'a random key parameter tested: `SELECT (:k::text) IS NOT NULL`' ;;
        aged_random) echo 'fw_limit, shared memory, aged table, 10,000 random keys' ;;
        aged_random_row) echo 'the same, aged table, all four columns' ;;
        aged_hot) echo 'fw_limit, shared memory, aged table, one hot key' ;;
        bulk_aged) echo 'fw_limit, shared memory, aged table' ;;
        shmem_random) echo 'fw_limit, shared memory, 10,000 random keys' ;;
        policy_one) echo 'named fw_limit, one-window policy, shared memory, 10,000 random keys' ;;
        policy_two) echo 'named fw_limit, two-window policy, shared memory, 10,000 random keys' ;;
        policy_many) echo 'named fw_limit, one-window policy with 200,000 overrides (one per key), shared memory, 10,000 random keys (each connection of the run reads a key'"'"'s overrides at its first call)' ;;
        router_random) echo 'fw_limit through the router (PL/Proxy, one shard), 10,000 random keys' ;;
        router_unguarded) echo 'the same without the router'"'"'s fault handling (`fw_route_limit`)' ;;
        router_select1) echo '`SELECT 1` on the shard through the same router' ;;
        shmem_random_row) echo 'the same, all four columns: `SELECT * FROM fw_limit(...)`' ;;
        shmem_hot) echo 'fw_limit, shared memory, one hot key' ;;
        dyn_random) echo 'fw_limit, dynamic shared memory without preload, 10,000 random keys' ;;
        dyn_hot) echo 'fw_limit, dynamic shared memory without preload, one hot key' ;;
        bulk_dyn) echo 'fw_limit, dynamic shared memory without preload' ;;
        table_random) echo 'fw_limit, table, 10,000 random keys' ;;
        table_hot) echo 'fw_limit, table, one hot key' ;;
        sql_random) echo 'fw_limit, SQL edition (`fixed_window_sql`, PL/pgSQL), 10,000 random keys' ;;
        sql_hot) echo 'fw_limit, SQL edition, one hot key' ;;
        sql_policy_one) echo 'named fw_limit, one-window policy, SQL edition, 10,000 random keys' ;;
        recipe_random) echo 'PL/pgSQL recipe, 10,000 random keys' ;;
        recipe_hot) echo 'PL/pgSQL recipe, one hot key' ;;
        redis_random) echo 'Redis + Lua (redis-benchmark), 10,000 random keys' ;;
        redis_hot) echo 'Redis + Lua (redis-benchmark), one hot key' ;;
        bulk_hashtext) echo '`hashtext()` in place of fw_limit' ;;
        bulk_shmem) echo 'fw_limit, shared memory' ;;
        bulk_scattered) echo 'fw_limit, shared memory, the same keys in scattered order (each slot far from the last)' ;;
        bulk_table) echo 'fw_limit, table' ;;
    esac
}
