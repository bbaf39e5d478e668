--
-- fw_metrics: the statistics as examples/monitoring exports them (1.6): per
-- storage, one row for each name that has statistics of its own and that
-- the admin's patterns in fw_metric_name choose (all of them while it is
-- empty), and one row whose name is NULL for all the other calls.  Any role
-- reads it; only the extension's owner chooses.  Runs on both storages.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
SET fixed_window.debug_now = '2026-04-01 12:00:00+00';
SELECT fw_stats_reset();
CREATE ROLE regress_fw_reader;

SELECT ok FROM fw_limit('met_api', 'k', 1, '1 hour');
SELECT ok FROM fw_limit('met_api', 'k', 1, '1 hour');
SELECT ok FROM fw_limit('met_login', 'k', 5, '1 hour');
SELECT ok FROM fw_limit('met%other', 'k', 5, '1 hour');
SELECT ok FROM fw_limit('other', 'k', 5, '1 hour');

-- This storage's rows.
CREATE FUNCTION pg_temp.metrics() RETURNS TABLE (name text, calls bigint, allowed bigint, denied bigint,
                                                 shadow_denied bigint, no_room bigint, last_denied_at timestamptz)
LANGUAGE sql AS $$
    SELECT m.name, m.calls, m.allowed, m.denied, m.shadow_denied, m.no_room, m.last_denied_at
    FROM fw_metrics AS m WHERE m.storage = fw_storage_in_use() ORDER BY m.name COLLATE "C" NULLS LAST
$$;

-- While fw_metric_name is empty, every name with statistics of its own.
SELECT count(*) FROM fw_metric_name;
SELECT * FROM pg_temp.metrics();
-- The admin's choice: LIKE patterns; the other names are counted together.
INSERT INTO fw_metric_name VALUES ('met\_%');
SELECT * FROM pg_temp.metrics();
INSERT INTO fw_metric_name VALUES ('other');
SELECT * FROM pg_temp.metrics();
DELETE FROM fw_metric_name WHERE pattern = 'met\_%';
SELECT * FROM pg_temp.metrics();
-- A pattern LIKE would refuse at each scrape, ending with its escape
-- character, is refused at once; an escaped backslash is a pattern.
\set VERBOSITY terse
INSERT INTO fw_metric_name VALUES ('met\');
\set VERBOSITY default
INSERT INTO fw_metric_name VALUES ('met\\');
SELECT 'met\' LIKE pattern AS matches_a_backslash FROM fw_metric_name WHERE pattern LIKE 'met%';
DELETE FROM fw_metric_name WHERE pattern LIKE 'met%';
-- fw_stats is the same whatever the choice.
SELECT name, calls, allowed, denied FROM fw_stats ORDER BY name COLLATE "C";

-- Any role reads fw_metrics; fw_metric_name is the owner's.
SET ROLE regress_fw_reader;
SELECT name, calls FROM fw_metrics WHERE storage = fw_storage_in_use() ORDER BY name COLLATE "C" NULLS LAST;
\set VERBOSITY terse
SELECT count(*) FROM fw_metric_name;
INSERT INTO fw_metric_name VALUES ('%');
\set VERBOSITY default
RESET ROLE;
-- It is a configuration table: pg_dump keeps the admin's choice.
SELECT c.relname FROM pg_extension AS e, unnest(e.extconfig) AS x(oid) JOIN pg_class AS c ON c.oid = x.oid
WHERE e.extname = 'fixed_window' ORDER BY c.relname;

DROP FUNCTION pg_temp.metrics();
DROP ROLE regress_fw_reader;
SELECT fw_stats_reset();
DROP EXTENSION fixed_window;
