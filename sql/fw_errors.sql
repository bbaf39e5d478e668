--
-- fw_errors: every bad input is an error with its SQLSTATE, never NULL.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
SET fixed_window.debug_now = '2026-03-10 12:00+00';
\set SHOW_CONTEXT never

-- NULL where a value is required: 22004, for both functions.
SELECT fw_limit(NULL, 'k', 1, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', NULL, 1, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', NULL, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 1, '1 minute', cost => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fw_check(NULL, 'k', 1, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_check('n', 'k', 1, '1 minute', cost => NULL);
\echo :LAST_ERROR_SQLSTATE

-- Values out of their domain: 22023, naming the value.
SELECT fw_limit('n', 'k', 0, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', -5, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 1, '0 seconds');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 1, '-1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 1, '1 day -24 hours');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 1, '-1 month');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 1, '1 month -1 day');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 1, '1 minute', cost => -1);
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 10, '1 minute', capacity => 9);
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 10, '1 minute', cost => 11);
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 10, '1 minute', cost => 21, capacity => 20);
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', 'k', 1, '1 minute', 'infinity');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_check('n', 'k', 1, '1 minute', '-infinity');
\echo :LAST_ERROR_SQLSTATE

-- Mixed-sign periods without months are fine when positive: 23 hours.
SELECT (fw_limit('n', 'mixed', 1, '1 day -1 hour')).reset_after;

-- Lengths: 256-byte names and 2048-byte keys work, longer ones do not.
SELECT (fw_limit(repeat('e', 256), repeat('k', 2048), 1, '1 minute')).ok;
SELECT fw_limit(repeat('n', 257), 'k', 1, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_limit('n', repeat('k', 2049), 1, '1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_check('n', repeat('é', 1025), 1, '1 minute');
\echo :LAST_ERROR_SQLSTATE

-- Windows beyond 64-bit time: an error, not a wrapped answer.
SELECT fw_limit('n', 'k', 1, '300000 years');
\echo :LAST_ERROR_SQLSTATE
SET fixed_window.debug_now = '294270-01-01 00:00+00';
SELECT fw_limit('n', 'k', 1, '1 day', '4713-01-01 00:00+00 BC');
\echo :LAST_ERROR_SQLSTATE
SET fixed_window.debug_now = '2026-03-10 12:00+00';
-- Starts at either end of the timestamp range are fine on their own.
SELECT (fw_limit('n', 'ancient', 1, '1 day', '4713-01-01 00:00+00 BC')).reset_after,
       (fw_limit('n', 'future', 1, '1 day', '294000-01-01 06:00+00')).reset_after;

-- A retry_after too far away to express: denied, never allowed, with
-- retry_after NULL, no time to promise (an error, 22008, before 1.3).
SELECT fw_limit('n', 'slow', 1, '200000 years', cost => 3, capacity => 3);

-- A counter left billions of windows behind, by a call with another grid,
-- refills to the capacity: the count of windows does not wrap.
SELECT ok, remaining FROM fw_limit('n', 'far-behind', 1, '292300 years', '2030-01-01 00:00+00');
SELECT ok, remaining FROM fw_limit('n', 'far-behind', 6, '1 microsecond', '2000-01-01 00:00+00', 10, 10);
SELECT ok, remaining FROM fw_limit('n', 'far-behind', 6, '1 microsecond', '2000-01-01 00:00+00', 1, 10);

-- No error leaves a counter behind or spends a token.
SELECT * FROM fw_check('n', 'k', 10, '1 minute');

-- A damaged result type is an error, never a crash.
ALTER TYPE fw_result ALTER ATTRIBUTE ok TYPE text;
SELECT fw_limit('n', 'k', 10, '1 minute');
\echo :LAST_ERROR_SQLSTATE
ALTER TYPE fw_result ALTER ATTRIBUTE ok TYPE boolean;
SELECT * FROM fw_check('n', 'k', 10, '1 minute');

DROP EXTENSION fixed_window;
