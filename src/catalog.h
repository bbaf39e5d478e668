/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  Where the extension's own relations are.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_CATALOG_H
#define FW_CATALOG_H

#include "storage/lockdefs.h"
#include "utils/relcache.h"

extern Oid	fwcatalog_extension_schema(void);
extern bool fwcatalog_open_table_and_key(Oid relid, const char *relname, Oid indexid,
										 const char *indexname, LOCKMODE lockmode,
										 Relation *rel, Relation *index);

#endif							/* FW_CATALOG_H */
