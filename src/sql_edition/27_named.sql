-- fixed_window, SQL edition: the calls of a named policy (fw_limit,
-- fw_check, fw_refund, fw_limit_windows, fw_check_windows with name, key,
-- cost), decided window by window and settled all or nothing (window.c:
-- fwwindow_settle), on fw_counter as the table backend keeps it: a
-- spending call of several windows first takes an advisory lock on
-- (policy, key) until the transaction ends, then locks its windows' rows in
-- the order of the windows; a row that does not exist is created under an
-- advisory lock on (policy, key), so that two transactions never both
-- create it.

-- the 64-bit hash of a call's name and key, as two halves for the advisory locks
CREATE FUNCTION fw_key_hash(name text, key text)
RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN hashtextextended(key, hashtextextended(name, 0));

-- one call of policy name: mode 's' spends, 'c' checks, 'r' refunds; a row
-- per window, with the call's verdict beside it
CREATE FUNCTION fw_named(mode "char", name text, key text, cost integer)
RETURNS TABLE (period interval, rate integer, capacity integer, shadow boolean, ok boolean,
               retry_us bigint, remaining integer, reset_us bigint,
               start_us bigint, months integer, span bigint,
               verdict_ok boolean, verdict_retry_us bigint, deciding boolean,
               window_start_us bigint, window_end_us bigint)
LANGUAGE plpgsql
AS $function$
DECLARE
    w record;
    v record;
    d record;
    c record;
    n integer := 0;
    exempt boolean;
    h bigint;
    ids text[] := '{}';
    periods interval[] := '{}';
    rates integer[] := '{}';
    caps integer[] := '{}';
    shadows boolean[] := '{}';
    costs integer[] := '{}';
    startv bigint[] := '{}';
    monthv integer[] := '{}';
    spanv bigint[] := '{}';
    found_ boolean[] := '{}';
    oldstart bigint[] := '{}';
    oldfresh boolean[] := '{}';
    oldcalls bigint[] := '{}';
    oks boolean[] := '{}';
    toks integer[] := '{}';
    rems integer[] := '{}';
    retries bigint[] := '{}';
    resets bigint[] := '{}';
    wss bigint[] := '{}';
    wes bigint[] := '{}';
    ffs bigint[] := '{}';
    fus bigint[] := '{}';
    spend boolean[] := '{}';
    enforced_ok boolean := true;
    shadow_ok boolean := true;
    any_enforced boolean := false;
    v_ok boolean;
    v_retry bigint := 0;
    v_never boolean := false;
    dec integer := 0;
    stats_row integer := 0;
    now timestamptz;
    now_us bigint;
    actor oid;
    i integer;
BEGIN
    IF name IS NULL OR key IS NULL OR cost IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null',
            CASE WHEN name IS NULL THEN 'name' WHEN key IS NULL THEN 'key' ELSE 'cost' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM fw_check_length('name', name, 256);
    PERFORM fw_check_length('key', key, 2048);
    exempt := mode <> 'r' AND EXISTS (
        SELECT FROM fw_override AS o
        WHERE o.name = fw_named.name AND o.key = fw_named.key AND o.period_id = '' AND o.rate IS NULL);
    FOR w IN
        SELECT p.period, p.period_id, coalesce(o.rate, p.rate) AS rate,
               CASE WHEN o.rate IS NOT NULL THEN coalesce(o.capacity, o.rate) ELSE p.capacity END AS capacity,
               p.start, p.shadow
        FROM fw_policy AS p
        LEFT JOIN fw_override AS o
               ON o.name = p.name AND o.key = fw_named.key AND o.period_id = p.period_id
                  AND o.rate IS NOT NULL
        CROSS JOIN LATERAL fw_period(p.period) AS fp
        WHERE p.name = fw_named.name
        ORDER BY fp.months::numeric * 2629746000000::numeric + fp.span::numeric, p.period_id COLLATE "C"
    LOOP
        n := n + 1;
        IF n > 8 THEN
            RAISE EXCEPTION 'rate limit policy "%" has more than 8 windows', name
                USING ERRCODE = 'program_limit_exceeded';
        END IF;
        v := fw_validate(name, key, w.rate, w.period, w.start,
                         CASE WHEN mode = 'r' THEN least(cost, w.capacity) ELSE cost END,
                         w.capacity, true, false);
        ids := ids || w.period_id;
        periods := periods || w.period;
        rates := rates || w.rate;
        caps := caps || v.cap;
        shadows := shadows || w.shadow;
        costs := costs || CASE WHEN exempt THEN 0 WHEN mode = 'r' THEN least(cost, v.cap) ELSE cost END;
        startv := startv || v.start_us;
        monthv := monthv || v.months;
        spanv := spanv || v.span;
    END LOOP;
    IF n = 0 THEN
        RAISE EXCEPTION 'rate limit policy "%" does not exist', name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Define it with fw_define(name, rate, period), or give rate and period in the call.';
    END IF;
    IF mode <> 'c' AND current_setting('transaction_read_only') = 'on' THEN
        RAISE EXCEPTION 'cannot spend rate limit tokens in a read-only transaction'
            USING ERRCODE = 'read_only_sql_transaction', HINT = 'fw_check answers without spending.';
    END IF;
    h := fw_key_hash(name, key);
    IF mode = 's' AND n > 1 THEN
        PERFORM pg_advisory_xact_lock(18008, hashint8(h));
    END IF;
    -- lock every row in the order of the windows; a missing one is created
    -- under the (policy, key) creation lock, which is held while the
    -- transaction runs, as the row's lock would be
    FOR i IN 1..n LOOP
        IF mode = 'c' THEN
            SELECT * INTO c FROM fw_counter AS t
            WHERE t.name = fw_named.name AND t.key = fw_named.key AND t.period_id = ids[i];
        ELSE
            SELECT * INTO c FROM fw_counter AS t
            WHERE t.name = fw_named.name AND t.key = fw_named.key AND t.period_id = ids[i]
            FOR NO KEY UPDATE;
            IF c.name IS NULL AND mode = 's' THEN
                PERFORM pg_advisory_xact_lock(18007, hashint8(h));
                SELECT * INTO c FROM fw_counter AS t
                WHERE t.name = fw_named.name AND t.key = fw_named.key AND t.period_id = ids[i]
                FOR NO KEY UPDATE;
            END IF;
        END IF;
        found_[i] := c.name IS NOT NULL;
        oldstart[i] := fw_us(c.window_start);
        wes[i] := fw_us(c.window_end);
        toks[i] := c.tokens;
        oldfresh[i] := c.fresh_from IS NOT NULL;
        oldcalls[i] := c.calls;
    END LOOP;
    now := fw_now();
    now_us := fw_us(now);
    FOR i IN 1..n LOOP
        d := fw_decide(monthv[i], spanv[i], startv[i], rates[i], caps[i],
                       CASE WHEN mode = 'r' THEN 0 ELSE costs[i] END, now_us,
                       oldstart[i], wes[i], toks[i]);
        oks[i] := d.ok;
        toks[i] := d.tokens;
        rems[i] := d.tokens;
        retries[i] := d.retry_us;
        resets[i] := d.reset_us;
        wss[i] := d.window_start;
        wes[i] := d.window_end;
        ffs[i] := d.fresh_from;
        fus[i] := d.fresh_until;
        spend[i] := false;
        IF mode = 'r' THEN
            IF found_[i] AND d.window_start = oldstart[i]
               AND least(d.tokens::bigint + costs[i], caps[i]) > d.tokens THEN
                toks[i] := least(d.tokens::bigint + costs[i], caps[i]);
                rems[i] := toks[i];
                ffs[i] := CASE WHEN caps[i] = rates[i] THEN d.window_end END;
                fus[i] := NULL;
                spend[i] := true;
            END IF;
        ELSIF shadows[i] THEN
            shadow_ok := shadow_ok AND d.ok;
        ELSE
            any_enforced := true;
            enforced_ok := enforced_ok AND d.ok;
        END IF;
    END LOOP;

    IF mode = 'r' THEN
        dec := 1;
        FOR i IN 2..n LOOP
            CONTINUE WHEN shadows[i] AND NOT shadows[dec];
            IF (shadows[dec] AND NOT shadows[i]) OR rems[i] < rems[dec] THEN
                dec := i;
            END IF;
        END LOOP;
        v_ok := true;
        FOR i IN 1..n LOOP
            IF spend[i] THEN
                UPDATE fw_counter AS t
                SET window_start = fw_ts(wss[i]), window_end = fw_ts(wes[i]), tokens = toks[i],
                    fresh_from = fw_ts(ffs[i]), fresh_until = NULL
                WHERE t.name = fw_named.name AND t.key = fw_named.key AND t.period_id = ids[i];
            END IF;
        END LOOP;
    ELSE
        -- settle (window.c: fwwindow_settle)
        v_ok := enforced_ok;
        dec := 0;
        FOR i IN 1..n LOOP
            spend[i] := oks[i] AND enforced_ok AND (shadow_ok OR NOT shadows[i]);
            IF oks[i] AND NOT spend[i] THEN
                rems[i] := rems[i] + costs[i];
            END IF;
            CONTINUE WHEN shadows[i] AND any_enforced;
            IF NOT shadows[i] THEN
                IF retries[i] IS NULL THEN
                    v_never := true;
                ELSE
                    v_retry := greatest(v_retry, retries[i]);
                END IF;
            END IF;
            IF dec = 0 OR rems[i] < rems[dec] OR (rems[i] = rems[dec] AND resets[i] > resets[dec]) THEN
                dec := i;
            END IF;
        END LOOP;
        IF NOT any_enforced THEN
            v_retry := 0;
            v_never := false;
        END IF;
        IF mode = 's' THEN
            actor := quote_ident(fw_acting_role())::regrole::oid;
            stats_row := 0;
            FOR i IN 1..n LOOP
                IF found_[i] OR spend[i] OR NOT oks[i] THEN
                    stats_row := i;
                    EXIT;
                END IF;
            END LOOP;
            IF stats_row > 0 AND (NOT found_[stats_row] OR oldcalls[stats_row] = 0) THEN
                PERFORM fw_name_stats(name, now);
            END IF;
            FOR i IN 1..n LOOP
                CONTINUE WHEN NOT found_[i] AND NOT spend[i] AND oks[i];
                IF NOT found_[i] THEN
                    -- created: spent in, or denied
                    INSERT INTO fw_counter
                    VALUES (name, key, fw_ts(wss[i]), fw_ts(wes[i]), toks[i], rates[i], caps[i],
                            fw_ts(ffs[i]), fw_ts(fus[i]), actor,
                            (i = stats_row)::integer, (i = stats_row AND v_ok)::integer,
                            (i = stats_row AND NOT v_ok)::integer,
                            CASE WHEN i = stats_row AND NOT v_ok THEN now END, now, ids[i],
                            (i = stats_row AND v_ok AND NOT shadow_ok)::integer);
                ELSIF spend[i] THEN
                    UPDATE fw_counter AS t
                    SET window_start = fw_ts(wss[i]), window_end = fw_ts(wes[i]), tokens = toks[i],
                        rate = rates[i], capacity = caps[i],
                        fresh_from = fw_ts(ffs[i]), fresh_until = fw_ts(fus[i]), userid = actor,
                        calls = t.calls + (i = stats_row)::integer,
                        allowed = t.allowed + (i = stats_row AND v_ok)::integer,
                        denied = t.denied + (i = stats_row AND NOT v_ok)::integer,
                        last_denied_at = CASE WHEN i = stats_row AND NOT v_ok THEN now ELSE t.last_denied_at END,
                        shadow_denied = t.shadow_denied + (i = stats_row AND v_ok AND NOT shadow_ok)::integer
                    WHERE t.name = fw_named.name AND t.key = fw_named.key AND t.period_id = ids[i];
                ELSIF i = stats_row OR (NOT oks[i] AND retries[i] IS NOT NULL AND costs[i] > rates[i]
                                        AND oldfresh[i]) THEN
                    UPDATE fw_counter AS t
                    SET fresh_from = CASE WHEN NOT oks[i] AND retries[i] IS NOT NULL
                                               AND costs[i] > rates[i] THEN NULL ELSE t.fresh_from END,
                        calls = t.calls + (i = stats_row)::integer,
                        allowed = t.allowed + (i = stats_row AND v_ok)::integer,
                        denied = t.denied + (i = stats_row AND NOT v_ok)::integer,
                        last_denied_at = CASE WHEN i = stats_row AND NOT v_ok THEN now ELSE t.last_denied_at END,
                        shadow_denied = t.shadow_denied + (i = stats_row AND v_ok AND NOT shadow_ok)::integer
                    WHERE t.name = fw_named.name AND t.key = fw_named.key AND t.period_id = ids[i];
                END IF;
            END LOOP;
        END IF;
    END IF;

    FOR i IN 1..n LOOP
        period := periods[i]; rate := rates[i]; capacity := caps[i]; shadow := shadows[i];
        ok := oks[i]; retry_us := retries[i]; remaining := rems[i]; reset_us := resets[i];
        start_us := startv[i]; months := monthv[i]; span := spanv[i];
        window_start_us := wss[i]; window_end_us := wes[i];
        verdict_ok := v_ok;
        verdict_retry_us := CASE WHEN v_never THEN NULL ELSE v_retry END;
        deciding := (i = dec);
        RETURN NEXT;
    END LOOP;
END $function$;

COMMENT ON FUNCTION fw_key_hash(text, text) IS
    'internal: the 64-bit hash of a name and a key, for the locks and phases of a call (SQL edition)';
COMMENT ON FUNCTION fw_named("char", text, text, integer) IS
    'internal: a call of a named policy, every window settled all or nothing, a row per window (SQL edition)';
