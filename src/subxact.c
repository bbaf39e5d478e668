/*-------------------------------------------------------------------------
 *
 * subxact.c
 *	  Running a step that may fail without failing its caller: within a
 *	  transaction, in a subtransaction that its failure rolls back, which
 *	  releases what the step held (locks, buffers, memory); outside one
 *	  (the keeper), releasing the lightweight locks it held.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "subxact.h"

/*
 * Run step(arg); returns NULL, or the error it raised, copied into the
 * caller's memory context, once everything the step did is undone.
 */
ErrorData *
fwsubxact_try(FwSubxactStep step, void *arg)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	bool		in_transaction = IsTransactionState();
	ErrorData  *volatile error = NULL;

	if (in_transaction)
	{
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(context);
	}
	PG_TRY();
	{
		step(arg);
		if (in_transaction)
		{
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(context);
			CurrentResourceOwner = owner;
		}
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(context);
		error = CopyErrorData();
		FlushErrorState();
		if (in_transaction)
		{
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(context);
			CurrentResourceOwner = owner;
		}
		else
			LWLockReleaseAll();
	}
	PG_END_TRY();
	return error;
}

/*
 * Run step(arg) as fwsubxact_try does; an error it raises is only logged,
 * for the server's log alone.  Returns whether the step succeeded.
 */
bool
fwsubxact_try_or_log(FwSubxactStep step, void *arg)
{
	ErrorData  *error = fwsubxact_try(step, arg);

	if (error == NULL)
		return true;
	error->elevel = LOG;
	error->hide_stmt = true;
	ThrowErrorData(error);
	FreeErrorData(error);
	return false;
}
