/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  Where the extension's own relations are.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_CATALOG_H
#define FW_CATALOG_H

extern Oid	fw_extension_schema(void);

#endif							/* FW_CATALOG_H */
