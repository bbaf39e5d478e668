-- Moving from the SQL edition (fixed_window_sql) to the C extension
-- (fixed_window) in the same database, keeping policies, overrides,
-- exemptions and the metric name patterns.
--
--   psql -v ON_ERROR_STOP=1 -f examples/sql_edition/move_to_c.sql
--
-- Run it as a superuser (the C extension is not trusted) once the server
-- has the C extension installed.  In one transaction: the definitions are
-- saved, the edition dropped, the C extension created in the same schema and
-- the definitions made again through fw_define, fw_override and fw_exempt,
-- which check them as they would any new one; an override keeps the role
-- that made it (created_by), which decides who sees its key.  Counters start
-- afresh: the edition's are not carried over (nor across pg_dump).  A view
-- or trigger of yours that uses the edition's objects stops DROP EXTENSION,
-- and with it the whole move: drop it first, then create it again.
\set ON_ERROR_STOP on
BEGIN;
SELECT n.nspname AS fw_schema
  FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
 WHERE e.extname = 'fixed_window_sql' \gset
SET LOCAL search_path TO :"fw_schema";

CREATE TEMP TABLE fw_saved_policy ON COMMIT DROP AS SELECT * FROM fw_policy;
CREATE TEMP TABLE fw_saved_override ON COMMIT DROP AS SELECT * FROM fw_override;
CREATE TEMP TABLE fw_saved_metric_name ON COMMIT DROP AS SELECT * FROM fw_metric_name;

DROP EXTENSION fixed_window_sql;
CREATE EXTENSION fixed_window SCHEMA :"fw_schema";

SELECT count(fw_define(p.name, p.rate, p.period, p.start, p.capacity, p.shadow, p.comment)) AS policy_windows
  FROM pg_temp.fw_saved_policy p;
SELECT count(fw_override(o.name, o.key, o.rate, o.period, o.capacity)) AS overrides
  FROM pg_temp.fw_saved_override o WHERE o.period IS NOT NULL;
SELECT count(fw_exempt(o.name, o.key)) AS exemptions
  FROM pg_temp.fw_saved_override o WHERE o.period IS NULL;
UPDATE fw_override o SET created_by = s.created_by
  FROM pg_temp.fw_saved_override s
 WHERE (o.name, o.key, o.period_id) = (s.name, s.key, s.period_id) AND o.created_by <> s.created_by;
INSERT INTO fw_metric_name SELECT * FROM pg_temp.fw_saved_metric_name;
COMMIT;
