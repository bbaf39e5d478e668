--
-- fw_clock: the clock is the real time of each call; only a superuser can fix it.
--
CREATE EXTENSION fixed_window;
SET DateStyle = 'ISO, YMD';
SET IntervalStyle = 'postgres';
SET TimeZone = 'UTC';
\set SHOW_CONTEXT never

-- The real clock, read per call, not the transaction's start.  Within one
-- transaction, after the clock has moved on, each call's window ends
-- reset_after after a time between the clock readings around it.
BEGIN;
SELECT count(*) > 0 AS busy FROM generate_series(1, 300000);
DO $$
DECLARE
    before timestamptz := clock_timestamp();
    r fw_result := fw_limit('clock', 'k', 10, '1 hour');
    after timestamptz := clock_timestamp();
    called_at timestamptz := date_trunc('hour', before) + interval '1 hour' - r.reset_after;
BEGIN
    IF date_trunc('hour', before) <> date_trunc('hour', after) THEN
        RAISE NOTICE 'skipped: the hour changed during the call';
        RETURN;
    END IF;
    ASSERT before > now(), 'the clock has moved past the transaction start';
    ASSERT called_at BETWEEN before AND after,
        format('judged at %s, not between %s and %s', called_at, before, after);
    RAISE NOTICE 'judged at the time of the call';
END $$;
COMMIT;

-- debug_now takes any finite timestamp with time zone, in the session's zone.
SET TimeZone = 'Asia/Tokyo';
SET fixed_window.debug_now = '2026-03-10 09:00:30';
SHOW fixed_window.debug_now;
SELECT reset_after FROM fw_limit('clock', 'tokyo', 1, '1 minute');
SET fixed_window.debug_now = '2026-03-10 00:00:30+00';
SELECT reset_after FROM fw_check('clock', 'tokyo', 1, '1 minute');
SET TimeZone = 'UTC';

-- Bad values are refused and leave the setting as it was.
SET fixed_window.debug_now = 'tomorrow-ish';
\echo :LAST_ERROR_SQLSTATE
SET fixed_window.debug_now = 'infinity';
\echo :LAST_ERROR_SQLSTATE
SET fixed_window.debug_now = 'epoch';
\echo :LAST_ERROR_SQLSTATE
SHOW fixed_window.debug_now;

-- Only a superuser may set it: an ordinary role that could move the clock
-- would escape its limits.
CREATE ROLE fw_clock_user;
SET ROLE fw_clock_user;
SET fixed_window.debug_now = '2030-01-01 00:00+00';
\echo :LAST_ERROR_SQLSTATE
SELECT set_config('fixed_window.debug_now', '', false);
\echo :LAST_ERROR_SQLSTATE
-- ... and the settings reserved for the extension cannot be invented.
SET fixed_window.no_such_setting = 'x';
\echo :LAST_ERROR_SQLSTATE
-- It may call the functions, on the clock it is given.
SELECT ok, remaining, reset_after FROM fw_limit('clock', 'role', 2, '1 minute');
RESET ROLE;
DROP ROLE fw_clock_user;

-- Empty means the real clock again.
SET fixed_window.debug_now = '';
SELECT abs(extract(epoch FROM date_trunc('day', clock_timestamp()) + interval '1 day'
                               - reset_after - clock_timestamp())) < 5 AS real_clock
FROM fw_check('clock', 'daily', 10, '1 day');

DROP EXTENSION fixed_window;
