--
-- fw_api: the shape of fw_limit and fw_check, defaults, counter identity.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
SET fixed_window.debug_now = '2026-03-10 12:00:30+00';

-- The result type.
SELECT attname, format_type(atttypid, atttypmod)
FROM pg_attribute WHERE attrelid = 'fw_result'::regclass AND attnum > 0 ORDER BY attnum;

-- Not strict, volatile, and the documented defaults.
SELECT proname, proisstrict, provolatile, pg_get_function_arguments(oid)
FROM pg_proc WHERE proname IN ('fw_limit', 'fw_check') ORDER BY proname;

-- 3 per minute: three allowed, the fourth denied until the next minute.
SELECT * FROM fw_limit('api', 'u1', 3, '1 minute');
SELECT * FROM fw_limit('api', 'u1', 3, '1 minute');
SELECT * FROM fw_limit('api', 'u1', 3, '1 minute');
SELECT * FROM fw_limit('api', 'u1', 3, '1 minute');
-- A denied call spends nothing; fw_check describes the same.
SELECT * FROM fw_check('api', 'u1', 3, '1 minute');
SELECT * FROM fw_limit('api', 'u1', 3, '1 minute', cost => 0);

-- fw_check consumes nothing and creates nothing.
SELECT * FROM fw_check('api', 'u2', 3, '1 minute');
SELECT * FROM fw_check('api', 'u2', 3, '1 minute', cost => 3);
SELECT * FROM fw_limit('api', 'u2', 3, '1 minute', cost => 3);
SELECT * FROM fw_check('api', 'u2', 3, '1 minute');

-- The next window grants the rate again.
SET fixed_window.debug_now = '2026-03-10 12:01:00+00';
SELECT * FROM fw_limit('api', 'u1', 3, '1 minute');
SELECT * FROM fw_limit('api', 'u2', 3, '1 minute');

-- Cost: several tokens at once, denied as a whole when they are not all there.
SELECT * FROM fw_limit('bulk', 'u1', 10, '1 hour', cost => 7);
SELECT * FROM fw_limit('bulk', 'u1', 10, '1 hour', cost => 4);
SELECT * FROM fw_limit('bulk', 'u1', 10, '1 hour', cost => 3);
SELECT * FROM fw_limit('bulk', 'u1', 10, '1 hour', cost => 0);

-- Identity is the exact (name, key) pair: no two of these share a counter.
SELECT name, key, (fw_limit(name, key, 1, '1 hour')).ok
FROM (VALUES ('ab', 'c'), ('a', 'bc'), ('abc', ''), ('', 'abc'),
             ('x', 'k'), ('x', 'K'), ('x', 'k '), ('x', 'ké')) AS v(name, key);
SELECT name, key, (fw_check(name, key, 1, '1 hour')).ok
FROM (VALUES ('ab', 'c'), ('a', 'bc'), ('abc', ''), ('', 'abc'),
             ('x', 'k'), ('x', 'K'), ('x', 'k '), ('x', 'ké')) AS v(name, key);

-- Long keys, stored across several slots, still compare exactly: keys that
-- differ only in their last byte, or only in the middle, are distinct.
SELECT (fw_limit('long', repeat('k', 2047) || 'a', 1, '1 hour')).ok AS a,
       (fw_limit('long', repeat('k', 2047) || 'b', 1, '1 hour')).ok AS b,
       (fw_limit('long', repeat('k', 1000) || 'x' || repeat('k', 1047), 1, '1 hour')).ok AS mid,
       (fw_limit('long', repeat('k', 2047) || 'a', 1, '1 hour')).ok AS a_again,
       (fw_limit('long', repeat('k', 2047), 1, '1 hour')).ok AS shorter,
       (fw_limit(repeat('n', 256), repeat('k', 2048), 1, '1 hour')).ok AS longest;
SELECT (fw_check('long', repeat('k', 2047) || 'b', 1, '1 hour')).ok AS b_spent,
       (fw_check(repeat('n', 256), repeat('k', 2048), 1, '1 hour')).ok AS longest_spent;
-- Non-ASCII keys are bytes like any others.
SELECT (fw_limit('utf8', 'ключ-🔑', 1, '1 hour')).ok, (fw_limit('utf8', 'ключ-🔑', 1, '1 hour')).ok;

-- Different limits on the same key are separate counters.
SELECT (fw_limit('login', 'alice', 1, '1 hour')).ok AS login,
       (fw_limit('search', 'alice', 1, '1 hour')).ok AS search,
       (fw_limit('login', 'alice', 1, '1 hour')).ok AS login_again;

-- Many keys in one query.
SELECT count(*) FILTER (WHERE (r).ok) AS allowed, count(*) AS calls
FROM (SELECT fw_limit('many', (g % 500)::text, 2, '1 hour') AS r
      FROM generate_series(1, 2000) AS g) AS s;

DROP EXTENSION fixed_window;
