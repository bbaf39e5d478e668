/*-------------------------------------------------------------------------
 *
 * policy.h
 *	  Named policies: the definitions of fw_policy and fw_override, cached
 *	  in each backend.
 *
 * What a lookup returns is a copy the caller owns: nothing it holds points
 * into the cache, which any relation open, lock or catalog lookup may drop.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_POLICY_H
#define FW_POLICY_H

#include "identity.h"

/* One window of a policy, as defined. */
typedef struct FwPolicyWindow
{
	FwLimit		limit;			/* rate, capacity, period, start; cost 0 */
	bool		phase;			/* start is NULL: the phase of each key */
	bool		shadow;			/* decides and spends, never denies */
	Interval	period;			/* as fw_define was given it */
	char		period_id[FW_MAX_PERIOD_ID];
	int			period_id_len;
	uint32		period_hash;	/* fwidentity_period_hash of period_id */
} FwPolicyWindow;

/*
 * A policy as one key sees it: its windows, shortest first, with the key's
 * overrides applied to their rates and capacities, all read from one
 * snapshot of the definition tables.
 */
typedef struct FwPolicyKey
{
	int			nwindows;
	FwPolicyWindow windows[FW_MAX_WINDOWS];
	bool		exempt;			/* the key is never denied, spends nothing */
} FwPolicyKey;

extern bool fwpolicy_lookup(const char *name, int name_len, FwNameKey *nk,
							FwPolicyKey *policy);
extern void fwpolicy_get(FwNameKey *nk, FwPolicyKey *policy);

#endif							/* FW_POLICY_H */
