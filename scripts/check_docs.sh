#!/usr/bin/env bash
# make check-docs: what the README states about the catalog, checked against
# what the tests find there.
#
#   - the README's "What PUBLIC may call" lists exactly the functions and
#     views that PUBLIC may use, as test/sql/fw_security.sql finds them in the
#     catalog (its expected output);
#   - every link into docs/ names a file that exists, and every anchor
#     (#...) a heading of that file or of the README.
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
fail() { echo "check-docs: $*" >&2; status=1; }

# The objects of the README's table: backquoted fw_ names in its first column.
readme_public=$(awk '/^## What PUBLIC may call/ { on = 1; next } on && /^#/ { exit } on && /^\| `/' docs/admin.md |
    awk -F' \\| ' '{ print $1 }' | grep -o '`fw_[a-z0-9_]*\(([^`]*)\)\?`' | tr -d '`' | sort)
# The catalog's, from the test's expected output: the rows after each header.
catalog_public=$(awk '
    /^ +public_function *$/ || /^ +public_relation .*$/ { on = 1; getline; next }
    on && /^\([0-9]+ rows?\)$/ { on = 0 }
    on { sub(/^ /, ""); split($0, f, " \\| "); sub(/ +$/, "", f[1]); print f[1] }' test/expected/fw_security.out | sort)
[ -n "$catalog_public" ] || fail "test/expected/fw_security.out lists no public function"
if [ "$readme_public" != "$catalog_public" ]; then
    fail "README's \"What PUBLIC may call\" differs from the catalog (test/expected/fw_security.out):"
    diff <(echo "$readme_public") <(echo "$catalog_public") | sed -n 's/^</  only in README:/p; s/^>/  only in the catalog:/p' >&2
fi

# GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces to -.
anchors() { sed -n 's/^#\{1,6\} //p' "$1" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'; }
# (grep -c reads every line: grep -q would stop at the first, and the loop,
# killed by SIGPIPE, would make the pipeline fail under pipefail, unseen.)
broken=$(for doc in README.md docs/*.md; do
    dir=$(dirname "$doc")
    grep -o '](\([^)#]*\)\(#[^)]*\)\?)' "$doc" | sed 's/^](//; s/)$//' | sort -u | while read -r link; do
        case $link in http*|mailto:*) continue ;; esac
        file=${link%%#*} anchor=
        [[ $link == *#* ]] && anchor=${link#*#}
        target=$doc
        [ -n "$file" ] && target=$dir/$file
        if [ ! -e "$target" ]; then
            echo "check-docs: $doc links to $file, which does not exist" >&2; echo fail
        elif [ -n "$anchor" ] && [[ $target == *.md ]] && ! anchors "$target" | grep -qx -- "$anchor"; then
            echo "check-docs: $doc links to #$anchor, not a heading of $target" >&2; echo fail
        fi
    done
done | grep -c fail || true)
[ "$broken" -eq 0 ] || status=1

[ "$status" -eq 0 ] && echo "check-docs: the README's list of what PUBLIC may call matches the catalog ($(echo "$catalog_public" | wc -l) objects); every link into the documents resolves"
exit "$status"
