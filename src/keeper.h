/*-------------------------------------------------------------------------
 *
 * keeper.h
 *	  The keeper: the background worker that looks after shared memory.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_KEEPER_H
#define FW_KEEPER_H

extern PGDLLEXPORT void fwkeeper_main(Datum arg);
extern void fwkeeper_start(bool dynamic);

#endif							/* FW_KEEPER_H */
