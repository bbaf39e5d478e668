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
 * inserted -- so that two transactions never both create it.  Different
 * keys never wait for each other (unless their 64-bit hashes collide,
 * which only adds a short wait).
 * fw_check takes no lock and writes nothing.
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
#include "utils/inval.h"
#include "utils/resowner.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "settings.h"
#include "table_store.h"

#define FW_TABLE			"fw_counter"
#define FW_TABLE_PKEY		"fw_counter_pkey"
#define FW_LOCKTAG_FIELD4	18007	/* "FW"; pg_advisory_* use 1 and 2 */
#define FW_LOCK_ATTEMPTS	10		/* a row that keeps changing: give up */
#define FW_OPEN_ATTEMPTS	2		/* the table found anew once, after a drop */

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
	FW_TABLE_NATTS
};

static const Oid fw_table_types[FW_TABLE_NATTS] = {
	TEXTOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID,
	INT4OID, INT4OID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, OIDOID,
	INT8OID, INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID
};

/*
 * The extension's table and index in this database, found once per backend
 * and forgotten when the table's relcache entry is invalidated (as DROP
 * EXTENSION does), so that a stale schema is never searched by name.
 */
static Oid	fw_table_relid = InvalidOid;
static Oid	fw_table_indexid = InvalidOid;
static bool fw_table_callback_registered = false;

static void
fw_table_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == fw_table_relid)
		fw_table_relid = fw_table_indexid = InvalidOid;
}

static void
fw_reinstall_error(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the counter table of fixed_window is missing or altered"),
			 errhint("Reinstall the extension with DROP EXTENSION fixed_window and CREATE EXTENSION fixed_window.")));
}

#if PG_VERSION_NUM < 160000
/* The schema of an extension (get_extension_schema is exported from 16 on). */
static Oid
get_extension_schema(Oid extension)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			schema = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extension));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		schema = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return schema;
}
#endif

/* The extension is not there: never installed, or dropped just now. */
static void pg_attribute_noreturn()
fw_missing_extension_error(bool dropped)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 dropped ?
			 errmsg("extension \"fixed_window\" was dropped during the call") :
			 errmsg("extension \"fixed_window\" is not installed in this database"),
			 errhint("Run CREATE EXTENSION fixed_window, or preload the library to keep counters in shared memory.")));
}

/*
 * Find fw_counter and its primary key in the extension's schema; "again"
 * when they were found once in this call and have gone since.
 */
static void
fw_table_find(Oid *relid, Oid *indexid, bool again)
{
	if (!OidIsValid(fw_table_relid))
	{
		Oid			extension = get_extension_oid("fixed_window", true);
		Oid			schema;

		if (!OidIsValid(extension))
			fw_missing_extension_error(again);
		schema = get_extension_schema(extension);
		if (!fw_table_callback_registered)
		{
			CacheRegisterRelcacheCallback(fw_table_invalidate, (Datum) 0);
			fw_table_callback_registered = true;
		}
		fw_table_relid = get_relname_relid(FW_TABLE, schema);
		fw_table_indexid = get_relname_relid(FW_TABLE_PKEY, schema);
		if (!OidIsValid(fw_table_relid) || !OidIsValid(fw_table_indexid))
		{
			fw_table_relid = fw_table_indexid = InvalidOid;
			fw_reinstall_error();
		}
	}
	*relid = fw_table_relid;
	*indexid = fw_table_indexid;
}

static void
fw_table_check_columns(Relation rel, Relation index)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	int			i;

	if (rel->rd_rel->relkind != RELKIND_RELATION ||
		index->rd_index->indrelid != RelationGetRelid(rel) ||
		!index->rd_index->indisunique || index->rd_index->indnkeyatts != 2 ||
		index->rd_index->indkey.values[0] != COL_NAME + 1 ||
		index->rd_index->indkey.values[1] != COL_KEY + 1 ||
		tupdesc->natts != FW_TABLE_NATTS)
		fw_reinstall_error();
	for (i = 0; i < FW_TABLE_NATTS; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped || att->atttypid != fw_table_types[i])
			fw_reinstall_error();
	}
}

static void
fw_key_locktag(LOCKTAG *tag, uint64 hash64)
{
	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) (hash64 >> 32),
						 (uint32) hash64, FW_LOCKTAG_FIELD4);
}

static void
fw_index_insert(Relation rel, Relation index, HeapTuple tuple,
				Datum name, Datum key, bool unchanged)
{
	Datum		values[2] = {name, key};
	bool		isnull[2] = {false, false};

	/* an update keeps (name, key): "unchanged" is a hint for btree */
	index_insert(index, values, isnull, &tuple->t_self, rel, UNIQUE_CHECK_YES,
				 FW_INDEX_UNCHANGED(unchanged) BuildIndexInfo(index));
}

/*
 * Fetch the row of the scan keys into slot, as seen by snapshot.
 * SnapshotSelf sees the version that is neither deleted by a committed
 * transaction nor inserted by an aborted or running one, this transaction's
 * earlier calls included, and needs no snapshot of the running
 * transactions; a dirty snapshot also sees rows being created.
 */
static bool
fw_table_fetch(Relation rel, Relation index, ScanKey keys, Snapshot snapshot,
			   TupleTableSlot *slot)
{
	IndexScanDesc scan = index_beginscan(rel, index, snapshot, 2, 0);
	bool		found;

	index_rescan(scan, keys, 2, NULL, 0);
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
fw_table_lock(Relation rel, Relation index, ScanKey keys, TupleTableSlot *slot,
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
		if (!fw_table_fetch(rel, index, keys, &dirty, slot))
			return false;		/* create it, then release the lock */
		LockRelease(create_lock, ExclusiveLock, false);

		/* a row is there, or being created or deleted: wait for its writer */
		wait_for = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
		if (TransactionIdIsValid(wait_for))
			XactLockTableWait(wait_for, rel, &slot->tts_tid, XLTW_Lock);
		found = fw_table_fetch(rel, index, keys, SnapshotSelf, slot);
	}
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not lock the counter row of a rate limit"),
			 errdetail("The row kept changing while the call waited for it."),
			 errhint("Retry the transaction.")));
	return false;				/* keep compiler quiet */
}

/*
 * Insert a new counter row; returns false, having inserted nothing, if the
 * primary key finds the row already there.
 *
 * The creation lock and the dirty read before it make this rare, but a
 * unique violation is the final word on whether the row exists, so the
 * insertion runs in a subtransaction that a violation rolls back.
 */
static bool
fw_table_insert(Relation rel, Relation index, HeapTuple tuple, Datum name, Datum key)
{
	MemoryContext oldcontext = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	volatile bool inserted = true;	/* set in PG_CATCH, read after it */

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(oldcontext);
	PG_TRY();
	{
		simple_heap_insert(rel, tuple);
		fw_index_insert(rel, index, tuple, name, key, false);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(oldcontext);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcontext);
		CurrentResourceOwner = oldowner;
		if (edata->sqlerrcode != ERRCODE_UNIQUE_VIOLATION)
			ReThrowError(edata);
		FreeErrorData(edata);
		inserted = false;
	}
	PG_END_TRY();
	return inserted;
}

/*
 * Open the counter table and its index for a call.  DROP EXTENSION may
 * have removed them since they were found (the call then waited for its
 * lock and finds them gone): look again, and report a missing extension
 * rather than a missing relation.
 */
static void
fw_table_open(LOCKMODE lockmode, Relation *rel, Relation *index)
{
	int			attempt;

	for (attempt = 0; attempt < FW_OPEN_ATTEMPTS; attempt++)
	{
		Oid			relid;
		Oid			indexid;

		fw_table_find(&relid, &indexid, attempt > 0);
		*rel = try_relation_open(relid, lockmode);
		if (*rel == NULL)
		{
			fw_table_relid = fw_table_indexid = InvalidOid;
			continue;
		}
		*index = try_relation_open(indexid, lockmode);
		if (*index != NULL && (*index)->rd_rel->relkind == RELKIND_INDEX)
		{
			fw_table_check_columns(*rel, *index);
			return;
		}
		if (*index != NULL)
			relation_close(*index, lockmode);
		relation_close(*rel, lockmode);
		fw_table_relid = fw_table_indexid = InvalidOid;
	}
	fw_missing_extension_error(true);
}

/*
 * Apply one call to the row of id, as fw_shmem_apply does to a counter in
 * shared memory: decide it on the state found (none for a new key) at the
 * time read after the key's lock is held and, when consume is true, store
 * the state after it if the call is allowed.  A denied call changes the
 * row's statistics only, and creates no row.
 */
FwApplyResult
fw_table_apply(const FwIdentity *id, const FwLimit *limit, bool consume,
			   FwDecision *decision)
{
	LOCKMODE	lockmode = consume ? RowExclusiveLock : AccessShareLock;
	Relation	rel;
	Relation	index;
	ScanKeyData keys[2];
	TupleTableSlot *slot;
	LOCKTAG		create_lock;
	Datum		name;
	Datum		key;
	bool		found;
	FwState		state;
	Datum		values[FW_TABLE_NATTS];
	bool		nulls[FW_TABLE_NATTS];
	FwApplyResult result = FW_APPLY_OK;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("fixed_window cannot keep counters in its table on a standby"),
				 errdetail("A standby cannot write, and its unlogged tables are empty."),
				 errhint("Preload fixed_window on the standby and set fixed_window.storage to auto or shmem: "
						 "shared-memory counters work there, local to the standby.")));
	if (consume && XactReadOnly)
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot spend rate limit tokens in a read-only transaction"),
				 errhint("fw_check answers without spending.")));

	fw_table_open(lockmode, &rel, &index);

	name = PointerGetDatum(cstring_to_text_with_len(id->name, id->name_len));
	key = PointerGetDatum(cstring_to_text_with_len(id->key, id->key_len));
	ScanKeyInit(&keys[0], COL_NAME + 1, BTEqualStrategyNumber, F_TEXTEQ, name);
	ScanKeyInit(&keys[1], COL_KEY + 1, BTEqualStrategyNumber, F_TEXTEQ, key);
	fw_key_locktag(&create_lock, fw_identity_hash64(id));
	slot = table_slot_create(rel, NULL);

retry:
	CHECK_FOR_INTERRUPTS();
	found = fw_table_fetch(rel, index, keys, SnapshotSelf, slot);
	if (consume)
		found = fw_table_lock(rel, index, keys, slot, found, &create_lock);
	if (found)
	{
		/* the row as it is; a call changes some of its columns */
		slot_getallattrs(slot);
		memcpy(values, slot->tts_values, sizeof(values));
		memcpy(nulls, slot->tts_isnull, sizeof(nulls));
		state.window_start = DatumGetTimestampTz(values[COL_WINDOW_START]);
		state.window_end = DatumGetTimestampTz(values[COL_WINDOW_END]);
		state.tokens = DatumGetInt32(values[COL_TOKENS]);
	}

	if (fw_decide(limit, found ? &state : NULL, fw_clock_now(), decision) != FW_STATUS_OK)
	{
		result = FW_APPLY_OUT_OF_RANGE;
		if (consume && !found)
			LockRelease(&create_lock, ExclusiveLock, false);
	}
	else if (consume && (found || decision->ok))
	{
		HeapTuple	tuple;

		if (!found)
		{
			memset(nulls, 0, sizeof(nulls));
			values[COL_NAME] = name;
			values[COL_KEY] = key;
			values[COL_CALLS] = Int64GetDatum(0);
			values[COL_ALLOWED] = Int64GetDatum(0);
			values[COL_DENIED] = Int64GetDatum(0);
			nulls[COL_LAST_DENIED_AT] = true;
			values[COL_SINCE] = TimestampTzGetDatum(decision->now);
		}
		if (decision->ok)
		{
			values[COL_WINDOW_START] = TimestampTzGetDatum(decision->state.window_start);
			values[COL_WINDOW_END] = TimestampTzGetDatum(decision->state.window_end);
			values[COL_TOKENS] = Int32GetDatum(decision->state.tokens);
			values[COL_RATE] = Int32GetDatum(limit->rate);
			values[COL_CAPACITY] = Int32GetDatum(limit->capacity);
			values[COL_FRESH_FROM] = TimestampTzGetDatum(decision->fresh_from);
			nulls[COL_FRESH_FROM] = (decision->fresh_from == 0);
			values[COL_FRESH_UNTIL] = TimestampTzGetDatum(decision->fresh_until);
			nulls[COL_FRESH_UNTIL] = (decision->fresh_until == PG_INT64_MAX);
			values[COL_USERID] = ObjectIdGetDatum(GetUserId());
			values[COL_ALLOWED] = Int64GetDatum(DatumGetInt64(values[COL_ALLOWED]) + 1);
		}
		else
		{
			/* a denial changes the row's statistics, nothing else */
			values[COL_DENIED] = Int64GetDatum(DatumGetInt64(values[COL_DENIED]) + 1);
			values[COL_LAST_DENIED_AT] = TimestampTzGetDatum(decision->now);
			nulls[COL_LAST_DENIED_AT] = false;
		}
		values[COL_CALLS] = Int64GetDatum(DatumGetInt64(values[COL_CALLS]) + 1);

		tuple = heap_form_tuple(RelationGetDescr(rel), values, nulls);
		if (found)
		{
			if (fw_heap_update(rel, &slot->tts_tid, tuple))
				fw_index_insert(rel, index, tuple, name, key, true);
		}
		else
		{
			bool		inserted = fw_table_insert(rel, index, tuple, name, key);

			LockRelease(&create_lock, ExclusiveLock, false);
			/* another transaction created the row after all: use it */
			if (!inserted)
				goto retry;
		}
		/* let later calls of this transaction see the row */
		CommandCounterIncrement();
	}
	else if (consume && !found)
		LockRelease(&create_lock, ExclusiveLock, false);	/* no row to create */

	ExecDropSingleTupleTableSlot(slot);
	index_close(index, NoLock);
	table_close(rel, NoLock);
	return result;
}
