-- fixed_window, SQL edition: who owns it.
--
-- Every object of the edition belongs to the role that installed it: in a
-- trusted extension, the database owner who ran CREATE EXTENSION (its script
-- runs as the bootstrap superuser, whose objects that role could neither
-- grant nor revoke, as the README's roles recipe does, and whose SECURITY
-- DEFINER functions would run as a superuser in a schema that role
-- controls); with the plain script, the role that ran it, which owns them
-- already.  So the SECURITY DEFINER functions can do nothing their owner
-- could not, and the owner manages every privilege of the edition.
DO $do$
DECLARE
    ext oid;
    owner regrole;
    obj record;
BEGIN
    SELECT e.oid, e.extowner::regrole INTO ext, owner
    FROM pg_catalog.pg_extension AS e
    JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace
    WHERE n.nspname = pg_catalog.current_schema()
      AND e.extname IN ('fixed_window_sql', 'fixed_window');
    IF ext IS NULL THEN
        RETURN;                         -- the plain script: its role owns all
    END IF;
    FOR obj IN
        SELECT pg_catalog.format('%s %s', CASE c.relkind WHEN 'v' THEN 'VIEW' ELSE 'TABLE' END,
                                 c.oid::regclass) AS what
        FROM pg_catalog.pg_depend AS d JOIN pg_catalog.pg_class AS c ON c.oid = d.objid
        WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.refobjid = ext AND d.deptype = 'e'
          AND c.relkind IN ('r', 'v') AND c.relowner <> owner
        UNION ALL
        SELECT pg_catalog.format('FUNCTION %s', p.oid::regprocedure)
        FROM pg_catalog.pg_depend AS d JOIN pg_catalog.pg_proc AS p ON p.oid = d.objid
        WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.refobjid = ext AND d.deptype = 'e'
          AND p.proowner <> owner
        UNION ALL
        SELECT pg_catalog.format('TYPE %s', t.oid::regtype)
        FROM pg_catalog.pg_depend AS d JOIN pg_catalog.pg_type AS t ON t.oid = d.objid
        WHERE d.classid = 'pg_catalog.pg_type'::regclass AND d.refobjid = ext AND d.deptype = 'e'
          AND t.typowner <> owner
    LOOP
        EXECUTE pg_catalog.format('ALTER %s OWNER TO %I', obj.what, owner);
    END LOOP;
END
$do$;
