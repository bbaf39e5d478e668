--
-- fw_policy_overrides: named policies (1.1), part 3 of 5 (fw_policy_define
-- lists them): overrides, exemptions and refunds.
--
\i sql/include/preamble.sql
\set SHOW_CONTEXT never
\set VERBOSITY sqlstate

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
