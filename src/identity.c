/*-------------------------------------------------------------------------
 *
 * identity.c
 *	  A call's counter and limit: identities, their hashes, and the checks
 *	  every argument of a limit passes before any store sees it.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "common/hashfn.h"
#include "common/relpath.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "identity.h"

/* A name or key longer than allowed is an error naming what it is. */
void
fwidentity_check_length(const char *what, int len, int max_bytes)
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
 * The hash of a counter's identity, from the hashes of its parts: the same
 * whether they were hashed for this counter alone (fwidentity_init_db) or
 * once for all the counters of a call (fwidentity_init).
 */
static inline uint32
fwidentity_combine(Oid dbid, uint32 name_hash, int period_id_len, uint32 period_hash,
				   uint32 key_hash)
{
	uint32		hash = name_hash;

	if (period_id_len > 0)
		hash = hash_combine(hash, period_hash);
	return hash_combine(hash_bytes_uint32(dbid), hash_combine(hash, key_hash));
}

/*
 * Hash a call's name and key, once for all its counters, into *nk; their
 * lengths are already checked.
 */
void
fwidentity_name_key(FwNameKey *nk, const char *name, int name_len,
					const char *key, int key_len)
{
	nk->name = name;
	nk->name_len = name_len;
	nk->key = key;
	nk->key_len = key_len;
	nk->name_hash = hash_bytes((const unsigned char *) name, name_len);
	nk->key_hash = hash_bytes((const unsigned char *) key, key_len);
	nk->hash64 = fwidentity_hash64(name, name_len, key, key_len);
}

/* The hash of a policy window's period identifier, kept with the window. */
uint32
fwidentity_period_hash(const char *period_id, int period_id_len)
{
	return hash_bytes((const unsigned char *) period_id, period_id_len);
}

/*
 * The identity of a counter of a call of this database: an inline call's
 * (period_id_len 0), or that of one window of a policy, given its period
 * identifier and that identifier's hash (fwidentity_period_hash).  The
 * strings must live as long as id.
 */
void
fwidentity_init(FwIdentity *id, const FwNameKey *nk,
				const char *period_id, int period_id_len, uint32 period_hash)
{
	id->dbid = MyDatabaseId;
	id->name = nk->name;
	id->name_len = nk->name_len;
	id->period_id = period_id;
	id->period_id_len = period_id_len;
	id->key = nk->key;
	id->key_len = nk->key_len;
	id->hash = fwidentity_combine(MyDatabaseId, nk->name_hash, period_id_len, period_hash,
								  nk->key_hash);
}

/* The identity of a counter of any database, hashed from its parts. */
void
fwidentity_init_db(FwIdentity *id, Oid dbid, const char *name, int name_len,
				   const char *period_id, int period_id_len,
				   const char *key, int key_len)
{
	id->dbid = dbid;
	id->name = name;
	id->name_len = name_len;
	id->period_id = period_id;
	id->period_id_len = period_id_len;
	id->key = key;
	id->key_len = key_len;
	id->hash = fwidentity_combine(dbid, hash_bytes((const unsigned char *) name, name_len),
								  period_id_len,
								  period_id_len > 0 ?
								  fwidentity_period_hash(period_id, period_id_len) : 0,
								  hash_bytes((const unsigned char *) key, key_len));
}

/*
 * The 64-bit hash of a limit's or policy's name and key, whatever the
 * window: the phase of start => NULL, the key's overrides in the policies'
 * cache, and the key lock of the table backend; the lock of a policy's
 * definition hashes its name with an empty key.  Stable for a given server
 * build.
 */
uint64
fwidentity_hash64(const char *name, int name_len, const char *key, int key_len)
{
	uint64		seed = hash_bytes_extended((const unsigned char *) name, name_len, 0);

	return hash_bytes_extended((const unsigned char *) key, key_len, seed);
}

/*
 * Which database of its OID this session's is.  Shared memory names
 * databases by OID, and a database can be made with the OID of one dropped
 * (CREATE DATABASE ... OID, which any role that may create databases can
 * run), whose counters and statistics a session that never loaded the
 * library could not see go.  A database's PG_VERSION file is written when
 * the database is made and never after, so its inode number and the time
 * it was written, to the nanosecond, tell one database of an OID from
 * another.  Moving a database to another tablespace makes the file again:
 * the hook of fixed_window.c then marks its counters and statistics anew.
 * 0 when the file cannot be read: no database is then told from another.
 */
uint64
fwidentity_database_marker_at(Oid dbid, Oid tablespace)
{
	char	   *dir = GetDatabasePath(dbid, tablespace);
	char	   *path = psprintf("%s/PG_VERSION", dir);
	struct stat st;
	uint64		parts[3];
	uint64		marker = 0;

	if (stat(path, &st) == 0)
	{
		parts[0] = (uint64) st.st_ino;
		parts[1] = (uint64) st.st_mtime;
		parts[2] = (uint64) FW_MTIME_NSEC(st);
		marker = hash_bytes_extended((const unsigned char *) parts, sizeof(parts), 0);
		if (marker == 0)
			marker = 1;			/* 0 means unknown */
	}
	pfree(path);
	pfree(dir);
	return marker;
}

/* This session's database's, read once. */
uint64
fwidentity_database_marker(void)
{
	static uint64 marker = 0;
	static Oid	marked = InvalidOid;

	if (marked != MyDatabaseId && OidIsValid(MyDatabaseId))
	{
		marker = fwidentity_database_marker_at(MyDatabaseId, MyDatabaseTableSpace);
		marked = MyDatabaseId;
	}
	return marker;
}

/*
 * Check the parameters of a limit that do not depend on the call into
 * *limit: rate, period, start (NULL: the phase of each key, set by
 * fwidentity_limit_cost) and capacity (NULL: the rate).
 */
void
fwidentity_define_limit(FwLimit *limit, int32 rate, const Interval *period,
						const TimestampTz *start, const int32 *capacity)
{
	limit->rate = rate;
	if (rate <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("rate must be greater than zero"),
				errdetail("The rate given was %d.", rate)));

	if (FW_INTERVAL_NOT_FINITE(period) ||
		!fwwindow_period_from_interval(period->month, period->day, period->time,
									   &limit->period))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("period must be a positive interval"),
				errdetail("The period given was \"%s\".",
						  DatumGetCString(DirectFunctionCall1(interval_out,
						  IntervalPGetDatum(period)))),
				errhint("Use a period such as '1 minute', '1 day' or '1 month'. "
						"A period with a month or year part must not have a negative day or time part.")));

	limit->start = 0;
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
	limit->cost = 0;
}

/* A window of a limit lies beyond 64-bit time: the error of its calls. */
void
fwidentity_window_range_error(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			errmsg("window boundary out of range"),
			errdetail("A window of this limit starts or ends more than about 292,000 years from the year 2000."),
			errhint("Use a shorter period or a start closer to the present.")));
}

static void
fwidentity_phase_error(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			errmsg("period is too long to derive a start from the key"),
			errdetail("With start NULL, each key's windows start within the first window from the Unix epoch, and that window ends more than about 292,000 years from the year 2000."),
			errhint("Use a shorter period, or give a start.")));
}

/*
 * What every call of a limit checks whatever its key and cost, checked when
 * the limit is defined rather than called: with phase (start NULL), that a
 * start can be derived from any key; and that the window containing now,
 * and its end, lie within 64-bit time, for every start the keys can have.
 */
void
fwidentity_limit_check_now(const FwLimit *limit, bool phase, int64 now)
{
	FwLimit		probe = *limit;
	FwDecision	decision;
	int64		starts[2];
	int			nstarts = 1;
	int			i;

	starts[0] = limit->start;
	if (phase)
	{
		if (fwwindow_phase_range(&limit->period, &starts[0], &starts[1]) != FW_STATUS_OK)
			fwidentity_phase_error();
		nstarts = 2;
	}
	probe.cost = 0;
	for (i = 0; i < nstarts; i++)
	{
		probe.start = starts[i];
		if (fwwindow_decide(&probe, NULL, now, &decision) != FW_STATUS_OK)
			fwidentity_window_range_error();
	}
}

/*
 * Check the cost of a call of a defined limit and, when the limit's start
 * is the key's phase (phase true), derive it from hash64, the 64-bit hash
 * of the call's name and key (fwidentity_hash64).
 * A cost above the capacity is an error where the caller gave both
 * (within_capacity: an inline call); a policy's window answers it as a
 * denial that no time will lift, since the caller cannot know what an
 * admin defined.
 */
void
fwidentity_limit_cost(FwLimit *limit, uint64 hash64, int32 cost, bool phase,
					  bool within_capacity)
{
	limit->cost = cost;
	if (cost < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("cost must not be negative"),
				errdetail("The cost given was %d.", cost)));
	if (within_capacity && cost > limit->capacity)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("cost must not exceed the capacity"),
				errdetail("The cost given was %d and the capacity %d, so the call could never be allowed.",
						  cost, limit->capacity),
				errhint("Raise capacity, which defaults to the rate, or lower the cost.")));

	if (phase &&
		fwwindow_phase_start(&limit->period, hash64, &limit->start) != FW_STATUS_OK)
		fwidentity_phase_error();
}

/*
 * The identifier of a period, in ISO 8601 form: "P1M", "PT60S",
 * "PT0.5S" -- one text for each window length, whatever interval
 * spelled it ('1 minute' and '60 seconds' are one period, '1 mon' and
 * '30 days' are two).  Returns its length; buf holds FW_MAX_PERIOD_ID bytes.
 */
int
fwidentity_period_id(const FwPeriod *period, char *buf)
{
	int			len = 0;
	int64		seconds = period->span / USECS_PER_SEC;
	int64		fraction = period->span % USECS_PER_SEC;

	buf[len++] = 'P';
	if (period->months > 0)
		len += snprintf(buf + len, FW_MAX_PERIOD_ID - len, "%dM", period->months);
	if (period->span != 0)
	{
		len += snprintf(buf + len, FW_MAX_PERIOD_ID - len, "T" INT64_FORMAT, seconds);
		if (fraction != 0)
		{
			len += snprintf(buf + len, FW_MAX_PERIOD_ID - len, ".%06d", (int) fraction);
			while (buf[len - 1] == '0')
				len--;
		}
		buf[len++] = 'S';
	}
	Assert(len < FW_MAX_PERIOD_ID);
	return len;
}
