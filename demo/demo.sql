-- make demo: three calls per 2-second window, on the real clock.
\pset footer off
\echo
\echo '# A server that does not preload the library:'
SHOW shared_preload_libraries;
\echo '# CREATE EXTENSION fixed_window; then shared memory for the counters, with no restart:'
CREATE EXTENSION fixed_window;
\echo '# LOAD ''fixed_window''; ALTER SYSTEM SET fixed_window.storage = ''shmem''; SELECT pg_reload_conf();'
LOAD 'fixed_window';
ALTER SYSTEM SET fixed_window.storage = 'shmem';
SELECT pg_reload_conf() \gset
-- a new session reads the reloaded configuration
\c
SELECT fw_storage_in_use();
\echo
\echo '# At most 3 calls per 2 seconds for user 42, windows starting now. Four calls in a row:'
SELECT now() AS t0 \gset
\set lim '''api'', ''user:42'', 3, ''2 seconds'', start => ' :'t0'
\echo '# SELECT * FROM fw_limit(' :lim ');'
SELECT * FROM fw_limit(:lim);
SELECT * FROM fw_limit(:lim);
SELECT * FROM fw_limit(:lim);
SELECT * FROM fw_limit(:lim);
\echo '# The 4th call was denied: not ok, with the time to wait in retry_after.'
\echo
\echo '# Other keys have quotas of their own:'
SELECT * FROM fw_limit('api', 'user:7', 3, '2 seconds', start => :'t0');
\echo
\echo '# Wait for retry_after (fw_check answers without spending), then call again:'
SELECT extract(epoch FROM retry_after) AS wait_s
FROM fw_check(:lim) \gset
SELECT :'wait_s' AS waiting_seconds, pg_sleep(:'wait_s');
SELECT * FROM fw_limit(:lim);
\echo '# A new window: allowed again, 2 of 3 tokens left.'
\echo
\echo '# The counters, in dynamic shared memory that the first call created:'
SELECT name, key, storage, remaining, window_end - window_start AS period FROM fw_counters ORDER BY key;
