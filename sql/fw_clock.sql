--
-- fw_clock: what clock a call is judged at.  Without debug_now it is the
-- real time of the call itself, not the transaction's start (checked
-- exactly, with no tolerance, and with the same output at any time of day);
-- debug_now takes any finite timestamptz in the session's zone, refuses bad
-- values, can be set by superusers only, and empty gives the real clock back.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
\set SHOW_CONTEXT never

-- The real clock, read per call, not the transaction's start.  Inside a
-- transaction, after the clock has moved past its start, fw_limit is called
-- between two clock readings, "before" and "after".  With 1-hour windows
-- (whole UTC hours) the call was judged at its window's end minus
-- reset_after, and that end is the one whole hour in [before + reset_after,
-- after + reset_after] (the readings are less than an hour apart), the last
-- whole hour up to after + reset_after.  Whichever hour that is, the judged
-- time must lie between the readings, so the output is the same at any
-- time, also when an hour ends during the call.
BEGIN;
SELECT count(*) > 0 AS busy FROM generate_series(1, 300000);
DO $$
DECLARE
    before timestamptz := clock_timestamp();
    r fw_result := fw_limit('clock', 'k', 10, '1 hour');
    after timestamptz := clock_timestamp();
    called_at timestamptz := date_trunc('hour', after + r.reset_after) - r.reset_after;
BEGIN
    ASSERT before > now(), 'the clock has moved past the transaction start';
    ASSERT r.ok AND r.remaining = 9,
        format('fw_limit of a new key: ok %s, remaining %s, not t and 9', r.ok, r.remaining);
    ASSERT r.reset_after > interval '0' AND r.reset_after <= interval '1 hour',
        format('reset_after %s is not within one window', r.reset_after);
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
CREATE ROLE regress_fw_clock_user;
SET ROLE regress_fw_clock_user;
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
DROP ROLE regress_fw_clock_user;

-- Empty means the real clock again.  A single window of 2,400,000 hours
-- from the epoch (it ends on 2243-10-17) ends at a known instant, so
-- fw_check's reset_after gives the exact time the call was judged at, not
-- merely its time within a period: it lies between the clock readings
-- around the call.  (The 1-hour check above cannot see a clock off by whole
-- hours, such as local time taken for UTC; this one can.)
SET fixed_window.debug_now = '';
DO $$
DECLARE
    before timestamptz := clock_timestamp();
    r fw_result := fw_check('clock', 'real', 10, '2400000 hours');
    after timestamptz := clock_timestamp();
    called_at timestamptz := timestamptz '1970-01-01 00:00+00' + interval '2400000 hours' - r.reset_after;
BEGIN
    ASSERT r.ok AND r.remaining = 9,
        format('fw_check of a new key: ok %s, remaining %s, not t and 9', r.ok, r.remaining);
    ASSERT called_at BETWEEN before AND after,
        format('judged at %s, not between %s and %s', called_at, before, after);
    RAISE NOTICE 'judged on the real clock';
END $$;

DROP EXTENSION fixed_window;
