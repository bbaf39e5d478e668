-- fixed_window, SQL edition: what the admin views read of the table
-- backend (admin.c, capacity.c and the SQL functions of the C extension).
--
-- Keys can be personal data: a role sees the keys of counters last used by
-- itself only, unless it is a superuser or has the privileges of
-- pg_read_all_stats.  "Itself" is the role the session acts as
-- (fw_acting_role(): SET ROLE's, else the login role), which fw_limit
-- records in fw_counter.userid: the functions that read fw_counter are
-- SECURITY DEFINER, where current_user is the installing role.

CREATE FUNCTION fw_may_see_key(userid oid)
RETURNS boolean
LANGUAGE sql STABLE STRICT PARALLEL SAFE
SET search_path FROM CURRENT
AS $function$
    SELECT r.oid = fw_may_see_key.userid OR pg_has_role(r.oid, 'pg_read_all_stats', 'USAGE')
    FROM pg_roles AS r
    WHERE r.rolname = fw_acting_role()
$function$;
COMMENT ON FUNCTION fw_may_see_key(oid) IS
    'whether the current role may see the keys of counters last used by the given role: its own, or any for superusers and members of pg_read_all_stats';

-- Every timestamptz the table holds can be shown: the C extension's bounds
-- check (times beyond PostgreSQL's range shown as -infinity / infinity)
-- is the identity here.
CREATE FUNCTION fw_displayable(timestamptz)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN $1;
COMMENT ON FUNCTION fw_displayable(timestamptz) IS
    'the timestamp itself, or -infinity / infinity when it lies outside the range PostgreSQL can show (used by fw_counters)';

-- The counter rows, other roles' keys NULL; period_id NULL for an inline
-- call's row.  On a standby an unlogged fw_counter has no rows: none, with
-- a notice, as the C extension says it.
CREATE FUNCTION fw_table_counters(OUT name text, OUT key text, OUT window_start timestamptz,
                                  OUT window_end timestamptz, OUT remaining integer,
                                  OUT rate integer, OUT capacity integer, OUT period_id text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE STRICT SECURITY DEFINER PARALLEL RESTRICTED
SET search_path FROM CURRENT
AS $function$
DECLARE
    me oid;
    all_keys boolean;
BEGIN
    IF pg_is_in_recovery()
       AND (SELECT c.relpersistence <> 'p' FROM pg_class AS c WHERE c.oid = 'fw_counter'::regclass) THEN
        RAISE NOTICE 'the counters of fixed_window''s table are not readable on a standby'
            USING ERRCODE = 'read_only_sql_transaction',
                  DETAIL = 'The table fw_counter is unlogged: a standby holds none of its rows. This server''s shared-memory counters are listed.';
        RETURN;
    END IF;
    SELECT r.oid, pg_has_role(r.oid, 'pg_read_all_stats', 'USAGE') INTO me, all_keys
    FROM pg_roles AS r WHERE r.rolname = fw_acting_role();
    RETURN QUERY
        SELECT c.name, CASE WHEN coalesce(all_keys, false) OR c.userid = me THEN c.key END,
               c.window_start, c.window_end, c.tokens, c.rate, c.capacity, nullif(c.period_id, '')
        FROM fw_counter AS c;
END $function$;
COMMENT ON FUNCTION fw_table_counters() IS
    'counter rows of the table backend in this database (used by fw_counters); keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats; on a standby none, with a notice';

-- the bound of fw_stat's names (table_store.c's FW_TABLE_MAX_STATS)
CREATE FUNCTION fw_table_stats_limit()
RETURNS integer
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN 1024;
COMMENT ON FUNCTION fw_table_stats_limit() IS
    'how many limit and policy names the table backend keeps the statistics of apart, in a database (used by fw_table_stats_capacity)';

CREATE FUNCTION fw_table_stats(OUT name text, OUT calls bigint, OUT allowed bigint, OUT denied bigint, OUT last_denied_at timestamp with time zone, OUT since timestamp with time zone, OUT shadow_denied bigint)
RETURNS SETOF record
LANGUAGE plpgsql
STABLE SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
DECLARE
    -- on a standby, a table is read only if a DBA made it LOGGED
    counters boolean := NOT pg_is_in_recovery()
        OR (SELECT relpersistence = 'p' FROM pg_class WHERE oid = 'fw_counter'::regclass);
    deleted boolean := NOT pg_is_in_recovery()
        OR (SELECT bool_and(relpersistence = 'p') FROM pg_class
            WHERE oid IN ('fw_stat'::regclass, 'fw_stat_unnamed'::regclass));
BEGIN
    IF NOT (counters AND deleted) THEN
        RAISE NOTICE 'the statistics of fixed_window''s table are not readable on a standby'
            USING ERRCODE = 'read_only_sql_transaction',
                  DETAIL = format('A standby holds no rows of unlogged tables (%s). ',
                                  (SELECT string_agg(c.relname, ', ' ORDER BY c.relname) FROM pg_class AS c
                                   WHERE c.oid IN ('fw_counter'::regclass, 'fw_stat'::regclass,
                                                   'fw_stat_unnamed'::regclass)
                                     AND c.relpersistence <> 'p'))
                      || 'This server''s shared-memory statistics are counted.';
    END IF;
    IF counters AND deleted THEN
        RETURN QUERY
            SELECT p.name, c.calls, c.allowed, c.denied, c.last_denied_at, c.since, c.shadow_denied
            FROM fw_counter AS c
            LEFT JOIN fw_stat AS p ON p.name = c.name;
    ELSIF counters THEN
        -- fw_stat unreadable (a standby): each row under its own name, as 1.5 read them
        RETURN QUERY
            SELECT c.name, c.calls, c.allowed, c.denied, c.last_denied_at, c.since, c.shadow_denied
            FROM fw_counter AS c;
    END IF;
    IF deleted THEN
        RETURN QUERY
            SELECT t.name, t.calls, t.allowed, t.denied, t.last_denied_at, t.since, t.shadow_denied
            FROM fw_stat AS t;
        RETURN QUERY
            SELECT NULL::text, u.calls, u.allowed, u.denied, u.last_denied_at, u.since, u.shadow_denied
            FROM fw_stat_unnamed AS u;
    END IF;
END $function$;
COMMENT ON FUNCTION fw_table_stats() IS
    'statistics of the table backend''s rows, live and deleted, in this database (used by fw_stats): under their name for the names of fw_stat, under a NULL name for the others; on a standby none, with a notice';

CREATE FUNCTION fw_table_stats_capacity(OUT capacity bigint, OUT used bigint, OUT bytes bigint)
RETURNS SETOF record
LANGUAGE plpgsql
STABLE SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
BEGIN
    IF pg_is_in_recovery()
       AND (SELECT relpersistence <> 'p' FROM pg_class WHERE oid = 'fw_stat'::regclass) THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT fw_table_stats_limit()::bigint, count(*),
               pg_total_relation_size('fw_stat'::regclass)
                   + pg_total_relation_size('fw_stat_unnamed'::regclass)
        FROM fw_stat;
END $function$;
COMMENT ON FUNCTION fw_table_stats_capacity() IS
    'names whose statistics the table backend keeps apart in this database, of how many, and the bytes of fw_stat and fw_stat_unnamed (used by fw_capacity); none on a standby';

CREATE FUNCTION fw_table_capacity(OUT used bigint, OUT live bigint, OUT reclaimable bigint, OUT bytes bigint)
RETURNS SETOF record
LANGUAGE plpgsql
STABLE SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
DECLARE
    clock timestamptz := fw_now();
BEGIN
    IF pg_is_in_recovery()
       AND (SELECT relpersistence <> 'p' FROM pg_class WHERE oid = 'fw_counter'::regclass) THEN
        RETURN;
    END IF;
    RETURN QUERY
        SELECT count(*), count(*) FILTER (WHERE NOT r.gone), count(*) FILTER (WHERE r.gone),
               pg_total_relation_size('fw_counter'::regclass)
        FROM (SELECT coalesce(c.fresh_from <= clock AND (c.fresh_until IS NULL OR clock < c.fresh_until),
                              false) AS gone
              FROM fw_counter AS c) AS r;
END $function$;
COMMENT ON FUNCTION fw_table_capacity() IS
    'rows of the table backend in this database, those fw_gc() would delete now, and its size in bytes (used by fw_capacity); none on a standby';

REVOKE ALL ON FUNCTION fw_table_stats_limit() FROM PUBLIC;
