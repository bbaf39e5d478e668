-- fixed_window, SQL edition: fw_trigger(), the ready-made trigger that limits
-- the rows a table takes per value of a column (trigger.c), in PL/pgSQL.
--
--   CREATE TRIGGER signup_quota BEFORE INSERT ON signups FOR EACH ROW
--       EXECUTE FUNCTION fw_trigger('signup', 'ip', '5', '1 day');
--
-- Arguments: a policy and a column [, cost], or a limit name, a column, a
-- rate, a period [, start [, cost]].  Each row spends cost tokens of the
-- counter (name, value of the column) through fw_limit or fw_limit_windows;
-- a refused row raises SQLSTATE RL429 with the time to wait in the hint.
-- Bad arguments are reported at the first row, naming the trigger, with the
-- messages and SQLSTATEs of the C extension.
--
-- The key is the column's text as its type's output function writes it,
-- and start and period are read from text, with DateStyle, IntervalStyle,
-- TimeZone, extra_float_digits, bytea_output and timezone_abbreviations
-- fixed for the reading (set locally, then given back), so that a session's
-- settings cannot make one value count as another key or move the windows.
--
-- SECURITY DEFINER, as the C trigger needs no privilege on fw_limit and
-- reads the counters to know whether a refusal created the key's counter:
-- on the table backend the error that refuses the row rolls that counter
-- back, and the retry time of a cost above the rate cannot be promised.

CREATE FUNCTION fw_trigger()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
DECLARE
    settings constant text[] := ARRAY['datestyle', 'intervalstyle', 'timezone', 'extra_float_digits',
                                      'bytea_output', 'timezone_abbreviations'];
    fixed constant text[] := ARRAY['ISO, YMD', 'postgres', 'UTC', '1', 'hex', 'Default'];
    saved text[];
    use_hint constant text := 'Use fw_trigger(name, column, rate, period [, start [, cost]]), for example fw_trigger(''signup'', ''ip'', ''5'', ''1 day'').';
    tbl text := TG_TABLE_NAME;
    named boolean;
    lim text;
    col text;
    att record;
    base oid;
    typtype "char";
    row_value record;
    rate integer := 0;
    cost integer := 1;
    period interval;
    start timestamptz := '1970-01-01 00:00:00+00';
    what text;
    value text;
    expr text;
    v record;
    row_key text;
    existing text[];
    answer fw_result;
    ok boolean;
    retry interval;
    kept boolean;
    hint text;
    i integer;
BEGIN
    IF TG_WHEN <> 'BEFORE' OR TG_LEVEL <> 'ROW' THEN
        RAISE EXCEPTION 'trigger "%" on table "%" must be BEFORE ... FOR EACH ROW', TG_NAME, tbl
            USING ERRCODE = 'trigger_protocol_violated',
                  DETAIL = 'fw_trigger limits rows one by one, before they are written.';
    END IF;
    IF TG_NARGS < 2 OR TG_NARGS > 6 THEN
        RAISE EXCEPTION 'trigger "%" on table "%" gives fw_trigger % arguments', TG_NAME, tbl, TG_NARGS
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Use fw_trigger(policy, column [, cost]) or fw_trigger(name, column, rate, period [, start [, cost]]), for example fw_trigger(''signup'', ''ip'') or fw_trigger(''signup'', ''ip'', ''5'', ''1 day'').';
    END IF;
    -- two or three arguments name a policy
    named := TG_NARGS <= 3;
    lim := TG_ARGV[0];
    col := TG_ARGV[1];
    row_value := CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;

    SELECT a.atttypid, a.attcollation INTO att
    FROM pg_attribute AS a
    WHERE a.attrelid = TG_RELID AND a.attname = col AND a.attnum > 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of trigger "%" does not exist in table "%"', col, TG_NAME, tbl
            USING ERRCODE = 'undefined_column';
    END IF;
    -- a column whose values have one text each, in every session
    base := att.atttypid;
    LOOP
        SELECT t.typtype, t.typbasetype INTO v FROM pg_type AS t WHERE t.oid = base;
        EXIT WHEN v.typtype <> 'd';
        base := v.typbasetype;
    END LOOP;
    typtype := v.typtype;
    IF (att.attcollation <> 0
        AND NOT (SELECT c.collisdeterministic FROM pg_collation AS c WHERE c.oid = att.attcollation))
       OR NOT (typtype = 'e'
               OR base = ANY (ARRAY['text', 'varchar', 'bpchar', 'name', '"char"', 'int2', 'int4', 'int8',
                                    'oid', 'numeric', 'float4', 'float8', 'bool', 'date', 'time', 'timetz',
                                    'timestamp', 'timestamptz', 'inet', 'cidr', 'macaddr', 'macaddr8',
                                    'uuid', 'bytea', 'bit', 'varbit']::regtype[]::oid[])) THEN
        RAISE EXCEPTION 'column "%" of type % cannot be the key of trigger "%" on table "%"',
                col, format_type(att.atttypid, NULL), TG_NAME, tbl
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'fw_trigger takes keys only from columns whose values have one text each, in every session: string types with a deterministic collation, numbers, boolean, date and time, network address, uuid, bytea, bit string and enum types, and domains over them.',
                  HINT = 'Limit on a plain column of such a type, filled by the application or by an earlier BEFORE trigger (stored generated columns are computed after BEFORE triggers).';
    END IF;

    -- whole numbers as strtol reads them (blanks, a sign, digits), in the
    -- C trigger's order: the rate, or a policy's cost, before the period and
    -- start; an inline limit's cost after them
    FOREACH i IN ARRAY ARRAY[2, -1, 5] LOOP
        IF i = -1 THEN
            saved := ARRAY(SELECT current_setting(s) FROM unnest(settings) AS s);
            PERFORM set_config(settings[n], fixed[n], true) FROM generate_subscripts(settings, 1) AS n;
            IF NOT named THEN
                period := TG_ARGV[3]::interval;
            END IF;
            IF TG_NARGS >= 5 THEN
                -- a start read as a time that moves with the clock moves the windows
                IF EXISTS (SELECT FROM regexp_matches(TG_ARGV[4], '[A-Za-z]+', 'g') AS m
                           WHERE lower(m[1]) IN ('now', 'today', 'tomorrow', 'yesterday')) THEN
                    RAISE EXCEPTION 'invalid value "%" for argument "%" of trigger "%" on table "%"',
                            TG_ARGV[4], 'start', TG_NAME, tbl
                        USING ERRCODE = 'invalid_parameter_value',
                              DETAIL = 'A start such as "now" or "today" moves with the clock, so the windows would move and every row would pass.',
                              HINT = 'Give a fixed time, such as ''2026-01-01 00:00+00''.';
                END IF;
                start := TG_ARGV[4]::timestamptz;
            END IF;
            CONTINUE;
        END IF;
        CONTINUE WHEN i >= TG_NARGS;
        what := CASE WHEN i = 2 AND NOT named THEN 'rate' ELSE 'cost' END;
        value := TG_ARGV[i];
        IF value !~ '^[[:space:]]*[+-]?[0-9]+$'
           OR ltrim(value, E' \t\n\r\f\v')::numeric NOT BETWEEN -2147483648 AND 2147483647 THEN
            RAISE EXCEPTION 'invalid value "%" for argument "%" of trigger "%" on table "%"',
                    value, what, TG_NAME, tbl
                USING ERRCODE = 'invalid_parameter_value', HINT = use_hint;
        END IF;
        IF what = 'rate' THEN
            rate := ltrim(value, E' \t\n\r\f\v')::integer;
        ELSE
            cost := ltrim(value, E' \t\n\r\f\v')::integer;
        END IF;
    END LOOP;
    -- equal values written alike: 42 and 42.000, -0 and 0, 'a' and 'a  ';
    -- every function and operator pg_catalog's, as this runs as the owner
    expr := CASE
        WHEN base = 'numeric'::regtype THEN 'pg_catalog.trim_scale(($1).%1$I)::text'
        WHEN base IN ('float4'::regtype, 'float8'::regtype)
            THEN 'CASE WHEN ($1).%1$I OPERATOR(pg_catalog.=) 0::float8 THEN ''0'' ELSE pg_catalog.format(''%%s'', ($1).%1$I) END'
        WHEN base = 'bpchar'::regtype THEN 'pg_catalog.rtrim(pg_catalog.format(''%%s'', ($1).%1$I), '' '')'
        ELSE 'pg_catalog.format(''%%s'', ($1).%1$I)' END;
    EXECUTE format('SELECT ($1).%1$I IS NULL AS missing, ' || expr || ' AS key', col)
        INTO v USING row_value;
    PERFORM set_config(settings[n], saved[n], true) FROM generate_subscripts(settings, 1) AS n;
    IF v.missing THEN
        RAISE EXCEPTION 'column "%" limited by trigger "%" must not be null', col, TG_NAME
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'A row without a value cannot be counted against any key.';
    END IF;
    row_key := v.key;
    IF octet_length(lim) > 256 OR octet_length(row_key) > 2048 THEN
        RAISE EXCEPTION 'limit name or value of column "%" is too long for trigger "%"', col, TG_NAME
            USING ERRCODE = 'program_limit_exceeded',
                  DETAIL = 'Names may have 256 bytes and keys 2048.';
    END IF;

    -- the windows whose counter the key has before the call
    existing := ARRAY(SELECT c.period_id FROM fw_counter AS c WHERE c.name = lim AND c.key = row_key);
    IF named THEN
        SELECT coalesce(bool_and(w.ok), true),
               CASE WHEN bool_or(NOT w.ok AND w.retry_after IS NULL) THEN NULL
                    ELSE coalesce(max(w.retry_after) FILTER (WHERE NOT w.ok), '0') END,
               NOT coalesce(bool_or(NOT w.ok AND fw_header_window_id(lim, 1, w.period) <> ALL (existing)), false)
          INTO ok, retry, kept
          FROM fw_limit_windows(lim, row_key, cost) AS w
         WHERE NOT w.shadow;
    ELSE
        answer := fw_limit(lim, row_key, rate, period, start, cost);
        ok := answer.ok;
        retry := answer.retry_after;
        kept := ok OR '' = ANY (existing);
    END IF;
    IF ok THEN
        RETURN row_value;
    END IF;

    hint := CASE
        WHEN NOT kept THEN 'No time can be promised: on the table backend this refusal rolls back the counter that would gather the tokens of a cost above the rate. Keep counters in shared memory, or lower the cost.'
        WHEN retry IS NULL THEN 'No time can be promised: the row''s cost is more than a window of the limit can hold, or is covered only beyond 64-bit time, or the counters are full.'
        ELSE format('Retry after %s.', retry) END;
    IF named THEN
        RAISE EXCEPTION 'rate limit policy "%" exceeded', lim
            USING ERRCODE = 'RL429',
                  DETAIL = format('Trigger "%s" on table "%s" counts rows against policy "%s" for each value of column "%s".',
                                  TG_NAME, tbl, lim, col),
                  HINT = hint;
    END IF;
    RAISE EXCEPTION 'rate limit "%" exceeded', lim
        USING ERRCODE = 'RL429',
              DETAIL = format('Trigger "%s" on table "%s" allows %s %s per %s for each value of column "%s".',
                              TG_NAME, tbl, rate, CASE WHEN rate = 1 THEN 'row' ELSE 'rows' END,
                              TG_ARGV[3], col),
              HINT = hint;
END $function$;
COMMENT ON FUNCTION fw_trigger() IS
    'BEFORE ... FOR EACH ROW trigger: fw_trigger(policy, column [, cost]) or fw_trigger(name, column, rate, period [, start [, cost]]) limits rows per value of column; raises SQLSTATE RL429 when the limit is exceeded';
