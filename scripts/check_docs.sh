#!/usr/bin/env bash
# make check-docs: every link of README.md and docs/ names a file that
# exists, and every anchor (#...) a heading of that file or of the README.
# (What the documents say about the catalog, such as what PUBLIC may call,
# is checked by running their blocks: scripts/run_docs.py.)
set -euo pipefail
cd "$(dirname "$0")/.."

status=0
fail() { echo "check-docs: $*" >&2; status=1; }

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

[ "$status" -eq 0 ] && echo "check-docs: every link into the documents resolves"
exit "$status"
