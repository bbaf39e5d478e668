/* fixed_window--1.1--1.2.sql: HTTP rate-limit headers, and a limit for PostgREST */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.2'" to load this file. \quit

-- A name as an HTTP structured-field string (RFC 8941): printable ASCII in
-- double quotes, with " and \ escaped.
CREATE FUNCTION fw_sf_string(name text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF name !~ '^[ -~]*$' THEN
        RAISE EXCEPTION 'limit name "%" cannot be sent in an HTTP header', name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Header values hold printable ASCII characters only.',
                  HINT = 'Give fw_headers a name of printable ASCII characters.';
    END IF;
    RETURN '"' || replace(replace(name, '\', '\\'), '"', '\"') || '"';
END $$;

COMMENT ON FUNCTION fw_sf_string(text) IS
'name as an HTTP structured-field string: quoted, with " and \ escaped; printable ASCII only (used by fw_headers)';

-- Seconds as HTTP headers count them: whole seconds, rounded up.
CREATE FUNCTION fw_header_seconds(span interval)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ceil(extract(epoch FROM span))::bigint::text;

COMMENT ON FUNCTION fw_header_seconds(interval) IS
'span in whole seconds, rounded up, as HTTP headers count time (used by fw_headers)';

-- The headers of a call from its windows, as fw_limit_windows returns them.
-- Shadow windows are not advertised: they never deny.  X-RateLimit-* and
-- Retry-After follow what fw_limit answers: the most restrictive window
-- (fewest tokens left, then the longest wait) and the latest retry.
CREATE FUNCTION fw_headers(name text, windows fw_window_result[])
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
    policy text;
    state text;
    tightest record;
    retry interval;
    denied boolean;
    headers jsonb;
BEGIN
    PERFORM @extschema@.fw_sf_string(name);
    IF name IS NULL OR windows IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', CASE WHEN name IS NULL THEN 'name' ELSE 'windows' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    SELECT count(*), bool_or(u.ok IS NULL OR u.rate IS NULL OR u.period IS NULL)
      INTO n, denied
      FROM unnest(windows) AS u
     WHERE NOT coalesce(u.shadow, false);
    IF denied THEN
        RAISE EXCEPTION 'a window of the call has no verdict, rate or period'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'fw_headers reads the rows fw_limit_windows returns, or one built from fw_limit''s answer.';
    END IF;
    IF n = 0 THEN
        RETURN '{}';                -- nothing enforced: nothing to advertise
    END IF;

    -- one item per window: "name", or "name/PT60S" when there are several
    SELECT string_agg(i.item || ';q=' || i.rate || ';w=' || @extschema@.fw_header_seconds(i.period),
                      ', ' ORDER BY i.ord),
           string_agg(i.item || ';r=' || i.remaining || ';t=' || @extschema@.fw_header_seconds(i.reset_after),
                      ', ' ORDER BY i.ord) FILTER (WHERE i.remaining IS NOT NULL AND i.reset_after IS NOT NULL),
           max(i.retry_after) FILTER (WHERE NOT i.ok),
           bool_or(NOT i.ok)
      INTO policy, state, retry, denied
      FROM (SELECT u.*, @extschema@.fw_sf_string(CASE WHEN n > 1
                            THEN name || '/' || @extschema@.fw_window_id(name, NULL, 1, u.period, NULL, NULL)
                            ELSE name END) AS item
            FROM unnest(windows) WITH ORDINALITY AS u(period, rate, capacity, shadow, ok, retry_after,
                                                      remaining, reset_after, window_start, window_end, ord)
            WHERE NOT coalesce(u.shadow, false)) AS i;

    SELECT u.rate, u.remaining, u.reset_after INTO tightest
      FROM unnest(windows) AS u
     WHERE NOT coalesce(u.shadow, false)
     ORDER BY u.remaining NULLS LAST, u.reset_after DESC NULLS LAST
     LIMIT 1;

    headers := jsonb_build_object('RateLimit-Policy', policy, 'X-RateLimit-Limit', tightest.rate::text);
    IF state IS NOT NULL THEN
        headers := headers || jsonb_build_object('RateLimit', state);
    END IF;
    IF tightest.remaining IS NOT NULL THEN
        headers := headers || jsonb_build_object('X-RateLimit-Remaining', tightest.remaining::text);
    END IF;
    IF tightest.reset_after IS NOT NULL THEN
        headers := headers || jsonb_build_object('X-RateLimit-Reset', @extschema@.fw_header_seconds(tightest.reset_after));
    END IF;
    IF denied AND coalesce(retry, tightest.reset_after) IS NOT NULL THEN
        headers := headers || jsonb_build_object('Retry-After', @extschema@.fw_header_seconds(coalesce(retry, tightest.reset_after)));
    END IF;
    RETURN headers;
END $$;

COMMENT ON FUNCTION fw_headers(text, fw_window_result[]) IS
'the HTTP headers of a call of policy name from its windows (fw_limit_windows): RateLimit-Policy and RateLimit (IETF draft, an item per enforced window), X-RateLimit-Limit, -Remaining and -Reset (seconds) of the most restrictive window, Retry-After (seconds) when denied';

CREATE FUNCTION fw_headers(result fw_result, rate integer, period interval, name text DEFAULT 'default')
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_window_id(name, NULL, rate, period, NULL, NULL);
    IF result IS NULL OR result.ok IS NULL THEN
        RAISE EXCEPTION 'argument "result" must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'fw_headers needs the answer of fw_limit or fw_check.';
    END IF;
    RETURN @extschema@.fw_headers(name, ARRAY[ROW(period, rate, NULL, false, result.ok, result.retry_after,
                                                  result.remaining, result.reset_after, NULL, NULL)
                                              ::@extschema@.fw_window_result]);
END $$;

COMMENT ON FUNCTION fw_headers(fw_result, integer, interval, text) IS
'the HTTP headers of an inline call''s answer result, for rate tokens per period, its policy item named name';

-- PostgREST: limit a request from its db-pre-request function.  Allowed, the
-- headers go to PostgREST through response.headers; denied, the request
-- ends with HTTP 429 and the same headers, by the SQLSTATE PGRST whose
-- message and detail PostgREST turns into the response (PT429 alone sets
-- the status, but PostgREST drops response.headers when the request
-- fails, so Retry-After would be lost).
CREATE FUNCTION fw_postgrest(name text, key text, cost integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    windows @extschema@.fw_window_result[] :=
        ARRAY(SELECT w FROM @extschema@.fw_limit_windows(name, key, cost) AS w);
    headers jsonb := @extschema@.fw_headers(name, windows);
    earlier text := nullif(current_setting('response.headers', true), '');
BEGIN
    IF EXISTS (SELECT FROM unnest(windows) AS w WHERE NOT w.ok AND NOT coalesce(w.shadow, false)) THEN
        RAISE SQLSTATE 'PGRST' USING
            MESSAGE = json_build_object(
                'code', 'PT429',
                'message', format('rate limit "%s" exceeded', name),
                'details', format('The request may be repeated in %s seconds.', coalesce(headers->>'Retry-After', 'some')),
                'hint', NULL)::text,
            DETAIL = json_build_object('status', 429, 'headers', headers)::text;
    END IF;
    -- response.headers is a JSON array of one-header objects; keep any set before
    PERFORM set_config('response.headers',
        (SELECT coalesce(jsonb_agg(h ORDER BY o), '[]')::text
         FROM (SELECT e.h, e.o FROM jsonb_array_elements(coalesce(earlier::jsonb, '[]')) WITH ORDINALITY AS e(h, o)
               UNION ALL
               SELECT jsonb_build_object(e.key, e.value), 1000000 + row_number() OVER ()
               FROM jsonb_each_text(headers) AS e) AS all_headers(h, o)),
        true);
END $$;

COMMENT ON FUNCTION fw_postgrest(text, text, integer) IS
'for a PostgREST db-pre-request function: spend cost tokens of policy name for key; allowed, add the rate-limit headers to response.headers; denied, end the request with HTTP 429 and those headers (SQLSTATE PGRST)';
