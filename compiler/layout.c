/* layout.c: tensor layouts over a device matrix (docs/language.md, Layouts, Strategies).
 *
 * The algebra the parallel passes build on: turning a strategy (a tuple of
 * slice counts, or a layout application) into a TensorLayout, mapping ranks to
 * device-matrix coordinates and back, finding which slice of a tensor a rank
 * holds, which ranks hold an element, and which ranks form the group of a
 * collective along some axes. It assumes MindSpore's conventions: ranks are
 * numbered row-major over the device matrix (the last axis fastest), a dim
 * split over several axes takes its shard index from them in map order (the
 * first most significant), and a strategy tuple's repeated axis is appended
 * last. Everything here is pure arithmetic on small fixed-size structs: no
 * allocation, no diagnostics (layout_check returns its reason as text), so the
 * checks and every later pass can call it freely. */
#include "shardc.h"

#include <string.h>

bool layout_from_split(const int64_t *split, int rank, int64_t device_num, TensorLayout *out)
{
	if (rank < 0 || rank > MAX_DIMS || device_num < 1)
		die("layout_from_split: rank %d, device_num %lld", rank, (long long)device_num);
	int64_t product = 1;
	for (int i = 0; i < rank; i++) {
		if (split[i] < 1)
			die("layout_from_split: split[%d] = %lld", i, (long long)split[i]);
		if (split[i] > device_num / product)   /* product * split > device_num: cannot divide it */
			return false;
		product *= split[i];
	}
	if (device_num % product != 0)
		return false;
	int64_t repeat = device_num / product;
	/* Keeping the 1s keeps axis i == dim i, as MindSpore indexes its matrix;
	 * rank + 1 <= MAX_AXES, so the repeated axis always fits beside them. */
	memset(out, 0, sizeof *out);
	out->rank = rank;
	out->partial_op = REDUCE_SUM_OP;
	for (int i = 0; i < rank; i++) {
		if (split[i] > 1)
			out->map[i][out->nmap[i]++] = (int8_t)out->ndev;
		out->dev[out->ndev++] = split[i];
	}
	if (repeat > 1)
		out->dev[out->ndev++] = repeat;
	return true;
}

bool layout_from_strategy(const TensorStrategy *t, int64_t device_num, TensorLayout *out)
{
	if (!t->given)
		die("layout_from_strategy: a None strategy has no layout until it is inferred");
	if (!t->layout)
		return layout_from_split(t->split, t->rank, device_num, out);
	const LayoutDecl *d = t->layout;
	memset(out, 0, sizeof *out);
	out->ndev = d->ndims;
	out->rank = t->rank;
	out->partial_op = REDUCE_SUM_OP;
	int64_t product = 1;
	for (int a = 0; a < d->ndims; a++) {
		out->dev[a] = d->dims[a];
		product *= d->dims[a];
	}
	for (int i = 0; i < t->rank; i++) {
		out->nmap[i] = (int8_t)t->naxes[i];
		for (int k = 0; k < t->naxes[i]; k++)
			out->map[i][k] = (int8_t)t->axes[i][k];
	}
	return product == device_num;
}

void layout_replicated(int rank, int64_t device_num, TensorLayout *out)
{
	if (rank < 0 || rank > MAX_DIMS || device_num < 1)
		die("layout_replicated: rank %d, device_num %lld", rank, (long long)device_num);
	memset(out, 0, sizeof *out);
	out->ndev = 1;
	out->dev[0] = device_num;
	out->rank = rank;
	out->partial_op = REDUCE_SUM_OP;
}

int64_t layout_ndevices(const TensorLayout *l)
{
	int64_t n = 1;
	for (int a = 0; a < l->ndev; a++)
		n *= l->dev[a];
	return n;
}

int64_t layout_dim_split(const TensorLayout *l, int dim)
{
	int64_t n = 1;
	for (int k = 0; k < l->nmap[dim]; k++)
		n *= l->dev[l->map[dim][k]];
	return n;
}

void layout_coords(const TensorLayout *l, int64_t rank, int64_t *coords)
{
	for (int a = l->ndev - 1; a >= 0; a--) {
		coords[a] = rank % l->dev[a];
		rank /= l->dev[a];
	}
}

int64_t layout_rank_of(const TensorLayout *l, const int64_t *coords)
{
	int64_t rank = 0;
	for (int a = 0; a < l->ndev; a++)
		rank = rank * l->dev[a] + coords[a];
	return rank;
}

int64_t layout_shard_index(const TensorLayout *l, int64_t rank, int dim)
{
	int64_t coords[MAX_AXES];
	layout_coords(l, rank, coords);
	int64_t index = 0;
	for (int k = 0; k < l->nmap[dim]; k++) {
		int a = l->map[dim][k];
		index = index * l->dev[a] + coords[a];
	}
	return index;
}

int64_t layout_piece_len(const TensorLayout *l, const int64_t *global, int dim)
{
	int64_t split = layout_dim_split(l, dim);
	return (global[dim] + split - 1) / split;
}

bool layout_uneven(const TensorLayout *l, const int64_t *global, int dim)
{
	return global[dim] % layout_dim_split(l, dim) != 0;
}

void layout_local_shape(const TensorLayout *l, const int64_t *global, int64_t *local)
{
	for (int d = 0; d < l->rank; d++)
		local[d] = layout_piece_len(l, global, d);
}

/* Visits every setting of the coordinates on the n axes of `order` (the
 * first the most significant), the others held at coords' values, writing
 * the ranks into out[0..max) and returning how many there are. */
static int64_t enumerate_ordered(const TensorLayout *l, int64_t *coords, const int *order, int n, int64_t *out,
                                 int64_t max)
{
	for (int k = 0; k < n; k++)
		coords[order[k]] = 0;
	for (int64_t count = 0;; count++) {
		if (count < max)
			out[count] = layout_rank_of(l, coords);
		int k = n - 1;
		for (; k >= 0 && ++coords[order[k]] == l->dev[order[k]]; k--)
			coords[order[k]] = 0;
		if (k < 0)
			return count + 1;
	}
}

/* enumerate_ordered over `axes` in matrix order: row-major over a subset of
 * the axes is ascending rank order, because rank is row-major over them all. */
static int64_t enumerate_ranks(const TensorLayout *l, int64_t *coords, uint32_t axes, int64_t *out, int64_t max)
{
	int order[MAX_AXES], n = 0;
	for (int a = 0; a < l->ndev; a++)
		if (axes & (1u << a))
			order[n++] = a;
	return enumerate_ordered(l, coords, order, n, out, max);
}

int layout_group(const TensorLayout *l, int64_t rank, uint32_t axes, int64_t *members)
{
	int64_t coords[MAX_AXES];
	layout_coords(l, rank, coords);
	return (int)enumerate_ranks(l, coords, axes, members, INT64_MAX);
}

int layout_group_ordered(const TensorLayout *l, int64_t rank, const int *order, int n, int64_t *members)
{
	int64_t coords[MAX_AXES];
	layout_coords(l, rank, coords);
	return (int)enumerate_ordered(l, coords, order, n, members, INT64_MAX);
}

/* Mask of the axes some dim is split over. */
static uint32_t used_axes(const TensorLayout *l)
{
	uint32_t used = 0;
	for (int d = 0; d < l->rank; d++)
		for (int k = 0; k < l->nmap[d]; k++)
			used |= 1u << l->map[d][k];
	return used;
}

uint32_t layout_busy_axes(const TensorLayout *l)
{
	return used_axes(l) | l->partial;
}

uint32_t grad_partial_axes(const TensorLayout *in, const TensorLayout *out)
{
	return layout_busy_axes(out) & ~layout_busy_axes(in);
}

static uint32_t all_axes(const TensorLayout *l)
{
	return l->ndev ? (uint32_t)((1ull << l->ndev) - 1) : 0;
}

uint32_t layout_replica_axes(const TensorLayout *l)
{
	return all_axes(l) & ~layout_busy_axes(l);
}

int64_t layout_owner_of(const TensorLayout *l, const int64_t *global, const int64_t *index, int64_t *ranks, int max)
{
	int64_t coords[MAX_AXES] = {0};
	for (int d = 0; d < l->rank; d++) {
		int64_t shard = index[d] / layout_piece_len(l, global, d);
		for (int k = l->nmap[d] - 1; k >= 0; k--) {   /* the last axis is the least significant digit */
			int a = l->map[d][k];
			coords[a] = shard % l->dev[a];
			shard /= l->dev[a];
		}
	}
	return enumerate_ranks(l, coords, all_axes(l) & ~used_axes(l), ranks, max);
}

/* Removes axis `a` (size 1, or just folded into its neighbour): out of the
 * maps and the partial mask, the axes after it renumbered down by one. */
static void drop_axis(TensorLayout *l, int a)
{
	for (int i = a; i + 1 < l->ndev; i++)
		l->dev[i] = l->dev[i + 1];
	l->dev[--l->ndev] = 0;
	for (int d = 0; d < l->rank; d++) {
		int n = 0;
		for (int k = 0; k < l->nmap[d]; k++) {
			int x = l->map[d][k];
			if (x != a)
				l->map[d][n++] = (int8_t)(x > a ? x - 1 : x);
		}
		for (int k = n; k < l->nmap[d]; k++)
			l->map[d][k] = 0;
		l->nmap[d] = (int8_t)n;
	}
	uint32_t below = l->partial & ((1u << a) - 1);
	l->partial = below | ((l->partial >> (a + 1)) << a);
}

void layout_normalize(const TensorLayout *in, TensorLayout *out)
{
	if (out != in)
		*out = *in;
	for (int a = out->ndev - 1; a >= 0; a--)
		if (out->dev[a] == 1)
			drop_axis(out, a);
	if (!out->partial)
		out->partial_op = REDUCE_SUM_OP;   /* so that equal layouts compare equal field by field */
}

/* Axes a and a + 1 can be one axis of size dev[a] * dev[a+1] when they play
 * the same role in the same order: the merged coordinate a * dev[a+1] + b is
 * then exactly the digit pair they contributed to a rank and a shard index. */
static bool same_role(const TensorLayout *l, int a)
{
	uint32_t pa = l->partial & (1u << a), pb = l->partial & (1u << (a + 1));
	if (pa || pb)
		return pa && pb;
	for (int d = 0; d < l->rank; d++)
		for (int k = 0; k < l->nmap[d]; k++)
			if (l->map[d][k] == a)
				return k + 1 < l->nmap[d] && l->map[d][k + 1] == a + 1;
			else if (l->map[d][k] == a + 1)
				return false;   /* b used, a not (or not just before it) */
	return true;                /* neither used nor partial: both replicas */
}

void layout_canonical(const TensorLayout *in, TensorLayout *out)
{
	layout_normalize(in, out);
	for (int a = 0; a + 1 < out->ndev;) {
		if (same_role(out, a)) {
			out->dev[a] *= out->dev[a + 1];
			drop_axis(out, a + 1);
		} else
			a++;
	}
}

bool layout_equal(const TensorLayout *a, const TensorLayout *b)
{
	TensorLayout x, y;
	layout_canonical(a, &x);
	layout_canonical(b, &y);
	if (x.ndev != y.ndev || x.rank != y.rank || x.partial != y.partial || x.partial_op != y.partial_op)
		return false;
	for (int i = 0; i < x.ndev; i++)
		if (x.dev[i] != y.dev[i])
			return false;
	for (int d = 0; d < x.rank; d++) {
		if (x.nmap[d] != y.nmap[d])
			return false;
		for (int k = 0; k < x.nmap[d]; k++)
			if (x.map[d][k] != y.map[d][k])
				return false;
	}
	return true;
}

bool layout_check(const TensorLayout *l, const int64_t *global, char *why, size_t n)
{
	if (l->ndev < 0 || l->ndev > MAX_AXES) {
		snprintf(why, n, "%d device axes (at most %d)", l->ndev, MAX_AXES);
		return false;
	}
	if (l->rank < 0 || l->rank > MAX_DIMS) {
		snprintf(why, n, "tensor rank %d (at most %d)", l->rank, MAX_DIMS);
		return false;
	}
	int64_t devices = 1;
	for (int a = 0; a < l->ndev; a++) {
		if (l->dev[a] < 1 || l->dev[a] > INT32_MAX || devices > INT32_MAX / l->dev[a]) {
			snprintf(why, n, "device axis %d has size %lld; the matrix must hold 1 to 2^31 - 1 devices", a,
			         (long long)l->dev[a]);
			return false;
		}
		devices *= l->dev[a];
	}
	int user[MAX_AXES];
	for (int a = 0; a < MAX_AXES; a++)
		user[a] = -1;
	for (int d = 0; d < l->rank; d++) {
		if (l->nmap[d] < 0 || l->nmap[d] > l->ndev) {
			snprintf(why, n, "dim %d is mapped to %d axes of a %d-axis matrix", d, l->nmap[d], l->ndev);
			return false;
		}
		for (int k = 0; k < l->nmap[d]; k++) {
			int a = l->map[d][k];
			if (a < 0 || a >= l->ndev) {
				snprintf(why, n, "dim %d is mapped to axis %d of a %d-axis matrix", d, a, l->ndev);
				return false;
			}
			if (user[a] >= 0) {
				snprintf(why, n, "device axis %d is used by dim %d and dim %d", a, user[a], d);
				return false;
			}
			user[a] = d;
			if (l->partial & (1u << a)) {
				snprintf(why, n, "device axis %d splits dim %d and is also partial", a, d);
				return false;
			}
		}
	}
	if (l->partial & ~all_axes(l)) {
		snprintf(why, n, "partial mask 0x%x names an axis beyond the %d-axis matrix", (unsigned)l->partial, l->ndev);
		return false;
	}
	if (l->partial && (l->partial_op < REDUCE_SUM_OP || l->partial_op > REDUCE_PROD_OP)) {
		snprintf(why, n, "partial reduce op %d is not sum, max, mean, min or prod", (int)l->partial_op);
		return false;
	}
	for (int d = 0; global && d < l->rank; d++) {
		int64_t split = layout_dim_split(l, d);
		if (global[d] < split) {
			snprintf(why, n, "dim %d (size %lld) cannot be cut into %lld slices", d, (long long)global[d],
			         (long long)split);
			return false;
		}
	}
	if (n)
		why[0] = '\0';
	return true;
}

static void print_list(StrBuf *b, const int64_t *v, int n)
{
	sb_putc(b, '(');
	for (int i = 0; i < n; i++)
		sb_printf(b, i ? ", %lld" : "%lld", (long long)v[i]);
	sb_putc(b, ')');
}

void layout_print(StrBuf *b, const TensorLayout *l)
{
	int64_t v[MAX_AXES];
	sb_puts(b, "dev ");
	print_list(b, l->dev, l->ndev);
	sb_puts(b, " map (");
	for (int d = 0; d < l->rank; d++) {
		for (int k = 0; k < l->nmap[d]; k++)
			v[k] = l->map[d][k];
		if (d)
			sb_puts(b, ", ");
		print_list(b, v, l->nmap[d]);
	}
	sb_putc(b, ')');
	if (!l->partial)
		return;
	int n = 0;
	for (int a = 0; a < l->ndev; a++)
		if (l->partial & (1u << a))
			v[n++] = a;
	static const char *const names[] = {" partial sum ", " partial max ", " partial mean ", " partial min ", " partial prod "};
	sb_puts(b, names[l->partial_op]);
	print_list(b, v, n);
}

/* The matrix boundaries of a layout: the suffix products of its axes, from
 * the whole count down to 1. Axis a covers ranks' digits between bound[a]
 * and bound[a + 1]. */
static int bounds(const TensorLayout *l, int64_t *b)
{
	int n = 0;
	b[n++] = layout_ndevices(l);
	for (int a = 0; a < l->ndev; a++, n++)
		b[n] = b[n - 1] / l->dev[a];
	return n;
}

/* Rewrites l (normalized) onto the finer matrix whose bounds are cb[0..nc):
 * each axis becomes the run of fine axes it covers, in the same role and, in
 * a map, in the same place (most significant first). */
static void refine(const TensorLayout *l, const int64_t *cb, int nc, TensorLayout *out)
{
	int64_t lb[MAX_AXES + 1];
	bounds(l, lb);
	int first[MAX_AXES + 1];   /* first fine axis of each coarse axis; first[ndev] = fine count */
	for (int a = 0, f = 0; a <= l->ndev; a++) {
		while (f < nc - 1 && cb[f] > lb[a])
			f++;
		first[a] = f;
	}
	memset(out, 0, sizeof *out);
	out->ndev = nc - 1;
	for (int f = 0; f + 1 < nc; f++)
		out->dev[f] = cb[f] / cb[f + 1];
	out->rank = l->rank;
	out->partial_op = l->partial_op;
	for (int a = 0; a < l->ndev; a++)
		if (l->partial & (1u << a))
			for (int f = first[a]; f < first[a + 1]; f++)
				out->partial |= 1u << f;
	for (int d = 0; d < l->rank; d++)
		for (int k = 0; k < l->nmap[d]; k++) {
			int a = l->map[d][k];
			for (int f = first[a]; f < first[a + 1]; f++)
				out->map[d][out->nmap[d]++] = (int8_t)f;
		}
}

bool layout_on_matrix(const TensorLayout *l, const TensorLayout *m, TensorLayout *out)
{
	TensorLayout nl;
	layout_normalize(l, &nl);
	int64_t lb[MAX_AXES + 1], mb[MAX_AXES + 1];
	int nlb = bounds(&nl, lb), nmb = bounds(m, mb);
	if (lb[0] != mb[0])
		return false;
	for (int i = 0, j = 0; i < nlb; i++) {   /* each bound of l is one of m's */
		while (j < nmb && mb[j] > lb[i])
			j++;
		if (j == nmb || mb[j] != lb[i])
			return false;
	}
	refine(&nl, mb, nmb, out);
	return true;
}

bool layout_common_matrix(const TensorLayout *a, const TensorLayout *b, TensorLayout *ra, TensorLayout *rb)
{
	TensorLayout na, nb;
	layout_normalize(a, &na);
	layout_normalize(b, &nb);
	int64_t ba[MAX_AXES + 1], bb[MAX_AXES + 1], cb[2 * MAX_AXES + 2];
	int n1 = bounds(&na, ba), n2 = bounds(&nb, bb), nc = 0;
	/* Merge two descending lists; a common refinement exists when every
	 * bound divides the one before it. */
	for (int i = 0, j = 0; i < n1 || j < n2;) {
		int64_t v = j >= n2 || (i < n1 && ba[i] >= bb[j]) ? ba[i] : bb[j];
		if (i < n1 && ba[i] == v)
			i++;
		if (j < n2 && bb[j] == v)
			j++;
		if (nc && cb[nc - 1] % v != 0)
			return false;
		cb[nc++] = v;
	}
	if (nc - 1 > MAX_AXES)
		return false;
	refine(&na, cb, nc, ra);
	refine(&nb, cb, nc, rb);
	/* Neighbouring axes playing one role in both layouts act as one. */
	for (int x = 0; x + 1 < ra->ndev;) {
		if (same_role(ra, x) && same_role(rb, x)) {
			ra->dev[x] *= ra->dev[x + 1];
			rb->dev[x] *= rb->dev[x + 1];
			drop_axis(ra, x + 1);
			drop_axis(rb, x + 1);
		} else
			x++;
	}
	return true;
}

void layout_completed(const TensorLayout *l, const int64_t *piece, TensorLayout *out)
{
	*out = *l;
	out->partial = 0;
	int64_t n = 1;
	for (int a = 0; a < l->ndev; a++)
		if (l->partial & (1u << a))
			n *= l->dev[a];
	for (int d = 0; d < l->rank; d++)
		if (piece[d] % n == 0) {
			for (int a = 0; a < l->ndev; a++)
				if (l->partial & (1u << a))
					out->map[d][out->nmap[d]++] = (int8_t)a;
			return;
		}
}

/* What to do about dim i of a tensor that `splits[i]` slices may not cut:
 * where the split is refused for being uneven (`even`: uneven.c), the
 * nearest sizes that divide (padded, the padding masked; for a large dim
 * also the next multiple of 128 rows a slice, as Megatron pads a
 * vocabulary), another dim that takes the slices evenly, or the slice
 * counts that divide both the size and the device count; where it has more
 * slices than elements (check_strategies), another dim that takes them, or
 * the slice counts up to the size that divide the device count (uneven
 * pieces are fine there). */
void split_advice(StrBuf *b, const Type *type, const int64_t *splits, int i, int64_t devices, bool even,
                  uint32_t keep)
{
	int64_t size = type->dims[i], split = splits[i];
	int64_t up = (size + split - 1) / split * split, mega = (size + 128 * split - 1) / (128 * split) * 128 * split;
	if (size <= 1) {
		sb_puts(b, ": a dim of size 1 is broadcast; keep it whole (1)");
		return;
	}
	if (devices < 2 || (keep & (1u << i))) {   /* one device (stand_alone), or a dim the operator keeps whole */
		sb_printf(b, ": keep dim %d whole (1)", i);
		return;
	}
	if (even) {
		sb_printf(b, ": pad it to %lld (the next multiple of %lld)", (long long)up, (long long)split);
		if (size >= 128 * split && mega != up)
			sb_printf(b, " or %lld (%lld x a multiple of 128, as Megatron pads a vocabulary)", (long long)mega,
			          (long long)split);
		sb_puts(b, " and mask the padding (a padded vocabulary's logits), or");
	} else
		sb_puts(b, ":");
	for (int j = 0; j < type->rank; j++)
		if (j != i && !(keep & (1u << j)) &&
		    (even ? type->dims[j] % (splits[j] * split) == 0 : type->dims[j] >= splits[j] * split)) {
			int64_t moved[MAX_DIMS];
			memcpy(moved, splits, sizeof(int64_t) * (size_t)type->rank);
			moved[i] = 1;
			moved[j] *= split;
			sb_printf(b, " cut dim %d (size %lld) instead, ", j, (long long)type->dims[j]);
			ints_print(b, moved, type->rank);
			sb_puts(b, ", or");
			break;
		}
	int64_t fit[64];
	int n = 0;
	for (int64_t d = 2; d <= devices && d <= size && n < 64; d++)
		if ((!even || size % d == 0) && devices % d == 0)
			fit[n++] = d;
	if (!n) {
		sb_printf(b, " keep dim %d whole (no count of slices from 2 to %lld %s %lld)", i, (long long)devices,
		          even ? "divides" : "is at most", (long long)size);
		return;
	}
	sb_printf(b, " cut dim %d into ", i);
	for (int k = 0; k < n; k++)
		sb_printf(b, "%s%lld", k == 0 ? "" : k == n - 1 ? " or " : ", ", (long long)fit[k]);
	if (even)
		sb_printf(b, " slices (the divisors of %lld that divide device_num %lld)", (long long)size,
		          (long long)devices);
	else
		sb_printf(b, " slices (at most its %lld elements, dividing device_num %lld)", (long long)size,
		          (long long)devices);
}

void splits_fit_devices(int64_t *split, int n, int64_t devices)
{
	for (int i = 0; i < n; i++) {
		while (split[i] > 1 && devices % split[i] != 0)
			split[i]--;
		devices /= split[i];
	}
}
