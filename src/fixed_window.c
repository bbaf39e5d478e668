/*-------------------------------------------------------------------------
 *
 * fixed_window.c
 *	  Module entry point of the fixed_window extension.
 *
 * The settings are defined whenever the library is loaded.  The shared
 * memory counters exist only when the library is in
 * shared_preload_libraries, since shared memory is sized and created at
 * postmaster start.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "fixed_window.h"

PG_MODULE_MAGIC;

#if PG_VERSION_NUM < 160000
void		_PG_init(void);
#endif

void
_PG_init(void)
{
	fw_define_gucs();

	if (!process_shared_preload_libraries_in_progress)
		return;

	fw_shmem_install_hooks();
}
