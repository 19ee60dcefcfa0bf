/* emit_table.c: rank_<r>.c, the numbers program.c reads as T[k] on rank r
 * (docs/output.md), each with a comment saying what it is. On a pipeline a
 * rank's numbers are those of its place in its stage, its groups' first
 * members moved to its stage's ranks. */
#include "emit_internal.h"

#include <stdlib.h>

static void entry_label(StrBuf *b, const Program *p, const Entry *e, int64_t rank, const int64_t *val)
{
	const Lowered *l = p->l;
	switch (e->kind) {
	case E_GROUP: {
		const LOp *op = &l->ops[p->part[e->at]];
		int64_t size[MAX_AXES], stride[MAX_AXES], n;
		int ng;
		group_grid(op, rank, size, stride, &ng, &n);
		sb_printf(b, "g%d's first member: ranks ", e->at);
		if (n > 16) {
			sb_printf(b, "%lld.. (%lld)", (long long)val[0], (long long)n);
			return;
		}
		for (int i = 0; i < n; i++) {
			int64_t r = val[0], rest = i;
			for (int j = ng - 1; j >= 0; j--) {
				r += rest % size[j] * stride[j];
				rest /= size[j];
			}
			sb_printf(b, i ? ", %lld" : "%lld", (long long)r);
		}
		return;
	}
	case E_PIECE: sb_printf(b, "%%%s starts at", l->values[e->at].name); return;
	case E_SLICE: sb_printf(b, "%%%s: begin, end", l->values[l->ops[e->at].result].name); return;
	case E_OFFSET: sb_printf(b, "%%%s: the first row (class) held", l->values[l->ops[e->at].result].name); return;
	case E_SQNORM: sb_printf(b, "%%%s: sizes of the first copies", l->values[l->ops[e->at].result].name); return;
	}
}

void emit_table(StrBuf *b, const Program *p, int64_t rank)
{
	const Lowered *l = p->l;
	sb_printf(b, "/* rank_%lld.c: rank %lld of %lld of @%s, compiled by shardc from %s.\n"
	          " *\n"
	          " * The numbers program.c reads as T[k] on this rank, and nothing else\n"
	          " * (docs/output.md). Each is a formula of the rank's row-major coordinates c on\n"
	          " * a device matrix: a piece or a slice starts at c times the local size along a\n"
	          " * split dim, a group's first member is the rank with c zero on the group's axes,\n"
	          " * a gradient piece counts in the global norm where c is zero on the axes that\n"
	          " * copy it. c on each matrix here:",
	          (long long)rank, (long long)rank, (long long)(l->device_num * l->stages), l->flat->g->name, p->model);
	const TensorLayout **mats = p->mat;
	int nm = p->nmat;
	for (int j = 0; j < nm; j++) {
		int64_t c[MAX_AXES];
		layout_coords(mats[j], rank % l->device_num, c);
		sb_puts(b, j ? ";\n *" : "\n *");
		sb_puts(b, " (");
		for (int a = 0; a < mats[j]->ndev; a++)
			sb_printf(b, a ? ", %lld" : "%lld", (long long)c[a]);
		sb_puts(b, mats[j]->ndev == 1 ? ",) on (" : ") on (");
		for (int a = 0; a < mats[j]->ndev; a++)
			sb_printf(b, a ? ", %lld" : "%lld", (long long)mats[j]->dev[a]);
		sb_puts(b, mats[j]->ndev == 1 ? ",)" : ")");
	}
	sb_printf(b, "%s. */\n#include <stdint.h>\n\nconst int64_t sc_rank_%lld[] = {\n", nm ? "" : " (none)",
	          (long long)rank);
	int64_t local = rank % l->device_num, first = rank - local;   /* its place in its stage, the stage's first rank */
	const int64_t *row = p->tab + local * p->tlen;
	for (int i = 0; i < p->nentry; i++) {
		const Entry *e = &p->entry[i];
		if (e->pos < 0 || e->first != i)
			continue;
		int64_t *val = xmalloc(sizeof(int64_t) * (size_t)(e->n ? e->n : 1));
		for (int k = 0; k < e->n; k++)
			val[k] = row[e->pos + k] + (e->kind == E_GROUP ? first : 0);
		for (int k = 0; e->kind == E_SQNORM && k < e->n; k++)   /* another stage's gradient: not this rank's */
			if (l->values[l->ops[e->at].in[k]].stage != rank / l->device_num)
				val[k] = 0;
		sb_printf(b, "\t/* T[%lld] ", (long long)e->pos);
		entry_label(b, p, e, local, val);
		if (e->nsame)
			sb_printf(b, "; and %d more", e->nsame);
		sb_puts(b, " */");
		for (int k = 0; k < e->n; k++)
			sb_printf(b, " %lld,", (long long)val[k]);
		sb_putc(b, '\n');
		free(val);
	}
	if (!p->tlen)
		sb_puts(b, "\t0   /* no numbers: C has no empty array */\n");
	sb_puts(b, "};\n");
}
