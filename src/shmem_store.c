/*-------------------------------------------------------------------------
 *
 * shmem_store.c
 *	  Counters in shared memory: a partitioned hash table in a dynamic
 *	  shared memory segment, which grows online.
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
 * writes every counter to a file (fwshmem_save_at_shutdown), which the
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
#include "postgres.h"

#include <sys/stat.h>

#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "port/pg_crc32c.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "placeholder.h"
#include "segment.h"
#include "settings.h"
#include "shmem_store.h"
#include "subxact.h"

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

int			fw_max_counters = FW_DEFAULT_COUNTERS;
static bool fw_save = true;

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

/* The table this backend maps: its segment, and the segment's parts. */
static FwSegment *fw_segment = NULL;
static FwShared *fw_shared = NULL;
static uint32 *fw_buckets = NULL;
static uint64 *fw_free_words = NULL;
static uint64 *fw_free_summary = NULL;
static FwSlot *fw_slots = NULL;

/* What the last allocation that found no room saw, for its error. */
static FwShmemUsage fw_last_no_room;

/* This backend's entries of databases[] and roles[], once found. */
static int	fw_my_database = FW_NO_ENTRY;
static int	fw_my_role = FW_NO_ENTRY;

/*
 * Whether a file was written after the server started (to the
 * microsecond): then it is not the file of the last clean shutdown.
 */
static bool
fwshmem_written_since_start(const struct stat *st)
{
	return time_t_to_timestamptz(st->st_mtime) + FW_MTIME_NSEC(*st) / 1000 > PgStartTime;
}

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

static Size fwshmem_first_size(void *arg);
static void fwshmem_load(FwLoad *load);
static bool fwshmem_attach_session(bool create);

static LWLock *
fwshmem_partition_lock(uint32 bucket)
{
	return &fw_shared->locks[bucket & (FW_NUM_PARTITIONS - 1)].lock;
}

static LWLock *
fwshmem_admin_lock(void)
{
	return &fw_shared->locks[FW_ADMIN_LOCK].lock;
}

/* Settings of shared memory. */
void
fwshmem_define_settings(void)
{
	/* the GUC machinery keeps the pointer: static, never freed */
	static char max_counters_desc[300];

	snprintf(max_counters_desc, sizeof(max_counters_desc),
			 "Each counter takes one %d-byte slot for a limit name and key of up to "
			 "%d bytes together, and one more slot for every further %d bytes. "
			 "A new value takes effect at a reload: the counters move to a table of that size.",
			 FW_SLOT_SIZE, (int) FW_INLINE_TEXT, (int) FW_OVERFLOW_TEXT);
	DefineCustomIntVariable("fixed_window.max_counters",
							"Sets the number of counter slots in shared memory.",
							max_counters_desc,
							&fw_max_counters,
							FW_DEFAULT_COUNTERS,
							FW_MIN_COUNTERS,
							FW_MAX_COUNTERS,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("fixed_window.save",
							 "Saves shared-memory counters across server shutdowns.",
							 "Written at a clean shutdown, read back at start; a crash loses them.",
							 &fw_save,
							 true,
							 PGC_SIGHUP,
							 0,
							 NULL, NULL, NULL);
}

static uint32
fwshmem_bucket_count(uint32 nslots)
{
	uint32		n = FW_NUM_PARTITIONS;

	while (n < nslots)
		n <<= 1;
	return n;
}

/* The segment's header, the table's header, the buckets, the slots. */
static Size
fwshmem_shared_offset(void)
{
	return FW_SEGMENT_HEADER_SIZE;
}

static Size
fwshmem_buckets_offset(void)
{
	return add_size(fwshmem_shared_offset(), MAXALIGN(sizeof(FwShared)));
}

/* The free slots' bits: a word per 64 slots, a summary bit per word. */
#define FW_FREE_WORDS(nslots)	(((nslots) + 63) / 64)
#define FW_SUMMARY_WORDS(nslots)	((FW_FREE_WORDS(nslots) + 63) / 64)

static Size
fwshmem_free_words_offset(uint32 nslots)
{
	return add_size(fwshmem_buckets_offset(),
					MAXALIGN(mul_size(fwshmem_bucket_count(nslots), sizeof(uint32))));
}

static Size
fwshmem_free_summary_offset(uint32 nslots)
{
	return add_size(fwshmem_free_words_offset(nslots),
					mul_size(FW_FREE_WORDS(nslots), sizeof(uint64)));
}

static Size
fwshmem_slots_offset(uint32 nslots)
{
	return add_size(fwshmem_free_summary_offset(nslots),
					mul_size(FW_SUMMARY_WORDS(nslots), sizeof(uint64)));
}

static Size
fwshmem_size(uint32 nslots)
{
	return add_size(fwshmem_slots_offset(nslots), mul_size(nslots, sizeof(FwSlot)));
}

/* Use the table of segment from now on (or none). */
static void
fwshmem_use(FwSegment *segment)
{
	if (segment == fw_segment)
		return;
	fw_segment = segment;
	fw_shared = NULL;
	fw_buckets = NULL;
	fw_free_words = NULL;
	fw_free_summary = NULL;
	fw_slots = NULL;
	if (segment != NULL)
	{
		fw_shared = (FwShared *) ((char *) segment + fwshmem_shared_offset());
		fw_buckets = (uint32 *) ((char *) segment + fwshmem_buckets_offset());
		fw_free_words = (uint64 *) ((char *) segment + fwshmem_free_words_offset(fw_shared->nslots));
		fw_free_summary = (uint64 *) ((char *) segment + fwshmem_free_summary_offset(fw_shared->nslots));
		fw_slots = (FwSlot *) ((char *) segment + fwshmem_slots_offset(fw_shared->nslots));
	}
	/* entries of databases[] and roles[] are the table's */
	fw_my_database = FW_NO_ENTRY;
	fw_my_role = FW_NO_ENTRY;
}

/* Whether the table in use was replaced; under any of its locks. */
static bool
fwshmem_retired(void)
{
	return pg_atomic_read_u32(&fw_segment->retired) != 0;
}

/*
 * Free slots, under the mutex: a bit per slot, set while it is free, in
 * words of 64, and a summary bit per word, set while the word has a free
 * slot.  A new counter takes the lowest free slots, so that the live
 * counters stay packed at the start of the table whatever was reclaimed:
 * a table that has served many short-lived keys is as compact as a new
 * one, and calls touch as few pages and cache lines.
 */
static void
fwshmem_free_put(uint32 slot)
{
	uint32		word = slot / 64;

	if (fw_free_words[word] == 0)
		fw_free_summary[word / 64] |= UINT64CONST(1) << (word % 64);
	fw_free_words[word] |= UINT64CONST(1) << (slot % 64);
	fw_shared->free_hint = Min(fw_shared->free_hint, word / 64);
}

/*
 * Take the lowest free slot; there is one (nfree counted it), else the
 * bits disagree with the count and FW_NIL is returned.  The scan reads at
 * most nslots / 4096 words, 24,415 at FW_MAX_COUNTERS.
 */
static uint32
fwshmem_free_take(void)
{
	uint32		summary = fw_shared->free_hint;
	uint32		nsummary = FW_SUMMARY_WORDS(fw_shared->nslots);
	uint32		word;
	uint32		bit;

	while (summary < nsummary && fw_free_summary[summary] == 0)
		summary++;
	if (summary == nsummary)
		return FW_NIL;
	fw_shared->free_hint = summary;
	word = summary * 64 + pg_rightmost_one_pos64(fw_free_summary[summary]);
	bit = pg_rightmost_one_pos64(fw_free_words[word]);
	fw_free_words[word] &= ~(UINT64CONST(1) << bit);
	if (fw_free_words[word] == 0)
		fw_free_summary[summary] &= ~(UINT64CONST(1) << (word % 64));
	return word * 64 + bit;
}

/* Empty the table: every bucket empty, every slot free. */
static void
fwshmem_clear(void)
{
	uint32		i;

	for (i = 0; i < fw_shared->nbuckets; i++)
		fw_buckets[i] = FW_NIL;
	memset(fw_free_words, 0, FW_FREE_WORDS(fw_shared->nslots) * sizeof(uint64));
	memset(fw_free_summary, 0, FW_SUMMARY_WORDS(fw_shared->nslots) * sizeof(uint64));
	fw_shared->free_hint = 0;
	for (i = 0; i < fw_shared->nslots; i++)
		fwshmem_free_put(i);
	fw_shared->nfree = fw_shared->nslots;
	pg_atomic_init_u64(&fw_shared->reclaim_after, (uint64) PG_INT64_MIN);
	memset(fw_shared->databases, 0, sizeof(fw_shared->databases));
	memset(fw_shared->roles, 0, sizeof(fw_shared->roles));
}

/*
 * A new segment's table, empty, of nslots slots, following setting as
 * read at setting_at (see fwshmem_follow_setting); then used here.
 */
static void
fwshmem_init_table(FwSegment *segment, uint32 nslots, uint32 setting, TimestampTz setting_at)
{
	FwShared   *shared = (FwShared *) ((char *) segment + fwshmem_shared_offset());
	int			tranche = fwsegment_lock_tranche();
	int			i;

	Assert(segment->size >= fwshmem_size(nslots));
	for (i = 0; i < FW_NUM_PARTITIONS + 1; i++)
		LWLockInitialize(&shared->locks[i].lock, tranche);
	shared->nbuckets = fwshmem_bucket_count(nslots);
	shared->nslots = nslots;
	shared->setting = setting;
	shared->setting_at = setting_at;
	pg_atomic_init_u64(&shared->swept_at, 0);
	SpinLockInit(&shared->mutex);
	fw_segment = NULL;			/* make fwshmem_use compute the parts */
	fwshmem_use(segment);
	fwshmem_clear();
}

/*
 * The first table of a server, sized by fwshmem_first_size: the counters
 * saved at the last clean shutdown.  It follows fixed_window.max_counters
 * as this backend read it.
 */
static void
fwshmem_init_first(FwSegment *segment, void *arg)
{
	FwLoad	   *load = (FwLoad *) arg;

	fwshmem_init_table(segment, load->nslots, (uint32) fw_max_counters, PgReloadTime);
	if (load->data != NULL)
		fwshmem_load(load);
}

/*
 * Map the current table, creating it if there is none and create is true.
 * Returns whether there is one.  The caller holds none of its locks.
 * Readers and removers create it only when counters were saved at the last
 * clean shutdown (fwshmem_saved), which they would otherwise miss.
 */
static bool
fwshmem_attach(bool create)
{
	FwSegment  *segment;

	if (fw_segment != NULL && !fwshmem_retired())
		return true;
	if (!IsUnderPostmaster)
		return false;			/* no dynamic shared memory in single-user mode */
	PG_TRY();
	{
		if (create)
		{
			FwLoad		load;

			memset(&load, 0, sizeof(load));
			segment = fwsegment_get(FW_SEGMENT_COUNTERS, fwshmem_first_size,
									fwshmem_init_first, &load);
		}
		else
			segment = fwsegment_find(FW_SEGMENT_COUNTERS);
	}
	PG_CATCH();
	{
		/* a table that failed to initialise was destroyed: forget it */
		fwshmem_use(NULL);
		PG_RE_THROW();
	}
	PG_END_TRY();
	fwshmem_use(segment);

	/* no keeper runs: the first to see it starts one (see keeper.c) */
	if (segment != NULL && fwsegment_keeper_wanted(fw_preloaded))
		fwshmem_start_keeper(true);
	return segment != NULL;
}

/* Whether counters saved at a clean shutdown wait to be loaded. */
static bool
fwshmem_saved(void)
{
	struct stat st;

	return stat(FW_DUMP_FILE, &st) == 0;
}

/*
 * Whether this backend can keep counters in shared memory: any backend of
 * a running server can, since the segment is created on demand.
 */
bool
fwshmem_available(void)
{
	return IsUnderPostmaster;
}

/*
 * With many keys a counter's bucket is rarely in cache: callers start
 * loading it as soon as the hash is known, while they check the rest of the
 * arguments and take the lock.
 */
void
fwshmem_prefetch(uint32 hash)
{
	if (fw_shared != NULL)
		FW_PREFETCH(&fw_buckets[hash & (fw_shared->nbuckets - 1)]);
}

/*
 * The entry of table (databases[] or roles[], n entries) for oid, or
 * FW_NO_ENTRY; with claim, an entry is taken for it if it has none: a free
 * one, or one that holds no slot (FW_NO_ENTRY when there is none), marked
 * with marker (which database of the OID; 0 for a role).
 * Claiming takes the admin lock unless the caller holds it: entries change
 * owner only under it, so the scans need no mutex; the mutex is taken only
 * to check that the chosen entry still holds no slot, and to write it.
 */
static int
fwshmem_share_entry(FwShare *table, int n, Oid oid, bool claim, uint64 marker)
{
	LWLock	   *admin = fwshmem_admin_lock();
	bool		locked;
	int			entry = FW_NO_ENTRY;
	int			i;

	Assert(OidIsValid(oid));
	for (i = 0; i < n; i++)
		if (table[i].oid == oid)
			return i;
	if (!claim)
		return FW_NO_ENTRY;

	locked = !LWLockHeldByMe(admin);
	if (locked)
		LWLockAcquire(admin, LW_EXCLUSIVE);
	for (;;)
	{
		int			candidate = FW_NO_ENTRY;

		for (i = 0; i < n && entry == FW_NO_ENTRY; i++)
		{
			if (table[i].oid == oid)
				entry = i;
			else if (candidate == FW_NO_ENTRY &&
					 (table[i].oid == InvalidOid || table[i].slots == 0))
				candidate = i;
		}
		if (entry != FW_NO_ENTRY || candidate == FW_NO_ENTRY)
			break;

		/* its slots may have been taken since the scan read them */
		SpinLockAcquire(&fw_shared->mutex);
		if (table[candidate].slots == 0)
		{
			table[candidate].oid = oid;
			table[candidate].marker = marker;
			entry = candidate;
		}
		SpinLockRelease(&fw_shared->mutex);
		if (entry != FW_NO_ENTRY)
			break;
	}
	if (locked)
		LWLockRelease(admin);
	return entry;
}

/*
 * Whose share a new counter of this backend counts against: its database
 * and its session's login role, claimed if needed.  Called with no
 * partition lock held, since claiming may take the admin lock.
 */
static void
fwshmem_my_owners(FwOwners *owners)
{
	owners->dbid = MyDatabaseId;

	/*
	 * The login role: neither SET ROLE nor a SECURITY DEFINER function
	 * moves a session's counters into another role's share.
	 */
	owners->roleid = GetSessionUserId();

	/* the entries of the last call, if still theirs (checked again later) */
	if (fw_my_database == FW_NO_ENTRY || fw_shared->databases[fw_my_database].oid != owners->dbid)
		fw_my_database = fwshmem_share_entry(fw_shared->databases, FW_MAX_DATABASES, owners->dbid,
											 true, fwidentity_database_marker());
	if (fw_my_role == FW_NO_ENTRY || fw_shared->roles[fw_my_role].oid != owners->roleid)
		fw_my_role = fwshmem_share_entry(fw_shared->roles, FW_MAX_ROLES, owners->roleid, true, 0);
	owners->database = fw_my_database;
	owners->role = fw_my_role;
	owners->unbounded = false;
}

/* Slots a counter with "len" bytes of name and key needs. */
static uint32
fwshmem_slots_needed(int len)
{
	if (len <= (int) FW_INLINE_TEXT)
		return 1;
	return 1 + (len - FW_INLINE_TEXT + FW_OVERFLOW_TEXT - 1) / FW_OVERFLOW_TEXT;
}

/* The most slots a counter takes: its longest stored name and key. */
#define FW_MAX_COUNTER_SLOTS \
	(1 + (FW_MAX_STORED_NAME + FW_MAX_KEY_BYTES + FW_OVERFLOW_TEXT - 1) / FW_OVERFLOW_TEXT)

/*
 * Whether n slots are free for a counter of these owners, within the shares
 * of its database and its role, and, when take is true, take them off the
 * free slots, linked to each other through overflow.next: *first is set to
 * the first.  The mutex is held only to reserve them and then to take one
 * slot at a time.  *moved is set when an owner's entry was taken for
 * another database or role since it was found: find them again and retry.
 */
static FwApplyResult
fwshmem_alloc_slots(uint32 n, const FwOwners *owners, bool take, uint32 *first, bool *moved)
{
	FwApplyResult result = FW_APPLY_OK;
	uint32		i;

	*moved = false;
	SpinLockAcquire(&fw_shared->mutex);
	if ((owners->database != FW_NO_ENTRY &&
		 fw_shared->databases[owners->database].oid != owners->dbid) ||
		(owners->role != FW_NO_ENTRY &&
		 fw_shared->roles[owners->role].oid != owners->roleid))
		*moved = true;
	else if (fw_shared->nfree < n)
		result = FW_APPLY_FULL;
	else if (owners->unbounded)
		;
	else if (owners->database == FW_NO_ENTRY ||
			 fw_shared->databases[owners->database].slots + n >
			 fwsettings_share_of(fw_shared->nslots, fw_database_share))
		result = FW_APPLY_DATABASE_FULL;
	else if (owners->role == FW_NO_ENTRY ||
			 fw_shared->roles[owners->role].slots + n >
			 fwsettings_share_of(fw_shared->nslots, fw_role_share))
		result = FW_APPLY_ROLE_FULL;
	if (result != FW_APPLY_OK)
	{
		/* the counts the decision saw, for a true error message */
		FwShmemUsage *usage = &fw_last_no_room;

		usage->nslots = fw_shared->nslots;
		usage->nfree = fw_shared->nfree;
		usage->needed = n;
		usage->database_limit = fwsettings_share_of(fw_shared->nslots, fw_database_share);
		usage->database_known = (owners->database != FW_NO_ENTRY);
		usage->database_slots = usage->database_known ?
			fw_shared->databases[owners->database].slots : 0;
		usage->role_limit = fwsettings_share_of(fw_shared->nslots, fw_role_share);
		usage->role_known = (owners->role != FW_NO_ENTRY);
		usage->role_slots = usage->role_known ? fw_shared->roles[owners->role].slots : 0;
	}
	else if (take)
	{
		fw_shared->nfree -= n;	/* reserve them all at once */
		fw_shared->databases[owners->database].slots += n;
		fw_shared->roles[owners->role].slots += n;
	}
	SpinLockRelease(&fw_shared->mutex);
	if (result != FW_APPLY_OK || *moved || !take)
		return result;

	*first = FW_NIL;
	for (i = 0; i < n; i++)
	{
		uint32		slot;

		SpinLockAcquire(&fw_shared->mutex);
		slot = fwshmem_free_take();
		SpinLockRelease(&fw_shared->mutex);
		if (slot == FW_NIL)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("the free slots of fixed_window's shared memory disagree with their count"),
					errhint("Restart the server, or resize the table with fw_resize_counters.")));

		/* build the chain backwards, so that *first heads it */
		fw_slots[slot].overflow.next = *first;
		*first = slot;
	}
	return FW_APPLY_OK;
}

/* Give back a counter's slots, already unlinked from its bucket. */
static void
fwshmem_free_slots(uint32 slot)
{
	uint32		database = fw_slots[slot].counter.database;
	uint32		role = fw_slots[slot].counter.role;
	uint32		slots[FW_MAX_COUNTER_SLOTS];
	uint32		next;
	uint32		n = 0;
	uint32		i;

	/* the slots are the caller's while it holds the partition lock */
	slots[n++] = slot;
	for (next = fw_slots[slot].counter.overflow; next != FW_NIL; next = fw_slots[next].overflow.next)
	{
		if (n == FW_MAX_COUNTER_SLOTS)
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("a counter of fixed_window's shared memory has more slots than a counter can"),
					errhint("Restart the server, or resize the table with fw_resize_counters.")));
		slots[n++] = next;
	}

	SpinLockAcquire(&fw_shared->mutex);
	for (i = 0; i < n; i++)
		fwshmem_free_put(slots[i]);
	fw_shared->nfree += n;
	fw_shared->databases[database].slots -= n;
	fw_shared->roles[role].slots -= n;
	SpinLockRelease(&fw_shared->mutex);
}

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
 * Copy "len" bytes of the identity's text (stored name then key), from
 * "offset" of that text, to dst; or, when compare is true, compare them
 * with dst and return whether they are equal.
 */
static bool
fwshmem_identity_piece(const FwIdentity *id, int offset, char *dst, int len, bool compare)
{
	const char *parts[4];
	int			lens[4];
	int			nparts = 0;
	int			part = 0;

	parts[nparts] = id->name;
	lens[nparts++] = id->name_len;
	if (id->period_id_len > 0)
	{
		parts[nparts] = "";		/* its terminating zero byte */
		lens[nparts++] = 1;
		parts[nparts] = id->period_id;
		lens[nparts++] = id->period_id_len;
	}
	parts[nparts] = id->key;
	lens[nparts++] = id->key_len;

	/* the part that holds offset */
	while (part < nparts - 1 && offset >= lens[part])
		offset -= lens[part++];
	while (len > 0)
	{
		int			avail = Min(lens[part] - offset, len);

		if (!compare)
			memcpy(dst, parts[part] + offset, avail);
		else if (memcmp(dst, parts[part] + offset, avail) != 0)
			return false;
		dst += avail;
		len -= avail;
		offset = 0;
		part++;
	}
	return true;
}

/*
 * A stored name as an identity's name and period identifier (see
 * FW_MAX_STORED_NAME).
 */
static void
fwshmem_split_stored_name(const char *stored, int len, const char **name, int *name_len,
						  const char **period_id, int *period_id_len)
{
	const char *zero = memchr(stored, '\0', len);

	*name = stored;
	*name_len = zero ? (int) (zero - stored) : len;
	*period_id = zero ? zero + 1 : stored + len;
	*period_id_len = len - *name_len - (zero ? 1 : 0);
}

/*
 * The one walk over a counter's text, inline then through its overflow
 * slots: store an identity's text, compare it (returning whether equal), or
 * load the text into buf.
 */
static bool
fwshmem_counter_text(FwCounter *counter, FwTextOp op, const FwIdentity *id, char *buf)
{
	int			total = counter->name_len + counter->key_len;
	char	   *piece = counter->text;
	int			room = FW_INLINE_TEXT;
	uint32		next = counter->overflow;
	int			offset = 0;

	while (offset < total)
	{
		int			len = Min(total - offset, room);

		if (op == FW_TEXT_LOAD)
			memcpy(buf + offset, piece, len);
		else if (!fwshmem_identity_piece(id, offset, piece, len, op == FW_TEXT_COMPARE))
			return false;
		offset += len;
		if (offset < total)
		{
			piece = fw_slots[next].overflow.text;
			room = FW_OVERFLOW_TEXT;
			next = fw_slots[next].overflow.next;
		}
	}
	return true;
}

/* Unlink a counter from its bucket and give its slots back. */
static void
fwshmem_unlink(uint32 bucket, uint32 slot, uint32 prev)
{
	if (prev == FW_NIL)
		fw_buckets[bucket] = fw_slots[slot].counter.next;
	else
		fw_slots[prev].counter.next = fw_slots[slot].counter.next;
	fwshmem_free_slots(slot);
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

/* Whether slot is one of the nkeep slots of keep. */
static inline bool
fwshmem_kept(uint32 slot, const uint32 *keep, int nkeep)
{
	int			i;

	for (i = 0; i < nkeep; i++)
		if (keep[i] == slot)
			return true;
	return false;
}

/*
 * The counter of id in its bucket, or FW_NIL; *prev is set to the counter
 * before it in the chain (FW_NIL if first), for unlinking.
 *
 * With the partition lock held exclusively, a call passes prune_before, a
 * time no later than the real clock: the other counters it meets that are
 * forgettable then (and not among the nkeep slots of keep, which the call
 * found already) are unlinked on the way, so that chains do not keep
 * counters of keys that come no more until a reclaim needs their slots.
 * PG_INT64_MIN prunes nothing.
 */
static uint32
fwshmem_find(uint32 bucket, const FwIdentity *id, uint32 *prev, int64 prune_before,
			 const uint32 *keep, int nkeep)
{
	uint32		slot = fw_buckets[bucket];

	*prev = FW_NIL;
	while (slot != FW_NIL)
	{
		FwCounter  *counter = &fw_slots[slot].counter;
		uint32		next = counter->next;

		if (counter->hash == id->hash &&
			counter->dbid == id->dbid &&
			counter->name_len == fwshmem_stored_name_len(id) &&
			counter->key_len == id->key_len &&
			fwshmem_counter_text(counter, FW_TEXT_COMPARE, id, NULL))
			return slot;
		if (prune_before != PG_INT64_MIN && fwshmem_forgettable(&counter->data, prune_before) &&
			!fwshmem_kept(slot, keep, nkeep))
			fwshmem_unlink(bucket, slot, *prev);
		else
			*prev = slot;
		slot = next;
	}
	return FW_NIL;
}

/*
 * Create a counter for id at the head of its bucket, in the shares of its
 * owners; *slot is set to it.
 */
static FwApplyResult
fwshmem_insert(uint32 bucket, const FwIdentity *id, const FwOwners *owners, uint32 *slot,
			   bool *moved)
{
	FwApplyResult result;
	FwCounter  *counter;

	result = fwshmem_alloc_slots(fwshmem_slots_needed(fwshmem_stored_name_len(id) + id->key_len),
								 owners, true, slot, moved);
	if (result != FW_APPLY_OK || *moved)
		return result;
	counter = &fw_slots[*slot].counter;
	counter->overflow = fw_slots[*slot].overflow.next;
	counter->hash = id->hash;
	counter->dbid = id->dbid;
	counter->name_len = (uint16) fwshmem_stored_name_len(id);
	counter->key_len = (uint16) id->key_len;
	counter->database = (uint16) owners->database;
	counter->role = (uint16) owners->role;
	/* live until the caller writes its state: no walk may forget it */
	memset(&counter->data, 0, sizeof(FwCounterData));
	counter->data.window_end = PG_INT64_MAX;
	fwshmem_counter_text(counter, FW_TEXT_STORE, id, NULL);
	counter->next = fw_buckets[bucket];
	fw_buckets[bucket] = *slot;
	return FW_APPLY_OK;
}

/* A counter may become reclaimable before the others: lower the hint. */
static void
fwshmem_lower_reclaim_hint(int64 window_end)
{
	uint64		hint = pg_atomic_read_u64(&fw_shared->reclaim_after);

	while (window_end < (int64) hint &&
		   !pg_atomic_compare_exchange_u64(&fw_shared->reclaim_after, &hint, (uint64) window_end))
		;
}

/* The partitions of a call's counters, each once, in ascending order. */
static int
fwshmem_call_partitions(const FwCall *call, uint32 *buckets, int *partitions)
{
	int			count = 0;
	int			i;

	for (i = 0; i < call->n; i++)
	{
		int			partition;
		int			j;

		buckets[i] = call->ids[i].hash & (fw_shared->nbuckets - 1);
		partition = buckets[i] & (FW_NUM_PARTITIONS - 1);
		for (j = count; j > 0 && partitions[j - 1] > partition; j--)
			partitions[j] = partitions[j - 1];
		if (j > 0 && partitions[j - 1] == partition)
		{
			/* already there: undo the shift */
			for (; j < count; j++)
				partitions[j] = partitions[j + 1];
			continue;
		}
		partitions[j] = partition;
		count++;
	}
	return count;
}

/*
 * Apply one call to its counters: lock the partitions of all of them, in
 * ascending order, so that calls sharing counters are totally ordered and
 * never deadlock; decide the call on the states found (none for a new key)
 * at the time read under the locks (fwdecide_call); and write the states
 * of the counters that spend, creating those the call creates (FwOutcome).
 * Either every counter that changes is written or none is: new counters are
 * created first, and taken out again if one finds no room.  A check
 * writes nothing, but a new counter that a spending call would create is
 * checked for room, so that fw_check says what fw_limit would do.
 */
static FwApplyResult
fwshmem_apply_once(const FwCall *call, const FwOwners *owners, FwOutcome *outcome,
				   bool *moved)
{
	uint32		buckets[FW_MAX_WINDOWS];
	int			partitions[FW_MAX_WINDOWS];
	uint32		slots[FW_MAX_WINDOWS];
	FwState		states[FW_MAX_WINDOWS];
	FwState    *found[FW_MAX_WINDOWS];
	bool		created[FW_MAX_WINDOWS] = {false};
	LWLockMode	mode = (call->mode == FW_MODE_CHECK) ? LW_SHARED : LW_EXCLUSIVE;
	FwApplyResult result;
	uint32		needed = 0;
	TimestampTz now;
	int64		prune_before = PG_INT64_MIN;
	bool		cancellable;
	int			nlocks;
	int			i;

	*moved = false;
	/* whether an interrupt can be served here (not under the admin lock) */
	cancellable = INTERRUPTS_CAN_BE_PROCESSED();
	nlocks = fwshmem_call_partitions(call, buckets, partitions);
	for (i = 0; i < nlocks; i++)
		LWLockAcquire(&fw_shared->locks[partitions[i]].lock, mode);
	if (fwshmem_retired() || (unlikely(InterruptPending) && cancellable))
	{
		/*
		 * Replaced while this call waited: decide it on the new table.  Or
		 * cancelled while it waited (a statement_timeout that came during a
		 * resize, whose locks cannot be interrupted): the call must end
		 * without spending, as its caller was told it failed.  So the locks
		 * go first, then the interrupt is served; if it was not a cancel,
		 * the call starts again.
		 */
		for (i = nlocks - 1; i >= 0; i--)
			LWLockRelease(&fw_shared->locks[partitions[i]].lock);
		CHECK_FOR_INTERRUPTS();
		return FW_APPLY_RETIRED;
	}

	now = fwsettings_clock_now();
	if (mode == LW_EXCLUSIVE)
		prune_before = fwsettings_clock_no_later(now);
	for (i = 0; i < call->n; i++)
	{
		uint32		prev;

		found[i] = NULL;
		slots[i] = fwshmem_find(buckets[i], &call->ids[i], &prev, prune_before, slots, i);
		if (slots[i] != FW_NIL)
		{
			FwCounterData *data = &fw_slots[slots[i]].counter.data;

			states[i].window_start = data->window_start;
			states[i].window_end = data->window_end;
			states[i].tokens = data->tokens;
			found[i] = &states[i];
		}
	}

	result = fwdecide_call(call, found, now, outcome);

	/* the counters a spending call creates (see FwOutcome) */
	for (i = 0; result == FW_APPLY_OK && i < call->n; i++)
	{
		if (!outcome->create[i])
			continue;
		if (call->mode == FW_MODE_CHECK)
		{
			/* fw_limit would create it */
			needed += fwshmem_slots_needed(fwshmem_stored_name_len(&call->ids[i]) + call->ids[i].key_len);
			continue;
		}
		result = fwshmem_insert(buckets[i], &call->ids[i], owners, &slots[i], moved);
		if (result == FW_APPLY_OK && *moved)
			result = FW_APPLY_FULL; /* taken out below, then tried again */
		created[i] = (result == FW_APPLY_OK);
	}
	if (needed > 0)
		result = fwshmem_alloc_slots(needed, owners, false, NULL, moved);

	for (i = 0; i < call->n; i++)
	{
		FwCounter  *counter;
		FwDecision *d = &outcome->decisions[i];

		if (slots[i] == FW_NIL || (!outcome->spend[i] && !outcome->create[i]))
			continue;
		counter = &fw_slots[slots[i]].counter;
		if (result != FW_APPLY_OK)
		{
			/* no room for every new counter: none is created */
			if (created[i])
			{
				uint32		prev;

				(void) fwshmem_find(buckets[i], &call->ids[i], &prev, PG_INT64_MIN, NULL, 0);
				fwshmem_unlink(buckets[i], slots[i], prev);
			}
			continue;
		}
		counter->data.window_start = d->state.window_start;
		counter->data.window_end = d->state.window_end;
		counter->data.tokens = d->state.tokens;
		if (call->mode == FW_MODE_SPEND)
		{
			counter->data.rate = call->limits[i].rate;
			counter->data.capacity = call->limits[i].capacity;
			counter->data.userid = GetUserId();
		}
		fwshmem_lower_reclaim_hint(d->state.window_end);
	}

	for (i = nlocks - 1; i >= 0; i--)
		LWLockRelease(&fw_shared->locks[partitions[i]].lock);
	return result;
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

static void
fwshmem_walk_partition(int partition, FwSlotVisitor visitor, void *arg, FwWalkMode mode)
{
	LWLock	   *lock = &fw_shared->locks[partition].lock;
	uint32		bucket;

	if (mode != FW_WALK_UNLOCKED)
	{
		LWLockAcquire(lock, mode == FW_WALK_REMOVE ? LW_EXCLUSIVE : LW_SHARED);
		while (fwshmem_retired())
		{
			/* the table was replaced: go on with this partition of the new one */
			LWLockRelease(lock);
			if (!fwshmem_attach(false))
				return;
			lock = &fw_shared->locks[partition].lock;
			LWLockAcquire(lock, mode == FW_WALK_REMOVE ? LW_EXCLUSIVE : LW_SHARED);
		}
	}
	for (bucket = partition; bucket < fw_shared->nbuckets; bucket += FW_NUM_PARTITIONS)
	{
		uint32		prev = FW_NIL;
		uint32		slot = fw_buckets[bucket];
		uint32		ahead = bucket + FW_WALK_AHEAD * FW_NUM_PARTITIONS;

		/*
		 * The buckets of a partition lie apart, and their chains' slots
		 * anywhere: start loading both a few buckets ahead of the one walked.
		 */
		if (ahead + FW_WALK_AHEAD * FW_NUM_PARTITIONS < fw_shared->nbuckets)
			FW_PREFETCH(&fw_buckets[ahead + FW_WALK_AHEAD * FW_NUM_PARTITIONS]);
		if (ahead < fw_shared->nbuckets && fw_buckets[ahead] != FW_NIL)
			FW_PREFETCH(&fw_slots[fw_buckets[ahead]]);

		while (slot != FW_NIL)
		{
			uint32		next = fw_slots[slot].counter.next;

			if (visitor(&fw_slots[slot].counter, arg) && mode == FW_WALK_REMOVE)
				fwshmem_unlink(bucket, slot, prev);
			else
				prev = slot;
			slot = next;
		}
	}
	if (mode != FW_WALK_UNLOCKED)
		LWLockRelease(lock);
}

static void
fwshmem_walk(FwSlotVisitor visitor, void *arg, FwWalkMode mode)
{
	int			partition;

	for (partition = 0; partition < FW_NUM_PARTITIONS; partition++)
		fwshmem_walk_partition(partition, visitor, arg, mode);
}

/* A counter's name and key, back to back, in a palloc'd buffer. */
static char *
fwshmem_counter_copy_text(FwCounter *counter)
{
	char	   *text = palloc(counter->name_len + counter->key_len + 1);

	fwshmem_counter_text(counter, FW_TEXT_LOAD, NULL, text);
	text[counter->name_len + counter->key_len] = '\0';
	return text;
}

typedef struct FwForeach
{
	FwCounterVisitor visitor;
	void	   *arg;
	FwCounterView *views;		/* read walks: copies made under the lock */
	int			nviews;
	int			maxviews;
} FwForeach;

/* A counter of the current database as its view, name and key copied. */
static void
fwshmem_counter_view(FwCounter *counter, FwCounterView *view)
{
	char	   *text = fwshmem_counter_copy_text(counter);

	fwshmem_split_stored_name(text, counter->name_len, &view->name, &view->name_len,
							  &view->period_id, &view->period_id_len);
	view->key = text + counter->name_len;
	view->key_len = counter->key_len;
	view->data = counter->data;
}

/* Removal walks: the visitor decides under the partition's lock. */
static bool
fwshmem_foreach_visit(FwCounter *counter, void *arg)
{
	FwForeach  *foreach = (FwForeach *) arg;
	FwCounterView view;
	bool		remove;

	if (counter->dbid != MyDatabaseId)
		return false;
	fwshmem_counter_view(counter, &view);
	remove = foreach->visitor(&view, foreach->arg);
	pfree((char *) view.name);
	return remove;
}

/* Read walks: copy the counters, to be visited once the lock is released. */
static bool
fwshmem_foreach_copy(FwCounter *counter, void *arg)
{
	FwForeach  *foreach = (FwForeach *) arg;

	if (counter->dbid != MyDatabaseId)
		return false;
	if (foreach->nviews == foreach->maxviews)
	{
		foreach->maxviews *= 2;
		foreach->views = repalloc(foreach->views, foreach->maxviews * sizeof(FwCounterView));
	}
	fwshmem_counter_view(counter, &foreach->views[foreach->nviews++]);
	return false;
}

/*
 * Visit every counter of the current database; the visitor gets its name
 * and key, and returns true to remove it (honoured when may_remove).  A
 * walk that only reads visits each partition's counters after releasing
 * its lock, so that a visitor writing rows (fw_counters fills a
 * tuplestore, which may go to disk) never holds up the calls.
 */
void
fwshmem_foreach(FwCounterVisitor visitor, void *arg, bool may_remove)
{
	FwForeach	foreach = {visitor, arg, NULL, 0, 0};
	int			partition;
	int			i;

	if (!fwshmem_attach_session(fwshmem_saved()))
		return;
	if (may_remove)
	{
		fwshmem_walk(fwshmem_foreach_visit, &foreach, FW_WALK_REMOVE);
		return;
	}
	foreach.maxviews = 64;
	foreach.views = palloc(foreach.maxviews * sizeof(FwCounterView));
	for (partition = 0; partition < FW_NUM_PARTITIONS; partition++)
	{
		fwshmem_walk_partition(partition, fwshmem_foreach_copy, &foreach, FW_WALK_READ);
		for (i = 0; i < foreach.nviews; i++)
		{
			(void) visitor(&foreach.views[i], arg);
			pfree((char *) foreach.views[i].name);
		}
		foreach.nviews = 0;
	}
	pfree(foreach.views);
}

/* Remove the counter of id, if there is one; returns whether there was. */
bool
fwshmem_remove(const FwIdentity *id)
{
	uint32		bucket;
	LWLock	   *lock;
	uint32		prev;
	uint32		slot;

	if (!fwshmem_attach_session(fwshmem_saved()))
		return false;
	for (;;)
	{
		bucket = id->hash & (fw_shared->nbuckets - 1);
		lock = fwshmem_partition_lock(bucket);
		LWLockAcquire(lock, LW_EXCLUSIVE);
		if (!fwshmem_retired())
			break;
		LWLockRelease(lock);
		if (!fwshmem_attach(false))
			return false;
	}
	slot = fwshmem_find(bucket, id, &prev, PG_INT64_MIN, NULL, 0);
	if (slot != FW_NIL)
		fwshmem_unlink(bucket, slot, prev);
	LWLockRelease(lock);
	return slot != FW_NIL;
}

/*
 * Reclaim: give back the slots of counters whose window has ended.
 *
 * Without rollover (capacity = rate) such a counter answers exactly as no
 * counter would, since it refills to rate tokens.  With rollover it would
 * refill to more than rate: forgetting it gives the key rate tokens, which
 * can only under-admit, the safe direction; so when room is needed every
 * counter whose window has ended goes.  A live counter is never removed:
 * forgetting it would reset its quota and over-admit.
 *
 * Called with the admin lock held and no partition lock; takes each
 * partition's lock in index order.  Remembers the earliest time a counter
 * it kept can become reclaimable, so that a full table of live counters is
 * not rescanned on every call.  Returns the counters removed.
 */
typedef struct FwReclaim
{
	TimestampTz now;
	int64		next;			/* earliest window end among kept counters */
	uint32		freed;
} FwReclaim;

static bool
fwshmem_reclaim_visit(FwCounter *counter, void *arg)
{
	FwReclaim  *reclaim = (FwReclaim *) arg;

	if (fwshmem_reclaimable(&counter->data, reclaim->now))
	{
		reclaim->freed++;
		return true;
	}
	reclaim->next = Min(reclaim->next, counter->data.window_end);
	return false;
}

static uint32
fwshmem_reclaim(TimestampTz now)
{
	FwReclaim	reclaim = {now, PG_INT64_MAX, 0};

	Assert(LWLockHeldByMeInMode(fwshmem_admin_lock(), LW_EXCLUSIVE));

	if (now < (int64) pg_atomic_read_u64(&fw_shared->reclaim_after))
		return 0;

	/*
	 * Counters stored during the walk lower this again; one stored before it
	 * is in the table, and the walk finds it.
	 */
	pg_atomic_write_u64(&fw_shared->reclaim_after, (uint64) PG_INT64_MAX);
	fwshmem_walk(fwshmem_reclaim_visit, &reclaim, FW_WALK_REMOVE);
	fwshmem_lower_reclaim_hint(reclaim.next);
	return reclaim.freed;
}

/*
 * Apply once, finding the owners' entries again while another database or
 * role takes them between the lookup and the allocation.
 */
static FwApplyResult
fwshmem_apply_owned(const FwCall *call, FwOwners *owners, FwOutcome *outcome)
{
	FwApplyResult result = FW_APPLY_ROLE_FULL;
	bool		moved;
	int			attempt;

	for (attempt = 0; attempt < FW_OWNER_ATTEMPTS; attempt++)
	{
		result = fwshmem_apply_once(call, owners, outcome, &moved);
		if (!moved)
			return result;
		CHECK_FOR_INTERRUPTS();
		fw_my_database = fw_my_role = FW_NO_ENTRY;
		fwshmem_my_owners(owners);
	}
	return FW_APPLY_ROLE_FULL;	/* entries kept moving: as if none were free */
}

/*
 * Apply one call (see fwshmem_apply_once).  When there is no room for a
 * new counter, take the admin lock -- waiting for a backend that is
 * reclaiming -- and try again; if there is still no room, reclaim, find the
 * database's and role's entries again (a reclaim may have freed some), and
 * try once more.  So a call finds no room only when, at that moment, no
 * counter's window had ended.  A call that meets a replaced table starts
 * again on the new one.
 */
FwApplyResult
fwshmem_apply(const FwCall *call, FwOutcome *outcome)
{
	FwOwners	owners;
	FwApplyResult result;

	Assert(call->n > 0 && call->ids[0].dbid == MyDatabaseId);
	for (;;)
	{
		(void) fwshmem_attach_session(true);
		/* a reloaded size that no keeper runs to apply (a hint: checked again) */
		if (unlikely(fw_shared->setting != (uint32) fw_max_counters) && !fwsegment_keeper_running())
			fwshmem_follow_setting();
		fwshmem_my_owners(&owners);
		result = fwshmem_apply_owned(call, &owners, outcome);
		if (result == FW_APPLY_RETIRED)
			continue;
		if (!fwdecide_no_room(result))
			return result;

		LWLockAcquire(fwshmem_admin_lock(), LW_EXCLUSIVE);
		if (fwshmem_retired())
		{
			LWLockRelease(fwshmem_admin_lock());
			continue;
		}
		result = fwshmem_apply_owned(call, &owners, outcome);

		/*
		 * Judged no later than the real clock, so that a session whose
		 * fixed_window.debug_now lies ahead cannot reclaim live counters.
		 */
		if (fwdecide_no_room(result) &&
			fwshmem_reclaim(fwsettings_clock_no_later(outcome->decisions[0].now)) > 0)
		{
			fwshmem_my_owners(&owners);
			result = fwshmem_apply_owned(call, &owners, outcome);
		}
		LWLockRelease(fwshmem_admin_lock());
		/* a table is replaced only under its admin lock, which this call held */
		Assert(result != FW_APPLY_RETIRED);
		return result;
	}
}

/*
 * What the table held when this backend's last call found no room for a
 * new counter, as read under the mutex when that was decided.
 */
void
fwshmem_no_room_usage(FwShmemUsage *usage)
{
	*usage = fw_last_no_room;
}

/*
 * A dropped database's counters go with it, so that a database created
 * later with the same OID does not inherit them; its entry of databases[]
 * is released.  No backend is connected to it any more.
 */
static bool
fwshmem_drop_visit(FwCounter *counter, void *arg)
{
	return counter->dbid == *(Oid *) arg;
}

void
fwshmem_drop_database(Oid dbid)
{
	int			database;

	if (!fwshmem_attach(fwshmem_saved()))
		return;
	fwshmem_walk(fwshmem_drop_visit, &dbid, FW_WALK_REMOVE);

	for (;;)
	{
		LWLockAcquire(fwshmem_admin_lock(), LW_EXCLUSIVE);
		if (!fwshmem_retired())
			break;
		/* the new table has the entry only if a counter moved there */
		LWLockRelease(fwshmem_admin_lock());
		if (!fwshmem_attach(false))
			return;
	}
	database = fwshmem_share_entry(fw_shared->databases, FW_MAX_DATABASES, dbid, false, 0);
	if (database != FW_NO_ENTRY)
	{
		SpinLockAcquire(&fw_shared->mutex);
		fw_shared->databases[database].oid = InvalidOid;
		fw_shared->databases[database].slots = 0;
		SpinLockRelease(&fw_shared->mutex);
	}
	LWLockRelease(fwshmem_admin_lock());
}

/*
 * Saving counters across a clean shutdown.
 *
 * The file holds a header (magic, format version, count, and the system
 * identifier of the server that wrote it), then one record per counter --
 * its fixed fields, the role whose share it counts against, which database
 * of its OID it belongs to (fwidentity_database_marker), then its name and
 * key -- and ends with a CRC-32C of everything before it.  The keeper
 * writes it when the server shuts down cleanly, to a temporary file renamed
 * into place, and the backend that creates the next table reads it.  A file
 * that is truncated, corrupt, of an unknown format, or written by another
 * server (a copied data directory keeps its system identifier; a file copied
 * into another's does not) is ignored with a LOG message.  Counters whose
 * window ended meanwhile are not loaded when they answer as no counter
 * would (without rollover); every other counter is, against the shares of
 * the database and the role that made it (which it held before, whatever
 * the shares are now), in a table grown beyond fixed_window.max_counters
 * when they need more, with a WARNING.
 *
 * Format 1 (1.4 and 1.5) has neither the system identifier nor the owner
 * and database of a counter: read once after an update, its counters count
 * against the role of their last call, and belong to the database of their
 * OID that a session next sees.
 */
#define FW_DUMP_MAGIC		0x46570001	/* "FW" and a format number */
#define FW_DUMP_VERSION		2

/* The header of format 1, and the start of every format's. */
typedef struct FwDumpHeader
{
	uint32		magic;
	uint32		version;
	uint32		count;
} FwDumpHeader;

typedef struct FwDumpHeader2
{
	FwDumpHeader common;
	uint32		nslots;			/* the table's size */
	uint64		system_identifier;
} FwDumpHeader2;

/* A record of format 1, and the start of every format's. */
typedef struct FwDumpRecord
{
	Oid			dbid;
	int32		name_len;
	int32		key_len;
	FwCounterData data;
} FwDumpRecord;

typedef struct FwDumpRecord2
{
	FwDumpRecord common;
	Oid			owner;			/* the role whose share it counts against */
	uint64		database_marker;	/* which database of the OID */
} FwDumpRecord2;

typedef struct FwDump
{
	FILE	   *file;			/* NULL: only count */
	pg_crc32c	crc;
	uint32		count;
	uint32		limit;			/* records to write at most */
	bool		ok;
} FwDump;

static void
fwshmem_dump_write(FwDump *dump, const void *data, size_t len)
{
	COMP_CRC32C(dump->crc, data, len);
	if (dump->ok && fwrite(data, 1, len, dump->file) != len)
		dump->ok = false;
}

static bool
fwshmem_dump_visit(FwCounter *counter, void *arg)
{
	FwDump	   *dump = (FwDump *) arg;
	FwDumpRecord2 record;
	char		text[FW_MAX_STORED_NAME + FW_MAX_KEY_BYTES];

	if (dump->file != NULL && dump->count == dump->limit)
	{
		dump->ok = false;		/* more counters than were counted */
		return false;
	}
	dump->count++;
	if (dump->file == NULL)
		return false;

	memset(&record, 0, sizeof(record));
	record.common.dbid = counter->dbid;
	record.common.name_len = counter->name_len;
	record.common.key_len = counter->key_len;
	record.common.data = counter->data;
	record.owner = fw_shared->roles[counter->role].oid;
	record.database_marker = fw_shared->databases[counter->database].marker;
	fwshmem_counter_text(counter, FW_TEXT_LOAD, NULL, text);
	fwshmem_dump_write(dump, &record, sizeof(record));
	fwshmem_dump_write(dump, text, counter->name_len + counter->key_len);
	return false;
}

/*
 * Write the table to the file: run by the keeper at shutdown, holding every
 * lock of the table.  The counters are counted first, so that the header
 * can say how many follow; a count that differs after writing them is a
 * bug, and the file is not kept.
 */
static void
fwshmem_dump(void)
{
	FwDump		dump = {NULL, 0, 0, PG_UINT32_MAX, true};
	FwDumpHeader2 header;

	memset(&header, 0, sizeof(header));
	header.common.magic = FW_DUMP_MAGIC;
	header.common.version = FW_DUMP_VERSION;
	header.nslots = fw_shared->nslots;
	header.system_identifier = GetSystemIdentifier();
	fwshmem_walk(fwshmem_dump_visit, &dump, FW_WALK_UNLOCKED);
	header.common.count = dump.count;

	dump.file = AllocateFile(FW_DUMP_FILE ".tmp", PG_BINARY_W);
	if (dump.file == NULL)
		goto error;
	dump.limit = dump.count;
	dump.count = 0;
	INIT_CRC32C(dump.crc);
	fwshmem_dump_write(&dump, &header, sizeof(header));
	fwshmem_walk(fwshmem_dump_visit, &dump, FW_WALK_UNLOCKED);
	FIN_CRC32C(dump.crc);
	if (dump.count != header.common.count)
		elog(ERROR, "fixed_window counted %u counters to save, then found %u",
			 header.common.count, dump.count);
	if (!dump.ok || fwrite(&dump.crc, sizeof(dump.crc), 1, dump.file) != 1)
		goto error;
	if (FreeFile(dump.file))
	{
		dump.file = NULL;
		goto error;
	}
	/* durable_rename reports its own failure */
	if (durable_rename(FW_DUMP_FILE ".tmp", FW_DUMP_FILE, LOG) != 0)
	{
		unlink(FW_DUMP_FILE ".tmp");
		return;
	}
	ereport(LOG,
			(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
			errmsg("fixed_window saved %u counters", header.common.count)));
	return;

error:
	ereport(LOG,
			(errcode_for_file_access(),
			errmsg("could not write file \"%s\": %m", FW_DUMP_FILE ".tmp")));
	if (dump.file)
		FreeFile(dump.file);
	unlink(FW_DUMP_FILE ".tmp");
}

/* One record of the file, whatever its format. */
typedef struct FwLoadRecord
{
	FwDumpRecord fields;
	Oid			owner;
	uint64		database_marker;
	const char *text;			/* stored name, then key */
} FwLoadRecord;

/*
 * The record at *p, moving *p past it; false when the file ends, or, with
 * *bad set, when the record runs past its end or says impossible lengths.
 */
static bool
fwshmem_load_next(const FwLoad *load, char **p, FwLoadRecord *record, bool *bad)
{
	Size		fixed = load->version == 1 ? sizeof(FwDumpRecord) : sizeof(FwDumpRecord2);

	*bad = false;
	if (*p == load->end)
		return false;
	if (load->end - *p < (long) fixed)
	{
		*bad = true;
		return false;
	}
	memcpy(&record->fields, *p, sizeof(FwDumpRecord));
	if (load->version == 1)
	{
		/* the last caller's role stands for the one that created it */
		record->owner = record->fields.data.userid;
		record->database_marker = 0;
	}
	else
	{
		FwDumpRecord2 full;

		memcpy(&full, *p, sizeof(full));
		record->owner = full.owner;
		record->database_marker = full.database_marker;
	}
	*p += fixed;
	if (record->fields.name_len < 0 || record->fields.name_len > FW_MAX_STORED_NAME ||
		record->fields.key_len < 0 || record->fields.key_len > FW_MAX_KEY_BYTES ||
		load->end - *p < record->fields.name_len + record->fields.key_len)
	{
		*bad = true;
		return false;
	}
	record->text = *p;
	*p += record->fields.name_len + record->fields.key_len;
	return true;
}

static void
fwshmem_load_ignored(const char *reason)
{
	ereport(LOG,
			(errcode(ERRCODE_DATA_CORRUPTED),
			errmsg("ignoring file \"%s\"", FW_DUMP_FILE),
			errdetail("%s The counters start empty.", reason)));
}

/*
 * Read the file of the last clean shutdown into load, check it whole and
 * count the slots its counters to load need; load->data stays NULL when
 * there is nothing to load.  The file is removed, whatever it holds: after
 * a crash that re-creates shared memory, the counters of the last clean
 * shutdown must not come back.
 */
static void
fwshmem_load_read(FwLoad *load)
{
	FILE	   *file;
	long		size;
	FwDumpHeader2 header;
	pg_crc32c	crc;
	pg_crc32c	stored;
	struct stat st;
	char	   *p;
	uint32		i;
	FwLoadRecord record;
	bool		bad = false;

	memset(load, 0, sizeof(FwLoad));
	load->now = GetCurrentTimestamp();
	if (!fw_save)
	{
		unlink(FW_DUMP_FILE);
		return;
	}
	file = AllocateFile(FW_DUMP_FILE, PG_BINARY_R);
	if (file == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					errmsg("could not read file \"%s\": %m", FW_DUMP_FILE)));
		return;
	}
	unlink(FW_DUMP_FILE);

	/*
	 * Only a file saved before this server started is a clean shutdown's:
	 * one written since (by a shutdown that did not complete, or a keeper
	 * that saved and then the server crashed) holds counters older than
	 * those a crash lost.
	 */
	if (fstat(fileno(file), &st) == 0 && fwshmem_written_since_start(&st))
	{
		FreeFile(file);
		ereport(LOG,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("ignoring file \"%s\"", FW_DUMP_FILE),
				errdetail("The file was written after the server started, not at its last clean shutdown; the counters start empty.")));
		return;
	}
	if (fseek(file, 0, SEEK_END) != 0 || (size = ftell(file)) < 0 ||
		fseek(file, 0, SEEK_SET) != 0)
		goto read_error;
	if (size < (long) (sizeof(FwDumpHeader) + sizeof(crc)))
		goto bad_file;
	load->data = palloc_extended(size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	if (load->data == NULL)
	{
		FreeFile(file);
		ereport(LOG,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				errmsg("out of memory reading file \"%s\"", FW_DUMP_FILE),
				errdetail("The file is %ld bytes; the counters start empty.", size)));
		return;
	}
	if (fread(load->data, 1, size, file) != (size_t) size)
		goto read_error;
	FreeFile(file);
	file = NULL;

	/* check everything before using anything */
	memset(&header, 0, sizeof(header));
	memcpy(&header.common, load->data, sizeof(FwDumpHeader));
	memcpy(&stored, load->data + size - sizeof(crc), sizeof(crc));
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, load->data, size - sizeof(crc));
	FIN_CRC32C(crc);
	if (header.common.magic != FW_DUMP_MAGIC || !EQ_CRC32C(crc, stored) ||
		(header.common.version != 1 && header.common.version != FW_DUMP_VERSION))
		goto bad_file;
	load->version = header.common.version;
	load->count = header.common.count;
	load->records = load->data + sizeof(FwDumpHeader);
	if (load->version >= 2)
	{
		if (size < (long) (sizeof(FwDumpHeader2) + sizeof(crc)))
			goto bad_file;
		memcpy(&header, load->data, sizeof(header));
		load->records = load->data + sizeof(FwDumpHeader2);
		load->saved_nslots = header.nslots;
		if (header.system_identifier != GetSystemIdentifier())
		{
			pfree(load->data);
			load->data = NULL;
			ereport(LOG,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					errmsg("ignoring file \"%s\"", FW_DUMP_FILE),
					errdetail("The file was written by another server (system identifier %llu, this server's %llu); the counters start empty.",
							  (unsigned long long) header.system_identifier,
							  (unsigned long long) GetSystemIdentifier())));
			return;
		}
	}
	load->end = load->data + size - sizeof(crc);

	/* every record, and the slots of those to load */
	p = load->records;
	for (i = 0; fwshmem_load_next(load, &p, &record, &bad); i++)
		if (!fwshmem_forgettable(&record.fields.data, load->now))
			load->needed += fwshmem_slots_needed(record.fields.name_len + record.fields.key_len);
	if (bad || i != load->count)
		goto bad_file;
	return;

read_error:
	ereport(LOG,
			(errcode_for_file_access(),
			errmsg("could not read file \"%s\": %m", FW_DUMP_FILE)));
	goto forget;
bad_file:
	fwshmem_load_ignored("The file is truncated, corrupt or of another format.");
forget:
	if (file)
		FreeFile(file);
	if (load->data)
		pfree(load->data);
	load->data = NULL;
}

/*
 * The size of the first table of a server: fixed_window.max_counters; or,
 * when the counters saved at the last clean shutdown need more, the size
 * the table had then (or what they need, if more), so that none is lost
 * and new keys find room as before the restart.  Said loudly.  Called
 * under the registry's lock, by the one backend that creates it.
 */
static Size
fwshmem_first_size(void *arg)
{
	FwLoad	   *load = (FwLoad *) arg;

	/* made by a session whose settings are known, with the admin's size */
	fwplaceholder_check_known();
	fwshmem_load_read(load);
	load->nslots = (uint32) fw_max_counters;
	if (load->needed > load->nslots)
	{
		load->nslots = Min(Max(load->needed, load->saved_nslots), FW_MAX_COUNTERS);
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("the saved counters need %u slots, more than fixed_window.max_counters (%d)",
					   load->needed, fw_max_counters),
				errdetail("The table of counters has %u slots, as before the restart, so that no counter whose window has not ended is lost.",
						  load->nslots),
				errhint("Set fixed_window.max_counters to %u with ALTER SYSTEM; or, once enough windows have ended, make the table smaller with fw_resize_counters().",
						load->nslots)));
	}
	return fwshmem_size(load->nslots);
}

/*
 * Load the counters read into the first table, before any other backend
 * sees it: each against the shares of the database and the role that made
 * it, beyond the shares if need be, since it held its slots before.
 */
static void
fwshmem_load(FwLoad *load)
{
	char	   *p = load->records;
	FwLoadRecord record;
	bool		bad;
	uint32		loaded = 0;
	uint32		ended = 0;
	uint32		lost = 0;

	while (fwshmem_load_next(load, &p, &record, &bad))
	{
		FwIdentity	id;
		const char *name;
		int			name_len;
		const char *period_id;
		int			period_id_len;
		uint32		slot;
		FwOwners	owners;
		bool		moved;

		if (fwshmem_forgettable(&record.fields.data, load->now))
		{
			ended++;
			continue;
		}
		fwshmem_split_stored_name(record.text, record.fields.name_len, &name, &name_len,
								  &period_id, &period_id_len);
		fwidentity_init_db(&id, record.fields.dbid, name, name_len, period_id, period_id_len,
						   record.text + record.fields.name_len, record.fields.key_len);
		owners.dbid = record.fields.dbid;
		owners.database = !OidIsValid(owners.dbid) ? FW_NO_ENTRY :
			fwshmem_share_entry(fw_shared->databases, FW_MAX_DATABASES, owners.dbid, true,
								record.database_marker);
		owners.roleid = record.owner;
		owners.role = !OidIsValid(owners.roleid) ? FW_NO_ENTRY :
			fwshmem_share_entry(fw_shared->roles, FW_MAX_ROLES, owners.roleid, true, 0);
		owners.unbounded = true;
		/* more databases or roles than are accounted for, or no room */
		if (owners.database == FW_NO_ENTRY || owners.role == FW_NO_ENTRY ||
			fwshmem_insert(id.hash & (fw_shared->nbuckets - 1), &id, &owners, &slot,
						   &moved) != FW_APPLY_OK)
		{
			lost++;
			continue;
		}
		fw_slots[slot].counter.data = record.fields.data;
		fwshmem_lower_reclaim_hint(record.fields.data.window_end);
		loaded++;
	}
	ereport(LOG,
			(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
			errmsg("fixed_window loaded %u of %u saved counters", loaded, load->count),
			ended > 0 ? errdetail("%u had windows that ended without tokens to carry over.", ended) : 0));
	if (lost > 0)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("fixed_window could not load %u saved counters whose windows had not ended", lost),
				errdetail("Shared memory accounts for the counters of at most %d databases and %d roles, and holds at most %d slots.",
						  FW_MAX_DATABASES, FW_MAX_ROLES, FW_MAX_COUNTERS),
				errhint("The keys of those counters may be allowed again before their windows end.")));
	pfree(load->data);
	load->data = NULL;
}

/*
 * Growing and shrinking the table: fwshmem_resize copies the counters into
 * a table of nslots slots in a new segment, which replaces the current one
 * (see "Growing" above).  It keeps every counter a reclaim keeps: those
 * whose window has not ended, and those whose window ended with tokens to
 * carry over -- unless the new table has no room for the latter, when they
 * go as a reclaim drops them.  A shrink that would leave a database or a
 * role holding more than its share of the new table is refused: its new
 * keys would find no room until enough of its windows had ended.
 */
typedef struct FwCopy
{
	FwSegment  *from;
	FwSegment  *to;
	int64		now;			/* the time windows are judged at */
	bool		drop_ended;		/* leave out counters whose window ended */
	uint32		copied;
} FwCopy;

/*
 * The slots the counters of the table take, in all and by entry of
 * databases[] and roles[]: kept, those of counters that are not
 * forgettable, and live, those of counters whose window has not ended.
 */
typedef struct FwResizeCount
{
	int64		now;
	uint32		kept;
	uint32		live;
	uint32		database_kept[FW_MAX_DATABASES];
	uint32		database_live[FW_MAX_DATABASES];
	uint32		role_kept[FW_MAX_ROLES];
	uint32		role_live[FW_MAX_ROLES];
} FwResizeCount;

/* Why a resize is refused: the first holder over its share, or the total. */
typedef enum FwResizeScope
{
	FW_RESIZE_FITS,				/* not refused */
	FW_RESIZE_ALL,				/* the live counters, in all */
	FW_RESIZE_DATABASE,			/* a database over its share */
	FW_RESIZE_ROLE				/* a role over its share */
} FwResizeScope;

typedef struct FwResizeRefusal
{
	FwResizeScope scope;
	Oid			oid;
	uint32		slots;			/* what it holds */
	uint32		limit;			/* what the new table allows it */
	uint32		minimum;		/* the fewest slots that would allow it */
} FwResizeRefusal;

static bool
fwshmem_forget_visit(FwCounter *counter, void *arg)
{
	return fwshmem_forgettable(&counter->data, *(int64 *) arg);
}

static bool
fwshmem_count_visit(FwCounter *counter, void *arg)
{
	FwResizeCount *count = (FwResizeCount *) arg;
	uint32		slots = fwshmem_slots_needed(counter->name_len + counter->key_len);

	if (fwshmem_forgettable(&counter->data, count->now))
		return false;
	count->kept += slots;
	count->database_kept[counter->database] += slots;
	count->role_kept[counter->role] += slots;
	if (!fwshmem_reclaimable(&counter->data, count->now))
	{
		count->live += slots;
		count->database_live[counter->database] += slots;
		count->role_live[counter->role] += slots;
	}
	return false;
}

/*
 * Whether one of the n entries holds more slots than a share of nslots
 * allows; if so, *refusal says which, in scope.
 */
static bool
fwshmem_over_share(const FwShare *entries, const uint32 *slots, int n, uint32 nslots, int share,
				   FwResizeScope scope, FwResizeRefusal *refusal)
{
	uint32		limit = fwsettings_share_of(nslots, share);
	int			i;

	for (i = 0; i < n; i++)
		if (slots[i] > limit)
		{
			refusal->scope = scope;
			refusal->oid = entries[i].oid;
			refusal->slots = slots[i];
			refusal->limit = limit;
			refusal->minimum = (uint32) (((uint64) slots[i] * 100 + share - 1) / share);
			return true;
		}
	return false;
}

/*
 * Whether counters taking total slots in all, and the given slots by entry
 * (of databases[], then of roles[]), fit a table of nslots slots; if not,
 * *refusal says why.  Shares are checked only when the table shrinks:
 * growing never takes room from anyone.
 */
static bool
fwshmem_resize_fits(uint32 nslots, uint32 total, const uint32 *databases, const uint32 *roles,
					FwResizeRefusal *refusal)
{
	memset(refusal, 0, sizeof(FwResizeRefusal));
	if (total > nslots)
	{
		refusal->scope = FW_RESIZE_ALL;
		refusal->slots = total;
		refusal->minimum = total;
		return false;
	}
	if (nslots >= fw_shared->nslots)
		return true;
	return !fwshmem_over_share(fw_shared->databases, databases, FW_MAX_DATABASES, nslots,
							   fw_database_share, FW_RESIZE_DATABASE, refusal) &&
		!fwshmem_over_share(fw_shared->roles, roles, FW_MAX_ROLES, nslots, fw_role_share,
							FW_RESIZE_ROLE, refusal);
}

/* A resize refused: say why, the table's locks released. */
pg_noreturn static void
fwshmem_resize_refused(uint32 nslots, uint32 old_nslots, const FwResizeRefusal *refusal)
{
	const char *name;

	if (refusal->scope == FW_RESIZE_ALL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("cannot shrink the rate limit counters to %u slots", nslots),
				errdetail("Live counters take %u of the %u slots now.", refusal->slots, old_nslots),
				errhint("Wait until more windows have ended, or remove counters with fw_reset().")));
	if (refusal->scope == FW_RESIZE_DATABASE)
	{
		name = get_database_name(refusal->oid);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("cannot shrink the rate limit counters to %u slots", nslots),
				errdetail("Database \"%s\" holds %u counter slots, more than its share of %u slots (%u, fixed_window.database_share = %d).",
						  name ? name : psprintf("%u", refusal->oid), refusal->slots, nslots,
						  refusal->limit, fw_database_share),
				refusal->minimum < old_nslots ?
				errhint("Shrink to %u slots or more, raise fixed_window.database_share, or wait until more of its windows have ended.",
						refusal->minimum) :
				errhint("Raise fixed_window.database_share, or wait until more of its windows have ended.")));
	}
	name = GetUserNameFromId(refusal->oid, true);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			errmsg("cannot shrink the rate limit counters to %u slots", nslots),
			errdetail("Role \"%s\" holds %u counter slots, more than its share of %u slots (%u, fixed_window.role_share = %d).",
					  name ? name : psprintf("%u", refusal->oid), refusal->slots, nslots,
					  refusal->limit, fw_role_share),
			refusal->minimum < old_nslots ?
			errhint("Shrink to %u slots or more, raise fixed_window.role_share, or wait until more of its windows have ended.",
					refusal->minimum) :
			errhint("Raise fixed_window.role_share, or wait until more of its windows have ended.")));
}

/* Copy one counter of the old table (in use) into the new one. */
static bool
fwshmem_copy_visit(FwCounter *counter, void *arg)
{
	FwCopy	   *copy = (FwCopy *) arg;
	char		text[FW_MAX_STORED_NAME + FW_MAX_KEY_BYTES];
	FwIdentity	id;
	const char *name;
	int			name_len;
	const char *period_id;
	int			period_id_len;
	FwOwners	owners;
	FwCounterData data = counter->data;
	uint32		slot;
	bool		moved;
	FwApplyResult result;

	if (fwshmem_forgettable(&data, copy->now) ||
		(copy->drop_ended && fwshmem_reclaimable(&data, copy->now)))
		return false;
	fwshmem_counter_text(counter, FW_TEXT_LOAD, NULL, text);
	fwshmem_split_stored_name(text, counter->name_len, &name, &name_len, &period_id, &period_id_len);
	fwidentity_init_db(&id, counter->dbid, name, name_len, period_id, period_id_len,
					   text + counter->name_len, counter->key_len);
	Assert(id.hash == counter->hash);

	/* the new table's entries of databases[] and roles[] are the old one's */
	owners.database = counter->database;
	owners.dbid = fw_shared->databases[counter->database].oid;
	owners.role = counter->role;
	owners.roleid = fw_shared->roles[counter->role].oid;
	owners.unbounded = true;

	fwshmem_use(copy->to);
	result = fwshmem_insert(id.hash & (fw_shared->nbuckets - 1), &id, &owners, &slot, &moved);
	/* checked beforehand: the new table has room for every slot copied */
	if (result != FW_APPLY_OK || moved)
		elog(ERROR, "no room for a counter while copying the table of fixed_window");
	fw_slots[slot].counter.data = data;
	copy->copied++;

	fwshmem_use(copy->from);
	return false;
}

/*
 * Take the admin lock and every partition lock of the table in use, in
 * that order; returns false, holding none, if the table was replaced.
 */
static bool
fwshmem_lock_table(void)
{
	int			i;

	LWLockAcquire(fwshmem_admin_lock(), LW_EXCLUSIVE);
	if (fwshmem_retired())
	{
		LWLockRelease(fwshmem_admin_lock());
		return false;
	}
	for (i = 0; i < FW_NUM_PARTITIONS; i++)
		LWLockAcquire(&fw_shared->locks[i].lock, LW_EXCLUSIVE);
	return true;
}

/* Release what fwshmem_lock_table took. */
static void
fwshmem_unlock_table(void)
{
	int			i;

	for (i = FW_NUM_PARTITIONS - 1; i >= 0; i--)
		LWLockRelease(&fw_shared->locks[i].lock);
	LWLockRelease(fwshmem_admin_lock());
}

/*
 * The table in use, with its admin lock held exclusively; false, holding
 * nothing, when there is no table.
 */
static bool
fwshmem_lock_admin(void)
{
	for (;;)
	{
		if (!fwshmem_attach(false))
			return false;
		LWLockAcquire(fwshmem_admin_lock(), LW_EXCLUSIVE);
		if (!fwshmem_retired())
			return true;
		LWLockRelease(fwshmem_admin_lock());
	}
}

/*
 * The table follows nslots as fixed_window.max_counters from now: the
 * setting is nslots since fw_resize_counters recorded it (ALTER SYSTEM), so
 * that a backend that read the configuration before does not undo it.
 */
void
fwshmem_record_setting(uint32 nslots)
{
	if (!fwshmem_lock_admin())
		return;
	fw_shared->setting = nslots;
	fw_shared->setting_at = GetCurrentTimestamp();
	LWLockRelease(fwshmem_admin_lock());
}

/*
 * Replace the table by one of nslots slots, holding the counters of the
 * old one that a reclaim would keep (see above).  Refused when the live
 * counters take more than nslots slots, or, shrinking, more than a
 * database's or a role's share of them.  Returns the counters copied;
 * *old_nslots is set to the old size.  From then on the table follows
 * nslots, until fixed_window.max_counters changes (fwshmem_follow_setting).
 *
 * The new segment is created and cleared before the old table's locks are
 * taken, so that calls wait only while the counters are counted and
 * copied; the counters that need not move are removed before, under the
 * admin lock only.  The registry's lock, held from fwsegment_create to
 * fwsegment_replace, keeps any other backend from replacing the old table
 * meanwhile.
 */
uint32
fwshmem_resize(uint32 nslots, uint32 *old_nslots)
{
	FwCopy		copy;
	FwResizeCount *count = NULL;
	FwResizeRefusal refusal;
	bool		same = false;

	Assert(nslots >= FW_MIN_COUNTERS && nslots <= FW_MAX_COUNTERS);
	memset(&copy, 0, sizeof(copy));
	memset(&refusal, 0, sizeof(refusal));
	copy.now = fwsettings_clock_no_later(fwsettings_clock_now());
	for (;;)
	{
		(void) fwshmem_attach(true);
		*old_nslots = fw_shared->nslots;
		if (nslots == *old_nslots)
			break;
		copy.from = fw_segment;
		copy.to = fwsegment_create(FW_SEGMENT_COUNTERS, fwshmem_size(nslots));
		if (!fwshmem_retired())
			break;				/* and no other backend can replace it now */
		fwsegment_discard(copy.to);
	}
	if (nslots == *old_nslots)
		return 0;

	PG_TRY();
	{
		FwShared   *to_shared;

		fwshmem_init_table(copy.to, nslots, 0, 0);
		to_shared = fw_shared;
		fwshmem_use(copy.from);

		LWLockAcquire(fwshmem_admin_lock(), LW_EXCLUSIVE);
		fwshmem_walk(fwshmem_forget_visit, &copy.now, FW_WALK_REMOVE);
		LWLockRelease(fwshmem_admin_lock());
		if (!fwshmem_lock_table())
			elog(ERROR, "the table of fixed_window was replaced while the registry was locked");
		same = (nslots == fw_shared->nslots);
		count = palloc0(sizeof(FwResizeCount));
		count->now = copy.now;
		if (!same)
			fwshmem_walk(fwshmem_count_visit, count, FW_WALK_UNLOCKED);
		if (same)
			;
		else if (fwshmem_resize_fits(nslots, count->kept, count->database_kept,
									 count->role_kept, &refusal))
			copy.drop_ended = false;
		else if (fwshmem_resize_fits(nslots, count->live, count->database_live,
									 count->role_live, &refusal))
			copy.drop_ended = true;
		if (!same && refusal.scope == FW_RESIZE_FITS)
		{
			int			i;

			/* the same entries, each to hold the slots its counters take again */
			memcpy(to_shared->databases, fw_shared->databases, sizeof(fw_shared->databases));
			memcpy(to_shared->roles, fw_shared->roles, sizeof(fw_shared->roles));
			for (i = 0; i < FW_MAX_DATABASES; i++)
				to_shared->databases[i].slots = 0;
			for (i = 0; i < FW_MAX_ROLES; i++)
				to_shared->roles[i].slots = 0;
			pg_atomic_write_u64(&to_shared->swept_at, pg_atomic_read_u64(&fw_shared->swept_at));
			to_shared->setting = fw_shared->setting;
			to_shared->setting_at = fw_shared->setting_at;
			fwshmem_walk(fwshmem_copy_visit, &copy, FW_WALK_UNLOCKED);
		}
	}
	PG_CATCH();
	{
		fwshmem_use(copy.from);
		fwsegment_discard(copy.to);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (count)
		pfree(count);

	if (same || refusal.scope != FW_RESIZE_FITS)
	{
		fwshmem_unlock_table();
		fwsegment_discard(copy.to);
		if (same)
			return 0;
		fwshmem_resize_refused(nslots, *old_nslots, &refusal);
	}

	/* from here on, every backend that takes a lock of the old table moves */
	fwsegment_replace(copy.from, copy.to);
	fwshmem_unlock_table();
	(void) fwshmem_attach(true);
	ereport(LOG,
			(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
			errmsg("fixed_window moved %u counters to a table of %u slots (was %u)",
					copy.copied, nslots, *old_nslots)));
	return copy.copied;
}

/*
 * The table follows changes of fixed_window.max_counters: when a reload
 * changes the setting, the table is resized to its new value.  The table
 * keeps the value it follows and when it was read; a backend that read a
 * later configuration giving another value records it and resizes the
 * table: the keeper after each reload and as it starts, and any backend's
 * call while no keeper runs (one that was terminated, or for which there
 * was no worker slot).  A value is applied once: when the resize fails (a
 * shrink below the live counters), it is logged, and tried again only when
 * the setting changes again.  fw_resize_counters() records its size with
 * ALTER SYSTEM, and then as the value the table follows
 * (fwshmem_record_setting); a size it could not record holds until the
 * setting changes or the server restarts.  A table made bigger than the
 * setting to hold the counters saved at a restart keeps its size likewise.
 */
static void
fwshmem_resize_step(void *arg)
{
	uint32		before;

	(void) fwshmem_resize(*(uint32 *) arg, &before);
}

void
fwshmem_follow_setting(void)
{
	static TimestampTz followed = 0;	/* the reading last compared */
	uint32		setting = (uint32) fw_max_counters;
	bool		apply;

	/*
	 * Once per reading of the configuration: a backend that has not read a
	 * newer one yet, while the others read its change, would otherwise
	 * take the admin lock at each call until it does.
	 */
	if (fw_shared == NULL || ((volatile FwShared *) fw_shared)->setting == setting ||
		PgReloadTime == followed || !fwshmem_lock_admin())
		return;
	followed = PgReloadTime;
	apply = fw_shared->setting != setting && PgReloadTime > fw_shared->setting_at;
	if (apply)
	{
		fw_shared->setting = setting;
		fw_shared->setting_at = PgReloadTime;
	}
	LWLockRelease(fwshmem_admin_lock());
	if (!apply || setting == fw_shared->nslots)
		return;

	/* the caller goes on whatever happens: only the log says it */
	(void) fwsubxact_try_or_log(fwshmem_resize_step, &setting);
}

/*
 * Once per session, before it counts in or reads the table: if the
 * counters of the session's database's OID belong to an earlier database
 * of that OID, dropped while no session with the library saw it go, they
 * are removed, so that the database starts empty.  Entries not yet marked
 * (loaded from a file of format 1) take this database's mark.
 */
static void
fwshmem_enter_database(void)
{
	uint64		marker = fwidentity_database_marker();
	Oid			dbid = MyDatabaseId;
	int			entry;
	bool		earlier = false;

	if (marker == 0 || !fwshmem_lock_admin())
		return;
	entry = fwshmem_share_entry(fw_shared->databases, FW_MAX_DATABASES, dbid, false, 0);
	if (entry != FW_NO_ENTRY && fw_shared->databases[entry].marker != marker)
	{
		earlier = (fw_shared->databases[entry].marker != 0);
		if (earlier)
			fwshmem_walk(fwshmem_drop_visit, &dbid, FW_WALK_REMOVE);
		SpinLockAcquire(&fw_shared->mutex);
		fw_shared->databases[entry].marker = marker;
		SpinLockRelease(&fw_shared->mutex);
	}
	LWLockRelease(fwshmem_admin_lock());
	if (earlier)
		ereport(LOG,
				(errcode(ERRCODE_SUCCESSFUL_COMPLETION),
				errmsg("fixed_window forgot the counters of an earlier database with OID %u", dbid),
				errdetail("They were made by another database of this OID, dropped since, or before this database moved to another tablespace, in either case while no session with the library saw it.")));
}

/*
 * A database moved to another tablespace (ALTER DATABASE ... SET
 * TABLESPACE), whose PG_VERSION file was written anew: its counters are
 * marked with its new mark, so that its next session keeps them.
 */
void
fwshmem_database_moved(Oid dbid, uint64 marker)
{
	int			entry;

	if (!fwshmem_lock_admin())
		return;
	entry = fwshmem_share_entry(fw_shared->databases, FW_MAX_DATABASES, dbid, false, 0);
	if (entry != FW_NO_ENTRY)
	{
		SpinLockAcquire(&fw_shared->mutex);
		fw_shared->databases[entry].marker = marker;
		SpinLockRelease(&fw_shared->mutex);
	}
	LWLockRelease(fwshmem_admin_lock());
}

/*
 * Map the table for a session's call or admin function: as fwshmem_attach,
 * then, once per session, its database's counters are checked to be its
 * own (fwshmem_enter_database).
 */
static bool
fwshmem_attach_session(bool create)
{
	static bool entered = false;

	if (!fwshmem_attach(create))
		return false;
	if (!entered && OidIsValid(MyDatabaseId))
	{
		fwshmem_enter_database();
		entered = true;
	}
	return true;
}

/*
 * Whether the caller should look for dropped databases now: no keeper runs
 * (it looks once a second), and no backend looked in the last second.
 * Says yes to one caller at a time.
 */
#define FW_SWEEP_INTERVAL_MS	1000

bool
fwshmem_sweep_due(void)
{
	TimestampTz now;
	uint64		last;

	if (fwsegment_keeper_running() || !fwshmem_attach(false))
		return false;
	now = GetCurrentTimestamp();
	last = pg_atomic_read_u64(&fw_shared->swept_at);
	return !TimestampDifferenceExceeds((TimestampTz) last, now, FW_SWEEP_INTERVAL_MS) ? false :
		pg_atomic_compare_exchange_u64(&fw_shared->swept_at, &last, (uint64) now);
}

/*
 * Save the table now, holding every lock of it: by a keeper terminated
 * while the server runs, so that a clean shutdown before another keeper
 * starts (which takes a second) loses no counter.  The file is then loaded
 * only when the server starts anew: one written since the server started
 * is not a clean shutdown's for a table made again by this server (after a
 * crash).  The next keeper's save at the shutdown replaces it.
 */
void
fwshmem_save_now(void)
{
	if (!fw_save)
		return;
	for (;;)
	{
		if (!fwshmem_attach(false))
			return;
		if (fwshmem_lock_table())
			break;
	}
	fwshmem_dump();
	fwshmem_unlock_table();
}

/*
 * A keeper that starts while the server runs: the save its predecessor made
 * when it was terminated (fwshmem_save_now) is not needed any more, since
 * this keeper saves at the shutdown, and must not be loaded after an
 * immediate shutdown or a crash of the postmaster as a clean shutdown's
 * would.  A file written before the server started is a clean shutdown's,
 * for the table this server has not made yet: it stays.
 */
void
fwshmem_forget_running_save(void)
{
	struct stat st;

	if (stat(FW_DUMP_FILE, &st) == 0 && fwshmem_written_since_start(&st))
		unlink(FW_DUMP_FILE);
}

/*
 * At a clean shutdown, from the keeper, unless fixed_window.save is off:
 * once the other backends have unmapped the table, save it, holding every
 * lock of it so that the file is one state of the table.  Walsenders are
 * not waited for: they exit after the keeper (see segment.c), and a call
 * made over a replication connection after the save is not in the file.
 */
#define FW_UNMAP_POLL_MS	10

void
fwshmem_save_at_shutdown(void)
{
	while (fwshmem_attach(false) && pg_atomic_read_u32(&fw_segment->attached) > 1)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 FW_UNMAP_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	fwshmem_save_now();
}

/*
 * The databases that hold counters, at most FW_MAX_DATABASES, into dbids;
 * returns how many.  Read without a lock: an entry that changes meanwhile
 * is a database that held counters a moment ago, or holds them now.
 */
int
fwshmem_databases(Oid *dbids)
{
	int			n = 0;
	int			i;

	if (!fwshmem_attach(false))
		return 0;
	for (i = 0; i < FW_MAX_DATABASES; i++)
	{
		Oid			dbid = fw_shared->databases[i].oid;

		if (OidIsValid(dbid) && fw_shared->databases[i].slots > 0)
			dbids[n++] = dbid;
	}
	return n;
}

/* What a walk of fwshmem_capacity adds up, by entry of databases[] and roles[]. */
typedef struct FwCapacityWalk
{
	int64		reclaim_before; /* the time a reclaim would judge by */
	uint64		live;
	uint64		reclaimable;
	uint64		database_live[FW_MAX_DATABASES];
	uint64		database_reclaimable[FW_MAX_DATABASES];
	uint64		role_live[FW_MAX_ROLES];
	uint64		role_reclaimable[FW_MAX_ROLES];
} FwCapacityWalk;

/* The owners of the slots, as fwshmem_capacity copies them. */
typedef struct FwCapacityEntries
{
	FwShare		databases[FW_MAX_DATABASES];
	FwShare		roles[FW_MAX_ROLES];
} FwCapacityEntries;

static bool
fwshmem_capacity_visit(FwCounter *counter, void *arg)
{
	FwCapacityWalk *walk = (FwCapacityWalk *) arg;
	uint32		slots = fwshmem_slots_needed(counter->name_len + counter->key_len);

	if (fwshmem_reclaimable(&counter->data, walk->reclaim_before))
	{
		walk->reclaimable += slots;
		walk->database_reclaimable[counter->database] += slots;
		walk->role_reclaimable[counter->role] += slots;
	}
	else
	{
		walk->live += slots;
		walk->database_live[counter->database] += slots;
		walk->role_live[counter->role] += slots;
	}
	return false;
}

/*
 * The holders among entries (n of them, as they were after the walk) and
 * what the walk found of theirs.  An entry that changed owner during the
 * walk (before: as they were before it) may have had counters of its former
 * owner counted: all the slots it holds now are given as live instead.
 */
static FwShmemHolder *
fwshmem_capacity_holders(const FwShare *before, const FwShare *entries, int n,
						 const uint64 *live, const uint64 *reclaimable, int *nholders)
{
	FwShmemHolder *holders = palloc(n * sizeof(FwShmemHolder));
	int			i;

	*nholders = 0;
	for (i = 0; i < n; i++)
	{
		FwShmemHolder *holder = &holders[*nholders];

		if (!OidIsValid(entries[i].oid) ||
			(entries[i].slots == 0 && live[i] == 0 && reclaimable[i] == 0))
			continue;
		holder->oid = entries[i].oid;
		holder->live = live[i];
		holder->reclaimable = reclaimable[i];
		if (before[i].oid != entries[i].oid)
		{
			holder->live = entries[i].slots;
			holder->reclaimable = 0;
		}
		(*nholders)++;
	}
	return holders;
}

/* Copy the entries of databases[] and roles[], and the slots' counts. */
static void
fwshmem_capacity_entries(FwCapacityEntries *copy)
{
	SpinLockAcquire(&fw_shared->mutex);
	memcpy(copy->databases, fw_shared->databases, sizeof(copy->databases));
	memcpy(copy->roles, fw_shared->roles, sizeof(copy->roles));
	SpinLockRelease(&fw_shared->mutex);
}

/*
 * How full the table is, into capacity: its slots, those of live counters
 * and of counters that a reclaim at now would free, in all and by database
 * and role, with the shares that bound them.  Returns false, and fills in
 * nothing, when there is no table yet: none is created.  The counters are
 * walked one partition at a time under its lock held shared, so a call
 * waits at most for one partition's walk; the figures are thus not of one
 * instant, as under load no figures could be.  Counters are counted by the
 * entries of databases[] and roles[] they hold slots in, which are copied
 * before and after the walk to see which changed owner meanwhile.
 */
bool
fwshmem_capacity(FwShmemCapacity *capacity, TimestampTz now)
{
	FwCapacityWalk *walk;
	FwCapacityEntries *before;
	FwCapacityEntries *after;

	if (!fwshmem_attach(false))
		return false;
	walk = palloc0(sizeof(FwCapacityWalk));
	before = palloc(sizeof(FwCapacityEntries));
	after = palloc(sizeof(FwCapacityEntries));
	walk->reclaim_before = fwsettings_clock_no_later(now);
	fwshmem_capacity_entries(before);
	fwshmem_walk(fwshmem_capacity_visit, walk, FW_WALK_READ);
	if (fw_shared == NULL)
		return false;			/* the table went while it was walked */
	fwshmem_capacity_entries(after);

	capacity->nslots = fw_shared->nslots;
	capacity->live = walk->live;
	capacity->reclaimable = walk->reclaimable;
	capacity->bytes = fwshmem_size(capacity->nslots);
	capacity->database_limit = fwsettings_share_of(capacity->nslots, fw_database_share);
	capacity->role_limit = fwsettings_share_of(capacity->nslots, fw_role_share);
	capacity->databases = fwshmem_capacity_holders(before->databases, after->databases,
												   FW_MAX_DATABASES, walk->database_live,
												   walk->database_reclaimable,
												   &capacity->ndatabases);
	capacity->roles = fwshmem_capacity_holders(before->roles, after->roles, FW_MAX_ROLES,
											   walk->role_live, walk->role_reclaimable,
											   &capacity->nroles);
	pfree(walk);
	pfree(before);
	pfree(after);
	return true;
}

/* Map the table, creating it -- with the saved counters -- if there is none. */
void
fwshmem_open(void)
{
	(void) fwshmem_attach(true);
}

/*
 * Start the keeper: from _PG_init when preloading (a worker the postmaster
 * starts with the server), otherwise from a backend that finds no keeper
 * running (fwshmem_attach).  Either is started again by the postmaster
 * when it stops other than at a shutdown, and after a crash.
 */
#define FW_KEEPER_RESTART_S	1
void
fwshmem_start_keeper(bool dynamic)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = FW_KEEPER_RESTART_S;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "fixed_window");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "fwkeeper_main");	/* keeper.c */
	snprintf(worker.bgw_name, BGW_MAXLEN, "fixed_window keeper");
	snprintf(worker.bgw_type, BGW_MAXLEN, "fixed_window keeper");
	if (!dynamic)
		RegisterBackgroundWorker(&worker);
	else if (!RegisterDynamicBackgroundWorker(&worker, NULL))
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("could not start the fixed_window keeper: shared-memory counters will not be saved at shutdown"),
				errhint("Raise max_worker_processes (restart), or add fixed_window to shared_preload_libraries.")));
}
