-- The test cluster, set up as the README says: fixed_window in the schema fw,
-- the roles app (the application) and fw_admin (a group that resets), with
-- the README's grants; and three shard databases p0..p2 routed by a router
-- database (fixed_window_proxy), for the routing tests.  Run by test.sh as
-- the superuser postgres, with psql's variable dir naming the socket
-- directory.
\set ON_ERROR_STOP on
CREATE ROLE app LOGIN;
CREATE ROLE fw_admin NOLOGIN;
CREATE ROLE alice LOGIN IN ROLE fw_admin;

CREATE SCHEMA fw;
CREATE EXTENSION fixed_window SCHEMA fw;
ALTER DATABASE postgres SET search_path = "$user", public, fw;
GRANT USAGE ON SCHEMA fw TO app, fw_admin;
GRANT EXECUTE ON FUNCTION fw.fw_reset(text, text) TO fw_admin;
GRANT EXECUTE ON FUNCTION fw.fw_refund(text, text, integer),
    fw.fw_refund(text, text, integer, interval, timestamptz, integer, integer) TO app, fw_admin;
