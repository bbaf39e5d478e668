/*-------------------------------------------------------------------------
 *
 * shmem_save.c
 *	  Saving the counters of shared memory at a clean shutdown, and
 *	  loading them into the first table of the next server (see
 *	  shmem_internal.h).
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "miscadmin.h"
#include "access/xlog.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "placeholder.h"
#include "segment.h"
#include "settings.h"
#include "shmem_internal.h"

static void fwshmem_load(FwLoad *load);

/*
 * Whether a file was written after the server started (to the
 * microsecond): then it is not the file of the last clean shutdown.
 */
static bool
fwshmem_written_since_start(const struct stat *st)
{
	return time_t_to_timestamptz(st->st_mtime) + FW_MTIME_NSEC(*st) / 1000 > PgStartTime;
}

/*
 * The first table of a server, sized by fwshmem_first_size: the counters
 * saved at the last clean shutdown.  It follows fixed_window.max_counters
 * as this backend read it.
 */
void
fwshmem_init_first(FwSegment *segment, void *arg)
{
	FwLoad	   *load = (FwLoad *) arg;

	fwshmem_init_table(segment, load->nslots, (uint32) fw_max_counters, PgReloadTime);
	if (load->data != NULL)
		fwshmem_load(load);
}

/* Whether counters saved at a clean shutdown wait to be loaded. */
bool
fwshmem_saved(void)
{
	struct stat st;

	return stat(FW_DUMP_FILE, &st) == 0;
}

/*
 * Saving counters across a clean shutdown.
 *
 * The file holds a header (magic, format version, count, and the system
 * identifier of the server that wrote it), then one record per counter --
 * its fixed fields, the role whose share it counts against, which database
 * of its OID it belongs to (fwidentity_database_marker), then its name and
 * key -- and ends with a CRC-32C of everything before it.  The keeper
 * writes it when the server shuts down cleanly, to a temporary file renamed
 * into place, and the backend that creates the next table reads it.  A file
 * that is truncated, corrupt, of an unknown format, or written by another
 * server (a copied data directory keeps its system identifier; a file copied
 * into another's does not) is ignored with a LOG message.  Counters whose
 * window ended meanwhile are not loaded when they answer as no counter
 * would (without rollover); every other counter is, against the shares of
 * the database and the role that made it (which it held before, whatever
 * the shares are now), in a table grown beyond fixed_window.max_counters
 * when they need more, with a WARNING.
 *
 * Format 1 (1.4 and 1.5) has neither the system identifier nor the owner
 * and database of a counter: read once after an update, its counters count
 * against the role of their last call, and belong to the database of their
 * OID that a session next sees.
 */
#define FW_DUMP_MAGIC		0x46570001	/* "FW" and a format number */
#define FW_DUMP_VERSION		2

/* The header of format 1, and the start of every format's. */
typedef struct FwDumpHeader
{
	uint32		magic;
	uint32		version;
	uint32		count;
} FwDumpHeader;

typedef struct FwDumpHeader2
{
	FwDumpHeader common;
	uint32		nslots;			/* the table's size */
	uint64		system_identifier;
} FwDumpHeader2;

/* A record of format 1, and the start of every format's. */
typedef struct FwDumpRecord
{
	Oid			dbid;
	int32		name_len;
	int32		key_len;
	FwCounterData data;
} FwDumpRecord;

typedef struct FwDumpRecord2
{
	FwDumpRecord common;
	Oid			owner;			/* the role whose share it counts against */
	uint64		database_marker;	/* which database of the OID */
} FwDumpRecord2;

typedef struct FwDump
{
	FILE	   *file;			/* NULL: only count */
	pg_crc32c	crc;
	uint32		count;
	uint32		limit;			/* records to write at most */
	bool		ok;
} FwDump;

static void
fwshmem_dump_write(FwDump *dump, const void *data, size_t len)
{
	COMP_CRC32C(dump->crc, data, len);
	if (dump->ok && fwrite(data, 1, len, dump->file) != len)
		dump->ok = false;
}

static bool
fwshmem_dump_visit(FwCounter *counter, void *arg)
{
	FwDump	   *dump = (FwDump *) arg;
	FwDumpRecord2 record;
	char		text[FW_MAX_STORED_NAME + FW_MAX_KEY_BYTES];

	if (dump->file != NULL && dump->count == dump->limit)
	{
		dump->ok = false;		/* more counters than were counted */
		return false;
	}
	dump->count++;
	if (dump->file == NULL)
		return false;

	memset(&record, 0, sizeof(record));
	record.common.dbid = counter->dbid;
	record.common.name_len = counter->name_len;
	record.common.key_len = counter->key_len;
	record.common.data = counter->data;
	record.owner = fw_shared->roles[counter->role].oid;
	record.database_marker = fw_shared->databases[counter->database].marker;
	fwshmem_counter_text(counter, FW_TEXT_LOAD, NULL, text);
	fwshmem_dump_write(dump, &record, sizeof(record));
	fwshmem_dump_write(dump, text, counter->name_len + counter->key_len);
	return false;
}

/*
 * Write the table to the file: run by the keeper at shutdown, holding every
 * lock of the table.  The counters are counted first, so that the header
 * can say how many follow; a count that differs after writing them is a
 * bug, and the file is not kept.
 */
static void
fwshmem_dump(void)
{
	FwDump		dump = {NULL, 0, 0, PG_UINT32_MAX, true};
	FwDumpHeader2 header;

	memset(&header, 0, sizeof(header));
	header.common.magic = FW_DUMP_MAGIC;
	header.common.version = FW_DUMP_VERSION;
	header.nslots = fw_shared->nslots;
	header.system_identifier = GetSystemIdentifier();
	fwshmem_walk(fwshmem_dump_visit, &dump, FW_WALK_UNLOCKED);
	header.common.count = dump.count;

	dump.file = AllocateFile(FW_DUMP_FILE ".tmp", PG_BINARY_W);
	if (dump.file == NULL)
		goto error;
	dump.limit = dump.count;
	dump.count = 0;
	INIT_CRC32C(dump.crc);
	fwshmem_dump_write(&dump, &header, sizeof(header));
	fwshmem_walk(fwshmem_dump_visit, &dump, FW_WALK_UNLOCKED);
	FIN_CRC32C(dump.crc);
	if (dump.count != header.common.count)
		elog(ERROR, "fixed_window counted %u counters to save, then found %u",
			 header.common.count, dump.count);
	if (!dump.ok || fwrite(&dump.crc, sizeof(dump.crc), 1, dump.file) != 1)
		goto error;
	if (FreeFile(dump.file))
	{
		dump.file = NULL;
		goto error;
	}
	/* durable_rename reports its own failure */
	if (durable_rename(FW_DUMP_FILE ".tmp", FW_DUMP_FILE, LOG) != 0)
	{
		unlink(FW_DUMP_FILE ".tmp");
		return;
	}
	ereport(LOG,
			(errmsg("fixed_window saved %u counters", header.common.count)));
	return;

error:
	ereport(LOG,
			(errcode_for_file_access(),
			errmsg("could not write file \"%s\": %m", FW_DUMP_FILE ".tmp")));
	if (dump.file)
		FreeFile(dump.file);
	unlink(FW_DUMP_FILE ".tmp");
}

/* One record of the file, whatever its format. */
typedef struct FwLoadRecord
{
	FwDumpRecord fields;
	Oid			owner;
	uint64		database_marker;
	const char *text;			/* stored name, then key */
} FwLoadRecord;

/*
 * The record at *p, moving *p past it; false when the file ends, or, with
 * *bad set, when the record runs past its end or says impossible lengths.
 */
static bool
fwshmem_load_next(const FwLoad *load, char **p, FwLoadRecord *record, bool *bad)
{
	Size		fixed = load->version == 1 ? sizeof(FwDumpRecord) : sizeof(FwDumpRecord2);

	*bad = false;
	if (*p == load->end)
		return false;
	if (load->end - *p < (long) fixed)
	{
		*bad = true;
		return false;
	}
	memcpy(&record->fields, *p, sizeof(FwDumpRecord));
	if (load->version == 1)
	{
		/* the last caller's role stands for the one that created it */
		record->owner = record->fields.data.userid;
		record->database_marker = 0;
	}
	else
	{
		FwDumpRecord2 full;

		memcpy(&full, *p, sizeof(full));
		record->owner = full.owner;
		record->database_marker = full.database_marker;
	}
	*p += fixed;
	if (record->fields.name_len < 0 || record->fields.name_len > FW_MAX_STORED_NAME ||
		record->fields.key_len < 0 || record->fields.key_len > FW_MAX_KEY_BYTES ||
		load->end - *p < record->fields.name_len + record->fields.key_len)
	{
		*bad = true;
		return false;
	}
	record->text = *p;
	*p += record->fields.name_len + record->fields.key_len;
	return true;
}

static void
fwshmem_load_ignored(const char *reason)
{
	ereport(LOG,
			(errcode(ERRCODE_DATA_CORRUPTED),
			errmsg("ignoring file \"%s\"", FW_DUMP_FILE),
			errdetail("%s The counters start empty.", reason)));
}

/*
 * Read the file of the last clean shutdown into load, check it whole and
 * count the slots its counters to load need; load->data stays NULL when
 * there is nothing to load.  The file is removed, whatever it holds: after
 * a crash that re-creates shared memory, the counters of the last clean
 * shutdown must not come back.
 */
static void
fwshmem_load_read(FwLoad *load)
{
	FILE	   *file;
	long		size;
	FwDumpHeader2 header;
	pg_crc32c	crc;
	pg_crc32c	stored;
	struct stat st;
	char	   *p;
	uint32		i;
	FwLoadRecord record;
	bool		bad = false;

	memset(load, 0, sizeof(FwLoad));
	load->now = GetCurrentTimestamp();
	if (!fw_save)
	{
		unlink(FW_DUMP_FILE);
		return;
	}
	file = AllocateFile(FW_DUMP_FILE, PG_BINARY_R);
	if (file == NULL)
	{
		if (errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					errmsg("could not read file \"%s\": %m", FW_DUMP_FILE)));
		return;
	}
	unlink(FW_DUMP_FILE);

	/*
	 * Only a file saved before this server started is a clean shutdown's:
	 * one written since (by a shutdown that did not complete, or a keeper
	 * that saved and then the server crashed) holds counters older than
	 * those a crash lost.
	 */
	if (fstat(fileno(file), &st) == 0 && fwshmem_written_since_start(&st))
	{
		FreeFile(file);
		ereport(LOG,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("ignoring file \"%s\"", FW_DUMP_FILE),
				errdetail("The file was written after the server started, not at its last clean shutdown; the counters start empty.")));
		return;
	}
	if (fseek(file, 0, SEEK_END) != 0 || (size = ftell(file)) < 0 ||
		fseek(file, 0, SEEK_SET) != 0)
		goto read_error;
	if (size < (long) (sizeof(FwDumpHeader) + sizeof(crc)))
		goto bad_file;
	load->data = palloc_extended(size, MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	if (load->data == NULL)
	{
		FreeFile(file);
		ereport(LOG,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				errmsg("out of memory reading file \"%s\"", FW_DUMP_FILE),
				errdetail("The file is %ld bytes; the counters start empty.", size)));
		return;
	}
	if (fread(load->data, 1, size, file) != (size_t) size)
		goto read_error;
	FreeFile(file);
	file = NULL;

	/* check everything before using anything */
	memset(&header, 0, sizeof(header));
	memcpy(&header.common, load->data, sizeof(FwDumpHeader));
	memcpy(&stored, load->data + size - sizeof(crc), sizeof(crc));
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, load->data, size - sizeof(crc));
	FIN_CRC32C(crc);
	if (header.common.magic != FW_DUMP_MAGIC || !EQ_CRC32C(crc, stored) ||
		(header.common.version != 1 && header.common.version != FW_DUMP_VERSION))
		goto bad_file;
	load->version = header.common.version;
	load->count = header.common.count;
	load->records = load->data + sizeof(FwDumpHeader);
	if (load->version >= 2)
	{
		if (size < (long) (sizeof(FwDumpHeader2) + sizeof(crc)))
			goto bad_file;
		memcpy(&header, load->data, sizeof(header));
		load->records = load->data + sizeof(FwDumpHeader2);
		load->saved_nslots = header.nslots;
		if (header.system_identifier != GetSystemIdentifier())
		{
			pfree(load->data);
			load->data = NULL;
			ereport(LOG,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					errmsg("ignoring file \"%s\"", FW_DUMP_FILE),
					errdetail("The file was written by another server (system identifier %llu, this server's %llu); the counters start empty.",
							  (unsigned long long) header.system_identifier,
							  (unsigned long long) GetSystemIdentifier())));
			return;
		}
	}
	load->end = load->data + size - sizeof(crc);

	/* every record, and the slots of those to load */
	p = load->records;
	for (i = 0; fwshmem_load_next(load, &p, &record, &bad); i++)
		if (!fwshmem_forgettable(&record.fields.data, load->now))
			load->needed += fwshmem_slots_needed(record.fields.name_len + record.fields.key_len);
	if (bad || i != load->count)
		goto bad_file;
	return;

read_error:
	ereport(LOG,
			(errcode_for_file_access(),
			errmsg("could not read file \"%s\": %m", FW_DUMP_FILE)));
	goto forget;
bad_file:
	fwshmem_load_ignored("The file is truncated, corrupt or of another format.");
forget:
	if (file)
		FreeFile(file);
	if (load->data)
		pfree(load->data);
	load->data = NULL;
}

/*
 * The size of the first table of a server: fixed_window.max_counters; or,
 * when the counters saved at the last clean shutdown need more, the size
 * the table had then (or what they need, if more), so that none is lost
 * and new keys find room as before the restart.  Said loudly.  Called
 * under the registry's lock, by the one backend that creates it.
 */
Size
fwshmem_first_size(void *arg)
{
	FwLoad	   *load = (FwLoad *) arg;

	/* made by a session whose settings are known, with the admin's size */
	fwplaceholder_check_known();
	fwshmem_load_read(load);
	load->nslots = (uint32) fw_max_counters;
	if (load->needed > load->nslots)
	{
		load->nslots = Min(Max(load->needed, load->saved_nslots), FW_MAX_COUNTERS);
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("the saved counters need %u slots, more than fixed_window.max_counters (%d)",
					   load->needed, fw_max_counters),
				errdetail("The table of counters has %u slots, as before the restart, so that no counter whose window has not ended is lost.",
						  load->nslots),
				errhint("Set fixed_window.max_counters to %u with ALTER SYSTEM; or, once enough windows have ended, make the table smaller with fw_resize_counters().",
						load->nslots)));
	}
	return fwshmem_size(load->nslots);
}

/*
 * Load the counters read into the first table, before any other backend
 * sees it: each against the shares of the database and the role that made
 * it, beyond the shares if need be, since it held its slots before.
 */
static void
fwshmem_load(FwLoad *load)
{
	char	   *p = load->records;
	FwLoadRecord record;
	bool		bad;
	uint32		loaded = 0;
	uint32		ended = 0;
	uint32		lost = 0;

	while (fwshmem_load_next(load, &p, &record, &bad))
	{
		FwOwners	owners;

		if (fwshmem_forgettable(&record.fields.data, load->now))
		{
			ended++;
			continue;
		}
		owners.dbid = record.fields.dbid;
		owners.database = !OidIsValid(owners.dbid) ? FW_NO_ENTRY :
			fwshmem_share_entry(fw_shared->databases, FW_MAX_DATABASES, owners.dbid, true,
								record.database_marker);
		owners.roleid = record.owner;
		owners.role = !OidIsValid(owners.roleid) ? FW_NO_ENTRY :
			fwshmem_share_entry(fw_shared->roles, FW_MAX_ROLES, owners.roleid, true, 0);
		owners.unbounded = true;
		/* more databases or roles than are accounted for, or no room */
		if (owners.database == FW_NO_ENTRY || owners.role == FW_NO_ENTRY ||
			fwshmem_insert_stored(record.fields.dbid, record.text, record.fields.name_len,
								  record.fields.key_len, &owners,
								  &record.fields.data) == FW_NIL)
		{
			lost++;
			continue;
		}
		loaded++;
	}
	ereport(LOG,
			(errmsg("fixed_window loaded %u of %u saved counters", loaded, load->count),
			ended > 0 ? errdetail("%u had windows that ended without tokens to carry over.", ended) : 0));
	if (lost > 0)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				errmsg("fixed_window could not load %u saved counters whose windows had not ended", lost),
				errdetail("Shared memory accounts for the counters of at most %d databases and %d roles, and holds at most %d slots.",
						  FW_MAX_DATABASES, FW_MAX_ROLES, FW_MAX_COUNTERS),
				errhint("The keys of those counters may be allowed again before their windows end.")));
	pfree(load->data);
	load->data = NULL;
}

/*
 * Save the table now, holding every lock of it: by a keeper terminated
 * while the server runs, so that a clean shutdown before another keeper
 * starts (which takes a second) loses no counter.  The file is then loaded
 * only when the server starts anew: one written since the server started
 * is not a clean shutdown's for a table made again by this server (after a
 * crash).  The next keeper's save at the shutdown replaces it.
 */
void
fwshmem_save_now(void)
{
	if (!fw_save || !fwshmem_lock_all())
		return;
	fwshmem_dump();
	fwshmem_unlock_all();
}

/*
 * A keeper that starts while the server runs: the save its predecessor made
 * when it was terminated (fwshmem_save_now) is not needed any more, since
 * this keeper saves at the shutdown, and must not be loaded after an
 * immediate shutdown or a crash of the postmaster as a clean shutdown's
 * would.  A file written before the server started is a clean shutdown's,
 * for the table this server has not made yet: it stays.
 */
void
fwshmem_forget_running_save(void)
{
	struct stat st;

	if (stat(FW_DUMP_FILE, &st) == 0 && fwshmem_written_since_start(&st))
		unlink(FW_DUMP_FILE);
}
