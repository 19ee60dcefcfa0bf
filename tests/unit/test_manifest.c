/* test_manifest.c: manifest.json and strategy.json (manifest.c).
 *
 * Each test compiles IR through the driver's pipeline (parse, checks,
 * flatten, assign_strategies, lower), asks manifest.c for both texts and reads
 * them back with jansson. Hand-computed cases for the seed model (MatMul
 * ((2, 4), (4, 1)) feeding a ReLU on 8 devices), a Layout-form model and a
 * data_parallel one; then invariants over every sample: each rank's piece and
 * each collective's group on each rank, worked out from the manifest's rules
 * (docs/output.md) as any reader would, are the lowered program's own, the
 * pieces tile each tensor, and the bytes add up; and the file grows with the
 * ranks only by their lists of bytes and group members. Samples are read from
 * ir-samples/ (the tests run from the repository root). */
#include <criterion/criterion.h>
#include <jansson.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "shardc.h"

/* ---- helpers ---- */

typedef struct {
	Run *r;
	Lowered *l;
	char *text;              /* manifest.json as written */
	json_t *manifest, *strategy;
} Out;

static json_t *load(const char *text, const char *what)
{
	json_error_t err;
	json_t *v = json_loads(text, 0, &err);
	cr_assert_not_null(v, "%s is not JSON: line %d: %s\n%s", what, err.line, err.text, text);
	return v;
}

/* Compiles `len` bytes of `text` as `name` the way the driver does and reads
 * both files back. */
static Out lower_text(const char *name, const char *text, size_t len)
{
	Out o = {run_pipeline(name, text, len, STAGE_RECOMPUTE, NULL, 0), NULL, NULL, NULL, NULL};
	expect_clean(o.r);
	Lowered *l = o.r->c.low;
	char *m = manifest_json(l), *s = strategy_json(l);
	o.manifest = load(m, "manifest.json");
	o.strategy = load(s, "strategy.json");
	o.text = m;
	o.l = l;
	free(s);
	return o;
}

static Out lower_file(const char *path)
{
	size_t len;
	char *text = read_file(path, &len);
	cr_assert_not_null(text, "cannot read %s (run the tests from the repository root)", path);
	Out o = lower_text(path, text, len);
	free(text);
	return o;
}

/* path's model with its inputs held whole by a dataset tuple (one (1, 1)
 * per input) instead of full_batch: its results stay as computed, split. */
static Out lower_file_as_computed(const char *path, int ninputs)
{
	size_t len;
	char *text = read_file(path, &len);
	cr_assert_not_null(text, "cannot read %s (run the tests from the repository root)", path);
	const char *at = strstr(text, "context {\n");
	cr_assert_not_null(at, "%s has no context block", path);
	StrBuf b = {0};
	sb_printf(&b, "%.*scontext {\n  dataset_strategy: (", (int)(at - text), text);
	for (int k = 0; k < ninputs; k++)
		sb_puts(&b, "(1, 1), ");
	sb_printf(&b, "),\n%s", at + strlen("context {\n"));
	Out o = lower_text(path, b.data, b.len);
	free(text);
	sb_free(&b);
	return o;
}

static void out_free(Out *o)
{
	json_decref(o->manifest);
	json_decref(o->strategy);
	free(o->text);
	run_free(o->r);
}

static json_t *get(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	cr_assert_not_null(v, "no \"%s\" in %s", key, json_dumps(obj, JSON_COMPACT));
	return v;
}

static json_t *at(const json_t *arr, size_t i)
{
	cr_assert(json_is_array(arr) && i < json_array_size(arr), "no element %zu", i);
	return json_array_get(arr, i);
}

static int64_t num(const json_t *v)
{
	cr_assert(json_is_integer(v), "not an integer");
	return json_integer_value(v);
}

static const char *str(const json_t *v)
{
	cr_assert(json_is_string(v), "not a string");
	return json_string_value(v);
}

/* The entry of `arr` whose "name" is `name`. */
static json_t *named(const json_t *arr, const char *name)
{
	for (size_t i = 0; i < json_array_size(arr); i++)
		if (strcmp(str(get(json_array_get(arr, i), "name")), name) == 0)
			return json_array_get(arr, i);
	cr_assert_fail("no entry named %s", name);
	return NULL;
}

/* `v` is the JSON text `want` (compared as values, so spacing is free). */
static void expect_json(const json_t *v, const char *want)
{
	json_t *w = json_loads(want, JSON_DECODE_ANY, NULL);
	cr_assert_not_null(w, "bad expectation %s", want);
	char *got = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	bool same = json_equal(v, w);
	json_decref(w);
	cr_assert(same, "got %s, want %s", got, want);
	free(got);
}

/* ---- the manifest's rules, as a reader applies them (docs/output.md) ---- */

/* The rank's row-major coordinates on the matrix `dev`; returns the axes. */
static int coords_on(const json_t *dev, int64_t rank, int64_t *c)
{
	int n = (int)json_array_size(dev);
	cr_assert(n <= MAX_AXES);
	for (int a = n - 1; a >= 0; a--) {
		c[a] = rank % num(at(dev, (size_t)a));
		rank /= num(at(dev, (size_t)a));
	}
	return n;
}

/* Where the rank's piece of TENSOR starts: along dim d, the rank's
 * coordinates on the axes map[d] read as digits (the first most significant)
 * times the piece's size. */
static void piece_start(const json_t *tensor, int64_t rank, int64_t *start)
{
	const json_t *layout = get(tensor, "layout"), *dev = get(layout, "dev"), *map = get(layout, "map");
	const json_t *piece = get(tensor, "piece");
	int64_t c[MAX_AXES];
	coords_on(dev, rank, c);
	cr_assert_eq(json_array_size(map), json_array_size(piece));
	for (size_t d = 0; d < json_array_size(map); d++) {
		int64_t s = 0;
		for (size_t k = 0; k < json_array_size(at(map, d)); k++) {
			int64_t a = num(at(at(map, d), k));
			s = s * num(at(dev, (size_t)a)) + c[a];
		}
		start[d] = s * num(at(piece, d));
	}
}

/* The members of the rank's group of a collective, in order: the ranks whose
 * coordinates on the grid's dev are the rank's off its axes, ascending. */
static int64_t group_members(const json_t *grid, int64_t rank, int64_t *members, int64_t max)
{
	const json_t *dev = get(grid, "dev"), *axes = get(grid, "axes");
	int64_t c[MAX_AXES];
	int n = coords_on(dev, rank, c);
	bool in[MAX_AXES] = {false};
	for (size_t k = 0; k < json_array_size(axes); k++)
		in[num(at(axes, k))] = true;
	int64_t count = 1;
	members[0] = 0;
	for (int a = 0; a < n; a++) {
		int64_t size = num(at(dev, (size_t)a)), next = in[a] ? count * size : count;
		cr_assert_leq(next, max);
		for (int64_t i = next - 1; i >= 0; i--)   /* in place: member i comes of member i / size */
			members[i] = in[a] ? members[i / size] * size + i % size : members[i] * size + c[a];
		count = next;
	}
	return count;
}

/* For each rank, the index in "groups" of its group of collective COLL (a
 * rank's group is its first member's: the groups split the ranks). */
static json_t *group_of_rank(const json_t *m, const json_t *coll)
{
	int64_t n = num(get(m, "device_num"));
	const json_t *groups = get(m, "groups");
	int64_t *members = malloc(sizeof(int64_t) * (size_t)n);
	json_t *of = json_array();
	for (int64_t r = 0; r < n; r++) {
		int64_t size = group_members(get(coll, "group"), r, members, n);
		if (members[0] < r) {
			json_array_append_new(of, json_integer(num(at(of, (size_t)members[0]))));
			continue;
		}
		json_t *g = json_array();
		for (int64_t i = 0; i < size; i++)
			json_array_append_new(g, json_integer(members[i]));
		size_t k = 0;
		while (k < json_array_size(groups) && !json_equal(at(groups, k), g))
			k++;
		cr_assert_lt(k, json_array_size(groups), "rank %lld's group %s is not in \"groups\"", (long long)r,
		             json_dumps(g, JSON_COMPACT));
		json_array_append_new(of, json_integer((json_int_t)k));
		json_decref(g);
	}
	free(members);
	return of;
}

static json_t *jints_of(const int64_t *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer(v[i]));
	return a;
}

static void expect_piece(const json_t *tensor, int rank, const char *start, const char *shape)
{
	int64_t s[MAX_DIMS];
	piece_start(tensor, rank, s);
	json_t *js = jints_of(s, json_array_size(get(tensor, "piece")));
	expect_json(js, start);
	json_decref(js);
	expect_json(get(tensor, "piece"), shape);
}

static void expect_group_of_rank(const json_t *m, const json_t *coll, const char *want)
{
	json_t *of = group_of_rank(m, coll);
	expect_json(of, want);
	json_decref(of);
}

/* The dataset tuple holds x whole, as full_batch would, and leaves the
 * result as the ReLU computes it (full_batch would hand it over whole). */
static const char seed[] =
	"context {device_num: 8, parallel_mode: \"semi_auto_parallel\", dataset_strategy: ((1, 1),)}\n"
	"graph @net(%x: <Tensor[Float32], (16, 32)> = uniform(0, 1),\n"
	"           %w: <Parameter[Float32], (32, 16)> = normal(0.01)) {\n"
	"  %1 = MatMul(%x, %w) {in_strategy: ((2, 4), (4, 1))}\n"
	"  %2 = ReLU(%1)\n"
	"  return %2\n"
	"}\n";

/* ---- the seed: MatMul ((2, 4), (4, 1)) then ReLU, 8 devices ---- */

Test(manifest, seed_header_and_bytes)
{
	Out o = lower_text("t.ir", seed, strlen(seed));
	json_t *m = o.manifest;
	cr_assert_eq(num(get(m, "device_num")), 8);
	cr_assert_str_eq(str(get(m, "parallel_mode")), "semi_auto_parallel");
	cr_assert_str_eq(str(get(m, "graph")), "net");
	/* the partial sums over k = 4 ReduceScatter into the ReLU's rows: 3/4 of 8x16 floats */
	expect_json(get(m, "comm_bytes_per_rank"), "[384, 384, 384, 384, 384, 384, 384, 384]");
	expect_json(get(m, "groups"), "[[0, 1, 2, 3], [4, 5, 6, 7]]");
	json_t *c = get(m, "collectives");
	cr_assert_eq(json_array_size(c), 1);
	cr_assert_str_eq(str(get(at(c, 0), "op")), "ReduceScatter");
	cr_assert_str_eq(str(get(at(c, 0), "value")), "1.1");
	cr_assert_eq(num(get(at(c, 0), "bytes_per_rank")), 384);
	expect_json(get(at(c, 0), "group"), "{\"dev\": [2, 4], \"axes\": [1]}");
	expect_group_of_rank(m, at(c, 0), "[0, 0, 0, 0, 1, 1, 1, 1]");
	cr_assert(strstr(str(get(at(c, 0), "why")), "ReLU"));
	out_free(&o);
}

Test(manifest, seed_tensors)
{
	Out o = lower_text("t.ir", seed, strlen(seed));
	json_t *m = o.manifest;
	cr_assert_eq(json_array_size(get(m, "inputs")), 1);
	cr_assert_eq(json_array_size(get(m, "parameters")), 1);
	json_t *x = named(get(m, "inputs"), "x");
	cr_assert_str_eq(str(get(x, "dtype")), "Float32");
	cr_assert_str_eq(str(get(x, "init")), "uniform(0, 1)");
	expect_json(get(x, "shape"), "[16, 32]");
	expect_json(get(x, "layout"), "{\"dev\": [8], \"map\": [[], []], \"partial\": []}");   /* full_batch */
	expect_json(get(x, "copies"), "[0]");
	for (int r = 0; r < 8; r++)
		expect_piece(x, r, "[0, 0]", "[16, 32]");

	json_t *w = named(get(m, "parameters"), "w");
	cr_assert_str_eq(str(get(w, "init")), "normal(0.01)");
	expect_json(get(w, "layout"), "{\"dev\": [2, 4], \"map\": [[1], []], \"partial\": []}");
	expect_json(get(w, "copies"), "[0]");
	expect_piece(w, 0, "[0, 0]", "[8, 16]");
	expect_piece(w, 1, "[8, 0]", "[8, 16]");
	expect_piece(w, 3, "[24, 0]", "[8, 16]");
	expect_piece(w, 4, "[0, 0]", "[8, 16]");   /* the i axis holds copies of w */

	json_t *outs = get(m, "outputs");
	cr_assert_eq(json_array_size(outs), 1);
	json_t *y = at(outs, 0);
	cr_assert_eq(num(get(y, "index")), 0);
	cr_assert_str_eq(str(get(y, "name")), "2");
	cr_assert_null(json_object_get(y, "init"));
	expect_json(get(y, "shape"), "[16, 16]");
	expect_json(get(y, "layout"), "{\"dev\": [8], \"map\": [[0], []], \"partial\": []}");
	expect_json(get(y, "copies"), "[]");
	for (int r = 0; r < 8; r++) {
		char start[32];
		snprintf(start, sizeof start, "[%d, 0]", 2 * r);
		expect_piece(y, r, start, "[2, 16]");
	}
	out_free(&o);
}

Test(strategy, seed)
{
	Out o = lower_text("t.ir", seed, strlen(seed));
	json_t *s = o.strategy;
	cr_assert_eq(num(get(s, "device_num")), 8);
	cr_assert_str_eq(str(get(s, "parallel_mode")), "semi_auto_parallel");
	expect_json(get(s, "layouts"), "[]");
	json_t *ops = get(s, "operators");
	cr_assert_eq(json_array_size(ops), 2);
	json_t *mm = at(ops, 0), *relu = at(ops, 1);
	cr_assert_str_eq(str(get(mm, "name")), "1");
	cr_assert_str_eq(str(get(mm, "op")), "MatMul");
	cr_assert(json_is_true(get(mm, "user")));
	expect_json(get(mm, "in_strategy"), "[[2, 4], [4, 1]]");
	expect_json(get(mm, "out_strategy"), "null");
	expect_json(get(mm, "device_matrix"), "[2, 4, 1]");
	expect_json(get(mm, "out_layout"),
	            "{\"dev\": [2, 4, 1], \"map\": [[0], []], \"partial\": [1], \"partial_op\": \"sum\"}");
	cr_assert_str_eq(str(get(relu, "name")), "2");
	cr_assert_str_eq(str(get(relu, "op")), "ReLU");
	cr_assert(json_is_false(get(relu, "user")));   /* the batch-parallel default */
	expect_json(get(relu, "in_strategy"), "[[8, 1]]");
	expect_json(get(relu, "device_matrix"), "[8, 1]");
	expect_json(get(relu, "out_layout"),
	            "{\"dev\": [8, 1], \"map\": [[0], []], \"partial\": [], \"partial_op\": null}");
	out_free(&o);
}

/* The text is laid out for people: short containers on one line. */
Test(manifest, reads_as_text)
{
	Out o = lower_text("t.ir", seed, strlen(seed));
	const char *text = o.text;
	cr_assert(strstr(text, "\n  \"groups\": [[0, 1, 2, 3], [4, 5, 6, 7]],\n"), "%s", text);
	cr_assert(strstr(text, "\n      \"piece\": [8, 16],\n"), "%s", text);
	cr_assert(strstr(text, "\n      \"group\": {\"dev\": [2, 4], \"axes\": [1]},\n"), "%s", text);
	cr_assert_eq(text[strlen(text) - 1], '\n');
	for (const char *p = text, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		bool long_string = strstr(p, "\"why\"") && strstr(p, "\"why\"") < nl;
		cr_assert(nl - p <= 100 || long_string, "line longer than 100 columns: %.*s", (int)(nl - p), p);
	}
	out_free(&o);
}

/* ---- a Layout-form strategy: ir-samples/layout_dense_matmul.ir ---- */

Test(strategy, layout_form)
{
	Out o = lower_file("ir-samples/layout_dense_matmul.ir");
	json_t *s = o.strategy;
	expect_json(get(s, "layouts"), "[{\"name\": \"L\", \"dev\": [2, 2, 2], \"alias\": [\"dp\", \"sp\", \"mp\"]}]");
	json_t *y = named(get(s, "operators"), "y");
	cr_assert(json_is_true(get(y, "user")));
	/* L("mp", ("sp", "dp")) and L(("sp", "dp"), "None"): axes dp 0, sp 1, mp 2 */
	expect_json(get(y, "in_strategy"), "[{\"layout\": \"L\", \"dev\": [2, 2, 2], \"map\": [[2], [1, 0]]},"
	                                   " {\"layout\": \"L\", \"dev\": [2, 2, 2], \"map\": [[1, 0], []]}]");
	expect_json(get(y, "out_strategy"), "[{\"layout\": \"L\", \"dev\": [2, 2, 2], \"map\": [[2, 1, 0], []]}]");
	expect_json(get(y, "device_matrix"), "[2, 2, 2]");
	expect_json(get(y, "out_layout"),
	            "{\"dev\": [2, 2, 2], \"map\": [[2], []], \"partial\": [0, 1], \"partial_op\": \"sum\"}");
	out_free(&o);
}

Test(manifest, layout_form)
{
	Out o = lower_file_as_computed("ir-samples/layout_dense_matmul.ir", 2);
	json_t *m = o.manifest;
	/* two ReduceScatters: over sp (pairs 2 apart), then over dp (pairs 4 apart) */
	json_t *c = get(m, "collectives");
	cr_assert_eq(json_array_size(c), 2);
	cr_assert_str_eq(str(get(at(c, 0), "op")), "ReduceScatter");
	cr_assert_str_eq(str(get(at(c, 1), "op")), "ReduceScatter");
	cr_assert_eq(num(get(at(c, 0), "bytes_per_rank")), 64);   /* 1/2 of a 4x8 float piece */
	cr_assert_eq(num(get(at(c, 1), "bytes_per_rank")), 32);
	expect_json(get(m, "groups"), "[[0, 2], [0, 4], [1, 3], [1, 5], [2, 6], [3, 7], [4, 6], [5, 7]]");
	expect_json(get(at(c, 0), "group"), "{\"dev\": [2, 2, 2], \"axes\": [1]}");
	expect_json(get(at(c, 1), "group"), "{\"dev\": [2, 4], \"axes\": [0]}");   /* sp and mp both whole: one axis */
	expect_group_of_rank(m, at(c, 0), "[0, 2, 0, 2, 6, 7, 6, 7]");
	expect_group_of_rank(m, at(c, 1), "[1, 3, 4, 5, 1, 3, 4, 5]");
	expect_json(get(m, "comm_bytes_per_rank"), "[96, 96, 96, 96, 96, 96, 96, 96]");
	cr_assert_eq(json_array_size(get(m, "parameters")), 0);   /* x and w are inputs, as in the seed */
	expect_piece(named(get(m, "inputs"), "w"), 5, "[0, 0]", "[16, 8]");
	/* y's rows over (mp, sp, dp): rank 4 dp + 2 sp + mp holds row 4 mp + 2 sp + dp */
	json_t *y = at(get(m, "outputs"), 0);
	cr_assert_str_eq(str(get(y, "name")), "y");
	expect_json(get(y, "layout"), "{\"dev\": [2, 2, 2], \"map\": [[2, 1, 0], []], \"partial\": []}");
	for (int r = 0; r < 8; r++) {
		char start[32];
		snprintf(start, sizeof start, "[%d, 0]", 4 * (r & 1) + 2 * ((r >> 1) & 1) + (r >> 2));
		expect_piece(y, r, start, "[1, 8]");
	}
	out_free(&o);
}

/* ---- data_parallel: ir-samples/data_parallel_mlp.ir ---- */

Test(manifest, data_parallel)
{
	Out o = lower_file("ir-samples/data_parallel_mlp.ir");
	json_t *m = o.manifest;
	cr_assert_eq(num(get(m, "device_num")), 4);
	cr_assert_str_eq(str(get(m, "parallel_mode")), "data_parallel");
	cr_assert_eq(num(get(m, "seed")), 7);
	json_t *x = named(get(m, "inputs"), "x"), *label = named(get(m, "inputs"), "label");
	cr_assert_str_eq(str(get(label, "dtype")), "Int32");
	cr_assert_str_eq(str(get(label, "init")), "randint(0, 10)");
	for (int r = 0; r < 4; r++) {
		char start[32];
		snprintf(start, sizeof start, "[%d, 0]", 4 * r);
		expect_piece(x, r, start, "[4, 32]");
		snprintf(start, sizeof start, "[%d]", 4 * r);
		expect_piece(label, r, start, "[4]");
	}
	json_t *params = get(m, "parameters");
	cr_assert_eq(json_array_size(params), 4);
	json_t *bias = named(params, "fc1.bias");
	cr_assert_str_eq(str(get(bias, "init")), "zeros");
	for (int r = 0; r < 4; r++)
		expect_piece(named(params, "fc2.weight"), r, "[0, 0]", "[64, 10]");   /* replicated */
	/* the loss: a mean of the ranks' means, one float AllReduced over all 4 ranks */
	json_t *loss = at(get(m, "outputs"), 0);
	cr_assert_str_eq(str(get(loss, "name")), "loss");
	expect_json(get(loss, "shape"), "[]");
	expect_piece(loss, 3, "[]", "[]");
	expect_json(get(m, "groups"), "[[0, 1, 2, 3]]");
	/* Then, in the backward pass, each parameter's gradient summed over the 4
	 * ranks (the data-parallel average: the loss's adjoint already holds 1/4). */
	json_t *c = get(m, "collectives");
	cr_assert_eq(json_array_size(c), 5);
	static const char *const values[] = {"loss.1", "grad_fc1.weight.1", "grad_fc1.bias.1", "grad_fc2.weight.1",
	                                     "grad_fc2.bias.1"};
	static const int bytes[] = {6, 12288, 384, 3840, 60};   /* 2 (n-1)/n of 4, 8192, 256, 2560, 40 bytes */
	for (int k = 0; k < 5; k++) {
		cr_assert_str_eq(str(get(at(c, k), "op")), "AllReduce");
		cr_assert_str_eq(str(get(at(c, k), "value")), values[k]);
		cr_assert_eq(num(get(at(c, k), "bytes_per_rank")), bytes[k]);
	}
	expect_json(get(m, "comm_bytes_per_rank"), "[16578, 16578, 16578, 16578]");
	out_free(&o);
}

Test(strategy, data_parallel)
{
	Out o = lower_file("ir-samples/data_parallel_mlp.ir");
	json_t *ops = get(o.strategy, "operators");
	cr_assert_eq(json_array_size(ops), 6);
	for (size_t i = 0; i < json_array_size(ops); i++)
		cr_assert(json_is_false(get(at(ops, i), "user")), "data_parallel ignores user strategies");
	expect_json(get(named(ops, "h"), "in_strategy"), "[[4, 1], [1, 1]]");
	expect_json(get(named(ops, "hb"), "in_strategy"), "[[4, 1], [1]]");
	json_t *loss = named(ops, "loss");
	cr_assert_str_eq(str(get(loss, "op")), "SparseSoftmaxCrossEntropyWithLogits");
	expect_json(get(loss, "in_strategy"), "[[4, 1], [4]]");
	expect_json(get(loss, "out_layout"), "{\"dev\": [4, 1], \"map\": [], \"partial\": [0], \"partial_op\": \"mean\"}");
	out_free(&o);
}

/* ---- every sample: what must hold of any model ---- */

static int64_t product(const json_t *ints)
{
	int64_t p = 1;
	for (size_t i = 0; i < json_array_size(ints); i++)
		p *= num(json_array_get(ints, i));
	return p;
}

static size_t starts_rank;   /* dims compared by starts_cmp */

static int starts_cmp(const void *pa, const void *pb)
{
	const int64_t *a = pa, *b = pb;
	for (size_t d = 0; d < starts_rank; d++)
		if (a[d] != b[d])
			return a[d] < b[d] ? -1 : 1;
	return 0;
}

/* Each rank's piece, by the manifest's rule, is where the lowered program
 * puts it (lowered_piece_start); the pieces lie inside the tensor, ranks that
 * differ only on the "copies" axes hold the same one, and the others' pieces
 * are distinct and tile the tensor exactly. */
static void expect_tiles(const json_t *t, const LValue *v, int64_t device_num, const char *sample)
{
	const char *name = str(get(t, "name"));
	json_t *shape = get(t, "shape"), *piece = get(t, "piece"), *layout = get(t, "layout");
	size_t rank = json_array_size(shape);
	cr_assert_eq(json_array_size(piece), rank);
	cr_assert_eq(product(get(layout, "dev")), device_num, "%s %s: the matrix is not every rank", sample, name);
	json_t *dev = get(layout, "dev"), *copies = get(t, "copies");
	bool copy[MAX_AXES] = {false};
	for (size_t k = 0; k < json_array_size(copies); k++)
		copy[num(at(copies, k))] = true;
	for (size_t d = 0; d < rank; d++) {
		int64_t split = 1;
		for (size_t k = 0; k < json_array_size(at(get(layout, "map"), d)); k++) {
			int64_t a = num(at(at(get(layout, "map"), d), k));
			cr_assert(!copy[a], "%s %s: axis %lld splits dim %zu and copies", sample, name, (long long)a, d);
			split *= num(at(dev, (size_t)a));
		}
		cr_assert_eq(num(at(piece, d)) * split, num(at(shape, d)), "%s %s: dim %zu's piece", sample, name, d);
		cr_assert_eq(num(at(piece, d)), v->type.dims[d], "%s %s: dim %zu's piece", sample, name, d);
	}
	int64_t(*starts)[MAX_DIMS] = calloc((size_t)device_num, sizeof *starts);
	int64_t(*firsts)[MAX_DIMS] = calloc((size_t)device_num, sizeof *firsts);
	int64_t nfirst = 0;
	for (int64_t r = 0; r < device_num; r++) {
		int64_t want[MAX_DIMS];
		piece_start(t, r, starts[r]);
		lowered_piece_start(v, r, want);
		for (size_t d = 0; d < rank; d++) {
			int64_t s = starts[r][d], n = num(at(piece, d)), g = num(at(shape, d));
			cr_assert_eq(s, want[d], "%s %s: rank %lld's piece starts at %lld in dim %zu, the program's at %lld",
			             sample, name, (long long)r, (long long)s, d, (long long)want[d]);
			cr_assert(s >= 0 && n >= 1 && s + n <= g && s % n == 0, "%s %s: rank %lld's piece leaves the tensor",
			          sample, name, (long long)r);
		}
		/* the rank with r's coordinates but 0 on the copies axes holds r's piece */
		int64_t c[MAX_AXES], q = 0;
		int nax = coords_on(dev, r, c);
		for (int a = 0; a < nax; a++)
			q = q * num(at(dev, (size_t)a)) + (copy[a] ? 0 : c[a]);
		cr_assert(memcmp(starts[q], starts[r], sizeof(int64_t) * rank) == 0,
		          "%s %s: ranks %lld and %lld differ only on copies axes but hold other pieces", sample, name,
		          (long long)q, (long long)r);
		if (q == r)
			memcpy(firsts[nfirst++], starts[r], sizeof(int64_t) * rank);
	}
	starts_rank = rank;
	qsort(firsts, (size_t)nfirst, sizeof *firsts, starts_cmp);
	for (int64_t k = 1; k < nfirst; k++)
		cr_assert_neq(starts_cmp(firsts[k - 1], firsts[k]), 0, "%s %s: ranks apart off the copies axes share a piece",
		              sample, name);
	cr_assert_eq(nfirst * product(piece), product(shape), "%s %s: the pieces do not tile the tensor", sample, name);
	free(starts);
	free(firsts);
}

static void expect_invariants(const Out *o, const char *sample)
{
	json_t *m = o->manifest;
	const Lowered *l = o->l;
	const Graph *g = l->flat->g;
	int64_t n = num(get(m, "device_num"));
	size_t ni = 0, np = 0;
	for (int p = 0; p < l->nparams; p++) {
		bool param = g->values[p].type.is_param;
		json_t *t = at(get(m, param ? "parameters" : "inputs"), param ? np++ : ni++);
		cr_assert_str_eq(str(get(t, "name")), g->values[p].name);
		expect_tiles(t, &l->values[p], n, sample);
	}
	cr_assert_eq(json_array_size(get(m, "inputs")), ni);
	cr_assert_eq(json_array_size(get(m, "parameters")), np);
	cr_assert_eq(json_array_size(get(m, "outputs")), (size_t)l->nret);
	for (int k = 0; k < l->nret; k++)
		expect_tiles(at(get(m, "outputs"), (size_t)k), &l->values[l->rets[k]], n, sample);
	/* Each collective's group on each rank, by the rule, is the program's
	 * (lowered_rank_attrs), and one of "groups". */
	json_t *groups = get(m, "groups"), *colls = get(m, "collectives");
	int64_t bytes = 0;
	int64_t *members = malloc(sizeof(int64_t) * (size_t)n), *want = malloc(sizeof(int64_t) * (size_t)n);
	bool *joined = calloc(json_array_size(groups) + 1, sizeof *joined);
	size_t c = 0;
	for (int i = 0; i < l->nops; i++) {
		const LOp *op = &l->ops[i];
		if (!op->step || op->step->kind == STEP_SLICE)
			continue;
		json_t *coll = at(colls, c++);
		cr_assert_str_eq(str(get(coll, "value")), l->values[op->result].name);
		bytes += num(get(coll, "bytes_per_rank"));
		for (int64_t r = 0; r < n; r++) {
			Attrs a;
			lowered_rank_attrs(l, op, r, &a, want);
			int64_t size = group_members(get(coll, "group"), r, members, n);
			cr_assert_eq(size, a.ngroup, "%s %s: rank %lld's group has %lld members, the program's %d", sample,
			             str(get(coll, "value")), (long long)r, (long long)size, a.ngroup);
			cr_assert(memcmp(members, a.group, sizeof(int64_t) * (size_t)size) == 0,
			          "%s %s: rank %lld's group is not the program's", sample, str(get(coll, "value")), (long long)r);
		}
		json_t *of = group_of_rank(m, coll);   /* fails unless every rank's group is listed */
		for (int64_t r = 0; r < n; r++)
			joined[num(at(of, (size_t)r))] = true;
		json_decref(of);
	}
	cr_assert_eq(json_array_size(colls), c);
	for (size_t k = 0; k < json_array_size(groups); k++)
		cr_assert(joined[k], "%s: group %zu is no rank's group of any collective", sample, k);
	free(joined);
	free(members);
	free(want);
	for (size_t i = 1; i < json_array_size(groups); i++) {
		char *a = json_dumps(at(groups, i - 1), JSON_COMPACT), *b = json_dumps(at(groups, i), JSON_COMPACT);
		cr_assert_neq(strcmp(a, b), 0, "%s: group %s twice", sample, a);
		free(a);
		free(b);
	}
	json_t *per_rank = get(m, "comm_bytes_per_rank");
	cr_assert_eq((int64_t)json_array_size(per_rank), n);
	for (int64_t r = 0; r < n; r++)
		cr_assert_eq(num(at(per_rank, (size_t)r)), bytes, "%s: rank %lld's bytes", sample, (long long)r);
	json_t *ops = get(o->strategy, "operators");
	for (size_t i = 0; i < json_array_size(ops); i++) {
		json_t *op = json_array_get(ops, i);
		if (strcmp(str(get(op, "op")), "Reshape") == 0) {
			cr_assert(json_is_null(get(op, "in_strategy")), "%s: a Reshape has no strategy", sample);
			cr_assert(json_is_null(get(op, "device_matrix")));
		} else if (n > 1) {
			cr_assert(json_is_array(get(op, "in_strategy")), "%s: %s has no in_strategy", sample,
			          str(get(op, "name")));
			cr_assert_eq(product(get(op, "device_matrix")), n);
		}
	}
}

Test(manifest, every_sample)
{
	DIR *dir = opendir("ir-samples");
	cr_assert_not_null(dir, "run the tests from the repository root (ir-samples/ not found)");
	int count = 0;
	for (struct dirent *e; (e = readdir(dir));) {
		size_t len = strlen(e->d_name);
		if (len < 4 || strcmp(e->d_name + len - 3, ".ir") != 0)
			continue;
		char path[512];
		snprintf(path, sizeof path, "ir-samples/%s", e->d_name);
		Out o = lower_file(path);
		expect_invariants(&o, path);
		out_free(&o);
		count++;
	}
	closedir(dir);
	cr_assert_geq(count, 12);
}

/* ---- the file grows with the model, not with the ranks ---- */

static const char dp_mlp[] =
	"context {device_num: %d, parallel_mode: \"data_parallel\"}\n"
	"graph @mlp(%%x: <Tensor[Float32], (%d, 32)> = uniform(-1, 1),\n"
	"           %%label: <Tensor[Int32], (%d,)> = randint(0, 10),\n"
	"           %%w1: <Parameter[Float32], (32, 64)>, %%w2: <Parameter[Float32], (64, 10)>) {\n"
	"  %%h = MatMul(%%x, %%w1)\n"
	"  %%a = ReLU(%%h)\n"
	"  %%logits = MatMul(%%a, %%w2)\n"
	"  %%loss = SparseSoftmaxCrossEntropyWithLogits(%%logits, %%label)\n"
	"  return %%loss\n"
	"}\n"
	"train {loss: %%loss, optimizer: SGD(learning_rate: 0.1), steps: 1}\n";

static Out dp_mlp_on(int n)
{
	char text[sizeof dp_mlp + 64];
	snprintf(text, sizeof text, dp_mlp, n, n, n);
	return lower_text("dp.ir", text, strlen(text));
}

/* A data-parallel training step on 64 and on 1,024 ranks: what the larger one
 * adds is its comm_bytes_per_rank and its one group's members, a few bytes a
 * rank (one piece per rank and each rank's group per collective made it 460),
 * the long lists filled into lines of at most 100 columns. */
Test(manifest, grows_with_the_model)
{
	Out small = dp_mlp_on(64), big = dp_mlp_on(1024);
	size_t s = strlen(small.text), b = strlen(big.text);
	cr_assert_leq(b, s + 16 * (1024 - 64), "manifest.json: %zu bytes on 64 ranks, %zu on 1,024", s, b);
	for (const char *p = big.text, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		bool long_string = strstr(p, "\"why\"") && strstr(p, "\"why\"") < nl;
		cr_assert(nl - p <= 100 || long_string, "line longer than 100 columns: %.*s", (int)(nl - p), p);
	}
	expect_json(get(at(get(big.manifest, "collectives"), 1), "group"), "{\"dev\": [1024], \"axes\": [0]}");
	expect_invariants(&big, "dp.ir on 1,024 ranks");
	out_free(&small);
	out_free(&big);
}

/* ---- numbers as operands and one-row inputs: tests/e2e/data_parallel_scalars.ir ---- */

/* The numbers written as operands are the program's own: no input of the
 * manifest's; an input of one row is held whole on every rank in
 * data_parallel mode, the others split by rows. */
Test(manifest, numbers_and_one_row_inputs)
{
	Out o = lower_file("tests/e2e/data_parallel_scalars.ir");
	json_t *inputs = get(o.manifest, "inputs");
	cr_assert_eq(json_array_size(inputs), 4, "x, t, scale, shift: no number");
	for (int r = 0; r < 8; r++) {
		char start[32];
		snprintf(start, sizeof start, "[%d, 0]", 4 * r);
		expect_piece(named(inputs, "x"), r, start, "[4, 64]");
		expect_piece(named(inputs, "scale"), r, "[0, 0]", "[1, 64]");
		expect_piece(named(inputs, "shift"), r, "[0, 0]", "[1, 64]");
	}
	json_t *ops = get(o.strategy, "operators");
	bool seen = false;
	for (size_t i = 0; i < json_array_size(ops); i++)
		if (!strcmp(str(get(at(ops, i), "name")), "hl")) {
			expect_json(get(at(ops, i), "in_strategy"), "[[8, 1], []]");
			seen = true;
		}
	cr_assert(seen, "no operator %%hl in strategy.json");
	out_free(&o);
}
