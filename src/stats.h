/*-------------------------------------------------------------------------
 *
 * stats.h
 *	  Per-limit statistics of calls answered from shared memory.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_STATS_H
#define FW_STATS_H

#include "identity.h"
#include "settings.h"

/* Limit names whose statistics shared memory keeps, over all databases. */
#define FW_MAX_STATS		1024

/* One limit's statistics as readers see them. */
typedef struct FwStatsView
{
	const char *name;			/* NULL: calls of names that found no entry */
	int			name_len;
	uint64		calls;
	uint64		allowed;
	uint64		denied;
	uint64		shadow_denied;
	uint64		no_room;		/* calls that found no room for a counter */
	TimestampTz last_denied_at; /* 0 for never */
	TimestampTz since;
} FwStatsView;

typedef void (*FwStatsVisitor) (const FwStatsView *stats, void *arg);

/* How many names have entries, in all and by database (fwstats_usage). */
typedef struct FwStatsUsage
{
	uint32		named;			/* of FW_MAX_STATS */
	uint32		database_limit; /* the most one database may name */
	Size		bytes;			/* of the statistics' segment */
	int			ndatabases;		/* databases that name any */
	Oid			dbids[FW_MAX_DATABASES];
	uint32		database_named[FW_MAX_DATABASES];
} FwStatsUsage;

extern void fwstats_open(void);
extern void fwstats_count(const FwIdentity *id, const FwDecision *decision,
						  const FwVerdict *verdict, bool no_room);
extern void fwstats_count_refused(const FwIdentity *id, TimestampTz now);
extern void fwstats_foreach(Oid dbid, FwStatsVisitor visitor, void *arg);
extern int	fwstats_databases(Oid *dbids, int max);
extern bool fwstats_usage(FwStatsUsage *usage);
extern void fwstats_forget_database(Oid dbid, bool dropped);
extern void fwstats_database_moved(Oid dbid, uint64 marker);

#endif							/* FW_STATS_H */
