/* fixed_window_proxy--1.3.sql: a new router's install script, the statements of 1.0 and of each update to 1.3 (each under a line naming its script), then what only a new router does */

-- from fixed_window_proxy--1.0.sql
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

-- from fixed_window_proxy--1.0--1.1.sql
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

-- from fixed_window_proxy--1.1--1.2.sql
/* fixed_window_proxy--1.1--1.2.sql: the reading of a shard's answer inlined into each call */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window_proxy UPDATE TO '1.2'" to load this file. \quit

--
-- A shard's numbers are turned back into intervals and timestamps by SQL
-- functions.  In 1.1 the planner could not inline fw_wire_span into the
-- calls that use it: it was STRICT while its body is not (format() answers
-- NULL arguments), and IMMUTABLE while format() and the casts it uses are
-- STABLE.  So each routed call ran it as a function of its own, planned
-- anew at every transaction: about a sixth of the router's CPU per call.
-- Declared as what they are, STABLE, and fw_wire_span saying what NULL
-- gives, they are inlined, and answer as before.
--

CREATE OR REPLACE FUNCTION fw_wire_span(seconds numeric)
RETURNS interval
LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN seconds IS NOT NULL THEN
    pg_catalog.format('PT%sH%sM%sS', pg_catalog.div(seconds, 3600),
                      pg_catalog.div(pg_catalog.mod(seconds, 3600), 60),
                      pg_catalog.mod(seconds, 60))::pg_catalog.interval END;

ALTER FUNCTION @extschema@.fw_wire_time(numeric) STABLE;
ALTER FUNCTION @extschema@.fw_wire_answer(@extschema@.fw_wire_result) STABLE;
ALTER FUNCTION @extschema@.fw_wire_answer(@extschema@.fw_wire_window) STABLE;

-- from fixed_window_proxy--1.2--1.3.sql
/* fixed_window_proxy--1.2--1.3.sql: routing by jump consistent hashing, chosen per router */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window_proxy UPDATE TO '1.3'" to load this file. \quit

--
-- Until 1.2 the shard of (name, key) was fw_shard_hash(name, key) modulo the
-- number of shards, as PL/Proxy maps the integer RUN ON gives it: going from
-- 3 shards to 4 moved three keys in four, half of them between old shards,
-- and every moved key starts afresh on its new shard.  Jump consistent
-- hashing (Lamport and Veach, 2014) moves only what the new shards take:
-- from N to N + 1 shards, one key in N + 1, each to the new shard.
--
-- Routers of one fleet must agree on where every key lives, whenever each
-- is updated.  So the method is part of a router's configuration, the table
-- fw_routing: a router updated from 1.2 keeps the modulo until its admin
-- schedules the switch, for the same instant on every router; a new router
-- routes by jump.
--

-- The jump consistent hash of a 64-bit key (a bigint, read as unsigned):
-- the paper's loop, its division done exactly in integers where the paper's
-- C code divides in floating point (which can round an exact quotient down,
-- 49 * 2^31 / 49 for one), so that every platform and language finds the
-- same shard.
CREATE FUNCTION fw_jump_hash(key bigint, shard_count integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    k numeric := key;       -- the generator's state, 0 .. 2^64 - 1
    b bigint := -1;         -- the last shard the key jumped to
    j bigint := 0;          -- the next one
BEGIN
    IF key IS NULL THEN
        RAISE EXCEPTION 'argument "key" must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    PERFORM @extschema@.fw_shard(NULL, NULL, shard_count);     -- which checks the count
    IF k < 0 THEN
        k := k + 18446744073709551616;
    END IF;
    WHILE j < shard_count LOOP
        b := j;
        k := mod(k * 2862933555777941757 + 1, 18446744073709551616);  -- the paper's step, modulo 2^64
        j := ((b + 1) * 2147483648) / (div(k, 8589934592)::bigint + 1);  -- (b + 1) * 2^31 / ((k >> 33) + 1)
    END LOOP;
    RETURN b;
END $$;

COMMENT ON FUNCTION fw_jump_hash(bigint, integer) IS
'jump consistent hash (Lamport and Veach, 2014) of a 64-bit key (a bigint read as unsigned) among shard_count shards, its division exact in integers: from N to N + 1 shards, only keys moving to shard N change';

-- The shard, from 0, that owns (name, key) among shard_count shards, by
-- either method.  By jump, the key's slot, fw_shard_hash(name, key) modulo
-- 16384, is hashed: the router looks the slot's shard up in a table of
-- them (fw_route_compile), which routes in the time the modulo takes; the
-- loop itself, once a call, took a fifth more of the router's time.
CREATE FUNCTION fw_shard(name text, key text, shard_count integer, method text)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF method = 'modulo' THEN
        RETURN @extschema@.fw_shard(name, key, shard_count);
    ELSIF method = 'jump' THEN
        RETURN @extschema@.fw_jump_hash(@extschema@.fw_shard_hash(name, key) % 16384, shard_count);
    END IF;
    RAISE EXCEPTION 'routing method must be "modulo" or "jump"'
        USING ERRCODE = CASE WHEN method IS NULL THEN 'null_value_not_allowed'
                             ELSE 'invalid_parameter_value' END,
              DETAIL = format('The method given is %s.', coalesce(quote_literal(method), 'NULL'));
END $$;

COMMENT ON FUNCTION fw_shard(text, text, integer, text) IS
'the shard, from 0, that owns (name, key) among shard_count shards by method: modulo, fw_shard(name, key, shard_count); jump, fw_jump_hash(fw_shard_hash(name, key) % 16384, shard_count)';

-- How the router routes keys: from "since" on, by "method".  The latest row
-- whose time has come applies; when none has, jump.  The table is dumped
-- (pg_dump), so that a router restored from a dump routes as it did; a
-- router created afresh has no row.
CREATE TABLE fw_routing (
    since timestamptz PRIMARY KEY,
    method text NOT NULL CHECK (method IN ('modulo', 'jump'))
);
REVOKE ALL ON fw_routing FROM PUBLIC;
GRANT SELECT ON fw_routing TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('fw_routing', '');

COMMENT ON TABLE fw_routing IS
'how the router routes keys to shards: from since on, by method (modulo: fw_shard_hash(name, key) modulo the number of shards, as 1.0 to 1.2 did; jump: jump consistent hashing, see fw_shard); the latest row whose time has come applies, jump when none has';

-- A router updated from 1.2 routes as it did until its admin switches.  (A
-- new router's script ends by deleting this row.)
INSERT INTO fw_routing VALUES ('-infinity', 'modulo');

-- The method in force, unless the routing the calls follow is out of date
-- (fw_routing_verify, below), which it says instead.
CREATE FUNCTION fw_routing_method()
RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_routing_verify();
    RETURN coalesce((SELECT r.method FROM @extschema@.fw_routing AS r
                     WHERE r.since <= statement_timestamp() ORDER BY r.since DESC LIMIT 1), 'jump');
END $$;

COMMENT ON FUNCTION fw_routing_method() IS
'how the router routes keys in this statement: modulo or jump (see fw_routing); raises SQLSTATE 55000 when the routing compiled is out of date (fw_routing_verify)';

-- Routing is compiled: fw_run_on(name, key), the integer each routed call
-- gives PL/Proxy's RUN ON, is an SQL function written from fw_routing and
-- the number of shards each time either changes (a trigger on fw_routing,
-- an event trigger on CREATE and ALTER SERVER of fw_shards), and inlined
-- into the calls.  So a call reads neither.  And a router session sees a change of
-- shards in PL/Proxy and in fw_run_on at the same instant, since both come
-- from the catalog's caches, invalidated by one transaction: a count that
-- the call read itself could be newer than the one PL/Proxy maps with, and
-- send a key moving to a new shard to another old one.
--
-- By modulo, fw_run_on is the hash, which PL/Proxy maps by its own count as
-- before; by jump, the shard of the key's slot in a table written out in
-- the function (256 shards at most, a byte each), which PL/Proxy's modulus
-- (or bit mask, for a power of two) leaves as it is.  A switch scheduled
-- for later is a test of statement_timestamp() in the function.
--
-- What it was compiled from is the one row of fw_routing_compiled, which
-- each compilation writes in the transaction of the change: its lock makes
-- compilations wait for each other, the later compiling what both made;
-- its versions tell a compilation that its snapshot is older than the last
-- compilation; and it tells when the routing is out of date, changed where
-- the triggers did not fire (fw_routing_verify).  Not dumped: CREATE
-- EXTENSION writes it.
CREATE TABLE fw_routing_compiled (
    onerow boolean PRIMARY KEY DEFAULT true CHECK (onerow),
    since timestamptz[] NOT NULL,       -- fw_routing's rows, by since
    method text[] NOT NULL,
    shards integer NOT NULL             -- the shards the server fw_shards listed
);
INSERT INTO fw_routing_compiled VALUES (true, '{}', '{}', 0);
REVOKE ALL ON fw_routing_compiled FROM PUBLIC;
GRANT SELECT ON fw_routing_compiled TO PUBLIC;

COMMENT ON TABLE fw_routing_compiled IS
'what fw_run_on, the routing the calls follow, was compiled from: the rows of fw_routing (since, method) and the number of shards; written by fw_route_compile()';

CREATE FUNCTION fw_route_compile()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET DateStyle = 'ISO, YMD'
SET TimeZone = 'UTC'
AS $$
DECLARE
    switch_at timestamptz[];    -- fw_routing's rows, by since: from switch_at[i] on,
    switch_to text[];           -- by switch_to[i]
    shard_count integer;        -- the shards the server fw_shards lists
    route text := 'by_jump';    -- the routing before the row at hand: jump before any
BEGIN
    -- One compilation at a time: each locks the row of fw_routing_compiled
    -- (which no role but the table's owner may lock, nor the table in a
    -- mode that holds this up).  Read committed, one that waited for
    -- another then reads what that one committed.  A snapshot taken before
    -- that commit (REPEATABLE READ, SERIALIZABLE) would compile without it:
    -- PostgreSQL refuses to lock a row updated since, and so does the
    -- compilation.
    BEGIN
        PERFORM FROM @extschema@.fw_routing_compiled FOR UPDATE;
        IF NOT FOUND THEN       -- its owner deleted the row; made again, its key orders compilations
            INSERT INTO @extschema@.fw_routing_compiled VALUES (true, '{}', '{}', 0);
        END IF;
    EXCEPTION WHEN serialization_failure THEN
        RAISE EXCEPTION 'could not compile the router''s routing from this transaction''s snapshot'
            USING ERRCODE = 'serialization_failure',
                  DETAIL = 'Another transaction changed fw_routing or the foreign server "fw_shards" and compiled the routing after this transaction''s snapshot was taken.',
                  HINT = 'Retry the transaction. Change fw_routing and the server "fw_shards" in READ COMMITTED transactions, which compile from the latest of both.';
    END;
    SELECT coalesce(array_agg(g.since ORDER BY g.since), '{}'), coalesce(array_agg(g.method ORDER BY g.since), '{}')
    INTO switch_at, switch_to
    FROM @extschema@.fw_routing AS g;
    shard_count := (SELECT count(*) FROM @extschema@.fw_shard_list());
    FOR i IN 1 .. cardinality(switch_at) LOOP
        route := CASE WHEN switch_at[i] = '-infinity' THEN ''
                      ELSE format('CASE WHEN pg_catalog.statement_timestamp() OPERATOR(pg_catalog.>=) %L::pg_catalog.timestamptz THEN ',
                                  switch_at[i]) END
                 || CASE WHEN switch_to[i] = 'modulo' THEN '@extschema@.fw_shard_hash(name, key)' ELSE 'by_jump' END
                 || CASE WHEN switch_at[i] = '-infinity' THEN ''
                         ELSE format(' ELSE %s END', route) END;
    END LOOP;
    -- By jump, the shard of each slot, as fw_shard(name, key, shard_count, 'jump')
    -- finds it, a byte each: decode() reads them much faster than an array's
    -- input, when PL/Proxy plans its call.
    IF strpos(route, 'by_jump') > 0 THEN
        IF shard_count > 256 THEN
            RAISE EXCEPTION 'the router routes by jump to at most 256 shards'
                USING ERRCODE = 'program_limit_exceeded',
                      DETAIL = format('The foreign server "fw_shards" lists %s.', shard_count),
                      HINT = 'Route by modulo (fw_routing), or list fewer shards.';
        END IF;
        route := replace(route, 'by_jump', CASE WHEN shard_count = 0
            THEN '@extschema@.fw_shard_count()'                 -- which raises 42704: no shards
            ELSE format('pg_catalog.get_byte(pg_catalog.decode(%L, ''hex''), '
                        '@extschema@.fw_shard_hash(name, key) OPERATOR(pg_catalog.%%) 16384)',
                        (SELECT string_agg(lpad(to_hex(@extschema@.fw_jump_hash(slot, shard_count)), 2, '0'), '' ORDER BY slot)
                         FROM generate_series(0, 16383) AS slot)) END);
    END IF;
    -- A body of SQL text, parsed where PL/Proxy plans a call: a parsed body
    -- (RETURN) is read back from the catalog a byte of its constants at a
    -- time, which for these 16 kB cost a router session milliseconds at its
    -- first call.  Parsed in the caller's session, the text names everything
    -- with its schema, holds no backslash (standard_conforming_strings), and
    -- writes timestamps in ISO, which every DateStyle reads alike.
    EXECUTE format('CREATE OR REPLACE FUNCTION @extschema@.fw_run_on(name text, key text)
                    RETURNS integer LANGUAGE sql STABLE AS %L', 'SELECT ' || route);
    UPDATE @extschema@.fw_routing_compiled SET since = switch_at, method = switch_to, shards = shard_count;
END $$;

REVOKE ALL ON FUNCTION fw_route_compile() FROM PUBLIC;

COMMENT ON FUNCTION fw_route_compile() IS
'write fw_run_on from fw_routing and the number of shards (done by triggers when either changes)';

SELECT fw_route_compile();

COMMENT ON FUNCTION fw_run_on(text, text) IS
'the integer each call routed for (name, key) gives PL/Proxy''s RUN ON: fw_shard_hash(name, key) by modulo, the shard by jump; compiled by fw_route_compile()';

CREATE FUNCTION fw_routing_changed()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_route_compile();
    RETURN NULL;
END $$;

CREATE TRIGGER fw_routing_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON fw_routing
    FOR EACH STATEMENT EXECUTE FUNCTION fw_routing_changed();

-- The shards change only by the DDL of the server fw_shards, which only
-- its owner may alter: the command that creates it, alters it, or gives
-- another server its name compiles.  The DDL of any other server compiles
-- nothing and takes no lock of the router, whoever runs it and from
-- whatever snapshot.  Dropping fw_shards or renaming it compiles nothing
-- either: a router without it routes nothing (PL/Proxy finds no cluster,
-- fw_shard_count raises 42704), and the next server to be named so
-- compiles.
CREATE FUNCTION fw_shards_changed()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_event_trigger_ddl_commands() AS c
               JOIN pg_catalog.pg_foreign_server AS s ON s.oid = c.objid
               WHERE c.classid = 'pg_catalog.pg_foreign_server'::pg_catalog.regclass
                 AND s.srvname = 'fw_shards') THEN
        PERFORM @extschema@.fw_route_compile();
    END IF;
END $$;

CREATE EVENT TRIGGER fw_shards_changed ON ddl_command_end
    WHEN TAG IN ('CREATE SERVER', 'ALTER SERVER')
    EXECUTE FUNCTION fw_shards_changed();

-- (Triggers call them whoever fires them; no role calls them itself.)
REVOKE ALL ON FUNCTION fw_routing_changed(), fw_shards_changed() FROM PUBLIC;

-- Where the triggers do not fire, a change of fw_routing or of the shards
-- compiles nothing: in single-user mode (event triggers), with
-- session_replication_role = replica, in a data-only restore with
-- --disable-triggers.  The calls then follow the routing compiled before,
-- until a superuser runs fw_route_compile().  Whatever names a key's shard
-- or the method (fw_key_shard, fw_routing_method) says so first.  The
-- routed calls do not ask, which would cost each of them the reading of
-- three tables.  A router without shards is not out of date: it routes
-- nothing.
CREATE FUNCTION fw_routing_verify()
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    compiled @extschema@.fw_routing_compiled;
    switch_at timestamptz[];    -- fw_routing's rows, as fw_route_compile reads them
    switch_to text[];
    shard_count integer := (SELECT count(*) FROM @extschema@.fw_shard_list());
    differs text[] := '{}';
BEGIN
    SELECT * INTO compiled FROM @extschema@.fw_routing_compiled;
    SELECT coalesce(array_agg(g.since ORDER BY g.since), '{}'), coalesce(array_agg(g.method ORDER BY g.since), '{}')
    INTO switch_at, switch_to
    FROM @extschema@.fw_routing AS g;
    IF (compiled.since, compiled.method) IS DISTINCT FROM (switch_at, switch_to) THEN
        differs := differs || 'The routing was compiled from other rows of fw_routing than it holds.'::text;
    END IF;
    IF shard_count > 0 AND compiled.shards IS DISTINCT FROM shard_count THEN
        differs := differs || format('The routing was compiled for %s shards; the foreign server "fw_shards" lists %s.',
                                     coalesce(compiled.shards::text, 'no'), shard_count);
    END IF;
    IF cardinality(differs) > 0 THEN
        RAISE EXCEPTION 'the router''s compiled routing is out of date'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = array_to_string(differs, ' ') || ' The router''s calls follow the routing compiled.',
                  HINT = 'A superuser runs SELECT fw_route_compile(). Changes compile nothing with session_replication_role = replica, in a data-only restore with --disable-triggers, or, those of the server "fw_shards", in single-user mode.';
    END IF;
END $$;

COMMENT ON FUNCTION fw_routing_verify() IS
'raises SQLSTATE 55000 when the routing the calls follow (fw_run_on) was compiled from other rows of fw_routing or another number of shards than the catalog holds, which only changes made where the triggers do not fire leave';

-- The shard this router sends (name, key) to now.
CREATE FUNCTION fw_key_shard(name text, key text)
RETURNS integer
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_routing_verify();
    RETURN @extschema@.fw_run_on(name, key) % @extschema@.fw_shard_count();
END $$;

COMMENT ON FUNCTION fw_key_shard(text, text) IS
'the shard, from 0, that the router sends the calls of (name, key) to now, by its routing (fw_routing) among its shards; raises SQLSTATE 55000 when the routing compiled is out of date (fw_routing_verify)';

-- Every function that routed by the modulo now routes by fw_run_on, or
-- names the shard fw_key_shard finds: PL/Proxy's functions for one key say
-- RUN ON fw_run_on(name, key), and the handling of their faults names the
-- key's shard with fw_key_shard.  Each is written again as it is but for
-- that (its grants are kept).
CREATE OR REPLACE FUNCTION fw_key_down(name text, key text, message text, may_fail_open boolean)
RETURNS boolean
LANGUAGE sql VOLATILE
RETURN @extschema@.fw_shard_down(@extschema@.fw_key_shard(name, key), message, may_fail_open);

DO $$
DECLARE
    f regprocedure;
    def text;
    routed text;
    rewritten integer := 0;
BEGIN
    FOR f IN SELECT d.objid FROM pg_catalog.pg_depend AS d
             JOIN pg_catalog.pg_extension AS e ON e.oid = d.refobjid
             WHERE d.refclassid = 'pg_catalog.pg_extension'::regclass AND e.extname = 'fixed_window_proxy'
               AND d.classid = 'pg_catalog.pg_proc'::regclass AND d.deptype = 'e'
    LOOP
        def := pg_catalog.pg_get_functiondef(f);
        routed := replace(replace(replace(def,
            'RUN ON @extschema@.fw_shard_hash(name, key);', 'RUN ON @extschema@.fw_run_on(name, key);'),
            '@extschema@.fw_shard(name, key, @extschema@.fw_shard_count())', '@extschema@.fw_key_shard(name, key)'),
            '@extschema@.fw_shard($1, $2, @extschema@.fw_shard_count())', '@extschema@.fw_key_shard($1, $2)');
        IF routed <> def THEN
            EXECUTE routed;
            rewritten := rewritten + 1;
        END IF;
    END LOOP;
    -- ten calls routed for one key, fw_may_retry, fw_key_ended, fw_reset
    IF rewritten <> 13 THEN
        RAISE EXCEPTION 'the update of fixed_window_proxy to 1.3 found % functions routing by the modulo, not 13',
            rewritten
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Its functions were changed after 1.2 installed them: create them again from the scripts of 1.2, then update.';
    END IF;
END $$;

-- what only a new router does

-- A new router routes by jump consistent hashing: the row that keeps a
-- router updated from 1.2 on the modulo is not for it (fw_routing).
DELETE FROM fw_routing;
