/*-------------------------------------------------------------------------
 *
 * settings.h
 *	  The settings every part of fixed_window reads, and its clock.
 *
 * Settings that only the shared-memory store uses are defined there.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_SETTINGS_H
#define FW_SETTINGS_H

#include "datatype/timestamp.h"

/* fixed_window.storage */
typedef enum FwStorage
{
	FW_STORAGE_AUTO,			/* shared memory if preloaded, else the table */
	FW_STORAGE_SHMEM,			/* shared memory, preloaded or not */
	FW_STORAGE_TABLE
} FwStorage;

/*
 * fixed_window.storage is a database's or the server's, never a role's or
 * a session's: what its refusals say.
 */
#define FW_STORAGE_SCOPE_MESSAGE \
	"parameter \"fixed_window.storage\" can be set only for the whole server or a whole database"
#define FW_STORAGE_SCOPE_DETAIL \
	"Set for one role or one session, it would keep some calls of a key in another store than the others, so that the key would have two counters."
#define FW_STORAGE_SCOPE_HINT \
	"Set it in postgresql.conf, with ALTER SYSTEM, or with ALTER DATABASE ... SET."

/*
 * Databases whose counters and statistics shared memory accounts for at
 * once; each may hold fw_database_share percent of either.
 */
#define FW_MAX_DATABASES	1024

extern int	fw_storage;
extern bool fw_preloaded;
extern bool fw_fail_open;
extern int	fw_database_share;
extern int	fw_role_share;

extern void fwsettings_define(void);
extern uint32 fwsettings_share_of(uint32 total, int share);
extern TimestampTz fwsettings_clock_now(void);
extern TimestampTz fwsettings_clock_no_later(TimestampTz now);
extern TimestampTz fwsettings_displayable_time(int64 t);

#endif							/* FW_SETTINGS_H */
