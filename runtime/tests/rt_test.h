/* rt_test.h: what the runtime's tests share: seeded random data, index
 * arithmetic written independently of the runtime's, and llm.c-style
 * comparison with a tolerance that scales with the values. */
#ifndef RT_TEST_H
#define RT_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* splitmix64 stream: next value in [0, 1) */
double t_rand(uint64_t *state);
void t_fill(float *x, int64_t n, uint64_t *state, float lo, float hi);

int64_t t_numel(const int64_t *dims, int nd);
void t_unravel(int64_t i, const int64_t *dims, int nd, int64_t *idx);
int64_t t_ravel(const int64_t *idx, const int64_t *dims, int nd);

/* shapes (a, b, y) that cover the broadcasting kernels' paths (same
 * shapes, scalars, a row or a column repeated, the general walk) */
typedef struct {
	int an, bn, yn;
	int64_t ad[4], bd[4], yd[4];
	const char *what;
} t_bcast_case;
extern const t_bcast_case t_bcast_cases[];
extern const int t_n_bcast_cases;
/* the flat index in an operand of dims (nd) of y's element at yi (yn) */
int64_t t_bcast_index(const int64_t *yi, int yn, const int64_t *dims, int nd);

/* The parameter the tests pass a unary kernel (SC_UNARY_TABLE's p): a
 * LeakyReLU slope away from 0 and 1, ignored by the rows without one. */
#define T_UNARY_P 0.3f

/* |got - want| <= atol + rtol |want| for every element; on failure prints
 * what, the first bad index and the largest difference (llm.c
 * validate_result). */
bool t_close(const char *what, const float *got, const float *want, int64_t n, double atol, double rtol);

/* The MPI tests' checks: one that fails prints `rank R: FAILED: what` and
 * is counted; t_failures() is the count so far. */
void t_expect(bool ok, int rank, const char *what);
int t_failures(void);

/* A bump allocator over the slab a test got from sc_slab (device memory on
 * cuda): pieces 256-byte aligned; one past the end exits 2 naming `who`.
 * t_slab_reset starts over at the beginning. */
void t_slab_init(void *slab, size_t size, const char *who);
void *t_slab(size_t bytes);
void t_slab_reset(void);

#endif
