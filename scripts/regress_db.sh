#!/usr/bin/env bash
# scripts/regress_db.sh PSQL DATABASE STORAGE: make the database a suite of
# "make installcheck" runs in, its calls keeping counters in STORAGE
# (shmem or table).  fixed_window.storage is chosen for a whole database or
# the server, never for a session, so the suites cannot ask for it in their
# connections' options: pg_regress uses this database as it is
# (--use-existing), made as pg_regress itself makes one, and with the
# storage set for it.
set -euo pipefail
psql=$1 db=$2 storage=$3
"$psql" -XAtq -d postgres -v ON_ERROR_STOP=1 <<SQL
DROP DATABASE IF EXISTS "$db";
CREATE DATABASE "$db" TEMPLATE=template0;
ALTER DATABASE "$db" SET lc_messages TO 'C';
ALTER DATABASE "$db" SET lc_monetary TO 'C';
ALTER DATABASE "$db" SET lc_numeric TO 'C';
ALTER DATABASE "$db" SET lc_time TO 'C';
ALTER DATABASE "$db" SET bytea_output TO 'hex';
ALTER DATABASE "$db" SET timezone_abbreviations TO 'Default';
ALTER DATABASE "$db" SET fixed_window.storage TO '$storage';
SQL
