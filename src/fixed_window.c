/*-------------------------------------------------------------------------
 *
 * fixed_window.c
 *	  Module entry point of the fixed_window extension: the one place that
 *	  shows what it plugs into.
 *
 * The settings are defined whenever the library is loaded, and so is the
 * hook that tells the shared memory parts -- the counters and the
 * statistics, peers that know nothing of each other -- when a database is
 * dropped.  Both live in dynamic shared memory that any backend can create
 * (segment.c); when the library is in shared_preload_libraries, the
 * registry that finds them is requested with the main shared memory, and
 * the keeper, which saves the counters at shutdown, starts with the server.
 *
 * The files of src/ form layers, each using only those below it; the one
 * map of them, and of how functions are named, is scripts/check_layers.sh,
 * which make test runs.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "commands/tablespace.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "tcop/utility.h"

#include "compat.h"
#include "keeper.h"
#include "placeholder.h"
#include "segment.h"
#include "settings.h"
#include "shmem_store.h"
#include "store.h"

PG_MODULE_MAGIC;

#ifdef FW_HAVE_SHMEM_REQUEST_HOOK
static shmem_request_hook_type prev_shmem_request_hook = NULL;
#endif
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ProcessUtility_hook_type prev_process_utility_hook = NULL;

static void
fwinit_shmem_request_hook(void)
{
#ifdef FW_HAVE_SHMEM_REQUEST_HOOK
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
#endif
	fwsegment_request();
}

static void
fwinit_shmem_startup_hook(void)
{
	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	fwsegment_startup();
	LWLockRelease(AddinShmemInitLock);
}

/* Whether a SET of a statement names fixed_window.storage, to a value. */
static bool
fwinit_sets_storage(const VariableSetStmt *set)
{
	return set != NULL && set->name != NULL &&
		(set->kind == VAR_SET_VALUE || set->kind == VAR_SET_CURRENT) &&
		pg_strcasecmp(set->name, "fixed_window.storage") == 0;
}

/*
 * fixed_window.storage is a database's or the server's (see
 * fwsettings_check_storage, which can refuse a role's or a function's
 * value only when a session of the role starts, or the function runs):
 * ALTER ROLE ... SET for one role, with or without IN DATABASE, and ALTER
 * FUNCTION ... SET are refused.  ALTER ROLE ALL, and RESET, are allowed.
 */
static void
fwinit_refuse_storage_scope(Node *parsetree)
{
	bool		refused = false;

	if (IsA(parsetree, AlterRoleSetStmt))
		refused = ((AlterRoleSetStmt *) parsetree)->role != NULL &&
			fwinit_sets_storage(((AlterRoleSetStmt *) parsetree)->setstmt);
	else if (IsA(parsetree, AlterFunctionStmt))
	{
		ListCell   *cell;

		foreach(cell, ((AlterFunctionStmt *) parsetree)->actions)
		{
			DefElem    *action = (DefElem *) lfirst(cell);

			if (strcmp(action->defname, "set") == 0 &&
				fwinit_sets_storage((VariableSetStmt *) action->arg))
				refused = true;
		}
	}
	if (refused)
		ereport(ERROR,
				(errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM),
				errmsg(FW_STORAGE_SCOPE_MESSAGE),
				errdetail(FW_STORAGE_SCOPE_DETAIL),
				errhint(FW_STORAGE_SCOPE_HINT)));
}

/* The tablespace an ALTER DATABASE ... SET TABLESPACE moves a database to. */
static Oid
fwinit_moved_to(Node *parsetree)
{
	ListCell   *cell;

	if (!IsA(parsetree, AlterDatabaseStmt))
		return InvalidOid;
	foreach(cell, ((AlterDatabaseStmt *) parsetree)->options)
	{
		DefElem    *option = (DefElem *) lfirst(cell);

		if (strcmp(option->defname, "tablespace") == 0)
			return get_tablespace_oid(defGetString(option), false);
	}
	return InvalidOid;
}

/*
 * DROP DATABASE: once the database is gone, so are its counters and
 * statistics, so that a database created later with the same OID does not
 * inherit them.  Only after the drop succeeded: it can still fail after
 * the drop's own object-access hook, for example while other sessions are
 * connected.  ALTER DATABASE ... SET TABLESPACE writes the database's
 * PG_VERSION anew, which tells databases of one OID apart (see
 * fwidentity_database_marker): once it is done, its counters and
 * statistics take the new mark, before any session can connect to it.
 */
static void
fwinit_process_utility_hook(PlannedStmt *pstmt, const char *queryString,
							bool readOnlyTree, ProcessUtilityContext context,
							ParamListInfo params, QueryEnvironment *queryEnv,
							DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	Oid			dropped = InvalidOid;
	Oid			moved = InvalidOid;
	Oid			tablespace = InvalidOid;

	fwinit_refuse_storage_scope(parsetree);
	if (IsA(parsetree, DropdbStmt))
		dropped = get_database_oid(((DropdbStmt *) parsetree)->dbname, true);
	else if (OidIsValid(tablespace = fwinit_moved_to(parsetree)))
		moved = get_database_oid(((AlterDatabaseStmt *) parsetree)->dbname, true);

	if (prev_process_utility_hook)
		prev_process_utility_hook(pstmt, queryString, readOnlyTree,
								  context, params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree,
								context, params, queryEnv, dest, qc);

	if (OidIsValid(dropped))
		fwstore_forget_database(dropped);
	if (OidIsValid(moved))
		fwstore_database_moved(moved, tablespace);
}

void
_PG_init(void)
{
	List	   *held;

	/*
	 * Loaded into a running session, the settings may have had values that
	 * a role may not give them: the admin's values then stand (see
	 * placeholder.c).
	 */
	held = fwplaceholder_note();
	fwsettings_define();
	fwshmem_define_settings();
	fwshmem_start_keeper_hook = fwkeeper_start;
	MarkGUCPrefixReserved("fixed_window");
	fwplaceholder_restore(held);

	/*
	 * Without preloading, only sessions that loaded the library see a DROP
	 * DATABASE; the keeper forgets the databases the others dropped.
	 */
	prev_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = fwinit_process_utility_hook;

	if (process_shared_preload_libraries_in_progress)
	{
		fw_preloaded = true;
#ifdef FW_HAVE_SHMEM_REQUEST_HOOK
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = fwinit_shmem_request_hook;
#else
		fwinit_shmem_request_hook();
#endif
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = fwinit_shmem_startup_hook;
		fwkeeper_start(false);
	}
}
