/*-------------------------------------------------------------------------
 *
 * admin.c
 *	  What admins see and do: the counters in shared memory, resets.
 *
 * Keys can be personal data (emails, IP addresses), so a role sees the keys
 * of counters last used by itself only, unless it is a superuser or has the
 * privileges of pg_read_all_stats; other keys read as NULL, as
 * pg_stat_statements hides other roles' queries.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "fixed_window.h"

PG_FUNCTION_INFO_V1(fw_shmem_counters);
PG_FUNCTION_INFO_V1(fw_may_see_key);
PG_FUNCTION_INFO_V1(fw_shmem_reset);

#define FW_COUNTERS_COLS	7

#if PG_VERSION_NUM < 140000
#define ROLE_PG_READ_ALL_STATS DEFAULT_ROLE_READ_ALL_STATS
#endif

static bool
fw_sees_all_keys(void)
{
	return superuser() || has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
}

/*
 * fw_may_see_key(userid oid) returns boolean
 */
Datum
fw_may_see_key(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_OID(0) == GetUserId() || fw_sees_all_keys());
}

/* Set up a set-returning function that fills a tuplestore. */
void
fw_materialized_srf(FunctionCallInfo fcinfo)
{
#if PG_VERSION_NUM >= 150001
	InitMaterializedSRF(fcinfo, 0);
#else
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	tupdesc;
	MemoryContext oldcontext;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	oldcontext = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tuplestore_begin_heap(true, false, work_mem);
	rsinfo->setDesc = CreateTupleDescCopy(tupdesc);
	MemoryContextSwitchTo(oldcontext);
#endif
}

typedef struct FwCountersScan
{
	Tuplestorestate *store;
	TupleDesc	tupdesc;
	bool		all_keys;
} FwCountersScan;

static bool
fw_collect_counter(const FwCounterView *counter, void *arg)
{
	FwCountersScan *scan = (FwCountersScan *) arg;
	Datum		values[FW_COUNTERS_COLS];
	bool		nulls[FW_COUNTERS_COLS] = {false};

	values[0] = PointerGetDatum(cstring_to_text_with_len(counter->name, counter->name_len));
	if (scan->all_keys || counter->data.userid == GetUserId())
		values[1] = PointerGetDatum(cstring_to_text_with_len(counter->key, counter->key_len));
	else
		nulls[1] = true;
	values[2] = TimestampTzGetDatum(counter->data.window_start);
	values[3] = TimestampTzGetDatum(counter->data.window_end);
	values[4] = Int32GetDatum(counter->data.tokens);
	values[5] = Int32GetDatum(counter->data.rate);
	values[6] = Int32GetDatum(counter->data.capacity);
	tuplestore_putvalues(scan->store, scan->tupdesc, values, nulls);
	return false;
}

/*
 * fw_shmem_counters() returns setof (name, key, window_start, window_end,
 * remaining, rate, capacity)
 *
 * The counters of this database in shared memory; none without preload.
 */
Datum
fw_shmem_counters(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FwCountersScan scan;

	fw_materialized_srf(fcinfo);
	scan.store = rsinfo->setResult;
	scan.tupdesc = rsinfo->setDesc;
	scan.all_keys = fw_sees_all_keys();
	fw_shmem_foreach(fw_collect_counter, &scan, false);
	return (Datum) 0;
}

typedef struct FwResetScan
{
	const char *name;
	int			name_len;
	int64		removed;
} FwResetScan;

static bool
fw_match_name(const FwCounterView *counter, void *arg)
{
	FwResetScan *scan = (FwResetScan *) arg;

	if (counter->name_len != scan->name_len ||
		memcmp(counter->name, scan->name, scan->name_len) != 0)
		return false;
	scan->removed++;
	return true;
}

/*
 * fw_shmem_reset(name text, key text) returns bigint
 *
 * Remove the counter (name, key) of this database from shared memory, or
 * every counter of the name when key is NULL; returns how many.
 */
Datum
fw_shmem_reset(PG_FUNCTION_ARGS)
{
	text	   *name;
	FwResetScan scan;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", "name")));
	name = PG_GETARG_TEXT_PP(0);

	if (!PG_ARGISNULL(1))
	{
		text	   *key = PG_GETARG_TEXT_PP(1);
		FwIdentity	id;

		fw_identity_init(&id, VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name),
						 VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key));
		PG_RETURN_INT64(fw_shmem_remove(&id) ? 1 : 0);
	}

	scan.name = VARDATA_ANY(name);
	scan.name_len = VARSIZE_ANY_EXHDR(name);
	scan.removed = 0;
	fw_shmem_foreach(fw_match_name, &scan, true);
	PG_RETURN_INT64(scan.removed);
}
