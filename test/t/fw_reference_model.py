#!/usr/bin/env python3
"""Property test of fw_limit and fw_check against a reference model.

The model below restates fixed_window's semantics from the README in Python,
with exact (unbounded) integers and Python's own calendar, sharing no code
with the extension.  A seeded generator draws thousands of calls: random
names and keys (empty, non-ASCII, at and over the length limits, 20 kB),
rates, periods, starts, costs and capacities from valid, extreme and invalid
values, and a debug clock that steps forward, backward, across window
boundaries and across millennia.  The model predicts every answer, or the
SQLSTATE of every error; psql runs the same calls on a live server; every
line must agree.

    fw_reference_model.py --storage shmem|table [--seed N] [--calls N] [--edition c|sql]

With --edition sql (the SQL edition, fixed_window_sql) the calls of a key
whose counter recorded a window start before PostgreSQL's first timestamp
(4714 BC: a window of hundreds of thousands of years, on a grid that reaches
back past it) are not compared once it did: the C extension keeps such a
start in its 64 bits, which no SQL can write into a timestamptz, so the
edition keeps a start it derives from the window's end, and a later call on
another grid may count other windows (docs/sql-edition.md, "What SQL cannot
match").  They are counted, and printed, as skipped.

psql is found on PATH and connects with the usual PG* environment variables.
Exits 0 when every answer matched, 1 otherwise.
"""

import argparse
import calendar
import collections
import datetime
import random
import subprocess
import sys

INT32_MAX = 2**31 - 1
INT32_MIN = -2**31
INT64_MAX = 2**63 - 1
INT64_MIN = -2**63

USECS_PER_SEC = 10**6
USECS_PER_DAY = 86400 * USECS_PER_SEC
DAYS_PER_400_YEARS = 146097          # the Gregorian calendar repeats
EPOCH_2000 = datetime.date(2000, 1, 1)
UNIX_EPOCH = -946684800 * USECS_PER_SEC  # 1970-01-01, in PostgreSQL's time

MAX_NAME_BYTES = 256
MAX_KEY_BYTES = 2048


class OutOfRange(Exception):
    """A window boundary or duration beyond 64 bits: SQLSTATE 22008."""


def int64(value):
    if not INT64_MIN <= value <= INT64_MAX:
        raise OutOfRange()
    return value


# --- calendar: timestamps are microseconds since 2000-01-01 00:00 UTC ------

def civil_from_days(days):
    """(year, month, day) of a day number, for any year."""
    cycles, rest = divmod(days, DAYS_PER_400_YEARS)
    date = EPOCH_2000 + datetime.timedelta(days=rest)
    return date.year + 400 * cycles, date.month, date.day


def days_from_civil(year, month, day):
    cycles, year_in_cycle = divmod(year - 2000, 400)
    date = datetime.date(2000 + year_in_cycle, month, day)
    return cycles * DAYS_PER_400_YEARS + (date - EPOCH_2000).days


def add_months(t, months):
    """t + months as PostgreSQL adds an interval's month part in UTC."""
    days, time_of_day = divmod(t, USECS_PER_DAY)
    year, month, day = civil_from_days(days)
    year, month0 = divmod(year * 12 + month - 1 + months, 12)
    month = month0 + 1
    last = calendar.monthrange(2000 + (year - 2000) % 400, month)[1]
    return days_from_civil(year, month, min(day, last)) * USECS_PER_DAY + time_of_day


def timestamp_text(t):
    days, time_of_day = divmod(t, USECS_PER_DAY)
    year, month, day = civil_from_days(days)
    seconds, usecs = divmod(time_of_day, USECS_PER_SEC)
    return '%04d-%02d-%02d %02d:%02d:%02d.%06d+00' % (
        year, month, day, seconds // 3600, seconds // 60 % 60, seconds % 60, usecs)


def timestamp(year, month=1, day=1, usecs=0):
    return days_from_civil(year, month, day) * USECS_PER_DAY + usecs


# PostgreSQL's timestamptz range, of which the generator stays inside AD;
# its first timestamp, 4714-11-24 BC, in microseconds since 2000.
MIN_TIMESTAMP = -211813488000000000
MIN_CLOCK = timestamp(1)
MAX_CLOCK = timestamp(294276, 12, 31, USECS_PER_DAY - 1)
HOME = timestamp(2026, 6, 1, 12 * 3600 * USECS_PER_SEC)


# --- the semantics ----------------------------------------------------------

class Limit:
    """A call's validated parameters: a window grid and a token rule."""

    def __init__(self, rate, months, span, start, cost, capacity):
        self.rate, self.months, self.span = rate, months, span
        self.start, self.cost, self.capacity = start, cost, capacity

    def boundary(self, k):
        """W(k) = start + k * period: months first, then the exact part."""
        base = self.start
        if self.months:
            base = int64(add_months(self.start, int64(k * self.months)))
        return int64(base + int64(k * self.span))

    def index(self, t):
        """The k with W(k) <= t < W(k+1)."""
        diff = int64(t - self.start)
        if not self.months:
            return diff // self.span
        # exact search: boundaries are computed without a 64-bit limit here
        def w(k):
            return add_months(self.start, k * self.months) + k * self.span
        low, high = -1, 1
        while w(low) > t:
            low *= 2
        while w(high) <= t:
            high *= 2
        while high - low > 1:
            mid = (low + high) // 2
            if w(mid) <= t:
                low = mid
            else:
                high = mid
        return low


def decide(limit, old, now):
    """The answer, the new (window_start, tokens) and the path taken.

    Each window boundary crossed grants rate tokens up to capacity; a new
    key holds rate tokens; a counter never moves back to an older window,
    and the start it recorded never moves back, whatever the call's grid.
    The state returned is what an allowed call leaves; a denied call leaves
    the counter as it was, and a key without a counter gets one holding what
    a new key holds, so that its tokens grow until the retry time.
    """
    k = limit.index(now)
    window_start = limit.boundary(k)
    recorded_start = window_start
    if old is None:
        path = 'new key'
        tokens = limit.rate
    elif old[0] == window_start:
        path = 'same window'
        tokens = min(old[1], limit.capacity)
    else:
        k_old = limit.index(old[0])
        if k_old < k:
            path = 'later window'
            tokens = min(limit.capacity, old[1] + (k - k_old) * limit.rate)
        else:
            path = 'counter ahead of the clock' if k_old > k else 'same window, other grid'
            k = k_old
            # the window of the call's grid that holds the recorded start:
            # the counter keeps that start, it never moves back
            recorded_start = old[0]
            tokens = min(old[1], limit.capacity)
    reset_after = int64(limit.boundary(k + 1) - now)
    ok = tokens >= limit.cost
    retry_after = None
    if ok:
        tokens -= limit.cost
    else:
        # the first boundary whose grants cover the cost; when it, or the
        # end of the window it starts, lies beyond 64-bit time there is no
        # time to promise, and retry_after is null
        windows = -(-(limit.cost - tokens) // limit.rate)
        try:
            limit.boundary(int64(k + windows + 1))   # a call then must end its window
            retry_after = int64(limit.boundary(int64(k + windows)) - now)
        except OutOfRange:
            path = 'no time to promise'
    return (ok, retry_after, tokens, reset_after), (recorded_start, tokens), path


class SqlError(Exception):
    def __init__(self, sqlstate):
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


def validate(call, phase_hash):
    """The Limit of a call, or SqlError with the SQLSTATE PostgreSQL gives."""
    for value, most in ((call['name'], MAX_NAME_BYTES), (call['key'], MAX_KEY_BYTES)):
        if value is None:
            raise SqlError('22004')
        if len(value.encode()) > most:
            raise SqlError('54000')
    for arg in ('rate', 'period', 'cost'):
        if call[arg] is None:
            raise SqlError('22004')
    rate, cost = call['rate'], call['cost']
    months, days, time = call['period']
    if rate <= 0:
        raise SqlError('22023')
    span = days * USECS_PER_DAY + time
    if not INT64_MIN <= span <= INT64_MAX:
        raise SqlError('22023')
    if months == 0 and span <= 0:
        raise SqlError('22023')
    if months < 0 or (months > 0 and (days < 0 or time < 0)):
        raise SqlError('22023')
    start = call['start']
    if start in ('infinity', '-infinity'):
        raise SqlError('22023')
    capacity = rate if call['capacity'] is None else call['capacity']
    if capacity < rate or cost < 0 or cost > capacity:
        raise SqlError('22023')
    limit = Limit(rate, months, span, start, cost, capacity)
    if start is None:
        # the key's phase: the Unix epoch plus its hash modulo the first
        # window that begins there
        limit.start = UNIX_EPOCH
        try:
            length = limit.boundary(1) - UNIX_EPOCH
        except OutOfRange:
            raise SqlError('22008')
        limit.start = UNIX_EPOCH + phase_hash(call['name'], call['key']) % length
    return limit


class Model:
    """Counters as a dictionary: (name, key) -> (window_start, tokens)."""

    def __init__(self, phase_hash, edition='c'):
        self.counters = {}
        self.phase_hash = phase_hash
        self.edition = edition
        self.unrecordable = set()           # keys the SQL edition cannot follow (--edition sql)
        self.paths = collections.Counter()  # how often each path of decide ran
        self.promises = collections.Counter()  # denied calls' retry times: kept, broken

    def call(self, call):
        try:
            limit = validate(call, self.phase_hash)
            identity = (call['name'], call['key'])
            if identity in self.unrecordable:
                return 'skipped'
            old = self.counters.get(identity)
            answer, state, path = decide(limit, old, call['now'])
        except SqlError as e:
            return 'error|' + e.sqlstate
        except OutOfRange:
            return 'error|22008'
        self.paths[path] += 1
        ok, retry_after, remaining, reset_after = answer
        if call['consume'] and (ok or old is None):
            self.counters[identity] = state
            if self.edition == 'sql' and state[0] < MIN_TIMESTAMP:
                self.unrecordable.add(identity)
        line = '%s|%s|%d|%d' % ('t' if ok else 'f',
                                'null' if retry_after is None else retry_after,
                                remaining, reset_after)
        if call['consume'] and not ok:
            line += '|' + self.promise(limit, identity, call['now'], retry_after)
        return line

    def promise(self, limit, identity, now, retry_after):
        """The same call at its retry time, nothing spent meanwhile: allowed.

        'none' when there is no retry time, or it lies beyond the timestamps
        PostgreSQL can show (the debug clock cannot be set there).
        """
        if retry_after is None or now + retry_after > MAX_CLOCK:
            return 'none'
        answer, _, _ = decide(limit, self.counters.get(identity), now + retry_after)
        self.promises['kept' if answer[0] else 'broken'] += 1
        return 't' if answer[0] else 'f'



# --- the generator ----------------------------------------------------------

NAMES = ['api', '', 'api ', 'débit', '限流', '🙂', "it's", 'n' * MAX_NAME_BYTES]
NAMES_TOO_LONG = ['n' * (MAX_NAME_BYTES + 1), 'é' * 129]
KEYS = ['', 'alice', 'bob', 'ключ', '鍵', "o'brien", 'k' * MAX_KEY_BYTES, '🙂' * 512] + \
       ['u%d' % i for i in range(40)]
KEYS_TOO_LONG = ['k' * (MAX_KEY_BYTES + 1), 'z' * 20480, '🙂' * 513]

PERIODS_VALID = [
    (0, 0, 1), (0, 0, 7), (0, 0, 999), (0, 0, USECS_PER_SEC), (0, 0, 60 * USECS_PER_SEC),
    (0, 0, 3600 * USECS_PER_SEC), (0, 1, 0), (0, 0, USECS_PER_DAY - 1), (0, 7, 0),
    (1, 0, 0), (1, 0, 1), (2, 3, 0), (12, 0, 0), (1, 1, 3600 * USECS_PER_SEC),
    (12000, 0, 0), (60000, 0, 0), (0, 100000000, 0),
    (0, 0, INT32_MAX * 3600 * USECS_PER_SEC), (0, 1, -1), (0, -1, USECS_PER_DAY + 1),
]
PERIODS_USUAL = [
    (0, 0, USECS_PER_SEC), (0, 0, 60 * USECS_PER_SEC), (0, 0, 3600 * USECS_PER_SEC),
    (0, 1, 0), (0, 7, 0), (1, 0, 0), (2, 3, 0), (12, 0, 0),
]
PERIODS_INVALID = [
    (0, 0, 0), (0, 0, -1), (0, -1, 0), (1, -1, 0), (1, 0, -1), (-1, 0, 0),
    (-1, 40, 0), (0, 200000000, 0), (0, INT32_MAX, 0),
]
INTS_EXTREME = [INT32_MAX, INT32_MAX - 1, 2**30, 1, 0, -1, INT32_MIN]


def period_text(period):
    months, days, time = period
    sign = '-' if time < 0 else ''
    seconds, usecs = divmod(abs(time), USECS_PER_SEC)
    return '%d mons %d days %s%d:%02d:%02d.%06d' % (
        months, days, sign, seconds // 3600, seconds // 60 % 60, seconds % 60, usecs)


class Generator:
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.now = HOME
        self.away = None                # where the clock was before a far jump
        # each name has a usual limit, so that counters live many calls
        self.usual = {name: self.random_params(valid=True) for name in NAMES + NAMES_TOO_LONG}

    def random_params(self, valid):
        rng = self.rng
        if valid or rng.random() < 0.6:
            rate = rng.choice([1, 1, 2, 3, 5, 10, 100, INT32_MAX, INT32_MAX - 1, 2**30])
            period = rng.choice(PERIODS_VALID if rng.random() < 0.3 else PERIODS_USUAL)
            capacity = rng.choice([None, None, rate, min(INT32_MAX, rate * 3), INT32_MAX])
            start = rng.choice(['default', 'default', None, 'home', 'far', 'month end'])
        else:
            rate = rng.choice(INTS_EXTREME + [None])
            period = rng.choice(PERIODS_INVALID + PERIODS_VALID + [None])
            capacity = rng.choice(INTS_EXTREME + [None])
            start = rng.choice(['infinity', '-infinity', 'default', None, 'far'])
        if start == 'default':
            start = UNIX_EPOCH
        elif start == 'home':
            start = HOME + rng.randrange(-10**12, 10**12)
        elif start == 'far':
            start = rng.randrange(MIN_CLOCK, MAX_CLOCK + 1)
        elif start == 'month end':
            # months from the 29th to the 31st are clamped, in leap years or not
            start = timestamp(rng.choice([1900, 2000, 2024, 2026]), rng.choice([1, 3, 8, 12]),
                              rng.choice([29, 30, 31]), rng.randrange(USECS_PER_DAY))
        return {'rate': rate, 'period': period, 'capacity': capacity, 'start': start}

    def cost(self, params):
        rng = self.rng
        rate, capacity = params['rate'], params['capacity']
        if capacity is None:
            capacity = rate
        if not isinstance(capacity, int) or capacity < 0:
            return rng.choice(INTS_EXTREME)
        if rng.random() < 0.02:
            return rng.choice([-1, None])
        return rng.choice([1, 1, 1, 1, 0, 2, rng.randint(0, capacity), capacity,
                           min(INT32_MAX, capacity + 1)])

    def step_clock(self, limit):
        """Move the clock: small steps, window edges, backwards, far away."""
        rng = self.rng
        if rng.random() < 0.4:
            return                      # a burst: calls at one instant
        move = rng.random()
        if self.away is not None and move < 0.2:
            # back from afar, to where the clock was
            self.now, self.away = self.away, None
        elif move < 0.45:
            self.now += rng.choice([0, 0, 0, 0, 1, rng.randrange(1000),
                                    rng.randrange(USECS_PER_SEC),
                                    rng.randrange(3600 * USECS_PER_SEC)])
        elif move < 0.65 and limit is not None and limit.months <= 12 and \
                limit.span <= 400 * USECS_PER_DAY:
            # just before, at or just after a boundary of this call's grid
            try:
                k = limit.index(self.now) + rng.choice([0, 1, 1, 2])
                self.now = limit.boundary(k) + rng.choice([-1, 0, 0, 1])
            except OutOfRange:
                pass
        elif move < 0.68:
            self.now += rng.randrange(40 * USECS_PER_DAY)
        elif move < 0.77:
            self.now -= rng.choice([1, rng.randrange(USECS_PER_SEC),
                                    rng.randrange(3600 * USECS_PER_SEC)])
        elif move < 0.78:
            self.now -= rng.randrange(40 * USECS_PER_DAY)
        elif move < 0.795 and self.away is None:
            self.away = self.now
            self.now = rng.choice([rng.randrange(MIN_CLOCK, MAX_CLOCK + 1),
                                   rng.randrange(MIN_CLOCK, MAX_CLOCK + 1),
                                   MIN_CLOCK, MAX_CLOCK,
                                   # the end of February of a century year
                                   timestamp(rng.randrange(1, 2900) * 100, 2, 27,
                                             rng.randrange(3 * USECS_PER_DAY))])
        self.now = max(MIN_CLOCK, min(MAX_CLOCK, self.now))

    def pick(self, usual, too_long, hot=None):
        draw = self.rng.random()
        if draw < 0.01:
            return None
        if draw < 0.03:
            return self.rng.choice(too_long)
        if draw < 0.6 and hot:
            return self.rng.choice(hot)
        return self.rng.choice(usual)

    def calls(self, count):
        rng = self.rng
        for number in range(count):
            # a few hot keys take most calls, so that counters see many calls
            # within a window; they change every 300 calls, so that a counter
            # left far ahead by a jump of the clock does not stay hot
            hot = ['hot%d.%d' % (number // 300, i) for i in range(3)]
            name = self.pick(NAMES, NAMES_TOO_LONG, NAMES[:3])
            key = self.pick(KEYS, KEYS_TOO_LONG, hot)
            params = self.usual.get(name)
            draw = rng.random()
            if params is None or draw < 0.2:
                params = self.random_params(valid=False)
            elif draw < 0.3:
                # the usual limit, its rate or capacity changed in place
                rate = rng.choice([1, 2, params['rate']])
                capacity = rng.choice([None, rate, min(INT32_MAX, rate + rng.randrange(5))])
                params = dict(params, rate=rate, capacity=capacity)
            call = dict(params, name=name, key=key, cost=self.cost(params),
                        consume=rng.random() < 0.85)
            if rng.random() < 0.01:
                call[rng.choice(['rate', 'period'])] = None
            try:
                limit = validate(dict(call, start=call['start'] or UNIX_EPOCH),
                                 lambda n, k: 0)
            except (SqlError, OutOfRange):
                limit = None
            self.step_clock(limit)
            call['now'] = self.now
            yield call


# --- running it -------------------------------------------------------------

def literal(value):
    if value is None:
        return 'NULL'
    if isinstance(value, int):
        return '(%d)::integer' % value
    return "'" + value.replace("'", "''") + "'"


def call_sql(call):
    start = call['start']
    if isinstance(start, int):
        start = timestamp_text(start)
    period = call['period'] and period_text(call['period'])
    return 'SELECT pg_temp.pt_call(%s, %s, %s, %s, %s, %s::interval, %s::timestamptz, %s, %s);' % (
        literal(timestamp_text(call['now'])), 'true' if call['consume'] else 'false',
        literal(call['name']), literal(call['key']), literal(call['rate']),
        literal(period), literal(start), literal(call['cost']), literal(call['capacity']))


SETUP = r"""
SET client_min_messages = warning;
SET timezone = 'UTC';
DO $$ BEGIN IF fw_storage_in_use() <> '%s' THEN RAISE EXCEPTION 'the database does not keep counters in %s'; END IF; END $$;
CREATE OR REPLACE FUNCTION pg_temp.usecs(i interval) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN i IS NULL THEN 'null'
                WHEN i::text ~ '(day|mon|year)' THEN 'calendar interval ' || i::text
                ELSE (extract(epoch FROM i) * 1000000)::bigint::text END
$$;
CREATE OR REPLACE FUNCTION pg_temp.pt_call(now text, consume boolean, name text, key text,
    rate integer, period interval, start timestamptz, cost integer, capacity integer)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r fw_result;
    answer text;
    later text;
BEGIN
    PERFORM set_config('fixed_window.debug_now', now, false);
    BEGIN
        IF consume THEN
            r := fw_limit(name, key, rate, period, start, cost, capacity);
        ELSE
            r := fw_check(name, key, rate, period, start, cost, capacity);
        END IF;
    EXCEPTION WHEN OTHERS THEN
        RETURN 'error|' || SQLSTATE;
    END;
    IF r IS NULL OR r.ok IS NULL OR r.remaining IS NULL OR r.reset_after IS NULL
       OR (r.ok AND r.retry_after IS NOT NULL) THEN
        RETURN 'malformed ' || r::text;
    END IF;
    answer := concat_ws('|', CASE WHEN r.ok THEN 't' ELSE 'f' END,
                        pg_temp.usecs(r.retry_after), r.remaining, pg_temp.usecs(r.reset_after));
    IF consume AND NOT r.ok THEN
        -- the promise: the same call at its retry time is allowed
        IF r.retry_after IS NULL THEN
            RETURN answer || '|none';
        END IF;
        BEGIN
            later := (now::timestamptz + r.retry_after)::text;
        EXCEPTION WHEN datetime_field_overflow THEN
            RETURN answer || '|none';
        END;
        PERFORM set_config('fixed_window.debug_now', later, false);
        BEGIN
            r := fw_check(name, key, rate, period, start, cost, capacity);
        EXCEPTION WHEN OTHERS THEN
            RETURN answer || '|error ' || SQLSTATE;
        END;
        answer := answer || '|' || CASE WHEN r.ok THEN 't' ELSE 'f' END;
    END IF;
    RETURN answer;
END
$$;
"""


def psql(script):
    result = subprocess.run(['psql', '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1'],
                            input=script.encode(), capture_output=True)
    if result.returncode != 0:
        sys.exit('psql failed (%d): %s'
                 % (result.returncode, result.stderr.decode(errors='replace')))
    return result.stdout.decode().splitlines()


def phase_hashes(calls):
    """The 64-bit hash of each (name, key) that asks for its phase.

    The phase is defined on PostgreSQL's own SQL-callable hash,
    hashtextextended(key, hashtextextended(name, 0)), taken as unsigned.
    """
    pairs = sorted({(c['name'], c['key']) for c in calls
                    if c['start'] is None and c['name'] is not None and c['key'] is not None
                    and len(c['name'].encode()) <= MAX_NAME_BYTES
                    and len(c['key'].encode()) <= MAX_KEY_BYTES})
    lines = psql(''.join('SELECT hashtextextended(%s, hashtextextended(%s, 0));\n'
                         % (literal(key), literal(name)) for name, key in pairs))
    hashes = {pair: int(line) % 2**64 for pair, line in zip(pairs, lines)}
    return lambda name, key: hashes[(name, key)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--storage', choices=['shmem', 'table'], required=True)
    parser.add_argument('--seed', type=int, default=20261122)
    parser.add_argument('--calls', type=int, default=5000)
    parser.add_argument('--edition', choices=['c', 'sql'], default='c')
    args = parser.parse_args()

    calls = list(Generator(args.seed).calls(args.calls))
    model = Model(phase_hashes(calls), args.edition)
    expected = [model.call(c) for c in calls]
    actual = psql(SETUP % (args.storage, args.storage) + ''.join(call_sql(c) + '\n' for c in calls))

    if len(actual) != len(expected):
        print('expected %d answers, got %d' % (len(expected), len(actual)))
    mismatches = 0
    for number, (call, want, got) in enumerate(zip(calls, expected, actual)):
        if want == 'skipped':
            continue
        if want != got:
            mismatches += 1
            if mismatches <= 10:
                print('call %d: expected %s, got %s\n    %s'
                      % (number, want, got, call_sql(call)[:400]))
    outcomes = collections.Counter('allowed' if e.startswith('t|') else
                                   'denied' if e.startswith('f|') else e
                                   for e in expected)
    print('seed %d, %s: %d calls (%s; %s; retry times of denied calls: %s), %d mismatches' % (
        args.seed, args.storage + (', SQL edition' if args.edition == 'sql' else ''), len(calls),
        ', '.join('%s %d' % item for item in sorted(outcomes.items())),
        ', '.join('%s %d' % item for item in sorted(model.paths.items())),
        ', '.join('%s %d' % item for item in sorted(model.promises.items())) or 'none',
        mismatches))
    broken = model.promises['broken']
    if broken:
        print('the model broke %d promises: a denied call at its retry time was denied again' % broken)
    return 0 if mismatches == 0 and broken == 0 and len(actual) == len(expected) else 1


if __name__ == '__main__':
    sys.exit(main())
