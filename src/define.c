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
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "identity.h"
#include "settings.h"
#include "validate.h"

PG_FUNCTION_INFO_V1(fw_window_id);
PG_FUNCTION_INFO_V1(fw_window_in_range);
PG_FUNCTION_INFO_V1(fw_lock_policy);
PG_FUNCTION_INFO_V1(fw_policy_changed);
PG_FUNCTION_INFO_V1(fw_acting_role);

/*
 * The advisory locks of fixed_window, told apart from pg_advisory_lock's
 * (objsubid 1 and 2) by their objsubid in pg_locks: 18007 to 18010, this
 * one here and the table backend's in table_store.c (18007, a counter row
 * being created; 18008, a policy's call on a key; 18010, a name given
 * statistics of its own).
 */
#define FW_LOCKTAG_POLICY	18009	/* a change of a policy's definition */

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

/* Fail on a NULL argument that is required. */
static void
fwdefine_require(FunctionCallInfo fcinfo, int arg, const char *name)
{
	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("argument \"%s\" must not be null", name)));
}

/*
 * Read a window's rate, period, start and capacity from the arguments
 * first to first + 3 (start and capacity may be NULL), and check them as
 * fw_limit does.  Returns whether start is NULL: each key's phase.
 */
static bool
fwdefine_window_limit(FunctionCallInfo fcinfo, int first, FwLimit *limit)
{
	TimestampTz start;
	int32		capacity;

	fwdefine_require(fcinfo, first, "rate");
	fwdefine_require(fcinfo, first + 1, "period");
	if (!PG_ARGISNULL(first + 2))
		start = PG_GETARG_TIMESTAMPTZ(first + 2);
	if (!PG_ARGISNULL(first + 3))
		capacity = PG_GETARG_INT32(first + 3);
	fwvalidate_limit(limit, PG_GETARG_INT32(first), PG_GETARG_INTERVAL_P(first + 1),
					 PG_ARGISNULL(first + 2) ? NULL : &start,
					 PG_ARGISNULL(first + 3) ? NULL : &capacity);
	return PG_ARGISNULL(first + 2);
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
	FwLimit		limit;
	char		id[FW_MAX_PERIOD_ID];

	fwdefine_require(fcinfo, 0, "name");
	fwidentity_check_length("name", VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(0)), FW_MAX_NAME_BYTES);
	if (!PG_ARGISNULL(1))
		fwidentity_check_length("key", VARSIZE_ANY_EXHDR(PG_GETARG_TEXT_PP(1)), FW_MAX_KEY_BYTES);
	(void) fwdefine_window_limit(fcinfo, 2, &limit);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(id, fwidentity_period_id(&limit.period, id)));
}

/*
 * fw_window_in_range(rate integer, period interval, start timestamptz,
 *					  capacity integer) returns void
 *
 * Check, when a policy's window is defined, what every call of it would
 * check whatever its key: the window containing now, and its end, lie
 * within 64-bit time, for every key's phase when start is NULL.  A window of
 * '300000 years' passes fw_window_id, and every call of it would fail.
 */
Datum
fw_window_in_range(PG_FUNCTION_ARGS)
{
	FwLimit		limit;
	bool		phase = fwdefine_window_limit(fcinfo, 0, &limit);

	fwvalidate_now(&limit, phase, fwsettings_clock_now());
	PG_RETURN_VOID();
}

/*
 * fw_lock_policy(name text) returns void
 *
 * Take the lock of a policy's definition until the transaction ends: every
 * function that changes a policy takes it first, so that two changes of one
 * policy (an override and the removal of another key's overrides, say)
 * wait for each other instead of deadlocking on their rows.  An advisory
 * lock with objsubid FW_LOCKTAG_POLICY in pg_locks, on the 64-bit hash of
 * the name: two names of one hash only wait for each other.
 */
Datum
fw_lock_policy(PG_FUNCTION_ARGS)
{
	text	   *name;
	uint64		hash;
	LOCKTAG		tag;

	fwdefine_require(fcinfo, 0, "name");
	name = PG_GETARG_TEXT_PP(0);
	hash = fwidentity_hash64(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name), "", 0);
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, (uint32) (hash >> 32), (uint32) hash,
						 FW_LOCKTAG_POLICY);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
	PG_RETURN_VOID();
}

/*
 * fw_policy_changed() returns trigger
 *
 * After any statement that changes fw_policy or fw_override: every
 * backend's cached definitions are dropped when the transaction commits.
 * After a statement that deletes rows of fw_stat (since 1.6): every
 * backend that found the table backend's names full counts them again.
 * Either way an invalidation of the trigger's table.
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
