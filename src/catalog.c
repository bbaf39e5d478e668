/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Where the extension's own relations are: its schema, looked up in
 *	  pg_extension, never through search_path; its tables and their primary
 *	  keys, opened by ids found before and checked.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "commands/extension.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "catalog.h"

#if PG_VERSION_NUM < 160000
/* The schema of an extension (get_extension_schema is exported from 16 on). */
static Oid
get_extension_schema(Oid extension)
{
	Relation	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			schema = InvalidOid;

	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(extension));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		schema = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return schema;
}
#endif

/* The schema of fixed_window in this database, or InvalidOid if not installed. */
Oid
fwcatalog_extension_schema(void)
{
	Oid			extension = get_extension_oid("fixed_window", true);

	return OidIsValid(extension) ? get_extension_schema(extension) : InvalidOid;
}

/*
 * Open a table of the extension and its primary key by ids found before,
 * if they still are those relations: the table of that name, and a valid
 * index of that name on it.  Returns false, having opened nothing, if not:
 * DROP EXTENSION removed them, or REINDEX CONCURRENTLY replaced the index
 * by a new one of the same name and renamed the old one, which stops
 * receiving entries once marked dead.  The caller looks them up again.
 */
bool
fwcatalog_open_table_and_key(Oid relid, const char *relname, Oid indexid, const char *indexname,
							 LOCKMODE lockmode, Relation *rel, Relation *index)
{
	*rel = try_relation_open(relid, lockmode);
	*index = NULL;
	if (*rel != NULL && (*rel)->rd_rel->relkind == RELKIND_RELATION &&
		strcmp(RelationGetRelationName(*rel), relname) == 0)
		*index = try_relation_open(indexid, lockmode);
	if (*index != NULL && (*index)->rd_rel->relkind == RELKIND_INDEX &&
		strcmp(RelationGetRelationName(*index), indexname) == 0 &&
		(*index)->rd_index->indrelid == relid && (*index)->rd_index->indisvalid &&
		(*index)->rd_index->indisready && (*index)->rd_index->indislive)
		return true;
	if (*index != NULL)
		relation_close(*index, lockmode);
	if (*rel != NULL)
		relation_close(*rel, lockmode);
	*rel = *index = NULL;
	return false;
}
