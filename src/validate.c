/*-------------------------------------------------------------------------
 *
 * validate.c
 *	  The checks every argument of a limit passes before any store sees
 *	  it: rate, period, start, capacity and cost, and whether its windows
 *	  lie within 64-bit time.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "validate.h"

/*
 * Check the parameters of a limit that do not depend on the call into
 * *limit: rate, period, start (NULL: the phase of each key, set by
 * fwvalidate_cost) and capacity (NULL: the rate).
 */
void
fwvalidate_limit(FwLimit *limit, int32 rate, const Interval *period,
				 const TimestampTz *start, const int32 *capacity)
{
	limit->rate = rate;
	if (rate <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("rate must be greater than zero"),
				errdetail("The rate given was %d.", rate)));

	if (FW_INTERVAL_NOT_FINITE(period) ||
		!fwwindow_period_from_interval(period->month, period->day, period->time,
									   &limit->period))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("period must be a positive interval"),
				errdetail("The period given was \"%s\".",
						  DatumGetCString(DirectFunctionCall1(interval_out,
						  IntervalPGetDatum(period)))),
				errhint("Use a period such as '1 minute', '1 day' or '1 month'. "
						"A period with a month or year part must not have a negative day or time part.")));

	limit->start = 0;
	if (start != NULL)
	{
		limit->start = *start;
		if (TIMESTAMP_NOT_FINITE(limit->start))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					errmsg("start must be a finite timestamp"),
					errdetail("The start given was %s.",
							  TIMESTAMP_IS_NOBEGIN(limit->start) ? "-infinity" : "infinity")));
	}

	limit->capacity = capacity ? *capacity : rate;
	if (limit->capacity < rate)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("capacity must be at least the rate"),
				errdetail("The capacity given was %d and the rate %d.",
						  limit->capacity, rate)));
	limit->cost = 0;
}

/* A window of a limit lies beyond 64-bit time: the error of its calls. */
void
fwvalidate_range_error(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			errmsg("window boundary out of range"),
			errdetail("A window of this limit starts or ends more than about 292,000 years from the year 2000."),
			errhint("Use a shorter period or a start closer to the present.")));
}

static void
fwvalidate_phase_error(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			errmsg("period is too long to derive a start from the key"),
			errdetail("With start NULL, each key's windows start within the first window from the Unix epoch, and that window ends more than about 292,000 years from the year 2000."),
			errhint("Use a shorter period, or give a start.")));
}

/*
 * What every call of a limit checks whatever its key and cost, checked when
 * the limit is defined rather than called: with phase (start NULL), that a
 * start can be derived from any key; and that the window containing now,
 * and its end, lie within 64-bit time, for every start the keys can have.
 */
void
fwvalidate_now(const FwLimit *limit, bool phase, int64 now)
{
	FwLimit		probe = *limit;
	FwDecision	decision;
	int64		starts[2];
	int			nstarts = 1;
	int			i;

	starts[0] = limit->start;
	if (phase)
	{
		if (fwwindow_phase_range(&limit->period, &starts[0], &starts[1]) != FW_STATUS_OK)
			fwvalidate_phase_error();
		nstarts = 2;
	}
	probe.cost = 0;
	for (i = 0; i < nstarts; i++)
	{
		probe.start = starts[i];
		if (fwwindow_decide(&probe, NULL, now, &decision) != FW_STATUS_OK)
			fwvalidate_range_error();
	}
}

/*
 * Check the cost of a call of a defined limit and, when the limit's start
 * is the key's phase (phase true), derive it from hash64, the 64-bit hash
 * of the call's name and key (fwidentity_hash64).
 * A cost above the capacity is an error where the caller gave both
 * (within_capacity: an inline call); a policy's window answers it as a
 * denial that no time will lift, since the caller cannot know what an
 * admin defined.
 */
void
fwvalidate_cost(FwLimit *limit, uint64 hash64, int32 cost, bool phase,
				bool within_capacity)
{
	limit->cost = cost;
	if (cost < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("cost must not be negative"),
				errdetail("The cost given was %d.", cost)));
	if (within_capacity && cost > limit->capacity)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("cost must not exceed the capacity"),
				errdetail("The cost given was %d and the capacity %d, so the call could never be allowed.",
						  cost, limit->capacity),
				errhint("Raise capacity, which defaults to the rate, or lower the cost.")));

	if (phase &&
		fwwindow_phase_start(&limit->period, hash64, &limit->start) != FW_STATUS_OK)
		fwvalidate_phase_error();
}
