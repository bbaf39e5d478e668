/* fixed_window--1.2--1.2.1.sql: fw_postgrest refuses before it spends */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.2.1'" to load this file. \quit

-- 1.2 spent the tokens first, then failed on a policy name that cannot go
-- into a header or on a response.headers it could not extend: the request
-- failed and had still spent.  Both are checked first now, and
-- response.headers must be what PostgREST reads, an array of objects.
CREATE OR REPLACE FUNCTION fw_postgrest(name text, key text, cost integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting text := nullif(current_setting('response.headers', true), '');
    earlier jsonb;
    windows @extschema@.fw_window_result[];
    headers jsonb;
BEGIN
    PERFORM @extschema@.fw_sf_string(name);
    BEGIN
        earlier := coalesce(setting, '[]')::jsonb;
    EXCEPTION WHEN invalid_text_representation THEN
        earlier := NULL;
    END;
    IF earlier IS NULL OR jsonb_typeof(earlier) <> 'array'
       OR EXISTS (SELECT FROM jsonb_array_elements(earlier) AS e WHERE jsonb_typeof(e) <> 'object') THEN
        RAISE EXCEPTION 'response.headers is not a JSON array of header objects'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('response.headers is %s.', setting),
                  HINT = 'PostgREST reads response.headers as an array of one-header objects, such as [{"Cache-Control": "no-store"}].';
    END IF;

    windows := ARRAY(SELECT w FROM @extschema@.fw_limit_windows(name, key, cost) AS w);
    headers := @extschema@.fw_headers(name, windows);
    IF EXISTS (SELECT FROM unnest(windows) AS w WHERE NOT w.ok AND NOT coalesce(w.shadow, false)) THEN
        RAISE SQLSTATE 'PGRST' USING
            MESSAGE = json_build_object(
                'code', 'PT429',
                'message', format('rate limit "%s" exceeded', name),
                'details', format('The request may be repeated in %s seconds.', coalesce(headers->>'Retry-After', 'some')),
                'hint', NULL)::text,
            DETAIL = json_build_object('status', 429, 'headers', headers)::text;
    END IF;
    -- keep the headers set before, then add ours, one object each
    PERFORM set_config('response.headers',
        (SELECT coalesce(jsonb_agg(h ORDER BY part, o), '[]')::text
         FROM (SELECT 1, e.h, e.o FROM jsonb_array_elements(earlier) WITH ORDINALITY AS e(h, o)
               UNION ALL
               SELECT 2, jsonb_build_object(e.key, e.value), row_number() OVER ()
               FROM jsonb_each_text(headers) AS e) AS all_headers(part, h, o)),
        true);
END $$;
