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
 * Two caches, in one memory context:
 *
 *	- policies, by name: the windows of a policy, and whether any key of it
 *	  has an override or an exemption;
 *	- keys, by a 64-bit hash of (policy, key), for policies that have
 *	  overrides only: the key's overrides, or that it has none.  A key is
 *	  read when first called, through fw_override's primary key, so that a
 *	  policy with many overrides costs one index probe per key after a
 *	  change, not a read of all its overrides in every backend.  The cache
 *	  holds at most FW_KEY_CACHE_ENTRIES keys (FW_KEY_CACHE_BYTES of text),
 *	  then starts afresh.
 *
 * What a call reads is always one definition: a policy's windows and
 * whether it has overrides come from one snapshot, and a key read later
 * comes with the windows read again from that key's snapshot; when those
 * differ from the cached ones, a change is on its way, the key is answered
 * from what was just read and nothing is cached until the change arrives.
 *
 * Invalidation.  Each named call first takes in the invalidation messages
 * that have arrived, so that once a change has committed no call anywhere
 * uses the definitions before it, without reconnecting.  The relcache
 * callback only counts them (fw_policy_generation): opening a relation,
 * locking it or looking up the catalog can run the callback in the middle
 * of a read, and nothing that a caller holds may be freed or changed under
 * it.  The caches are dropped at the start of the next lookup, when no
 * pointer into them is held.  A lookup copies what it returns into the
 * caller's FwPolicyKey.
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
#include "validate.h"

/* How many keys, and how many bytes of their text, the key cache holds. */
#define FW_KEY_CACHE_ENTRIES	65536
#define FW_KEY_CACHE_BYTES		(16 * 1024 * 1024)

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

/* A policy in the cache: its windows, without any key's overrides. */
typedef struct FwPolicyEntry
{
	char		name[FW_MAX_NAME_BYTES + 1];	/* hash key, zero-padded */
	int			name_len;
	int			nwindows;
	FwPolicyWindow windows[FW_MAX_WINDOWS]; /* shortest first (fwpolicy_window_cmp) */
	bool		has_overrides;	/* a key of it has an override or exemption */
} FwPolicyEntry;

/* One key's overrides of a policy. */
typedef struct FwKeyOverrides
{
	bool		exempt;
	int32		rate[FW_MAX_WINDOWS];	/* 0: the window's own */
	int32		capacity[FW_MAX_WINDOWS];
} FwKeyOverrides;

/* A key of a policy with overrides, in the cache. */
typedef struct FwKeyEntry
{
	uint64		hash;			/* hash key: fwidentity_hash64 of (policy, key) */
	char	   *text;			/* the policy's name, then the key */
	int			name_len;
	int			key_len;
	FwKeyOverrides overrides;
} FwKeyEntry;

static MemoryContext fw_policy_context = NULL;	/* both caches */
static MemoryContext fw_keys_context = NULL;	/* the keys, a child of it */
static HTAB *fw_policies = NULL;
static HTAB *fw_keys = NULL;
static Size fw_keys_bytes = 0;

/*
 * Invalidations counted by the callback, and the count the caches were
 * built at: when they differ the caches are stale.
 */
static uint64 fw_policy_generation = 1;
static uint64 fw_cache_generation = 0;

/* The policy found last, while the caches stand: most calls name it again. */
static FwPolicyEntry *fw_policy_last = NULL;

/*
 * The definition tables and their primary keys, found once and kept: a
 * call whose key is not cached opens both, and looking them up in the
 * catalogs each time would cost more than reading the key.  A kept id is
 * checked when opened (a table dropped with the extension is not there,
 * an id used again is another relation, and REINDEX CONCURRENTLY replaces
 * a primary key by a new index of its name), and looked up again if it
 * fails.  Written by the readers only, never by the callback, which reads
 * them to know which invalidations concern the caches.
 */
typedef struct FwDefinitionTable
{
	const char *relname;
	const char *indexname;
	const Oid  *types;
	int			natts;
	Oid			relid;
	Oid			indexid;
} FwDefinitionTable;

static FwDefinitionTable fw_policy_table = {
	"fw_policy", "fw_policy_pkey", fw_policy_types, POL_NATTS, InvalidOid, InvalidOid
};
static FwDefinitionTable fw_override_table = {
	"fw_override", "fw_override_pkey", fw_override_types, OVR_NATTS, InvalidOid, InvalidOid
};
static bool fw_policy_callback_registered = false;

static void
fwpolicy_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == fw_policy_table.relid || relid == fw_override_table.relid)
		fw_policy_generation++;
}

pg_noreturn static void
fwpolicy_reinstall_error(const char *relname)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			errmsg("the table %s of fixed_window is missing or altered", relname),
			errhint("Update the extension with ALTER EXTENSION fixed_window UPDATE, or reinstall it.")));
}

/* Look a definition table up in the extension's schema; false if it has none. */
static bool
fwpolicy_find(FwDefinitionTable *table)
{
	Oid			schema = fwcatalog_extension_schema();

	if (!OidIsValid(schema))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				errmsg("extension \"fixed_window\" is not installed in this database"),
				errhint("Run CREATE EXTENSION fixed_window.")));
	table->relid = get_relname_relid(table->relname, schema);
	table->indexid = get_relname_relid(table->indexname, schema);
	if (!OidIsValid(table->relid))
		return false;			/* an installation older than 1.1 */
	if (!OidIsValid(table->indexid))
		fwpolicy_reinstall_error(table->relname);
	return true;
}

/*
 * Open one of the definition tables and its primary key, checking columns;
 * returns false if the table does not exist (the extension is older).
 */
static bool
fwpolicy_open(FwDefinitionTable *table, Relation *rel, Relation *index)
{
	int			attempt;

	for (attempt = 0; attempt < 2; attempt++)
	{
		TupleDesc	tupdesc;
		int			i;

		if ((attempt > 0 || !OidIsValid(table->relid)) && !fwpolicy_find(table))
			return false;
		if (!fwcatalog_open_table_and_key(table->relid, table->relname, table->indexid,
										  table->indexname, AccessShareLock, rel, index))
			continue;			/* gone, or replaced: look it up again */
		tupdesc = RelationGetDescr(*rel);
		if (tupdesc->natts != table->natts)
			fwpolicy_reinstall_error(table->relname);
		for (i = 0; i < table->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(tupdesc, i);

			if (att->attisdropped || att->atttypid != table->types[i])
				fwpolicy_reinstall_error(table->relname);
		}
		return true;
	}
	fwpolicy_reinstall_error(table->relname);
}

static void
fwpolicy_close(Relation rel, Relation index)
{
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
}

static Datum
fwpolicy_column(HeapTuple tuple, TupleDesc tupdesc, int col, bool *isnull)
{
	return heap_getattr(tuple, col + 1, tupdesc, isnull);
}

/* A text column's bytes, and their length; "" for NULL. */
static const char *
fwpolicy_text_column(HeapTuple tuple, TupleDesc tupdesc, int col, int *len)
{
	bool		isnull;
	Datum		value = fwpolicy_column(tuple, tupdesc, col, &isnull);
	text	   *t;

	if (isnull)
	{
		*len = 0;
		return "";
	}
	t = DatumGetTextPP(value);
	*len = VARSIZE_ANY_EXHDR(t);
	return VARDATA_ANY(t);
}

/* Byte strings in the order of the "C" collation: bytes, then length. */
static int
fwpolicy_bytes_cmp(const char *a, int alen, const char *b, int blen)
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
fwpolicy_window_cmp(const void *a, const void *b)
{
	const FwPolicyWindow *x = (const FwPolicyWindow *) a;
	const FwPolicyWindow *y = (const FwPolicyWindow *) b;
	double		lx = (double) x->limit.period.months * FW_USECS_PER_AVG_MONTH + x->limit.period.span;
	double		ly = (double) y->limit.period.months * FW_USECS_PER_AVG_MONTH + y->limit.period.span;

	if (lx != ly)
		return (lx > ly) ? 1 : -1;
	return fwpolicy_bytes_cmp(x->period_id, x->period_id_len, y->period_id, y->period_id_len);
}

/* Whether two reads of a policy found the same windows. */
static bool
fwpolicy_windows_equal(const FwPolicyEntry *a, const FwPolicyEntry *b)
{
	int			i;

	if (a->nwindows != b->nwindows)
		return false;
	for (i = 0; i < a->nwindows; i++)
	{
		const FwPolicyWindow *x = &a->windows[i];
		const FwPolicyWindow *y = &b->windows[i];

		if (x->limit.period.months != y->limit.period.months ||
			x->limit.period.span != y->limit.period.span ||
			x->limit.start != y->limit.start ||
			x->limit.rate != y->limit.rate ||
			x->limit.capacity != y->limit.capacity ||
			x->phase != y->phase || x->shadow != y->shadow ||
			x->period.month != y->period.month || x->period.day != y->period.day ||
			x->period.time != y->period.time ||
			fwpolicy_bytes_cmp(x->period_id, x->period_id_len, y->period_id, y->period_id_len) != 0)
			return false;
	}
	return true;
}

/* Read the windows of a policy into entry, as of snapshot. */
static void
fwpolicy_read_windows(Relation rel, Relation index, Snapshot snapshot,
					  text *name, FwPolicyEntry *entry)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;

	ScanKeyInit(&key, POL_NAME + 1, BTEqualStrategyNumber, F_TEXTEQ, PointerGetDatum(name));
	scan = systable_beginscan_ordered(rel, index, snapshot, 1, &key);
	while ((tuple = systable_getnext_ordered(scan, ForwardScanDirection)) != NULL)
	{
		FwPolicyWindow *window;
		bool		isnull;
		TimestampTz start;
		int32		capacity;
		const char *period_id;

		if (entry->nwindows == FW_MAX_WINDOWS)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					errmsg("rate limit policy \"%s\" has more than %d windows",
						   entry->name, FW_MAX_WINDOWS)));
		window = &entry->windows[entry->nwindows++];
		window->period = *DatumGetIntervalP(fwpolicy_column(tuple, tupdesc, POL_PERIOD, &isnull));
		start = DatumGetTimestampTz(fwpolicy_column(tuple, tupdesc, POL_START, &window->phase));
		capacity = DatumGetInt32(fwpolicy_column(tuple, tupdesc, POL_CAPACITY, &isnull));
		fwvalidate_limit(&window->limit,
						 DatumGetInt32(fwpolicy_column(tuple, tupdesc, POL_RATE, &isnull)),
						 &window->period,
						 window->phase ? NULL : &start,
						 &capacity);
		window->shadow = DatumGetBool(fwpolicy_column(tuple, tupdesc, POL_SHADOW, &isnull));
		period_id = fwpolicy_text_column(tuple, tupdesc, POL_PERIOD_ID, &window->period_id_len);
		if (window->period_id_len >= FW_MAX_PERIOD_ID)
			fwpolicy_reinstall_error("fw_policy");
		memcpy(window->period_id, period_id, window->period_id_len);
		window->period_hash = fwidentity_period_hash(window->period_id, window->period_id_len);
	}
	systable_endscan_ordered(scan);
	qsort(entry->windows, entry->nwindows, sizeof(FwPolicyWindow), fwpolicy_window_cmp);
}

/* Whether any key of the policy has an override or an exemption. */
static bool
fwpolicy_read_any_override(Relation rel, Relation index, Snapshot snapshot, text *name)
{
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	ScanKeyInit(&key, OVR_NAME + 1, BTEqualStrategyNumber, F_TEXTEQ, PointerGetDatum(name));
	scan = systable_beginscan_ordered(rel, index, snapshot, 1, &key);
	found = systable_getnext_ordered(scan, ForwardScanDirection) != NULL;
	systable_endscan_ordered(scan);
	return found;
}

/* Read one key's overrides of a policy whose windows are in entry. */
static void
fwpolicy_read_key(Relation rel, Relation index, Snapshot snapshot, text *name,
				  text *keytext, const FwPolicyEntry *entry, FwKeyOverrides *overrides)
{
	TupleDesc	tupdesc = RelationGetDescr(rel);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;

	memset(overrides, 0, sizeof(FwKeyOverrides));
	ScanKeyInit(&keys[0], OVR_NAME + 1, BTEqualStrategyNumber, F_TEXTEQ, PointerGetDatum(name));
	ScanKeyInit(&keys[1], OVR_KEY + 1, BTEqualStrategyNumber, F_TEXTEQ, PointerGetDatum(keytext));
	scan = systable_beginscan_ordered(rel, index, snapshot, 2, keys);
	while ((tuple = systable_getnext_ordered(scan, ForwardScanDirection)) != NULL)
	{
		int			period_id_len;
		const char *period_id = fwpolicy_text_column(tuple, tupdesc, OVR_PERIOD_ID, &period_id_len);
		bool		rate_null;
		Datum		rate = fwpolicy_column(tuple, tupdesc, OVR_RATE, &rate_null);
		bool		capacity_null;
		Datum		capacity = fwpolicy_column(tuple, tupdesc, OVR_CAPACITY, &capacity_null);
		int			i;

		if (period_id_len == 0 && rate_null)
		{
			overrides->exempt = true;
			continue;
		}
		/* an override of a window the policy no longer has does nothing */
		for (i = 0; i < entry->nwindows; i++)
		{
			const FwPolicyWindow *window = &entry->windows[i];

			if (rate_null || window->period_id_len != period_id_len ||
				memcmp(window->period_id, period_id, period_id_len) != 0)
				continue;
			overrides->rate[i] = DatumGetInt32(rate);
			overrides->capacity[i] = capacity_null ? DatumGetInt32(rate) : DatumGetInt32(capacity);
			if (overrides->rate[i] <= 0 || overrides->capacity[i] < overrides->rate[i])
				fwpolicy_reinstall_error("fw_override");
		}
	}
	systable_endscan_ordered(scan);
}

/*
 * Read a policy from the tables, all from one snapshot: its windows into
 * entry, and either whether it has overrides (key NULL) or the overrides of
 * one key.  Returns false if the policy has no window.
 */
static bool
fwpolicy_read(const char *name, int name_len, const char *key, int key_len,
			  FwPolicyEntry *entry, FwKeyOverrides *overrides)
{
	Relation	policy_rel;
	Relation	policy_index;
	Relation	override_rel;
	Relation	override_index;
	Snapshot	snapshot;
	text	   *name_text = cstring_to_text_with_len(name, name_len);

	memset(entry, 0, sizeof(FwPolicyEntry));
	memcpy(entry->name, name, name_len);
	entry->name_len = name_len;
	if (overrides != NULL)
		memset(overrides, 0, sizeof(FwKeyOverrides));

	if (!fwpolicy_open(&fw_policy_table, &policy_rel, &policy_index))
		return false;			/* an installation older than 1.1 */
	if (!fwpolicy_open(&fw_override_table, &override_rel, &override_index))
		fwpolicy_reinstall_error("fw_override");

	snapshot = RegisterSnapshot(GetLatestSnapshot());
	fwpolicy_read_windows(policy_rel, policy_index, snapshot, name_text, entry);
	if (entry->nwindows > 0 && key == NULL)
		entry->has_overrides = fwpolicy_read_any_override(override_rel, override_index,
														  snapshot, name_text);
	else if (entry->nwindows > 0)
		fwpolicy_read_key(override_rel, override_index, snapshot, name_text,
						  cstring_to_text_with_len(key, key_len), entry, overrides);
	UnregisterSnapshot(snapshot);

	fwpolicy_close(override_rel, override_index);
	fwpolicy_close(policy_rel, policy_index);
	return entry->nwindows > 0;
}

/*
 * Drop the caches when an invalidation came since they were built, and
 * create them if needed.  Called where no pointer into them is held.
 */
static void
fwpolicy_caches(void)
{
	HASHCTL		ctl;

	if (!fw_policy_callback_registered)
	{
		CacheRegisterRelcacheCallback(fwpolicy_invalidate, (Datum) 0);
		fw_policy_callback_registered = true;
	}
	if (fw_cache_generation == fw_policy_generation && fw_policies != NULL)
		return;

	if (fw_policy_context == NULL)
		fw_policy_context = AllocSetContextCreate(CacheMemoryContext,
												  "fixed_window policies",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContextReset(fw_policy_context);
	fw_keys_context = AllocSetContextCreate(fw_policy_context,
											"fixed_window policy keys",
											ALLOCSET_DEFAULT_SIZES);
	fw_policies = NULL;
	fw_keys = NULL;
	fw_keys_bytes = 0;
	fw_policy_last = NULL;

	ctl.keysize = FW_MAX_NAME_BYTES + 1;
	ctl.entrysize = sizeof(FwPolicyEntry);
	ctl.hcxt = fw_policy_context;
	fw_policies = hash_create("fixed_window policies", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	fw_cache_generation = fw_policy_generation;
}

/* The key cache, created empty when missing or full. */
static HTAB *
fwpolicy_key_cache(Size more_bytes)
{
	HASHCTL		ctl;

	if (fw_keys != NULL &&
		(hash_get_num_entries(fw_keys) >= FW_KEY_CACHE_ENTRIES ||
		 fw_keys_bytes + more_bytes > FW_KEY_CACHE_BYTES))
	{
		MemoryContextReset(fw_keys_context);
		fw_keys = NULL;
	}
	if (fw_keys == NULL)
	{
		ctl.keysize = sizeof(uint64);
		ctl.entrysize = sizeof(FwKeyEntry);
		ctl.hcxt = fw_keys_context;
		fw_keys = hash_create("fixed_window policy keys", 256, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		fw_keys_bytes = 0;
	}
	return fw_keys;
}

/* The cached overrides of a key, or NULL. */
static const FwKeyOverrides *
fwpolicy_key_find(uint64 hash, const char *name, int name_len, const char *key, int key_len)
{
	FwKeyEntry *entry = hash_search(fwpolicy_key_cache(0), &hash, HASH_FIND, NULL);

	if (entry == NULL || entry->name_len != name_len || entry->key_len != key_len ||
		memcmp(entry->text, name, name_len) != 0 ||
		memcmp(entry->text + name_len, key, key_len) != 0)
		return NULL;
	return &entry->overrides;
}

/* Keep the overrides of a key; another key of the same hash gives way. */
static void
fwpolicy_key_keep(uint64 hash, const char *name, int name_len, const char *key, int key_len,
				  const FwKeyOverrides *overrides)
{
	FwKeyEntry *entry = hash_search(fwpolicy_key_cache(name_len + key_len), &hash, HASH_ENTER, NULL);

	entry->hash = hash;
	entry->text = MemoryContextAlloc(fw_keys_context, name_len + key_len);
	memcpy(entry->text, name, name_len);
	memcpy(entry->text + name_len, key, key_len);
	entry->name_len = name_len;
	entry->key_len = key_len;
	entry->overrides = *overrides;
	fw_keys_bytes += name_len + key_len;
}

/* Copy a policy's windows, with a key's overrides, to the caller. */
static void
fwpolicy_copy(const FwPolicyEntry *entry, const FwKeyOverrides *overrides, FwPolicyKey *policy)
{
	int			i;

	policy->nwindows = entry->nwindows;
	memcpy(policy->windows, entry->windows, sizeof(FwPolicyWindow) * entry->nwindows);
	policy->exempt = false;
	if (overrides == NULL)
		return;
	policy->exempt = overrides->exempt;
	for (i = 0; i < entry->nwindows; i++)
	{
		if (overrides->rate[i] > 0)
		{
			policy->windows[i].limit.rate = overrides->rate[i];
			policy->windows[i].limit.capacity = overrides->capacity[i];
		}
	}
}

/*
 * The cached policy called name, or NULL; read and cached now if it is not
 * in the cache, in which case *fresh holds it when it cannot be cached.
 * Returns fresh with nwindows 0 when there is no such policy.
 */
static const FwPolicyEntry *
fwpolicy_entry(const char *name, int name_len, FwPolicyEntry *fresh)
{
	char		hashkey[FW_MAX_NAME_BYTES + 1];
	FwPolicyEntry *entry = fw_policy_last;
	uint64		generation = fw_policy_generation;

	if (entry != NULL && entry->name_len == name_len && memcmp(entry->name, name, name_len) == 0)
		return entry;
	memset(hashkey, 0, sizeof(hashkey));
	memcpy(hashkey, name, name_len);
	entry = hash_search(fw_policies, hashkey, HASH_FIND, NULL);
	if (entry == NULL)
	{
		if (!fwpolicy_read(name, name_len, NULL, 0, fresh, NULL))
			return fresh;
		/* cached only if no change was heard of while reading */
		if (generation != fw_policy_generation)
			return fresh;
		entry = hash_search(fw_policies, hashkey, HASH_ENTER, NULL);
		*entry = *fresh;
	}
	fw_policy_last = entry;
	return entry;
}

/*
 * The policy called name, as a call's key sees it (nk, whose name is name,
 * hashed by fwidentity_name_key; NULL: the windows alone), into *policy;
 * returns false if there is no such policy.  The 64-bit hash of the name and
 * key finds the key's overrides in the cache.
 */
bool
fwpolicy_lookup(const char *name, int name_len, FwNameKey *nk, FwPolicyKey *policy)
{
	const char *key = nk ? nk->key : NULL;
	int			key_len = nk ? nk->key_len : 0;
	FwPolicyEntry fresh;
	FwPolicyEntry with_key;
	const FwPolicyEntry *entry;
	const FwKeyOverrides *cached;
	FwKeyOverrides overrides;
	uint64		generation;
	uint64		key_hash64;

	Assert(name_len <= FW_MAX_NAME_BYTES);

	/* hear of changes committed since the last call, and drop what they end */
	AcceptInvalidationMessages();
	fwpolicy_caches();

	entry = fwpolicy_entry(name, name_len, &fresh);
	if (entry->nwindows == 0)
		return false;
	if (key == NULL || !entry->has_overrides)
	{
		fwpolicy_copy(entry, NULL, policy);
		return true;
	}

	/* a policy with overrides: the key's, from the cache */
	Assert(nk->name == name && nk->name_len == name_len);
	key_hash64 = fwidentity_name_key_hash64(nk);
	if (entry != &fresh &&
		(cached = fwpolicy_key_find(key_hash64, name, name_len, key, key_len)) != NULL)
	{
		fwpolicy_copy(entry, cached, policy);
		return true;
	}

	/*
	 * Or read now, with the windows again, from one snapshot.  Windows that
	 * differ from the cached ones mean a change whose invalidation has not
	 * arrived yet: the key is answered from what was read, and nothing is
	 * cached.
	 */
	generation = fw_policy_generation;
	if (!fwpolicy_read(name, name_len, key, key_len, &with_key, &overrides))
		return false;
	fwpolicy_copy(&with_key, &overrides, policy);
	if (entry != &fresh && generation == fw_policy_generation &&
		fwpolicy_windows_equal(entry, &with_key))
		fwpolicy_key_keep(key_hash64, name, name_len, key, key_len, &overrides);
	return true;
}

/* The same for the policy named by a call's name; an undefined name is an error. */
void
fwpolicy_get(FwNameKey *nk, FwPolicyKey *policy)
{
	const char *name = nk->name;
	int			name_len = nk->name_len;

	if (!fwpolicy_lookup(name, name_len, nk, policy))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				errmsg("rate limit policy \"%s\" does not exist",
					   pnstrdup(name, name_len)),
				errhint("Define it with fw_define(name, rate, period), or give rate and period in the call.")));
}
