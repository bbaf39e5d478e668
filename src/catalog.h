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

extern Oid	fw_extension_schema(void);

#endif							/* FW_CATALOG_H */
