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

CREATE FUNCTION fw_routing_method()
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
RETURN coalesce((SELECT r.method FROM @extschema@.fw_routing AS r
                 WHERE r.since <= statement_timestamp() ORDER BY r.since DESC LIMIT 1), 'jump');

COMMENT ON FUNCTION fw_routing_method() IS
'how the router routes keys in this statement: modulo or jump (see fw_routing)';

-- Routing is compiled: fw_run_on(name, key), the integer each routed call
-- gives PL/Proxy's RUN ON, is an SQL function written from fw_routing and
-- the number of shards each time either changes (a trigger on fw_routing,
-- an event trigger on CREATE, ALTER and DROP SERVER), and inlined into the
-- calls.  So a call reads neither.  And a router session sees a change of
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
CREATE FUNCTION fw_route_compile()
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET DateStyle = 'ISO, YMD'
SET TimeZone = 'UTC'
AS $$
DECLARE
    shards integer;
    route text := NULL;         -- the routing before the row at hand
    r record;
BEGIN
    -- One compilation at a time, the later of two concurrent changes
    -- compiling what both made.  (fw_router: a lock that no role but its
    -- owner can take in a mode that holds this one up.)
    LOCK TABLE @extschema@.fw_router IN SHARE ROW EXCLUSIVE MODE;
    shards := (SELECT count(*) FROM @extschema@.fw_shard_list());
    FOR r IN SELECT d.since, d.method
             FROM (SELECT '-infinity'::timestamptz, 'jump', 0      -- before any row
                   UNION ALL
                   SELECT since, method, 1 FROM @extschema@.fw_routing) AS d(since, method, configured)
             ORDER BY d.since, d.configured
    LOOP
        route := CASE WHEN route IS NULL OR r.since = '-infinity' THEN ''
                      ELSE format('CASE WHEN pg_catalog.statement_timestamp() OPERATOR(pg_catalog.>=) %L::pg_catalog.timestamptz THEN ',
                                  r.since) END
                 || CASE WHEN r.method = 'modulo' THEN '@extschema@.fw_shard_hash(name, key)' ELSE 'by_jump' END
                 || CASE WHEN route IS NULL OR r.since = '-infinity' THEN ''
                         ELSE format(' ELSE %s END', route) END;
    END LOOP;
    -- By jump, the shard of each slot, as fw_shard(name, key, shards, 'jump')
    -- finds it, a byte each: decode() reads them much faster than an array's
    -- input, when PL/Proxy plans its call.
    IF strpos(route, 'by_jump') > 0 THEN
        IF shards > 256 THEN
            RAISE EXCEPTION 'the router routes by jump to at most 256 shards'
                USING ERRCODE = 'program_limit_exceeded',
                      DETAIL = format('The foreign server "fw_shards" lists %s.', shards),
                      HINT = 'Route by modulo (fw_routing), or list fewer shards.';
        END IF;
        route := replace(route, 'by_jump', CASE WHEN shards = 0
            THEN '@extschema@.fw_shard_count()'                 -- which raises 42704: no shards
            ELSE format('pg_catalog.get_byte(pg_catalog.decode(%L, ''hex''), '
                        '@extschema@.fw_shard_hash(name, key) OPERATOR(pg_catalog.%%) 16384)',
                        (SELECT string_agg(lpad(to_hex(@extschema@.fw_jump_hash(slot, shards)), 2, '0'), '' ORDER BY slot)
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

CREATE FUNCTION fw_shards_changed()
RETURNS event_trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM @extschema@.fw_route_compile();
END $$;

CREATE EVENT TRIGGER fw_shards_changed ON ddl_command_end
    WHEN TAG IN ('CREATE SERVER', 'ALTER SERVER', 'DROP SERVER')
    EXECUTE FUNCTION fw_shards_changed();

-- (Triggers call them whoever fires them; no role calls them itself.)
REVOKE ALL ON FUNCTION fw_routing_changed(), fw_shards_changed() FROM PUBLIC;

-- The shard this router sends (name, key) to now.
CREATE FUNCTION fw_key_shard(name text, key text)
RETURNS integer
LANGUAGE sql STABLE
RETURN @extschema@.fw_run_on(name, key) % @extschema@.fw_shard_count();

COMMENT ON FUNCTION fw_key_shard(text, text) IS
'the shard, from 0, that the router sends the calls of (name, key) to now, by its routing (fw_routing) among its shards';

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
