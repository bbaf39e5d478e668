/*-------------------------------------------------------------------------
 *
 * window.c
 *	  Fixed-window arithmetic and the token rule of fixed_window.
 *
 * Windows are [W(k), W(k+1)) for every integer k, where W(k) is
 * start + k * period (see FwPeriod in window.h).  A counter remembers the
 * start of the window its tokens belong to and how many tokens it holds.
 * Each window boundary crossed grants "rate" tokens, up to "capacity"; a key
 * seen for the first time holds "rate" tokens in its current window.
 *
 * All arithmetic is in 64-bit integers with explicit overflow checks, so
 * that microsecond periods over centuries, multi-millennium periods and
 * rates near 2^31 give exact answers or FW_STATUS_OUT_OF_RANGE, never a
 * wrapped value.  Calendar months use the proleptic Gregorian calendar,
 * like PostgreSQL's own date arithmetic.
 *
 * This file has no dependency on the backend: it is compiled into the
 * extension and, with FRONTEND defined, into the unit tests.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FRONTEND
#include "postgres.h"
#else
#include "postgres_fe.h"
#endif

#include "common/int.h"

#include "window.h"

/* Days from 0000-03-01 (proleptic Gregorian) to 2000-01-01. */
#define DAYS_0000_03_01_TO_2000_01_01	INT64CONST(730425)
/* Days in a 400-year Gregorian cycle. */
#define DAYS_PER_400_YEARS				INT64CONST(146097)
/* Years beyond which no timestamp in 64-bit microseconds can exist. */
#define FW_MAX_ABS_YEAR					INT64CONST(300000)

/* Searching for a window index never needs more steps than this. */
#define FW_MAX_INDEX_STEPS				64

static inline int64
floor_div(int64 a, int64 b)
{
	int64		q = a / b;

	if ((a % b != 0) && ((a < 0) != (b < 0)))
		q--;
	return q;
}

static bool
is_leap_year(int64 year)
{
	return (year % 4 == 0) && (year % 100 != 0 || year % 400 == 0);
}

static int
days_in_month(int64 year, int month)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	if (month == 2 && is_leap_year(year))
		return 29;
	return mdays[month - 1];
}

/*
 * Days since 2000-01-01 of the given date.  The year is counted from
 * March, so that the leap day is the last day of its year; then a date
 * splits into 400-year eras, the year within the era and the day within
 * that year.
 */
int64
fwwindow_days_from_civil(int64 year, int month, int day)
{
	int64		y = (month <= 2) ? year - 1 : year;
	int64		era = floor_div(y, 400);
	int64		year_of_era = y - era * 400;	/* 0..399 */
	int			march_month = (month + 9) % 12; /* March = 0 .. February = 11 */
	int64		day_of_year;
	int64		day_of_era;

	/* 153 days in every 5 months from March: 31 30 31 30 31 */
	day_of_year = (153 * march_month + 2) / 5 + day - 1;
	day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 +
		day_of_year;
	return era * DAYS_PER_400_YEARS + day_of_era - DAYS_0000_03_01_TO_2000_01_01;
}

/* Inverse of fwwindow_days_from_civil. */
void
fwwindow_civil_from_days(int64 days, int64 *year, int *month, int *day)
{
	int64		z = days + DAYS_0000_03_01_TO_2000_01_01;
	int64		era = floor_div(z, DAYS_PER_400_YEARS);
	int64		day_of_era = z - era * DAYS_PER_400_YEARS;	/* 0..146096 */
	int64		year_of_era;
	int64		day_of_year;
	int			march_month;

	/* remove the leap days of the era before dividing by 365 */
	year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36524 -
				   day_of_era / (DAYS_PER_400_YEARS - 1)) / 365;
	day_of_year = day_of_era -
		(365 * year_of_era + year_of_era / 4 - year_of_era / 100);
	march_month = (int) ((5 * day_of_year + 2) / 153);

	*day = (int) (day_of_year - (153 * march_month + 2) / 5 + 1);
	*month = march_month < 10 ? march_month + 3 : march_month - 9;
	*year = year_of_era + era * 400 + (*month <= 2 ? 1 : 0);
}

/*
 * t + months, as PostgreSQL adds an interval's month part in UTC: move the
 * calendar month, keep the time of day, and clamp the day of the month to
 * the length of the target month (2026-01-31 + 1 month = 2026-02-28).
 */
FwStatus
fwwindow_add_months(int64 t, int64 months, int64 *result)
{
	int64		days = floor_div(t, FW_USECS_PER_DAY);
	int64		time_of_day = t - days * FW_USECS_PER_DAY;
	int64		year;
	int			month;
	int			day;
	int64		month_index;
	int64		new_year;
	int			new_month;
	int64		usecs;

	fwwindow_civil_from_days(days, &year, &month, &day);

	if (months > FW_MAX_ABS_YEAR * 24 || months < -FW_MAX_ABS_YEAR * 24)
		return FW_STATUS_OUT_OF_RANGE;
	month_index = year * 12 + (month - 1) + months;
	new_year = floor_div(month_index, 12);
	new_month = (int) (month_index - new_year * 12) + 1;
	if (new_year > FW_MAX_ABS_YEAR || new_year < -FW_MAX_ABS_YEAR)
		return FW_STATUS_OUT_OF_RANGE;

	day = Min(day, days_in_month(new_year, new_month));
	days = fwwindow_days_from_civil(new_year, new_month, day);

	if (pg_mul_s64_overflow(days, FW_USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, time_of_day, result))
		return FW_STATUS_OUT_OF_RANGE;
	return FW_STATUS_OK;
}

/*
 * Convert an interval (months, days, microseconds) into a period.  Returns
 * false unless it is a positive period that gives strictly increasing
 * window boundaries: either no month part and a positive total duration,
 * or a positive month part with no negative day or time part (a negative
 * part could make "1 month - 29 days" go backwards in February).
 */
bool
fwwindow_period_from_interval(int32 months, int32 days, int64 time, FwPeriod *period)
{
	int64		span;

	if (pg_mul_s64_overflow((int64) days, FW_USECS_PER_DAY, &span) ||
		pg_add_s64_overflow(span, time, &span))
		return false;

	if (months == 0)
	{
		if (span <= 0)
			return false;
	}
	else if (months < 0 || days < 0 || time < 0)
		return false;

	period->months = months;
	period->span = span;
	return true;
}

/* W(k): the start of window k. */
FwStatus
fwwindow_boundary(const FwPeriod *period, int64 start, int64 k, int64 *boundary)
{
	int64		base = start;
	int64		offset;

	if (period->months > 0)
	{
		int64		months;

		if (pg_mul_s64_overflow(k, (int64) period->months, &months))
			return FW_STATUS_OUT_OF_RANGE;
		if (fwwindow_add_months(start, months, &base) != FW_STATUS_OK)
			return FW_STATUS_OUT_OF_RANGE;
	}
	if (pg_mul_s64_overflow(k, period->span, &offset) ||
		pg_add_s64_overflow(base, offset, boundary))
		return FW_STATUS_OUT_OF_RANGE;
	return FW_STATUS_OK;
}

/*
 * W(k), saturated: boundaries beyond 64 bits compare as +-infinity, which
 * keeps the search in fwwindow_index correct because W is increasing.
 */
static int64
boundary_saturated(const FwPeriod *period, int64 start, int64 k)
{
	int64		boundary;

	if (fwwindow_boundary(period, start, k, &boundary) == FW_STATUS_OK)
		return boundary;
	return (k > 0) ? PG_INT64_MAX : PG_INT64_MIN;
}

/* The k with W(k) <= t < W(k+1). */
FwStatus
fwwindow_index(const FwPeriod *period, int64 start, int64 t, int64 *k)
{
	int64		diff;
	int64		approx;
	int64		guess;
	int			steps;

	if (pg_sub_s64_overflow(t, start, &diff))
		return FW_STATUS_OUT_OF_RANGE;

	if (period->months == 0)
	{
		*k = floor_div(diff, period->span);
		return FW_STATUS_OK;
	}

	/*
	 * Calendar periods: estimate with the average Gregorian month, then step
	 * to the exact window.  Months of 28 to 31 days keep the estimate within
	 * a window or two of the answer.
	 */
	if (pg_mul_s64_overflow((int64) period->months, FW_USECS_PER_AVG_MONTH, &approx) ||
		pg_add_s64_overflow(approx, period->span, &approx))
		guess = (diff >= 0) ? 0 : -1;
	else
		guess = floor_div(diff, approx);

	for (steps = 0; boundary_saturated(period, start, guess) > t; steps++)
	{
		if (steps >= FW_MAX_INDEX_STEPS)
			return FW_STATUS_OUT_OF_RANGE;
		guess--;
	}
	for (steps = 0; boundary_saturated(period, start, guess + 1) <= t; steps++)
	{
		if (steps >= FW_MAX_INDEX_STEPS)
			return FW_STATUS_OUT_OF_RANGE;
		guess++;
	}
	*k = guess;
	return FW_STATUS_OK;
}

/*
 * The window origin of a limit called with start => NULL: the Unix epoch
 * shifted by hash modulo the length of the window that begins there, so
 * that keys spread their boundaries over a whole period.
 */
FwStatus
fwwindow_phase_start(const FwPeriod *period, uint64 hash, int64 *start)
{
	const int64 unix_epoch = -INT64CONST(946684800000000);
	int64		first_end;
	int64		length;

	if (fwwindow_boundary(period, unix_epoch, 1, &first_end) != FW_STATUS_OK)
		return FW_STATUS_OUT_OF_RANGE;
	length = first_end - unix_epoch;
	*start = unix_epoch + (int64) (hash % (uint64) length);
	return FW_STATUS_OK;
}

/*
 * The earliest and the latest start fwwindow_phase_start gives, over all hashes:
 * the Unix epoch, and the last microsecond of the window that begins there.
 */
FwStatus
fwwindow_phase_range(const FwPeriod *period, int64 *first, int64 *last)
{
	const int64 unix_epoch = -INT64CONST(946684800000000);
	int64		first_end;

	if (fwwindow_boundary(period, unix_epoch, 1, &first_end) != FW_STATUS_OK)
		return FW_STATUS_OUT_OF_RANGE;
	*first = unix_epoch;
	*last = first_end - 1;
	return FW_STATUS_OK;
}

/*
 * Tokens after "windows" boundaries have granted "rate" each, up to
 * capacity.  Never overflows: the sum is only formed when below capacity.
 */
static int32
refill(int32 tokens, int64 windows, int32 rate, int32 capacity)
{
	int64		room = (int64) capacity - tokens;

	if (room <= 0)
		return capacity;
	if (windows >= (room + rate - 1) / rate)
		return capacity;
	return tokens + (int32) (windows * rate);
}

/*
 * Decide one call.  "old" is the counter's state, or NULL for a key seen
 * for the first time; "now" is the clock read under the counter's lock.
 *
 * The counter never moves back to an older window: if now lies before the
 * window it already holds (the clock was set back, or the call uses another
 * start or period), that window stays current and its tokens are judged.
 * Nor does the start it recorded: a call whose grid puts that start inside
 * a longer or earlier-starting window of its own judges the tokens of that
 * window, but the counter keeps its start, so that a call on the original
 * grid never sees a window that already ended and refills; and it keeps
 * the latest end any call gave it.
 *
 * decision->state is what the counter holds after an allowed call; a
 * denied call changes nothing, so stores write it only when decision->ok.
 */
FwStatus
fwwindow_decide(const FwLimit *limit, const FwState *old, int64 now,
				FwDecision *decision)
{
	const FwPeriod *period = &limit->period;
	int64		k_now;
	int64		k;
	int64		window_start;
	int64		window_end;
	int32		tokens;
	bool		keeps_window = false;	/* the counter stays in its window */

	if (fwwindow_index(period, limit->start, now, &k_now) != FW_STATUS_OK ||
		fwwindow_boundary(period, limit->start, k_now, &window_start) != FW_STATUS_OK)
		return FW_STATUS_OUT_OF_RANGE;

	if (old == NULL)
	{
		k = k_now;
		tokens = limit->rate;
	}
	else if (old->window_start == window_start)
	{
		/* the common case, the same window: no second index search */
		k = k_now;
		tokens = Min(old->tokens, limit->capacity);
		keeps_window = true;
	}
	else
	{
		int64		k_old;

		if (fwwindow_index(period, limit->start, old->window_start, &k_old) != FW_STATUS_OK)
			return FW_STATUS_OUT_OF_RANGE;
		if (k_old < k_now)
		{
			int64		elapsed;

			/* more windows than 64 bits count certainly fill the counter */
			if (pg_sub_s64_overflow(k_now, k_old, &elapsed))
				elapsed = PG_INT64_MAX;
			k = k_now;
			tokens = refill(old->tokens, elapsed, limit->rate, limit->capacity);
		}
		else
		{
			k = k_old;
			tokens = Min(old->tokens, limit->capacity);
			keeps_window = true;
		}
	}

	if (k == PG_INT64_MAX ||
		fwwindow_boundary(period, limit->start, k + 1, &window_end) != FW_STATUS_OK ||
		pg_sub_s64_overflow(window_end, now, &decision->reset_after))
		return FW_STATUS_OUT_OF_RANGE;

	if (tokens >= limit->cost)
	{
		decision->ok = true;
		tokens -= limit->cost;
		decision->retry_after = 0;
	}
	else
	{
		int64		deficit = (int64) limit->cost - tokens;
		int64		windows = (deficit + limit->rate - 1) / limit->rate;
		int64		covered_at;
		int64		covered_end;

		decision->ok = false;

		/*
		 * The boundary at which the grants cover the cost, if the window it
		 * starts ends within 64-bit time (else a call then would fail): no
		 * other time is promised, nor any for a cost above the capacity
		 * (which only a policy's window may be asked).
		 */
		if (limit->cost > limit->capacity ||
			pg_add_s64_overflow(k, windows, &windows) || windows == PG_INT64_MAX ||
			fwwindow_boundary(period, limit->start, windows, &covered_at) != FW_STATUS_OK ||
			fwwindow_boundary(period, limit->start, windows + 1, &covered_end) != FW_STATUS_OK ||
			pg_sub_s64_overflow(covered_at, now, &decision->retry_after))
			decision->retry_after = FW_RETRY_NEVER;
	}

	decision->now = now;
	decision->remaining = tokens;
	decision->state.tokens = tokens;
	/*
	 * The end kept is the later of the counter's and the call's: with
	 * several grids on one key, the counter is not done with (reclaimed,
	 * collected by fw_gc) before every window that spent from it has ended.
	 */
	decision->state.window_start = keeps_window ? old->window_start : window_start;
	decision->state.window_end = old ? Max(old->window_end, window_end) : window_end;

	/*
	 * Without rollover, any counter whose window has ended refills to rate
	 * tokens: the same as a new key.  With rollover, only an empty counter
	 * is, for exactly one window; one holding tokens has more than rate
	 * from the next window on, and forgetting it would change answers.
	 */
	decision->fresh_from = 0;
	decision->fresh_until = PG_INT64_MAX;
	if (limit->capacity == limit->rate)
		decision->fresh_from = decision->state.window_end;
	else if (tokens == 0 && k < PG_INT64_MAX - 1 &&
			 fwwindow_boundary(period, limit->start, k + 2, &decision->fresh_until) == FW_STATUS_OK &&
			 decision->fresh_until > decision->state.window_end)
		decision->fresh_from = decision->state.window_end;
	else
		decision->fresh_until = PG_INT64_MAX;
	return FW_STATUS_OK;
}

/*
 * Settle the windows of one call, each decided alone by fwwindow_decide with the
 * same cost: set which windows spend (spend[i]) and the call's answer.
 *
 * The call is allowed when every enforced window allowed it; then enforced
 * windows spend, and shadow windows spend too if every one of them allowed
 * it as well.  A window that allowed the call but does not spend reports
 * the tokens it still holds.  The answer's remaining and reset_after are
 * those of the most restrictive window -- the fewest tokens left, then the
 * longest wait for its end -- among the enforced windows, or among all when
 * every window is a shadow; retry_after is the latest of the enforced
 * windows', since tokens only grow while nothing is spent (FW_RETRY_NEVER if
 * any of them has none).
 */
void
fwwindow_settle(const FwLimit *limits, const bool *shadow, int n,
				FwDecision *decisions, bool *spend, FwVerdict *verdict)
{
	bool		enforced_ok = true;
	bool		shadow_ok = true;
	bool		any_enforced = false;
	int			i;

	for (i = 0; i < n; i++)
	{
		if (shadow[i])
			shadow_ok &= decisions[i].ok;
		else
		{
			any_enforced = true;
			enforced_ok &= decisions[i].ok;
		}
	}

	verdict->ok = enforced_ok;
	verdict->shadow_denied = enforced_ok && !shadow_ok;
	verdict->retry_after = 0;
	verdict->deciding = -1;
	for (i = 0; i < n; i++)
	{
		FwDecision *d = &decisions[i];

		spend[i] = d->ok && enforced_ok && (shadow_ok || !shadow[i]);
		if (d->ok && !spend[i])
			d->remaining += limits[i].cost;
		if (shadow[i] && any_enforced)
			continue;
		if (!shadow[i] &&
			(d->retry_after == FW_RETRY_NEVER || verdict->retry_after == FW_RETRY_NEVER))
			verdict->retry_after = FW_RETRY_NEVER;
		else if (!shadow[i])
			verdict->retry_after = Max(verdict->retry_after, d->retry_after);
		if (verdict->deciding < 0 ||
			d->remaining < decisions[verdict->deciding].remaining ||
			(d->remaining == decisions[verdict->deciding].remaining &&
			 d->reset_after > decisions[verdict->deciding].reset_after))
			verdict->deciding = i;
	}
	if (!any_enforced)
		verdict->retry_after = 0;
}

/*
 * Give back up to limit->cost tokens to a counter, never above its capacity
 * and only while the window it holds is current: a window that has ended
 * is never refunded, and a key without a counter has nothing to get back.
 * decision is that of a call spending nothing, with the tokens held after
 * the refund; *write says whether the counter changed.
 */
FwStatus
fwwindow_refund(const FwLimit *limit, const FwState *old, int64 now,
				FwDecision *decision, bool *write)
{
	FwLimit		judge = *limit;
	FwStatus	status;
	int64		tokens;

	judge.cost = 0;
	*write = false;
	status = fwwindow_decide(&judge, old, now, decision);
	if (status != FW_STATUS_OK || old == NULL ||
		decision->state.window_start != old->window_start)
		return status;

	tokens = Min((int64) decision->state.tokens + limit->cost, (int64) limit->capacity);
	if (tokens <= decision->state.tokens)
		return status;
	decision->state.tokens = decision->remaining = (int32) tokens;
	/* a counter holding tokens answers as no counter would only without rollover */
	decision->fresh_from = (limit->capacity == limit->rate) ? decision->state.window_end : 0;
	decision->fresh_until = PG_INT64_MAX;
	*write = true;
	return status;
}
