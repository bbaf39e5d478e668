/*-------------------------------------------------------------------------
 *
 * keeper.c
 *	  The keeper: a background worker that looks after the counters in
 *	  shared memory for the life of the server.
 *
 * It is started with the server when the library is preloaded, and by the
 * backend that creates the counters' table otherwise (shmem_store.c, which
 * names fwkeeper_main).  It
 *
 *	- creates the table at start, with the counters saved at the last clean
 *	  shutdown, when it is the first to need it (a preloaded server);
 *	- resizes the table when a reload changes fixed_window.max_counters;
 *	- forgets, once a second, the counters and statistics of databases that
 *	  were dropped by sessions that had not loaded the library, which the
 *	  hook in fixed_window.c could not see: without preloading, only the
 *	  sessions that called fixed_window have it;
 *	- at a clean shutdown (SIGTERM), saves the counters once every other
 *	  backend has unmapped them.
 *
 * It connects to no database: it reads only pg_database, a shared catalog.
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
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/guc.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "settings.h"
#include "shmem_store.h"
#include "stats.h"

#define FW_SWEEP_MS		1000	/* how often dropped databases are looked for */

PGDLLEXPORT void fwkeeper_main(Datum arg);

static volatile sig_atomic_t fw_stopping = false;

static void
fwkeeper_sigterm(SIGNAL_ARGS)
{
	int			save_errno = errno;

	fw_stopping = true;
	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * Forget the databases that hold counters and are no longer in
 * pg_database.  Those holding counters are read before the snapshot, so
 * that a database is missing from it only if it was dropped: one created
 * since could not have held counters before it.
 */
static void
fwkeeper_sweep(void)
{
	Oid			held[FW_MAX_DATABASES];
	bool		exists[FW_MAX_DATABASES] = {false};
	int			nheld = fwshmem_databases(held);
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	int			i;

	if (nheld == 0)
		return;
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Oid			dbid = ((Form_pg_database) GETSTRUCT(tuple))->oid;

		for (i = 0; i < nheld; i++)
			if (held[i] == dbid)
				exists[i] = true;
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	PopActiveSnapshot();
	CommitTransactionCommand();

	for (i = 0; i < nheld; i++)
	{
		if (exists[i])
			continue;
		fwshmem_drop_database(held[i]);
		fwstats_forget_database(held[i]);
		ereport(LOG,
				(errmsg("fixed_window forgot the counters of dropped database %u", held[i])));
	}
}

/* Resize to a reloaded fixed_window.max_counters; an error is only logged. */
static void
fwkeeper_resize(void)
{
	MemoryContext context = CurrentMemoryContext;
	uint32		before;

	PG_TRY();
	{
		(void) fwshmem_resize((uint32) fw_max_counters, &before);
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(context);
		LWLockReleaseAll();
		EmitErrorReport();
		FlushErrorState();
	}
	PG_END_TRY();
}

void
fwkeeper_main(Datum arg)
{
	pqsignal(SIGTERM, fwkeeper_sigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	/* a preloaded server's table exists from the start, loaded */
	fwshmem_open();

	while (!fw_stopping)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 FW_SWEEP_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			int			before = fw_max_counters;

			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			/* only a changed setting: fw_resize_counters may have set another size */
			if (fw_max_counters != before && (uint32) fw_max_counters != fwshmem_slots())
				fwkeeper_resize();
		}
		if (!fw_stopping)
			fwkeeper_sweep();
	}
	fwshmem_save_at_shutdown();
	proc_exit(0);
}
