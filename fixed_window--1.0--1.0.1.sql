/* fixed_window--1.0--1.0.1.sql: hardening; the API and its answers are unchanged */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.0.1'" to load this file. \quit

-- A counter's window may start or end outside the timestamps PostgreSQL can
-- show; fw_counters shows such bounds as -infinity or infinity instead of
-- failing for every reader.
CREATE FUNCTION fw_displayable(timestamptz)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'fw_displayable'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION fw_displayable(timestamptz) IS
'the timestamp itself, or -infinity / infinity when it lies outside the range PostgreSQL can show (used by fw_counters)';

CREATE OR REPLACE VIEW fw_counters AS
    SELECT s.name, s.key, 'shmem'::text AS storage, s.window_start, s.window_end,
           s.remaining, s.rate, s.capacity
    FROM fw_shmem_counters() AS s
    WHERE s.window_end > fw_now()
    UNION ALL
    SELECT c.name, CASE WHEN fw_may_see_key(c.userid) THEN c.key END, 'table',
           fw_displayable(c.window_start), fw_displayable(c.window_end),
           c.tokens, c.rate, c.capacity
    FROM fw_counter AS c
    WHERE c.window_end > fw_now();

COMMENT ON VIEW fw_counters IS
'one row per counter of this database whose window is current, in either storage; remaining = 0 means throttled now; window bounds beyond the timestamps PostgreSQL can show read as -infinity or infinity; keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats';

-- Limits with no call since the statistics were reset are not listed, in
-- either storage; a row whose name is NULL counts the calls of limits that
-- found no room in shared memory.
CREATE OR REPLACE VIEW fw_stats AS
    SELECT s.name, sum(s.calls)::bigint AS calls, sum(s.allowed)::bigint AS allowed,
           sum(s.denied)::bigint AS denied, max(s.last_denied_at) AS last_denied_at,
           min(s.since) AS since
    FROM (SELECT * FROM fw_shmem_stats()
          UNION ALL
          SELECT c.name, c.calls, c.allowed, c.denied, c.last_denied_at, c.since FROM fw_counter AS c
          UNION ALL
          SELECT t.name, t.calls, t.allowed, t.denied, t.last_denied_at, t.since FROM fw_stat AS t) AS s
    GROUP BY s.name
    HAVING sum(s.calls) > 0;

COMMENT ON VIEW fw_stats IS
'per limit of this database with calls since the last fw_stats_reset(): fw_limit calls, allowed, denied, the last denial, and the time since which it counts; name NULL: calls of limits that found no room for statistics in shared memory; shared-memory counts vanish on restart';

-- Maintenance never waits for, nor deadlocks with, callers: rows that an
-- open transaction holds are skipped, and statistics rows are taken in the
-- order of their names.  Rows are locked first, then matched by their
-- primary key, not their ctid: a row updated by a caller that committed
-- after the statement's snapshot is then still found, in its latest version.
CREATE OR REPLACE FUNCTION fw_counter_deleted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO @extschema@.fw_stat AS s
    SELECT name, sum(calls), sum(allowed), sum(denied), max(last_denied_at), min(since)
    FROM gone
    GROUP BY name
    ORDER BY name
    ON CONFLICT (name) DO UPDATE
        SET calls = s.calls + excluded.calls,
            allowed = s.allowed + excluded.allowed,
            denied = s.denied + excluded.denied,
            last_denied_at = greatest(s.last_denied_at, excluded.last_denied_at),
            since = least(s.since, excluded.since);
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION fw_gc()
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH locked AS (
        SELECT d.name, d.key FROM @extschema@.fw_counter AS d
        WHERE d.fresh_from <= @extschema@.fw_now()
          AND (d.fresh_until IS NULL OR @extschema@.fw_now() < d.fresh_until)
        FOR UPDATE SKIP LOCKED),
    gone AS (
        DELETE FROM @extschema@.fw_counter AS c
        USING locked AS l
        WHERE c.name = l.name AND c.key = l.key
        RETURNING 1)
    SELECT count(*) FROM gone
$$;

COMMENT ON FUNCTION fw_gc() IS
'delete the rows of the table backend that answer as no row would (their window has passed), skipping rows that open transactions hold; returns how many';

CREATE OR REPLACE FUNCTION fw_reset(name text, key text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    removed bigint;
BEGIN
    IF fw_reset.key IS NOT NULL THEN
        -- one key: wait for a transaction that holds its row
        DELETE FROM @extschema@.fw_counter AS c
        WHERE c.name = fw_reset.name AND c.key = fw_reset.key;
    ELSE
        -- every key of the limit: rows that open transactions hold are left
        WITH locked AS (
            SELECT d.name, d.key FROM @extschema@.fw_counter AS d
            WHERE d.name = fw_reset.name
            FOR UPDATE SKIP LOCKED)
        DELETE FROM @extschema@.fw_counter AS c
        USING locked AS l
        WHERE c.name = l.name AND c.key = l.key;
    END IF;
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed + @extschema@.fw_shmem_reset(fw_reset.name, fw_reset.key);
END $$;

COMMENT ON FUNCTION fw_reset(text, text) IS
'remove one counter, or every counter of a limit when key is NULL, in both storages (with key NULL, table rows that open transactions hold are left); returns how many; the next call starts afresh';

CREATE OR REPLACE FUNCTION fw_stats_reset()
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.fw_shmem_stats_reset();
    WITH locked AS (
        SELECT d.name, d.key FROM @extschema@.fw_counter AS d
        FOR NO KEY UPDATE SKIP LOCKED)
    UPDATE @extschema@.fw_counter AS c
        SET calls = 0, allowed = 0, denied = 0, last_denied_at = NULL, since = @extschema@.fw_now()
        FROM locked AS l
        WHERE c.name = l.name AND c.key = l.key;
    DELETE FROM @extschema@.fw_stat AS s
        WHERE s.name = ANY (ARRAY(
            SELECT t.name FROM @extschema@.fw_stat AS t ORDER BY t.name FOR UPDATE));
$$;

COMMENT ON FUNCTION fw_stats_reset() IS
'start the statistics of fw_stats afresh, for this database (table rows that open transactions hold keep their counts)';

COMMENT ON FUNCTION fw_trigger() IS
'BEFORE ... FOR EACH ROW trigger: fw_trigger(name, column, rate, period [, start [, cost]]) limits rows per value of column; raises SQLSTATE RL429 when the limit is exceeded';
