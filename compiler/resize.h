/* resize.h: MindSpore's ResizeNearestNeighbor and ResizeBilinearV2
 * (resize.c): their result shape, op dims and kernel arguments. */
#ifndef SHARDC_RESIZE_H
#define SHARDC_RESIZE_H

#include "shardc.h"

/* Their op dims (rules.c's op_dims) on x (N, C, H, W): N and C split
 * freely (unevenly too), H and W whole but nearest's without align_corners
 * (resize_split_ok); the result as x, its H and W of size's lengths. */
void resize_dims(const Type *x, const Node *n, OpDims *od);
/* Whether nearest's H and W split as split says (its op dims) give each
 * rank's piece the whole's answer: evenly in x and the result, every output
 * index reading x in its own piece; false with the reason in why (NULL: no
 * message). Any split of the other ops' dims is allowed here. */
bool resize_split_ok(const Node *n, const OpDims *od, const int64_t *split, StrBuf *why);
/* `bilinear, x, y, nc, in_h, in_w, out_h, out_w, align_corners,
 * half_pixel_centers` of sc_resize (grad: sc_resize_grad, dy and dx) for
 * resize f on its pieces: x and y name its operand and result (dy and dx). */
void resize_args(StrBuf *b, const Program *p, const LOp *f, const char *x, const char *y);

#endif
