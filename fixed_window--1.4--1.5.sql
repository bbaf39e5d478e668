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
