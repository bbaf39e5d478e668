/* fixed_window--1.2.1--1.3.sql: hardening; see CHANGELOG.md for what changed and why */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.3'" to load this file. \quit

-- Views that hide rows or keys from a role are security barriers: without,
-- a cheap function of the caller's in WHERE ran on every row of
-- fw_override before the visibility filter, and could print the keys of
-- other roles' overrides.  (fw_counters, below, is one too.)
ALTER VIEW fw_overrides SET (security_barrier = true);

-- The views on a hot standby.  A view that names an unlogged table fails to
-- plan during recovery ("cannot access temporary or unlogged relations"),
-- so 1.2.1's fw_counters and fw_stats failed on a standby, although
-- shared-memory counters work there.  They now read the table through
-- functions, which on a standby return nothing and say so (unless a DBA
-- made the tables LOGGED, to keep counters through a failover).  The columns
-- keep the collation "C" of the table's.
CREATE FUNCTION fw_table_counters(
    OUT name text, OUT key text, OUT window_start timestamptz, OUT window_end timestamptz,
    OUT remaining integer, OUT rate integer, OUT capacity integer, OUT period_id text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'fw_table_counters'
LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_table_counters() IS
'counter rows of the table backend in this database (used by fw_counters); keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats; on a standby none, with a notice';

CREATE OR REPLACE VIEW fw_counters WITH (security_barrier) AS
    SELECT s.name, s.key, 'shmem'::text AS storage, s.window_start, s.window_end,
           s.remaining, s.rate, s.capacity, s.period_id::interval AS period
    FROM fw_shmem_counters() AS s
    WHERE s.window_end > fw_now()
    UNION ALL
    SELECT c.name COLLATE "C", c.key COLLATE "C", 'table', c.window_start, c.window_end,
           c.remaining, c.rate, c.capacity, c.period_id::interval
    FROM fw_table_counters() AS c
    WHERE c.window_end > fw_now();

CREATE FUNCTION fw_table_stats(
    OUT name text, OUT calls bigint, OUT allowed bigint, OUT denied bigint,
    OUT last_denied_at timestamptz, OUT since timestamptz, OUT shadow_denied bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    -- on a standby, a table is read only if a DBA made it LOGGED
    counters boolean := NOT pg_is_in_recovery()
        OR (SELECT relpersistence = 'p' FROM pg_class WHERE oid = '@extschema@.fw_counter'::regclass);
    deleted boolean := NOT pg_is_in_recovery()
        OR (SELECT relpersistence = 'p' FROM pg_class WHERE oid = '@extschema@.fw_stat'::regclass);
BEGIN
    IF NOT (counters AND deleted) THEN
        RAISE NOTICE 'the statistics of fixed_window''s table are not readable on a standby'
            USING ERRCODE = 'read_only_sql_transaction',
                  DETAIL = CASE WHEN counters OR deleted
                      THEN format('The table %s is unlogged: a standby holds none of its rows. ',
                                  CASE WHEN counters THEN 'fw_stat' ELSE 'fw_counter' END)
                      ELSE 'The tables fw_counter and fw_stat are unlogged: a standby holds none of their rows. '
                      END || 'This server''s shared-memory statistics are counted.';
    END IF;
    IF counters THEN
        RETURN QUERY
            SELECT c.name, c.calls, c.allowed, c.denied, c.last_denied_at, c.since, c.shadow_denied
            FROM @extschema@.fw_counter AS c;
    END IF;
    IF deleted THEN
        RETURN QUERY
            SELECT t.name, t.calls, t.allowed, t.denied, t.last_denied_at, t.since, t.shadow_denied
            FROM @extschema@.fw_stat AS t;
    END IF;
END $$;

COMMENT ON FUNCTION fw_table_stats() IS
'statistics of the table backend''s rows, live and deleted, in this database (used by fw_stats); on a standby none, with a notice';

CREATE OR REPLACE VIEW fw_stats AS
    SELECT s.name, sum(s.calls)::bigint AS calls, sum(s.allowed)::bigint AS allowed,
           sum(s.denied)::bigint AS denied, max(s.last_denied_at) AS last_denied_at,
           min(s.since) AS since, sum(s.shadow_denied)::bigint AS shadow_denied
    FROM (SELECT * FROM fw_shmem_stats()
          UNION ALL
          SELECT t.name COLLATE "C", t.calls, t.allowed, t.denied, t.last_denied_at, t.since,
                 t.shadow_denied
          FROM fw_table_stats() AS t) AS s
    GROUP BY s.name
    HAVING sum(s.calls) > 0;

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

-- The triggers that tell every session of a change fire whatever
-- session_replication_role says: a change applied by logical replication,
-- or written with session_replication_role = replica, went unseen by the
-- sessions that had the policy cached.
ALTER TABLE fw_policy ENABLE ALWAYS TRIGGER fw_policy_changed;
ALTER TABLE fw_override ENABLE ALWAYS TRIGGER fw_override_changed;

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
    -- Definers of one policy take turns on its lock, so that the count of
    -- its windows stays true; the rows of its windows are rewritten first,
    -- changing nothing, so that under REPEATABLE READ or SERIALIZABLE a
    -- definition whose snapshot predates another's commit fails with a
    -- serialization error instead of missing a window.  Nothing locks the
    -- whole table (1.2.1 did, and two admins replacing two policies, each
    -- in one transaction, deadlocked).
    PERFORM @extschema@.fw_lock_policy(fw_define.name);
    UPDATE @extschema@.fw_policy AS p SET rate = p.rate WHERE p.name = fw_define.name;
    IF (SELECT count(*) FROM @extschema@.fw_policy AS p
        WHERE p.name = fw_define.name AND p.period_id <> id) >= 8 THEN
        RAISE EXCEPTION 'rate limit policy "%" already has 8 windows', fw_define.name
            USING ERRCODE = 'program_limit_exceeded',
                  DETAIL = 'A policy may have at most 8 windows of distinct periods.',
                  HINT = 'Remove a window with fw_undefine(name, period), or replace one by defining its period again.';
    END IF;
    -- replace the window, or add it (not INSERT ... ON CONFLICT, which fails
    -- while REINDEX CONCURRENTLY rebuilds the primary key; the policy's lock
    -- keeps other definers out in between)
    UPDATE @extschema@.fw_policy AS p
    SET period = fw_define.period, rate = fw_define.rate,
        capacity = coalesce(fw_define.capacity, fw_define.rate), start = fw_define.start,
        shadow = fw_define.shadow, comment = fw_define.comment
    WHERE p.name = fw_define.name AND p.period_id = id;
    IF NOT FOUND THEN
        INSERT INTO @extschema@.fw_policy
        VALUES (fw_define.name, fw_define.period, id, fw_define.rate,
                coalesce(fw_define.capacity, fw_define.rate), fw_define.start, fw_define.shadow,
                fw_define.comment);
    END IF;
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
    -- overrides of what was removed go with it; with the whole policy, or its
    -- last window, exemptions too (1.3 before its review kept them, and they
    -- applied again to a policy defined later under the name)
    DELETE FROM @extschema@.fw_override AS o
    WHERE o.name = fw_undefine.name
      AND (id IS NULL OR o.period_id = id
           OR NOT EXISTS (SELECT FROM @extschema@.fw_policy AS p WHERE p.name = fw_undefine.name));
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
    UPDATE @extschema@.fw_override AS o
    SET period = fw_override.period, rate = fw_override.rate,
        capacity = coalesce(fw_override.capacity, fw_override.rate),
        created_by = @extschema@.fw_acting_role()
    WHERE o.name = fw_override.name AND o.key = fw_override.key AND o.period_id = id;
    IF NOT FOUND THEN
        INSERT INTO @extschema@.fw_override
        VALUES (fw_override.name, fw_override.key, id, fw_override.period, fw_override.rate,
                coalesce(fw_override.capacity, fw_override.rate), @extschema@.fw_acting_role());
    END IF;
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
    UPDATE @extschema@.fw_override AS o SET created_by = @extschema@.fw_acting_role()
    WHERE o.name = fw_exempt.name AND o.key = fw_exempt.key AND o.period_id = '';
    IF NOT FOUND THEN
        INSERT INTO @extschema@.fw_override
        VALUES (fw_exempt.name, fw_exempt.key, '', NULL, NULL, NULL, @extschema@.fw_acting_role());
    END IF;
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

-- Where this session's calls keep their counters now: 'shmem' or 'table'.
-- fw_postgrest asks, since on the table backend its error rolls back the
-- counters a denial made.
CREATE FUNCTION fw_storage_in_use()
RETURNS text
AS 'MODULE_PATHNAME', 'fw_storage_in_use'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION fw_storage_in_use() IS
'where this session''s calls keep their counters now, as fixed_window.storage and the preloaded library decide: shmem or table';

-- An interval as text that every session reads alike, whatever its
-- IntervalStyle: ISO 8601 with every field and its own sign,
-- P<years>Y<months>M<days>DT<hours>H<minutes>M<seconds>S.  The router
-- (fixed_window_proxy) moves periods between servers this way.
CREATE FUNCTION fw_interval_iso(period interval)
RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.format('P%sY%sM%sDT%sH%sM%sS', EXTRACT(year FROM period), EXTRACT(month FROM period),
                         EXTRACT(day FROM period), EXTRACT(hour FROM period),
                         EXTRACT(minute FROM period), EXTRACT(second FROM period));

COMMENT ON FUNCTION fw_interval_iso(interval) IS
'the interval in ISO 8601, every field with its own sign, read alike by every session whatever its IntervalStyle (used by fixed_window_proxy)';

-- What fw_headers needs of a name, a rate and a period: the checks of
-- fw_limit, and the identifier of the period (fixed_window_proxy defines the
-- same in SQL, having no C).  The HTTP functions that follow are the same
-- text in both extensions.
CREATE FUNCTION fw_header_window_id(name text, rate integer, period interval)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN @extschema@.fw_window_id(name, NULL, rate, period, NULL, NULL);

COMMENT ON FUNCTION fw_header_window_id(text, integer, interval) IS
'check a name, a rate and a period as fw_limit does, and return the identifier of the period (used by fw_headers)';

-- HTTP rate-limit headers and PostgREST, as of 1.3.
--
-- The same text ends fixed_window--1.2.1--1.3.sql and
-- fixed_window_proxy--1.0--1.1.sql (make concatenates it): both extensions
-- answer HTTP alike.  Each defines fw_header_window_id(name, rate, period)
-- before it: the checks of fw_limit for these three, and the identifier of
-- the period ("PT60S").  Changes in 1.3:
--
-- - With capacity above the rate, a window's remaining tokens can exceed
--   its quota.  1.2.1 advertised them: "r=149" against "q=100", and
--   X-RateLimit-Remaining 149 against X-RateLimit-Limit 100, so that a
--   client computing used = limit - remaining got a negative number.  The
--   headers now say the quota of the window (the rate) and what of it is
--   left, never more: min(remaining, rate).  Tokens saved beyond it are
--   still there to spend; the headers do not promise them.
-- - A denied call that promises no retry time (retry_after NULL) sends no
--   Retry-After.
-- - fw_postgrest checks response.headers exactly as PostgREST reads it, an
--   array of objects each with one header name and a string value, before
--   it spends: 1.2.1 took [{"A": "1", "B": "2"}] or [{"A": 1}], spent, and
--   PostgREST then failed the request (PGRST111).

-- A name as an HTTP structured-field string (RFC 8941): printable ASCII in
-- double quotes, with " and \ escaped.
CREATE OR REPLACE FUNCTION fw_sf_string(name text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF name !~ '^[ -~]*$' THEN
        RAISE EXCEPTION 'limit name "%" cannot be sent in an HTTP header', name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Header values hold printable ASCII characters only.',
                  HINT = 'Give fw_headers a name of printable ASCII characters.';
    END IF;
    RETURN '"' || replace(replace(name, '\', '\\'), '"', '\"') || '"';
END $$;

COMMENT ON FUNCTION fw_sf_string(text) IS
'name as an HTTP structured-field string: quoted, with " and \ escaped; printable ASCII only (used by fw_headers)';

-- Seconds as HTTP headers count them: whole seconds, rounded up.
CREATE OR REPLACE FUNCTION fw_header_seconds(span interval)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ceil(extract(epoch FROM span))::bigint::text;

COMMENT ON FUNCTION fw_header_seconds(interval) IS
'span in whole seconds, rounded up, as HTTP headers count time (used by fw_headers)';

-- The headers of a call from its windows, as fw_limit_windows returns them.
-- Shadow windows are not advertised: they never deny.  X-RateLimit-* follow
-- what fw_limit answers: the most restrictive window (fewest tokens left,
-- then the longest wait); Retry-After is the latest retry of the windows
-- that denied, when each of them promises one.
CREATE OR REPLACE FUNCTION fw_headers(name text, windows fw_window_result[])
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    n integer;
    bad boolean;
    policy text;
    state text;
    tightest record;
    retry interval;
    no_promise boolean;
    denied boolean;
    headers jsonb;
BEGIN
    PERFORM @extschema@.fw_sf_string(name);
    IF name IS NULL OR windows IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', CASE WHEN name IS NULL THEN 'name' ELSE 'windows' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    -- a window allowed without rate or period is a router's answer for a
    -- shard it could not reach, failing open: it has nothing to advertise
    SELECT count(*) FILTER (WHERE u.rate IS NOT NULL AND u.period IS NOT NULL),
           bool_or(u.ok IS NULL OR (NOT u.ok AND (u.rate IS NULL OR u.period IS NULL)))
      INTO n, bad
      FROM unnest(windows) AS u
     WHERE NOT coalesce(u.shadow, false);
    IF bad THEN
        RAISE EXCEPTION 'a window of the call has no verdict, rate or period'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'fw_headers reads the rows fw_limit_windows returns, or one built from fw_limit''s answer.';
    END IF;
    IF n = 0 THEN
        RETURN '{}';                -- nothing enforced: nothing to advertise
    END IF;

    -- one item per window: "name", or "name/PT60S" when there are several;
    -- what is left is never more than the window's quota
    SELECT string_agg(i.item || ';q=' || i.rate || ';w=' || @extschema@.fw_header_seconds(i.period),
                      ', ' ORDER BY i.ord),
           string_agg(i.item || ';r=' || least(i.remaining, i.rate) || ';t='
                      || @extschema@.fw_header_seconds(i.reset_after), ', ' ORDER BY i.ord)
               FILTER (WHERE i.remaining IS NOT NULL AND i.reset_after IS NOT NULL),
           max(i.retry_after) FILTER (WHERE NOT i.ok),
           coalesce(bool_or(NOT i.ok AND i.retry_after IS NULL), false),
           bool_or(NOT i.ok)
      INTO policy, state, retry, no_promise, denied
      FROM (SELECT u.*, @extschema@.fw_sf_string(CASE WHEN n > 1
                            THEN name || '/' || @extschema@.fw_header_window_id(name, 1, u.period)
                            ELSE name END) AS item
            FROM unnest(windows) WITH ORDINALITY AS u(period, rate, capacity, shadow, ok, retry_after,
                                                      remaining, reset_after, window_start, window_end, ord)
            WHERE NOT coalesce(u.shadow, false) AND u.rate IS NOT NULL AND u.period IS NOT NULL) AS i;

    SELECT u.rate, u.remaining, u.reset_after INTO tightest
      FROM unnest(windows) AS u
     WHERE NOT coalesce(u.shadow, false) AND u.rate IS NOT NULL AND u.period IS NOT NULL
     ORDER BY u.remaining NULLS LAST, u.reset_after DESC NULLS LAST
     LIMIT 1;

    headers := jsonb_build_object('RateLimit-Policy', policy, 'X-RateLimit-Limit', tightest.rate::text);
    IF state IS NOT NULL THEN
        headers := headers || jsonb_build_object('RateLimit', state);
    END IF;
    IF tightest.remaining IS NOT NULL THEN
        headers := headers || jsonb_build_object('X-RateLimit-Remaining',
                                                 least(tightest.remaining, tightest.rate)::text);
    END IF;
    IF tightest.reset_after IS NOT NULL THEN
        headers := headers || jsonb_build_object('X-RateLimit-Reset', @extschema@.fw_header_seconds(tightest.reset_after));
    END IF;
    IF denied AND NOT no_promise AND retry IS NOT NULL THEN
        headers := headers || jsonb_build_object('Retry-After', @extschema@.fw_header_seconds(retry));
    END IF;
    RETURN headers;
END $$;

COMMENT ON FUNCTION fw_headers(text, fw_window_result[]) IS
'the HTTP headers of a call of policy name from its windows (fw_limit_windows): RateLimit-Policy and RateLimit (IETF draft, an item per enforced window, r never above q), X-RateLimit-Limit, -Remaining (never above the limit) and -Reset (seconds from now, not an epoch) of the most restrictive window, Retry-After (seconds) when denied with a retry time';

CREATE OR REPLACE FUNCTION fw_headers(result fw_result, rate integer, period interval, name text DEFAULT 'default')
RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_header_window_id(name, rate, period);
    IF result IS NULL OR result.ok IS NULL THEN
        RAISE EXCEPTION 'argument "result" must not be null'
            USING ERRCODE = 'null_value_not_allowed',
                  DETAIL = 'fw_headers needs the answer of fw_limit or fw_check.';
    END IF;
    RETURN @extschema@.fw_headers(name, ARRAY[ROW(period, rate, NULL, false, result.ok, result.retry_after,
                                                  result.remaining, result.reset_after, NULL, NULL)
                                              ::@extschema@.fw_window_result]);
END $$;

COMMENT ON FUNCTION fw_headers(fw_result, integer, interval, text) IS
'the HTTP headers of an inline call''s answer result, for rate tokens per period, its policy item named name';

-- PostgREST: limit a request from its db-pre-request function.  Allowed, the
-- headers go to PostgREST through response.headers; denied, the request
-- ends with HTTP 429 and the same headers, by the SQLSTATE PGRST whose
-- message and detail PostgREST turns into the response (PT429 alone sets
-- the status, but PostgREST drops response.headers when the request
-- fails, so Retry-After would be lost).  Everything that could fail is
-- checked before anything is spent.
CREATE OR REPLACE FUNCTION fw_postgrest(name text, key text, cost integer DEFAULT 1)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting text := nullif(current_setting('response.headers', true), '');
    earlier jsonb;
    windows @extschema@.fw_window_result[];
    denied boolean;
    headers jsonb;
BEGIN
    PERFORM @extschema@.fw_sf_string(name);
    BEGIN
        earlier := coalesce(setting, '[]')::jsonb;
    EXCEPTION WHEN invalid_text_representation OR untranslatable_character THEN
        earlier := NULL;
    END;
    -- what PostgREST accepts: an array of objects of one string each
    IF earlier IS NULL OR jsonb_typeof(earlier) <> 'array'
       OR EXISTS (SELECT FROM jsonb_array_elements(earlier) AS e
                  WHERE jsonb_typeof(e) <> 'object'
                     OR (SELECT count(*) FROM jsonb_each(e)) <> 1
                     OR EXISTS (SELECT FROM jsonb_each(e) AS h WHERE jsonb_typeof(h.value) <> 'string')) THEN
        RAISE EXCEPTION 'response.headers is not a JSON array of header objects'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('response.headers is %s. PostgREST takes an array of objects, each with exactly one header name and a string value, and fails the request otherwise.', setting),
                  HINT = 'Set response.headers as PostgREST reads it, such as [{"Cache-Control": "no-store"}, {"Vary": "Accept"}].';
    END IF;

    windows := ARRAY(SELECT w FROM @extschema@.fw_limit_windows(name, key, cost) AS w);
    denied := EXISTS (SELECT FROM unnest(windows) AS w WHERE NOT w.ok AND NOT coalesce(w.shadow, false));
    -- The error below rolls back what this transaction wrote.  On the table
    -- backend, that includes the counter a denial creates for a key that
    -- has none, which gathers the tokens a cost above the rate needs: the
    -- retry time would not be kept, and none is sent.
    IF denied AND @extschema@.fw_storage_in_use() = 'table'
       AND EXISTS (SELECT FROM unnest(windows) AS w
                   WHERE NOT w.ok AND NOT coalesce(w.shadow, false) AND cost > w.rate) THEN
        windows := ARRAY(SELECT ROW(w.period, w.rate, w.capacity, w.shadow, w.ok,
                                    CASE WHEN w.ok THEN w.retry_after END, w.remaining, w.reset_after,
                                    w.window_start, w.window_end)::@extschema@.fw_window_result
                         FROM unnest(windows) WITH ORDINALITY AS w
                         ORDER BY w.ordinality);
    END IF;
    headers := @extschema@.fw_headers(name, windows);
    IF denied THEN
        RAISE SQLSTATE 'PGRST' USING
            MESSAGE = json_build_object(
                'code', 'PT429',
                'message', format('rate limit "%s" exceeded', name),
                'details', CASE WHEN headers ? 'Retry-After'
                                THEN format('The request may be repeated in %s seconds.', headers->>'Retry-After')
                                ELSE 'No time can be promised for repeating the request.' END,
                'hint', NULL)::text,
            DETAIL = json_build_object('status', 429, 'headers', headers)::text;
    END IF;
    -- keep the headers set before, then add ours, one object each
    PERFORM set_config('response.headers',
        (SELECT coalesce(jsonb_agg(h ORDER BY part, o), '[]')::text
         FROM (SELECT 1, e.h, e.o FROM jsonb_array_elements(earlier) WITH ORDINALITY AS e(h, o)
               UNION ALL
               SELECT 2, jsonb_build_object(e.key, e.value), row_number() OVER ()
               FROM jsonb_each_text(headers) AS e) AS all_headers(part, h, o)),
        true);
END $$;

COMMENT ON FUNCTION fw_postgrest(text, text, integer) IS
'for a PostgREST db-pre-request function: spend cost tokens of policy name for key; allowed, add the rate-limit headers to response.headers; denied, end the request with HTTP 429 and those headers (SQLSTATE PGRST)';
