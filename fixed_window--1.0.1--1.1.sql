/* fixed_window--1.0.1--1.1.sql: named policies; the inline API and its answers are unchanged */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.1'" to load this file. \quit

-- A window of a policy has counters of its own: the table's rows are told
-- apart by the identifier of the window's period ('' for inline calls),
-- and count the calls a shadow window would have denied.
ALTER TABLE fw_counter
    ADD COLUMN period_id text COLLATE "C" NOT NULL DEFAULT '',
    ADD COLUMN shadow_denied bigint NOT NULL DEFAULT 0;
ALTER TABLE fw_counter
    DROP CONSTRAINT fw_counter_pkey,
    ADD CONSTRAINT fw_counter_pkey PRIMARY KEY (name, key, period_id);
ALTER TABLE fw_stat
    ADD COLUMN shadow_denied bigint NOT NULL DEFAULT 0;

COMMENT ON TABLE fw_counter IS
'counters of the table backend (fixed_window.storage = table, or auto without preload); period_id: the window of a policy, '''' for inline calls; fresh_from/fresh_until: when a row answers as no row would, so that fw_gc() may delete it; userid: role of the last fw_limit call; calls .. since, shadow_denied: statistics of the row, added up by fw_stats';

CREATE OR REPLACE FUNCTION fw_counter_deleted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    INSERT INTO @extschema@.fw_stat AS s
    SELECT name, sum(calls), sum(allowed), sum(denied), max(last_denied_at), min(since),
           sum(shadow_denied)
    FROM gone
    GROUP BY name
    ORDER BY name
    ON CONFLICT (name) DO UPDATE
        SET calls = s.calls + excluded.calls,
            allowed = s.allowed + excluded.allowed,
            denied = s.denied + excluded.denied,
            last_denied_at = greatest(s.last_denied_at, excluded.last_denied_at),
            since = least(s.since, excluded.since),
            shadow_denied = s.shadow_denied + excluded.shadow_denied;
    RETURN NULL;
END $$;

-- Maintenance matches rows by the whole primary key, period_id included.
CREATE OR REPLACE FUNCTION fw_gc()
RETURNS bigint
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    WITH locked AS (
        SELECT d.name, d.key, d.period_id FROM @extschema@.fw_counter AS d
        WHERE d.fresh_from <= @extschema@.fw_now()
          AND (d.fresh_until IS NULL OR @extschema@.fw_now() < d.fresh_until)
        FOR UPDATE SKIP LOCKED),
    gone AS (
        DELETE FROM @extschema@.fw_counter AS c
        USING locked AS l
        WHERE c.name = l.name AND c.key = l.key AND c.period_id = l.period_id
        RETURNING 1)
    SELECT count(*) FROM gone
$$;

CREATE OR REPLACE FUNCTION fw_reset(name text, key text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    removed bigint;
BEGIN
    IF fw_reset.key IS NOT NULL THEN
        -- one key: wait for a transaction that holds its rows
        DELETE FROM @extschema@.fw_counter AS c
        WHERE c.name = fw_reset.name AND c.key = fw_reset.key;
    ELSE
        -- every key of the limit: rows that open transactions hold are left
        WITH locked AS (
            SELECT d.name, d.key, d.period_id FROM @extschema@.fw_counter AS d
            WHERE d.name = fw_reset.name
            FOR UPDATE SKIP LOCKED)
        DELETE FROM @extschema@.fw_counter AS c
        USING locked AS l
        WHERE c.name = l.name AND c.key = l.key AND c.period_id = l.period_id;
    END IF;
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed + @extschema@.fw_shmem_reset(fw_reset.name, fw_reset.key);
END $$;

COMMENT ON FUNCTION fw_reset(text, text) IS
'remove the counters of one key (inline and of every window of the policy), or every counter of a limit or policy when key is NULL, in both storages (with key NULL, table rows that open transactions hold are left); returns how many; the next call starts afresh';

CREATE OR REPLACE FUNCTION fw_stats_reset()
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT @extschema@.fw_shmem_stats_reset();
    WITH locked AS (
        SELECT d.name, d.key, d.period_id FROM @extschema@.fw_counter AS d
        FOR NO KEY UPDATE SKIP LOCKED)
    UPDATE @extschema@.fw_counter AS c
        SET calls = 0, allowed = 0, denied = 0, last_denied_at = NULL, shadow_denied = 0,
            since = @extschema@.fw_now()
        FROM locked AS l
        WHERE c.name = l.name AND c.key = l.key AND c.period_id = l.period_id;
    DELETE FROM @extschema@.fw_stat AS s
        WHERE s.name = ANY (ARRAY(
            SELECT t.name FROM @extschema@.fw_stat AS t ORDER BY t.name FOR UPDATE));
$$;

-- Counters, with the policy window each belongs to.
DROP VIEW fw_counters;
DROP FUNCTION fw_shmem_counters();

CREATE FUNCTION fw_shmem_counters(
    OUT name text, OUT key text, OUT window_start timestamptz, OUT window_end timestamptz,
    OUT remaining integer, OUT rate integer, OUT capacity integer, OUT period_id text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fw_shmem_counters'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_shmem_counters() IS
'counters of this database in shared memory; keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats; period_id: the policy window, NULL for inline calls';

CREATE VIEW fw_counters AS
    SELECT s.name, s.key, 'shmem'::text AS storage, s.window_start, s.window_end,
           s.remaining, s.rate, s.capacity, s.period_id::interval AS period
    FROM fw_shmem_counters() AS s
    WHERE s.window_end > fw_now()
    UNION ALL
    SELECT c.name, CASE WHEN fw_may_see_key(c.userid) THEN c.key END, 'table',
           fw_displayable(c.window_start), fw_displayable(c.window_end),
           c.tokens, c.rate, c.capacity, nullif(c.period_id, '')::interval
    FROM fw_counter AS c
    WHERE c.window_end > fw_now();
GRANT SELECT ON fw_counters TO PUBLIC;

COMMENT ON VIEW fw_counters IS
'one row per counter of this database whose window is current, in either storage; remaining = 0 means throttled now; period: the window of a policy the counter belongs to, NULL for inline calls; window bounds beyond the timestamps PostgreSQL can show read as -infinity or infinity; keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats';

-- Statistics, with the calls shadow windows would have denied.
DROP VIEW fw_stats;
DROP FUNCTION fw_shmem_stats();

CREATE FUNCTION fw_shmem_stats(
    OUT name text, OUT calls bigint, OUT allowed bigint, OUT denied bigint,
    OUT last_denied_at timestamptz, OUT since timestamptz, OUT shadow_denied bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fw_shmem_stats'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_shmem_stats() IS
'statistics of this database''s limits and policies counted in shared memory (used by fw_stats)';

CREATE VIEW fw_stats AS
    SELECT s.name, sum(s.calls)::bigint AS calls, sum(s.allowed)::bigint AS allowed,
           sum(s.denied)::bigint AS denied, max(s.last_denied_at) AS last_denied_at,
           min(s.since) AS since, sum(s.shadow_denied)::bigint AS shadow_denied
    FROM (SELECT * FROM fw_shmem_stats()
          UNION ALL
          SELECT c.name, c.calls, c.allowed, c.denied, c.last_denied_at, c.since, c.shadow_denied
          FROM fw_counter AS c
          UNION ALL
          SELECT t.name, t.calls, t.allowed, t.denied, t.last_denied_at, t.since, t.shadow_denied
          FROM fw_stat AS t) AS s
    GROUP BY s.name
    HAVING sum(s.calls) > 0;
GRANT SELECT ON fw_stats TO PUBLIC;

COMMENT ON VIEW fw_stats IS
'per limit or policy of this database with calls since the last fw_stats_reset(): fw_limit calls (a policy''s call counts once), allowed, denied, the last denial, the time since which it counts, and shadow_denied: allowed calls that a shadow window would have denied; name NULL: calls of limits that found no room for statistics in shared memory; shared-memory counts vanish on restart';

-- Policies: limits defined once, as data.

CREATE FUNCTION fw_window_id(name text, key text, rate integer, period interval,
                             start timestamptz, capacity integer)
RETURNS text
AS 'MODULE_PATHNAME', 'fw_window_id'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION fw_window_id(text, text, integer, interval, timestamptz, integer) IS
'check a policy name, a key (may be NULL) and one window''s parameters as fw_limit does, and return the identifier of the period (ISO 8601, one per window length)';

CREATE TABLE fw_policy (
    name text COLLATE "C" NOT NULL,
    period interval NOT NULL,
    period_id text COLLATE "C" NOT NULL,
    rate integer NOT NULL,
    capacity integer NOT NULL,
    start timestamptz,
    shadow boolean NOT NULL,
    comment text,
    CONSTRAINT fw_policy_pkey PRIMARY KEY (name, period_id),
    CONSTRAINT fw_policy_window_check
        CHECK (period_id = fw_window_id(name, NULL, rate, period, start, capacity))
);
REVOKE ALL ON fw_policy FROM PUBLIC;

COMMENT ON TABLE fw_policy IS
'windows of named policies, one row per (name, period); written by fw_define and fw_undefine; start NULL: each key''s own phase';

CREATE TABLE fw_override (
    name text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    period_id text COLLATE "C" NOT NULL,
    period interval,
    rate integer,
    capacity integer,
    created_by name NOT NULL,
    CONSTRAINT fw_override_pkey PRIMARY KEY (name, key, period_id),
    CONSTRAINT fw_override_window_check CHECK (
        CASE WHEN period IS NULL
             THEN period_id = '' AND rate IS NULL AND capacity IS NULL
                  AND fw_window_id(name, key, 1, '1 second', NULL, NULL) IS NOT NULL
             ELSE period_id = fw_window_id(name, key, rate, period, NULL, capacity) END)
);
REVOKE ALL ON fw_override FROM PUBLIC;

COMMENT ON TABLE fw_override IS
'one key''s own rate for a window of a policy, or (period NULL) its exemption from the policy; written by fw_override, fw_exempt and fw_unoverride; created_by: the role that wrote it (its SET ROLE, else its login role)';

-- Definitions are kept by pg_dump, replicated and crash-safe.
SELECT pg_catalog.pg_extension_config_dump('fw_policy', '');
SELECT pg_catalog.pg_extension_config_dump('fw_override', '');

CREATE FUNCTION fw_policy_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'fw_policy_changed'
LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION fw_policy_changed() FROM PUBLIC;

COMMENT ON FUNCTION fw_policy_changed() IS
'trigger of fw_policy and fw_override: every session drops its cached definitions when the change commits';

CREATE TRIGGER fw_policy_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON fw_policy
    FOR EACH STATEMENT EXECUTE FUNCTION fw_policy_changed();
CREATE TRIGGER fw_override_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON fw_override
    FOR EACH STATEMENT EXECUTE FUNCTION fw_policy_changed();

CREATE FUNCTION fw_acting_role()
RETURNS name
AS 'MODULE_PATHNAME', 'fw_acting_role'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION fw_acting_role() IS
'the role the session acts as (SET ROLE, else its login role), also inside SECURITY DEFINER functions: recorded as the creator of overrides';

CREATE FUNCTION fw_define(
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
REVOKE ALL ON FUNCTION fw_define(text, integer, interval, timestamptz, integer, boolean, text) FROM PUBLIC;

COMMENT ON FUNCTION fw_define(text, integer, interval, timestamptz, integer, boolean, text) IS
'create or replace the window period of policy name: rate tokens per period, kept up to capacity; shadow: decide and spend but never deny; superusers and roles granted EXECUTE';

CREATE FUNCTION fw_undefine(name text, period interval DEFAULT NULL)
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
REVOKE ALL ON FUNCTION fw_undefine(text, interval) FROM PUBLIC;

COMMENT ON FUNCTION fw_undefine(text, interval) IS
'remove one window of a policy, or the whole policy when period is NULL, with their overrides; returns the windows removed';

CREATE FUNCTION fw_override(name text, key text, rate integer, period interval,
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
    IF NOT EXISTS (SELECT FROM @extschema@.fw_policy AS p
                   WHERE p.name = fw_override.name AND p.period_id = id) THEN
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
REVOKE ALL ON FUNCTION fw_override(text, text, integer, interval, integer) FROM PUBLIC;

COMMENT ON FUNCTION fw_override(text, text, integer, interval, integer) IS
'give one key its own rate (and capacity, default the rate) for one window of a policy';

CREATE FUNCTION fw_exempt(name text, key text)
RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_window_id(fw_exempt.name, fw_exempt.key, 1, '1 second', NULL, NULL);
    IF fw_exempt.key IS NULL THEN
        RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.fw_policy AS p WHERE p.name = fw_exempt.name) THEN
        RAISE EXCEPTION 'rate limit policy "%" does not exist', fw_exempt.name
            USING ERRCODE = 'undefined_object',
                  HINT = 'Define it with fw_define(name, rate, period) first.';
    END IF;
    INSERT INTO @extschema@.fw_override AS o
    VALUES (fw_exempt.name, fw_exempt.key, '', NULL, NULL, NULL, @extschema@.fw_acting_role())
    ON CONFLICT ON CONSTRAINT fw_override_pkey DO UPDATE SET created_by = excluded.created_by;
END $$;
REVOKE ALL ON FUNCTION fw_exempt(text, text) FROM PUBLIC;

COMMENT ON FUNCTION fw_exempt(text, text) IS
'make one key unlimited for a policy: its calls are allowed and counted, never denied, and spend nothing';

CREATE FUNCTION fw_unoverride(name text, key text, period interval DEFAULT NULL)
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
    DELETE FROM @extschema@.fw_override AS o
    WHERE o.name = fw_unoverride.name AND o.key = fw_unoverride.key
      AND (id IS NULL OR o.period_id = id);
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed;
END $$;
REVOKE ALL ON FUNCTION fw_unoverride(text, text, interval) FROM PUBLIC;

COMMENT ON FUNCTION fw_unoverride(text, text, interval) IS
'return a key to its policy: remove its override of one window, or all its overrides and its exemption when period is NULL; returns how many were removed';

CREATE VIEW fw_policies AS
    SELECT p.name, p.period, p.rate, p.capacity, p.start, p.shadow, p.comment
    FROM fw_policy AS p;
GRANT SELECT ON fw_policies TO PUBLIC;

COMMENT ON VIEW fw_policies IS
'the windows of every named policy of this database, with their comments; start NULL: each key''s own phase';

CREATE VIEW fw_overrides AS
    SELECT o.name, o.key, o.period, o.rate, o.capacity, o.period IS NULL AS exempt, o.created_by
    FROM fw_override AS o
    WHERE fw_may_see_key(coalesce((SELECT r.oid FROM pg_roles AS r WHERE r.rolname = o.created_by), 0));
GRANT SELECT ON fw_overrides TO PUBLIC;

COMMENT ON VIEW fw_overrides IS
'overrides and exemptions of keys; a role sees those it made, superusers and members of pg_read_all_stats see all';

-- Calling a policy.

CREATE FUNCTION fw_limit(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
AS 'MODULE_PATHNAME', 'fw_limit_named'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_limit(text, text, integer) IS
'spend cost tokens in every window of policy name for key if every enforced window holds them, else spend nothing; remaining and reset_after are those of the most restrictive window';

CREATE FUNCTION fw_check(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
AS 'MODULE_PATHNAME', 'fw_check_named'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_check(text, text, integer) IS
'what fw_limit(name, key, cost) would answer now, without spending tokens or creating counters';

CREATE TYPE fw_window_result AS (
    period interval,
    rate integer,
    capacity integer,
    shadow boolean,
    ok boolean,
    retry_after interval,
    remaining integer,
    reset_after interval,
    window_start timestamptz,
    window_end timestamptz
);

COMMENT ON TYPE fw_window_result IS
'one window''s part of a named call: its period, rate and capacity (the key''s override, if any), whether it is a shadow, its own verdict (ok, retry_after NULL when ok, tokens remaining, time until it ends) and its bounds';

CREATE FUNCTION fw_limit_windows(name text, key text, cost integer DEFAULT 1)
RETURNS SETOF fw_window_result
AS 'MODULE_PATHNAME', 'fw_limit_windows'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_limit_windows(text, text, integer) IS
'fw_limit(name, key, cost), answered with one row per window of the policy: each window''s own verdict, so that a caller sees which window denied';

CREATE FUNCTION fw_check_windows(name text, key text, cost integer DEFAULT 1)
RETURNS SETOF fw_window_result
AS 'MODULE_PATHNAME', 'fw_check_windows'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_check_windows(text, text, integer) IS
'what fw_limit_windows would answer now, without spending tokens or creating counters';

CREATE FUNCTION fw_refund(name text, key text, cost integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'fw_refund_named'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_refund(text, text, integer) IS
'give back up to cost tokens to every window of policy name for key whose counter''s window is current, never above capacity; returns the fewest tokens an enforced window holds now';

CREATE FUNCTION fw_refund(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'fw_refund_inline'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) IS
'give back up to cost tokens to the counter of an inline limit if its window is current, never above capacity; returns the tokens it holds now';

COMMENT ON FUNCTION fw_trigger() IS
'BEFORE ... FOR EACH ROW trigger: fw_trigger(policy, column [, cost]) or fw_trigger(name, column, rate, period [, start [, cost]]) limits rows per value of column; raises SQLSTATE RL429 when the limit is exceeded';
