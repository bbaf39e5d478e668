--
-- fw_definitions: what a definition takes, and what its changes cost (1.3).
-- A definition gets every check a call of it would make; a change of a
-- policy with 200,000 overrides costs the next call of a key one index
-- probe, not a read of every override; a definer's own uncommitted change
-- and the role names of overrides behave as the README says.  Runs on both
-- storages.
--
CREATE EXTENSION fixed_window;
\i sql/include/preamble.sql
\set VERBOSITY terse
SET fixed_window.debug_now = '2026-07-01 10:00:00+00';

--
-- A definition that no call could use is refused with the call's SQLSTATE
-- (22008), for a fixed start and for every key's phase; 1.2.1 accepted it.
--
SELECT fw_define('far', 10, '300000 years');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_define('far', 10, '300000 years', start => NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fw_define('far', 10, '1 second', start => '290000-01-01 00:00+00');
SELECT fw_limit('x', 'k', 10, '300000 years');
\echo :LAST_ERROR_SQLSTATE
SELECT name, period, start FROM fw_policies WHERE name = 'far';
-- the longest periods whose windows around now fit still do
SELECT fw_define('far', 10, '200000 years', start => NULL);
SELECT fw_define('far', 10, '100000 years', start => '200000-01-01 00:00+00');
SELECT period, ok, window_start, window_end FROM fw_limit_windows('far', 'k') ORDER BY period;
SELECT fw_undefine('far');
-- NULL rate or period: 22004, as for a call
SELECT fw_window_in_range(NULL, '1 hour', NULL, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT fw_window_in_range(1, NULL, NULL, NULL);
\echo :LAST_ERROR_SQLSTATE

--
-- A policy with 200,000 overrides.  A change of one override costs the next
-- call of each key one probe of fw_override's primary key; 1.2.1 read all
-- 200,000 rows in every backend (60-70 ms a call, in the issue).
--
SELECT fw_define('big', 10, '1 minute');
INSERT INTO fw_override (name, key, period_id, period, rate, capacity, created_by)
SELECT 'big', 'k' || g, 'PT60S', '1 minute', 100, 100, current_user
FROM generate_series(1, 200000) AS g;
SELECT ok, remaining FROM fw_limit('big', 'k7');
SELECT ok, remaining FROM fw_limit('big', 'nobody');
SELECT fw_override('big', 'k8', 50, '1 minute');
SELECT fw_exempt('big', 'k9');
BEGIN;
SELECT ok, remaining FROM fw_limit('big', 'k8');
SELECT ok, remaining FROM fw_limit('big', 'k9');
SELECT ok, remaining FROM fw_limit('big', 'k7');
SELECT ok, remaining FROM fw_limit('big', 'nobody');
SELECT ok, remaining FROM fw_limit('big', 'nobody');
-- rows of fw_override read by these five calls (1.2.1: 200,000 or more)
SELECT sum(pg_stat_get_xact_tuples_fetched(i.indexrelid)) < 50 AS few_rows_read
FROM pg_index AS i WHERE i.indrelid = 'fw_override'::regclass;
COMMIT;
-- the keys' overrides follow every change
SELECT fw_unoverride('big', 'k7');
SELECT fw_override('big', 'nobody', 3, '1 minute');
SELECT key, ok, remaining FROM (VALUES ('k7'), ('k8'), ('nobody')) AS k(key),
       LATERAL fw_limit('big', k.key) ORDER BY key;
SELECT fw_undefine('big');
SELECT count(*) AS overrides_left FROM fw_override WHERE name = 'big';

--
-- A definer's own uncommitted definition applies to its own calls at once;
-- other sessions see it once it commits.  Rolled back, the definition is
-- gone, and so is what its calls spent on the table backend; in shared
-- memory, which is not transactional, the spending stays.
--
BEGIN;
SELECT fw_define('draft', 2, '1 hour');
SELECT ok, remaining FROM fw_limit('draft', 'k');
ROLLBACK;
SELECT fw_limit('draft', 'k');
\echo :LAST_ERROR_SQLSTATE
SELECT fw_define('draft', 2, '1 hour');
SELECT CASE WHEN fw_storage_in_use() = 'shmem'
            THEN remaining = 1      -- shared memory: the rolled-back call spent
            ELSE remaining = 2 END  -- the table: the rollback gave it back
       AS spending_as_documented
FROM fw_check('draft', 'k', 0);
SELECT fw_undefine('draft');
SELECT fw_reset('draft') >= 0 AS reset;

--
-- Overrides name the role that wrote them.  A role dropped and created
-- again under the same name sees the overrides its namesake wrote, as a
-- role restored by pg_dump sees its own: reassign them before dropping a
-- role (the README's recipe).
--
SELECT fw_define('owned', 5, '1 hour');
CREATE ROLE regress_fw_writer;
GRANT EXECUTE ON FUNCTION fw_override(text, text, integer, interval, integer) TO regress_fw_writer;
SET ROLE regress_fw_writer;
SELECT fw_override('owned', 'written', 9, '1 hour');
SELECT key, created_by FROM fw_overrides;
RESET ROLE;
REVOKE ALL ON FUNCTION fw_override(text, text, integer, interval, integer) FROM regress_fw_writer;
DROP ROLE regress_fw_writer;
SELECT key, created_by, created_by NOT IN (SELECT rolname FROM pg_roles) AS orphaned
FROM fw_overrides WHERE name = 'owned';
CREATE ROLE regress_fw_writer;
SET ROLE regress_fw_writer;
SELECT key, created_by FROM fw_overrides;
RESET ROLE;
-- the recipe: reassign them to a role that stays
UPDATE fw_override SET created_by = current_user WHERE created_by = 'regress_fw_writer';
SET ROLE regress_fw_writer;
SELECT count(*) AS still_visible FROM fw_overrides;
RESET ROLE;
DROP ROLE regress_fw_writer;
SELECT fw_undefine('owned');

--
-- An admin's change never makes a call fail (1.3, after review).  A window
-- or an override smaller than a call's cost denies the call, with no retry
-- time; a shadow window smaller than the cost only counts it; an exempt
-- key is allowed whatever the cost.  Before, such calls failed with 22023:
-- an admin trying a stricter window in shadow mode broke every large call.
-- An inline call that asks more than its own capacity is still the
-- caller's mistake, 22023.
--
SELECT fw_define('llm', 100000, '1 hour');
SELECT ok, remaining FROM fw_limit('llm', 'u1', 4000);
SELECT fw_define('llm', 1000, '1 minute', shadow => true);
SELECT ok, remaining, retry_after FROM fw_limit('llm', 'u1', 4000);
SELECT period, shadow, ok, remaining, retry_after FROM fw_limit_windows('llm', 'u1', 4000);
SELECT calls, allowed, denied, shadow_denied FROM fw_stats WHERE name = 'llm';
SELECT fw_override('llm', 'u2', 1000, '1 hour');
SELECT ok, remaining, retry_after FROM fw_limit('llm', 'u2', 4000);
SELECT ok, remaining, retry_after FROM fw_check('llm', 'u2', 4000);
SELECT ok, remaining FROM fw_limit('llm', 'u2', 1000);
SELECT fw_exempt('llm', 'partner');
SELECT ok, retry_after FROM fw_limit('llm', 'partner', 2000000);
SELECT calls, allowed, denied, shadow_denied FROM fw_stats WHERE name = 'llm';
SELECT fw_limit('llm-inline', 'u1', 1000, '1 minute', cost => 4000);
\echo :LAST_ERROR_SQLSTATE
SELECT fw_undefine('llm');
SELECT fw_reset('llm') >= 0 AS reset;

--
-- Removing a policy's last window removes the policy: its exemptions go
-- too (1.3 before its review kept them, and a policy defined later under
-- the name found its key exempt again).
--
SELECT fw_define('gone', 2, '1 minute');
SELECT fw_exempt('gone', 'partner');
SELECT fw_undefine('gone', '1 minute');
SELECT count(*) AS policies, (SELECT count(*) FROM fw_overrides WHERE name = 'gone') AS overrides
FROM fw_policies WHERE name = 'gone';
SELECT fw_define('gone', 2, '1 hour');
SELECT string_agg(ok::text, ',') AS partner_calls
FROM generate_series(1, 3) AS g, LATERAL fw_limit('gone', 'partner', least(g, 1)) AS r;
SELECT fw_undefine('gone');
SELECT fw_reset('gone') >= 0 AS reset;

--
-- A change written with session_replication_role = replica, as logical
-- replication's apply worker writes, is seen by the sessions that had the
-- policy cached: the triggers that tell them fire always (before, they did
-- not fire in replica mode, and this session kept rate 5).
--
SELECT fw_define('replicated', 5, '1 hour');
SELECT remaining FROM fw_check('replicated', 'k');
SET session_replication_role = replica;
UPDATE fw_policy SET rate = 500, capacity = 500 WHERE name = 'replicated';
RESET session_replication_role;
SELECT remaining FROM fw_check('replicated', 'k');
SELECT fw_undefine('replicated');

DROP EXTENSION fixed_window;
