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
 * the configuration files as they read now (postgresql.conf with what it
 * includes, then postgresql.auto.conf) and the settings of
 * pg_db_role_setting for this database and this session's login role.  A
 * value given on the server's command line is not seen again: it is not
 * kept anywhere a backend can read it.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

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
 * Note the placeholders of the extension's settings that hold a value, and
 * where the value they would apply as the default came from.  Called
 * before any setting is defined.
 */
void
fwplaceholder_note(FwPlaceholders *held)
{
	int			n;
	struct config_generic **settings = fwcompat_guc_variables(&n);
	int			i;

	held->n = 0;
	for (i = 0; i < n && held->n < FW_MAX_PLACEHOLDERS; i++)
	{
		struct config_generic *setting = settings[i];

		if ((setting->flags & GUC_CUSTOM_PLACEHOLDER) == 0 ||
			setting->reset_source == PGC_S_DEFAULT ||
			pg_strncasecmp(setting->name, FW_SETTING_PREFIX, strlen(FW_SETTING_PREFIX)) != 0)
			continue;
		held->items[held->n].name = pstrdup(setting->name);
		held->items[held->n].source = setting->reset_source;
		held->n++;
	}
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

/*
 * The configuration files, as they read now.  A problem in them was
 * reported when the server read them; here it only leaves their values out.
 */
static void
reapply_files(const FwPlaceholders *refused)
{
	ConfigVariable *head = NULL;
	ConfigVariable *tail = NULL;
	ConfigVariable *item;
	int			i;

	if (ConfigFileName == NULL ||
		!ParseConfigFile(ConfigFileName, true, NULL, 0, 0, DEBUG1, &head, &tail) ||
		!ParseConfigFile(PG_AUTOCONF_FILENAME, false, NULL, 0, 0, DEBUG1, &head, &tail))
	{
		FreeConfigVariables(head);
		return;
	}
	for (item = head; item != NULL; item = item->next)
		for (i = 0; i < refused->n; i++)
			if (pg_strcasecmp(item->name, refused->items[i].name) == 0)
				reapply(refused->items[i].name, item->value, PGC_S_FILE,
						refused->items[i].source, DEBUG1);
	FreeConfigVariables(head);
}

/* The settings of one row of pg_db_role_setting, if there is one. */
static void
reapply_row(Relation rel, Snapshot snapshot, Oid dbid, Oid roleid, GucSource source,
			const FwPlaceholders *refused)
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
		int			j;

		if (isnull)
			continue;
		deconstruct_array(DatumGetArrayTypeP(config), TEXTOID, -1, false, TYPALIGN_INT,
						  &items, NULL, &nitems);
		for (i = 0; i < nitems; i++)
		{
			char	   *name;
			char	   *value;

			ParseLongOption(TextDatumGetCString(items[i]), &name, &value);
			if (value == NULL)
				continue;
			/* refused as a session's start refuses it: with a WARNING */
			for (j = 0; j < refused->n; j++)
				if (pg_strcasecmp(name, refused->items[j].name) == 0)
					reapply(refused->items[j].name, value, source,
							refused->items[j].source, WARNING);
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
reapply_db_role_settings(const FwPlaceholders *refused)
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
fwplaceholder_restore(const FwPlaceholders *held)
{
	FwPlaceholders refused;
	int			i;

	refused.n = 0;
	for (i = 0; i < held->n; i++)
	{
		struct config_generic *setting = find_setting(held->items[i].name);

		/* a misspelt name is no setting: MarkGUCPrefixReserved removed it */
		if (setting == NULL || (setting->flags & GUC_CUSTOM_PLACEHOLDER) != 0 ||
			setting->reset_source >= held->items[i].source)
			continue;
		refused.items[refused.n++] = held->items[i];
	}
	if (refused.n == 0)
		return;

	reapply_files(&refused);
	/* a session of a database; parallel workers take the leader's values */
	if (OidIsValid(MyDatabaseId) && !IsParallelWorker())
		reapply_db_role_settings(&refused);
}
