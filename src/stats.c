/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Per-limit statistics of calls answered from shared memory: calls,
 *	  allowed, denied, the last denial, and since when.
 *
 * A fixed-size shared hash table keyed by (database, limit name), holding
 * at most FW_MAX_STATS names in all, of which one database may hold
 * fixed_window.database_share percent.  The calls of a name that finds no
 * room are counted in its database's overflow entry, whose name is NULL,
 * so that a flood of names in one database cannot stop another database's
 * limits from being counted.  There is room for one overflow entry per
 * database beyond the FW_MAX_STATS names, for up to FW_MAX_DATABASES
 * databases; a call that finds neither is not counted.
 *
 * Locking.  One LWLock: shared to find an entry and count into it (the
 * counts are atomics, so any number of backends count at once), exclusive
 * to add or remove entries.  Removal happens only under the exclusive lock,
 * so an entry found under the shared lock stays valid until it is released.
 *
 *	FwStats.lock			set at startup, never changes
 *	FwStats.named			written under the lock held exclusively, read
 *							under it in either mode
 *	the hash table's entries: keys, database_bound
 *							the lock: shared to read, exclusive to change
 *	an entry's counts		atomics, under the lock in either mode
 *
 * The statistics live in shared memory only: a restart or crash clears
 * them.  Calls answered from the table backend are counted in its rows.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"

#include "settings.h"
#include "stats.h"

#define FW_STATS_TRANCHE	"fixed_window stats"
#define FW_STATS_OVERFLOW	(-1)	/* name_len of a database's overflow entry */
#define FW_STATS_ENTRIES	(FW_MAX_STATS + FW_MAX_DATABASES)

typedef struct FwStatsKey
{
	Oid			dbid;
	int32		name_len;		/* or FW_STATS_OVERFLOW */
	char		name[FW_MAX_NAME_BYTES];	/* only name_len bytes count */
} FwStatsKey;

typedef struct FwStatsEntry
{
	FwStatsKey	key;			/* must be first */
	pg_atomic_uint64 calls;
	pg_atomic_uint64 allowed;
	pg_atomic_uint64 denied;
	pg_atomic_uint64 shadow_denied; /* allowed, but a shadow window would deny */
	pg_atomic_uint64 last_denied_at;	/* a TimestampTz; 0 for never */
	pg_atomic_uint64 since;		/* a TimestampTz */
	uint32		database_bound; /* overflow entry: the share the database
								 * held all of, or 0 if the table was full */
} FwStatsEntry;

typedef struct FwStats
{
	LWLock	   *lock;
	uint32		named;			/* entries with a name, all databases */
} FwStats;

static FwStats *fw_stats = NULL;
static HTAB *fw_stats_hash = NULL;

/* Keys hash and compare on their first name_len bytes of name only. */
static uint32
fwstats_key_hash(const void *key, Size keysize)
{
	const FwStatsKey *k = (const FwStatsKey *) key;
	int			len = Max(k->name_len, 0);

	return hash_combine(hash_bytes_uint32(k->dbid) ^ (uint32) k->name_len,
						hash_bytes((const unsigned char *) k->name, len));
}

static int
fwstats_key_compare(const void *key1, const void *key2, Size keysize)
{
	const FwStatsKey *a = (const FwStatsKey *) key1;
	const FwStatsKey *b = (const FwStatsKey *) key2;

	if (a->dbid != b->dbid || a->name_len != b->name_len)
		return 1;
	return memcmp(a->name, b->name, Max(a->name_len, 0));
}

void
fwstats_request(void)
{
	RequestAddinShmemSpace(add_size(MAXALIGN(sizeof(FwStats)),
									hash_estimate_size(FW_STATS_ENTRIES, sizeof(FwStatsEntry))));
	RequestNamedLWLockTranche(FW_STATS_TRANCHE, 1);
}

/* Called under AddinShmemInitLock. */
void
fwstats_startup(void)
{
	bool		found;
	HASHCTL		info;

	fw_stats = ShmemInitStruct("fixed_window stats", sizeof(FwStats), &found);
	if (!found)
	{
		fw_stats->lock = &(GetNamedLWLockTranche(FW_STATS_TRANCHE))->lock;
		fw_stats->named = 0;
	}
	info.keysize = sizeof(FwStatsKey);
	info.entrysize = sizeof(FwStatsEntry);
	info.hash = fwstats_key_hash;
	info.match = fwstats_key_compare;
	fw_stats_hash = ShmemInitHash("fixed_window stats hash",
								  FW_STATS_ENTRIES, FW_STATS_ENTRIES, &info,
								  HASH_ELEM | HASH_FUNCTION | HASH_COMPARE | HASH_FIXED_SIZE);
}

static void
fwstats_key_init(FwStatsKey *key, Oid dbid, const char *name, int len)
{
	key->dbid = dbid;
	key->name_len = len;
	if (len > 0)
		memcpy(key->name, name, len);
}

/* How many names the database holds; under the exclusive lock. */
static uint32
fwstats_named_in(Oid dbid)
{
	HASH_SEQ_STATUS status;
	FwStatsEntry *entry;
	uint32		n = 0;

	hash_seq_init(&status, fw_stats_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (entry->key.dbid == dbid && entry->key.name_len != FW_STATS_OVERFLOW)
			n++;
	return n;
}

static FwStatsEntry *
fwstats_add(const FwStatsKey *key)
{
	bool		found;
	FwStatsEntry *entry = hash_search(fw_stats_hash, key, HASH_ENTER_NULL, &found);

	if (entry != NULL && !found)
	{
		pg_atomic_init_u64(&entry->calls, 0);
		pg_atomic_init_u64(&entry->allowed, 0);
		pg_atomic_init_u64(&entry->denied, 0);
		pg_atomic_init_u64(&entry->shadow_denied, 0);
		pg_atomic_init_u64(&entry->last_denied_at, 0);
		pg_atomic_init_u64(&entry->since, (uint64) fwsettings_clock_now());
		entry->database_bound = 0;
		if (key->name_len != FW_STATS_OVERFLOW)
			fw_stats->named++;
	}
	return entry;
}

/*
 * Find or add the entry of a name, under the exclusive lock; when the name
 * may not have one, its database's overflow entry.
 */
static FwStatsEntry *
fwstats_enter(const FwStatsKey *key)
{
	FwStatsEntry *entry = hash_search(fw_stats_hash, key, HASH_FIND, NULL);
	FwStatsKey	overflow;
	uint32		database_limit = fwsettings_share_of(FW_MAX_STATS, fw_database_share);
	bool		database_bound;

	if (entry != NULL)
		return entry;
	database_bound = fwstats_named_in(key->dbid) >= database_limit;
	if (fw_stats->named < FW_MAX_STATS && !database_bound &&
		(entry = fwstats_add(key)) != NULL)
		return entry;
	fwstats_key_init(&overflow, key->dbid, NULL, FW_STATS_OVERFLOW);
	entry = fwstats_add(&overflow);
	if (entry != NULL)
		entry->database_bound = database_bound ? database_limit : 0;
	return entry;
}

/*
 * The overflow entry of a database, when it is sure to be where the calls
 * of a name without an entry go: the database holds its share (which only
 * its own reset frees, removing the overflow entry too), or the table is
 * full.  Under the shared lock, so that such calls need no exclusive lock.
 */
static FwStatsEntry *
fwstats_overflow(Oid dbid)
{
	FwStatsKey	key;
	FwStatsEntry *entry;
	uint32		database_limit = fwsettings_share_of(FW_MAX_STATS, fw_database_share);

	fwstats_key_init(&key, dbid, NULL, FW_STATS_OVERFLOW);
	entry = hash_search(fw_stats_hash, &key, HASH_FIND, NULL);
	if (entry != NULL &&
		(entry->database_bound == database_limit || fw_stats->named >= FW_MAX_STATS))
		return entry;
	return NULL;
}

/*
 * Count one fw_limit call answered from shared memory, under the name of
 * its limit or policy (id's name up to a zero byte), at decision->now.
 */
void
fwstats_count(const FwIdentity *id, const FwDecision *decision, const FwVerdict *verdict)
{
	FwStatsKey	key;
	FwStatsEntry *entry;

	if (fw_stats == NULL)
		return;
	fwstats_key_init(&key, id->dbid, id->name, id->name_len);

	LWLockAcquire(fw_stats->lock, LW_SHARED);
	entry = hash_search(fw_stats_hash, &key, HASH_FIND, NULL);
	if (entry == NULL)
		entry = fwstats_overflow(id->dbid);
	if (entry == NULL)
	{
		/* a name seen for the first time: add it */
		LWLockRelease(fw_stats->lock);
		LWLockAcquire(fw_stats->lock, LW_EXCLUSIVE);
		entry = fwstats_enter(&key);
	}
	/* NULL only beyond FW_MAX_DATABASES databases with full statistics */
	if (entry != NULL)
	{
		pg_atomic_fetch_add_u64(&entry->calls, 1);
		if (verdict->shadow_denied)
			pg_atomic_fetch_add_u64(&entry->shadow_denied, 1);
		if (verdict->ok)
			pg_atomic_fetch_add_u64(&entry->allowed, 1);
		else
		{
			pg_atomic_fetch_add_u64(&entry->denied, 1);
			pg_atomic_write_u64(&entry->last_denied_at, (uint64) decision->now);
		}
	}
	LWLockRelease(fw_stats->lock);
}

/* Visit the statistics of a database, under the shared lock. */
void
fwstats_foreach(Oid dbid, FwStatsVisitor visitor, void *arg)
{
	HASH_SEQ_STATUS status;
	FwStatsEntry *entry;

	if (fw_stats == NULL)
		return;
	LWLockAcquire(fw_stats->lock, LW_SHARED);
	hash_seq_init(&status, fw_stats_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		FwStatsView view;

		if (entry->key.dbid != dbid)
			continue;
		view.name = (entry->key.name_len == FW_STATS_OVERFLOW) ? NULL : entry->key.name;
		view.name_len = Max(entry->key.name_len, 0);
		view.calls = pg_atomic_read_u64(&entry->calls);
		view.allowed = pg_atomic_read_u64(&entry->allowed);
		view.denied = pg_atomic_read_u64(&entry->denied);
		view.shadow_denied = pg_atomic_read_u64(&entry->shadow_denied);
		view.last_denied_at = (TimestampTz) pg_atomic_read_u64(&entry->last_denied_at);
		view.since = (TimestampTz) pg_atomic_read_u64(&entry->since);
		visitor(&view, arg);
	}
	LWLockRelease(fw_stats->lock);
}

/*
 * Remove every entry of a database: its statistics start afresh
 * (fw_stats_reset), or the database is gone.
 */
void
fwstats_forget_database(Oid dbid)
{
	HASH_SEQ_STATUS status;
	FwStatsEntry *entry;

	if (fw_stats == NULL)
		return;
	LWLockAcquire(fw_stats->lock, LW_EXCLUSIVE);
	hash_seq_init(&status, fw_stats_hash);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (entry->key.dbid != dbid)
			continue;
		if (entry->key.name_len != FW_STATS_OVERFLOW)
			fw_stats->named--;
		hash_search(fw_stats_hash, &entry->key, HASH_REMOVE, NULL);
	}
	LWLockRelease(fw_stats->lock);
}
