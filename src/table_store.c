/*-------------------------------------------------------------------------
 *
 * table_store.c
 *	  Counters in an unlogged table: works without preloading, and is
 *	  transactional.
 *
 * The table fw_counter, in the extension's schema, holds one row per
 * (name, key) of the current database with the state of its current
 * window.  The functions reach it directly through the heap and its primary
 * key index, by OID, not through SQL: no planning per call, no privilege
 * on the table needed by the caller (ordinary roles are granted nothing on
 * it), and no search_path involved.
 *
 * Locking.  A call that spends locks its key's row as SELECT ... FOR NO
 * KEY UPDATE would, then reads the clock, decides and updates the row.
 * The lock is held until the transaction ends, so two transactions on one
 * key serialize: the second waits for the first to commit or abort and is
 * judged on what it left; a rollback takes back what the transaction
 * spent.  A key with no row is created under an advisory lock on the
 * 64-bit hash of (name, key) -- an ordinary heavyweight lock, shown in
 * pg_locks with objsubid FW_LOCKTAG_FIELD4, held only until the row is
 * inserted -- so that two transactions never both create it.  A policy's
 * call locks the rows of its windows (one per period_id) in the order of
 * the primary key, after an advisory lock on the hash of (policy, key),
 * objsubid FW_LOCKTAG_KEY, held until the transaction ends (see
 * fwtable_lock_policy_key).  Different keys never wait for each other (unless
 * their 64-bit hashes collide, which only adds a short wait).
 * fw_check takes no lock and writes nothing.
 *
 * Statistics.  A call is counted in the row of its first window (calls,
 * allowed, denied, ...), and fw_counter's trigger adds the counts of deleted
 * rows to fw_stat, one row per name.  Since 1.6 the rows of fw_stat are
 * also the names whose statistics are kept apart, at most
 * FW_TABLE_MAX_STATS in a database, first counted first served
 * (fwtable_name_stats); the calls of other names are counted together, so
 * that making names cannot make the statistics, nor the metrics read from
 * them, grow without bound.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "catalog.h"
#include "compat.h"
#include "settings.h"
#include "subxact.h"
#include "table_store.h"

#define FW_TABLE			"fw_counter"
#define FW_TABLE_PKEY		"fw_counter_pkey"
#define FW_STATS_TABLE		"fw_stat"
#define FW_STATS_TABLE_PKEY	"fw_stat_pkey"
#define FW_LOCK_ATTEMPTS	10		/* a row that keeps changing: give up */
#define FW_OPEN_ATTEMPTS	3		/* the table found anew after a drop or a reindex */

/*
 * The advisory locks of fixed_window, told apart from pg_advisory_lock's
 * (objsubid 1 and 2) by their objsubid in pg_locks: 18007 to 18010, the
 * table's here, and 18009 (FW_LOCKTAG_POLICY, a change of a policy's
 * definition) in define.c.
 */
#define FW_LOCKTAG_FIELD4	18007	/* a counter row being created */
#define FW_LOCKTAG_KEY		18008	/* a policy's call on a key */
#define FW_LOCKTAG_STATS	18010	/* a name given statistics of its own */

/* The columns of fw_counter, in order. */
enum
{
	COL_NAME,
	COL_KEY,
	COL_WINDOW_START,
	COL_WINDOW_END,
	COL_TOKENS,
	COL_RATE,
	COL_CAPACITY,
	COL_FRESH_FROM,
	COL_FRESH_UNTIL,
	COL_USERID,
	COL_CALLS,
	COL_ALLOWED,
	COL_DENIED,
	COL_LAST_DENIED_AT,
	COL_SINCE,
	FW_TABLE_NATTS_1_0,			/* the columns of versions 1.0 and 1.0.1 */
	COL_PERIOD_ID = FW_TABLE_NATTS_1_0, /* since 1.1: "" for inline calls */
	COL_SHADOW_DENIED,
	FW_TABLE_NATTS
};

static const Oid fw_table_types[FW_TABLE_NATTS] = {
	TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID,
	INT4OID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, OIDOID,
	INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID,
	TEXTOID, INT8OID
};

/* The columns of fw_stat, in order (since 1.1). */
enum
{
	STAT_NAME,
	STAT_CALLS,
	STAT_ALLOWED,
	STAT_DENIED,
	STAT_LAST_DENIED_AT,
	STAT_SINCE,
	STAT_SHADOW_DENIED,
	FW_STAT_NATTS
};

static const Oid fw_stat_types[FW_STAT_NATTS] = {
	TEXTOID, INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, INT8OID
};

/*
 * The table of an installation not yet updated to 1.1 has the first
 * FW_TABLE_NATTS_1_0 columns and a primary key of (name, key): inline calls
 * work on it; policies do not exist there.
 */

/*
 * The extension's table and its primary key in this database, found by name
 * and kept.  An invalidation of the table's relcache entry (DROP EXTENSION,
 * VACUUM, a new index) marks them stale, and the next call looks them up
 * again; they are also checked each time they are opened, and looked up
 * again when they fail: DROP EXTENSION may run while a call waits for its
 * lock, and REINDEX CONCURRENTLY replaces the index by another of the same
 * name.  The callback only sets the flag: one that reset the ids (1.3
 * before its review) could run in the middle of the lookup, between the
 * table's id and the index's, and failed the call with 55000 whenever
 * fw_counter was vacuumed.
 */
static Oid	fw_table_relid = InvalidOid;
static Oid	fw_table_indexid = InvalidOid;
static bool fw_table_stale = true;
static bool fw_table_callback_registered = false;

/*
 * fw_stat, when this backend found it holding FW_TABLE_MAX_STATS names
 * that no transaction in progress added: no name gets a place until rows
 * of it are deleted, which its trigger (fw_stat_freed) makes every backend
 * see as an invalidation of fw_stat when the deletion commits.
 */
static Oid	fw_stats_full_relid = InvalidOid;

static void
fwtable_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == fw_table_relid)
		fw_table_stale = true;
	if (relid == InvalidOid || relid == fw_stats_full_relid)
		fw_stats_full_relid = InvalidOid;
}

/* The counter table of a call, open; or fw_stat. */
typedef struct FwTable
{
	Relation	rel;
	Relation	index;			/* its primary key */
	int			natts;			/* FW_TABLE_NATTS_1_0 or FW_TABLE_NATTS;
								 * FW_STAT_NATTS */
	bool		more_indexes;	/* indexes besides the primary key */
} FwTable;

static void
fwtable_reinstall_error(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			errmsg("the counter table of fixed_window is missing or altered"),
			errhint("Run ALTER EXTENSION fixed_window UPDATE if the extension in this database is of an earlier version; if its objects were altered by hand, undo the change as the README's \"Troubleshooting\" says. Dropping the extension would also drop its policies, overrides and grants.")));
}


/* The extension is not there: never installed, or dropped just now. */
pg_noreturn static void
fwtable_missing_extension_error(bool dropped)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			dropped ?
			errmsg("extension \"fixed_window\" was dropped during the call") :
			errmsg("extension \"fixed_window\" is not installed in this database"),
			errhint("Run CREATE EXTENSION fixed_window, or preload the library to keep counters in shared memory.")));
}

/*
 * Find fw_counter and its primary key in the extension's schema, unless
 * those found before still stand; "again" looks them up anew, after they
 * failed to open in this call.
 */
static void
fwtable_find(bool again)
{
	Oid			schema;
	Oid			relid;
	Oid			indexid;

	if (!fw_table_stale && !again)
		return;
	if (!fw_table_callback_registered)
	{
		CacheRegisterRelcacheCallback(fwtable_invalidate, (Datum) 0);
		fw_table_callback_registered = true;
	}
	fw_table_stale = false;		/* an invalidation from here on counts */
	schema = fwcatalog_extension_schema();
	if (!OidIsValid(schema))
		fwtable_missing_extension_error(again);
	relid = get_relname_relid(FW_TABLE, schema);
	indexid = get_relname_relid(FW_TABLE_PKEY, schema);
	if (!OidIsValid(relid) || !OidIsValid(indexid))
		fwtable_reinstall_error();
	fw_table_relid = relid;
	fw_table_indexid = indexid;
}

/* Returns the number of columns, FW_TABLE_NATTS_1_0 or FW_TABLE_NATTS. */
static int
fwtable_check_columns(Relation rel, Relation index)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	int			natts = tupdesc->natts;
	int			nkeys = (natts == FW_TABLE_NATTS) ? 3 : 2;
	int			i;

	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		index->rd_index->indrelid != RelationGetRelid(rel) ||
		(natts != FW_TABLE_NATTS && natts != FW_TABLE_NATTS_1_0) ||
		!index->rd_index->indisunique || index->rd_index->indnkeyatts != nkeys ||
		index->rd_index->indkey.values[0] != COL_NAME + 1 ||
		index->rd_index->indkey.values[1] != COL_KEY + 1 ||
		(nkeys == 3 && index->rd_index->indkey.values[2] != COL_PERIOD_ID + 1))
		fwtable_reinstall_error();
	for (i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped || att->atttypid != fw_table_types[i])
			fwtable_reinstall_error();
	}
	return natts;
}

static void
fwtable_key_locktag(LOCKTAG *tag, uint64 hash64, uint16 field4)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (hash64 >> 32),
						 (uint32) hash64, field4);
}

/*
 * Before a call that writes the rows of several windows locks any of them,
 * it takes the lock of its (policy, key), held until the transaction ends
 * as row locks are.  The rows are locked in one order as well, but a row
 * being updated can be missed by a lookup (an index scan with a non-MVCC
 * snapshot may find neither version), and a call that then inserts the row
 * waits in the primary key's check for the transaction that holds it --
 * out of order.  Calls on one (policy, key) thus never wait for each other
 * while holding its rows.
 */
static void
fwtable_lock_policy_key(uint64 key_hash64)
{
	LOCKTAG		tag;

	fwtable_key_locktag(&tag, key_hash64, FW_LOCKTAG_KEY);
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/* The primary key of one counter row, and its scan keys. */
typedef struct FwRowKey
{
	Datum		values[3];		/* name, key and, since 1.1, period_id */
	int			nkeys;
	ScanKeyData scankeys[3];
} FwRowKey;

static void
fwtable_row_key_init(FwRowKey *rk, const FwIdentity *id, int natts)
{
	int			i;

	if (natts != FW_TABLE_NATTS && id->period_id_len > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("the counter table of fixed_window has no room for policies"),
				errhint("Update the extension with ALTER EXTENSION fixed_window UPDATE.")));
	rk->values[0] = PointerGetDatum(cstring_to_text_with_len(id->name, id->name_len));
	rk->values[1] = PointerGetDatum(cstring_to_text_with_len(id->key, id->key_len));
	rk->values[2] = PointerGetDatum(cstring_to_text_with_len(id->period_id, id->period_id_len));
	rk->nkeys = (natts == FW_TABLE_NATTS) ? 3 : 2;
	/* the index's columns, numbered from 1 */
	for (i = 0; i < rk->nkeys; i++)
		ScanKeyInit(&rk->scankeys[i], i + 1, BTEqualStrategyNumber, F_TEXTEQ, rk->values[i]);
}

/*
 * Insert the index entries of a row version, new or moved by an update that
 * was not HOT.  When the primary key is the table's only index, its entry
 * is made from the row's key.  Otherwise the executor's routine inserts into
 * every index that is ready for inserts: one a DBA added, or the copy of the
 * primary key that REINDEX CONCURRENTLY is building, which would otherwise
 * miss the row (and lose it, with a second row for the key to follow, once
 * it replaced the primary key).
 */
static void
fwtable_index_insert(const FwTable *table, HeapTuple tuple, const FwRowKey *rk, bool update,
					 FwIndexUpdate what)
{
	EState	   *estate;
	ResultRelInfo *result_rel;
	TupleTableSlot *slot;

	if (what == FW_INDEXES_NONE)
		return;
	if (!table->more_indexes)
	{
		bool		isnull[3] = {false, false, false};

		/* a btree is not summarizing; an update keeps the key, a hint for it */
		if (what == FW_INDEXES_ALL)
			index_insert(table->index, (Datum *) rk->values, isnull, &tuple->t_self, table->rel,
						 UNIQUE_CHECK_YES, update, BuildIndexInfo(table->index));
		return;
	}
	estate = CreateExecutorState();
	result_rel = makeNode(ResultRelInfo);
	InitResultRelInfo(result_rel, table->rel, 0, NULL, 0);
	ExecOpenIndices(result_rel, false);
	slot = ExecInitExtraTupleSlot(estate, RelationGetDescr(table->rel), &TTSOpsHeapTuple);
	ExecStoreHeapTuple(tuple, slot, false);
	list_free(fwcompat_insert_index_tuples(result_rel, slot, estate, what));
	ExecCloseIndices(result_rel);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
}

/*
 * Fetch the row of the scan keys into slot, as seen by snapshot.
 * SnapshotSelf sees the version that is neither deleted by a committed
 * transaction nor inserted by an aborted or running one, this transaction's
 * earlier calls included, and needs no snapshot of the running
 * transactions; a dirty snapshot also sees rows being created.
 */
static bool
fwtable_fetch(Relation rel, Relation index, FwRowKey *rk, Snapshot snapshot,
			  TupleTableSlot *slot)
{
	IndexScanDesc scan = fwcompat_index_beginscan(rel, index, snapshot, rk->nkeys, 0);
	bool		found;

	index_rescan(scan, rk->scankeys, rk->nkeys, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	index_endscan(scan);
	return found;
}

/*
 * Lock the row fetched into slot, waiting for a transaction that holds it,
 * and put its latest version into slot; or, when there is no row, take the
 * key's creation lock (*create_lock) so that only this transaction creates
 * it.  Returns whether a row is there, locked.
 *
 * A row is locked like SELECT ... FOR NO KEY UPDATE: writers of one key
 * wait for each other until commit or abort, and hold no lock table entry
 * for it.  The creation lock is held only until the row is inserted: a
 * creator that comes later sees the new row through a dirty snapshot and
 * waits for the transaction that inserted it, as a unique index would.
 */
static bool
fwtable_lock(Relation rel, Relation index, FwRowKey *rk, TupleTableSlot *slot,
			 bool found, LOCKTAG *create_lock)
{
	int			attempt;

	for (attempt = 0; attempt < FW_LOCK_ATTEMPTS; attempt++)
	{
		SnapshotData dirty;
		TransactionId wait_for;

		if (found)
		{
			TM_FailureData tmfd;
			TM_Result	tm;

			tm = table_tuple_lock(rel, &slot->tts_tid, SnapshotSelf, slot,
								  GetCurrentCommandId(true), LockTupleNoKeyExclusive,
								  LockWaitBlock, TUPLE_LOCK_FLAG_FIND_LAST_VERSION,
								  &tmfd);
			if (tm == TM_Ok)
				return true;
			if (tm == TM_SelfModified || tm == TM_Invisible)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("the counter row of a rate limit was changed earlier in the same command"),
						errhint("Call fw_limit in a statement of its own, not beside fw_reset, fw_gc or fw_stats_reset.")));
			if (tm != TM_Deleted)
				break;
			/* deleted by fw_gc meanwhile: create it anew */
		}

		(void) LockAcquire(create_lock, ExclusiveLock, false, false);
		InitDirtySnapshot(dirty);
		if (!fwtable_fetch(rel, index, rk, &dirty, slot))
			return false;		/* create it, then release the lock */
		LockRelease(create_lock, ExclusiveLock, false);

		/* a row is there, or being created or deleted: wait for its writer */
		wait_for = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
		if (TransactionIdIsValid(wait_for))
			XactLockTableWait(wait_for, rel, &slot->tts_tid, XLTW_Lock);
		found = fwtable_fetch(rel, index, rk, SnapshotSelf, slot);
	}
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			errmsg("could not lock the counter row of a rate limit"),
			errdetail("The row kept changing while the call waited for it."),
			errhint("Retry the transaction.")));
	return false;				/* keep compiler quiet */
}

/*
 * Open the counter table and its primary key for a call.  The ones found
 * before may be gone (DROP EXTENSION; the call may have waited for its lock
 * while the drop ran), or the index may be an older copy that REINDEX
 * CONCURRENTLY has replaced, renamed and marked not valid: look them up
 * again, and report a missing extension rather than a missing relation.
 */
static void
fwtable_open(LOCKMODE lockmode, FwTable *table)
{
	int			attempt;

	for (attempt = 0; attempt < FW_OPEN_ATTEMPTS; attempt++)
	{
		List	   *indexes;

		fwtable_find(attempt > 0);
		if (!fwcatalog_open_table_and_key(fw_table_relid, FW_TABLE, fw_table_indexid, FW_TABLE_PKEY,
										  lockmode, &table->rel, &table->index))
			continue;
		table->natts = fwtable_check_columns(table->rel, table->index);
		indexes = RelationGetIndexList(table->rel);
		table->more_indexes = list_length(indexes) > 1;
		list_free(indexes);
		return;
	}
	if (!OidIsValid(fwcatalog_extension_schema()))
		fwtable_missing_extension_error(true);
	fwtable_reinstall_error();
}

static void
fwtable_close(FwTable *table, LOCKMODE lockmode)
{
	index_close(table->index, lockmode);
	table_close(table->rel, lockmode);
}

/*
 * Open fw_stat and its primary key, in the counter table's schema, to add
 * a row; false, having opened nothing, when they are not as 1.1 and later
 * make them (1.0's fw_stat, or one an admin altered): names then get no
 * place of their own, and are counted as that installation reads them.
 */
static bool
fwtable_open_stats(const FwTable *table, FwTable *stats)
{
	Oid			schema = RelationGetNamespace(table->rel);
	int			attempt;

	for (attempt = 0; attempt < FW_OPEN_ATTEMPTS; attempt++)
	{
		Oid			relid = get_relname_relid(FW_STATS_TABLE, schema);
		Oid			indexid = get_relname_relid(FW_STATS_TABLE_PKEY, schema);
		TupleDesc	tupdesc;
		List	   *indexes;
		bool		fits;
		int			i;

		if (!OidIsValid(relid) || !OidIsValid(indexid))
			return false;
		if (!fwcatalog_open_table_and_key(relid, FW_STATS_TABLE, indexid, FW_STATS_TABLE_PKEY,
										  RowExclusiveLock, &stats->rel, &stats->index))
			continue;			/* dropped or replaced meanwhile: look again */
		tupdesc = RelationGetDescr(stats->rel);
		fits = tupdesc->natts == FW_STAT_NATTS && stats->index->rd_index->indisunique &&
			stats->index->rd_index->indnkeyatts == 1 &&
			stats->index->rd_index->indkey.values[0] == STAT_NAME + 1;
		for (i = 0; fits && i < FW_STAT_NATTS; i++)
			fits = !TupleDescAttr(tupdesc, i)->attisdropped &&
				TupleDescAttr(tupdesc, i)->atttypid == fw_stat_types[i];
		if (!fits)
		{
			fwtable_close(stats, RowExclusiveLock);
			return false;
		}
		stats->natts = FW_STAT_NATTS;
		indexes = RelationGetIndexList(stats->rel);
		stats->more_indexes = list_length(indexes) > 1;
		list_free(indexes);
		return true;
	}
	return false;
}

/*
 * Whether fw_stat has the name of rk, committed or being added by a
 * transaction in progress (a dirty snapshot).
 */
static bool
fwtable_stats_has(const FwTable *stats, FwRowKey *rk, TupleTableSlot *slot)
{
	SnapshotData dirty;

	InitDirtySnapshot(dirty);
	return fwtable_fetch(stats->rel, stats->index, rk, &dirty, slot);
}

/*
 * Whether fw_stat holds FW_TABLE_MAX_STATS names, counted through a dirty
 * snapshot, with those transactions in progress are adding.  When it holds
 * them without those, remember it (fw_stats_full_relid).
 */
static bool
fwtable_stats_full(const FwTable *stats, TupleTableSlot *slot)
{
	SnapshotData dirty;
	TableScanDesc scan;
	int			names = 0;
	int			settled = 0;	/* added by transactions that ended, or this one */

	InitDirtySnapshot(dirty);
	scan = table_beginscan(stats->rel, &dirty, 0, NULL);
	while (settled < FW_TABLE_MAX_STATS && table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		names++;
		/* the visibility check of this row set xmin to its inserter, if running */
		if (!TransactionIdIsValid(dirty.xmin))
			settled++;
	}
	table_endscan(scan);
	if (settled >= FW_TABLE_MAX_STATS)
		fw_stats_full_relid = RelationGetRelid(stats->rel);
	return names >= FW_TABLE_MAX_STATS;
}

/*
 * Give a limit's name a place among those whose statistics the table keeps
 * apart -- a row of fw_stat, with no calls yet -- unless it has one or the
 * database holds FW_TABLE_MAX_STATS: called when a row counts its first
 * call, new or after fw_stats_reset().  So the names with a place are those
 * counted first, and names made later cannot take one from them: their
 * calls are counted together (fw_table_stats() reads the rows of a name
 * without a place under a NULL name, and fw_counter's trigger adds the
 * counts of such rows, when deleted, to fw_stat_unnamed).
 *
 * The names are counted and the place added under an advisory lock of the
 * database (FW_LOCKTAG_STATS), held only meanwhile, through a dirty
 * snapshot that sees the places other transactions are adding: the
 * database never holds more than its bound, and a call never waits for
 * another's transaction.  A database found full is not locked; once found
 * full with no place being added, this backend does not count it again
 * until rows of fw_stat are deleted (fw_stats_reset(), an admin's DELETE).
 * A name that comes as places go gets none, as if it had come a moment
 * before.
 *
 * Two races leave a name counted together until one of its rows counts a
 * first call again: a place whose transaction rolls back after another
 * transaction found it (and so added none), and a place freed by
 * fw_stats_reset() while a transaction held a row of the name (which keeps
 * its counts).  A backend whose own transaction took the last places and
 * rolled back counts again at the next invalidation of fw_stat (VACUUM's
 * too).  Runs in the subtransaction that writes the call's rows
 * (fwtable_write_all), which starts again if an admin added the same name
 * meanwhile (a unique violation).
 */
static void
fwtable_name_stats(const FwTable *table, const FwIdentity *id, TimestampTz now)
{
	FwTable		stats;
	FwRowKey	rk;
	TupleTableSlot *slot;

	if (!fwtable_open_stats(table, &stats))
		return;
	if (RelationGetRelid(stats.rel) == fw_stats_full_relid)
	{
		fwtable_close(&stats, RowExclusiveLock);
		return;
	}
	rk.values[0] = PointerGetDatum(cstring_to_text_with_len(id->name, id->name_len));
	rk.nkeys = 1;
	ScanKeyInit(&rk.scankeys[0], 1, BTEqualStrategyNumber, F_TEXTEQ, rk.values[0]);
	slot = table_slot_create(stats.rel, NULL);
	/* a full database stays full until rows of fw_stat are deleted: no lock */
	if (!fwtable_stats_has(&stats, &rk, slot) && !fwtable_stats_full(&stats, slot))
	{
		LOCKTAG		tag;

		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, 0, 0, FW_LOCKTAG_STATS);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
		if (!fwtable_stats_has(&stats, &rk, slot) && !fwtable_stats_full(&stats, slot))
		{
			Datum		values[FW_STAT_NATTS];
			bool		nulls[FW_STAT_NATTS] = {false};
			HeapTuple	tuple;

			values[STAT_NAME] = rk.values[0];
			values[STAT_CALLS] = Int64GetDatum(0);
			values[STAT_ALLOWED] = Int64GetDatum(0);
			values[STAT_DENIED] = Int64GetDatum(0);
			values[STAT_LAST_DENIED_AT] = (Datum) 0;
			nulls[STAT_LAST_DENIED_AT] = true;
			values[STAT_SINCE] = TimestampTzGetDatum(now);
			values[STAT_SHADOW_DENIED] = Int64GetDatum(0);
			tuple = heap_form_tuple(RelationGetDescr(stats.rel), values, nulls);
			simple_heap_insert(stats.rel, tuple);
			fwtable_index_insert(&stats, tuple, &rk, false, FW_INDEXES_ALL);
		}
		LockRelease(&tag, ExclusiveLock, false);
	}
	ExecDropSingleTupleTableSlot(slot);
	fwtable_close(&stats, NoLock);
}

/* One window of a call, in the table. */
typedef struct FwRow
{
	FwRowKey	rk;
	LOCKTAG		create_lock;
	TupleTableSlot *slot;
	bool		found;
	bool		creating;		/* holds create_lock, to insert the row */
	FwState		state;
} FwRow;

/*
 * Write what a call changes: each row that spends gets its new state, and
 * the call's statistics go to the first row that exists after it
 * (stats_row), whose name gets a place in fw_stat when the row counts its
 * first call.  Rows that do not exist are inserted; returns false, having
 * written nothing, if the primary key finds one of them already there.
 *
 * The creation locks and dirty reads make that rare, but a unique
 * violation is the final word on whether a row exists, so when rows are
 * inserted (or a place) all the writes run in one subtransaction that a
 * violation rolls back: a call never spends in some windows but not in
 * others.
 */
/*
 * Whether a window that denied a call must keep its row until the retry
 * time it promised: fw_gc may collect an empty row while the next window
 * grants its rate, when the row answers as no row would -- but the row
 * would hold more than the rate at the retry time of a cost above the
 * rate, and a new key would not.  Such a row is kept until an allowed call
 * says again when it may go.
 */
static bool
fwtable_keeps(const FwCall *call, const FwRow *row, const FwDecision *d, int i)
{
	return call->mode == FW_MODE_SPEND && row->found && !d->ok &&
		d->retry_after != FW_RETRY_NEVER && call->limits[i].cost > call->limits[i].rate &&
		!row->slot->tts_isnull[COL_FRESH_FROM];
}

/*
 * The row that counts a call in its statistics: every call that spends is
 * counted, on the first row it has after it; -1 for none.
 */
static int
fwtable_stats_row(const FwCall *call, const FwRow *rows, const FwOutcome *outcome)
{
	int			i;

	if (call->mode == FW_MODE_SPEND)
		for (i = 0; i < call->n; i++)
			if (rows[i].found || outcome->spend[i] || outcome->create[i])
				return i;
	return -1;
}

static void
fwtable_write(const FwTable *table, const FwCall *call, FwRow *rows, const FwOutcome *outcome,
			  int stats_row)
{
	int			natts = table->natts;
	int			i;

	for (i = 0; i < call->n; i++)
	{
		const FwDecision *d = &outcome->decisions[i];
		bool		keeps = fwtable_keeps(call, &rows[i], d, i);
		Datum		values[FW_TABLE_NATTS];
		bool		nulls[FW_TABLE_NATTS];
		HeapTuple	tuple;

		if (!outcome->spend[i] && !outcome->create[i] && !keeps && i != stats_row)
			continue;
		if (rows[i].found)
		{
			/* the row as it is; a call changes some of its columns */
			memcpy(values, rows[i].slot->tts_values, sizeof(Datum) * natts);
			memcpy(nulls, rows[i].slot->tts_isnull, sizeof(bool) * natts);
		}
		else
		{
			memset(nulls, 0, sizeof(nulls));
			values[COL_NAME] = rows[i].rk.values[0];
			values[COL_KEY] = rows[i].rk.values[1];
			values[COL_CALLS] = Int64GetDatum(0);
			values[COL_ALLOWED] = Int64GetDatum(0);
			values[COL_DENIED] = Int64GetDatum(0);
			nulls[COL_LAST_DENIED_AT] = true;
			values[COL_SINCE] = TimestampTzGetDatum(d->now);
			values[COL_PERIOD_ID] = rows[i].rk.values[2];
			values[COL_SHADOW_DENIED] = Int64GetDatum(0);
		}
		if (keeps)
			nulls[COL_FRESH_FROM] = true;
		if (outcome->spend[i] || outcome->create[i])
		{
			values[COL_WINDOW_START] = TimestampTzGetDatum(d->state.window_start);
			values[COL_WINDOW_END] = TimestampTzGetDatum(d->state.window_end);
			values[COL_TOKENS] = Int32GetDatum(d->state.tokens);
			values[COL_FRESH_FROM] = TimestampTzGetDatum(d->fresh_from);
			nulls[COL_FRESH_FROM] = (d->fresh_from == 0);
			values[COL_FRESH_UNTIL] = TimestampTzGetDatum(d->fresh_until);
			nulls[COL_FRESH_UNTIL] = (d->fresh_until == PG_INT64_MAX);
			if (call->mode == FW_MODE_SPEND)
			{
				values[COL_RATE] = Int32GetDatum(call->limits[i].rate);
				values[COL_CAPACITY] = Int32GetDatum(call->limits[i].capacity);
				values[COL_USERID] = ObjectIdGetDatum(GetUserId());
			}
		}
		if (i == stats_row)
		{
			values[COL_CALLS] = Int64GetDatum(DatumGetInt64(values[COL_CALLS]) + 1);
			if (outcome->verdict.ok)
				values[COL_ALLOWED] = Int64GetDatum(DatumGetInt64(values[COL_ALLOWED]) + 1);
			else
			{
				values[COL_DENIED] = Int64GetDatum(DatumGetInt64(values[COL_DENIED]) + 1);
				values[COL_LAST_DENIED_AT] = TimestampTzGetDatum(d->now);
				nulls[COL_LAST_DENIED_AT] = false;
			}
			if (outcome->verdict.shadow_denied && natts == FW_TABLE_NATTS)
				values[COL_SHADOW_DENIED] =
					Int64GetDatum(DatumGetInt64(values[COL_SHADOW_DENIED]) + 1);
		}

		tuple = heap_form_tuple(RelationGetDescr(table->rel), values, nulls);
		if (!rows[i].found)
		{
			simple_heap_insert(table->rel, tuple);
			fwtable_index_insert(table, tuple, &rows[i].rk, false, FW_INDEXES_ALL);
		}
		else
			fwtable_index_insert(table, tuple, &rows[i].rk, true,
								 fwcompat_heap_update(table->rel, &rows[i].slot->tts_tid, tuple));
	}
}

typedef struct FwWrite
{
	const FwTable *table;
	const FwCall *call;
	FwRow	   *rows;
	const FwOutcome *outcome;
	int			stats_row;		/* the row that counts the call's statistics */
	bool		first_call;		/* it counts its first call */
} FwWrite;

static void
fwtable_write_step(void *arg)
{
	FwWrite    *write = (FwWrite *) arg;

	if (write->first_call)
		fwtable_name_stats(write->table, &write->call->ids[write->stats_row],
						   write->outcome->decisions[write->stats_row].now);
	fwtable_write(write->table, write->call, write->rows, write->outcome, write->stats_row);
}

static bool
fwtable_write_all(const FwTable *table, const FwCall *call, FwRow *rows,
				  const FwOutcome *outcome)
{
	FwWrite		write = {table, call, rows, outcome, fwtable_stats_row(call, rows, outcome), false};
	ErrorData  *error;
	bool		inserts = false;
	int			i;

	for (i = 0; i < call->n; i++)
		inserts |= ((outcome->spend[i] || outcome->create[i]) && !rows[i].found);
	/* a row that counts its first call: its name may need a place in fw_stat */
	write.first_call = write.stats_row >= 0 &&
		(!rows[write.stats_row].found ||
		 DatumGetInt64(rows[write.stats_row].slot->tts_values[COL_CALLS]) == 0);
	if (!inserts && !write.first_call)
	{
		fwtable_write(table, call, rows, outcome, write.stats_row);
		return true;
	}

	error = fwsubxact_try(fwtable_write_step, &write);
	if (error == NULL)
		return true;
	if (error->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
		ReThrowError(error);
	FreeErrorData(error);
	return false;
}

/*
 * Apply one call to the rows of its windows, as fwshmem_apply does to
 * counters in shared memory: lock every row in the order of the call's
 * windows (creation locks for rows that do not exist), which is the order
 * of the primary key, so that calls on one key never deadlock; decide the
 * call on the states found at the time read once all are held; and write
 * the rows that change.  A denied call spends nothing: it changes
 * statistics, creates the rows of the windows that denied it and have
 * none (FwOutcome), and keeps rows fw_gc would collect before its retry
 * time (fwtable_keeps).  A refund locks only the rows that exist.
 */
FwApplyResult
fwtable_apply(const FwCall *call, FwOutcome *outcome)
{
	bool		writes = (call->mode != FW_MODE_CHECK);
	LOCKMODE	lockmode = writes ? RowExclusiveLock : AccessShareLock;
	FwTable		table;
	FwRow		rows[FW_MAX_WINDOWS];
	FwState    *states[FW_MAX_WINDOWS];
	FwApplyResult result;
	FwNameKey	nk = call->nk;
	uint64		key_hash64 = fwidentity_name_key_hash64(&nk);
	int			i;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				errmsg("fixed_window cannot keep counters in its table on a standby"),
				errdetail("A standby cannot write, and its unlogged tables are empty."),
				errhint("Preload fixed_window on the standby and set fixed_window.storage to auto or shmem: "
						"shared-memory counters work there, local to the standby.")));
	if (writes && XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				errmsg("cannot spend rate limit tokens in a read-only transaction"),
				errhint("fw_check answers without spending.")));

	fwtable_open(lockmode, &table);
	if (writes && call->n > 1)
		fwtable_lock_policy_key(key_hash64);
	for (i = 0; i < call->n; i++)
	{
		fwtable_row_key_init(&rows[i].rk, &call->ids[i], table.natts);
		fwtable_key_locktag(&rows[i].create_lock, key_hash64, FW_LOCKTAG_FIELD4);
		rows[i].slot = table_slot_create(table.rel, NULL);
	}

	for (;;)
	{
		bool		written;

		CHECK_FOR_INTERRUPTS();
		for (i = 0; i < call->n; i++)
		{
			FwRow	   *row = &rows[i];

			row->creating = false;
			row->found = fwtable_fetch(table.rel, table.index, &row->rk, SnapshotSelf, row->slot);
			if (call->mode == FW_MODE_SPEND || (call->mode == FW_MODE_REFUND && row->found))
			{
				row->found = fwtable_lock(table.rel, table.index, &row->rk, row->slot, row->found,
										  &row->create_lock);
				row->creating = !row->found;
			}
			states[i] = NULL;
			if (row->found)
			{
				slot_getallattrs(row->slot);
				row->state.window_start = DatumGetTimestampTz(row->slot->tts_values[COL_WINDOW_START]);
				row->state.window_end = DatumGetTimestampTz(row->slot->tts_values[COL_WINDOW_END]);
				row->state.tokens = DatumGetInt32(row->slot->tts_values[COL_TOKENS]);
				states[i] = &row->state;
			}
		}

		result = fwdecide_call(call, states, fwsettings_clock_now(), outcome);
		written = (result != FW_APPLY_OK || !writes ||
				   fwtable_write_all(&table, call, rows, outcome));

		for (i = 0; i < call->n; i++)
			if (rows[i].creating)
				LockRelease(&rows[i].create_lock, ExclusiveLock, false);
		if (written)
			break;
		/* another transaction created a row after all: use it */
	}
	/* let later calls of this transaction see the rows */
	if (writes && result == FW_APPLY_OK)
		CommandCounterIncrement();

	for (i = 0; i < call->n; i++)
		ExecDropSingleTupleTableSlot(rows[i].slot);
	fwtable_close(&table, NoLock);
	return result;
}

/*
 * Visit every counter row of this database, as the statement's snapshot
 * sees it; the visitor's answer is ignored (nothing is removed).  Returns
 * false when the table cannot be read: on a standby, if it is unlogged (as
 * installed), since a standby holds no rows of unlogged tables.  A DBA who
 * made it LOGGED, to keep counters through a failover, reads it there.
 */
bool
fwtable_foreach(FwCounterVisitor visitor, void *arg)
{
	FwTable		table;
	TableScanDesc scan;
	TupleTableSlot *slot;
	MemoryContext rowcontext;
	MemoryContext oldcontext;

	fwtable_open(AccessShareLock, &table);
	if (RecoveryInProgress() && table.rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
	{
		fwtable_close(&table, AccessShareLock);
		return false;
	}
	slot = table_slot_create(table.rel, NULL);
	scan = table_beginscan(table.rel, GetActiveSnapshot(), 0, NULL);
	rowcontext = AllocSetContextCreate(CurrentMemoryContext, "fixed_window counter row",
									   ALLOCSET_SMALL_SIZES);
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		text	   *name;
		text	   *key;
		FwCounterView view;

		CHECK_FOR_INTERRUPTS();
		oldcontext = MemoryContextSwitchTo(rowcontext);
		slot_getallattrs(slot);
		name = DatumGetTextPP(slot->tts_values[COL_NAME]);
		key = DatumGetTextPP(slot->tts_values[COL_KEY]);
		view.name = VARDATA_ANY(name);
		view.name_len = VARSIZE_ANY_EXHDR(name);
		view.period_id = "";
		view.period_id_len = 0;
		if (table.natts == FW_TABLE_NATTS)
		{
			text	   *period_id = DatumGetTextPP(slot->tts_values[COL_PERIOD_ID]);

			view.period_id = VARDATA_ANY(period_id);
			view.period_id_len = VARSIZE_ANY_EXHDR(period_id);
		}
		view.key = VARDATA_ANY(key);
		view.key_len = VARSIZE_ANY_EXHDR(key);
		view.data.window_start = DatumGetTimestampTz(slot->tts_values[COL_WINDOW_START]);
		view.data.window_end = DatumGetTimestampTz(slot->tts_values[COL_WINDOW_END]);
		view.data.tokens = DatumGetInt32(slot->tts_values[COL_TOKENS]);
		view.data.rate = DatumGetInt32(slot->tts_values[COL_RATE]);
		view.data.capacity = DatumGetInt32(slot->tts_values[COL_CAPACITY]);
		view.data.userid = DatumGetObjectId(slot->tts_values[COL_USERID]);
		MemoryContextSwitchTo(oldcontext);

		(void) visitor(&view, arg);
		MemoryContextReset(rowcontext);
	}
	table_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextDelete(rowcontext);
	fwtable_close(&table, NoLock);
	return true;
}
