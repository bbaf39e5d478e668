-- fixed_window, SQL edition: the HTTP helpers, carried over from the C
-- extension 1.6 as they are (they were SQL and PL/pgSQL there already):
-- fw_headers of an inline answer or of a policy's windows, the PostgREST
-- pre-request limit fw_postgrest, and the small functions they use.  Only
-- the search_path changed: the schema of the installation, then pg_temp
-- (pg_catalog first, implicitly), where the C extension names its schema.

CREATE FUNCTION fw_header_seconds(span interval)
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN ((ceil(EXTRACT(epoch FROM span)))::bigint)::text;
COMMENT ON FUNCTION fw_header_seconds(interval) IS
    'span in whole seconds, rounded up, as HTTP headers count time (used by fw_headers)';

CREATE FUNCTION fw_header_window_id(name text, rate integer, period interval)
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE
RETURN fw_window_id(name, NULL::text, rate, period, NULL::timestamp with time zone, NULL::integer);
COMMENT ON FUNCTION fw_header_window_id(text,integer,interval) IS
    'check a name, a rate and a period as fw_limit does, and return the identifier of the period (used by fw_headers)';

CREATE FUNCTION fw_interval_iso(period interval)
RETURNS text
LANGUAGE sql
IMMUTABLE PARALLEL SAFE STRICT
RETURN format('P%sY%sM%sDT%sH%sM%sS'::text, EXTRACT(year FROM period), EXTRACT(month FROM period), EXTRACT(day FROM period), EXTRACT(hour FROM period), EXTRACT(minute FROM period), EXTRACT(second FROM period));
COMMENT ON FUNCTION fw_interval_iso(interval) IS
    'the interval in ISO 8601, every field with its own sign, read alike by every session whatever its IntervalStyle (used by fixed_window_proxy)';

CREATE FUNCTION fw_sf_string(name text)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $function$
BEGIN
    IF name !~ '^[ -~]*$' THEN
        RAISE EXCEPTION 'limit name "%" cannot be sent in an HTTP header', name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Header values hold printable ASCII characters only.',
                  HINT = 'Give fw_headers a name of printable ASCII characters.';
    END IF;
    RETURN '"' || replace(replace(name, '\', '\\'), '"', '\"') || '"';
END $function$;
COMMENT ON FUNCTION fw_sf_string(text) IS
    'name as an HTTP structured-field string: quoted, with " and \ escaped; printable ASCII only (used by fw_headers)';

CREATE FUNCTION fw_headers(name text, windows fw_window_result[])
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $function$
DECLARE
    n integer;
    bad boolean;
    policy text;
    state text;
    tightest record;
    retry interval;
    no_promise boolean;
    denied boolean;
    headers jsonb;
BEGIN
    PERFORM fw_sf_string(name);
    IF name IS NULL OR windows IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', CASE WHEN name IS NULL THEN 'name' ELSE 'windows' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- a window allowed without rate or period is a router's answer for a
    -- shard it could not reach, failing open: it has nothing to advertise
    SELECT count(*) FILTER (WHERE u.rate IS NOT NULL AND u.period IS NOT NULL),
           bool_or(u.ok IS NULL OR (NOT u.ok AND (u.rate IS NULL OR u.period IS NULL)))
      INTO n, bad
      FROM unnest(windows) AS u
     WHERE NOT coalesce(u.shadow, false);
    IF bad THEN
        RAISE EXCEPTION 'a window of the call has no verdict, rate or period'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'fw_headers reads the rows fw_limit_windows returns, or one built from fw_limit''s answer.';
    END IF;
    IF n = 0 THEN
        RETURN '{}';                -- nothing enforced: nothing to advertise
    END IF;

    -- one item per window: "name", or "name/PT60S" when there are several;
    -- what is left is never more than the window's quota
    SELECT string_agg(i.item || ';q=' || i.rate || ';w=' || fw_header_seconds(i.period),
                      ', ' ORDER BY i.ord),
           string_agg(i.item || ';r=' || least(i.remaining, i.rate) || ';t='
                      || fw_header_seconds(i.reset_after), ', ' ORDER BY i.ord)
               FILTER (WHERE i.remaining IS NOT NULL AND i.reset_after IS NOT NULL),
           max(i.retry_after) FILTER (WHERE NOT i.ok),
           coalesce(bool_or(NOT i.ok AND i.retry_after IS NULL), false),
           bool_or(NOT i.ok)
      INTO policy, state, retry, no_promise, denied
      FROM (SELECT u.*, fw_sf_string(CASE WHEN n > 1
                            THEN name || '/' || fw_header_window_id(name, 1, u.period)
                            ELSE name END) AS item
            FROM unnest(windows) WITH ORDINALITY AS u(period, rate, capacity, shadow, ok, retry_after,
                                                      remaining, reset_after, window_start, window_end, ord)
            WHERE NOT coalesce(u.shadow, false) AND u.rate IS NOT NULL AND u.period IS NOT NULL) AS i;

    SELECT u.rate, u.remaining, u.reset_after INTO tightest
      FROM unnest(windows) AS u
     WHERE NOT coalesce(u.shadow, false) AND u.rate IS NOT NULL AND u.period IS NOT NULL
     ORDER BY u.remaining NULLS LAST, u.reset_after DESC NULLS LAST
     LIMIT 1;

    headers := jsonb_build_object('RateLimit-Policy', policy, 'X-RateLimit-Limit', tightest.rate::text);
    IF state IS NOT NULL THEN
        headers := headers || jsonb_build_object('RateLimit', state);
    END IF;
    IF tightest.remaining IS NOT NULL THEN
        headers := headers || jsonb_build_object('X-RateLimit-Remaining',
                                                 least(tightest.remaining, tightest.rate)::text);
    END IF;
    IF tightest.reset_after IS NOT NULL THEN
        headers := headers || jsonb_build_object('X-RateLimit-Reset', fw_header_seconds(tightest.reset_after));
    END IF;
    IF denied AND NOT no_promise AND retry IS NOT NULL THEN
        headers := headers || jsonb_build_object('Retry-After', fw_header_seconds(retry));
    END IF;
    RETURN headers;
END $function$;
COMMENT ON FUNCTION fw_headers(text,fw_window_result[]) IS
    'the HTTP headers of a call of policy name from its windows (fw_limit_windows): RateLimit-Policy and RateLimit (IETF draft, an item per enforced window, r never above q), X-RateLimit-Limit, -Remaining (never above the limit) and -Reset (seconds from now, not an epoch) of the most restrictive window, Retry-After (seconds) when denied with a retry time';

CREATE FUNCTION fw_headers(result fw_result, rate integer, period interval, name text DEFAULT 'default'::text)
RETURNS jsonb
LANGUAGE plpgsql
IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $function$
BEGIN
    PERFORM fw_header_window_id(name, rate, period);
    IF result IS NULL OR result.ok IS NULL THEN
        RAISE EXCEPTION 'argument "result" must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'fw_headers needs the answer of fw_limit or fw_check.';
    END IF;
    RETURN fw_headers(name, ARRAY[ROW(period, rate, NULL, false, result.ok, result.retry_after,
                                                  result.remaining, result.reset_after, NULL, NULL)
                                              ::fw_window_result]);
END $function$;
COMMENT ON FUNCTION fw_headers(fw_result,integer,interval,text) IS
    'the HTTP headers of an inline call''s answer result, for rate tokens per period, its policy item named name';

CREATE FUNCTION fw_postgrest(name text, key text, cost integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
DECLARE
    setting text := nullif(current_setting('response.headers', true), '');
    earlier jsonb;
    windows fw_window_result[];
    denied boolean;
    headers jsonb;
BEGIN
    PERFORM fw_sf_string(name);
    BEGIN
        earlier := coalesce(setting, '[]')::jsonb;
    EXCEPTION WHEN invalid_text_representation OR untranslatable_character THEN
        earlier := NULL;
    END;
    -- what PostgREST accepts: an array of objects of one string each
    IF earlier IS NULL OR jsonb_typeof(earlier) <> 'array'
       OR EXISTS (SELECT FROM jsonb_array_elements(earlier) AS e
                  WHERE jsonb_typeof(e) <> 'object'
                     OR (SELECT count(*) FROM jsonb_each(e)) <> 1
                     OR EXISTS (SELECT FROM jsonb_each(e) AS h WHERE jsonb_typeof(h.value) <> 'string')) THEN
        RAISE EXCEPTION 'response.headers is not a JSON array of header objects'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('response.headers is %s. PostgREST takes an array of objects, each with exactly one header name and a string value, and fails the request otherwise.', setting),
                  HINT = 'Set response.headers as PostgREST reads it, such as [{"Cache-Control": "no-store"}, {"Vary": "Accept"}].';
    END IF;

    windows := ARRAY(SELECT w FROM fw_limit_windows(name, key, cost) AS w);
    denied := EXISTS (SELECT FROM unnest(windows) AS w WHERE NOT w.ok AND NOT coalesce(w.shadow, false));
    -- The error below rolls back what this transaction wrote.  On the table
    -- backend, that includes the counter a denial creates for a key that
    -- has none, which gathers the tokens a cost above the rate needs: the
    -- retry time would not be kept, and none is sent.
    IF denied AND fw_storage_in_use() = 'table'
       AND EXISTS (SELECT FROM unnest(windows) AS w
                   WHERE NOT w.ok AND NOT coalesce(w.shadow, false) AND cost > w.rate) THEN
        windows := ARRAY(SELECT ROW(w.period, w.rate, w.capacity, w.shadow, w.ok,
                                    CASE WHEN w.ok THEN w.retry_after END, w.remaining, w.reset_after,
                                    w.window_start, w.window_end)::fw_window_result
                         FROM unnest(windows) WITH ORDINALITY AS w
                         ORDER BY w.ordinality);
    END IF;
    headers := fw_headers(name, windows);
    IF denied THEN
        RAISE SQLSTATE 'PGRST' USING
            MESSAGE = json_build_object(
                'code', 'PT429',
                'message', format('rate limit "%s" exceeded', name),
                'details', CASE WHEN headers ? 'Retry-After'
                                THEN format('The request may be repeated in %s seconds.', headers->>'Retry-After')
                                ELSE 'No time can be promised for repeating the request.' END,
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
END $function$;
COMMENT ON FUNCTION fw_postgrest(text,text,integer) IS
    'for a PostgREST db-pre-request function: spend cost tokens of policy name for key; allowed, add the rate-limit headers to response.headers; denied, end the request with HTTP 429 and those headers (SQLSTATE PGRST)';

-- fw_postgrest and the helpers run as the caller, as in the C extension:
-- PUBLIC may execute them (fw_postgrest spends through fw_limit_windows).
