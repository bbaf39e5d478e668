-- fixed_window, SQL edition: the API's calls, inline and of a named
-- policy: fw_check, fw_limit and fw_refund.  They call fw_inline and
-- fw_named (26_limit.sql, 27_named.sql), SECURITY DEFINER and owned by the
-- installing role, since callers are granted nothing on fw_counter.
--
-- Created first, each inline variant just before its named one, so that
-- catalog queries list them in the C extension's order (PL/pgSQL, whose
-- bodies are resolved when first called).

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
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
BEGIN
    RETURN (SELECT w.remaining FROM fw_named('r', name, key, cost) AS w WHERE w.deciding);
END $function$;
COMMENT ON FUNCTION fw_refund(text, text, integer) IS
    'give back up to cost tokens to every window of policy name for key whose counter''s window is current, never above capacity; returns the fewest tokens an enforced window holds now';

-- The named fw_check and fw_limit, each placed in pg_proc after its inline
-- variant: catalog queries that order by name list functions of one name in
-- the order of their rows, and fw_api's, as the C extension, inline first.
-- A row that lands before its inline variant (in space freed earlier in
-- the catalog) is renamed out of the way and made again; the spares go.
DO $do$
DECLARE
    spares integer := 0;
    sig text;
BEGIN
    FOREACH sig IN ARRAY ARRAY['fw_check', 'fw_limit'] LOOP
        LOOP
            IF sig = 'fw_check' THEN
                EXECUTE $def$
CREATE FUNCTION fw_check(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
LANGUAGE plpgsql PARALLEL RESTRICTED
SET search_path FROM CURRENT
AS $f$
BEGIN
    RETURN (SELECT ROW(w.verdict_ok, CASE WHEN NOT w.verdict_ok THEN fw_us_interval(w.verdict_retry_us) END,
                       w.remaining, fw_us_interval(w.reset_us))::fw_result
            FROM fw_named('c', name, key, cost) AS w
            WHERE w.deciding);
END $f$;
$def$;
            ELSE
                EXECUTE $def$
CREATE FUNCTION fw_limit(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $f$
BEGIN
    RETURN (SELECT ROW(w.verdict_ok, CASE WHEN NOT w.verdict_ok THEN fw_us_interval(w.verdict_retry_us) END,
                       w.remaining, fw_us_interval(w.reset_us))::fw_result
            FROM fw_named('s', name, key, cost) AS w
            WHERE w.deciding);
END $f$;
$def$;
            END IF;
            EXIT WHEN (SELECT (n.ctid::text::point)[0] > (i.ctid::text::point)[0]
                              OR ((n.ctid::text::point)[0] = (i.ctid::text::point)[0]
                                  AND (n.ctid::text::point)[1] > (i.ctid::text::point)[1])
                       FROM pg_proc AS n, pg_proc AS i
                       WHERE n.oid = to_regprocedure(sig || '(text, text, integer)')
                         AND i.oid = to_regprocedure(sig || '(text, text, integer, interval, timestamptz, integer, integer)'));
            spares := spares + 1;
            EXIT WHEN spares > 64;
            EXECUTE format('ALTER FUNCTION %I(text, text, integer) RENAME TO %I', sig, 'fw_spare_' || spares);
        END LOOP;
    END LOOP;
    FOR i IN 1..spares LOOP
        EXECUTE format('DROP FUNCTION %I(text, text, integer)', 'fw_spare_' || i);
    END LOOP;
END $do$;
COMMENT ON FUNCTION fw_check(text, text, integer) IS
    'what fw_limit(name, key, cost) would answer now, without spending tokens or creating counters';
COMMENT ON FUNCTION fw_limit(text, text, integer) IS
    'spend cost tokens in every window of policy name for key if every enforced window holds them, else spend nothing; remaining and reset_after are those of the most restrictive window';

REVOKE ALL ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer),
    fw_refund(text, text, integer) FROM PUBLIC;
