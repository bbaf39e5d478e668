--
-- fw_seeds: the worked examples of the documents this project started from,
-- each replayed through fw_limit and fw_check at a fixed clock (debug_now):
-- seed 004's table of tokens with rollover up to a capacity, seed 001's
-- window numbers counted from the Unix epoch (read from reset_after),
-- seed 002's burst across a boundary with the retry_after of each denial,
-- and seed 003's two granularities checked together.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql

-- Seed 004: "Rate: 100 tokens per hour, Capacity: 150, Start: 00:00:00".
-- Tokens are granted in bulk at each boundary, unused ones roll over up to
-- the capacity.  Each row is one call at that time; cost 0 just looks.
CREATE TEMP TABLE seed004 (at time, cost int, expected_tokens int);
INSERT INTO seed004 VALUES
    ('00:00', 0, 100), ('00:15', 0, 100), ('00:30', 15, 85), ('00:45', 15, 70),
    ('01:00', 0, 150), ('01:30', 30, 120), ('02:00', 0, 150);
DO $$
DECLARE
    s record;
    r fw_result;
BEGIN
    FOR s IN SELECT * FROM seed004 ORDER BY at LOOP
        PERFORM set_config('fixed_window.debug_now', '2024-01-01 ' || s.at || '+00', false);
        r := fw_limit('seed004', 'user', 100, '1 hour', '2024-01-01 00:00+00', s.cost, 150);
        RAISE NOTICE '% cost % -> ok % remaining % (table says %)',
            s.at, s.cost, r.ok, r.remaining, s.expected_tokens;
        IF NOT r.ok OR r.remaining <> s.expected_tokens THEN
            RAISE EXCEPTION 'seed 004 mismatch at %', s.at;
        END IF;
    END LOOP;
END $$;

-- Seed 001: 60-second windows on the default start, the Unix epoch: at Unix
-- time 1700000100 a call is in window 28333335 = floor(1700000100 / 60),
-- which starts at that very second.  seed001_call sets the clock to a Unix
-- time and calls fw_limit; the call's window is read from its answer: it
-- ends reset_after later, so it starts 60 seconds before that, and its
-- number is that start / 60 (a fraction would show).
CREATE FUNCTION seed001_call(unix_time numeric,
    OUT ok boolean, OUT remaining integer, OUT reset_after interval,
    OUT window_start numeric, OUT window_id numeric)
LANGUAGE plpgsql AS $$
DECLARE
    at timestamptz := to_timestamp(unix_time);
    r fw_result;
BEGIN
    PERFORM set_config('fixed_window.debug_now', at::text, false);
    r := fw_limit('rlaas', 'alice', 5, '60 seconds');
    ok := r.ok;
    remaining := r.remaining;
    reset_after := r.reset_after;
    window_start := trim_scale(extract(epoch FROM at + r.reset_after) - 60);
    window_id := trim_scale(window_start / 60);
END $$;
SELECT * FROM seed001_call(1700000100);
-- 59.999999 s later: still window 28333335, the last microsecond of it.
SELECT * FROM seed001_call(1700000159.999999);
-- Unix time 1700000160: window 28333336, a fresh counter.
SELECT * FROM seed001_call(1700000160);

-- Seed 002: 5 requests per minute; 5 at 00:58 and 5 at 01:02 all pass
-- (the boundary burst of a fixed window), the 6th of each is denied.
SET fixed_window.debug_now = '2026-05-01 10:00:58+00';
SELECT g AS request, (r).ok, (r).retry_after, (r).remaining
FROM generate_series(1, 6) AS g, LATERAL (SELECT fw_limit('search', 'user-a', 5, '1 minute', cost => 1 + 0 * g) AS r) AS l;
SET fixed_window.debug_now = '2026-05-01 10:01:02+00';
SELECT g AS request, (r).ok, (r).retry_after, (r).remaining
FROM generate_series(1, 6) AS g, LATERAL (SELECT fw_limit('search', 'user-a', 5, '1 minute', cost => 1 + 0 * g) AS r) AS l;

-- Seed 003's recipe with two granularities: at most 2000 per hour and 33
-- per minute, both checked, the call allowed only when both allow it.
SET fixed_window.debug_now = '2026-05-01 15:15:00+00';
SELECT count(*) FILTER (WHERE (fw_check('hourly', 'u123', 2000, '1 hour')).ok
                          AND (fw_limit('minutely', 'u123', 33, '1 minute')).ok
                          AND (fw_limit('hourly', 'u123', 2000, '1 hour')).ok) AS allowed
FROM generate_series(1, 50);

DROP EXTENSION fixed_window;
