-- fixed_window, SQL edition: the types and tables of the C extension 1.6
-- (same names, columns, keys, defaults and triggers), plus fw_setting_grant.
-- The CHECK constraints of fw_policy and fw_override call fw_window_id and
-- are added by 30_policy.sql, once that function exists.

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

-- the counters: one row per (name, key) for an inline limit (period_id ''),
-- one per window of a policy (period_id its fw_window_id)
CREATE UNLOGGED TABLE fw_counter (
    name text NOT NULL,
    key text NOT NULL,
    window_start timestamptz NOT NULL,
    window_end timestamptz NOT NULL,
    tokens integer NOT NULL,
    rate integer NOT NULL,
    capacity integer NOT NULL,
    fresh_from timestamptz,
    fresh_until timestamptz,
    userid oid NOT NULL,
    calls bigint NOT NULL,
    allowed bigint NOT NULL,
    denied bigint NOT NULL,
    last_denied_at timestamptz,
    since timestamptz NOT NULL,
    period_id text NOT NULL DEFAULT '',
    shadow_denied bigint NOT NULL DEFAULT 0,
    CONSTRAINT fw_counter_pkey PRIMARY KEY (name, key, period_id)
);

-- statistics of deleted counter rows, per name for the names kept apart
CREATE UNLOGGED TABLE fw_stat (
    name text NOT NULL,
    calls bigint NOT NULL,
    allowed bigint NOT NULL,
    denied bigint NOT NULL,
    last_denied_at timestamptz,
    since timestamptz NOT NULL,
    shadow_denied bigint NOT NULL DEFAULT 0,
    CONSTRAINT fw_stat_pkey PRIMARY KEY (name)
);

-- ... and of the other names, in one row
CREATE UNLOGGED TABLE fw_stat_unnamed (
    unnamed boolean NOT NULL DEFAULT true CONSTRAINT fw_stat_unnamed_unnamed_check CHECK (unnamed),
    calls bigint NOT NULL,
    allowed bigint NOT NULL,
    denied bigint NOT NULL,
    last_denied_at timestamptz,
    since timestamptz NOT NULL,
    shadow_denied bigint NOT NULL,
    CONSTRAINT fw_stat_unnamed_pkey PRIMARY KEY (unnamed)
);

CREATE TABLE fw_policy (
    name text NOT NULL,
    period interval NOT NULL,
    period_id text NOT NULL,
    rate integer NOT NULL,
    capacity integer NOT NULL,
    start timestamptz,
    shadow boolean NOT NULL,
    comment text,
    CONSTRAINT fw_policy_pkey PRIMARY KEY (name, period_id)
);

CREATE TABLE fw_override (
    name text NOT NULL,
    key text NOT NULL,
    period_id text NOT NULL,
    period interval,
    rate integer,
    capacity integer,
    created_by name NOT NULL,
    CONSTRAINT fw_override_pkey PRIMARY KEY (name, key, period_id)
);

CREATE TABLE fw_metric_name (
    pattern text COLLATE "C" NOT NULL,
    CONSTRAINT fw_metric_name_pkey PRIMARY KEY (pattern),
    CONSTRAINT fw_metric_name_pattern
        CHECK ((length(pattern) - length(rtrim(pattern, chr(92)))) % 2 = 0)
);

-- The objects' comments, as the C extension has them.
COMMENT ON TYPE fw_result IS
'answer of fw_limit and fw_check: ok, retry_after (NULL when ok), tokens remaining, time until the window ends';
COMMENT ON TYPE fw_window_result IS
'one window''s part of a named call: its period, rate and capacity (the key''s override, if any), whether it is a shadow, its own verdict (ok, retry_after NULL when ok, tokens remaining, time until it ends) and its bounds';
COMMENT ON TABLE fw_counter IS
'counters of the table backend (fixed_window.storage = table, or auto without preload); period_id: the window of a policy, '''' for inline calls; fresh_from/fresh_until: when a row answers as no row would, so that fw_gc() may delete it; userid: role of the last fw_limit call; calls .. since, shadow_denied: statistics of the row, added up by fw_stats';
COMMENT ON TABLE fw_stat IS
'the limit and policy names whose statistics the table backend keeps apart, at most fw_table_stats_limit() (a row of fw_counter that counts its first call adds its name while there is room), with the statistics of their deleted rows; part of fw_stats';
COMMENT ON TABLE fw_stat_unnamed IS
'statistics of the table backend''s deleted rows whose names have no row in fw_stat, together; part of fw_stats, under a NULL name';
COMMENT ON TABLE fw_policy IS
'windows of named policies, one row per (name, period); written by fw_define and fw_undefine; start NULL: each key''s own phase';
COMMENT ON TABLE fw_override IS
'one key''s own rate for a window of a policy, or (period NULL) its exemption from the policy; written by fw_override, fw_exempt and fw_unoverride; created_by: the role that wrote it (its SET ROLE, else its login role)';
COMMENT ON TABLE fw_metric_name IS
'the limit and policy names that have series of their own in the metrics (fw_metrics, examples/monitoring): LIKE patterns, \ escaping _ and %; while it is empty, every name with statistics of its own';

-- New in the SQL edition: which roles (and their members) a decision-changing
-- setting (fixed_window.debug_now, fixed_window.fail_open) is honoured for,
-- besides superusers.  Only its owner, the role that installed the edition,
-- may change it.
CREATE TABLE fw_setting_grant (
    setting text NOT NULL
        CONSTRAINT fw_setting_grant_setting_check
        CHECK (setting IN ('fixed_window.debug_now', 'fixed_window.fail_open')),
    role_name name NOT NULL,
    CONSTRAINT fw_setting_grant_pkey PRIMARY KEY (setting, role_name)
);
COMMENT ON TABLE fw_setting_grant IS
    'roles for whom (and whose members) a decision-changing setting of fixed_window is honoured: fixed_window.debug_now, fixed_window.fail_open; superusers always';

-- trigger of fw_counter: keeps the statistics of deleted counter rows in fw_stat
CREATE FUNCTION fw_counter_deleted()
RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
BEGIN
    WITH g AS (
        SELECT d.name, sum(d.calls) AS calls, sum(d.allowed) AS allowed, sum(d.denied) AS denied,
               max(d.last_denied_at) AS last_denied_at, min(d.since) AS since,
               sum(d.shadow_denied) AS shadow_denied,
               EXISTS (SELECT FROM fw_stat AS p WHERE p.name = d.name) AS named
        FROM gone AS d
        GROUP BY d.name),
    named AS (
        INSERT INTO fw_stat AS s
        SELECT g.name, g.calls, g.allowed, g.denied, g.last_denied_at, g.since, g.shadow_denied
        FROM g
        WHERE g.named
        ORDER BY g.name
        ON CONFLICT (name) DO UPDATE
            SET calls = s.calls + excluded.calls,
                allowed = s.allowed + excluded.allowed,
                denied = s.denied + excluded.denied,
                last_denied_at = greatest(s.last_denied_at, excluded.last_denied_at),
                since = least(s.since, excluded.since),
                shadow_denied = s.shadow_denied + excluded.shadow_denied)
    INSERT INTO fw_stat_unnamed AS u (calls, allowed, denied, last_denied_at, since, shadow_denied)
    SELECT sum(g.calls), sum(g.allowed), sum(g.denied), max(g.last_denied_at), min(g.since),
           sum(g.shadow_denied)
    FROM g
    WHERE NOT g.named
    HAVING count(*) > 0
    ON CONFLICT (unnamed) DO UPDATE
        SET calls = u.calls + excluded.calls,
            allowed = u.allowed + excluded.allowed,
            denied = u.denied + excluded.denied,
            last_denied_at = greatest(u.last_denied_at, excluded.last_denied_at),
            since = least(u.since, excluded.since),
            shadow_denied = u.shadow_denied + excluded.shadow_denied;
    RETURN NULL;
END $function$;
COMMENT ON FUNCTION fw_counter_deleted() IS
    'trigger of fw_counter: keeps the statistics of deleted counter rows in fw_stat';

-- The C extension's trigger makes every session drop its cached policy
-- definitions when a change commits.  The SQL edition caches nothing: every
-- call reads fw_policy and fw_override in its own snapshot, so there is
-- nothing to drop.
CREATE FUNCTION fw_policy_changed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $function$
BEGIN
    RETURN NULL;
END $function$;
COMMENT ON FUNCTION fw_policy_changed() IS
    'trigger of fw_policy and fw_override: every session drops its cached definitions when the change commits; of fw_stat (since 1.6), on deletions: every session that found the table backend''s names full counts them again';

CREATE TRIGGER fw_counter_keep_stats AFTER DELETE ON fw_counter
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION fw_counter_deleted();
CREATE TRIGGER fw_override_changed AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON fw_override
    FOR EACH STATEMENT EXECUTE FUNCTION fw_policy_changed();
CREATE TRIGGER fw_policy_changed AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON fw_policy
    FOR EACH STATEMENT EXECUTE FUNCTION fw_policy_changed();
CREATE TRIGGER fw_stat_freed AFTER DELETE OR TRUNCATE ON fw_stat
    FOR EACH STATEMENT EXECUTE FUNCTION fw_policy_changed();

REVOKE ALL ON fw_counter, fw_stat, fw_stat_unnamed, fw_policy, fw_override, fw_metric_name,
    fw_setting_grant FROM PUBLIC;
REVOKE ALL ON FUNCTION fw_counter_deleted(), fw_policy_changed() FROM PUBLIC;
