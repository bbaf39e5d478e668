/*-------------------------------------------------------------------------
 *
 * window.h
 *	  Fixed-window arithmetic and the token rule of fixed_window.
 *
 * Everything declared here is pure: no shared memory, no catalog, no
 * error reporting.  The same code decides for every storage backend and is
 * compiled, with FRONTEND defined, into the C unit tests under unit/.
 *
 * Times are PostgreSQL timestamps: microseconds since 2000-01-01 00:00 UTC.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_WINDOW_H
#define FW_WINDOW_H

/* Average Gregorian month (365.2425 days / 12), used only for estimates. */
#define FW_USECS_PER_AVG_MONTH	INT64CONST(2629746000000)
#define FW_USECS_PER_DAY		INT64CONST(86400000000)

/*
 * A window length.  With months == 0 the period is the exact duration
 * "span" microseconds.  With months > 0, window k starts at
 *		add_months(start, k * months) + k * span
 * which is what "start + k * period" means in PostgreSQL's interval
 * arithmetic evaluated in UTC (months first, clamped to the month's last
 * day, then days as 24 hours, then the time part).
 */
typedef struct FwPeriod
{
	int32		months;			/* >= 0 */
	int64		span;			/* microseconds; > 0 when months == 0 */
} FwPeriod;

/* The validated parameters of one call. */
typedef struct FwLimit
{
	FwPeriod	period;
	int64		start;			/* origin of the window grid */
	int32		rate;			/* tokens granted per window, > 0 */
	int32		capacity;		/* most tokens a counter holds, >= rate */
	int32		cost;			/* tokens this call spends, 0..capacity */
} FwLimit;

/* What a counter remembers between calls. */
typedef struct FwState
{
	int64		window_start;	/* start of the window the tokens belong to */
	int64		window_end;		/* its end (derivable, kept for inspection) */
	int32		tokens;			/* tokens available in that window */
} FwState;

/*
 * The retry_after of a denied call whose cost no window boundary within
 * 64-bit time covers: no time can be promised.
 */
#define FW_RETRY_NEVER		INT64CONST(-1)

/* The answer to one call. */
typedef struct FwDecision
{
	bool		ok;				/* tokens covered the cost */
	int32		remaining;		/* tokens left after this call */
	int64		retry_after;	/* microseconds until the cost is covered; 0 if
								 * ok; FW_RETRY_NEVER */
	int64		reset_after;	/* microseconds until the current window ends */
	FwState		state;			/* the counter after this call, if allowed;
								 * a denied call changes nothing */
	int64		now;			/* the time the call was judged at */

	/*
	 * While fresh_from <= t < fresh_until, the counter left by this call
	 * answers exactly as no counter would, and can be forgotten; 0 for
	 * fresh_from means never, PG_INT64_MAX for fresh_until means forever.
	 */
	int64		fresh_from;
	int64		fresh_until;
} FwDecision;

/*
 * How the windows of one call settle.  Each window is decided alone by
 * fwwindow_decide; the call is allowed only if every enforced window allowed it,
 * and then every enforced window spends -- all or nothing.  A shadow window
 * never denies: it spends when every window, itself included, allowed the
 * call, as it would if it were enforced.
 */
typedef struct FwVerdict
{
	bool		ok;				/* every enforced window holds the cost */
	bool		shadow_denied;	/* allowed, but a shadow window would deny */
	int			deciding;		/* the most restrictive window, whose
								 * remaining and reset_after answer */
	int64		retry_after;	/* until every enforced window holds the cost,
								 * or FW_RETRY_NEVER */
} FwVerdict;

/* Most windows one policy may have. */
#define FW_MAX_WINDOWS		8

typedef enum FwStatus
{
	FW_STATUS_OK = 0,
	FW_STATUS_OUT_OF_RANGE		/* a boundary or duration overflows 64 bits */
} FwStatus;

extern bool fwwindow_period_from_interval(int32 months, int32 days, int64 time,
										  FwPeriod *period);
extern FwStatus fwwindow_boundary(const FwPeriod *period, int64 start,
								  int64 k, int64 *boundary);
extern FwStatus fwwindow_index(const FwPeriod *period, int64 start,
							   int64 t, int64 *k);
extern FwStatus fwwindow_phase_start(const FwPeriod *period, uint64 hash,
									 int64 *start);
extern FwStatus fwwindow_phase_range(const FwPeriod *period, int64 *first, int64 *last);
extern FwStatus fwwindow_decide(const FwLimit *limit, const FwState *old,
								int64 now, FwDecision *decision);
extern void fwwindow_settle(const FwLimit *limits, const bool *shadow, int n,
							FwDecision *decisions, bool *spend, FwVerdict *verdict);
extern FwStatus fwwindow_refund(const FwLimit *limit, const FwState *old, int64 now,
								FwDecision *decision, bool *write);

/* Calendar helpers, exposed for the unit tests. */
extern int64 fwwindow_days_from_civil(int64 year, int month, int day);
extern void fwwindow_civil_from_days(int64 days, int64 *year, int *month, int *day);
extern FwStatus fwwindow_add_months(int64 t, int64 months, int64 *result);

#endif							/* FW_WINDOW_H */
