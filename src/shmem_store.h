/*-------------------------------------------------------------------------
 *
 * shmem_store.h
 *	  Counters in dynamic shared memory, with or without preloading.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_SHMEM_STORE_H
#define FW_SHMEM_STORE_H

#include "decide.h"

/* How full the table was when a call found no room, for its error. */
typedef struct FwShmemUsage
{
	uint32		nslots;			/* fixed_window.max_counters */
	uint32		nfree;
	uint32		needed;			/* slots the new counter needed */
	uint32		database_slots; /* taken by the database asked about */
	uint32		database_limit; /* the most one database may take */
	bool		database_known; /* false: too many databases hold counters */
	uint32		role_slots;		/* taken by the role asked about */
	uint32		role_limit;		/* the most one role may take */
	bool		role_known;		/* false: too many roles hold counters */
} FwShmemUsage;

/* The slots of one database or role (fwshmem_capacity). */
typedef struct FwShmemHolder
{
	Oid			oid;
	uint64		live;			/* slots of its live counters */
	uint64		reclaimable;	/* slots of its counters a reclaim would free */
} FwShmemHolder;

/* How full the table is (fwshmem_capacity). */
typedef struct FwShmemCapacity
{
	uint32		nslots;
	uint64		live;
	uint64		reclaimable;
	Size		bytes;			/* of the table's segment */
	uint32		database_limit; /* the most one database may take */
	uint32		role_limit;		/* the most one role may take */
	int			ndatabases;
	FwShmemHolder *databases;	/* palloc'd */
	int			nroles;
	FwShmemHolder *roles;		/* palloc'd */
} FwShmemCapacity;

#define FW_MIN_COUNTERS		1000
#define FW_MAX_COUNTERS		100000000

extern int	fw_max_counters;

/*
 * Starts the keeper from a backend that finds none running (keeper.c, a
 * layer above): set by _PG_init, as PostgreSQL's hooks are.
 */
typedef void (*fwshmem_start_keeper_hook_type) (bool dynamic);
extern PGDLLIMPORT fwshmem_start_keeper_hook_type fwshmem_start_keeper_hook;

extern void fwshmem_define_settings(void);
extern FwApplyResult fwshmem_apply(const FwCall *call, FwOutcome *outcome,
								   FwShmemUsage *usage);
extern void fwshmem_foreach(FwCounterVisitor visitor, void *arg, bool may_remove);
extern bool fwshmem_remove(const FwIdentity *id);
extern void fwshmem_drop_database(Oid dbid);
extern void fwshmem_database_moved(Oid dbid, uint64 marker);
extern bool fwshmem_capacity(FwShmemCapacity *capacity, TimestampTz now);
extern uint32 fwshmem_resize(uint32 nslots, uint32 *old_nslots);
extern void fwshmem_follow_setting(void);
extern void fwshmem_record_setting(uint32 nslots);
extern bool fwshmem_sweep_due(void);
extern void fwshmem_keeper_begin(void);
extern bool fwshmem_mapped_by_others(void);
extern void fwshmem_save_now(void);
extern int	fwshmem_databases(Oid *dbids);

#endif							/* FW_SHMEM_STORE_H */
