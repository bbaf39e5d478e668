-- fw_capacity: how full the stores are.  In a database of its own, so that
-- its rows count this test's counters only; its figures are the same on a
-- preloaded server and without preload.  Its calls keep counters in shared
-- memory first, then in the table: storage is chosen for a database.
CREATE DATABASE regress_fw_capacity;
ALTER DATABASE regress_fw_capacity SET fixed_window.storage = 'shmem';
\c regress_fw_capacity
-- Operators of another schema on the search_path when the extension is
-- made, for operand types pg_catalog has no exact operator for: the views'
-- operators are pg_catalog's, and reading them never runs these.
CREATE FUNCTION public.fw_capacity_trap(numeric, bigint) RETURNS numeric
LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'trap ran as %', current_user; RETURN 0; END $$;
CREATE FUNCTION public.fw_capacity_trap_gt(numeric, integer) RETURNS boolean
LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'trap ran as %', current_user; RETURN true; END $$;
CREATE OPERATOR public.* (LEFTARG = numeric, RIGHTARG = bigint, FUNCTION = public.fw_capacity_trap);
CREATE OPERATOR public./ (LEFTARG = numeric, RIGHTARG = bigint, FUNCTION = public.fw_capacity_trap);
CREATE OPERATOR public.> (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = public.fw_capacity_trap_gt);
CREATE EXTENSION fixed_window;

-- Counts only, no key.
SELECT attname, format_type(atttypid, atttypmod)
FROM pg_attribute WHERE attrelid = 'fw_capacity'::regclass AND attnum > 0
ORDER BY attnum;

-- 30 counters of a minute and 20 of a century; a key of 200 bytes takes
-- overflow slots too.
SET fixed_window.debug_now = '2024-01-01 00:00:00+00';
SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 30) g, fw_limit('cap_minute', g::text, 5, '1 minute');
SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 20) g, fw_limit('cap_century', g::text, 5, '100 years');
SELECT ok FROM fw_limit('cap_century', repeat('k', 200), 5, '100 years');
-- a counter that carries tokens over: a reclaim frees it once its window
-- has ended, tokens and all, so it is reclaimable then
SELECT ok FROM fw_limit('cap_minute', 'rollover', 5, '1 minute', capacity => 10);

-- This database's share: every slot live while the minute lasts.
CREATE VIEW this_database AS
    SELECT storage, scope, capacity = greatest(1, current_setting('fixed_window.max_counters')::bigint
                                                * current_setting('fixed_window.database_share')::int / 100) AS its_share,
           used, live, reclaimable,
           live_percent = round(100::numeric * live::numeric / capacity::numeric, 1) AS percent_right,
           bytes IS NULL AS no_bytes
    FROM fw_capacity WHERE scope = 'database' AND name = current_database();
SELECT * FROM this_database;

-- Five minutes later the minute's counters are reclaimable, not yet freed.
SET fixed_window.debug_now = '2024-01-01 00:05:00+00';
SELECT * FROM this_database;

-- The whole table: its size, at least this database's slots, its memory;
-- the session's role holds this database's slots (and maybe more).
SELECT c.capacity = current_setting('fixed_window.max_counters')::bigint AS all_slots,
       c.used = c.live + c.reclaimable AS used_adds_up,
       c.live >= d.live AND c.reclaimable >= d.reclaimable AS holds_the_database,
       c.bytes > c.capacity * 120 AS bytes_for_every_slot
FROM fw_capacity AS c, fw_capacity AS d
WHERE c.scope = 'counters' AND d.storage = 'shmem' AND d.scope = 'database'
  AND d.name = current_database();
SELECT r.capacity = greatest(1, current_setting('fixed_window.max_counters')::bigint
                                * current_setting('fixed_window.role_share')::int / 100) AS its_share,
       r.live >= d.live AND r.reclaimable >= d.reclaimable AS holds_the_database
FROM fw_capacity AS r, fw_capacity AS d
WHERE r.scope = 'role' AND r.name = session_user
  AND d.storage = 'shmem' AND d.scope = 'database' AND d.name = current_database();

-- The statistics: this database's two names and maybe others, of 1024;
-- this database's two, of its share.
SELECT capacity, used >= 2 AS names, used = live AND reclaimable = 0 AS never_reclaimed,
       bytes > 0 AS has_memory
FROM fw_capacity WHERE scope = 'statistics' AND name IS NULL;
SELECT capacity = greatest(1, 1024 * current_setting('fixed_window.database_share')::int / 100) AS its_share,
       used, live, reclaimable, bytes
FROM fw_capacity WHERE storage = 'shmem' AND scope = 'statistics' AND name = current_database();

-- The table backend in this database: its rows, those fw_gc() deletes now,
-- its size; and its names with statistics of their own (1.6), of 1,024,
-- which fw_gc() keeps.
ALTER DATABASE regress_fw_capacity SET fixed_window.storage = 'table';
\c regress_fw_capacity
SET fixed_window.debug_now = '2024-01-01 00:00:00+00';
SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 10) g, fw_limit('cap_minute', g::text, 5, '1 minute');
SELECT count(*) FILTER (WHERE ok) FROM generate_series(1, 5) g, fw_limit('cap_century', g::text, 5, '100 years');
-- a counter that carries tokens over stays live, as fw_gc() keeps it
SELECT ok FROM fw_limit('cap_rollover', 'k', 5, '1 minute', capacity => 10);
CREATE VIEW this_table AS
    SELECT storage, scope, name = current_database() AS this_database, capacity, used, live,
           reclaimable, live_percent, bytes > 0 AS has_bytes
    FROM fw_capacity WHERE storage = 'table';
SELECT * FROM this_table;
SET fixed_window.debug_now = '2024-01-01 00:05:00+00';
SELECT * FROM this_table;
SELECT fw_gc() AS deleted;
SELECT * FROM this_table;

-- Any role reads it, as it reads fw_stats, and sees no key.
CREATE ROLE regress_fw_capacity_reader;
SET ROLE regress_fw_capacity_reader;
SELECT storage, scope, used, live, reclaimable FROM fw_capacity
WHERE scope = 'database' AND name = current_database() ORDER BY storage;
SELECT name, calls, allowed, denied, no_room FROM fw_stats ORDER BY name;
RESET ROLE;

-- No trap ran above; the extension's views use none.
SELECT r.ev_class::regclass AS view, count(o.oid) AS traps
FROM pg_rewrite r
JOIN pg_depend e ON e.classid = 'pg_class'::regclass AND e.objid = r.ev_class AND e.deptype = 'e'
LEFT JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
                     AND d.refclassid = 'pg_operator'::regclass
LEFT JOIN pg_operator o ON o.oid = d.refobjid AND o.oprnamespace = 'public'::regnamespace
WHERE r.ev_class IN ('fw_capacity'::regclass, 'fw_stats'::regclass)
GROUP BY 1 ORDER BY r.ev_class::regclass::text;

-- README (Upgrading to 1.5): keeping fw_capacity to pg_monitor, as written.
REVOKE SELECT ON fw_capacity FROM PUBLIC; REVOKE EXECUTE ON
FUNCTION fw_shmem_capacity(), fw_table_capacity() FROM PUBLIC; GRANT SELECT
ON fw_capacity TO pg_monitor; GRANT EXECUTE ON FUNCTION
fw_shmem_capacity(), fw_table_capacity() TO pg_monitor;
SET ROLE regress_fw_capacity_reader;
SELECT count(*) FROM fw_capacity;
SELECT count(*) FROM fw_shmem_capacity();
SELECT count(*) FROM fw_table_capacity();
RESET ROLE;
GRANT pg_monitor TO regress_fw_capacity_reader;
SET ROLE regress_fw_capacity_reader;
SELECT count(*) > 0 AS reads_it FROM fw_capacity;
RESET ROLE;

-- A declaration with more columns than the library fills, as SQL objects
-- of a later version would make, is refused.
CREATE FUNCTION wider_stats(OUT name text, OUT calls bigint, OUT allowed bigint, OUT denied bigint,
    OUT last_denied_at timestamptz, OUT since timestamptz, OUT shadow_denied bigint,
    OUT no_room bigint, OUT later bigint)
RETURNS SETOF record AS 'fixed_window', 'fw_shmem_stats_1_5' LANGUAGE C;
SELECT * FROM wider_stats();
\set VERBOSITY sqlstate
SELECT * FROM wider_stats();
\set VERBOSITY default

\c contrib_regression
DROP DATABASE regress_fw_capacity;
DROP ROLE regress_fw_capacity_reader;
