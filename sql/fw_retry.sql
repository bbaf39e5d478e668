--
-- fw_retry: a denied call's retry_after is a promise (1.3).  Whenever it
-- says T, the same call at T, with nothing spent meanwhile, is allowed;
-- where no such T exists it is NULL.  1.2.1 denied a new key with rate 5,
-- capacity 10 and cost 8 forever: the denied call created no counter, so at
-- its retry time the key was new again, with 5 tokens.  Every call is
-- counted in fw_stats, denied ones of keys without counters too.  Runs on
-- both storages.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
\set VERBOSITY terse
SET fixed_window.debug_now = '2026-07-01 10:00:30+00';

-- Inline: a new key, rate 5, capacity 10, cost 8.
SELECT * FROM fw_limit('promise', 'k', 5, '1 minute', capacity => 10, cost => 8);
-- its counter holds what a new key holds, and gathers tokens from now on
SELECT name, key, window_start, window_end, remaining, rate, capacity
FROM fw_counters WHERE name = 'promise';
-- one microsecond early: still denied; at the retry time: allowed
SET fixed_window.debug_now = '2026-07-01 10:00:59.999999+00';
SELECT ok, retry_after FROM fw_check('promise', 'k', 5, '1 minute', capacity => 10, cost => 8);
SET fixed_window.debug_now = '2026-07-01 10:01:00+00';
SELECT * FROM fw_limit('promise', 'k', 5, '1 minute', capacity => 10, cost => 8);
-- fw_check of a new key answers what fw_limit would, and creates nothing
SELECT * FROM fw_check('promise', 'other', 5, '1 minute', capacity => 10, cost => 8);
SELECT count(*) AS counters_of_other FROM fw_counters WHERE name = 'promise' AND key = 'other';

-- A policy: the minute window denies a new key, the hour allows; the call
-- waits for the minute, and every window holds the cost then.
SET fixed_window.debug_now = '2026-07-01 10:00:30+00';
SELECT fw_define('promised', 5, '1 minute', capacity => 10);
SELECT fw_define('promised', 100, '1 hour');
SELECT period, ok, retry_after, remaining FROM fw_limit_windows('promised', 'k', 8);
SELECT name, period, remaining FROM fw_counters WHERE name = 'promised' ORDER BY period;
SET fixed_window.debug_now = '2026-07-01 10:01:00+00';
SELECT period, ok, retry_after, remaining FROM fw_limit_windows('promised', 'k', 8);
-- every call counted, the denied one of a key without counters too
SELECT name, calls, allowed, denied FROM fw_stats WHERE name IN ('promise', 'promised') ORDER BY name;

-- Three windows to wait: an empty counter at 10:00:30, rate 5, capacity 20,
-- and a cost of 14 is covered at 10:03.  The table's row is empty: fw_gc
-- could collect it at 10:01:30, when it answers as no row would, and the
-- key would be new at 10:03 with 5 tokens.  The denial keeps it.
SET fixed_window.debug_now = '2026-07-01 10:00:30+00';
SELECT ok, remaining FROM fw_limit('two', 'k', 5, '1 minute', capacity => 20, cost => 5);
SELECT ok, retry_after, remaining FROM fw_limit('two', 'k', 5, '1 minute', capacity => 20, cost => 14);
SET fixed_window.debug_now = '2026-07-01 10:01:30+00';
SELECT fw_gc() >= 0 AS collected;
SET fixed_window.debug_now = '2026-07-01 10:03:00+00';
SELECT ok, remaining FROM fw_limit('two', 'k', 5, '1 minute', capacity => 20, cost => 14);

-- No time to promise: tokens that cover the cost only beyond 64-bit time.
-- The call is denied with retry_after NULL (1.2.1 failed with 22008).
SET fixed_window.debug_now = '2026-07-01 10:00:00+00';
SELECT ok, retry_after IS NULL AS no_promise, remaining
FROM fw_limit('never', 'k', 1, '1000 years', capacity => 1000, cost => 1000);
SELECT fw_define('never', 1, '1000 years', capacity => 1000);
SELECT period, ok, retry_after IS NULL AS no_promise, remaining FROM fw_limit_windows('never', 'k', 1000);
-- a promise that is kept: 281 tokens come in 280 more millennia
SELECT ok, retry_after FROM fw_check('never', 'k', 281);

SELECT fw_undefine('promised') + fw_undefine('never') AS undefined;
SELECT fw_reset('promise') + fw_reset('promised') + fw_reset('two') + fw_reset('never') >= 0 AS reset;
DROP EXTENSION fixed_window;
