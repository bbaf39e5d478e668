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

/* Settings of the extension that held a value before they were defined. */
#define FW_MAX_PLACEHOLDERS	16

typedef struct FwPlaceholders
{
	int			n;
	struct
	{
		char	   *name;
		GucSource	source;		/* of the value it held as the default */
	}			items[FW_MAX_PLACEHOLDERS];
} FwPlaceholders;

extern void fwplaceholder_note(FwPlaceholders *held);
extern void fwplaceholder_restore(const FwPlaceholders *held);

#endif							/* FW_PLACEHOLDER_H */
