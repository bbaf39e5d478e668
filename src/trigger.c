/*-------------------------------------------------------------------------
 *
 * trigger.c
 *	  fw_trigger(): limit the rows a table takes per value of a column.
 *
 *	  CREATE TRIGGER signup_quota BEFORE INSERT ON signups FOR EACH ROW
 *	      EXECUTE FUNCTION fw_trigger('signup', 'ip', '5', '1 day');
 *
 * Arguments: limit name, column, rate, period, and optionally start and
 * cost.  Each row spends cost tokens of the counter (name, value of the
 * column), exactly as fw_limit would; a denied row raises SQLSTATE RL429
 * with the time to wait in the hint, so that applications can catch it.
 * Bad arguments are reported at the first row, naming the trigger.
 *
 * Copyright (c) 2026, the fixed_window developers.  PostgreSQL License: see LICENSE.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "call.h"
#include "compat.h"
#include "store.h"

PG_FUNCTION_INFO_V1(fw_trigger);

/*
 * The SQLSTATE of a row over its limit: class "RL" (rate limit), which
 * lies in the range the SQL standard leaves to implementations (classes
 * starting with I to Z), then HTTP's 429.
 */
#define ERRCODE_RATE_LIMIT_EXCEEDED	MAKE_SQLSTATE('R','L','4','2','9')

#define FW_UNIX_EPOCH	(-INT64CONST(946684800000000))	/* fw_limit's default start */

pg_noreturn static void
fwtrigger_arg_error(TriggerData *trigdata, const char *what, const char *value,
					const char *detail, const char *hint)
{
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			errmsg("invalid value \"%s\" for argument \"%s\" of trigger \"%s\" on table \"%s\"",
				   value, what, trigdata->tg_trigger->tgname,
				   RelationGetRelationName(trigdata->tg_relation)),
			detail ? errdetail("%s", detail) : 0,
			hint ? errhint("%s", hint) :
			errhint("Use fw_trigger(name, column, rate, period [, start [, cost]]), "
					"for example fw_trigger('signup', 'ip', '5', '1 day').")));
}

static int32
fwtrigger_int(TriggerData *trigdata, const char *what, const char *value)
{
	char	   *end;
	long		result;

	errno = 0;
	result = strtol(value, &end, 10);
	if (end == value || *end != '\0' || errno != 0 ||
		result < PG_INT32_MIN || result > PG_INT32_MAX)
		fwtrigger_arg_error(trigdata, what, value, NULL, NULL);
	return (int32) result;
}

static void
fwtrigger_fix_setting(const char *name, const char *value)
{
	(void) set_config_option(name, value, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * Whether timestamptz input would read the value as a time that moves with
 * the clock ("now", "today 10:00", "Tomorrow", ...): a grid anchored there
 * moves too, and every row would pass.  Every run of letters is a word the
 * input function may read, whatever surrounds it and however long the
 * value; case does not matter.  "epoch" is a fixed time and is accepted.
 */
static bool
fwtrigger_relative_time(const char *value)
{
	static const char *const words[] = {"now", "today", "tomorrow", "yesterday"};
	const char *p = value;

	while (*p != '\0')
	{
		const char *word = p;
		size_t		len;
		size_t		w;

		while (isalpha((unsigned char) *p))
			p++;
		len = p - word;
		for (w = 0; w < lengthof(words); w++)
			if (len == strlen(words[w]) && pg_strncasecmp(word, words[w], len) == 0)
				return true;
		if (len == 0)
			p++;
	}
	return false;
}

/* Which argument is being read, for the context of its errors. */
typedef struct FwTriggerArgContext
{
	TriggerData *trigdata;
	const char *what;
} FwTriggerArgContext;

static void
fwtrigger_arg_context(void *arg)
{
	FwTriggerArgContext *ctx = (FwTriggerArgContext *) arg;

	errcontext("%s argument of trigger \"%s\" on table \"%s\"",
			   ctx->what, ctx->trigdata->tg_trigger->tgname,
			   RelationGetRelationName(ctx->trigdata->tg_relation));
}

/* Read a trigger argument with a type's input function. */
static Datum
fwtrigger_input(TriggerData *trigdata, const char *what, Oid infunc, char *value)
{
	FwTriggerArgContext ctx = {trigdata, what};
	ErrorContextCallback callback;
	Datum		result;

	callback.callback = fwtrigger_arg_context;
	callback.arg = &ctx;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	result = OidFunctionCall3(infunc, CStringGetDatum(value),
							  ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
	error_context_stack = callback.previous;
	return result;
}

/*
 * Whether a column can give keys: one value must be one key, whatever the
 * session.  The key is the column's text, read with DateStyle,
 * IntervalStyle, TimeZone, extra_float_digits and bytea_output fixed; types
 * whose text depends on anything else (the reg* types on search_path, money
 * on lc_monetary) are refused, and so are types whose equal values print
 * differently (interval's '1 day' and '24 hours', json numbers, strings
 * under a nondeterministic collation such as citext's) and types not meant
 * as keys.  numeric and floating-point values are normalized by
 * fwtrigger_key.
 */
static bool
fwtrigger_key_type_ok(Form_pg_attribute att)
{
	Oid			base = getBaseType(att->atttypid);

	if (OidIsValid(att->attcollation) && !get_collation_isdeterministic(att->attcollation))
		return false;

	switch (base)
	{
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
		case CHAROID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case OIDOID:
		case NUMERICOID:
		case FLOAT4OID:
		case FLOAT8OID:
		case BOOLOID:
		case DATEOID:
		case TIMEOID:
		case TIMETZOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case INETOID:
		case CIDROID:
		case MACADDROID:
		case MACADDR8OID:
		case UUIDOID:
		case BYTEAOID:
		case BITOID:
		case VARBITOID:
			return true;
		default:
			return get_typtype(base) == TYPTYPE_ENUM;
	}
}

/*
 * The key of a row: the column's text, with equal values written alike
 * (42 and 42.000, -0 and 0, 'a' and 'a  ' in character(n)); NULL for a
 * null value.
 */
static char *
fwtrigger_key(HeapTuple row, TupleDesc tupdesc, int attnum)
{
	bool		isnull;
	Datum		value = SPI_getbinval(row, tupdesc, attnum, &isnull);

	if (isnull)
		return NULL;
	switch (getBaseType(TupleDescAttr(tupdesc, attnum - 1)->atttypid))
	{
		case NUMERICOID:
			return numeric_normalize(DatumGetNumeric(value));
		case FLOAT8OID:
			if (DatumGetFloat8(value) == 0)
				return pstrdup("0");
			break;
		case FLOAT4OID:
			if (DatumGetFloat4(value) == 0)
				return pstrdup("0");
			break;
		case BPCHAROID:
			{
				/* trailing blanks do not count in character(n) equality */
				char	   *text = SPI_getvalue(row, tupdesc, attnum);
				int			len = strlen(text);

				while (len > 0 && text[len - 1] == ' ')
					text[--len] = '\0';
				return text;
			}
		default:
			break;
	}
	return SPI_getvalue(row, tupdesc, attnum);
}

/*
 * Whether a refused row's retry time outlives the error that refuses it.
 * On the table backend the error rolls back what the call wrote, among it
 * the counter a denial creates for a key that has none -- the counter in
 * which a cost above the rate gathers its tokens -- and the same row would
 * be refused again at that time.  Shared memory keeps it.
 */
static bool
fwtrigger_promise_kept(const FwCall *call, const FwOutcome *outcome)
{
	int			i;

	if (fwstore_use_shmem())
		return true;
	for (i = 0; i < call->n; i++)
		if (!call->shadow[i] && !outcome->decisions[i].ok && outcome->create[i])
			return false;
	return true;
}

/* The hint of a refused row: when to retry, if a time can be promised. */
static int
fwtrigger_retry_hint(const FwDecision *decision, bool kept)
{
	Interval	retry = {.time = decision->retry_after};

	if (!kept)
		return errhint("No time can be promised: on the table backend this refusal rolls back the counter "
					   "that would gather the tokens of a cost above the rate. Keep counters in shared memory, "
					   "or lower the cost.");
	if (decision->retry_after == FW_RETRY_NEVER)
		return errhint("No time can be promised: the row's cost is more than a window of the limit can hold, "
					   "or is covered only beyond 64-bit time, or the counters are full.");
	return errhint("Retry after %s.",
				   DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(&retry))));
}

Datum
fw_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Trigger    *trigger;
	TupleDesc	tupdesc;
	HeapTuple	row;
	char	  **args;
	int			attnum;
	char	   *key;
	int32		rate = 0;
	int32		cost = 1;
	Datum		period = (Datum) 0;
	TimestampTz start = FW_UNIX_EPOCH;
	FwCall		call;
	FwOutcome	outcome;
	bool		kept;
	FwDecision	decision;
	const char *name;
	int			nestlevel;
	bool		named;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				errmsg("fw_trigger must be called as a trigger")));
	trigger = trigdata->tg_trigger;
	if (!TRIGGER_FIRED_BEFORE(trigdata->tg_event) || !TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				errmsg("trigger \"%s\" on table \"%s\" must be BEFORE ... FOR EACH ROW",
					   trigger->tgname, RelationGetRelationName(trigdata->tg_relation)),
				errdetail("fw_trigger limits rows one by one, before they are written.")));
	if (trigger->tgnargs < 2 || trigger->tgnargs > 6)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				errmsg("trigger \"%s\" on table \"%s\" gives fw_trigger %d arguments",
					   trigger->tgname, RelationGetRelationName(trigdata->tg_relation),
					   trigger->tgnargs),
				errhint("Use fw_trigger(policy, column [, cost]) or fw_trigger(name, column, rate, period [, start [, cost]]), "
						"for example fw_trigger('signup', 'ip') or fw_trigger('signup', 'ip', '5', '1 day').")));
	/* two or three arguments name a policy */
	named = (trigger->tgnargs <= 3);

	args = trigger->tgargs;
	tupdesc = RelationGetDescr(trigdata->tg_relation);
	row = TRIGGER_FIRED_BY_UPDATE(trigdata->tg_event) ? trigdata->tg_newtuple : trigdata->tg_trigtuple;

	attnum = SPI_fnumber(tupdesc, args[1]);
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				errmsg("column \"%s\" of trigger \"%s\" does not exist in table \"%s\"",
					   args[1], trigger->tgname, RelationGetRelationName(trigdata->tg_relation))));
	if (!fwtrigger_key_type_ok(TupleDescAttr(tupdesc, attnum - 1)))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("column \"%s\" of type %s cannot be the key of trigger \"%s\" on table \"%s\"",
					   args[1], format_type_be(TupleDescAttr(tupdesc, attnum - 1)->atttypid),
					   trigger->tgname, RelationGetRelationName(trigdata->tg_relation)),
				errdetail("fw_trigger takes keys only from columns whose values have one text each, in every session: "
						  "string types with a deterministic collation, numbers, boolean, date and time, network address, "
						  "uuid, bytea, bit string and enum types, and domains over them."),
				errhint("Limit on a plain column of such a type, filled by the application or by an earlier BEFORE trigger "
						"(stored generated columns are computed after BEFORE triggers).")));
	if (!named)
		rate = fwtrigger_int(trigdata, "rate", args[2]);
	else if (trigger->tgnargs == 3)
		cost = fwtrigger_int(trigdata, "cost", args[2]);

	/*
	 * The key is the column's text, and start is read from text: both with
	 * fixed settings, so that a session's DateStyle, TimeZone and the like
	 * cannot make one value count as another key or move the windows.
	 */
	nestlevel = NewGUCNestLevel();
	fwtrigger_fix_setting("datestyle", "ISO, YMD");
	fwtrigger_fix_setting("intervalstyle", "postgres");
	fwtrigger_fix_setting("timezone", "UTC");
	fwtrigger_fix_setting("extra_float_digits", "1");
	fwtrigger_fix_setting("bytea_output", "hex");
	fwtrigger_fix_setting("timezone_abbreviations", "Default");

	if (!named)
		period = fwtrigger_input(trigdata, "period", F_INTERVAL_IN, args[3]);
	if (trigger->tgnargs >= 5)
	{
		if (fwtrigger_relative_time(args[4]))
			fwtrigger_arg_error(trigdata, "start", args[4],
								_("A start such as \"now\" or \"today\" moves with the clock, so the windows would move and every row would pass."),
								_("Give a fixed time, such as '2026-01-01 00:00+00'."));
		start = DatumGetTimestampTz(fwtrigger_input(trigdata, "start", F_TIMESTAMPTZ_IN, args[4]));
	}
	if (trigger->tgnargs == 6)
		cost = fwtrigger_int(trigdata, "cost", args[5]);

	key = fwtrigger_key(row, tupdesc, attnum);
	AtEOXact_GUC(true, nestlevel);
	if (key == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				errmsg("column \"%s\" limited by trigger \"%s\" must not be null",
					   args[1], trigger->tgname),
				errdetail("A row without a value cannot be counted against any key.")));

	name = args[0];
	if (strlen(name) > FW_MAX_NAME_BYTES || strlen(key) > FW_MAX_KEY_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				errmsg("limit name or value of column \"%s\" is too long for trigger \"%s\"",
					   args[1], trigger->tgname),
				errdetail("Names may have %d bytes and keys %d.", FW_MAX_NAME_BYTES, FW_MAX_KEY_BYTES)));

	if (named)
		fwcall_named(&call, FW_MODE_SPEND, name, strlen(name), key, strlen(key), cost);
	else
		fwcall_inline(&call, FW_MODE_SPEND, name, strlen(name), key, strlen(key),
					  rate, DatumGetIntervalP(period), &start, cost, NULL);
	fwstore_apply(&call, &outcome);
	fwdecide_answer(&outcome, &decision);
	kept = decision.ok || fwtrigger_promise_kept(&call, &outcome);

	if (!decision.ok && named)
		ereport(ERROR,
				(errcode(ERRCODE_RATE_LIMIT_EXCEEDED),
				errmsg("rate limit policy \"%s\" exceeded", name),
				errdetail("Trigger \"%s\" on table \"%s\" counts rows against policy \"%s\" for each value of column \"%s\".",
						  trigger->tgname, RelationGetRelationName(trigdata->tg_relation),
						  name, args[1]),
				fwtrigger_retry_hint(&decision, kept)));
	if (!decision.ok)
		ereport(ERROR,
				(errcode(ERRCODE_RATE_LIMIT_EXCEEDED),
				errmsg("rate limit \"%s\" exceeded", name),
				errdetail_plural("Trigger \"%s\" on table \"%s\" allows %d row per %s for each value of column \"%s\".",
								 "Trigger \"%s\" on table \"%s\" allows %d rows per %s for each value of column \"%s\".",
								 rate,
								 trigger->tgname, RelationGetRelationName(trigdata->tg_relation), rate,
								 args[3], args[1]),
				fwtrigger_retry_hint(&decision, kept)));

	return PointerGetDatum(row);
}
