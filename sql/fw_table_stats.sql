--
-- fw_table_stats: the table backend keeps the statistics of at most 1,024
-- limit names a database apart (1.6), as shared memory keeps 1,024 a
-- server: the calls of names past them are counted together, in the row
-- of fw_table_stats() (and fw_stats) whose name is NULL.  Names come first
-- come first served, so that a role making names cannot push out those
-- counted before; fw_gc() and deleted rows keep the bound; fw_stats_reset()
-- frees the names.  Runs on the table backend.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
SET fixed_window.debug_now = '2026-04-01 12:00:00+00';
CREATE ROLE regress_fw_flood;

-- The table's statistics, by name: how many names, the calls of the first
-- one and of the names counted together.
CREATE FUNCTION pg_temp.table_stats(OUT names bigint, OUT first_calls numeric,
                                    OUT unnamed_calls numeric, OUT calls numeric)
LANGUAGE sql AS $$
    SELECT count(DISTINCT name), sum(calls) FILTER (WHERE name = 'tst_first'),
           sum(calls) FILTER (WHERE name IS NULL), sum(calls)
    FROM fw_table_stats()
$$;

-- A name counted first, then 1,100 names made by an ordinary role: 1,023 of
-- them get a place of their own, 77 are counted together.
SELECT ok FROM fw_limit('tst_first', 'k', 1, '1 hour');
SELECT ok FROM fw_limit('tst_first', 'k', 1, '1 hour');
SET ROLE regress_fw_flood;
SELECT count(*) FROM (SELECT fw_limit('tst_flood' || g, 'k', 1, '1 hour')
                      FROM generate_series(1, 1100) AS g) AS c;
RESET ROLE;
SELECT * FROM pg_temp.table_stats();
SELECT name, calls, allowed, denied FROM fw_stats WHERE name IN ('tst_first', 'tst_flood1023', 'tst_flood1024');
SELECT storage, scope, name = current_database() AS this_database, capacity, used, live, reclaimable,
       live_percent, bytes > 0 AS has_bytes
FROM fw_capacity WHERE storage = 'table' AND scope = 'statistics';

-- A new key of a name with a place is counted under the name; of one
-- without, with the others.
SELECT ok FROM fw_limit('tst_flood1', 'k2', 1, '1 hour');
SELECT ok FROM fw_limit('tst_flood1100', 'k2', 1, '1 hour');
SELECT * FROM pg_temp.table_stats();

-- fw_gc() deletes every row; their statistics stay, within the bound.
SET fixed_window.debug_now = '2026-04-01 14:00:00+00';
SELECT fw_gc();
SELECT count(*) AS rows_left FROM fw_counter;
SELECT * FROM pg_temp.table_stats();
SELECT name, calls, allowed, denied FROM fw_stats WHERE name IN ('tst_first', 'tst_flood1023', 'tst_flood1024');
-- New names after it are counted together too; the first name's new rows
-- under its name.
SET ROLE regress_fw_flood;
SELECT count(*) FROM (SELECT fw_limit('tst_later' || g, 'k', 1, '1 hour')
                      FROM generate_series(1, 10) AS g) AS c;
RESET ROLE;
SELECT ok FROM fw_limit('tst_first', 'k', 1, '1 hour');
SELECT * FROM pg_temp.table_stats();
-- An admin's DELETE and fw_reset() keep them the same way.
DELETE FROM fw_counter WHERE name IN ('tst_later1', 'tst_first');
SELECT fw_reset('tst_later2');
SELECT * FROM pg_temp.table_stats();

-- An admin's DELETE from fw_stat frees a place, even for this session, which
-- found the table full: the next name counted takes it.
DELETE FROM fw_stat WHERE name = 'tst_flood5';
SELECT ok FROM fw_limit('tst_flood1099', 'k3', 1, '1 hour');
SELECT ok FROM fw_limit('tst_flood1098', 'k3', 1, '1 hour');
SELECT name, calls FROM fw_stats WHERE name IN ('tst_flood5', 'tst_flood1098', 'tst_flood1099') ORDER BY name;
SELECT * FROM pg_temp.table_stats();

-- fw_stats_reset() frees every place: the names called next take them,
-- on new rows and on rows that were there.
SELECT ok FROM fw_limit('tst_flood1100', 'k', 1, '1 hour');
SELECT fw_stats_reset();
SELECT * FROM pg_temp.table_stats();
SELECT used FROM fw_capacity WHERE storage = 'table' AND scope = 'statistics';
SELECT ok FROM fw_limit('tst_flood1100', 'k', 1, '1 hour');
SELECT ok FROM fw_limit('tst_after', 'k', 1, '1 hour');
SELECT name, calls, allowed, denied FROM fw_stats WHERE name LIKE 'tst%' ORDER BY name;
SELECT used FROM fw_capacity WHERE storage = 'table' AND scope = 'statistics';

-- A name whose place an admin took away is counted together until a row of
-- it counts its first call.
DELETE FROM fw_stat WHERE name = 'tst_after';
SELECT ok FROM fw_limit('tst_after', 'k', 1, '1 hour');
SELECT name, sum(calls) AS calls FROM fw_table_stats() GROUP BY name HAVING sum(calls) > 0 ORDER BY name;
SELECT ok FROM fw_limit('tst_after', 'k2', 1, '1 hour');
SELECT name, sum(calls) AS calls FROM fw_table_stats() GROUP BY name HAVING sum(calls) > 0 ORDER BY name;

DROP FUNCTION pg_temp.table_stats();
DROP ROLE regress_fw_flood;
DROP EXTENSION fixed_window;
