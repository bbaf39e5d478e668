-- fixed_window, SQL edition: the inline calls fw_limit, fw_check and
-- fw_refund, on fw_counter as the C extension's table backend keeps it
-- (table_store.c): a spending call locks its key's row (FOR NO KEY UPDATE),
-- or creates it with INSERT ... ON CONFLICT DO NOTHING and looks again if
-- another transaction created it first; fw_check takes no lock and writes
-- nothing; a rollback takes back what was spent.

-- a name or key longer than allowed
CREATE FUNCTION fw_check_length(what text, value text, max_bytes integer)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $function$
DECLARE
    len integer := octet_length(value);
BEGIN
    IF len > max_bytes THEN
        RAISE EXCEPTION 'argument "%" is too long', what
            USING ERRCODE = 'program_limit_exceeded',
                  DETAIL = format('The value is %s bytes; at most %s bytes are allowed.', len, max_bytes),
                  HINT = 'Pass a shorter value, for example a digest such as md5() of it.';
    END IF;
END $function$;

-- a 64-bit hash read as unsigned, as C reads it
CREATE FUNCTION fw_unsigned(h bigint)
RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN CASE WHEN h < 0 THEN h::numeric + 18446744073709551616::numeric ELSE h::numeric END;

-- the checks of validate.c: fwvalidate_limit and fwvalidate_cost
CREATE FUNCTION fw_validate(name text, key text, rate integer, period interval,
                            start timestamptz, cost integer, capacity integer,
                            phase boolean, within_capacity boolean,
                            OUT months integer, OUT span bigint, OUT start_us bigint,
                            OUT cap integer)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $function$
DECLARE
    bad text;
    first_end bigint;
    v record;
BEGIN
    -- limit.c's order: name (null, then length), key (null, then length),
    -- then rate, period and cost (null); one test on the fast path
    IF name IS NULL OR key IS NULL OR rate IS NULL OR period IS NULL OR cost IS NULL
       OR octet_length(name) > 256 OR octet_length(key) > 2048 THEN
        IF name IS NULL THEN
            bad := 'name';
        ELSE
            PERFORM fw_check_length('name', name, 256);
            IF key IS NULL THEN
                bad := 'key';
            ELSE
                PERFORM fw_check_length('key', key, 2048);
                bad := CASE WHEN rate IS NULL THEN 'rate' WHEN period IS NULL THEN 'period'
                            ELSE 'cost' END;
            END IF;
        END IF;
        RAISE EXCEPTION 'argument "%" must not be null', bad USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF rate <= 0 THEN
        RAISE EXCEPTION 'rate must be greater than zero'
            USING ERRCODE = 'invalid_parameter_value', DETAIL = format('The rate given was %s.', rate);
    END IF;
    IF isfinite(period) THEN
        v := fw_period(period);
        months := v.months;
        span := v.span;
    END IF;
    IF months IS NULL THEN
        RAISE EXCEPTION 'period must be a positive interval'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The period given was "%s".', period),
                  HINT = 'Use a period such as ''1 minute'', ''1 day'' or ''1 month''. A period with a month or year part must not have a negative day or time part.';
    END IF;
    IF start IS NOT NULL AND NOT isfinite(start) THEN
        RAISE EXCEPTION 'start must be a finite timestamp'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The start given was %s.', start);
    END IF;
    cap := coalesce(capacity, rate);
    IF cap < rate THEN
        RAISE EXCEPTION 'capacity must be at least the rate'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The capacity given was %s and the rate %s.', cap, rate);
    END IF;
    IF cost < 0 THEN
        RAISE EXCEPTION 'cost must not be negative'
            USING ERRCODE = 'invalid_parameter_value', DETAIL = format('The cost given was %s.', cost);
    END IF;
    IF within_capacity AND cost > cap THEN
        RAISE EXCEPTION 'cost must not exceed the capacity'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The cost given was %s and the capacity %s, so the call could never be allowed.', cost, cap),
                  HINT = 'Raise capacity, which defaults to the rate, or lower the cost.';
    END IF;
    IF start IS NOT NULL THEN
        start_us := fw_us(start);
    ELSIF phase THEN
        -- the key's phase: the Unix epoch shifted within the first window
        first_end := fw_boundary(months, span, -946684800000000, 1) + 946684800000000;
        IF first_end IS NULL THEN
            RAISE EXCEPTION 'period is too long to derive a start from the key'
                USING ERRCODE = 'datetime_field_overflow',
                      DETAIL = 'With start NULL, each key''s windows start within the first window from the Unix epoch, and that window ends more than about 292,000 years from the year 2000.',
                      HINT = 'Use a shorter period, or give a start.';
        END IF;
        start_us := -946684800000000
            + mod(fw_unsigned(hashtextextended(key, hashtextextended(name, 0))), first_end)::bigint;
    END IF;
END $function$;

-- count a name's first call: give it a place of its own in fw_stat, unless
-- it has one or the database holds 1024 (table_store.c: fwtable_name_stats).
-- A call never waits for another transaction here: a transaction adding a
-- place holds a lock on the name (18010 and its hash) until it ends, and
-- another that finds the lock taken adds none, as if it came a moment
-- before.  (Unlike the C extension, which sees places being added through
-- a dirty snapshot, concurrent transactions adding places for different
-- names may pass the bound of 1024 by as many.)
CREATE FUNCTION fw_name_stats(name text, now timestamptz)
RETURNS void
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
BEGIN
    IF EXISTS (SELECT FROM fw_stat AS s WHERE s.name = fw_name_stats.name)
       OR NOT pg_try_advisory_xact_lock(18010, hashtext(fw_name_stats.name))
       OR EXISTS (SELECT FROM fw_stat AS s WHERE s.name = fw_name_stats.name)
       OR (SELECT count(*) FROM fw_stat) >= 1024 THEN
        RETURN;
    END IF;
    INSERT INTO fw_stat VALUES (fw_name_stats.name, 0, 0, 0, NULL, now, 0)
    ON CONFLICT DO NOTHING;
END $function$;

-- one inline call: mode 's' spends, 'c' checks, 'r' refunds
CREATE FUNCTION fw_inline(mode "char", name text, key text, rate integer, period interval,
                          start timestamptz, cost integer, capacity integer,
                          OUT ok boolean, OUT remaining integer, OUT retry_us bigint,
                          OUT reset_us bigint)
LANGUAGE plpgsql
AS $function$
DECLARE
    v record;
    c record;
    d record;
    now timestamptz;
    now_us bigint;
    judge integer;
    e numeric;
    span bigint;
    ws bigint;
    ws_ts timestamptz;
    we_ts timestamptz;
BEGIN
    -- the steady state of a spending call, in one statement: valid
    -- arguments of the common kind (no month part, a start, capacity the
    -- rate), the real clock, and a counter of this window that holds the
    -- cost; the UPDATE's condition is checked again on the row it locks,
    -- so concurrent calls never over-admit.  Anything else: the full path.
    IF mode = 's' AND rate > 0 AND cost >= 0 AND cost <= rate
       AND (capacity IS NULL OR capacity = rate)
       AND octet_length(name) <= 256 AND octet_length(key) <= 2048
       AND isfinite(start) AND isfinite(period)
       AND extract(month FROM period) = 0 AND extract(year FROM period) = 0
       AND coalesce(current_setting('fixed_window.debug_now', true), '') = ''
       AND current_setting('transaction_read_only') = 'off' THEN
        e := extract(epoch FROM period);
        now := clock_timestamp();
        now_us := fw_us(now);
        IF e > 0 AND e < 1000000000000
           AND now_us - fw_us(start) BETWEEN 0 AND 4000000000000000000 THEN
            span := (e * 1000000)::bigint;
            ws := fw_us(start);
            ws := ws + (now_us - ws) / span * span;
            ws_ts := fw_ts(ws);
            we_ts := fw_ts(ws + span);
            UPDATE fw_counter AS t
            SET tokens = least(t.tokens, fw_inline.rate) - fw_inline.cost,
                window_end = greatest(t.window_end, we_ts),
                fresh_from = greatest(t.window_end, we_ts), fresh_until = NULL,
                rate = fw_inline.rate, capacity = fw_inline.rate,
                userid = quote_ident(fw_acting_role())::regrole::oid,
                calls = t.calls + 1, allowed = t.allowed + 1
            WHERE t.name = fw_inline.name AND t.key = fw_inline.key AND t.period_id = ''
              AND t.window_start = ws_ts AND t.calls > 0
              AND least(t.tokens, fw_inline.rate) >= fw_inline.cost
            RETURNING t.tokens INTO remaining;
            IF FOUND THEN
                ok := true;
                retry_us := 0;
                reset_us := ws + span - now_us;
                RETURN;
            END IF;
        END IF;
    END IF;
    v := fw_validate(name, key, rate, period, start,
                     CASE WHEN mode = 'r' AND cost IS NOT NULL THEN least(cost, coalesce(capacity, rate)) ELSE cost END,
                     capacity, true, true);
    judge := CASE WHEN mode = 'r' THEN 0 ELSE cost END;
    IF mode <> 'c' AND current_setting('transaction_read_only') = 'on' THEN
        RAISE EXCEPTION 'cannot spend rate limit tokens in a read-only transaction'
            USING ERRCODE = 'read_only_sql_transaction', HINT = 'fw_check answers without spending.';
    END IF;
    LOOP
        IF mode = 'c' THEN
            SELECT * INTO c FROM fw_counter AS t
            WHERE t.name = fw_inline.name AND t.key = fw_inline.key AND t.period_id = '';
        ELSE
            SELECT * INTO c FROM fw_counter AS t
            WHERE t.name = fw_inline.name AND t.key = fw_inline.key AND t.period_id = ''
            FOR NO KEY UPDATE;
        END IF;
        now := fw_now();
        now_us := fw_us(now);
        d := fw_decide(v.months, v.span, v.start_us, rate, v.cap, judge, now_us,
                       fw_us(c.window_start), fw_us(c.window_end), c.tokens);
        ok := d.ok;
        remaining := d.tokens;
        retry_us := d.retry_us;
        reset_us := d.reset_us;
        IF mode = 'c' THEN
            RETURN;
        END IF;
        IF mode = 'r' THEN
            -- compared as stored: a start before 4714 BC is kept as -infinity
            IF c.name IS NULL OR fw_ts(d.window_start) <> c.window_start THEN
                RETURN;
            END IF;
            IF least(d.tokens::bigint + cost, v.cap) > d.tokens THEN
                remaining := least(d.tokens::bigint + cost, v.cap);
                UPDATE fw_counter AS t
                SET window_start = fw_ts(d.window_start), window_end = fw_ts(d.window_end),
                    tokens = remaining,
                    fresh_from = CASE WHEN v.cap = fw_inline.rate THEN fw_ts(d.window_end) END,
                    fresh_until = NULL
                WHERE t.name = fw_inline.name AND t.key = fw_inline.key AND t.period_id = '';
            END IF;
            RETURN;
        END IF;
        IF c.name IS NOT NULL THEN
            IF c.calls = 0 THEN
                PERFORM fw_name_stats(name, now);
            END IF;
            IF d.ok THEN
                UPDATE fw_counter AS t
                SET window_start = fw_ts(d.window_start), window_end = fw_ts(d.window_end),
                    tokens = d.tokens, rate = fw_inline.rate, capacity = v.cap,
                    fresh_from = fw_ts(d.fresh_from), fresh_until = fw_ts(d.fresh_until),
                    userid = quote_ident(fw_acting_role())::regrole::oid, calls = t.calls + 1, allowed = t.allowed + 1
                WHERE t.name = fw_inline.name AND t.key = fw_inline.key AND t.period_id = '';
            ELSE
                UPDATE fw_counter AS t
                SET calls = t.calls + 1, denied = t.denied + 1, last_denied_at = now,
                    fresh_from = CASE WHEN d.retry_us IS NOT NULL AND cost > fw_inline.rate
                                      THEN NULL ELSE t.fresh_from END
                WHERE t.name = fw_inline.name AND t.key = fw_inline.key AND t.period_id = '';
            END IF;
            RETURN;
        END IF;
        PERFORM fw_name_stats(name, now);
        INSERT INTO fw_counter AS t
        VALUES (name, key, fw_ts(d.window_start), fw_ts(d.window_end),
                d.tokens, rate, v.cap,
                fw_ts(d.fresh_from), fw_ts(d.fresh_until), quote_ident(fw_acting_role())::regrole::oid, 1,
                d.ok::integer, (NOT d.ok)::integer, CASE WHEN NOT d.ok THEN now END, now, '', 0)
        ON CONFLICT DO NOTHING;
        IF FOUND THEN
            RETURN;
        END IF;
        -- another transaction created the row: judge on it
    END LOOP;
END $function$;


COMMENT ON FUNCTION fw_check_length(text, text, integer) IS
    'internal: the error of a name or key longer than allowed (SQL edition)';
COMMENT ON FUNCTION fw_unsigned(bigint) IS
    'internal: a 64-bit hash taken as unsigned (SQL edition)';
COMMENT ON FUNCTION fw_validate(text, text, integer, interval, timestamptz, integer, integer, boolean, boolean) IS
    'internal: a call''s arguments checked as the C extension checks them, and its grid (SQL edition)';
COMMENT ON FUNCTION fw_name_stats(text, timestamptz) IS
    'internal: a name''s place of its own in fw_stat, at its first counted call while there is room (SQL edition)';
COMMENT ON FUNCTION fw_inline("char", text, text, integer, interval, timestamptz, integer, integer) IS
    'internal: an inline call of fw_limit (mode s), fw_check (c) or fw_refund (r) on fw_counter (SQL edition)';
