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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupmacs.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"
#include "utils/timestamp.h"

#include "fixed_window.h"

PG_FUNCTION_INFO_V1(fw_limit);
PG_FUNCTION_INFO_V1(fw_check);

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
fw_require_arg(FunctionCallInfo fcinfo, int arg)
{
	if (PG_ARGISNULL(arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("argument \"%s\" must not be null", fw_arg_names[arg])));
}

/* Point at a text argument's bytes, enforcing the length limit. */
static void
fw_text_arg(FunctionCallInfo fcinfo, int arg, int max_bytes,
			const char **data, int *len)
{
	text	   *t;

	fw_require_arg(fcinfo, arg);
	t = PG_GETARG_TEXT_PP(arg);
	*data = VARDATA_ANY(t);
	*len = VARSIZE_ANY_EXHDR(t);
	if (*len > max_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("argument \"%s\" is too long", fw_arg_names[arg]),
				 errdetail("The value is %d bytes; at most %d bytes are allowed.",
						   *len, max_bytes),
				 errhint("Pass a shorter value, for example a digest such as md5() of it.")));
}

/*
 * The 64-bit hash of a limit name and key: the phase of start => NULL, and
 * the key lock of the table backend.  Stable for a given server build.
 */
uint64
fw_identity_hash64(const FwIdentity *id)
{
	uint64		seed = hash_bytes_extended((const unsigned char *) id->name, id->name_len, 0);

	return hash_bytes_extended((const unsigned char *) id->key, id->key_len, seed);
}

/*
 * The identity of the counter (name, key) of this database, its lengths
 * already checked.
 */
void
fw_identity_init(FwIdentity *id, const char *name, int name_len,
				 const char *key, int key_len)
{
	fw_identity_init_db(id, MyDatabaseId, name, name_len, key, key_len);
}

/* The same for a counter of any database. */
void
fw_identity_init_db(FwIdentity *id, Oid dbid, const char *name, int name_len,
					const char *key, int key_len)
{
	id->name = name;
	id->name_len = name_len;
	id->key = key;
	id->key_len = key_len;
	id->dbid = dbid;
	id->hash = hash_combine(hash_bytes_uint32(id->dbid),
							hash_combine(hash_bytes((const unsigned char *) name, name_len),
										 hash_bytes((const unsigned char *) key, key_len)));
	fw_shmem_prefetch(id->hash);
}

/*
 * Check a limit's parameters into *limit.  start NULL asks for the phase of
 * the key; capacity NULL means the rate.
 */
void
fw_limit_init(FwLimit *limit, const FwIdentity *id, int32 rate,
			  const Interval *period, const TimestampTz *start, int32 cost,
			  const int32 *capacity)
{
	limit->rate = rate;
	if (rate <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("rate must be greater than zero"),
				 errdetail("The rate given was %d.", rate)));

	if (
#ifdef INTERVAL_NOT_FINITE
		INTERVAL_NOT_FINITE(period) ||
#endif
		!fw_period_from_interval(period->month, period->day, period->time,
								 &limit->period))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("period must be a positive interval"),
				 errdetail("The period given was \"%s\".",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(period)))),
				 errhint("Use a period such as '1 minute', '1 day' or '1 month'. "
						 "A period with a month or year part must not have a negative day or time part.")));

	if (start != NULL)
	{
		limit->start = *start;
		if (TIMESTAMP_NOT_FINITE(limit->start))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("start must be a finite timestamp"),
					 errdetail("The start given was %s.",
							   TIMESTAMP_IS_NOBEGIN(limit->start) ? "-infinity" : "infinity")));
	}

	limit->capacity = capacity ? *capacity : rate;
	if (limit->capacity < rate)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("capacity must be at least the rate"),
				 errdetail("The capacity given was %d and the rate %d.",
						   limit->capacity, rate)));

	limit->cost = cost;
	if (cost < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cost must not be negative"),
				 errdetail("The cost given was %d.", cost)));
	if (cost > limit->capacity)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cost must not exceed the capacity"),
				 errdetail("The cost given was %d and the capacity %d, so the call could never be allowed.",
						   cost, limit->capacity),
				 errhint("Raise capacity, which defaults to the rate, or lower the cost.")));

	if (start == NULL &&
		fw_phase_start(&limit->period, fw_identity_hash64(id), &limit->start) != FW_STATUS_OK)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("period is too long to derive a start from the key")));
}

/* Read and check the arguments of fw_limit or fw_check. */
static void
fw_read_args(FunctionCallInfo fcinfo, FwLimit *limit, FwIdentity *id)
{
	const char *name;
	const char *key;
	int			name_len;
	int			key_len;
	TimestampTz start;
	int32		capacity;

	fw_text_arg(fcinfo, ARG_NAME, FW_MAX_NAME_BYTES, &name, &name_len);
	fw_text_arg(fcinfo, ARG_KEY, FW_MAX_KEY_BYTES, &key, &key_len);
	fw_identity_init(id, name, name_len, key, key_len);

	fw_require_arg(fcinfo, ARG_RATE);
	fw_require_arg(fcinfo, ARG_PERIOD);
	fw_require_arg(fcinfo, ARG_COST);
	if (!PG_ARGISNULL(ARG_START))
		start = PG_GETARG_TIMESTAMPTZ(ARG_START);
	if (!PG_ARGISNULL(ARG_CAPACITY))
		capacity = PG_GETARG_INT32(ARG_CAPACITY);

	fw_limit_init(limit, id, PG_GETARG_INT32(ARG_RATE), PG_GETARG_INTERVAL_P(ARG_PERIOD),
				  PG_ARGISNULL(ARG_START) ? NULL : &start, PG_GETARG_INT32(ARG_COST),
				  PG_ARGISNULL(ARG_CAPACITY) ? NULL : &capacity);
}

/*
 * fw_result tuples, built from a template.
 *
 * A call makes one small fixed-size row, and in bulk queries building it
 * through heap_form_tuple costs as much as the decision itself.  Since
 * fw_result has only fixed-length columns, a row has one of two shapes:
 * allowed (retry_after null) or denied (all four columns).  For each shape
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
	FwResultShape shapes[2];	/* [0] denied, [1] allowed */
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
fw_result_shape(TupleDesc tupdesc, FwResultShape *shape, bool allowed)
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
fw_result_cache(FunctionCallInfo fcinfo)
{
	Oid			typid = get_fn_expr_rettype(fcinfo->flinfo);
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

	typentry = lookup_type_cache(typid, TYPECACHE_TUPDESC);
	for (cache = fw_result_caches; cache != NULL; cache = cache->next)
		if (cache->typid == typid && cache->tupdesc_id == typentry->tupDesc_identifier)
			return cache;

	tupdesc = typentry->tupDesc;
	if (tupdesc == NULL || tupdesc->natts != FW_RESULT_NATTS)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("fw_result must have the columns ok, retry_after, remaining and reset_after"),
				 errhint("Reinstall the extension: DROP EXTENSION fixed_window; CREATE EXTENSION fixed_window;")));
	for (i = 0; i < FW_RESULT_NATTS; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped || att->atttypid != fw_result_types[i])
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("column %d of fw_result has type %s instead of %s",
							i + 1, format_type_be(att->atttypid),
							format_type_be(fw_result_types[i])),
					 errhint("Reinstall the extension: DROP EXTENSION fixed_window; CREATE EXTENSION fixed_window;")));
	}

	oldcontext = MemoryContextSwitchTo(TopMemoryContext);
	cache = palloc0(sizeof(FwResultCache));
	fw_result_shape(tupdesc, &cache->shapes[0], false);
	fw_result_shape(tupdesc, &cache->shapes[1], true);
	MemoryContextSwitchTo(oldcontext);

	cache->typid = typid;
	cache->tupdesc_id = typentry->tupDesc_identifier;
	cache->next = fw_result_caches;
	fw_result_caches = cache;
	return cache;
}

static void
fw_usecs_interval(int64 usecs, char *dst)
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
fw_result_datum(FunctionCallInfo fcinfo, const FwDecision *decision)
{
	FwResultCache *cache = (FwResultCache *) fcinfo->flinfo->fn_extra;
	FwResultShape *shape;
	HeapTupleHeader row;
	char	   *data;

	shape = &cache->shapes[decision->ok ? 1 : 0];
	row = (HeapTupleHeader) palloc(shape->len);
	memcpy(row, shape->row, shape->len);
	data = (char *) row + row->t_hoff;

	*(bool *) (data + shape->offset[FW_RESULT_OK]) = decision->ok;
	if (!decision->ok)
		fw_usecs_interval(decision->retry_after, data + shape->offset[FW_RESULT_RETRY_AFTER]);
	memcpy(data + shape->offset[FW_RESULT_REMAINING], &decision->remaining, sizeof(int32));
	fw_usecs_interval(decision->reset_after, data + shape->offset[FW_RESULT_RESET_AFTER]);

	return PointerGetDatum(row);
}

/* Where counters live, by fixed_window.storage. */
bool
fw_use_shmem(void)
{
	if (fw_storage == FW_STORAGE_TABLE)
		return false;
	if (fw_storage == FW_STORAGE_SHMEM && !fw_shmem_available())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("fixed_window must be loaded via shared_preload_libraries to keep counters in shared memory"),
				 errhint("Add fixed_window to shared_preload_libraries in postgresql.conf and restart the server, "
						 "or set fixed_window.storage to auto or table.")));
	return fw_shmem_available();
}

/* Decide one call on the configured storage; every failure is an error. */
void
fw_apply(const FwIdentity *id, const FwLimit *limit, bool consume,
		 FwDecision *decision)
{
	FwApplyResult result;

	if (fw_use_shmem())
	{
		result = fw_shmem_apply(id, limit, consume, decision);
		if (consume && (result == FW_APPLY_OK || (result == FW_APPLY_FULL && fw_fail_open)))
			fw_stats_count(id, decision);
	}
	else
		result = fw_table_apply(id, limit, consume, decision);

	if (result == FW_APPLY_OUT_OF_RANGE)
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("window boundary out of range"),
				 errdetail("A window of this limit starts or ends more than about 292,000 years from the year 2000."),
				 errhint("Use a shorter period or a start closer to the present.")));
	if (result == FW_APPLY_FULL && fw_fail_open)
	{
		static TimestampTz last_warning = 0;
		TimestampTz now = GetCurrentTimestamp();

		/* the decision is that of a new key: allowed, and not counted */
		if (TimestampDifferenceExceeds(last_warning, now, 60 * 1000))
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("rate limit counters are full: allowing calls for new keys without counting them"),
					 errdetail("No room was found among the %d counter slots (fixed_window.max_counters), and fixed_window.fail_open is on.",
							   fw_max_counters),
					 errhint("Raise fixed_window.max_counters and restart the server. This warning repeats at most once a minute per session.")));
			last_warning = now;
		}
		result = FW_APPLY_OK;
	}
	if (result == FW_APPLY_FULL)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("no room for a new rate limit counter"),
				 errdetail("No room was found among the %d counter slots (fixed_window.max_counters): they hold live counters.",
						   fw_max_counters),
				 errhint("Raise fixed_window.max_counters and restart the server, or set fixed_window.fail_open to allow such calls uncounted.")));
}

static Datum
fw_call(FunctionCallInfo fcinfo, bool consume)
{
	FwLimit		limit;
	FwIdentity	id;
	FwDecision	decision;

	fw_read_args(fcinfo, &limit, &id);

	/* know how to answer before deciding: a failure must not spend tokens */
	if (fcinfo->flinfo->fn_extra == NULL)
		fcinfo->flinfo->fn_extra = fw_result_cache(fcinfo);

	fw_apply(&id, &limit, consume, &decision);

	return fw_result_datum(fcinfo, &decision);
}

/*
 * fw_limit(name, key, rate, period, start, cost, capacity) returns fw_result
 *
 * Spend cost tokens of the counter (name, key) if it holds them.
 */
Datum
fw_limit(PG_FUNCTION_ARGS)
{
	return fw_call(fcinfo, true);
}

/*
 * fw_check(same arguments) returns fw_result
 *
 * What fw_limit would answer now; spends and creates nothing.
 */
Datum
fw_check(PG_FUNCTION_ARGS)
{
	return fw_call(fcinfo, false);
}
