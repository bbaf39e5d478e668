/*-------------------------------------------------------------------------
 *
 * test_window.c
 *	  C unit tests of the pure window arithmetic in src/window.c.
 *
 * No server and no framework: a few counting assertion macros.  Expected
 * values were derived independently of window.c, with `date -u -d DATE +%s`
 * (pg = (unix - 946684800) * 1000000), python3's datetime and calendar
 * modules and hand computation; never copied from the code's own output.
 *
 * Build and run: make unit
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"
#include "window.h"


/* ---------- assertions ---------- */

static long n_passed = 0;
static long n_failed = 0;

/* Count one check; on failure print file:line, the expression and values. */
static void
check(bool ok, int line, const char *expr, bool is_eq, int64 actual, int64 expected)
{
	if (ok)
		n_passed++;
	else if (n_failed++, is_eq)
		printf("FAIL %s:%d: %s = " INT64_FORMAT ", expected " INT64_FORMAT "\n",
			   __FILE__, line, expr, actual, expected);
	else
		printf("FAIL %s:%d: %s is false\n", __FILE__, line, expr);
}

#define CHECK(c)		check((c), __LINE__, #c, false, 0, 0)
#define CHECK_EQ(a, e)	check((int64) (a) == (int64) (e), __LINE__, #a, true, (int64) (a), (int64) (e))

/* ---------- helpers ---------- */

#define USEC		INT64CONST(1000000)
#define MINUTE		(60 * USEC)
#define HOUR		(3600 * USEC)
#define DAY			FW_USECS_PER_DAY
#define UNIX_EPOCH	(-INT64CONST(946684800000000))	/* 1970-01-01 00:00 UTC */
#define OK			FW_STATUS_OK
#define OOR			FW_STATUS_OUT_OF_RANGE

/* PostgreSQL timestamp (UTC) of a civil date and time. */
static int64
ts(int64 year, int month, int day, int hour, int min, int sec)
{
	return fwwindow_days_from_civil(year, month, day) * DAY +
		hour * HOUR + min * MINUTE + sec * USEC;
}

#define D(y, m, d)	ts((y), (m), (d), 0, 0, 0)	/* midnight */
#define YMD(x)		D((x) / 10000, (x) / 100 % 100, (x) % 100)	/* from yyyymmdd */

/* PostgreSQL timestamp of a Unix time in seconds. */
static int64
unix_ts(int64 unix_seconds)
{
	return (unix_seconds - INT64CONST(946684800)) * USEC;
}

/* Month lengths by this file's own leap rule, for reference values. */
static int
ref_dim(int64 y, int m)
{
	if (m == 2)
		return (y % 400 == 0 || (y % 100 != 0 && y % 4 == 0)) ? 29 : 28;
	return (m == 4 || m == 6 || m == 9 || m == 11) ? 30 : 31;
}

/* Fixed-seed 64-bit LCG (Knuth's MMIX constants); top 53 bits. */
static uint64 lcg_state = UINT64CONST(0x2545F4914F6CDD1D);

static uint64
lcg_next(void)
{
	lcg_state = lcg_state * UINT64CONST(6364136223846793005) +
		UINT64CONST(1442695040888963407);
	return lcg_state >> 11;
}

/* integer in [lo, hi] */
static int64
lcg_range(int64 lo, int64 hi)
{
	return lo + (int64) (lcg_next() % (uint64) (hi - lo + 1));
}

/* A period the test knows to be valid (a failure if it is not). */
static FwPeriod
period(int32 months, int32 days, int64 time)
{
	FwPeriod	p = {0, 1};

	if (!fwwindow_period_from_interval(months, days, time, &p))
		check(false, __LINE__, "test period rejected", false, 0, 0);
	return p;
}

/*
 * W(k), the index of t, t + months and the phase start as values: a status other than OK
 * gives PG_INT64_MIN, which no expectation uses, so the check fails.
 */
static int64
boundary(const FwPeriod *p, int64 start, int64 k)
{
	int64		b;

	return fwwindow_boundary(p, start, k, &b) == OK ? b : PG_INT64_MIN;
}

static int64
index_of(const FwPeriod *p, int64 start, int64 t)
{
	int64		k;

	return fwwindow_index(p, start, t, &k) == OK ? k : PG_INT64_MIN;
}

static int64
add_months(int64 t, int64 months)
{
	int64		r;

	return fwwindow_add_months(t, months, &r) == OK ? r : PG_INT64_MIN;
}

static int64
phase(const FwPeriod *p, uint64 hash)
{
	int64		s;

	return fwwindow_phase_start(p, hash, &s) == OK ? s : PG_INT64_MIN;
}

/* ---------- calendar ---------- */

#define CHECK_CIVIL(days, y, m, d) \
	do { int64 y_; int m_, d_; fwwindow_civil_from_days((days), &y_, &m_, &d_); \
		CHECK_EQ(y_ * 10000 + m_ * 100 + d_, (int64) (y) * 10000 + (m) * 100 + (d)); } while (0)
#define FEB_LEN(y)	(fwwindow_days_from_civil((y), 3, 1) - fwwindow_days_from_civil((y), 2, 1))

/* Known day numbers, leap rules and the 400-year period of the calendar. */
static void
test_civil_known(void)
{
	/* ts() agrees with constants computed by `date -u` */
	CHECK_EQ(D(1970, 1, 1), INT64CONST(-946684800000000));
	CHECK_EQ(D(2000, 1, 1), 0);
	CHECK_EQ(D(2000, 3, 1), INT64CONST(5184000000000));
	CHECK_EQ(D(2024, 2, 29), INT64CONST(762480000000000));
	CHECK_EQ(D(2026, 1, 31), INT64CONST(823132800000000));
	CHECK_EQ(D(1900, 3, 1), INT64CONST(-3150576000000000));
	CHECK_EQ(D(2100, 2, 28), INT64CONST(3160771200000000));
	/* date -u -d @1700000100 = 2023-11-14 22:15:00 UTC */
	CHECK_EQ(ts(2023, 11, 14, 22, 15, 0), INT64CONST(753315300000000));
	CHECK_EQ(unix_ts(1700000100), INT64CONST(753315300000000));
	CHECK_EQ(unix_ts(0), UNIX_EPOCH);

	/* days since 2000-01-01, from python datetime.date differences */
	CHECK_EQ(fwwindow_days_from_civil(2000, 1, 1), 0);
	CHECK_EQ(fwwindow_days_from_civil(1970, 1, 1), -10957);
	CHECK_EQ(fwwindow_days_from_civil(2000, 2, 29), 59);
	CHECK_EQ(fwwindow_days_from_civil(1900, 2, 28), -36466);
	CHECK_EQ(fwwindow_days_from_civil(1900, 3, 1), -36465);
	CHECK_EQ(fwwindow_days_from_civil(2100, 2, 28), 36583);
	CHECK_EQ(fwwindow_days_from_civil(2024, 12, 31), 9131);
	CHECK_EQ(fwwindow_days_from_civil(1, 1, 1), -730119);
	CHECK_EQ(fwwindow_days_from_civil(1582, 10, 15), -152384);
	CHECK_EQ(fwwindow_days_from_civil(9999, 12, 31), 2921939);
	/* 2000 years = 5 x 146097 days back from 2000-03-01 (day 60) */
	CHECK_EQ(fwwindow_days_from_civil(0, 3, 1), 60 - 5 * 146097);
	/* -2000-01-01 = 2000-01-01 - 10 eras; -5000 = 2200 (python: 73049) - 18 eras */
	CHECK_EQ(fwwindow_days_from_civil(-2000, 1, 1), -1460970);
	CHECK_EQ(fwwindow_days_from_civil(-5000, 1, 1), 73049 - 18 * 146097);

	CHECK_CIVIL(0, 2000, 1, 1);
	CHECK_CIVIL(-10957, 1970, 1, 1);
	CHECK_CIVIL(59, 2000, 2, 29);
	CHECK_CIVIL(-1, 1999, 12, 31);
	CHECK_CIVIL(-36465, 1900, 3, 1);
	CHECK_CIVIL(36583, 2100, 2, 28);
	CHECK_CIVIL(-730119 - 1, 0, 12, 31);	/* the day before 0001-01-01 */
	CHECK_CIVIL(60 - 5 * 146097 - 1, 0, 2, 29);	/* 1 BC was a leap year */

	/* leap rules: February has 29 days iff leap */
	CHECK_EQ(FEB_LEN(1900), 28);	/* divisible by 100, not by 400 */
	CHECK_EQ(FEB_LEN(2000), 29);	/* divisible by 400 */
	CHECK_EQ(FEB_LEN(2024), 29);
	CHECK_EQ(FEB_LEN(2100), 28);
	CHECK_EQ(FEB_LEN(0), 29);	/* 1 BC = year 0 */
	CHECK_EQ(FEB_LEN(-1), 28);	/* 2 BC */
	CHECK_EQ(FEB_LEN(-4), 29);	/* 5 BC */
	CHECK_EQ(FEB_LEN(-100), 28);	/* 101 BC */
}

/*
 * Walk every day from -2000-01-01 to 3000-12-31: civil_from_days must give
 * the successor of the previous date (by the independent month lengths)
 * and days_from_civil must invert it.  Then random days up to 270,000
 * years away.
 */
static void
test_civil_round_trip(void)
{
	int64		first = fwwindow_days_from_civil(-2000, 1, 1);
	int64		last = fwwindow_days_from_civil(3000, 12, 31);
	int64		ey = -2000, y, day, bad_day = PG_INT64_MIN;
	int			em = 1, ed = 1, m, d, i;

	for (day = first; day <= last; day++)
	{
		fwwindow_civil_from_days(day, &y, &m, &d);
		if (y != ey || m != em || d != ed || fwwindow_days_from_civil(y, m, d) != day)
		{
			bad_day = day;
			break;
		}
		if (++ed > ref_dim(ey, em))		/* step to the next day */
		{
			ed = 1;
			if (++em > 12)
				em = 1, ey++;
		}
	}
	CHECK_EQ(bad_day, PG_INT64_MIN);	/* the first bad day, if any */
	CHECK_EQ(last - first + 1, 5001 * INT64CONST(365) + 1213);	/* 1213 leap years (python) */

	for (i = 0; i < 100000; i++)
	{
		day = lcg_range(-100000000, 100000000);
		fwwindow_civil_from_days(day, &y, &m, &d);
		if (m < 1 || m > 12 || d < 1 || d > ref_dim(y, m) ||
			fwwindow_days_from_civil(y, m, d) != day)
		{
			CHECK_EQ(day, PG_INT64_MIN);	/* report the failing day */
			break;
		}
	}
	CHECK_EQ(i, 100000);
}

/* Month addition clamps to the end of the month and keeps the time of day. */
static void
test_add_months(void)
{
	int64		r;

	CHECK_EQ(add_months(D(2026, 1, 31), 1), D(2026, 2, 28));
	CHECK_EQ(add_months(D(2026, 1, 31), 2), D(2026, 3, 31));
	CHECK_EQ(add_months(D(2026, 1, 31), 3), D(2026, 4, 30));
	CHECK_EQ(add_months(D(2024, 1, 31), 1), D(2024, 2, 29));	/* leap year */
	CHECK_EQ(add_months(D(2024, 2, 29), 12), D(2025, 2, 28));
	CHECK_EQ(add_months(D(2024, 2, 29), 48), D(2028, 2, 29));
	CHECK_EQ(add_months(D(2024, 2, 29), 0), INT64CONST(762480000000000));
	CHECK_EQ(add_months(D(2099, 2, 28), 12), D(2100, 2, 28));	/* 2100 not leap */

	/* negative months */
	CHECK_EQ(add_months(D(2024, 3, 31), -1), D(2024, 2, 29));
	CHECK_EQ(add_months(D(2024, 3, 31), -13), D(2023, 2, 28));
	CHECK_EQ(add_months(D(1900, 3, 31), -1), D(1900, 2, 28));
	CHECK_EQ(add_months(D(2026, 1, 15), -24301), D(0, 12, 15));	/* into 1 BC */

	/* time of day preserved, to the microsecond */
	CHECK_EQ(add_months(ts(2026, 1, 31, 13, 45, 7) + 123456, 1),
			 ts(2026, 2, 28, 13, 45, 7) + 123456);

	/* negative timestamps (python datetime values) */
	CHECK_EQ(add_months(INT64CONST(-28900800000000), 1),	/* 1999-01-31 12:00 */
			 INT64CONST(-26481600000000));	/* 1999-02-28 12:00 */
	CHECK_EQ(add_months(INT64CONST(-946684800500000), 2),	/* 1969-12-31 23:59:59.5 */
			 INT64CONST(-941587200500000));	/* 1970-02-28 23:59:59.5 */
	CHECK_EQ(add_months(UNIX_EPOCH - 1, -1), ts(1969, 11, 30, 23, 59, 59) + 999999);

	/* out of range: the limit of 64-bit microseconds is ~294,000 AD */
	CHECK_EQ(fwwindow_add_months(0, PG_INT64_MAX, &r), OOR);
	CHECK_EQ(fwwindow_add_months(0, PG_INT64_MIN, &r), OOR);
	CHECK_EQ(fwwindow_add_months(0, PG_INT32_MAX, &r), OOR);
	CHECK_EQ(fwwindow_add_months(0, INT64CONST(12) * 297000, &r), OOR);
	CHECK_EQ(fwwindow_add_months(0, INT64CONST(-12) * 297000, &r), OOR);
	CHECK_EQ(add_months(0, INT64CONST(12) * 290000), D(292000, 1, 1));
}

/* ---------- periods ---------- */

#define ACCEPTS(mo, d, t, emo, espan) \
	do { FwPeriod p_ = {-1, -1}; CHECK(fwwindow_period_from_interval((mo), (d), (t), &p_)); \
		CHECK_EQ(p_.months, (emo)); CHECK_EQ(p_.span, (espan)); } while (0)
#define REJECTS(mo, d, t) \
	do { FwPeriod p_; CHECK(!fwwindow_period_from_interval((mo), (d), (t), &p_)); } while (0)

/* Intervals become periods only when windows strictly increase. */
static void
test_period_from_interval(void)
{
	ACCEPTS(0, 0, 1000000, 0, 1000000);		/* '1 second' */
	ACCEPTS(0, 0, 1, 0, 1);					/* '1 microsecond' */
	ACCEPTS(0, 1, 0, 0, INT64CONST(86400000000));	/* '1 day' */
	ACCEPTS(1, 0, 0, 1, 0);					/* '1 month' */
	ACCEPTS(12, 2, 0, 12, INT64CONST(172800000000));	/* '1 year 2 days' */
	/* '1 day -1 hour': mixed signs, positive total */
	ACCEPTS(0, 1, INT64CONST(-3600000000), 0, INT64CONST(82800000000));
	ACCEPTS(0, -1, 25 * HOUR, 0, HOUR);		/* '-1 day 25 hours' */

	REJECTS(0, 0, 0);			/* zero */
	REJECTS(0, 0, -1);			/* negative */
	REJECTS(0, -1, 0);
	REJECTS(0, 1, -DAY);		/* '1 day -24 hours' = 0 */
	REJECTS(1, -1, 0);			/* month + negative day */
	REJECTS(1, 0, -1);			/* month + negative time */
	REJECTS(-1, 0, 0);			/* negative months */
	REJECTS(-1, 40, 0);
	REJECTS(0, PG_INT32_MAX, PG_INT64_MAX);	/* overflow */
}

/* ---------- window index and boundary ---------- */

/* Exact periods: floor semantics on both sides of the start. */
static void
test_window_exact(void)
{
	FwPeriod	min1 = period(0, 0, 60 * USEC);
	FwPeriod	usec = period(0, 0, 1);
	FwPeriod	kyear = period(0, 1000 * 365, 0);
	int64		start = UNIX_EPOCH;
	int64		future = D(2030, 6, 1);
	int64		k;

	/* the seed example: 60 s windows from the Unix epoch */
	CHECK_EQ(index_of(&min1, start, unix_ts(1700000100)), 28333335);
	CHECK_EQ(boundary(&min1, start, 28333335), unix_ts(1700000100));
	CHECK_EQ(index_of(&min1, start, unix_ts(1700000159) + 999999), 28333335);
	CHECK_EQ(index_of(&min1, start, unix_ts(1700000160)), 28333336);
	CHECK_EQ(boundary(&min1, start, 28333336), unix_ts(1700000160));

	/* times before the start */
	CHECK_EQ(index_of(&min1, start, start), 0);
	CHECK_EQ(index_of(&min1, start, start - 1), -1);
	CHECK_EQ(index_of(&min1, start, start - 60 * USEC), -1);
	CHECK_EQ(index_of(&min1, start, start - 60 * USEC - 1), -2);
	CHECK_EQ(boundary(&min1, start, -2), start - 120 * USEC);
	/* a start in the future: k = -ceil((future - t) / 60 s) */
	CHECK_EQ(index_of(&min1, future, unix_ts(1700000100)),
			 -((future - unix_ts(1700000100) + 60 * USEC - 1) / (60 * USEC)));
	CHECK_EQ(index_of(&min1, future, future - 1), -1);

	/* microsecond period: the index is the difference itself */
	CHECK_EQ(index_of(&usec, start, D(2024, 2, 29)),
			 INT64CONST(762480000000000) + INT64CONST(946684800000000));
	CHECK_EQ(index_of(&usec, 0, -12345), -12345);
	CHECK_EQ(boundary(&usec, 0, -12345), -12345);

	/* 1000-year (365,000-day) periods from 1970; k from python */
	CHECK_EQ(index_of(&kyear, start, D(4000, 1, 1)), 2);
	CHECK_EQ(index_of(&kyear, start, D(-5000, 1, 1)), -7);
	CHECK_EQ(index_of(&kyear, start, start + kyear.span), 1);
	CHECK_EQ(index_of(&kyear, start, start + kyear.span - 1), 0);
	CHECK_EQ(boundary(&kyear, start, 2), start + 730000 * DAY);

	/* 64-bit limits */
	CHECK_EQ(fwwindow_index(&usec, PG_INT64_MIN, PG_INT64_MAX, &k), OOR);
	CHECK_EQ(fwwindow_boundary(&min1, 0, PG_INT64_MAX, &k), OOR);
	CHECK_EQ(fwwindow_boundary(&usec, 1, PG_INT64_MAX, &k), OOR);
}

/* Calendar periods: clamped month ends, leap days, mixed month + day. */
static void
test_window_calendar(void)
{
	/* 2026-01-31 + k months (python calendar.monthrange clamping), yyyymmdd */
	static const int month_end[15] = {
		20260131, 20260228, 20260331, 20260430, 20260531, 20260630, 20260731,
		20260831, 20260930, 20261031, 20261130, 20261231, 20270131, 20270228,
		20270331};
	/* 2026-01-31 + k months + k days */
	static const int month_day[6] = {
		20260131, 20260301, 20260402, 20260503, 20260604, 20260705};
	FwPeriod	month = period(1, 0, 0);
	FwPeriod	month_1d = period(1, 1, 0);
	FwPeriod	year = period(12, 0, 0);
	FwPeriod	millennium = period(12000, 0, 0);
	int64		start = D(2026, 1, 31);
	int64		leap = D(2024, 2, 29);
	int			k;

	/* W(k) is the 31st clamped; each boundary opens window k */
	for (k = 0; k < 15; k++)
	{
		int64		w = YMD(month_end[k]);

		CHECK_EQ(boundary(&month, start, k), w);
		CHECK_EQ(index_of(&month, start, w), k);
		CHECK_EQ(index_of(&month, start, w - 1), k - 1);
	}
	/* raw constants from `date -u` for two of them */
	CHECK_EQ(boundary(&month, start, 1), INT64CONST(825552000000000));
	CHECK_EQ(boundary(&month, start, 14), INT64CONST(859766400000000));
	/* before the start */
	CHECK_EQ(boundary(&month, start, -1), D(2025, 12, 31));
	CHECK_EQ(boundary(&month, start, -2), D(2025, 11, 30));
	CHECK_EQ(index_of(&month, start, D(2025, 11, 30)), -2);
	CHECK_EQ(index_of(&month, start, D(2025, 11, 30) - 1), -3);

	for (k = 0; k < 6; k++)
	{
		int64		w = YMD(month_day[k]);

		CHECK_EQ(boundary(&month_1d, start, k), w);
		CHECK_EQ(index_of(&month_1d, start, w), k);
		CHECK_EQ(index_of(&month_1d, start, w - 1), k - 1);
	}

	/* yearly windows from a leap day */
	CHECK_EQ(boundary(&year, leap, 1), D(2025, 2, 28));
	CHECK_EQ(boundary(&year, leap, 1), INT64CONST(794016000000000));
	CHECK_EQ(boundary(&year, leap, 3), D(2027, 2, 28));
	CHECK_EQ(boundary(&year, leap, 4), D(2028, 2, 29));
	CHECK_EQ(boundary(&year, leap, 4), INT64CONST(888710400000000));
	CHECK_EQ(index_of(&year, leap, ts(2028, 2, 28, 23, 59, 59)), 3);
	CHECK_EQ(index_of(&year, leap, D(2028, 2, 29)), 4);
	CHECK_EQ(boundary(&year, leap, -4), D(2020, 2, 29));
	CHECK_EQ(boundary(&year, leap, -124), D(1900, 2, 28));

	/* far from the start (python search over clamped months) */
	CHECK_EQ(index_of(&month, start, D(5000, 6, 15)), 35692);
	CHECK_EQ(boundary(&month, start, 35692), D(5000, 5, 31));
	CHECK_EQ(index_of(&month, start, D(3, 3, 3)), -24275);
	CHECK_EQ(boundary(&month, start, -24275), D(3, 2, 28));
	/* -3976 is leap (-3976 + 4400 = 424); -2976-02-29 is after -3000-01-01 */
	CHECK_EQ(index_of(&millennium, leap, D(-3000, 1, 1)), -6);
	CHECK_EQ(boundary(&millennium, leap, -6), D(-3976, 2, 29));
}

/* t + months with this file's own clamping, for the random test below. */
static int64
ref_add_months(int64 t, int64 months)
{
	int64		days = t / DAY, tod = t % DAY, y, mi;
	int			m, d;

	if (tod < 0)
		tod += DAY, days--;
	fwwindow_civil_from_days(days, &y, &m, &d);
	mi = y * 12 + (m - 1) + months;
	y = mi >= 0 ? mi / 12 : -((-mi + 11) / 12);
	m = (int) (mi - y * 12) + 1;
	d = Min(d, ref_dim(y, m));
	return fwwindow_days_from_civil(y, m, d) * DAY + tod;
}

/*
 * Invariant W(k) <= t < W(k+1) for k = index(t), over pseudo-random
 * periods, starts and times up to 5000 years apart.  For calendar periods
 * W(k) is also compared with ref_add_months(start, k * months) + k * span.
 */
static void
test_window_invariant_random(void)
{
	int			i, bad = 0;

	for (i = 0; i < 20000 && bad < 5; i++)
	{
		FwPeriod	p;
		int64		start = lcg_range(-500 * 366 * DAY, 500 * 366 * DAY);
		int64		t = lcg_range(-5000 * 366 * DAY, 5000 * 366 * DAY);
		int64		kind = lcg_range(0, 3), k, lo, hi;

		if (kind == 0)			/* up to a day, exact */
			p = period(0, 0, lcg_range(1, DAY));
		else if (kind == 1)		/* up to ~30 years, exact */
			p = period(0, (int32) lcg_range(0, 11000), lcg_range(1, DAY));
		else if (kind == 2)		/* months only */
			p = period((int32) lcg_range(1, 36), 0, 0);
		else					/* months + days + time */
			p = period((int32) lcg_range(1, 24), (int32) lcg_range(0, 40),
					   lcg_range(0, DAY));

		if (fwwindow_index(&p, start, t, &k) != OK ||
			fwwindow_boundary(&p, start, k, &lo) != OK ||
			fwwindow_boundary(&p, start, k + 1, &hi) != OK ||
			!(lo <= t && t < hi) ||
			(p.months > 0 && lo != ref_add_months(start, k * p.months) + k * p.span))
		{
			bad++;
			printf("FAIL %s:%d: period (%d months, " INT64_FORMAT " us) start "
				   INT64_FORMAT " t " INT64_FORMAT "\n", __FILE__, __LINE__,
				   p.months, p.span, start, t);
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(i, 20000);
}

/* ---------- decisions ---------- */

#define LIMIT(p, s, rate, cap, cost)	((FwLimit) {(p), (s), (rate), (cap), (cost)})
/* decide into "dec", which must succeed */
#define DECIDE(old, now)	CHECK_EQ(fwwindow_decide(&l, (old), (now), &dec), OK)
/* the answer's ok, remaining, retry_after, reset_after */
#define CHECK_DEC(ok_, rem, retry, reset) \
	do { CHECK_EQ(dec.ok, (ok_)); CHECK_EQ(dec.remaining, (rem)); \
		CHECK_EQ(dec.retry_after, (retry)); CHECK_EQ(dec.reset_after, (reset)); } while (0)

/* A new key starts with rate tokens; spending them ends in a denial. */
static void
test_decide_new_key_and_denial(void)
{
	FwLimit		l = LIMIT(period(0, 0, 60 * USEC), UNIX_EPOCH, 5, 5, 1);
	int64		now = unix_ts(1700000130);
	int64		end = unix_ts(1700000160);
	FwDecision	dec;
	FwState		st;
	int			i;

	DECIDE(NULL, now);
	CHECK_DEC(true, 4, 0, 30 * USEC);
	CHECK_EQ(dec.state.window_start, unix_ts(1700000100));
	CHECK_EQ(dec.state.window_end, end);
	CHECK_EQ(dec.state.tokens, 4);

	/* four more calls succeed, the sixth is denied */
	for (i = 2; i <= 6; i++)
	{
		st = dec.state;
		now += USEC;
		DECIDE(&st, now);
		CHECK_EQ(dec.ok, i <= 5);
		CHECK_EQ(dec.remaining, Max(5 - i, 0));
	}
	CHECK_DEC(false, 0, end - now, end - now);
	CHECK_EQ(dec.state.window_start, st.window_start);
	CHECK_EQ(dec.state.window_end, end);
	CHECK_EQ(dec.state.tokens, 0);

	/* the next window grants tokens again */
	st = dec.state;
	DECIDE(&st, end);
	CHECK_DEC(true, 4, 0, 60 * USEC);
}

/*
 * The seed table: 100 tokens per hour, capacity 150, start 00:00; each
 * decision's state feeds the next call.
 */
static void
test_decide_seed_table(void)
{
	static const int rows[][3] = {	/* minute, cost, remaining */
		{0, 0, 100}, {30, 15, 85}, {45, 15, 70}, {60, 0, 150},	/* 170 capped */
		{90, 30, 120}, {120, 0, 150}};
	int64		day0 = D(2026, 3, 1);
	FwState		st;
	FwDecision	dec;
	int			i;

	for (i = 0; i < (int) lengthof(rows); i++)
	{
		FwLimit		l = LIMIT(period(0, 0, HOUR), day0, 100, 150, rows[i][1]);
		int64		now = day0 + rows[i][0] * MINUTE;

		DECIDE(i == 0 ? NULL : &st, now);
		CHECK_DEC(true, rows[i][2], 0, HOUR - (rows[i][0] % 60) * MINUTE);
		CHECK_EQ(dec.state.window_start, day0 + (rows[i][0] / 60) * HOUR);
		st = dec.state;
	}
}

/* Refill across windows, costs above the rate, and extreme counts. */
static void
test_decide_refill(void)
{
	int64		s = D(2026, 3, 1);
	int64		far = D(2500, 1, 1);
	FwLimit		l = LIMIT(period(0, 0, HOUR), s, 10, 30, 0);
	FwState		st = {s, s + HOUR, 5};
	FwDecision	dec;

	/* windows elapsed: +10 each, capped at 30 */
	DECIDE(&st, s + HOUR + 1);
	CHECK_DEC(true, 15, 0, HOUR - 1);
	DECIDE(&st, s + 2 * HOUR);
	CHECK_DEC(true, 25, 0, HOUR);
	DECIDE(&st, s + 3 * HOUR);
	CHECK_DEC(true, 30, 0, HOUR);
	DECIDE(&st, s + 1000 * HOUR);
	CHECK_DEC(true, 30, 0, HOUR);
	CHECK_EQ(dec.state.window_start, s + 1000 * HOUR);

	/* cost 25 with 0 tokens: covered at the start of window 3 */
	l.cost = 25;
	st.tokens = 0;
	DECIDE(&st, s + 10 * MINUTE);
	CHECK_DEC(false, 0, s + 3 * HOUR - (s + 10 * MINUTE), 50 * MINUTE);
	/* one window later 10 are there, 15 missing: still window 3 */
	DECIDE(&st, s + HOUR + 10 * MINUTE);
	CHECK_DEC(false, 10, s + 3 * HOUR - (s + HOUR + 10 * MINUTE), 50 * MINUTE);
	CHECK_EQ(dec.state.tokens, 10);

	/* microsecond windows, 1500 years elapsed, rate and capacity 2^31-1 */
	l = LIMIT(period(0, 0, 1), D(1000, 1, 1), PG_INT32_MAX, PG_INT32_MAX, PG_INT32_MAX);
	st = (FwState) {l.start, l.start + 1, 0};
	DECIDE(&st, far);
	CHECK_DEC(true, 0, 0, 1);
	CHECK_EQ(dec.state.window_start, far);
	l.cost = 0;
	st.tokens = PG_INT32_MAX - 1;
	DECIDE(&st, l.start + 1);
	CHECK_DEC(true, PG_INT32_MAX, 0, 1);
	l.rate = 1;
	st.tokens = 0;
	DECIDE(&st, far);
	CHECK_DEC(true, PG_INT32_MAX, 0, 1);
	DECIDE(&st, l.start + 7);
	CHECK_DEC(true, 7, 0, 1);
	/* rate 1, cost 2^31-1 from nothing: 2^31-1 one-microsecond windows */
	l.cost = PG_INT32_MAX;
	DECIDE(&st, l.start);
	CHECK_DEC(false, 0, PG_INT32_MAX, 1);

	/*
	 * A state left by a call with another grid, near the start of 64-bit
	 * time: more than 2^63 one-microsecond windows have passed since.  The
	 * count must not wrap: the counter refills to exactly the capacity.
	 */
	l = LIMIT(period(0, 0, 1), D(2000, 1, 1), 6, 10, 10);
	st = (FwState) {PG_INT64_MIN + 1, PG_INT64_MIN + 2, 0};
	DECIDE(&st, D(2026, 1, 1));
	CHECK_DEC(true, 0, 0, 1);
	l.cost = 1;
	DECIDE(&st, D(2026, 1, 1));
	CHECK_DEC(true, 9, 0, 1);
}

/* The clock going back never moves a counter to an older window. */
static void
test_decide_clock_backwards(void)
{
	int64		s = D(2026, 3, 1);
	FwLimit		l = LIMIT(period(0, 0, MINUTE), s, 5, 10, 1);
	FwState		st = {s + 5 * MINUTE, s + 6 * MINUTE, 2};	/* window 5 */
	int64		now = s + 3 * MINUTE + 7 * USEC;	/* in window 3 */
	FwDecision	dec;

	DECIDE(&st, now);
	CHECK_DEC(true, 1, 0, s + 6 * MINUTE - now);	/* 2 - 1: no refill */
	CHECK_EQ(dec.state.window_start, s + 5 * MINUTE);
	CHECK_EQ(dec.state.window_end, s + 6 * MINUTE);

	l.cost = 3;					/* 1 missing: covered when window 5 ends */
	DECIDE(&st, now);
	CHECK_DEC(false, 2, s + 6 * MINUTE - now, s + 6 * MINUTE - now);
	CHECK_EQ(dec.state.window_start, s + 5 * MINUTE);

	/* calendar period: state in the window of 2026-03-31, clock in February */
	l = LIMIT(period(1, 0, 0), D(2026, 1, 31), 5, 5, 1);
	st = (FwState) {D(2026, 3, 31), D(2026, 4, 30), 5};
	now = D(2026, 2, 1);
	DECIDE(&st, now);
	CHECK_DEC(true, 4, 0, D(2026, 4, 30) - now);
	CHECK_EQ(dec.state.window_start, D(2026, 3, 31));
}

/*
 * One counter called on two grids.  The recorded start never moves back,
 * and a denial leaves the counter as it was, so no grid over-admits:
 * alternating 1 per hour with 3 per 3 hours (or with 1 per hour on a grid
 * one second earlier), eight calls within one hour, the hourly call is
 * allowed once.  Returns -1 if a denial moved the counter.
 */
static int
alternate(FwLimit *a, FwLimit *b, int64 from, int *allowed_b)
{
	FwState		st;
	bool		have = false;
	FwDecision	dec;
	int			allowed_a = 0;
	int			i;

	*allowed_b = 0;
	for (i = 0; i < 8; i++)
	{
		FwLimit    *l = (i % 2 == 0) ? a : b;

		if (fwwindow_decide(l, have ? &st : NULL, from + i * 5 * MINUTE, &dec) != OK)
			return -1;
		if (!dec.ok)
		{
			if (have && (dec.state.window_start != st.window_start ||
						 dec.state.tokens != st.tokens))
				return -1;		/* a denial must not move the counter */
			continue;
		}
		st = dec.state;			/* a store writes only what is allowed */
		have = true;
		if (l == a)
			allowed_a++;
		else
			(*allowed_b)++;
	}
	return allowed_a;
}

static void
test_decide_two_grids(void)
{
	int64		s = D(2026, 5, 1);
	FwLimit		hourly = LIMIT(period(0, 0, HOUR), UNIX_EPOCH, 1, 1, 1);
	FwLimit		three = LIMIT(period(0, 0, 3 * HOUR), UNIX_EPOCH, 3, 3, 1);
	FwLimit		shifted = LIMIT(period(0, 0, HOUR), UNIX_EPOCH - USEC, 1, 1, 1);
	FwState		st = {s + 10 * HOUR, s + 11 * HOUR, 0};
	FwDecision	dec;
	FwLimit		l;
	int			other;

	/* the hourly call first: it spends the hour, the 3-hour calls see 0 */
	CHECK_EQ(alternate(&hourly, &three, s + 10 * HOUR + MINUTE, &other), 1);
	CHECK_EQ(other, 0);
	/* the 3-hour call first: one each, 2 of 3 spent in the 3 hours */
	CHECK_EQ(alternate(&three, &hourly, s + 10 * HOUR + MINUTE, &other), 1);
	CHECK_EQ(other, 1);
	/* starts a second apart */
	CHECK_EQ(alternate(&hourly, &shifted, s + 10 * HOUR + 30 * USEC, &other), 1);
	CHECK_EQ(other, 0);

	/* the 3-hour call judges its own window but keeps the recorded start */
	l = three;
	st.tokens = 2;
	DECIDE(&st, s + 10 * HOUR + 30 * MINUTE);
	CHECK_DEC(true, 1, 0, 90 * MINUTE);
	CHECK_EQ(dec.state.window_start, s + 10 * HOUR);
	CHECK_EQ(dec.state.window_end, s + 12 * HOUR);	/* the later end */
	CHECK_EQ(dec.fresh_from, s + 12 * HOUR);
}

/* Window ends beyond 64 bits are reported, not wrapped. */
static void
test_decide_out_of_range(void)
{
	FwDecision	dec;
	int64		half = PG_INT64_MAX / 2 + 1;	/* 2^62 */
	FwLimit		l = LIMIT(period(0, 0, PG_INT64_MAX), 1, 5, 5, 1);

	CHECK_EQ(fwwindow_decide(&l, NULL, 1, &dec), OOR);	/* W(1) = 1 + (2^63-1) */
	l = LIMIT(period(0, 0, half), 0, 5, 5, 1);
	CHECK_EQ(fwwindow_decide(&l, NULL, 0, &dec), OK);
	CHECK_EQ(dec.reset_after, half);
	CHECK_EQ(fwwindow_decide(&l, NULL, half, &dec), OOR);	/* W(2) = 2^63 */
	l = LIMIT(period(12 * 300000, 0, 0), 0, 5, 5, 1);	/* 300,000 years */
	CHECK_EQ(fwwindow_decide(&l, NULL, 0, &dec), OOR);
}

/*
 * A denied call whose cost no boundary within 64-bit time covers is still
 * denied, with no retry time to promise (FW_RETRY_NEVER), not an error.
 */
static void
test_decide_retry_never(void)
{
	FwDecision	dec;
	int64		year = 365 * DAY;
	FwLimit		l = LIMIT(period(0, 0, 1000 * year), 0, 1, 1000, 1000);	/* 1 a millennium */

	/* a new key holds 1 token: 1000 would take 999 more millennia */
	CHECK_EQ(fwwindow_decide(&l, NULL, 0, &dec), OK);
	CHECK(!dec.ok);
	CHECK_EQ(dec.remaining, 1);
	CHECK_EQ(dec.retry_after, FW_RETRY_NEVER);
	CHECK_EQ(dec.reset_after, 1000 * year);

	/* 280 more millennia are within 64-bit time: that is promised */
	l.cost = 281;
	CHECK_EQ(fwwindow_decide(&l, NULL, 0, &dec), OK);
	CHECK_EQ(dec.retry_after, 280 * 1000 * year);

	/*
	 * A cost above the capacity (a policy's window smaller than a call) is
	 * never covered, however many windows pass: the counter stops at the
	 * capacity.  The rate alone would have promised the third window.
	 */
	l = LIMIT(period(0, 0, MINUTE), 0, 5, 10, 12);
	CHECK_EQ(fwwindow_decide(&l, NULL, 0, &dec), OK);
	CHECK(!dec.ok);
	CHECK_EQ(dec.remaining, 5);
	CHECK_EQ(dec.retry_after, FW_RETRY_NEVER);
	l.cost = 10;
	CHECK_EQ(fwwindow_decide(&l, NULL, 0, &dec), OK);
	CHECK_EQ(dec.retry_after, MINUTE);
}

/* ---------- phase ---------- */

/* Keys spread their origin over the period that starts at the Unix epoch. */
static void
test_phase_start(void)
{
	FwPeriod	min1 = period(0, 0, MINUTE);
	FwPeriod	day = period(0, 1, 0);
	FwPeriod	month = period(1, 0, 0);
	int64		a;
	int			i, bad = 0;

	CHECK_EQ(phase(&min1, 0), UNIX_EPOCH);
	CHECK_EQ(phase(&min1, 59999999), UNIX_EPOCH + 59999999);
	CHECK_EQ(phase(&min1, 60000000), UNIX_EPOCH);
	CHECK_EQ(phase(&min1, PG_UINT64_MAX), UNIX_EPOCH + 49551615);	/* (2^64-1) mod 6e7, python */

	/* deterministic, and different hashes give different starts */
	CHECK_EQ(phase(&day, UINT64CONST(0x9E3779B97F4A7C15)),
			 phase(&day, UINT64CONST(0x9E3779B97F4A7C15)));
	CHECK(phase(&day, 1) != phase(&day, 2));
	CHECK_EQ(phase(&day, 1), UNIX_EPOCH + 1);

	/* the range of every start a key can have */
	{
		int64		first;
		int64		last;
		FwPeriod	too_long = period(12 * 300000, 0, 0);

		CHECK_EQ(fwwindow_phase_range(&min1, &first, &last), OK);
		CHECK_EQ(first, UNIX_EPOCH);
		CHECK_EQ(last, UNIX_EPOCH + MINUTE - 1);
		CHECK_EQ(fwwindow_phase_range(&month, &first, &last), OK);
		CHECK_EQ(last, UNIX_EPOCH + 31 * DAY - 1);
		CHECK_EQ(fwwindow_phase_range(&too_long, &first, &last), OOR);
	}

	/* in [epoch, epoch + period) for random exact periods and hashes */
	for (i = 0; i < 10000; i++)
	{
		uint64		h = (lcg_next() << 11) ^ lcg_next();
		FwPeriod	p = period(0, 0, lcg_range(1, 100000 * DAY));

		if (fwwindow_phase_start(&p, h, &a) != OK || a < UNIX_EPOCH || a >= UNIX_EPOCH + p.span)
			bad++;
	}
	CHECK_EQ(bad, 0);

	/* calendar: the first window from the epoch is January 1970, 31 days */
	CHECK_EQ(phase(&month, (uint64) (31 * DAY - 1)), UNIX_EPOCH + 31 * DAY - 1);
	CHECK_EQ(phase(&month, (uint64) (31 * DAY)), UNIX_EPOCH);
}

/* ---------- several windows: all or nothing; refunds ---------- */

/*
 * Seed 003's example: 2,000 per hour and 33 per minute.  With the minute
 * spent, the call is denied, and the hour window, which had the tokens,
 * spends nothing and reports what it holds.
 */
static void
test_settle_all_or_nothing(void)
{
	FwLimit		l[2] = {LIMIT(period(0, 0, HOUR), UNIX_EPOCH, 2000, 2000, 1),
						LIMIT(period(0, 0, MINUTE), UNIX_EPOCH, 33, 33, 1)};
	bool		shadow[2] = {false, false};
	bool		spend[2];
	FwDecision	d[2];
	FwState		hour = {unix_ts(1700000000 - 1700000000 % 3600), 0, 1500};
	FwState		minute = {unix_ts(1700000100), unix_ts(1700000160), 0};
	FwVerdict	v;
	int64		now = unix_ts(1700000130);

	hour.window_end = hour.window_start + HOUR;
	CHECK_EQ(fwwindow_decide(&l[0], &hour, now, &d[0]), OK);
	CHECK_EQ(fwwindow_decide(&l[1], &minute, now, &d[1]), OK);
	fwwindow_settle(l, shadow, 2, d, spend, &v);
	CHECK(!v.ok);
	CHECK(!spend[0] && !spend[1]);
	CHECK_EQ(d[0].remaining, 1500);		/* nothing spent in the hour */
	CHECK_EQ(v.deciding, 1);
	CHECK_EQ(v.retry_after, 30 * USEC);

	/* with a token in the minute, both spend; the minute is the tighter */
	minute.tokens = 1;
	CHECK_EQ(fwwindow_decide(&l[0], &hour, now, &d[0]), OK);
	CHECK_EQ(fwwindow_decide(&l[1], &minute, now, &d[1]), OK);
	fwwindow_settle(l, shadow, 2, d, spend, &v);
	CHECK(v.ok && spend[0] && spend[1] && !v.shadow_denied);
	CHECK_EQ(d[0].remaining, 1499);
	CHECK_EQ(v.deciding, 1);
	CHECK_EQ(d[1].remaining, 0);

	/* retry_after is the latest of the denying windows' */
	minute.tokens = 0;
	hour.tokens = 0;
	CHECK_EQ(fwwindow_decide(&l[0], &hour, now, &d[0]), OK);
	CHECK_EQ(fwwindow_decide(&l[1], &minute, now, &d[1]), OK);
	fwwindow_settle(l, shadow, 2, d, spend, &v);
	CHECK(!v.ok);
	CHECK_EQ(v.retry_after, d[0].retry_after);
	CHECK(d[0].retry_after > d[1].retry_after);
	/* tie on remaining: the longer wait for the window's end */
	CHECK_EQ(v.deciding, 0);

	/* a shadow minute never denies, and spends only when it would allow */
	shadow[1] = true;
	hour.tokens = 1500;
	CHECK_EQ(fwwindow_decide(&l[0], &hour, now, &d[0]), OK);
	CHECK_EQ(fwwindow_decide(&l[1], &minute, now, &d[1]), OK);
	fwwindow_settle(l, shadow, 2, d, spend, &v);
	CHECK(v.ok && v.shadow_denied && spend[0] && !spend[1]);
	CHECK_EQ(v.deciding, 0);
	CHECK_EQ(v.retry_after, 0);

	/* every window a shadow: always allowed */
	shadow[0] = true;
	hour.tokens = 0;
	CHECK_EQ(fwwindow_decide(&l[0], &hour, now, &d[0]), OK);
	CHECK_EQ(fwwindow_decide(&l[1], &minute, now, &d[1]), OK);
	fwwindow_settle(l, shadow, 2, d, spend, &v);
	CHECK(v.ok && v.shadow_denied && !spend[0] && !spend[1]);
	CHECK_EQ(v.retry_after, 0);

	/* an enforced window with no time to promise: the call promises none */
	shadow[0] = shadow[1] = false;
	CHECK_EQ(fwwindow_decide(&l[0], &hour, now, &d[0]), OK);
	CHECK_EQ(fwwindow_decide(&l[1], &minute, now, &d[1]), OK);
	d[0].retry_after = FW_RETRY_NEVER;
	fwwindow_settle(l, shadow, 2, d, spend, &v);
	CHECK(!v.ok);
	CHECK_EQ(v.retry_after, FW_RETRY_NEVER);
	d[0].retry_after = 5 * USEC;
	d[1].retry_after = FW_RETRY_NEVER;
	fwwindow_settle(l, shadow, 2, d, spend, &v);
	CHECK_EQ(v.retry_after, FW_RETRY_NEVER);
}

/* Refunds: up to capacity, to the current window only, never a new counter. */
static void
test_refund(void)
{
	FwLimit		l = LIMIT(period(0, 0, MINUTE), UNIX_EPOCH, 10, 12, 4);
	FwState		st = {unix_ts(1700000100), unix_ts(1700000160), 3};
	FwDecision	dec;
	bool		write;

	CHECK_EQ(fwwindow_refund(&l, &st, unix_ts(1700000130), &dec, &write), OK);
	CHECK(write);
	CHECK_EQ(dec.remaining, 7);
	CHECK_EQ(dec.state.tokens, 7);
	CHECK_EQ(dec.state.window_start, st.window_start);

	/* never above capacity */
	l.cost = 100;
	CHECK_EQ(fwwindow_refund(&l, &st, unix_ts(1700000130), &dec, &write), OK);
	CHECK(write);
	CHECK_EQ(dec.remaining, 12);

	/* the window ended: nothing given back, the new window's tokens held */
	CHECK_EQ(fwwindow_refund(&l, &st, unix_ts(1700000160), &dec, &write), OK);
	CHECK(!write);
	CHECK_EQ(dec.remaining, 12);	/* 3 + 10, up to capacity */

	/* no counter: nothing to give back */
	CHECK_EQ(fwwindow_refund(&l, NULL, unix_ts(1700000130), &dec, &write), OK);
	CHECK(!write);
	CHECK_EQ(dec.remaining, 10);

	/* a full counter stays as it is */
	st.tokens = 12;
	CHECK_EQ(fwwindow_refund(&l, &st, unix_ts(1700000130), &dec, &write), OK);
	CHECK(!write);
}

int
main(void)
{
	test_civil_known();
	test_civil_round_trip();
	test_add_months();
	test_period_from_interval();
	test_window_exact();
	test_window_calendar();
	test_window_invariant_random();
	test_decide_new_key_and_denial();
	test_decide_seed_table();
	test_decide_refill();
	test_decide_clock_backwards();
	test_decide_two_grids();
	test_decide_out_of_range();
	test_decide_retry_never();
	test_phase_start();
	test_settle_all_or_nothing();
	test_refund();

	printf("unit: %ld passed, %ld failed\n", n_passed, n_failed);
	return n_failed > 0 ? 1 : 0;
}
