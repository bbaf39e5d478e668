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
