/*-------------------------------------------------------------------------
 *
 * settings.c
 *	  The settings every part of fixed_window reads, and its clock.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/elog.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "settings.h"

int			fw_storage = FW_STORAGE_AUTO;
bool		fw_preloaded = false;	/* in shared_preload_libraries */
bool		fw_fail_open = false;
int			fw_database_share = 50;
int			fw_role_share = 50;

static const struct config_enum_entry fw_storage_options[] = {
	{"auto", FW_STORAGE_AUTO, false},
	{"shmem", FW_STORAGE_SHMEM, false},
	{"table", FW_STORAGE_TABLE, false},
	{NULL, 0, false}
};

static char *fw_debug_now_text = NULL;
static bool fw_debug_now_set = false;
static TimestampTz fw_debug_now = 0;

/*
 * Parse fixed_window.debug_now without throwing: check hooks must report
 * problems through GUC_check_errdetail so that a bad value in
 * postgresql.conf is reported, not fatal.  An empty string means the real
 * clock; anything else must be a finite timestamp, read in the session's
 * TimeZone unless it names one.
 */
static bool
fwsettings_check_debug_now(char **newval, void **extra, GucSource source)
{
	char		workbuf[MAXDATELEN + MAXDATEFIELDS];
	char	   *field[MAXDATEFIELDS];
	int			ftype[MAXDATEFIELDS];
	int			nf;
	int			dtype;
	int			dterr;
	struct pg_tm tt;
	fsec_t		fsec;
	int			tz;
	TimestampTz value;
	TimestampTz *result;

	if (*newval == NULL || (*newval)[0] == '\0')
	{
		*extra = NULL;
		return true;
	}

	dterr = ParseDateTime(*newval, workbuf, sizeof(workbuf), field, ftype,
						  MAXDATEFIELDS, &nf);
	if (dterr == 0)
		dterr = fwcompat_decode_datetime(field, ftype, nf, &dtype, &tt, &fsec, &tz);
	if (dterr != 0 || dtype != DTK_DATE ||
		tm2timestamp(&tt, fsec, &tz, &value) != 0 ||
		!IS_VALID_TIMESTAMP(value))
	{
		GUC_check_errdetail("fixed_window.debug_now must be empty or a finite timestamp with time zone.");
		return false;
	}

	result = fwcompat_guc_malloc(sizeof(TimestampTz));
	if (result == NULL)
		return false;
	*result = value;
	*extra = result;
	return true;
}

static void
fwsettings_assign_debug_now(const char *newval, void *extra)
{
	fw_debug_now_set = (extra != NULL);
	if (extra != NULL)
		fw_debug_now = *(TimestampTz *) extra;
}

/*
 * fixed_window.storage applies to a whole database or server: the
 * configuration files, the server's command line, ALTER ROLE ALL (with or
 * without IN DATABASE) and ALTER DATABASE.  A value for one role (ALTER
 * ROLE, with or without IN DATABASE) or one session (its connection's
 * options, SET, SET LOCAL, a function's SET clause) is refused, even a
 * superuser's: calls of one key would otherwise keep counters in two
 * stores, and behind a transaction pooler a session's SET reaches the next
 * clients of its server connection.  A value being only validated
 * (PGC_S_TEST: ALTER DATABASE or ALTER ROLE storing it) passes here; ALTER
 * ROLE is refused by the utility hook (fixed_window.c) instead.
 */
static bool
fwsettings_check_storage(int *newval, void **extra, GucSource source)
{
	switch (source)
	{
		case PGC_S_USER:
		case PGC_S_DATABASE_USER:
		case PGC_S_CLIENT:
		case PGC_S_INTERACTIVE:
		case PGC_S_SESSION:
			GUC_check_errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM);
			GUC_check_errmsg(FW_STORAGE_SCOPE_MESSAGE);
			GUC_check_errdetail(FW_STORAGE_SCOPE_DETAIL);
			GUC_check_errhint(FW_STORAGE_SCOPE_HINT);
			return false;
		default:
			return true;
	}
}

/*
 * The most of "total" (counter slots, statistics entries) that a share in
 * percent allows one database or role: at least one.
 */
uint32
fwsettings_share_of(uint32 total, int share)
{
	uint64		limit = (uint64) total * share / 100;

	return (uint32) Max(limit, 1);
}

/*
 * The time a call is judged at: the real time of the call, or
 * fixed_window.debug_now when a superuser has set it.
 */
TimestampTz
fwsettings_clock_now(void)
{
	if (fw_debug_now_set)
		return fw_debug_now;
	return GetCurrentTimestamp();
}

/*
 * A time no later than the real clock, to judge which counters may be
 * forgotten: now, as fwsettings_clock_now read it, or the real time when
 * fixed_window.debug_now lies ahead of it, so that a session whose clock
 * is set ahead never forgets live counters.
 */
TimestampTz
fwsettings_clock_no_later(TimestampTz now)
{
	if (fw_debug_now_set)
		return Min(now, GetCurrentTimestamp());
	return now;
}

void
fwsettings_define(void)
{
	DefineCustomStringVariable("fixed_window.debug_now",
							   "Fixes the clock fixed_window judges calls at, for tests.",
							   "Empty means the real clock. Counters are shared: calls judged at a "
							   "later time move them into later windows for every session.",
							   &fw_debug_now_text,
							   "",
							   PGC_SUSET,
							   GUC_NOT_IN_SAMPLE,
							   fwsettings_check_debug_now, fwsettings_assign_debug_now, NULL);

	/*
	 * Superuser only: a role that could switch storage would get fresh
	 * counters and escape its limits; and only for a whole database or the
	 * server (fwsettings_check_storage).
	 */
	DefineCustomEnumVariable("fixed_window.storage",
							 "Chooses where counters live: shared memory or an unlogged table.",
							 "auto means shared memory when the library is preloaded, the table otherwise. "
							 "Set for the server or a database, never for a role or a session.",
							 &fw_storage,
							 FW_STORAGE_AUTO,
							 fw_storage_options,
							 PGC_SUSET,
							 0,
							 fwsettings_check_storage, NULL, NULL);

	DefineCustomBoolVariable("fixed_window.fail_open",
							 "Allows calls that find no room for a new counter in shared memory.",
							 "Off, such calls fail with SQLSTATE 53400. On, they are allowed without "
							 "being counted, with a warning at most once a minute per session.",
							 &fw_fail_open,
							 false,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);

	/* read by both the counters and the statistics in shared memory */
	DefineCustomIntVariable("fixed_window.database_share",
							"Sets the percentage of shared-memory counter slots and statistics entries one database may hold.",
							"A flood of new keys or limit names in one database then leaves room for the others.",
							&fw_database_share,
							50,
							1,
							100,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("fixed_window.role_share",
							"Sets the percentage of shared-memory counter slots one role may hold, over all databases.",
							"A flood of new keys from one role then leaves room for the others.",
							&fw_role_share,
							50,
							1,
							100,
							PGC_SIGHUP,
							0,
							NULL, NULL, NULL);
}

/*
 * A counter's window may start or end outside the timestamps PostgreSQL
 * can show (4713 BC to 294276 AD), which would make every reader of
 * fw_counters fail: such bounds read as -infinity or infinity, which still
 * compare correctly with any time.
 */
TimestampTz
fwsettings_displayable_time(int64 t)
{
	if (IS_VALID_TIMESTAMP(t))
		return t;
	return (t < MIN_TIMESTAMP) ? DT_NOBEGIN : DT_NOEND;
}
