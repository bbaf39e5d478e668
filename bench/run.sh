#!/usr/bin/env bash
# make bench: fixed_window against its baselines, measured in one run on
# one machine.  Prints a markdown table and writes bench/results/latest.md.
#
# Every figure is the median of BENCH_RUNS runs, the runs of different rows
# interleaved so that a slow moment of the machine does not land on one row.
# Ratios compare rows of this run only.
source "$(dirname "$0")/../scripts/lib.sh"

RUNS=${BENCH_RUNS:-5}
SECONDS_PER_RUN=${BENCH_SECONDS:-3}
CLIENTS=${BENCH_CLIENTS:-8}

fw_base_packages
fw_build_install

dir=$(fw_private_dir)
trap 'fw_cluster_stop "$dir"; rm -rf "$dir"' EXIT
fw_cluster_start "$dir" \
    "shared_preload_libraries = 'fixed_window'" \
    "fixed_window.max_counters = 200000" \
    "max_connections = 100" \
    "shared_buffers = 256MB"
fw_as_user psql -X -q -c "CREATE EXTENSION fixed_window" >/dev/null

scripts=$dir/scripts
mkdir -p "$scripts"
cat >"$scripts/select1.sql" <<'SQL'
SELECT 1;
SQL
cat >"$scripts/result_shape.sql" <<'SQL'
\set k random(1, 10000)
SELECT * FROM (VALUES (true, NULL::interval, :k, interval '00:30:00.123456'))
    AS v(ok, retry_after, remaining, reset_after);
SQL
cat >"$scripts/shmem_random.sql" <<'SQL'
\set k random(1, 10000)
SELECT * FROM fw_limit('bench', :k::text, 1000000000, '1 hour');
SQL
cat >"$scripts/shmem_hot.sql" <<'SQL'
SELECT * FROM fw_limit('bench', 'hot', 1000000000, '1 hour');
SQL
cat >"$scripts/bulk_hashtext.sql" <<'SQL'
SELECT count(*) FROM generate_series(1, 1000000) g WHERE hashtext((g % 100000)::text) <> 0;
SQL
cat >"$scripts/bulk_shmem.sql" <<'SQL'
SELECT count(*) FROM generate_series(1, 1000000) g WHERE (fw_limit('bulk', (g % 100000)::text, 1000000, '1 hour')).ok;
SQL
[ "$(id -u)" -eq 0 ] && chown -R "$FW_RUN_USER" "$scripts"

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# pgbench TPS of one script: -M prepared, CLIENTS clients.
tps() {
    fw_as_user pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" \
        -f "$scripts/$1.sql" 2>/dev/null | awk '/^tps/ {print $3}'
}

# Milliseconds one bulk query takes.
query_ms() {
    fw_as_user psql -X -q -c '\timing on' -f "$scripts/$1.sql" | awk '/^Time:/ {print $2}'
}

declare -A samples
fw_log "warming up"
query_ms bulk_shmem >/dev/null
for row in select1 result_shape shmem_random shmem_hot; do tps "$row" >/dev/null; done

for run in $(seq "$RUNS"); do
    fw_log "run $run of $RUNS"
    for row in select1 result_shape shmem_random shmem_hot; do
        samples[$row]+="$(tps "$row") "
    done
    for row in bulk_hashtext bulk_shmem; do
        samples[$row]+="$(query_ms "$row") "
    done
done

med() { printf '%s\n' ${samples[$1]} | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

select1=$(med select1)
pg_version=$(fw_as_user psql -X -At -c 'SHOW server_version')
{
    echo "# fixed_window benchmark"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo);" \
         "$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo); PostgreSQL $pg_version." \
         "Median of $RUNS runs; pgbench -M prepared, $CLIENTS clients, ${SECONDS_PER_RUN} s a run."
    echo
    echo "| row | TPS | x SELECT 1 |"
    echo "|---|---:|---:|"
    for row in select1 result_shape shmem_random shmem_hot; do
        case $row in
            select1) label='`SELECT 1` (the floor)' ;;
            result_shape) label='the same four columns from constants, no call' ;;
            shmem_random) label='fw_limit, shared memory, 10,000 random keys' ;;
            shmem_hot) label='fw_limit, shared memory, one hot key' ;;
        esac
        printf '| %s | %.0f | %s |\n' "$label" "$(med $row)" "$(ratio "$(med $row)" "$select1")"
    done
    echo
    echo "| one query, 1,000,000 calls over 100,000 keys | ms | x hashtext() |"
    echo "|---|---:|---:|"
    printf '| `hashtext()` in place of fw_limit | %.0f | 1.00 |\n' "$(med bulk_hashtext)"
    printf '| fw_limit, shared memory | %.0f | %s |\n' "$(med bulk_shmem)" \
        "$(ratio "$(med bulk_shmem)" "$(med bulk_hashtext)")"
} >"$FW_ROOT/bench/results/latest.md"
cat "$FW_ROOT/bench/results/latest.md"
