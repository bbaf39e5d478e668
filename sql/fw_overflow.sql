--
-- fw_overflow: arithmetic at the edges of its types gives exact answers or
-- an error, never a wrapped value: rates, costs and capacities near 2^31,
-- periods from a microsecond to millennia, and windows counted in the
-- quadrillions.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
SET fixed_window.debug_now = '2026-03-10 12:00+00';
\set SHOW_CONTEXT never

-- The largest rate, spent whole: nothing left, then all of it again.
SELECT ok, remaining FROM fw_limit('big', 'whole', 2147483647, '1 minute', cost => 2147483647);
SELECT ok, retry_after FROM fw_limit('big', 'whole', 2147483647, '1 minute', cost => 1);
SET fixed_window.debug_now = '2026-03-10 12:01+00';
SELECT ok, remaining FROM fw_limit('big', 'whole', 2147483647, '1 minute', cost => 0);

-- Refilling past 2^31: 2^30 per window up to a capacity of 2^31 - 1; two
-- windows' worth would be 2^31, which an int4 cannot hold.
SET fixed_window.debug_now = '2026-03-10 12:00+00';
SELECT remaining FROM fw_limit('big', 'refill', 1073741824, '1 minute', cost => 0, capacity => 2147483647);
SET fixed_window.debug_now = '2026-03-10 12:01+00';
SELECT remaining FROM fw_limit('big', 'refill', 1073741824, '1 minute', cost => 0, capacity => 2147483647);
SET fixed_window.debug_now = '2026-03-10 12:02+00';
SELECT remaining FROM fw_limit('big', 'refill', 1073741824, '1 minute', cost => 1, capacity => 2147483647);

-- The largest rate at the largest capacity, after a century of windows.
SET fixed_window.debug_now = '2126-03-10 12:02+00';
SELECT remaining FROM fw_limit('big', 'refill', 2147483647, '1 minute', cost => 0, capacity => 2147483647);

-- One token per microsecond, capacity 2^31 - 1: with 1 token held, a cost
-- of 2^31 - 1 waits 2147483646 windows, exactly 35:47.483646; a century
-- later (3.2e15 windows) the counter is full.
SET fixed_window.debug_now = '2026-03-10 12:00+00';
SELECT remaining FROM fw_limit('big', 'usec', 1, '1 microsecond', cost => 0, capacity => 2147483647);
SELECT ok, retry_after, reset_after FROM fw_limit('big', 'usec', 1, '1 microsecond', cost => 2147483647, capacity => 2147483647);
SET fixed_window.debug_now = '2126-03-10 12:00+00';
SELECT ok, remaining FROM fw_limit('big', 'usec', 1, '1 microsecond', cost => 2147483647, capacity => 2147483647);

-- The same wait in days is 5.9 million years: beyond 64-bit time, no time
-- to promise.  Denied, with retry_after NULL (an error, 22008, before 1.3);
-- the key's counter is created all the same.
SET fixed_window.debug_now = '2026-03-10 12:00+00';
SELECT fw_limit('big', 'days', 1, '1 day', cost => 2147483647, capacity => 2147483647);
SELECT count(*) AS counters FROM fw_counters WHERE key = 'days';

-- 7-microsecond windows counted from 1970 (2.5e14 of them) and from 4713 BC
-- (3.0e16), on grids one microsecond apart: still exact.
SELECT reset_after FROM fw_limit('big', 'epoch', 3, '7 microseconds');
SELECT reset_after FROM fw_limit('big', 'bc', 3, '7 microseconds', '4713-01-01 00:00:00.000001+00 BC');

-- The largest rate per microsecond, a century later: 3.2e15 windows of
-- 2^31 - 1 tokens would be 6.8e24 tokens, beyond 64 bits; the counter is
-- simply full.
SET fixed_window.debug_now = '2026-03-10 12:00+00';
SELECT remaining FROM fw_limit('big', 'usec max', 2147483647, '1 microsecond', cost => 2147483647, capacity => 2147483647);
SET fixed_window.debug_now = '2126-03-10 12:00+00';
SELECT remaining FROM fw_limit('big', 'usec max', 2147483647, '1 microsecond', cost => 1, capacity => 2147483647);
SET fixed_window.debug_now = '2026-03-10 12:00+00';

-- Millennia: exact (100000 days) and calendar (5000 years) periods.
SELECT reset_after FROM fw_limit('big', 'exact', 1, '100000 days');
SELECT reset_after FROM fw_limit('big', 'calendar', 1, '5000 years', '2000-02-29 00:00+00');
-- At the last microsecond PostgreSQL can show, windows may end after it, up
-- to the end of 64-bit time (294277-01-09); later is an error.  So is a grid
-- whose distance from its start exceeds 64 bits (the default start, 1970).
SET fixed_window.debug_now = '294276-12-31 23:59:59.999999+00';
SELECT reset_after FROM fw_limit('big', 'last', 1, '1 microsecond', '294276-01-01 00:00+00');
SELECT reset_after FROM fw_limit('big', 'last day', 1, '1 day', '294276-01-01 00:00+00');
SELECT reset_after FROM fw_limit('big', 'last week', 1, '1 week', '294276-01-02 00:00+00');
SELECT fw_limit('big', 'last month', 1, '1 month', '294276-01-15 00:00+00');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('big', 'from 1970', 1, '1 microsecond');
\echo :LAST_ERROR_SQLSTATE

DROP EXTENSION fixed_window;
