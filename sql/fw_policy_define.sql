--
-- fw_policy_define: named policies (1.1), the first of five parts that run
-- one after another on one installation of the extension, on both storages,
-- with the clock fixed by debug_now (each section defines policies of its
-- own, and the last part also calls some of the earlier ones):
--   fw_policy_define      the new functions and views; fw_define,
--                         fw_undefine and fw_policies; every bad definition
--                         with its SQLSTATE
--   fw_policy_calls       named fw_limit, fw_check, fw_limit_windows and
--                         fw_check_windows, all or nothing over the windows
--                         of a policy (seed 003's "2,000 per hour and 33 per
--                         minute" as one policy); shadow windows
--   fw_policy_overrides   overrides, exemptions and refunds
--   fw_policy_counters    the trigger naming a policy; fw_counters and
--                         fw_reset with policies; changes of definition; a
--                         phase for each key
--   fw_policy_privileges  privileges; every bad call with its SQLSTATE
-- This part creates the extension and the helpers the others use
-- (sqlstate_of, error_of); the last drops the extension.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
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
