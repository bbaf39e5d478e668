/*-------------------------------------------------------------------------
 *
 * identity.h
 *	  What one call is about: the counter it names (database, limit name,
 *	  key) and its validated limit; and how applying it to a store ends.
 *
 * The layer above the window arithmetic (window.h) and below the stores:
 * everything here is shared by both stores and by every SQL-callable file.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_IDENTITY_H
#define FW_IDENTITY_H

#include "datatype/timestamp.h"

#include "window.h"

/* Longest limit name and key, in bytes; the same for every storage. */
#define FW_MAX_NAME_BYTES	256
#define FW_MAX_KEY_BYTES	2048

/* The identity of a counter: database, limit name and key, compared exactly. */
typedef struct FwIdentity
{
	Oid			dbid;
	const char *name;
	int			name_len;
	const char *key;
	int			key_len;
	uint32		hash;			/* of all three, to find the counter */
} FwIdentity;

/* How applying a call to a store ended. */
typedef enum FwApplyResult
{
	FW_APPLY_OK = 0,
	FW_APPLY_OUT_OF_RANGE,		/* a boundary lies beyond 64-bit time */
	FW_APPLY_FULL,				/* no room for a new counter */
	FW_APPLY_DATABASE_FULL,		/* the database holds all it may */
	FW_APPLY_ROLE_FULL			/* the role holds all it may */
} FwApplyResult;

/* Whether a store found no room for a new counter. */
static inline bool
fw_apply_no_room(FwApplyResult result)
{
	return result == FW_APPLY_FULL || result == FW_APPLY_DATABASE_FULL ||
		result == FW_APPLY_ROLE_FULL;
}

extern void fw_check_length(const char *what, int len, int max_bytes);
extern void fw_identity_init(FwIdentity *id, const char *name, int name_len,
							 const char *key, int key_len);
extern void fw_identity_init_db(FwIdentity *id, Oid dbid, const char *name, int name_len,
								const char *key, int key_len);
extern uint64 fw_identity_hash64(const FwIdentity *id);
extern void fw_limit_init(FwLimit *limit, const FwIdentity *id, int32 rate,
						  const Interval *period, const TimestampTz *start,
						  int32 cost, const int32 *capacity);

#endif							/* FW_IDENTITY_H */
