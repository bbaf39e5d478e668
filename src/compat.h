/*-------------------------------------------------------------------------
 *
 * compat.h
 *	  The differences between the PostgreSQL versions fixed_window is
 *	  written for (14 to 18), and the one between platforms it needs, in
 *	  one place, so that the code itself reads as one version.  15, 17 and
 *	  18 are built on this project's machines (17 and 18 in chroots of
 *	  Debian trixie and sid); 14 and 16 are written from each release's
 *	  headers.
 *	  14 is the oldest: the extension's scripts use SQL-standard function
 *	  bodies (RETURN, BEGIN ATOMIC), which 14 introduced.  FW_MIN_PG_VERSION
 *	  is checked against META.json, debian/pgversions and the README by
 *	  scripts/check_version.sh.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#ifndef FW_COMPAT_H
#define FW_COMPAT_H

#define FW_MIN_PG_VERSION	140000

#if PG_VERSION_NUM < FW_MIN_PG_VERSION
#error "fixed_window needs PostgreSQL 14 or later"
#endif

#include "access/genam.h"
#include "access/heapam.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/parsenodes.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
#include "utils/tuplestore.h"

/*
 * A function that never returns: 18 replaced pg_attribute_noreturn() (GCC's
 * attribute, which may follow the parameters) with pg_noreturn (C11's
 * _Noreturn, which goes before the return type).  Before 18, pg_noreturn is
 * the attribute, which GCC accepts there too; write it first, as 18 does.
 */
#if PG_VERSION_NUM < 180000
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * A function or variable that several files of the library share and
 * nothing outside it uses: the calls to it stay direct, not through the
 * procedure linkage table, without link-time optimization too (16 builds
 * modules with -fvisibility=hidden, 15 does not).
 */
#if defined(__GNUC__) || defined(__clang__)
#define FW_HIDDEN __attribute__((visibility("hidden")))
#else
#define FW_HIDDEN
#endif

/* _PG_init is declared by fmgr.h from 16 on. */
#if PG_VERSION_NUM < 160000
extern void _PG_init(void);
#endif

/*
 * From 15 on, shared memory is requested from shmem_request_hook; before,
 * directly from _PG_init.
 */
#if PG_VERSION_NUM >= 150000
#define FW_HAVE_SHMEM_REQUEST_HOOK
#endif

/*
 * A registry of named dynamic shared memory segments from 17 on
 * (GetNamedDSMSegment); before, segment.c keeps its own in the main shared
 * memory.
 */
#if PG_VERSION_NUM >= 170000
#define FW_HAVE_DSM_REGISTRY
#endif

/* Custom settings' prefixes are reserved from 15 on. */
#if PG_VERSION_NUM < 150000
#define MarkGUCPrefixReserved(prefix) EmitWarningsOnPlaceholders(prefix)
#endif

/* The nanoseconds of a file's modification time (struct stat), by platform. */
#ifdef __APPLE__
#define FW_MTIME_NSEC(st)	((st).st_mtimespec.tv_nsec)
#else
#define FW_MTIME_NSEC(st)	((st).st_mtim.tv_nsec)
#endif

/* Every setting the server knows, and how many (one call from 16 on). */
static inline struct config_generic **
fwcompat_guc_variables(int *n)
{
#if PG_VERSION_NUM >= 160000
	return get_guc_variables(n);
#else
	*n = GetNumConfigOptions();
	return get_guc_variables();
#endif
}

/* A string constant, as the parser makes SET's arguments (A_Const changed in 15). */
static inline Node *
fwcompat_string_const(const char *value)
{
	A_Const    *c = makeNode(A_Const);

#if PG_VERSION_NUM >= 150000
	c->val.sval = *makeString(pstrdup(value));
#else
	c->val.type = T_String;
	c->val.val.str = pstrdup(value);
#endif
	c->location = -1;
	return (Node *) c;
}

/* Memory for a check hook's "extra": guc_malloc from 16 on. */
static inline void *
fwcompat_guc_malloc(size_t size)
{
#if PG_VERSION_NUM >= 160000
	return guc_malloc(LOG, size);
#else
	return malloc(size);
#endif
}

/* DecodeDateTime takes an extra error argument from 16 on. */
static inline int
fwcompat_decode_datetime(char **field, int *ftype, int nf, int *dtype,
						 struct pg_tm *tm, fsec_t *fsec, int *tzp)
{
#if PG_VERSION_NUM >= 160000
	DateTimeErrorExtra extra;

	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp, &extra);
#else
	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp);
#endif
}

/* Intervals can be infinite from 17 on. */
#ifdef INTERVAL_NOT_FINITE
#define FW_INTERVAL_NOT_FINITE(i) INTERVAL_NOT_FINITE(i)
#else
#define FW_INTERVAL_NOT_FINITE(i) false
#endif

/* What an update of a heap tuple leaves to do in the table's indexes. */
typedef enum FwIndexUpdate
{
	FW_INDEXES_NONE,			/* HOT: nothing */
	FW_INDEXES_ALL,				/* a new entry in every index */
	FW_INDEXES_SUMMARIZING		/* in summarizing indexes (BRIN) only: 16 on */
} FwIndexUpdate;

/*
 * Update a heap tuple in place of another; returns what its indexes need.
 * 16 reports it through an argument, and may leave a HOT update's entries
 * to summarizing indexes only.
 */
static inline FwIndexUpdate
fwcompat_heap_update(Relation rel, ItemPointer otid, HeapTuple tuple)
{
#if PG_VERSION_NUM >= 160000
	TU_UpdateIndexes update_indexes;

	simple_heap_update(rel, otid, tuple, &update_indexes);
	return update_indexes == TU_None ? FW_INDEXES_NONE :
		update_indexes == TU_Summarizing ? FW_INDEXES_SUMMARIZING : FW_INDEXES_ALL;
#else
	simple_heap_update(rel, otid, tuple);
	return HeapTupleIsHeapOnly(tuple) ? FW_INDEXES_NONE : FW_INDEXES_ALL;
#endif
}

/*
 * Begin a scan of a table by one of its indexes.  18 takes a place to count
 * the scan's index searches in (for EXPLAIN ANALYZE), as its fourth
 * argument; none here.
 */
static inline IndexScanDesc
fwcompat_index_beginscan(Relation heap, Relation index, Snapshot snapshot, int nkeys,
						 int norderbys)
{
#if PG_VERSION_NUM >= 180000
	return index_beginscan(heap, index, snapshot, NULL, nkeys, norderbys);
#else
	return index_beginscan(heap, index, snapshot, nkeys, norderbys);
#endif
}

/* The executor's insertion of a row version's entries into every index. */
static inline List *
fwcompat_insert_index_tuples(ResultRelInfo *result_rel, TupleTableSlot *slot, EState *estate,
							 FwIndexUpdate what)
{
#if PG_VERSION_NUM >= 160000
	return ExecInsertIndexTuples(result_rel, slot, estate, false, false, NULL, NIL,
								 what == FW_INDEXES_SUMMARIZING);
#else
	Assert(what == FW_INDEXES_ALL);
	return ExecInsertIndexTuples(result_rel, slot, estate, false, false, NULL, NIL);
#endif
}

/*
 * Set up a set-returning function that fills a tuplestore
 * (InitMaterializedSRF from 15.1 on), whose rows have at most max_columns
 * columns: a declaration with more, as SQL objects of a later version than
 * the library would make, is refused rather than given columns the library
 * never filled.
 */
static inline void
fwcompat_init_materialized_srf(FunctionCallInfo fcinfo, int max_columns)
{
	ReturnSetInfo *result;

#if PG_VERSION_NUM >= 150001
	InitMaterializedSRF(fcinfo, 0);
#else
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	tupdesc;
	MemoryContext oldcontext;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("set-valued function called in context that cannot accept a set")));
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("return type must be a row type")));

	oldcontext = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tuplestore_begin_heap(true, false, work_mem);
	rsinfo->setDesc = CreateTupleDescCopy(tupdesc);
	MemoryContextSwitchTo(oldcontext);
#endif
	result = (ReturnSetInfo *) fcinfo->resultinfo;
	if (result->setDesc->natts > max_columns)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				errmsg("function returning rows of at most %d columns called with a row of %d",
					   max_columns, result->setDesc->natts),
				errhint("The SQL objects of fixed_window may be of a later version than its library: install the library of their version, and restart the server.")));
}

#endif							/* FW_COMPAT_H */
