-- fixed_window, SQL edition: the admin views of the C extension 1.6, with
-- its definitions, columns and grants.  Their shared-memory halves read
-- functions that return no rows here (40_shmem.sql); the table halves read
-- fw_counter, fw_stat and fw_stat_unnamed through SECURITY DEFINER
-- functions (42_table_reading.sql), as no role but the owner may read those
-- tables.  Views that hide rows or keys are security barriers.  Operators
-- have operands of pg_catalog's exact types, so that no operator of another
-- schema on the search_path at installation can be taken for one.

CREATE VIEW fw_counters WITH (security_barrier) AS
    SELECT s.name, s.key, 'shmem'::text AS storage, s.window_start, s.window_end,
           s.remaining, s.rate, s.capacity, s.period_id::interval AS period
    FROM fw_shmem_counters() AS s
    WHERE s.window_end > (SELECT fw_now())
    UNION ALL
    SELECT c.name COLLATE "C", c.key COLLATE "C", 'table', c.window_start, c.window_end,
           c.remaining, c.rate, c.capacity, c.period_id::interval
    FROM fw_table_counters() AS c
    WHERE c.window_end > (SELECT fw_now());
GRANT SELECT ON fw_counters TO PUBLIC;
COMMENT ON VIEW fw_counters IS
    'one row per counter of this database whose window is current, in either storage; remaining = 0 means throttled now; keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats';
-- (fw_now() is read once per query, not once per row as the C extension's
-- cheap C function is: in PL/pgSQL it costs a lookup of the setting's grant.)

CREATE VIEW fw_policies AS
    SELECT p.name, p.period, p.rate, p.capacity, p.start, p.shadow, p.comment
    FROM fw_policy AS p;
GRANT SELECT ON fw_policies TO PUBLIC;
COMMENT ON VIEW fw_policies IS
    'the windows of every named policy of this database, with their comments; start NULL: each key''s own phase';

CREATE VIEW fw_overrides WITH (security_barrier) AS
    SELECT o.name, o.key, o.period, o.rate, o.capacity, o.period IS NULL AS exempt, o.created_by
    FROM fw_override AS o
    WHERE fw_may_see_key(coalesce((SELECT r.oid FROM pg_roles AS r WHERE r.rolname = o.created_by), 0));
GRANT SELECT ON fw_overrides TO PUBLIC;
COMMENT ON VIEW fw_overrides IS
    'overrides and exemptions of keys; a role sees those it made, superusers and members of pg_read_all_stats see all';

CREATE VIEW fw_stats AS
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
GRANT SELECT ON fw_stats TO PUBLIC;
COMMENT ON VIEW fw_stats IS
    'per limit or policy of this database with calls since the last fw_stats_reset(): fw_limit calls (a policy''s call counts once), allowed, denied, the last denial, the time since which it counts, shadow_denied: allowed calls that a shadow window would have denied, and no_room: calls that found no room for a new counter in shared memory (answered without a counter with fixed_window.fail_open, and then also in calls and in allowed or denied; otherwise refused with SQLSTATE 53400, and in no other column); name NULL: calls of limits that found no room for statistics of their own, in shared memory (1,024 names a server) or in the table (fw_table_stats_limit() names a database); every count only grows until fw_stats_reset(); shared-memory counts vanish on restart';

CREATE VIEW fw_capacity AS
    SELECT 'shmem'::text AS storage, s.scope, s.name, s.capacity, s.used, s.live, s.reclaimable,
           round(100::numeric * s.live::numeric / NULLIF(s.capacity, 0)::numeric, 1) AS live_percent,
           s.bytes
    FROM fw_shmem_capacity() AS s
    UNION ALL
    SELECT 'table', 'database', current_database()::text, NULL, t.used, t.live, t.reclaimable,
           NULL, t.bytes
    FROM fw_table_capacity() AS t
    UNION ALL
    SELECT 'table', 'statistics', current_database()::text, n.capacity, n.used, n.used, 0::bigint,
           round(100::numeric * n.used::numeric / NULLIF(n.capacity, 0)::numeric, 1), n.bytes
    FROM fw_table_stats_capacity() AS n;
GRANT SELECT ON fw_capacity TO PUBLIC;
COMMENT ON VIEW fw_capacity IS
    'how full the stores are: for shared memory (storage shmem), the counters'' slots in all (scope counters), held by each database and role against its share, and the statistics'' entries; for the table backend (storage table), this database''s rows and bytes, and its names with statistics of their own (scope statistics). used = live + reclaimable, where reclaimable slots or rows hold counters whose window has ended, which a reclaim or fw_gc() frees; live_percent = live / capacity; no key is shown';

-- fw_metric_name is read as the view's owner.
CREATE VIEW fw_metrics AS
    SELECT e.storage, e.name, sum(e.calls)::bigint AS calls, sum(e.allowed)::bigint AS allowed,
           sum(e.denied)::bigint AS denied, sum(e.shadow_denied)::bigint AS shadow_denied,
           sum(e.no_room)::bigint AS no_room, max(e.last_denied_at) AS last_denied_at,
           min(e.since) AS since
    FROM (SELECT s.storage,
                 CASE WHEN NOT EXISTS (SELECT FROM fw_metric_name)
                        OR EXISTS (SELECT FROM fw_metric_name AS p WHERE s.name LIKE p.pattern)
                      THEN s.name END AS name,
                 s.calls, s.allowed, s.denied, s.shadow_denied, s.no_room, s.last_denied_at, s.since
          FROM (SELECT 'shmem'::text AS storage, m.name, m.calls, m.allowed, m.denied, m.shadow_denied,
                       m.no_room, m.last_denied_at, m.since
                FROM fw_shmem_stats_1_5() AS m
                UNION ALL
                SELECT 'table', t.name COLLATE "C", t.calls, t.allowed, t.denied, t.shadow_denied,
                       0::bigint, t.last_denied_at, t.since
                FROM fw_table_stats() AS t) AS s) AS e
    GROUP BY e.storage, e.name
    HAVING sum(e.calls) > 0::numeric OR sum(e.no_room) > 0::numeric;
GRANT SELECT ON fw_metrics TO PUBLIC;
COMMENT ON VIEW fw_metrics IS
    'fw_stats as the metrics export it (examples/monitoring): per storage (shmem, table, each a series of counters of its own), one row for each name that has statistics of its own and that fw_metric_name chooses, and one whose name is NULL for every other call';

-- The configuration tables, kept by pg_dump (the C extension's
-- pg_extension_config_dump): possible only while CREATE EXTENSION runs the
-- script, so skipped by the plain script, whose tables pg_dump dumps anyway.
DO $$
BEGIN
    PERFORM pg_catalog.pg_extension_config_dump('fw_policy'::regclass, '');
    PERFORM pg_catalog.pg_extension_config_dump('fw_override'::regclass, '');
    PERFORM pg_catalog.pg_extension_config_dump('fw_metric_name'::regclass, '');
    PERFORM pg_catalog.pg_extension_config_dump('fw_setting_grant'::regclass, '');
EXCEPTION WHEN feature_not_supported OR object_not_in_prerequisite_state THEN
    NULL;
END $$;
