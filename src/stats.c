/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Per-limit statistics of calls answered from shared memory: calls,
 *	  allowed, denied, those that found no room for a new counter, the last
 *	  denial, and since when.
 *
 * A fixed-size hash table keyed by (database, limit name), in a dynamic
 * shared memory segment of its own (segment.c) that the first call to count
 * creates, holding at most FW_MAX_STATS names in all, of which one
 * database may hold fixed_window.database_share percent.  The calls of a
 * name that finds no room are counted in its database's overflow entry,
 * whose name is NULL, so that a flood of names in one database cannot stop
 * another database's limits from being counted.  There is room for one
 * overflow entry per database beyond the FW_MAX_STATS names, for up to
 * FW_MAX_DATABASES databases; a call that finds neither is not counted.
 * The table has twice as many places as entries, found by linear probing
 * from the key's hash, so that a search stops at an empty place soon.
 *
 * A backend counts its calls in memory of its own first (FwStatsPending) and
 * adds them to the shared entries when its transaction ends, committed or
 * not, a second after the first call it holds, when it counts a name
 * beyond FW_STATS_PENDING, before it reads fw_stats or resets them, and
 * before it exits: a call does not write the shared table, whose lock and
 * entries every backend would otherwise write at each call.  A backend
 * holds counts of its own database only.  Counts held when that database's
 * statistics are reset (fw_stats_reset) are dropped: FwStats counts resets
 * (resets, which a call reads to notice one), and each database's record
 * says when its statistics were last reset, by that count, so that a
 * backend knows whether its database was reset since it began to hold
 * them; another database's reset drops nothing.
 *
 * Databases are named by OID, and a database can be made with the OID of
 * one dropped while no session with the library saw it go.  So each
 * database's record also says which database of its OID made its entries
 * (fwidentity_database_marker): a session whose database is another one
 * removes them before it counts or reads any (fwstats_enter_database).  A
 * database has a record while it has entries, and from a session's first
 * count or read; a dropped database's record goes with its entries.
 *
 * Locking.  One LWLock: shared to find an entry and count into it (the
 * counts are atomics, so any number of backends count at once), exclusive
 * to add or remove entries.  Removal happens only under the exclusive lock,
 * so an entry found under the shared lock stays valid until it is released.
 *
 *	FwStats.lock			set before the segment is published, never changes
 *	FwStats.named, entries	written under the lock held exclusively, read
 *	the places' keys,		under it in either mode (resets also without
 *	databases[], resets		it, to notice a reset early)
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

#include "access/xact.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"

#include "atomic_time.h"
#include "segment.h"
#include "settings.h"
#include "stats.h"

#define FW_STATS_OVERFLOW	(-1)	/* name_len of a database's overflow entry */
#define FW_STATS_FREE		(-2)	/* name_len of an empty place */
#define FW_STATS_ENTRIES	(FW_MAX_STATS + FW_MAX_DATABASES)
#define FW_STATS_PLACES		4096	/* a power of two, twice the entries */

StaticAssertDecl(FW_STATS_PLACES >= 2 * FW_STATS_ENTRIES &&
				 (FW_STATS_PLACES & (FW_STATS_PLACES - 1)) == 0,
				 "the statistics need a power of two of places, twice their entries");

typedef struct FwStatsKey
{
	Oid			dbid;
	int32		name_len;		/* or FW_STATS_OVERFLOW, FW_STATS_FREE */
	char		name[FW_MAX_NAME_BYTES];	/* only name_len bytes count */
} FwStatsKey;

typedef struct FwStatsEntry
{
	FwStatsKey	key;
	pg_atomic_uint64 calls;
	pg_atomic_uint64 allowed;
	pg_atomic_uint64 denied;
	pg_atomic_uint64 shadow_denied; /* allowed, but a shadow window would deny */
	pg_atomic_uint64 no_room;	/* found no room for a new counter */
	pg_atomic_uint64 last_denied_at;	/* a TimestampTz; 0 for never */
	pg_atomic_uint64 since;		/* a TimestampTz */
	uint32		database_bound; /* overflow entry: the share the database
								 * held all of, or 0 if the table was full */
} FwStatsEntry;

/* A database with statistics, or a session's database. */
#define FW_STATS_DATABASES	(2 * FW_MAX_DATABASES)

typedef struct FwStatsDatabase
{
	Oid			dbid;			/* InvalidOid: the record is free */
	uint64		marker;			/* which database of the OID */
	uint64		reset_at;		/* FwStats.resets when its statistics were
								 * last reset, after counting that reset */
} FwStatsDatabase;

typedef struct FwStats
{
	LWLockPadded lock;
	union
	{
		pg_atomic_uint64 value; /* resets so far, every call reads it */
		char		pad[PG_CACHE_LINE_SIZE];	/* a cache line of its own */
	}			resets;
	uint32		named;			/* entries with a name, all databases */
	uint32		entries;		/* places in use */
	FwStatsDatabase databases[FW_STATS_DATABASES];
	FwStatsEntry places[FW_STATS_PLACES];
} FwStats;

static FwStats *fw_stats = NULL;

/*
 * Calls counted in this backend and not yet added to the shared entries,
 * by (database, name); a name beyond FW_STATS_PENDING ones adds them first.
 */
#define FW_STATS_PENDING	8

typedef struct FwStatsPending
{
	FwStatsKey	key;
	uint64		calls;
	uint64		allowed;
	uint64		denied;
	uint64		shadow_denied;
	uint64		no_room;
	TimestampTz last_denied_at; /* of the last denial counted here */
	TimestampTz first_at;		/* the first call's time: a new entry's since */
} FwStatsPending;

static FwStatsPending fw_pending[FW_STATS_PENDING];
static int	fw_npending = 0;
static int	fw_last_pending = 0;	/* where the last call was counted */
static uint64 fw_pending_resets;	/* FwStats.resets when the first was counted */
static TimestampTz fw_pending_since;	/* the time of the first */
static bool fw_pending_callbacks = false;

/* This session's database's record, once found or made (-1: none). */
static int	fw_my_record = -1;
static bool fw_entered = false;

/* How long a backend holds counts at most, while it makes calls. */
#define FW_STATS_HOLD_MS	1000

/* Keys hash and compare on their first name_len bytes of name only. */
static uint32
fwstats_key_hash(const FwStatsKey *k)
{
	int			len = Max(k->name_len, 0);

	return hash_combine(hash_bytes_uint32(k->dbid) ^ (uint32) k->name_len,
						hash_bytes((const unsigned char *) k->name, len));
}

static bool
fwstats_key_equal(const FwStatsKey *a, const FwStatsKey *b)
{
	return a->dbid == b->dbid && a->name_len == b->name_len &&
		memcmp(a->name, b->name, Max(a->name_len, 0)) == 0;
}

static void
fwstats_init_segment(FwSegment *segment, void *arg)
{
	FwStats    *stats = (FwStats *) ((char *) segment + FW_SEGMENT_HEADER_SIZE);
	int			i;

	LWLockInitialize(&stats->lock.lock, fwsegment_lock_tranche());
	stats->named = 0;
	stats->entries = 0;
	pg_atomic_init_u64(&stats->resets.value, 0);
	memset(stats->databases, 0, sizeof(stats->databases));
	for (i = 0; i < FW_STATS_PLACES; i++)
		stats->places[i].key.name_len = FW_STATS_FREE;
}

static Size
fwstats_size(void *arg)
{
	return FW_SEGMENT_HEADER_SIZE + sizeof(FwStats);
}

/*
 * Map the statistics' segment, creating it if create is true; returns
 * whether there is one.
 */
static bool
fwstats_attach(bool create)
{
	FwSegment  *segment;

	if (fw_stats != NULL)
		return true;
	if (!IsUnderPostmaster)
		return false;
	if (create)
		segment = fwsegment_map(FW_SEGMENT_STATS, fwstats_size, fwstats_init_segment, NULL);
	else
		segment = fwsegment_map(FW_SEGMENT_STATS, NULL, NULL, NULL);
	if (segment != NULL)
		fw_stats = (FwStats *) ((char *) segment + FW_SEGMENT_HEADER_SIZE);
	return fw_stats != NULL;
}

static void fwstats_flush(void);

/* Add what this backend counted when its transaction ends, and at exit. */
static void
fwstats_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE)
		fwstats_flush();
}

static void
fwstats_exit_callback(int code, Datum arg)
{
	fwstats_flush();
}

static FwStatsEntry *fwstats_search(const FwStatsKey *key, bool add);

/* The record of dbid, or -1; under the lock in either mode. */
static int
fwstats_record_of(Oid dbid)
{
	int			i;

	for (i = 0; i < FW_STATS_DATABASES; i++)
		if (fw_stats->databases[i].dbid == dbid)
			return i;
	return -1;
}

/* Whether dbid holds any entry; under the lock in either mode. */
static bool
fwstats_holds_entries(Oid dbid)
{
	int			i;

	for (i = 0; i < FW_STATS_PLACES; i++)
		if (fw_stats->places[i].key.name_len != FW_STATS_FREE && fw_stats->places[i].key.dbid == dbid)
			return true;
	return false;
}

/*
 * A new record for dbid: a free one, or one of a database that holds no
 * entry (a backend holding counts with it then finds it gone, and drops
 * them); -1 when every record's database holds entries.  Under the lock
 * held exclusively.
 */
static int
fwstats_record_make(Oid dbid, uint64 marker)
{
	int			record = -1;
	int			i;

	for (i = 0; i < FW_STATS_DATABASES && record < 0; i++)
		if (!OidIsValid(fw_stats->databases[i].dbid))
			record = i;
	for (i = 0; i < FW_STATS_DATABASES && record < 0; i++)
		if (!fwstats_holds_entries(fw_stats->databases[i].dbid))
			record = i;
	if (record >= 0)
	{
		fw_stats->databases[record].dbid = dbid;
		fw_stats->databases[record].marker = marker;
		fw_stats->databases[record].reset_at = 0;
	}
	return record;
}

/*
 * Remove every entry of a database; the entries that stay are placed
 * again, so that no search meets a hole before its key.  Under the lock
 * held exclusively: no backend holds an entry meanwhile.
 */
static void
fwstats_remove_entries(Oid dbid)
{
	FwStatsEntry *kept = palloc(sizeof(FwStatsEntry) * FW_STATS_ENTRIES);
	uint32		nkept = 0;
	uint32		i;

	for (i = 0; i < FW_STATS_PLACES; i++)
	{
		FwStatsEntry *entry = &fw_stats->places[i];

		if (entry->key.name_len == FW_STATS_FREE)
			continue;
		if (entry->key.dbid != dbid)
			memcpy(&kept[nkept++], entry, sizeof(FwStatsEntry));
		else if (entry->key.name_len != FW_STATS_OVERFLOW)
			fw_stats->named--;
		entry->key.name_len = FW_STATS_FREE;
	}
	fw_stats->entries = 0;
	for (i = 0; i < nkept; i++)
	{
		FwStatsEntry *entry = fwstats_search(&kept[i].key, true);

		Assert(entry != NULL && entry->key.name_len == FW_STATS_FREE);
		memcpy(entry, &kept[i], sizeof(FwStatsEntry));
		fw_stats->entries++;
	}
	pfree(kept);
}

/*
 * Once per session, before it counts or reads statistics: find, or make,
 * its database's record; if the entries of its OID were made by an earlier
 * database of that OID (see above), remove them first.
 */
static void
fwstats_enter_database(void)
{
	uint64		marker = fwidentity_database_marker();
	Oid			dbid = MyDatabaseId;
	bool		earlier = false;
	int			record;

	if (fw_entered || !OidIsValid(dbid) || fw_stats == NULL)
		return;
	LWLockAcquire(&fw_stats->lock.lock, LW_EXCLUSIVE);
	record = fwstats_record_of(dbid);
	if (record >= 0 && marker != 0 && fw_stats->databases[record].marker != 0 &&
		fw_stats->databases[record].marker != marker)
	{
		fwstats_remove_entries(dbid);
		fw_stats->databases[record].reset_at =
			pg_atomic_add_fetch_u64(&fw_stats->resets.value, 1);
		earlier = true;
	}
	if (record < 0)
		record = fwstats_record_make(dbid, marker);
	else
		fw_stats->databases[record].marker = marker;
	LWLockRelease(&fw_stats->lock.lock);
	fw_my_record = record;
	fw_entered = true;
	if (earlier)
		ereport(LOG,
				(errmsg("fixed_window forgot the statistics of an earlier database with OID %u", dbid),
				errdetail("Another database of this OID was dropped, or this one moved to another tablespace, while no session with the library saw it.")));
}

/* A database moved to another tablespace: see fwshmem_database_moved. */
void
fwstats_database_moved(Oid dbid, uint64 marker)
{
	int			record;

	if (!fwstats_attach(false))
		return;
	LWLockAcquire(&fw_stats->lock.lock, LW_EXCLUSIVE);
	record = fwstats_record_of(dbid);
	if (record >= 0)
		fw_stats->databases[record].marker = marker;
	LWLockRelease(&fw_stats->lock.lock);
}

/*
 * Whether the statistics of this session's database were reset after
 * since, a count of resets, or its record went: counts held since then are
 * dropped.  Under the lock in either mode.
 */
static bool
fwstats_reset_since(uint64 since)
{
	const FwStatsDatabase *record;

	if (pg_atomic_read_u64(&fw_stats->resets.value) == since)
		return false;
	if (fw_my_record < 0)
		return true;
	record = &fw_stats->databases[fw_my_record];
	return record->dbid != MyDatabaseId || record->reset_at > since;
}

/*
 * Map the statistics, creating them if need be: before a call spends, so
 * that it cannot fail after spending for want of a segment, nor when its
 * counts are added at the end of the transaction (fwstats_flush).
 */
void
fwstats_open(void)
{
	if (fwstats_attach(true))
		fwstats_enter_database();
	if (!fw_pending_callbacks)
	{
		RegisterXactCallback(fwstats_xact_callback, NULL);
		before_shmem_exit(fwstats_exit_callback, (Datum) 0);
		fw_pending_callbacks = true;
	}
}

/*
 * The place of key: the entry that holds it, or with add, the empty place
 * where it would go (NULL when none may be taken); under the lock, held
 * exclusively to add.
 */
static FwStatsEntry *
fwstats_search(const FwStatsKey *key, bool add)
{
	uint32		i = fwstats_key_hash(key) & (FW_STATS_PLACES - 1);

	for (;;)
	{
		FwStatsEntry *entry = &fw_stats->places[i];

		if (entry->key.name_len == FW_STATS_FREE)
			return (add && fw_stats->entries < FW_STATS_ENTRIES) ? entry : NULL;
		if (fwstats_key_equal(&entry->key, key))
			return entry;
		i = (i + 1) & (FW_STATS_PLACES - 1);
	}
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
	uint32		n = 0;
	int			i;

	for (i = 0; i < FW_STATS_PLACES; i++)
		if (fw_stats->places[i].key.dbid == dbid && fw_stats->places[i].key.name_len >= 0)
			n++;
	return n;
}

static FwStatsEntry *
fwstats_add(const FwStatsKey *key, TimestampTz since)
{
	FwStatsEntry *entry = fwstats_search(key, true);

	if (entry != NULL && entry->key.name_len == FW_STATS_FREE)
	{
		entry->key = *key;
		fw_stats->entries++;
		pg_atomic_init_u64(&entry->calls, 0);
		pg_atomic_init_u64(&entry->allowed, 0);
		pg_atomic_init_u64(&entry->denied, 0);
		pg_atomic_init_u64(&entry->shadow_denied, 0);
		pg_atomic_init_u64(&entry->no_room, 0);
		pg_atomic_init_u64(&entry->last_denied_at, 0);
		pg_atomic_init_u64(&entry->since, (uint64) since);
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
fwstats_enter(const FwStatsKey *key, TimestampTz since)
{
	FwStatsEntry *entry = fwstats_search(key, false);
	FwStatsKey	overflow;
	uint32		database_limit = fwsettings_share_of(FW_MAX_STATS, fw_database_share);
	bool		database_bound;

	if (entry != NULL)
		return entry;
	database_bound = fwstats_named_in(key->dbid) >= database_limit;
	if (fw_stats->named < FW_MAX_STATS && !database_bound &&
		(entry = fwstats_add(key, since)) != NULL)
		return entry;
	fwstats_key_init(&overflow, key->dbid, NULL, FW_STATS_OVERFLOW);
	entry = fwstats_add(&overflow, since);
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
	entry = fwstats_search(&key, false);
	if (entry != NULL &&
		(entry->database_bound == database_limit || fw_stats->named >= FW_MAX_STATS))
		return entry;
	return NULL;
}

/* Whether pending holds the calls of id's database and name. */
static inline bool
fwstats_pending_is(const FwStatsPending *pending, const FwIdentity *id)
{
	return pending->key.dbid == id->dbid && pending->key.name_len == id->name_len &&
		memcmp(pending->key.name, id->name, id->name_len) == 0;
}

/*
 * Where this backend holds the counts of id's database and name, from a
 * call at now: their place among the pending ones, added if need be.
 * fwstats_open was called before, and the statistics are mapped.
 */
static FwStatsPending *
fwstats_pending_of(const FwIdentity *id, TimestampTz now)
{
	FwStatsPending *pending = NULL;
	int			i;

	if (fw_npending > 0 &&
		(pg_atomic_read_u64(&fw_stats->resets.value) != fw_pending_resets ||
		 now < fw_pending_since ||
		 now - fw_pending_since >= FW_STATS_HOLD_MS * INT64CONST(1000)))
		fwstats_flush();		/* a reset, a clock moved back, or a second */

	/* the name of the last call first, as calls of one name come in runs */
	if (fw_last_pending < fw_npending && fwstats_pending_is(&fw_pending[fw_last_pending], id))
		pending = &fw_pending[fw_last_pending];
	for (i = 0; pending == NULL && i < fw_npending; i++)
		if (fwstats_pending_is(&fw_pending[i], id))
			pending = &fw_pending[i];
	if (pending == NULL)
	{
		if (fw_npending == FW_STATS_PENDING)
			fwstats_flush();
		if (fw_npending == 0)
		{
			fw_pending_resets = pg_atomic_read_u64(&fw_stats->resets.value);
			fw_pending_since = now;
		}
		pending = &fw_pending[fw_npending++];
		memset(pending, 0, sizeof(FwStatsPending));
		fwstats_key_init(&pending->key, id->dbid, id->name, id->name_len);
		pending->first_at = now;
	}
	fw_last_pending = pending - fw_pending;
	return pending;
}

/*
 * Count one fw_limit call answered from shared memory, under the name of
 * its limit or policy (id's name up to a zero byte), at decision->now: in
 * this backend until fwstats_flush.  no_room: the call found no room for a
 * new counter, and was answered without one (fixed_window.fail_open).
 * fwstats_open was called before.
 */
void
fwstats_count(const FwIdentity *id, const FwDecision *decision, const FwVerdict *verdict,
			  bool no_room)
{
	FwStatsPending *pending;

	if (fw_stats == NULL)
		return;					/* no statistics here (single-user mode) */
	pending = fwstats_pending_of(id, decision->now);
	pending->calls++;
	if (verdict->shadow_denied)
		pending->shadow_denied++;
	if (no_room)
		pending->no_room++;
	if (verdict->ok)
		pending->allowed++;
	else
	{
		pending->denied++;
		pending->last_denied_at = decision->now;
	}
}

/*
 * Count one fw_limit call that found no room for a new counter and is
 * about to fail for it: as no_room only, since it gets no answer.  Its
 * transaction is aborted, which adds the count (fwstats_flush).
 */
void
fwstats_count_refused(const FwIdentity *id, TimestampTz now)
{
	if (fw_stats == NULL)
		return;
	fwstats_pending_of(id, now)->no_room++;
}

/*
 * Add the calls counted in this backend to the shared entries, unless its
 * database was reset meanwhile.  Raises no error, since it runs when
 * a transaction has ended: the segment was mapped before the calls were
 * counted (fwstats_open), and nothing is allocated.
 */
static void
fwstats_flush(void)
{
	int			i;

	if (fw_npending == 0 || fw_stats == NULL)
	{
		fw_npending = 0;
		return;
	}
	for (i = 0; i < fw_npending; i++)
	{
		FwStatsPending *pending = &fw_pending[i];
		FwStatsEntry *entry;

		LWLockAcquire(&fw_stats->lock.lock, LW_SHARED);
		entry = fwstats_search(&pending->key, false);
		if (entry == NULL)
			entry = fwstats_overflow(pending->key.dbid);
		if (entry == NULL)
		{
			/* a name seen for the first time: add it */
			LWLockRelease(&fw_stats->lock.lock);
			LWLockAcquire(&fw_stats->lock.lock, LW_EXCLUSIVE);
			if (!fwstats_reset_since(fw_pending_resets))
				entry = fwstats_enter(&pending->key, pending->first_at);
		}
		else if (fwstats_reset_since(fw_pending_resets))
			entry = NULL;
		/* NULL beyond FW_MAX_DATABASES databases with full statistics too */
		if (entry != NULL)
		{
			pg_atomic_fetch_add_u64(&entry->calls, pending->calls);
			if (pending->shadow_denied > 0)
				pg_atomic_fetch_add_u64(&entry->shadow_denied, pending->shadow_denied);
			if (pending->no_room > 0)
				pg_atomic_fetch_add_u64(&entry->no_room, pending->no_room);
			if (pending->allowed > 0)
				pg_atomic_fetch_add_u64(&entry->allowed, pending->allowed);
			if (pending->denied > 0)
			{
				pg_atomic_fetch_add_u64(&entry->denied, pending->denied);
				fwatomic_time_raise(&entry->last_denied_at, pending->last_denied_at);
			}
			fwatomic_time_lower(&entry->since, pending->first_at);
		}
		LWLockRelease(&fw_stats->lock.lock);
	}
	fw_npending = 0;
}

/* Visit the statistics of a database, under the shared lock. */
void
fwstats_foreach(Oid dbid, FwStatsVisitor visitor, void *arg)
{
	int			i;

	fwstats_flush();
	if (!fwstats_attach(false))
		return;
	if (dbid == MyDatabaseId)
		fwstats_enter_database();
	LWLockAcquire(&fw_stats->lock.lock, LW_SHARED);
	for (i = 0; i < FW_STATS_PLACES; i++)
	{
		FwStatsEntry *entry = &fw_stats->places[i];
		FwStatsView view;

		if (entry->key.name_len == FW_STATS_FREE || entry->key.dbid != dbid)
			continue;
		view.name = (entry->key.name_len == FW_STATS_OVERFLOW) ? NULL : entry->key.name;
		view.name_len = Max(entry->key.name_len, 0);
		view.calls = pg_atomic_read_u64(&entry->calls);
		view.allowed = pg_atomic_read_u64(&entry->allowed);
		view.denied = pg_atomic_read_u64(&entry->denied);
		view.shadow_denied = pg_atomic_read_u64(&entry->shadow_denied);
		view.no_room = pg_atomic_read_u64(&entry->no_room);
		view.last_denied_at = (TimestampTz) pg_atomic_read_u64(&entry->last_denied_at);
		view.since = (TimestampTz) pg_atomic_read_u64(&entry->since);
		visitor(&view, arg);
	}
	LWLockRelease(&fw_stats->lock.lock);
}

/*
 * The place of dbid among dbids[0 .. *n), added at the end when it is not
 * there and *n < max; -1 when it is not there and there is no room.
 */
static int
fwstats_database_index(Oid *dbids, int *n, int max, Oid dbid)
{
	int			d;

	for (d = 0; d < *n && dbids[d] != dbid; d++)
		;
	if (d < *n)
		return d;
	if (*n == max)
		return -1;
	dbids[(*n)++] = dbid;
	return d;
}

/*
 * How many names hold entries of their own, in all (of FW_MAX_STATS) and by
 * database (of its share), and the bytes of the statistics' segment, into
 * usage; false when there is no segment yet.
 */
bool
fwstats_usage(FwStatsUsage *usage)
{
	int			i;

	if (!fwstats_attach(false))
		return false;
	usage->database_limit = fwsettings_share_of(FW_MAX_STATS, fw_database_share);
	usage->bytes = FW_SEGMENT_HEADER_SIZE + sizeof(FwStats);
	usage->ndatabases = 0;
	memset(usage->database_named, 0, sizeof(usage->database_named));
	LWLockAcquire(&fw_stats->lock.lock, LW_SHARED);
	usage->named = fw_stats->named;
	for (i = 0; i < FW_STATS_PLACES; i++)
	{
		const FwStatsKey *key = &fw_stats->places[i].key;
		int			d;

		if (key->name_len < 0)
			continue;			/* free, or a database's overflow entry */
		d = fwstats_database_index(usage->dbids, &usage->ndatabases, FW_MAX_DATABASES,
								   key->dbid);
		if (d >= 0)				/* always: a name's database has a share */
			usage->database_named[d]++;
	}
	LWLockRelease(&fw_stats->lock.lock);
	return true;
}

/*
 * The databases that hold statistics or a record, each once, at most max
 * of them, into dbids; returns how many.
 */
int
fwstats_databases(Oid *dbids, int max)
{
	int			n = 0;
	int			i;

	if (!fwstats_attach(false))
		return 0;
	LWLockAcquire(&fw_stats->lock.lock, LW_SHARED);
	for (i = 0; i < FW_STATS_PLACES && n < max; i++)
	{
		if (fw_stats->places[i].key.name_len == FW_STATS_FREE)
			continue;
		(void) fwstats_database_index(dbids, &n, max, fw_stats->places[i].key.dbid);
	}
	for (i = 0; i < FW_STATS_DATABASES && n < max; i++)
		if (OidIsValid(fw_stats->databases[i].dbid))
			(void) fwstats_database_index(dbids, &n, max, fw_stats->databases[i].dbid);
	LWLockRelease(&fw_stats->lock.lock);
	return n;
}

/*
 * Remove every entry of a database: its statistics start afresh
 * (fw_stats_reset), and counts held for it are dropped; or the database
 * is gone (dropped), and its record goes too.
 */
void
fwstats_forget_database(Oid dbid, bool dropped)
{
	int			record;

	/* what this backend counted comes before a reset */
	fwstats_flush();
	if (!fwstats_attach(false))
		return;
	if (dbid == MyDatabaseId)
		fwstats_enter_database();
	LWLockAcquire(&fw_stats->lock.lock, LW_EXCLUSIVE);
	fwstats_remove_entries(dbid);
	record = fwstats_record_of(dbid);
	if (record >= 0 && dropped)
		memset(&fw_stats->databases[record], 0, sizeof(FwStatsDatabase));
	else if (record >= 0)
		fw_stats->databases[record].reset_at =
			pg_atomic_add_fetch_u64(&fw_stats->resets.value, 1);
	LWLockRelease(&fw_stats->lock.lock);
}
