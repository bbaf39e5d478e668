--
-- fw_policy_calls: named policies (1.1), part 2 of 5 (fw_policy_define
-- lists them): named calls, all or nothing over the windows of a policy,
-- shadow windows.
--
\i sql/include/preamble.sql
\set SHOW_CONTEXT never
\set VERBOSITY sqlstate

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
