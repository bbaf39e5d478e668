/* fixed_window_proxy--1.1--1.2.sql: the reading of a shard's answer inlined into each call */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION fixed_window_proxy UPDATE TO '1.2'" to load this file. \quit

--
-- A shard's numbers are turned back into intervals and timestamps by SQL
-- functions.  In 1.1 the planner could not inline fw_wire_span into the
-- calls that use it: it was STRICT while its body is not (format() answers
-- NULL arguments), and IMMUTABLE while format() and the casts it uses are
-- STABLE.  So each routed call ran it as a function of its own, planned
-- anew at every transaction: about a sixth of the router's CPU per call.
-- Declared as what they are, STABLE, and fw_wire_span saying what NULL
-- gives, they are inlined, and answer as before.
--

CREATE OR REPLACE FUNCTION fw_wire_span(seconds numeric)
RETURNS interval
LANGUAGE sql STABLE PARALLEL SAFE
RETURN CASE WHEN seconds IS NOT NULL THEN
    pg_catalog.format('PT%sH%sM%sS', pg_catalog.div(seconds, 3600),
                      pg_catalog.div(pg_catalog.mod(seconds, 3600), 60),
                      pg_catalog.mod(seconds, 60))::pg_catalog.interval END;

ALTER FUNCTION @extschema@.fw_wire_time(numeric) STABLE;
ALTER FUNCTION @extschema@.fw_wire_answer(@extschema@.fw_wire_result) STABLE;
ALTER FUNCTION @extschema@.fw_wire_answer(@extschema@.fw_wire_window) STABLE;
