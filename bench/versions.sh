#!/usr/bin/env bash
# make bench-versions (and the end of make bench): the main rows of the
# benchmark on each PostgreSQL version make test tests, in one run: this
# machine's PostgreSQL and those of scripts/pg_chroot.sh's chroots (17, 18).
# As root only (the chroots); prints a markdown table and writes it to
# bench/results/versions.md.
#
# Each version's server runs as bench/run.sh's first one (the library
# preloaded, the same settings), reachable only through a socket in a
# directory of its own; a chroot's server runs inside its chroot, built there
# from this tree, and its socket is reached from here through the chroot's
# directory.  One pgbench, this machine's, drives every server, so that the
# client is the same for all; the runs of every row on every version are
# interleaved.  Every build is a plain one (no assertions, the flags of
# pg_config).  Ratios are to SELECT 1 and to the PL/pgSQL recipe on the same
# server: compare the ratios across versions, not the TPS, which the
# servers' binaries (Debian's builds of each release) set too.
source "$(dirname "$0")/../scripts/pg_chroot.sh"
source "$FW_ROOT/bench/rows.sh"

RUNS=${BENCH_RUNS:-3}
SECONDS_PER_RUN=${BENCH_SECONDS:-2}
CLIENTS=${BENCH_VERSION_CLIENTS:-8}
KEYS=10000
ROWS="select1 shmem_random shmem_hot policy_two table_random table_hot recipe_random recipe_hot"

if [ "$(id -u)" -ne 0 ]; then
    echo "bench-versions: skipped, the chroots need root"
    exit 0
fi
fw_base_packages mmdebstrap zstd
bench_build_install
mapfile -t majors < <(echo "$FW_PG_MAJOR"; fw_chroot_majors)
# the chroots made (or found in the cache) before any server starts
for major in "${majors[@]:1}"; do fw_chroot_tarball "$major" >/dev/null; done

dir=$(fw_private_dir)
chmod 711 "$dir"     # the chroots' directories are in it, each root's own
declare -A socket pid pipe_fd version samples
cleanup() {
    local major fd
    # closing the servers' pipes stops them (see below): all of them first,
    # since each job started later holds the pipes of those before it too
    for major in "${!pipe_fd[@]}"; do fd=${pipe_fd[$major]}; exec {fd}>&-; done
    for major in "${!pid[@]}"; do wait "${pid[$major]}" || true; done
    fw_cluster_stop "$dir/host"
    rm -rf --one-file-system "$dir"
}
trap cleanup EXIT

mkdir "$dir/host"; chown "$FW_RUN_USER" "$dir/host"
fw_cluster_start "$dir/host" "${bench_preloaded[@]}"
socket[$FW_PG_MAJOR]=$dir/host
# In each chroot: build and install the extension, start the server, keep it
# until its standard input ends, then stop it.  Its input is a pipe this
# script holds open, so that the server stops however the script ends.
for major in "${majors[@]:1}"; do
    mkfifo -m 600 "$dir/pg$major.pipe"
    FW_CHROOT_ROOT=$dir/pg$major bash "$FW_ROOT/scripts/pg_chroot.sh" "$major" bash -c '
        source scripts/lib.sh
        fw_build_install
        mkdir /fw/bench && chown postgres /fw/bench
        fw_cluster_start /fw/bench "$@"
        cat >/dev/null
        fw_cluster_stop /fw/bench' sh "${bench_preloaded[@]}" <"$dir/pg$major.pipe" >"$dir/pg$major.log" 2>&1 &
    pid[$major]=$!
    exec {fd}>"$dir/pg$major.pipe"
    pipe_fd[$major]=$fd
    socket[$major]=$dir/pg$major/fw/bench
done
for major in "${majors[@]:1}"; do
    for _ in $(seq 300); do
        pg_isready -q -h "${socket[$major]}" && break
        kill -0 "${pid[$major]}" 2>/dev/null || break
        sleep 1
    done
    pg_isready -q -h "${socket[$major]}" || { cat "$dir/pg$major.log" >&2; exit 1; }
done

for major in "${majors[@]}"; do
    bench_prepare -h "${socket[$major]}"
    version[$major]=$(fw_as_user psql -X -At -h "${socket[$major]}" -c 'SHOW server_version')
done
scripts=$dir/scripts
bench_write_scripts "$scripts"

# tps MAJOR ROW: the TPS of one run of ROW on that version's server.
tps() {
    local major=$1 row=$2 db=postgres
    [[ $row = table_* ]] && db=bench_table
    fw_as_user pgbench -n -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" \
        -h "${socket[$major]}" -f "$scripts/$row.sql" "$db" \
        >"$dir/pgbench.out" 2>&1 || { cat "$dir/pgbench.out" >&2; return 1; }
    awk '/^tps/ {print $3}' "$dir/pgbench.out"
}
fw_log "main rows on PostgreSQL ${majors[*]}: $RUNS runs of $SECONDS_PER_RUN s each, $CLIENTS clients"
for _ in $(seq "$RUNS"); do
    for row in $ROWS; do
        for major in "${majors[@]}"; do
            samples[$major.$row]+=" $(tps "$major" "$row")"
        done
    done
done

med() { printf '%s\n' ${samples[$1]} | median; }
commit=$(git -C "$FW_ROOT" describe --always --dirty 2>/dev/null || echo 'not a git checkout')
{
    echo "## The main rows on each PostgreSQL version"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'); commit $commit; $(nproc) cores;" \
         "$(for m in "${majors[@]}"; do printf 'PostgreSQL %s; ' "${version[$m]}"; done | sed 's/ $//')" \
         "each Debian's build ($FW_PG_MAJOR: $(. /etc/os-release && echo "$VERSION_CODENAME"), $(printf '%s\n' $FW_CHROOT_SUITES | sed 's/:/: /' | paste -sd, | sed 's/,/, /g'))." \
         "Median of $RUNS runs of ${SECONDS_PER_RUN} s;" \
         "pgbench $(pgbench --version | awk '{print $3}') -M prepared -c $CLIENTS -j 2 through each server's Unix socket."
    echo
    header="| row |"; rule="|---|"
    for major in "${majors[@]}"; do header+=" $major: TPS | x SELECT 1 | x recipe |"; rule+="---:|---:|---:|"; done
    echo "$header"; echo "$rule"
    for row in $ROWS; do
        line="| $(label "$row") |"
        recipe=recipe_random; [[ $row = *_hot ]] && recipe=recipe_hot
        for major in "${majors[@]}"; do
            v=$(med "$major.$row")
            line+=" $(printf '%.0f' "$v") | $(ratio "$v" "$(med "$major.select1")") | $(ratio "$v" "$(med "$major.$recipe")") |"
        done
        echo "$line"
    done
} >"$FW_ROOT/bench/results/versions.md"
cat "$FW_ROOT/bench/results/versions.md"
