/*-------------------------------------------------------------------------
 *
 * define.c
 *	  What fw_define and the other SQL functions that manage policies call
 *	  in C: checking a window's parameters, naming its period, and telling
 *	  every backend that the definitions changed.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/trigger.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "identity.h"

PG_FUNCTION_INFO_V1(fw_window_id);
PG_FUNCTION_INFO_V1(fw_policy_changed);
PG_FUNCTION_INFO_V1(fw_acting_role);

/*
 * fw_acting_role() returns name
 *
 * The role the session acts as (its SET ROLE, or its login role), also
 * inside SECURITY DEFINER functions: who wrote an override.
 */
Datum
fw_acting_role(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(DirectFunctionCall1(namein,
										CStringGetDatum(GetUserNameFromId(GetOuterUserId(), false))));
}

/*
 * fw_window_id(name text, key text, rate integer, period interval,
 *				start timestamptz, capacity integer) returns text
 *
 * Check a policy's name, a key (NULL when there is none) and the
 * parameters of one window (start and capacity may be NULL) as fw_limit
 * checks them, and return the identifier of the window's period: one text
 * per window length, so that '1 minute' and '60 seconds' are one window of
 * a policy, and '1 mon' and '30 days' two.
 */
Datum
fw_window_id(PG_FUNCTION_ARGS)
{
	static const char *const names[] = {"name", "key", "rate", "period"};
	FwLimit		limit;
	TimestampTz start;
	int32		capacity;
	char		id[FW_MAX_PERIOD_ID];
	int			i;

	for (i = 0; i < lengthof(names); i++)
		if (PG_ARGISNULL(i) && i != 1)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("argument \"%s\" must not be null", names[i])));
	fw_check_length("name", VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(0)), FW_MAX_NAME_BYTES);
	if (!PG_ARGISNULL(1))
		fw_check_length("key", VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(1)), FW_MAX_KEY_BYTES);
	if (!PG_ARGISNULL(4))
		start = PG_GETARG_TIMESTAMPTZ(4);
	if (!PG_ARGISNULL(5))
		capacity = PG_GETARG_INT32(5);
	fw_limit_define(&limit, PG_GETARG_INT32(2), PG_GETARG_INTERVAL_P(3),
					PG_ARGISNULL(4) ? NULL : &start,
					PG_ARGISNULL(5) ? NULL : &capacity);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(id, fw_period_id(&limit.period, id)));
}

/*
 * fw_policy_changed() returns trigger
 *
 * After any statement that changes fw_policy or fw_override: every
 * backend's cached definitions are dropped when the transaction commits.
 */
Datum
fw_policy_changed(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("fw_policy_changed must be called as a trigger")));
	CacheInvalidateRelcache(trigdata->tg_relation);
	return PointerGetDatum(NULL);
}
