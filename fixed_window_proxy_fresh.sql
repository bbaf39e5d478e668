/* fixed_window_proxy_fresh.sql: the end of a new router's script, fixed_window_proxy--<version>.sql */

-- A new router routes by jump consistent hashing: the row that keeps a
-- router updated from 1.2 on the modulo is not for it (fw_routing).
DELETE FROM fw_routing;
