/*-------------------------------------------------------------------------
 *
 * policy.c
 *	  Named policies, cached in each backend.
 *
 * A policy is the rows of fw_policy with its name, one per window, and the
 * rows of fw_override with its name, one per key and window (or one per
 * exempt key).  Both are ordinary tables of the extension; fw_define and
 * its siblings write them, and a statement trigger on each
 * (fw_policy_changed) invalidates their relcache entries, which every
 * backend hears of when the change commits.
 *
 * A backend reads a policy once, with all its overrides, into a cache
 * keyed by name, and drops the whole cache when it hears of a change to
 * either table (or of a relcache reset).  Each named call first takes in
 * the invalidation messages that have arrived, so that once a change has
 * committed no call anywhere uses the definitions before it, without
 * reconnecting and without a catalog lookup per call.
 *
 * The tables are read directly, through their primary keys and without
 * privilege checks: callers need no privilege on them, and fw_override,
 * which holds keys, grants none to ordinary roles.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "catalog.h"
#include "policy.h"

/* The columns of fw_policy, in order. */
enum
{
	POL_NAME,
	POL_PERIOD,
	POL_PERIOD_ID,
	POL_RATE,
	POL_CAPACITY,
	POL_START,
	POL_SHADOW,
	POL_COMMENT,
	POL_NATTS
};

static const Oid fw_policy_types[POL_NATTS] = {
	TEXTOID, INTERVALOID, TEXTOID, INT4OID, INT4OID, TIMESTAMPTZOID, BOOLOID, TEXTOID
};

/* The columns of fw_override, in order. */
enum
{
	OVR_NAME,
	OVR_KEY,
	OVR_PERIOD_ID,
	OVR_PERIOD,
	OVR_RATE,
	OVR_CAPACITY,
	OVR_CREATED_BY,
	OVR_NATTS
};

static const Oid fw_override_types[OVR_NATTS] = {
	TEXTOID, TEXTOID, TEXTOID, INTERVALOID, INT4OID, INT4OID, NAMEOID
};

typedef struct FwPolicyEntry
{
	char		name[FW_MAX_NAME_BYTES + 1];	/* hash key */
	FwPolicy	policy;
} FwPolicyEntry;

static MemoryContext fw_policy_context = NULL;
static HTAB *fw_policy_cache = NULL;
static uint64 fw_policy_generation = 0; /* bumped by every invalidation */
static Oid	fw_policy_relid = InvalidOid;
static Oid	fw_override_relid = InvalidOid;
static bool fw_policy_callback_registered = false;

/* The policy found last, while no invalidation came since: most calls name it again. */
static FwPolicy *fw_policy_last = NULL;
static uint64 fw_policy_last_generation = 0;

static void
fw_policy_invalidate(Datum arg, Oid relid)
{
	if (relid != InvalidOid && relid != fw_policy_relid && relid != fw_override_relid)
		return;
	fw_policy_generation++;
	fw_policy_relid = fw_override_relid = InvalidOid;
	fw_policy_cache = NULL;
	if (fw_policy_context != NULL)
		MemoryContextReset(fw_policy_context);
}

static void
fw_policy_reinstall_error(const char *relname)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("the table %s of fixed_window is missing or altered", relname),
			 errhint("Update the extension with ALTER EXTENSION fixed_window UPDATE, or reinstall it.")));
}

/*
 * Open one of the definition tables and its primary key, checking columns;
 * returns false if the table does not exist (the extension is older).
 */
static bool
fw_policy_open(const char *relname, const Oid *types, int natts,
			   Relation *rel, Relation *index, Oid *relid)
{
	Oid			schema = fw_extension_schema();
	char	   *indexname = psprintf("%s_pkey", relname);
	Oid			indexid;
	TupleDesc	tupdesc;
	int			i;

	if (!OidIsValid(schema))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"fixed_window\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION fixed_window.")));
	*relid = get_relname_relid(relname, schema);
	indexid = get_relname_relid(indexname, schema);
	if (!OidIsValid(*relid))
		return false;			/* an installation older than 1.1 */
	if (!OidIsValid(indexid))
		fw_policy_reinstall_error(relname);

	*rel = table_open(*relid, AccessShareLock);
	*index = index_open(indexid, AccessShareLock);
	tupdesc = RelationGetDescr(*rel);
	if ((*index)->rd_index->indrelid != *relid || tupdesc->natts != natts)
		fw_policy_reinstall_error(relname);
	for (i = 0; i < natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped || att->atttypid != types[i])
			fw_policy_reinstall_error(relname);
	}
	return true;
}

static void
fw_policy_close(Relation rel, Relation index)
{
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
}

/* A text column's bytes, copied with a terminating zero. */
static char *
fw_text_column(HeapTuple tuple, TupleDesc tupdesc, int col, int *len)
{
	bool		isnull;
	Datum		value = heap_getattr(tuple, col + 1, tupdesc, &isnull);
	text	   *t;

	if (isnull)
	{
		*len = 0;
		return pstrdup("");
	}
	t = DatumGetTextPP(value);
	*len = VARSIZE_ANY_EXHDR(t);
	return pnstrdup(VARDATA_ANY(t), *len);
}

static Datum
fw_column(HeapTuple tuple, TupleDesc tupdesc, int col, bool *isnull)
{
	return heap_getattr(tuple, col + 1, tupdesc, isnull);
}

/* Byte strings in the order of the "C" collation: bytes, then length. */
static int
fw_bytes_cmp(const char *a, int alen, const char *b, int blen)
{
	int			cmp = memcmp(a, b, Min(alen, blen));

	if (cmp != 0)
		return cmp;
	return (alen > blen) - (alen < blen);
}

/*
 * Windows in the order of their lengths (a month counted as its average
 * length), then of their identifiers: the order a call's windows are
 * listed in, and the order the table backend locks their rows in.
 */
static int
fw_window_cmp(const void *a, const void *b)
{
	const FwPolicyWindow *x = (const FwPolicyWindow *) a;
	const FwPolicyWindow *y = (const FwPolicyWindow *) b;
	double		lx = (double) x->limit.period.months * FW_USECS_PER_AVG_MONTH + x->limit.period.span;
	double		ly = (double) y->limit.period.months * FW_USECS_PER_AVG_MONTH + y->limit.period.span;

	if (lx != ly)
		return (lx > ly) ? 1 : -1;
	return fw_bytes_cmp(x->period_id, x->period_id_len, y->period_id, y->period_id_len);
}

/* Read the windows of a policy; returns false if it has none. */
static bool
fw_policy_read_windows(FwPolicy *policy, text *name, Snapshot snapshot)
{
	Relation	rel;
	Relation	index;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;

	policy->nwindows = 0;
	if (!fw_policy_open("fw_policy", fw_policy_types, POL_NATTS, &rel, &index, &fw_policy_relid))
		return false;
	ScanKeyInit(&key, POL_NAME + 1, BTEqualStrategyNumber, F_TEXTEQ, PointerGetDatum(name));
	scan = systable_beginscan_ordered(rel, index, snapshot, 1, &key);
	while ((tuple = systable_getnext_ordered(scan, ForwardScanDirection)) != NULL)
	{
		TupleDesc	tupdesc = RelationGetDescr(rel);
		FwPolicyWindow *window;
		bool		isnull;
		TimestampTz start;
		int32		capacity;
		char	   *period_id;

		if (policy->nwindows == FW_MAX_WINDOWS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("rate limit policy \"%s\" has more than %d windows",
							policy->name, FW_MAX_WINDOWS)));
		window = &policy->windows[policy->nwindows++];
		window->period = *DatumGetIntervalP(fw_column(tuple, tupdesc, POL_PERIOD, &isnull));
		start = DatumGetTimestampTz(fw_column(tuple, tupdesc, POL_START, &window->phase));
		capacity = DatumGetInt32(fw_column(tuple, tupdesc, POL_CAPACITY, &isnull));
		fw_limit_define(&window->limit,
						DatumGetInt32(fw_column(tuple, tupdesc, POL_RATE, &isnull)),
						&window->period,
						window->phase ? NULL : &start,
						&capacity);
		window->shadow = DatumGetBool(fw_column(tuple, tupdesc, POL_SHADOW, &isnull));
		period_id = fw_text_column(tuple, tupdesc, POL_PERIOD_ID, &window->period_id_len);
		if (window->period_id_len >= FW_MAX_PERIOD_ID)
			fw_policy_reinstall_error("fw_policy");
		memcpy(window->period_id, period_id, window->period_id_len);
	}
	systable_endscan_ordered(scan);
	fw_policy_close(rel, index);
	qsort(policy->windows, policy->nwindows, sizeof(FwPolicyWindow), fw_window_cmp);
	return policy->nwindows > 0;
}

static int
fw_override_cmp(const void *a, const void *b)
{
	const FwOverride *x = (const FwOverride *) a;
	const FwOverride *y = (const FwOverride *) b;

	return fw_bytes_cmp(x->key, x->key_len, y->key, y->key_len);
}

/* Read the overrides of a policy, one entry per key, sorted by key. */
static void
fw_policy_read_overrides(FwPolicy *policy, text *name, Snapshot snapshot)
{
	Relation	rel;
	Relation	index;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	int			allocated = 0;

	if (!fw_policy_open("fw_override", fw_override_types, OVR_NATTS, &rel, &index, &fw_override_relid))
		fw_policy_reinstall_error("fw_override");
	ScanKeyInit(&key, OVR_NAME + 1, BTEqualStrategyNumber, F_TEXTEQ, PointerGetDatum(name));
	scan = systable_beginscan_ordered(rel, index, snapshot, 1, &key);
	policy->noverrides = 0;
	policy->overrides = NULL;
	while ((tuple = systable_getnext_ordered(scan, ForwardScanDirection)) != NULL)
	{
		TupleDesc	tupdesc = RelationGetDescr(rel);
		FwOverride *override;
		int			key_len;
		char	   *keytext = fw_text_column(tuple, tupdesc, OVR_KEY, &key_len);
		int			period_id_len;
		char	   *period_id = fw_text_column(tuple, tupdesc, OVR_PERIOD_ID, &period_id_len);
		bool		rate_null;
		Datum		rate = fw_column(tuple, tupdesc, OVR_RATE, &rate_null);
		bool		capacity_null;
		Datum		capacity = fw_column(tuple, tupdesc, OVR_CAPACITY, &capacity_null);
		int			i;

		/* rows come in key order: a new key starts a new entry */
		if (policy->noverrides == 0 ||
			policy->overrides[policy->noverrides - 1].key_len != key_len ||
			memcmp(policy->overrides[policy->noverrides - 1].key, keytext, key_len) != 0)
		{
			if (policy->noverrides == allocated)
			{
				allocated = Max(16, allocated * 2);
				policy->overrides = policy->overrides ?
					repalloc_huge(policy->overrides, sizeof(FwOverride) * allocated) :
					palloc_extended(sizeof(FwOverride) * allocated, MCXT_ALLOC_HUGE);
			}
			override = &policy->overrides[policy->noverrides++];
			memset(override, 0, sizeof(FwOverride));
			override->key = keytext;
			override->key_len = key_len;
		}
		override = &policy->overrides[policy->noverrides - 1];

		if (period_id_len == 0 && rate_null)
		{
			override->exempt = true;
			continue;
		}
		/* an override of a window the policy no longer has does nothing */
		for (i = 0; i < policy->nwindows; i++)
		{
			FwPolicyWindow *window = &policy->windows[i];

			if (rate_null || window->period_id_len != period_id_len ||
				memcmp(window->period_id, period_id, period_id_len) != 0)
				continue;
			override->rate[i] = DatumGetInt32(rate);
			override->capacity[i] = capacity_null ? DatumGetInt32(rate) : DatumGetInt32(capacity);
			if (override->rate[i] <= 0 || override->capacity[i] < override->rate[i])
				fw_policy_reinstall_error("fw_override");
		}
	}
	systable_endscan_ordered(scan);
	fw_policy_close(rel, index);

	/* the index's order is that of the key column's collation: make it bytes' */
	if (policy->noverrides > 1)
		qsort(policy->overrides, policy->noverrides, sizeof(FwOverride), fw_override_cmp);
}

/* Copy a policy read in a short-lived context into the cache's. */
static void
fw_policy_keep(FwPolicy *dst, const FwPolicy *src)
{
	int			i;

	*dst = *src;
	if (src->noverrides == 0)
		return;
	dst->overrides = MemoryContextAllocHuge(fw_policy_context,
											sizeof(FwOverride) * src->noverrides);
	for (i = 0; i < src->noverrides; i++)
	{
		char	   *key = MemoryContextAlloc(fw_policy_context, src->overrides[i].key_len + 1);

		memcpy(key, src->overrides[i].key, src->overrides[i].key_len);
		dst->overrides[i] = src->overrides[i];
		dst->overrides[i].key = key;
	}
}

/*
 * The policy called name, from the cache or read now, or NULL if there is
 * none.  The result is valid until the next lookup.
 */
const FwPolicy *
fw_policy_find(const char *name, int name_len)
{
	char		hashkey[FW_MAX_NAME_BYTES + 1];
	FwPolicyEntry *entry;
	bool		found;
	FwPolicy   *policy;
	text	   *name_text;
	MemoryContext oldcontext;
	MemoryContext readcontext;

	Assert(name_len <= FW_MAX_NAME_BYTES);

	/* hear of changes committed since the last call */
	AcceptInvalidationMessages();

	if (fw_policy_last != NULL && fw_policy_last_generation == fw_policy_generation &&
		fw_policy_last->name_len == name_len &&
		memcmp(fw_policy_last->name, name, name_len) == 0)
		return fw_policy_last;

	memset(hashkey, 0, sizeof(hashkey));
	memcpy(hashkey, name, name_len);
	if (fw_policy_cache != NULL)
	{
		entry = hash_search(fw_policy_cache, hashkey, HASH_FIND, NULL);
		if (entry != NULL)
		{
			fw_policy_last = &entry->policy;
			fw_policy_last_generation = fw_policy_generation;
			return fw_policy_last;
		}
	}

	if (!fw_policy_callback_registered)
	{
		CacheRegisterRelcacheCallback(fw_policy_invalidate, (Datum) 0);
		fw_policy_callback_registered = true;
	}
	if (fw_policy_context == NULL)
		fw_policy_context = AllocSetContextCreate(CacheMemoryContext,
												  "fixed_window policies",
												  ALLOCSET_DEFAULT_SIZES);

	/*
	 * Read it in a context of its own; if an invalidation arrives while
	 * reading (opening the tables takes in messages), read it again.
	 */
	readcontext = AllocSetContextCreate(CurrentMemoryContext,
										"fixed_window policy read",
										ALLOCSET_DEFAULT_SIZES);
	oldcontext = MemoryContextSwitchTo(readcontext);
	policy = palloc0(sizeof(FwPolicy));
	memcpy(policy->name, name, name_len);
	policy->name_len = name_len;
	name_text = cstring_to_text_with_len(name, name_len);
	for (;;)
	{
		uint64		generation = fw_policy_generation;
		Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
		bool		defined;

		defined = fw_policy_read_windows(policy, name_text, snapshot);
		if (defined)
			fw_policy_read_overrides(policy, name_text, snapshot);
		UnregisterSnapshot(snapshot);
		if (generation != fw_policy_generation)
			continue;
		if (!defined)
		{
			MemoryContextSwitchTo(oldcontext);
			MemoryContextDelete(readcontext);
			return NULL;
		}
		break;
	}
	MemoryContextSwitchTo(oldcontext);

	if (fw_policy_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = FW_MAX_NAME_BYTES + 1;
		ctl.entrysize = sizeof(FwPolicyEntry);
		ctl.hcxt = fw_policy_context;
		fw_policy_cache = hash_create("fixed_window policies", 16, &ctl,
									  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(fw_policy_cache, hashkey, HASH_ENTER, &found);
	fw_policy_keep(&entry->policy, policy);
	MemoryContextDelete(readcontext);
	fw_policy_last = &entry->policy;
	fw_policy_last_generation = fw_policy_generation;
	return fw_policy_last;
}

/* The policy called name; an undefined name is an error. */
const FwPolicy *
fw_policy_get(const char *name, int name_len)
{
	const FwPolicy *policy = fw_policy_find(name, name_len);

	if (policy == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("rate limit policy \"%s\" does not exist",
						pnstrdup(name, name_len)),
				 errhint("Define it with fw_define(name, rate, period), or give rate and period in the call.")));
	return policy;
}

/* The overrides of one key of a policy, or NULL. */
const FwOverride *
fw_policy_override(const FwPolicy *policy, const char *key, int key_len)
{
	FwOverride	probe;

	if (policy->noverrides == 0)
		return NULL;
	probe.key = key;
	probe.key_len = key_len;
	return bsearch(&probe, policy->overrides, policy->noverrides, sizeof(FwOverride),
				   fw_override_cmp);
}
