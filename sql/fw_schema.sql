--
-- fw_schema: the extension in a schema of its own (1.3), as the README's
-- installation and PostgREST sections recommend: CREATE EXTENSION
-- fixed_window SCHEMA fw, a schema PostgREST does not expose.  Every part
-- works with fw on no search_path (not even an empty one): inline and named
-- calls, the views, the admin functions, the trigger, the headers, and the
-- PostgREST pre-request recipe called as a web role that has USAGE on fw
-- and nothing else.  In a database of its own; runs on both storages.
--
\set regress_db :DBNAME
CREATE DATABASE regress_fw_schema;
\c regress_fw_schema
\i sql/include/preamble.sql
\set SHOW_CONTEXT never
\set VERBOSITY sqlstate
SET fixed_window.debug_now = '2026-05-01 10:00:43+00';

CREATE SCHEMA fw;
CREATE EXTENSION fixed_window SCHEMA fw;
SELECT n.nspname AS schema, count(*) AS objects
FROM pg_depend AS d
JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'fixed_window'
JOIN pg_proc AS p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
JOIN pg_namespace AS n ON n.oid = p.pronamespace
WHERE d.deptype = 'e'
GROUP BY n.nspname;
SELECT count(*) AS in_public FROM pg_proc WHERE proname LIKE 'fw\_%' AND pronamespace = 'public'::regnamespace;

-- Nothing of it on the search_path, not even public.
SET search_path = '';
SELECT ok, remaining FROM fw.fw_limit('inline', 'k', 3, '1 minute');
SELECT ok, remaining FROM fw.fw_check('inline', 'k', 3, '1 minute');
SELECT fw.fw_define('api', 2, '1 minute');
SELECT fw.fw_define('api', 100, '1 hour', capacity => 150);
SELECT fw.fw_override('api', 'vip', 5, '1 minute');
SELECT fw.fw_exempt('api', 'root');
SELECT ok, remaining FROM fw.fw_limit('api', 'k');
SELECT period, ok, remaining FROM fw.fw_limit_windows('api', 'vip');
SELECT period, ok, remaining FROM fw.fw_check_windows('api', 'root');
SELECT name, key, period, rate, exempt FROM fw.fw_overrides ORDER BY key;
SELECT name, period, rate FROM fw.fw_policies ORDER BY period;
SELECT name, key, period, remaining FROM fw.fw_counters ORDER BY name, key, period;
SELECT name, calls, allowed, denied FROM fw.fw_stats ORDER BY name;
SELECT fw.fw_headers(r, 3, '1 minute', 'inline') AS headers FROM fw.fw_check('inline', 'k', 3, '1 minute') AS r;
SELECT fw.fw_headers('api', ARRAY(SELECT w FROM fw.fw_check_windows('api', 'k') AS w)) AS headers;
SELECT fw.fw_refund('api', 'k', 1);
SELECT fw.fw_reset('inline', 'k');
SELECT fw.fw_unoverride('api', 'vip');
SELECT fw.fw_gc() >= 0 AS gc;

-- The trigger, on a table in another schema.
CREATE SCHEMA app;
CREATE TABLE app.signups (email text, ip text);
CREATE TRIGGER signup_quota BEFORE INSERT ON app.signups
    FOR EACH ROW EXECUTE FUNCTION fw.fw_trigger('signup', 'ip', '2', '1 day');
INSERT INTO app.signups VALUES ('a@example.com', '192.0.2.1'), ('b@example.com', '192.0.2.1');
INSERT INTO app.signups VALUES ('c@example.com', '192.0.2.1');
SELECT count(*) AS signups FROM app.signups;

-- PostgREST.  The web role reaches fw through USAGE alone; the pre-request
-- function lives in a schema PostgREST does not expose either, and names
-- the extension's function with its schema.
RESET search_path;
CREATE ROLE regress_fw_web;
GRANT USAGE ON SCHEMA fw TO regress_fw_web;
CREATE SCHEMA hooks;
GRANT USAGE ON SCHEMA hooks TO regress_fw_web;
SELECT fw.fw_define('postgrest', 2, '1 minute');
CREATE FUNCTION hooks.pre_request() RETURNS void LANGUAGE sql
SET search_path = pg_catalog, pg_temp AS $$
    SELECT fw.fw_postgrest('postgrest',
                           coalesce(current_setting('request.headers', true)::json->>'x-api-key',
                                    current_user));
$$;
-- What PostgREST does for a request: its settings, the role, the hook.
CREATE FUNCTION public.request(api_key text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('request.headers', json_build_object('x-api-key', api_key)::text, true);
    PERFORM set_config('search_path', 'public', true);
    PERFORM hooks.pre_request();
    RETURN '200 ' || current_setting('response.headers');
EXCEPTION WHEN SQLSTATE 'PGRST' THEN
    DECLARE
        detail text;
    BEGIN
        GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
        RETURN (detail::json->>'status') || ' ' || (detail::json->'headers'->>'Retry-After');
    END;
END $$;
SET ROLE regress_fw_web;
SELECT public.request('key-1');
SELECT public.request('key-1');
SELECT public.request('key-1');
-- What the web role cannot do: refund, define, read the tables.
SELECT fw.fw_refund('postgrest', 'key-1', 2);
SELECT fw.fw_define('postgrest', 1000, '1 minute');
SELECT count(*) FROM fw.fw_override;
RESET ROLE;

-- The README's recipe for roles that are not trusted: a SECURITY DEFINER
-- function fixes the limit and keys it by the role the session acts as
-- (fw_acting_role: SET ROLE's, as PostgREST sets it, also inside the
-- function); PUBLIC may no longer spend or read tokens directly.
CREATE FUNCTION app.my_quota() RETURNS fw.fw_result LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
RETURN fw.fw_limit('api', fw.fw_acting_role()::text, 100, '1 minute');
REVOKE EXECUTE ON FUNCTION
    fw.fw_limit(text, text, integer, interval, timestamptz, integer, integer),
    fw.fw_limit(text, text, integer), fw.fw_limit_windows(text, text, integer),
    fw.fw_check(text, text, integer, interval, timestamptz, integer, integer),
    fw.fw_check(text, text, integer), fw.fw_check_windows(text, text, integer),
    fw.fw_postgrest(text, text, integer)
FROM PUBLIC;
GRANT USAGE ON SCHEMA app TO regress_fw_web;
GRANT EXECUTE ON FUNCTION app.my_quota() TO regress_fw_web;
SET ROLE regress_fw_web;
SELECT ok, remaining FROM app.my_quota();
SELECT ok, remaining FROM app.my_quota();
RESET ROLE;
SELECT name, key, remaining FROM fw.fw_counters WHERE key = 'regress_fw_web';
SET ROLE regress_fw_web;
SELECT ok FROM fw.fw_limit('api', 'someone else', 100, '1 minute');
SELECT ok FROM fw.fw_check('api', 'someone else');
RESET ROLE;

\c :regress_db
DROP DATABASE regress_fw_schema;
DROP ROLE regress_fw_web;
