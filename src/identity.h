/*-------------------------------------------------------------------------
 *
 * identity.h
 *	  What one call is about: the counter it names (database, limit name,
 *	  key) and its validated limit; and how applying it to a store ends.
 *
 * The layer above the window arithmetic (window.h) and below the stores:
 * everything here is shared by both stores and by every SQL-callable file.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_IDENTITY_H
#define FW_IDENTITY_H

#include "datatype/timestamp.h"

#include "window.h"

/* Longest limit name and key, in bytes; the same for every storage. */
#define FW_MAX_NAME_BYTES	256
#define FW_MAX_KEY_BYTES	2048

/* Longest period identifier (fw_period_id), and counter name of a window. */
#define FW_MAX_PERIOD_ID	48
#define FW_MAX_COUNTER_NAME	(FW_MAX_NAME_BYTES + 1 + FW_MAX_PERIOD_ID)

/*
 * The advisory locks of fixed_window, told apart from pg_advisory_lock's
 * (objsubid 1 and 2) by their objsubid in pg_locks.
 */
#define FW_LOCKTAG_FIELD4	18007	/* a counter row being created (table) */
#define FW_LOCKTAG_KEY		18008	/* a policy's call on a key (table) */
#define FW_LOCKTAG_POLICY	18009	/* a change of a policy's definition */

/* The identity of a counter: database, limit name and key, compared exactly. */
typedef struct FwIdentity
{
	Oid			dbid;
	const char *name;
	int			name_len;
	const char *key;
	int			key_len;
	uint32		hash;			/* of all three, to find the counter */
} FwIdentity;

/* What a counter holds besides its identity, in either store. */
typedef struct FwCounterData
{
	int64		window_start;
	int64		window_end;		/* derivable; kept for inspection and reclaim */
	int32		tokens;
	int32		rate;			/* as given by the last fw_limit call, */
	int32		capacity;		/* for inspection */
	Oid			userid;			/* role of the last fw_limit call */
} FwCounterData;

/*
 * A counter as the admin functions see it, in either store: its name is
 * that of its limit, or of its policy, a zero byte and its window's period
 * identifier (see fw_identity_init_window).
 */
typedef struct FwCounterView
{
	const char *name;
	int			name_len;
	const char *key;
	int			key_len;
	FwCounterData data;
} FwCounterView;

/* Returns true to remove the counter, where the walk allows it. */
typedef bool (*FwCounterVisitor) (const FwCounterView *counter, void *arg);

/* How applying a call to a store ended. */
typedef enum FwApplyResult
{
	FW_APPLY_OK = 0,
	FW_APPLY_OUT_OF_RANGE,		/* a boundary lies beyond 64-bit time */
	FW_APPLY_FULL,				/* no room for a new counter */
	FW_APPLY_DATABASE_FULL,		/* the database holds all it may */
	FW_APPLY_ROLE_FULL			/* the role holds all it may */
} FwApplyResult;

/* Whether a store found no room for a new counter. */
static inline bool
fw_apply_no_room(FwApplyResult result)
{
	return result == FW_APPLY_FULL || result == FW_APPLY_DATABASE_FULL ||
		result == FW_APPLY_ROLE_FULL;
}

/* What a call asks of its counters. */
typedef enum FwMode
{
	FW_MODE_CHECK,				/* decide, change nothing */
	FW_MODE_SPEND,				/* decide, and spend when allowed */
	FW_MODE_REFUND				/* give tokens back to current windows */
} FwMode;

/*
 * One call: the counters of its windows -- one for an inline call, one per
 * window of a policy, shortest first, which is the order the table backend
 * locks their rows in (shared memory locks partitions in index order).  names[] holds the counter names of
 * a policy's windows (see fw_identity_init_window).
 */
typedef struct FwCall
{
	FwMode		mode;
	bool		named;			/* a policy's call, counted once in statistics */
	int			n;
	FwIdentity	ids[FW_MAX_WINDOWS];
	FwLimit		limits[FW_MAX_WINDOWS];
	bool		shadow[FW_MAX_WINDOWS];
	Interval	periods[FW_MAX_WINDOWS];	/* a policy's, as defined */
	char		names[FW_MAX_WINDOWS][FW_MAX_COUNTER_NAME];
} FwCall;

/*
 * What a call found and answered, window by window and as a whole.  A
 * window without a counter gets one (create) when the call spends in it,
 * and when it denies the call: a key that was new again at the time its
 * retry_after names would hold rate tokens then too, and a cost above the
 * rate could never be covered.  A check sets create where fw_limit would
 * create, and writes nothing.
 */
typedef struct FwOutcome
{
	FwDecision	decisions[FW_MAX_WINDOWS];
	bool		spend[FW_MAX_WINDOWS];	/* the window's counter spends */
	bool		create[FW_MAX_WINDOWS]; /* the window's counter is created */
	FwVerdict	verdict;
} FwOutcome;

extern FwApplyResult fw_call_decide(const FwCall *call, FwState *const *states,
									int64 now, FwOutcome *outcome);
extern void fw_outcome_no_promise(const FwCall *call, FwOutcome *outcome);
extern void fw_check_length(const char *what, int len, int max_bytes);
extern void fw_identity_init(FwIdentity *id, const char *name, int name_len,
							 const char *key, int key_len);
extern void fw_identity_init_db(FwIdentity *id, Oid dbid, const char *name, int name_len,
								const char *key, int key_len);
extern uint64 fw_identity_hash64(const FwIdentity *id);
extern void fw_identity_init_window(FwIdentity *id, const char *name, int name_len,
									const char *period_id, int period_id_len,
									const char *key, int key_len, char *buf);
extern void fw_split_counter_name(const char *name, int len, int *name_len,
								  const char **period_id, int *period_id_len);
extern int	fw_period_id(const FwPeriod *period, char *buf);
extern void fw_limit_define(FwLimit *limit, int32 rate, const Interval *period,
							const TimestampTz *start, const int32 *capacity);
extern void fw_limit_cost(FwLimit *limit, const FwIdentity *id, int32 cost, bool phase,
						  bool within_capacity);
extern void fw_limit_check_now(const FwLimit *limit, bool phase, int64 now);
extern void fw_window_range_error(void) pg_attribute_noreturn();
#endif							/* FW_IDENTITY_H */
