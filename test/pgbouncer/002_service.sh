#!/usr/bin/env bash
# The example service behind PgBouncer in transaction mode, with the
# pooler's usual ignore_startup_parameters: every test of the service,
# and the pooler's own (examples/service/test.sh pgbouncer).
#
# Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
exec bash "$(dirname "$0")/../../examples/service/test.sh" pgbouncer
