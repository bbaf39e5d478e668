/* fixed_window--1.2.1--1.3.sql: hardening; see CHANGELOG.md for what changed and why */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.3'" to load this file. \quit

-- Views that hide rows or keys from a role are security barriers: without,
-- a cheap function of the caller's in WHERE ran on every row of
-- fw_override before the visibility filter, and could print the keys of
-- other roles' overrides.
ALTER VIEW fw_overrides SET (security_barrier = true);
ALTER VIEW fw_counters SET (security_barrier = true);

-- A refund gives tokens back: any role that may call it can refund itself
-- to full as often as it likes.  Grant it to the roles that reserve tokens.
REVOKE ALL ON FUNCTION fw_refund(text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) FROM PUBLIC;

-- Changing definitions.
--
-- Every function that changes a policy first takes the policy's lock (an
-- advisory lock, objsubid 18009 in pg_locks), held until the transaction
-- ends: two changes of one policy wait for each other instead of
-- deadlocking on their rows (an fw_override and an fw_unoverride of one key
-- in two sessions deadlocked in 1.2.1).
CREATE FUNCTION fw_lock_policy(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'fw_lock_policy'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION fw_lock_policy(text) FROM PUBLIC;

COMMENT ON FUNCTION fw_lock_policy(text) IS
'take the lock of a policy''s definition until the transaction ends (used by fw_define and its siblings)';

-- A definition gets every check a call of it would make: 1.2.1 accepted
-- fw_define('p', 10, '300000 years'), and every call of p then failed with
-- SQLSTATE 22008.
CREATE FUNCTION fw_window_in_range(rate integer, period interval, start timestamptz,
                                   capacity integer)
RETURNS void
AS 'MODULE_PATHNAME', 'fw_window_in_range'
LANGUAGE C VOLATILE PARALLEL SAFE;
REVOKE ALL ON FUNCTION fw_window_in_range(integer, interval, timestamptz, integer) FROM PUBLIC;

COMMENT ON FUNCTION fw_window_in_range(integer, interval, timestamptz, integer) IS
'check that a window''s bounds around fw_now() lie within 64-bit time for every key (used by fw_define); SQLSTATE 22008 otherwise';

CREATE OR REPLACE FUNCTION fw_define(
    name text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    capacity integer DEFAULT NULL,
    shadow boolean DEFAULT false,
    comment text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := @extschema@.fw_window_id(fw_define.name, NULL, fw_define.rate, fw_define.period,
                                        fw_define.start, fw_define.capacity);
BEGIN
    IF fw_define.shadow IS NULL THEN
        RAISE EXCEPTION 'argument "shadow" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_window_in_range(fw_define.rate, fw_define.period, fw_define.start,
                                           fw_define.capacity);
    PERFORM @extschema@.fw_lock_policy(fw_define.name);
    -- one definer at a time: the count of windows stays true
    LOCK TABLE @extschema@.fw_policy IN SHARE ROW EXCLUSIVE MODE;
    IF (SELECT count(*) FROM @extschema@.fw_policy AS p
        WHERE p.name = fw_define.name AND p.period_id <> id) >= 8 THEN
        RAISE EXCEPTION 'rate limit policy "%" already has 8 windows', fw_define.name
            USING ERRCODE = 'program_limit_exceeded',
                  DETAIL = 'A policy may have at most 8 windows of distinct periods.',
                  HINT = 'Remove a window with fw_undefine(name, period), or replace one by defining its period again.';
    END IF;
    INSERT INTO @extschema@.fw_policy AS p
    VALUES (fw_define.name, fw_define.period, id, fw_define.rate,
            coalesce(fw_define.capacity, fw_define.rate), fw_define.start, fw_define.shadow,
            fw_define.comment)
    ON CONFLICT ON CONSTRAINT fw_policy_pkey DO UPDATE
        SET period = excluded.period, rate = excluded.rate, capacity = excluded.capacity,
            start = excluded.start, shadow = excluded.shadow, comment = excluded.comment;
END $$;

CREATE OR REPLACE FUNCTION fw_undefine(name text, period interval DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := CASE WHEN fw_undefine.period IS NOT NULL
                    THEN @extschema@.fw_window_id(fw_undefine.name, NULL, 1, fw_undefine.period, NULL, NULL) END;
    removed integer;
BEGIN
    IF fw_undefine.name IS NULL THEN
        RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_lock_policy(fw_undefine.name);
    DELETE FROM @extschema@.fw_policy AS p
    WHERE p.name = fw_undefine.name AND (id IS NULL OR p.period_id = id);
    GET DIAGNOSTICS removed = ROW_COUNT;
    IF removed = 0 THEN
        RAISE EXCEPTION 'rate limit policy "%" has no window %', fw_undefine.name,
            coalesce('of ' || fw_undefine.period::text, 'at all')
            USING ERRCODE = 'undefined_object',
                  HINT = 'fw_policies lists the policies and their windows.';
    END IF;
    -- overrides of what was removed go with it; with the whole policy, exemptions too
    DELETE FROM @extschema@.fw_override AS o
    WHERE o.name = fw_undefine.name AND (id IS NULL OR o.period_id = id);
    RETURN removed;
END $$;

-- An override or exemption is written only while its policy exists, and
-- fw_undefine removes the overrides of what it removes: the two must not
-- interleave.  1.2.1 checked the policy without a lock: an fw_override
-- during an fw_undefine both succeeded, and the orphaned override applied
-- again to a policy later defined under the same name.  The policy's lock
-- orders them under READ COMMITTED; and fw_override and fw_exempt rewrite
-- the policy rows they depend on (changing nothing) before checking them,
-- so that under REPEATABLE READ or SERIALIZABLE, where a transaction's
-- snapshot may predate the other's commit, the later of the two fails with
-- a serialization error instead of missing the other.
CREATE OR REPLACE FUNCTION fw_override(name text, key text, rate integer, period interval,
                                       capacity integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := @extschema@.fw_window_id(fw_override.name, fw_override.key, fw_override.rate,
                                        fw_override.period, NULL, fw_override.capacity);
BEGIN
    IF fw_override.key IS NULL THEN
        RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_lock_policy(fw_override.name);
    UPDATE @extschema@.fw_policy AS p SET rate = p.rate
    WHERE p.name = fw_override.name AND p.period_id = id;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'rate limit policy "%" has no window of %', fw_override.name, fw_override.period
            USING ERRCODE = 'undefined_object',
                  HINT = 'Define the window with fw_define first; fw_policies lists the windows.';
    END IF;
    INSERT INTO @extschema@.fw_override AS o
    VALUES (fw_override.name, fw_override.key, id, fw_override.period, fw_override.rate,
            coalesce(fw_override.capacity, fw_override.rate), @extschema@.fw_acting_role())
    ON CONFLICT ON CONSTRAINT fw_override_pkey DO UPDATE
        SET period = excluded.period, rate = excluded.rate, capacity = excluded.capacity,
            created_by = excluded.created_by;
END $$;

CREATE OR REPLACE FUNCTION fw_exempt(name text, key text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_window_id(fw_exempt.name, fw_exempt.key, 1, '1 second', NULL, NULL);
    IF fw_exempt.key IS NULL THEN
        RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_lock_policy(fw_exempt.name);
    UPDATE @extschema@.fw_policy AS p SET rate = p.rate WHERE p.name = fw_exempt.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'rate limit policy "%" does not exist', fw_exempt.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Define it with fw_define(name, rate, period) first.';
    END IF;
    INSERT INTO @extschema@.fw_override AS o
    VALUES (fw_exempt.name, fw_exempt.key, '', NULL, NULL, NULL, @extschema@.fw_acting_role())
    ON CONFLICT ON CONSTRAINT fw_override_pkey DO UPDATE SET created_by = excluded.created_by;
END $$;

CREATE OR REPLACE FUNCTION fw_unoverride(name text, key text, period interval DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    id text := CASE WHEN fw_unoverride.period IS NOT NULL
                    THEN @extschema@.fw_window_id(fw_unoverride.name, fw_unoverride.key, 1,
                                                  fw_unoverride.period, NULL, NULL) END;
    removed integer;
BEGIN
    IF fw_unoverride.name IS NULL OR fw_unoverride.key IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null',
            CASE WHEN fw_unoverride.name IS NULL THEN 'name' ELSE 'key' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_lock_policy(fw_unoverride.name);
    DELETE FROM @extschema@.fw_override AS o
    WHERE o.name = fw_unoverride.name AND o.key = fw_unoverride.key
      AND (id IS NULL OR o.period_id = id);
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed;
END $$;
