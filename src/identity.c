/*-------------------------------------------------------------------------
 *
 * identity.c
 *	  A call's counters: their identities and hashes, the lengths of names
 *	  and keys, the identifiers of periods, and which database of an OID a
 *	  session's is.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "common/hashfn.h"
#include "common/relpath.h"
#include "miscadmin.h"

#include "compat.h"
#include "identity.h"

/* A name or key longer than allowed is an error naming what it is. */
void
fwidentity_check_length(const char *what, int len, int max_bytes)
{
	if (len > max_bytes)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("argument \"%s\" is too long", what),
				errdetail("The value is %d bytes; at most %d bytes are allowed.",
						  len, max_bytes),
				errhint("Pass a shorter value, for example a digest such as md5() of it.")));
}

/*
 * The hash of a counter's identity, from the hashes of its parts: the same
 * whether they were hashed for this counter alone (fwidentity_init_db) or
 * once for all the counters of a call (fwidentity_init).
 */
static inline uint32
fwidentity_combine(Oid dbid, uint32 name_hash, int period_id_len, uint32 period_hash,
				   uint32 key_hash)
{
	uint32		hash = name_hash;

	if (period_id_len > 0)
		hash = hash_combine(hash, period_hash);
	return hash_combine(hash_bytes_uint32(dbid), hash_combine(hash, key_hash));
}

/*
 * Hash a call's name and key, once for all its counters, into *nk; their
 * lengths are already checked.  Their 64-bit hash waits for its first need
 * (fwidentity_name_key_hash64).
 */
void
fwidentity_name_key(FwNameKey *nk, const char *name, int name_len,
					const char *key, int key_len)
{
	nk->name = name;
	nk->name_len = name_len;
	nk->key = key;
	nk->key_len = key_len;
	nk->name_hash = hash_bytes((const unsigned char *) name, name_len);
	nk->key_hash = hash_bytes((const unsigned char *) key, key_len);
	nk->hashed64 = false;
}

/* fwidentity_hash64 of a call's name and key, computed once, at the first need. */
uint64
fwidentity_name_key_hash64(FwNameKey *nk)
{
	if (!nk->hashed64)
	{
		nk->hash64 = fwidentity_hash64(nk->name, nk->name_len, nk->key, nk->key_len);
		nk->hashed64 = true;
	}
	return nk->hash64;
}

/* The hash of a policy window's period identifier, kept with the window. */
uint32
fwidentity_period_hash(const char *period_id, int period_id_len)
{
	return hash_bytes((const unsigned char *) period_id, period_id_len);
}

/*
 * The identity of a counter of a call of this database: an inline call's
 * (period_id_len 0), or that of one window of a policy, given its period
 * identifier and that identifier's hash (fwidentity_period_hash).  The
 * strings must live as long as id.
 */
void
fwidentity_init(FwIdentity *id, const FwNameKey *nk,
				const char *period_id, int period_id_len, uint32 period_hash)
{
	id->dbid = MyDatabaseId;
	id->name = nk->name;
	id->name_len = nk->name_len;
	id->period_id = period_id;
	id->period_id_len = period_id_len;
	id->key = nk->key;
	id->key_len = nk->key_len;
	id->hash = fwidentity_combine(MyDatabaseId, nk->name_hash, period_id_len, period_hash,
								  nk->key_hash);
}

/* The identity of a counter of any database, hashed from its parts. */
void
fwidentity_init_db(FwIdentity *id, Oid dbid, const char *name, int name_len,
				   const char *period_id, int period_id_len,
				   const char *key, int key_len)
{
	id->dbid = dbid;
	id->name = name;
	id->name_len = name_len;
	id->period_id = period_id;
	id->period_id_len = period_id_len;
	id->key = key;
	id->key_len = key_len;
	id->hash = fwidentity_combine(dbid, hash_bytes((const unsigned char *) name, name_len),
								  period_id_len,
								  period_id_len > 0 ?
								  fwidentity_period_hash(period_id, period_id_len) : 0,
								  hash_bytes((const unsigned char *) key, key_len));
}

/*
 * The 64-bit hash of a limit's or policy's name and key, whatever the
 * window: the phase of start => NULL, the key's overrides in the policies'
 * cache, and the key lock of the table backend; the lock of a policy's
 * definition hashes its name with an empty key.  Stable for a given server
 * build.
 */
uint64
fwidentity_hash64(const char *name, int name_len, const char *key, int key_len)
{
	uint64		seed = hash_bytes_extended((const unsigned char *) name, name_len, 0);

	return hash_bytes_extended((const unsigned char *) key, key_len, seed);
}

/*
 * Which database of its OID this session's is.  Shared memory names
 * databases by OID, and a database can be made with the OID of one dropped
 * (CREATE DATABASE ... OID, which any role that may create databases can
 * run), whose counters and statistics a session that never loaded the
 * library could not see go.  A database's PG_VERSION file is written when
 * the database is made and never after, so its inode number and the time
 * it was written, to the nanosecond, tell one database of an OID from
 * another.  Moving a database to another tablespace makes the file again:
 * the hook of fixed_window.c then marks its counters and statistics anew.
 * 0 when the file cannot be read: no database is then told from another.
 */
uint64
fwidentity_database_marker_at(Oid dbid, Oid tablespace)
{
	char	   *dir = GetDatabasePath(dbid, tablespace);
	char	   *path = psprintf("%s/PG_VERSION", dir);
	struct stat st;
	uint64		parts[3];
	uint64		marker = 0;

	if (stat(path, &st) == 0)
	{
		parts[0] = (uint64) st.st_ino;
		parts[1] = (uint64) st.st_mtime;
		parts[2] = (uint64) FW_MTIME_NSEC(st);
		marker = hash_bytes_extended((const unsigned char *) parts, sizeof(parts), 0);
		if (marker == 0)
			marker = 1;			/* 0 means unknown */
	}
	pfree(path);
	pfree(dir);
	return marker;
}

/* This session's database's, read once. */
uint64
fwidentity_database_marker(void)
{
	static uint64 marker = 0;
	static Oid	marked = InvalidOid;

	if (marked != MyDatabaseId && OidIsValid(MyDatabaseId))
	{
		marker = fwidentity_database_marker_at(MyDatabaseId, MyDatabaseTableSpace);
		marked = MyDatabaseId;
	}
	return marker;
}

/*
 * The identifier of a period, in ISO 8601 form: "P1M", "PT60S",
 * "PT0.5S" -- one text for each window length, whatever interval
 * spelled it ('1 minute' and '60 seconds' are one period, '1 mon' and
 * '30 days' are two).  Returns its length; buf holds FW_MAX_PERIOD_ID bytes.
 */
int
fwidentity_period_id(const FwPeriod *period, char *buf)
{
	int			len = 0;
	int64		seconds = period->span / USECS_PER_SEC;
	int64		fraction = period->span % USECS_PER_SEC;

	buf[len++] = 'P';
	if (period->months > 0)
		len += snprintf(buf + len, FW_MAX_PERIOD_ID - len, "%dM", period->months);
	if (period->span != 0)
	{
		len += snprintf(buf + len, FW_MAX_PERIOD_ID - len, "T" INT64_FORMAT, seconds);
		if (fraction != 0)
		{
			len += snprintf(buf + len, FW_MAX_PERIOD_ID - len, ".%06d", (int) fraction);
			while (buf[len - 1] == '0')
				len--;
		}
		buf[len++] = 'S';
	}
	Assert(len < FW_MAX_PERIOD_ID);
	return len;
}
