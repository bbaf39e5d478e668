/*-------------------------------------------------------------------------
 *
 * limit.c
 *	  The SQL functions fw_limit and fw_check.
 *
 * Both take (name, key, rate, period, start, cost, capacity), validate every
 * argument, and ask the storage for a decision.  They are not strict: a
 * NULL argument where a value is required is an error, never a NULL
 * result, since "IF NOT (fw_limit(...)).ok" would read a NULL as allowed.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "call.h"
#include "compat.h"
#include "settings.h"
#include "store.h"

PG_FUNCTION_INFO_V1(fw_limit);
PG_FUNCTION_INFO_V1(fw_check);
PG_FUNCTION_INFO_V1(fw_limit_named);
PG_FUNCTION_INFO_V1(fw_check_named);
PG_FUNCTION_INFO_V1(fw_limit_windows);
PG_FUNCTION_INFO_V1(fw_check_windows);
PG_FUNCTION_INFO_V1(fw_refund_inline);
PG_FUNCTION_INFO_V1(fw_refund_named);

enum
{
	ARG_NAME,
	ARG_KEY,
	ARG_RATE,
	ARG_PERIOD,
	ARG_START,
	ARG_COST,
	ARG_CAPACITY
};

/* The columns of fw_result. */
enum
{
	FW_RESULT_OK,
	FW_RESULT_RETRY_AFTER,
	FW_RESULT_REMAINING,
	FW_RESULT_RESET_AFTER,
	FW_RESULT_NATTS
};

static const char *const fw_arg_names[] = {
	"name", "key", "rate", "period", "start", "cost", "capacity"
};

static void
fwlimit_require_arg(FunctionCallInfo fcinfo, int arg)
{
	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("argument \"%s\" must not be null", fw_arg_names[arg])));
}

/* Point at a text argument's bytes, enforcing the length limit. */
static void
fwlimit_text_arg(FunctionCallInfo fcinfo, int arg, int max_bytes,
				 const char **data, int *len)
{
	text	   *t;

	fwlimit_require_arg(fcinfo, arg);
	t = PG_GETARG_TEXT_PP(arg);
	*data = VARDATA_ANY(t);
	*len = VARSIZE_ANY_EXHDR(t);
	fwidentity_check_length(fw_arg_names[arg], *len, max_bytes);
}

/* Read and check the arguments of an inline call: fw_limit, fw_check, fw_refund. */
static void
fwlimit_read_args(FunctionCallInfo fcinfo, FwMode mode, FwCall *call)
{
	const char *name;
	const char *key;
	int			name_len;
	int			key_len;
	TimestampTz start;
	int32		capacity;

	fwlimit_text_arg(fcinfo, ARG_NAME, FW_MAX_NAME_BYTES, &name, &name_len);
	fwlimit_text_arg(fcinfo, ARG_KEY, FW_MAX_KEY_BYTES, &key, &key_len);
	fwlimit_require_arg(fcinfo, ARG_RATE);
	fwlimit_require_arg(fcinfo, ARG_PERIOD);
	fwlimit_require_arg(fcinfo, ARG_COST);
	if (!PG_ARGISNULL(ARG_START))
		start = PG_GETARG_TIMESTAMPTZ(ARG_START);
	if (!PG_ARGISNULL(ARG_CAPACITY))
		capacity = PG_GETARG_INT32(ARG_CAPACITY);

	fwcall_inline(call, mode, name, name_len, key, key_len,
				  PG_GETARG_INT32(ARG_RATE), PG_GETARG_INTERVAL_P(ARG_PERIOD),
				  PG_ARGISNULL(ARG_START) ? NULL : &start, PG_GETARG_INT32(ARG_COST),
				  PG_ARGISNULL(ARG_CAPACITY) ? NULL : &capacity);
}

/* The arguments of a named call, (name, key, cost). */
enum
{
	NARG_NAME,
	NARG_KEY,
	NARG_COST
};

static void
fwlimit_read_named_args(FunctionCallInfo fcinfo, FwMode mode, FwCall *call)
{
	const char *name;
	const char *key;
	int			name_len;
	int			key_len;

	fwlimit_text_arg(fcinfo, NARG_NAME, FW_MAX_NAME_BYTES, &name, &name_len);
	fwlimit_text_arg(fcinfo, NARG_KEY, FW_MAX_KEY_BYTES, &key, &key_len);
	if (PG_ARGISNULL(NARG_COST))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("argument \"%s\" must not be null", "cost")));
	fwcall_named(call, mode, name, name_len, key, key_len, PG_GETARG_INT32(NARG_COST));
}

/*
 * fw_result tuples, built from a template.
 *
 * A call makes one small fixed-size row, and in bulk queries building it
 * through heap_form_tuple costs as much as the decision itself.  Since
 * fw_result has only fixed-length columns, a row has one of two shapes:
 * retry_after null (allowed, or denied with no time to promise) or not.  For each shape
 * the first call forms a row with heap_form_tuple and notes
 * where each column's bytes lie; later calls copy that row and overwrite
 * the values in place.
 */
typedef struct FwResultShape
{
	HeapTupleHeader row;		/* a row of this shape, values to overwrite */
	Size		len;
	int			offset[FW_RESULT_NATTS];	/* of each non-null value in the data */
} FwResultShape;

typedef struct FwResultCache
{
	struct FwResultCache *next;
	Oid			typid;			/* the row type these shapes are of */
	uint64		tupdesc_id;		/* typcache's identifier of its columns */
	FwResultShape shapes[2];	/* [0] with retry_after, [1] without */
} FwResultCache;

/*
 * Shapes live as long as the backend, since with prepared statements every
 * execution starts with a fresh fn_extra.  They are keyed by the row type
 * and the typcache's identifier of its columns, so that a re-created
 * extension or an altered type gets shapes of its own; old ones are a few
 * hundred bytes and are never freed.
 */
static FwResultCache *fw_result_caches = NULL;

/* The column types the in-place writes below rely on. */
static const Oid fw_result_types[FW_RESULT_NATTS] = {
	BOOLOID, INTERVALOID, INT4OID, INTERVALOID
};

static void
fwlimit_result_shape(TupleDesc tupdesc, FwResultShape *shape, bool allowed)
{
	Datum		values[FW_RESULT_NATTS];
	bool		nulls[FW_RESULT_NATTS] = {false, false, false, false};
	Interval	zero = {0};
	HeapTuple	tuple;
	int			offset = 0;
	int			i;

	values[FW_RESULT_OK] = BoolGetDatum(allowed);
	values[FW_RESULT_RETRY_AFTER] = IntervalPGetDatum(&zero);
	nulls[FW_RESULT_RETRY_AFTER] = allowed;
	values[FW_RESULT_REMAINING] = Int32GetDatum(0);
	values[FW_RESULT_RESET_AFTER] = IntervalPGetDatum(&zero);

	tuple = heap_form_tuple(tupdesc, values, nulls);
	shape->row = tuple->t_data;
	shape->len = tuple->t_len;
	for (i = 0; i < FW_RESULT_NATTS; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		shape->offset[i] = -1;
		if (nulls[i])
			continue;
		offset = att_align_nominal(offset, att->attalign);
		shape->offset[i] = offset;
		offset += att->attlen;
	}
}

static FwResultCache *
fwlimit_result_cache(FunctionCallInfo fcinfo)
{
	Oid			typid = get_fn_expr_rettype(fcinfo->flinfo);
	Oid			typrelid;
	TypeCacheEntry *typentry;
	TupleDesc	tupdesc;
	FwResultCache *cache;
	MemoryContext oldcontext;
	int			i;

	/* called without an expression tree, from C: ask the catalog */
	if (!OidIsValid(typid))
	{
		if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					errmsg("function returning fw_result called in a context that cannot accept a row")));
		typid = tupdesc->tdtypeid;
	}

	/*
	 * When the row type's columns are not in the type cache yet, lock its
	 * relation first, as reading them would: if DROP EXTENSION has removed
	 * it meanwhile, say so rather than fail to open a relation.
	 */
	typentry = lookup_type_cache(typid, 0);
	typrelid = typentry->typrelid;
	if (typentry->tupDesc == NULL && OidIsValid(typrelid))
	{
		LockRelationOid(typrelid, AccessShareLock);
		if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(typrelid)))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					errmsg("extension \"fixed_window\" was dropped during the call"),
					errhint("Run CREATE EXTENSION fixed_window.")));
	}
	typentry = lookup_type_cache(typid, TYPECACHE_TUPDESC);
	for (cache = fw_result_caches; cache != NULL; cache = cache->next)
		if (cache->typid == typid && cache->tupdesc_id == typentry->tupDesc_identifier)
			return cache;

	tupdesc = typentry->tupDesc;
	if (tupdesc == NULL || tupdesc->natts != FW_RESULT_NATTS)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("fw_result must have the columns ok, retry_after, remaining and reset_after"),
				errhint("Run ALTER EXTENSION fixed_window UPDATE if the extension in this database is of an earlier version; if its objects were altered by hand, undo the change as the README's \"Troubleshooting\" says. Dropping the extension would also drop its policies, overrides and grants.")));
	for (i = 0; i < FW_RESULT_NATTS; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped || att->atttypid != fw_result_types[i])
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					errmsg("column %d of fw_result has type %s instead of %s",
						   i + 1, format_type_be(att->atttypid),
						   format_type_be(fw_result_types[i])),
					errhint("Run ALTER EXTENSION fixed_window UPDATE if the extension in this database is of an earlier version; if its objects were altered by hand, undo the change as the README's \"Troubleshooting\" says. Dropping the extension would also drop its policies, overrides and grants.")));
	}

	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	cache = palloc0(sizeof(FwResultCache));
	fwlimit_result_shape(tupdesc, &cache->shapes[0], false);
	fwlimit_result_shape(tupdesc, &cache->shapes[1], true);
	MemoryContextSwitchTo(oldcontext);

	cache->typid = typid;
	cache->tupdesc_id = typentry->tupDesc_identifier;
	cache->next = fw_result_caches;
	fw_result_caches = cache;
	return cache;
}

static void
fwlimit_usecs_interval(int64 usecs, char *dst)
{
	Interval	interval;

	/*
	 * An exact duration, all in the time field: a days part would be
	 * calendar days when added to a timestamptz, and shift by an hour across
	 * a daylight saving change in the session's time zone.
	 */
	interval.time = usecs;
	interval.day = 0;
	interval.month = 0;
	memcpy(dst, &interval, sizeof(Interval));
}

static Datum
fwlimit_result_datum(FunctionCallInfo fcinfo, const FwDecision *decision)
{
	FwResultCache *cache = (FwResultCache *) fcinfo->flinfo->fn_extra;
	FwResultShape *shape;
	HeapTupleHeader row;
	char	   *data;
	bool		retry;

	/* retry_after is null when allowed, and when no time can be promised */
	retry = (!decision->ok && decision->retry_after != FW_RETRY_NEVER);
	shape = &cache->shapes[retry ? 0 : 1];
	row = (HeapTupleHeader) palloc(shape->len);
	memcpy(row, shape->row, shape->len);
	data = (char *) row + row->t_hoff;

	*(bool *) (data + shape->offset[FW_RESULT_OK]) = decision->ok;
	if (retry)
		fwlimit_usecs_interval(decision->retry_after, data + shape->offset[FW_RESULT_RETRY_AFTER]);
	memcpy(data + shape->offset[FW_RESULT_REMAINING], &decision->remaining, sizeof(int32));
	fwlimit_usecs_interval(decision->reset_after, data + shape->offset[FW_RESULT_RESET_AFTER]);

	return PointerGetDatum(row);
}

static Datum
fwlimit_call(FunctionCallInfo fcinfo, FwMode mode, bool named)
{
	FwCall		call;
	FwOutcome	outcome;
	FwDecision	answer;

	if (named)
		fwlimit_read_named_args(fcinfo, mode, &call);
	else
		fwlimit_read_args(fcinfo, mode, &call);

	/* know how to answer before deciding: a failure must not spend tokens */
	if (fcinfo->flinfo->fn_extra == NULL)
		fcinfo->flinfo->fn_extra = fwlimit_result_cache(fcinfo);

	fwstore_apply(&call, &outcome);
	fwdecide_answer(&outcome, &answer);
	return fwlimit_result_datum(fcinfo, &answer);
}

/*
 * fw_limit(name, key, rate, period, start, cost, capacity) returns fw_result
 *
 * Spend cost tokens of the counter (name, key) if it holds them.
 */
Datum
fw_limit(PG_FUNCTION_ARGS)
{
	return fwlimit_call(fcinfo, FW_MODE_SPEND, false);
}

/*
 * fw_check(same arguments) returns fw_result
 *
 * What fw_limit would answer now; spends and creates nothing.
 */
Datum
fw_check(PG_FUNCTION_ARGS)
{
	return fwlimit_call(fcinfo, FW_MODE_CHECK, false);
}

/*
 * fw_limit(name, key, cost) returns fw_result
 *
 * Spend cost tokens in every window of the policy name for key, if every
 * enforced window holds them; otherwise spend nothing.
 */
Datum
fw_limit_named(PG_FUNCTION_ARGS)
{
	return fwlimit_call(fcinfo, FW_MODE_SPEND, true);
}

/*
 * fw_check(name, key, cost) returns fw_result
 *
 * What the named fw_limit would answer now; spends and creates nothing.
 */
Datum
fw_check_named(PG_FUNCTION_ARGS)
{
	return fwlimit_call(fcinfo, FW_MODE_CHECK, true);
}

/* The columns of fw_limit_windows and fw_check_windows. */
enum
{
	WIN_PERIOD,
	WIN_RATE,
	WIN_CAPACITY,
	WIN_SHADOW,
	WIN_OK,
	WIN_RETRY_AFTER,
	WIN_REMAINING,
	WIN_RESET_AFTER,
	WIN_WINDOW_START,
	WIN_WINDOW_END,
	WIN_NATTS
};

static Interval *
fwlimit_usecs_interval_p(int64 usecs)
{
	Interval   *interval = palloc(sizeof(Interval));

	fwlimit_usecs_interval(usecs, (char *) interval);
	return interval;
}

/*
 * One row per window of the call: what each window decided on its own.
 * window_start and window_end are those of the window the call was judged
 * in: window_end is now + reset_after.
 */
static Datum
fwlimit_windows(FunctionCallInfo fcinfo, FwMode mode)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FwCall		call;
	FwOutcome	outcome;
	int			i;

	fwcompat_init_materialized_srf(fcinfo, WIN_NATTS);
	if (rsinfo->setDesc->natts != WIN_NATTS)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("function returning rows of %d columns called with a row of %d",
					   WIN_NATTS, rsinfo->setDesc->natts)));
	fwlimit_read_named_args(fcinfo, mode, &call);
	fwstore_apply(&call, &outcome);

	for (i = 0; i < call.n; i++)
	{
		const FwDecision *d = &outcome.decisions[i];
		Datum		values[WIN_NATTS];
		bool		nulls[WIN_NATTS] = {false};
		int64		window_end;
		int64		window_start;
		int64		k;

		values[WIN_PERIOD] = IntervalPGetDatum(&call.periods[i]);
		values[WIN_RATE] = Int32GetDatum(call.limits[i].rate);
		values[WIN_CAPACITY] = Int32GetDatum(call.limits[i].capacity);
		values[WIN_SHADOW] = BoolGetDatum(call.shadow[i]);
		values[WIN_OK] = BoolGetDatum(d->ok);
		if (d->ok || d->retry_after == FW_RETRY_NEVER)
			nulls[WIN_RETRY_AFTER] = true;
		else
			values[WIN_RETRY_AFTER] = IntervalPGetDatum(fwlimit_usecs_interval_p(d->retry_after));
		values[WIN_REMAINING] = Int32GetDatum(d->remaining);
		values[WIN_RESET_AFTER] = IntervalPGetDatum(fwlimit_usecs_interval_p(d->reset_after));
		window_end = d->now + d->reset_after;
		values[WIN_WINDOW_END] = TimestampTzGetDatum(fwsettings_displayable_time(window_end));
		if (fwwindow_index(&call.limits[i].period, call.limits[i].start,
						   window_end - 1, &k) == FW_STATUS_OK &&
			fwwindow_boundary(&call.limits[i].period, call.limits[i].start,
							  k, &window_start) == FW_STATUS_OK)
			values[WIN_WINDOW_START] = TimestampTzGetDatum(fwsettings_displayable_time(window_start));
		else
			nulls[WIN_WINDOW_START] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * fw_limit_windows(name, key, cost) returns setof (period, rate, capacity,
 * shadow, ok, retry_after, remaining, reset_after, window_start, window_end)
 */
Datum
fw_limit_windows(PG_FUNCTION_ARGS)
{
	return fwlimit_windows(fcinfo, FW_MODE_SPEND);
}

/* fw_check_windows(name, key, cost): the same, spending nothing. */
Datum
fw_check_windows(PG_FUNCTION_ARGS)
{
	return fwlimit_windows(fcinfo, FW_MODE_CHECK);
}

/*
 * fw_refund(name, key, rate, period, start, cost, capacity) returns integer
 * fw_refund(name, key, cost) returns integer
 *
 * Give back up to cost tokens to the counters' current windows; returns the
 * tokens held now (the fewest of the policy's enforced windows).
 */
static Datum
fwlimit_refund_call(FunctionCallInfo fcinfo, bool named)
{
	FwCall		call;
	FwOutcome	outcome;

	if (named)
		fwlimit_read_named_args(fcinfo, FW_MODE_REFUND, &call);
	else
		fwlimit_read_args(fcinfo, FW_MODE_REFUND, &call);
	fwstore_apply(&call, &outcome);
	PG_RETURN_INT32(outcome.decisions[outcome.verdict.deciding].remaining);
}

Datum
fw_refund_inline(PG_FUNCTION_ARGS)
{
	return fwlimit_refund_call(fcinfo, false);
}

Datum
fw_refund_named(PG_FUNCTION_ARGS)
{
	return fwlimit_refund_call(fcinfo, true);
}
