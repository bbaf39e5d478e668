#!/usr/bin/env bash
# make test: every test layer, each on throwaway clusters of its own.
#
#   unit        C unit tests of the window arithmetic (no server)
#   layers      includes among src/ files point down the layers only
#   version     META.json says the versions of the control files
#   regress     pg_regress, SQL behaviour, shared-memory counters
#   regress-table       the same on the table backend, plus its own tests
#   isolation   isolation specs, concurrent sessions
#   isolation-table     transactions on the table backend
#   regress-sql, isolation-sql
#               the same suites of the table backend, unchanged, against the
#               SQL edition installed as the extension fixed_window in a
#               private copy of the server (Makefile: REGRESS_SQL_EXCLUDE and
#               ISOLATION_SQL_EXCLUDE say what it leaves out, and why)
#   tap         TAP tests (PostgreSQL::Test::Cluster): load across window
#               boundaries, restarts, crashes, a standby, full memory, and the
#               property test against the Python reference model; the SQL
#               edition's three ways in (test/t/021_sql_edition.pl)
#   tap-sql     the property test against the SQL edition (fixed_window_sql)
#   monitoring  examples/monitoring: the alert rules' unit tests (promtool),
#               then a cluster, postgres_exporter with the queries and
#               Prometheus with the rules, the metrics read through PromQL
#   node        the Node.js package clients/node (fixed-window-pg): npm pack and
#               the tarball loaded as ESM and CommonJS, its TypeScript types, and
#               its tests inside Express, Fastify and rate-limiter-flexible
#               against a cluster, directly and through PgBouncer
#   service     the example HTTP service (examples/service), driven over HTTP
#   pgbouncer   PgBouncer in transaction mode in front of fw_limit (pgbench,
#               exact counts) and of the example service (test/pgbouncer)
#   docs        every SQL and shell block of README.md and docs/, run in
#               order as written on a cluster set up as the README says
#               (scripts/run_docs.py), and every link between them resolves
#   deb         the Debian package: built (its build runs make installcheck),
#               installed, called on a fresh cluster, and its autopkgtest
#               run; as root only
#   pg17, pg18  in a Debian chroot of that PostgreSQL (scripts/pg_chroot.sh,
#               cached), with the strict flags: unit, the regress and
#               isolation suites on the three storages, the TAP suites, and
#               the router's (those that name plproxy) where the suite
#               packages PL/Proxy; then the layer deb there; as root only
#
# "bash scripts/test.sh regress tap" runs the layers named, in this order.
#
# As root the tests run as the unprivileged "postgres" account in a private
# copy of the tree, since PostgreSQL refuses to run as root.  Missing Debian
# packages are installed only as root, or when FW_INSTALL=yes (lib.sh).
#
# The extension is built strictly here: every warning of -Wall -Wextra is an
# error, but for unused parameters (fmgr.h's PG_FUNCTION_INFO_V1 raises it, and
# the callbacks' signatures are PostgreSQL's), and its Assert()s are
# compiled in, so that they run in every layer.  The package (layer deb) is
# built with the flags Debian sets.
source "$(dirname "$0")/pg_chroot.sh"

export COPT="-Wall -Wextra -Werror -Wno-unused-parameter -DUSE_ASSERT_CHECKING"
# In a chroot of scripts/pg_chroot.sh (FW_CHROOT is its major), the packages
# are those the chroot was made with: nothing is installed.  When only the
# chroots' layers are asked, nothing is built or installed on this machine.
chroot_majors=" $(fw_chroot_majors | paste -sd' ') "
host_layers=" unit layers version regress regress-table regress-dsm isolation isolation-table isolation-dsm
    regress-sql isolation-sql tap router tap-dsm tap-sql monitoring node service pgbouncer docs deb "
host=no
[ $# -gt 0 ] || host=yes
for arg in "$@"; do
    if [[ $arg == pg* && $chroot_majors == *" ${arg#pg} "* ]]; then
        :
    elif [[ $host_layers == *[[:space:]]"$arg"[[:space:]]* ]]; then
        host=yes
    else
        echo "test.sh: no layer \"$arg\"; the layers are$(printf ' %s' $host_layers)$(printf ' pg%s' $chroot_majors)" >&2
        exit 2
    fi
done
if [ -n "${FW_CHROOT:-}" ]; then
    fw_log "in the chroot of PostgreSQL $FW_CHROOT: $(pg_config --version), set up in ${FW_CHROOT_SETUP:-?}"
elif [ "$host" = yes ]; then
    fw_base_packages python3 patch "postgresql-$FW_PG_MAJOR-plproxy" prometheus prometheus-postgres-exporter pgbouncer
    fw_node_packages
fi
if [ "$host" = yes ]; then
    make -C "$FW_ROOT" -s clean >/dev/null
    fw_build_install
fi

work=$(fw_private_dir)
trap 'rm -rf "$work"' EXIT
tar -C "$FW_ROOT" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . | tar -C "$work" -xf -
[ "$(id -u)" -eq 0 ] && chown -R "$FW_RUN_USER" "$work"

passed=0 failed=0 failures=()
# run_layer NAME CMD...: one layer, counted; its diffs and logs shown on failure.
run_layer() {
    local name=$1 start=$SECONDS; shift
    fw_log "$name"
    if "$@"; then
        passed=$((passed + 1))
        fw_log "$name: passed in $((SECONDS - start)) s"
    else
        fw_log "$name: failed in $((SECONDS - start)) s"
        failed=$((failed + 1)); failures+=("$name")
        find "$work" -name regression.diffs -exec cat {} + 2>/dev/null | head -200 || true
        find "$work/tmp_check" -name 'regress_log_*' -exec tail -n 40 {} + 2>/dev/null || true
    fi
}
# wanted NAME: whether the command line asks for the layer (all when empty).
layers_asked=" $* "
wanted() { [ "$layers_asked" = "  " ] || [[ $layers_asked == *" $1 "* ]]; }
# layer NAME TARGET: a make target of the private copy, as the unprivileged account.
layer() {
    local name=$1; shift
    wanted "$name" || return 0
    run_layer "$name" fw_as_user make -C "$work" -s PG_CONFIG="$FW_PG_BIN/pg_config" "$@"
}

layer unit unit
layer layers check-layers
layer version check-version
layer regress test-regress
layer regress-table test-regress-table
layer regress-dsm test-regress-dsm
layer isolation test-isolation
layer isolation-table test-isolation-table
layer isolation-dsm test-isolation-dsm
layer regress-sql test-regress-sql
layer isolation-sql test-isolation-sql
if [ -z "${FW_CHROOT:-}" ]; then
    layer tap test-tap
else
    # The TAP suites that name PL/Proxy (the router's) are a layer of their
    # own in a chroot, run only where the suite packages PL/Proxy.
    layer tap test-tap PROVE_TESTS="$(cd "$work" && grep -L plproxy test/t/*.pl | tr '\n' ' ')"
    if [ -f "$("$FW_PG_BIN/pg_config" --pkglibdir)/plproxy.so" ]; then
        layer router test-tap PROVE_TESTS="$(cd "$work" && grep -l plproxy test/t/*.pl | tr '\n' ' ')"
    elif wanted router; then
        fw_log "router: skipped, postgresql-$FW_PG_MAJOR-plproxy is not packaged in this chroot's suite"
    fi
fi
layer tap-dsm test-tap-dsm
layer tap-sql test-tap-sql
layer monitoring test-monitoring
layer node test-node
layer service test-service
layer pgbouncer test-pgbouncer
# As root: the documents' blocks say which account runs each (root, postgres).
wanted docs && run_layer docs make -C "$FW_ROOT" -s PG_CONFIG="$FW_PG_BIN/pg_config" test-docs
wanted deb && run_layer deb env -u COPT bash "$FW_ROOT/scripts/deb_test.sh"
# Each in its chroot, running this script there on the layers named.
chroot_layers="unit regress regress-dsm regress-table isolation isolation-dsm isolation-table regress-sql isolation-sql
    tap router tap-dsm tap-sql deb"
for major in $chroot_majors; do
    wanted "pg$major" && [ -z "${FW_CHROOT:-}" ] && run_layer "pg$major" bash "$FW_ROOT/scripts/pg_chroot.sh" "$major" \
        bash scripts/test.sh $chroot_layers
done

if [ $((passed + failed)) -eq 0 ]; then
    echo "test.sh: no layer ran (router is a layer of the chroots only: on this machine the layer tap runs its suites)" >&2
    exit 1
fi
[ $failed -eq 0 ] || echo "failed layers: ${failures[*]}"
echo "layers: $passed passed, $failed failed"
[ $failed -eq 0 ]
