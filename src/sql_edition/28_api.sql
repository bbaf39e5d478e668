-- fixed_window, SQL edition: fw_limit_windows and fw_check_windows, a row
-- per window of a named policy's call.

-- one row per window: what each window decided on its own
CREATE FUNCTION fw_windows(mode "char", name text, key text, cost integer)
RETURNS SETOF fw_window_result
LANGUAGE sql
SET search_path FROM CURRENT
AS $function$
    SELECT w.period, w.rate, w.capacity, w.shadow, w.ok,
           CASE WHEN NOT w.ok THEN fw_us_interval(w.retry_us) END, w.remaining,
           fw_us_interval(w.reset_us), fw_ts(w.window_start_us), fw_ts(w.window_end_us)
    FROM fw_named(mode, name, key, cost) AS w
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

COMMENT ON FUNCTION fw_windows("char", text, text, integer) IS
    'internal: the rows of fw_limit_windows and fw_check_windows (SQL edition)';
