/*-------------------------------------------------------------------------
 *
 * segment.c
 *	  Dynamic shared memory segments that every backend of the cluster
 *	  finds, with or without shared_preload_libraries.
 *
 * The counters and the statistics live in dynamic shared memory (DSM)
 * segments, one current segment of each kind, so that they need no
 * restart: neither to exist, since any backend may create a segment, nor
 * to grow, since a bigger segment can replace the current one.  Backends
 * find the current segments through the registry, a small struct of the
 * main shared memory:
 *
 *	- PostgreSQL 17 and later have a registry of named DSM segments,
 *	  GetNamedDSMSegment(), which gives every backend the same struct: ours
 *	  is one of them.
 *	- PostgreSQL 14 to 16 have none.  There the registry is a struct of the
 *	  main shared memory that ShmemInitStruct() finds by name, in every
 *	  backend alike.  A preloaded library requests its space at postmaster
 *	  start; otherwise the first backend that needs it allocates it from the
 *	  main segment's spare space, which PostgreSQL keeps for such late
 *	  allocations (about 100 kB; the registry takes FW_REGISTRY_SIZE, 256 bytes).  PostgreSQL
 *	  17's registry is itself such a struct.
 *
 * A segment is created by the first backend that needs it, pinned so that
 * it outlives every backend that maps it (dsm_pin_segment), and mapped
 * for the rest of the session by each backend that uses it
 * (dsm_pin_mapping).  A crash restart destroys every DSM segment and
 * re-creates the main shared memory, registry included, so a segment's
 * counters start empty after a crash, and no backend can find a segment of
 * an earlier incarnation: the registry that named it is gone.  Each
 * segment still starts with a magic number, its kind and its generation,
 * which an attaching backend checks against the registry, so that a handle
 * that no longer names our segment is never used.  Generations start at
 * the registry's creation time in microseconds and count up.
 *
 * Replacing a segment (to grow the counters): its module creates the new
 * segment (fwsegment_create), fills it from the old one while it holds
 * every lock of the old one, and calls fwsegment_replace, which marks the
 * old segment retired and makes the registry name the new one.  Backends
 * check the retired flag of the segment they map once they hold its locks
 * (and before, to save a wait), and then map the new one; the old one is
 * destroyed when the last backend unmaps it.
 *
 * Locks.  The registry's lock serializes creating and replacing segments;
 * the registry's entries are read under it in shared mode.  Every LWLock
 * of every segment, and the registry's lock, are of one tranche, whose id
 * the registry holds and every backend registers under the name
 * "fixed_window".
 *
 *	FwRegistry.magic, tranche, lock		set when it is created, never change
 *	FwRegistry.next_generation, created, keeper_pid, keeper_asked,
 *	entries[]							the registry's lock
 *	FwSegment.magic, kind, generation, size
 *										set before the segment is published
 *	FwSegment.retired, attached			atomics
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "replication/walsender.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "compat.h"
#include "segment.h"

#ifdef FW_HAVE_DSM_REGISTRY
#include "storage/dsm_registry.h"
#endif

#define FW_REGISTRY_NAME	"fixed_window"
/*
 * The registry's magic number is "FWR" and a segment's "FWS", each followed
 * by the version of the layout of the shared memory of fixed_window, which
 * every change of the registry (FwRegistry), of a segment's header
 * (FwSegment) or of a kind's part (FwShared, the buckets, the free slots'
 * bits, the slots, FwStats) increments: a library installed while the server
 * runs must not read, or add to, shared memory that an earlier library made
 * and still uses.  The registry is checked before any segment is made or
 * mapped; each segment again when it is mapped.  The registry always takes
 * FW_REGISTRY_SIZE bytes, so that a library whose FwRegistry differs finds
 * it rather than fails to (ShmemInitStruct checks the size).
 */
#define FW_SHMEM_LAYOUT		4
#define FW_MAGIC_MASK		0xFFFFFF00
#define FW_REGISTRY_MAGIC	(0x46575200 | FW_SHMEM_LAYOUT)	/* "FWR" */
#define FW_SEGMENT_MAGIC	(0x46575300 | FW_SHMEM_LAYOUT)	/* "FWS" */
#define FW_REGISTRY_SIZE	256
#define FW_TRANCHE_NAME		"fixed_window"

typedef struct FwRegistryEntry
{
	dsm_handle	handle;			/* DSM_HANDLE_INVALID: none yet */
	uint64		generation;
} FwRegistryEntry;

typedef struct FwRegistry
{
	uint32		magic;
	int			tranche;
	LWLock		lock;
	uint64		next_generation;
	TimestampTz created;		/* when this registry was made */
	int			keeper_pid;		/* the running keeper's, or 0 */
	TimestampTz keeper_asked;	/* when a backend last asked for a keeper */
	FwRegistryEntry entries[FW_NUM_SEGMENT_KINDS];
} FwRegistry;

StaticAssertDecl(sizeof(FwRegistry) <= FW_REGISTRY_SIZE, "FwRegistry must fit in FW_REGISTRY_SIZE");

static FwRegistry *fw_registry = NULL;

/* This backend's mapping of each kind's current segment. */
static dsm_segment *fw_mapping[FW_NUM_SEGMENT_KINDS];
static FwSegment *fw_current[FW_NUM_SEGMENT_KINDS];

/* A segment this backend created and has not yet published. */
static dsm_segment *fw_new_mapping = NULL;

static void
fwsegment_registry_init(void *ptr)
{
	FwRegistry *registry = (FwRegistry *) ptr;
	int			i;

	registry->magic = FW_REGISTRY_MAGIC;
	registry->tranche = LWLockNewTrancheId();
	LWLockInitialize(&registry->lock, registry->tranche);
	registry->created = GetCurrentTimestamp();
	registry->next_generation = (uint64) registry->created;
	registry->keeper_pid = 0;
	registry->keeper_asked = 0;
	for (i = 0; i < FW_NUM_SEGMENT_KINDS; i++)
	{
		registry->entries[i].handle = DSM_HANDLE_INVALID;
		registry->entries[i].generation = 0;
	}
}

/* Shared memory made by a library of another layout is not ours to use. */
pg_noreturn static void
fwsegment_other_version_error(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			errmsg("the shared memory of fixed_window was made by another version of its library"),
			errdetail("The library was installed while the server was running, and sessions that loaded the earlier one still use that shared memory."),
			errhint("Restart the server to use the library installed now.")));
}

/* A preloaded library's registry is requested with the main memory. */
void
fwsegment_request(void)
{
#ifndef FW_HAVE_DSM_REGISTRY
	RequestAddinShmemSpace(FW_REGISTRY_SIZE);
#endif
}

/* Find, or create, the registry; with AddinShmemInitLock held if locked. */
static FwRegistry *
fwsegment_registry_struct(bool locked)
{
	bool		found;
	FwRegistry *registry;

#ifdef FW_HAVE_DSM_REGISTRY
	(void) locked;
	registry = GetNamedDSMSegment(FW_REGISTRY_NAME, FW_REGISTRY_SIZE,
								  fwsegment_registry_init, &found);
#else
	if (!locked)
		LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	registry = ShmemInitStruct(FW_REGISTRY_NAME, FW_REGISTRY_SIZE, &found);
	if (!found)
		fwsegment_registry_init(registry);
	if (!locked)
		LWLockRelease(AddinShmemInitLock);
#endif
	return registry;
}

/* Whether the registry is of fixed_window, but of another layout. */
static bool
fwsegment_registry_other_version(const FwRegistry *registry)
{
	return registry->magic != FW_REGISTRY_MAGIC &&
		(registry->magic & FW_MAGIC_MASK) == (FW_REGISTRY_MAGIC & FW_MAGIC_MASK);
}

/* Use the registry; with AddinShmemInitLock held if locked. */
static void
fwsegment_attach_registry(bool locked)
{
	FwRegistry *registry = fwsegment_registry_struct(locked);

	if (fwsegment_registry_other_version(registry))
		fwsegment_other_version_error();
	if (registry->magic != FW_REGISTRY_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("shared memory of fixed_window is not what this library expects"),
				errdetail("The struct \"%s\" of shared memory does not start with the magic number of fixed_window's registry.",
						  FW_REGISTRY_NAME)));
	LWLockRegisterTranche(registry->tranche, FW_TRANCHE_NAME);
	fw_registry = registry;
}

/*
 * Whether the shared memory of fixed_window was made by a library of
 * another layout, which this one must not use (see FW_SHMEM_LAYOUT).
 */
bool
fwsegment_other_version(void)
{
	if (fw_registry != NULL || !IsUnderPostmaster)
		return false;
	return fwsegment_registry_other_version(fwsegment_registry_struct(false));
}

/* From shmem_startup_hook, under AddinShmemInitLock. */
void
fwsegment_startup(void)
{
#ifndef FW_HAVE_DSM_REGISTRY
	fwsegment_attach_registry(true);
#endif
}

static FwRegistry *
fwsegment_registry(void)
{
	if (fw_registry == NULL)
		fwsegment_attach_registry(false);
	return fw_registry;
}

/* The tranche of the LWLocks of every segment. */
int
fwsegment_lock_tranche(void)
{
	return fwsegment_registry()->tranche;
}

static void
fwsegment_detached(dsm_segment *mapping, Datum arg)
{
	FwSegment  *segment = (FwSegment *) DatumGetPointer(arg);

	if (!am_walsender)
		pg_atomic_fetch_sub_u32(&segment->attached, 1);
}

/*
 * Keep a mapping for the session, counted in the segment's attached
 * unless this is a walsender: at a shutdown, walsenders stay until the
 * last checkpoint, after every other backend and the keeper have exited,
 * so the keeper, waiting for the others to unmap the counters, must not
 * wait for them.
 */
static void
fwsegment_keep_mapping(dsm_segment *mapping)
{
	FwSegment  *segment = (FwSegment *) dsm_segment_address(mapping);

	dsm_pin_mapping(mapping);
	if (!am_walsender)
		pg_atomic_fetch_add_u32(&segment->attached, 1);
	on_dsm_detach(mapping, fwsegment_detached, PointerGetDatum(segment));
}

/* Map the registry's current segment of kind, under the registry's lock. */
static dsm_segment *
fwsegment_map_current(FwSegmentKind kind)
{
	FwRegistryEntry *entry = &fw_registry->entries[kind];
	dsm_segment *mapping;
	FwSegment  *segment;

	Assert(LWLockHeldByMe(&fw_registry->lock));
	mapping = dsm_find_mapping(entry->handle);
	if (mapping != NULL)
		return mapping;
	mapping = dsm_attach(entry->handle);
	if (mapping == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				errmsg("could not map the shared memory segment of fixed_window")));
	segment = (FwSegment *) dsm_segment_address(mapping);
	if (dsm_segment_map_length(mapping) >= sizeof(FwSegment) &&
		segment->magic != FW_SEGMENT_MAGIC &&
		(segment->magic & FW_MAGIC_MASK) == (FW_SEGMENT_MAGIC & FW_MAGIC_MASK))
	{
		dsm_detach(mapping);
		fwsegment_other_version_error();
	}
	if (dsm_segment_map_length(mapping) < sizeof(FwSegment) ||
		segment->magic != FW_SEGMENT_MAGIC || segment->kind != (int32) kind ||
		segment->generation != entry->generation)
	{
		dsm_detach(mapping);
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				errmsg("the shared memory segment of fixed_window is not the one its registry names"),
				errdetail("Its magic number, kind or generation differs from the registry's.")));
	}
	fwsegment_keep_mapping(mapping);
	return mapping;
}

/* Create a segment of kind and size, mapped here, not yet published. */
static FwSegment *
fwsegment_new(FwSegmentKind kind, Size size)
{
	dsm_segment *mapping;
	FwSegment  *segment;

	Assert(LWLockHeldByMeInMode(&fw_registry->lock, LW_EXCLUSIVE));
	Assert(fw_new_mapping == NULL);
	mapping = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	if (mapping == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				errmsg("could not create a shared memory segment of %zu bytes for fixed_window", size),
				errdetail("The server has as many dynamic shared memory segments as it allows.")));
	segment = (FwSegment *) dsm_segment_address(mapping);
	memset(segment, 0, sizeof(FwSegment));
	segment->magic = FW_SEGMENT_MAGIC;
	segment->kind = (int32) kind;
	segment->generation = fw_registry->next_generation++;
	segment->size = size;
	pg_atomic_init_u32(&segment->retired, 0);
	pg_atomic_init_u32(&segment->attached, 0);
	fw_new_mapping = mapping;
	return segment;
}

/* Make a new segment the current one of its kind, and map it for good. */
static void
fwsegment_publish(FwSegment *segment)
{
	FwRegistryEntry *entry = &fw_registry->entries[segment->kind];
	dsm_segment *mapping = fw_new_mapping;

	Assert(LWLockHeldByMeInMode(&fw_registry->lock, LW_EXCLUSIVE));
	Assert(mapping != NULL && dsm_segment_address(mapping) == segment);
	dsm_pin_segment(mapping);
	fwsegment_keep_mapping(mapping);
	entry->handle = dsm_segment_handle(mapping);
	entry->generation = segment->generation;
	fw_new_mapping = NULL;
}

/*
 * The current segment of kind, mapped in this backend.  When there is
 * none, init != NULL creates it, of the size size(arg) says, and init fills
 * it before any other backend can see it (both are called only then, under
 * the registry's lock); otherwise NULL is returned.  A segment that was
 * replaced is unmapped: the caller must hold nothing of it.
 */
FwSegment *
fwsegment_map(FwSegmentKind kind, FwSegmentSize size, FwSegmentInit init, void *arg)
{
	FwSegment  *current = fw_current[kind];
	dsm_segment *mapping;

	Assert((size == NULL) == (init == NULL));
	if (current != NULL && pg_atomic_read_u32(&current->retired) == 0)
		return current;

	(void) fwsegment_registry();
	LWLockAcquire(&fw_registry->lock, LW_SHARED);
	if (fw_registry->entries[kind].handle == DSM_HANDLE_INVALID)
	{
		LWLockRelease(&fw_registry->lock);
		if (init == NULL)
			return NULL;
		LWLockAcquire(&fw_registry->lock, LW_EXCLUSIVE);
		if (fw_registry->entries[kind].handle == DSM_HANDLE_INVALID)
		{
			FwSegment  *segment = fwsegment_new(kind, size(arg));

			PG_TRY();
			{
				init(segment, arg);
			}
			PG_CATCH();
			{
				fwsegment_discard(segment);
				PG_RE_THROW();
			}
			PG_END_TRY();
			fwsegment_publish(segment);
		}
	}
	mapping = fwsegment_map_current(kind);
	LWLockRelease(&fw_registry->lock);

	if (fw_mapping[kind] != NULL && fw_mapping[kind] != mapping)
		dsm_detach(fw_mapping[kind]);
	fw_mapping[kind] = mapping;
	fw_current[kind] = (FwSegment *) dsm_segment_address(mapping);
	return fw_current[kind];
}

/*
 * A new segment of kind, to replace the current one once filled: the
 * registry's lock is held, exclusively, until fwsegment_replace or
 * fwsegment_discard, so that no other segment of any kind is created
 * meanwhile.
 */
FwSegment *
fwsegment_create(FwSegmentKind kind, Size size)
{
	(void) fwsegment_registry();
	LWLockAcquire(&fw_registry->lock, LW_EXCLUSIVE);
	/* on an error, the lock is released with all others */
	return fwsegment_new(kind, size);
}

/*
 * Make replacement the current segment of its kind in old's place, while
 * the caller holds every lock of old; old is marked retired, and destroyed
 * when the last backend unmaps it.  Releases the registry's lock.
 */
void
fwsegment_replace(FwSegment *old, FwSegment *replacement)
{
	FwRegistryEntry *entry = &fw_registry->entries[replacement->kind];
	dsm_handle	old_handle = entry->handle;

	Assert(old->kind == replacement->kind && old->generation == entry->generation);
	fwsegment_publish(replacement);
	pg_atomic_write_u32(&old->retired, 1);
	dsm_unpin_segment(old_handle);
	LWLockRelease(&fw_registry->lock);
}

/* Destroy a segment that was never published; releases the registry's lock. */
void
fwsegment_discard(FwSegment *segment)
{
	Assert(fw_new_mapping != NULL && dsm_segment_address(fw_new_mapping) == segment);
	dsm_detach(fw_new_mapping);
	fw_new_mapping = NULL;
	if (LWLockHeldByMe(&fw_registry->lock))
		LWLockRelease(&fw_registry->lock);
}

/*
 * The keeper (keeper.c): one runs at a time, and names itself here while
 * it runs, so that backends see when there is none.  A keeper that stops
 * without a shutdown is started again by the postmaster; a backend starts
 * one when none was registered, or the registration failed.
 */

/* How long a backend waits before asking again for a keeper that did not come. */
#define FW_KEEPER_WAIT_MS	10000

/*
 * Whether the caller should start a keeper: none runs and none was asked
 * for in the last FW_KEEPER_WAIT_MS (a preloaded server's own keeper is
 * given as long after the registry's creation).  Says yes to one caller
 * at a time.
 */
bool
fwsegment_keeper_wanted(bool preloaded)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz last;
	bool		wanted;

	(void) fwsegment_registry();
	if (fw_registry->keeper_pid != 0)
		return false;			/* read without the lock: checked again */
	LWLockAcquire(&fw_registry->lock, LW_EXCLUSIVE);
	last = fw_registry->keeper_asked;
	if (preloaded && last < fw_registry->created)
		last = fw_registry->created;
	wanted = fw_registry->keeper_pid == 0 &&
		(last == 0 || TimestampDifferenceExceeds(last, now, FW_KEEPER_WAIT_MS));
	if (wanted)
		fw_registry->keeper_asked = now;
	LWLockRelease(&fw_registry->lock);
	return wanted;
}

/* Whether a keeper runs now; read without the lock, so a hint. */
bool
fwsegment_keeper_running(void)
{
	(void) fwsegment_registry();
	return ((volatile FwRegistry *) fw_registry)->keeper_pid != 0;
}

/*
 * Called by a keeper as it starts: whether it is the one to run, no other
 * keeper running.
 */
bool
fwsegment_keeper_begin(void)
{
	bool		mine;

	(void) fwsegment_registry();
	LWLockAcquire(&fw_registry->lock, LW_EXCLUSIVE);
	mine = fw_registry->keeper_pid == 0 || fw_registry->keeper_pid == MyProcPid;
	if (mine)
		fw_registry->keeper_pid = MyProcPid;
	LWLockRelease(&fw_registry->lock);
	return mine;
}

/* Called by the running keeper as it exits, holding no lock. */
void
fwsegment_keeper_end(void)
{
	LWLockAcquire(&fw_registry->lock, LW_EXCLUSIVE);
	if (fw_registry->keeper_pid == MyProcPid)
		fw_registry->keeper_pid = 0;
	LWLockRelease(&fw_registry->lock);
}
