--
-- fw_upgrade: an installation of 1.0 updated through every release to the
-- current one, as an admin would (ALTER EXTENSION ... UPDATE TO each
-- version): what each update adds is there and answers, counters and
-- definitions made before an update stay, and the result has exactly the
-- objects of a fresh installation.  Runs on both storages.  (TAP's
-- test/t/009_upgrade.pl updates a live installation under load.)
--
\i sql/include/preamble.sql
SET client_min_messages = warning;
SET fixed_window.debug_now = '2026-03-10 12:00:30+00';

CREATE EXTENSION fixed_window VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'fixed_window';
-- 1.0: inline limits.  Three calls of a limit of 5 an hour.
SELECT ok, remaining FROM fw_limit('upg_api', 'u1', 5, '1 hour');
SELECT ok, remaining FROM fw_limit('upg_api', 'u1', 5, '1 hour');
SELECT ok, remaining FROM fw_limit('upg_api', 'u1', 5, '1 hour', cost => 2);
SELECT name, key, remaining, rate FROM fw_counters WHERE name LIKE 'upg%' ORDER BY name, key;

ALTER EXTENSION fixed_window UPDATE TO '1.0.1';
-- 1.0.1: fw_displayable; the counter of 1.0 goes on.
SELECT fw_displayable('2026-03-10 12:00:00+00');
SELECT ok, remaining FROM fw_check('upg_api', 'u1', 5, '1 hour');

ALTER EXTENSION fixed_window UPDATE TO '1.1';
-- 1.1: named policies with several windows, overrides; fw_counters gains period.
SELECT fw_define('upg_pol', 2, '1 minute');
SELECT fw_define('upg_pol', 3, '1 hour');
SELECT fw_override('upg_pol', 'vip', 10, '1 minute');
SELECT ok, remaining FROM fw_limit('upg_pol', 'u1');
SELECT ok, remaining FROM fw_limit('upg_pol', 'u1');
SELECT ok, remaining FROM fw_limit('upg_pol', 'u1');
SELECT ok, remaining FROM fw_limit('upg_pol', 'vip');
SELECT name, rate, period FROM fw_policies ORDER BY name, period;
SELECT name, key, period, remaining FROM fw_counters WHERE name LIKE 'upg%' ORDER BY name, key, period;
SELECT period, rate, ok, remaining FROM fw_check_windows('upg_pol', 'u2') ORDER BY period;

ALTER EXTENSION fixed_window UPDATE TO '1.2';
-- 1.2: HTTP headers.
SELECT fw_headers('upg_pol', array_agg(w ORDER BY w.period)) FROM fw_limit_windows('upg_pol', 'u2') w;

ALTER EXTENSION fixed_window UPDATE TO '1.2.1';
SELECT ok, remaining FROM fw_limit('upg_api', 'u1', 5, '1 hour');

ALTER EXTENSION fixed_window UPDATE TO '1.3';
-- 1.3: fw_refund is no longer PUBLIC's; the views that hide keys are
-- security barriers; what was counted and defined before is still there.
SELECT has_function_privilege('public', 'fw_refund(text, text, integer)', 'EXECUTE') AS public_refunds;
SELECT relname, reloptions FROM pg_class
WHERE relkind = 'v' AND relname IN ('fw_counters', 'fw_overrides') ORDER BY relname;
SELECT ok, remaining FROM fw_limit('upg_api', 'u1', 5, '1 hour');
SELECT ok, remaining FROM fw_limit('upg_pol', 'u1');
SELECT name, key, period, remaining FROM fw_counters WHERE name LIKE 'upg%' ORDER BY name, key, period;
SELECT name, calls, allowed, denied FROM fw_stats WHERE name LIKE 'upg%' ORDER BY name;

ALTER EXTENSION fixed_window UPDATE TO '1.4';
-- 1.4: fw_resize_counters, for superusers only; counters stay where they
-- were, and answer as before.
SELECT has_function_privilege('public', 'fw_resize_counters(integer)', 'EXECUTE') AS public_resizes;
SELECT ok, remaining FROM fw_limit('upg_api', 'u1', 5, '1 hour');
SELECT name, key, period, remaining FROM fw_counters WHERE name LIKE 'upg%'
ORDER BY name, key, period;

ALTER EXTENSION fixed_window UPDATE TO '1.5';
-- 1.5: fw_capacity, for every role, as fw_stats; fw_stats counts the calls
-- that found no room, and keeps what it counted.
SELECT has_table_privilege('public', 'fw_capacity', 'SELECT') AS public_reads_capacity,
       has_table_privilege('public', 'fw_stats', 'SELECT') AS public_reads_stats;
SELECT name, calls, allowed, denied, no_room FROM fw_stats WHERE name LIKE 'upg%' ORDER BY name;
SELECT storage, scope FROM fw_capacity WHERE storage = 'table';
SELECT ok, remaining FROM fw_limit('upg_api', 'u1', 5, '1 hour');

ALTER EXTENSION fixed_window UPDATE TO '1.6';
-- 1.6: the counters and statistics answer as before, every name counted
-- before with statistics of its own (the table's live rows too); the
-- metrics' view is PUBLIC's, the admin's choice of names the owner's, and
-- fw_capacity shows the table's names.
SELECT ok, remaining FROM fw_limit('upg_api', 'u1', 5, '1 hour');
SELECT name, calls, allowed, denied, no_room FROM fw_stats WHERE name LIKE 'upg%' ORDER BY name;
SELECT name, calls, allowed, denied FROM fw_metrics
WHERE storage = fw_storage_in_use() AND (name LIKE 'upg%' OR name IS NULL) ORDER BY name;
SELECT has_table_privilege('public', 'fw_metrics', 'SELECT') AS public_reads_metrics,
       has_table_privilege('public', 'fw_metric_name', 'SELECT') AS public_reads_metric_names,
       has_function_privilege('public', 'fw_table_stats_capacity()', 'EXECUTE') AS public_reads_table_names,
       has_function_privilege('public', 'fw_table_stats_limit()', 'EXECUTE') AS public_calls_limit;
SELECT storage, scope, capacity FROM fw_capacity WHERE storage = 'table' ORDER BY scope;
SELECT extversion = default_version AS current
FROM pg_extension JOIN pg_available_extensions ON name = extname
WHERE extname = 'fixed_window';

-- The updated installation has exactly the objects of a fresh one: every
-- member object with its definition, privileges, owner and comment, as
-- test/t/extension_objects.sql lists them, written by each and compared.
\set extname fixed_window
\set ECHO none
\o fw_upgrade_updated.lst
\i test/t/extension_objects.sql
\o
\set ECHO all
DROP EXTENSION fixed_window;
CREATE EXTENSION fixed_window;
\set ECHO none
\o fw_upgrade_fresh.lst
\i test/t/extension_objects.sql
\o
\set ECHO all
\! cmp -s fw_upgrade_updated.lst fw_upgrade_fresh.lst && echo 'the same objects' || diff fw_upgrade_updated.lst fw_upgrade_fresh.lst
\! rm -f fw_upgrade_updated.lst fw_upgrade_fresh.lst

DROP EXTENSION fixed_window;
