/*-------------------------------------------------------------------------
 *
 * shmem_store.c
 *	  Counters in shared memory: mapping the table, the shares of
 *	  databases and roles, applying a call, walks, removing, reclaiming, and
 *	  what the table holds (see shmem_internal.h for its layout and locks).
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
#include "shmem_internal.h"
#include "shmem_store.h"
#include "subxact.h"

static bool fwshmem_attach_session(bool create);

int			fw_max_counters = FW_DEFAULT_COUNTERS;
bool		fw_save = true;

/* Starts the keeper (keeper.c), set by _PG_init: see fwshmem_attach. */
fwshmem_start_keeper_hook_type fwshmem_start_keeper_hook = NULL;

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

/*
 * Map the current table, creating it if there is none and create is true.
 * Returns whether there is one.  The caller holds none of its locks.
 * Readers and removers create it only when counters were saved at the last
 * clean shutdown (fwshmem_saved), which they would otherwise miss.
 */
bool
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
			segment = fwsegment_map(FW_SEGMENT_COUNTERS, fwshmem_first_size,
									fwshmem_init_first, &load);
		}
		else
			segment = fwsegment_map(FW_SEGMENT_COUNTERS, NULL, NULL, NULL);
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
	if (segment != NULL && fwshmem_start_keeper_hook != NULL &&
		fwsegment_keeper_wanted(fw_preloaded))
		fwshmem_start_keeper_hook(true);
	return segment != NULL;
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
int
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
 * checked for room, so that fw_check says what fw_limit would do.  When
 * there is none, *usage says why.
 */
static FwApplyResult
fwshmem_apply_once(const FwCall *call, const FwOwners *owners, FwOutcome *outcome,
				   bool *moved, FwShmemUsage *usage)
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
		result = fwshmem_insert(buckets[i], &call->ids[i], owners, &slots[i], moved, usage);
		if (result == FW_APPLY_OK && *moved)
			result = FW_APPLY_FULL; /* taken out below, then tried again */
		created[i] = (result == FW_APPLY_OK);
	}
	if (needed > 0)
		result = fwshmem_alloc_slots(needed, owners, false, NULL, moved, usage);

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
	uint32		prev;
	uint32		slot;

	if (!fwshmem_attach_session(fwshmem_saved()))
		return false;
	/* the partition's index is the same in a table that replaces this one */
	if (!fwshmem_lock(id->hash & (FW_NUM_PARTITIONS - 1), LW_EXCLUSIVE))
		return false;
	bucket = id->hash & (fw_shared->nbuckets - 1);
	slot = fwshmem_find(bucket, id, &prev, PG_INT64_MIN, NULL, 0);
	if (slot != FW_NIL)
		fwshmem_unlink(bucket, slot, prev);
	LWLockRelease(fwshmem_partition_lock(bucket));
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
fwshmem_apply_owned(const FwCall *call, FwOwners *owners, FwOutcome *outcome,
					FwShmemUsage *usage)
{
	FwApplyResult result = FW_APPLY_ROLE_FULL;
	bool		moved;
	int			attempt;

	for (attempt = 0; attempt < FW_OWNER_ATTEMPTS; attempt++)
	{
		result = fwshmem_apply_once(call, owners, outcome, &moved, usage);
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
 * again on the new one.  When it finds no room, *usage says how full the
 * table was, as read under the mutex when that was decided.
 */
FwApplyResult
fwshmem_apply(const FwCall *call, FwOutcome *outcome, FwShmemUsage *usage)
{
	FwOwners	owners;
	FwApplyResult result;
	int			i;

	Assert(call->n > 0 && call->ids[0].dbid == MyDatabaseId);
	memset(usage, 0, sizeof(FwShmemUsage));
	for (;;)
	{
		(void) fwshmem_attach_session(true);

		/*
		 * With many keys a counter's bucket is rarely in cache: start
		 * loading it while the owners are found and the locks taken.
		 */
		for (i = 0; i < call->n; i++)
			FW_PREFETCH(&fw_buckets[call->ids[i].hash & (fw_shared->nbuckets - 1)]);
		/* a reloaded size that no keeper runs to apply (a hint: checked again) */
		if (unlikely(fw_shared->setting != (uint32) fw_max_counters) && !fwsegment_keeper_running())
			fwshmem_follow_setting();
		fwshmem_my_owners(&owners);
		result = fwshmem_apply_owned(call, &owners, outcome, usage);
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
		result = fwshmem_apply_owned(call, &owners, outcome, usage);

		/*
		 * Judged no later than the real clock, so that a session whose
		 * fixed_window.debug_now lies ahead cannot reclaim live counters.
		 */
		if (fwdecide_no_room(result) &&
			fwshmem_reclaim(fwsettings_clock_no_later(outcome->decisions[0].now)) > 0)
		{
			fwshmem_my_owners(&owners);
			result = fwshmem_apply_owned(call, &owners, outcome, usage);
		}
		LWLockRelease(fwshmem_admin_lock());
		/* a table is replaced only under its admin lock, which this call held */
		Assert(result != FW_APPLY_RETIRED);
		return result;
	}
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

	/* a new table has the entry only if a counter moved there */
	if (!fwshmem_lock(FW_ADMIN_LOCK, LW_EXCLUSIVE))
		return;
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

	if (marker == 0 || !fwshmem_lock(FW_ADMIN_LOCK, LW_EXCLUSIVE))
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
				(errmsg("fixed_window forgot the counters of an earlier database with OID %u", dbid),
				errdetail("Another database of this OID was dropped, or this one moved to another tablespace, while no session with the library saw it.")));
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

	if (!fwshmem_lock(FW_ADMIN_LOCK, LW_EXCLUSIVE))
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

/*
 * The keeper, as it starts: the table of a preloaded server exists from the
 * start, loaded; a size asked for while no keeper ran is applied; the save
 * of a keeper terminated before it is forgotten, since this one saves at
 * the shutdown (fwshmem_forget_running_save).
 */
void
fwshmem_keeper_begin(void)
{
	(void) fwshmem_attach(true);
	fwshmem_follow_setting();
	fwshmem_forget_running_save();
}

/*
 * Whether backends other than the caller (walsenders aside) still map the
 * table: the keeper waits for them to go before it saves at a clean
 * shutdown.
 */
bool
fwshmem_mapped_by_others(void)
{
	return fwshmem_attach(false) && pg_atomic_read_u32(&fw_segment->attached) > 1;
}
