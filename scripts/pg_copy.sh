#!/usr/bin/env bash
# scripts/pg_copy.sh DIR: a private copy of the server's installed files in
# DIR, for a second working tree on the same machine.  PostgreSQL finds its
# files relative to its programs, so the copy's pg_config names the copy's
# directories, and "make install" into it leaves the server's own untouched.
# Then run the tests with FW_PG_BIN set as printed (docs/development.md).
source "$(dirname "$0")/lib.sh"

dir=${1:?usage: scripts/pg_copy.sh DIR}
fw_base_packages "postgresql-$FW_PG_MAJOR-plproxy"
mkdir -p "$dir/usr/lib/postgresql" "$dir/usr/share/postgresql" "$dir/usr/include"
cp -a "/usr/lib/postgresql/$FW_PG_MAJOR" "$dir/usr/lib/postgresql/"
cp -a "/usr/share/postgresql/$FW_PG_MAJOR" "$dir/usr/share/postgresql/"
cp -a /usr/include/postgresql "$dir/usr/include/"
dir=$(cd "$dir" && pwd)
[ "$("$dir/usr/lib/postgresql/$FW_PG_MAJOR/bin/pg_config" --sharedir)" = "$dir/usr/share/postgresql/$FW_PG_MAJOR" ] ||
    { echo "the copy in $dir does not find its own files" >&2; exit 1; }
echo "FW_PG_BIN=$dir/usr/lib/postgresql/$FW_PG_MAJOR/bin"
