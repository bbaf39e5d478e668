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
extern void fwstore_forget_database(Oid dbid);
extern void fwstore_database_moved(Oid dbid, Oid tablespace);
extern int64 fwstore_remove(const char *name, int name_len, const char *key, int key_len);

#endif							/* FW_STORE_H */
