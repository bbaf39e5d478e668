/*-------------------------------------------------------------------------
 *
 * shmem_store.c
 *	  Counters in shared memory: a fixed-size, partitioned hash table.
 *
 * Layout.  The table is created at postmaster start, sized by
 * fixed_window.max_counters, and never grows.  It is one allocation of
 * three parts:
 *
 *	- FwShared, a header: the free list, the reclaim hint and the slots
 *	  each database and each role holds;
 *	- buckets[], the head slot of each hash chain (a power of two of them);
 *	- slots[], an array of FW_SLOT_SIZE-byte slots.
 *
 * A counter takes one slot, holding its state and the first
 * FW_INLINE_TEXT bytes of its limit name followed by its key; longer texts
 * continue in overflow slots chained from the counter.  Identity is the
 * exact (database, name, key) triple: the hash only chooses the chain.
 * Slots are addressed by index, so the table has no pointers and no
 * allocator of its own beyond the free list.
 *
 * Locks.  There are FW_NUM_PARTITIONS + 1 LWLocks and one spinlock:
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
 *	- the admin lock (FW_ADMIN_LOCK): serializes reclaiming and claiming an
 *	  entry of databases[] or roles[].  A call that finds no room takes it, then
 *	  retries, then reclaims, so that while one backend reclaims the others
 *	  wait and then find the slots it freed.
 *	- the mutex (a spinlock): held for a few instructions to move slots on
 *	  or off the free list and change the counts that go with them.
 *
 * Order: the admin lock before partition locks before the mutex.  A call
 * takes its partition locks in ascending index order, so two calls never
 * wait for each other in a cycle; a walk over the whole table takes one
 * partition lock at a time, in index order.
 *
 * What guards each field:
 *
 *	FwShared.locks, nbuckets, nslots
 *					set at startup, never change
 *	FwShared.free_head, nfree
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
 *	FwShared.databases[i].slots, roles[i].slots
 *					mutex
 *	buckets[b]		the partition lock of b
 *	a counter's slots, all fields
 *					the partition lock of its bucket, while it is in a
 *					chain; a free slot's link belongs to the mutex
 *
 * The postmaster reads the table without locks when it saves it at
 * shutdown: no backend is left then.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog_internal.h"
#include "catalog/pg_control.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "settings.h"
#include "shmem_store.h"

#define FW_NUM_PARTITIONS	128 /* a power of two */
#define FW_ADMIN_LOCK		FW_NUM_PARTITIONS	/* index after the partitions */
#define FW_SLOT_SIZE		120
#define FW_NIL				PG_UINT32_MAX	/* no slot */
#define FW_NO_ENTRY			(-1)	/* no entry of databases[] or roles[] */
#define FW_MAX_ROLES		1024	/* roles whose slots are counted at once */
#define FW_LOCK_TRANCHE		"fixed_window"
#define FW_MIN_COUNTERS		1000
#define FW_MAX_COUNTERS		100000000
#define FW_DEFAULT_COUNTERS	100000

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
	FwOverflow	overflow;		/* also the link of a free slot */
	char		bytes[FW_SLOT_SIZE];
} FwSlot;

StaticAssertDecl(sizeof(FwSlot) == FW_SLOT_SIZE, "FwSlot must be FW_SLOT_SIZE bytes");
StaticAssertDecl(FW_INLINE_TEXT >= 64, "a counter must hold 64 bytes of text inline");
StaticAssertDecl(FW_MAX_NAME_BYTES <= PG_UINT16_MAX && FW_MAX_KEY_BYTES <= PG_UINT16_MAX,
				 "name and key lengths must fit in uint16");
StaticAssertDecl(FW_MAX_DATABASES <= PG_UINT16_MAX && FW_MAX_ROLES <= PG_UINT16_MAX,
				 "database and role entries must fit in uint16");

/* The slots one database, or one role, holds. */
typedef struct FwShare
{
	Oid			oid;			/* InvalidOid: the entry is free */
	uint32		slots;
} FwShare;

/* Whose share a new counter's slots count against. */
typedef struct FwOwners
{
	int			database;		/* entry of databases[], or FW_NO_ENTRY */
	Oid			dbid;			/* the database that entry must still be of */
	int			role;			/* entry of roles[], or FW_NO_ENTRY */
	Oid			roleid;			/* the role that entry must still be of */
} FwOwners;

/* How often an entry taken for another database or role is looked up again. */
#define FW_OWNER_ATTEMPTS	10

typedef struct FwShared
{
	LWLockPadded *locks;		/* partitions, then the admin lock */
	uint32		nbuckets;		/* a power of two, >= FW_NUM_PARTITIONS */
	uint32		nslots;
	slock_t		mutex;
	uint32		free_head;
	uint32		nfree;
	pg_atomic_uint64 reclaim_after; /* an int64: no counter is reclaimable
									 * before this */
	FwShare		databases[FW_MAX_DATABASES];
	FwShare		roles[FW_MAX_ROLES];
} FwShared;

static FwShared *fw_shared = NULL;
static uint32 *fw_buckets = NULL;
static FwSlot *fw_slots = NULL;

/* What the last allocation that found no room saw, for its error. */
static FwShmemUsage fw_last_no_room;

/* This backend's entries of databases[] and roles[], once found. */
static int	fw_my_database = FW_NO_ENTRY;
static int	fw_my_role = FW_NO_ENTRY;

static void fwshmem_dump(int code, Datum arg);
static void fwshmem_load(void);

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

/* Settings of shared memory, defined only while preloading. */
void
fwshmem_define_settings(void)
{
	/* the GUC machinery keeps the pointer: static, never freed */
	static char max_counters_desc[200];

	snprintf(max_counters_desc, sizeof(max_counters_desc),
			 "Each counter takes one %d-byte slot for a limit name and key of up to "
			 "%d bytes together, and one more slot for every further %d bytes.",
			 FW_SLOT_SIZE, (int) FW_INLINE_TEXT, (int) FW_OVERFLOW_TEXT);
	DefineCustomIntVariable("fixed_window.max_counters",
							"Sets the number of counter slots in shared memory.",
							max_counters_desc,
							&fw_max_counters,
							FW_DEFAULT_COUNTERS,
							FW_MIN_COUNTERS,
							FW_MAX_COUNTERS,
							PGC_POSTMASTER,
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
fwshmem_bucket_count(void)
{
	uint32		n = FW_NUM_PARTITIONS;

	while (n < (uint32) fw_max_counters)
		n <<= 1;
	return n;
}

/* The header, then the buckets, then the slots, in one allocation. */
static Size
fwshmem_buckets_offset(void)
{
	return MAXALIGN(sizeof(FwShared));
}

static Size
fwshmem_slots_offset(void)
{
	return add_size(fwshmem_buckets_offset(),
					MAXALIGN(mul_size(fwshmem_bucket_count(), sizeof(uint32))));
}

static Size
fwshmem_size(void)
{
	return add_size(fwshmem_slots_offset(), mul_size(fw_max_counters, sizeof(FwSlot)));
}

/* From shmem_request_hook (or _PG_init before 15). */
void
fwshmem_request(void)
{
	RequestAddinShmemSpace(fwshmem_size());
	RequestNamedLWLockTranche(FW_LOCK_TRANCHE, FW_NUM_PARTITIONS + 1);
}

/* Empty the table: every bucket empty, every slot on the free list. */
static void
fwshmem_clear(void)
{
	uint32		i;

	for (i = 0; i < fw_shared->nbuckets; i++)
		fw_buckets[i] = FW_NIL;
	for (i = 0; i < fw_shared->nslots; i++)
		fw_slots[i].overflow.next = (i + 1 < fw_shared->nslots) ? i + 1 : FW_NIL;
	fw_shared->free_head = 0;
	fw_shared->nfree = fw_shared->nslots;
	pg_atomic_init_u64(&fw_shared->reclaim_after, (uint64) PG_INT64_MIN);
	memset(fw_shared->databases, 0, sizeof(fw_shared->databases));
	memset(fw_shared->roles, 0, sizeof(fw_shared->roles));
}

/* From shmem_startup_hook, under AddinShmemInitLock. */
void
fwshmem_startup(void)
{
	bool		found;

	fw_shared = ShmemInitStruct("fixed_window", fwshmem_size(), &found);
	fw_buckets = (uint32 *) ((char *) fw_shared + fwshmem_buckets_offset());
	fw_slots = (FwSlot *) ((char *) fw_shared + fwshmem_slots_offset());

	if (!found)
	{
		fw_shared->locks = GetNamedLWLockTranche(FW_LOCK_TRANCHE);
		fw_shared->nbuckets = fwshmem_bucket_count();
		fw_shared->nslots = (uint32) fw_max_counters;
		SpinLockInit(&fw_shared->mutex);

		fwshmem_clear();

		/* the counters of the last clean shutdown, if saved */
		fwshmem_load();
	}

	/* the postmaster saves the counters when it shuts down */
	if (!IsUnderPostmaster)
		on_shmem_exit(fwshmem_dump, (Datum) 0);
}

bool
fwshmem_available(void)
{
	return fw_shared != NULL;
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
 * one, or one that holds no slot (FW_NO_ENTRY when there is none).
 * Claiming takes the admin lock unless the caller holds it: entries change
 * owner only under it, so the scans need no mutex; the mutex is taken only
 * to check that the chosen entry still holds no slot, and to write it.
 */
static int
fwshmem_share_entry(FwShare *table, int n, Oid oid, bool claim)
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
		fw_my_database = fwshmem_share_entry(fw_shared->databases, FW_MAX_DATABASES, owners->dbid, true);
	if (fw_my_role == FW_NO_ENTRY || fw_shared->roles[fw_my_role].oid != owners->roleid)
		fw_my_role = fwshmem_share_entry(fw_shared->roles, FW_MAX_ROLES, owners->roleid, true);
	owners->database = fw_my_database;
	owners->role = fw_my_role;
}

/* Slots a counter with "len" bytes of name and key needs. */
static uint32
fwshmem_slots_needed(int len)
{
	if (len <= (int) FW_INLINE_TEXT)
		return 1;
	return 1 + (len - FW_INLINE_TEXT + FW_OVERFLOW_TEXT - 1) / FW_OVERFLOW_TEXT;
}

/*
 * Whether n slots are free for a counter of these owners, within the shares
 * of its database and its role, and, when take is true, take them off the
 * free list, linked to each other through overflow.next: *first is set to
 * the first.  The mutex is held only to reserve them and then to pop one
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
		slot = fw_shared->free_head;
		fw_shared->free_head = fw_slots[slot].overflow.next;
		SpinLockRelease(&fw_shared->mutex);

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
	uint32		last;
	uint32		n = 1;

	/* chain the counter's own slot to its overflow slots, then free them */
	fw_slots[slot].overflow.next = fw_slots[slot].counter.overflow;
	for (last = slot; fw_slots[last].overflow.next != FW_NIL; last = fw_slots[last].overflow.next)
		n++;

	SpinLockAcquire(&fw_shared->mutex);
	fw_slots[last].overflow.next = fw_shared->free_head;
	fw_shared->free_head = slot;
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

/*
 * The counter of id in its bucket, or FW_NIL; *prev is set to the counter
 * before it in the chain (FW_NIL if first), for unlinking.
 */
static uint32
fwshmem_find(uint32 bucket, const FwIdentity *id, uint32 *prev)
{
	uint32		slot;

	*prev = FW_NIL;
	for (slot = fw_buckets[bucket]; slot != FW_NIL; slot = fw_slots[slot].counter.next)
	{
		FwCounter  *counter = &fw_slots[slot].counter;

		if (counter->hash == id->hash &&
			counter->dbid == id->dbid &&
			counter->name_len == fwshmem_stored_name_len(id) &&
			counter->key_len == id->key_len &&
			fwshmem_counter_text(counter, FW_TEXT_COMPARE, id, NULL))
			return slot;
		*prev = slot;
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
	fwshmem_counter_text(counter, FW_TEXT_STORE, id, NULL);
	counter->next = fw_buckets[bucket];
	fw_buckets[bucket] = *slot;
	return FW_APPLY_OK;
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
	int			nlocks;
	int			i;

	*moved = false;
	nlocks = fwshmem_call_partitions(call, buckets, partitions);
	for (i = 0; i < nlocks; i++)
		LWLockAcquire(&fw_shared->locks[partitions[i]].lock, mode);

	for (i = 0; i < call->n; i++)
	{
		uint32		prev;

		found[i] = NULL;
		slots[i] = fwshmem_find(buckets[i], &call->ids[i], &prev);
		if (slots[i] != FW_NIL)
		{
			FwCounterData *data = &fw_slots[slots[i]].counter.data;

			states[i].window_start = data->window_start;
			states[i].window_end = data->window_end;
			states[i].tokens = data->tokens;
			found[i] = &states[i];
		}
	}

	result = fwdecide_call(call, found, fwsettings_clock_now(), outcome);

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

				(void) fwshmem_find(buckets[i], &call->ids[i], &prev);
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
 * counters are visited; the visitor returns true to remove a counter.
 * FW_WALK_UNLOCKED is for the postmaster alone, when no backend is left.
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
		LWLockAcquire(lock, mode == FW_WALK_REMOVE ? LW_EXCLUSIVE : LW_SHARED);
	for (bucket = partition; bucket < fw_shared->nbuckets; bucket += FW_NUM_PARTITIONS)
	{
		uint32		prev = FW_NIL;
		uint32		slot = fw_buckets[bucket];

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

	if (fw_shared == NULL)
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

	if (fw_shared == NULL)
		return false;
	bucket = id->hash & (fw_shared->nbuckets - 1);
	lock = fwshmem_partition_lock(bucket);

	LWLockAcquire(lock, LW_EXCLUSIVE);
	slot = fwshmem_find(bucket, id, &prev);
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

	if (counter->data.window_end <= reclaim->now)
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
	FwApplyResult result;
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
 * counter's window had ended.
 */
FwApplyResult
fwshmem_apply(const FwCall *call, FwOutcome *outcome)
{
	FwOwners	owners;
	FwApplyResult result;

	Assert(call->n > 0 && call->ids[0].dbid == MyDatabaseId);
	fwshmem_my_owners(&owners);
	result = fwshmem_apply_owned(call, &owners, outcome);
	if (!fwdecide_no_room(result))
		return result;

	LWLockAcquire(fwshmem_admin_lock(), LW_EXCLUSIVE);
	result = fwshmem_apply_owned(call, &owners, outcome);

	/*
	 * Judged no later than the real clock, so that a session whose
	 * fixed_window.debug_now lies ahead cannot reclaim live counters.
	 */
	if (fwdecide_no_room(result) &&
		fwshmem_reclaim(Min(outcome->decisions[0].now, GetCurrentTimestamp())) > 0)
	{
		fwshmem_my_owners(&owners);
		result = fwshmem_apply_owned(call, &owners, outcome);
	}
	LWLockRelease(fwshmem_admin_lock());
	return result;
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

	if (fw_shared == NULL)
		return;
	fwshmem_walk(fwshmem_drop_visit, &dbid, FW_WALK_REMOVE);

	LWLockAcquire(fwshmem_admin_lock(), LW_EXCLUSIVE);
	database = fwshmem_share_entry(fw_shared->databases, FW_MAX_DATABASES, dbid, false);
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
 * The file holds a header (magic, format version, count), then one record
 * per counter -- its fixed fields, then its name and key -- and ends with a
 * CRC-32C of everything before it.  It is written by the postmaster when it
 * exits normally, to a temporary file renamed into place, and read when
 * shared memory is created.  A file that is truncated, corrupt or of
 * another format is ignored with a LOG message; counters whose window ended
 * meanwhile are not loaded when they answer as no counter would (without
 * rollover).
 */
#define FW_DUMP_FILE		"pg_stat/fixed_window.stat"
#define FW_DUMP_MAGIC		0x46570001	/* "FW" and a format number */
#define FW_DUMP_VERSION		1

typedef struct FwDumpHeader
{
	uint32		magic;
	uint32		version;
	uint32		count;
} FwDumpHeader;

typedef struct FwDumpRecord
{
	Oid			dbid;
	int32		name_len;
	int32		key_len;
	FwCounterData data;
} FwDumpRecord;

/*
 * Whether pg_control says the server was shut down cleanly.  Read by hand:
 * get_controlfile() would raise an ERROR, FATAL in the exiting postmaster.
 */
static bool
fwshmem_clean_shutdown(void)
{
	ControlFileData control;
	int			fd = OpenTransientFile(XLOG_CONTROL_FILE, O_RDONLY | PG_BINARY);
	bool		clean;

	if (fd < 0)
		return false;
	clean = read(fd, &control, sizeof(control)) == sizeof(control) &&
		(control.state == DB_SHUTDOWNED || control.state == DB_SHUTDOWNED_IN_RECOVERY);
	CloseTransientFile(fd);
	return clean;
}

typedef struct FwDump
{
	FILE	   *file;			/* NULL: only count */
	pg_crc32c	crc;
	uint32		count;
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
	FwDumpRecord record;
	char		text[FW_MAX_STORED_NAME + FW_MAX_KEY_BYTES];

	dump->count++;
	if (dump->file == NULL)
		return false;

	memset(&record, 0, sizeof(record));
	record.dbid = counter->dbid;
	record.name_len = counter->name_len;
	record.key_len = counter->key_len;
	record.data = counter->data;
	/* no palloc in the exiting postmaster: the text goes through the stack */
	fwshmem_counter_text(counter, FW_TEXT_LOAD, NULL, text);
	fwshmem_dump_write(dump, &record, sizeof(record));
	fwshmem_dump_write(dump, text, counter->name_len + counter->key_len);
	return false;
}

static void
fwshmem_dump(int code, Datum arg)
{
	FwDump		dump = {NULL, 0, 0, true};
	FwDumpHeader header = {FW_DUMP_MAGIC, FW_DUMP_VERSION, 0};

	/*
	 * Only at a clean shutdown: never after a crash, when shared memory may
	 * be corrupt, nor after an immediate shutdown, which is a crash too as
	 * far as the data is concerned (pg_control then still says the server
	 * was in production).
	 */
	if (code != 0 || fw_shared == NULL || !fw_save)
		return;
	if (!fwshmem_clean_shutdown())
		return;

	/* the postmaster alone is left: the walks need no locks */
	fwshmem_walk(fwshmem_dump_visit, &dump, FW_WALK_UNLOCKED);
	header.count = dump.count;

	dump.file = AllocateFile(FW_DUMP_FILE ".tmp", PG_BINARY_W);
	if (dump.file == NULL)
		goto error;
	INIT_CRC32C(dump.crc);
	fwshmem_dump_write(&dump, &header, sizeof(header));
	fwshmem_walk(fwshmem_dump_visit, &dump, FW_WALK_UNLOCKED);
	FIN_CRC32C(dump.crc);
	if (!dump.ok || fwrite(&dump.crc, sizeof(dump.crc), 1, dump.file) != 1)
		goto error;
	if (FreeFile(dump.file))
	{
		dump.file = NULL;
		goto error;
	}
	(void) durable_rename(FW_DUMP_FILE ".tmp", FW_DUMP_FILE, LOG);
	return;

error:
	ereport(LOG,
			(errcode_for_file_access(),
			errmsg("could not write file \"%s\": %m", FW_DUMP_FILE ".tmp")));
	if (dump.file)
		FreeFile(dump.file);
	unlink(FW_DUMP_FILE ".tmp");
}

/* Called while shared memory is created, under AddinShmemInitLock. */
static void
fwshmem_load(void)
{
	FILE	   *file;
	char	   *data = NULL;
	long		size;
	FwDumpHeader header;
	pg_crc32c	crc;
	pg_crc32c	stored;
	char	   *p;
	char	   *end;
	uint32		i;
	TimestampTz now = GetCurrentTimestamp();
	uint32		loaded = 0;

	/*
	 * A file is read once: after a crash that re-creates shared memory, the
	 * counters of the last clean shutdown must not come back.
	 */
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
	/* whatever happens next, this file is not read twice */
	unlink(FW_DUMP_FILE);
	if (fseek(file, 0, SEEK_END) != 0 || (size = ftell(file)) < 0 ||
		fseek(file, 0, SEEK_SET) != 0)
		goto read_error;
	if (size < (long) (sizeof(header) + sizeof(crc)))
		goto bad_file;
	data = palloc_extended(size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	if (data == NULL)
	{
		ereport(LOG,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				errmsg("out of memory reading file \"%s\"", FW_DUMP_FILE),
				errdetail("The file is %ld bytes; the counters start empty.", size)));
		goto done;
	}
	if (fread(data, 1, size, file) != (size_t) size)
		goto read_error;
	FreeFile(file);
	file = NULL;

	/* check everything before using anything */
	memcpy(&header, data, sizeof(header));
	memcpy(&stored, data + size - sizeof(crc), sizeof(crc));
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, size - sizeof(crc));
	FIN_CRC32C(crc);
	if (header.magic != FW_DUMP_MAGIC || header.version != FW_DUMP_VERSION ||
		!EQ_CRC32C(crc, stored))
		goto bad_file;

	p = data + sizeof(header);
	end = data + size - sizeof(crc);
	for (i = 0; i < header.count; i++)
	{
		FwDumpRecord record;
		FwIdentity	id;
		const char *name;
		int			name_len;
		const char *period_id;
		int			period_id_len;
		uint32		slot;
		FwOwners	owners;
		FwApplyResult result;
		bool		moved;

		if (end - p < (long) sizeof(record))
			goto bad_file;
		memcpy(&record, p, sizeof(record));
		p += sizeof(record);
		if (record.name_len < 0 || record.name_len > FW_MAX_STORED_NAME ||
			record.key_len < 0 || record.key_len > FW_MAX_KEY_BYTES ||
			end - p < record.name_len + record.key_len)
			goto bad_file;

		fwshmem_split_stored_name(p, record.name_len, &name, &name_len, &period_id, &period_id_len);
		fwidentity_init_db(&id, record.dbid, name, name_len, period_id, period_id_len,
						   p + record.name_len, record.key_len);
		p += record.name_len + record.key_len;

		/*
		 * A counter whose window ended answers as no counter would, unless
		 * it rolls tokens over: then it holds more than a new key would (and
		 * a denied call's retry time counts on them), until a reclaim needs
		 * its slot.
		 */
		if (record.data.window_end <= now && record.data.capacity <= record.data.rate)
			continue;
		/* the last caller's role stands for the one that created it */
		owners.dbid = record.dbid;
		owners.database = OidIsValid(owners.dbid) ?
			fwshmem_share_entry(fw_shared->databases, FW_MAX_DATABASES, owners.dbid, true) : FW_NO_ENTRY;
		owners.roleid = record.data.userid;
		owners.role = OidIsValid(owners.roleid) ?
			fwshmem_share_entry(fw_shared->roles, FW_MAX_ROLES, owners.roleid, true) : FW_NO_ENTRY;
		result = fwshmem_insert(id.hash & (fw_shared->nbuckets - 1), &id, &owners, &slot, &moved);
		if (result == FW_APPLY_FULL)
			break;				/* a smaller max_counters: keep what fits */
		if (result != FW_APPLY_OK)
			continue;			/* more than a share */
		fw_slots[slot].counter.data = record.data;
		fwshmem_lower_reclaim_hint(record.data.window_end);
		loaded++;
	}
	if (i == header.count && p != end)
		goto bad_file;
	pfree(data);
	ereport(LOG,
			(errmsg("fixed_window loaded %u of %u saved counters", loaded, header.count),
			errdetail("Counters whose windows ended, or beyond a database's or role's share, are not loaded.")));
	return;

read_error:
	ereport(LOG,
			(errcode_for_file_access(),
			errmsg("could not read file \"%s\": %m", FW_DUMP_FILE)));
	goto done;
bad_file:
	ereport(LOG,
			(errcode(ERRCODE_DATA_CORRUPTED),
			errmsg("ignoring file \"%s\"", FW_DUMP_FILE),
			errdetail("The file is truncated, corrupt or of another format; the counters start empty.")));
	fwshmem_clear();			/* forget whatever was loaded from it */
done:
	if (file)
		FreeFile(file);
	if (data)
		pfree(data);
}
