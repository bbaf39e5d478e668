/*-------------------------------------------------------------------------
 *
 * fixed_window.h
 *	  Declarations shared by the files of the fixed_window extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FIXED_WINDOW_H
#define FIXED_WINDOW_H

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/timestamp.h"

#include "window.h"

/* Longest limit name and key, in bytes; the same for every storage. */
#define FW_MAX_NAME_BYTES	256
#define FW_MAX_KEY_BYTES	2048

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

/* fixed_window.storage */
typedef enum FwStorage
{
	FW_STORAGE_AUTO,			/* shared memory if preloaded, else the table */
	FW_STORAGE_SHMEM,
	FW_STORAGE_TABLE
} FwStorage;

/* How applying a call to a store ended. */
typedef enum FwApplyResult
{
	FW_APPLY_OK = 0,
	FW_APPLY_OUT_OF_RANGE,		/* a boundary lies beyond 64-bit time */
	FW_APPLY_FULL				/* no room for a new counter */
} FwApplyResult;

/* limit.c */
extern uint64 fw_identity_hash64(const FwIdentity *id);
extern void fw_identity_init(FwIdentity *id, const char *name, int name_len,
							 const char *key, int key_len);
extern void fw_identity_init_db(FwIdentity *id, Oid dbid, const char *name, int name_len,
								const char *key, int key_len);
extern void fw_limit_init(FwLimit *limit, const FwIdentity *id, int32 rate,
						  const Interval *period, const TimestampTz *start,
						  int32 cost, const int32 *capacity);
extern void fw_apply(const FwIdentity *id, const FwLimit *limit, bool consume,
					 FwDecision *decision);
extern bool fw_use_shmem(void);

/* guc.c */
extern int	fw_max_counters;
extern int	fw_storage;
extern bool fw_fail_open;
extern bool fw_save;
extern void fw_define_gucs(void);
extern TimestampTz fw_clock_now(void);

/* What a counter in shared memory holds besides its identity. */
typedef struct FwCounterData
{
	int64		window_start;
	int64		window_end;		/* derivable; kept for inspection and reclaim */
	int32		tokens;
	int32		rate;			/* as given by the last fw_limit call, */
	int32		capacity;		/* for inspection and reclaim */
	Oid			userid;			/* role of the last fw_limit call */
} FwCounterData;

/* A counter as the admin functions see it. */
typedef struct FwCounterView
{
	const char *name;
	int			name_len;
	const char *key;
	int			key_len;
	FwCounterData data;
} FwCounterView;

typedef bool (*FwCounterVisitor) (const FwCounterView *counter, void *arg);

/* shmem_store.c */
extern void fw_shmem_install_hooks(void);
extern bool fw_shmem_available(void);
extern void fw_shmem_prefetch(uint32 hash);
extern void fw_shmem_foreach(FwCounterVisitor visitor, void *arg, bool may_remove);
extern bool fw_shmem_remove(const FwIdentity *id);
extern uint32 fw_shmem_reclaim(TimestampTz now);
extern void fw_shmem_dump(int code, Datum arg);
extern void fw_shmem_load(void);
extern FwApplyResult fw_shmem_apply(const FwIdentity *id, const FwLimit *limit,
									bool consume, FwDecision *decision);

/* stats.c */
extern void fw_stats_request(void);
extern void fw_stats_startup(void);
extern void fw_stats_count(const FwIdentity *id, const FwDecision *decision);

/* admin.c */
extern void fw_materialized_srf(FunctionCallInfo fcinfo);

/* table_store.c */
extern FwApplyResult fw_table_apply(const FwIdentity *id, const FwLimit *limit,
									bool consume, FwDecision *decision);

#endif							/* FIXED_WINDOW_H */
