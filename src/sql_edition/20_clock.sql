-- fixed_window, SQL edition: the acting role, the settings and the clock.
--
-- The edition cannot declare settings: fixed_window.* are placeholders that
-- any role may SET.  A setting that changes a decision
-- (fixed_window.debug_now; fixed_window.fail_open, which changes nothing in
-- the edition since its table never runs out of room) is honoured only in a
-- superuser's session or for a member of a role fw_setting_grant lists for
-- it: an ordinary role that sets it changes nothing.
-- fixed_window.storage is ignored: counters are always kept in fw_counter,
-- as the C extension's table backend keeps them (fw_storage_in_use() says
-- 'table').

-- the role the session acts as: SET ROLE, else its login role (SECURITY
-- DEFINER does not change the role setting)
-- (its body is parsed when it is made, so it needs no search_path of its
-- own, and without one the planner inlines it)
CREATE FUNCTION fw_acting_role()
RETURNS name
LANGUAGE sql STABLE PARALLEL SAFE
RETURN coalesce(nullif(current_setting('role'), 'none'), session_user)::name;
COMMENT ON FUNCTION fw_acting_role() IS
    'the role the session acts as (SET ROLE, else its login role), also inside SECURITY DEFINER functions: recorded as the creator of overrides';

-- whether a decision-changing setting is honoured: for a session whose
-- login role or acting role is a superuser (a superuser's session that SET
-- ROLE to an ordinary role may RESET it any time: the setting is the
-- superuser's), or whose acting role is a member of a role fw_setting_grant
-- lists for the setting
CREATE FUNCTION fw_setting_honoured(setting text)
RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
DECLARE
    actor name := fw_acting_role();
BEGIN
    RETURN (SELECT bool_or(r.rolsuper) FROM pg_roles AS r WHERE r.rolname IN (actor, session_user))
        OR EXISTS (SELECT FROM fw_setting_grant AS g
                   WHERE g.setting = fw_setting_honoured.setting
                     AND g.role_name IN (SELECT rolname FROM pg_roles)
                     AND pg_has_role(actor, g.role_name, 'MEMBER'));
END $function$;
COMMENT ON FUNCTION fw_setting_honoured(text) IS
    'whether fixed_window honours the decision-changing setting for the acting role: superusers, and members of a role fw_setting_grant lists for it (SQL edition)';

-- the time calls are judged at: the real clock, or fixed_window.debug_now
-- where it is honoured (an empty setting, the fast path, costs one lookup)
CREATE FUNCTION fw_now()
RETURNS timestamptz
LANGUAGE plpgsql PARALLEL SAFE
SET search_path FROM CURRENT
AS $function$
DECLARE
    debug text := current_setting('fixed_window.debug_now', true);
    t timestamptz;
BEGIN
    -- a value set where it is not honoured is ignored, even a bad one: an
    -- ordinary role's SET changes nothing
    IF debug IS NULL OR debug = '' OR NOT fw_setting_honoured('fixed_window.debug_now') THEN
        RETURN clock_timestamp();
    END IF;
    BEGIN
        t := debug::timestamptz;
    EXCEPTION WHEN data_exception OR syntax_error THEN
        t := NULL;
    END;
    IF t IS NULL OR NOT isfinite(t) THEN
        RAISE EXCEPTION 'invalid value for parameter "fixed_window.debug_now": "%"', debug
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'fixed_window.debug_now must be empty or a finite timestamp with time zone.';
    END IF;
    RETURN t;
END $function$;
COMMENT ON FUNCTION fw_now() IS
    'the time fixed_window judges calls at: the real clock, or fixed_window.debug_now';

CREATE FUNCTION fw_storage_in_use()
RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path FROM CURRENT
RETURN 'table';
COMMENT ON FUNCTION fw_storage_in_use() IS
    'where this session''s calls keep their counters now, as fixed_window.storage and the preloaded library decide: shmem or table';
