/*-------------------------------------------------------------------------
 *
 * call.c
 *	  One call of a limit given inline or of a named policy: its windows.
 *
 * An inline call has one window, whose counter is named by the limit's
 * name.  A named call has one window per window of its policy, with the
 * key's overrides applied, each with a counter of its own, named by the
 * policy's name and the window's period (fwidentity_init); an exempt
 * key's call spends nothing.  The name and key are hashed once per call
 * (fwidentity_name_key), and a policy window's period once per reading of
 * the policy: each counter's identity combines those hashes.  The store
 * decides all windows of a call at once (fwstore_apply).
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "call.h"
#include "validate.h"

/*
 * Check the cost of window i of a call and, when its start is the key's
 * phase, derive it from the 64-bit hash of the limit's or policy's name and
 * the key, so that the windows of one key nest as those of inline calls do.  A
 * refund of more than the capacity gives back as much as the capacity
 * would.  Only an inline call's cost must be within its capacity: a
 * policy's call with a cost above a window's capacity is denied by an
 * enforced window (with no retry time), and only counted by a shadow one,
 * so that an admin who defines a smaller window or override never makes
 * calls fail.
 */
static void
fwcall_cost(FwCall *call, int i, int32 cost, bool phase, bool within_capacity)
{
	if (call->mode == FW_MODE_REFUND)
		cost = Min(cost, call->limits[i].capacity);
	fwvalidate_cost(&call->limits[i], phase ? fwidentity_name_key_hash64(&call->nk) : 0,
					cost, phase, within_capacity);
}

/* The window of an inline call. */
void
fwcall_inline(FwCall *call, FwMode mode, const char *name, int name_len,
			  const char *key, int key_len, int32 rate,
			  const Interval *period, const TimestampTz *start,
			  int32 cost, const int32 *capacity)
{
	fwidentity_name_key(&call->nk, name, name_len, key, key_len);
	call->mode = mode;
	call->n = 1;
	call->shadow[0] = false;
	fwidentity_init(&call->ids[0], &call->nk, "", 0, 0);
	fwvalidate_limit(&call->limits[0], rate, period, start, capacity);
	fwcall_cost(call, 0, cost, start == NULL, true);
}

/*
 * The windows of a named call: those of the policy, with the rates the key
 * overrides.  The call owns a copy of everything it uses of the policy.
 */
void
fwcall_named(FwCall *call, FwMode mode, const char *name, int name_len,
			 const char *key, int key_len, int32 cost)
{
	FwPolicyKey policy;
	bool		exempt;
	int			i;

	fwidentity_name_key(&call->nk, name, name_len, key, key_len);
	fwpolicy_get(&call->nk, &policy);
	exempt = (policy.exempt && mode != FW_MODE_REFUND);

	call->mode = mode;
	call->n = policy.nwindows;
	for (i = 0; i < policy.nwindows; i++)
	{
		const FwPolicyWindow *window = &policy.windows[i];

		memcpy(call->period_ids[i], window->period_id, window->period_id_len);
		fwidentity_init(&call->ids[i], &call->nk, call->period_ids[i], window->period_id_len,
						window->period_hash);
		call->limits[i] = window->limit;
		call->periods[i] = window->period;
		call->shadow[i] = window->shadow;
		fwcall_cost(call, i, cost, window->phase, false);
		/* an exempt key's calls are judged, and spend nothing */
		if (exempt)
			call->limits[i].cost = 0;
	}
}
