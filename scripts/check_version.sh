#!/usr/bin/env bash
# make check-version: every place a version lives agrees (docs/releasing.md
# lists them).  The version lives in the control files (default_version);
# META.json, which PGXN reads, and debian/changelog's newest entry must say
# the same, as major.minor.patch (major.minor.0 when the control file has no
# patch number).  Each extension's update scripts lead from 1.0 to the
# default version one release at a time, and the released ones are as they
# were released (scripts/released.sha256); the upgrade tests end there
# (sql/fw_upgrade.sql, test/t/009_upgrade.pl), and CHANGELOG.md has a
# section for it.  The oldest PostgreSQL lives in src/compat.h; META.json,
# debian/pgversions and the README must say the same.
set -euo pipefail
cd "$(dirname "$0")/.."

control_version() { sed -n "s/^default_version = '\(.*\)'/\1/p" "$1.control"; }
semver() { local v=$1; [[ $v =~ ^[0-9]+\.[0-9]+$ ]] && v=$v.0; echo "$v"; }
# the "version" of a top-level key of META.json's "provides", or of the distribution
meta_version() {
    awk -v want="$1" '
        /"provides"/ { in_provides = 1 }
        in_provides && $0 ~ "\"" want "\"[[:space:]]*:" { found = 1 }
        want == "" && !in_provides && /"version"/ { print; exit }
        found && /"version"/ { print; exit }' META.json |
        sed 's/.*"version"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/'
}

# --semver: print fixed_window's version as major.minor.patch, and stop
if [ "${1:-}" = --semver ]; then
    semver "$(control_version fixed_window)"
    exit 0
fi

status=0
check() {
    local what=$1 want=$2 got=$3
    if [ "$want" != "$got" ]; then
        echo "version mismatch: $what is '$got', the control file says '$want'" >&2
        status=1
    fi
}
fw=$(semver "$(control_version fixed_window)")
proxy=$(semver "$(control_version fixed_window_proxy)")
check "META.json's version" "$fw" "$(meta_version '')"
check "META.json's fixed_window" "$fw" "$(meta_version fixed_window)"
check "META.json's fixed_window_proxy" "$proxy" "$(meta_version fixed_window_proxy)"
# the SQL edition has the C extension's API, and so its version
check "fixed_window_sql.control's version" "$fw" "$(semver "$(control_version fixed_window_sql)")"
check "META.json's fixed_window_sql" "$fw" "$(meta_version fixed_window_sql)"
# the first line of debian/changelog: "source (version) distribution; ..."
check "debian/changelog's version" "$fw" "$(sed -n '1s/^[^ ]* (\([^)-]*\).*/\1/p' debian/changelog)"

# The chain of update scripts: each extension's updates in the tree lead
# from 1.0 to the control file's version, each starting where the one before
# ended, with none beside the chain (CREATE EXTENSION and ALTER EXTENSION
# find their path through them by their names).  fixed_window ships no
# install script but 1.0's: CREATE EXTENSION runs it and then the updates
# (an install script of a later version left in the tree would run instead).
# chain_fixed_window: fixed_window's scripts in the order they run.
chain() {
    local ext=$1 want=$2 at=1.0 script
    local -a next order=("$ext--1.0.sql")
    while next=("$ext--$at--"*.sql) && [ -e "${next[0]}" ]; do
        if [ ${#next[@]} -gt 1 ]; then
            echo "$ext: more than one update from $at: ${next[*]}" >&2
            status=1
        fi
        order+=("${next[0]}")
        at=${next[0]#"$ext--$at--"}; at=${at%.sql}
    done
    check "the last update script of $ext" "$want" "$(semver "$at")"
    for script in "$ext"--*--*.sql; do
        [[ " ${order[*]} " == *" $script "* ]] ||
            { echo "$script: off the chain of updates from 1.0 to $at" >&2; status=1; }
    done
    [ "$ext" = fixed_window ] && chain_fixed_window=("${order[@]}")
    return 0
}
chain_fixed_window=()
chain fixed_window "$fw"
chain fixed_window_proxy "$proxy"
for script in fixed_window--*.sql; do
    if [[ $script != *--*--* && $script != fixed_window--1.0.sql ]]; then
        echo "$script: fixed_window has no install script but 1.0's (CREATE EXTENSION runs 1.0 and the updates): remove it" >&2
        status=1
    fi
done

# Released scripts never change: a mistake in one is fixed by the next
# update.  scripts/released.sha256 holds the sum of every script whose
# version (an update's target) is below its extension's default_version;
# releasing.md says to append the sums at each release.
if ! sha256sum --quiet --strict -c scripts/released.sha256; then
    echo "a released script changed or is missing (scripts/released.sha256): a released script never changes; put the change in the next update" >&2
    status=1
fi
for script in fixed_window*--*.sql; do
    ext=${script%%--*}
    to=${script##*--}; to=${to%.sql}
    default=$(control_version "$ext")
    if [ "$to" != "$default" ] && [ "$(printf '%s\n' "$to" "$default" | sort -V | head -n 1)" = "$to" ] &&
        ! grep -q "^[0-9a-f]\{64\}  $script\$" scripts/released.sha256; then
        echo "$script is released ($to, below $ext's $default), but scripts/released.sha256 has no sum of it: sha256sum $script >>scripts/released.sha256" >&2
        status=1
    fi
done
# The most windows a policy may have is the C code's FW_MAX_WINDOWS; the
# newest fw_define (the last script to say it) says the same.
max_windows=$(sed -n 's/^#define FW_MAX_WINDOWS[[:space:]]*\([0-9]*\).*/\1/p' src/window.h)
said=$(cat "${chain_fixed_window[@]}" | sed -n 's/.*A policy may have at most \([0-9]*\) windows.*/\1/p' | tail -n 1)
if [ "$said" != "$max_windows" ]; then
    echo "fw_define says a policy may have at most ${said:-?} windows, src/window.h's FW_MAX_WINDOWS is $max_windows: an update script redefines fw_define" >&2
    status=1
fi
fw_short=$(control_version fixed_window)
grep -q "UPDATE TO '$fw_short';" sql/fw_upgrade.sql ||
    { echo "sql/fw_upgrade.sql does not update to $fw_short" >&2; status=1; }
grep -q "UPDATE TO '$fw_short';" expected/fw_upgrade.out ||
    { echo "expected/fw_upgrade.out does not show the update to $fw_short" >&2; status=1; }
grep -q "is(\$default, '$fw_short'," test/t/009_upgrade.pl ||
    { echo "test/t/009_upgrade.pl does not expect $fw_short as the default version" >&2; status=1; }
grep -q "^## ${fw_short}[ :]" CHANGELOG.md ||
    { echo "CHANGELOG.md has no section \"## $fw_short\"" >&2; status=1; }

# What the versions name: META.json's provides.*.file is each extension's
# install script of its version where the tree has one (the router's), or
# else its control file (fixed_window's, installed by 1.0's script and the
# updates); the file names the README and docs/ give (a package, a release
# archive) are of the current version.
meta_file() {
    awk -v want="$1" '
        /"provides"/ { in_provides = 1 }
        in_provides && $0 ~ "\"" want "\"[[:space:]]*:" { found = 1 }
        found && /"file"/ { print; exit }' META.json |
        sed 's/.*"file"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/'
}
meta_wants() {
    local script
    script=$1--$(control_version "$1").sql
    if [ -e "$script" ]; then echo "$script"; else echo "$1.control"; fi
}
check "META.json's file of fixed_window" "$(meta_wants fixed_window)" "$(meta_file fixed_window)"
check "META.json's file of fixed_window_proxy" "$(meta_wants fixed_window_proxy)" "$(meta_file fixed_window_proxy)"
check "META.json's file of fixed_window_sql" "fixed_window_sql.control" "$(meta_file fixed_window_sql)"
while IFS=: read -r file line name; do
    named=$(sed -n 's/.*[-_]\([0-9]*\.[0-9]*\.[0-9]*\)[._].*/\1/p' <<<"$name")
    if [ "$named" != "$fw" ]; then
        echo "version mismatch: $file:$line names $name, of version $named, not $fw" >&2
        status=1
    fi
done < <(grep -onE '(fixed_window-|fixed-window_)[0-9]+\.[0-9]+\.[0-9]+[._][A-Za-z0-9_.]*' README.md docs/*.md)

# The oldest PostgreSQL: compat.h refuses anything older; META.json,
# debian/pgversions and the README must say the same; and SQL-standard
# function bodies (RETURN, BEGIN ATOMIC) in the scripts need 14.
min=$(sed -n 's/^#define FW_MIN_PG_VERSION[[:space:]]*\([0-9]*\)0000$/\1/p' src/compat.h)
oldest() {
    local what=$1 got=$2
    if [ "$got" != "$min" ]; then
        echo "PostgreSQL version mismatch: $what says $got, src/compat.h's FW_MIN_PG_VERSION $min" >&2
        status=1
    fi
}
oldest "META.json's prereq" "$(sed -n 's/.*"PostgreSQL"[[:space:]]*:[[:space:]]*"\([0-9]*\)\..*/\1/p' META.json)"
pgversions=$(grep -v '^#' debian/pgversions)
# the README's "written for PostgreSQL N to M", as "N M"
written=$(sed -n 's/.*written for PostgreSQL \([0-9]*\) to \([0-9]*\).*/\1 \2/p' README.md | head -n 1)
oldest "debian/pgversions' first version" "$(head -n 1 <<<"$pgversions")"
oldest "README.md's \"written for PostgreSQL N to M\"" "${written% *}"
# The versions built and tested: the host's and those of test.sh's chroot
# layers (scripts/pg_chroot.sh's list), as the README's first line says them.
source scripts/pg_chroot.sh
tested=$( { echo "$FW_PG_MAJOR"; fw_chroot_majors; } | sort -n | paste -sd' ')
said=$(sed -n 's/^Built and tested on PostgreSQL \([0-9, and]*\);.*/\1/p' README.md | head -n 1 | grep -o '[0-9]\+' | sort -n | paste -sd' ')
if [ "$tested" != "$said" ]; then
    echo "PostgreSQL versions: README.md says built and tested on \"$said\", make test tests \"$tested\"" >&2
    status=1
fi
# Each tested version is one the package is built for (pg_buildext builds
# for those of debian/pgversions that the machine supports, and no package
# at all otherwise), and the newest tested is the newest written for.
for v in $tested; do
    grep -qx "$v" <<<"$pgversions" ||
        { echo "PostgreSQL $v is tested, but debian/pgversions leaves it out" >&2; status=1; }
done
if [ "${written#* }" != "${tested##* }" ] || [ "$(tail -n 1 <<<"$pgversions")" != "${tested##* }" ]; then
    echo "PostgreSQL versions: the newest tested is ${tested##* }; README.md's \"written for PostgreSQL N to M\" says ${written#* }, debian/pgversions $(tail -n 1 <<<"$pgversions")" >&2
    status=1
fi
# (a body of the SQL standard starts a line; PL/pgSQL's RETURN is indented)
if [ "${min:-0}" -lt 14 ] && grep -lE '^(RETURN |BEGIN ATOMIC)' fixed_window*--*.sql* 2>/dev/null; then
    echo "the scripts above use SQL-standard function bodies, which need PostgreSQL 14; FW_MIN_PG_VERSION is $min" >&2
    status=1
fi

[ $status -eq 0 ] && echo "versions: fixed_window $fw, fixed_window_proxy $proxy; PostgreSQL $min and later"
exit $status
