/*-------------------------------------------------------------------------
 *
 * segment.h
 *	  Dynamic shared memory segments every backend of the cluster finds:
 *	  the rendezvous of the counters' and the statistics' segments.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_SEGMENT_H
#define FW_SEGMENT_H

#include "port/atomics.h"
#include "storage/dsm.h"

/* What a segment holds; each kind has one current segment at a time. */
typedef enum FwSegmentKind
{
	FW_SEGMENT_COUNTERS,
	FW_SEGMENT_STATS,
	FW_NUM_SEGMENT_KINDS
} FwSegmentKind;

/*
 * The start of every segment.  The rest belongs to its kind's module, from
 * FW_SEGMENT_HEADER_SIZE on.
 */
typedef struct FwSegment
{
	uint32		magic;			/* FW_SEGMENT_MAGIC */
	int32		kind;			/* FwSegmentKind */
	uint64		generation;		/* as the registry recorded it */
	Size		size;			/* of the whole segment */
	pg_atomic_uint32 retired;	/* replaced: the registry has a newer one */
	pg_atomic_uint32 attached;	/* backends that map it, walsenders aside */
} FwSegment;

#define FW_SEGMENT_HEADER_SIZE	CACHELINEALIGN(sizeof(FwSegment))

/* The size of a segment to create; may raise an error. */
typedef Size (*FwSegmentSize) (void *arg);

/* Fills a new segment's part after the header; may raise an error. */
typedef void (*FwSegmentInit) (FwSegment *segment, void *arg);

extern void fwsegment_request(void);
extern void fwsegment_startup(void);
extern int	fwsegment_lock_tranche(void);
extern FwSegment *fwsegment_map(FwSegmentKind kind, FwSegmentSize size, FwSegmentInit init,
								void *arg);
extern FwSegment *fwsegment_create(FwSegmentKind kind, Size size);
extern void fwsegment_replace(FwSegment *old, FwSegment *replacement);
extern void fwsegment_discard(FwSegment *segment);
extern bool fwsegment_other_version(void);
extern bool fwsegment_keeper_wanted(bool preloaded);
extern bool fwsegment_keeper_running(void);
extern bool fwsegment_keeper_begin(void);
extern void fwsegment_keeper_end(void);

#endif							/* FW_SEGMENT_H */
