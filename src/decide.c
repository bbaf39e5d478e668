/*-------------------------------------------------------------------------
 *
 * decide.c
 *	  The decision of one call over the states of its counters, as a store
 *	  read them under its locks.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "decide.h"

/*
 * Decide a call on the states of its counters (NULL for a counter that does
 * not exist), read under the stores' locks at time now: every window alone,
 * then settled all or nothing (fwwindow_settle); or, for a refund, each window's
 * counter on its own, the call answering with the fewest tokens held by an
 * enforced window.
 */
FwApplyResult
fwdecide_call(const FwCall *call, FwState *const *states, int64 now,
			  FwOutcome *outcome)
{
	int			i;

	for (i = 0; i < call->n; i++)
	{
		FwStatus	status;

		if (call->mode == FW_MODE_REFUND)
			status = fwwindow_refund(&call->limits[i], states[i], now,
									 &outcome->decisions[i], &outcome->spend[i]);
		else
			status = fwwindow_decide(&call->limits[i], states[i], now, &outcome->decisions[i]);
		if (status != FW_STATUS_OK)
			return FW_APPLY_OUT_OF_RANGE;
	}

	if (call->mode != FW_MODE_REFUND)
	{
		fwwindow_settle(call->limits, call->shadow, call->n, outcome->decisions,
						outcome->spend, &outcome->verdict);
		for (i = 0; i < call->n; i++)
			outcome->create[i] = (states[i] == NULL &&
								  (outcome->spend[i] || !outcome->decisions[i].ok));
		if (call->mode == FW_MODE_CHECK)
			memset(outcome->spend, 0, sizeof(outcome->spend));
		return FW_APPLY_OK;
	}

	memset(outcome->create, 0, sizeof(outcome->create));
	memset(&outcome->verdict, 0, sizeof(FwVerdict));
	outcome->verdict.ok = true;
	outcome->verdict.deciding = 0;
	for (i = 1; i < call->n; i++)
	{
		int			best = outcome->verdict.deciding;

		if (call->shadow[i] && !call->shadow[best])
			continue;
		if ((call->shadow[best] && !call->shadow[i]) ||
			outcome->decisions[i].remaining < outcome->decisions[best].remaining)
			outcome->verdict.deciding = i;
	}
	return FW_APPLY_OK;
}

/*
 * The answer of a call as fw_limit gives it: allowed or not, when to retry,
 * and the tokens and time left of its most restrictive window.
 */
void
fwdecide_answer(const FwOutcome *outcome, FwDecision *answer)
{
	*answer = outcome->decisions[outcome->verdict.deciding];
	answer->ok = outcome->verdict.ok;
	answer->retry_after = outcome->verdict.retry_after;
}

/*
 * A denied call whose counters could not be created (no room, and
 * fixed_window.fail_open on) promises no retry time: at any later time its
 * key would be new again, and judged the same.
 */
void
fwdecide_no_promise(const FwCall *call, FwOutcome *outcome)
{
	int			i;

	if (outcome->verdict.ok)
		return;
	outcome->verdict.retry_after = FW_RETRY_NEVER;
	for (i = 0; i < call->n; i++)
		if (outcome->create[i] && !outcome->decisions[i].ok)
			outcome->decisions[i].retry_after = FW_RETRY_NEVER;
}
