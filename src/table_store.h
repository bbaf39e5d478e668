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

/*
 * Limit names whose statistics the table keeps apart, per database (the
 * names of fw_stat); the calls of other names are counted together.
 */
#define FW_TABLE_MAX_STATS	1024

extern FwApplyResult fwtable_apply(const FwCall *call, FwOutcome *outcome);
extern bool fwtable_foreach(FwCounterVisitor visitor, void *arg);

#endif							/* FW_TABLE_STORE_H */
