#!/usr/bin/env bash
# make demo: a throwaway cluster with fixed_window preloaded, and a short
# psql session in which a quota allows, denies, then allows again.
source "$(dirname "$0")/lib.sh"

fw_base_packages
fw_build_install

dir=$(fw_private_dir)
trap 'fw_cluster_stop "$dir"; rm -rf "$dir"' EXIT
fw_cluster_start "$dir" "shared_preload_libraries = 'fixed_window'"
fw_log "throwaway cluster in $dir; running demo/demo.sql"
fw_as_user psql -X -q -v ON_ERROR_STOP=1 -f "$FW_ROOT/demo/demo.sql"
