/*-------------------------------------------------------------------------
 *
 * table_store.h
 *	  Counters in the extension's unlogged table, for any server.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_TABLE_STORE_H
#define FW_TABLE_STORE_H

#include "decide.h"

extern FwApplyResult fwtable_apply(const FwCall *call, FwOutcome *outcome);
extern bool fwtable_foreach(FwCounterVisitor visitor, void *arg);

#endif							/* FW_TABLE_STORE_H */
