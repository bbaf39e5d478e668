#!/usr/bin/env bash
# scripts/sql_edition_expected.sh DIR: the input directory of the layers
# regress-sql and isolation-sql in DIR: the suites' sql/ and specs/ as they
# are, and expected/ with the differences the SQL edition is allowed applied.
# Each test/sql_edition/NAME.diff is a unified diff of expected/NAME.out: its
# text before the diff says why the edition cannot print what the C extension
# prints there, and names the row of "What SQL cannot match" in
# docs/sql-edition.md that it is; a hunk that no longer applies fails the
# layer, so that no allowance outlives its reason.
set -euo pipefail

dir=${1:?usage: scripts/sql_edition_expected.sh DIR}
root=$(cd "$(dirname "$0")/.." && pwd)

rm -rf "$dir"
mkdir -p "$dir"
ln -s "$root/sql" "$dir/sql"
ln -s "$root/specs" "$dir/specs"
cp -r "$root/expected" "$dir/expected"
shopt -s nullglob
for diff in "$root"/test/sql_edition/*.diff; do
    name=$(basename "$diff" .diff)
    if ! patch --quiet --forward --no-backup-if-mismatch -r - "$dir/expected/$name.out" "$diff"; then
        echo "sql_edition_expected.sh: test/sql_edition/$name.diff no longer applies to expected/$name.out" >&2
        exit 1
    fi
done
