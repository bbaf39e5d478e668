/*-------------------------------------------------------------------------
 *
 * shmem_store.c
 *	  Counters in shared memory: a fixed-size, partitioned hash table.
 *
 * Layout.  The table is created at postmaster start, sized by
 * fixed_window.max_counters, and never grows.  It is one allocation of
 * three parts:
 *
 *	- FwShared, a small header with the free list;
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
 * Locking.  The buckets are divided among FW_NUM_PARTITIONS LWLocks: the
 * bucket of a hash is its low bits, and the partition is the low bits of
 * the bucket, so a chain and every slot reachable from it belong to one
 * partition.  A call takes its partition's lock exclusively to update a
 * counter (fw_limit) or shared to read it (fw_check), reads the clock while
 * holding it, and releases it before returning; no call holds two
 * partition locks.  Calls on different keys thus contend only when their
 * keys share a partition, and calls on one key are totally ordered by the
 * lock, each judged on the state the previous one left and at a time no
 * earlier than it.
 *
 * The free list is shared by all partitions and protected by a spinlock,
 * which is taken only to move one slot on or off the list, or to count them
 * (while a partition lock is held, never the other way round), and held for
 * a few instructions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "access/xlog_internal.h"
#include "catalog/pg_control.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"

#include "fixed_window.h"

#define FW_NUM_PARTITIONS	128 /* a power of two */
#define FW_SLOT_SIZE		120
#define FW_NIL				PG_UINT32_MAX
#define FW_LOCK_TRANCHE		"fixed_window"

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
	FwCounterData data;
	char		text[FLEXIBLE_ARRAY_MEMBER];	/* name, then key */
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

typedef struct FwShared
{
	LWLockPadded *locks;		/* FW_NUM_PARTITIONS partition locks */
	uint32		nbuckets;		/* a power of two, >= FW_NUM_PARTITIONS */
	uint32		nslots;
	slock_t		mutex;			/* protects the two fields below */
	uint32		free_head;
	uint32		nfree;
	int64		reclaim_after;	/* no counter is reclaimable before this */
} FwShared;

static FwShared *fw_shared = NULL;
static uint32 *fw_buckets = NULL;
static FwSlot *fw_slots = NULL;

#if PG_VERSION_NUM >= 150000
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static uint32
fw_bucket_count(void)
{
	uint32		n = FW_NUM_PARTITIONS;

	while (n < (uint32) fw_max_counters)
		n <<= 1;
	return n;
}

/* The header, then the buckets, then the slots, in one allocation. */
static Size
fw_buckets_offset(void)
{
	return MAXALIGN(sizeof(FwShared));
}

static Size
fw_slots_offset(void)
{
	return add_size(fw_buckets_offset(),
					MAXALIGN(mul_size(fw_bucket_count(), sizeof(uint32))));
}

static Size
fw_shmem_size(void)
{
	return add_size(fw_slots_offset(), mul_size(fw_max_counters, sizeof(FwSlot)));
}

static void
fw_shmem_request(void)
{
#if PG_VERSION_NUM >= 150000
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
#endif
	RequestAddinShmemSpace(fw_shmem_size());
	RequestNamedLWLockTranche(FW_LOCK_TRANCHE, FW_NUM_PARTITIONS);
	fw_stats_request();
}

/* Empty the table: every bucket empty, every slot on the free list. */
static void
fw_shmem_clear(void)
{
	uint32		i;

	for (i = 0; i < fw_shared->nbuckets; i++)
		fw_buckets[i] = FW_NIL;
	for (i = 0; i < fw_shared->nslots; i++)
		fw_slots[i].overflow.next = (i + 1 < fw_shared->nslots) ? i + 1 : FW_NIL;
	fw_shared->free_head = 0;
	fw_shared->nfree = fw_shared->nslots;
	fw_shared->reclaim_after = PG_INT64_MIN;
}

static void
fw_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);

	fw_shared = ShmemInitStruct("fixed_window", fw_shmem_size(), &found);
	fw_buckets = (uint32 *) ((char *) fw_shared + fw_buckets_offset());
	fw_slots = (FwSlot *) ((char *) fw_shared + fw_slots_offset());
	fw_stats_startup();

	if (!found)
	{
		fw_shared->locks = GetNamedLWLockTranche(FW_LOCK_TRANCHE);
		fw_shared->nbuckets = fw_bucket_count();
		fw_shared->nslots = (uint32) fw_max_counters;
		SpinLockInit(&fw_shared->mutex);

		fw_shmem_clear();

		/* the counters of the last clean shutdown, if saved */
		fw_shmem_load();
	}

	LWLockRelease(AddinShmemInitLock);

	/* the postmaster saves the counters when it shuts down */
	if (!IsUnderPostmaster)
		on_shmem_exit(fw_shmem_dump, (Datum) 0);
}

/* Called from _PG_init while shared_preload_libraries is processed. */
void
fw_shmem_install_hooks(void)
{
#if PG_VERSION_NUM >= 150000
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = fw_shmem_request;
#else
	fw_shmem_request();
#endif
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = fw_shmem_startup;
}

bool
fw_shmem_available(void)
{
	return fw_shared != NULL;
}

/*
 * With many keys a counter's bucket is rarely in cache: callers start
 * loading it as soon as the hash is known, while they check the rest of the
 * arguments and take the lock.
 */
void
fw_shmem_prefetch(uint32 hash)
{
	if (fw_shared != NULL)
		FW_PREFETCH(&fw_buckets[hash & (fw_shared->nbuckets - 1)]);
}

/* Slots a counter with "len" bytes of name and key needs. */
static uint32
fw_slots_needed(int len)
{
	if (len <= (int) FW_INLINE_TEXT)
		return 1;
	return 1 + (len - FW_INLINE_TEXT + FW_OVERFLOW_TEXT - 1) / FW_OVERFLOW_TEXT;
}

/*
 * Take n slots off the free list, linked to each other through
 * overflow.next; returns the first, or FW_NIL (taking none) if fewer than n
 * are free.  The spinlock is held only to pop one slot at a time.
 */
static uint32
fw_alloc_slots(uint32 n)
{
	uint32		first = FW_NIL;
	uint32		i;

	SpinLockAcquire(&fw_shared->mutex);
	if (fw_shared->nfree < n)
	{
		SpinLockRelease(&fw_shared->mutex);
		return FW_NIL;
	}
	fw_shared->nfree -= n;		/* reserve them all at once */
	SpinLockRelease(&fw_shared->mutex);

	for (i = 0; i < n; i++)
	{
		uint32		slot;

		SpinLockAcquire(&fw_shared->mutex);
		slot = fw_shared->free_head;
		fw_shared->free_head = fw_slots[slot].overflow.next;
		SpinLockRelease(&fw_shared->mutex);

		/* build the chain backwards, so that "first" heads it */
		fw_slots[slot].overflow.next = first;
		first = slot;
	}
	return first;
}

/*
 * Copy "len" bytes of the identity's text (name then key), from "offset" of
 * that text, to dst; or, when compare is true, compare them with dst and
 * return whether they are equal.
 */
static bool
fw_text_piece(const FwIdentity *id, int offset, char *dst, int len, bool compare)
{
	while (len > 0)
	{
		const char *src;
		int			avail;

		if (offset < id->name_len)
		{
			src = id->name + offset;
			avail = id->name_len - offset;
		}
		else
		{
			src = id->key + (offset - id->name_len);
			avail = id->key_len - (offset - id->name_len);
		}
		avail = Min(avail, len);
		if (!compare)
			memcpy(dst, src, avail);
		else if (memcmp(dst, src, avail) != 0)
			return false;
		dst += avail;
		offset += avail;
		len -= avail;
	}
	return true;
}

/* Copy (compare false) or compare the whole text of a counter. */
static bool
fw_counter_text(FwCounter *counter, const FwIdentity *id, bool compare)
{
	int			total = id->name_len + id->key_len;
	int			len = Min(total, (int) FW_INLINE_TEXT);
	int			offset;
	uint32		slot;

	if (!fw_text_piece(id, 0, counter->text, len, compare))
		return false;
	offset = len;
	for (slot = counter->overflow; offset < total; slot = fw_slots[slot].overflow.next)
	{
		len = Min(total - offset, (int) FW_OVERFLOW_TEXT);
		if (!fw_text_piece(id, offset, fw_slots[slot].overflow.text, len, compare))
			return false;
		offset += len;
	}
	return true;
}

static uint32
fw_find(uint32 bucket, const FwIdentity *id)
{
	uint32		slot;

	for (slot = fw_buckets[bucket]; slot != FW_NIL; slot = fw_slots[slot].counter.next)
	{
		FwCounter  *counter = &fw_slots[slot].counter;

		if (counter->hash == id->hash &&
			counter->dbid == id->dbid &&
			counter->name_len == id->name_len &&
			counter->key_len == id->key_len &&
			fw_counter_text(counter, id, true))
			return slot;
	}
	return FW_NIL;
}

/* Create a counter for id at the head of its bucket; FW_NIL if full. */
static uint32
fw_insert(uint32 bucket, const FwIdentity *id)
{
	uint32		slot = fw_alloc_slots(fw_slots_needed(id->name_len + id->key_len));
	FwCounter  *counter;

	if (slot == FW_NIL)
		return FW_NIL;
	counter = &fw_slots[slot].counter;
	counter->overflow = fw_slots[slot].overflow.next;
	counter->hash = id->hash;
	counter->dbid = id->dbid;
	counter->name_len = (uint16) id->name_len;
	counter->key_len = (uint16) id->key_len;
	fw_counter_text(counter, id, false);
	counter->next = fw_buckets[bucket];
	fw_buckets[bucket] = slot;
	return slot;
}

/*
 * Apply one call to the counter of id: decide it on the state found (none
 * for a new key) at the time read under the partition lock and, when
 * consume is true, store the state after it, creating the counter if
 * needed.  With consume false nothing is written or created.
 */
static FwApplyResult fw_shmem_apply_once(const FwIdentity *id, const FwLimit *limit,
										 bool consume, FwDecision *decision);

FwApplyResult
fw_shmem_apply(const FwIdentity *id, const FwLimit *limit, bool consume,
			   FwDecision *decision)
{
	FwApplyResult result = fw_shmem_apply_once(id, limit, consume, decision);

	/*
	 * Full: reclaim dead counters, with no partition lock held, and retry.
	 * Judged no later than the real clock, so that a session whose
	 * fixed_window.debug_now lies ahead cannot reclaim live counters.
	 */
	if (result == FW_APPLY_FULL &&
		fw_shmem_reclaim(Min(decision->now, GetCurrentTimestamp())) > 0)
		result = fw_shmem_apply_once(id, limit, consume, decision);
	return result;
}

static FwApplyResult
fw_shmem_apply_once(const FwIdentity *id, const FwLimit *limit, bool consume,
					FwDecision *decision)
{
	uint32		bucket = id->hash & (fw_shared->nbuckets - 1);
	LWLock	   *lock = &fw_shared->locks[bucket & (FW_NUM_PARTITIONS - 1)].lock;
	FwApplyResult result = FW_APPLY_OK;
	FwCounter  *counter = NULL;
	FwState		state;
	uint32		slot;

	LWLockAcquire(lock, consume ? LW_EXCLUSIVE : LW_SHARED);

	slot = fw_find(bucket, id);
	if (slot != FW_NIL)
	{
		counter = &fw_slots[slot].counter;
		state.window_start = counter->data.window_start;
		state.window_end = counter->data.window_end;
		state.tokens = counter->data.tokens;
	}

	if (fw_decide(limit, counter ? &state : NULL, fw_clock_now(), decision) != FW_STATUS_OK)
		result = FW_APPLY_OUT_OF_RANGE;
	else if (consume)
	{
		if (counter == NULL)
		{
			slot = fw_insert(bucket, id);
			if (slot != FW_NIL)
				counter = &fw_slots[slot].counter;
			else
				result = FW_APPLY_FULL;
		}
		if (counter != NULL)
		{
			counter->data.window_start = decision->state.window_start;
			counter->data.window_end = decision->state.window_end;
			counter->data.tokens = decision->state.tokens;
			counter->data.rate = limit->rate;
			counter->data.capacity = limit->capacity;
			counter->data.userid = GetUserId();

			/*
			 * This counter may become reclaimable before the others: lower
			 * the hint (read without the spinlock first, to keep it off the
			 * common path).
			 */
			if (limit->capacity == limit->rate &&
				decision->state.window_end < fw_shared->reclaim_after)
			{
				SpinLockAcquire(&fw_shared->mutex);
				fw_shared->reclaim_after = Min(fw_shared->reclaim_after,
											   decision->state.window_end);
				SpinLockRelease(&fw_shared->mutex);
			}
		}
	}

	LWLockRelease(lock);
	return result;
}

/* Copy a counter's name and key, back to back, into a palloc'd buffer. */
static char *
fw_counter_copy_text(FwCounter *counter)
{
	int			total = counter->name_len + counter->key_len;
	char	   *text = palloc(total + 1);
	int			len = Min(total, (int) FW_INLINE_TEXT);
	int			offset;
	uint32		slot;

	memcpy(text, counter->text, len);
	offset = len;
	for (slot = counter->overflow; offset < total; slot = fw_slots[slot].overflow.next)
	{
		len = Min(total - offset, (int) FW_OVERFLOW_TEXT);
		memcpy(text + offset, fw_slots[slot].overflow.text, len);
		offset += len;
	}
	text[total] = '\0';
	return text;
}

/* Unlink a counter from its bucket and give its slots back. */
static void
fw_remove(uint32 bucket, uint32 slot, uint32 prev)
{
	uint32		next = fw_slots[slot].counter.next;
	uint32		last;
	uint32		n = 1;

	if (prev == FW_NIL)
		fw_buckets[bucket] = next;
	else
		fw_slots[prev].counter.next = next;

	/* chain the counter's own slot to its overflow slots, then free them */
	fw_slots[slot].overflow.next = fw_slots[slot].counter.overflow;
	for (last = slot; fw_slots[last].overflow.next != FW_NIL; last = fw_slots[last].overflow.next)
		n++;

	SpinLockAcquire(&fw_shared->mutex);
	fw_slots[last].overflow.next = fw_shared->free_head;
	fw_shared->free_head = slot;
	fw_shared->nfree += n;
	SpinLockRelease(&fw_shared->mutex);
}

/*
 * Walk every counter, one partition at a time in index order, holding each
 * partition's lock (exclusive when the walk may remove counters) while its
 * counters are visited.  The visitor returns true to remove a counter.
 */
typedef bool (*FwSlotVisitor) (FwCounter *counter, void *arg);

static void
fw_walk(FwSlotVisitor visitor, void *arg, bool may_remove)
{
	int			partition;

	for (partition = 0; partition < FW_NUM_PARTITIONS; partition++)
	{
		LWLock	   *lock = &fw_shared->locks[partition].lock;
		uint32		bucket;

		LWLockAcquire(lock, may_remove ? LW_EXCLUSIVE : LW_SHARED);
		for (bucket = partition; bucket < fw_shared->nbuckets; bucket += FW_NUM_PARTITIONS)
		{
			uint32		prev = FW_NIL;
			uint32		slot = fw_buckets[bucket];

			while (slot != FW_NIL)
			{
				uint32		next = fw_slots[slot].counter.next;

				if (visitor(&fw_slots[slot].counter, arg) && may_remove)
					fw_remove(bucket, slot, prev);
				else
					prev = slot;
				slot = next;
			}
		}
		LWLockRelease(lock);
	}
}

typedef struct FwForeach
{
	FwCounterVisitor visitor;
	void	   *arg;
} FwForeach;

static bool
fw_foreach_visit(FwCounter *counter, void *arg)
{
	FwForeach  *foreach = (FwForeach *) arg;
	FwCounterView view;
	char	   *text;
	bool		remove;

	if (counter->dbid != MyDatabaseId)
		return false;
	text = fw_counter_copy_text(counter);
	view.name = text;
	view.name_len = counter->name_len;
	view.key = text + counter->name_len;
	view.key_len = counter->key_len;
	view.data = counter->data;
	remove = foreach->visitor(&view, foreach->arg);
	pfree(text);
	return remove;
}

/*
 * Visit every counter of the current database; the visitor gets its name
 * and key, and returns true to remove it (honoured when may_remove).
 */
void
fw_shmem_foreach(FwCounterVisitor visitor, void *arg, bool may_remove)
{
	FwForeach	foreach = {visitor, arg};

	if (fw_shared != NULL)
		fw_walk(fw_foreach_visit, &foreach, may_remove);
}

/* Remove the counter of id, if there is one; returns whether there was. */
bool
fw_shmem_remove(const FwIdentity *id)
{
	uint32		bucket;
	LWLock	   *lock;
	uint32		prev = FW_NIL;
	uint32		slot;
	bool		found = false;

	if (fw_shared == NULL)
		return false;
	bucket = id->hash & (fw_shared->nbuckets - 1);
	lock = &fw_shared->locks[bucket & (FW_NUM_PARTITIONS - 1)].lock;

	LWLockAcquire(lock, LW_EXCLUSIVE);
	for (slot = fw_buckets[bucket]; slot != FW_NIL; prev = slot, slot = fw_slots[slot].counter.next)
	{
		FwCounter  *counter = &fw_slots[slot].counter;

		if (counter->hash == id->hash && counter->dbid == id->dbid &&
			counter->name_len == id->name_len && counter->key_len == id->key_len &&
			fw_counter_text(counter, id, true))
		{
			fw_remove(bucket, slot, prev);
			found = true;
			break;
		}
	}
	LWLockRelease(lock);
	return found;
}

/*
 * Give back the slots of counters that answer exactly as no counter would:
 * without rollover (capacity = rate), every counter whose window has ended,
 * since it would refill to rate tokens like a new key.  A live counter is
 * never removed: forgetting it would reset its quota and over-admit.
 * Counters with rollover hold more than a new key from their next window
 * on and are kept too (removing them would only under-admit, but would
 * change answers).
 *
 * Called when the table is full, without any partition lock held; takes
 * each partition's lock in index order.  Remembers the earliest time a
 * counter it kept can become reclaimable, so that a full table of live
 * counters is not rescanned on every call.  Returns the slots freed.
 */
typedef struct FwReclaim
{
	TimestampTz now;
	int64		next;			/* earliest window end among kept counters */
	uint32		freed;
} FwReclaim;

static bool
fw_reclaim_visit(FwCounter *counter, void *arg)
{
	FwReclaim  *reclaim = (FwReclaim *) arg;

	if (counter->data.capacity != counter->data.rate)
		return false;
	if (counter->data.window_end <= reclaim->now)
	{
		reclaim->freed++;
		return true;
	}
	reclaim->next = Min(reclaim->next, counter->data.window_end);
	return false;
}

uint32
fw_shmem_reclaim(TimestampTz now)
{
	FwReclaim	reclaim = {now, PG_INT64_MAX, 0};

	SpinLockAcquire(&fw_shared->mutex);
	if (now < fw_shared->reclaim_after)
	{
		SpinLockRelease(&fw_shared->mutex);
		return 0;
	}
	/* counters created during the walk lower this again */
	fw_shared->reclaim_after = PG_INT64_MAX;
	SpinLockRelease(&fw_shared->mutex);

	fw_walk(fw_reclaim_visit, &reclaim, true);

	SpinLockAcquire(&fw_shared->mutex);
	fw_shared->reclaim_after = Min(fw_shared->reclaim_after, reclaim.next);
	SpinLockRelease(&fw_shared->mutex);
	return reclaim.freed;
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
 * meanwhile and that answer as no counter would are not loaded.
 */
#define FW_DUMP_FILE		"pg_stat/fixed_window.stat"
#define FW_DUMP_MAGIC		0x46570001	/* "FW" and a format number */
#define FW_DUMP_VERSION		1

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
fw_clean_shutdown(void)
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

static bool
fw_dump_write(FILE *file, pg_crc32c *crc, const void *data, size_t len)
{
	COMP_CRC32C(*crc, data, len);
	return fwrite(data, 1, len, file) == len;
}

void
fw_shmem_dump(int code, Datum arg)
{
	FILE	   *file;
	pg_crc32c	crc;
	uint32		header[3] = {FW_DUMP_MAGIC, FW_DUMP_VERSION, 0};
	uint32		bucket;
	bool		ok = true;

	/*
	 * Only at a clean shutdown: never after a crash, when shared memory may
	 * be corrupt, nor after an immediate shutdown, which is a crash too as
	 * far as the data is concerned (pg_control then still says the server
	 * was in production).
	 */
	if (code != 0 || fw_shared == NULL || !fw_save)
		return;
	if (!fw_clean_shutdown())
		return;

	/* the postmaster alone is left: no locks are needed to read the table */
	for (bucket = 0; bucket < fw_shared->nbuckets; bucket++)
	{
		uint32		slot;

		for (slot = fw_buckets[bucket]; slot != FW_NIL; slot = fw_slots[slot].counter.next)
			header[2]++;
	}

	file = AllocateFile(FW_DUMP_FILE ".tmp", PG_BINARY_W);
	if (file == NULL)
		goto error;

	INIT_CRC32C(crc);
	ok = fw_dump_write(file, &crc, header, sizeof(header));
	for (bucket = 0; ok && bucket < fw_shared->nbuckets; bucket++)
	{
		uint32		slot;

		for (slot = fw_buckets[bucket]; ok && slot != FW_NIL; slot = fw_slots[slot].counter.next)
		{
			FwCounter  *counter = &fw_slots[slot].counter;
			FwDumpRecord record;
			char	   *text = fw_counter_copy_text(counter);

			memset(&record, 0, sizeof(record));
			record.dbid = counter->dbid;
			record.name_len = counter->name_len;
			record.key_len = counter->key_len;
			record.data = counter->data;
			ok = fw_dump_write(file, &crc, &record, sizeof(record)) &&
				fw_dump_write(file, &crc, text, counter->name_len + counter->key_len);
			pfree(text);
		}
	}
	FIN_CRC32C(crc);
	if (!ok || fwrite(&crc, sizeof(crc), 1, file) != 1)
		goto error;
	if (FreeFile(file))
	{
		file = NULL;
		goto error;
	}
	(void) durable_rename(FW_DUMP_FILE ".tmp", FW_DUMP_FILE, LOG);
	return;

error:
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("could not write file \"%s\": %m", FW_DUMP_FILE ".tmp")));
	if (file)
		FreeFile(file);
	unlink(FW_DUMP_FILE ".tmp");
}

/* Called while shared memory is created, under AddinShmemInitLock. */
void
fw_shmem_load(void)
{
	FILE	   *file;
	char	   *data = NULL;
	long		size;
	uint32		header[3];
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
	if (data == NULL || fread(data, 1, size, file) != (size_t) size)
		goto read_error;
	FreeFile(file);
	file = NULL;

	/* check everything before using anything */
	memcpy(header, data, sizeof(header));
	memcpy(&stored, data + size - sizeof(crc), sizeof(crc));
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, size - sizeof(crc));
	FIN_CRC32C(crc);
	if (header[0] != FW_DUMP_MAGIC || header[1] != FW_DUMP_VERSION || !EQ_CRC32C(crc, stored))
		goto bad_file;

	p = data + sizeof(header);
	end = data + size - sizeof(crc);
	for (i = 0; i < header[2]; i++)
	{
		FwDumpRecord record;
		FwIdentity	id;
		uint32		slot;

		if (end - p < (long) sizeof(record))
			goto bad_file;
		memcpy(&record, p, sizeof(record));
		p += sizeof(record);
		if (record.name_len < 0 || record.name_len > FW_MAX_NAME_BYTES ||
			record.key_len < 0 || record.key_len > FW_MAX_KEY_BYTES ||
			end - p < record.name_len + record.key_len)
			goto bad_file;

		fw_identity_init_db(&id, record.dbid, p, record.name_len,
							p + record.name_len, record.key_len);
		p += record.name_len + record.key_len;

		/* a counter that answers as no counter would is not worth a slot */
		if (record.data.capacity == record.data.rate && record.data.window_end <= now)
			continue;
		slot = fw_insert(id.hash & (fw_shared->nbuckets - 1), &id);
		if (slot == FW_NIL)
			break;				/* a smaller max_counters: keep what fits */
		fw_slots[slot].counter.data = record.data;
		loaded++;
	}
	if (i == header[2] && p != end)
		goto bad_file;
	pfree(data);
	ereport(LOG,
			(errmsg("fixed_window loaded %u of %u saved counters", loaded, header[2])));
	return;

read_error:
	ereport(LOG,
			(errcode_for_file_access(),
			 errmsg("could not read file \"%s\": %m", FW_DUMP_FILE)));
	goto done;
bad_file:
	ereport(LOG,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("ignoring file \"%s\": it is truncated, corrupt or of another format", FW_DUMP_FILE)));
	fw_shmem_clear();			/* forget whatever was loaded from it */
done:
	if (file)
		FreeFile(file);
	if (data)
		pfree(data);
}
