--
-- fw_security: what an ordinary role can reach (1.3).  Every view that hides
-- rows or keys is a security barrier, tried with a leaky function of the
-- role's own; the functions PUBLIC may execute are exactly those listed in
-- the README's security section; fw_refund is not among them.  Runs on both
-- storages.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
\set VERBOSITY terse
SET fixed_window.debug_now = '2026-07-01 10:00:00+00';

-- The functions and views of the extension that PUBLIC may use: the same
-- query in docs/admin.md ("What PUBLIC may call") prints them there, its
-- output compared by the layer docs.
SELECT p.oid::regprocedure AS public_function
FROM pg_proc AS p
JOIN pg_depend AS d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'fixed_window'
WHERE EXISTS (SELECT FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
              WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
ORDER BY p.oid::regprocedure::text;
SELECT c.oid::regclass AS public_relation, a.privilege_type,
       coalesce(c.reloptions, '{}') AS options
FROM pg_class AS c
JOIN pg_depend AS d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'fixed_window'
CROSS JOIN LATERAL aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) AS a
WHERE a.grantee = 0
ORDER BY c.relname, a.privilege_type;

-- Keys of other roles: overrides, an exemption and counters of a superuser.
SELECT fw_define('sec', 5, '1 hour');
SELECT fw_override('sec', 'secret-key@example.com', 100, '1 hour');
SELECT fw_exempt('sec', 'vip@example.com');
SELECT ok FROM fw_limit('sec', 'counted@example.com');
SELECT ok FROM fw_limit('sec-inline', 'inline@example.com', 5, '1 hour');

CREATE ROLE regress_fw_hostile;
CREATE SCHEMA regress_fw_m AUTHORIZATION regress_fw_hostile;
GRANT EXECUTE ON FUNCTION fw_override(text, text, integer, interval, integer) TO regress_fw_hostile;
SET ROLE regress_fw_hostile;
-- A cheap function that prints what it is given (but NULLs, which reveal
-- nothing), and a row of the role's own.
CREATE FUNCTION regress_fw_m.leak(text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001
    AS $$BEGIN IF $1 IS NOT NULL THEN RAISE NOTICE 'leaked: %', $1; END IF; RETURN true; END$$;
SELECT fw_override('sec', 'mine', 7, '1 hour');
SELECT ok FROM fw_limit('sec', 'mine');

-- Only the role's own override reaches the function; the keys of the
-- superuser's neither print nor show.
SELECT name, key, rate, exempt, created_by FROM fw_overrides WHERE regress_fw_m.leak(key);
SELECT name, key, rate, exempt FROM fw_overrides AS o WHERE regress_fw_m.leak(o::text);
SELECT count(*) FROM fw_overrides WHERE regress_fw_m.leak(created_by::text);
-- fw_counters: other roles' keys are NULL, before and after the filter.
SELECT name, key, period FROM fw_counters WHERE name IN ('sec', 'sec-inline') AND regress_fw_m.leak(key)
ORDER BY name, key;
SELECT count(*) > 0 AS rows_seen FROM fw_counters WHERE regress_fw_m.leak(key || ' of ' || name);
SELECT count(*) > 0 AS rows_seen FROM fw_counters AS c
WHERE regress_fw_m.leak(CASE WHEN c.key IS NOT NULL THEN (c.name, c.key, c.period, c.remaining)::text END);
-- Conditions on what the role may see still select.
SELECT name, key FROM fw_counters WHERE name = 'sec' AND key = 'mine';

-- A refund is not for everyone: a role could refund itself to full.
SELECT fw_refund('sec', 'mine', 1);
SELECT fw_refund('sec-inline', 'inline@example.com', 5, '1 hour', cost => 1);
RESET ROLE;
GRANT EXECUTE ON FUNCTION fw_refund(text, text, integer) TO regress_fw_hostile;
SET ROLE regress_fw_hostile;
SELECT fw_refund('sec', 'mine', 1);
RESET ROLE;

DROP SCHEMA regress_fw_m CASCADE;
REVOKE ALL ON FUNCTION fw_refund(text, text, integer) FROM regress_fw_hostile;
REVOKE ALL ON FUNCTION fw_override(text, text, integer, interval, integer) FROM regress_fw_hostile;
SELECT fw_undefine('sec');
SELECT fw_reset('sec-inline') + fw_reset('sec') >= 0 AS reset;
DROP ROLE regress_fw_hostile;
DROP EXTENSION fixed_window;
