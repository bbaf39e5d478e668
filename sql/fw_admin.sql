--
-- fw_admin: what admins see and do in psql, the ready-made trigger, and
-- privileges.  Runs on both storages.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
\set SHOW_CONTEXT never
SET fixed_window.debug_now = '2026-06-01 12:00:30+00';

-- Who is throttled right now?
SELECT count(*) FILTER (WHERE (fw_limit('admin', 'alice', 2, '1 minute')).ok) AS alice_allowed FROM generate_series(1, 3);
SELECT (fw_limit('admin', 'bob', 2, '1 minute')).ok AS bob_allowed;
SELECT (fw_limit('admin', 'carol', 5, '1 hour', cost => 5)).ok AS carol_allowed;
SELECT name, key, window_start, window_end, remaining, rate, capacity
FROM fw_counters WHERE name = 'admin' ORDER BY key;
SELECT key FROM fw_counters WHERE name = 'admin' AND remaining = 0 ORDER BY key;
SELECT count(DISTINCT storage) AS one_storage FROM fw_counters;
-- Per limit: calls, allowed, denied, the last denial and since when.
SELECT name, calls, allowed, denied, last_denied_at, since FROM fw_stats WHERE name = 'admin';
-- fw_check answers without counting.
SELECT ok FROM fw_check('admin', 'alice', 2, '1 minute');
SELECT calls FROM fw_stats WHERE name = 'admin';

-- A counter whose window has passed is not live: it would grant a full window.
SET fixed_window.debug_now = '2026-06-01 12:01:30+00';
SELECT key FROM fw_counters WHERE name = 'admin' ORDER BY key;

-- Resets: one counter, then every counter of a limit.
SET fixed_window.debug_now = '2026-06-01 12:00:40+00';
SELECT fw_reset('admin', 'alice') AS removed;
SELECT ok, remaining FROM fw_limit('admin', 'alice', 2, '1 minute');
SELECT fw_reset('admin') AS removed;
SELECT fw_reset('admin') AS removed_again;
SELECT count(*) FROM fw_counters WHERE name = 'admin';
SELECT fw_reset(NULL);
\echo :LAST_ERROR_SQLSTATE
-- Resetting counters keeps the statistics; fw_stats_reset() starts them afresh.
SELECT name, calls, allowed, denied, last_denied_at FROM fw_stats WHERE name = 'admin';
SET fixed_window.debug_now = '2026-06-01 12:00:50+00';
SELECT fw_stats_reset();
SELECT name, calls, allowed, denied, last_denied_at, since FROM fw_stats WHERE name = 'admin';
SET fixed_window.debug_now = '2026-06-01 12:00:40+00';

-- A trigger: at most 2 signups per IP address per day.
CREATE TABLE signups (id serial PRIMARY KEY, email text NOT NULL, ip inet);
CREATE TRIGGER signup_quota BEFORE INSERT ON signups
    FOR EACH ROW EXECUTE FUNCTION fw_trigger('signup', 'ip', '2', '1 day');
INSERT INTO signups (email, ip) VALUES ('a@example.com', '192.0.2.1');
INSERT INTO signups (email, ip) VALUES ('b@example.com', '192.0.2.1');
INSERT INTO signups (email, ip) VALUES ('c@example.com', '192.0.2.1');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO signups (email, ip) VALUES ('d@example.com', '192.0.2.2');
SELECT email, ip FROM signups ORDER BY id;
-- Applications catch it by its SQLSTATE.
DO $$
BEGIN
    INSERT INTO signups (email, ip) VALUES ('e@example.com', '192.0.2.1');
EXCEPTION WHEN SQLSTATE 'RL429' THEN
    RAISE NOTICE 'caught RL429: %', SQLERRM;
END $$;
-- Optional start and cost: a row costs 2 of 3 per hour.
CREATE TABLE uploads (id serial, owner text);
CREATE TRIGGER upload_quota BEFORE INSERT ON uploads
    FOR EACH ROW EXECUTE FUNCTION fw_trigger('upload', 'owner', '3', '1 hour', '2026-01-01 00:30+00', '2');
INSERT INTO uploads (owner) VALUES ('u1');
INSERT INTO uploads (owner) VALUES ('u1');
\echo :LAST_ERROR_SQLSTATE
-- Bad trigger arguments are reported at the first row.
CREATE TABLE t (c text);
CREATE TRIGGER bad_column BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION fw_trigger('x', 'nope', '5', '1 day');
INSERT INTO t VALUES ('v');
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad_column ON t;
CREATE TRIGGER bad_rate BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION fw_trigger('x', 'c', 'five', '1 day');
INSERT INTO t VALUES ('v');
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad_rate ON t;
CREATE TRIGGER bad_period BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION fw_trigger('x', 'c', '5', 'daily');
\set SHOW_CONTEXT errors
INSERT INTO t VALUES ('v');
\set SHOW_CONTEXT never
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER bad_period ON t;
CREATE TRIGGER zero_rate BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION fw_trigger('x', 'c', '0', '1 day');
INSERT INTO t VALUES ('v');
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER zero_rate ON t;
CREATE TRIGGER too_few BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION fw_trigger('x');
INSERT INTO t VALUES ('v');
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER too_few ON t;
CREATE TRIGGER after_row AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION fw_trigger('x', 'c', '5', '1 day');
INSERT INTO t VALUES ('v');
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER after_row ON t;
CREATE TRIGGER per_statement BEFORE INSERT ON t FOR EACH STATEMENT EXECUTE FUNCTION fw_trigger('x', 'c', '5', '1 day');
INSERT INTO t VALUES ('v');
\echo :LAST_ERROR_SQLSTATE
DROP TRIGGER per_statement ON t;
CREATE TRIGGER null_key BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION fw_trigger('x', 'c', '5', '1 day');
INSERT INTO t VALUES (NULL);
\echo :LAST_ERROR_SQLSTATE
DROP TABLE t;
-- Keys and start are read with fixed settings: a session's DateStyle cannot
-- make one value count as another key, and a moving start is refused.
CREATE TABLE visits (day date);
CREATE TRIGGER visit_quota BEFORE INSERT ON visits
    FOR EACH ROW EXECUTE FUNCTION fw_trigger('visit', 'day', '1', '1 day');
INSERT INTO visits VALUES ('2026-06-01');
SET DateStyle = 'SQL, DMY';
INSERT INTO visits VALUES ('01/06/2026');
\echo :LAST_ERROR_SQLSTATE
SET DateStyle = 'ISO, YMD';
CREATE TRIGGER moving_start BEFORE INSERT ON visits
    FOR EACH ROW EXECUTE FUNCTION fw_trigger('visit2', 'day', '1', '1 day', ' Now ');
INSERT INTO visits VALUES ('2026-06-02');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE visits;
SELECT fw_trigger();
\echo :LAST_ERROR_SQLSTATE

-- Privileges: any role may call fw_limit, fw_check and insert through the
-- trigger; resets are for admins; keys of other roles stay hidden except
-- from superusers and members of pg_read_all_stats.
CREATE ROLE regress_fw_app;
CREATE ROLE regress_fw_other;
CREATE ROLE regress_fw_auditor IN ROLE pg_read_all_stats;
GRANT INSERT ON signups TO regress_fw_app;
GRANT USAGE ON SEQUENCE signups_id_seq TO regress_fw_app;
SET ROLE regress_fw_app;
SELECT ok FROM fw_limit('priv', 'app@example.com', 5, '1 minute');
SELECT ok FROM fw_check('priv', 'app@example.com', 5, '1 minute');
INSERT INTO signups (email, ip) VALUES ('f@example.com', '192.0.2.3');
SELECT name, key FROM fw_counters WHERE name = 'priv';
SELECT fw_reset('priv');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_gc();
\echo :LAST_ERROR_SQLSTATE
SELECT fw_stats_reset();
\echo :LAST_ERROR_SQLSTATE
SELECT name, calls, allowed, denied FROM fw_stats WHERE name = 'priv';
SET fixed_window.debug_now = '2030-01-01 00:00+00';
\echo :LAST_ERROR_SQLSTATE
SET fixed_window.storage = 'table';
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE regress_fw_other;
SELECT name, key FROM fw_counters WHERE name = 'priv';
RESET ROLE;
SET ROLE regress_fw_auditor;
SELECT name, key FROM fw_counters WHERE name = 'priv';
RESET ROLE;
SELECT name, key FROM fw_counters WHERE name = 'priv';
SELECT fw_reset('priv') AS removed;
REVOKE ALL ON signups FROM regress_fw_app;
REVOKE ALL ON SEQUENCE signups_id_seq FROM regress_fw_app;
DROP ROLE regress_fw_app;
DROP ROLE regress_fw_other;
DROP ROLE regress_fw_auditor;
DROP TABLE signups, uploads;

-- Every object of the extension explains itself in \dx+ and \df+.  Not
-- the types PostgreSQL makes for another object, which carries the comment:
-- a table's or view's row type, and any type's array type.  Since
-- PostgreSQL 17 (commit e5bc945) these are members of the extension too;
-- before, they were not.  This is the one place a test differs by version.
SELECT pg_describe_object(d.classid, d.objid, 0) AS without_comment
FROM pg_depend AS d
WHERE d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'fixed_window')
  AND d.deptype = 'e'
  AND obj_description(d.objid, (SELECT relname FROM pg_class WHERE oid = d.classid)) IS NULL
  AND NOT (d.classid = 'pg_type'::regclass AND EXISTS (
      SELECT FROM pg_type AS t
      WHERE t.oid = d.objid
        AND (EXISTS (SELECT FROM pg_class AS c WHERE c.oid = t.typrelid AND c.relkind <> 'c')
             OR EXISTS (SELECT FROM pg_type AS e WHERE e.typarray = t.oid))));

DROP EXTENSION fixed_window;
