#!/usr/bin/env bash
# make check-version: the version lives in the control files (fixed_window's
# default_version is the Makefile's EXTVERSION); META.json, which PGXN reads,
# and debian/changelog's newest entry must say the same, as major.minor.patch
# (major.minor.0 when the control file has no patch number).
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
# the first line of debian/changelog: "source (version) distribution; ..."
check "debian/changelog's version" "$fw" "$(sed -n '1s/^[^ ]* (\([^)-]*\).*/\1/p' debian/changelog)"
[ $status -eq 0 ] && echo "versions: fixed_window $fw, fixed_window_proxy $proxy"
exit $status
