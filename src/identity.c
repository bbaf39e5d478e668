/*-------------------------------------------------------------------------
 *
 * identity.c
 *	  A call's counter and limit: identities, their hashes, and the checks
 *	  every argument of a limit passes before any store sees it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "identity.h"

/* A name or key longer than allowed is an error naming what it is. */
void
fw_check_length(const char *what, int len, int max_bytes)
{
	if (len > max_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("argument \"%s\" is too long", what),
				 errdetail("The value is %d bytes; at most %d bytes are allowed.",
						   len, max_bytes),
				 errhint("Pass a shorter value, for example a digest such as md5() of it.")));
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

	if (FW_INTERVAL_NOT_FINITE(period) ||
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
