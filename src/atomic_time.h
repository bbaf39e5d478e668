/*-------------------------------------------------------------------------
 *
 * atomic_time.h
 *	  A time (an int64, such as a TimestampTz) kept in a pg_atomic_uint64,
 *	  moved one way only by compare and exchange: lowered to the earliest
 *	  of the times offered, or raised to the latest.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_ATOMIC_TIME_H
#define FW_ATOMIC_TIME_H

#include "port/atomics.h"

/* Lower the time in *time to t, unless it is no later already. */
static inline void
fwatomic_time_lower(pg_atomic_uint64 *time, int64 t)
{
	uint64		old = pg_atomic_read_u64(time);

	while ((int64) old > t && !pg_atomic_compare_exchange_u64(time, &old, (uint64) t))
		;
}

/* Raise the time in *time to t, unless it is no earlier already. */
static inline void
fwatomic_time_raise(pg_atomic_uint64 *time, int64 t)
{
	uint64		old = pg_atomic_read_u64(time);

	while ((int64) old < t && !pg_atomic_compare_exchange_u64(time, &old, (uint64) t))
		;
}

#endif							/* FW_ATOMIC_TIME_H */
