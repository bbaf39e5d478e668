/* fixed_window--1.3--1.4.sql: shared-memory counters without preloading; see CHANGELOG.md */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window UPDATE TO '1.4'" to load this file. \quit

-- The counters' table in shared memory is replaced by one of another size,
-- online: every counter moves, calls wait for the copy only.  Shared by
-- every database of the server, hence for superusers unless granted.
CREATE FUNCTION fw_resize_counters(slots integer,
    OUT slots_before integer, OUT slots_after integer, OUT counters_moved bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'fw_resize_counters'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION fw_resize_counters(integer) FROM PUBLIC;

COMMENT ON FUNCTION fw_resize_counters(integer) IS
'give the shared-memory counters of the whole server a table of this many slots, moving every counter; refused below the slots in use';
