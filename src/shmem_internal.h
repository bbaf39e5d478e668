/*-------------------------------------------------------------------------
 *
 * shmem_internal.h
 *	  What the files of the shared-memory store share (shmem_*.c, and
 *	  nothing else): the table's layout, its locks and the fields they guard.
 *
 *	  shmem_table.c    the hash table: layout, free slots, slots, text,
 *	                   find, insert, walks
 *	  shmem_store.c    the store: attach, shares, apply, reclaim, capacity
 *	  shmem_save.c     saving at shutdown, loading at start
 *	  shmem_resize.c   resizing and copying the table
 *
 * Layout.  The table is one dynamic shared memory segment (segment.c),
 * created by the first backend that needs it, with or without
 * shared_preload_libraries, sized by fixed_window.max_counters.  After the
 * segment's header (FwSegment), it holds four parts:
 *
 *	- FwShared: the locks, the free slots' count, the reclaim hint and the slots
 *	  each database and each role holds;
 *	- buckets[], the head slot of each hash chain (a power of two of them);
 *	- the free slots' bits (fwshmem_free_take);
 *	- slots[], an array of FW_SLOT_SIZE-byte slots.
 *
 * A counter takes one slot, holding its state and the first
 * FW_INLINE_TEXT bytes of its limit name followed by its key; longer texts
 * continue in overflow slots chained from the counter.  Identity is the
 * exact (database, name, key) triple: the hash only chooses the chain.
 * Slots are addressed by index, so the table has no pointers and no
 * allocator of its own beyond the free slots' bits, and means the same in every
 * backend, wherever each maps the segment.
 *
 * Growing (fwshmem_resize).  A table never changes size: a bigger one, in
 * a new segment, replaces it.  The resizing backend creates and clears the
 * new segment, then takes the old table's admin lock and every partition
 * lock, so that no call is under way on it,
 * copies every counter into the new table, publishes the new segment and
 * marks the old one retired (segment.c), then releases the old locks.  A
 * backend that then gets an old lock sees the old segment retired, lets
 * go, maps the new one and starts again: a call is decided wholly on one
 * table, and none is decided on the old table after the copy.  A counter's
 * partition is its hash's low bits whatever the number of buckets, so a
 * walk over the partitions can go on in the new table where it was.
 *
 * Saving at shutdown.  A background worker, the keeper (keeper.c), maps
 * the segment for the life of the server: started with the server when the
 * library is preloaded, and by a backend that finds none running
 * otherwise.  At a clean shutdown (SIGTERM) it waits until no other backend
 * but walsenders maps the segment, then, holding every lock of the table,
 * writes every counter to a file (fwshmem_save_now), which the
 * backend that next creates the segment reads back.  A crash, or an immediate shutdown, sends it SIGQUIT
 * instead: nothing is written, and the next segment starts empty.
 *
 * Locks.  There are FW_NUM_PARTITIONS + 1 LWLocks, in the segment, and one
 * spinlock:
 *
 *	- partition locks: the bucket of a hash is its low bits, and the
 *	  partition of a bucket is the low bits of the bucket, so a chain and
 *	  every slot reachable from it belong to one partition.  A call takes the
 *	  lock of the partition of each of its counters -- one for an inline
 *	  call, one per window of a policy, each partition once -- exclusively
 *	  to update or create counters (fw_limit, fw_refund) or shared to read
 *	  them (fw_check), reads the clock while holding them all, decides every
 *	  window, writes the counters that spend (all or none), and releases the
 *	  locks before returning.  Calls sharing a counter are thus totally
 *	  ordered, each judged on the state the previous one left (fwwindow_decide
 *	  copes with a clock that reads earlier than the state), and no call
 *	  spends in one window while another denies it.
 *	- the admin lock (FW_ADMIN_LOCK): serializes reclaiming, claiming an
 *	  entry of databases[] or roles[], and replacing the table.  A call that finds no room takes it, then
 *	  retries, then reclaims, so that while one backend reclaims the others
 *	  wait and then find the slots it freed.
 *	- the mutex (a spinlock): held for a few instructions to move slots in
 *	  or out of the free slots and change the counts that go with them (and
 *	  to find the lowest free slot, a scan of at most nslots / 4096 words).
 *
 * Order: the registry's lock (segment.c), taken only to replace the table,
 * before the admin lock before partition locks before the mutex.  A call
 * takes its partition locks in ascending index order, so two calls never
 * wait for each other in a cycle; a walk over the whole table takes one
 * partition lock at a time, in index order.
 *
 * What guards each field:
 *
 *	FwShared.locks, nbuckets, nslots
 *					set before the segment is published, never change
 *	the segment's retired flag
 *					set while its admin lock and every partition lock are
 *					held, never cleared: a backend holding any of them reads
 *					it true only if the table was replaced
 *	FwShared.free_hint, nfree, the free slots' bits
 *					mutex
 *	FwShared.reclaim_after
 *					an atomic: lowered by any call (compare and exchange),
 *					raised only by a reclaim, which holds the admin lock
 *	FwShared.databases[i].oid, roles[i].oid
 *					written under the admin lock and the mutex; read under
 *					either, or without a lock by a backend looking for its
 *					own database or role, which it checks again under the
 *					mutex before taking slots in the entry.  An entry that
 *					holds no slot may be taken for another database or role
 *					(and is freed when its database is dropped).
 *	FwShared.databases[i].slots, roles[i].slots, databases[i].marker
 *					mutex; the marker is also only written under the admin
 *					lock
 *	FwShared.setting, setting_at
 *					the admin lock (read without it as a hint)
 *	FwShared.swept_at
 *					an atomic, raised by compare and exchange
 *	buckets[b]		the partition lock of b
 *	a counter's slots, all fields
 *					the partition lock of its bucket, while it is in a
 *					chain; whether a slot is free (its bit), the mutex
 *
 * The keeper reads the table under the partition locks when it saves it
 * at shutdown, although no other backend maps it by then.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_SHMEM_INTERNAL_H
#define FW_SHMEM_INTERNAL_H

#include "storage/lwlock.h"
#include "storage/spin.h"

#include "compat.h"
#include "segment.h"
#include "shmem_store.h"

#define FW_NUM_PARTITIONS	128 /* a power of two */
#define FW_ADMIN_LOCK		FW_NUM_PARTITIONS	/* index after the partitions */
#define FW_SLOT_SIZE		120
#define FW_NIL				PG_UINT32_MAX	/* no slot */
#define FW_NO_ENTRY			(-1)	/* no entry of databases[] or roles[] */
#define FW_MAX_ROLES		1024	/* roles whose slots are counted at once */
#define FW_DEFAULT_COUNTERS	100000
#define FW_WALK_AHEAD		8	/* buckets a walk loads ahead (of one partition) */

/* Where the keeper saves the counters at shutdown (see fwshmem_dump). */
#define FW_DUMP_FILE		"pg_stat/fixed_window.stat"

/*
 * A counter's name as stored here and in the dump file: its limit's or
 * policy's name and, for a policy's window, a zero byte and the period's
 * identifier (no text holds a zero byte, so the two kinds never meet).
 */
#define FW_MAX_STORED_NAME	(FW_MAX_NAME_BYTES + 1 + FW_MAX_PERIOD_ID)

#if defined(__GNUC__) || defined(__clang__)
#define FW_PREFETCH(addr)	__builtin_prefetch(addr)
#else
#define FW_PREFETCH(addr)	((void) 0)
#endif

typedef struct FwCounter
{
	uint32		hash;
	uint32		next;			/* next counter in this bucket, or FW_NIL */
	uint32		overflow;		/* first overflow slot, or FW_NIL */
	Oid			dbid;
	uint16		name_len;
	uint16		key_len;
	uint16		database;		/* its entry of databases[] */
	uint16		role;			/* its entry of roles[]: the creating session's
								 * login role */
	FwCounterData data;
	char		text[FLEXIBLE_ARRAY_MEMBER];	/* stored name, then key */
} FwCounter;

#define FW_INLINE_TEXT		(FW_SLOT_SIZE - offsetof(FwCounter, text))

typedef struct FwOverflow
{
	uint32		next;			/* next overflow slot, or FW_NIL */
	char		text[FLEXIBLE_ARRAY_MEMBER];
} FwOverflow;

#define FW_OVERFLOW_TEXT	(FW_SLOT_SIZE - offsetof(FwOverflow, text))

typedef union FwSlot
{
	FwCounter	counter;
	FwOverflow	overflow;
	char		bytes[FW_SLOT_SIZE];
} FwSlot;

StaticAssertDecl(sizeof(FwSlot) == FW_SLOT_SIZE, "FwSlot must be FW_SLOT_SIZE bytes");
StaticAssertDecl(FW_INLINE_TEXT >= 64, "a counter must hold 64 bytes of text inline");
StaticAssertDecl(FW_MAX_NAME_BYTES <= PG_UINT16_MAX && FW_MAX_KEY_BYTES <= PG_UINT16_MAX,
				 "name and key lengths must fit in uint16");
StaticAssertDecl(FW_MAX_DATABASES <= PG_UINT16_MAX && FW_MAX_ROLES <= PG_UINT16_MAX,
				 "database and role entries must fit in uint16");

/*
 * The slots one database, or one role, holds; for a database, which one of
 * its OID (fwidentity_database_marker: 0 for not known yet).
 */
typedef struct FwShare
{
	Oid			oid;			/* InvalidOid: the entry is free */
	uint32		slots;
	uint64		marker;			/* databases[] only */
} FwShare;

/* Whose share a new counter's slots count against. */
typedef struct FwOwners
{
	int			database;		/* entry of databases[], or FW_NO_ENTRY */
	Oid			dbid;			/* the database that entry must still be of */
	int			role;			/* entry of roles[], or FW_NO_ENTRY */
	Oid			roleid;			/* the role that entry must still be of */
	bool		unbounded;		/* beyond the shares: a table being copied */
} FwOwners;

/* How often an entry taken for another database or role is looked up again. */
#define FW_OWNER_ATTEMPTS	10

typedef struct FwShared
{
	LWLockPadded locks[FW_NUM_PARTITIONS + 1];	/* partitions, then admin */
	uint32		nbuckets;		/* a power of two, >= FW_NUM_PARTITIONS */
	uint32		nslots;
	slock_t		mutex;
	uint32		free_hint;		/* no free slot before word 64 * free_hint */
	uint32		nfree;
	pg_atomic_uint64 reclaim_after; /* an int64: no counter is reclaimable
									 * before this */
	uint32		setting;		/* fixed_window.max_counters as the table
								 * follows it: the last value read */
	TimestampTz setting_at;		/* when that value was read */
	pg_atomic_uint64 swept_at;	/* a TimestampTz: when a backend last looked
								 * for dropped databases, no keeper running */
	FwShare		databases[FW_MAX_DATABASES];
	FwShare		roles[FW_MAX_ROLES];
} FwShared;

/*
 * The counters saved at the last clean shutdown, as the backend that
 * creates the first table of a server reads them: the file, read whole and
 * checked, then its records one by one.
 */
typedef struct FwLoad
{
	char	   *data;			/* the file; NULL when there is nothing to load */
	uint32		version;
	uint32		count;			/* records */
	char	   *records;		/* the first */
	char	   *end;			/* past the last */
	TimestampTz now;			/* counters forgettable then are not loaded */
	uint32		needed;			/* slots of the counters to load */
	uint32		saved_nslots;	/* of the table saved (0: not known) */
	uint32		nslots;			/* of the table made for them */
} FwLoad;

/* What fwshmem_counter_text does with a counter's text. */
typedef enum FwTextOp
{
	FW_TEXT_STORE,				/* copy the identity's name and key into it */
	FW_TEXT_COMPARE,			/* compare them with it */
	FW_TEXT_LOAD				/* copy it, name then key, into a buffer */
} FwTextOp;

/* The length of id's name as stored (FW_MAX_STORED_NAME). */
static inline int
fwshmem_stored_name_len(const FwIdentity *id)
{
	return id->name_len + (id->period_id_len > 0 ? 1 + id->period_id_len : 0);
}

/*
 * Whether a reclaim at time t frees a counter: its window ended by then,
 * whatever tokens it would roll over (fwshmem_reclaim, and what
 * fwshmem_capacity counts as reclaimable).
 */
static inline bool
fwshmem_reclaimable(const FwCounterData *data, int64 t)
{
	return data->window_end <= t;
}

/*
 * Whether a counter's state answers as no counter would from time t on: its
 * window ended by then, and it does not roll tokens over (see
 * fwshmem_reclaim).  The last call's rate and capacity stand for the next
 * one's: if that one has rollover, forgetting the counter gives it rate
 * tokens, fewer than it would have had, which only under-admits.
 */
static inline bool
fwshmem_forgettable(const FwCounterData *data, int64 t)
{
	return fwshmem_reclaimable(data, t) && data->capacity <= data->rate;
}

/*
 * Walk every counter, one partition at a time in index order, holding each
 * partition's lock (exclusive when the walk may remove counters) while its
 * counters are visited; the visitor returns true to remove a counter.  A
 * table replaced during the walk is left for the new one at the partition
 * the walk has reached.  FW_WALK_UNLOCKED is for a backend that holds every
 * partition lock already.
 */
typedef enum FwWalkMode
{
	FW_WALK_READ,
	FW_WALK_REMOVE,
	FW_WALK_UNLOCKED
} FwWalkMode;

typedef bool (*FwSlotVisitor) (FwCounter *counter, void *arg);

/* The table this backend maps (shmem_table.c). */
extern FW_HIDDEN FwSegment *fw_segment;
extern FW_HIDDEN FwShared *fw_shared;
extern FW_HIDDEN uint32 *fw_buckets;
extern FW_HIDDEN uint64 *fw_free_words;
extern FW_HIDDEN uint64 *fw_free_summary;
extern FW_HIDDEN FwSlot *fw_slots;
extern FW_HIDDEN int fw_my_database;
extern FW_HIDDEN int fw_my_role;
extern FW_HIDDEN bool fw_save;

/* shmem_table.c */
extern FW_HIDDEN LWLock *fwshmem_partition_lock(uint32 bucket);
extern FW_HIDDEN LWLock *fwshmem_admin_lock(void);
extern FW_HIDDEN Size fwshmem_size(uint32 nslots);
extern FW_HIDDEN void fwshmem_use(FwSegment *segment);
extern FW_HIDDEN bool fwshmem_retired(void);
extern FW_HIDDEN void fwshmem_init_table(FwSegment *segment, uint32 nslots, uint32 setting,
										 TimestampTz setting_at);
extern FW_HIDDEN uint32 fwshmem_slots_needed(int len);
extern FW_HIDDEN FwApplyResult fwshmem_alloc_slots(uint32 n, const FwOwners *owners, bool take,
												   uint32 *first, bool *moved,
												   FwShmemUsage *usage);
extern FW_HIDDEN void fwshmem_split_stored_name(const char *stored, int len, const char **name,
												int *name_len, const char **period_id,
												int *period_id_len);
extern FW_HIDDEN bool fwshmem_counter_text(FwCounter *counter, FwTextOp op, const FwIdentity *id,
										   char *buf);
extern FW_HIDDEN void fwshmem_unlink(uint32 bucket, uint32 slot, uint32 prev);
extern FW_HIDDEN uint32 fwshmem_find(uint32 bucket, const FwIdentity *id, uint32 *prev,
									 int64 prune_before, const uint32 *keep, int nkeep);
extern FW_HIDDEN FwApplyResult fwshmem_insert(uint32 bucket, const FwIdentity *id,
											  const FwOwners *owners, uint32 *slot, bool *moved,
											  FwShmemUsage *usage);
extern FW_HIDDEN void fwshmem_lower_reclaim_hint(int64 window_end);
extern FW_HIDDEN void fwshmem_walk_partition(int partition, FwSlotVisitor visitor, void *arg,
											 FwWalkMode mode);
extern FW_HIDDEN void fwshmem_walk(FwSlotVisitor visitor, void *arg, FwWalkMode mode);
extern FW_HIDDEN uint32 fwshmem_insert_stored(Oid dbid, const char *text, int name_len,
											 int key_len, const FwOwners *owners,
											 const FwCounterData *data);
extern FW_HIDDEN bool fwshmem_lock(int lock, LWLockMode mode);
extern FW_HIDDEN bool fwshmem_lock_all(void);
extern FW_HIDDEN void fwshmem_unlock_all(void);

/* shmem_store.c */
extern FW_HIDDEN bool fwshmem_attach(bool create);
extern FW_HIDDEN int fwshmem_share_entry(FwShare *table, int n, Oid oid, bool claim,
										 uint64 marker);

/* shmem_save.c */
extern FW_HIDDEN void fwshmem_forget_running_save(void);
extern FW_HIDDEN void fwshmem_init_first(FwSegment *segment, void *arg);
extern FW_HIDDEN bool fwshmem_saved(void);
extern FW_HIDDEN Size fwshmem_first_size(void *arg);


#endif							/* FW_SHMEM_INTERNAL_H */
