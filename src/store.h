/*-------------------------------------------------------------------------
 *
 * store.h
 *	  Choosing the store of a call, and what every call's failure means.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_STORE_H
#define FW_STORE_H

#include "decide.h"

extern bool fwstore_use_shmem(void);
extern void fwstore_apply(const FwCall *call, FwOutcome *outcome);
extern void fwstore_sweep(void);

#endif							/* FW_STORE_H */
