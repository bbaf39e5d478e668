/*-------------------------------------------------------------------------
 *
 * placeholder.h
 *	  The values a session was given for fixed_window's settings before it
 *	  loaded the library, and the admin's values where a role's was refused.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_PLACEHOLDER_H
#define FW_PLACEHOLDER_H

#include "utils/guc.h"

#include "nodes/pg_list.h"

/* A setting of the extension that held a value before it was defined. */
typedef struct FwPlaceholder
{
	char	   *name;
	GucSource	source;			/* of the value it held as the default */
} FwPlaceholder;

extern List *fwplaceholder_note(void);
extern void fwplaceholder_restore(List *held);
extern void fwplaceholder_check_known(void);

#endif							/* FW_PLACEHOLDER_H */
