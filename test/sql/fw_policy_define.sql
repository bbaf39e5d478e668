--
-- fw_policy: named policies (1.1).  fw_define, fw_undefine, fw_policies;
-- named fw_limit, fw_check, fw_limit_windows and fw_check_windows, all or
-- nothing over the windows of a policy (seed 003's "2,000 per hour and 33
-- per minute" as one policy); shadow windows; overrides and exemptions;
-- refunds; the trigger naming a policy; fw_counters, fw_stats and fw_reset
-- with policies; changes of definition; privileges; every bad input with its
-- SQLSTATE.  Runs on both storages, with the clock fixed by debug_now; each
-- section has policies of its own.
--
CREATE EXTENSION fixed_window;
SET DateStyle = 'ISO, YMD';
SET IntervalStyle = 'postgres';
SET TimeZone = 'UTC';
\set SHOW_CONTEXT never
\set VERBOSITY sqlstate
SET fixed_window.debug_now = '2026-07-01 10:00:00+00';

-- The SQLSTATE of a statement, or 'no error'.
CREATE FUNCTION sqlstate_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;
-- The SQLSTATE and message of a statement's error.
CREATE FUNCTION error_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- The new functions: definitions are SECURITY DEFINER and not for PUBLIC;
-- calls are for everyone; none is strict (a NULL is an error, not a NULL).
SELECT p.oid::regprocedure AS function, p.prosecdef AS security_definer, p.proisstrict AS strict,
       EXISTS (SELECT FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) AS a
               WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE') AS public_may_execute
FROM pg_proc AS p
WHERE p.proname IN ('fw_define', 'fw_undefine', 'fw_override', 'fw_exempt', 'fw_unoverride',
                    'fw_limit', 'fw_check', 'fw_limit_windows', 'fw_check_windows', 'fw_refund')
ORDER BY p.oid::regprocedure::text;
SELECT p.proname, pg_get_function_arguments(p.oid) AS arguments
FROM pg_proc AS p
WHERE p.proname IN ('fw_define', 'fw_undefine', 'fw_override', 'fw_exempt', 'fw_unoverride',
                    'fw_limit_windows', 'fw_check_windows', 'fw_refund')
ORDER BY p.oid::regprocedure::text;
-- The views: fw_counters gains period, fw_stats shadow_denied.
SELECT c.relname AS view,
       string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) AS columns
FROM pg_class AS c
JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE c.relname IN ('fw_policies', 'fw_overrides', 'fw_counters', 'fw_stats')
  AND c.relnamespace = 'public'::regnamespace
GROUP BY c.relname ORDER BY c.relname;

--
-- Definitions.
--
-- One window: 10 per minute, with the defaults (epoch start, capacity =
-- rate, enforced, no comment).
SELECT fw_define('pol_def', 10, '1 minute');
SELECT * FROM fw_policies WHERE name = 'pol_def' ORDER BY period;
-- '60 seconds' is the same window length as '1 minute': replaced, not added.
SELECT fw_define('pol_def', 20, '60 seconds', comment => 'twenty a minute');
SELECT * FROM fw_policies WHERE name = 'pol_def' ORDER BY period;
-- More windows, with a capacity, a start, a shadow and comments.
SELECT fw_define('pol_def', 500, '1 hour', capacity => 800, comment => 'saves up to 800');
SELECT fw_define('pol_def', 2000, '1 day', start => '2026-01-01 06:00+00');
SELECT fw_define('pol_def', 5, '1 second', shadow => true, comment => 'watching bursts');
SELECT * FROM fw_policies WHERE name = 'pol_def' ORDER BY period;
-- A window defined again is replaced as a whole: '3600 seconds' is the hour
-- (capacity back to the rate, no comment), '24 hours' the day.
SELECT fw_define('pol_def', 600, '3600 seconds');
SELECT fw_define('pol_def', 2400, '24 hours', start => '2026-01-01 06:00+00', comment => 'daily from 06:00');
SELECT * FROM fw_policies WHERE name = 'pol_def' ORDER BY period;
-- Calendar periods are not exact ones: '1 mon' and '30 days' are two
-- windows (which PostgreSQL's interval comparison calls equal), '12 mons' is
-- the year.
SELECT fw_define('pol_cal', 100, '1 mon');
SELECT fw_define('pol_cal', 90, '30 days');
SELECT fw_define('pol_cal', 1000, '1 year');
SELECT fw_define('pol_cal', 1200, '12 mons');
SELECT period, rate FROM fw_policies WHERE name = 'pol_cal' ORDER BY rate;
-- start NULL: each key its own phase.
SELECT fw_define('pol_phase', 3, '1 hour', start => NULL);
SELECT name, period, rate, start IS NULL AS own_phase FROM fw_policies WHERE name = 'pol_phase';
-- At most 8 windows; a 9th is refused with 54000, replacing one of the 8
-- still works.
DO $$ BEGIN
    FOR g IN 1..8 LOOP
        PERFORM fw_define('pol_nine', g, g * interval '1 second');
    END LOOP;
END $$;
SELECT fw_define('pol_nine', 9, '9 seconds');
SELECT fw_define('pol_nine', 80, '8 seconds');
SELECT count(*) AS windows, sum(rate) AS rates FROM fw_policies WHERE name = 'pol_nine';
-- A call on 8 windows (10:00:00 is a multiple of 840 seconds from the
-- epoch: every window starts now).  g per g seconds leaves g - 1.
SELECT period, rate, ok, remaining, reset_after FROM fw_limit_windows('pol_nine', 'k');
-- The 1-second window is empty: denied until the next second.
SELECT * FROM fw_limit('pol_nine', 'k');

-- Bad definitions: NULLs 22004, values out of their domain 22023, a name
-- too long 54000; none of them defines anything.
SELECT stmt AS "call", sqlstate_of(stmt) AS sqlstate
FROM unnest(ARRAY[
    $q$SELECT fw_define(NULL, 1, '1 minute')$q$,
    $q$SELECT fw_define('pol_bad', NULL, '1 minute')$q$,
    $q$SELECT fw_define('pol_bad', 1, NULL)$q$,
    $q$SELECT fw_define('pol_bad', 1, '1 minute', shadow => NULL)$q$,
    $q$SELECT fw_define('pol_bad', 0, '1 minute')$q$,
    $q$SELECT fw_define('pol_bad', -1, '1 minute')$q$,
    $q$SELECT fw_define('pol_bad', 10, '1 minute', capacity => 9)$q$,
    $q$SELECT fw_define('pol_bad', 1, '0 seconds')$q$,
    $q$SELECT fw_define('pol_bad', 1, '-1 minute')$q$,
    $q$SELECT fw_define('pol_bad', 1, '1 day -24 hours')$q$,
    $q$SELECT fw_define('pol_bad', 1, '1 month -1 day')$q$,
    $q$SELECT fw_define('pol_bad', 1, '300000000 days')$q$,
    $q$SELECT fw_define('pol_bad', 1, '1 minute', 'infinity')$q$,
    $q$SELECT fw_define('pol_bad', 1, '1 minute', '-infinity')$q$,
    $q$SELECT fw_define(repeat('n', 257), 1, '1 minute')$q$,
    $q$SELECT fw_define(repeat('n', 256), 1, '1 minute')$q$,
    $q$SELECT fw_undefine(NULL)$q$,
    $q$SELECT fw_undefine(NULL, '1 minute')$q$,
    $q$SELECT fw_undefine('pol_nine', '0 seconds')$q$,
    $q$SELECT fw_undefine('pol_nine', '-1 second')$q$,
    $q$SELECT fw_undefine('pol_none')$q$,
    $q$SELECT fw_undefine('pol_none', '1 minute')$q$
]) WITH ORDINALITY AS t(stmt, n) ORDER BY n;
SELECT count(*) AS defined FROM fw_policies WHERE name IN ('pol_bad', 'pol_none');
SELECT fw_undefine(repeat('n', 256)) AS removed;

-- fw_undefine: one window (compared as a length), then the whole policy;
-- 42704 when nothing matches.
SELECT fw_undefine('pol_def', '1 second') AS removed;
SELECT fw_undefine('pol_def', '1 second') AS removed;
SELECT fw_undefine('pol_def', '60 seconds') AS removed;
SELECT fw_undefine('pol_def', '2 hours') AS removed;
SELECT period, rate FROM fw_policies WHERE name = 'pol_def' ORDER BY period;
SELECT fw_undefine('pol_def') AS removed;
SELECT fw_undefine('pol_def') AS removed;
SELECT fw_undefine('pol_cal', '30 days') AS removed;
SELECT period, rate FROM fw_policies WHERE name = 'pol_cal' ORDER BY rate;
-- A policy whose last window goes is no policy.
SELECT fw_undefine('pol_cal', '1 mon') AS removed;
SELECT fw_undefine('pol_cal', '1 year') AS removed;
SELECT count(*) AS windows FROM fw_policies WHERE name = 'pol_cal';
SELECT * FROM fw_limit('pol_cal', 'k');

--
-- Named calls: defaults and cost, on one window of 5 per minute.
--
SET fixed_window.debug_now = '2026-07-01 10:00:30+00';
SELECT fw_define('pol_call', 5, '1 minute');
-- The columns of a call's windows.
SELECT * FROM fw_check_windows('pol_call', 'a') LIMIT 0;
SELECT * FROM fw_limit('pol_call', 'a');
SELECT * FROM fw_limit('pol_call', 'a', 3);
SELECT * FROM fw_check('pol_call', 'a');
SELECT * FROM fw_check('pol_call', 'a', cost => 2);
SELECT * FROM fw_limit('pol_call', 'a', cost => 2);
SELECT * FROM fw_limit('pol_call', 'a', 0);
SELECT * FROM fw_limit('pol_call', 'a');
SELECT * FROM fw_limit('pol_call', 'a');
-- fw_check and fw_check_windows answer for a new key and create nothing.
SELECT * FROM fw_check('pol_call', 'fresh', 5);
SELECT * FROM fw_check_windows('pol_call', 'fresh', 5);
SELECT count(*) AS counters FROM fw_counters WHERE name = 'pol_call' AND key = 'fresh';
-- An inline call of the same name has its own counter.
SELECT * FROM fw_limit('pol_call', 'a', 5, '1 minute');
SELECT key, period, remaining, rate FROM fw_counters WHERE name = 'pol_call' ORDER BY key, period NULLS FIRST;
-- The next window grants the rate again.
SET fixed_window.debug_now = '2026-07-01 10:01:00+00';
SELECT * FROM fw_limit('pol_call', 'a');

--
-- Seed 003's "2,000 per hour and 33 per minute", as one policy: a call is
-- allowed only when both windows hold its cost, and then both spend.
--
SET fixed_window.debug_now = '2026-07-01 15:00:00+00';
SELECT fw_define('pol_seed003', 2000, '1 hour', comment => 'seed 003: 2,000 per hour');
SELECT fw_define('pol_seed003', 33, '1 minute', comment => 'seed 003: and 33 per minute');
SELECT count(*) FILTER (WHERE (fw_limit('pol_seed003', 'u123')).ok) AS allowed, count(*) AS calls
FROM generate_series(1, 50);
-- Each named call is counted once, not once per window.
SELECT name, calls, allowed, denied, shadow_denied FROM fw_stats WHERE name = 'pol_seed003';
-- The minute denies; the hour had the tokens and keeps them: 2000 - 33.
SELECT * FROM fw_limit_windows('pol_seed003', 'u123');
SELECT * FROM fw_limit('pol_seed003', 'u123');
SELECT period, remaining FROM fw_check_windows('pol_seed003', 'u123', 0);
-- The next minute allows again.
SET fixed_window.debug_now = '2026-07-01 15:01:00+00';
SELECT * FROM fw_limit('pol_seed003', 'u123');
SELECT * FROM fw_limit('pol_seed003', 'u123', 32);
-- 33 a minute for the rest of the hour: always allowed, and the hour never
-- runs dry (60 x 33 = 1980 < 2000).
CREATE FUNCTION every_minute(policy text, k text, first timestamptz, last timestamptz, cost integer)
RETURNS TABLE (minutes integer, allowed integer) LANGUAGE plpgsql AS $$
DECLARE
    at timestamptz := first;
BEGIN
    minutes := 0;
    allowed := 0;
    WHILE at <= last LOOP
        PERFORM set_config('fixed_window.debug_now', at::text, false);
        minutes := minutes + 1;
        IF (fw_limit(policy, k, cost)).ok THEN
            allowed := allowed + 1;
        END IF;
        at := at + interval '1 minute';
    END LOOP;
    RETURN NEXT;
END $$;
SELECT * FROM every_minute('pol_seed003', 'u123', '2026-07-01 15:02+00', '2026-07-01 15:59+00', 33);
SELECT period, ok, remaining, reset_after FROM fw_check_windows('pol_seed003', 'u123', 0);
SELECT name, calls, allowed, denied, shadow_denied FROM fw_stats WHERE name = 'pol_seed003';
-- To exhaust the hour, a key with an hourly override of 40.
SET fixed_window.debug_now = '2026-07-01 16:00:00+00';
SELECT fw_override('pol_seed003', 'u456', 40, '1 hour');
SELECT * FROM fw_limit('pol_seed003', 'u456', 33);
-- Both windows deny, the minute until 16:01, the hour until 17:00:
-- retry_after is the later; remaining and reset_after are the minute's, the
-- window with fewer tokens.
SELECT * FROM fw_limit_windows('pol_seed003', 'u456', 8);
SELECT * FROM fw_limit('pol_seed003', 'u456', 8);
-- The next minute, the hour alone denies; the minute keeps its 33.
SET fixed_window.debug_now = '2026-07-01 16:01:00+00';
SELECT * FROM fw_limit_windows('pol_seed003', 'u456', 8);
SELECT * FROM fw_limit('pol_seed003', 'u456', 8);
SELECT * FROM fw_limit('pol_seed003', 'u456', 7);
-- The minute had the token the hour lacks: it holds 26, nothing spent.
SELECT period, ok, retry_after, remaining FROM fw_check_windows('pol_seed003', 'u456');
SELECT * FROM fw_check('pol_seed003', 'u456');

-- Two windows with the same tokens left: reset_after is the longer one's.
SET fixed_window.debug_now = '2026-07-01 10:00:30+00';
DO $$ BEGIN
    PERFORM fw_define('pol_tie', 3, '1 minute');
    PERFORM fw_define('pol_tie', 3, '1 hour');
END $$;
SELECT * FROM fw_limit('pol_tie', 'k');
SELECT * FROM fw_limit('pol_tie', 'k', 2);
SELECT * FROM fw_limit('pol_tie', 'k');
-- With rollover, a cost above the rate waits for as many windows as the
-- deficit needs: 1 token, cost 5, 2 a minute: two windows, 10:02.
SELECT fw_define('pol_roll', 2, '1 minute', capacity => 5);
SELECT * FROM fw_limit('pol_roll', 'k');
SELECT * FROM fw_limit('pol_roll', 'k', 5);
SET fixed_window.debug_now = '2026-07-01 10:02:00+00';
SELECT * FROM fw_limit('pol_roll', 'k', 5);

--
-- Shadow windows: decided and spent, never denying.
--
SET fixed_window.debug_now = '2026-07-01 11:00:00+00';
DO $$ BEGIN
    PERFORM fw_define('pol_shadow', 4, '1 hour');
    PERFORM fw_define('pol_shadow', 2, '1 minute', shadow => true, comment => 'trying 2 a minute');
END $$;
SELECT * FROM fw_limit('pol_shadow', 's');
SELECT * FROM fw_limit('pol_shadow', 's');
-- The shadow minute would deny; the call is allowed and the hour spends.
SELECT * FROM fw_limit_windows('pol_shadow', 's');
SELECT * FROM fw_limit('pol_shadow', 's');
-- The hour denies.
SELECT * FROM fw_limit('pol_shadow', 's');
-- A denial spends nothing, in the shadow window neither.
SET fixed_window.debug_now = '2026-07-01 11:01:00+00';
SELECT * FROM fw_limit('pol_shadow', 's');
SELECT period, shadow, ok, remaining FROM fw_check_windows('pol_shadow', 's', 0);
-- 6 calls, 4 allowed, 2 of them what the shadow window would have denied.
SELECT name, calls, allowed, denied, shadow_denied FROM fw_stats WHERE name = 'pol_shadow';
-- A policy of shadow windows only always allows.
SELECT fw_define('pol_shadow_only', 1, '1 minute', shadow => true);
SELECT ok, retry_after FROM fw_limit('pol_shadow_only', 'q');
SELECT ok, retry_after FROM fw_limit('pol_shadow_only', 'q');
SELECT period, shadow, ok, retry_after, remaining FROM fw_limit_windows('pol_shadow_only', 'q');
SELECT ok, retry_after FROM fw_check('pol_shadow_only', 'q');
SELECT name, calls, allowed, denied, shadow_denied FROM fw_stats WHERE name = 'pol_shadow_only';

--
-- Overrides: one key's own rate for one window.
--
SET fixed_window.debug_now = '2026-07-01 12:00:00+00';
DO $$ BEGIN
    PERFORM fw_define('pol_ovr', 2, '1 minute');
    PERFORM fw_define('pol_ovr', 10, '1 hour');
END $$;
SELECT fw_override('pol_ovr', 'vip', 5, '1 minute');
SELECT fw_override('pol_ovr', 'vip', 50, '60 minutes', capacity => 80);
SELECT name, key, period, rate, capacity, exempt, created_by = session_user AS by_me
FROM fw_overrides WHERE name = 'pol_ovr' ORDER BY key, period;
SELECT * FROM fw_limit_windows('pol_ovr', 'vip');
SELECT count(*) FILTER (WHERE (fw_limit('pol_ovr', 'vip')).ok) AS vip_allowed FROM generate_series(1, 5);
SELECT count(*) FILTER (WHERE (fw_limit('pol_ovr', 'plain')).ok) AS plain_allowed FROM generate_series(1, 5);
-- Back to the policy's minute: its capacity caps the tokens at once, its
-- rate applies from the next window.
SELECT fw_unoverride('pol_ovr', 'vip', '1 minute') AS removed;
SELECT period, rate, capacity, ok, remaining FROM fw_check_windows('pol_ovr', 'vip', 0);
SET fixed_window.debug_now = '2026-07-01 12:01:00+00';
SELECT count(*) FILTER (WHERE (fw_limit('pol_ovr', 'vip')).ok) AS vip_allowed FROM generate_series(1, 3);
-- All of the key's overrides: the hour's 43 tokens are capped at 10.
SELECT fw_unoverride('pol_ovr', 'vip') AS removed;
SELECT period, rate, capacity, remaining FROM fw_check_windows('pol_ovr', 'vip', 0);
SELECT fw_unoverride('pol_ovr', 'vip') AS removed;
-- Removing a window removes its overrides; removing the policy removes the
-- exemptions too.
SELECT fw_override('pol_ovr', 'vip2', 7, '1 hour');
SELECT fw_exempt('pol_ovr', 'free');
SELECT key, period, rate, exempt FROM fw_overrides WHERE name = 'pol_ovr' ORDER BY key;
SELECT fw_undefine('pol_ovr', '1 hour') AS removed;
SELECT key, period, rate, exempt FROM fw_overrides WHERE name = 'pol_ovr' ORDER BY key;
SELECT fw_define('pol_ovr', 10, '1 hour');
SELECT period, rate FROM fw_check_windows('pol_ovr', 'vip2', 0);
SELECT fw_undefine('pol_ovr') AS removed;
SELECT count(*) AS overrides FROM fw_overrides WHERE name = 'pol_ovr';
SELECT fw_define('pol_ovr', 2, '1 minute');
SELECT count(*) FILTER (WHERE (fw_limit('pol_ovr', 'free')).ok) AS free_allowed FROM generate_series(1, 3);
-- Bad overrides, exemptions and removals.
SELECT stmt AS "call", sqlstate_of(stmt) AS sqlstate
FROM unnest(ARRAY[
    $q$SELECT fw_override(NULL, 'k', 1, '1 minute')$q$,
    $q$SELECT fw_override('pol_ovr', NULL, 1, '1 minute')$q$,
    $q$SELECT fw_override('pol_ovr', 'k', NULL, '1 minute')$q$,
    $q$SELECT fw_override('pol_ovr', 'k', 1, NULL)$q$,
    $q$SELECT fw_override('pol_ovr', 'k', 0, '1 minute')$q$,
    $q$SELECT fw_override('pol_ovr', 'k', 5, '1 minute', capacity => 4)$q$,
    $q$SELECT fw_override('pol_ovr', 'k', 5, '0 seconds')$q$,
    $q$SELECT fw_override('pol_ovr', 'k', 5, '2 minutes')$q$,
    $q$SELECT fw_override('pol_none', 'k', 5, '1 minute')$q$,
    $q$SELECT fw_override('pol_ovr', repeat('k', 2049), 5, '1 minute')$q$,
    $q$SELECT fw_exempt(NULL, 'k')$q$,
    $q$SELECT fw_exempt('pol_ovr', NULL)$q$,
    $q$SELECT fw_exempt('pol_none', 'k')$q$,
    $q$SELECT fw_unoverride(NULL, 'k')$q$,
    $q$SELECT fw_unoverride('pol_ovr', NULL)$q$,
    $q$SELECT fw_unoverride('pol_ovr', 'k', '-1 minute')$q$,
    $q$SELECT fw_unoverride('pol_none', 'k')$q$
]) WITH ORDINALITY AS t(stmt, n) ORDER BY n;
SELECT count(*) AS overrides FROM fw_overrides WHERE key = 'k';

--
-- Exemptions: never denied, counted as allowed, spending nothing.
--
SET fixed_window.debug_now = '2026-07-01 12:30:00+00';
SELECT fw_define('pol_exempt', 2, '1 minute');
SELECT ok, remaining FROM fw_limit('pol_exempt', 'boss');
SELECT ok, remaining FROM fw_limit('pol_exempt', 'boss');
SELECT fw_exempt('pol_exempt', 'boss');
SELECT * FROM fw_limit('pol_exempt', 'boss');
SELECT * FROM fw_limit('pol_exempt', 'boss', 2);
SELECT * FROM fw_limit_windows('pol_exempt', 'boss');
SELECT * FROM fw_check('pol_exempt', 'boss');
SELECT fw_exempt('pol_exempt', 'newcomer');
SELECT * FROM fw_limit('pol_exempt', 'newcomer', 2);
SELECT * FROM fw_limit('pol_exempt', 'newcomer', 2);
SELECT name, key, period, rate, capacity, exempt FROM fw_overrides WHERE name = 'pol_exempt' ORDER BY key;
-- Refunds ignore exemptions; without its exemption the key spends again.
SELECT fw_refund('pol_exempt', 'boss', 1) AS held;
SELECT fw_unoverride('pol_exempt', 'boss') AS removed;
SELECT ok, remaining FROM fw_limit('pol_exempt', 'boss');
SELECT ok, remaining FROM fw_limit('pol_exempt', 'boss');
SELECT name, calls, allowed, denied FROM fw_stats WHERE name = 'pol_exempt';

--
-- Refunds.
--
SET fixed_window.debug_now = '2026-07-01 13:00:00+00';
DO $$ BEGIN
    PERFORM fw_define('pol_refund', 3, '1 minute');
    PERFORM fw_define('pol_refund', 10, '1 hour');
END $$;
SELECT * FROM fw_limit('pol_refund', 'r', 2);
-- Back to every window; the answer is the fewest tokens a window holds.
SELECT fw_refund('pol_refund', 'r', 1) AS held;
-- Never above the capacity.
SELECT fw_refund('pol_refund', 'r', 5) AS held;
SELECT period, remaining FROM fw_check_windows('pol_refund', 'r', 0);
SELECT fw_refund('pol_refund', 'r', 0) AS held;
-- A key without counters holds a fresh window's tokens; none is created.
SELECT fw_refund('pol_refund', 'nobody', 2) AS held;
SELECT count(*) AS counters FROM fw_counters WHERE name = 'pol_refund' AND key = 'nobody';
-- Spent in one minute, refunded in the next: the minute's window has
-- ended and gets nothing, the hour gets its 3 back.
SELECT ok, remaining FROM fw_limit('pol_refund', 'r', 3);
SET fixed_window.debug_now = '2026-07-01 13:01:00+00';
SELECT fw_refund('pol_refund', 'r', 3) AS held;
SELECT period, remaining FROM fw_check_windows('pol_refund', 'r', 0);
-- With rollover that shows: 0 left at 13:00 rolls over to 2 at 13:01, not 4.
SET fixed_window.debug_now = '2026-07-01 13:00:00+00';
SELECT fw_define('pol_refund_roll', 2, '1 minute', capacity => 6);
SELECT ok, remaining FROM fw_limit('pol_refund_roll', 'r', 2);
SET fixed_window.debug_now = '2026-07-01 13:01:00+00';
SELECT fw_refund('pol_refund_roll', 'r', 2) AS held;
SELECT remaining FROM fw_check('pol_refund_roll', 'r', 0);
-- In the current window, refunds fill up to the capacity, not the rate.
SELECT ok, remaining FROM fw_limit('pol_refund_roll', 'r', 1);
SELECT fw_refund('pol_refund_roll', 'r', 10) AS held;
-- The answer is of the enforced windows; shadow windows are refunded too.
DO $$ BEGIN
    PERFORM fw_define('pol_refund_sh', 5, '1 minute');
    PERFORM fw_define('pol_refund_sh', 1, '1 second', shadow => true);
END $$;
SELECT ok, remaining FROM fw_limit('pol_refund_sh', 'r');
SELECT fw_refund('pol_refund_sh', 'r', 0) AS held;
SELECT fw_refund('pol_refund_sh', 'r', 1) AS held;
SELECT period, shadow, remaining FROM fw_check_windows('pol_refund_sh', 'r', 0);
-- Inline refunds: of one counter, created by nothing.
SELECT fw_refund('pol_inline', 'r', 5, '1 minute') AS held;
SELECT count(*) AS counters FROM fw_counters WHERE name = 'pol_inline';
SELECT ok, remaining FROM fw_limit('pol_inline', 'r', 5, '1 minute', cost => 4);
SELECT fw_refund('pol_inline', 'r', 5, '1 minute', cost => 2) AS held;
SELECT fw_refund('pol_inline', 'r', 5, '1 minute', cost => 10) AS held;
SELECT ok, remaining FROM fw_limit('pol_inline', 'roll', 2, '1 minute', cost => 2, capacity => 6);
SET fixed_window.debug_now = '2026-07-01 13:02:00+00';
SELECT fw_refund('pol_inline', 'roll', 2, '1 minute', cost => 2, capacity => 6) AS held;
-- An inline refund under a policy's name touches the inline counter only.
SELECT fw_refund('pol_refund', 'r', 3, '1 minute', cost => 3) AS held;
SELECT count(*) AS inline_counters FROM fw_counters WHERE name = 'pol_refund' AND period IS NULL;
SELECT period, remaining FROM fw_check_windows('pol_refund', 'r', 0);

--
-- The trigger naming a policy.
--
SET fixed_window.debug_now = '2026-07-01 14:00:00+00';
DO $$ BEGIN
    PERFORM fw_define('pol_trig', 2, '1 minute');
    PERFORM fw_define('pol_trig', 3, '1 hour');
END $$;
CREATE TABLE posts (id serial PRIMARY KEY, author text);
CREATE TRIGGER posts_quota BEFORE INSERT ON posts
    FOR EACH ROW EXECUTE FUNCTION fw_trigger('pol_trig', 'author');
INSERT INTO posts (author) VALUES ('ann');
INSERT INTO posts (author) VALUES ('ann');
INSERT INTO posts (author) VALUES ('ann');
SELECT error_of($q$INSERT INTO posts (author) VALUES ('ann')$q$);
SET fixed_window.debug_now = '2026-07-01 14:01:00+00';
INSERT INTO posts (author) VALUES ('ann');
-- The hour denies now.
INSERT INTO posts (author) VALUES ('ann');
INSERT INTO posts (author) VALUES ('bob');
SELECT author, count(*) FROM posts GROUP BY author ORDER BY author;
SELECT period, remaining FROM fw_check_windows('pol_trig', 'ann', 0);
-- With a cost: 2 tokens a row.
CREATE TABLE uploads (id serial PRIMARY KEY, owner text);
CREATE TRIGGER uploads_quota BEFORE INSERT ON uploads
    FOR EACH ROW EXECUTE FUNCTION fw_trigger('pol_trig', 'owner', '2');
INSERT INTO uploads (owner) VALUES ('carl');
INSERT INTO uploads (owner) VALUES ('carl');
SELECT owner, count(*) FROM uploads GROUP BY owner;
SELECT period, remaining FROM fw_check_windows('pol_trig', 'carl', 0);
-- Bad arguments are reported at the first row.
CREATE TABLE trig_args (author text);
CREATE FUNCTION trigger_sqlstate(args text, val text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TRIGGER args_test BEFORE INSERT ON trig_args FOR EACH ROW '
                   'EXECUTE FUNCTION fw_trigger(%s)', args);
    BEGIN
        EXECUTE format('INSERT INTO trig_args VALUES (%L)', val);
        DROP TRIGGER args_test ON trig_args;
        RETURN 'accepted';
    EXCEPTION WHEN OTHERS THEN
        DROP TRIGGER args_test ON trig_args;
        RETURN SQLSTATE;
    END;
END $$;
-- (a cost of 3 against the policy's 2 is a refusal, RL429, since 1.3;
-- 1.1 to 1.2.1 failed with 22023)
SELECT args, val, trigger_sqlstate(args, val) AS result
FROM (VALUES ($q$'pol_trig_none', 'author'$q$, 'x'),
             ($q$'pol_trig', 'nope'$q$, 'x'),
             ($q$'pol_trig', 'author', 'two'$q$, 'x'),
             ($q$'pol_trig', 'author', '-1'$q$, 'x'),
             ($q$'pol_trig', 'author', '3'$q$, 'x'),
             ($q$'pol_trig'$q$, 'x'),
             ($q$'pol_trig', 'author'$q$, NULL),
             ($q$'pol_trig', 'author', '0'$q$, 'x')) AS t(args, val);
DROP TABLE posts, uploads, trig_args;

--
-- fw_counters has a counter per window of a policy, with its period (NULL
-- for inline calls); fw_reset removes them.
--
SET fixed_window.debug_now = '2026-07-01 14:30:00+00';
DO $$ BEGIN
    PERFORM fw_define('pol_cnt', 3, '1 minute');
    PERFORM fw_define('pol_cnt', 5, '1 hour');
END $$;
SELECT ok FROM fw_limit('pol_cnt', 'k');
SELECT ok FROM fw_limit('pol_cnt', 'k', 4, '1 minute');
SELECT ok FROM fw_limit('pol_cnt', 'k2');
SELECT key, period, window_start, window_end, remaining, rate, capacity
FROM fw_counters WHERE name = 'pol_cnt' ORDER BY key, period NULLS FIRST;
-- One key: its inline counter and its counter of every window.
SELECT fw_reset('pol_cnt', 'k') AS removed;
SELECT key, period FROM fw_counters WHERE name = 'pol_cnt' ORDER BY key, period;
SELECT ok, remaining FROM fw_limit('pol_cnt', 'k');
-- Every key.
SELECT fw_reset('pol_cnt') AS removed;
SELECT count(*) AS counters FROM fw_counters WHERE name = 'pol_cnt';

--
-- A change of definition applies at the next call.
--
SET fixed_window.debug_now = '2026-07-01 09:30:30+00';
SELECT fw_define('pol_change', 5, '1 minute');
SELECT ok, remaining FROM fw_limit('pol_change', 'c');
-- A lower capacity caps the tokens at once: 4 become 2.
SELECT fw_define('pol_change', 2, '1 minute');
SELECT ok, remaining FROM fw_limit('pol_change', 'c');
-- A new window counts from the next call.
SELECT fw_define('pol_change', 1, '1 hour');
SELECT * FROM fw_limit('pol_change', 'c');
SELECT * FROM fw_limit('pol_change', 'c');
-- A higher rate applies from the next window; a removed window no longer
-- denies.
SELECT fw_define('pol_change', 10, '1 minute');
SELECT fw_undefine('pol_change', '1 hour') AS removed;
SELECT * FROM fw_limit('pol_change', 'c');
SET fixed_window.debug_now = '2026-07-01 09:31:00+00';
SELECT * FROM fw_limit('pol_change', 'c');

--
-- start NULL: each key its own phase, stable, the same as an inline call's.
--
SET fixed_window.debug_now = '2026-07-01 16:00:00+00';
CREATE TEMP TABLE phases AS
SELECT 'user' || g AS key, w.window_start, w.window_end,
       fw_now() + (fw_check('pol_phase', 'user' || g, 3, '1 hour', NULL)).reset_after AS inline_end
FROM generate_series(1, 20) AS g, LATERAL fw_check_windows('pol_phase', 'user' || g) AS w;
SELECT count(DISTINCT window_end) > 10 AS spread,
       bool_and(window_end - window_start = interval '1 hour') AS one_hour,
       bool_and(window_start <= fw_now() AND fw_now() < window_end) AS current,
       bool_and(window_end = inline_end) AS same_as_inline
FROM phases;
-- One phase per key for all the windows of a policy: a key's hour starts
-- on one of its minute boundaries.
DO $$ BEGIN
    PERFORM fw_define('pol_phase2', 10, '1 minute', start => NULL);
    PERFORM fw_define('pol_phase2', 100, '1 hour', start => NULL);
END $$;
SELECT bool_and(mod(extract(epoch FROM h.window_start - m.window_start), 60) = 0) AS nested
FROM generate_series(1, 20) AS g,
     LATERAL (SELECT * FROM fw_check_windows('pol_phase2', 'user' || g) WHERE rate = 10) AS m,
     LATERAL (SELECT * FROM fw_check_windows('pol_phase2', 'user' || g) WHERE rate = 100) AS h;
SELECT window_end AS boundary FROM phases WHERE key = 'user1' \gset
SELECT set_config('fixed_window.debug_now', (:'boundary'::timestamptz - interval '1 microsecond')::text, false) IS NOT NULL AS clock_set;
SELECT ok, remaining, reset_after FROM fw_limit('pol_phase', 'user1', 3);
SELECT ok, retry_after FROM fw_limit('pol_phase', 'user1');
SELECT set_config('fixed_window.debug_now', :'boundary', false) IS NOT NULL AS clock_set;
SELECT ok, remaining, reset_after FROM fw_limit('pol_phase', 'user1');

--
-- Privileges: only superusers (or roles granted EXECUTE) define; every
-- role calls; fw_overrides shows a role the rows it made.
--
SET fixed_window.debug_now = '2026-07-01 17:00:00+00';
SELECT fw_define('pol_priv', 2, '1 minute');
SELECT fw_override('pol_priv', 'admin-made', 5, '1 minute');
CREATE ROLE regress_fw_user;
CREATE ROLE regress_fw_other;
CREATE ROLE regress_fw_auditor IN ROLE pg_read_all_stats;
SET ROLE regress_fw_user;
SELECT stmt AS "call", sqlstate_of(stmt) AS sqlstate
FROM unnest(ARRAY[
    $q$SELECT fw_define('pol_priv', 100, '1 minute')$q$,
    $q$SELECT fw_undefine('pol_priv')$q$,
    $q$SELECT fw_override('pol_priv', 'me', 100, '1 minute')$q$,
    $q$SELECT fw_exempt('pol_priv', 'me')$q$,
    $q$SELECT fw_unoverride('pol_priv', 'admin-made')$q$,
    $q$SELECT * FROM fw_policy$q$,
    $q$SELECT * FROM fw_override$q$,
    $q$INSERT INTO fw_policy (name, period, period_id, rate, capacity, shadow) VALUES ('pol_priv', '1 minute', 'PT60S', 100, 100, false)$q$,
    $q$DELETE FROM fw_override$q$,
    $q$SELECT fw_reset('pol_priv')$q$
]) WITH ORDINALITY AS t(stmt, n) ORDER BY n;
SELECT * FROM fw_limit('pol_priv', 'me');
SELECT * FROM fw_check('pol_priv', 'me');
SELECT period, ok, remaining FROM fw_limit_windows('pol_priv', 'me');
SELECT period, ok, remaining FROM fw_check_windows('pol_priv', 'me');
-- refunds are for the roles granted them (1.3): a role could refund itself to full
SELECT sqlstate_of($q$SELECT fw_refund('pol_priv', 'me', 1)$q$) AS refund_without_grant;
RESET ROLE;
GRANT EXECUTE ON FUNCTION fw_refund(text, text, integer) TO regress_fw_user;
SET ROLE regress_fw_user;
SELECT fw_refund('pol_priv', 'me', 1) AS held;
SELECT name, period, rate FROM fw_policies WHERE name = 'pol_priv';
SELECT name, key, period FROM fw_counters WHERE name = 'pol_priv' ORDER BY key;
SELECT name, key FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
RESET ROLE;
-- A role granted EXECUTE writes overrides, and sees its own rows only.
GRANT EXECUTE ON FUNCTION fw_override(text, text, integer, interval, integer),
                          fw_exempt(text, text) TO regress_fw_user;
SET SESSION AUTHORIZATION regress_fw_user;
SELECT fw_override('pol_priv', 'user-made', 3, '1 minute');
SELECT name, key, rate, created_by FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
RESET SESSION AUTHORIZATION;
SET ROLE regress_fw_user;
SELECT fw_exempt('pol_priv', 'set-role-made');
SELECT name, key, exempt, created_by FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
RESET ROLE;
SET SESSION AUTHORIZATION regress_fw_other;
SELECT name, key FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
RESET SESSION AUTHORIZATION;
SET ROLE regress_fw_auditor;
SELECT name, key FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
RESET ROLE;
SELECT name, key, exempt, created_by IN ('regress_fw_user') AS by_user
FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
REVOKE EXECUTE ON FUNCTION fw_override(text, text, integer, interval, integer),
                           fw_exempt(text, text), fw_refund(text, text, integer) FROM regress_fw_user;
DROP ROLE regress_fw_user, regress_fw_other, regress_fw_auditor;

--
-- Bad calls: NULLs 22004, negative costs 22023, undefined policies 42704,
-- keys too long 54000; no error leaves a counter.  (A cost above a
-- window's capacity is not an error for a policy: see below.)
--
SET fixed_window.debug_now = '2026-07-01 18:00:00+00';
SELECT stmt AS "call", sqlstate_of(stmt) AS sqlstate
FROM unnest(ARRAY[
    $q$SELECT fw_limit(NULL, 'k')$q$,
    $q$SELECT fw_limit('pol_call', NULL)$q$,
    $q$SELECT fw_limit('pol_call', 'k', NULL)$q$,
    $q$SELECT fw_check(NULL, 'k')$q$,
    $q$SELECT fw_check('pol_call', NULL)$q$,
    $q$SELECT fw_check('pol_call', 'k', NULL)$q$,
    $q$SELECT * FROM fw_limit_windows(NULL, 'k')$q$,
    $q$SELECT * FROM fw_limit_windows('pol_call', NULL)$q$,
    $q$SELECT * FROM fw_limit_windows('pol_call', 'k', NULL)$q$,
    $q$SELECT * FROM fw_check_windows(NULL, 'k')$q$,
    $q$SELECT * FROM fw_check_windows('pol_call', NULL)$q$,
    $q$SELECT * FROM fw_check_windows('pol_call', 'k', NULL)$q$,
    $q$SELECT fw_refund(NULL, 'k', 1)$q$,
    $q$SELECT fw_refund('pol_call', NULL, 1)$q$,
    $q$SELECT fw_refund('pol_call', 'k', NULL)$q$,
    $q$SELECT fw_limit('pol_call', 'k', -1)$q$,
    $q$SELECT fw_check('pol_call', 'k', -1)$q$,
    $q$SELECT * FROM fw_limit_windows('pol_call', 'k', -1)$q$,
    $q$SELECT * FROM fw_check_windows('pol_call', 'k', -1)$q$,
    $q$SELECT fw_refund('pol_call', 'k', -1)$q$,
    $q$SELECT fw_limit('pol_none', 'k')$q$,
    $q$SELECT fw_check('pol_none', 'k')$q$,
    $q$SELECT * FROM fw_limit_windows('pol_none', 'k')$q$,
    $q$SELECT * FROM fw_check_windows('pol_none', 'k')$q$,
    $q$SELECT fw_refund('pol_none', 'k', 1)$q$,
    $q$SELECT fw_limit('pol_call', repeat('k', 2049))$q$,
    $q$SELECT fw_check('pol_call', repeat('é', 1025))$q$,
    $q$SELECT fw_limit(repeat('n', 257), 'k')$q$,
    $q$SELECT fw_refund('pol_inline', NULL, 5, '1 minute')$q$,
    $q$SELECT fw_refund('pol_inline', 'r', NULL, '1 minute')$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, NULL)$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, '1 minute', cost => NULL)$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 0, '1 minute')$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, '0 seconds')$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, '1 minute', cost => -1)$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, '1 minute', capacity => 4)$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, '1 minute', 'infinity')$q$
]) WITH ORDINALITY AS t(stmt, n) ORDER BY n;
SELECT count(*) AS counters FROM fw_counters WHERE key = 'k' AND name IN ('pol_call', 'pol_shadow', 'pol_none');

-- A cost above the capacity of a policy's window: the caller cannot know
-- what an admin defined, so it is an answer, never an error (1.3; 1.1 to
-- 1.2.1 failed with 22023).  An enforced window denies, with no retry
-- time; a shadow one does not deny; an exempt key is allowed.
SELECT ok, retry_after, remaining FROM fw_limit('pol_call', 'k', 6);
SELECT ok, retry_after, remaining FROM fw_check('pol_call', 'k', 6);
SELECT ok, retry_after, remaining FROM fw_limit('pol_shadow', 'k', 3);
SELECT ok, retry_after FROM fw_limit('pol_exempt', 'newcomer', 3);
SELECT period, ok, retry_after FROM fw_limit_windows('pol_call', 'k', 6);
SELECT period, ok, retry_after FROM fw_check_windows('pol_call', 'k', 6);
SELECT * FROM fw_check('pol_call', 'k');

DROP EXTENSION fixed_window;
