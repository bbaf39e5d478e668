--
-- fw_hardening: what a careless or hostile caller could do to answers, to
-- the admin views and through the trigger.  Runs on both storages.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
\set SHOW_CONTEXT never

-- One key used with two grids.  The window start a counter recorded never
-- moves back, and a denied call changes nothing, so alternating 1 per hour
-- with 3 per 3 hours (or with 1 per hour on a grid one second earlier)
-- allows the hourly call once in the hour, and the other grid no more than
-- its own window allows.
CREATE FUNCTION alternate(limit_name text, rate integer, period interval,
                          start timestamptz, first timestamptz, hourly_first boolean DEFAULT true)
RETURNS TABLE (at time, grid text, ok boolean, remaining integer)
LANGUAGE plpgsql AS $$
DECLARE
    r fw_result;
BEGIN
    FOR i IN 0..7 LOOP
        PERFORM set_config('fixed_window.debug_now', (first + i * interval '5 minutes')::text, true);
        at := (first + i * interval '5 minutes')::time;
        IF (i % 2 = 0) = hourly_first THEN
            grid := '1 per hour';
            r := fw_limit(limit_name, 'u1', 1, '1 hour');
        ELSE
            grid := format('%s per %s', rate, period);
            r := fw_limit(limit_name, 'u1', rate, period, start);
        END IF;
        ok := r.ok;
        remaining := r.remaining;
        RETURN NEXT;
    END LOOP;
END $$;
SELECT * FROM alternate('api2', 3, '3 hours', '1970-01-01 00:00+00', '2026-05-01 10:01+00');
SELECT * FROM alternate('api3', 3, '3 hours', '1970-01-01 00:00+00', '2026-05-01 10:01+00', false);
SELECT * FROM alternate('api4', 1, '1 hour', '1969-12-31 23:59:59+00', '2026-05-01 10:00:30+00');
-- The counter keeps the start the hourly call recorded, and the later end.
SET fixed_window.debug_now = '2026-05-01 10:50+00';
SELECT name, window_start, window_end, remaining FROM fw_counters
WHERE name IN ('api2', 'api4') ORDER BY name;
-- In the next hour the hourly call is allowed again; the 3-hour grid is
-- still in its window, which the hourly calls have spent from.
SET fixed_window.debug_now = '2026-05-01 11:00+00';
SELECT ok, remaining FROM fw_limit('api2', 'u1', 1, '1 hour');
SELECT ok, remaining, retry_after FROM fw_limit('api2', 'u1', 3, '3 hours');
-- The counter also keeps the latest end any grid gave it, so that neither
-- fw_gc nor a reclaim forgets it while a longer window that spent from it
-- is still running.
SET fixed_window.debug_now = '2026-05-01 09:30+00';
SELECT ok FROM fw_limit('mix', 'u', 3, '3 hours', cost => 3);
SET fixed_window.debug_now = '2026-05-01 10:05+00';
SELECT ok FROM fw_limit('mix', 'u', 1, '1 hour');
SET fixed_window.debug_now = '2026-05-01 11:05+00';
SELECT window_start, window_end FROM fw_counters WHERE name = 'mix';
SELECT fw_gc() IS NOT NULL AS collected;
SELECT count(*) AS mix_kept FROM fw_counters WHERE name = 'mix';
SELECT ok, retry_after FROM fw_limit('mix', 'u', 3, '3 hours', cost => 3);
-- A new key denied (cost above the rate, within the capacity) gets its
-- counter, holding the rate, and spends nothing: since 1.3, so that its
-- tokens grow until the retry time (1.0.1 to 1.2.1 left it new, and denied
-- it again at that time, forever).
SELECT ok, remaining FROM fw_limit('denied', 'new', 2, '1 hour', cost => 3, capacity => 5);
SELECT count(*) AS counters, min(remaining) AS remaining FROM fw_counters WHERE name = 'denied';

-- A counter whose window lies beyond the timestamps PostgreSQL can show
-- (before 4713 BC, after 294276 AD) is listed with -infinity or infinity,
-- and fw_counters keeps working for everyone.
SET fixed_window.debug_now = '2026-05-01 12:00+00';
SELECT ok FROM fw_limit('x', 'y', 1, '10000 years', '3000-01-01 00:00+00');
SELECT name, window_start, window_end, remaining FROM fw_counters WHERE name = 'x';
SET fixed_window.debug_now = '294276-12-31 23:59:59+00';
SELECT ok FROM fw_limit('x', 'last week', 1, '1 week', '294276-01-02 00:00+00');
SELECT name, key, window_start, window_end FROM fw_counters WHERE name = 'x' ORDER BY key;
CREATE ROLE regress_fw_viewer;
SET ROLE regress_fw_viewer;
SELECT count(*) FROM fw_counters WHERE name = 'x';
RESET ROLE;
DROP ROLE regress_fw_viewer;

-- The trigger's start must be a fixed time: every input that timestamptz
-- reads as a time moving with the clock is refused, whatever the spacing
-- and case; 'epoch' is fixed and accepted.
SET fixed_window.debug_now = '2026-05-01 12:00+00';
CREATE TABLE visits (who text);
CREATE FUNCTION try_start(start text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TRIGGER start_test BEFORE INSERT ON visits FOR EACH ROW '
                   'EXECUTE FUNCTION fw_trigger(%L, ''who'', ''5'', ''1 hour'', %L)',
                   'start:' || start, start);
    BEGIN
        INSERT INTO visits VALUES ('v');
        DROP TRIGGER start_test ON visits;
        RETURN 'accepted';
    EXCEPTION WHEN OTHERS THEN
        DROP TRIGGER start_test ON visits;
        RETURN SQLSTATE;
    END;
END $$;
SELECT CASE WHEN length(s) > 40 THEN format('%s spaces, then now', length(s) - 3) ELSE s END AS start,
       try_start(s) AS result
FROM unnest(ARRAY[E'\tnow', 'now', ' NOW ', 'today 10:00', 'Today', 'tomorrow',
                  E'yesterday\n', 'TOMORROW 00:00 UTC', '2026-01-01 now', 'epoch',
                  '2026-01-01 10:00+00', 'J2461042', repeat(' ', 130) || 'now']) AS s;
DROP TABLE visits;

-- Keys from a column must not depend on session settings: the same value
-- inserted under two settings is one key (the second row is denied), for
-- every type family the trigger accepts.
CREATE TYPE mood AS ENUM ('happy', 'sad');
CREATE DOMAIN email AS text;
-- keys(typ, a, b, setting, v1, v2): insert a under setting = v1, then b
-- under setting = v2, at 1 row per day; one key if the second is denied.
CREATE FUNCTION keys(typ text, a text, b text, setting text DEFAULT 'search_path',
                     v1 text DEFAULT 'public', v2 text DEFAULT 'public')
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    result text;
BEGIN
    EXECUTE format('CREATE TABLE public.keyed (c %s)', typ);
    EXECUTE format('CREATE TRIGGER keyed_quota BEFORE INSERT ON public.keyed FOR EACH ROW '
                   'EXECUTE FUNCTION public.fw_trigger(%L, ''c'', ''1'', ''1 day'')',
                   format('type:%s:%s', typ, a));
    PERFORM set_config(setting, v1, true);
    EXECUTE format('INSERT INTO public.keyed VALUES (%L::%s)', a, typ);
    PERFORM set_config(setting, v2, true);
    BEGIN
        EXECUTE format('INSERT INTO public.keyed VALUES (%L::%s)', b, typ);
        result := 'two keys';
    EXCEPTION WHEN SQLSTATE 'RL429' THEN
        result := 'one key';
    END;
    DROP TABLE public.keyed;
    RETURN result;
END $$;
SELECT typ, setting, keys(typ, val, val, setting, v1, v2) AS same_key
FROM (VALUES
    ('text', 'alice', 'search_path', 'public', 'pg_catalog, public'),
    ('public.email', 'a@example.com', 'search_path', 'public', 'pg_catalog, public'),
    ('integer', '42', 'extra_float_digits', '0', '3'),
    ('numeric', '1.50', 'lc_numeric', 'C', 'C'),
    ('double precision', '0.1', 'extra_float_digits', '0', '3'),
    ('real', '0.1', 'extra_float_digits', '-3', '3'),
    ('boolean', 'true', 'DateStyle', 'ISO', 'German'),
    ('date', '2026-06-01', 'DateStyle', 'ISO, YMD', 'SQL, DMY'),
    ('timestamp', '2026-06-01 12:00', 'DateStyle', 'ISO', 'German'),
    ('timestamptz', '2026-06-01 12:00+00', 'TimeZone', 'UTC', 'Asia/Tokyo'),
    ('timetz', '12:00+02', 'DateStyle', 'ISO', 'SQL'),
    ('inet', '192.0.2.1', 'search_path', 'public', 'pg_catalog'),
    ('macaddr', '08:00:2b:01:02:03', 'search_path', 'public', 'pg_catalog'),
    ('uuid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'search_path', 'public', 'pg_catalog'),
    ('bytea', '\x0102', 'bytea_output', 'hex', 'escape'),
    ('bit varying', '1010', 'search_path', 'public', 'pg_catalog'),
    ('public.mood', 'happy', 'search_path', 'public', 'pg_catalog, public')
) AS t(typ, val, setting, v1, v2);
-- Equal numbers are one key however they are written.
SELECT typ, a, b, keys(typ, a, b) AS equal_values
FROM (VALUES ('numeric', '42', '42.000'), ('numeric', '-0.10', '-0.1'),
             ('double precision', '0', '-0'), ('real', '-0', '0'),
             ('bpchar', 'x', 'x  '), ('character(4)', 'x', 'x ')) AS t(typ, a, b);
-- A start's time zone abbreviation is read with the default set, whatever
-- the session's timezone_abbreviations: the second row of the day is denied.
CREATE TABLE abbrev (k text);
CREATE TRIGGER abbrev_quota BEFORE INSERT ON abbrev FOR EACH ROW
    EXECUTE FUNCTION fw_trigger('abbrev', 'k', '1', '1 day', '2026-01-01 00:00 EST');
SET timezone_abbreviations = 'Australia';
INSERT INTO abbrev VALUES ('w');
SET timezone_abbreviations = 'Default';
INSERT INTO abbrev VALUES ('w');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE abbrev;

-- Types whose text depends on the session, or whose equal values have
-- different texts, are refused at the first row.
CREATE COLLATION case_insensitive (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE refused (r regclass, m money, a integer[], i interval, j jsonb,
                      ci text COLLATE case_insensitive);
CREATE FUNCTION refused_key(col text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TRIGGER refused_quota BEFORE INSERT ON refused FOR EACH ROW '
                   'EXECUTE FUNCTION fw_trigger(''refused'', %L, ''1'', ''1 day'')', col);
    BEGIN
        INSERT INTO refused DEFAULT VALUES;
        DROP TRIGGER refused_quota ON refused;
        RETURN 'accepted';
    EXCEPTION WHEN OTHERS THEN
        DROP TRIGGER refused_quota ON refused;
        RETURN SQLSTATE;
    END;
END $$;
SELECT col, refused_key(col) FROM unnest(ARRAY['m', 'a', 'i', 'j', 'ci']) AS col;
DROP TABLE refused;
DROP COLLATION case_insensitive;
CREATE TABLE target_tbl (c regclass);
CREATE TRIGGER by_regclass BEFORE INSERT ON target_tbl
    FOR EACH ROW EXECUTE FUNCTION fw_trigger('reg', 'c', '1', '1 day');
INSERT INTO target_tbl (c) VALUES ('target_tbl');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE target_tbl;

-- What is hidden from an ordinary role, and what is not: fw_counters does
-- not list other roles' keys, but a role that guesses a key can confirm it
-- with fw_check, whose remaining tokens show the key's use (README,
-- "Keys are personal data").
RESET fixed_window.debug_now;
SET fixed_window.debug_now = '2026-05-01 12:00+00';
SELECT ok FROM fw_limit('login', 'alice@example.com', 5, '1 hour');
CREATE ROLE regress_fw_guesser;
SET ROLE regress_fw_guesser;
SELECT key FROM fw_counters WHERE name = 'login';
SELECT remaining AS guessed FROM fw_check('login', 'alice@example.com', 5, '1 hour');
SELECT remaining AS unused FROM fw_check('login', 'bob@example.com', 5, '1 hour');
RESET ROLE;
DROP ROLE regress_fw_guesser;

DROP EXTENSION fixed_window;
