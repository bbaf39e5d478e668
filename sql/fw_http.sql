--
-- fw_http: HTTP rate-limit headers (1.2) and the PostgREST pre-request
-- limit.  fw_headers of an inline answer and of a policy's windows: the IETF
-- draft's RateLimit-Policy and RateLimit, the X-RateLimit-* headers and
-- Retry-After, seconds rounded up, shadow windows left out, names quoted and
-- escaped; fw_postgrest with the settings PostgREST sets (request.headers
-- in, response.headers out, SQLSTATE PGRST with status 429 when denied).
-- 1.3: remaining never above the limit; no Retry-After without a promise;
-- response.headers checked as PostgREST reads it.  Runs on both storages,
-- with the clock fixed by debug_now.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
\set SHOW_CONTEXT never
\set VERBOSITY sqlstate
SET fixed_window.debug_now = '2026-05-01 10:00:43+00';

-- The SQLSTATE and message of a statement's error.
CREATE OR REPLACE FUNCTION error_of(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE stmt;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- Calls one after the other, each with the headers of its answer.
CREATE FUNCTION inline_calls(calls integer)
RETURNS TABLE (call integer, ok boolean, headers text) LANGUAGE plpgsql AS $$
DECLARE
    r fw_result;
BEGIN
    FOR i IN 1 .. calls LOOP
        r := fw_limit('http_search', 'user-a', 3, '1 minute');
        RETURN QUERY SELECT i, r.ok, jsonb_pretty(fw_headers(r, 3, '1 minute', 'search'));
    END LOOP;
END $$;
CREATE FUNCTION policy_calls(calls integer)
RETURNS TABLE (call integer, headers text) LANGUAGE plpgsql AS $$
BEGIN
    FOR i IN 1 .. calls LOOP
        RETURN QUERY SELECT i, jsonb_pretty(fw_headers('http_api',
            ARRAY(SELECT w FROM fw_limit_windows('http_api', 'user-b') AS w)));
    END LOOP;
END $$;

-- One inline limit, 3 per minute: three calls allowed, the fourth denied;
-- the window ends in 17 s.
SELECT * FROM inline_calls(4);

-- Seconds are rounded up: 16.8 s left is t=17, and a day is w=86400; the
-- default item name; a month counts 30 days, as PostgreSQL's intervals do.
SET fixed_window.debug_now = '2026-05-01 10:00:43.2+00';
SELECT fw_headers(r, 3, '1 minute')->>'RateLimit' AS "RateLimit",
       fw_headers(r, 3, '1 minute')->>'X-RateLimit-Reset' AS reset
FROM fw_check('http_search', 'user-a', 3, '1 minute') AS r;
SELECT fw_headers(r, 1000, '1 day', 'daily')->>'RateLimit-Policy' AS day,
       fw_headers(r, 1000, '1 mon', 'monthly')->>'RateLimit-Policy' AS month
FROM fw_check('http_quota', 'user-a', 1000, '1 day') AS r;

-- A policy of two windows and a shadow one: an item per enforced window,
-- named by its period; X-RateLimit-* from the most restrictive window.
SELECT fw_define('http_api', 2, '1 minute');
SELECT fw_define('http_api', 100, '1 hour');
SELECT fw_define('http_api', 1, '1 second', shadow => true);
SELECT * FROM policy_calls(3);
-- only shadow windows: nothing to advertise
SELECT fw_define('http_watch', 1, '1 minute', shadow => true);
SELECT fw_headers('http_watch', ARRAY(SELECT w FROM fw_limit_windows('http_watch', 'user-b') AS w));

-- Names are structured-field strings: quotes and backslashes escaped.
SELECT fw_headers(r, 3, '1 minute', 'say "hi" \ bye')->>'RateLimit-Policy'
FROM fw_check('http_search', 'user-a', 3, '1 minute') AS r;

-- An answer that knows nothing more than ok (a router failing open):
-- the policy and the limit only.
SELECT fw_headers(ROW(true, NULL, NULL, NULL)::fw_result, 3, '1 minute', 'search');

-- Bad input.
SELECT t.stmt, error_of(t.stmt)
FROM unnest(ARRAY[
    $$SELECT fw_headers(NULL::fw_result, 3, '1 minute')$$,
    $$SELECT fw_headers(ROW(NULL, NULL, 1, '1 s')::fw_result, 3, '1 minute')$$,
    $$SELECT fw_headers(ROW(true, NULL, 1, '1 s')::fw_result, 0, '1 minute')$$,
    $$SELECT fw_headers(ROW(true, NULL, 1, '1 s')::fw_result, 3, '-1 minute')$$,
    $$SELECT fw_headers(ROW(true, NULL, 1, '1 s')::fw_result, 3, '1 minute', NULL)$$,
    $$SELECT fw_headers(ROW(true, NULL, 1, '1 s')::fw_result, 3, '1 minute', 'café')$$,
    $$SELECT fw_headers('api', NULL)$$,
    $$SELECT fw_headers('api', ARRAY[ROW('1 minute', 2, 2, false, NULL, NULL, 1, '1 s', NULL, NULL)::fw_window_result])$$
]) WITH ORDINALITY AS t(stmt, n) ORDER BY n;

-- PostgREST: a db-pre-request function limiting by the API key header, else
-- by role, as the README shows.  PostgREST sets request.headers (JSON, names
-- in lower case) for the transaction and reads response.headers after it.
SELECT fw_define('http_postgrest', 2, '1 minute');
CREATE FUNCTION pre_request() RETURNS void LANGUAGE sql AS $$
    SELECT fw_postgrest('http_postgrest',
                        coalesce(current_setting('request.headers', true)::json->>'x-api-key',
                                 current_user));
$$;
-- What PostgREST would answer: the status and headers of the request.
CREATE FUNCTION postgrest(pre_request regproc, api_key text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('request.headers', json_build_object('x-api-key', api_key)::text, true);
    PERFORM set_config('response.headers', '[{"X-Powered-By": "an earlier pre-request step"}]', true);
    EXECUTE format('SELECT %s()', pre_request);
    RETURN '200 ' || current_setting('response.headers');
EXCEPTION WHEN SQLSTATE 'PGRST' THEN
    DECLARE
        message text;
        detail text;
    BEGIN
        GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
        RETURN (detail::json->>'status') || ' ' || (detail::json->'headers')::text
               || ' ' || message;
    END;
END $$;
CREATE FUNCTION request(api_key text) RETURNS text LANGUAGE sql
RETURN postgrest('pre_request', api_key);
SELECT request('key-1');
SELECT request('key-1');
SELECT request('key-1');
-- another key has its own window
SELECT request('key-2');
-- without the header, the role is the key
SELECT request(NULL) LIKE '200 %' AS allowed;
-- What fw_postgrest cannot work with is an error before anything is spent:
-- response.headers that is not a JSON array of objects, a policy name that
-- cannot go into a header.
SELECT set_config('response.headers', 'not json', false);
SELECT fw_postgrest('http_postgrest', 'key-3');
SELECT set_config('response.headers', '{"X-One": "1"}', false);
\set VERBOSITY default
SELECT fw_postgrest('http_postgrest', 'key-3');
\set VERBOSITY sqlstate
SELECT set_config('response.headers', '["X-One: 1"]', false);
SELECT fw_postgrest('http_postgrest', 'key-3');
RESET response.headers;
SELECT ok, remaining FROM fw_check('http_postgrest', 'key-3', 0) AS nothing_spent;
SELECT fw_define('http_é', 2, '1 minute');
SELECT fw_postgrest('http_é', 'key-3');
SELECT ok, remaining FROM fw_check('http_é', 'key-3', 0) AS nothing_spent;
-- 1.3: exactly what PostgREST accepts, each object one header with a string
-- value (1.2.1 took these, spent, and PostgREST then failed with PGRST111)
SELECT set_config('response.headers', '[{"A": "1", "B": "2"}]', false);
SELECT fw_postgrest('http_postgrest', 'key-3');
SELECT set_config('response.headers', '[{"A": 1}]', false);
SELECT fw_postgrest('http_postgrest', 'key-3');
SELECT set_config('response.headers', '[{}]', false);
SELECT fw_postgrest('http_postgrest', 'key-3');
SELECT set_config('response.headers', '[{"A": null}]', false);
SELECT fw_postgrest('http_postgrest', 'key-3');
RESET response.headers;
SELECT ok, remaining FROM fw_check('http_postgrest', 'key-3', 0) AS nothing_spent;
BEGIN;
SELECT set_config('response.headers', '[{"A": "1"}, {"B": "2"}]', true);
SELECT fw_postgrest('http_postgrest', 'key-3');
SELECT current_setting('response.headers')::jsonb->2 AS added_after_two;
COMMIT;

--
-- 1.3: with capacity above the rate, the headers never advertise more than
-- a window's quota: remaining is at most the limit, r at most q (1.2.1 said
-- r=149 against q=100 after an unused window).  The tokens saved are still
-- spent: the limit is reached after 149 calls, not 100.
--
SET fixed_window.debug_now = '2026-05-01 10:00:00+00';
SELECT fw_limit('http_roll', 'k', 100, '1 hour', capacity => 150, cost => 0);
SET fixed_window.debug_now = '2026-05-01 11:00:00+00';
SELECT r.remaining AS tokens, fw_headers(r, 100, '1 hour', 'roll') AS headers
FROM fw_limit('http_roll', 'k', 100, '1 hour', capacity => 150) AS r;
SELECT (fw_limit('http_roll', 'k', 100, '1 hour', capacity => 150, cost => 48)).remaining AS tokens;
SELECT r.remaining AS tokens, fw_headers(r, 100, '1 hour', 'roll')->>'X-RateLimit-Remaining' AS remaining
FROM fw_limit('http_roll', 'k', 100, '1 hour', capacity => 150) AS r;
SELECT fw_define('http_rollp', 100, '1 hour', capacity => 150);
SELECT fw_define('http_rollp', 10, '1 minute');
SET fixed_window.debug_now = '2026-05-01 10:00:00+00';
SELECT count(*) FROM fw_limit_windows('http_rollp', 'k', 0);
SET fixed_window.debug_now = '2026-05-01 11:00:00+00';
SELECT fw_headers('http_rollp', ARRAY(SELECT w FROM fw_limit_windows('http_rollp', 'k') AS w));

--
-- 1.3: a denied call that promises no retry time (retry_after NULL) sends
-- no Retry-After; fw_postgrest's 429 says so.
--
SET fixed_window.debug_now = '2026-05-01 10:00:00+00';
SELECT fw_define('http_never', 1, '1000 years', capacity => 1000);
SELECT ok, retry_after, fw_headers(r, 1, '1000 years', 'never') AS headers
FROM fw_limit('http_never', 'k', 1, '1000 years', capacity => 1000, cost => 1000) AS r;
CREATE FUNCTION pre_request_never() RETURNS void LANGUAGE sql AS $$
    SELECT fw_postgrest('http_never', 'k', 1000);
$$;
SELECT postgrest('pre_request_never', NULL);

DROP EXTENSION fixed_window;
