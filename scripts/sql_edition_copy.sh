#!/usr/bin/env bash
# scripts/sql_edition_copy.sh PG_CONFIG DIR: a private copy in DIR of the
# server that PG_CONFIG names (its programs, libraries and shared files, each
# at DIR followed by its own path, so that the copy finds its own files as
# scripts/pg_copy.sh's does), where the extension fixed_window is the SQL
# edition: the C extension's control file, scripts and library are removed
# and the edition's script is installed under the name fixed_window.  The
# layers regress-sql and isolation-sql run the C extension's suites, whose
# tests say CREATE EXTENSION fixed_window, on servers of this copy.  Prints
# the copy's bindir.
set -euo pipefail

pg_config=${1:?usage: scripts/sql_edition_copy.sh PG_CONFIG DIR}
dir=${2:?usage: scripts/sql_edition_copy.sh PG_CONFIG DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
bindir=$("$pg_config" --bindir)
sharedir=$("$pg_config" --sharedir)
pkglibdir=$("$pg_config" --pkglibdir)

rm -rf "$dir"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
for d in "$bindir" "$pkglibdir" "$sharedir"; do
    mkdir -p "$dir$(dirname "$d")"
    cp -a "$d" "$dir$d"
done
[ "$("$dir$bindir/pg_config" --sharedir)" = "$dir$sharedir" ] ||
    { echo "sql_edition_copy.sh: the copy in $dir does not find its own files" >&2; exit 1; }

ext=$dir$sharedir/extension
rm -f "$ext"/fixed_window.control "$ext"/fixed_window--*.sql "$dir$pkglibdir"/fixed_window.so
rm -rf "$dir$pkglibdir"/bitcode/fixed_window "$dir$pkglibdir"/bitcode/fixed_window.index.bc
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$root/fixed_window_sql.control")
bash "$root/scripts/sql_edition.sh" extension "$ext/fixed_window--$version.sql" fixed_window
sed -e "s/^comment = '\(.*\)'/comment = '\1, installed as fixed_window to test it'/" \
    "$root/fixed_window_sql.control" >"$ext/fixed_window.control"
echo "$dir$bindir"
