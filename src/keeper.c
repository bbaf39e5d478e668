/*-------------------------------------------------------------------------
 *
 * keeper.c
 *	  The keeper: a background worker that looks after the counters in
 *	  shared memory for the life of the server.
 *
 * It is started with the server when the library is preloaded, and by the
 * backend that creates the counters' table otherwise (fwkeeper_start, which
 * _PG_init gives shmem_store.c as fwshmem_start_keeper_hook).  It
 *
 *	- creates the table at start, with the counters saved at the last clean
 *	  shutdown, when it is the first to need it (a preloaded server);
 *	- resizes the table when a reload changes fixed_window.max_counters
 *	  (fwshmem_follow_setting), and as it starts, to a size asked for while
 *	  none ran;
 *	- forgets, once a second, the counters and statistics of databases that
 *	  were dropped by sessions that had not loaded the library, which the
 *	  hook in fixed_window.c could not see: without preloading, only the
 *	  sessions that called fixed_window have it (fwstore_sweep);
 *	- at a clean shutdown (SIGTERM), saves the counters once every other
 *	  backend has unmapped them.
 *
 * One keeper runs at a time: it names itself in the registry (segment.c),
 * and a second one started meanwhile exits at once.  A keeper that is
 * terminated (pg_terminate_backend sends SIGTERM too) while the server
 * runs saves the counters, for a clean shutdown that would come before the
 * next keeper (fwshmem_save_now), and exits with status 1, so that the
 * postmaster starts it again: the postmaster.pid file says whether the
 * server is stopping.
 * It ignores SIGINT (pg_cancel_backend): it runs no statement to cancel.
 * Should it not come back, the next backend that maps the counters starts
 * another (fwkeeper_start); while none runs, backends' calls resize and
 * forget dropped databases themselves.
 *
 * It connects to no database: it reads only pg_database, a shared catalog.
 * It sits above the store (store.c), whose sweep it runs.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/fd.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "utils/guc.h"
#include "utils/pidfile.h"
#include "utils/wait_event.h"

#include "keeper.h"
#include "segment.h"
#include "settings.h"
#include "shmem_store.h"
#include "store.h"

#define FW_SWEEP_MS		1000	/* how often dropped databases are looked for */
#define FW_PID_FILE		"postmaster.pid"	/* miscinit.c's, in the data directory */

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
 * Whether the server is shutting down, as its postmaster.pid file says:
 * the postmaster writes "stopping" there before it signals any process.
 * A file that cannot be read says no: the keeper then exits without saving
 * and, the server stopping, is not started again.
 */
static bool
fwkeeper_server_stopping(void)
{
	FILE	   *file = AllocateFile(FW_PID_FILE, "r");
	char		line[MAXPGPATH];
	int			lineno = 0;
	bool		stopping = false;

	if (file == NULL)
		return false;
	while (fgets(line, sizeof(line), file) != NULL)
	{
		if (++lineno == LOCK_FILE_LINE_PM_STATUS)
		{
			stopping = strncmp(line, PM_STATUS_STOPPING, strlen(PM_STATUS_STOPPING)) == 0;
			break;
		}
	}
	FreeFile(file);
	return stopping;
}

/*
 * At a clean shutdown, unless fixed_window.save is off: once the other
 * backends have unmapped the table, save it, holding every lock of it so
 * that the file is one state of the table.  Walsenders are not waited for:
 * they exit after the keeper (see segment.c), and a call made over a
 * replication connection after the save is not in the file.
 */
#define FW_UNMAP_POLL_MS	10

static void
fwkeeper_save_at_shutdown(void)
{
	while (fwshmem_mapped_by_others())
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 FW_UNMAP_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	fwshmem_save_now();
}

/* At exit, however it comes: let another keeper run. */
static void
fwkeeper_exit(int code, Datum arg)
{
	fwsegment_keeper_end();
}

void
fwkeeper_main(Datum arg)
{
	pqsignal(SIGTERM, fwkeeper_sigterm);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGINT, SIG_IGN);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);

	/*
	 * A keeper of a library installed while the server runs, whose shared
	 * memory an earlier library made, has nothing it may keep: it says so
	 * and ends for good (status 0), rather than fail and start every second.
	 */
	if (fwsegment_other_version())
	{
		ereport(LOG,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("fixed_window keeper not started"),
				errdetail("The shared memory of fixed_window was made by another version of its library."),
				errhint("Restart the server to use the library installed now.")));
		proc_exit(0);
	}
	if (!fwsegment_keeper_begin())
		proc_exit(0);			/* another keeper runs: this one is not needed */
	before_shmem_exit(fwkeeper_exit, (Datum) 0);

	fwshmem_keeper_begin();

	while (!fw_stopping)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 FW_SWEEP_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			fwshmem_follow_setting();
		}
		if (!fw_stopping)
			fwstore_sweep();
	}
	if (!fwkeeper_server_stopping())
	{
		fwshmem_save_now();
		ereport(LOG,
				(errcode(ERRCODE_ADMIN_SHUTDOWN),
				errmsg("fixed_window keeper terminated while the server runs"),
				errdetail("It saved the counters, for a shutdown before it starts again in a moment.")));
		proc_exit(1);
	}
	fwkeeper_save_at_shutdown();
	proc_exit(0);
}

/*
 * Start the keeper: from _PG_init when preloading (a worker the postmaster
 * starts with the server), otherwise from a backend that finds no keeper
 * running (fwshmem_attach, through fwshmem_start_keeper_hook).  Either is
 * started again by the postmaster when it stops other than at a shutdown,
 * and after a crash.
 */
#define FW_KEEPER_RESTART_S	1
void
fwkeeper_start(bool dynamic)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = FW_KEEPER_RESTART_S;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "fixed_window");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "fwkeeper_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "fixed_window keeper");
	snprintf(worker.bgw_type, BGW_MAXLEN, "fixed_window keeper");
	if (!dynamic)
		RegisterBackgroundWorker(&worker);
	else if (!RegisterDynamicBackgroundWorker(&worker, NULL))
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("could not start the fixed_window keeper"),
				errdetail("The counters in shared memory will not be saved at shutdown."),
				errhint("Raise max_worker_processes (restart), or add fixed_window to shared_preload_libraries.")));
}
