/* embedding_lookup.c: MindSpore's EmbeddingLookup, y = EmbeddingLookup(table,
 * indices) {offset: k}: row i - k of the table for each id i, zeros where
 * i - k is outside its rows (Gather on axis 0 would stop the run there).
 * MindSpore's offset is its third input, an int; here it is an attribute
 * (check.c says so to a model that writes it as an operand). The table has
 * 1 or 2 dims and the indices one or more (MindSpore's infer); the result
 * is the indices' dims, then the table's second.
 *
 * Its op dims are Gather's on axis 0 (rules.c): a split of the rows leaves
 * each rank its slice from offset + its first row, zeros for the rest, and
 * a partial sum an AllReduce completes, as MindSpore's EmbeddingLookupInfo
 * (a GatherInfo, gather_info.cc) replaces the operator by an
 * EmbeddingLookup with the slice's offset. Which splits go together is
 * MindSpore's (embedding_lookup_split_ok); MindSpore takes a parallel
 * EmbeddingLookup on a CPU (host) target only, with offset 0 there, while
 * shardc computes the same lookup on the device with any offset. */
#include "shape_internal.h"
#include "embedding_lookup.h"

#include <string.h>

bool infer_embedding_lookup(Infer *x, const Type *in, Type *out)
{
	const Type *idx = in_type(x, 1);
	StrBuf b = {0};
	bool ok = false;
	if (idx->dtype != DT_I32 && idx->dtype != DT_I64)
		ERR(x, in_span(x, 1), "EmbeddingLookup: the indices must be Int32 or Int64, %s is %s; Cast them to Int32",
		    in_name(x, 1, &b), dtype_name(idx->dtype));
	else if (in->rank < 1 || in->rank > 2)
		ERR(x, in_span(x, 0), "EmbeddingLookup: the table %s is %s, of %d dims; MindSpore's EmbeddingLookup takes a "
		    "table of 1 or 2 dims (Gather takes any)", in_name(x, 0, &b), DIMS(in), in->rank);
	else if (idx->rank < 1)
		ERR(x, in_span(x, 1), "EmbeddingLookup: the indices %s are a scalar; MindSpore's EmbeddingLookup needs "
		    "indices of one dim or more: Reshape them to (1,)", in_name(x, 1, &b));
	else if (idx->rank + in->rank - 1 > MAX_DIMS)
		ERR(x, x->n->op_span, "EmbeddingLookup: the result would have more than %d dims", MAX_DIMS);
	else
		ok = true;
	sb_free(&b);
	if (!ok)
		return false;
	out->rank = 0;
	for (int d = 0; d < idx->rank; d++)
		out->dims[out->rank++] = idx->dims[d];
	if (in->rank == 2)
		out->dims[out->rank++] = in->dims[1];
	return true;
}

static void print_split(StrBuf *b, const int64_t *s, int n)
{
	sb_puts(b, "(");
	for (int d = 0; d < n; d++)
		sb_printf(b, "%s%lld", d ? ", " : "", (long long)s[d]);
	sb_puts(b, n == 1 ? ",)" : ")");
}

/* MindSpore's GetGatherMode on axis 0 with P the table's splits, I the
 * indices' and D the devices: P[0] = 1 is the normal mode (the columns
 * and the indices split freely); with the rows split, a 2-d table and 2-d
 * indices take the indices split too when the columns stay whole and
 * either P[0] I[0] = D, I[1] = 1 (shard batch and axis) or both index dims
 * are split (shard batch, axis and sp), neither P[0] nor I[0] being D;
 * otherwise the rows split alone (ShardAxisImpl: "index can't be split"),
 * and with the columns too only over all the devices ("don't support
 * repeated calc"). */
bool embedding_lookup_split_ok(const OpDims *od, const int64_t *split, int64_t device_num, StrBuf *why)
{
	int ri = od->in_rank[1], rt = od->in_rank[0];
	const int64_t *in = split;   /* the indices' op dims come first */
	int64_t rows = split[ri], cols = rt == 2 ? split[ri + 1] : 1, pi = 1;
	for (int d = 0; d < ri; d++)
		pi *= in[d];
	if (rows == 1)
		return true;
	if (rt == 2 && ri == 2 && cols == 1 && rows != device_num && in[0] != device_num &&
	    ((in[1] == 1 && rows * in[0] == device_num) || (in[0] > 1 && in[1] > 1)))
		return true;
	bool with_ids = pi != 1, repeated = rt == 2 && cols != 1 && rows * cols != device_num;
	if (!with_ids && !repeated)
		return true;
	if (!why)
		return false;
	int64_t fix[MAX_DIMS] = {0}, ones[MAX_DIMS];
	for (int d = 0; d < MAX_DIMS; d++)
		ones[d] = 1;
	fix[0] = rows;
	fix[1] = 1;
	if (with_ids) {
		sb_puts(why, "EmbeddingLookup: the table's rows are split into ");
		sb_printf(why, "%lld and the indices too, ", (long long)rows);
		print_split(why, in, ri);
		sb_puts(why, "; MindSpore's EmbeddingLookupInfo splits the indices with the rows only for a 2-d table and "
		        "2-d indices, the table's columns whole and the rows times the indices' first dim making device_num, "
		        "or both index dims split (\"index can't be split\" otherwise); e.g. in_strategy (");
	} else {
		sb_printf(why, "EmbeddingLookup: the table's rows and columns are both split, (%lld, %lld), on %lld of the "
		          "%lld devices; MindSpore's EmbeddingLookupInfo refuses that repeated calculation (\"axis(0) is split, "
		          "and param_strategy[1] != 1, don't support repeated calc\"): split both over all %lld devices or the "
		          "rows alone, e.g. in_strategy (", (long long)rows, (long long)cols, (long long)(rows * cols),
		          (long long)device_num, (long long)device_num);
	}
	print_split(why, fix, rt);
	sb_puts(why, ", ");
	print_split(why, ones, ri);
	sb_puts(why, ")");
	return false;
}

int64_t embedding_lookup_limit(const Lowered *l, const LOp *o)
{
	int64_t offset = (o->a.present & ATTR_BIT(ATTR_OFFSET)) ? o->a.offset : 0;
	return offset + l->values[o->in[0]].global[0];
}
