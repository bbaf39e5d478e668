-- The settings every regression test starts with (\i from the top of the
-- tree): dates, intervals and times print the same on every server.
SET DateStyle = 'ISO, YMD';
SET IntervalStyle = 'postgres';
SET TimeZone = 'UTC';
