-- The call log of the load tests across real window boundaries (t/007, t/012):
-- load_call() of each test writes one row per call with the time before and
-- after it and the reset_after it got.
CREATE UNLOGGED TABLE calls (run text, key text, ok boolean,
    t0 timestamptz, t1 timestamptz, reset_after interval);
-- The window of each call: the call was judged at some time between t0 and
-- t1, and ended its window reset_after later, on a whole second; that second
-- is unique while t1 - t0 is under a second.
-- A call whose interval holds no whole second got a wrong reset_after.
CREATE VIEW call_windows AS
    SELECT run, key, ok, window_end,
           window_end + 1 <= latest_end AS ambiguous,
           window_end > latest_end AS inconsistent
    FROM (SELECT run, key, ok,
                 ceil(extract(epoch FROM t0 + reset_after)) AS window_end,
                 extract(epoch FROM t1 + reset_after) AS latest_end
          FROM calls) AS c;
CREATE VIEW per_window AS
    WITH runs AS (
        SELECT run, extract(epoch FROM min(t0)) AS first_call,
               extract(epoch FROM max(t1)) AS last_call
        FROM calls GROUP BY run)
    SELECT w.run, key, window_end,
           count(*) FILTER (WHERE ok) AS allowed, count(*) AS calls,
           window_end - 1 >= first_call AND window_end <= last_call AS full_window
    FROM call_windows w JOIN runs USING (run)
    GROUP BY w.run, key, window_end, first_call, last_call;
