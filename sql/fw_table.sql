--
-- fw_table: what only the table backend does.  Runs on a server without
-- fixed_window preloaded, where storage "auto" means the table, and on one
-- that preloads it with storage set to the table (make installcheck).
-- What happens without preload, whatever the storage, is t/002's.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
\set SHOW_CONTEXT never
SET fixed_window.debug_now = '2026-04-01 12:00:00+00';

-- One row per (name, key), holding its current window.
SELECT ok, remaining FROM fw_limit('t', 'k', 3, '1 minute');
SELECT ok, remaining FROM fw_limit('t', 'k', 3, '1 minute');
SELECT name, key, window_start, window_end, tokens, rate, capacity, fresh_from, fresh_until FROM fw_counter;
-- fw_check creates nothing.
SELECT ok, remaining FROM fw_check('t', 'other', 3, '1 minute');
SELECT count(*) FROM fw_counter WHERE key = 'other';

-- Transactional: what a rolled-back transaction spent is given back.
BEGIN;
SELECT ok, remaining FROM fw_limit('t', 'k', 3, '1 minute');
SELECT ok, remaining FROM fw_limit('t', 'k', 3, '1 minute');
ROLLBACK;
SELECT ok, remaining FROM fw_check('t', 'k', 3, '1 minute', cost => 0);
BEGIN;
SELECT ok, remaining FROM fw_limit('t', 'new', 1, '1 minute');
SAVEPOINT s;
SELECT ok, remaining FROM fw_limit('t', 'new', 1, '1 minute', cost => 0);
ROLLBACK TO SAVEPOINT s;
SELECT ok, retry_after FROM fw_limit('t', 'new', 1, '1 minute');
COMMIT;
SELECT ok, retry_after FROM fw_check('t', 'new', 1, '1 minute');
-- Many calls in one statement see each other.
SELECT count(*) FILTER (WHERE (fw_limit('t', 'bulk', 250, '1 minute')).ok) FROM generate_series(1, 1000);
-- One transaction may create any number of counters (no lock piles up).
SELECT count(*) FILTER (WHERE (fw_limit('t', 'many-' || g, 1, '1 minute')).ok) FROM generate_series(1, 20000) AS g;

-- A read-only transaction may look, not spend.
BEGIN READ ONLY;
SELECT ok FROM fw_check('t', 'k', 3, '1 minute');
SELECT ok FROM fw_limit('t', 'k', 3, '1 minute');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;

-- Rows of past windows do not pile up: fw_gc() deletes those that answer as
-- no row would.  1000 one-off keys with 1-second windows...
SELECT count(*) FROM (SELECT fw_limit('churn', g::text, 5, '1 second') FROM generate_series(1, 1000) AS g) AS s;
SELECT count(*) AS rows FROM fw_counter WHERE name = 'churn';
SELECT fw_gc() AS removed_in_same_window;
SET fixed_window.debug_now = '2026-04-01 12:00:01+00';
SELECT fw_gc() AS removed_next_second;
SELECT count(*) AS rows FROM fw_counter WHERE name = 'churn';
-- ... and they answer as before: a fresh key.
SELECT ok, remaining FROM fw_limit('churn', '1', 5, '1 second');
-- With rollover, a row holding tokens is worth more than no row and stays;
-- an empty one is like no row for exactly the next window.
SELECT ok, remaining FROM fw_limit('roll', 'keeps', 5, '1 second', capacity => 10);
SELECT ok, remaining FROM fw_limit('roll', 'empty', 5, '1 second', cost => 5, capacity => 10);
SET fixed_window.debug_now = '2026-04-01 12:00:02.5+00';
SELECT key FROM fw_counter WHERE name = 'roll' AND fresh_from <= fw_now() AND (fresh_until IS NULL OR fw_now() < fresh_until);
SET fixed_window.debug_now = '2026-04-01 12:00:03.5+00';
SELECT key FROM fw_counter WHERE name = 'roll' AND fresh_from <= fw_now() AND (fresh_until IS NULL OR fw_now() < fresh_until);
SET fixed_window.debug_now = '2026-04-01 12:00:02.5+00';
SELECT fw_gc() AS removed;
SELECT name, key FROM fw_counter WHERE name IN ('roll', 'churn') ORDER BY key;

-- Ordinary roles call the functions, on the extension's own table, and can
-- do nothing else with it.
CREATE ROLE regress_fw_app;
SET ROLE regress_fw_app;
SELECT ok, remaining FROM fw_limit('t', 'app', 2, '1 minute');
SELECT * FROM fw_counter;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO fw_counter VALUES ('t', 'app', now(), now(), 100, 100, 100);
\echo :LAST_ERROR_SQLSTATE
UPDATE fw_counter SET tokens = 100;
\echo :LAST_ERROR_SQLSTATE
DELETE FROM fw_counter;
\echo :LAST_ERROR_SQLSTATE
SELECT fw_gc();
\echo :LAST_ERROR_SQLSTATE
SET fixed_window.storage = shmem;
\echo :LAST_ERROR_SQLSTATE
-- A look-alike table earlier in the search_path changes nothing.
CREATE TEMP TABLE fw_counter (name text, key text, window_start timestamptz, window_end timestamptz,
    tokens integer, rate integer, capacity integer, fresh_from timestamptz, fresh_until timestamptz);
SET search_path = pg_temp, public;
SELECT ok, remaining FROM fw_limit('t', 'app', 2, '1 minute');
SELECT ok, remaining FROM fw_limit('t', 'app', 2, '1 minute');
SELECT count(*) AS temp_rows FROM pg_temp.fw_counter;
DROP TABLE pg_temp.fw_counter;
RESET search_path;
RESET ROLE;
DROP ROLE regress_fw_app;
SELECT tokens FROM fw_counter WHERE key = 'app';

-- 1.3: every index of the table gets the rows the calls write, not only the
-- primary key: one a DBA adds, and the copy REINDEX CONCURRENTLY builds
-- (t/014 runs that under load).  Before, a new row or a non-HOT update was
-- missing from any other index.
CREATE EXTENSION amcheck;
CREATE INDEX regress_fw_by_tokens ON fw_counter (tokens);
CREATE INDEX regress_fw_partial ON fw_counter (lower(key)) WHERE tokens < 3;
SELECT ok, remaining FROM fw_limit('t_idx', 'new-key', 5, '1 minute');
SELECT ok, remaining FROM fw_limit('t_idx', 'new-key', 5, '1 minute', cost => 3);
SELECT ok, remaining FROM fw_limit('t_idx', 'other', 5, '1 minute', cost => 4);
SELECT bt_index_check('regress_fw_by_tokens', true), bt_index_check('regress_fw_partial', true),
       bt_index_check('fw_counter_pkey', true);
SET enable_seqscan = off;
SELECT key FROM fw_counter WHERE tokens < 3 AND lower(key) IN ('new-key', 'other') ORDER BY key;
RESET enable_seqscan;
DROP INDEX regress_fw_by_tokens, regress_fw_partial;
DROP EXTENSION amcheck;

-- 1.3 (review): a table-backend denial is part of the caller's transaction.
-- A key with no counter, rate 5, capacity 10, cost 8: the denial creates
-- the counter that gathers tokens until its retry time.  Committed, the
-- retry time holds.  Rolled back by the error that refuses (fw_postgrest's
-- 429, fw_trigger's RL429, a RAISE), the counter is gone and the same call
-- is refused again then: fw_postgrest sends no Retry-After, and the
-- trigger's hint promises no time.
SET fixed_window.debug_now = '2026-05-01 10:00:10+00';
SELECT fw_define('t_big', 5, '1 minute', capacity => 10);
SELECT fw_storage_in_use();
SELECT ok, retry_after FROM fw_limit('t_big', 'committed', 8);
CREATE FUNCTION postgrest_answer(name text, key text, cost integer) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM fw_postgrest(name, key, cost);
    RETURN '200';
EXCEPTION WHEN SQLSTATE 'PGRST' THEN
    DECLARE
        detail text;
    BEGIN
        GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
        RETURN (detail::json->>'status') || ' Retry-After: '
               || coalesce(detail::json->'headers'->>'Retry-After', 'none');
    END;
END $$;
SELECT postgrest_answer('t_big', 'rolled-back', 8);
CREATE TABLE t_uploads (owner text);
CREATE TRIGGER t_upload_quota BEFORE INSERT ON t_uploads
    FOR EACH ROW EXECUTE FUNCTION fw_trigger('t_big', 'owner', '8');
INSERT INTO t_uploads VALUES ('rolled-back-too');
SELECT key FROM fw_counters WHERE name = 't_big' ORDER BY key;
SET fixed_window.debug_now = '2026-05-01 10:01:00+00';
SELECT ok FROM fw_limit('t_big', 'committed', 8);
SELECT postgrest_answer('t_big', 'rolled-back', 8);
INSERT INTO t_uploads VALUES ('rolled-back-too');
-- a cost within the rate is refused only by a counter that exists, and the
-- rollback leaves it: the retry time holds through the error
SET fixed_window.debug_now = '2026-05-01 10:01:10+00';
SELECT ok FROM fw_limit('t_big', 'spent', 5);
SELECT postgrest_answer('t_big', 'spent', 1);
SET fixed_window.debug_now = '2026-05-01 10:02:00+00';
SELECT postgrest_answer('t_big', 'spent', 1) LIKE '200%' AS allowed_then;
DROP TABLE t_uploads;
DROP FUNCTION postgrest_answer(text, text, integer);
SELECT fw_undefine('t_big');

DROP EXTENSION fixed_window;
-- Without the extension in the database, the table backend says so.
CREATE TYPE fw_result AS (ok boolean, retry_after interval, remaining integer, reset_after interval);
CREATE FUNCTION fw_limit_orphan(text, text, integer, interval, timestamptz, integer, integer)
RETURNS fw_result AS 'fixed_window', 'fw_limit' LANGUAGE C;
SELECT * FROM fw_limit_orphan('t', 'k', 1, '1 minute', '1970-01-01+00', 1, NULL);
\echo :LAST_ERROR_SQLSTATE
DROP FUNCTION fw_limit_orphan;
DROP TYPE fw_result;
