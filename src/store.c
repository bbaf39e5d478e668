/*-------------------------------------------------------------------------
 *
 * store.c
 *	  Choosing the store of a call by fixed_window.storage, counting its
 *	  statistics, and turning every way a store can fail into an error (or,
 *	  with fixed_window.fail_open, an allowed call); forgetting what shared
 *	  memory holds of dropped databases, marking anew what it holds of a
 *	  moved one, and removing the counters of a name or key from it.
 *
 * The SQL-callable functions that mean "the counters, wherever they are"
 * come through here; those that read or size one store by nature
 * (fw_shmem_counters, fw_resize_counters, fw_shmem_capacity, the
 * statistics of shared memory) call its module directly.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "placeholder.h"
#include "policy.h"
#include "segment.h"
#include "settings.h"
#include "shmem_store.h"
#include "stats.h"
#include "store.h"
#include "subxact.h"
#include "table_store.h"
#include "validate.h"

#define FW_FAIL_OPEN_WARNING_MS	(60 * 1000) /* at most one warning a minute */

/* Where counters live, by fixed_window.storage. */
bool
fwstore_use_shmem(void)
{
	fwplaceholder_check_known();
	if (fw_storage == FW_STORAGE_TABLE)
		return false;
	if (fw_storage == FW_STORAGE_AUTO)
		return fw_preloaded && IsUnderPostmaster;
	/* any backend of a running server can: the segment is made on demand */
	if (!IsUnderPostmaster)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("fixed_window cannot keep counters in shared memory in a single-user server"),
				errhint("Set fixed_window.storage to table.")));
	return true;
}

/*
 * Say why shared memory has no room for a new counter; with fail_open, then
 * what the call does instead.
 */
static void
fwstore_full_detail(FwApplyResult result, const FwShmemUsage *usage, bool fail_open)
{
	Oid			roleid = GetSessionUserId();
	const char *rolename = GetUserNameFromId(roleid, true);
	const char *allowed = fail_open ?
		" Calls for new keys are allowed without being counted." : "";

	/* the table's size is the setting's, unless a restart or a resize made it other */
	if (result == FW_APPLY_FULL && usage->nfree > 0 && usage->nslots == (uint32) fw_max_counters)
		errdetail("Of the %u counter slots (fixed_window.max_counters), %u were free, fewer than the %u this counter's name and key need; the others held counters whose windows had not ended.%s",
				  usage->nslots, usage->nfree, usage->needed, allowed);
	else if (result == FW_APPLY_FULL && usage->nfree > 0)
		errdetail("Of the %u counter slots of the table, %u were free, fewer than the %u this counter's name and key need; the others held counters whose windows had not ended.%s",
				  usage->nslots, usage->nfree, usage->needed, allowed);
	else if (result == FW_APPLY_FULL && usage->nslots == (uint32) fw_max_counters)
		errdetail("All %u counter slots (fixed_window.max_counters) hold counters whose windows have not ended.%s",
				  usage->nslots, allowed);
	else if (result == FW_APPLY_FULL)
		errdetail("All %u counter slots of the table hold counters whose windows have not ended; fixed_window.max_counters is %d.%s",
				  usage->nslots, fw_max_counters, allowed);
	else if (result == FW_APPLY_ROLE_FULL && !usage->role_known)
		errdetail("Shared memory already keeps counters of as many roles as it accounts for.%s", allowed);
	else if (result == FW_APPLY_ROLE_FULL)
		errdetail("Role \"%s\" holds %u counter slots in windows that have not ended, in all databases, and one role may hold %u (fixed_window.role_share = %d%% of the table's %u slots).%s",
				  rolename ? rolename : psprintf("%u", roleid), usage->role_slots,
				  usage->role_limit, fw_role_share, usage->nslots, allowed);
	else if (!usage->database_known)
		errdetail("Shared memory already keeps counters of %d databases, the most it accounts for.%s",
				  FW_MAX_DATABASES, allowed);
	else
		errdetail("Database \"%s\" holds %u counter slots in windows that have not ended, and one database may hold %u (fixed_window.database_share = %d%% of the table's %u slots).%s",
				  get_database_name(MyDatabaseId), usage->database_slots,
				  usage->database_limit, fw_database_share, usage->nslots, allowed);
}

/*
 * What to do about it: the bound that was met, nothing else (a share
 * cannot help a full table).  With fail_open, "fail" says what the calls
 * would do otherwise.
 */
static int
fwstore_full_hint(FwApplyResult result, const FwShmemUsage *usage, bool fail_open)
{
	const char *otherwise = fail_open ?
		"This warning repeats at most once a minute per session." :
		"Or set fixed_window.fail_open to allow such calls uncounted.";

	if (result == FW_APPLY_FULL)
		return errhint("Raise fixed_window.max_counters with ALTER SYSTEM and a reload, or call fw_resize_counters(). %s",
					   otherwise);
	if (result == FW_APPLY_ROLE_FULL && !usage->role_known)
		return errhint("Wait until the windows of other roles' counters end. %s", otherwise);
	if (result == FW_APPLY_ROLE_FULL)
		return errhint("Raise fixed_window.role_share (a reload), or fixed_window.max_counters. %s",
					   otherwise);
	if (!usage->database_known)
		return errhint("Wait until the windows of other databases' counters end. %s", otherwise);
	return errhint("Raise fixed_window.database_share (a reload), or fixed_window.max_counters. %s",
				   otherwise);
}

/*
 * Forget the databases that hold counters or statistics in shared memory
 * and are no longer in pg_database: a DROP DATABASE that the hook of
 * fixed_window.c did not see, in a session that had not loaded the
 * library.  Run once a second by the keeper, and by a backend's call while
 * no keeper runs (fwshmem_sweep_due).  Those holding them are read before
 * the snapshot, a new one, so that a database is missing from it only if it
 * was dropped: one created since could not have held counters before it.
 */
#define FW_SWEEP_MAX	(FW_MAX_DATABASES + 4 * FW_MAX_DATABASES)

void
fwstore_sweep(void)
{
	Oid		   *held = palloc(sizeof(Oid) * FW_SWEEP_MAX);
	bool	   *exists;
	int			nheld = fwshmem_databases(held);
	bool		started;
	Relation	rel;
	Snapshot	snapshot;
	TableScanDesc scan;
	HeapTuple	tuple;
	int			i;
	int			j;

	nheld += fwstats_databases(held + nheld, FW_SWEEP_MAX - nheld);
	if (nheld == 0)
	{
		pfree(held);
		return;
	}
	exists = palloc0(sizeof(bool) * nheld);
	started = !IsTransactionState();
	if (started)
		StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	scan = table_beginscan(rel, snapshot, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Oid			dbid = ((Form_pg_database) GETSTRUCT(tuple))->oid;

		for (i = 0; i < nheld; i++)
			if (held[i] == dbid)
				exists[i] = true;
	}
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	if (started)
		CommitTransactionCommand();

	for (i = 0; i < nheld; i++)
	{
		if (exists[i])
			continue;
		/* a database both held counters and statistics: forget it once */
		for (j = i + 1; j < nheld; j++)
			if (held[j] == held[i])
				exists[j] = true;
		fwstore_forget_database(held[i]);
		ereport(LOG,
				(errmsg("fixed_window forgot the counters and statistics of dropped database %u",
					   held[i])));
	}
	pfree(held);
	pfree(exists);
}

static void
fwstore_sweep_step(void *arg)
{
	fwstore_sweep();
}

/*
 * Decide one call on the configured storage; every failure is an error.
 * Calls that spend are counted in the statistics of shared memory, once
 * per call, under the name of the limit or policy.
 */
void
fwstore_apply(const FwCall *call, FwOutcome *outcome)
{
	FwApplyResult result;
	FwShmemUsage usage;
	bool		full;

	if (fwstore_use_shmem())
	{
		/*
		 * No keeper runs to forget dropped databases: this call does; what
		 * fails in it (it reads pg_database) is only logged.
		 */
		if (fwshmem_sweep_due())
			(void) fwsubxact_try_or_log(fwstore_sweep_step, NULL);
		if (call->mode == FW_MODE_SPEND)
			fwstats_open();
		result = fwshmem_apply(call, outcome, &usage);
		full = fwdecide_no_room(result);
		if (call->mode == FW_MODE_SPEND && (result == FW_APPLY_OK || (full && fw_fail_open)))
			fwstats_count(&call->ids[0], &outcome->decisions[0], &outcome->verdict, full);
		else if (call->mode == FW_MODE_SPEND && full)
			fwstats_count_refused(&call->ids[0], fwsettings_clock_now());
	}
	else
	{
		result = fwtable_apply(call, outcome);
		full = false;
	}

	if (result == FW_APPLY_OUT_OF_RANGE)
		fwvalidate_range_error();
	if (full && fw_fail_open)
	{
		static TimestampTz last_warning = 0;
		TimestampTz now = GetCurrentTimestamp();

		/*
		 * A call allowed by every window is answered as for new keys:
		 * allowed, and not counted.  A denied call stays denied, but without
		 * its counters no later time covers its cost: it promises none.
		 */
		fwdecide_no_promise(call, outcome);
		if (TimestampDifferenceExceeds(last_warning, now, FW_FAIL_OPEN_WARNING_MS))
		{
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					errmsg("rate limit counters are full"),
					fwstore_full_detail(result, &usage, true),
					fwstore_full_hint(result, &usage, true)));
			last_warning = now;
		}
		return;
	}
	if (full)
		ereport(ERROR,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("no room for a new rate limit counter"),
				fwstore_full_detail(result, &usage, false),
				fwstore_full_hint(result, &usage, false)));
}

/*
 * Forget what shared memory holds of a dropped database, its counters and
 * its statistics, so that a database created later with its OID does not
 * inherit them: after a DROP DATABASE (the hook of fixed_window.c) and for
 * the databases the sweep finds gone.
 */
void
fwstore_forget_database(Oid dbid)
{
	fwshmem_drop_database(dbid);
	fwstats_forget_database(dbid, true);
}

/*
 * A database moved to another tablespace, whose PG_VERSION was written
 * anew: what shared memory holds of it takes the new mark
 * (fwidentity_database_marker), before any session can connect to it.
 */
void
fwstore_database_moved(Oid dbid, Oid tablespace)
{
	uint64		marker = fwidentity_database_marker_at(dbid, tablespace);

	fwshmem_database_moved(dbid, marker);
	fwstats_database_moved(dbid, marker);
}

typedef struct FwRemoveScan
{
	const char *name;
	int			name_len;
	int64		removed;
} FwRemoveScan;

/* A counter of the name: an inline call's, or of a window of the policy. */
static bool
fwstore_match_name(const FwCounterView *counter, void *arg)
{
	FwRemoveScan *scan = (FwRemoveScan *) arg;

	if (counter->name_len != scan->name_len ||
		memcmp(counter->name, scan->name, scan->name_len) != 0)
		return false;
	scan->removed++;
	return true;
}

/*
 * Remove the counters of (name, key) of this database from shared memory --
 * the inline call's and those of the windows the policy name has now -- or
 * every counter of the name when key is NULL; returns how many.  The
 * table's rows are fw_reset's to delete, in SQL, waiting for the
 * transactions that hold them.
 */
int64
fwstore_remove(const char *name, int name_len, const char *key, int key_len)
{
	FwRemoveScan scan;

	if (key != NULL)
	{
		FwNameKey	nk;
		FwIdentity	id;
		FwPolicyKey policy;
		int64		removed;
		int			i;

		fwidentity_name_key(&nk, name, name_len, key, key_len);
		fwidentity_init(&id, &nk, "", 0, 0);
		removed = fwshmem_remove(&id) ? 1 : 0;
		policy.nwindows = 0;
		if (name_len <= FW_MAX_NAME_BYTES)
			(void) fwpolicy_lookup(name, name_len, NULL, &policy);
		for (i = 0; i < policy.nwindows; i++)
		{
			fwidentity_init(&id, &nk, policy.windows[i].period_id,
							policy.windows[i].period_id_len, policy.windows[i].period_hash);
			removed += fwshmem_remove(&id) ? 1 : 0;
		}
		return removed;
	}

	scan.name = name;
	scan.name_len = name_len;
	scan.removed = 0;
	fwshmem_foreach(fwstore_match_name, &scan, true);
	return scan.removed;
}
