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
