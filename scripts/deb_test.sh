#!/usr/bin/env bash
# make test-deb: build the Debian package with dpkg-buildpackage (whose
# build-time test is make installcheck on a preloading throwaway cluster),
# install the .deb, call the extension on a fresh cluster, and run the
# package's autopkgtest (debian/tests) on this machine (autopkgtest's null
# testbed), as Debian's CI would.  debian/control is made for the PostgreSQL
# versions this machine supports (pg_buildext updatecontrol), so that the
# same tree builds postgresql-17-fixed-window in a chroot of trixie
# (scripts/pg_chroot.sh).
#
# Installing a package needs root: other users are told so and skipped.
# The package is removed afterwards and "make install" puts back the files
# it had replaced, so the machine is left as it was found.
source "$(dirname "$0")/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
    echo "test-deb: skipped, installing the package needs root"
    exit 0
fi
fw_packages build-essential dpkg-dev fakeroot debhelper "postgresql-server-dev-all" postgresql-all libipc-run-perl autopkgtest

version=$(dpkg-parsechangelog -l "$FW_ROOT/debian/changelog" -S Version)
extversion=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$FW_ROOT/fixed_window.control")
package="postgresql-$FW_PG_MAJOR-fixed-window"
work=$(fw_private_dir)
cleanup() {
    fw_cluster_stop "$work/cluster"
    if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
        dpkg -r "$package" >/dev/null
        fw_build_install
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# A clean copy of the tree, built by the unprivileged account.
src="$work/postgresql-fixed-window-$version"
mkdir "$src"
tar -C "$FW_ROOT" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
    --exclude=node_modules --exclude='tmp_check*' --exclude=results --exclude='output_*' \
    --exclude='*.zip' -cf - . | tar -C "$src" -xf -
chown -R "$FW_RUN_USER" "$work"
fw_as_user make -C "$src" -s clean >/dev/null 2>&1 || true    # what make builds, built anew
(cd "$src" && fw_as_user pg_buildext updatecontrol >/dev/null)
fw_log "dpkg-buildpackage -us -uc (log: $work/build.log)"
if ! (cd "$src" && fw_as_user dpkg-buildpackage -us -uc >"$work/build.log" 2>&1); then
    tail -n 80 "$work/build.log"
    echo "test-deb: dpkg-buildpackage failed" >&2
    exit 1
fi
grep -E '^test |tests passed|tests failed|skipped' "$work/build.log" || true

deb=$(ls "$work/${package}_${version}_"*.deb)
fw_log "installing $(basename "$deb")"
dpkg -i "$deb" >/dev/null
libdir=$(pg_config --pkglibdir)
sharedir=$(pg_config --sharedir)
for f in "$libdir/fixed_window.so" "$sharedir/extension/fixed_window.control" \
    "$sharedir/extension/fixed_window_proxy.control"; do
    owner=$(dpkg -S "$f" | cut -d: -f1)
    [ "$owner" = "$package" ] || { echo "test-deb: $f belongs to \"$owner\", not $package" >&2; exit 1; }
done

# The documentation: README.md and the documents it links to (1.2.1 shipped
# the README alone, its links to docs/ broken).
docdir=/usr/share/doc/$package
[ -f "$docdir/README.md" ] || { echo "test-deb: $docdir/README.md is missing" >&2; exit 1; }
# package_holds TEST WHAT: each path read from the input, one a line, is
# under the package's documentation (test -f: a file, -e: a file or a
# directory); says how many, or names each missing one and fails.
package_holds() {
    local test=$1 what=$2 path n=0 missing=0
    while read -r path; do
        n=$((n + 1))
        if ! test "$test" "$docdir/$path"; then
            echo "test-deb: README.md names $path, which the package does not hold" >&2
            missing=1
        fi
    done
    [ $missing -eq 0 ] || exit 1
    echo "test-deb: the package holds README.md and the $n $what"
}
# the README's links to files of its own: not to a web page, nor within itself
package_holds -f "documents it links to" < <(grep -o '](\(docs/\|[A-Z]*\.md\)[^)#]*' "$docdir/README.md" |
    sed 's/^](//' | sort -u)
# the examples the README names (1.5 shipped none), uncompressed where it says
package_holds -e "examples it names" < <(grep -o 'examples/[A-Za-z0-9_./-]*[A-Za-z0-9_]' "$docdir/README.md" | sort -u)

fw_log "calling the packaged extension on a fresh cluster"
mkdir "$work/cluster"; chown "$FW_RUN_USER" "$work/cluster"
fw_cluster_start "$work/cluster" "shared_preload_libraries = 'fixed_window'"
got=$(fw_as_user psql -XAtq -v ON_ERROR_STOP=1 <<'SQL'
CREATE EXTENSION fixed_window;
SELECT extversion FROM pg_extension WHERE extname = 'fixed_window';
SELECT string_agg(CASE WHEN (fw_limit('deb', 'k', 5, '1 minute')).ok THEN 'ok' ELSE 'denied' END, ' ' ORDER BY g)
FROM generate_series(1, 6) AS g;
SELECT count(*) FROM fw_counters WHERE name = 'deb' AND storage = 'shmem';
SQL
)
want="$extversion
ok ok ok ok ok denied
1"
if [ "$got" != "$want" ]; then
    printf 'test-deb: the packaged extension answered\n%s\nnot\n%s\n' "$got" "$want" >&2
    exit 1
fi
echo "test-deb: $(basename "$deb") built, installed and answering"

# The autopkgtest installs the package and its tests' dependencies, as root,
# then runs debian/tests/installcheck against the installed files as an
# ordinary account, as Debian's CI does where the testbed has one: so
# make installcheck runs the TAP suites too.
fw_log "autopkgtest of $(basename "$deb") (log: $work/autopkgtest/log)"
if ! autopkgtest --output-dir="$work/autopkgtest" --user="$FW_RUN_USER" --no-built-binaries "$deb" \
    "$work/postgresql-fixed-window_${version}.dsc" -- null >"$work/autopkgtest.out" 2>&1; then
    tail -n 60 "$work/autopkgtest.out"
    echo "test-deb: the autopkgtest failed" >&2
    exit 1
fi
cat "$work/autopkgtest/summary"
# It ran the five suites of make installcheck (regress and isolation, on
# shared memory and on the table, then TAP) against the installed package.
# (pg_regress says "All N tests passed", as "# All ..." since 16; newer
# autopkgtests put the seconds before each line of the log)
suites=$(grep -cE 'All [0-9]+ tests passed' "$work/autopkgtest/log" || true)
tap=$(grep -oE 'Files=[0-9]+, Tests=[0-9]+' "$work/autopkgtest/log" | tail -n 1)
if [ "$suites" -ne 4 ] || [ -z "$tap" ] || ! grep -q 'Result: PASS' "$work/autopkgtest/log"; then
    grep -E 'tests (passed|failed)|installcheck|Files=|Result:' "$work/autopkgtest/log" >&2 || true
    echo "test-deb: the autopkgtest ran $suites of make installcheck's 4 pg_regress suites, and TAP: ${tap:-not run}" >&2
    exit 1
fi
echo "test-deb: the autopkgtest of $(basename "$deb") passed against the installed package:" \
    "$(grep -oE 'All [0-9]+ tests passed' "$work/autopkgtest/log" | awk '{n += $2} END {print n}') tests in 4 pg_regress suites, TAP $tap"
