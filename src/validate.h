/*-------------------------------------------------------------------------
 *
 * validate.h
 *	  A limit as a call gives it or a policy defines it, checked: rate,
 *	  period, start, capacity and cost.
 *
 * Beside identity.h, above the window arithmetic (window.h) and below the
 * stores: a limit is checked once, when it is given or defined, and the
 * stores see only checked limits.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_VALIDATE_H
#define FW_VALIDATE_H

#include "datatype/timestamp.h"

#include "compat.h"
#include "window.h"

extern void fwvalidate_limit(FwLimit *limit, int32 rate, const Interval *period,
							 const TimestampTz *start, const int32 *capacity);
extern void fwvalidate_cost(FwLimit *limit, uint64 hash64, int32 cost, bool phase,
							bool within_capacity);
extern void fwvalidate_now(const FwLimit *limit, bool phase, int64 now);
pg_noreturn extern void fwvalidate_range_error(void);

#endif							/* FW_VALIDATE_H */
