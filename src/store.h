/*-------------------------------------------------------------------------
 *
 * store.h
 *	  Choosing the store of a call, and what every call's failure means.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_STORE_H
#define FW_STORE_H

#include "identity.h"

extern bool fw_use_shmem(void);
extern void fw_prefetch(const FwIdentity *id);
extern void fw_apply(const FwIdentity *id, const FwLimit *limit, bool consume,
					 FwDecision *decision);

#endif							/* FW_STORE_H */
