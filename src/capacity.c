/*-------------------------------------------------------------------------
 *
 * capacity.c
 *	  How full shared memory is, for fw_capacity: the counters' table in
 *	  all, each database's and each role's share of it, and the entries of
 *	  the statistics; and the bound of the table backend's statistics.
 *
 * Counts only: no key, no limit name.  Databases and roles are named as
 * pg_database and pg_roles name them to everyone; one dropped since it took
 * its slots is named by its OID.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "compat.h"
#include "settings.h"
#include "shmem_store.h"
#include "stats.h"
#include "table_store.h"

PG_FUNCTION_INFO_V1(fw_shmem_capacity);
PG_FUNCTION_INFO_V1(fw_table_stats_limit);

#define FW_CAPACITY_COLS	7

/*
 * One row: scope, name (NULL for none), capacity, used, live, reclaimable,
 * bytes (NULL when negative: a share has no memory of its own).
 */
static void
fwcapacity_row(ReturnSetInfo *rsinfo, const char *scope, const char *name,
			   int64 capacity, int64 live, int64 reclaimable, int64 bytes)
{
	Datum		values[FW_CAPACITY_COLS];
	bool		nulls[FW_CAPACITY_COLS] = {false};

	values[0] = CStringGetTextDatum(scope);
	if (name != NULL)
		values[1] = CStringGetTextDatum(name);
	else
		nulls[1] = true;
	values[2] = Int64GetDatum(capacity);
	values[3] = Int64GetDatum(live + reclaimable);
	values[4] = Int64GetDatum(live);
	values[5] = Int64GetDatum(reclaimable);
	values[6] = Int64GetDatum(bytes);
	nulls[6] = (bytes < 0);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/* A database's name, or its OID if it was dropped. */
static char *
fwcapacity_database_name(Oid dbid)
{
	char	   *name = get_database_name(dbid);

	return name != NULL ? name : psprintf("%u", dbid);
}

/* A role's name, or its OID if it was dropped. */
static char *
fwcapacity_role_name(Oid roleid)
{
	char	   *name = GetUserNameFromId(roleid, true);

	return name != NULL ? name : psprintf("%u", roleid);
}

/* The rows of holders, a database's or role's each, named by name_of. */
static void
fwcapacity_holders(ReturnSetInfo *rsinfo, const char *scope, const FwShmemHolder *holders,
				   int n, uint32 limit, char *(*name_of) (Oid oid))
{
	int			i;

	for (i = 0; i < n; i++)
		fwcapacity_row(rsinfo, scope, name_of(holders[i].oid), limit, (int64) holders[i].live,
					   (int64) holders[i].reclaimable, -1);
}

/*
 * fw_shmem_capacity() returns setof (scope, name, capacity, used, live,
 * reclaimable, bytes)
 *
 * Rows: the counters' table (scope "counters": its slots, and the bytes of
 * its segment), then each database and each role that holds slots (their
 * share of the slots as capacity), then the statistics (scope
 * "statistics": names with an entry of their own, of FW_MAX_STATS, then by
 * database, of its share).  Where
 * shared memory holds no table yet, the counters' row gives the size it
 * will have, fixed_window.max_counters, and nothing used; none is created
 * for the asking.
 */
Datum
fw_shmem_capacity(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo;
	FwShmemCapacity capacity;
	FwStatsUsage *stats;

	fwcompat_init_materialized_srf(fcinfo, FW_CAPACITY_COLS);
	rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	if (fwshmem_capacity(&capacity, fwsettings_clock_now()))
	{
		fwcapacity_row(rsinfo, "counters", NULL, capacity.nslots, (int64) capacity.live,
					   (int64) capacity.reclaimable, (int64) capacity.bytes);
		fwcapacity_holders(rsinfo, "database", capacity.databases, capacity.ndatabases,
						   capacity.database_limit, fwcapacity_database_name);
		fwcapacity_holders(rsinfo, "role", capacity.roles, capacity.nroles,
						   capacity.role_limit, fwcapacity_role_name);
	}
	else if (IsUnderPostmaster)
		fwcapacity_row(rsinfo, "counters", NULL, fw_max_counters, 0, 0, 0);

	stats = palloc(sizeof(FwStatsUsage));
	if (fwstats_usage(stats))
	{
		int			i;

		fwcapacity_row(rsinfo, "statistics", NULL, FW_MAX_STATS, stats->named, 0,
					   (int64) stats->bytes);
		for (i = 0; i < stats->ndatabases; i++)
			fwcapacity_row(rsinfo, "statistics", fwcapacity_database_name(stats->dbids[i]),
						   stats->database_limit, stats->database_named[i], 0, -1);
	}
	else if (IsUnderPostmaster)
		fwcapacity_row(rsinfo, "statistics", NULL, FW_MAX_STATS, 0, 0, 0);
	return (Datum) 0;
}

/*
 * fw_table_stats_limit() returns integer
 *
 * How many limit names the table backend keeps the statistics of apart in
 * a database (table_store.c), for fw_table_stats_capacity().
 */
Datum
fw_table_stats_limit(PG_FUNCTION_ARGS)
{
	PG_RETURN_INT32(FW_TABLE_MAX_STATS);
}
