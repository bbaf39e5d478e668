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
        -- fw_stat unreadable (a standby): each row under its own name, as 1.5 read them
        RETURN QUERY
            SELECT c.name, c.calls, c.allowed, c.denied, c.last_denied_at, c.since, c.shadow_denied
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
