/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  Where the extension's own relations are: its schema, looked up in
 *	  pg_extension, never through search_path.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
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
fw_extension_schema(void)
{
	Oid			extension = get_extension_oid("fixed_window", true);

	return OidIsValid(extension) ? get_extension_schema(extension) : InvalidOid;
}
