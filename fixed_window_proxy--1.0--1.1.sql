/* fixed_window_proxy--1.0--1.1.sql: answers that depend on no setting, calls that survive a shard's restart, fw_headers and fw_postgrest */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window_proxy UPDATE TO '1.1'" to load this file. \quit

-- The shards must run fixed_window 1.3 or later (fw_interval_iso), in the
-- schema the router's extension is in: routed statements name its functions
-- qualified by it.

--
-- Values on the wire.  PL/Proxy moves every value as text, written with the
-- settings of the session that writes it and read with those of the session
-- that reads it: 1.0 read a shard's "01/11/2026" under DateStyle 'SQL, DMY'
-- as the 11th of January.  Now the router writes its timestamps and
-- intervals with settings of its own (ISO, iso_8601, UTC: the SET clauses
-- of the functions that send them), which every session reads alike, and
-- the shards answer in numbers and ISO 8601 text, which depend on no
-- setting: a time as seconds since the Unix epoch ('Infinity' for
-- infinity), a duration as seconds, a period as fixed_window's
-- fw_interval_iso writes it.  The router turns them back into timestamps and
-- intervals exactly.
--

-- A duration of seconds, exact to the microsecond, as hours, minutes and
-- seconds (no days, as fixed_window answers durations).
CREATE FUNCTION fw_wire_span(seconds numeric)
RETURNS interval
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.format('PT%sH%sM%sS', pg_catalog.div(seconds, 3600),
                         pg_catalog.div(pg_catalog.mod(seconds, 3600), 60),
                         pg_catalog.mod(seconds, 60))::pg_catalog.interval;

COMMENT ON FUNCTION fw_wire_span(numeric) IS
'seconds as an exact interval of hours, minutes and seconds (a shard''s answer, read on the router)';

-- A time of seconds since the Unix epoch.
CREATE FUNCTION fw_wire_time(epoch numeric)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN epoch IS NULL THEN NULL
            WHEN pg_catalog.numeric_eq(epoch, 'Infinity') THEN 'infinity'::pg_catalog.timestamptz
            WHEN pg_catalog.numeric_eq(epoch, '-Infinity') THEN '-infinity'::pg_catalog.timestamptz
            ELSE pg_catalog.timestamptz_pl_interval(pg_catalog.to_timestamp(0), @extschema@.fw_wire_span(epoch)) END;

COMMENT ON FUNCTION fw_wire_time(numeric) IS
'seconds since the Unix epoch as an exact timestamptz, Infinity as infinity (a shard''s answer, read on the router)';

-- A shard's answer to a call, and to one window of a policy's call; started
-- is when the shard's server started (pg_postmaster_start_time).
CREATE TYPE fw_wire_result AS (
    ok boolean, retry_after numeric, remaining integer, reset_after numeric, started numeric);
CREATE TYPE fw_wire_window AS (
    period text, rate integer, capacity integer, shadow boolean, ok boolean,
    retry_after numeric, remaining integer, reset_after numeric,
    window_start numeric, window_end numeric, started numeric);
CREATE TYPE fw_wire_refund AS (remaining integer, started numeric);

CREATE FUNCTION fw_wire_answer(w fw_wire_result)
RETURNS fw_result
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ROW(w.ok, @extschema@.fw_wire_span(w.retry_after), w.remaining,
           @extschema@.fw_wire_span(w.reset_after))::@extschema@.fw_result;

CREATE FUNCTION fw_wire_answer(w fw_wire_window)
RETURNS fw_window_result
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ROW(w.period::pg_catalog.interval, w.rate, w.capacity, w.shadow, w.ok,
           @extschema@.fw_wire_span(w.retry_after), w.remaining, @extschema@.fw_wire_span(w.reset_after),
           @extschema@.fw_wire_time(w.window_start), @extschema@.fw_wire_time(w.window_end))
       ::@extschema@.fw_window_result;

--
-- Restarts.  PL/Proxy keeps a connection to each shard per router session.
-- When a shard restarts, the connection is dead; PL/Proxy notices only when
-- it has been idle for two seconds, and otherwise sends the next call on it,
-- which fails with the shard's SQLSTATE 57P01 ("terminating connection due
-- to administrator command"): every router session failed one call after a
-- restart in 1.0.  A call is sent once more on a new connection when it
-- certainly did not run, or it does not matter that it ran:
--
-- - 57P05 (idle_session_timeout) ends idle connections only;
-- - 57P02 (the shard crashed) loses the shard's counters anyway;
-- - 57P01 ends a call that spends nothing, or was sent on a connection a
--   restart had ended: the shard's start time is new to the session.  A
--   call running when the shard began to shut down finds the shard down
--   when sent again (the shard is down); one ended by pg_terminate_backend
--   may have spent, and fails with 08006 instead (the shard's start time is
--   one the session has seen).
--
-- The start times a session saw, in the placeholder setting
-- fixed_window_proxy.started: any role may change its own, which only
-- decides whether its own calls are sent again.
--

CREATE FUNCTION fw_seen(started numeric)
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    seen text := coalesce(current_setting('fixed_window_proxy.started', true), '');
BEGIN
    IF started IS NOT NULL AND position(' ' || started || ' ' IN seen) = 0 THEN
        PERFORM set_config('fixed_window_proxy.started', right(seen, 1000) || ' ' || started || ' ', false);
    END IF;
END $$;

COMMENT ON FUNCTION fw_seen(numeric) IS
'remember that the session reached a shard started at that time (used by the router''s calls)';

CREATE FUNCTION fw_route_started(shard integer)
RETURNS numeric
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON shard;
    SELECT EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()) AS started;
$$;

-- Whether a call of (name, key) that its shard ended with sqlstate is sent
-- once more (spends: it spends or gives tokens back).
CREATE FUNCTION fw_may_retry(name text, key text, sqlstate text, spends boolean)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    started numeric;
BEGIN
    IF sqlstate IN ('57P02', '57P05') OR (sqlstate = '57P01' AND NOT spends) THEN
        RETURN true;
    END IF;
    IF sqlstate <> '57P01' THEN
        RETURN false;
    END IF;
    BEGIN
        started := @extschema@.fw_route_started(
            @extschema@.fw_shard(name, key, @extschema@.fw_shard_count()));
    EXCEPTION WHEN internal_error THEN
        RETURN true;            -- the shard is down: the call finds it so
    END;
    RETURN position(' ' || started || ' ' IN
                    coalesce(current_setting('fixed_window_proxy.started', true), '')) = 0;
END $$;

-- A call of (name, key) its shard ended, and that is not sent again.
CREATE FUNCTION fw_key_ended(name text, key text, sqlstate text, message text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shard integer := @extschema@.fw_shard(name, key, @extschema@.fw_shard_count());
BEGIN
    RAISE EXCEPTION 'connection to shard % of the router ended during the call', shard
        USING ERRCODE = 'connection_failure',
              DETAIL = format('The shard ended the router''s connection with SQLSTATE %s (%s). The call may have been counted there before it ended.',
                              sqlstate, regexp_replace(btrim(message, E' \n'), '\s*\n\s*', ' ', 'g')),
              HINT = 'Repeat the call if it must be made. A restart of the shard does not end calls this way: the router sends them again.';
END $$;

--
-- The routed statements, with every name qualified: a role's search_path on
-- a shard no longer decides which function a call reaches (in 1.0,
-- search_path = '' on a shard failed every call with 42883).
--

DROP FUNCTION fw_route_limit(text, text, integer, interval, timestamptz, integer, integer);
DROP FUNCTION fw_route_check(text, text, integer, interval, timestamptz, integer, integer);
DROP FUNCTION fw_route_limit(text, text, integer);
DROP FUNCTION fw_route_check(text, text, integer);
DROP FUNCTION fw_route_limit_windows(text, text, integer);
DROP FUNCTION fw_route_check_windows(text, text, integer);
DROP FUNCTION fw_route_refund(text, text, integer);
DROP FUNCTION fw_route_refund(text, text, integer, interval, timestamptz, integer, integer);

CREATE FUNCTION fw_route_limit(name text, key text, rate integer, period interval,
                               start timestamptz, cost integer, capacity integer)
RETURNS fw_wire_result
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    SELECT r.ok, EXTRACT(epoch FROM r.retry_after) AS retry_after, r.remaining,
           EXTRACT(epoch FROM r.reset_after) AS reset_after,
           EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()) AS started
    FROM @extschema@.fw_limit(name, key, rate, period, start, cost, capacity) AS r;
$$;

CREATE FUNCTION fw_route_check(name text, key text, rate integer, period interval,
                               start timestamptz, cost integer, capacity integer)
RETURNS fw_wire_result
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    SELECT r.ok, EXTRACT(epoch FROM r.retry_after) AS retry_after, r.remaining,
           EXTRACT(epoch FROM r.reset_after) AS reset_after,
           EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()) AS started
    FROM @extschema@.fw_check(name, key, rate, period, start, cost, capacity) AS r;
$$;

CREATE FUNCTION fw_route_limit(name text, key text, cost integer)
RETURNS fw_wire_result
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    SELECT r.ok, EXTRACT(epoch FROM r.retry_after) AS retry_after, r.remaining,
           EXTRACT(epoch FROM r.reset_after) AS reset_after,
           EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()) AS started
    FROM @extschema@.fw_limit(name, key, cost) AS r;
$$;

CREATE FUNCTION fw_route_check(name text, key text, cost integer)
RETURNS fw_wire_result
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    SELECT r.ok, EXTRACT(epoch FROM r.retry_after) AS retry_after, r.remaining,
           EXTRACT(epoch FROM r.reset_after) AS reset_after,
           EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()) AS started
    FROM @extschema@.fw_check(name, key, cost) AS r;
$$;

CREATE FUNCTION fw_route_limit_windows(name text, key text, cost integer)
RETURNS SETOF fw_wire_window
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    SELECT @extschema@.fw_interval_iso(w.period) AS period,
           w.rate, w.capacity, w.shadow, w.ok, EXTRACT(epoch FROM w.retry_after) AS retry_after,
           w.remaining, EXTRACT(epoch FROM w.reset_after) AS reset_after,
           EXTRACT(epoch FROM w.window_start) AS window_start, EXTRACT(epoch FROM w.window_end) AS window_end,
           EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()) AS started
    FROM @extschema@.fw_limit_windows(name, key, cost) AS w;
$$;

CREATE FUNCTION fw_route_check_windows(name text, key text, cost integer)
RETURNS SETOF fw_wire_window
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    SELECT @extschema@.fw_interval_iso(w.period) AS period,
           w.rate, w.capacity, w.shadow, w.ok, EXTRACT(epoch FROM w.retry_after) AS retry_after,
           w.remaining, EXTRACT(epoch FROM w.reset_after) AS reset_after,
           EXTRACT(epoch FROM w.window_start) AS window_start, EXTRACT(epoch FROM w.window_end) AS window_end,
           EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()) AS started
    FROM @extschema@.fw_check_windows(name, key, cost) AS w;
$$;

CREATE FUNCTION fw_route_refund(name text, key text, cost integer)
RETURNS fw_wire_refund
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    SELECT @extschema@.fw_refund(name, key, cost) AS remaining,
           EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()) AS started;
$$;

CREATE FUNCTION fw_route_refund(name text, key text, rate integer, period interval,
                                start timestamptz, cost integer, capacity integer)
RETURNS fw_wire_refund
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    SELECT @extschema@.fw_refund(name, key, rate, period, start, cost, capacity) AS remaining,
           EXTRACT(epoch FROM pg_catalog.pg_postmaster_start_time()) AS started;
$$;

CREATE OR REPLACE FUNCTION fw_route_reset(name text, key text)
RETURNS bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    SELECT @extschema@.fw_reset(name, key);
$$;

CREATE OR REPLACE FUNCTION fw_route_all_reset(name text)
RETURNS SETOF bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON ALL;
    SELECT @extschema@.fw_reset(name, NULL);
$$;

CREATE OR REPLACE FUNCTION fw_route_all_gc()
RETURNS SETOF bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON ALL;
    SELECT @extschema@.fw_gc();
$$;

CREATE OR REPLACE FUNCTION fw_route_all_stats_reset()
RETURNS SETOF integer
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON ALL;
    SELECT 1 FROM @extschema@.fw_stats_reset();
$$;

CREATE OR REPLACE FUNCTION fw_route_definition(shard integer, op text, name text, key text, rate integer,
                                               period interval, start timestamptz, capacity integer,
                                               shadow boolean, comment text)
RETURNS integer
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON shard;
    SELECT CASE WHEN op OPERATOR(pg_catalog.=) 'define'
                THEN (SELECT 1 FROM @extschema@.fw_define(name, rate, period, start, capacity, shadow, comment))
                WHEN op OPERATOR(pg_catalog.=) 'undefine' THEN @extschema@.fw_undefine(name, period)
                WHEN op OPERATOR(pg_catalog.=) 'override'
                THEN (SELECT 1 FROM @extschema@.fw_override(name, key, rate, period, capacity))
                WHEN op OPERATOR(pg_catalog.=) 'exempt' THEN (SELECT 1 FROM @extschema@.fw_exempt(name, key))
                WHEN op OPERATOR(pg_catalog.=) 'unoverride' THEN @extschema@.fw_unoverride(name, key, period)
                END;
$$;

--
-- The extension's calls, on the router.  A lost shard raises 08001 or 08006
-- naming it (with fw_router.fail_open, fw_limit and fw_check answer ok); a
-- call its shard ended is sent again as above, else fails with 08006.  The
-- functions that send timestamps or intervals write them in ISO formats,
-- whatever the caller's settings.
--

CREATE OR REPLACE FUNCTION fw_limit(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS fw_result
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET DateStyle = 'ISO, YMD'
SET IntervalStyle = 'iso_8601'
SET TimeZone = 'UTC'
AS $$
DECLARE
    w @extschema@.fw_wire_result;
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            w := @extschema@.fw_route_limit($1, $2, $3, $4, $5, $6, $7);
            PERFORM @extschema@.fw_seen(w.started);
            RETURN @extschema@.fw_wire_answer(w);
        EXCEPTION
            WHEN internal_error THEN
                IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
                    RAISE;
                END IF;
                RETURN ROW(true, NULL, NULL, NULL)::@extschema@.fw_result;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 OR NOT @extschema@.fw_may_retry($1, $2, SQLSTATE, true) THEN
                    PERFORM @extschema@.fw_key_ended($1, $2, SQLSTATE, SQLERRM);
                END IF;
        END;
    END LOOP;
END $$;

COMMENT ON FUNCTION fw_limit(text, text, integer, interval, timestamptz, integer, integer) IS
'fixed_window''s fw_limit on the shard of (name, key)';

CREATE OR REPLACE FUNCTION fw_check(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS fw_result
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET DateStyle = 'ISO, YMD'
SET IntervalStyle = 'iso_8601'
SET TimeZone = 'UTC'
AS $$
DECLARE
    w @extschema@.fw_wire_result;
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            w := @extschema@.fw_route_check($1, $2, $3, $4, $5, $6, $7);
            PERFORM @extschema@.fw_seen(w.started);
            RETURN @extschema@.fw_wire_answer(w);
        EXCEPTION
            WHEN internal_error THEN
                IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
                    RAISE;
                END IF;
                RETURN ROW(true, NULL, NULL, NULL)::@extschema@.fw_result;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 OR NOT @extschema@.fw_may_retry($1, $2, SQLSTATE, false) THEN
                    PERFORM @extschema@.fw_key_ended($1, $2, SQLSTATE, SQLERRM);
                END IF;
        END;
    END LOOP;
END $$;

COMMENT ON FUNCTION fw_check(text, text, integer, interval, timestamptz, integer, integer) IS
'fixed_window''s fw_check on the shard of (name, key)';

CREATE OR REPLACE FUNCTION fw_limit(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    w @extschema@.fw_wire_result;
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            w := @extschema@.fw_route_limit($1, $2, $3);
            PERFORM @extschema@.fw_seen(w.started);
            RETURN @extschema@.fw_wire_answer(w);
        EXCEPTION
            WHEN internal_error THEN
                IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
                    RAISE;
                END IF;
                RETURN ROW(true, NULL, NULL, NULL)::@extschema@.fw_result;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 OR NOT @extschema@.fw_may_retry($1, $2, SQLSTATE, true) THEN
                    PERFORM @extschema@.fw_key_ended($1, $2, SQLSTATE, SQLERRM);
                END IF;
        END;
    END LOOP;
END $$;

COMMENT ON FUNCTION fw_limit(text, text, integer) IS
'fixed_window''s fw_limit of policy name on the shard of (name, key)';

CREATE OR REPLACE FUNCTION fw_check(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    w @extschema@.fw_wire_result;
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            w := @extschema@.fw_route_check($1, $2, $3);
            PERFORM @extschema@.fw_seen(w.started);
            RETURN @extschema@.fw_wire_answer(w);
        EXCEPTION
            WHEN internal_error THEN
                IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
                    RAISE;
                END IF;
                RETURN ROW(true, NULL, NULL, NULL)::@extschema@.fw_result;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 OR NOT @extschema@.fw_may_retry($1, $2, SQLSTATE, false) THEN
                    PERFORM @extschema@.fw_key_ended($1, $2, SQLSTATE, SQLERRM);
                END IF;
        END;
    END LOOP;
END $$;

COMMENT ON FUNCTION fw_check(text, text, integer) IS
'fixed_window''s fw_check of policy name on the shard of (name, key)';

CREATE OR REPLACE FUNCTION fw_limit_windows(name text, key text, cost integer DEFAULT 1)
RETURNS SETOF fw_window_result
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    w @extschema@.fw_wire_window;
    started numeric;
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            -- the rows come once the shard has answered them all
            FOR w IN SELECT * FROM @extschema@.fw_route_limit_windows($1, $2, $3) LOOP
                started := w.started;
                RETURN NEXT @extschema@.fw_wire_answer(w);
            END LOOP;
            PERFORM @extschema@.fw_seen(started);
            RETURN;
        EXCEPTION
            WHEN internal_error THEN
                IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
                    RAISE;
                END IF;
                RETURN NEXT ROW(NULL, NULL, NULL, NULL, true, NULL, NULL, NULL, NULL, NULL)::@extschema@.fw_window_result;
                RETURN;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 OR NOT @extschema@.fw_may_retry($1, $2, SQLSTATE, true) THEN
                    PERFORM @extschema@.fw_key_ended($1, $2, SQLSTATE, SQLERRM);
                END IF;
        END;
    END LOOP;
END $$;

COMMENT ON FUNCTION fw_limit_windows(text, text, integer) IS
'fixed_window''s fw_limit_windows on the shard of (name, key); with fail_open and the shard lost, one row: ok, nothing else known';

CREATE OR REPLACE FUNCTION fw_check_windows(name text, key text, cost integer DEFAULT 1)
RETURNS SETOF fw_window_result
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    w @extschema@.fw_wire_window;
    started numeric;
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            FOR w IN SELECT * FROM @extschema@.fw_route_check_windows($1, $2, $3) LOOP
                started := w.started;
                RETURN NEXT @extschema@.fw_wire_answer(w);
            END LOOP;
            PERFORM @extschema@.fw_seen(started);
            RETURN;
        EXCEPTION
            WHEN internal_error THEN
                IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
                    RAISE;
                END IF;
                RETURN NEXT ROW(NULL, NULL, NULL, NULL, true, NULL, NULL, NULL, NULL, NULL)::@extschema@.fw_window_result;
                RETURN;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 OR NOT @extschema@.fw_may_retry($1, $2, SQLSTATE, false) THEN
                    PERFORM @extschema@.fw_key_ended($1, $2, SQLSTATE, SQLERRM);
                END IF;
        END;
    END LOOP;
END $$;

COMMENT ON FUNCTION fw_check_windows(text, text, integer) IS
'fixed_window''s fw_check_windows on the shard of (name, key); with fail_open and the shard lost, one row: ok, nothing else known';

-- A refund admits nothing, so a lost shard always fails it; it gives tokens
-- back, so it is sent again only as a call that spends is.
CREATE OR REPLACE FUNCTION fw_refund(name text, key text, cost integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    w @extschema@.fw_wire_refund;
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            w := @extschema@.fw_route_refund($1, $2, $3);
            PERFORM @extschema@.fw_seen(w.started);
            RETURN w.remaining;
        EXCEPTION
            WHEN internal_error THEN
                PERFORM @extschema@.fw_key_down($1, $2, SQLERRM, false);
                RAISE;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 OR NOT @extschema@.fw_may_retry($1, $2, SQLSTATE, true) THEN
                    PERFORM @extschema@.fw_key_ended($1, $2, SQLSTATE, SQLERRM);
                END IF;
        END;
    END LOOP;
END $$;

COMMENT ON FUNCTION fw_refund(text, text, integer) IS
'fixed_window''s fw_refund of policy name on the shard of (name, key)';

CREATE OR REPLACE FUNCTION fw_refund(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET DateStyle = 'ISO, YMD'
SET IntervalStyle = 'iso_8601'
SET TimeZone = 'UTC'
AS $$
DECLARE
    w @extschema@.fw_wire_refund;
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            w := @extschema@.fw_route_refund($1, $2, $3, $4, $5, $6, $7);
            PERFORM @extschema@.fw_seen(w.started);
            RETURN w.remaining;
        EXCEPTION
            WHEN internal_error THEN
                PERFORM @extschema@.fw_key_down($1, $2, SQLERRM, false);
                RAISE;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 OR NOT @extschema@.fw_may_retry($1, $2, SQLSTATE, true) THEN
                    PERFORM @extschema@.fw_key_ended($1, $2, SQLSTATE, SQLERRM);
                END IF;
        END;
    END LOOP;
END $$;

COMMENT ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) IS
'fixed_window''s inline fw_refund on the shard of (name, key)';

-- Refunds are not for everyone (as in fixed_window 1.3): grant them to the
-- roles that reserve tokens.
REVOKE ALL ON FUNCTION
    fw_refund(text, text, integer),
    fw_refund(text, text, integer, interval, timestamptz, integer, integer),
    fw_route_refund(text, text, integer),
    fw_route_refund(text, text, integer, interval, timestamptz, integer, integer)
FROM PUBLIC;

-- Definitions and resets: a statement its shard ended is sent again (every
-- definition function can be repeated); the values it carries are written
-- in ISO formats.
CREATE OR REPLACE FUNCTION fw_each_shard(op text, name text, key text, rate integer, period interval,
                                         start timestamptz, capacity integer, shadow boolean, comment text)
RETURNS integer[]
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET DateStyle = 'ISO, YMD'
SET IntervalStyle = 'iso_8601'
SET TimeZone = 'UTC'
AS $$
DECLARE
    s integer;
    answers integer[] := '{}';
BEGIN
    FOR s IN SELECT generate_series(0, @extschema@.fw_shard_count() - 1) LOOP
        FOR attempt IN 1 .. 2 LOOP
            BEGIN
                answers := answers || @extschema@.fw_route_definition(s, op, name, key, rate, period,
                                                                      start, capacity, shadow, comment);
                EXIT;
            EXCEPTION
                WHEN undefined_object THEN
                    IF op <> 'undefine' THEN
                        RAISE;
                    END IF;
                    answers := answers || NULL::integer;
                    EXIT;
                WHEN internal_error THEN
                    PERFORM @extschema@.fw_shard_down(s, SQLERRM, false, false);
                    RAISE;
                WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                    IF attempt > 1 THEN
                        RAISE;
                    END IF;
            END;
        END LOOP;
    END LOOP;
    RETURN answers;
END $$;

CREATE OR REPLACE FUNCTION fw_reset(name text, key text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            IF $2 IS NOT NULL THEN
                RETURN @extschema@.fw_route_reset($1, $2);
            END IF;
            RETURN (SELECT coalesce(sum(n), 0)::bigint FROM @extschema@.fw_route_all_reset($1) AS n);
        EXCEPTION
            WHEN internal_error THEN
                PERFORM @extschema@.fw_shard_down(CASE WHEN $2 IS NOT NULL
                                                       THEN @extschema@.fw_shard($1, $2, @extschema@.fw_shard_count()) END,
                                                  SQLERRM, false, $2 IS NOT NULL);
                RAISE;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 THEN
                    RAISE;
                END IF;
        END;
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION fw_gc()
RETURNS bigint
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            RETURN (SELECT coalesce(sum(n), 0)::bigint FROM @extschema@.fw_route_all_gc() AS n);
        EXCEPTION
            WHEN internal_error THEN
                PERFORM @extschema@.fw_shard_down(NULL, SQLERRM, false, false);
                RAISE;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 THEN
                    RAISE;
                END IF;
        END;
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION fw_stats_reset()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            PERFORM count(*) FROM @extschema@.fw_route_all_stats_reset();
            RETURN;
        EXCEPTION
            WHEN internal_error THEN
                PERFORM @extschema@.fw_shard_down(NULL, SQLERRM, false, false);
                RAISE;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 THEN
                    RAISE;
                END IF;
        END;
    END LOOP;
END $$;

-- The router's own helpers read nothing through the caller's search_path.
ALTER FUNCTION fw_shard_count() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fw_first_lost_shard() SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION fw_shard_down(integer, text, boolean, boolean) SET search_path = pg_catalog, pg_temp;

--
-- The views of every shard: the shards answer in numbers and ISO text, and
-- the views that carry what fixed_window hides from a role (keys) are
-- security barriers, as fixed_window's are.
--

DROP VIEW fw_counters;
DROP VIEW fw_stats;
DROP VIEW fw_policies;
DROP VIEW fw_overrides;
DROP FUNCTION fw_route_counters(integer[]);
DROP FUNCTION fw_route_stats(integer[]);
DROP FUNCTION fw_route_policies(integer[]);
DROP FUNCTION fw_route_overrides(integer[]);
DROP TYPE fw_shard_counter;
DROP TYPE fw_shard_stat;
DROP TYPE fw_shard_policy;
DROP TYPE fw_shard_override;

CREATE TYPE fw_shard_counter AS (
    name text, key text, storage text, window_start numeric, window_end numeric,
    remaining integer, rate integer, capacity integer, period text, shard integer);

CREATE FUNCTION fw_route_counters(shards integer[])
RETURNS SETOF fw_shard_counter
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    SPLIT shards;
    RUN ON shards;
    SELECT c.name, c.key, c.storage, EXTRACT(epoch FROM c.window_start) AS window_start,
           EXTRACT(epoch FROM c.window_end) AS window_end, c.remaining, c.rate, c.capacity,
           @extschema@.fw_interval_iso(c.period) AS period,
           (shards)[1] AS shard
    FROM @extschema@.fw_counters AS c;
$$;

CREATE TYPE fw_shard_stat AS (
    name text, calls bigint, allowed bigint, denied bigint, last_denied_at numeric,
    since numeric, shadow_denied bigint, shard integer);

CREATE FUNCTION fw_route_stats(shards integer[])
RETURNS SETOF fw_shard_stat
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    SPLIT shards;
    RUN ON shards;
    SELECT s.name, s.calls, s.allowed, s.denied, EXTRACT(epoch FROM s.last_denied_at) AS last_denied_at,
           EXTRACT(epoch FROM s.since) AS since, s.shadow_denied, (shards)[1] AS shard
    FROM @extschema@.fw_stats AS s;
$$;

CREATE TYPE fw_shard_policy AS (
    name text, period text, rate integer, capacity integer, start numeric,
    shadow boolean, comment text, shard integer);

CREATE FUNCTION fw_route_policies(shards integer[])
RETURNS SETOF fw_shard_policy
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    SPLIT shards;
    RUN ON shards;
    SELECT p.name,
           @extschema@.fw_interval_iso(p.period) AS period,
           p.rate, p.capacity, EXTRACT(epoch FROM p.start) AS start, p.shadow, p.comment,
           (shards)[1] AS shard
    FROM @extschema@.fw_policies AS p;
$$;

CREATE TYPE fw_shard_override AS (
    name text, key text, period text, rate integer, capacity integer, exempt boolean,
    created_by name, shard integer);

CREATE FUNCTION fw_route_overrides(shards integer[])
RETURNS SETOF fw_shard_override
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    SPLIT shards;
    RUN ON shards;
    SELECT o.name, o.key,
           @extschema@.fw_interval_iso(o.period) AS period,
           o.rate, o.capacity, o.exempt, o.created_by, (shards)[1] AS shard
    FROM @extschema@.fw_overrides AS o;
$$;

-- Gathers one of the views above from every shard: kind is counters,
-- stats, policies or overrides; rows is a NULL of the row type.  A gather
-- a shard ended is made again.
CREATE OR REPLACE FUNCTION fw_gather(kind text, rows anyelement)
RETURNS SETOF anyelement
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    shards integer[] := ARRAY(SELECT generate_series(0, @extschema@.fw_shard_count() - 1));
BEGIN
    FOR attempt IN 1 .. 2 LOOP
        BEGIN
            RETURN QUERY EXECUTE format('SELECT * FROM %I.%I($1)', '@extschema@', 'fw_route_' || kind)
                USING shards;
            RETURN;
        EXCEPTION
            WHEN internal_error THEN
                PERFORM @extschema@.fw_shard_down(NULL, SQLERRM, false, false);
                RAISE;
            WHEN admin_shutdown OR crash_shutdown OR idle_session_timeout THEN
                IF attempt > 1 THEN
                    RAISE;
                END IF;
        END;
    END LOOP;
END $$;

CREATE VIEW fw_counters WITH (security_barrier) AS
    SELECT c.name, c.key, c.storage, fw_wire_time(c.window_start) AS window_start,
           fw_wire_time(c.window_end) AS window_end, c.remaining, c.rate, c.capacity,
           c.period::interval AS period, c.shard
    FROM fw_gather('counters', NULL::fw_shard_counter) AS c;
GRANT SELECT ON fw_counters TO PUBLIC;

COMMENT ON VIEW fw_counters IS
'fixed_window''s fw_counters of every shard, with the shard each row is on';

CREATE VIEW fw_stats AS
    SELECT s.name, sum(s.calls)::bigint AS calls, sum(s.allowed)::bigint AS allowed,
           sum(s.denied)::bigint AS denied, max(fw_wire_time(s.last_denied_at)) AS last_denied_at,
           min(fw_wire_time(s.since)) AS since, sum(s.shadow_denied)::bigint AS shadow_denied
    FROM fw_gather('stats', NULL::fw_shard_stat) AS s
    GROUP BY s.name;
GRANT SELECT ON fw_stats TO PUBLIC;

COMMENT ON VIEW fw_stats IS
'fixed_window''s fw_stats summed over every shard';

CREATE VIEW fw_policies AS
    SELECT p.name, p.period::interval AS period, p.rate, p.capacity, fw_wire_time(p.start) AS start,
           p.shadow, p.comment, array_agg(p.shard ORDER BY p.shard) AS shards
    FROM fw_gather('policies', NULL::fw_shard_policy) AS p
    GROUP BY p.name, p.period::interval, p.rate, p.capacity, fw_wire_time(p.start), p.shadow, p.comment;
GRANT SELECT ON fw_policies TO PUBLIC;

COMMENT ON VIEW fw_policies IS
'fixed_window''s fw_policies of every shard, a row per distinct window with the shards holding it: a window missing from a shard, or different there, shows';

CREATE VIEW fw_overrides WITH (security_barrier) AS
    SELECT o.name, o.key, o.period::interval AS period, o.rate, o.capacity, o.exempt, o.created_by,
           array_agg(o.shard ORDER BY o.shard) AS shards
    FROM fw_gather('overrides', NULL::fw_shard_override) AS o
    GROUP BY o.name, o.key, o.period::interval, o.rate, o.capacity, o.exempt, o.created_by;
GRANT SELECT ON fw_overrides TO PUBLIC;

COMMENT ON VIEW fw_overrides IS
'fixed_window''s fw_overrides of every shard, a row per distinct override with the shards holding it';

--
-- HTTP on the router: fw_headers is pure, and fw_postgrest calls the
-- router's fw_limit_windows; both are fixed_window's text (below).  What
-- they need of a name, a rate and a period is checked here in SQL as
-- fixed_window checks it in C: the router loads no library.
--

-- Where the router's calls keep their counters: on the shards, whose
-- transactions commit on their own, so that an error on the router rolls
-- back no counter (fw_postgrest asks).
CREATE FUNCTION fw_storage_in_use()
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 'shards';

COMMENT ON FUNCTION fw_storage_in_use() IS
'where the router''s calls keep their counters: shards, each in a transaction of its own';

CREATE FUNCTION fw_header_window_id(name text, rate integer, period interval)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    months numeric;
    days numeric;
    seconds numeric;
    span numeric;
BEGIN
    IF name IS NULL OR rate IS NULL OR period IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null',
            CASE WHEN name IS NULL THEN 'name' WHEN rate IS NULL THEN 'rate' ELSE 'period' END
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF octet_length(name) > 256 THEN
        RAISE EXCEPTION 'argument "name" is too long'
            USING ERRCODE = 'program_limit_exceeded',
                  DETAIL = format('The value is %s bytes; at most 256 bytes are allowed.', octet_length(name)),
                  HINT = 'Pass a shorter value, for example a digest such as md5() of it.';
    END IF;
    IF rate <= 0 THEN
        RAISE EXCEPTION 'rate must be greater than zero'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The rate given was %s.', rate);
    END IF;
    months := extract(year FROM period) * 12 + extract(month FROM period);
    days := extract(day FROM period);
    seconds := extract(hour FROM period) * 3600 + extract(minute FROM period) * 60 + extract(second FROM period);
    span := days * 86400 + seconds;
    IF (months = 0 AND span <= 0) OR (months > 0 AND (days < 0 OR seconds < 0))
       OR abs(span) * 1000000 > 9223372036854775807 THEN
        RAISE EXCEPTION 'period must be a positive interval'
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = format('The period given was "%s".', period),
                  HINT = 'Use a period such as ''1 minute'', ''1 day'' or ''1 month''. A period with a month or year part must not have a negative day or time part.';
    END IF;
    -- fixed_window's identifier: "P", the months, "T", the rest in seconds
    RETURN 'P' || CASE WHEN months > 0 THEN months || 'M' ELSE '' END
               || CASE WHEN span <> 0 THEN 'T' || trim_scale(span) || 'S' ELSE '' END;
END $$;

COMMENT ON FUNCTION fw_header_window_id(text, integer, interval) IS
'check a name, a rate and a period as fixed_window''s fw_limit does, and return the identifier of the period (used by fw_headers)';

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
