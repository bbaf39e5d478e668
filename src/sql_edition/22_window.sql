-- fixed_window, SQL edition: the window grid, as window.c computes it.
--
-- Windows are [W(k), W(k+1)) with W(k) = start + k * months (calendar
-- months, in UTC, the day clamped to the month's length) + k * span (exact
-- microseconds).  Times are handled as microseconds since 2000-01-01,
-- in 64 bits: a time beyond them is out of range, as in the C extension.

-- (fw_us, fw_ts and fw_us_interval are not STRICT, and their bodies are
-- parsed when they are made, so that the planner inlines them: called as
-- functions they would cost more than a whole call should.  fw_ts is STABLE
-- as timestamptz + interval is, though it adds no days and no months.)
--
-- microseconds since 2000-01-01 of a timestamp (PostgreSQL's and the C
-- extension's own count), and back; a time beyond what a timestamp can hold
-- (the end of a window at the end of time, which the C extension keeps as
-- its 64 bits) is kept as infinity, read back as the largest 64-bit time
CREATE FUNCTION fw_us(t timestamptz)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN t IS NULL THEN NULL
            WHEN isfinite(t)
            THEN (extract(epoch FROM t - timestamptz '2000-01-01 00:00:00+00') * 1000000::numeric)::bigint
            WHEN t > timestamptz '2000-01-01 00:00:00+00' THEN 9223372036854775807
            ELSE -9223372036854775808 END;

-- an exact duration as fixed_window answers it: all in the time field
CREATE FUNCTION fw_us_interval(us bigint)
RETURNS interval
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN make_interval(hours => (us / 7200000000)::integer)
    + make_interval(hours => (us / 3600000000 - us / 7200000000)::integer)
    + (us % 3600000000) * interval '1 microsecond';

CREATE FUNCTION fw_ts(us bigint)
RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN us >= 9223371331200000000 THEN 'infinity'::timestamptz
            WHEN us < -211813488000000000 THEN '-infinity'::timestamptz
            ELSE timestamptz '2000-01-01 00:00:00+00' + fw_us_interval(us) END;

-- an interval's month part and its day and time parts in microseconds;
-- NULL unless a positive period (window.c: fwwindow_period_from_interval)
CREATE FUNCTION fw_period(period interval, OUT months integer, OUT span bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
AS $function$
DECLARE
    d integer := extract(day FROM period);
    t bigint;
BEGIN
    months := extract(year FROM period) * 12::numeric + extract(month FROM period);
    t := (extract(epoch FROM period - make_interval(months => months, days => d)) * 1000000::numeric)::bigint;
    IF d::numeric * 86400000000::numeric + t::numeric
       NOT BETWEEN -9223372036854775808::numeric AND 9223372036854775807::numeric THEN
        months := NULL;             -- the day and time parts overflow 64 bits
        RETURN;
    END IF;
    span := d::bigint * 86400000000 + t;
    IF months = 0 THEN
        IF span <= 0 THEN
            months := NULL; span := NULL;
        END IF;
    ELSIF months < 0 OR d < 0 OR t < 0 THEN
        months := NULL; span := NULL;
    END IF;
END $function$;

-- t + months, as PostgreSQL adds an interval's month part in UTC, in the
-- proleptic Gregorian calendar over +-300000 years (window.c:
-- fwwindow_add_months): the day of the month clamped to the target month's
-- length; NULL out of range
CREATE FUNCTION fw_add_months(t bigint, months bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
AS $function$
DECLARE
    days bigint := t / 86400000000 - CASE WHEN t % 86400000000 < 0 THEN 1 ELSE 0 END;
    tod bigint := t - days * 86400000000;
    z bigint;
    era bigint;
    doe bigint;
    yoe bigint;
    doy bigint;
    mp integer;
    d integer;
    m integer;
    y bigint;
    idx bigint;
    ny bigint;
    nm integer;
    dim integer;
BEGIN
    IF months > 7200000 OR months < -7200000 THEN
        RETURN NULL;
    END IF;
    -- civil from days (days since 2000-01-01)
    z := days + 730425;
    era := z / 146097 - CASE WHEN z % 146097 < 0 THEN 1 ELSE 0 END;
    doe := z - era * 146097;
    yoe := (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy := doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp := (5 * doy + 2) / 153;
    d := doy - (153 * mp + 2) / 5 + 1;
    m := CASE WHEN mp < 10 THEN mp + 3 ELSE mp - 9 END;
    y := yoe + era * 400 + CASE WHEN m <= 2 THEN 1 ELSE 0 END;
    -- move the month
    idx := y * 12 + (m - 1) + months;
    ny := idx / 12 - CASE WHEN idx % 12 < 0 THEN 1 ELSE 0 END;
    nm := idx - ny * 12 + 1;
    IF ny > 300000 OR ny < -300000 THEN
        RETURN NULL;
    END IF;
    dim := CASE WHEN nm = 2 THEN CASE WHEN ny % 4 = 0 AND (ny % 100 <> 0 OR ny % 400 = 0) THEN 29 ELSE 28 END
                WHEN nm IN (4, 6, 9, 11) THEN 30 ELSE 31 END;
    d := least(d, dim);
    -- days from civil
    y := CASE WHEN nm <= 2 THEN ny - 1 ELSE ny END;
    era := y / 400 - CASE WHEN y % 400 < 0 THEN 1 ELSE 0 END;
    yoe := y - era * 400;
    doy := (153 * ((nm + 9) % 12) + 2) / 5 + d - 1;
    doe := yoe * 365 + yoe / 4 - yoe / 100 + doy;
    days := era * 146097 + doe - 730425;
    IF days < -106751991 OR days > 106751990 THEN
        RETURN NULL;                -- beyond 64-bit microseconds
    END IF;
    RETURN days * 86400000000 + tod;
END $function$;

-- W(k), NULL outside 64-bit time
CREATE FUNCTION fw_boundary(months integer, span bigint, start bigint, k bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
AS $function$
DECLARE
    base bigint := start;
    b numeric;
BEGIN
    IF months > 0 THEN
        IF k::numeric * months::numeric NOT BETWEEN -7200000::numeric AND 7200000::numeric THEN
            RETURN NULL;
        END IF;
        base := fw_add_months(start, k * months);
        IF base IS NULL THEN
            RETURN NULL;
        END IF;
    END IF;
    -- k * span, then base + it, each in 64 bits (window.c: pg_mul, pg_add)
    b := k::numeric * span::numeric;
    IF b NOT BETWEEN -9223372036854775808::numeric AND 9223372036854775807::numeric THEN
        RETURN NULL;
    END IF;
    b := base::numeric + b;
    IF b NOT BETWEEN -9223372036854775808::numeric AND 9223372036854775807::numeric THEN
        RETURN NULL;
    END IF;
    RETURN b::bigint;
END $function$;

-- the k with W(k) <= t < W(k+1); NULL out of range
CREATE FUNCTION fw_index(months integer, span bigint, start bigint, t bigint)
RETURNS bigint
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT
AS $function$
DECLARE
    guess bigint;
    b bigint;
BEGIN
    IF t::numeric - start::numeric
       NOT BETWEEN -9223372036854775808::numeric AND 9223372036854775807::numeric THEN
        RETURN NULL;                -- the difference overflows 64 bits
    END IF;
    IF months = 0 THEN
        -- floor division, exact (numeric's / rounds)
        RETURN (div(t::numeric - start::numeric, span::numeric)
                - CASE WHEN t < start AND mod(t::numeric - start::numeric, span::numeric) <> 0 THEN 1 ELSE 0 END)::bigint;
    END IF;
    guess := floor((t::numeric - start::numeric)
                   / (months::numeric * 2629746000000::numeric + span::numeric))::bigint;
    FOR i IN 1..64 LOOP
        b := fw_boundary(months, span, start, guess);
        EXIT WHEN b IS NOT NULL AND b <= t;
        IF b IS NULL AND guess <= 0 THEN
            EXIT;                   -- below 64-bit time: -infinity <= t
        END IF;
        guess := guess - 1;
    END LOOP;
    FOR i IN 1..64 LOOP
        b := fw_boundary(months, span, start, guess + 1);
        EXIT WHEN b IS NULL OR b > t;
        guess := guess + 1;
    END LOOP;
    RETURN guess;
END $function$;

-- The comments of the internal functions above, which the calls use.
COMMENT ON FUNCTION fw_us(timestamptz) IS
    'internal: microseconds since 2000-01-01 of a timestamp, infinities as the 64-bit extremes (SQL edition)';
COMMENT ON FUNCTION fw_us_interval(bigint) IS
    'internal: a duration in microseconds as an interval of hours and less, as fixed_window answers them (SQL edition)';
COMMENT ON FUNCTION fw_ts(bigint) IS
    'internal: the timestamp of microseconds since 2000-01-01, infinity beyond the range of timestamps (SQL edition)';
COMMENT ON FUNCTION fw_period(interval) IS
    'internal: a period''s month part and its day and time parts in microseconds, NULL unless a positive period (SQL edition)';
COMMENT ON FUNCTION fw_add_months(bigint, bigint) IS
    'internal: a time plus months in the proleptic Gregorian calendar, the day clamped to the month''s length (SQL edition)';
COMMENT ON FUNCTION fw_boundary(integer, bigint, bigint, bigint) IS
    'internal: the start of window k of a grid, NULL outside 64-bit time (SQL edition)';
COMMENT ON FUNCTION fw_index(integer, bigint, bigint, bigint) IS
    'internal: the window of a grid that holds a time, NULL out of range (SQL edition)';
