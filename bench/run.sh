#!/usr/bin/env bash
# make bench: fixed_window against its alternatives, measured side by side in
# one run on one machine.  Prints a markdown table and writes it to
# bench/results/latest.md.
#
# Rows: the floor (SELECT 1); fw_limit on shared memory and on the table;
# the SQL edition (fixed_window_sql, inline and a named policy);
# the PL/pgSQL recipe people write by hand (bench/recipe.sql); Redis running
# the recipe's Lua script (bench/redis_fixed_window.lua) through
# redis-benchmark; each on 10,000 random keys and on one hot key, with 8
# and 32 clients; named policies (one window, two, one with 200,000
# overrides) and the router.  Then the first call of a policy after a
# definition changed, one query making 1,000,000 calls against the same
# query with hashtext(), and memory per counter.  A second server, which
# does not preload the library and keeps counters in dynamic shared memory
# (storage = shmem), runs the shared-memory rows again, and the table of
# counters is resized there: how long a resize of 110,000 live counters
# takes, and the calls' rate while the table is resized once a second.
# A third server, preloaded as the first, has an aged table of counters
# (see age_table below): its rows show what a server that has run for a
# long time answers at, beside the fresh ones, and the goals table compares
# the figures of issue 22 with their goals, fresh and aged.  Last, its
# table grows to 1,000,000 slots, nearly full: how long reading fw_capacity
# takes, and the latency of calls while fw_capacity is read back to back.
# The time of one read of memory that no cache holds (bench/memory_latency.c)
# bounds what a call on a random key among many can cost.  Last, on a
# server of its own, the Node.js package's rows (bench/node/run.sh).
#
# Every figure is the median of BENCH_RUNS runs; the runs of different rows
# are interleaved so that a slow moment of the machine does not land on one
# row.  Ratios compare rows of this run only.
source "$(dirname "$0")/../scripts/lib.sh"
source "$FW_ROOT/bench/rows.sh"

RUNS=${BENCH_RUNS:-3}
SECONDS_PER_RUN=${BENCH_SECONDS:-2}
CLIENT_COUNTS=${BENCH_CLIENTS:-"8 32"}
REDIS_PORT=${BENCH_REDIS_PORT:-6399}
KEYS=10000

fw_base_packages redis-server redis-tools "postgresql-$FW_PG_MAJOR-plproxy"
bench_build_install

dir=$(fw_private_dir)
cleanup() {
    redis-cli -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || true
    fw_cluster_stop "$dir/dynamic"
    fw_cluster_stop "$dir/aged"
    fw_cluster_stop "$dir"
    rm -rf "$dir"
}
trap cleanup EXIT

# Three servers, each with its own socket directory and the same port: the
# first preloads the library; the second does not, and keeps counters in
# dynamic shared memory; the third is preloaded as the first, and its table
# of counters is aged (age_table).  They hold the same slots (rows.sh).
dyn=$dir/dynamic
aged=$dir/aged
mkdir -p "$dyn" "$aged"; [ "$(id -u)" -eq 0 ] && chown "$FW_RUN_USER" "$dyn" "$aged"
fw_cluster_start "$dyn" "fixed_window.storage = shmem" "${bench_common[@]}"
fw_as_user psql -X -q -c "CREATE EXTENSION fixed_window" >/dev/null
fw_cluster_start "$aged" "${bench_preloaded[@]}"
fw_as_user psql -X -q -c "CREATE EXTENSION fixed_window" >/dev/null
fw_cluster_start "$dir" "${bench_preloaded[@]}"
bench_prepare
# A policy with 200,000 overrides, one for every key the pgbench rows use and
# more (written straight into fw_override, as a restore would).
OVERRIDES=200000
fw_as_user psql -X -q -c "SELECT fw_define('many', 1000000000, '1 hour')" \
    -c "INSERT INTO fw_override (name, key, period_id, period, rate, capacity, created_by)
        SELECT 'many', g::text, 'PT3600S', '1 hour', 1000000000, 1000000000, current_user
        FROM generate_series(1, $OVERRIDES) g" -c "VACUUM ANALYZE fw_override" >/dev/null

# The router (fixed_window_proxy) in a second database of the same server,
# with one shard: this database, reached over the Unix socket.  Calls through
# it pay the hop (the router's backend, PL/Proxy, a second connection) that a
# router on its own machine would, on the same two cores.
fw_as_user psql -X -q -c "CREATE DATABASE router" >/dev/null
fw_as_user psql -X -q -d router -c "CREATE EXTENSION fixed_window_proxy CASCADE" \
    -c "CREATE SERVER fw_shards FOREIGN DATA WRAPPER plproxy OPTIONS (p0 'host=$dir port=5499 dbname=postgres')" \
    -c "CREATE USER MAPPING FOR PUBLIC SERVER fw_shards" >/dev/null

fw_log "starting redis-server on 127.0.0.1:$REDIS_PORT"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --daemonize yes --dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
for _ in $(seq 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
redis_sha=$(redis-cli -p "$REDIS_PORT" SCRIPT LOAD "$(cat "$FW_ROOT/bench/redis_fixed_window.lua")")

# Age the table of counters of a server as months of service would: 540,000
# keys whose 1-second windows ended long ago, 2.7 times the slots the table
# has, so that it filled and was reclaimed; then the keys of the rows (those
# of the pgbench rows, the hot one and the bulk query's, in random order);
# then 80,000 more short-lived keys, whose windows ended too, created after
# the live counters and so in the hash chains in front of them.
age_table() {
    local round
    for round in 1 2 3 4; do
        [ $round = 4 ] && PGHOST=$aged fw_as_user psql -X -q -c "SELECT count(*) FROM
            (SELECT * FROM (SELECT 'bench' AS name, k::text AS key, 1000000000 AS rate
                            FROM generate_series(1, $KEYS) k
                            UNION ALL SELECT 'bench', 'hot', 1000000000
                            UNION ALL SELECT 'bulk', k::text, 1000000 FROM generate_series(0, 99999) k) u
             ORDER BY random()) s WHERE (fw_limit(name, key, rate, '1 hour')).ok" >/dev/null
        PGHOST=$aged fw_as_user psql -X -q \
            -c "SET fixed_window.debug_now = '2000-01-01 00:0$round:00+00'" \
            -c "SELECT count(*) FROM generate_series(1, $(( round < 4 ? 180000 : 80000 ))) g
                WHERE (fw_limit('churn', '$round.' || g, 1, '1 second')).ok" >/dev/null
    done
}
fw_log "aging the table of the third server"
age_table

scripts=$dir/scripts
bench_write_scripts "$scripts"


# TPS of one row with a number of clients.
tps() {
    local row=$1 clients=$2
    case $row in
        redis_*)
            local key='rl:hot' random=()
            [ "$row" = redis_random ] && key='rl:__rand_int__' random=(-r "$KEYS")
            redis-benchmark -p "$REDIS_PORT" -c "$clients" --threads 2 -n 250000 \
                "${random[@]}" --csv EVALSHA "$redis_sha" 1 "$key" 3600 1000000000 |
                awk -F'"' 'NR == 2 {print $4}'
            ;;
        *)
            local db=postgres host=$dir script=$row
            [[ $row = table_* ]] && db=bench_table
            [[ $row = sql_* ]] && db=bench_sql
            [[ $row = router_* ]] && db=router
            # dyn_*, aged_*: the same script on the server without preload,
            # on the aged server
            [[ $row = dyn_* ]] && host=$dyn script=shmem_${row#dyn_}
            [[ $row = aged_* ]] && host=$aged script=shmem_${row#aged_}
            # a failed run shows why: pgbench's errors, then the server's
            if ! PGHOST=$host fw_as_user \
                pgbench -n -M prepared -c "$clients" -j 2 -T "$SECONDS_PER_RUN" \
                -f "$scripts/$script.sql" "$db" >"$dir/pgbench.out" 2>&1; then
                grep -v '^progress' "$dir/pgbench.out" | tail -n 20 >&2
                tail -n 20 "$dir/server.log" >&2
                return 0
            fi
            awk '/^tps/ {print $3}' "$dir/pgbench.out"
            ;;
    esac
}

# Milliseconds one bulk query takes.
query_ms() {
    local db=postgres host=$dir script=$1
    [ "$1" = bulk_table ] && db=bench_table
    [ "$1" = bulk_dyn ] && host=$dyn script=bulk_shmem
    [ "$1" = bulk_aged ] && host=$aged script=bulk_shmem
    PGHOST=$host fw_as_user \
        psql -X -q -d "$db" -c '\timing on' -f "$scripts/$script.sql" | awk '/^Time:/ {print $2}'
}

TPS_ROWS="select1 param upper_row is_not_null shmem_random dyn_random aged_random policy_one policy_two policy_many router_random router_unguarded router_select1 shmem_random_row aged_random_row shmem_hot dyn_hot aged_hot table_random table_hot sql_random sql_hot sql_policy_one recipe_random recipe_hot redis_random redis_hot"
BULK_ROWS="bulk_hashtext bulk_shmem bulk_scattered bulk_dyn bulk_aged bulk_table"

# Resizing on the server without preload, with 110,000 live counters: the
# milliseconds of each resize (alternately to 250,000 and 200,000 slots),
# then the TPS of shmem_random with 8 clients without resizes and while the
# table is resized once a second, in alternate runs.  Prints the median
# resize in ms, then the two median TPS.
growth() {
    local times=() plain=() resizing=() i slots
    # the one-query rows' 100,000 counters go: 10,000 keys and these remain
    PGHOST=$dyn fw_as_user psql -X -q -c "SELECT fw_reset('bulk')" >/dev/null
    PGHOST=$dyn fw_as_user psql -X -q -c "SELECT count(*) FROM generate_series(1, 100000) g,
        fw_limit('grow', g::text, 1000000000, '1 hour')" >/dev/null
    for i in $(seq 11); do
        slots=$(( i % 2 ? 250000 : 200000 ))
        times+=("$(PGHOST=$dyn fw_as_user psql -X -q -c '\timing on' \
            -c "SELECT counters_moved FROM fw_resize_counters($slots)" | awk '/^Time:/ {print $2}')")
    done
    for i in $(seq "$RUNS"); do
        plain+=("$(tps dyn_random 8)")
        ( for _ in $(seq "$SECONDS_PER_RUN"); do
              sleep 1
              slots=$(( RANDOM % 2 ? 250000 : 200000 ))
              PGHOST=$dyn fw_as_user psql -X -q -c "SELECT fw_resize_counters($slots)" >/dev/null
          done ) &
        resizing+=("$(tps dyn_random 8)")
        wait
    done
    printf '%s\n' "${times[@]}" | median
    printf '%s\n' "${plain[@]}" | median
    printf '%s\n' "${resizing[@]}" | median
}

# CPU per call on each side of the router's hop: the router's backends (the
# pgbench sessions' own) and the shard's backends (PL/Proxy's connections),
# from /proc, over one pgbench run of router_random with 8 clients.
backend_ticks() {
    local pids
    pids=$(fw_as_user psql -X -At -d router -c \
        "SELECT string_agg(pid::text, ' ') FROM pg_stat_activity WHERE datname = '$1' AND backend_type = 'client backend' AND pid <> pg_backend_pid()")
    local total=0 p
    for p in $pids; do
        [ -r "/proc/$p/stat" ] && total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat")))
    done
    echo "$total"
}
router_cpu_split() {
    local hz r0 s0 r1 s1 c0 c1 bench_pid
    hz=$(getconf CLK_TCK)
    # a long run, stopped once measured
    fw_as_user pgbench -n -M prepared -c 8 -j 2 -T 600 \
        -f "$scripts/router_random.sql" router >/dev/null 2>&1 &
    bench_pid=$!
    until [ "$(fw_as_user psql -X -At -d router -c "SELECT count(*) FROM pg_stat_activity WHERE datname = 'postgres' AND backend_type = 'client backend'")" -ge 8 ]; do
        sleep 0.2
    done
    r0=$(backend_ticks router); s0=$(backend_ticks postgres)
    c0=$(fw_as_user psql -X -At -c "SELECT calls FROM fw_stats WHERE name = 'bench'")
    sleep "$SECONDS_PER_RUN"
    r1=$(backend_ticks router); s1=$(backend_ticks postgres)
    c1=$(fw_as_user psql -X -At -c "SELECT calls FROM fw_stats WHERE name = 'bench'")
    pkill -TERM -x pgbench || true       # the only pgbench running now (SIGINT: ignored by a background job)
    wait "$bench_pid" || true
    awk -v r=$((r1 - r0)) -v s=$((s1 - s0)) -v c=$((c1 - c0)) -v hz="$hz" \
        'BEGIN {printf "%.1f %.1f %d\n", r * 1e6 / hz / c, s * 1e6 / hz / c, c}'
}

# Latencies of fw_limit calls, in ms, from pgbench's log of each
# transaction: median, 99th and 99.9th percentiles, greatest, and the TPS.
call_latencies() {
    local prefix=$1
    rm -f "$prefix".*
    PGHOST=$aged fw_as_user pgbench -n -M prepared -c 8 -j 2 -T "$SECONDS_PER_RUN" \
        -l --log-prefix="$prefix" -f "$scripts/shmem_random.sql" postgres >"$dir/pgbench.out" 2>&1
    cat "$prefix".* | awk '{print $3 / 1000}' | sort -n |
        awk -v tps="$(awk '/^tps/ {printf "%.0f", $3}' "$dir/pgbench.out")" \
            '{v[NR] = $1} END {printf "%.3f/%.3f/%.3f/%.3f/%s\n", v[int((NR + 1) / 2)], v[int(NR * 0.99)], v[int(NR * 0.999)], v[NR], tps}'
}

# call_latencies while one session runs the statements of SCRIPT (in
# $scripts) back to back on the aged server.
latencies_beside() {
    local script=$1 prefix=$2 reader
    PGHOST=$aged fw_as_user psql -X -q -f "$scripts/$script.sql" >/dev/null 2>&1 &
    reader=$!
    call_latencies "$prefix"
    pkill -TERM -f "$script.sql" || true
    wait "$reader" || true
}

# The aged server's table grows to 1,000,000 slots and takes 850,000 more
# counters of an hour.  Prints the slots used, the median ms of 11 reads
# of fw_capacity, then fw_limit's latencies (call_latencies) without reads,
# while one session runs a query that takes as long as a read but no lock
# (generate_series) back to back, and while one session reads fw_capacity
# back to back, each the run with the median 99th percentile of RUNS.  On
# two cores the busy session takes CPU from the calls either way: what the
# reads' locks add is the difference between the last two.
capacity_reads() {
    local times=() plain=() busy=() scraped=() i ms_per_million capacity_ms n
    PGHOST=$aged fw_as_user psql -X -q -c "SELECT fw_resize_counters(1000000)" \
        -c "SELECT count(*) FROM generate_series(1, 850000) g WHERE (fw_limit('capacity', g::text, 10, '1 hour')).ok" >/dev/null
    for i in $(seq 11); do
        times+=("$(PGHOST=$aged fw_as_user psql -X -q -c '\timing on' \
            -c "SELECT * FROM fw_capacity" | awk '/^Time:/ {print $2}')")
    done
    PGHOST=$aged fw_as_user psql -X -At -c "SELECT used FROM fw_capacity WHERE scope = 'counters'"
    capacity_ms=$(printf '%s\n' "${times[@]}" | median)
    echo "$capacity_ms"
    ms_per_million=$(PGHOST=$aged fw_as_user psql -X -q -c '\timing on' \
        -c "SELECT count(*) FROM generate_series(1, 1000000)" | awk '/^Time:/ {print $2}')
    n=$(awk -v c="$capacity_ms" -v m="$ms_per_million" 'BEGIN {printf "%d", c / m * 1000000}')
    for i in $(seq 20000); do echo "SELECT count(*) FROM fw_capacity;"; done >"$scripts/capacity_reads.sql"
    for i in $(seq 20000); do echo "SELECT count(*) FROM generate_series(1, $n);"; done >"$scripts/busy_reads.sql"
    for i in $(seq "$RUNS"); do
        plain+=("$(call_latencies "$dir/lat_plain")")
        busy+=("$(latencies_beside busy_reads "$dir/lat_busy")")
        scraped+=("$(latencies_beside capacity_reads "$dir/lat_scraped")")
    done
    printf '%s\n' "${plain[@]}" | sort -t/ -k2 -n | median_line
    printf '%s\n' "${busy[@]}" | sort -t/ -k2 -n | median_line
    printf '%s\n' "${scraped[@]}" | sort -t/ -k2 -n | median_line
}
median_line() { awk '{v[NR] = $0} END {print v[int((NR + 1) / 2)]}'; }

# A policy with many overrides, in one session.  A change of a definition
# drops the session's cached policy and keys: the next call reads the
# policy's windows and its key's overrides again (the first call after a
# change), and every other key reads its overrides at its first call (an
# index probe), then comes from the cache.  CHANGES times: fw_override of
# another key; one call (timed); the same call again; then 10,000 keys
# (fw_check, so that no counter is made) once, again, and through the
# policy without overrides.  Prints the medians: two in ms, three in
# microseconds per call.
CHANGES=21
override_costs() {
    local i script=$scripts/change.sql bulk
    bulk() { echo "SELECT count(*) FROM generate_series(1, $KEYS) g WHERE (fw_check('$1', g::text)).ok;"; }
    : >"$script"
    for i in $(seq "$CHANGES"); do
        printf '%s\n' "SELECT fw_override('many', 'changed', $((1000 + i)), '1 hour');" '\timing on' \
            "SELECT (fw_limit('many', '42')).ok;" "SELECT (fw_limit('many', '42')).ok;" \
            "$(bulk many)" "$(bulk many)" "$(bulk policy1)" '\timing off' >>"$script"
    done
    [ "$(id -u)" -eq 0 ] && chown "$FW_RUN_USER" "$script"
    fw_as_user psql -X -q -At -f "$script" | awk '/^Time:/ {print $2}' >"$dir/change.ms"
    for i in 1 2; do
        awk -v i=$i 'NR % 5 == i % 5' "$dir/change.ms" | median
    done
    for i in 3 4 5; do
        awk -v i=$i 'NR % 5 == i % 5' "$dir/change.ms" | median | awk -v n=$KEYS '{printf "%.2f\n", $1 * 1000 / n}'
    done
}

declare -A samples
# The first query on the aged table, before any call has walked its chains:
# it unlinks the ended counters it meets on the way.
fw_log "the first query on the aged table"
first_aged=$(query_ms bulk_aged)
fw_log "warming up"
for row in $TPS_ROWS; do SECONDS_PER_RUN=1 tps "$row" 8 >/dev/null; done
for row in $BULK_ROWS; do query_ms "$row" >/dev/null; done

for run in $(seq "$RUNS"); do
    fw_log "run $run of $RUNS"
    for clients in $CLIENT_COUNTS; do
        for row in $TPS_ROWS; do
            v=$(tps "$row" "$clients")
            [ -n "$v" ] || { echo "no result for $row with $clients clients" >&2; exit 1; }
            fw_log "$row, $clients clients: $v TPS"
            samples[$row.$clients]+="$v "
        done
    done
    for row in $BULK_ROWS; do
        v=$(query_ms "$row")
        [ -n "$v" ] || { echo "no result for $row" >&2; exit 1; }
        fw_log "$row: $v ms"
        samples[$row]+="$v "
    done
done
med() { printf '%s\n' ${samples[$1]} | median; }

fw_log "a policy with $OVERRIDES overrides, after a change"
read -r -d '' change_first change_cached key_first key_cached key_none <<<"$(override_costs)" || true

# Memory: the counters' segment is the largest dynamic shared memory segment
# (/dev/shm) of the two servers, each of fixed_window.max_counters slots
# until the resizes below.
shmem_bytes=$(find /dev/shm -maxdepth 1 -name 'PostgreSQL.*' -user "$FW_RUN_USER" -printf '%s\n' | sort -n | tail -n 1)

fw_log "resizing the table of counters"
read -r -d '' resize_ms growth_plain growth_resizing <<<"$(growth)" || true

fw_log "CPU per call on each side of the router"
read -r cpu_router cpu_shard cpu_calls <<<"$(router_cpu_split)"

fw_log "reading fw_capacity with 1,000,000 slots"
read -r -d '' capacity_used capacity_ms lat_plain lat_busy lat_scraped <<<"$(capacity_reads)" || true

fw_log "the time of one read of memory no cache holds"
cc -O2 -o "$dir/memory_latency" "$FW_ROOT/bench/memory_latency.c"
read -r memory_ns _ <<<"$("$dir/memory_latency" 100000)"

# Memory: shared memory per counter slot, and table bytes per live key.
max_counters=$(fw_as_user psql -X -At -c "SHOW fixed_window.max_counters")
table_stats=$(fw_as_user psql -X -q -At -F " " -d bench_table -c "VACUUM fw_counter" \
    -c "SELECT pg_total_relation_size('fw_counter'), count(*) FROM fw_counter")
read -r table_bytes table_rows <<<"$table_stats"


# ratio_table TITLE "LABEL|ROW|BASE"...: each ROW's TPS and its ratio to BASE.
ratio_table() {
    local header="| $1 |" rule="|---|" spec label row base line clients
    shift
    for clients in $CLIENT_COUNTS; do
        header+=" TPS, $clients clients | ratio |"; rule+="---:|---:|"
    done
    echo "$header"; echo "$rule"
    for spec in "$@"; do
        IFS='|' read -r label row base <<<"$spec"
        line="| $label |"
        for clients in $CLIENT_COUNTS; do
            line+=" $(printf '%.0f' "$(med "$row.$clients")") | $(ratio "$(med "$row.$clients")" "$(med "$base.$clients")") |"
        done
        echo "$line"
    done
}

pg_version=$(fw_as_user psql -X -At -c 'SHOW server_version')
redis_version=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')
cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)
commit=$(git -C "$FW_ROOT" describe --always --dirty 2>/dev/null || echo 'not a git checkout')
# goal_row LABEL FRESH AGED BASE GOAL: a goal of issue 22, fresh and aged
# (AGED may be -), the ratio of each to BASE at 8 clients.
goal_row() {
    local aged_ratio=''
    [ "$3" != - ] && aged_ratio=$(ratio "$(med "$3.8")" "$(med "$4.8")")
    echo "| $1 | $(ratio "$(med "$2.8")" "$(med "$4.8")") | $aged_ratio | $5 |"
}
{
    echo "# fixed_window benchmark"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); commit $commit; $(nproc) cores ($cpu), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo);" \
         "PostgreSQL $pg_version; Redis $redis_version. Median of $RUNS runs of ${SECONDS_PER_RUN} s;" \
         "pgbench -M prepared -j 2, redis-benchmark --threads 2, no pipelining; client and server share the cores."
    echo
    header="| row |"; rule="|---|"
    for clients in $CLIENT_COUNTS; do
        header+=" TPS, $clients clients | x SELECT 1 | x recipe |"; rule+="---:|---:|---:|"
    done
    echo "$header"; echo "$rule"
    for row in $TPS_ROWS; do
        line="| $(label "$row") |"
        for clients in $CLIENT_COUNTS; do
            recipe=recipe_random
            [[ $row = *_hot ]] && recipe=recipe_hot
            v=$(med "$row.$clients")
            line+=" $(printf '%.0f' "$v") | $(ratio "$v" "$(med "select1.$clients")") | $(ratio "$v" "$(med "$recipe.$clients")") |"
        done
        echo "$line"
    done
    echo
    echo "| goals (8 clients; aged: the third server's table, see bench/run.sh) | fresh | aged | goal |"
    echo "|---|---:|---:|---:|"
    echo "| 1,000,000 calls in one query / the same with \`hashtext()\` | $(ratio "$(med bulk_shmem)" "$(med bulk_hashtext)") | $(ratio "$(med bulk_aged)" "$(med bulk_hashtext)") | ≤ 2.0 |"
    echo "| the same, keys in scattered order (each call's slot far from the last one's) | $(ratio "$(med bulk_scattered)" "$(med bulk_hashtext)") | | ≤ 2.0 |"
    goal_row '`SELECT * FROM fw_limit(...)` / `SELECT * FROM upper(:k)`' shmem_random_row aged_random_row upper_row '≥ 0.95'
    goal_row 'one hot key / `SELECT (:k::text) IS NOT NULL`' shmem_hot aged_hot is_not_null '≥ 0.95'
    goal_row 'table backend / PL/pgSQL recipe, 10,000 random keys' table_random - recipe_random '≥ 1.5'
    goal_row 'SQL edition / PL/pgSQL recipe, 10,000 random keys' sql_random - recipe_random '≥ 1.0'
    goal_row 'fw_limit through the router / fw_limit called directly' router_random - shmem_random '≥ 0.4'
    echo
    ratio_table "shared memory without preload" \
        "no preload / preloaded, 10,000 random keys|dyn_random|shmem_random" \
        "no preload / preloaded, one hot key|dyn_hot|shmem_hot"
    echo
    echo "| resizing the table without preload, 110,000 live counters | |"
    echo "|---|---:|"
    echo "| one resize (to 250,000 or 200,000 slots), median of 11 | $resize_ms ms |"
    echo "| fw_limit, 8 clients, 10,000 random keys, without resizes | $(printf '%.0f' "$growth_plain") TPS |"
    echo "| the same while the table is resized once a second | $(printf '%.0f' "$growth_resizing") TPS ($(ratio "$growth_resizing" "$growth_plain")x) |"
    echo
    ratio_table "named policies" \
        "one-window policy / the same call inline|policy_one|shmem_random" \
        "two-window policy / one-window policy|policy_two|policy_one" \
        "one-window policy with 200,000 overrides / without|policy_many|policy_one"
    echo
    echo "| a policy with $OVERRIDES overrides, one session, after fw_override of another key; median of $CHANGES | time |"
    echo "|---|---:|"
    echo "| the first call (the session reads the policy and its key again) | $change_first ms |"
    echo "| the same call again (cached) | $change_cached ms |"
    echo "| each of $KEYS keys' first call (\`fw_check\`; reads the key's overrides) | $key_first µs |"
    echo "| the same keys again (cached) | $key_cached µs |"
    echo "| the same keys through a policy without overrides | $key_none µs |"
    echo
    ratio_table "through the router" \
        "fw_limit through the router / fw_limit called directly|router_random|shmem_random" \
        "fw_limit through the router / \`SELECT 1\` through the router|router_random|router_select1" \
        "fw_limit through the router / the same without fault handling|router_random|router_unguarded"
    echo
    echo "CPU per call through the router, 8 clients, $SECONDS_PER_RUN s ($cpu_calls calls), from /proc:" \
         "the router's backends $cpu_router µs, the shard's backends $cpu_shard µs" \
         "(the rest of the machine's time goes to pgbench and the kernel)."
    echo
    echo "| one query, 1,000,000 calls over 100,000 keys | ms | x hashtext() |"
    echo "|---|---:|---:|"
    for row in $BULK_ROWS; do
        printf '| %s | %.0f | %s |\n' "$(label "$row")" "$(med "$row")" "$(ratio "$(med "$row")" "$(med bulk_hashtext)")"
    done
    printf '| %s | %.0f | %s |\n' "the same, aged table, its first run (it unlinks the ended counters it meets)" \
        "$first_aged" "$(ratio "$first_aged" "$(med bulk_hashtext)")"
    echo
    IFS=/ read -r p50_plain p99_plain p999_plain max_plain tps_plain <<<"$lat_plain"
    IFS=/ read -r p50_busy p99_busy p999_busy max_busy tps_busy <<<"$lat_busy"
    IFS=/ read -r p50_scraped p99_scraped p999_scraped max_scraped tps_scraped <<<"$lat_scraped"
    echo "| reading \`fw_capacity\` on the aged server grown to 1,000,000 slots, $capacity_used in use | |"
    echo "|---|---:|"
    echo "| one read, median of 11 (goal < 100 ms) | $capacity_ms ms |"
    echo "| of which one partition's walk, under its lock (1/128) | $(awk -v t="$capacity_ms" 'BEGIN {printf "%.2f", t / 128}') ms |"
    echo "| fw_limit, 8 clients, 10,000 random keys: latency median / 99th / 99.9th percentile / greatest, TPS | $p50_plain / $p99_plain / $p999_plain / $max_plain ms, $tps_plain TPS |"
    echo "| the same while one session runs a query as long as a read, without locks, back to back | $p50_busy / $p99_busy / $p999_busy / $max_busy ms, $tps_busy TPS ($(ratio "$tps_busy" "$tps_plain")x) |"
    echo "| the same while one session reads fw_capacity back to back | $p50_scraped / $p99_scraped / $p999_scraped / $max_scraped ms, $tps_scraped TPS ($(ratio "$tps_scraped" "$tps_busy")x the busy run) |"
    echo
    echo "One read of memory that no cache holds, at a random 128-byte line of 12.8 MB (bench/memory_latency.c): $memory_ns ns." \
         "A call on a random key among 100,000 reads its counter's slot so; \`hashtext()\` takes $(awk -v t="$(med bulk_hashtext)" 'BEGIN {printf "%.0f", t}') ns a row in its query," \
         "so one such read alone puts a call at $(awk -v t="$(med bulk_hashtext)" -v m="$memory_ns" 'BEGIN {printf "%.2f", (t + m) / t}')x \`hashtext()\`."
    echo
    echo "| memory | bytes |"
    echo "|---|---:|"
    echo "| shared memory per counter slot (the counters' segment / fixed_window.max_counters = $max_counters) | $(ratio "$shmem_bytes" "$max_counters") |"
    echo "| table per live key (pg_total_relation_size / $table_rows rows, after VACUUM) | $(ratio "$table_bytes" "$table_rows") |"
} >"$FW_ROOT/bench/results/latest.md"
bash "$FW_ROOT/bench/node/run.sh" "$dir/node.md" >/dev/null
{ echo; cat "$dir/node.md"; } >>"$FW_ROOT/bench/results/latest.md"
cat "$FW_ROOT/bench/results/latest.md"
