/*-------------------------------------------------------------------------
 *
 * subxact.h
 *	  Running a step that may fail without failing its caller.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_SUBXACT_H
#define FW_SUBXACT_H

typedef void (*FwSubxactStep) (void *arg);

extern ErrorData *fwsubxact_try(FwSubxactStep step, void *arg);
extern bool fwsubxact_try_or_log(FwSubxactStep step, void *arg);

#endif							/* FW_SUBXACT_H */
