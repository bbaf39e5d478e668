/*-------------------------------------------------------------------------
 *
 * placeholder.c
 *	  The values a session was given for fixed_window's settings before it
 *	  loaded the library, and the admin's values where a role's was refused.
 *
 * Without shared_preload_libraries, a session knows the settings only once
 * it loads the library.  Until then, each value it is given is kept by a
 * placeholder, a setting of no type that anyone may set, and one value
 * replaces another by PostgreSQL's order of sources: the configuration
 * files, then ALTER ROLE ALL, ALTER DATABASE, ALTER ROLE, ALTER ROLE IN
 * DATABASE, then the connection's options.  So a login role that names a
 * setting in its connection's options (PGOPTIONS="-c ...") replaces the
 * admin's value in the placeholder.  When the library loads and defines the
 * setting, PostgreSQL applies the placeholder's value as that role, which
 * may not set it: the value is refused with a WARNING, and the setting would
 * keep its built-in default -- not the admin's value, which the placeholder
 * no longer holds.  A role could so choose another store for its calls, or
 * lift a share the admin lowered.
 *
 * fwplaceholder_note reads, before the settings are defined, which of them
 * held a value and from which source; fwplaceholder_restore, once they
 * are, applies again, for each whose value was refused, the values of the
 * sources below the refused one, in the order a new session applies them:
 * the configuration files (postgresql.conf with what it includes, then
 * postgresql.auto.conf) and the settings of pg_db_role_setting for this
 * database and this session's login role.  The files are read as they are
 * now: when one changed after the session last read them (an ALTER SYSTEM
 * not yet reloaded), the value in force cannot be told, and the session is
 * refused calls until a new one starts after a reload.  A value given on
 * the server's command line is not seen again: it is not kept anywhere a
 * backend can read it.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_db_role_setting.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc_tables.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "placeholder.h"

#define FW_SETTING_PREFIX	"fixed_window."

/* The setting named name, or NULL. */
static struct config_generic *
find_setting(const char *name)
{
	int			n;
	struct config_generic **settings = fwcompat_guc_variables(&n);
	int			i;

	for (i = 0; i < n; i++)
		if (pg_strcasecmp(settings[i]->name, name) == 0)
			return settings[i];
	return NULL;
}

/*
 * Set when a value this session was given was refused and the admin's
 * value could not be read again: the configuration files changed after
 * the session read them.  The session then makes no call (see
 * fwplaceholder_check_known); the first name refused, for the error.
 */
static bool fw_settings_unknown = false;
static char fw_unknown_setting[NAMEDATALEN * 2];

/*
 * Note the placeholders of the extension's settings that hold a value, and
 * where the value they would apply as the default came from: a list of
 * FwPlaceholder.  Called before any setting is defined.  Every placeholder
 * of the prefix is noted, however many a session names.
 */
List *
fwplaceholder_note(void)
{
	int			n;
	struct config_generic **settings = fwcompat_guc_variables(&n);
	List	   *held = NIL;
	int			i;

	for (i = 0; i < n; i++)
	{
		struct config_generic *setting = settings[i];
		FwPlaceholder *placeholder;

		if ((setting->flags & GUC_CUSTOM_PLACEHOLDER) == 0 ||
			setting->reset_source == PGC_S_DEFAULT ||
			pg_strncasecmp(setting->name, FW_SETTING_PREFIX, strlen(FW_SETTING_PREFIX)) != 0)
			continue;
		placeholder = palloc(sizeof(FwPlaceholder));
		placeholder->name = pstrdup(setting->name);
		placeholder->source = setting->reset_source;
		held = lappend(held, placeholder);
	}
	return held;
}

/*
 * Apply again value of setting name from source, if that source lies below
 * the one whose value was refused.  PostgreSQL's own order of sources then
 * decides which of the values applied stands, as at a session's start.
 */
static void
reapply(const char *name, const char *value, GucSource source, GucSource refused, int elevel)
{
	if (source >= refused)
		return;
	(void) set_config_option(name, value,
							 source == PGC_S_FILE ? PGC_SIGHUP : PGC_SUSET,
							 source, GUC_ACTION_SET, true, elevel, false);
}

/* Whether a file is missing or was modified after time t. */
static bool
changed_after(const char *path, TimestampTz t)
{
	struct stat st;

	return stat(path, &st) != 0 ||
		time_t_to_timestamptz(st.st_mtime) + FW_MTIME_NSEC(st) / 1000 > t;
}

/*
 * The configuration files, as this session read them: the files as they
 * read now, unless one of them (or the directory that holds it) changed
 * after the session last read them (PgReloadTime), when the value in force
 * cannot be told: the session is then refused calls.  Only the files' own
 * times count: a directory's changes whenever a file in it is written (the
 * data directory's, by the server itself).  A problem in the
 * files was reported when the server read them; here it only leaves their
 * values out.
 */
static void
reapply_files(List *refused)
{
	ConfigVariable *head = NULL;
	ConfigVariable *tail = NULL;
	ConfigVariable *item;
	ListCell   *cell;
	char	   *autoconf;

	if (ConfigFileName == NULL ||
		!ParseConfigFile(ConfigFileName, true, NULL, 0, 0, DEBUG1, &head, &tail) ||
		!ParseConfigFile(PG_AUTOCONF_FILENAME, false, NULL, 0, 0, DEBUG1, &head, &tail))
	{
		FreeConfigVariables(head);
		return;
	}
	autoconf = make_absolute_path(PG_AUTOCONF_FILENAME);
	if (changed_after(ConfigFileName, PgReloadTime) || changed_after(autoconf, PgReloadTime))
		fw_settings_unknown = true;
	for (item = head; item != NULL && !fw_settings_unknown; item = item->next)
		if (item->filename != NULL && changed_after(item->filename, PgReloadTime))
			fw_settings_unknown = true;
	if (fw_settings_unknown)
	{
		strlcpy(fw_unknown_setting, ((FwPlaceholder *) linitial(refused))->name,
				sizeof(fw_unknown_setting));
		FreeConfigVariables(head);
		return;
	}
	for (item = head; item != NULL; item = item->next)
		foreach(cell, refused)
		{
			FwPlaceholder *placeholder = (FwPlaceholder *) lfirst(cell);

			if (pg_strcasecmp(item->name, placeholder->name) == 0)
				reapply(placeholder->name, item->value, PGC_S_FILE, placeholder->source, DEBUG1);
		}
	FreeConfigVariables(head);
}

/* The settings of one row of pg_db_role_setting, if there is one. */
static void
reapply_row(Relation rel, Snapshot snapshot, Oid dbid, Oid roleid, GucSource source,
			List *refused)
{
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;

	ScanKeyInit(&keys[0], Anum_pg_db_role_setting_setdatabase, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(dbid));
	ScanKeyInit(&keys[1], Anum_pg_db_role_setting_setrole, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(roleid));
	scan = systable_beginscan(rel, DbRoleSettingDatidRolidIndexId, true, snapshot, 2, keys);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		config = heap_getattr(tuple, Anum_pg_db_role_setting_setconfig,
										  RelationGetDescr(rel), &isnull);
		Datum	   *items;
		int			nitems;
		int			i;

		if (isnull)
			continue;
		deconstruct_array(DatumGetArrayTypeP(config), TEXTOID, -1, false, TYPALIGN_INT,
						  &items, NULL, &nitems);
		for (i = 0; i < nitems; i++)
		{
			char	   *name;
			char	   *value;
			ListCell   *cell;

			ParseLongOption(TextDatumGetCString(items[i]), &name, &value);
			if (value == NULL)
				continue;
			/* refused as a session's start refuses it: with a WARNING */
			foreach(cell, refused)
			{
				FwPlaceholder *placeholder = (FwPlaceholder *) lfirst(cell);

				if (pg_strcasecmp(name, placeholder->name) == 0)
					reapply(placeholder->name, value, source, placeholder->source, WARNING);
			}
		}
	}
	systable_endscan(scan);
}

/*
 * ALTER ROLE ALL, ALTER DATABASE, ALTER ROLE and ALTER ROLE IN DATABASE,
 * for this database and the session's login role, as a session's start
 * reads them (process_settings).
 */
static void
reapply_db_role_settings(List *refused)
{
	Oid			roleid = GetSessionUserId();
	bool		started = !IsTransactionState();
	Relation	rel;
	Snapshot	snapshot;

	if (started)
		StartTransactionCommand();
	rel = table_open(DbRoleSettingRelationId, AccessShareLock);
	snapshot = RegisterSnapshot(GetCatalogSnapshot(DbRoleSettingRelationId));
	reapply_row(rel, snapshot, InvalidOid, InvalidOid, PGC_S_GLOBAL, refused);
	reapply_row(rel, snapshot, MyDatabaseId, InvalidOid, PGC_S_DATABASE, refused);
	reapply_row(rel, snapshot, InvalidOid, roleid, PGC_S_USER, refused);
	reapply_row(rel, snapshot, MyDatabaseId, roleid, PGC_S_DATABASE_USER, refused);
	UnregisterSnapshot(snapshot);
	table_close(rel, AccessShareLock);
	if (started)
		CommitTransactionCommand();
}

/*
 * Once the settings are defined: for each whose placeholder's value was
 * refused (the setting's default now comes from a lower source than that
 * value), apply again the admin's values, those of the sources below.
 */
void
fwplaceholder_restore(List *held)
{
	List	   *refused = NIL;
	ListCell   *cell;

	foreach(cell, held)
	{
		FwPlaceholder *placeholder = (FwPlaceholder *) lfirst(cell);
		struct config_generic *setting = find_setting(placeholder->name);

		/* a misspelt name is no setting: MarkGUCPrefixReserved removed it */
		if (setting == NULL || (setting->flags & GUC_CUSTOM_PLACEHOLDER) != 0 ||
			setting->reset_source >= placeholder->source)
			continue;
		refused = lappend(refused, placeholder);
	}
	if (refused == NIL)
		return;

	reapply_files(refused);
	/* a session of a database; parallel workers take the leader's values */
	if (!fw_settings_unknown && OidIsValid(MyDatabaseId) && !IsParallelWorker())
		reapply_db_role_settings(refused);
	list_free(refused);
}

/*
 * Refuse a call of a session whose settings are not known (see
 * reapply_files): it could otherwise use a value the admin did not set.
 */
void
fwplaceholder_check_known(void)
{
	if (unlikely(fw_settings_unknown))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("the settings of fixed_window in this session are not known"),
				errdetail("The session was given a value of \"%s\" that does not apply (its role may not set it, or not for one session or role), and the configuration files changed after the session read them, so the value in force cannot be read again.",
						  fw_unknown_setting),
				errhint("Reload the configuration (SELECT pg_reload_conf()), then start a new session; or connect without setting fixed_window's settings.")));
}
