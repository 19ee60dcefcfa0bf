/* profile.h: SHARDC_PROFILE=1 on the cuda backend: a pair of CUDA events
 * around each operator and collective the program calls, and at the end a
 * table of GPU time per kind of call, sorted (profile.c). Off, each call
 * costs one branch. */
#ifndef SC_CUDA_PROFILE_H
#define SC_CUDA_PROFILE_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdio.h>

/* What a call's speed is measured against: memory bandwidth alone, or the
 * arithmetic unit it runs on as well (the larger fraction is shown). */
typedef enum { SC_PEAK_MEM, SC_PEAK_F32, SC_PEAK_TF32, SC_PEAK_HALF } sc_peak_kind;

typedef struct sc_prof sc_prof;

/* NULL unless SHARDC_PROFILE=1. */
sc_prof *sc_prof_new(cudaStream_t stream, int device);
/* Opens a span on the stream: name (a string literal, the table's key),
 * its floating-point operations and the bytes it must move at least. */
int sc_prof_begin(sc_prof *p, const char *name, double flops, double bytes, sc_peak_kind peak);
void sc_prof_end(sc_prof *p, int span);
/* A training step ended: the table keeps the steps after the first (its
 * start and warm-up are dropped) up to the last (what follows is not
 * counted). Not called (no training): the table covers the whole run. */
void sc_prof_step(sc_prof *p, bool first, bool last);
/* Prints the table to f (NULL: not) and frees p (NULL: nothing to do). */
void sc_prof_report(sc_prof *p, FILE *f, int rank);

#endif
