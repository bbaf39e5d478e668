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
-- afresh: the edition's are not carried over (nor across pg_dump).  The
-- privileges granted or revoked on the edition's functions and views are
-- carried over to the C extension's of the same names.  A view
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

-- The privileges on the extension's functions and views, as granted and
-- revoked (the README's roles recipe): DROP EXTENSION drops them with the
-- objects, and the C extension's come as PostgreSQL makes them.
CREATE FUNCTION pg_temp.fw_acl(extension name)
RETURNS TABLE (kind text, object text, grantee oid, privilege text, owner oid)
LANGUAGE sql STABLE AS $$
    SELECT 'FUNCTION', p.oid::regprocedure::text, a.grantee, a.privilege_type, p.proowner
    FROM pg_catalog.pg_depend AS d
    JOIN pg_catalog.pg_extension AS e ON e.oid = d.refobjid AND e.extname = extension
    JOIN pg_catalog.pg_proc AS p ON d.classid = 'pg_catalog.pg_proc'::regclass AND p.oid = d.objid
    CROSS JOIN LATERAL pg_catalog.aclexplode(coalesce(p.proacl, pg_catalog.acldefault('f', p.proowner))) AS a
    WHERE d.deptype = 'e'
    UNION ALL
    SELECT 'TABLE', c.oid::regclass::text, a.grantee, a.privilege_type, c.relowner
    FROM pg_catalog.pg_depend AS d
    JOIN pg_catalog.pg_extension AS e ON e.oid = d.refobjid AND e.extname = extension
    JOIN pg_catalog.pg_class AS c ON d.classid = 'pg_catalog.pg_class'::regclass AND c.oid = d.objid
    CROSS JOIN LATERAL pg_catalog.aclexplode(coalesce(c.relacl, pg_catalog.acldefault('r', c.relowner))) AS a
    WHERE d.deptype = 'e' AND c.relkind = 'v'
$$;
CREATE TEMP TABLE fw_saved_acl ON COMMIT DROP AS
    SELECT kind, object, grantee, privilege FROM pg_temp.fw_acl('fixed_window_sql');

DROP EXTENSION fixed_window_sql;
CREATE EXTENSION fixed_window SCHEMA :"fw_schema";

SELECT count(fw_define(p.name, p.rate, p.period, p.start, p.capacity, p.shadow, p.comment)) AS policy_windows
  FROM (SELECT * FROM pg_temp.fw_saved_policy ORDER BY name, period_id) p;
SELECT count(fw_override(o.name, o.key, o.rate, o.period, o.capacity)) AS overrides
  FROM pg_temp.fw_saved_override o WHERE o.period IS NOT NULL;
SELECT count(fw_exempt(o.name, o.key)) AS exemptions
  FROM pg_temp.fw_saved_override o WHERE o.period IS NULL;
UPDATE fw_override o SET created_by = s.created_by
  FROM pg_temp.fw_saved_override s
 WHERE (o.name, o.key, o.period_id) = (s.name, s.key, s.period_id) AND o.created_by <> s.created_by;
INSERT INTO fw_metric_name SELECT * FROM pg_temp.fw_saved_metric_name;

-- The same privileges on the objects both editions have: granted where the
-- edition had them (its owner's included, the C extension's being the
-- superuser's), revoked where it had not.
CREATE TEMP TABLE fw_new_acl ON COMMIT DROP AS
    SELECT kind, object, grantee, privilege FROM pg_temp.fw_acl('fixed_window') WHERE grantee <> owner;
SELECT pg_catalog.format('%s %s ON %s %s %s %s', verb, privilege, kind, object,
                         CASE verb WHEN 'GRANT' THEN 'TO' ELSE 'FROM' END,
                         CASE grantee WHEN 0 THEN 'PUBLIC' ELSE grantee::regrole::text END)
FROM (SELECT 'GRANT' AS verb, * FROM (SELECT * FROM pg_temp.fw_saved_acl
                                      EXCEPT SELECT * FROM pg_temp.fw_new_acl) AS g
      WHERE (kind, object) IN (SELECT kind, object FROM pg_temp.fw_acl('fixed_window'))
      UNION ALL
      SELECT 'REVOKE', * FROM (SELECT * FROM pg_temp.fw_new_acl
                               EXCEPT SELECT * FROM pg_temp.fw_saved_acl) AS r
      WHERE (kind, object) IN (SELECT kind, object FROM pg_temp.fw_saved_acl)) AS change
ORDER BY verb DESC, kind, object \gexec
COMMIT;
