/*-------------------------------------------------------------------------
 *
 * shmem_resize.c
 *	  Replacing the table of shared memory's counters by one of another
 *	  size, copying the counters, and following fixed_window.max_counters
 *	  (see shmem_internal.h).
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "segment.h"
#include "settings.h"
#include "shmem_internal.h"
#include "subxact.h"

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
	FwOwners	owners;
	FwCounterData data = counter->data;
	uint32		slot;

	if (fwshmem_forgettable(&data, copy->now) ||
		(copy->drop_ended && fwshmem_reclaimable(&data, copy->now)))
		return false;
	fwshmem_counter_text(counter, FW_TEXT_LOAD, NULL, text);

	/* the new table's entries of databases[] and roles[] are the old one's */
	owners.database = counter->database;
	owners.dbid = fw_shared->databases[counter->database].oid;
	owners.role = counter->role;
	owners.roleid = fw_shared->roles[counter->role].oid;
	owners.unbounded = true;

	fwshmem_use(copy->to);
	slot = fwshmem_insert_stored(counter->dbid, text, counter->name_len, counter->key_len,
								 &owners, &data);
	/* checked beforehand: the new table has room for every slot copied */
	if (slot == FW_NIL)
		elog(ERROR, "no room for a counter while copying the table of fixed_window");
	Assert(fw_slots[slot].counter.hash == counter->hash);
	copy->copied++;

	fwshmem_use(copy->from);
	return false;
}

/*
 * The table follows nslots as fixed_window.max_counters from now: the
 * setting is nslots since fw_resize_counters recorded it (ALTER SYSTEM), so
 * that a backend that read the configuration before does not undo it.
 */
void
fwshmem_record_setting(uint32 nslots)
{
	if (!fwshmem_lock(FW_ADMIN_LOCK, LW_EXCLUSIVE))
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
		/* the registry's lock keeps the table from being replaced */
		if (!fwshmem_lock_all() || fw_segment != copy.from)
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
		fwshmem_unlock_all();
		fwsegment_discard(copy.to);
		if (same)
			return 0;
		fwshmem_resize_refused(nslots, *old_nslots, &refusal);
	}

	/* from here on, every backend that takes a lock of the old table moves */
	fwsegment_replace(copy.from, copy.to);
	fwshmem_unlock_all();
	(void) fwshmem_attach(true);
	ereport(LOG,
			(errmsg("fixed_window moved %u counters to a table of %u slots (was %u)",
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
		PgReloadTime == followed || !fwshmem_lock(FW_ADMIN_LOCK, LW_EXCLUSIVE))
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
