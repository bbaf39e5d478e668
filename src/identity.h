/*-------------------------------------------------------------------------
 *
 * identity.h
 *	  What one call is about: the counters it names (database, limit name,
 *	  a policy window's period, key) and their hashes.
 *
 * The layer above the window arithmetic (window.h) and below the stores:
 * everything here is shared by both stores and by every SQL-callable file.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_IDENTITY_H
#define FW_IDENTITY_H

#include "datatype/timestamp.h"

#include "compat.h"
#include "window.h"

/* Longest limit name and key, in bytes; the same for every storage. */
#define FW_MAX_NAME_BYTES	256
#define FW_MAX_KEY_BYTES	2048

/* The size of a buffer that holds a period identifier (fwidentity_period_id). */
#define FW_MAX_PERIOD_ID	48

/*
 * The identity of a counter: database, limit or policy name, for a policy's
 * window its period's identifier (fwidentity_period_id), and key, compared exactly.
 * An inline call's counter has no period identifier (period_id_len 0); no
 * period identifier is empty, so the two never meet.
 */
typedef struct FwIdentity
{
	Oid			dbid;
	const char *name;
	int			name_len;
	const char *period_id;
	int			period_id_len;
	const char *key;
	int			key_len;
	uint32		hash;			/* of all four, to find the counter */
} FwIdentity;

/*
 * A call's limit or policy name and key, hashed once per call: each alone,
 * from which the hash of each of its counters' identities is combined
 * (fwidentity_init), and both together (fwidentity_hash64) at the first
 * need of it (fwidentity_name_key_hash64): the phase of start => NULL, a
 * policy's overrides, the table backend's locks; an inline call on shared
 * memory with a start needs none.  The strings are the caller's.
 */
typedef struct FwNameKey
{
	const char *name;
	int			name_len;
	const char *key;
	int			key_len;
	uint32		name_hash;
	uint32		key_hash;
	bool		hashed64;		/* whether hash64 is computed yet */
	uint64		hash64;			/* fwidentity_hash64 of name and key */
} FwNameKey;

/* What a counter holds besides its identity, in either store. */
typedef struct FwCounterData
{
	int64		window_start;
	int64		window_end;		/* derivable; kept for inspection and reclaim */
	int32		tokens;
	int32		rate;			/* as given by the last fw_limit call, */
	int32		capacity;		/* for inspection */
	Oid			userid;			/* role of the last fw_limit call */
} FwCounterData;

/* A counter as the admin functions see it, in either store. */
typedef struct FwCounterView
{
	const char *name;			/* its limit's or policy's */
	int			name_len;
	const char *period_id;		/* its policy window's; length 0 inline */
	int			period_id_len;
	const char *key;
	int			key_len;
	FwCounterData data;
} FwCounterView;

/* Returns true to remove the counter, where the walk allows it. */
typedef bool (*FwCounterVisitor) (const FwCounterView *counter, void *arg);

extern void fwidentity_check_length(const char *what, int len, int max_bytes);
extern void fwidentity_name_key(FwNameKey *nk, const char *name, int name_len,
								const char *key, int key_len);
extern uint64 fwidentity_name_key_hash64(FwNameKey *nk);
extern uint32 fwidentity_period_hash(const char *period_id, int period_id_len);
extern void fwidentity_init(FwIdentity *id, const FwNameKey *nk,
							const char *period_id, int period_id_len, uint32 period_hash);
extern void fwidentity_init_db(FwIdentity *id, Oid dbid, const char *name, int name_len,
							   const char *period_id, int period_id_len,
							   const char *key, int key_len);
extern uint64 fwidentity_hash64(const char *name, int name_len, const char *key, int key_len);
extern uint64 fwidentity_database_marker(void);
extern uint64 fwidentity_database_marker_at(Oid dbid, Oid tablespace);
extern int	fwidentity_period_id(const FwPeriod *period, char *buf);
#endif							/* FW_IDENTITY_H */
