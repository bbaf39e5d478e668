-- fixed_window, SQL edition: maintenance of the table backend, carried over
-- from the C extension 1.6 as it is: fw_gc() deletes the rows that answer as
-- no row would, fw_reset() the counters of a name or of one key,
-- fw_stats_reset() starts the statistics afresh.  None waits for a row an
-- open transaction holds, except fw_reset(name, key) for its one key.  The
-- shared-memory halves (fw_shmem_reset, fw_shmem_stats_reset) have nothing
-- to do in this edition.  For admins only: not executable by PUBLIC.

CREATE FUNCTION fw_gc()
RETURNS bigint
LANGUAGE sql
SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
    WITH locked AS (
        SELECT d.name, d.key, d.period_id FROM fw_counter AS d
        WHERE d.fresh_from <= fw_now()
          AND (d.fresh_until IS NULL OR fw_now() < d.fresh_until)
        FOR UPDATE SKIP LOCKED),
    gone AS (
        DELETE FROM fw_counter AS c
        USING locked AS l
        WHERE c.name = l.name AND c.key = l.key AND c.period_id = l.period_id
        RETURNING 1)
    SELECT count(*) FROM gone
$function$;
COMMENT ON FUNCTION fw_gc() IS
    'delete the rows of the table backend that answer as no row would (their window has passed), skipping rows that open transactions hold; returns how many';

CREATE FUNCTION fw_reset(name text, key text DEFAULT NULL::text)
RETURNS bigint
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
DECLARE
    removed bigint;
BEGIN
    IF fw_reset.key IS NOT NULL THEN
        -- one key: wait for a transaction that holds its rows
        DELETE FROM fw_counter AS c
        WHERE c.name = fw_reset.name AND c.key = fw_reset.key;
    ELSE
        -- every key of the limit: rows that open transactions hold are left
        WITH locked AS (
            SELECT d.name, d.key, d.period_id FROM fw_counter AS d
            WHERE d.name = fw_reset.name
            FOR UPDATE SKIP LOCKED)
        DELETE FROM fw_counter AS c
        USING locked AS l
        WHERE c.name = l.name AND c.key = l.key AND c.period_id = l.period_id;
    END IF;
    GET DIAGNOSTICS removed = ROW_COUNT;
    RETURN removed + fw_shmem_reset(fw_reset.name, fw_reset.key);
END $function$;
COMMENT ON FUNCTION fw_reset(text,text) IS
    'remove the counters of one key (inline and of every window of the policy), or every counter of a limit or policy when key is NULL, in both storages (with key NULL, table rows that open transactions hold are left); returns how many; the next call starts afresh';

CREATE FUNCTION fw_stats_reset()
RETURNS void
LANGUAGE sql
SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
    SELECT fw_shmem_stats_reset();
    WITH locked AS (
        SELECT d.name, d.key, d.period_id FROM fw_counter AS d
        FOR NO KEY UPDATE SKIP LOCKED)
    UPDATE fw_counter AS c
        SET calls = 0, allowed = 0, denied = 0, last_denied_at = NULL, shadow_denied = 0,
            since = fw_now()
        FROM locked AS l
        WHERE c.name = l.name AND c.key = l.key AND c.period_id = l.period_id;
    DELETE FROM fw_stat AS s
        WHERE s.name = ANY (ARRAY(
            SELECT t.name FROM fw_stat AS t ORDER BY t.name FOR UPDATE));
    DELETE FROM fw_stat_unnamed;
$function$;
COMMENT ON FUNCTION fw_stats_reset() IS
    'start the statistics of fw_stats afresh, for this database (table rows that open transactions hold keep their counts)';

REVOKE ALL ON FUNCTION fw_gc(), fw_reset(text, text), fw_stats_reset() FROM PUBLIC;
