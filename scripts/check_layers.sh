#!/usr/bin/env bash
# make check-layers: the one map of src/'s layers, and the rules it keeps.
#
#   - Layers: a file includes headers of lower layers (and its own header,
#     and compat.h), never of its own layer or above, so that there is no
#     include cycle and the stores and statistics, peers, know nothing of
#     each other.
#   - The table of layers in docs/development.md says what layer() says:
#     every file of src/ in its layer there, and no file that is gone.
#   - Names: a C function that SQL calls (PG_FUNCTION_INFO_V1) has the SQL
#     function's name, or that name and a suffix for one of its argument
#     lists, and is named by an install script; it alone starts with "fw_".
#     Every other function starts with its file's prefix (see prefix below:
#     fwwindow_, fwshmem_, ...), or, if static, with no "fw" prefix at all.
#
# With --draw it checks nothing and prints the layers, top to bottom: each
# file (a .c with its header) with its lines and the src/ headers it and its
# header include, compat.h and its own header left out.
set -euo pipefail
cd "$(dirname "$0")/../src"

# The layer of each file, bottom (0) to top:
#   0  compat.h, window: window and token arithmetic (pure, unit-tested);
#      atomic_time.h: a time in an atomic, lowered or raised
#   1  identity: counters' identities and hashes; validate: the checks of
#      a limit's arguments; segment: the dynamic shared memory segments and their registry;
#      settings: settings and clock; placeholder: the admin's values where
#      a role's was refused when the library loaded; subxact: a step that
#      may fail without failing its caller; catalog: the extension's
#      relations
#   2  decide: a call (FwCall) and its decision (FwOutcome)
#   3  shmem_store, table_store, stats, policy: the stores, the statistics
#      and the policies' cache, peers; the shared-memory store in parts
#      (shmem_table, shmem_save, shmem_resize) behind shmem_internal.h, which
#      only they include
#   4  store: picks a store, counts statistics, reports failures, forgets
#      dropped databases and marks moved ones anew, removes a name's or a
#      key's counters from shared memory
#   5  call: builds a call, inline or from a policy with the key's overrides;
#      keeper: the background worker that looks after shared memory
#   6  limit, admin, capacity, trigger, define: the SQL-callable functions;
#      fixed_window: _PG_init and the hooks
layer() {
    case "$1" in
        compat.h | atomic_time.h | window.h | window.c) echo 0 ;;
        identity.h | identity.c | settings.h | settings.c | catalog.h | catalog.c | \
            placeholder.h | placeholder.c | subxact.h | subxact.c | \
            segment.h | segment.c | validate.h | validate.c) echo 1 ;;
        decide.h | decide.c) echo 2 ;;
        shmem_store.h | shmem_store.c | shmem_internal.h | shmem_table.c | shmem_save.c | \
            shmem_resize.c | table_store.h | table_store.c | stats.h | stats.c | \
            policy.h | policy.c) echo 3 ;;
        store.h | store.c) echo 4 ;;
        call.h | call.c | keeper.h | keeper.c) echo 5 ;;
        limit.c | admin.c | capacity.c | trigger.c | define.c | fixed_window.c) echo 6 ;;
        *) echo "unknown" ;;
    esac
}

draw_layers() {
    local top=0 n file mine header lines includes parts
    for file in *.c *.h; do
        mine=$(layer "$file")
        if [ "$mine" != unknown ] && [ "$mine" -gt "$top" ]; then top=$mine; fi
    done
    for ((n = top; n >= 0; n--)); do
        echo "layer $n"
        for file in *.c *.h; do
            [ "$(layer "$file")" = "$n" ] || continue
            [[ $file == *.h && -f ${file%.h}.c ]] && continue
            parts=("$file")
            [[ $file == *.c && -f ${file%.c}.h ]] && parts+=("${file%.c}.h")
            lines=$(cat "${parts[@]}" | wc -l)
            includes=""
            while read -r header; do
                if [ -f "$header" ] && [ "$header" != compat.h ] &&
                    [ "${header%.h}" != "${file%.[ch]}" ]; then
                    includes+="${header%.h} "
                fi
            done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "${parts[@]}" | sort -u)
            printf '  %-22s %5d  -> %s\n' "${file%.c}" "$lines" "${includes:-(none)}"
        done
    done
}
if [ "${1-}" = --draw ]; then
    draw_layers
    exit 0
fi

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
        # the shared-memory store's files share shmem_internal.h, theirs alone
        if [ "$header" = shmem_internal.h ]; then
            [[ $file == shmem_*.c ]] && continue
            echo "src/$file includes shmem_internal.h, which only src/shmem_*.c may"
            bad=1
            continue
        fi
        [ "$file" = shmem_internal.h ] && [ "$header" = shmem_store.h ] && continue
        theirs=$(layer "$header")
        if [ "$theirs" = unknown ] || [ "$theirs" -ge "$mine" ]; then
            echo "src/$file (layer $mine) includes $header (layer $theirs)"
            bad=1
        fi
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done
# The table of layers in docs/development.md ("### Layers of src/"): a row
# is "| N | `name`, `file.c`/`.h`, ... | what they hold |"; a name alone
# stands for its .c and .h, "`.h`" after a file for that file's header.
table_bad=0
declare -A documented=()
while IFS='|' read -r _ n files _; do
    n=${n// /}
    [[ $n =~ ^[0-9]+$ ]] || continue
    # shellcheck disable=SC2016 # Markdown's backquotes, not the shell's
    while read -r name; do
        [[ $name == .* ]] && continue
        documented[${name%.[ch]}]=$n
    done < <(grep -o '`[^`]*`' <<<"$files" | tr -d '`')
done < <(awk '/^### Layers of src\//{on=1; next} on && /^#/{exit} on' ../docs/development.md)
for file in *.c *.h; do
    mine=$(layer "$file")
    [ "$mine" = unknown ] && continue                   # said above
    theirs=${documented[${file%.[ch]}]-}
    if [ -z "$theirs" ]; then
        echo "src/$file (layer $mine) is missing from the table of layers in docs/development.md"
        table_bad=1
    elif [ "$theirs" != "$mine" ]; then
        echo "src/$file is in layer $mine here and in layer $theirs in docs/development.md"
        table_bad=1
    fi
done
for name in "${!documented[@]}"; do
    if ! compgen -G "$name.[ch]" >/dev/null; then
        echo "docs/development.md's table of layers names $name, which src/ does not hold"
        table_bad=1
    fi
done

# The prefix of the functions of each file.
prefix() {
    case "${1%.[ch]}" in
        shmem_*) echo fwshmem_ ;;
        table_store) echo fwtable_ ;;
        fixed_window) echo fwinit_ ;;
        *) echo "fw${1%.[ch]}_" ;;
    esac
}

# The symbols the install scripts name: AS 'MODULE_PATHNAME', 'symbol'.
sql_symbols=$(grep -ho "'MODULE_PATHNAME', *'[a-z0-9_]*'" ../fixed_window*--*.sql |
    sed "s/.*, *'\(.*\)'/\1/" | sort -u)
names_bad=0
for file in *.c *.h; do
    mine=$(prefix "$file")
    # functions defined here: the name at the start of a line, then "("
    while IFS=: read -r line name; do
        previous=$(sed -n "$((line - 1))p" "$file")
        static=no
        [[ $previous == static* || $file == *.h ]] && static=yes
        if grep -q "PG_FUNCTION_INFO_V1($name)" "$file"; then
            grep -qx "$name" <<<"$sql_symbols" || {
                echo "src/$file: $name is SQL-callable but no install script names it"; names_bad=1; }
        elif [[ $name == fw_* ]]; then
            echo "src/$file:$line: $name starts with fw_, which is for SQL-callable functions; name it ${mine}..."
            names_bad=1
        elif [[ $name != "$mine"* && $name != _PG_* ]] && { [ $static = no ] || [[ $name == fw* ]]; }; then
            echo "src/$file:$line: $name should start with $mine"
            names_bad=1
        fi
    done < <(grep -no '^[a-z_][a-z0-9_]*(' "$file" | sed 's/($//')
done
[ $names_bad -eq 0 ] && echo "names: SQL-callable functions are named by SQL, every other by its file"
[ $bad -eq 0 ] && echo "include layers: every include among src/ files points down"
[ $table_bad -eq 0 ] && echo "layers table: docs/development.md places every file as this script does"
[ $bad -eq 0 ] && [ $names_bad -eq 0 ] && [ $table_bad -eq 0 ]
