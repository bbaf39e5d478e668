-- fixed_window, SQL edition: fw_limit, fw_check and fw_refund, inline.
-- SECURITY DEFINER (owned by the installing role), since callers are
-- granted nothing on fw_counter.

CREATE FUNCTION fw_limit(name text, key text, rate integer, period interval,
                         start timestamptz DEFAULT '1970-01-01 00:00:00+00', cost integer DEFAULT 1,
                         capacity integer DEFAULT NULL)
RETURNS fw_result
LANGUAGE plpgsql SECURITY DEFINER
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

CREATE FUNCTION fw_check(name text, key text, rate integer, period interval,
                         start timestamptz DEFAULT '1970-01-01 00:00:00+00', cost integer DEFAULT 1,
                         capacity integer DEFAULT NULL)
RETURNS fw_result
LANGUAGE plpgsql SECURITY DEFINER PARALLEL RESTRICTED
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

CREATE FUNCTION fw_refund(name text, key text, rate integer, period interval,
                          start timestamptz DEFAULT '1970-01-01 00:00:00+00', cost integer DEFAULT 1,
                          capacity integer DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
BEGIN
    RETURN (fw_inline('r', name, key, rate, period, start, cost, capacity)).remaining;
END $function$;
COMMENT ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) IS
    'give back up to cost tokens to the counter of an inline limit if its window is current, never above capacity; returns the tokens it holds now';

REVOKE ALL ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fw_inline("char", text, text, integer, interval, timestamptz, integer, integer),
    fw_name_stats(text, timestamptz) FROM PUBLIC;
ALTER FUNCTION fw_limit(text, text, integer, interval, timestamptz, integer, integer) OWNER TO @extowner@;
ALTER FUNCTION fw_check(text, text, integer, interval, timestamptz, integer, integer) OWNER TO @extowner@;
ALTER FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) OWNER TO @extowner@;
ALTER FUNCTION fw_inline("char", text, text, integer, interval, timestamptz, integer, integer) OWNER TO @extowner@;
ALTER FUNCTION fw_name_stats(text, timestamptz) OWNER TO @extowner@;
