/* fixed_window--1.0.sql */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION fixed_window" to load this file. \quit

CREATE TYPE fw_result AS (
    ok boolean,
    retry_after interval,
    remaining integer,
    reset_after interval
);

COMMENT ON TYPE fw_result IS
'answer of fw_limit and fw_check: ok, retry_after (NULL when ok), tokens remaining, time until the window ends';

CREATE FUNCTION fw_limit(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS fw_result
AS 'MODULE_PATHNAME', 'fw_limit'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION fw_limit(text, text, integer, interval, timestamptz, integer, integer) IS
'spend cost tokens of limit name for key if the current window holds them; rate tokens per period, unused ones kept up to capacity';

CREATE FUNCTION fw_check(
    name text,
    key text,
    rate integer,
    period interval,
    start timestamptz DEFAULT '1970-01-01 00:00:00+00',
    cost integer DEFAULT 1,
    capacity integer DEFAULT NULL)
RETURNS fw_result
AS 'MODULE_PATHNAME', 'fw_check'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

COMMENT ON FUNCTION fw_check(text, text, integer, interval, timestamptz, integer, integer) IS
'what fw_limit would answer now, without spending tokens or creating a counter';
