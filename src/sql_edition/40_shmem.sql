-- fixed_window, SQL edition: the functions of the C extension that read or
-- change shared memory.  The edition has none: every counter is a row of
-- fw_counter, every statistic one of fw_counter, fw_stat or fw_stat_unnamed.
-- What they read is returned as it is -- no rows, nothing removed -- so that
-- the views and fw_reset / fw_stats_reset keep the definitions of the C
-- extension; a call that would change shared memory (fw_resize_counters)
-- fails with feature_not_supported and names the C extension.

CREATE FUNCTION fw_shmem_counters(OUT name text, OUT key text, OUT window_start timestamptz,
                                  OUT window_end timestamptz, OUT remaining integer,
                                  OUT rate integer, OUT capacity integer, OUT period_id text)
RETURNS SETOF record
LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
SET search_path FROM CURRENT
AS $function$
    SELECT NULL::text, NULL::text, NULL::timestamptz, NULL::timestamptz, NULL::integer,
           NULL::integer, NULL::integer, NULL::text
    WHERE false
$function$;
COMMENT ON FUNCTION fw_shmem_counters() IS
    'counters of this database in shared memory; keys of other roles are NULL unless the caller is a superuser or has pg_read_all_stats; period_id: the policy window, NULL for inline calls (SQL edition: none, it keeps no counters in shared memory)';

CREATE FUNCTION fw_shmem_stats(OUT name text, OUT calls bigint, OUT allowed bigint, OUT denied bigint,
                               OUT last_denied_at timestamptz, OUT since timestamptz,
                               OUT shadow_denied bigint)
RETURNS SETOF record
LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
SET search_path FROM CURRENT
AS $function$
    SELECT NULL::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::timestamptz,
           NULL::timestamptz, NULL::bigint
    WHERE false
$function$;
COMMENT ON FUNCTION fw_shmem_stats() IS
    'statistics of this database''s limits and policies counted in shared memory, without no_room (fw_stats uses fw_shmem_stats_1_5 since 1.5) (SQL edition: none)';

CREATE FUNCTION fw_shmem_stats_1_5(OUT name text, OUT calls bigint, OUT allowed bigint,
                                   OUT denied bigint, OUT last_denied_at timestamptz,
                                   OUT since timestamptz, OUT shadow_denied bigint,
                                   OUT no_room bigint)
RETURNS SETOF record
LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
SET search_path FROM CURRENT
AS $function$
    SELECT NULL::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::timestamptz,
           NULL::timestamptz, NULL::bigint, NULL::bigint
    WHERE false
$function$;
COMMENT ON FUNCTION fw_shmem_stats_1_5() IS
    'statistics of this database''s limits and policies counted in shared memory, with no_room (used by fw_stats) (SQL edition: none)';

CREATE FUNCTION fw_shmem_capacity(OUT scope text, OUT name text, OUT capacity bigint, OUT used bigint,
                                  OUT live bigint, OUT reclaimable bigint, OUT bytes bigint)
RETURNS SETOF record
LANGUAGE sql VOLATILE STRICT PARALLEL RESTRICTED
SET search_path FROM CURRENT
AS $function$
    SELECT NULL::text, NULL::text, NULL::bigint, NULL::bigint, NULL::bigint, NULL::bigint,
           NULL::bigint
    WHERE false
$function$;
COMMENT ON FUNCTION fw_shmem_capacity() IS
    'slots of shared memory''s counter table, in all (scope counters) and held by each database and role, and entries of the statistics (used by fw_capacity) (SQL edition: none, it has no shared memory)';

-- nothing to remove; a NULL name is refused as the C extension refuses it
CREATE FUNCTION fw_shmem_reset(name text, key text)
RETURNS bigint
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
BEGIN
    IF fw_shmem_reset.name IS NULL THEN
        RAISE EXCEPTION 'argument "%" must not be null', 'name' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    RETURN 0;
END $function$;
COMMENT ON FUNCTION fw_shmem_reset(text, text) IS
    'remove counters of this database from shared memory: one, or every counter of the name when key is NULL (used by fw_reset) (SQL edition: none to remove, returns 0)';

CREATE FUNCTION fw_shmem_stats_reset()
RETURNS void
LANGUAGE sql
SET search_path FROM CURRENT
AS $function$
    SELECT
$function$;
COMMENT ON FUNCTION fw_shmem_stats_reset() IS
    'zero the statistics of this database in shared memory (used by fw_stats_reset) (SQL edition: it keeps none, so nothing changes)';

CREATE FUNCTION fw_resize_counters(slots integer, OUT slots_before integer, OUT slots_after integer,
                                   OUT counters_moved bigint)
RETURNS record
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
BEGIN
    RAISE EXCEPTION 'fixed_window''s SQL edition keeps no counters in shared memory'
        USING ERRCODE = 'feature_not_supported',
              DETAIL = 'fw_resize_counters resizes the shared-memory table of counters of the C extension; this edition keeps every counter in the table fw_counter, which has no fixed size.',
              HINT = 'Shared-memory counters need the C extension fixed_window, loaded with shared_preload_libraries.';
END $function$;
COMMENT ON FUNCTION fw_resize_counters(integer) IS
    'give the shared-memory counters of the whole server a table of this many slots, moving every counter; refused below the slots in use (SQL edition: refused, SQLSTATE 0A000)';

REVOKE ALL ON FUNCTION fw_shmem_reset(text, text), fw_shmem_stats_reset(), fw_resize_counters(integer)
    FROM PUBLIC;
