/* test_layout.c: the tensor-layout algebra (layout.c).
 *
 * Hand-computed cases first (the seed's Layout((2, 2, 2), ("dp", "sp", "mp"))
 * example, repeated axes, groups, printing), then property tests over a few
 * thousand random layouts that count, element by element, which ranks hold
 * what. The random tests use splitmix64 with fixed seeds, so a failure
 * reproduces; each message names the layout it failed on. */
#include <criterion/criterion.h>
#include <string.h>

#include "shardc.h"

/* ---- helpers ---- */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int64_t rnd(uint64_t *s, int64_t n)   /* uniform in [0, n) */
{
	return (int64_t)(splitmix64(s) % (uint64_t)n);
}

/* A layout by hand: dev and the maps, each map a list ended by -1. */
static TensorLayout mk(int ndev, const int64_t *dev, int rank, const int (*maps)[MAX_DIMS + 1], uint32_t partial)
{
	TensorLayout l;
	memset(&l, 0, sizeof l);
	l.ndev = ndev;
	for (int a = 0; a < ndev; a++)
		l.dev[a] = dev[a];
	l.rank = rank;
	for (int d = 0; d < rank; d++)
		for (int k = 0; maps[d][k] >= 0; k++)
			l.map[d][l.nmap[d]++] = (int8_t)maps[d][k];
	l.partial = partial;
	l.partial_op = REDUCE_SUM_OP;
	return l;
}

static const char *show(const TensorLayout *l, char *buf, size_t n)
{
	StrBuf b = {0};
	layout_print(&b, l);
	snprintf(buf, n, "%s", b.data ? b.data : "");
	sb_free(&b);
	return buf;
}
#define SHOW(l) show((l), (char[256]){0}, 256)

/* The seed's matrix: Layout((2, 2, 2), ("dp", "sp", "mp")), rank = 4 dp + 2 sp + mp. */
enum { DP, SP, MP };
static const LayoutDecl seed_decl = {
	.name = "L", .ndims = 3, .dims = {2, 2, 2}, .alias = {"dp", "sp", "mp"},
};

/* L(...) applied to a tensor: axes[d] lists the dim's axes, ended by -1 ("None": just -1). */
static TensorStrategy apply(const LayoutDecl *decl, int rank, const int (*axes)[MAX_DIMS + 1])
{
	TensorStrategy t;
	memset(&t, 0, sizeof t);
	t.given = true;
	t.layout = decl;
	t.rank = rank;
	for (int d = 0; d < rank; d++) {
		t.split[d] = 1;
		for (int k = 0; axes[d][k] >= 0; k++) {
			t.axes[d][t.naxes[d]++] = axes[d][k];
			t.split[d] *= decl->dims[axes[d][k]];
		}
	}
	return t;
}

static TensorStrategy tuple_strategy(int rank, const int64_t *split)
{
	TensorStrategy t;
	memset(&t, 0, sizeof t);
	t.given = true;
	t.rank = rank;
	for (int d = 0; d < rank; d++)
		t.split[d] = split[d];
	return t;
}

/* ---- the Layout example of docs/language.md ---- */

/* a = L("mp", ("sp", "dp")) on a (2, 4) tensor: the row [a0, a1, a2, a3] lies on
 * ranks 0, 4, 2, 6. Column slice c = 2 sp + dp, so c = 1 is dp = 1: rank 4. */
Test(layout_seed, row_of_a_lies_on_ranks_0_4_2_6)
{
	TensorStrategy t = apply(&seed_decl, 2, (const int[][MAX_DIMS + 1]){{MP, -1}, {SP, DP, -1}});
	TensorLayout l;
	cr_assert(layout_from_strategy(&t, 8, &l));
	int64_t global[2] = {2, 4};
	char why[128];
	cr_assert(layout_check(&l, global, why, sizeof why), "%s", why);
	const int64_t want[4] = {0, 4, 2, 6};
	for (int c = 0; c < 4; c++) {
		int64_t ranks[8], index[2] = {0, c};
		cr_assert_eq(layout_owner_of(&l, global, index, ranks, 8), 1, "a0%d has one owner", c);
		cr_assert_eq(ranks[0], want[c], "a[0][%d] on rank %lld, want %lld", c, (long long)ranks[0],
		             (long long)want[c]);
	}
	cr_assert_str_eq(SHOW(&l), "dev (2, 2, 2) map ((2), (1, 0))");
	cr_assert_eq(layout_replica_axes(&l), 0u);
}

/* Which (row, column) slice each of the 8 ranks holds, computed by hand from
 * rank = 4 dp + 2 sp + mp: ranks 0..7 are (dp, sp, mp) = 000, 001, 010, 011,
 * 100, 101, 110, 111. */
Test(layout_seed, all_ranks_slices_of_a)
{
	TensorStrategy t = apply(&seed_decl, 2, (const int[][MAX_DIMS + 1]){{MP, -1}, {SP, DP, -1}});
	TensorLayout l;
	cr_assert(layout_from_strategy(&t, 8, &l));
	/* row slice = mp; column slice = 2 sp + dp */
	const int64_t row[8] = {0, 1, 0, 1, 0, 1, 0, 1};
	const int64_t col[8] = {0, 0, 2, 2, 1, 1, 3, 3};
	for (int r = 0; r < 8; r++) {
		cr_assert_eq(layout_shard_index(&l, r, 0), row[r], "rank %d row slice", r);
		cr_assert_eq(layout_shard_index(&l, r, 1), col[r], "rank %d column slice", r);
	}
	cr_assert_eq(layout_dim_split(&l, 0), 2);
	cr_assert_eq(layout_dim_split(&l, 1), 4);
	int64_t global[2] = {8, 16}, local[2];
	layout_local_shape(&l, global, local);
	cr_assert_eq(local[0], 4);
	cr_assert_eq(local[1], 4);
}

Test(layout_seed, all_ranks_slices_of_w)
{
	/* L(("sp", "dp"), "None"): dim 0 slice = 2 sp + dp, dim 1 whole, mp replicates */
	TensorStrategy t = apply(&seed_decl, 2, (const int[][MAX_DIMS + 1]){{SP, DP, -1}, {-1}});
	TensorLayout l;
	cr_assert(layout_from_strategy(&t, 8, &l));
	const int64_t s0[8] = {0, 0, 2, 2, 1, 1, 3, 3};
	for (int r = 0; r < 8; r++) {
		cr_assert_eq(layout_shard_index(&l, r, 0), s0[r], "rank %d", r);
		cr_assert_eq(layout_shard_index(&l, r, 1), 0, "rank %d", r);
	}
	cr_assert_eq(layout_replica_axes(&l), 1u << MP);
	int64_t global[2] = {16, 8}, local[2], index[2] = {4, 7}, ranks[8];
	layout_local_shape(&l, global, local);
	cr_assert_eq(local[0], 4);
	cr_assert_eq(local[1], 8);
	/* row 4 is in slice 1 (dp = 1, sp = 0): ranks 4 and 5, which differ only in mp */
	cr_assert_eq(layout_owner_of(&l, global, index, ranks, 8), 2);
	cr_assert_eq(ranks[0], 4);
	cr_assert_eq(ranks[1], 5);
	cr_assert_str_eq(SHOW(&l), "dev (2, 2, 2) map ((1, 0), ())");
}

Test(layout_seed, all_ranks_slices_of_y)
{
	/* L(("mp", "sp", "dp"), "None"): dim 0 slice = 4 mp + 2 sp + dp */
	TensorStrategy t = apply(&seed_decl, 2, (const int[][MAX_DIMS + 1]){{MP, SP, DP, -1}, {-1}});
	TensorLayout l;
	cr_assert(layout_from_strategy(&t, 8, &l));
	const int64_t s0[8] = {0, 4, 2, 6, 1, 5, 3, 7};
	for (int r = 0; r < 8; r++)
		cr_assert_eq(layout_shard_index(&l, r, 0), s0[r], "rank %d", r);
	cr_assert_eq(layout_dim_split(&l, 0), 8);
	cr_assert_eq(layout_replica_axes(&l), 0u);
	int64_t global[2] = {8, 8}, index[2], ranks[8];
	for (int i = 0; i < 8; i++) {
		index[0] = i;
		index[1] = 3;
		cr_assert_eq(layout_owner_of(&l, global, index, ranks, 8), 1);
		cr_assert_eq(layout_shard_index(&l, ranks[0], 0), i, "row %d on rank %lld", i, (long long)ranks[0]);
	}
}

/* The same layouts as check.c decodes them from the seed sample's text. */
static const char seed_ir[] =
	"context { device_num: 8, parallel_mode: \"semi_auto_parallel\" }\n"
	"layout L = Layout((2, 2, 2), (\"dp\", \"sp\", \"mp\"))\n"
	"graph @net(%x: <Tensor[Float32], (8, 16)>, %w: <Tensor[Float32], (16, 8)>) {\n"
	"  %y = MatMul(%x, %w) {in_strategy: (L(\"mp\", (\"sp\", \"dp\")), L((\"sp\", \"dp\"), \"None\")),\n"
	"                       out_strategy: (L((\"mp\", \"sp\", \"dp\"), \"None\"),)}\n"
	"  return %y\n"
	"}\n";

Test(layout_seed, decoded_from_ir_text)
{
	Diag d = {.out = stderr};
	Module *m = parse_module("seed.ir", seed_ir, (int)strlen(seed_ir), &d);
	cr_assert(d.nerrors == 0 && check_context(m, &d) && check_names(m, &d) && infer_shapes(m, &d) &&
	          check_strategies(m, &d));
	const Node *n = &module_entry(m)->nodes[0];
	TensorLayout x, w, y;
	cr_assert(layout_from_strategy(&n->a.in_strategy.t[0], m->ctx.device_num, &x));
	cr_assert(layout_from_strategy(&n->a.in_strategy.t[1], m->ctx.device_num, &w));
	cr_assert(layout_from_strategy(&n->a.out_strategy.t[0], m->ctx.device_num, &y));
	cr_assert_str_eq(SHOW(&x), "dev (2, 2, 2) map ((2), (1, 0))");
	cr_assert_str_eq(SHOW(&w), "dev (2, 2, 2) map ((1, 0), ())");
	cr_assert_str_eq(SHOW(&y), "dev (2, 2, 2) map ((2, 1, 0), ())");
	/* x is (8, 16): row 0's four column blocks lie on ranks 0, 4, 2, 6 */
	const int64_t want[4] = {0, 4, 2, 6};
	for (int c = 0; c < 4; c++) {
		int64_t ranks[8], index[2] = {0, 4 * c + 3};
		cr_assert_eq(layout_owner_of(&x, m->graphs[0]->values[0].type.dims, index, ranks, 8), 1);
		cr_assert_eq(ranks[0], want[c]);
	}
	module_free(m);
}

/* ---- strategy tuples ---- */

/* (2, 1) on 8 devices: matrix (2, 1, 4), the repeated axis last, so that
 * neighbouring ranks 0-3 hold one slice and 4-7 the other. */
Test(layout_split, repeated_axis_is_last)
{
	TensorLayout l;
	cr_assert(layout_from_split((const int64_t[]){2, 1}, 2, 8, &l));
	cr_assert_str_eq(SHOW(&l), "dev (2, 1, 4) map ((0), ())");
	cr_assert_eq(layout_replica_axes(&l), 0x6u);   /* the size-1 axis counts, harmlessly */
	for (int r = 0; r < 8; r++)
		cr_assert_eq(layout_shard_index(&l, r, 0), r / 4, "rank %d", r);
	int64_t global[2] = {4, 6}, local[2], ranks[8], index[2] = {1, 5};
	layout_local_shape(&l, global, local);
	cr_assert_eq(local[0], 2);
	cr_assert_eq(local[1], 6);
	cr_assert_eq(layout_owner_of(&l, global, index, ranks, 8), 4);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(ranks[i], i);
	index[0] = 2;
	cr_assert_eq(layout_owner_of(&l, global, index, ranks, 8), 4);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(ranks[i], 4 + i);
	/* the copies of rank 1's slice: its group along the repeated axis */
	int64_t members[8];
	cr_assert_eq(layout_group(&l, 1, layout_replica_axes(&l), members), 4);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(members[i], i);
}

Test(layout_split, full_and_failing)
{
	TensorLayout l;
	cr_assert(layout_from_split((const int64_t[]){2, 4}, 2, 8, &l));
	cr_assert_str_eq(SHOW(&l), "dev (2, 4) map ((0), (1))");
	cr_assert(layout_from_split((const int64_t[]){1, 8}, 2, 8, &l));
	cr_assert_str_eq(SHOW(&l), "dev (1, 8) map ((), (1))");
	cr_assert(!layout_from_split((const int64_t[]){3, 1}, 2, 8, &l), "3 does not divide 8");
	cr_assert(!layout_from_split((const int64_t[]){4, 4}, 2, 8, &l), "16 devices on 8");
	cr_assert(!layout_from_split((const int64_t[]){INT64_MAX, 2}, 2, 8, &l), "no overflow");
	/* a scalar: all copies */
	cr_assert(layout_from_split(NULL, 0, 8, &l));
	cr_assert_str_eq(SHOW(&l), "dev (8) map ()");
	cr_assert(layout_from_split(NULL, 0, 1, &l));
	cr_assert_str_eq(SHOW(&l), "dev () map ()");
	cr_assert_eq(layout_ndevices(&l), 1);
	layout_replicated(3, 4, &l);
	cr_assert_str_eq(SHOW(&l), "dev (4) map ((), (), ())");
}

/* With 8 dims the repeated axis is a ninth: device matrices have MAX_AXES room. */
Test(layout_split, eight_dims_and_a_repeated_axis)
{
	TensorLayout l;
	cr_assert(layout_from_split((const int64_t[]){2, 1, 1, 1, 1, 1, 1, 2}, 8, 8, &l));
	cr_assert_str_eq(SHOW(&l), "dev (2, 1, 1, 1, 1, 1, 1, 2, 2) map ((0), (), (), (), (), (), (), (7))");
	cr_assert(layout_from_split((const int64_t[]){2, 1, 1, 1, 1, 1, 1, 2}, 8, 4, &l));
	cr_assert_str_eq(SHOW(&l), "dev (2, 1, 1, 1, 1, 1, 1, 2) map ((0), (), (), (), (), (), (), (7))");
	cr_assert(layout_from_split((const int64_t[]){2, 2, 2, 2, 2, 2, 2, 2}, 8, 512, &l));
	cr_assert_eq(l.ndev, 9);
	cr_assert(!layout_from_split((const int64_t[]){2, 2, 2, 2, 2, 2, 2, 2}, 8, 384, &l));
}

Test(layout_split, strategy_tuple_and_declared_matrix)
{
	TensorLayout l;
	TensorStrategy t = tuple_strategy(2, (const int64_t[]){4, 1});
	cr_assert(layout_from_strategy(&t, 8, &l));
	cr_assert_str_eq(SHOW(&l), "dev (4, 1, 2) map ((0), ())");
	cr_assert(!layout_from_strategy(&t, 6, &l));
	TensorStrategy a = apply(&seed_decl, 2, (const int[][MAX_DIMS + 1]){{MP, -1}, {-1}});
	cr_assert(!layout_from_strategy(&a, 16, &l), "a (2, 2, 2) matrix is not 16 devices");
}

/* ---- coordinates, groups, local shapes ---- */

Test(layout_ranks, groups_along_axes)
{
	TensorLayout l = mk(2, (const int64_t[]){2, 4}, 0, NULL, 0);
	int64_t m[8];
	cr_assert_eq(layout_group(&l, 5, 1u << 1, m), 4);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(m[i], 4 + i);
	cr_assert_eq(layout_group(&l, 5, 1u << 0, m), 2);
	cr_assert_eq(m[0], 1);
	cr_assert_eq(m[1], 5);
	cr_assert_eq(layout_group(&l, 5, 0, m), 1);
	cr_assert_eq(m[0], 5);
	cr_assert_eq(layout_group(&l, 5, 3, m), 8);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(m[i], i);
	/* (2, 2, 2), rank 6 = (dp 1, sp 1, mp 0) along dp and mp: sp stays 1,
	 * members row-major over (dp, mp): 2, 3, 6, 7 */
	TensorLayout s = mk(3, (const int64_t[]){2, 2, 2}, 0, NULL, 0);
	cr_assert_eq(layout_group(&s, 6, (1u << DP) | (1u << MP), m), 4);
	const int64_t want[4] = {2, 3, 6, 7};
	for (int i = 0; i < 4; i++)
		cr_assert_eq(m[i], want[i]);
}

Test(layout_ranks, coords_round_trip_random_matrices)
{
	uint64_t seed = 11;
	for (int trial = 0; trial < 500; trial++) {
		TensorLayout l = {0};
		l.ndev = (int)rnd(&seed, MAX_DIMS + 1);
		for (int a = 0; a < l.ndev; a++)
			l.dev[a] = 1 + rnd(&seed, 4);
		int64_t n = layout_ndevices(&l), c[MAX_DIMS];
		for (int64_t r = 0; r < n; r++) {
			layout_coords(&l, r, c);
			int64_t expect = r;   /* row-major: the last axis is the lowest digit */
			for (int a = l.ndev - 1; a >= 0; a--) {
				cr_assert_eq(c[a], expect % l.dev[a]);
				expect /= l.dev[a];
			}
			cr_assert_eq(layout_rank_of(&l, c), r, "trial %d rank %lld", trial, (long long)r);
		}
	}
}

Test(layout_ranks, local_shapes)
{
	TensorLayout l = mk(3, (const int64_t[]){2, 3, 4}, 3, (const int[][MAX_DIMS + 1]){{2, 0, -1}, {-1}, {1, -1}}, 0);
	int64_t global[3] = {16, 5, 9}, local[3];
	layout_local_shape(&l, global, local);
	cr_assert_eq(local[0], 2);
	cr_assert_eq(local[1], 5);
	cr_assert_eq(local[2], 3);
	/* rank 23 = (1, 2, 3): dim 0 slice 3 * 2 + 1 = 7, dim 2 slice 2 */
	cr_assert_eq(layout_shard_index(&l, 23, 0), 7);
	cr_assert_eq(layout_shard_index(&l, 23, 1), 0);
	cr_assert_eq(layout_shard_index(&l, 23, 2), 2);
}

/* ---- normalize, equal, check, print ---- */

Test(layout_equal, strategy_tuple_equals_declared_layout)
{
	/* (1, 8) on 8 devices is Layout((8,), ("tp",)) applied as ("None", "tp") */
	TensorLayout a, b, c;
	cr_assert(layout_from_split((const int64_t[]){1, 8}, 2, 8, &a));
	const LayoutDecl tp = {.name = "T", .ndims = 1, .dims = {8}, .alias = {"tp"}};
	TensorStrategy t = apply(&tp, 2, (const int[][MAX_DIMS + 1]){{-1}, {0, -1}});
	cr_assert(layout_from_strategy(&t, 8, &b));
	cr_assert(layout_equal(&a, &b));
	cr_assert(layout_from_split((const int64_t[]){8, 1}, 2, 8, &c));
	cr_assert(!layout_equal(&a, &c));
	/* (2, 1) on 8 is (2, 4) with dim 0 on the first axis */
	cr_assert(layout_from_split((const int64_t[]){2, 1}, 2, 8, &a));
	b = mk(2, (const int64_t[]){2, 4}, 2, (const int[][MAX_DIMS + 1]){{0, -1}, {-1}}, 0);
	cr_assert(layout_equal(&a, &b));
}

Test(layout_equal, normalize_drops_size_one_axes)
{
	/* size-1 axes inside maps (0, 2) and partial (4): a partial over one device is complete */
	TensorLayout l = mk(5, (const int64_t[]){1, 2, 1, 4, 1}, 2, (const int[][MAX_DIMS + 1]){{3, 0, -1}, {2, 1, -1}},
	                    1u << 4), n;
	char why[128];
	cr_assert(layout_check(&l, NULL, why, sizeof why), "%s", why);
	layout_normalize(&l, &n);
	cr_assert_str_eq(SHOW(&n), "dev (2, 4) map ((1), (0))");
	cr_assert(layout_equal(&l, &n));
	l.partial = 1u << 2;   /* axis 2 is size 1 and unused now */
	l.nmap[1] = 1;
	l.map[1][0] = 1;
	l.partial_op = REDUCE_MAX_OP;
	layout_normalize(&l, &l);   /* in place */
	cr_assert_str_eq(SHOW(&l), "dev (2, 4) map ((1), (0))");
	cr_assert_eq(l.partial_op, REDUCE_SUM_OP, "no partial left, op reset");
}

/* Different factorings of one placement are equal; orders and roles matter. */
Test(layout_equal, factorings_orders_roles)
{
	const int d0[][MAX_DIMS + 1] = {{0, -1}};
	const int d01[][MAX_DIMS + 1] = {{0, 1, -1}};
	const int d10[][MAX_DIMS + 1] = {{1, 0, -1}};
	TensorLayout eight = mk(1, (const int64_t[]){8}, 1, d0, 0);
	TensorLayout two_four = mk(2, (const int64_t[]){2, 4}, 1, d01, 0);
	TensorLayout swapped = mk(2, (const int64_t[]){2, 4}, 1, d10, 0);
	cr_assert(layout_equal(&eight, &two_four));
	cr_assert(!layout_equal(&eight, &swapped));
	TensorLayout c;
	layout_canonical(&two_four, &c);
	cr_assert_str_eq(SHOW(&c), "dev (8) map ((0))");
	/* replica and partial axes merge with their own kind only */
	const int none[][MAX_DIMS + 1] = {{-1}};
	TensorLayout p01 = mk(2, (const int64_t[]){2, 2}, 1, none, 0x1);
	TensorLayout p10 = mk(2, (const int64_t[]){2, 2}, 1, none, 0x2);
	TensorLayout p4 = mk(1, (const int64_t[]){4}, 1, none, 0x1);
	TensorLayout pp = mk(2, (const int64_t[]){2, 2}, 1, none, 0x3);
	TensorLayout rep = mk(1, (const int64_t[]){4}, 1, none, 0);
	cr_assert(!layout_equal(&p01, &p10), "partial over ranks {0, 2} is not over {0, 1}");
	cr_assert(layout_equal(&pp, &p4));
	cr_assert(!layout_equal(&p4, &rep));
	TensorLayout pmax = p4, pmin = p4;
	pmax.partial_op = REDUCE_MAX_OP;
	pmin.partial_op = REDUCE_MIN_OP;
	cr_assert(!layout_equal(&p4, &pmax));
	cr_assert(!layout_equal(&pmax, &pmin), "partial maxima are not partial minima");
	cr_assert(!layout_equal(&p4, &pmin));
	TensorLayout pprod = p4;
	pprod.partial_op = REDUCE_PROD_OP;
	cr_assert(!layout_equal(&pprod, &p4), "partial products are not partial sums");
	/* different device counts or ranks are never equal */
	TensorLayout r8 = mk(1, (const int64_t[]){8}, 1, none, 0);
	cr_assert(!layout_equal(&rep, &r8));
	TensorLayout rank2 = mk(1, (const int64_t[]){4}, 2, (const int[][MAX_DIMS + 1]){{-1}, {-1}}, 0);
	cr_assert(!layout_equal(&rep, &rank2));
}

Test(layout_check, reasons)
{
	char why[128];
	int64_t global[2] = {8, 6};
	TensorLayout ok = mk(3, (const int64_t[]){2, 2, 2}, 2, (const int[][MAX_DIMS + 1]){{2, -1}, {1, -1}}, 1);
	cr_assert(layout_check(&ok, global, why, sizeof why), "%s", why);
	cr_assert_str_eq(why, "");

	TensorLayout twice = mk(3, (const int64_t[]){2, 2, 2}, 2, (const int[][MAX_DIMS + 1]){{2, -1}, {0, 2, -1}}, 0);
	cr_assert(!layout_check(&twice, NULL, why, sizeof why));
	cr_assert_str_eq(why, "device axis 2 is used by dim 0 and dim 1");

	TensorLayout both = mk(3, (const int64_t[]){2, 2, 2}, 2, (const int[][MAX_DIMS + 1]){{2, -1}, {1, 0, -1}}, 1);
	cr_assert(!layout_check(&both, NULL, why, sizeof why));
	cr_assert_str_eq(why, "device axis 0 splits dim 1 and is also partial");

	TensorLayout beyond = mk(2, (const int64_t[]){2, 4}, 1, (const int[][MAX_DIMS + 1]){{3, -1}}, 0);
	cr_assert(!layout_check(&beyond, NULL, why, sizeof why));
	cr_assert_str_eq(why, "dim 0 is mapped to axis 3 of a 2-axis matrix");

	TensorLayout pbeyond = mk(2, (const int64_t[]){2, 4}, 0, NULL, 1u << 5);
	cr_assert(!layout_check(&pbeyond, NULL, why, sizeof why));
	cr_assert_str_eq(why, "partial mask 0x20 names an axis beyond the 2-axis matrix");

	TensorLayout zero = mk(2, (const int64_t[]){2, 0}, 0, NULL, 0);
	cr_assert(!layout_check(&zero, NULL, why, sizeof why));

	int64_t odd[2] = {8, 3}, small[2] = {8, 1};   /* uneven: pieces of 2, the last half padding */
	cr_assert(layout_check(&ok, odd, why, sizeof why), "%s", why);
	cr_assert(layout_uneven(&ok, odd, 1) && !layout_uneven(&ok, odd, 0));
	cr_assert_eq(layout_piece_len(&ok, odd, 1), 2);
	cr_assert(!layout_check(&ok, small, why, sizeof why));
	cr_assert_str_eq(why, "dim 1 (size 1) cannot be cut into 2 slices");
	cr_assert(!layout_check(&ok, small, why, 8), "a short buffer still gets a truncated reason");
	cr_assert_str_eq(why, "dim 1 (");
}

Test(layout_print, formats)
{
	TensorLayout l = mk(3, (const int64_t[]){2, 2, 2}, 2, (const int[][MAX_DIMS + 1]){{2, -1}, {1, -1}}, 1);
	cr_assert_str_eq(SHOW(&l), "dev (2, 2, 2) map ((2), (1)) partial sum (0)");
	l.partial = 0x1;
	l.partial_op = REDUCE_MAX_OP;
	l.nmap[1] = 0;
	l.partial |= 0x2;
	cr_assert_str_eq(SHOW(&l), "dev (2, 2, 2) map ((2), ()) partial max (0, 1)");
	l.partial_op = REDUCE_MIN_OP;
	cr_assert_str_eq(SHOW(&l), "dev (2, 2, 2) map ((2), ()) partial min (0, 1)");
	l.partial_op = REDUCE_PROD_OP;
	cr_assert_str_eq(SHOW(&l), "dev (2, 2, 2) map ((2), ()) partial prod (0, 1)");
	char why[128];
	cr_assert(layout_check(&l, NULL, why, sizeof why), "%s", why);
	l.partial_op = (ReduceOp)(REDUCE_PROD_OP + 1);
	cr_assert(!layout_check(&l, NULL, why, sizeof why));
	cr_assert_str_eq(why, "partial reduce op 5 is not sum, max, mean, min or prod");
	TensorLayout s = mk(1, (const int64_t[]){4}, 0, NULL, 0);
	cr_assert_str_eq(SHOW(&s), "dev (4) map ()");
}

Test(layout_ranks, owner_of_truncates_but_counts)
{
	TensorLayout l;
	layout_replicated(1, 8, &l);
	int64_t global[1] = {5}, index[1] = {4}, ranks[3] = {-1, -1, -1};
	cr_assert_eq(layout_owner_of(&l, global, index, ranks, 2), 8);
	cr_assert_eq(ranks[0], 0);
	cr_assert_eq(ranks[1], 1);
	cr_assert_eq(ranks[2], -1, "nothing past max");
}

/* ---- properties over random layouts ---- */

/* A random layout on 2..max_devices devices: a random factoring of the count
 * (with the odd size-1 axis), each axis given to a random dim (in a random
 * order within the dim), to the replicas or to the partials. */
static TensorLayout random_layout(uint64_t *seed, int64_t devices, int max_rank)
{
	TensorLayout l;
	memset(&l, 0, sizeof l);
	int64_t rem = devices;
	while (rem > 1 || (l.ndev < MAX_DIMS && rnd(seed, 8) == 0)) {
		if (l.ndev < MAX_DIMS - 1 && rnd(seed, 6) == 0) {
			l.dev[l.ndev++] = 1;
			continue;
		}
		if (l.ndev == MAX_DIMS - 1 || rem == 1) {
			l.dev[l.ndev++] = rem;
			rem = 1;
			continue;
		}
		int64_t f;
		do
			f = 2 + rnd(seed, rem - 1);
		while (rem % f);
		l.dev[l.ndev++] = f;
		rem /= f;
	}
	l.rank = (int)rnd(seed, max_rank + 1);
	int order[MAX_DIMS];
	for (int a = 0; a < l.ndev; a++)
		order[a] = a;
	for (int a = l.ndev - 1; a > 0; a--) {
		int j = (int)rnd(seed, a + 1), t = order[a];
		order[a] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < l.ndev; i++) {
		int a = order[i];
		int64_t role = rnd(seed, 10);
		if (l.rank && role < 6) {
			int d = (int)rnd(seed, l.rank);
			l.map[d][l.nmap[d]++] = (int8_t)a;
		} else if (role < 8)
			l.partial |= 1u << a;
	}
	l.partial_op = (ReduceOp[]){REDUCE_SUM_OP, REDUCE_MAX_OP, REDUCE_MIN_OP, REDUCE_PROD_OP}[rnd(seed, 4)];
	return l;
}

static int64_t size_of_axes(const TensorLayout *l, uint32_t axes)
{
	int64_t n = 1;
	for (int a = 0; a < l->ndev; a++)
		if (axes & (1u << a))
			n *= l->dev[a];
	return n;
}

/* Every element is held by exactly (replica sizes) x (partial sizes) ranks, the
 * ones layout_owner_of names; the distinct shards tile the tensor; groups and
 * coordinates agree with each other; normalizing keeps the placement. */
Test(layout_property, every_element_held_by_its_copies, .timeout = 120)
{
	uint64_t seed = 2024;
	int64_t *count = calloc(4096, sizeof *count);
	char *seen = calloc(64 * 64, 1);
	int64_t owners[64], members[64];
	for (int trial = 0; trial < 3000; trial++) {
		int64_t devices = 2 + rnd(&seed, 63);
		TensorLayout l = random_layout(&seed, devices, 4);
		const char *name = SHOW(&l);
		int64_t global[MAX_DIMS], local[MAX_DIMS], total = 1, local_total = 1, shards = 1;
		for (int d = 0; d < l.rank; d++) {
			global[d] = layout_dim_split(&l, d) * (1 + rnd(&seed, 2));
			total *= global[d];
			shards *= layout_dim_split(&l, d);
		}
		if (total > 4096)
			continue;
		char why[128];
		cr_assert(layout_check(&l, global, why, sizeof why), "%s: %s", name, why);
		cr_assert_eq(layout_ndevices(&l), devices, "%s", name);
		layout_local_shape(&l, global, local);
		for (int d = 0; d < l.rank; d++)
			local_total *= local[d];
		uint32_t replica = layout_replica_axes(&l);
		int64_t copies = size_of_axes(&l, replica) * size_of_axes(&l, l.partial);

		/* count, rank by rank, which elements its shard covers */
		memset(count, 0, (size_t)total * sizeof *count);
		memset(seen, 0, (size_t)shards);
		int64_t distinct = 0;
		for (int64_t r = 0; r < devices; r++) {
			int64_t c[MAX_DIMS], sh[MAX_DIMS], shard_id = 0;
			layout_coords(&l, r, c);
			cr_assert_eq(layout_rank_of(&l, c), r, "%s", name);
			for (int d = 0; d < l.rank; d++) {
				sh[d] = layout_shard_index(&l, r, d);
				cr_assert(sh[d] >= 0 && sh[d] < layout_dim_split(&l, d), "%s", name);
				shard_id = shard_id * layout_dim_split(&l, d) + sh[d];
			}
			distinct += !seen[shard_id];
			seen[shard_id] = 1;
			int64_t at[MAX_DIMS] = {0};   /* odometer over the local block */
			for (int64_t e = 0; e < local_total; e++) {
				int64_t flat = 0;
				for (int d = 0; d < l.rank; d++)
					flat = flat * global[d] + sh[d] * local[d] + at[d];
				count[flat]++;
				for (int d = l.rank - 1; d >= 0 && ++at[d] == local[d]; d--)
					at[d] = 0;
			}
			/* the group along random axes */
			uint32_t axes = (uint32_t)rnd(&seed, 1 << l.ndev);
			int n = layout_group(&l, r, axes, members);
			cr_assert_eq(n, size_of_axes(&l, axes), "%s", name);
			bool self = false;
			for (int i = 0; i < n; i++) {
				int64_t mc[MAX_DIMS];
				layout_coords(&l, members[i], mc);
				for (int a = 0; a < l.ndev; a++)
					if (!(axes & (1u << a)))
						cr_assert_eq(mc[a], c[a], "%s: member %lld of rank %lld", name, (long long)members[i],
						             (long long)r);
				cr_assert(i == 0 || members[i] > members[i - 1], "%s: group order", name);
				self |= members[i] == r;
			}
			cr_assert(self, "%s: rank %lld not in its own group", name, (long long)r);
		}
		cr_assert_eq(distinct, shards, "%s", name);
		cr_assert_eq(local_total * distinct, total, "%s", name);
		cr_assert_eq(devices, shards * copies, "%s", name);
		if (!l.partial)
			cr_assert_eq(copies, size_of_axes(&l, replica));

		/* element by element: the count, and the owners layout_owner_of names */
		int64_t index[MAX_DIMS] = {0};
		for (int64_t flat = 0; flat < total; flat++) {
			cr_assert_eq(count[flat], copies, "%s: element %lld held %lld times", name, (long long)flat,
			             (long long)count[flat]);
			int64_t n = layout_owner_of(&l, global, index, owners, 64);
			cr_assert_eq(n, copies, "%s", name);
			for (int i = 0; i < n; i++) {
				cr_assert(i == 0 || owners[i] > owners[i - 1], "%s: owner order", name);
				for (int d = 0; d < l.rank; d++) {
					int64_t lo = layout_shard_index(&l, owners[i], d) * local[d];
					cr_assert(index[d] >= lo && index[d] < lo + local[d], "%s: rank %lld does not hold it", name,
					          (long long)owners[i]);
				}
			}
			for (int d = l.rank - 1; d >= 0 && ++index[d] == global[d]; d--)
				index[d] = 0;
		}

		TensorLayout n, c;
		layout_normalize(&l, &n);
		layout_canonical(&l, &c);
		cr_assert(layout_check(&n, global, why, sizeof why), "%s normalized: %s", name, why);
		cr_assert(layout_check(&c, global, why, sizeof why), "%s canonical: %s", name, why);
		for (int a = 0; a < n.ndev; a++)
			cr_assert(n.dev[a] > 1, "%s", name);
		cr_assert(layout_equal(&l, &n), "%s", name);
		cr_assert(layout_equal(&l, &c), "%s", name);
		cr_assert_eq(layout_ndevices(&c), devices, "%s", name);
	}
	free(count);
	free(seen);
}

/* Placement compared rank by rank: the same slice of every dim, and the same
 * ranks to combine partials with (and the same op when there are any). */
static bool same_placement(const TensorLayout *a, const TensorLayout *b)
{
	int64_t n = layout_ndevices(a);
	if (n != layout_ndevices(b) || a->rank != b->rank)
		return false;
	for (int64_t r = 0; r < n; r++) {
		for (int d = 0; d < a->rank; d++)
			if (layout_shard_index(a, r, d) != layout_shard_index(b, r, d))
				return false;
		int64_t ga[64], gb[64];
		int na = layout_group(a, r, a->partial, ga), nb = layout_group(b, r, b->partial, gb);
		if (na != nb || memcmp(ga, gb, (size_t)na * sizeof *ga) != 0)
			return false;
		if (na > 1 && a->partial_op != b->partial_op)
			return false;
	}
	return true;
}

/* The same placement over a finer matrix: axis a cut into f x dev[a] / f, the
 * two pieces in a's role (consecutive in its dim's map, or both partial). */
static bool refine(TensorLayout *l, int a, int64_t f)
{
	if (l->ndev == MAX_DIMS || l->dev[a] % f)
		return false;
	for (int i = l->ndev; i > a + 1; i--)
		l->dev[i] = l->dev[i - 1];
	l->dev[a + 1] = l->dev[a] / f;
	l->dev[a] = f;
	l->ndev++;
	for (int d = 0; d < l->rank; d++) {
		for (int k = 0; k < l->nmap[d]; k++)
			if (l->map[d][k] > a)
				l->map[d][k]++;
		for (int k = 0; k < l->nmap[d]; k++)
			if (l->map[d][k] == a) {
				memmove(&l->map[d][k + 2], &l->map[d][k + 1], (size_t)(l->nmap[d] - k - 1));
				l->map[d][k + 1] = (int8_t)(a + 1);
				l->nmap[d]++;
				break;
			}
	}
	uint32_t low = l->partial & ((1u << (a + 1)) - 1), high = l->partial >> (a + 1);
	l->partial = low | (high << (a + 2)) | ((l->partial >> a & 1u) << (a + 1));
	return true;
}

/* layout_equal agrees with a rank-by-rank comparison, on refined copies
 * (always equal) and on unrelated layouts of the same size (mostly not). */
Test(layout_property, equal_means_same_placement, .timeout = 120)
{
	uint64_t seed = 77;
	int equal = 0, unequal = 0;
	for (int trial = 0; trial < 3000; trial++) {
		int64_t devices = 2 + rnd(&seed, 23);
		TensorLayout a = random_layout(&seed, devices, 3);
		TensorLayout b = a;
		int a_axis = (int)rnd(&seed, a.ndev);
		refine(&b, a_axis, 1 + rnd(&seed, b.dev[a_axis]));
		char why[128];
		cr_assert(layout_check(&b, NULL, why, sizeof why), "%s: %s", SHOW(&b), why);
		cr_assert(same_placement(&a, &b), "%s vs %s", SHOW(&a), SHOW(&b));
		cr_assert(layout_equal(&a, &b), "%s vs %s", SHOW(&a), SHOW(&b));
		cr_assert(layout_equal(&b, &a), "%s vs %s", SHOW(&a), SHOW(&b));

		TensorLayout c;
		do   /* same size and tensor rank, so only the placement can differ */
			c = random_layout(&seed, devices, 3);
		while (c.rank != a.rank);
		bool placed = same_placement(&a, &c);
		cr_assert_eq(layout_equal(&a, &c), placed, "%s vs %s: same placement %d", SHOW(&a), SHOW(&c), placed);
		equal += placed;
		unequal += !placed;
	}
	cr_assert(equal > 50 && unequal > 50, "both outcomes exercised: %d equal, %d not", equal, unequal);
}
