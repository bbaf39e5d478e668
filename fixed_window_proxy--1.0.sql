/* fixed_window_proxy--1.0.sql: the router of fixed_window shards */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION fixed_window_proxy" to load this file. \quit

-- The router holds no counters.  Each call goes, through PL/Proxy, to the one
-- shard that owns its (name, key): partition fw_shard(name, key, n) of the
-- SQL/MED server "fw_shards", whose options p0 .. p(n-1) are the shards'
-- connection strings.  The shards run fixed_window; their answers come back
-- unchanged.  Definitions go to every shard; admin views gather every shard.

-- The answers, as fixed_window defines them.
CREATE TYPE fw_result AS (
    ok boolean,
    retry_after interval,
    remaining integer,
    reset_after interval
);

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

-- The router's one setting.  A table rather than a configuration parameter:
-- the router loads no library of its own, and a parameter without one could
-- be set by any role, which would let it escape its limits while a shard is
-- down.  Only the table's owner (a superuser) may change it.  It is not
-- dumped (its row is created with the extension, so a dumped row would clash
-- on restore): a restored router fails closed until told otherwise.
CREATE TABLE fw_router (
    onerow boolean PRIMARY KEY DEFAULT true CHECK (onerow),
    fail_open boolean NOT NULL DEFAULT false
);
INSERT INTO fw_router DEFAULT VALUES;
REVOKE ALL ON fw_router FROM PUBLIC;
GRANT SELECT ON fw_router TO PUBLIC;

COMMENT ON TABLE fw_router IS
'settings of the router: fail_open: when a shard is unreachable, fw_limit and fw_check of its keys answer ok with a warning instead of failing with SQLSTATE 08001 or 08006';

-- Routing.

CREATE FUNCTION fw_shard_hash(name text, key text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(('x' || substr(md5(octet_length(name)::text || ':' || name || key), 1, 8))::bit(32)::integer
                & 2147483647, 0);

COMMENT ON FUNCTION fw_shard_hash(text, text) IS
'routing hash of (name, key): the first 32 bits of MD5(<bytes of name>:<name><key>) as a big-endian integer, its top bit cleared; 0 when name or key is NULL';

CREATE FUNCTION fw_shard(name text, key text, shard_count integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    IF shard_count IS NULL OR shard_count < 1 THEN
        RAISE EXCEPTION 'shard count must be at least 1'
            USING ERRCODE = CASE WHEN shard_count IS NULL THEN 'null_value_not_allowed'
                                 ELSE 'invalid_parameter_value' END,
                  DETAIL = format('The shard count given is %s.', coalesce(shard_count::text, 'NULL'));
    END IF;
    RETURN @extschema@.fw_shard_hash(name, key) % shard_count;
END $$;

COMMENT ON FUNCTION fw_shard(text, text, integer) IS
'the shard, from 0, that owns (name, key) among shard_count shards: fw_shard_hash(name, key) modulo shard_count, as PL/Proxy maps it';

-- The shards: the options p0, p1, ... of the server fw_shards.
CREATE FUNCTION fw_shard_list(OUT shard integer, OUT connstr text)
RETURNS SETOF record
LANGUAGE sql STABLE
AS $$
    SELECT substring(o FROM '^p([0-9]+)=')::integer,
           regexp_replace(substring(o FROM '^p[0-9]+=(.*)$'),
                          'password\s*=\s*(''([^'']|\\'')*''|\S+)', 'password=********', 'g')
    FROM pg_catalog.pg_foreign_server AS s, unnest(s.srvoptions) AS o
    WHERE s.srvname = 'fw_shards' AND o ~ '^p[0-9]+='
    ORDER BY 1
$$;

CREATE VIEW fw_shards AS
    SELECT l.shard, l.connstr FROM fw_shard_list() AS l;
GRANT SELECT ON fw_shards TO PUBLIC;

COMMENT ON VIEW fw_shards IS
'the shards of the router: partition number and connection string (passwords hidden), from the options of the server fw_shards';

CREATE FUNCTION fw_shard_count()
RETURNS integer
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    n integer := (SELECT count(*) FROM @extschema@.fw_shard_list());
BEGIN
    IF n = 0 THEN
        RAISE EXCEPTION 'the router has no shards'
            USING ERRCODE = 'undefined_object',
                  DETAIL = 'The shards are the options p0, p1, ... of the foreign server "fw_shards", which does not exist or has none.',
                  HINT = 'CREATE SERVER fw_shards FOREIGN DATA WRAPPER plproxy OPTIONS (modular_mapping ''1'', p0 ''dbname=... host=...'', ...), then CREATE USER MAPPING and GRANT USAGE on it.';
    END IF;
    RETURN n;
END $$;

COMMENT ON FUNCTION fw_shard_count() IS
'how many shards the server fw_shards lists';

-- The first shard that does not answer SELECT 1, or NULL.
CREATE FUNCTION fw_route_probe(shard integer)
RETURNS integer
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON shard;
    SELECT 1;
$$;

CREATE FUNCTION fw_first_lost_shard()
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    s integer;
BEGIN
    FOR s IN SELECT l.shard FROM @extschema@.fw_shard_list() AS l LOOP
        BEGIN
            PERFORM @extschema@.fw_route_probe(s);
        EXCEPTION WHEN internal_error THEN
            RETURN s;
        END;
    END LOOP;
    RETURN NULL;
END $$;

-- Faults.  PL/Proxy reports a shard it cannot reach as an internal error
-- (XX000) whose message names the libpq step that failed; errors raised on
-- a shard come back with their own SQLSTATE and are never taken for this.
-- Nor is a connection the shard refused to this role (a FATAL error such as
-- a failed login, a database or role setting that breaks its start, too
-- many connections): the router connects as the caller, so a role could
-- cause those on purpose, and with fail_open they would admit it uncounted.
-- Only a shard that does not answer, or answers that it is starting, in
-- recovery or shutting down, is lost.
CREATE FUNCTION fw_shard_down(shard integer, message text, may_fail_open boolean,
                              for_key boolean DEFAULT true)
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    step text := substring(message FROM
        '^PL/Proxy function [^:]*: (\[[^]]*\] (PQconnectStart|PQconnectPoll|PQsendQuery|PQsendQueryParams|PQflush|PQconsumeInput)|connect timeout|query timeout)');
    db text := substring(message FROM '^PL/Proxy function [^:]*: \[([^]]*)\]');
    said text := regexp_replace(btrim(message, E' \n'), '\s*\n\s*', ' ', 'g');
    connstr text;
    last_warning timestamptz;
BEGIN
    IF step IS NULL
       OR (message ~ 'FATAL:' AND message !~ 'FATAL:\s+(the database system is|terminating connection)') THEN
        RETURN false;               -- not a lost shard: the caller raises it again
    END IF;
    IF shard IS NULL THEN           -- a call to every shard: find which is lost
        shard := @extschema@.fw_first_lost_shard();
    END IF;
    SELECT l.connstr INTO connstr FROM @extschema@.fw_shard_list() AS l WHERE l.shard = fw_shard_down.shard;
    IF may_fail_open AND coalesce((SELECT r.fail_open FROM @extschema@.fw_router AS r), false) THEN
        -- at most one warning a minute per session, as fixed_window does; the
        -- session's own record of it is only trusted when it is in the past
        BEGIN
            last_warning := nullif(current_setting('fixed_window_proxy.last_warning', true), '')::timestamptz;
        EXCEPTION WHEN invalid_datetime_format OR datetime_field_overflow THEN
            last_warning := NULL;
        END;
        IF last_warning IS NULL OR last_warning > clock_timestamp()
           OR last_warning < clock_timestamp() - interval '1 minute' THEN
            PERFORM set_config('fixed_window_proxy.last_warning', clock_timestamp()::text, false);
            RAISE WARNING 'shard % of the router is unreachable: its keys are allowed uncounted', shard
                USING DETAIL = format('The shard connects with "%s". PL/Proxy reported: %s', connstr, said),
                      HINT = 'The router''s fail_open setting is on (see fw_router). This warning repeats at most once a minute per session.';
        END IF;
        RETURN true;
    END IF;
    RAISE EXCEPTION 'shard % of the router is unreachable', coalesce(shard::text, '"' || db || '"')
        USING ERRCODE = CASE WHEN message ~ 'PQconnect|connect timeout' THEN 'sqlclient_unable_to_establish_sqlconnection'
                             ELSE 'connection_failure' END,
              DETAIL = format('The shard connects with "%s". PL/Proxy reported: %s', coalesce(connstr, 'dbname=' || db), said),
              HINT = CASE WHEN NOT for_key THEN 'Repeat the call when the shard is back.'
                          WHEN may_fail_open
                          THEN 'Keys of the other shards are served. To admit this shard''s keys uncounted while it is down, a superuser can UPDATE fw_router SET fail_open = true.'
                          ELSE 'Keys of the other shards are served. Repeat the call when the shard is back.' END;
END $$;

COMMENT ON FUNCTION fw_shard_down(integer, text, boolean, boolean) IS
'whether message is PL/Proxy losing a shard; if so raises SQLSTATE 08001 or 08006 naming the shard (NULL: the first that does not answer), unless may_fail_open and fw_router.fail_open, then warns and returns true; for_key: the call was for one key, so other keys are served';

-- fw_shard_down for the shard of (name, key).
CREATE FUNCTION fw_key_down(name text, key text, message text, may_fail_open boolean)
RETURNS boolean
LANGUAGE sql VOLATILE
RETURN @extschema@.fw_shard_down(@extschema@.fw_shard(name, key, @extschema@.fw_shard_count()),
                                 message, may_fail_open);

-- Calls routed to the shard of (name, key).  Internal: the functions below
-- of the extension's own names add the handling of faults.

CREATE FUNCTION fw_route_limit(name text, key text, rate integer, period interval,
                               start timestamptz, cost integer, capacity integer)
RETURNS fw_result
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    TARGET fw_limit;
$$;

CREATE FUNCTION fw_route_check(name text, key text, rate integer, period interval,
                               start timestamptz, cost integer, capacity integer)
RETURNS fw_result
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    TARGET fw_check;
$$;

CREATE FUNCTION fw_route_limit(name text, key text, cost integer)
RETURNS fw_result
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    TARGET fw_limit;
$$;

CREATE FUNCTION fw_route_check(name text, key text, cost integer)
RETURNS fw_result
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    TARGET fw_check;
$$;

CREATE FUNCTION fw_route_limit_windows(name text, key text, cost integer)
RETURNS SETOF fw_window_result
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    TARGET fw_limit_windows;
$$;

CREATE FUNCTION fw_route_check_windows(name text, key text, cost integer)
RETURNS SETOF fw_window_result
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    TARGET fw_check_windows;
$$;

CREATE FUNCTION fw_route_refund(name text, key text, cost integer)
RETURNS integer
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    TARGET fw_refund;
$$;

CREATE FUNCTION fw_route_refund(name text, key text, rate integer, period interval,
                                start timestamptz, cost integer, capacity integer)
RETURNS integer
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    TARGET fw_refund;
$$;

CREATE FUNCTION fw_route_reset(name text, key text)
RETURNS bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    TARGET fw_reset;
$$;

-- The same round trip as a call, doing nothing: what the hop costs.
CREATE FUNCTION fw_route_ping(name text, key text)
RETURNS integer
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON @extschema@.fw_shard_hash(name, key);
    SELECT 1;
$$;

COMMENT ON FUNCTION fw_route_ping(text, text) IS
'SELECT 1 on the shard of (name, key), through the same hop as a call';

-- The extension's calls, on the router.  A lost shard raises 08001 or 08006
-- naming it; with fw_router.fail_open, fw_limit and fw_check answer ok.

CREATE FUNCTION fw_limit(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS fw_result
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN @extschema@.fw_route_limit($1, $2, $3, $4, $5, $6, $7);
EXCEPTION WHEN internal_error THEN
    IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
        RAISE;
    END IF;
    RETURN ROW(true, NULL, NULL, NULL)::@extschema@.fw_result;
END $$;

COMMENT ON FUNCTION fw_limit(text, text, integer, interval, timestamptz, integer, integer) IS
'fixed_window''s fw_limit on the shard of (name, key)';

CREATE FUNCTION fw_check(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS fw_result
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN @extschema@.fw_route_check($1, $2, $3, $4, $5, $6, $7);
EXCEPTION WHEN internal_error THEN
    IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
        RAISE;
    END IF;
    RETURN ROW(true, NULL, NULL, NULL)::@extschema@.fw_result;
END $$;

COMMENT ON FUNCTION fw_check(text, text, integer, interval, timestamptz, integer, integer) IS
'fixed_window''s fw_check on the shard of (name, key)';

CREATE FUNCTION fw_limit(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN @extschema@.fw_route_limit($1, $2, $3);
EXCEPTION WHEN internal_error THEN
    IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
        RAISE;
    END IF;
    RETURN ROW(true, NULL, NULL, NULL)::@extschema@.fw_result;
END $$;

COMMENT ON FUNCTION fw_limit(text, text, integer) IS
'fixed_window''s fw_limit of policy name on the shard of (name, key)';

CREATE FUNCTION fw_check(name text, key text, cost integer DEFAULT 1)
RETURNS fw_result
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN @extschema@.fw_route_check($1, $2, $3);
EXCEPTION WHEN internal_error THEN
    IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
        RAISE;
    END IF;
    RETURN ROW(true, NULL, NULL, NULL)::@extschema@.fw_result;
END $$;

COMMENT ON FUNCTION fw_check(text, text, integer) IS
'fixed_window''s fw_check of policy name on the shard of (name, key)';

CREATE FUNCTION fw_limit_windows(name text, key text, cost integer DEFAULT 1)
RETURNS SETOF fw_window_result
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN QUERY SELECT * FROM @extschema@.fw_route_limit_windows($1, $2, $3);
EXCEPTION WHEN internal_error THEN
    IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
        RAISE;
    END IF;
    RETURN NEXT ROW(NULL, NULL, NULL, NULL, true, NULL, NULL, NULL, NULL, NULL)::@extschema@.fw_window_result;
END $$;

COMMENT ON FUNCTION fw_limit_windows(text, text, integer) IS
'fixed_window''s fw_limit_windows on the shard of (name, key); with fail_open and the shard lost, one row: ok, nothing else known';

CREATE FUNCTION fw_check_windows(name text, key text, cost integer DEFAULT 1)
RETURNS SETOF fw_window_result
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN QUERY SELECT * FROM @extschema@.fw_route_check_windows($1, $2, $3);
EXCEPTION WHEN internal_error THEN
    IF NOT @extschema@.fw_key_down($1, $2, SQLERRM, true) THEN
        RAISE;
    END IF;
    RETURN NEXT ROW(NULL, NULL, NULL, NULL, true, NULL, NULL, NULL, NULL, NULL)::@extschema@.fw_window_result;
END $$;

COMMENT ON FUNCTION fw_check_windows(text, text, integer) IS
'fixed_window''s fw_check_windows on the shard of (name, key); with fail_open and the shard lost, one row: ok, nothing else known';

-- A refund admits nothing, so a lost shard always fails it.
CREATE FUNCTION fw_refund(name text, key text, cost integer)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN @extschema@.fw_route_refund($1, $2, $3);
EXCEPTION WHEN internal_error THEN
    PERFORM @extschema@.fw_key_down($1, $2, SQLERRM, false);
    RAISE;
END $$;

COMMENT ON FUNCTION fw_refund(text, text, integer) IS
'fixed_window''s fw_refund of policy name on the shard of (name, key)';

CREATE FUNCTION fw_refund(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN @extschema@.fw_route_refund($1, $2, $3, $4, $5, $6, $7);
EXCEPTION WHEN internal_error THEN
    PERFORM @extschema@.fw_key_down($1, $2, SQLERRM, false);
    RAISE;
END $$;

COMMENT ON FUNCTION fw_refund(text, text, integer, interval, timestamptz, integer, integer) IS
'fixed_window''s inline fw_refund on the shard of (name, key)';

-- Statements on every shard.  Each shard runs its part in a transaction of
-- its own: a shard that fails leaves the others' parts done.

CREATE FUNCTION fw_route_all_reset(name text)
RETURNS SETOF bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON ALL;
    SELECT fw_reset(name, NULL);
$$;

CREATE FUNCTION fw_route_all_gc()
RETURNS SETOF bigint
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON ALL;
    TARGET fw_gc;
$$;

CREATE FUNCTION fw_route_all_stats_reset()
RETURNS SETOF integer
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON ALL;
    SELECT 1 FROM fw_stats_reset();
$$;

-- One definition statement on one shard; op names the function.
CREATE FUNCTION fw_route_definition(shard integer, op text, name text, key text, rate integer,
                                    period interval, start timestamptz, capacity integer,
                                    shadow boolean, comment text)
RETURNS integer
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    RUN ON shard;
    SELECT CASE op
           WHEN 'define' THEN (SELECT 1 FROM fw_define(name, rate, period, start, capacity, shadow, comment))
           WHEN 'undefine' THEN fw_undefine(name, period)
           WHEN 'override' THEN (SELECT 1 FROM fw_override(name, key, rate, period, capacity))
           WHEN 'exempt' THEN (SELECT 1 FROM fw_exempt(name, key))
           WHEN 'unoverride' THEN fw_unoverride(name, key, period)
           END;
$$;

-- Run a definition statement on every shard in turn; returns what each
-- answered, NULL where the shard had nothing to remove (SQLSTATE 42704).
CREATE FUNCTION fw_each_shard(op text, name text, key text, rate integer, period interval,
                              start timestamptz, capacity integer, shadow boolean, comment text)
RETURNS integer[]
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    s integer;
    answers integer[] := '{}';
BEGIN
    FOR s IN SELECT generate_series(0, @extschema@.fw_shard_count() - 1) LOOP
        BEGIN
            answers := answers || @extschema@.fw_route_definition(s, op, name, key, rate, period,
                                                                  start, capacity, shadow, comment);
        EXCEPTION
            WHEN undefined_object THEN
                IF op <> 'undefine' THEN
                    RAISE;
                END IF;
                answers := answers || NULL::integer;
            WHEN internal_error THEN
                PERFORM @extschema@.fw_shard_down(s, SQLERRM, false, false);
                RAISE;
        END;
    END LOOP;
    RETURN answers;
END $$;

-- Every definition function of fixed_window, on every shard.

CREATE FUNCTION fw_define(
    name text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    capacity integer DEFAULT NULL,
    shadow boolean DEFAULT false,
    comment text DEFAULT NULL)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT fw_each_shard('define', name, NULL, rate, period, start, capacity, shadow, comment);
END;

COMMENT ON FUNCTION fw_define(text, integer, interval, timestamptz, integer, boolean, text) IS
'fixed_window''s fw_define on every shard, one after the other';

CREATE FUNCTION fw_undefine(name text, period interval DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    removed integer := (SELECT max(a)
                        FROM unnest(@extschema@.fw_each_shard('undefine', $1, NULL, NULL, $2,
                                                              NULL, NULL, NULL, NULL)) AS a);
BEGIN
    IF removed IS NULL THEN
        RAISE EXCEPTION 'rate limit policy "%" has no window %', $1, coalesce('of ' || $2::text, 'at all')
            USING ERRCODE = 'undefined_object',
                  DETAIL = 'No shard has it.',
                  HINT = 'fw_policies lists the policies and their windows.';
    END IF;
    RETURN removed;
END $$;

COMMENT ON FUNCTION fw_undefine(text, interval) IS
'fixed_window''s fw_undefine on every shard; returns the windows removed from a shard that had them; 42704 when no shard had any';

CREATE FUNCTION fw_override(name text, key text, rate integer, period interval,
                            capacity integer DEFAULT NULL)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT fw_each_shard('override', name, key, rate, period, NULL, capacity, NULL, NULL);
END;

COMMENT ON FUNCTION fw_override(text, text, integer, interval, integer) IS
'fixed_window''s fw_override on every shard, so that the key keeps it when resharding moves it';

CREATE FUNCTION fw_exempt(name text, key text)
RETURNS void
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT fw_each_shard('exempt', name, key, NULL, NULL, NULL, NULL, NULL, NULL);
END;

COMMENT ON FUNCTION fw_exempt(text, text) IS
'fixed_window''s fw_exempt on every shard';

CREATE FUNCTION fw_unoverride(name text, key text, period interval DEFAULT NULL)
RETURNS integer
LANGUAGE sql VOLATILE
BEGIN ATOMIC
    SELECT max(a) FROM unnest(fw_each_shard('unoverride', name, key, NULL, period,
                                             NULL, NULL, NULL, NULL)) AS a;
END;

COMMENT ON FUNCTION fw_unoverride(text, text, interval) IS
'fixed_window''s fw_unoverride on every shard; returns how many a shard removed';

-- Admin across shards.

CREATE FUNCTION fw_reset(name text, key text DEFAULT NULL)
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF $2 IS NOT NULL THEN
        RETURN @extschema@.fw_route_reset($1, $2);
    END IF;
    RETURN (SELECT coalesce(sum(n), 0)::bigint FROM @extschema@.fw_route_all_reset($1) AS n);
EXCEPTION WHEN internal_error THEN
    PERFORM @extschema@.fw_shard_down(CASE WHEN $2 IS NOT NULL
                                           THEN @extschema@.fw_shard($1, $2, @extschema@.fw_shard_count()) END,
                                      SQLERRM, false, $2 IS NOT NULL);
    RAISE;
END $$;

COMMENT ON FUNCTION fw_reset(text, text) IS
'fixed_window''s fw_reset: one key on its shard, or with key NULL every key on every shard; returns how many counters went';

CREATE FUNCTION fw_gc()
RETURNS bigint
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    RETURN (SELECT coalesce(sum(n), 0)::bigint FROM @extschema@.fw_route_all_gc() AS n);
EXCEPTION WHEN internal_error THEN
    PERFORM @extschema@.fw_shard_down(NULL, SQLERRM, false, false);
    RAISE;
END $$;

COMMENT ON FUNCTION fw_gc() IS
'fixed_window''s fw_gc on every shard; returns the rows removed in all';

CREATE FUNCTION fw_stats_reset()
RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    PERFORM count(*) FROM @extschema@.fw_route_all_stats_reset();
EXCEPTION WHEN internal_error THEN
    PERFORM @extschema@.fw_shard_down(NULL, SQLERRM, false, false);
    RAISE;
END $$;

COMMENT ON FUNCTION fw_stats_reset() IS
'fixed_window''s fw_stats_reset on every shard';

-- The views of every shard.  Each shard gets a one-element array holding its
-- own number (PL/Proxy's SPLIT over the list of shards), sends it back with
-- its rows, and all shards answer in parallel.

CREATE TYPE fw_shard_counter AS (
    name text, key text, storage text, window_start timestamptz, window_end timestamptz,
    remaining integer, rate integer, capacity integer, period interval, shard integer);

CREATE FUNCTION fw_route_counters(shards integer[])
RETURNS SETOF fw_shard_counter
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    SPLIT shards;
    RUN ON shards;
    SELECT c.name, c.key, c.storage, c.window_start, c.window_end, c.remaining, c.rate,
           c.capacity, c.period, (shards)[1] AS shard
    FROM fw_counters AS c;
$$;

CREATE TYPE fw_shard_stat AS (
    name text, calls bigint, allowed bigint, denied bigint, last_denied_at timestamptz,
    since timestamptz, shadow_denied bigint, shard integer);

CREATE FUNCTION fw_route_stats(shards integer[])
RETURNS SETOF fw_shard_stat
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    SPLIT shards;
    RUN ON shards;
    SELECT s.name, s.calls, s.allowed, s.denied, s.last_denied_at, s.since, s.shadow_denied,
           (shards)[1] AS shard
    FROM fw_stats AS s;
$$;

CREATE TYPE fw_shard_policy AS (
    name text, period interval, rate integer, capacity integer, start timestamptz,
    shadow boolean, comment text, shard integer);

CREATE FUNCTION fw_route_policies(shards integer[])
RETURNS SETOF fw_shard_policy
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    SPLIT shards;
    RUN ON shards;
    SELECT p.name, p.period, p.rate, p.capacity, p.start, p.shadow, p.comment,
           (shards)[1] AS shard
    FROM fw_policies AS p;
$$;

CREATE TYPE fw_shard_override AS (
    name text, key text, period interval, rate integer, capacity integer, exempt boolean,
    created_by name, shard integer);

CREATE FUNCTION fw_route_overrides(shards integer[])
RETURNS SETOF fw_shard_override
LANGUAGE plproxy
AS $$
    CLUSTER 'fw_shards';
    SPLIT shards;
    RUN ON shards;
    SELECT o.name, o.key, o.period, o.rate, o.capacity, o.exempt, o.created_by,
           (shards)[1] AS shard
    FROM fw_overrides AS o;
$$;

-- Gathers one of the views above from every shard: kind is counters,
-- stats, policies or overrides; rows is a NULL of the row type.
CREATE FUNCTION fw_gather(kind text, rows anyelement)
RETURNS SETOF anyelement
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    shards integer[] := ARRAY(SELECT generate_series(0, @extschema@.fw_shard_count() - 1));
BEGIN
    RETURN QUERY EXECUTE format('SELECT * FROM %I.%I($1)', '@extschema@', 'fw_route_' || kind)
        USING shards;
EXCEPTION WHEN internal_error THEN
    PERFORM @extschema@.fw_shard_down(NULL, SQLERRM, false, false);
    RAISE;
END $$;

CREATE VIEW fw_counters AS
    SELECT c.name, c.key, c.storage, c.window_start, c.window_end, c.remaining, c.rate,
           c.capacity, c.period, c.shard
    FROM fw_gather('counters', NULL::fw_shard_counter) AS c;
GRANT SELECT ON fw_counters TO PUBLIC;

COMMENT ON VIEW fw_counters IS
'fixed_window''s fw_counters of every shard, with the shard each row is on';

CREATE VIEW fw_stats AS
    SELECT s.name, sum(s.calls)::bigint AS calls, sum(s.allowed)::bigint AS allowed,
           sum(s.denied)::bigint AS denied, max(s.last_denied_at) AS last_denied_at,
           min(s.since) AS since, sum(s.shadow_denied)::bigint AS shadow_denied
    FROM fw_gather('stats', NULL::fw_shard_stat) AS s
    GROUP BY s.name;
GRANT SELECT ON fw_stats TO PUBLIC;

COMMENT ON VIEW fw_stats IS
'fixed_window''s fw_stats summed over every shard';

CREATE VIEW fw_policies AS
    SELECT p.name, p.period, p.rate, p.capacity, p.start, p.shadow, p.comment,
           array_agg(p.shard ORDER BY p.shard) AS shards
    FROM fw_gather('policies', NULL::fw_shard_policy) AS p
    GROUP BY p.name, p.period, p.rate, p.capacity, p.start, p.shadow, p.comment;
GRANT SELECT ON fw_policies TO PUBLIC;

COMMENT ON VIEW fw_policies IS
'fixed_window''s fw_policies of every shard, a row per distinct window with the shards holding it: a window missing from a shard, or different there, shows';

CREATE VIEW fw_overrides AS
    SELECT o.name, o.key, o.period, o.rate, o.capacity, o.exempt, o.created_by,
           array_agg(o.shard ORDER BY o.shard) AS shards
    FROM fw_gather('overrides', NULL::fw_shard_override) AS o
    GROUP BY o.name, o.key, o.period, o.rate, o.capacity, o.exempt, o.created_by;
GRANT SELECT ON fw_overrides TO PUBLIC;

COMMENT ON VIEW fw_overrides IS
'fixed_window''s fw_overrides of every shard, a row per distinct override with the shards holding it';

-- Who may do what: a role reaches the shards as the role of its user mapping,
-- and their grants apply as if it had connected.  The router refuses to
-- PUBLIC what fixed_window refuses, definitions and resets, and the internal
-- functions that reach the shards for them, so that it holds even when many
-- roles map to one shard role; the calls, the views and the routing hash are
-- for everyone.
REVOKE ALL ON FUNCTION
    fw_define(text, integer, interval, timestamptz, integer, boolean, text),
    fw_undefine(text, interval),
    fw_override(text, text, integer, interval, integer),
    fw_exempt(text, text),
    fw_unoverride(text, text, interval),
    fw_reset(text, text),
    fw_gc(),
    fw_stats_reset(),
    fw_each_shard(text, text, text, integer, interval, timestamptz, integer, boolean, text),
    fw_route_definition(integer, text, text, text, integer, interval, timestamptz, integer, boolean, text),
    fw_route_reset(text, text),
    fw_route_all_reset(text),
    fw_route_all_gc(),
    fw_route_all_stats_reset()
FROM PUBLIC;
