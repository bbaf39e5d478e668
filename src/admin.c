/*-------------------------------------------------------------------------
 *
 * admin.c
 *	  What admins see and do: the counters and statistics in shared
 *	  memory, resets, the clock.
 *
 * Keys can be personal data (emails, IP addresses), so a role sees the keys
 * of counters last used by itself only, unless it is a superuser or has the
 * privileges of pg_read_all_stats; other keys read as NULL, as
 * pg_stat_statements hides other roles' queries.
 *
 * The counters and statistics of shared memory, and its table's size, are
 * that store's by nature: their functions call its modules directly.  A
 * reset goes through store.c (fwstore_remove), which finds a policy's
 * windows.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
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
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "compat.h"
#include "settings.h"
#include "shmem_store.h"
#include "subxact.h"
#include "stats.h"
#include "store.h"
#include "table_store.h"

PG_FUNCTION_INFO_V1(fw_shmem_counters);
PG_FUNCTION_INFO_V1(fw_resize_counters);
PG_FUNCTION_INFO_V1(fw_table_counters);
PG_FUNCTION_INFO_V1(fw_may_see_key);
PG_FUNCTION_INFO_V1(fw_shmem_reset);
PG_FUNCTION_INFO_V1(fw_shmem_stats);
PG_FUNCTION_INFO_V1(fw_shmem_stats_1_5);
PG_FUNCTION_INFO_V1(fw_shmem_stats_reset);
PG_FUNCTION_INFO_V1(fw_storage_in_use);
PG_FUNCTION_INFO_V1(fw_now);
PG_FUNCTION_INFO_V1(fw_displayable);

/*
 * Columns of fw_shmem_counters and of fw_shmem_stats_1_5: the last of each
 * since 1.1 and 1.5; an earlier declaration (fw_shmem_stats) takes the
 * first ones.
 */
#define FW_COUNTERS_COLS	8
#define FW_STATS_COLS		8

static bool
fwadmin_sees_all_keys(void)
{
	return superuser() || has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
}

/*
 * fw_may_see_key(userid oid) returns boolean
 */
Datum
fw_may_see_key(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(PG_GETARG_OID(0) == GetUserId() || fwadmin_sees_all_keys());
}

/*
 * fw_displayable(timestamptz) returns timestamptz
 *
 * The same for the table backend's rows, in the fw_counters view.
 */
Datum
fw_displayable(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(fwsettings_displayable_time(PG_GETARG_TIMESTAMPTZ(0)));
}

typedef struct FwCountersScan
{
	Tuplestorestate *store;
	TupleDesc	tupdesc;
	bool		all_keys;
} FwCountersScan;

static bool
fwadmin_collect_counter(const FwCounterView *counter, void *arg)
{
	FwCountersScan *scan = (FwCountersScan *) arg;
	Datum		values[FW_COUNTERS_COLS];
	bool		nulls[FW_COUNTERS_COLS] = {false};

	values[0] = PointerGetDatum(cstring_to_text_with_len(counter->name, counter->name_len));
	if (scan->all_keys || counter->data.userid == GetUserId())
		values[1] = PointerGetDatum(cstring_to_text_with_len(counter->key, counter->key_len));
	else
		nulls[1] = true;
	values[2] = TimestampTzGetDatum(fwsettings_displayable_time(counter->data.window_start));
	values[3] = TimestampTzGetDatum(fwsettings_displayable_time(counter->data.window_end));
	values[4] = Int32GetDatum(counter->data.tokens);
	values[5] = Int32GetDatum(counter->data.rate);
	values[6] = Int32GetDatum(counter->data.capacity);
	values[7] = PointerGetDatum(cstring_to_text_with_len(counter->period_id,
														  counter->period_id_len));
	nulls[7] = (counter->period_id_len == 0);
	if (scan->tupdesc->natts < FW_COUNTERS_COLS && counter->period_id_len > 0)
		return false;			/* 1.0's function: inline counters only */
	tuplestore_putvalues(scan->store, scan->tupdesc, values, nulls);
	return false;
}

/* Set up the result of a function listing counters, as fwadmin_collect_counter fills it. */
static void
fwadmin_begin_counters_scan(FunctionCallInfo fcinfo, FwCountersScan *scan)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	fwcompat_init_materialized_srf(fcinfo, FW_COUNTERS_COLS);
	scan->store = rsinfo->setResult;
	scan->tupdesc = rsinfo->setDesc;
	scan->all_keys = fwadmin_sees_all_keys();
}

/*
 * fw_shmem_counters() returns setof (name, key, window_start, window_end,
 * remaining, rate, capacity, period_id)
 *
 * The counters of this database in shared memory; none without preload.
 * period_id is that of the policy window the counter belongs to, NULL for
 * an inline call's counter.  Declared by 1.0 without period_id, it lists
 * inline counters only.
 */
Datum
fw_shmem_counters(PG_FUNCTION_ARGS)
{
	FwCountersScan scan;

	fwadmin_begin_counters_scan(fcinfo, &scan);
	fwshmem_foreach(fwadmin_collect_counter, &scan, false);
	return (Datum) 0;
}

/*
 * fw_table_counters() returns setof (name, key, window_start, window_end,
 * remaining, rate, capacity, period_id)
 *
 * The counter rows of the table backend, as fw_shmem_counters shows those of
 * shared memory: other roles' keys NULL.  It reads the table by OID without
 * privilege checks (ordinary roles have none on it), so that fw_counters
 * need not name it: a view naming an unlogged table fails to plan on a
 * standby.  On a standby it lists nothing and says so, unless the table
 * was made LOGGED.
 */
Datum
fw_table_counters(PG_FUNCTION_ARGS)
{
	FwCountersScan scan;

	fwadmin_begin_counters_scan(fcinfo, &scan);
	if (!fwtable_foreach(fwadmin_collect_counter, &scan))
		ereport(NOTICE,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				errmsg("the counters of fixed_window's table are not readable on a standby"),
				errdetail("The table fw_counter is unlogged: a standby holds none of its rows. This server's shared-memory counters are listed.")));
	return (Datum) 0;
}

/*
 * fw_shmem_reset(name text, key text) returns bigint
 *
 * Remove the counters of (name, key) of this database from shared memory --
 * the inline call's and those of the windows the policy name has now -- or
 * every counter of the name when key is NULL (fwstore_remove); returns how
 * many.
 */
Datum
fw_shmem_reset(PG_FUNCTION_ARGS)
{
	text	   *name;
	text	   *key;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("argument \"%s\" must not be null", "name")));
	name = PG_GETARG_TEXT_PP(0);
	if (PG_ARGISNULL(1))
		PG_RETURN_INT64(fwstore_remove(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name), NULL, 0));
	key = PG_GETARG_TEXT_PP(1);
	PG_RETURN_INT64(fwstore_remove(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name),
								   VARDATA_ANY(key), VARSIZE_ANY_EXHDR(key)));
}

static void
fwadmin_collect_stats(const FwStatsView *stats, void *arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) arg;
	Datum		values[FW_STATS_COLS];
	bool		nulls[FW_STATS_COLS] = {false};

	if (stats->name != NULL)
		values[0] = PointerGetDatum(cstring_to_text_with_len(stats->name, stats->name_len));
	else
		nulls[0] = true;
	values[1] = Int64GetDatum((int64) stats->calls);
	values[2] = Int64GetDatum((int64) stats->allowed);
	values[3] = Int64GetDatum((int64) stats->denied);
	values[4] = TimestampTzGetDatum(stats->last_denied_at);
	nulls[4] = (stats->last_denied_at == 0);
	values[5] = TimestampTzGetDatum(stats->since);
	values[6] = Int64GetDatum((int64) stats->shadow_denied);
	values[7] = Int64GetDatum((int64) stats->no_room);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * fw_shmem_stats() returns setof (name, calls, allowed, denied,
 * last_denied_at, since, shadow_denied); declared by 1.0 without
 * shadow_denied
 * fw_shmem_stats_1_5() returns the same and no_room (since 1.5, for fw_stats)
 *
 * The statistics of this database's limits in shared memory; a row with a
 * NULL name counts the calls of limits that found no room.  Each
 * declaration takes the first of the columns.
 */
static Datum
fwadmin_stats(FunctionCallInfo fcinfo)
{
	fwcompat_init_materialized_srf(fcinfo, FW_STATS_COLS);
	fwstats_foreach(MyDatabaseId, fwadmin_collect_stats, fcinfo->resultinfo);
	return (Datum) 0;
}

Datum
fw_shmem_stats(PG_FUNCTION_ARGS)
{
	return fwadmin_stats(fcinfo);
}

Datum
fw_shmem_stats_1_5(PG_FUNCTION_ARGS)
{
	return fwadmin_stats(fcinfo);
}

/*
 * fw_shmem_stats_reset() returns void
 *
 * Forget the statistics of this database's limits in shared memory; their
 * entries are free for any limit again.
 */
Datum
fw_shmem_stats_reset(PG_FUNCTION_ARGS)
{
	fwstats_forget_database(MyDatabaseId, false);
	PG_RETURN_VOID();
}

/*
 * fw_storage_in_use() returns text
 *
 * Where this session's calls keep their counters now: "shmem" or "table",
 * as fixed_window.storage and the preloaded library decide (an error, as
 * for a call, where storage is shmem without the library).
 */
Datum
fw_storage_in_use(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(fwstore_use_shmem() ? "shmem" : "table"));
}

/*
 * fw_now() returns timestamptz
 *
 * The time calls are judged at now, for scheduling fw_gc() and for tests.
 */
Datum
fw_now(PG_FUNCTION_ARGS)
{
	PG_RETURN_TIMESTAMPTZ(fwsettings_clock_now());
}

/*
 * Record the table's size as fixed_window.max_counters, as ALTER SYSTEM
 * does (postgresql.auto.conf), so that a restart keeps it and later
 * reloads read it; this session reads it at once, the others at their next
 * reload.  The table has the size already: a failure to record it is only
 * a warning.
 */
static void
fwadmin_alter_system_step(void *arg)
{
	AlterSystemStmt *stmt = makeNode(AlterSystemStmt);
	VariableSetStmt *set = makeNode(VariableSetStmt);

	set->kind = VAR_SET_VALUE;
	set->name = "fixed_window.max_counters";
	set->args = list_make1(fwcompat_string_const((const char *) arg));
	stmt->setstmt = set;
	AlterSystemSetConfigFile(stmt);
}

static void
fwadmin_record_size(int32 slots)
{
	char		value[16];
	ErrorData  *error;

	snprintf(value, sizeof(value), "%d", slots);
	error = fwsubxact_try(fwadmin_alter_system_step, value);
	if (error != NULL)
	{
		ereport(WARNING,
				(errcode(error->sqlerrcode),
				errmsg("could not record fixed_window.max_counters = %d", slots),
				errdetail("ALTER SYSTEM failed: %s. The table has %d slots until the server restarts or the setting changes.",
						  error->message, slots),
				errhint("Set fixed_window.max_counters to %d with ALTER SYSTEM, as a role that may.", slots)));
		FreeErrorData(error);
		return;
	}
	SetConfigOption("fixed_window.max_counters", value, PGC_SIGHUP, PGC_S_FILE);
	fwshmem_record_setting((uint32) slots);
}

/*
 * fw_resize_counters(slots integer) returns (slots_before, slots_after,
 * counters_moved)
 *
 * Replace shared memory's table of counters by one of slots slots, online
 * (fwshmem_resize), and record that size as fixed_window.max_counters with
 * ALTER SYSTEM, so that it survives a restart (a caller that may not run
 * ALTER SYSTEM for it gets a warning instead).  The table is created first
 * if there is none yet.
 */
Datum
fw_resize_counters(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	int32		slots;
	uint32		before;
	uint32		moved;
	Datum		values[3];
	bool		nulls[3] = {false};

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("argument \"%s\" must not be null", "slots")));
	slots = PG_GETARG_INT32(0);
	if (slots < FW_MIN_COUNTERS || slots > FW_MAX_COUNTERS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("slots must be between %d and %d", FW_MIN_COUNTERS, FW_MAX_COUNTERS),
				errdetail("It was %d.", slots)));
	if (!IsUnderPostmaster)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("fixed_window cannot keep counters in shared memory in a single-user server")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	moved = fwshmem_resize((uint32) slots, &before);
	fwadmin_record_size(slots);
	values[0] = Int32GetDatum((int32) before);
	values[1] = Int32GetDatum(slots);
	values[2] = Int64GetDatum((int64) moved);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}
