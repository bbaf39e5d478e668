-- fixed_window, SQL edition: defining policies.  fw_window_id,
-- fw_window_in_range and fw_lock_policy are C functions in the C extension,
-- given SQL bodies here; fw_define, fw_undefine, fw_override, fw_exempt and
-- fw_unoverride are its PL/pgSQL functions, carried over as they are.

-- the identifier of a period: P, the months, then T and the seconds of
-- the day and time parts (identity.c: fwidentity_period_id)
CREATE FUNCTION fw_period_id(months integer, span bigint)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
RETURN 'P' || CASE WHEN months > 0 THEN months || 'M' ELSE '' END
    || CASE WHEN span <> 0
            THEN 'T' || (span / 1000000)::text
                 || CASE WHEN span % 1000000 <> 0
                         THEN rtrim('.' || lpad((span % 1000000)::text, 6, '0'), '0') ELSE '' END
                 || 'S'
            ELSE '' END;

CREATE FUNCTION fw_window_id(name text, key text, rate integer, period interval, start timestamptz,
                             capacity integer)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path FROM CURRENT
AS $function$
DECLARE
    v record;
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM fw_check_length('name', name, 256);
    PERFORM fw_check_length('key', key, 2048);
    IF rate IS NULL OR period IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', CASE WHEN rate IS NULL THEN 'rate' ELSE 'period' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    v := fw_validate(name, '', rate, period, start, 0, capacity, false, false);
    RETURN fw_period_id(v.months, v.span);
END $function$;
COMMENT ON FUNCTION fw_window_id(text, text, integer, interval, timestamptz, integer) IS
    'check a policy name, a key (may be NULL) and one window''s parameters as fw_limit does, and return the identifier of the period (ISO 8601, one per window length)';

CREATE FUNCTION fw_window_in_range(rate integer, period interval, start timestamptz, capacity integer)
RETURNS void
LANGUAGE plpgsql PARALLEL SAFE
SET search_path FROM CURRENT
AS $function$
DECLARE
    v record;
    now_us bigint;
    first_end bigint;
    d record;
BEGIN
    IF rate IS NULL OR period IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', CASE WHEN rate IS NULL THEN 'rate' ELSE 'period' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- with start NULL: the earliest and the latest phase any key can have
    v := fw_validate('', '', rate, period, start, 0, capacity, true, false);
    now_us := fw_us(fw_now());
    d := fw_decide(v.months, v.span, v.start_us, rate, v.cap, 0, now_us, NULL, NULL, NULL);
    IF start IS NULL THEN
        first_end := fw_boundary(v.months, v.span, -946684800000000, 1);
        d := fw_decide(v.months, v.span, -946684800000000, rate, v.cap, 0, now_us, NULL, NULL, NULL);
        d := fw_decide(v.months, v.span, first_end - 1, rate, v.cap, 0, now_us, NULL, NULL, NULL);
    END IF;
END $function$;
COMMENT ON FUNCTION fw_window_in_range(integer, interval, timestamptz, integer) IS
    'check that a window''s bounds around fw_now() lie within 64-bit time for every key (used by fw_define); SQLSTATE 22008 otherwise';

-- an advisory lock on the policy's name until the transaction ends (the C
-- extension's has objsubid 18009; this one is pg_advisory_xact_lock's,
-- keyed by 18009 and the name's hash)
CREATE FUNCTION fw_lock_policy(name text)
RETURNS void
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
BEGIN
    IF name IS NULL THEN
        RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM pg_advisory_xact_lock(18009, hashtext(name));
END $function$;
COMMENT ON FUNCTION fw_lock_policy(text) IS
    'take the lock of a policy''s definition until the transaction ends (used by fw_define and its siblings)';

REVOKE ALL ON FUNCTION fw_window_in_range(integer, interval, timestamptz, integer),
    fw_lock_policy(text) FROM PUBLIC;

ALTER TABLE fw_policy ADD CONSTRAINT fw_policy_window_check
    CHECK (period_id = fw_window_id(name, NULL::text, rate, period, start, capacity));
ALTER TABLE fw_override ADD CONSTRAINT fw_override_window_check CHECK (
    CASE
        WHEN period IS NULL THEN period_id = '' AND rate IS NULL AND capacity IS NULL
             AND fw_window_id(name, key, 1, '00:00:01'::interval, NULL::timestamptz, NULL::integer) IS NOT NULL
        ELSE period_id = fw_window_id(name, key, rate, period, NULL::timestamptz, capacity)
    END);

CREATE FUNCTION fw_define(name text, rate integer, period interval, start timestamp with time zone DEFAULT '1970-01-01 00:00:00+00'::timestamp with time zone, capacity integer DEFAULT NULL::integer, shadow boolean DEFAULT false, comment text DEFAULT NULL::text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path FROM CURRENT
AS $function$
DECLARE
    id text := fw_window_id(fw_define.name, NULL, fw_define.rate, fw_define.period,
                                        fw_define.start, fw_define.capacity);
BEGIN
    IF fw_define.shadow IS NULL THEN
        RAISE EXCEPTION 'argument "shadow" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM fw_window_in_range(fw_define.rate, fw_define.period, fw_define.start,
                                           fw_define.capacity);
    -- Definers of one policy take turns on its lock, so that the count of
    -- its windows stays true; the rows of its windows are rewritten first,
    -- changing nothing, so that under REPEATABLE READ or SERIALIZABLE a
    -- definition whose snapshot predates another's commit fails with a
    -- serialization error instead of missing a window.  Nothing locks the
    -- whole table (1.2.1 did, and two admins replacing two policies, each
    -- in one transaction, deadlocked).
    PERFORM fw_lock_policy(fw_define.name);
    UPDATE fw_policy AS p SET rate = p.rate WHERE p.name = fw_define.name;
    IF (SELECT count(*) FROM fw_policy AS p
        WHERE p.name = fw_define.name AND p.period_id <> id) >= 8 THEN
        RAISE EXCEPTION 'rate limit policy "%" already has 8 windows', fw_define.name
            USING ERRCODE = 'program_limit_exceeded',
                  DETAIL = 'A policy may have at most 8 windows of distinct periods.',
                  HINT = 'Remove a window with fw_undefine(name, period), or replace one by defining its period again.';
    END IF;
    -- replace the window, or add it (not INSERT ... ON CONFLICT, which fails
    -- while REINDEX CONCURRENTLY rebuilds the primary key; the policy's lock
    -- keeps other definers out in between)
    UPDATE fw_policy AS p
    SET period = fw_define.period, rate = fw_define.rate,
        capacity = coalesce(fw_define.capacity, fw_define.rate), start = fw_define.start,
        shadow = fw_define.shadow, comment = fw_define.comment
    WHERE p.name = fw_define.name AND p.period_id = id;
    IF NOT FOUND THEN
        INSERT INTO fw_policy
        VALUES (fw_define.name, fw_define.period, id, fw_define.rate,
                coalesce(fw_define.capacity, fw_define.rate), fw_define.start, fw_define.shadow,
                fw_define.comment);
    END IF;
END $function$;
COMMENT ON FUNCTION fw_define(text, integer, interval, timestamptz, integer, boolean, text) IS
    'create or replace the window period of policy name: rate tokens per period, kept up to capacity; shadow: decide and spend but never deny; superusers and roles granted EXECUTE';

CREATE FUNCTION fw_undefine(name text, period interval DEFAULT NULL::interval)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path FROM CURRENT
AS $function$
DECLARE
    id text := CASE WHEN fw_undefine.period IS NOT NULL
                    THEN fw_window_id(fw_undefine.name, NULL, 1, fw_undefine.period, NULL, NULL) END;
    removed integer;
BEGIN
    IF fw_undefine.name IS NULL THEN
        RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM fw_lock_policy(fw_undefine.name);
    DELETE FROM fw_policy AS p
    WHERE p.name = fw_undefine.name AND (id IS NULL OR p.period_id = id);
    GET DIAGNOSTICS removed = ROW_COUNT;
    IF removed = 0 THEN
        RAISE EXCEPTION 'rate limit policy "%" has no window %', fw_undefine.name,
            coalesce('of ' || fw_undefine.period::text, 'at all')
            USING ERRCODE = 'undefined_object',
                  HINT = 'fw_policies lists the policies and their windows.';
    END IF;
    -- overrides of what was removed go with it; with the whole policy, or its
    -- last window, exemptions too (1.3 before its review kept them, and they
    -- applied again to a policy defined later under the name)
    DELETE FROM fw_override AS o
    WHERE o.name = fw_undefine.name
      AND (id IS NULL OR o.period_id = id
           OR NOT EXISTS (SELECT FROM fw_policy AS p WHERE p.name = fw_undefine.name));
    RETURN removed;
END $function$;
COMMENT ON FUNCTION fw_undefine(text, interval) IS
    'remove one window of a policy, or the whole policy when period is NULL, with their overrides; returns the windows removed';

CREATE FUNCTION fw_override(name text, key text, rate integer, period interval, capacity integer DEFAULT NULL::integer)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path FROM CURRENT
AS $function$
DECLARE
    id text := fw_window_id(fw_override.name, fw_override.key, fw_override.rate,
                                        fw_override.period, NULL, fw_override.capacity);
BEGIN
    IF fw_override.key IS NULL THEN
        RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM fw_lock_policy(fw_override.name);
    UPDATE fw_policy AS p SET rate = p.rate
    WHERE p.name = fw_override.name AND p.period_id = id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'rate limit policy "%" has no window of %', fw_override.name, fw_override.period
            USING ERRCODE = 'undefined_object',
                  HINT = 'Define the window with fw_define first; fw_policies lists the windows.';
    END IF;
    UPDATE fw_override AS o
    SET period = fw_override.period, rate = fw_override.rate,
        capacity = coalesce(fw_override.capacity, fw_override.rate),
        created_by = fw_acting_role()
    WHERE o.name = fw_override.name AND o.key = fw_override.key AND o.period_id = id;
    IF NOT FOUND THEN
        INSERT INTO fw_override
        VALUES (fw_override.name, fw_override.key, id, fw_override.period, fw_override.rate,
                coalesce(fw_override.capacity, fw_override.rate), fw_acting_role());
    END IF;
END $function$;
COMMENT ON FUNCTION fw_override(text, text, integer, interval, integer) IS
    'give one key its own rate (and capacity, default the rate) for one window of a policy';

CREATE FUNCTION fw_exempt(name text, key text)
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path FROM CURRENT
AS $function$
BEGIN
    PERFORM fw_window_id(fw_exempt.name, fw_exempt.key, 1, '1 second', NULL, NULL);
    IF fw_exempt.key IS NULL THEN
        RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM fw_lock_policy(fw_exempt.name);
    UPDATE fw_policy AS p SET rate = p.rate WHERE p.name = fw_exempt.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'rate limit policy "%" does not exist', fw_exempt.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Define it with fw_define(name, rate, period) first.';
    END IF;
    UPDATE fw_override AS o SET created_by = fw_acting_role()
    WHERE o.name = fw_exempt.name AND o.key = fw_exempt.key AND o.period_id = '';
    IF NOT FOUND THEN
        INSERT INTO fw_override
        VALUES (fw_exempt.name, fw_exempt.key, '', NULL, NULL, NULL, fw_acting_role());
    END IF;
END $function$;
COMMENT ON FUNCTION fw_exempt(text, text) IS
    'make one key unlimited for a policy: its calls are allowed and counted, never denied, and spend nothing';

CREATE FUNCTION fw_unoverride(name text, key text, period interval DEFAULT NULL::interval)
 RETURNS integer
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path FROM CURRENT
AS $function$
DECLARE
    id text := CASE WHEN fw_unoverride.period IS NOT NULL
                    THEN fw_window_id(fw_unoverride.name, fw_unoverride.key, 1,
                                                  fw_unoverride.period, NULL, NULL) END;
    removed integer;
BEGIN
    IF fw_unoverride.name IS NULL OR fw_unoverride.key IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null',
            CASE WHEN fw_unoverride.name IS NULL THEN 'name' ELSE 'key' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM fw_lock_policy(fw_unoverride.name);
    DELETE FROM fw_override AS o
    WHERE o.name = fw_unoverride.name AND o.key = fw_unoverride.key
      AND (id IS NULL OR o.period_id = id);
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed;
END $function$;
COMMENT ON FUNCTION fw_unoverride(text, text, interval) IS
    'return a key to its policy: remove its override of one window, or all its overrides and its exemption when period is NULL; returns how many were removed';

REVOKE ALL ON FUNCTION fw_define(text, integer, interval, timestamptz, integer, boolean, text),
    fw_undefine(text, interval),
    fw_override(text, text, integer, interval, integer),
    fw_exempt(text, text),
    fw_unoverride(text, text, interval) FROM PUBLIC;

COMMENT ON FUNCTION fw_period_id(integer, bigint) IS
    'internal: the identifier of a period, one per window length, as fw_window_id returns it (SQL edition)';
