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
 * Check the parameters of a limit that do not depend on the call into
 * *limit: rate, period, start (NULL: the phase of each key, set by
 * fw_limit_cost) and capacity (NULL: the rate).  *start_null records which.
 */
void
fw_limit_define(FwLimit *limit, int32 rate, const Interval *period,
				const TimestampTz *start, const int32 *capacity)
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
fw_window_range_error(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
			 errmsg("window boundary out of range"),
			 errdetail("A window of this limit starts or ends more than about 292,000 years from the year 2000."),
			 errhint("Use a shorter period or a start closer to the present.")));
}

static void
fw_phase_error(void)
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
fw_limit_check_now(const FwLimit *limit, bool phase, int64 now)
{
	FwLimit		probe = *limit;
	FwDecision	decision;
	int64		starts[2];
	int			nstarts = 1;
	int			i;

	starts[0] = limit->start;
	if (phase)
	{
		if (fw_phase_range(&limit->period, &starts[0], &starts[1]) != FW_STATUS_OK)
			fw_phase_error();
		nstarts = 2;
	}
	probe.cost = 0;
	for (i = 0; i < nstarts; i++)
	{
		probe.start = starts[i];
		if (fw_decide(&probe, NULL, now, &decision) != FW_STATUS_OK)
			fw_window_range_error();
	}
}

/*
 * Check the cost of a call of a defined limit and, when the limit's start
 * is the key's phase (phase true), derive it from the counter's identity.
 * A cost above the capacity is an error where the caller gave both
 * (within_capacity: an inline call); a policy's window answers it as a
 * denial that no time will lift, since the caller cannot know what an
 * admin defined.
 */
void
fw_limit_cost(FwLimit *limit, const FwIdentity *id, int32 cost, bool phase,
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
		fw_phase_start(&limit->period, fw_identity_hash64(id), &limit->start) != FW_STATUS_OK)
		fw_phase_error();
}

/*
 * The identifier of a period, in ISO 8601 form: "P1M", "PT60S",
 * "PT0.5S" -- one text for each window length, whatever interval
 * spelled it ('1 minute' and '60 seconds' are one period, '1 mon' and
 * '30 days' are two).  Returns its length; buf holds FW_MAX_PERIOD_ID bytes.
 */
int
fw_period_id(const FwPeriod *period, char *buf)
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

/*
 * The identity of the counter of one window of a policy: its name is the
 * policy's name, a zero byte and the period's identifier.  No text holds a
 * zero byte, so it is never the name of an inline call's counter; the
 * stores keep it like any name, and fw_split_counter_name takes it apart.
 * buf holds FW_MAX_COUNTER_NAME bytes and must live as long as id.
 */
void
fw_identity_init_window(FwIdentity *id, const char *name, int name_len,
						const char *period_id, int period_id_len,
						const char *key, int key_len, char *buf)
{
	memcpy(buf, name, name_len);
	buf[name_len] = '\0';
	memcpy(buf + name_len + 1, period_id, period_id_len);
	fw_identity_init(id, buf, name_len + 1 + period_id_len, key, key_len);
}

/* The limit name and period identifier ("" for an inline call's) of a counter's name. */
void
fw_split_counter_name(const char *name, int len, int *name_len,
					  const char **period_id, int *period_id_len)
{
	const char *zero = memchr(name, '\0', len);

	*name_len = zero ? (int) (zero - name) : len;
	*period_id = zero ? zero + 1 : name + len;
	*period_id_len = len - *name_len - (zero ? 1 : 0);
}

/*
 * Decide a call on the states of its counters (NULL for a counter that does
 * not exist), read under the stores' locks at time now: every window alone,
 * then settled all or nothing (fw_settle); or, for a refund, each window's
 * counter on its own, the call answering with the fewest tokens held by an
 * enforced window.
 */
FwApplyResult
fw_call_decide(const FwCall *call, FwState *const *states, int64 now,
			   FwOutcome *outcome)
{
	int			i;

	for (i = 0; i < call->n; i++)
	{
		FwStatus	status;

		if (call->mode == FW_MODE_REFUND)
			status = fw_refund(&call->limits[i], states[i], now,
							   &outcome->decisions[i], &outcome->spend[i]);
		else
			status = fw_decide(&call->limits[i], states[i], now, &outcome->decisions[i]);
		if (status != FW_STATUS_OK)
			return FW_APPLY_OUT_OF_RANGE;
	}

	if (call->mode != FW_MODE_REFUND)
	{
		fw_settle(call->limits, call->shadow, call->n, outcome->decisions,
				  outcome->spend, &outcome->verdict);
		for (i = 0; i < call->n; i++)
			outcome->create[i] = (states[i] == NULL &&
								  (outcome->spend[i] || !outcome->decisions[i].ok));
		if (call->mode == FW_MODE_CHECK)
			memset(outcome->spend, 0, sizeof(outcome->spend));
		return FW_APPLY_OK;
	}

	memset(outcome->create, 0, sizeof(outcome->create));
	memset(&outcome->verdict, 0, sizeof(FwVerdict));
	outcome->verdict.ok = true;
	outcome->verdict.deciding = 0;
	for (i = 1; i < call->n; i++)
	{
		int			best = outcome->verdict.deciding;

		if (call->shadow[i] && !call->shadow[best])
			continue;
		if ((call->shadow[best] && !call->shadow[i]) ||
			outcome->decisions[i].remaining < outcome->decisions[best].remaining)
			outcome->verdict.deciding = i;
	}
	return FW_APPLY_OK;
}

/*
 * A denied call whose counters could not be created (no room, and
 * fixed_window.fail_open on) promises no retry time: at any later time its
 * key would be new again, and judged the same.
 */
void
fw_outcome_no_promise(const FwCall *call, FwOutcome *outcome)
{
	int			i;

	if (outcome->verdict.ok)
		return;
	outcome->verdict.retry_after = FW_RETRY_NEVER;
	for (i = 0; i < call->n; i++)
		if (outcome->create[i] && !outcome->decisions[i].ok)
			outcome->decisions[i].retry_after = FW_RETRY_NEVER;
}
