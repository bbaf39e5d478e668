/*-------------------------------------------------------------------------
 *
 * call.h
 *	  One call of a limit given inline or of a named policy: its windows.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_CALL_H
#define FW_CALL_H

#include "decide.h"
#include "policy.h"

extern void fwcall_inline(FwCall *call, FwMode mode, const char *name, int name_len,
						  const char *key, int key_len, int32 rate,
						  const Interval *period, const TimestampTz *start,
						  int32 cost, const int32 *capacity);
extern void fwcall_named(FwCall *call, FwMode mode, const char *name, int name_len,
						 const char *key, int key_len, int32 cost);

#endif							/* FW_CALL_H */
