-- fixed_window, SQL edition: the API's calls, inline and of a named
-- policy: fw_limit, fw_check, fw_refund, fw_limit_windows, fw_check_windows.
-- They call fw_inline and fw_named, SECURITY DEFINER and owned by the
-- installing role, since callers are granted nothing on fw_counter.  Each
-- inline variant is created just before the named one, as in the C
-- extension (catalog queries list them in that order).

CREATE FUNCTION fw_check(name text, key text, rate integer, period interval,
                         start timestamptz DEFAULT '1970-01-01 00:00:00+00', cost integer DEFAULT 1,
                         capacity integer DEFAULT NULL)
RETURNS fw_result
LANGUAGE plpgsql PARALLEL RESTRICTED
SET search_path FROM CURRENT
AS $function$
DECLARE
    r record;
BEGIN
    r := fw_inline('c', name, key, rate, period, start, cost, capacity);
    RETURN ROW(r.ok, CASE WHEN NOT r.ok THEN fw_us_interval(r.retry_us) END, r.remaining,
               fw_us_interval(r.reset_us))::fw_result;
END $function$;
COMMENT ON FUNCTION fw_check(text, text, integer, interval, timestamptz, integer, integer) IS
    'what fw_limit would answer now, without spending tokens or creating a counter';

CREATE FUNCTION fw_check(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
LANGUAGE sql PARALLEL RESTRICTED
SET search_path FROM CURRENT
AS $function$
    SELECT ROW(w.verdict_ok, CASE WHEN NOT w.verdict_ok THEN fw_us_interval(w.verdict_retry_us) END,
               w.remaining, fw_us_interval(w.reset_us))::fw_result
    FROM fw_named('c', name, key, cost) AS w
    WHERE w.deciding
$function$;
COMMENT ON FUNCTION fw_check(text, text, integer) IS
    'what fw_limit(name, key, cost) would answer now, without spending tokens or creating counters';

CREATE FUNCTION fw_limit(name text, key text, rate integer, period interval,
                         start timestamptz DEFAULT '1970-01-01 00:00:00+00', cost integer DEFAULT 1,
                         capacity integer DEFAULT NULL)
RETURNS fw_result
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
DECLARE
    r record;
BEGIN
    r := fw_inline('s', name, key, rate, period, start, cost, capacity);
    RETURN ROW(r.ok, CASE WHEN NOT r.ok THEN fw_us_interval(r.retry_us) END, r.remaining,
               fw_us_interval(r.reset_us))::fw_result;
END $function$;
COMMENT ON FUNCTION fw_limit(text, text, integer, interval, timestamptz, integer, integer) IS
    'spend cost tokens of limit name for key if the current window holds them; rate tokens per period, unused ones kept up to capacity';

CREATE FUNCTION fw_limit(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
LANGUAGE sql
SET search_path FROM CURRENT
AS $function$
    SELECT ROW(w.verdict_ok, CASE WHEN NOT w.verdict_ok THEN fw_us_interval(w.verdict_retry_us) END,
               w.remaining, fw_us_interval(w.reset_us))::fw_result
    FROM fw_named('s', name, key, cost) AS w
    WHERE w.deciding
$function$;
COMMENT ON FUNCTION fw_limit(text, text, integer) IS
    'spend cost tokens in every window of policy name for key if every enforced window holds them, else spend nothing; remaining and reset_after are those of the most restrictive window';

CREATE FUNCTION fw_refund(name text, key text, rate integer, period interval,
                          start timestamptz DEFAULT '1970-01-01 00:00:00+00', cost integer DEFAULT 1,
                          capacity integer DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
BEGIN
    RETURN (fw_inline('r', name, key, rate, period, start, cost, capacity)).remaining;
END $function$;
COMMENT ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) IS
    'give back up to cost tokens to the counter of an inline limit if its window is current, never above capacity; returns the tokens it holds now';

CREATE FUNCTION fw_refund(name text, key text, cost integer)
RETURNS integer
LANGUAGE sql
SET search_path FROM CURRENT
AS $function$
    SELECT w.remaining FROM fw_named('r', name, key, cost) AS w WHERE w.deciding
$function$;
COMMENT ON FUNCTION fw_refund(text, text, integer) IS
    'give back up to cost tokens to every window of policy name for key whose counter''s window is current, never above capacity; returns the fewest tokens an enforced window holds now';

-- one row per window: what each window decided on its own
CREATE FUNCTION fw_windows(mode "char", name text, key text, cost integer)
RETURNS SETOF fw_window_result
LANGUAGE sql
SET search_path FROM CURRENT
AS $function$
    SELECT w.period, w.rate, w.capacity, w.shadow, w.ok,
           CASE WHEN NOT w.ok THEN fw_us_interval(w.retry_us) END, w.remaining,
           fw_us_interval(w.reset_us),
           fw_ts(fw_boundary(w.months, w.span, w.start_us,
                             fw_index(w.months, w.span, w.start_us, e.end_us - 1))),
           fw_ts(e.end_us)
    FROM fw_named(mode, name, key, cost) AS w
    CROSS JOIN LATERAL (SELECT fw_us(fw_now()) + w.reset_us AS end_us) AS e
$function$;

CREATE FUNCTION fw_limit_windows(name text, key text, cost integer DEFAULT 1)
RETURNS SETOF fw_window_result
LANGUAGE sql
SET search_path FROM CURRENT
AS $function$
    SELECT * FROM fw_windows('s', name, key, cost)
$function$;
COMMENT ON FUNCTION fw_limit_windows(text, text, integer) IS
    'fw_limit(name, key, cost), answered with one row per window of the policy: each window''s own verdict, so that a caller sees which window denied';

CREATE FUNCTION fw_check_windows(name text, key text, cost integer DEFAULT 1)
RETURNS SETOF fw_window_result
LANGUAGE sql PARALLEL RESTRICTED
SET search_path FROM CURRENT
AS $function$
    SELECT * FROM fw_windows('c', name, key, cost)
$function$;
COMMENT ON FUNCTION fw_check_windows(text, text, integer) IS
    'what fw_limit_windows would answer now, without spending tokens or creating counters';

REVOKE ALL ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer),
    fw_refund(text, text, integer) FROM PUBLIC;
