/*-------------------------------------------------------------------------
 *
 * shmem_table.c
 *	  The hash table of shared memory's counters: its layout in the
 *	  segment, the free slots' bits, a counter's slots and text, and finding,
 *	  inserting and walking its counters (see shmem_internal.h).
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "storage/lwlock.h"
#include "storage/spin.h"

#include "atomic_time.h"
#include "compat.h"
#include "segment.h"
#include "settings.h"
#include "shmem_internal.h"

/* The table this backend maps: its segment, and the segment's parts. */
FwSegment  *fw_segment = NULL;
FwShared   *fw_shared = NULL;
uint32	   *fw_buckets = NULL;
uint64	   *fw_free_words = NULL;
uint64	   *fw_free_summary = NULL;
FwSlot	   *fw_slots = NULL;

/* This backend's entries of databases[] and roles[], once found. */
int			fw_my_database = FW_NO_ENTRY;
int			fw_my_role = FW_NO_ENTRY;

LWLock *
fwshmem_partition_lock(uint32 bucket)
{
	return &fw_shared->locks[bucket & (FW_NUM_PARTITIONS - 1)].lock;
}

LWLock *
fwshmem_admin_lock(void)
{
	return &fw_shared->locks[FW_ADMIN_LOCK].lock;
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

Size
fwshmem_size(uint32 nslots)
{
	return add_size(fwshmem_slots_offset(nslots), mul_size(nslots, sizeof(FwSlot)));
}

/* Use the table of segment from now on (or none). */
void
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
bool
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
void
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

/* Slots a counter with "len" bytes of name and key needs. */
uint32
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
 * The counts that decided that n slots had no room for a counter of these
 * owners, for a true error message.  The caller holds the mutex.
 */
static void
fwshmem_usage_fill(FwShmemUsage *usage, uint32 n, const FwOwners *owners)
{
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

/*
 * Whether n slots are free for a counter of these owners, within the shares
 * of its database and its role, and, when take is true, take them off the
 * free slots, linked to each other through overflow.next: *first is set to
 * the first.  The mutex is held only to reserve them and then to take one
 * slot at a time.  *moved is set when an owner's entry was taken for
 * another database or role since it was found: find them again and retry.
 * When there is no room, *usage (if not NULL) is set to the counts that
 * decided it, for the error.
 */
FwApplyResult
fwshmem_alloc_slots(uint32 n, const FwOwners *owners, bool take, uint32 *first, bool *moved,
					FwShmemUsage *usage)
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
		if (usage != NULL)
			fwshmem_usage_fill(usage, n, owners);
	}
	else if (take && !*moved)
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
void
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
bool
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
void
fwshmem_unlink(uint32 bucket, uint32 slot, uint32 prev)
{
	if (prev == FW_NIL)
		fw_buckets[bucket] = fw_slots[slot].counter.next;
	else
		fw_slots[prev].counter.next = fw_slots[slot].counter.next;
	fwshmem_free_slots(slot);
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
uint32
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
 * owners; *slot is set to it.  *usage as for fwshmem_alloc_slots.
 */
FwApplyResult
fwshmem_insert(uint32 bucket, const FwIdentity *id, const FwOwners *owners, uint32 *slot,
			   bool *moved, FwShmemUsage *usage)
{
	FwApplyResult result;
	FwCounter  *counter;

	result = fwshmem_alloc_slots(fwshmem_slots_needed(fwshmem_stored_name_len(id) + id->key_len),
								 owners, true, slot, moved, usage);
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
void
fwshmem_lower_reclaim_hint(int64 window_end)
{
	fwatomic_time_lower(&fw_shared->reclaim_after, window_end);
}

/*
 * Rebuild a counter from its stored text (its stored name then its key, as
 * the dump file and fwshmem_counter_text hold it) in the table in use, in
 * the shares of owners, with its state data.  Returns its slot, or FW_NIL
 * when there is no room.
 */
uint32
fwshmem_insert_stored(Oid dbid, const char *text, int name_len, int key_len,
					  const FwOwners *owners, const FwCounterData *data)
{
	FwIdentity	id;
	const char *name;
	int			stored_name_len;
	const char *period_id;
	int			period_id_len;
	uint32		slot;
	bool		moved;

	fwshmem_split_stored_name(text, name_len, &name, &stored_name_len, &period_id,
							  &period_id_len);
	fwidentity_init_db(&id, dbid, name, stored_name_len, period_id, period_id_len,
					   text + name_len, key_len);
	if (fwshmem_insert(id.hash & (fw_shared->nbuckets - 1), &id, owners, &slot, &moved,
					   NULL) != FW_APPLY_OK || moved)
		return FW_NIL;
	fw_slots[slot].counter.data = *data;
	fwshmem_lower_reclaim_hint(data->window_end);
	return slot;
}

void
fwshmem_walk_partition(int partition, FwSlotVisitor visitor, void *arg, FwWalkMode mode)
{
	uint32		bucket;

	/* a table replaced meanwhile: go on with this partition of the new one */
	if (mode != FW_WALK_UNLOCKED &&
		!fwshmem_lock(partition, mode == FW_WALK_REMOVE ? LW_EXCLUSIVE : LW_SHARED))
		return;
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
		LWLockRelease(&fw_shared->locks[partition].lock);
}

void
fwshmem_walk(FwSlotVisitor visitor, void *arg, FwWalkMode mode)
{
	int			partition;

	for (partition = 0; partition < FW_NUM_PARTITIONS; partition++)
		fwshmem_walk_partition(partition, visitor, arg, mode);
}

/*
 * Take lock (a partition's index, or FW_ADMIN_LOCK) of the current table in
 * mode: a backend that gets the lock of a table replaced meanwhile lets it
 * go, maps the new table and takes the lock of the same index there (a
 * counter's partition is its hash's low bits whatever the table's size).
 * Returns false, holding nothing, when there is no table.
 */
bool
fwshmem_lock(int lock, LWLockMode mode)
{
	for (;;)
	{
		if (!fwshmem_attach(false))
			return false;
		LWLockAcquire(&fw_shared->locks[lock].lock, mode);
		if (!fwshmem_retired())
			return true;
		LWLockRelease(&fw_shared->locks[lock].lock);
	}
}

/*
 * Take the admin lock and every partition lock of the current table, in
 * that order (see fwshmem_lock); false, holding none, when there is no
 * table.  Holding the admin lock, the table cannot be replaced.
 */
bool
fwshmem_lock_all(void)
{
	int			i;

	if (!fwshmem_lock(FW_ADMIN_LOCK, LW_EXCLUSIVE))
		return false;
	for (i = 0; i < FW_NUM_PARTITIONS; i++)
		LWLockAcquire(&fw_shared->locks[i].lock, LW_EXCLUSIVE);
	return true;
}

/* Release what fwshmem_lock_all took. */
void
fwshmem_unlock_all(void)
{
	int			i;

	for (i = FW_NUM_PARTITIONS - 1; i >= 0; i--)
		LWLockRelease(&fw_shared->locks[i].lock);
	LWLockRelease(fwshmem_admin_lock());
}
