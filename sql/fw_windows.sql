--
-- fw_windows: window boundaries for exact, calendar, future and per-key starts.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql

-- The end of the window that contains "at", for a limit: fw_check at that
-- time, plus its reset_after.
CREATE FUNCTION window_end_at(at timestamptz, period interval, start timestamptz,
                              key text DEFAULT 'k')
RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('fixed_window.debug_now', at::text, false);
    RETURN at + (fw_check('windows', key, 1, period, start)).reset_after;
END $$;

-- Calendar windows are computed in UTC whatever the session's TimeZone.
SET TimeZone = 'America/Los_Angeles';

-- From 2026-01-31 by '1 month': the 31st, or the month's last day.  Just
-- before each boundary the window ends at it; at the boundary the next one
-- begins.  "expected" is PostgreSQL's own start + k * period, in UTC.
SELECT k,
       (timestamp '2026-01-31' + k * interval '1 month') AS expected,
       window_end_at(b - interval '1 microsecond', '1 month', '2026-01-31 00:00+00') = b AS ends_at_boundary,
       window_end_at(b, '1 month', '2026-01-31 00:00+00') AT TIME ZONE 'UTC' AS next_end
FROM generate_series(1, 14) AS k,
     LATERAL (SELECT (timestamp '2026-01-31' + k * interval '1 month') AT TIME ZONE 'UTC' AS b) AS x;

-- Leap years: yearly windows from a leap day, monthly windows across February.
SELECT k, window_end_at(b - interval '1 microsecond', '1 year', '2024-02-29 00:00+00') AT TIME ZONE 'UTC' AS window_end
FROM generate_series(1, 4) AS k,
     LATERAL (SELECT (timestamp '2024-02-29' + k * interval '1 year') AT TIME ZONE 'UTC' AS b) AS x;
SELECT at, window_end_at(at AT TIME ZONE 'UTC', '1 month', '2023-03-31 12:00+00') AT TIME ZONE 'UTC' AS window_end
FROM unnest(ARRAY[timestamp '2024-02-15', '2024-02-29 11:59:59.999999', '2024-02-29 12:00',
                  '2100-02-28 12:00', '2000-02-29 12:00']) AS at;

-- A month with day and time parts: each window is 1 month, 1 day and 1 hour.
SELECT k, window_end_at(b - interval '1 microsecond', '1 month 1 day 1 hour', '2026-01-31 00:00+00') AT TIME ZONE 'UTC' AS window_end,
       (timestamp '2026-01-31' + k * interval '1 month 1 day 1 hour') AS expected
FROM generate_series(1, 4) AS k,
     LATERAL (SELECT (timestamp '2026-01-31' + k * interval '1 month 1 day 1 hour') AT TIME ZONE 'UTC' AS b) AS x;

-- Days are 24 hours, not calendar days: a daylight saving change in the
-- session's zone moves nothing.
SELECT window_end_at('2026-03-08 12:00-07', '1 day', '2026-01-01 00:00+00') AT TIME ZONE 'UTC' AS window_end;

-- A start in the future: its windows extend backwards too.
SELECT window_end_at('2026-03-10 12:00+00', '1 day', '2030-01-01 06:00+00') AT TIME ZONE 'UTC' AS window_end;
SELECT window_end_at('2026-03-10 12:00+00', '1 month', '2031-07-31 00:00+00') AT TIME ZONE 'UTC' AS window_end;
-- A start at an odd instant: windows of 7 minutes from 10:03:17.5.
SELECT window_end_at('2026-03-10 12:00+00', '7 minutes', '2026-03-10 10:03:17.5+00') AT TIME ZONE 'UTC' AS window_end;

-- Microsecond windows.
SET fixed_window.debug_now = '2026-03-10 12:00:00.000005+00';
SELECT * FROM fw_limit('tiny', 'k', 1, '1 microsecond');
SELECT * FROM fw_limit('tiny', 'k', 1, '1 microsecond');
SET fixed_window.debug_now = '2026-03-10 12:00:00.000006+00';
SELECT * FROM fw_limit('tiny', 'k', 1, '1 microsecond');
SELECT * FROM fw_limit('tiny', 'k', 2, '3 microseconds', cost => 2);

-- Multi-year windows: exact (36500 days) and calendar (100 and 1000 years).
SELECT window_end_at('2026-03-10 12:00+00', '36500 days', '1970-01-01 00:00+00') AT TIME ZONE 'UTC' AS exact_end,
       window_end_at('2026-03-10 12:00+00', '100 years', '1970-01-01 00:00+00') AT TIME ZONE 'UTC' AS century_end,
       window_end_at('2026-03-10 12:00+00', '1000 years', '1970-01-01 00:00+00') AT TIME ZONE 'UTC' AS millennium_end;
SET fixed_window.debug_now = '2026-03-10 12:00+00';
SELECT * FROM fw_limit('decade', 'k', 1, '10 years');
SELECT * FROM fw_limit('decade', 'k', 1, '10 years');
-- Rollover across many elapsed windows stops at the capacity.
SET fixed_window.debug_now = '2026-03-10 12:00+00';
SELECT remaining FROM fw_limit('roll', 'k', 3, '1 second', cost => 3, capacity => 1000);
SET fixed_window.debug_now = '2026-03-10 12:05+00';
SELECT remaining FROM fw_limit('roll', 'k', 3, '1 second', cost => 0, capacity => 1000);
SET fixed_window.debug_now = '2026-03-11 12:05+00';
SELECT remaining FROM fw_limit('roll', 'k', 3, '1 second', cost => 0, capacity => 1000);

-- start => NULL: every (name, key) has its own phase, derived from a hash
-- of name and key, stable across calls and sessions, within one period.
CREATE TABLE phases AS
SELECT key, window_end_at('2026-03-10 12:00+00', '1 hour', NULL, key) AS window_end
FROM (SELECT 'user' || g AS key FROM generate_series(1, 20) AS g) AS keys;
SELECT count(DISTINCT window_end) > 10 AS spread,
       bool_and(window_end > '2026-03-10 12:00+00' AND window_end <= '2026-03-10 13:00+00') AS within_one_period
FROM phases;
\c -
SET DateStyle = 'ISO, YMD';
SET IntervalStyle = 'postgres';
SET TimeZone = 'America/Los_Angeles';
SELECT bool_and(window_end_at('2026-03-10 12:00+00', '1 hour', NULL, key) = window_end) AS stable,
       bool_and(window_end_at('2026-03-10 15:00+00', '1 hour', NULL, key) = window_end + interval '3 hours') AS periodic
FROM phases;
-- The phase is where the key's windows start: a key's counter refills there.
SELECT key, window_end AS phase_boundary FROM phases WHERE key = 'user1' \gset
SELECT set_config('fixed_window.debug_now', (:'phase_boundary'::timestamptz - interval '1 microsecond')::text, false) IS NOT NULL AS clock_set;
SELECT ok, remaining FROM fw_limit('windows', 'user1', 1, '1 hour', NULL);
SELECT ok, retry_after FROM fw_limit('windows', 'user1', 1, '1 hour', NULL);
SELECT set_config('fixed_window.debug_now', :'phase_boundary', false) IS NOT NULL AS clock_set;
SELECT ok, remaining FROM fw_limit('windows', 'user1', 1, '1 hour', NULL);
-- Calendar periods get a phase too.
SELECT window_end_at('2026-03-10 12:00+00', '1 month', NULL, 'user1')
       = window_end_at('2026-04-10 12:00+00', '1 month', NULL, 'user1') - interval '1 month' AS monthly_phase_stable;

DROP EXTENSION fixed_window;
