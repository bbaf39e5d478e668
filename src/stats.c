/*-------------------------------------------------------------------------
 *
 * stats.c
 *	  Per-limit statistics of calls answered from shared memory: calls,
 *	  allowed, denied, the last denial, and since when.
 *
 * A fixed array of FW_MAX_STATS entries, one per (database, limit name),
 * found by open addressing on the hash of the name.  Entries are only ever
 * added, under the stats lock, and published with a write barrier before
 * "used" is set; finding an entry and counting into it take no lock: the
 * counters are atomics.  fw_stats_reset() zeroes counters rather than
 * removing entries, so nothing can disappear under a reader.  When the
 * array has no room near a name's hash, that name's calls are counted only
 * in "dropped".
 *
 * The statistics live in shared memory only: a restart or crash clears
 * them.  Calls answered from the table backend are counted in its rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "fixed_window.h"

#define FW_MAX_STATS		1024	/* a power of two */
#define FW_STATS_TRANCHE	"fixed_window stats"
#define FW_STATS_MAX_PROBE	32		/* an entry lies this close to its hash */

typedef struct FwStatsEntry
{
	pg_atomic_uint32 used;		/* set last, once the key below is filled */
	Oid			dbid;
	uint32		name_hash;
	int			name_len;
	char		name[FW_MAX_NAME_BYTES];
	pg_atomic_uint64 calls;
	pg_atomic_uint64 allowed;
	pg_atomic_uint64 denied;
	pg_atomic_uint64 last_denied_at;	/* a TimestampTz; 0 for never */
	pg_atomic_uint64 since;		/* a TimestampTz */
} FwStatsEntry;

typedef struct FwStats
{
	LWLock	   *lock;			/* taken to add an entry */
	pg_atomic_uint64 dropped;	/* calls of names that found no entry */
	FwStatsEntry entries[FW_MAX_STATS];
} FwStats;

static FwStats *fw_stats = NULL;

PG_FUNCTION_INFO_V1(fw_shmem_stats);
PG_FUNCTION_INFO_V1(fw_shmem_stats_reset);

void
fw_stats_request(void)
{
	RequestAddinShmemSpace(sizeof(FwStats));
	RequestNamedLWLockTranche(FW_STATS_TRANCHE, 1);
}

/* Called under AddinShmemInitLock. */
void
fw_stats_startup(void)
{
	bool		found;
	int			i;

	fw_stats = ShmemInitStruct("fixed_window stats", sizeof(FwStats), &found);
	if (found)
		return;
	fw_stats->lock = &(GetNamedLWLockTranche(FW_STATS_TRANCHE))->lock;
	pg_atomic_init_u64(&fw_stats->dropped, 0);
	for (i = 0; i < FW_MAX_STATS; i++)
	{
		FwStatsEntry *entry = &fw_stats->entries[i];

		pg_atomic_init_u32(&entry->used, 0);
		pg_atomic_init_u64(&entry->calls, 0);
		pg_atomic_init_u64(&entry->allowed, 0);
		pg_atomic_init_u64(&entry->denied, 0);
		pg_atomic_init_u64(&entry->last_denied_at, 0);
		pg_atomic_init_u64(&entry->since, 0);
	}
}

static bool
fw_stats_matches(FwStatsEntry *entry, Oid dbid, uint32 hash, const char *name, int len)
{
	return entry->dbid == dbid && entry->name_hash == hash &&
		entry->name_len == len && memcmp(entry->name, name, len) == 0;
}

/* The entry of (database, name), adding it if asked; NULL if none. */
static FwStatsEntry *
fw_stats_entry(Oid dbid, const char *name, int len, bool add)
{
	uint32		hash = hash_bytes((const unsigned char *) name, len) ^ dbid;
	int			probe;
	bool		room = false;

	for (probe = 0; probe < FW_STATS_MAX_PROBE; probe++)
	{
		FwStatsEntry *entry = &fw_stats->entries[(hash + probe) & (FW_MAX_STATS - 1)];

		if (pg_atomic_read_u32(&entry->used) == 0)
		{
			room = true;
			break;
		}
		pg_read_barrier();
		if (fw_stats_matches(entry, dbid, hash, name, len))
			return entry;
	}
	/* entries are never removed: with no room seen, there will be none */
	if (!add || !room)
		return NULL;

	/* not there: add it under the lock, unless someone else just did */
	LWLockAcquire(fw_stats->lock, LW_EXCLUSIVE);
	for (probe = 0; probe < FW_STATS_MAX_PROBE; probe++)
	{
		FwStatsEntry *entry = &fw_stats->entries[(hash + probe) & (FW_MAX_STATS - 1)];

		if (pg_atomic_read_u32(&entry->used) == 0)
		{
			entry->dbid = dbid;
			entry->name_hash = hash;
			entry->name_len = len;
			memcpy(entry->name, name, len);
			pg_atomic_write_u64(&entry->calls, 0);
			pg_atomic_write_u64(&entry->allowed, 0);
			pg_atomic_write_u64(&entry->denied, 0);
			pg_atomic_write_u64(&entry->last_denied_at, 0);
			pg_atomic_write_u64(&entry->since, (uint64) fw_clock_now());
			pg_write_barrier();
			pg_atomic_write_u32(&entry->used, 1);
			LWLockRelease(fw_stats->lock);
			return entry;
		}
		if (fw_stats_matches(entry, dbid, hash, name, len))
		{
			LWLockRelease(fw_stats->lock);
			return entry;
		}
	}
	LWLockRelease(fw_stats->lock);
	return NULL;
}

/* Count one fw_limit call answered from shared memory. */
void
fw_stats_count(const FwIdentity *id, const FwDecision *decision)
{
	FwStatsEntry *entry;

	if (fw_stats == NULL)
		return;
	entry = fw_stats_entry(id->dbid, id->name, id->name_len, true);
	if (entry == NULL)
	{
		pg_atomic_fetch_add_u64(&fw_stats->dropped, 1);
		return;
	}
	pg_atomic_fetch_add_u64(&entry->calls, 1);
	if (decision->ok)
		pg_atomic_fetch_add_u64(&entry->allowed, 1);
	else
	{
		pg_atomic_fetch_add_u64(&entry->denied, 1);
		pg_atomic_write_u64(&entry->last_denied_at, (uint64) decision->now);
	}
}

/*
 * fw_shmem_stats() returns setof (name, calls, allowed, denied,
 * last_denied_at, since)
 *
 * The statistics of this database's limits in shared memory.
 */
Datum
fw_shmem_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	fw_materialized_srf(fcinfo);
	if (fw_stats == NULL)
		return (Datum) 0;

	for (i = 0; i < FW_MAX_STATS; i++)
	{
		FwStatsEntry *entry = &fw_stats->entries[i];
		Datum		values[6];
		bool		nulls[6] = {false};
		uint64		last_denied;

		if (pg_atomic_read_u32(&entry->used) == 0)
			continue;
		pg_read_barrier();
		if (entry->dbid != MyDatabaseId)
			continue;
		values[0] = PointerGetDatum(cstring_to_text_with_len(entry->name, entry->name_len));
		values[1] = Int64GetDatum((int64) pg_atomic_read_u64(&entry->calls));
		values[2] = Int64GetDatum((int64) pg_atomic_read_u64(&entry->allowed));
		values[3] = Int64GetDatum((int64) pg_atomic_read_u64(&entry->denied));
		last_denied = pg_atomic_read_u64(&entry->last_denied_at);
		values[4] = TimestampTzGetDatum((TimestampTz) last_denied);
		nulls[4] = (last_denied == 0);
		values[5] = TimestampTzGetDatum((TimestampTz) pg_atomic_read_u64(&entry->since));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * fw_shmem_stats_reset() returns void
 *
 * Zero the statistics of this database's limits in shared memory.
 */
Datum
fw_shmem_stats_reset(PG_FUNCTION_ARGS)
{
	TimestampTz now = fw_clock_now();
	int			i;

	if (fw_stats == NULL)
		PG_RETURN_VOID();
	for (i = 0; i < FW_MAX_STATS; i++)
	{
		FwStatsEntry *entry = &fw_stats->entries[i];

		if (pg_atomic_read_u32(&entry->used) == 0)
			continue;
		pg_read_barrier();
		if (entry->dbid != MyDatabaseId)
			continue;
		pg_atomic_write_u64(&entry->calls, 0);
		pg_atomic_write_u64(&entry->allowed, 0);
		pg_atomic_write_u64(&entry->denied, 0);
		pg_atomic_write_u64(&entry->last_denied_at, 0);
		pg_atomic_write_u64(&entry->since, (uint64) now);
	}
	PG_RETURN_VOID();
}
