-- fixed_window, SQL edition: who owns it, and who may call what.
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
          -- its own types only: PostgreSQL 17 and later also make members
          -- of their array types and of its tables' row types, which follow
          -- their element's and their table's owner
          AND t.typelem = 0
          AND NOT EXISTS (SELECT FROM pg_catalog.pg_class AS r
                          WHERE r.oid = t.typrelid AND r.relkind <> 'c')
    LOOP
        EXECUTE pg_catalog.format('ALTER %s OWNER TO %I', obj.what, owner);
    END LOOP;
END
$do$;

-- The calls are the edition's entry points: they run as its owner, since
-- callers are granted nothing on fw_counter, and call the internal functions
-- below, which only the owner may execute.  So PUBLIC may call exactly what
-- it may call in the C extension, and a revoke of the README's roles recipe
-- closes a call as it does there: no internal function spends, checks or
-- refunds behind it.  Inside them, the caller is the role the session acts
-- as (fw_acting_role), as the C extension's calls record it.
ALTER FUNCTION fw_limit(text, text, integer, interval, timestamptz, integer, integer) SECURITY DEFINER;
ALTER FUNCTION fw_limit(text, text, integer) SECURITY DEFINER;
ALTER FUNCTION fw_check(text, text, integer, interval, timestamptz, integer, integer) SECURITY DEFINER;
ALTER FUNCTION fw_check(text, text, integer) SECURITY DEFINER;
ALTER FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) SECURITY DEFINER;
ALTER FUNCTION fw_refund(text, text, integer) SECURITY DEFINER;
ALTER FUNCTION fw_limit_windows(text, text, integer) SECURITY DEFINER;
ALTER FUNCTION fw_check_windows(text, text, integer) SECURITY DEFINER;
ALTER FUNCTION fw_now() SECURITY DEFINER;
ALTER FUNCTION fw_window_id(text, text, integer, interval, timestamptz, integer) SECURITY DEFINER;
ALTER FUNCTION fw_window_in_range(integer, interval, timestamptz, integer) SECURITY DEFINER;

REVOKE ALL ON FUNCTION
    fw_setting_honoured(text),
    fw_us(timestamptz), fw_us_interval(bigint), fw_ts(bigint), fw_period(interval),
    fw_add_months(bigint, bigint), fw_boundary(integer, bigint, bigint, bigint),
    fw_index(integer, bigint, bigint, bigint),
    fw_decide(integer, bigint, bigint, integer, integer, integer, bigint, bigint, bigint, integer),
    fw_range_error(), fw_check_length(text, text, integer), fw_unsigned(bigint),
    fw_validate(text, text, integer, interval, timestamptz, integer, integer, boolean, boolean),
    fw_name_stats(text, timestamptz),
    fw_inline("char", text, text, integer, interval, timestamptz, integer, integer),
    fw_key_hash(text, text), fw_named("char", text, text, integer),
    fw_windows("char", text, text, integer), fw_period_id(integer, bigint)
    FROM PUBLIC;
