/*-------------------------------------------------------------------------
 *
 * decide.h
 *	  One call as the stores see it -- the counters of its windows, their
 *	  limits, what it asks of them -- and what it decided, window by window
 *	  and as a whole.
 *
 * Above the identities and limits (identity.h) and below the stores, which
 * read a call's counters under their locks and hand their states to
 * fwdecide_call.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_DECIDE_H
#define FW_DECIDE_H

#include "identity.h"

/* How applying a call to a store ended. */
typedef enum FwApplyResult
{
	FW_APPLY_OK = 0,
	FW_APPLY_OUT_OF_RANGE,		/* a boundary lies beyond 64-bit time */
	FW_APPLY_FULL,				/* no room for a new counter */
	FW_APPLY_DATABASE_FULL,		/* the database holds all it may */
	FW_APPLY_ROLE_FULL,			/* the role holds all it may */
	FW_APPLY_RETIRED			/* shared memory's table was replaced while
								 * the call waited: the store tries again */
} FwApplyResult;

/* Whether a store found no room for a new counter. */
static inline bool
fwdecide_no_room(FwApplyResult result)
{
	return result == FW_APPLY_FULL || result == FW_APPLY_DATABASE_FULL ||
		result == FW_APPLY_ROLE_FULL;
}

/* What a call asks of its counters. */
typedef enum FwMode
{
	FW_MODE_CHECK,				/* decide, change nothing */
	FW_MODE_SPEND,				/* decide, and spend when allowed */
	FW_MODE_REFUND				/* give tokens back to current windows */
} FwMode;

/*
 * One call: the counters of its windows -- one for an inline call, one per
 * window of a policy, shortest first, which is the order the table backend
 * locks their rows in (shared memory locks partitions in index order).  The
 * call owns what its windows point to that the caller's arguments do not
 * hold: each policy window's period, as defined and as its identifier.
 * Its name and key are hashed once (fwidentity_name_key, kept in nk): each
 * window's identity combines their hashes, and their 64-bit hash (the same
 * for every window), computed at its first need, names the table backend's
 * locks.
 */
typedef struct FwCall
{
	FwMode		mode;
	int			n;
	FwNameKey	nk;				/* its name and key, and their hashes */
	FwIdentity	ids[FW_MAX_WINDOWS];
	FwLimit		limits[FW_MAX_WINDOWS];
	bool		shadow[FW_MAX_WINDOWS];
	Interval	periods[FW_MAX_WINDOWS];	/* a policy's, as defined */
	char		period_ids[FW_MAX_WINDOWS][FW_MAX_PERIOD_ID];
} FwCall;

/*
 * What a call found and answered, window by window and as a whole.  A
 * window without a counter gets one (create) when the call spends in it,
 * and when it denies the call: a key that was new again at the time its
 * retry_after names would hold rate tokens then too, and a cost above the
 * rate could never be covered.  A check sets create where fw_limit would
 * create, and writes nothing.
 */
typedef struct FwOutcome
{
	FwDecision	decisions[FW_MAX_WINDOWS];
	bool		spend[FW_MAX_WINDOWS];	/* the window's counter spends */
	bool		create[FW_MAX_WINDOWS]; /* the window's counter is created */
	FwVerdict	verdict;
} FwOutcome;

extern FwApplyResult fwdecide_call(const FwCall *call, FwState *const *states,
								   int64 now, FwOutcome *outcome);
extern void fwdecide_answer(const FwOutcome *outcome, FwDecision *answer);
extern void fwdecide_no_promise(const FwCall *call, FwOutcome *outcome);

#endif							/* FW_DECIDE_H */
