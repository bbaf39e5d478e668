/*-------------------------------------------------------------------------
 *
 * policy.h
 *	  Named policies: the definitions of fw_policy and fw_override, cached
 *	  in each backend.
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
} FwPolicyWindow;

/* One key's overrides of a policy. */
typedef struct FwOverride
{
	const char *key;
	int			key_len;
	bool		exempt;			/* never denied */
	int32		rate[FW_MAX_WINDOWS];	/* 0: the window's own */
	int32		capacity[FW_MAX_WINDOWS];
} FwOverride;

typedef struct FwPolicy
{
	char		name[FW_MAX_NAME_BYTES + 1];
	int			name_len;
	int			nwindows;
	FwPolicyWindow windows[FW_MAX_WINDOWS]; /* shortest first (fw_window_cmp) */
	int			noverrides;
	FwOverride *overrides;		/* sorted by key */
} FwPolicy;

extern const FwPolicy *fw_policy_find(const char *name, int name_len);
extern const FwPolicy *fw_policy_get(const char *name, int name_len);
extern const FwOverride *fw_policy_override(const FwPolicy *policy,
											const char *key, int key_len);

#endif							/* FW_POLICY_H */
