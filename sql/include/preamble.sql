-- The settings every regression test starts with (\i from the top of the
-- tree): dates, intervals and times print the same on every server.
SET DateStyle = 'ISO, YMD';
SET IntervalStyle = 'postgres';
SET TimeZone = 'UTC';
-- An error's CONTEXT names the function that raised it, and so the language
-- an edition is written in (C, or PL/pgSQL in the SQL edition): the suites,
-- run against both, show it only where a test asks (\set SHOW_CONTEXT errors).
\set SHOW_CONTEXT never
