#!/usr/bin/env bash
# Checks that the C files of src/ include one another in layers only: a file
# includes headers of lower layers (and its own header, and compat.h), never
# of its own layer or above, so that there is no include cycle and the
# stores and statistics, peers, know nothing of each other.
set -euo pipefail
cd "$(dirname "$0")/../src"

# The layer of each file, bottom (0) to top.
layer() {
    case "$1" in
        compat.h | window.h | window.c) echo 0 ;;
        identity.h | identity.c | settings.h | settings.c | catalog.h | catalog.c) echo 1 ;;
        decide.h | decide.c) echo 2 ;;
        shmem_store.h | shmem_store.c | table_store.h | table_store.c | stats.h | stats.c | \
            policy.h | policy.c) echo 3 ;;
        store.h | store.c) echo 4 ;;
        call.h | call.c) echo 5 ;;
        limit.c | admin.c | trigger.c | define.c | fixed_window.c) echo 6 ;;
        *) echo "unknown" ;;
    esac
}

bad=0
for file in *.c *.h; do
    mine=$(layer "$file")
    if [ "$mine" = unknown ]; then
        echo "src/$file: not placed in a layer (add it to scripts/check_layers.sh)"
        bad=1
        continue
    fi
    while read -r header; do
        [ -f "$header" ] || continue                          # PostgreSQL's
        [ "$header" = compat.h ] && continue
        [ "${header%.h}" = "${file%.[ch]}" ] && continue      # its own header
        theirs=$(layer "$header")
        if [ "$theirs" = unknown ] || [ "$theirs" -ge "$mine" ]; then
            echo "src/$file (layer $mine) includes $header (layer $theirs)"
            bad=1
        fi
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done
[ $bad -eq 0 ] && echo "include layers: every include among src/ files points down"
exit $bad
