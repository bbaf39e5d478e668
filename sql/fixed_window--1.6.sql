/* fixed_window--1.6.sql: built by make from fixed_window--1.0.sql fixed_window--1.0--1.0.1.sql fixed_window--1.0.1--1.1.sql fixed_window--1.1--1.2.sql fixed_window--1.2--1.2.1.sql fixed_window--1.2.1--1.3.sql fixed_window--1.3--1.4.sql fixed_window--1.4--1.5.sql fixed_window--1.5--1.6.sql */

-- from fixed_window--1.0.sql
/* fixed_window--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION fixed_window" to load this file. \quit

CREATE TYPE fw_result AS (
    ok boolean,
    retry_after interval,
    remaining integer,
    reset_after interval
);

COMMENT ON TYPE fw_result IS
'answer of fw_limit and fw_check: ok, retry_after (NULL when ok), tokens remaining, time until the window ends';

CREATE FUNCTION fw_limit(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS fw_result
AS 'MODULE_PATHNAME', 'fw_limit'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_limit(text, text, integer, interval, timestamptz, integer, integer) IS
'spend cost tokens of limit name for key if the current window holds them; rate tokens per period, unused ones kept up to capacity';

CREATE FUNCTION fw_check(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS fw_result
AS 'MODULE_PATHNAME', 'fw_check'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_check(text, text, integer, interval, timestamptz, integer, integer) IS
'what fw_limit would answer now, without spending tokens or creating a counter';

-- The table backend: one row per (name, key) of this database, with the
-- state of its current window.  Unlogged: fast, not replicated, emptied by
-- a crash.  Ordinary roles get no privilege on it; fw_limit and fw_check
-- reach it from C by OID.
CREATE UNLOGGED TABLE fw_counter (
    name text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    window_start timestamptz NOT NULL,
    window_end timestamptz NOT NULL,
    tokens integer NOT NULL,
    rate integer NOT NULL,
    capacity integer NOT NULL,
    fresh_from timestamptz,
    fresh_until timestamptz,
    userid oid NOT NULL,
    calls bigint NOT NULL,
    allowed bigint NOT NULL,
    denied bigint NOT NULL,
    last_denied_at timestamptz,
    since timestamptz NOT NULL,
    CONSTRAINT fw_counter_pkey PRIMARY KEY (name, key)
);
REVOKE ALL ON fw_counter FROM PUBLIC;

COMMENT ON TABLE fw_counter IS
'counters of the table backend (fixed_window.storage = table, or auto without preload); fresh_from/fresh_until: when a row answers as no row would, so that fw_gc() may delete it; userid: role of the last fw_limit call; calls .. since: statistics of the row, added up by fw_stats';

-- Statistics of deleted table rows, per limit.
CREATE UNLOGGED TABLE fw_stat (
    name text COLLATE "C" PRIMARY KEY,
    calls bigint NOT NULL,
    allowed bigint NOT NULL,
    denied bigint NOT NULL,
    last_denied_at timestamptz,
    since timestamptz NOT NULL
);
REVOKE ALL ON fw_stat FROM PUBLIC;

COMMENT ON TABLE fw_stat IS
'statistics of the table backend''s deleted rows, per limit; part of fw_stats';

-- Whatever deletes counter rows (fw_gc, fw_reset, an admin's DELETE) adds
-- their statistics to fw_stat first.
CREATE FUNCTION fw_counter_deleted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO @extschema@.fw_stat AS s
    SELECT name, sum(calls), sum(allowed), sum(denied), max(last_denied_at), min(since)
    FROM gone
    GROUP BY name
    ON CONFLICT (name) DO UPDATE
        SET calls = s.calls + excluded.calls,
            allowed = s.allowed + excluded.allowed,
            denied = s.denied + excluded.denied,
            last_denied_at = greatest(s.last_denied_at, excluded.last_denied_at),
            since = least(s.since, excluded.since);
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION fw_counter_deleted() FROM PUBLIC;

COMMENT ON FUNCTION fw_counter_deleted() IS
'trigger of fw_counter: keeps the statistics of deleted counter rows in fw_stat';

CREATE TRIGGER fw_counter_keep_stats
    AFTER DELETE ON fw_counter
    REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION fw_counter_deleted();

CREATE FUNCTION fw_now()
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'fw_now'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION fw_now() IS
'the time fixed_window judges calls at: the real clock, or fixed_window.debug_now';

CREATE FUNCTION fw_gc()
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM @extschema@.fw_counter AS c
        WHERE c.fresh_from <= @extschema@.fw_now()
          AND (c.fresh_until IS NULL OR @extschema@.fw_now() < c.fresh_until)
        RETURNING 1)
    SELECT count(*) FROM gone
$$;
REVOKE ALL ON FUNCTION fw_gc() FROM PUBLIC;

COMMENT ON FUNCTION fw_gc() IS
'delete the rows of the table backend that answer as no row would (their window has passed); returns how many';

-- Administration: who is limited now, resets, a ready-made trigger.

CREATE FUNCTION fw_shmem_counters(
    OUT name text, OUT key text, OUT window_start timestamptz, OUT window_end timestamptz,
    OUT remaining integer, OUT rate integer, OUT capacity integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fw_shmem_counters'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_shmem_counters() IS
'counters of this database in shared memory; keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats';

CREATE FUNCTION fw_may_see_key(userid oid)
RETURNS boolean
AS 'MODULE_PATHNAME', 'fw_may_see_key'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION fw_may_see_key(oid) IS
'whether the current role may see the keys of counters last used by the given role: its own, or any for superusers and members of pg_read_all_stats';

CREATE VIEW fw_counters AS
    SELECT s.name, s.key, 'shmem'::text AS storage, s.window_start, s.window_end,
           s.remaining, s.rate, s.capacity
    FROM fw_shmem_counters() AS s
    WHERE s.window_end > fw_now()
    UNION ALL
    SELECT c.name, CASE WHEN fw_may_see_key(c.userid) THEN c.key END, 'table',
           c.window_start, c.window_end, c.tokens, c.rate, c.capacity
    FROM fw_counter AS c
    WHERE c.window_end > fw_now();
GRANT SELECT ON fw_counters TO PUBLIC;

COMMENT ON VIEW fw_counters IS
'one row per counter of this database whose window is current, in either storage; remaining = 0 means throttled now; keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats';

CREATE FUNCTION fw_shmem_reset(name text, key text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'fw_shmem_reset'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION fw_shmem_reset(text, text) FROM PUBLIC;

COMMENT ON FUNCTION fw_shmem_reset(text, text) IS
'remove counters of this database from shared memory: one, or every counter of the name when key is NULL (used by fw_reset)';

CREATE FUNCTION fw_reset(name text, key text DEFAULT NULL)
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM @extschema@.fw_counter AS c
        WHERE c.name = $1 AND ($2 IS NULL OR c.key = $2)
        RETURNING 1)
    SELECT @extschema@.fw_shmem_reset($1, $2) + (SELECT count(*) FROM gone)
$$;
REVOKE ALL ON FUNCTION fw_reset(text, text) FROM PUBLIC;

COMMENT ON FUNCTION fw_reset(text, text) IS
'remove one counter, or every counter of a limit when key is NULL, in both storages; returns how many; the next call starts afresh';

CREATE FUNCTION fw_trigger()
RETURNS trigger
AS 'MODULE_PATHNAME', 'fw_trigger'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_trigger() IS
'BEFORE ... FOR EACH ROW trigger: fw_trigger(name, column, rate, period [, start [, cost]]) limits rows per value of column; raises SQLSTATE FW429 when the limit is exceeded';

CREATE FUNCTION fw_shmem_stats(
    OUT name text, OUT calls bigint, OUT allowed bigint, OUT denied bigint,
    OUT last_denied_at timestamptz, OUT since timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fw_shmem_stats'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_shmem_stats() IS
'statistics of this database''s limits counted in shared memory (used by fw_stats)';

CREATE VIEW fw_stats AS
    SELECT s.name, sum(s.calls)::bigint AS calls, sum(s.allowed)::bigint AS allowed,
           sum(s.denied)::bigint AS denied, max(s.last_denied_at) AS last_denied_at,
           min(s.since) AS since
    FROM (SELECT * FROM fw_shmem_stats()
          UNION ALL
          SELECT c.name, c.calls, c.allowed, c.denied, c.last_denied_at, c.since FROM fw_counter AS c
          UNION ALL
          SELECT t.name, t.calls, t.allowed, t.denied, t.last_denied_at, t.since FROM fw_stat AS t) AS s
    GROUP BY s.name;
GRANT SELECT ON fw_stats TO PUBLIC;

COMMENT ON VIEW fw_stats IS
'per limit of this database: fw_limit calls, allowed, denied, the last denial, and the time since which it counts; shared-memory counts vanish on restart';

CREATE FUNCTION fw_shmem_stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'fw_shmem_stats_reset'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION fw_shmem_stats_reset() FROM PUBLIC;

COMMENT ON FUNCTION fw_shmem_stats_reset() IS
'zero the statistics of this database in shared memory (used by fw_stats_reset)';

CREATE FUNCTION fw_stats_reset()
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.fw_shmem_stats_reset();
    UPDATE @extschema@.fw_counter
        SET calls = 0, allowed = 0, denied = 0, last_denied_at = NULL, since = @extschema@.fw_now();
    UPDATE @extschema@.fw_stat
        SET calls = 0, allowed = 0, denied = 0, last_denied_at = NULL, since = @extschema@.fw_now();
$$;
REVOKE ALL ON FUNCTION fw_stats_reset() FROM PUBLIC;

COMMENT ON FUNCTION fw_stats_reset() IS
'start the statistics of fw_stats afresh, for this database';

-- from fixed_window--1.0--1.0.1.sql
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

-- from fixed_window--1.0.1--1.1.sql
/* fixed_window--1.0.1--1.1.sql: named policies; the inline API and its answers are unchanged */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.1'" to load this file. \quit

-- A window of a policy has counters of its own: the table's rows are told
-- apart by the identifier of the window's period ('' for inline calls),
-- and count the calls a shadow window would have denied.
ALTER TABLE fw_counter
    ADD COLUMN period_id text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN shadow_denied bigint NOT NULL DEFAULT 0;
ALTER TABLE fw_counter
    DROP CONSTRAINT fw_counter_pkey,
    ADD CONSTRAINT fw_counter_pkey PRIMARY KEY (name, key, period_id);
ALTER TABLE fw_stat
    ADD COLUMN shadow_denied bigint NOT NULL DEFAULT 0;

COMMENT ON TABLE fw_counter IS
'counters of the table backend (fixed_window.storage = table, or auto without preload); period_id: the window of a policy, '''' for inline calls; fresh_from/fresh_until: when a row answers as no row would, so that fw_gc() may delete it; userid: role of the last fw_limit call; calls .. since, shadow_denied: statistics of the row, added up by fw_stats';

CREATE OR REPLACE FUNCTION fw_counter_deleted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO @extschema@.fw_stat AS s
    SELECT name, sum(calls), sum(allowed), sum(denied), max(last_denied_at), min(since),
           sum(shadow_denied)
    FROM gone
    GROUP BY name
    ORDER BY name
    ON CONFLICT (name) DO UPDATE
        SET calls = s.calls + excluded.calls,
            allowed = s.allowed + excluded.allowed,
            denied = s.denied + excluded.denied,
            last_denied_at = greatest(s.last_denied_at, excluded.last_denied_at),
            since = least(s.since, excluded.since),
            shadow_denied = s.shadow_denied + excluded.shadow_denied;
    RETURN NULL;
END $$;

-- Maintenance matches rows by the whole primary key, period_id included.
CREATE OR REPLACE FUNCTION fw_gc()
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH locked AS (
        SELECT d.name, d.key, d.period_id FROM @extschema@.fw_counter AS d
        WHERE d.fresh_from <= @extschema@.fw_now()
          AND (d.fresh_until IS NULL OR @extschema@.fw_now() < d.fresh_until)
        FOR UPDATE SKIP LOCKED),
    gone AS (
        DELETE FROM @extschema@.fw_counter AS c
        USING locked AS l
        WHERE c.name = l.name AND c.key = l.key AND c.period_id = l.period_id
        RETURNING 1)
    SELECT count(*) FROM gone
$$;

CREATE OR REPLACE FUNCTION fw_reset(name text, key text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    removed bigint;
BEGIN
    IF fw_reset.key IS NOT NULL THEN
        -- one key: wait for a transaction that holds its rows
        DELETE FROM @extschema@.fw_counter AS c
        WHERE c.name = fw_reset.name AND c.key = fw_reset.key;
    ELSE
        -- every key of the limit: rows that open transactions hold are left
        WITH locked AS (
            SELECT d.name, d.key, d.period_id FROM @extschema@.fw_counter AS d
            WHERE d.name = fw_reset.name
            FOR UPDATE SKIP LOCKED)
        DELETE FROM @extschema@.fw_counter AS c
        USING locked AS l
        WHERE c.name = l.name AND c.key = l.key AND c.period_id = l.period_id;
    END IF;
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed + @extschema@.fw_shmem_reset(fw_reset.name, fw_reset.key);
END $$;

COMMENT ON FUNCTION fw_reset(text, text) IS
'remove the counters of one key (inline and of every window of the policy), or every counter of a limit or policy when key is NULL, in both storages (with key NULL, table rows that open transactions hold are left); returns how many; the next call starts afresh';

CREATE OR REPLACE FUNCTION fw_stats_reset()
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.fw_shmem_stats_reset();
    WITH locked AS (
        SELECT d.name, d.key, d.period_id FROM @extschema@.fw_counter AS d
        FOR NO KEY UPDATE SKIP LOCKED)
    UPDATE @extschema@.fw_counter AS c
        SET calls = 0, allowed = 0, denied = 0, last_denied_at = NULL, shadow_denied = 0,
            since = @extschema@.fw_now()
        FROM locked AS l
        WHERE c.name = l.name AND c.key = l.key AND c.period_id = l.period_id;
    DELETE FROM @extschema@.fw_stat AS s
        WHERE s.name = ANY (ARRAY(
            SELECT t.name FROM @extschema@.fw_stat AS t ORDER BY t.name FOR UPDATE));
$$;

-- Counters, with the policy window each belongs to.
DROP VIEW fw_counters;
DROP FUNCTION fw_shmem_counters();

CREATE FUNCTION fw_shmem_counters(
    OUT name text, OUT key text, OUT window_start timestamptz, OUT window_end timestamptz,
    OUT remaining integer, OUT rate integer, OUT capacity integer, OUT period_id text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fw_shmem_counters'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_shmem_counters() IS
'counters of this database in shared memory; keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats; period_id: the policy window, NULL for inline calls';

CREATE VIEW fw_counters AS
    SELECT s.name, s.key, 'shmem'::text AS storage, s.window_start, s.window_end,
           s.remaining, s.rate, s.capacity, s.period_id::interval AS period
    FROM fw_shmem_counters() AS s
    WHERE s.window_end > fw_now()
    UNION ALL
    SELECT c.name, CASE WHEN fw_may_see_key(c.userid) THEN c.key END, 'table',
           fw_displayable(c.window_start), fw_displayable(c.window_end),
           c.tokens, c.rate, c.capacity, nullif(c.period_id, '')::interval
    FROM fw_counter AS c
    WHERE c.window_end > fw_now();
GRANT SELECT ON fw_counters TO PUBLIC;

COMMENT ON VIEW fw_counters IS
'one row per counter of this database whose window is current, in either storage; remaining = 0 means throttled now; period: the window of a policy the counter belongs to, NULL for inline calls; window bounds beyond the timestamps PostgreSQL can show read as -infinity or infinity; keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats';

-- Statistics, with the calls shadow windows would have denied.
DROP VIEW fw_stats;
DROP FUNCTION fw_shmem_stats();

CREATE FUNCTION fw_shmem_stats(
    OUT name text, OUT calls bigint, OUT allowed bigint, OUT denied bigint,
    OUT last_denied_at timestamptz, OUT since timestamptz, OUT shadow_denied bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fw_shmem_stats'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_shmem_stats() IS
'statistics of this database''s limits and policies counted in shared memory (used by fw_stats)';

CREATE VIEW fw_stats AS
    SELECT s.name, sum(s.calls)::bigint AS calls, sum(s.allowed)::bigint AS allowed,
           sum(s.denied)::bigint AS denied, max(s.last_denied_at) AS last_denied_at,
           min(s.since) AS since, sum(s.shadow_denied)::bigint AS shadow_denied
    FROM (SELECT * FROM fw_shmem_stats()
          UNION ALL
          SELECT c.name, c.calls, c.allowed, c.denied, c.last_denied_at, c.since, c.shadow_denied
          FROM fw_counter AS c
          UNION ALL
          SELECT t.name, t.calls, t.allowed, t.denied, t.last_denied_at, t.since, t.shadow_denied
          FROM fw_stat AS t) AS s
    GROUP BY s.name
    HAVING sum(s.calls) > 0;
GRANT SELECT ON fw_stats TO PUBLIC;

COMMENT ON VIEW fw_stats IS
'per limit or policy of this database with calls since the last fw_stats_reset(): fw_limit calls (a policy''s call counts once), allowed, denied, the last denial, the time since which it counts, and shadow_denied: allowed calls that a shadow window would have denied; name NULL: calls of limits that found no room for statistics in shared memory; shared-memory counts vanish on restart';

-- Policies: limits defined once, as data.

CREATE FUNCTION fw_window_id(name text, key text, rate integer, period interval,
                             start timestamptz, capacity integer)
RETURNS text
AS 'MODULE_PATHNAME', 'fw_window_id'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION fw_window_id(text, text, integer, interval, timestamptz, integer) IS
'check a policy name, a key (may be NULL) and one window''s parameters as fw_limit does, and return the identifier of the period (ISO 8601, one per window length)';

CREATE TABLE fw_policy (
    name text COLLATE "C" NOT NULL,
    period interval NOT NULL,
    period_id text COLLATE "C" NOT NULL,
    rate integer NOT NULL,
    capacity integer NOT NULL,
    start timestamptz,
    shadow boolean NOT NULL,
    comment text,
    CONSTRAINT fw_policy_pkey PRIMARY KEY (name, period_id),
    CONSTRAINT fw_policy_window_check
        CHECK (period_id = fw_window_id(name, NULL, rate, period, start, capacity))
);
REVOKE ALL ON fw_policy FROM PUBLIC;

COMMENT ON TABLE fw_policy IS
'windows of named policies, one row per (name, period); written by fw_define and fw_undefine; start NULL: each key''s own phase';

CREATE TABLE fw_override (
    name text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    period_id text COLLATE "C" NOT NULL,
    period interval,
    rate integer,
    capacity integer,
    created_by name NOT NULL,
    CONSTRAINT fw_override_pkey PRIMARY KEY (name, key, period_id),
    CONSTRAINT fw_override_window_check CHECK (
        CASE WHEN period IS NULL
             THEN period_id = '' AND rate IS NULL AND capacity IS NULL
                  AND fw_window_id(name, key, 1, '1 second', NULL, NULL) IS NOT NULL
             ELSE period_id = fw_window_id(name, key, rate, period, NULL, capacity) END)
);
REVOKE ALL ON fw_override FROM PUBLIC;

COMMENT ON TABLE fw_override IS
'one key''s own rate for a window of a policy, or (period NULL) its exemption from the policy; written by fw_override, fw_exempt and fw_unoverride; created_by: the role that wrote it (its SET ROLE, else its login role)';

-- Definitions are kept by pg_dump, replicated and crash-safe.
SELECT pg_catalog.pg_extension_config_dump('fw_policy', '');
SELECT pg_catalog.pg_extension_config_dump('fw_override', '');

CREATE FUNCTION fw_policy_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'fw_policy_changed'
LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION fw_policy_changed() FROM PUBLIC;

COMMENT ON FUNCTION fw_policy_changed() IS
'trigger of fw_policy and fw_override: every session drops its cached definitions when the change commits';

CREATE TRIGGER fw_policy_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON fw_policy
    FOR EACH STATEMENT EXECUTE FUNCTION fw_policy_changed();
CREATE TRIGGER fw_override_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON fw_override
    FOR EACH STATEMENT EXECUTE FUNCTION fw_policy_changed();

CREATE FUNCTION fw_acting_role()
RETURNS name
AS 'MODULE_PATHNAME', 'fw_acting_role'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION fw_acting_role() IS
'the role the session acts as (SET ROLE, else its login role), also inside SECURITY DEFINER functions: recorded as the creator of overrides';

CREATE FUNCTION fw_define(
    name text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    capacity integer DEFAULT NULL,
    shadow boolean DEFAULT false,
    comment text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := @extschema@.fw_window_id(fw_define.name, NULL, fw_define.rate, fw_define.period,
                                        fw_define.start, fw_define.capacity);
BEGIN
    IF fw_define.shadow IS NULL THEN
        RAISE EXCEPTION 'argument "shadow" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- one definer at a time: the count of windows stays true
    LOCK TABLE @extschema@.fw_policy IN SHARE ROW EXCLUSIVE MODE;
    IF (SELECT count(*) FROM @extschema@.fw_policy AS p
        WHERE p.name = fw_define.name AND p.period_id <> id) >= 8 THEN
        RAISE EXCEPTION 'rate limit policy "%" already has 8 windows', fw_define.name
            USING ERRCODE = 'program_limit_exceeded',
                  DETAIL = 'A policy may have at most 8 windows of distinct periods.',
                  HINT = 'Remove a window with fw_undefine(name, period), or replace one by defining its period again.';
    END IF;
    INSERT INTO @extschema@.fw_policy AS p
    VALUES (fw_define.name, fw_define.period, id, fw_define.rate,
            coalesce(fw_define.capacity, fw_define.rate), fw_define.start, fw_define.shadow,
            fw_define.comment)
    ON CONFLICT ON CONSTRAINT fw_policy_pkey DO UPDATE
        SET period = excluded.period, rate = excluded.rate, capacity = excluded.capacity,
            start = excluded.start, shadow = excluded.shadow, comment = excluded.comment;
END $$;
REVOKE ALL ON FUNCTION fw_define(text, integer, interval, timestamptz, integer, boolean, text) FROM PUBLIC;

COMMENT ON FUNCTION fw_define(text, integer, interval, timestamptz, integer, boolean, text) IS
'create or replace the window period of policy name: rate tokens per period, kept up to capacity; shadow: decide and spend but never deny; superusers and roles granted EXECUTE';

CREATE FUNCTION fw_undefine(name text, period interval DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := CASE WHEN fw_undefine.period IS NOT NULL
                    THEN @extschema@.fw_window_id(fw_undefine.name, NULL, 1, fw_undefine.period, NULL, NULL) END;
    removed integer;
BEGIN
    IF fw_undefine.name IS NULL THEN
        RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM @extschema@.fw_policy AS p
    WHERE p.name = fw_undefine.name AND (id IS NULL OR p.period_id = id);
    GET DIAGNOSTICS removed = ROW_COUNT;
    IF removed = 0 THEN
        RAISE EXCEPTION 'rate limit policy "%" has no window %', fw_undefine.name,
            coalesce('of ' || fw_undefine.period::text, 'at all')
            USING ERRCODE = 'undefined_object',
                  HINT = 'fw_policies lists the policies and their windows.';
    END IF;
    -- overrides of what was removed go with it; with the whole policy, exemptions too
    DELETE FROM @extschema@.fw_override AS o
    WHERE o.name = fw_undefine.name AND (id IS NULL OR o.period_id = id);
    RETURN removed;
END $$;
REVOKE ALL ON FUNCTION fw_undefine(text, interval) FROM PUBLIC;

COMMENT ON FUNCTION fw_undefine(text, interval) IS
'remove one window of a policy, or the whole policy when period is NULL, with their overrides; returns the windows removed';

CREATE FUNCTION fw_override(name text, key text, rate integer, period interval,
                            capacity integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := @extschema@.fw_window_id(fw_override.name, fw_override.key, fw_override.rate,
                                        fw_override.period, NULL, fw_override.capacity);
BEGIN
    IF fw_override.key IS NULL THEN
        RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.fw_policy AS p
                   WHERE p.name = fw_override.name AND p.period_id = id) THEN
        RAISE EXCEPTION 'rate limit policy "%" has no window of %', fw_override.name, fw_override.period
            USING ERRCODE = 'undefined_object',
                  HINT = 'Define the window with fw_define first; fw_policies lists the windows.';
    END IF;
    INSERT INTO @extschema@.fw_override AS o
    VALUES (fw_override.name, fw_override.key, id, fw_override.period, fw_override.rate,
            coalesce(fw_override.capacity, fw_override.rate), @extschema@.fw_acting_role())
    ON CONFLICT ON CONSTRAINT fw_override_pkey DO UPDATE
        SET period = excluded.period, rate = excluded.rate, capacity = excluded.capacity,
            created_by = excluded.created_by;
END $$;
REVOKE ALL ON FUNCTION fw_override(text, text, integer, interval, integer) FROM PUBLIC;

COMMENT ON FUNCTION fw_override(text, text, integer, interval, integer) IS
'give one key its own rate (and capacity, default the rate) for one window of a policy';

CREATE FUNCTION fw_exempt(name text, key text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_window_id(fw_exempt.name, fw_exempt.key, 1, '1 second', NULL, NULL);
    IF fw_exempt.key IS NULL THEN
        RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.fw_policy AS p WHERE p.name = fw_exempt.name) THEN
        RAISE EXCEPTION 'rate limit policy "%" does not exist', fw_exempt.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Define it with fw_define(name, rate, period) first.';
    END IF;
    INSERT INTO @extschema@.fw_override AS o
    VALUES (fw_exempt.name, fw_exempt.key, '', NULL, NULL, NULL, @extschema@.fw_acting_role())
    ON CONFLICT ON CONSTRAINT fw_override_pkey DO UPDATE SET created_by = excluded.created_by;
END $$;
REVOKE ALL ON FUNCTION fw_exempt(text, text) FROM PUBLIC;

COMMENT ON FUNCTION fw_exempt(text, text) IS
'make one key unlimited for a policy: its calls are allowed and counted, never denied, and spend nothing';

CREATE FUNCTION fw_unoverride(name text, key text, period interval DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := CASE WHEN fw_unoverride.period IS NOT NULL
                    THEN @extschema@.fw_window_id(fw_unoverride.name, fw_unoverride.key, 1,
                                                  fw_unoverride.period, NULL, NULL) END;
    removed integer;
BEGIN
    IF fw_unoverride.name IS NULL OR fw_unoverride.key IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null',
            CASE WHEN fw_unoverride.name IS NULL THEN 'name' ELSE 'key' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    DELETE FROM @extschema@.fw_override AS o
    WHERE o.name = fw_unoverride.name AND o.key = fw_unoverride.key
      AND (id IS NULL OR o.period_id = id);
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed;
END $$;
REVOKE ALL ON FUNCTION fw_unoverride(text, text, interval) FROM PUBLIC;

COMMENT ON FUNCTION fw_unoverride(text, text, interval) IS
'return a key to its policy: remove its override of one window, or all its overrides and its exemption when period is NULL; returns how many were removed';

CREATE VIEW fw_policies AS
    SELECT p.name, p.period, p.rate, p.capacity, p.start, p.shadow, p.comment
    FROM fw_policy AS p;
GRANT SELECT ON fw_policies TO PUBLIC;

COMMENT ON VIEW fw_policies IS
'the windows of every named policy of this database, with their comments; start NULL: each key''s own phase';

CREATE VIEW fw_overrides AS
    SELECT o.name, o.key, o.period, o.rate, o.capacity, o.period IS NULL AS exempt, o.created_by
    FROM fw_override AS o
    WHERE fw_may_see_key(coalesce((SELECT r.oid FROM pg_roles AS r WHERE r.rolname = o.created_by), 0));
GRANT SELECT ON fw_overrides TO PUBLIC;

COMMENT ON VIEW fw_overrides IS
'overrides and exemptions of keys; a role sees those it made, superusers and members of pg_read_all_stats see all';

-- Calling a policy.

CREATE FUNCTION fw_limit(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
AS 'MODULE_PATHNAME', 'fw_limit_named'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_limit(text, text, integer) IS
'spend cost tokens in every window of policy name for key if every enforced window holds them, else spend nothing; remaining and reset_after are those of the most restrictive window';

CREATE FUNCTION fw_check(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
AS 'MODULE_PATHNAME', 'fw_check_named'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_check(text, text, integer) IS
'what fw_limit(name, key, cost) would answer now, without spending tokens or creating counters';

CREATE TYPE fw_window_result AS (
    period interval,
    rate integer,
    capacity integer,
    shadow boolean,
    ok boolean,
    retry_after interval,
    remaining integer,
    reset_after interval,
    window_start timestamptz,
    window_end timestamptz
);

COMMENT ON TYPE fw_window_result IS
'one window''s part of a named call: its period, rate and capacity (the key''s override, if any), whether it is a shadow, its own verdict (ok, retry_after NULL when ok, tokens remaining, time until it ends) and its bounds';

CREATE FUNCTION fw_limit_windows(name text, key text, cost integer DEFAULT 1)
RETURNS SETOF fw_window_result
AS 'MODULE_PATHNAME', 'fw_limit_windows'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_limit_windows(text, text, integer) IS
'fw_limit(name, key, cost), answered with one row per window of the policy: each window''s own verdict, so that a caller sees which window denied';

CREATE FUNCTION fw_check_windows(name text, key text, cost integer DEFAULT 1)
RETURNS SETOF fw_window_result
AS 'MODULE_PATHNAME', 'fw_check_windows'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_check_windows(text, text, integer) IS
'what fw_limit_windows would answer now, without spending tokens or creating counters';

CREATE FUNCTION fw_refund(name text, key text, cost integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'fw_refund_named'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_refund(text, text, integer) IS
'give back up to cost tokens to every window of policy name for key whose counter''s window is current, never above capacity; returns the fewest tokens an enforced window holds now';

CREATE FUNCTION fw_refund(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'fw_refund_inline'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) IS
'give back up to cost tokens to the counter of an inline limit if its window is current, never above capacity; returns the tokens it holds now';

COMMENT ON FUNCTION fw_trigger() IS
'BEFORE ... FOR EACH ROW trigger: fw_trigger(policy, column [, cost]) or fw_trigger(name, column, rate, period [, start [, cost]]) limits rows per value of column; raises SQLSTATE RL429 when the limit is exceeded';

-- from fixed_window--1.1--1.2.sql
/* fixed_window--1.1--1.2.sql: HTTP rate-limit headers, and a limit for PostgREST */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.2'" to load this file. \quit

-- A name as an HTTP structured-field string (RFC 8941): printable ASCII in
-- double quotes, with " and \ escaped.
CREATE FUNCTION fw_sf_string(name text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF name !~ '^[ -~]*$' THEN
        RAISE EXCEPTION 'limit name "%" cannot be sent in an HTTP header', name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Header values hold printable ASCII characters only.',
                  HINT = 'Give fw_headers a name of printable ASCII characters.';
    END IF;
    RETURN '"' || replace(replace(name, '\', '\\'), '"', '\"') || '"';
END $$;

COMMENT ON FUNCTION fw_sf_string(text) IS
'name as an HTTP structured-field string: quoted, with " and \ escaped; printable ASCII only (used by fw_headers)';

-- Seconds as HTTP headers count them: whole seconds, rounded up.
CREATE FUNCTION fw_header_seconds(span interval)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ceil(extract(epoch FROM span))::bigint::text;

COMMENT ON FUNCTION fw_header_seconds(interval) IS
'span in whole seconds, rounded up, as HTTP headers count time (used by fw_headers)';

-- The headers of a call from its windows, as fw_limit_windows returns them.
-- Shadow windows are not advertised: they never deny.  X-RateLimit-* and
-- Retry-After follow what fw_limit answers: the most restrictive window
-- (fewest tokens left, then the longest wait) and the latest retry.
CREATE FUNCTION fw_headers(name text, windows fw_window_result[])
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
    policy text;
    state text;
    tightest record;
    retry interval;
    denied boolean;
    headers jsonb;
BEGIN
    PERFORM @extschema@.fw_sf_string(name);
    IF name IS NULL OR windows IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', CASE WHEN name IS NULL THEN 'name' ELSE 'windows' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT count(*), bool_or(u.ok IS NULL OR u.rate IS NULL OR u.period IS NULL)
      INTO n, denied
      FROM unnest(windows) AS u
     WHERE NOT coalesce(u.shadow, false);
    IF denied THEN
        RAISE EXCEPTION 'a window of the call has no verdict, rate or period'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'fw_headers reads the rows fw_limit_windows returns, or one built from fw_limit''s answer.';
    END IF;
    IF n = 0 THEN
        RETURN '{}';                -- nothing enforced: nothing to advertise
    END IF;

    -- one item per window: "name", or "name/PT60S" when there are several
    SELECT string_agg(i.item || ';q=' || i.rate || ';w=' || @extschema@.fw_header_seconds(i.period),
                      ', ' ORDER BY i.ord),
           string_agg(i.item || ';r=' || i.remaining || ';t=' || @extschema@.fw_header_seconds(i.reset_after),
                      ', ' ORDER BY i.ord) FILTER (WHERE i.remaining IS NOT NULL AND i.reset_after IS NOT NULL),
           max(i.retry_after) FILTER (WHERE NOT i.ok),
           bool_or(NOT i.ok)
      INTO policy, state, retry, denied
      FROM (SELECT u.*, @extschema@.fw_sf_string(CASE WHEN n > 1
                            THEN name || '/' || @extschema@.fw_window_id(name, NULL, 1, u.period, NULL, NULL)
                            ELSE name END) AS item
            FROM unnest(windows) WITH ORDINALITY AS u(period, rate, capacity, shadow, ok, retry_after,
                                                      remaining, reset_after, window_start, window_end, ord)
            WHERE NOT coalesce(u.shadow, false)) AS i;

    SELECT u.rate, u.remaining, u.reset_after INTO tightest
      FROM unnest(windows) AS u
     WHERE NOT coalesce(u.shadow, false)
     ORDER BY u.remaining NULLS LAST, u.reset_after DESC NULLS LAST
     LIMIT 1;

    headers := jsonb_build_object('RateLimit-Policy', policy, 'X-RateLimit-Limit', tightest.rate::text);
    IF state IS NOT NULL THEN
        headers := headers || jsonb_build_object('RateLimit', state);
    END IF;
    IF tightest.remaining IS NOT NULL THEN
        headers := headers || jsonb_build_object('X-RateLimit-Remaining', tightest.remaining::text);
    END IF;
    IF tightest.reset_after IS NOT NULL THEN
        headers := headers || jsonb_build_object('X-RateLimit-Reset', @extschema@.fw_header_seconds(tightest.reset_after));
    END IF;
    IF denied AND coalesce(retry, tightest.reset_after) IS NOT NULL THEN
        headers := headers || jsonb_build_object('Retry-After', @extschema@.fw_header_seconds(coalesce(retry, tightest.reset_after)));
    END IF;
    RETURN headers;
END $$;

COMMENT ON FUNCTION fw_headers(text, fw_window_result[]) IS
'the HTTP headers of a call of policy name from its windows (fw_limit_windows): RateLimit-Policy and RateLimit (IETF draft, an item per enforced window), X-RateLimit-Limit, -Remaining and -Reset (seconds) of the most restrictive window, Retry-After (seconds) when denied';

CREATE FUNCTION fw_headers(result fw_result, rate integer, period interval, name text DEFAULT 'default')
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_window_id(name, NULL, rate, period, NULL, NULL);
    IF result IS NULL OR result.ok IS NULL THEN
        RAISE EXCEPTION 'argument "result" must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'fw_headers needs the answer of fw_limit or fw_check.';
    END IF;
    RETURN @extschema@.fw_headers(name, ARRAY[ROW(period, rate, NULL, false, result.ok, result.retry_after,
                                                  result.remaining, result.reset_after, NULL, NULL)
                                              ::@extschema@.fw_window_result]);
END $$;

COMMENT ON FUNCTION fw_headers(fw_result, integer, interval, text) IS
'the HTTP headers of an inline call''s answer result, for rate tokens per period, its policy item named name';

-- PostgREST: limit a request from its db-pre-request function.  Allowed, the
-- headers go to PostgREST through response.headers; denied, the request
-- ends with HTTP 429 and the same headers, by the SQLSTATE PGRST whose
-- message and detail PostgREST turns into the response (PT429 alone sets
-- the status, but PostgREST drops response.headers when the request
-- fails, so Retry-After would be lost).
CREATE FUNCTION fw_postgrest(name text, key text, cost integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    windows @extschema@.fw_window_result[] :=
        ARRAY(SELECT w FROM @extschema@.fw_limit_windows(name, key, cost) AS w);
    headers jsonb := @extschema@.fw_headers(name, windows);
    earlier text := nullif(current_setting('response.headers', true), '');
BEGIN
    IF EXISTS (SELECT FROM unnest(windows) AS w WHERE NOT w.ok AND NOT coalesce(w.shadow, false)) THEN
        RAISE SQLSTATE 'PGRST' USING
            MESSAGE = json_build_object(
                'code', 'PT429',
                'message', format('rate limit "%s" exceeded', name),
                'details', format('The request may be repeated in %s seconds.', coalesce(headers->>'Retry-After', 'some')),
                'hint', NULL)::text,
            DETAIL = json_build_object('status', 429, 'headers', headers)::text;
    END IF;
    -- response.headers is a JSON array of one-header objects; keep any set before
    PERFORM set_config('response.headers',
        (SELECT coalesce(jsonb_agg(h ORDER BY o), '[]')::text
         FROM (SELECT e.h, e.o FROM jsonb_array_elements(coalesce(earlier::jsonb, '[]')) WITH ORDINALITY AS e(h, o)
               UNION ALL
               SELECT jsonb_build_object(e.key, e.value), 1000000 + row_number() OVER ()
               FROM jsonb_each_text(headers) AS e) AS all_headers(h, o)),
        true);
END $$;

COMMENT ON FUNCTION fw_postgrest(text, text, integer) IS
'for a PostgREST db-pre-request function: spend cost tokens of policy name for key; allowed, add the rate-limit headers to response.headers; denied, end the request with HTTP 429 and those headers (SQLSTATE PGRST)';

-- from fixed_window--1.2--1.2.1.sql
/* fixed_window--1.2--1.2.1.sql: fw_postgrest refuses before it spends */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.2.1'" to load this file. \quit

-- 1.2 spent the tokens first, then failed on a policy name that cannot go
-- into a header or on a response.headers it could not extend: the request
-- failed and had still spent.  Both are checked first now, and
-- response.headers must be what PostgREST reads, an array of objects.
CREATE OR REPLACE FUNCTION fw_postgrest(name text, key text, cost integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting text := nullif(current_setting('response.headers', true), '');
    earlier jsonb;
    windows @extschema@.fw_window_result[];
    headers jsonb;
BEGIN
    PERFORM @extschema@.fw_sf_string(name);
    BEGIN
        earlier := coalesce(setting, '[]')::jsonb;
    EXCEPTION WHEN invalid_text_representation THEN
        earlier := NULL;
    END;
    IF earlier IS NULL OR jsonb_typeof(earlier) <> 'array'
       OR EXISTS (SELECT FROM jsonb_array_elements(earlier) AS e WHERE jsonb_typeof(e) <> 'object') THEN
        RAISE EXCEPTION 'response.headers is not a JSON array of header objects'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('response.headers is %s.', setting),
                  HINT = 'PostgREST reads response.headers as an array of one-header objects, such as [{"Cache-Control": "no-store"}].';
    END IF;

    windows := ARRAY(SELECT w FROM @extschema@.fw_limit_windows(name, key, cost) AS w);
    headers := @extschema@.fw_headers(name, windows);
    IF EXISTS (SELECT FROM unnest(windows) AS w WHERE NOT w.ok AND NOT coalesce(w.shadow, false)) THEN
        RAISE SQLSTATE 'PGRST' USING
            MESSAGE = json_build_object(
                'code', 'PT429',
                'message', format('rate limit "%s" exceeded', name),
                'details', format('The request may be repeated in %s seconds.', coalesce(headers->>'Retry-After', 'some')),
                'hint', NULL)::text,
            DETAIL = json_build_object('status', 429, 'headers', headers)::text;
    END IF;
    -- keep the headers set before, then add ours, one object each
    PERFORM set_config('response.headers',
        (SELECT coalesce(jsonb_agg(h ORDER BY part, o), '[]')::text
         FROM (SELECT 1, e.h, e.o FROM jsonb_array_elements(earlier) WITH ORDINALITY AS e(h, o)
               UNION ALL
               SELECT 2, jsonb_build_object(e.key, e.value), row_number() OVER ()
               FROM jsonb_each_text(headers) AS e) AS all_headers(part, h, o)),
        true);
END $$;

-- from fixed_window--1.2.1--1.3.sql
/* fixed_window--1.2.1--1.3.sql: hardening; see CHANGELOG.md for what changed and why */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.3'" to load this file. \quit

-- Views that hide rows or keys from a role are security barriers: without,
-- a cheap function of the caller's in WHERE ran on every row of
-- fw_override before the visibility filter, and could print the keys of
-- other roles' overrides.  (fw_counters, below, is one too.)
ALTER VIEW fw_overrides SET (security_barrier = true);

-- The views on a hot standby.  A view that names an unlogged table fails to
-- plan during recovery ("cannot access temporary or unlogged relations"),
-- so 1.2.1's fw_counters and fw_stats failed on a standby, although
-- shared-memory counters work there.  They now read the table through
-- functions, which on a standby return nothing and say so (unless a DBA
-- made the tables LOGGED, to keep counters through a failover).  The columns
-- keep the collation "C" of the table's.
CREATE FUNCTION fw_table_counters(
    OUT name text, OUT key text, OUT window_start timestamptz, OUT window_end timestamptz,
    OUT remaining integer, OUT rate integer, OUT capacity integer, OUT period_id text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fw_table_counters'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_table_counters() IS
'counter rows of the table backend in this database (used by fw_counters); keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats; on a standby none, with a notice';

CREATE OR REPLACE VIEW fw_counters WITH (security_barrier) AS
    SELECT s.name, s.key, 'shmem'::text AS storage, s.window_start, s.window_end,
           s.remaining, s.rate, s.capacity, s.period_id::interval AS period
    FROM fw_shmem_counters() AS s
    WHERE s.window_end > fw_now()
    UNION ALL
    SELECT c.name COLLATE "C", c.key COLLATE "C", 'table', c.window_start, c.window_end,
           c.remaining, c.rate, c.capacity, c.period_id::interval
    FROM fw_table_counters() AS c
    WHERE c.window_end > fw_now();

CREATE FUNCTION fw_table_stats(
    OUT name text, OUT calls bigint, OUT allowed bigint, OUT denied bigint,
    OUT last_denied_at timestamptz, OUT since timestamptz, OUT shadow_denied bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- on a standby, a table is read only if a DBA made it LOGGED
    counters boolean := NOT pg_is_in_recovery()
        OR (SELECT relpersistence = 'p' FROM pg_class WHERE oid = '@extschema@.fw_counter'::regclass);
    deleted boolean := NOT pg_is_in_recovery()
        OR (SELECT relpersistence = 'p' FROM pg_class WHERE oid = '@extschema@.fw_stat'::regclass);
BEGIN
    IF NOT (counters AND deleted) THEN
        RAISE NOTICE 'the statistics of fixed_window''s table are not readable on a standby'
            USING ERRCODE = 'read_only_sql_transaction',
                  DETAIL = CASE WHEN counters OR deleted
                      THEN format('The table %s is unlogged: a standby holds none of its rows. ',
                                  CASE WHEN counters THEN 'fw_stat' ELSE 'fw_counter' END)
                      ELSE 'The tables fw_counter and fw_stat are unlogged: a standby holds none of their rows. '
                      END || 'This server''s shared-memory statistics are counted.';
    END IF;
    IF counters THEN
        RETURN QUERY
            SELECT c.name, c.calls, c.allowed, c.denied, c.last_denied_at, c.since, c.shadow_denied
            FROM @extschema@.fw_counter AS c;
    END IF;
    IF deleted THEN
        RETURN QUERY
            SELECT t.name, t.calls, t.allowed, t.denied, t.last_denied_at, t.since, t.shadow_denied
            FROM @extschema@.fw_stat AS t;
    END IF;
END $$;

COMMENT ON FUNCTION fw_table_stats() IS
'statistics of the table backend''s rows, live and deleted, in this database (used by fw_stats); on a standby none, with a notice';

CREATE OR REPLACE VIEW fw_stats AS
    SELECT s.name, sum(s.calls)::bigint AS calls, sum(s.allowed)::bigint AS allowed,
           sum(s.denied)::bigint AS denied, max(s.last_denied_at) AS last_denied_at,
           min(s.since) AS since, sum(s.shadow_denied)::bigint AS shadow_denied
    FROM (SELECT * FROM fw_shmem_stats()
          UNION ALL
          SELECT t.name COLLATE "C", t.calls, t.allowed, t.denied, t.last_denied_at, t.since,
                 t.shadow_denied
          FROM fw_table_stats() AS t) AS s
    GROUP BY s.name
    HAVING sum(s.calls) > 0;

-- A refund gives tokens back: any role that may call it can refund itself
-- to full as often as it likes.  Grant it to the roles that reserve tokens.
REVOKE ALL ON FUNCTION fw_refund(text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) FROM PUBLIC;

-- Changing definitions.
--
-- Every function that changes a policy first takes the policy's lock (an
-- advisory lock, objsubid 18009 in pg_locks), held until the transaction
-- ends: two changes of one policy wait for each other instead of
-- deadlocking on their rows (an fw_override and an fw_unoverride of one key
-- in two sessions deadlocked in 1.2.1).
CREATE FUNCTION fw_lock_policy(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'fw_lock_policy'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION fw_lock_policy(text) FROM PUBLIC;

COMMENT ON FUNCTION fw_lock_policy(text) IS
'take the lock of a policy''s definition until the transaction ends (used by fw_define and its siblings)';

-- A definition gets every check a call of it would make: 1.2.1 accepted
-- fw_define('p', 10, '300000 years'), and every call of p then failed with
-- SQLSTATE 22008.
CREATE FUNCTION fw_window_in_range(rate integer, period interval, start timestamptz,
                                   capacity integer)
RETURNS void
AS 'MODULE_PATHNAME', 'fw_window_in_range'
LANGUAGE C VOLATILE PARALLEL SAFE;
REVOKE ALL ON FUNCTION fw_window_in_range(integer, interval, timestamptz, integer) FROM PUBLIC;

COMMENT ON FUNCTION fw_window_in_range(integer, interval, timestamptz, integer) IS
'check that a window''s bounds around fw_now() lie within 64-bit time for every key (used by fw_define); SQLSTATE 22008 otherwise';

-- The triggers that tell every session of a change fire whatever
-- session_replication_role says: a change applied by logical replication,
-- or written with session_replication_role = replica, went unseen by the
-- sessions that had the policy cached.
ALTER TABLE fw_policy ENABLE ALWAYS TRIGGER fw_policy_changed;
ALTER TABLE fw_override ENABLE ALWAYS TRIGGER fw_override_changed;

CREATE OR REPLACE FUNCTION fw_define(
    name text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    capacity integer DEFAULT NULL,
    shadow boolean DEFAULT false,
    comment text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := @extschema@.fw_window_id(fw_define.name, NULL, fw_define.rate, fw_define.period,
                                        fw_define.start, fw_define.capacity);
BEGIN
    IF fw_define.shadow IS NULL THEN
        RAISE EXCEPTION 'argument "shadow" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_window_in_range(fw_define.rate, fw_define.period, fw_define.start,
                                           fw_define.capacity);
    -- Definers of one policy take turns on its lock, so that the count of
    -- its windows stays true; the rows of its windows are rewritten first,
    -- changing nothing, so that under REPEATABLE READ or SERIALIZABLE a
    -- definition whose snapshot predates another's commit fails with a
    -- serialization error instead of missing a window.  Nothing locks the
    -- whole table (1.2.1 did, and two admins replacing two policies, each
    -- in one transaction, deadlocked).
    PERFORM @extschema@.fw_lock_policy(fw_define.name);
    UPDATE @extschema@.fw_policy AS p SET rate = p.rate WHERE p.name = fw_define.name;
    IF (SELECT count(*) FROM @extschema@.fw_policy AS p
        WHERE p.name = fw_define.name AND p.period_id <> id) >= 8 THEN
        RAISE EXCEPTION 'rate limit policy "%" already has 8 windows', fw_define.name
            USING ERRCODE = 'program_limit_exceeded',
                  DETAIL = 'A policy may have at most 8 windows of distinct periods.',
                  HINT = 'Remove a window with fw_undefine(name, period), or replace one by defining its period again.';
    END IF;
    -- replace the window, or add it (not INSERT ... ON CONFLICT, which fails
    -- while REINDEX CONCURRENTLY rebuilds the primary key; the policy's lock
    -- keeps other definers out in between)
    UPDATE @extschema@.fw_policy AS p
    SET period = fw_define.period, rate = fw_define.rate,
        capacity = coalesce(fw_define.capacity, fw_define.rate), start = fw_define.start,
        shadow = fw_define.shadow, comment = fw_define.comment
    WHERE p.name = fw_define.name AND p.period_id = id;
    IF NOT FOUND THEN
        INSERT INTO @extschema@.fw_policy
        VALUES (fw_define.name, fw_define.period, id, fw_define.rate,
                coalesce(fw_define.capacity, fw_define.rate), fw_define.start, fw_define.shadow,
                fw_define.comment);
    END IF;
END $$;

CREATE OR REPLACE FUNCTION fw_undefine(name text, period interval DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := CASE WHEN fw_undefine.period IS NOT NULL
                    THEN @extschema@.fw_window_id(fw_undefine.name, NULL, 1, fw_undefine.period, NULL, NULL) END;
    removed integer;
BEGIN
    IF fw_undefine.name IS NULL THEN
        RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_lock_policy(fw_undefine.name);
    DELETE FROM @extschema@.fw_policy AS p
    WHERE p.name = fw_undefine.name AND (id IS NULL OR p.period_id = id);
    GET DIAGNOSTICS removed = ROW_COUNT;
    IF removed = 0 THEN
        RAISE EXCEPTION 'rate limit policy "%" has no window %', fw_undefine.name,
            coalesce('of ' || fw_undefine.period::text, 'at all')
            USING ERRCODE = 'undefined_object',
                  HINT = 'fw_policies lists the policies and their windows.';
    END IF;
    -- overrides of what was removed go with it; with the whole policy, or its
    -- last window, exemptions too (1.3 before its review kept them, and they
    -- applied again to a policy defined later under the name)
    DELETE FROM @extschema@.fw_override AS o
    WHERE o.name = fw_undefine.name
      AND (id IS NULL OR o.period_id = id
           OR NOT EXISTS (SELECT FROM @extschema@.fw_policy AS p WHERE p.name = fw_undefine.name));
    RETURN removed;
END $$;

-- An override or exemption is written only while its policy exists, and
-- fw_undefine removes the overrides of what it removes: the two must not
-- interleave.  1.2.1 checked the policy without a lock: an fw_override
-- during an fw_undefine both succeeded, and the orphaned override applied
-- again to a policy later defined under the same name.  The policy's lock
-- orders them under READ COMMITTED; and fw_override and fw_exempt rewrite
-- the policy rows they depend on (changing nothing) before checking them,
-- so that under REPEATABLE READ or SERIALIZABLE, where a transaction's
-- snapshot may predate the other's commit, the later of the two fails with
-- a serialization error instead of missing the other.
CREATE OR REPLACE FUNCTION fw_override(name text, key text, rate integer, period interval,
                                       capacity integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := @extschema@.fw_window_id(fw_override.name, fw_override.key, fw_override.rate,
                                        fw_override.period, NULL, fw_override.capacity);
BEGIN
    IF fw_override.key IS NULL THEN
        RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_lock_policy(fw_override.name);
    UPDATE @extschema@.fw_policy AS p SET rate = p.rate
    WHERE p.name = fw_override.name AND p.period_id = id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'rate limit policy "%" has no window of %', fw_override.name, fw_override.period
            USING ERRCODE = 'undefined_object',
                  HINT = 'Define the window with fw_define first; fw_policies lists the windows.';
    END IF;
    UPDATE @extschema@.fw_override AS o
    SET period = fw_override.period, rate = fw_override.rate,
        capacity = coalesce(fw_override.capacity, fw_override.rate),
        created_by = @extschema@.fw_acting_role()
    WHERE o.name = fw_override.name AND o.key = fw_override.key AND o.period_id = id;
    IF NOT FOUND THEN
        INSERT INTO @extschema@.fw_override
        VALUES (fw_override.name, fw_override.key, id, fw_override.period, fw_override.rate,
                coalesce(fw_override.capacity, fw_override.rate), @extschema@.fw_acting_role());
    END IF;
END $$;

CREATE OR REPLACE FUNCTION fw_exempt(name text, key text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_window_id(fw_exempt.name, fw_exempt.key, 1, '1 second', NULL, NULL);
    IF fw_exempt.key IS NULL THEN
        RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_lock_policy(fw_exempt.name);
    UPDATE @extschema@.fw_policy AS p SET rate = p.rate WHERE p.name = fw_exempt.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'rate limit policy "%" does not exist', fw_exempt.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Define it with fw_define(name, rate, period) first.';
    END IF;
    UPDATE @extschema@.fw_override AS o SET created_by = @extschema@.fw_acting_role()
    WHERE o.name = fw_exempt.name AND o.key = fw_exempt.key AND o.period_id = '';
    IF NOT FOUND THEN
        INSERT INTO @extschema@.fw_override
        VALUES (fw_exempt.name, fw_exempt.key, '', NULL, NULL, NULL, @extschema@.fw_acting_role());
    END IF;
END $$;

CREATE OR REPLACE FUNCTION fw_unoverride(name text, key text, period interval DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := CASE WHEN fw_unoverride.period IS NOT NULL
                    THEN @extschema@.fw_window_id(fw_unoverride.name, fw_unoverride.key, 1,
                                                  fw_unoverride.period, NULL, NULL) END;
    removed integer;
BEGIN
    IF fw_unoverride.name IS NULL OR fw_unoverride.key IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null',
            CASE WHEN fw_unoverride.name IS NULL THEN 'name' ELSE 'key' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_lock_policy(fw_unoverride.name);
    DELETE FROM @extschema@.fw_override AS o
    WHERE o.name = fw_unoverride.name AND o.key = fw_unoverride.key
      AND (id IS NULL OR o.period_id = id);
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed;
END $$;

-- Where this session's calls keep their counters now: 'shmem' or 'table'.
-- fw_postgrest asks, since on the table backend its error rolls back the
-- counters a denial made.
CREATE FUNCTION fw_storage_in_use()
RETURNS text
AS 'MODULE_PATHNAME', 'fw_storage_in_use'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION fw_storage_in_use() IS
'where this session''s calls keep their counters now, as fixed_window.storage and the preloaded library decide: shmem or table';

-- An interval as text that every session reads alike, whatever its
-- IntervalStyle: ISO 8601 with every field and its own sign,
-- P<years>Y<months>M<days>DT<hours>H<minutes>M<seconds>S.  The router
-- (fixed_window_proxy) moves periods between servers this way.
CREATE FUNCTION fw_interval_iso(period interval)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.format('P%sY%sM%sDT%sH%sM%sS', EXTRACT(year FROM period), EXTRACT(month FROM period),
                         EXTRACT(day FROM period), EXTRACT(hour FROM period),
                         EXTRACT(minute FROM period), EXTRACT(second FROM period));

COMMENT ON FUNCTION fw_interval_iso(interval) IS
'the interval in ISO 8601, every field with its own sign, read alike by every session whatever its IntervalStyle (used by fixed_window_proxy)';

-- What fw_headers needs of a name, a rate and a period: the checks of
-- fw_limit, and the identifier of the period (fixed_window_proxy defines the
-- same in SQL, having no C).  The HTTP functions that follow are the same
-- text in both extensions.
CREATE FUNCTION fw_header_window_id(name text, rate integer, period interval)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN @extschema@.fw_window_id(name, NULL, rate, period, NULL, NULL);

COMMENT ON FUNCTION fw_header_window_id(text, integer, interval) IS
'check a name, a rate and a period as fw_limit does, and return the identifier of the period (used by fw_headers)';

-- HTTP rate-limit headers and PostgREST, as of 1.3.
--
-- The same text ends fixed_window--1.2.1--1.3.sql and
-- fixed_window_proxy--1.0--1.1.sql (make concatenates it): both extensions
-- answer HTTP alike.  Each defines fw_header_window_id(name, rate, period)
-- before it: the checks of fw_limit for these three, and the identifier of
-- the period ("PT60S").  Changes in 1.3:
--
-- - With capacity above the rate, a window's remaining tokens can exceed
--   its quota.  1.2.1 advertised them: "r=149" against "q=100", and
--   X-RateLimit-Remaining 149 against X-RateLimit-Limit 100, so that a
--   client computing used = limit - remaining got a negative number.  The
--   headers now say the quota of the window (the rate) and what of it is
--   left, never more: min(remaining, rate).  Tokens saved beyond it are
--   still there to spend; the headers do not promise them.
-- - A denied call that promises no retry time (retry_after NULL) sends no
--   Retry-After.
-- - fw_postgrest checks response.headers exactly as PostgREST reads it, an
--   array of objects each with one header name and a string value, before
--   it spends: 1.2.1 took [{"A": "1", "B": "2"}] or [{"A": 1}], spent, and
--   PostgREST then failed the request (PGRST111).

-- A name as an HTTP structured-field string (RFC 8941): printable ASCII in
-- double quotes, with " and \ escaped.
CREATE OR REPLACE FUNCTION fw_sf_string(name text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF name !~ '^[ -~]*$' THEN
        RAISE EXCEPTION 'limit name "%" cannot be sent in an HTTP header', name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Header values hold printable ASCII characters only.',
                  HINT = 'Give fw_headers a name of printable ASCII characters.';
    END IF;
    RETURN '"' || replace(replace(name, '\', '\\'), '"', '\"') || '"';
END $$;

COMMENT ON FUNCTION fw_sf_string(text) IS
'name as an HTTP structured-field string: quoted, with " and \ escaped; printable ASCII only (used by fw_headers)';

-- Seconds as HTTP headers count them: whole seconds, rounded up.
CREATE OR REPLACE FUNCTION fw_header_seconds(span interval)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ceil(extract(epoch FROM span))::bigint::text;

COMMENT ON FUNCTION fw_header_seconds(interval) IS
'span in whole seconds, rounded up, as HTTP headers count time (used by fw_headers)';

-- The headers of a call from its windows, as fw_limit_windows returns them.
-- Shadow windows are not advertised: they never deny.  X-RateLimit-* follow
-- what fw_limit answers: the most restrictive window (fewest tokens left,
-- then the longest wait); Retry-After is the latest retry of the windows
-- that denied, when each of them promises one.
CREATE OR REPLACE FUNCTION fw_headers(name text, windows fw_window_result[])
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
    bad boolean;
    policy text;
    state text;
    tightest record;
    retry interval;
    no_promise boolean;
    denied boolean;
    headers jsonb;
BEGIN
    PERFORM @extschema@.fw_sf_string(name);
    IF name IS NULL OR windows IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', CASE WHEN name IS NULL THEN 'name' ELSE 'windows' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- a window allowed without rate or period is a router's answer for a
    -- shard it could not reach, failing open: it has nothing to advertise
    SELECT count(*) FILTER (WHERE u.rate IS NOT NULL AND u.period IS NOT NULL),
           bool_or(u.ok IS NULL OR (NOT u.ok AND (u.rate IS NULL OR u.period IS NULL)))
      INTO n, bad
      FROM unnest(windows) AS u
     WHERE NOT coalesce(u.shadow, false);
    IF bad THEN
        RAISE EXCEPTION 'a window of the call has no verdict, rate or period'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'fw_headers reads the rows fw_limit_windows returns, or one built from fw_limit''s answer.';
    END IF;
    IF n = 0 THEN
        RETURN '{}';                -- nothing enforced: nothing to advertise
    END IF;

    -- one item per window: "name", or "name/PT60S" when there are several;
    -- what is left is never more than the window's quota
    SELECT string_agg(i.item || ';q=' || i.rate || ';w=' || @extschema@.fw_header_seconds(i.period),
                      ', ' ORDER BY i.ord),
           string_agg(i.item || ';r=' || least(i.remaining, i.rate) || ';t='
                      || @extschema@.fw_header_seconds(i.reset_after), ', ' ORDER BY i.ord)
               FILTER (WHERE i.remaining IS NOT NULL AND i.reset_after IS NOT NULL),
           max(i.retry_after) FILTER (WHERE NOT i.ok),
           coalesce(bool_or(NOT i.ok AND i.retry_after IS NULL), false),
           bool_or(NOT i.ok)
      INTO policy, state, retry, no_promise, denied
      FROM (SELECT u.*, @extschema@.fw_sf_string(CASE WHEN n > 1
                            THEN name || '/' || @extschema@.fw_header_window_id(name, 1, u.period)
                            ELSE name END) AS item
            FROM unnest(windows) WITH ORDINALITY AS u(period, rate, capacity, shadow, ok, retry_after,
                                                      remaining, reset_after, window_start, window_end, ord)
            WHERE NOT coalesce(u.shadow, false) AND u.rate IS NOT NULL AND u.period IS NOT NULL) AS i;

    SELECT u.rate, u.remaining, u.reset_after INTO tightest
      FROM unnest(windows) AS u
     WHERE NOT coalesce(u.shadow, false) AND u.rate IS NOT NULL AND u.period IS NOT NULL
     ORDER BY u.remaining NULLS LAST, u.reset_after DESC NULLS LAST
     LIMIT 1;

    headers := jsonb_build_object('RateLimit-Policy', policy, 'X-RateLimit-Limit', tightest.rate::text);
    IF state IS NOT NULL THEN
        headers := headers || jsonb_build_object('RateLimit', state);
    END IF;
    IF tightest.remaining IS NOT NULL THEN
        headers := headers || jsonb_build_object('X-RateLimit-Remaining',
                                                 least(tightest.remaining, tightest.rate)::text);
    END IF;
    IF tightest.reset_after IS NOT NULL THEN
        headers := headers || jsonb_build_object('X-RateLimit-Reset', @extschema@.fw_header_seconds(tightest.reset_after));
    END IF;
    IF denied AND NOT no_promise AND retry IS NOT NULL THEN
        headers := headers || jsonb_build_object('Retry-After', @extschema@.fw_header_seconds(retry));
    END IF;
    RETURN headers;
END $$;

COMMENT ON FUNCTION fw_headers(text, fw_window_result[]) IS
'the HTTP headers of a call of policy name from its windows (fw_limit_windows): RateLimit-Policy and RateLimit (IETF draft, an item per enforced window, r never above q), X-RateLimit-Limit, -Remaining (never above the limit) and -Reset (seconds from now, not an epoch) of the most restrictive window, Retry-After (seconds) when denied with a retry time';

CREATE OR REPLACE FUNCTION fw_headers(result fw_result, rate integer, period interval, name text DEFAULT 'default')
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_header_window_id(name, rate, period);
    IF result IS NULL OR result.ok IS NULL THEN
        RAISE EXCEPTION 'argument "result" must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'fw_headers needs the answer of fw_limit or fw_check.';
    END IF;
    RETURN @extschema@.fw_headers(name, ARRAY[ROW(period, rate, NULL, false, result.ok, result.retry_after,
                                                  result.remaining, result.reset_after, NULL, NULL)
                                              ::@extschema@.fw_window_result]);
END $$;

COMMENT ON FUNCTION fw_headers(fw_result, integer, interval, text) IS
'the HTTP headers of an inline call''s answer result, for rate tokens per period, its policy item named name';

-- PostgREST: limit a request from its db-pre-request function.  Allowed, the
-- headers go to PostgREST through response.headers; denied, the request
-- ends with HTTP 429 and the same headers, by the SQLSTATE PGRST whose
-- message and detail PostgREST turns into the response (PT429 alone sets
-- the status, but PostgREST drops response.headers when the request
-- fails, so Retry-After would be lost).  Everything that could fail is
-- checked before anything is spent.
CREATE OR REPLACE FUNCTION fw_postgrest(name text, key text, cost integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting text := nullif(current_setting('response.headers', true), '');
    earlier jsonb;
    windows @extschema@.fw_window_result[];
    denied boolean;
    headers jsonb;
BEGIN
    PERFORM @extschema@.fw_sf_string(name);
    BEGIN
        earlier := coalesce(setting, '[]')::jsonb;
    EXCEPTION WHEN invalid_text_representation OR untranslatable_character THEN
        earlier := NULL;
    END;
    -- what PostgREST accepts: an array of objects of one string each
    IF earlier IS NULL OR jsonb_typeof(earlier) <> 'array'
       OR EXISTS (SELECT FROM jsonb_array_elements(earlier) AS e
                  WHERE jsonb_typeof(e) <> 'object'
                     OR (SELECT count(*) FROM jsonb_each(e)) <> 1
                     OR EXISTS (SELECT FROM jsonb_each(e) AS h WHERE jsonb_typeof(h.value) <> 'string')) THEN
        RAISE EXCEPTION 'response.headers is not a JSON array of header objects'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('response.headers is %s. PostgREST takes an array of objects, each with exactly one header name and a string value, and fails the request otherwise.', setting),
                  HINT = 'Set response.headers as PostgREST reads it, such as [{"Cache-Control": "no-store"}, {"Vary": "Accept"}].';
    END IF;

    windows := ARRAY(SELECT w FROM @extschema@.fw_limit_windows(name, key, cost) AS w);
    denied := EXISTS (SELECT FROM unnest(windows) AS w WHERE NOT w.ok AND NOT coalesce(w.shadow, false));
    -- The error below rolls back what this transaction wrote.  On the table
    -- backend, that includes the counter a denial creates for a key that
    -- has none, which gathers the tokens a cost above the rate needs: the
    -- retry time would not be kept, and none is sent.
    IF denied AND @extschema@.fw_storage_in_use() = 'table'
       AND EXISTS (SELECT FROM unnest(windows) AS w
                   WHERE NOT w.ok AND NOT coalesce(w.shadow, false) AND cost > w.rate) THEN
        windows := ARRAY(SELECT ROW(w.period, w.rate, w.capacity, w.shadow, w.ok,
                                    CASE WHEN w.ok THEN w.retry_after END, w.remaining, w.reset_after,
                                    w.window_start, w.window_end)::@extschema@.fw_window_result
                         FROM unnest(windows) WITH ORDINALITY AS w
                         ORDER BY w.ordinality);
    END IF;
    headers := @extschema@.fw_headers(name, windows);
    IF denied THEN
        RAISE SQLSTATE 'PGRST' USING
            MESSAGE = json_build_object(
                'code', 'PT429',
                'message', format('rate limit "%s" exceeded', name),
                'details', CASE WHEN headers ? 'Retry-After'
                                THEN format('The request may be repeated in %s seconds.', headers->>'Retry-After')
                                ELSE 'No time can be promised for repeating the request.' END,
                'hint', NULL)::text,
            DETAIL = json_build_object('status', 429, 'headers', headers)::text;
    END IF;
    -- keep the headers set before, then add ours, one object each
    PERFORM set_config('response.headers',
        (SELECT coalesce(jsonb_agg(h ORDER BY part, o), '[]')::text
         FROM (SELECT 1, e.h, e.o FROM jsonb_array_elements(earlier) WITH ORDINALITY AS e(h, o)
               UNION ALL
               SELECT 2, jsonb_build_object(e.key, e.value), row_number() OVER ()
               FROM jsonb_each_text(headers) AS e) AS all_headers(part, h, o)),
        true);
END $$;

COMMENT ON FUNCTION fw_postgrest(text, text, integer) IS
'for a PostgREST db-pre-request function: spend cost tokens of policy name for key; allowed, add the rate-limit headers to response.headers; denied, end the request with HTTP 429 and those headers (SQLSTATE PGRST)';

-- from fixed_window--1.3--1.4.sql
/* fixed_window--1.3--1.4.sql: shared-memory counters without preloading; see CHANGELOG.md */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.4'" to load this file. \quit

-- The counters' table in shared memory is replaced by one of another size,
-- online: every counter moves, calls wait for the copy only.  Shared by
-- every database of the server, hence for superusers unless granted.
CREATE FUNCTION fw_resize_counters(slots integer,
    OUT slots_before integer, OUT slots_after integer, OUT counters_moved bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'fw_resize_counters'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION fw_resize_counters(integer) FROM PUBLIC;

COMMENT ON FUNCTION fw_resize_counters(integer) IS
'give the shared-memory counters of the whole server a table of this many slots, moving every counter; refused below the slots in use';

-- from fixed_window--1.4--1.5.sql
/* fixed_window--1.4--1.5.sql: capacity in SQL, calls that found no room counted; see CHANGELOG.md */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.5'" to load this file. \quit

-- How full shared memory is: the counters' table, each database's and each
-- role's share of it, and the statistics' entries.  Counts only, no key.
CREATE FUNCTION fw_shmem_capacity(
    OUT scope text, OUT name text, OUT capacity bigint, OUT used bigint,
    OUT live bigint, OUT reclaimable bigint, OUT bytes bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fw_shmem_capacity'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_shmem_capacity() IS
'slots of shared memory''s counter table, in all (scope counters) and held by each database and role, and entries of the statistics (used by fw_capacity)';

-- How full the table backend is in this database: its rows, those fw_gc()
-- would delete now (never a row that carries tokens over: its fresh_from is
-- NULL), its size.  On a standby its unlogged rows are not there: no row.
CREATE FUNCTION fw_table_capacity(
    OUT used bigint, OUT live bigint, OUT reclaimable bigint, OUT bytes bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    clock timestamptz := @extschema@.fw_now();
BEGIN
    IF pg_is_in_recovery()
       AND (SELECT relpersistence <> 'p' FROM pg_class WHERE oid = '@extschema@.fw_counter'::regclass) THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT count(*), count(*) FILTER (WHERE NOT r.gone), count(*) FILTER (WHERE r.gone),
               pg_total_relation_size('@extschema@.fw_counter'::regclass)
        FROM (SELECT coalesce(c.fresh_from <= clock AND (c.fresh_until IS NULL OR clock < c.fresh_until),
                              false) AS gone
              FROM @extschema@.fw_counter AS c) AS r;
END $$;

COMMENT ON FUNCTION fw_table_capacity() IS
'rows of the table backend in this database, those fw_gc() would delete now, and its size in bytes (used by fw_capacity); none on a standby';

-- Every operator of the views has operands of the exact types of
-- pg_catalog's, so that no operator of another schema on the search_path at
-- installation can be taken for it (an exact match there would win over
-- pg_catalog's with an implicit cast, and run as whoever reads the view).
CREATE VIEW fw_capacity AS
    SELECT 'shmem'::text AS storage, s.scope, s.name, s.capacity, s.used, s.live, s.reclaimable,
           round(100::numeric * s.live::numeric / NULLIF(s.capacity, 0)::numeric, 1) AS live_percent,
           s.bytes
    FROM fw_shmem_capacity() AS s
    UNION ALL
    SELECT 'table', 'database', current_database()::text, NULL, t.used, t.live, t.reclaimable,
           NULL, t.bytes
    FROM fw_table_capacity() AS t;
GRANT SELECT ON fw_capacity TO PUBLIC;

COMMENT ON VIEW fw_capacity IS
'how full the stores are: for shared memory (storage shmem), the counters'' slots in all (scope counters), held by each database and role against its share, and the statistics'' entries; for the table backend (storage table), this database''s rows and bytes. used = live + reclaimable, where reclaimable slots or rows hold counters whose window has ended, which a reclaim or fw_gc() frees; live_percent = live / capacity; no key is shown';

-- Calls that found no room for a new counter in shared memory: allowed
-- uncounted with fixed_window.fail_open, or refused with SQLSTATE 53400.
-- fw_stats is replaced, not dropped, so that its grants and the views built
-- on it stay; it reads the statistics through a new function, as a view's
-- function cannot gain a column.  fw_shmem_stats() stays, as 1.4 made it.
CREATE FUNCTION fw_shmem_stats_1_5(
    OUT name text, OUT calls bigint, OUT allowed bigint, OUT denied bigint,
    OUT last_denied_at timestamptz, OUT since timestamptz, OUT shadow_denied bigint,
    OUT no_room bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fw_shmem_stats_1_5'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_shmem_stats_1_5() IS
'statistics of this database''s limits and policies counted in shared memory, with no_room (used by fw_stats)';

COMMENT ON FUNCTION fw_shmem_stats() IS
'statistics of this database''s limits and policies counted in shared memory, without no_room (fw_stats uses fw_shmem_stats_1_5 since 1.5)';

CREATE OR REPLACE VIEW fw_stats AS
    SELECT s.name, sum(s.calls)::bigint AS calls, sum(s.allowed)::bigint AS allowed,
           sum(s.denied)::bigint AS denied, max(s.last_denied_at) AS last_denied_at,
           min(s.since) AS since, sum(s.shadow_denied)::bigint AS shadow_denied,
           sum(s.no_room)::bigint AS no_room
    FROM (SELECT * FROM fw_shmem_stats_1_5()
          UNION ALL
          SELECT t.name COLLATE "C", t.calls, t.allowed, t.denied, t.last_denied_at, t.since,
                 t.shadow_denied, 0::bigint
          FROM fw_table_stats() AS t) AS s
    GROUP BY s.name
    HAVING sum(s.calls) > 0::numeric OR sum(s.no_room) > 0::numeric;

COMMENT ON VIEW fw_stats IS
'per limit or policy of this database with calls since the last fw_stats_reset(): fw_limit calls (a policy''s call counts once), allowed, denied, the last denial, the time since which it counts, shadow_denied: allowed calls that a shadow window would have denied, and no_room: calls that found no room for a new counter in shared memory (answered without a counter with fixed_window.fail_open, and then also in calls and in allowed or denied; otherwise refused with SQLSTATE 53400, and in no other column); name NULL: calls of limits that found no room for statistics in shared memory; every count only grows until fw_stats_reset(); shared-memory counts vanish on restart';

-- from fixed_window--1.5--1.6.sql
/* fixed_window--1.5--1.6.sql: hardening (issue 30) */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.6'" to load this file. \quit

-- ---------------------------------------------------------------------------
-- Metrics (issue 30, items 13 and 14).  The table backend keeps the
-- statistics of at most 1,024 limit names a database apart, as shared
-- memory keeps those of 1,024 a server: making names can no longer make
-- fw_stats, nor the metrics read from it, grow without bound.  The rows of
-- fw_stat are those names, first counted first served: the C code gives a
-- name its row when a row of fw_counter counts its first call, if the
-- database has room (src/table_store.c).  The calls of other names are
-- counted together, under a NULL name.  And the admin chooses which names
-- examples/monitoring exports (fw_metric_name, read through fw_metrics).

-- How many names the table keeps apart in a database: the C code's bound.
CREATE FUNCTION @extschema@.fw_table_stats_limit()
RETURNS integer
AS 'MODULE_PATHNAME', 'fw_table_stats_limit'
LANGUAGE C STABLE STRICT PARALLEL SAFE;
REVOKE ALL ON FUNCTION @extschema@.fw_table_stats_limit() FROM PUBLIC;

COMMENT ON FUNCTION @extschema@.fw_table_stats_limit() IS
'how many limit and policy names the table backend keeps the statistics of apart, in a database (used by fw_table_stats_capacity)';

COMMENT ON TABLE @extschema@.fw_stat IS
'the limit and policy names whose statistics the table backend keeps apart, at most fw_table_stats_limit() (a row of fw_counter that counts its first call adds its name while there is room), with the statistics of their deleted rows; part of fw_stats';

-- The statistics of deleted rows of the other names: one row at most.
CREATE UNLOGGED TABLE @extschema@.fw_stat_unnamed (
    unnamed boolean PRIMARY KEY DEFAULT true CHECK (unnamed),
    calls bigint NOT NULL,
    allowed bigint NOT NULL,
    denied bigint NOT NULL,
    last_denied_at timestamptz,
    since timestamptz NOT NULL,
    shadow_denied bigint NOT NULL
);
REVOKE ALL ON @extschema@.fw_stat_unnamed FROM PUBLIC;

COMMENT ON TABLE @extschema@.fw_stat_unnamed IS
'statistics of the table backend''s deleted rows whose names have no row in fw_stat, together; part of fw_stats, under a NULL name';

-- Deleting rows of fw_stat (fw_stats_reset(), an admin) frees places: each
-- backend that found the database full looks again once the deletion
-- commits, told by an invalidation of fw_stat, which fw_policy_changed()
-- sends for any table it is a trigger of.
CREATE TRIGGER fw_stat_freed
    AFTER DELETE OR TRUNCATE ON @extschema@.fw_stat
    FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.fw_policy_changed();

COMMENT ON FUNCTION @extschema@.fw_policy_changed() IS
'trigger of fw_policy and fw_override: every session drops its cached definitions when the change commits; of fw_stat (since 1.6), on deletions: every session that found the table backend''s names full counts them again';

-- Every name 1.5 counted keeps its statistics apart, past the bound too,
-- until fw_stats_reset(): fw_stat has the names of deleted rows, and gets
-- those of the rows that counted calls.
INSERT INTO @extschema@.fw_stat AS s (name, calls, allowed, denied, last_denied_at, since, shadow_denied)
SELECT c.name, 0, 0, 0, NULL, min(c.since), 0
FROM @extschema@.fw_counter AS c
WHERE c.calls > 0
GROUP BY c.name
ORDER BY c.name
ON CONFLICT (name) DO NOTHING;

-- The counts of deleted rows go to their name's row of fw_stat, or, for a
-- name without one, to fw_stat_unnamed.  One statement, so that a name
-- given its row meanwhile is counted in one place; fw_stat's rows are
-- written in the order of their names, as before.
CREATE OR REPLACE FUNCTION @extschema@.fw_counter_deleted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    WITH g AS (
        SELECT d.name, sum(d.calls) AS calls, sum(d.allowed) AS allowed, sum(d.denied) AS denied,
               max(d.last_denied_at) AS last_denied_at, min(d.since) AS since,
               sum(d.shadow_denied) AS shadow_denied,
               EXISTS (SELECT FROM @extschema@.fw_stat AS p WHERE p.name = d.name) AS named
        FROM gone AS d
        GROUP BY d.name),
    named AS (
        INSERT INTO @extschema@.fw_stat AS s
        SELECT g.name, g.calls, g.allowed, g.denied, g.last_denied_at, g.since, g.shadow_denied
        FROM g
        WHERE g.named
        ORDER BY g.name
        ON CONFLICT (name) DO UPDATE
            SET calls = s.calls + excluded.calls,
                allowed = s.allowed + excluded.allowed,
                denied = s.denied + excluded.denied,
                last_denied_at = greatest(s.last_denied_at, excluded.last_denied_at),
                since = least(s.since, excluded.since),
                shadow_denied = s.shadow_denied + excluded.shadow_denied)
    INSERT INTO @extschema@.fw_stat_unnamed AS u (calls, allowed, denied, last_denied_at, since, shadow_denied)
    SELECT sum(g.calls), sum(g.allowed), sum(g.denied), max(g.last_denied_at), min(g.since),
           sum(g.shadow_denied)
    FROM g
    WHERE NOT g.named
    HAVING count(*) > 0
    ON CONFLICT (unnamed) DO UPDATE
        SET calls = u.calls + excluded.calls,
            allowed = u.allowed + excluded.allowed,
            denied = u.denied + excluded.denied,
            last_denied_at = greatest(u.last_denied_at, excluded.last_denied_at),
            since = least(u.since, excluded.since),
            shadow_denied = u.shadow_denied + excluded.shadow_denied;
    RETURN NULL;
END $$;

-- A live row whose name has no row in fw_stat is read under a NULL name, as
-- are the counts of fw_stat_unnamed.
CREATE OR REPLACE FUNCTION @extschema@.fw_table_stats(
    OUT name text, OUT calls bigint, OUT allowed bigint, OUT denied bigint,
    OUT last_denied_at timestamptz, OUT since timestamptz, OUT shadow_denied bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- on a standby, a table is read only if a DBA made it LOGGED
    counters boolean := NOT pg_is_in_recovery()
        OR (SELECT relpersistence = 'p' FROM pg_class WHERE oid = '@extschema@.fw_counter'::regclass);
    deleted boolean := NOT pg_is_in_recovery()
        OR (SELECT bool_and(relpersistence = 'p') FROM pg_class
            WHERE oid IN ('@extschema@.fw_stat'::regclass, '@extschema@.fw_stat_unnamed'::regclass));
BEGIN
    IF NOT (counters AND deleted) THEN
        RAISE NOTICE 'the statistics of fixed_window''s table are not readable on a standby'
            USING ERRCODE = 'read_only_sql_transaction',
                  DETAIL = format('A standby holds no rows of unlogged tables (%s). ',
                                  (SELECT string_agg(c.relname, ', ' ORDER BY c.relname) FROM pg_class AS c
                                   WHERE c.oid IN ('@extschema@.fw_counter'::regclass, '@extschema@.fw_stat'::regclass,
                                                   '@extschema@.fw_stat_unnamed'::regclass)
                                     AND c.relpersistence <> 'p'))
                      || 'This server''s shared-memory statistics are counted.';
    END IF;
    IF counters AND deleted THEN
        RETURN QUERY
            SELECT p.name, c.calls, c.allowed, c.denied, c.last_denied_at, c.since, c.shadow_denied
            FROM @extschema@.fw_counter AS c
            LEFT JOIN @extschema@.fw_stat AS p ON p.name = c.name;
    ELSIF counters THEN
        RETURN QUERY
            SELECT NULL::text, c.calls, c.allowed, c.denied, c.last_denied_at, c.since, c.shadow_denied
            FROM @extschema@.fw_counter AS c;
    END IF;
    IF deleted THEN
        RETURN QUERY
            SELECT t.name, t.calls, t.allowed, t.denied, t.last_denied_at, t.since, t.shadow_denied
            FROM @extschema@.fw_stat AS t;
        RETURN QUERY
            SELECT NULL::text, u.calls, u.allowed, u.denied, u.last_denied_at, u.since, u.shadow_denied
            FROM @extschema@.fw_stat_unnamed AS u;
    END IF;
END $$;

COMMENT ON FUNCTION @extschema@.fw_table_stats() IS
'statistics of the table backend''s rows, live and deleted, in this database (used by fw_stats): under their name for the names of fw_stat, under a NULL name for the others; on a standby none, with a notice';

COMMENT ON VIEW @extschema@.fw_stats IS
'per limit or policy of this database with calls since the last fw_stats_reset(): fw_limit calls (a policy''s call counts once), allowed, denied, the last denial, the time since which it counts, shadow_denied: allowed calls that a shadow window would have denied, and no_room: calls that found no room for a new counter in shared memory (answered without a counter with fixed_window.fail_open, and then also in calls and in allowed or denied; otherwise refused with SQLSTATE 53400, and in no other column); name NULL: calls of limits that found no room for statistics of their own, in shared memory (1,024 names a server) or in the table (fw_table_stats_limit() names a database); every count only grows until fw_stats_reset(); shared-memory counts vanish on restart';

-- A reset frees every name's row, and empties fw_stat_unnamed.  The rows
-- that open transactions hold keep their counts, under a NULL name until a
-- row of their name counts a first call again (the next call on any of
-- its rows that the reset did set back to zero).
CREATE OR REPLACE FUNCTION @extschema@.fw_stats_reset()
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.fw_shmem_stats_reset();
    WITH locked AS (
        SELECT d.name, d.key, d.period_id FROM @extschema@.fw_counter AS d
        FOR NO KEY UPDATE SKIP LOCKED)
    UPDATE @extschema@.fw_counter AS c
        SET calls = 0, allowed = 0, denied = 0, last_denied_at = NULL, shadow_denied = 0,
            since = @extschema@.fw_now()
        FROM locked AS l
        WHERE c.name = l.name AND c.key = l.key AND c.period_id = l.period_id;
    DELETE FROM @extschema@.fw_stat AS s
        WHERE s.name = ANY (ARRAY(
            SELECT t.name FROM @extschema@.fw_stat AS t ORDER BY t.name FOR UPDATE));
    DELETE FROM @extschema@.fw_stat_unnamed;
$$;

-- How full the table's statistics are, for fw_capacity: the bound, the
-- names of fw_stat, the bytes of both tables.  None on a standby.
CREATE FUNCTION @extschema@.fw_table_stats_capacity(OUT capacity bigint, OUT used bigint, OUT bytes bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF pg_is_in_recovery()
       AND (SELECT relpersistence <> 'p' FROM pg_class WHERE oid = '@extschema@.fw_stat'::regclass) THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT @extschema@.fw_table_stats_limit()::bigint, count(*),
               pg_total_relation_size('@extschema@.fw_stat'::regclass)
                   + pg_total_relation_size('@extschema@.fw_stat_unnamed'::regclass)
        FROM @extschema@.fw_stat;
END $$;

COMMENT ON FUNCTION @extschema@.fw_table_stats_capacity() IS
'names whose statistics the table backend keeps apart in this database, of how many, and the bytes of fw_stat and fw_stat_unnamed (used by fw_capacity); none on a standby';

-- fw_capacity gains the table's statistics (scope statistics), beside
-- shared memory's; replaced, not dropped, so that its grants and the views
-- built on it stay.
CREATE OR REPLACE VIEW @extschema@.fw_capacity AS
    SELECT 'shmem'::text AS storage, s.scope, s.name, s.capacity, s.used, s.live, s.reclaimable,
           round(100::numeric * s.live::numeric / NULLIF(s.capacity, 0)::numeric, 1) AS live_percent,
           s.bytes
    FROM @extschema@.fw_shmem_capacity() AS s
    UNION ALL
    SELECT 'table', 'database', current_database()::text, NULL, t.used, t.live, t.reclaimable,
           NULL, t.bytes
    FROM @extschema@.fw_table_capacity() AS t
    UNION ALL
    SELECT 'table', 'statistics', current_database()::text, n.capacity, n.used, n.used, 0::bigint,
           round(100::numeric * n.used::numeric / NULLIF(n.capacity, 0)::numeric, 1), n.bytes
    FROM @extschema@.fw_table_stats_capacity() AS n;

COMMENT ON VIEW @extschema@.fw_capacity IS
'how full the stores are: for shared memory (storage shmem), the counters'' slots in all (scope counters), held by each database and role against its share, and the statistics'' entries; for the table backend (storage table), this database''s rows and bytes, and its names with statistics of their own (scope statistics). used = live + reclaimable, where reclaimable slots or rows hold counters whose window has ended, which a reclaim or fw_gc() frees; live_percent = live / capacity; no key is shown';

-- The admin's choice of the names that have series of their own in the
-- metrics: LIKE patterns, which only the extension's owner (and
-- superusers) may change; a configuration table, so that pg_dump keeps
-- them.  The pattern LIKE refuses, one that ends with its escape character
-- (an odd number of backslashes, chr(92), at the end), is refused here
-- rather than at each scrape.
CREATE TABLE @extschema@.fw_metric_name (
    pattern text COLLATE "C" PRIMARY KEY
        CONSTRAINT fw_metric_name_pattern
        CHECK ((length(pattern) - length(rtrim(pattern, chr(92)))) % 2 = 0)
);
REVOKE ALL ON @extschema@.fw_metric_name FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('@extschema@.fw_metric_name', '');

COMMENT ON TABLE @extschema@.fw_metric_name IS
'the limit and policy names that have series of their own in the metrics (fw_metrics, examples/monitoring): LIKE patterns, \ escaping _ and %; while it is empty, every name with statistics of its own';

-- The statistics as the metrics read them: per storage, one row for each
-- name with statistics of its own that fw_metric_name chooses (all while it
-- is empty), and one with a NULL name for every other call: at most 1,024
-- named rows for shared memory and as many for the table, whatever roles
-- call.  Any role may read it, as fw_stats; fw_metric_name is read as the
-- view's owner.  Operators have operands of pg_catalog's exact types.
CREATE VIEW @extschema@.fw_metrics AS
    SELECT e.storage, e.name, sum(e.calls)::bigint AS calls, sum(e.allowed)::bigint AS allowed,
           sum(e.denied)::bigint AS denied, sum(e.shadow_denied)::bigint AS shadow_denied,
           sum(e.no_room)::bigint AS no_room, max(e.last_denied_at) AS last_denied_at,
           min(e.since) AS since
    FROM (SELECT s.storage,
                 CASE WHEN NOT EXISTS (SELECT FROM @extschema@.fw_metric_name)
                        OR EXISTS (SELECT FROM @extschema@.fw_metric_name AS p WHERE s.name LIKE p.pattern)
                      THEN s.name END AS name,
                 s.calls, s.allowed, s.denied, s.shadow_denied, s.no_room, s.last_denied_at, s.since
          FROM (SELECT 'shmem'::text AS storage, m.name, m.calls, m.allowed, m.denied, m.shadow_denied,
                       m.no_room, m.last_denied_at, m.since
                FROM @extschema@.fw_shmem_stats_1_5() AS m
                UNION ALL
                SELECT 'table', t.name COLLATE "C", t.calls, t.allowed, t.denied, t.shadow_denied,
                       0::bigint, t.last_denied_at, t.since
                FROM @extschema@.fw_table_stats() AS t) AS s) AS e
    GROUP BY e.storage, e.name
    HAVING sum(e.calls) > 0::numeric OR sum(e.no_room) > 0::numeric;
GRANT SELECT ON @extschema@.fw_metrics TO PUBLIC;

COMMENT ON VIEW @extschema@.fw_metrics IS
'fw_stats as the metrics export it (examples/monitoring): per storage (shmem, table, each a series of counters of its own), one row for each name that has statistics of its own and that fw_metric_name chooses, and one whose name is NULL for every other call';
