--
-- fw_policy_counters: named policies (1.1), part 4 of 5 (fw_policy_define
-- lists them): the trigger naming a policy, fw_counters and fw_reset,
-- changes of definition, a phase for each key.
--
\i sql/include/preamble.sql
\set SHOW_CONTEXT never
\set VERBOSITY sqlstate

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
