--
-- fw_policy_privileges: named policies (1.1), part 5 of 5 (fw_policy_define
-- lists them): privileges, and every bad call with its SQLSTATE; it drops
-- the extension.
--
\i sql/include/preamble.sql
\set SHOW_CONTEXT never
\set VERBOSITY sqlstate

--
-- Privileges: only superusers (or roles granted EXECUTE) define; every
-- role calls; fw_overrides shows a role the rows it made.
--
SET fixed_window.debug_now = '2026-07-01 17:00:00+00';
SELECT fw_define('pol_priv', 2, '1 minute');
SELECT fw_override('pol_priv', 'admin-made', 5, '1 minute');
CREATE ROLE regress_fw_user;
CREATE ROLE regress_fw_other;
CREATE ROLE regress_fw_auditor IN ROLE pg_read_all_stats;
SET ROLE regress_fw_user;
SELECT stmt AS "call", sqlstate_of(stmt) AS sqlstate
FROM unnest(ARRAY[
    $q$SELECT fw_define('pol_priv', 100, '1 minute')$q$,
    $q$SELECT fw_undefine('pol_priv')$q$,
    $q$SELECT fw_override('pol_priv', 'me', 100, '1 minute')$q$,
    $q$SELECT fw_exempt('pol_priv', 'me')$q$,
    $q$SELECT fw_unoverride('pol_priv', 'admin-made')$q$,
    $q$SELECT * FROM fw_policy$q$,
    $q$SELECT * FROM fw_override$q$,
    $q$INSERT INTO fw_policy (name, period, period_id, rate, capacity, shadow) VALUES ('pol_priv', '1 minute', 'PT60S', 100, 100, false)$q$,
    $q$DELETE FROM fw_override$q$,
    $q$SELECT fw_reset('pol_priv')$q$
]) WITH ORDINALITY AS t(stmt, n) ORDER BY n;
SELECT * FROM fw_limit('pol_priv', 'me');
SELECT * FROM fw_check('pol_priv', 'me');
SELECT period, ok, remaining FROM fw_limit_windows('pol_priv', 'me');
SELECT period, ok, remaining FROM fw_check_windows('pol_priv', 'me');
-- refunds are for the roles granted them (1.3): a role could refund itself to full
SELECT sqlstate_of($q$SELECT fw_refund('pol_priv', 'me', 1)$q$) AS refund_without_grant;
RESET ROLE;
GRANT EXECUTE ON FUNCTION fw_refund(text, text, integer) TO regress_fw_user;
SET ROLE regress_fw_user;
SELECT fw_refund('pol_priv', 'me', 1) AS held;
SELECT name, period, rate FROM fw_policies WHERE name = 'pol_priv';
SELECT name, key, period FROM fw_counters WHERE name = 'pol_priv' ORDER BY key;
SELECT name, key FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
RESET ROLE;
-- A role granted EXECUTE writes overrides, and sees its own rows only.
GRANT EXECUTE ON FUNCTION fw_override(text, text, integer, interval, integer),
                          fw_exempt(text, text) TO regress_fw_user;
SET SESSION AUTHORIZATION regress_fw_user;
SELECT fw_override('pol_priv', 'user-made', 3, '1 minute');
SELECT name, key, rate, created_by FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
RESET SESSION AUTHORIZATION;
SET ROLE regress_fw_user;
SELECT fw_exempt('pol_priv', 'set-role-made');
SELECT name, key, exempt, created_by FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
RESET ROLE;
SET SESSION AUTHORIZATION regress_fw_other;
SELECT name, key FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
RESET SESSION AUTHORIZATION;
SET ROLE regress_fw_auditor;
SELECT name, key FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
RESET ROLE;
SELECT name, key, exempt, created_by IN ('regress_fw_user') AS by_user
FROM fw_overrides WHERE name = 'pol_priv' ORDER BY key;
REVOKE EXECUTE ON FUNCTION fw_override(text, text, integer, interval, integer),
                           fw_exempt(text, text), fw_refund(text, text, integer) FROM regress_fw_user;
DROP ROLE regress_fw_user, regress_fw_other, regress_fw_auditor;

--
-- Bad calls: NULLs 22004, negative costs 22023, undefined policies 42704,
-- keys too long 54000; no error leaves a counter.  (A cost above a
-- window's capacity is not an error for a policy: see below.)
--
SET fixed_window.debug_now = '2026-07-01 18:00:00+00';
SELECT stmt AS "call", sqlstate_of(stmt) AS sqlstate
FROM unnest(ARRAY[
    $q$SELECT fw_limit(NULL, 'k')$q$,
    $q$SELECT fw_limit('pol_call', NULL)$q$,
    $q$SELECT fw_limit('pol_call', 'k', NULL)$q$,
    $q$SELECT fw_check(NULL, 'k')$q$,
    $q$SELECT fw_check('pol_call', NULL)$q$,
    $q$SELECT fw_check('pol_call', 'k', NULL)$q$,
    $q$SELECT * FROM fw_limit_windows(NULL, 'k')$q$,
    $q$SELECT * FROM fw_limit_windows('pol_call', NULL)$q$,
    $q$SELECT * FROM fw_limit_windows('pol_call', 'k', NULL)$q$,
    $q$SELECT * FROM fw_check_windows(NULL, 'k')$q$,
    $q$SELECT * FROM fw_check_windows('pol_call', NULL)$q$,
    $q$SELECT * FROM fw_check_windows('pol_call', 'k', NULL)$q$,
    $q$SELECT fw_refund(NULL, 'k', 1)$q$,
    $q$SELECT fw_refund('pol_call', NULL, 1)$q$,
    $q$SELECT fw_refund('pol_call', 'k', NULL)$q$,
    $q$SELECT fw_limit('pol_call', 'k', -1)$q$,
    $q$SELECT fw_check('pol_call', 'k', -1)$q$,
    $q$SELECT * FROM fw_limit_windows('pol_call', 'k', -1)$q$,
    $q$SELECT * FROM fw_check_windows('pol_call', 'k', -1)$q$,
    $q$SELECT fw_refund('pol_call', 'k', -1)$q$,
    $q$SELECT fw_limit('pol_none', 'k')$q$,
    $q$SELECT fw_check('pol_none', 'k')$q$,
    $q$SELECT * FROM fw_limit_windows('pol_none', 'k')$q$,
    $q$SELECT * FROM fw_check_windows('pol_none', 'k')$q$,
    $q$SELECT fw_refund('pol_none', 'k', 1)$q$,
    $q$SELECT fw_limit('pol_call', repeat('k', 2049))$q$,
    $q$SELECT fw_check('pol_call', repeat('é', 1025))$q$,
    $q$SELECT fw_limit(repeat('n', 257), 'k')$q$,
    $q$SELECT fw_refund('pol_inline', NULL, 5, '1 minute')$q$,
    $q$SELECT fw_refund('pol_inline', 'r', NULL, '1 minute')$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, NULL)$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, '1 minute', cost => NULL)$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 0, '1 minute')$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, '0 seconds')$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, '1 minute', cost => -1)$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, '1 minute', capacity => 4)$q$,
    $q$SELECT fw_refund('pol_inline', 'r', 5, '1 minute', 'infinity')$q$
]) WITH ORDINALITY AS t(stmt, n) ORDER BY n;
SELECT count(*) AS counters FROM fw_counters WHERE key = 'k' AND name IN ('pol_call', 'pol_shadow', 'pol_none');

-- A cost above the capacity of a policy's window: the caller cannot know
-- what an admin defined, so it is an answer, never an error (1.3; 1.1 to
-- 1.2.1 failed with 22023).  An enforced window denies, with no retry
-- time; a shadow one does not deny; an exempt key is allowed.
SELECT ok, retry_after, remaining FROM fw_limit('pol_call', 'k', 6);
SELECT ok, retry_after, remaining FROM fw_check('pol_call', 'k', 6);
SELECT ok, retry_after, remaining FROM fw_limit('pol_shadow', 'k', 3);
SELECT ok, retry_after FROM fw_limit('pol_exempt', 'newcomer', 3);
SELECT period, ok, retry_after FROM fw_limit_windows('pol_call', 'k', 6);
SELECT period, ok, retry_after FROM fw_check_windows('pol_call', 'k', 6);
SELECT * FROM fw_check('pol_call', 'k');

DROP EXTENSION fixed_window;
