-- fixed_window, SQL edition: the token rule of one window (window.c:
-- fwwindow_decide), in microseconds since 2000-01-01.
--
-- old_start, old_end, old_tokens: the counter's state, NULL for a key seen
-- for the first time.  retry_us is NULL when no time can be promised;
-- fresh_from/fresh_until as the table backend keeps them (NULL: none).
-- A window beyond the range of timestamps raises SQLSTATE 22008.
CREATE FUNCTION fw_decide(months integer, span bigint, start bigint, rate integer,
                          capacity integer, cost integer, now bigint,
                          old_start bigint, old_end bigint, old_tokens integer,
                          OUT ok boolean, OUT tokens integer, OUT retry_us bigint,
                          OUT reset_us bigint, OUT window_start bigint, OUT window_end bigint,
                          OUT fresh_from bigint, OUT fresh_until bigint,
                          OUT judged_start bigint, OUT judged_end bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $function$
DECLARE
    k_now bigint;
    k bigint;
    k_old bigint;
    ws bigint;
    we bigint;
    keeps boolean := false;
    windows bigint;
    covered bigint;
    -- without months, and away from the ends of 64-bit time, the grid in
    -- bigint arithmetic that cannot overflow (the common case, fast)
    fast boolean := months = 0 AND span < 1000000000000000000
                    AND now BETWEEN -4000000000000000000 AND 4000000000000000000
                    AND start BETWEEN -4000000000000000000 AND 4000000000000000000
                    AND (old_start IS NULL
                         OR old_start BETWEEN -4000000000000000000 AND 4000000000000000000);
BEGIN
    -- a counter whose window starts before the range of timestamps holds
    -- -infinity there (the C extension keeps the 64 bits, which no SQL
    -- value can): its start is taken back as the start of this grid's
    -- window that holds the last microsecond of the counter's window, the
    -- exact start when the counter was written on this grid, and otherwise
    -- a start in the same window of this grid, which gives the same answer
    IF old_start = -9223372036854775808 AND old_end > -9223372036854775808
       AND old_end < 9223372036854775807 THEN
        k_old := fw_index(months, span, start, old_end - 1);
        IF k_old IS NOT NULL THEN
            ws := fw_boundary(months, span, start, k_old);
            IF ws IS NOT NULL THEN
                old_start := least(ws, -211813488000000001);
            END IF;
        END IF;
    END IF;
    IF fast THEN
        k_now := (now - start) / span - CASE WHEN (now - start) % span < 0 THEN 1 ELSE 0 END;
        ws := start + k_now * span;
    ELSE
        k_now := fw_index(months, span, start, now);
        ws := fw_boundary(months, span, start, k_now);
    END IF;
    IF k_now IS NULL OR ws IS NULL THEN
        PERFORM fw_range_error();
    END IF;
    IF old_start IS NULL THEN
        k := k_now;
        tokens := rate;
    ELSIF old_start = ws THEN
        k := k_now;
        tokens := least(old_tokens, capacity);
        keeps := true;
    ELSE
        IF fast THEN
            k_old := (old_start - start) / span
                     - CASE WHEN (old_start - start) % span < 0 THEN 1 ELSE 0 END;
        ELSE
            k_old := fw_index(months, span, start, old_start);
        END IF;
        IF k_old IS NULL THEN
            PERFORM fw_range_error();
        END IF;
        IF k_old < k_now THEN
            k := k_now;
            tokens := least(capacity::numeric,
                            greatest(old_tokens, 0)::numeric
                            + (k_now::numeric - k_old::numeric) * rate::numeric)::integer;
            IF old_tokens >= capacity THEN
                tokens := capacity;
            END IF;
        ELSE
            k := k_old;
            tokens := least(old_tokens, capacity);
            keeps := true;
        END IF;
    END IF;
    IF fast THEN
        judged_start := start + k * span;
        we := judged_start + span;
    ELSE
        judged_start := fw_boundary(months, span, start, k);
        IF k < 9223372036854775807 THEN
            we := fw_boundary(months, span, start, k + 1);
        END IF;
    END IF;
    IF we IS NULL OR we::numeric - now::numeric > 9223372036854775807::numeric THEN
        PERFORM fw_range_error();
    END IF;
    judged_end := we;
    reset_us := we - now;
    IF tokens >= cost THEN
        ok := true;
        tokens := tokens - cost;
        retry_us := 0;
    ELSE
        ok := false;
        windows := least(k::numeric + (((cost::bigint - tokens) + rate - 1) / rate)::numeric,
                         9223372036854775807::numeric);
        IF cost <= capacity AND windows < 9223372036854775807 THEN
            covered := fw_boundary(months, span, start, windows);
            IF covered IS NOT NULL AND fw_boundary(months, span, start, windows + 1) IS NOT NULL THEN
                retry_us := covered - now;
            END IF;
        END IF;
    END IF;
    window_start := CASE WHEN keeps THEN old_start ELSE ws END;
    window_end := CASE WHEN old_start IS NOT NULL THEN greatest(old_end, we) ELSE we END;
    IF capacity = rate THEN
        fresh_from := window_end;
    ELSIF tokens = 0 AND k < 9223372036854775806 THEN
        fresh_until := CASE WHEN fast THEN start + (k + 2) * span
                            ELSE fw_boundary(months, span, start, k + 2) END;
        IF fresh_until IS NOT NULL AND fresh_until > window_end THEN
            fresh_from := window_end;
        ELSE
            fresh_until := NULL;
        END IF;
    END IF;
END $function$;

CREATE FUNCTION fw_range_error()
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $function$
BEGIN
    RAISE EXCEPTION 'window boundary out of range'
        USING ERRCODE = 'datetime_field_overflow',
              DETAIL = 'A window of this limit starts or ends more than about 292,000 years from the year 2000.',
              HINT = 'Use a shorter period or a start closer to the present.';
END $function$;

COMMENT ON FUNCTION fw_decide(integer, bigint, bigint, integer, integer, integer, bigint, bigint, bigint, integer) IS
    'internal: one window''s verdict on a counter''s state at a time, as window.c decides it (SQL edition)';
COMMENT ON FUNCTION fw_range_error() IS
    'internal: raises the error of a window beyond the range of timestamps (SQL edition)';
