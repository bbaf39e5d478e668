#!/usr/bin/env bash
# make demo: a throwaway cluster that does not preload fixed_window; a short
# psql session that turns on shared-memory counters without a restart, in
# which a quota allows, denies, then allows again; then the
# example HTTP service (examples/service) answering its sixth request of a
# minute with 429 Too Many Requests and the rate-limit headers.
source "$(dirname "$0")/lib.sh"

fw_base_packages curl
fw_node_packages
fw_build_install

dir=$(fw_private_dir)
source "$FW_ROOT/examples/service/start.sh"
# Everything the demo started ends with it: the service, then the cluster.
trap 'service_stop; fw_cluster_stop "$dir"; rm -rf "$dir"; fw_left_running "$dir"' EXIT
fw_cluster_start "$dir"
fw_log "throwaway cluster in $dir; running demo/demo.sql"
fw_as_user psql -X -q -v ON_ERROR_STOP=1 -f "$FW_ROOT/demo/demo.sql"

fw_log "the example HTTP service, in a database of its own"
fw_as_user createdb service
PGDATABASE=service service_start "$FW_ROOT/examples/service" "$dir"
fw_as_user psql -X -q -d service -c \
    "INSERT INTO api_keys VALUES (sha256(convert_to('demo', 'UTF8')), 'the demo')"
echo
echo "# The policy \"api\" allows 5 requests a minute per client (API key \"demo\"). Six requests:"
for i in 1 2 3 4 5; do
    curl -s -o /dev/null -w "GET /hello -> %{http_code}\n" -H 'X-Api-Key: demo' "$service_url/hello"
done
echo "# curl -i -H 'X-Api-Key: demo' $service_url/hello"
curl -s -i -H 'X-Api-Key: demo' "$service_url/hello"
echo
