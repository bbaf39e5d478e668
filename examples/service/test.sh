#!/usr/bin/env bash
# The example service's test (a layer of make test): a throwaway cluster
# with fixed_window preloaded and the schema, the service on a free port
# (start.sh), and its tests over HTTP.  Runs as an unprivileged user; make
# test installs Node.js and npm first when they are missing.
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
source "$(dirname "$0")/../../scripts/lib.sh"
here=$FW_ROOT/examples/service
source "$here/start.sh"

dir=$(fw_private_dir)
cleanup() {
    service_stop
    fw_cluster_stop "$dir"
    rm -rf "$dir"
}
trap cleanup EXIT

fw_cluster_start "$dir" "shared_preload_libraries = 'fixed_window'"
service_start "$here" "$dir" FW_TEST_CLOCK=1

if ! SERVICE_URL=$service_url node --test "$here/test/"; then
    echo "--- service log" >&2
    cat "$dir/service.log" >&2
    exit 1
fi
