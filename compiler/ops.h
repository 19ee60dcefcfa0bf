/* ops.h: the one table of operators and attributes (X-macros).
 *
 * OP(enum, name, min_inputs, max_inputs, attribute mask, shape, rule, kernel, grad, nograd,
 *    precision, view)
 * holds everything the passes need to know about an operator:
 *   min/max_inputs  max -1 means any number
 *   attribute mask  in_strategy and out_strategy are allowed on every
 *                   computing operator, recompute on every operator but
 *                   Call; they are not listed
 *   shape   how shape.c infers its result: SH_SAME (input 0's type),
 *           SH_FLOAT (the same, and input 0 must be a float), SH_BROADCAST
 *           (numpy broadcasting of two inputs of one dtype), SH_COMPARE
 *           (SH_BROADCAST's shape, Bool), SH_LOGICAL (Bool operands, one or
 *           two broadcasting, a Bool result), SH_MATMUL, SH_REDUCE, SH_OWN
 *           (its own case)
 *   rule    how rules.c splits it: R_ELEMWISE (every dim of its inputs, all
 *           of one shape, as is), R_BROADCAST (numpy broadcasting), R_MATMUL,
 *           R_REDUCE, R_OWN (its own case)
 *   kernel  the runtime kernel emit_forward.c calls: UNARY(X) is sc_unary's SC_U_X
 *           (a row of SC_UNARY_TABLE in runtime/shardc_rt.h), BINARY(X)
 *           sc_binary's SC_X, COMPARE(X) sc_compare's SC_CMP_X (a row of
 *           SC_COMPARE_TABLE), LOGICAL(X) sc_logical's SC_L_X, NORM(X)
 *           sc_norm's SC_N_X (a row of
 *           SC_NORM_TABLE), OWN its own case
 *   grad    what its adjoint (emit_adjoint.c) reads beside dy: GR_X its
 *           inputs, GR_Y its result, GR_XY both, GR_NONE nothing (dy alone);
 *           emit.c names these values, fuse.c counts the inputs' reads
 *           (the result's it still counts for every operator but a binary
 *           one), and an elementwise row's must be its kernel's (ir.c)
 *   nograd  a mask of the inputs that carry no gradient (indices, labels)
 *   precision  what mixed precision (autocast.c) computes it in when the
 *           model's precision is a half type: PREC_LOW the half type,
 *           PREC_F32 Float32 (its half inputs cast up), PREC_FOLLOW its
 *           input's type (it moves or picks elements; Float32 when its
 *           float inputs differ), PREC_ASIS as written (a Cast, a
 *           collective, a Call)
 *   view    V_VIEW: its result is its input's bytes unchanged, and so is its
 *           gradient dy's, so plan.c gives the result its input's buffer
 *           (no copy); V_COPY: it writes a buffer of its own
 * The elementwise operators are rows of UNARY_OPS, BINARY_OPS and
 * COMPARE_OPS, and the normalizers rows of NORM_OPS, which the passes'
 * switches take as one case each (OP_CASES); adding one is a row there, its
 * kernel's row in SC_UNARY_TABLE, SC_COMPARE_TABLE or SC_NORM_TABLE, and
 * its math in the references
 * (docs/internals.md, "Adding an operator"). Nothing about an operator's identity is
 * written anywhere else. */

/* ATTR(enum, name, kind) */
#define ATTR_TABLE(ATTR)                                   \
	ATTR(TRANSPOSE_A, "transpose_a", AK_BOOL)              \
	ATTR(TRANSPOSE_B, "transpose_b", AK_BOOL)              \
	ATTR(AXIS, "axis", AK_AXES)                            \
	ATTR(KEEP_DIMS, "keep_dims", AK_BOOL)                  \
	ATTR(SHAPE, "shape", AK_INTS)                          \
	ATTR(PERM, "perm", AK_INTS)                            \
	ATTR(BEGIN_NORM_AXIS, "begin_norm_axis", AK_INT)       \
	ATTR(BEGIN_PARAMS_AXIS, "begin_params_axis", AK_INT)   \
	ATTR(EPSILON, "epsilon", AK_FLOAT)                     \
	ATTR(DTYPE, "dtype", AK_DTYPE)                         \
	ATTR(BEGIN, "begin", AK_INTS)                          \
	ATTR(END, "end", AK_INTS)                              \
	ATTR(STRIDES, "strides", AK_INTS)                      \
	ATTR(BEGIN_MASK, "begin_mask", AK_INT)                 \
	ATTR(END_MASK, "end_mask", AK_INT)                     \
	ATTR(ELLIPSIS_MASK, "ellipsis_mask", AK_INT)           \
	ATTR(NEW_AXIS_MASK, "new_axis_mask", AK_INT)           \
	ATTR(SHRINK_AXIS_MASK, "shrink_axis_mask", AK_INT)     \
	ATTR(PAD, "pad", AK_BOOL)                              \
	ATTR(REDUCE_OP, "op", AK_REDUCE_OP)                    \
	ATTR(GROUP, "group", AK_INTS)                          \
	ATTR(SPLIT_AXIS, "split_axis", AK_INT)                 \
	ATTR(CONCAT_AXIS, "concat_axis", AK_INT)               \
	ATTR(OFFSET, "offset", AK_INT)                         \
	ATTR(APPROXIMATE, "approximate", AK_APPROXIMATE)       \
	ATTR(GRAPH, "graph", AK_GRAPH)                         \
	ATTR(SHARD, "shard", AK_SHARD)                         \
	ATTR(IN_STRATEGY, "in_strategy", AK_STRATEGY)          \
	ATTR(OUT_STRATEGY, "out_strategy", AK_STRATEGY)        \
	ATTR(RECOMPUTE, "recompute", AK_BOOL)                  \
	ATTR(START, "start", AK_FLOAT)                         \
	ATTR(STOP, "stop", AK_FLOAT)                           \
	ATTR(STEP, "step", AK_FLOAT)                           \
	ATTR(FILL, "fill", AK_FLOAT)                           \
	ATTR(THETA, "theta", AK_FLOAT)                         \
	ATTR(KEEP_PROB, "keep_prob", AK_FLOAT)                 \
	ATTR(OUTPUT_NUM, "output_num", AK_INT)                 \
	ATTR(OUTPUT_INDEX, "index", AK_INT)                    \
	ATTR(MODE, "mode", AK_INT)                             \
	ATTR(HEAD_NUM, "head_num", AK_INT)                     \
	ATTR(SCALE_VALUE, "scale_value", AK_FLOAT)             \
	ATTR(SPARSE_MODE, "sparse_mode", AK_INT)               \
	ATTR(INPUT_LAYOUT, "input_layout", AK_STRING)          \
	ATTR(PIPELINE_STAGE, "pipeline_stage", AK_INT)         \
	ATTR(DEPTH, "depth", AK_INT)                           \
	ATTR(MULTIPLES, "multiples", AK_INTS)                 \
	ATTR(SIZE, "size", AK_INTS)                            \
	ATTR(ALPHA, "alpha", AK_FLOAT)                         \
	ATTR(LAMBD, "lambd", AK_FLOAT)                         \
	ATTR(OUTPUT_TYPE, "output_type", AK_DTYPE)             \
	ATTR(K, "k", AK_INT)                                   \
	ATTR(SORTED, "sorted", AK_BOOL)                        \
	ATTR(EXCLUSIVE, "exclusive", AK_BOOL)                  \
	ATTR(REVERSE, "reverse", AK_BOOL)                      \
	ATTR(OUT_CHANNEL, "out_channel", AK_INT)               \
	ATTR(KERNEL_SIZE, "kernel_size", AK_AXES)              \
	ATTR(PAD_MODE, "pad_mode", AK_STRING)                  \
	ATTR(STRIDE, "stride", AK_AXES)                        \
	ATTR(DILATION, "dilation", AK_AXES)                    \
	ATTR(DATA_FORMAT, "data_format", AK_STRING) \
	ATTR(INPUT_SIZE, "input_size", AK_INTS)                \
	ATTR(DIM, "dim", AK_INT)                               \
	ATTR(DIAGONAL, "diagonal", AK_INT)                     \
	ATTR(NUM_SEGMENTS, "num_segments", AK_INT)             \
	ATTR(SIZE_SPLITS, "size_splits", AK_INTS)              \
	ATTR(SPLIT_DIM, "split_dim", AK_INT)                   \
	ATTR(NUM_SPLIT, "num_split", AK_INT)                   \
	ATTR(IS_TRAINING, "is_training", AK_BOOL)              \
	ATTR(MOMENTUM, "momentum", AK_FLOAT)                   \
	ATTR(TOLERANCE, "tolerance", AK_FLOAT)                 \
	ATTR(PADDINGS, "paddings", AK_INTS)                    \
	ATTR(PADDINGS_CONTIGUOUS, "paddings_contiguous", AK_BOOL) \
	ATTR(REDUCTION, "reduction", AK_STRING)                \
	ATTR(N, "n", AK_INT)                                   \
	ATTR(M, "m", AK_INT)                                   \
	ATTR(NUM, "num", AK_INT)                               \
	ATTR(ALIGN_CORNERS, "align_corners", AK_BOOL)          \
	ATTR(HALF_PIXEL_CENTERS, "half_pixel_centers", AK_BOOL) \
	ATTR(MAXLEN, "maxlen", AK_INT)                         \
	ATTR(SEED, "seed", AK_INT)                             \
	ATTR(SEED2, "seed2", AK_INT)                           \
	ATTR(AXIS1, "axis1", AK_INT)                           \
	ATTR(AXIS2, "axis2", AK_INT)                           \
	ATTR(INDICES, "indices", AK_INTS)

#define A(x) ATTR_BIT(ATTR_##x)
#define A_MATMUL (A(TRANSPOSE_A) | A(TRANSPOSE_B))
#define A_REDUCE (A(AXIS) | A(KEEP_DIMS))
/* CumSum's and CumProd's; offset only on a rank's piece of a split axis (lower.c) */
#define A_SCAN (A(AXIS) | A(EXCLUSIVE) | A(REVERSE) | A(OFFSET))
#define A_LAYERNORM (A(BEGIN_NORM_AXIS) | A(BEGIN_PARAMS_AXIS) | A(EPSILON))
/* BatchNorm's (MindSpore's ops.BatchNorm; data_format "NCHW" only, conv.c decodes it) */
#define A_BATCHNORM (A(IS_TRAINING) | A(EPSILON) | A(MOMENTUM) | A(DATA_FORMAT))
#define A_SLICE (A(BEGIN) | A(END) | A(STRIDES))
#define A_SLICE_MASKS (A(BEGIN_MASK) | A(END_MASK) | A(ELLIPSIS_MASK) | A(NEW_AXIS_MASK) | A(SHRINK_AXIS_MASK))
/* Conv2D's (MindSpore's ops.Conv2D; pad a number or (top, bottom, left, right), group a number: conv.c decodes
 * them) and the pools' (ops.MaxPool, ops.AvgPool; strides a number or a pair) */
#define A_CONV (A(OUT_CHANNEL) | A(KERNEL_SIZE) | A(MODE) | A(PAD_MODE) | A(PAD) | A(STRIDE) | A(DILATION) | A(GROUP) | \
                A(DATA_FORMAT) | A_WINDOW_PIECE)
/* a per-rank graph's piece of a windowed operator's result, (h, w) rows and columns of the whole's (conv.c) */
#define A_WINDOW_PIECE (A(BEGIN) | A(END))
/* Conv2DTranspose's: Conv2D's and input_size, its result's (N, C, H, W) (MindSpore's third input) */
#define A_CONV_T (A_CONV | A(INPUT_SIZE))
#define A_POOL (A(KERNEL_SIZE) | A(STRIDES) | A(PAD_MODE) | A(DATA_FORMAT) | A_WINDOW_PIECE)
#define A_FLASH (A(HEAD_NUM) | A(SCALE_VALUE) | A(SPARSE_MODE) | A(KEEP_PROB) | A(INPUT_LAYOUT))
/* FlashAttentionScore's input_layout values (Attrs.input_layout): where q's dims lie (shape.c, flash_dims). */
enum { FA_BNSD, FA_BSND, FA_BSH };
/* KLDivLoss's reduction (Attrs.mode): MindSpore's "mean" (the default), "none", "batchmean", "sum" (kldiv_loss.c). */
enum { KL_MEAN, KL_NONE, KL_BATCHMEAN, KL_SUM };

/* The normalizers: y = (x - c) rstd gamma [+ beta] over x's last dims, c and
 * rstd the row statistics their kernel's SC_NORM_TABLE row says (centered:
 * mean and variance; else the mean square). Inputs x, gamma and, when
 * min_inputs is 3, beta; a slice's piece along the normalized dims (lower.c)
 * takes the completed statistics too: the mean when centered, then the
 * variance (or mean square), so max_inputs is min_inputs + 1 + centered.
 * With begin_norm_axis in their attributes they normalize from there and gamma
 * covers x's dims from begin_params_axis (LayerNorm); without, both are the
 * dims gamma covers (MindSpore's RmsNorm). */
#define NORM_OPS(OP)                                                                                            \
	OP(LAYER_NORM, "LayerNorm", 3, 5, A_LAYERNORM, SH_OWN, R_OWN, NORM(LAYER_NORM), GR_X, 0, PREC_F32, V_COPY) \
	OP(RMS_NORM, "RmsNorm", 2, 3, A(EPSILON), SH_OWN, R_OWN, NORM(RMS_NORM), GR_X, 0, PREC_F32, V_COPY)

#define UNARY_OPS(OP)                                                                                        \
	OP(RELU, "ReLU", 1, 1, 0, SH_SAME, R_ELEMWISE, UNARY(RELU), GR_X, 0, PREC_LOW, V_COPY)               \
	OP(GELU, "GeLU", 1, 1, A(APPROXIMATE), SH_FLOAT, R_ELEMWISE, UNARY(GELU), GR_X, 0, PREC_LOW, V_COPY) \
	OP(TANH, "Tanh", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(TANH), GR_Y, 0, PREC_LOW, V_COPY)              \
	OP(SIGMOID, "Sigmoid", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SIGMOID), GR_Y, 0, PREC_LOW, V_COPY)     \
	OP(EXP, "Exp", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(EXP), GR_Y, 0, PREC_F32, V_COPY)                 \
	OP(LOG, "Log", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(LOG), GR_X, 0, PREC_F32, V_COPY)                 \
	OP(NEG, "Neg", 1, 1, 0, SH_SAME, R_ELEMWISE, UNARY(NEG), GR_NONE, 0, PREC_LOW, V_COPY)               \
	OP(SQRT, "Sqrt", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SQRT), GR_Y, 0, PREC_F32, V_COPY)              \
	OP(RSQRT, "Rsqrt", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(RSQRT), GR_Y, 0, PREC_F32, V_COPY)           \
	OP(SILU, "SiLU", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SILU), GR_X, 0, PREC_LOW, V_COPY)              \
	OP(SQUARE, "Square", 1, 1, 0, SH_SAME, R_ELEMWISE, UNARY(SQUARE), GR_X, 0, PREC_LOW, V_COPY)          \
	OP(ABS, "Abs", 1, 1, 0, SH_SAME, R_ELEMWISE, UNARY(ABS), GR_X, 0, PREC_LOW, V_COPY)                 \
	OP(SIN, "Sin", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SIN), GR_X, 0, PREC_F32, V_COPY)                 \
	OP(COS, "Cos", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(COS), GR_X, 0, PREC_F32, V_COPY)                 \
	OP(ERF, "Erf", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ERF), GR_X, 0, PREC_F32, V_COPY)                 \
	OP(RECIPROCAL, "Reciprocal", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(RECIPROCAL), GR_Y, 0, PREC_F32, V_COPY) \
	OP(LOG1P, "Log1p", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(LOG1P), GR_X, 0, PREC_F32, V_COPY)           \
	OP(EXPM1, "Expm1", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(EXPM1), GR_Y, 0, PREC_F32, V_COPY)           \
	OP(SOFTPLUS, "Softplus", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SOFTPLUS), GR_X, 0, PREC_F32, V_COPY)  \
	OP(FLOOR, "Floor", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(FLOOR), GR_NONE, 0, PREC_LOW, V_COPY)        \
	OP(SIGN, "Sign", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SIGN), GR_NONE, 0, PREC_LOW, V_COPY)          \
	OP(CEIL, "Ceil", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(CEIL), GR_NONE, 0, PREC_LOW, V_COPY)          \
	OP(ROUND, "Round", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ROUND), GR_NONE, 0, PREC_LOW, V_COPY)       \
	OP(TAN, "Tan", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(TAN), GR_Y, 0, PREC_F32, V_COPY)                \
	OP(ATAN, "Atan", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ATAN), GR_X, 0, PREC_F32, V_COPY)             \
	OP(SINH, "Sinh", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SINH), GR_X, 0, PREC_F32, V_COPY)             \
	OP(COSH, "Cosh", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(COSH), GR_X, 0, PREC_F32, V_COPY)             \
	OP(HSWISH, "HSwish", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(HSWISH), GR_X, 0, PREC_LOW, V_COPY)       \
	OP(HSIGMOID, "HSigmoid", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(HSIGMOID), GR_X, 0, PREC_LOW, V_COPY) \
	OP(ERFC, "Erfc", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ERFC), GR_X, 0, PREC_F32, V_COPY) \
	OP(INV, "Inv", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(INV), GR_Y, 0, PREC_F32, V_COPY) \
	OP(ACOS, "Acos", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ACOS), GR_X, 0, PREC_F32, V_COPY) \
	OP(ASIN, "Asin", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ASIN), GR_X, 0, PREC_F32, V_COPY) \
	OP(ATANH, "Atanh", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ATANH), GR_X, 0, PREC_F32, V_COPY) \
	OP(ASINH, "Asinh", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ASINH), GR_Y, 0, PREC_F32, V_COPY) \
	OP(ACOSH, "Acosh", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ACOSH), GR_Y, 0, PREC_F32, V_COPY) \
	OP(RINT, "Rint", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(RINT), GR_NONE, 0, PREC_LOW, V_COPY) \
	OP(ELU, "Elu", 1, 1, A(ALPHA), SH_FLOAT, R_ELEMWISE, UNARY(ELU), GR_Y, 0, PREC_LOW, V_COPY) \
	OP(MISH, "Mish", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(MISH), GR_X, 0, PREC_LOW, V_COPY) \
	OP(SELU, "SeLU", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SELU), GR_Y, 0, PREC_LOW, V_COPY) \
	OP(LOG_SIGMOID, "LogSigmoid", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(LOG_SIGMOID), GR_X, 0, PREC_F32, V_COPY) \
	OP(ZEROS_LIKE, "ZerosLike", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ZEROS_LIKE), GR_NONE, 0, PREC_LOW, V_COPY) \
	OP(ONES_LIKE, "OnesLike", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ONES_LIKE), GR_NONE, 0, PREC_LOW, V_COPY) \
	OP(LEAKY_RELU, "LeakyReLU", 1, 1, A(ALPHA), SH_FLOAT, R_ELEMWISE, UNARY(LEAKY_RELU), GR_X, 0, PREC_LOW, V_COPY) \
	OP(RELU6, "ReLU6", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(RELU6), GR_X, 0, PREC_LOW, V_COPY) \
	OP(SOFTSIGN, "Softsign", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(SOFTSIGN), GR_X, 0, PREC_LOW, V_COPY) \
	OP(FAST_GELU, "FastGeLU", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(FAST_GELU), GR_X, 0, PREC_F32, V_COPY) \
	OP(TRUNC, "Trunc", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(TRUNC), GR_NONE, 0, PREC_LOW, V_COPY) \
	OP(ERFINV, "Erfinv", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(ERFINV), GR_Y, 0, PREC_F32, V_COPY) \
	OP(HSHRINK, "HShrink", 1, 1, A(LAMBD), SH_FLOAT, R_ELEMWISE, UNARY(HSHRINK), GR_X, 0, PREC_LOW, V_COPY) \
	OP(SOFT_SHRINK, "SoftShrink", 1, 1, A(LAMBD), SH_FLOAT, R_ELEMWISE, UNARY(SOFT_SHRINK), GR_X, 0, PREC_LOW, V_COPY) \
	OP(LGAMMA, "Lgamma", 1, 1, 0, SH_FLOAT, R_ELEMWISE, UNARY(LGAMMA), GR_X, 0, PREC_F32, V_COPY)

#define BINARY_OPS(OP)                                                                                         \
	OP(ADD, "Add", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(ADD), GR_X, 0, PREC_LOW, V_COPY)             \
	OP(SUB, "Sub", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(SUB), GR_X, 0, PREC_LOW, V_COPY)             \
	OP(MUL, "Mul", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(MUL), GR_X, 0, PREC_LOW, V_COPY)             \
	OP(DIV, "Div", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(DIV), GR_X, 0, PREC_LOW, V_COPY)             \
	OP(MAXIMUM, "Maximum", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(MAXIMUM), GR_X, 0, PREC_LOW, V_COPY) \
	OP(MINIMUM, "Minimum", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(MINIMUM), GR_X, 0, PREC_LOW, V_COPY) \
	OP(POW, "Pow", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(POW), GR_X, 0, PREC_F32, V_COPY)             \
	OP(FLOOR_DIV, "FloorDiv", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(FLOOR_DIV), GR_X, 0, PREC_F32, V_COPY) \
	OP(FLOOR_MOD, "FloorMod", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(FLOOR_MOD), GR_X, 0, PREC_F32, V_COPY) \
	OP(MOD, "Mod", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(MOD), GR_X, 0, PREC_F32, V_COPY)             \
	OP(SQUARED_DIFFERENCE, "SquaredDifference", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(SQUARED_DIFF), GR_X, 0, \
	   PREC_LOW, V_COPY)                                                                                        \
	OP(DIV_NO_NAN, "DivNoNan", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(DIV_NO_NAN), GR_X, 0, PREC_F32, V_COPY) \
	OP(ATAN2, "Atan2", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(ATAN2), GR_X, 0, PREC_F32, V_COPY)             \
	OP(SIGMOID_CE, "SigmoidCrossEntropyWithLogits", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(SIGMOID_CE), GR_X, \
	   1u << 1, PREC_F32, V_COPY)                                                                                \
	OP(XLOGY, "Xlogy", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(XLOGY), GR_X, 0, PREC_F32, V_COPY)                \
	OP(XDIVY, "Xdivy", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(XDIVY), GR_X, 0, PREC_F32, V_COPY)                \
	OP(MUL_NO_NAN, "MulNoNan", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(MUL_NO_NAN), GR_X, 0, PREC_LOW, V_COPY)   \
	OP(TRUNCATE_DIV, "TruncateDiv", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(TRUNCATE_DIV), GR_X, 0, PREC_F32,     \
	   V_COPY)                                                                                                    \
	OP(TRUNCATE_MOD, "TruncateMod", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(TRUNCATE_MOD), GR_X, 0, PREC_F32,     \
	   V_COPY)                                                                                                    \
	OP(HYPOT, "Hypot", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(HYPOT), GR_X, 0, PREC_F32, V_COPY)             \
	OP(NEXT_AFTER, "NextAfter", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(NEXT_AFTER), GR_X, 0, PREC_ASIS, V_COPY) \
	OP(ZETA, "Zeta", 2, 2, 0, SH_BROADCAST, R_BROADCAST, BINARY(ZETA), GR_X, 0, PREC_F32, V_COPY)

/* The comparisons: Bool results, so no gradient (op_input_has_grad); under
 * mixed precision they compare what they are given, as MindSpore's AMP
 * lists leave them (autocast.c). */
#define COMPARE_OPS(OP)                                                                                                              \
	OP(EQUAL, "Equal", 2, 2, 0, SH_COMPARE, R_BROADCAST, COMPARE(EQUAL), GR_NONE, 0, PREC_FOLLOW, V_COPY)                        \
	OP(NOT_EQUAL, "NotEqual", 2, 2, 0, SH_COMPARE, R_BROADCAST, COMPARE(NOT_EQUAL), GR_NONE, 0, PREC_FOLLOW, V_COPY)             \
	OP(GREATER, "Greater", 2, 2, 0, SH_COMPARE, R_BROADCAST, COMPARE(GREATER), GR_NONE, 0, PREC_FOLLOW, V_COPY)                  \
	OP(GREATER_EQUAL, "GreaterEqual", 2, 2, 0, SH_COMPARE, R_BROADCAST, COMPARE(GREATER_EQUAL), GR_NONE, 0, PREC_FOLLOW, V_COPY) \
	OP(LESS, "Less", 2, 2, 0, SH_COMPARE, R_BROADCAST, COMPARE(LESS), GR_NONE, 0, PREC_FOLLOW, V_COPY)                           \
	OP(LESS_EQUAL, "LessEqual", 2, 2, 0, SH_COMPARE, R_BROADCAST, COMPARE(LESS_EQUAL), GR_NONE, 0, PREC_FOLLOW, V_COPY)   \
	OP(APPROXIMATE_EQUAL, "ApproximateEqual", 2, 2, A(TOLERANCE), SH_COMPARE, R_BROADCAST, COMPARE(APPROXIMATE_EQUAL),   \
	   GR_NONE, 0, PREC_FOLLOW, V_COPY)

/* The logical operators (MindSpore's LogicalNot, LogicalAnd, LogicalOr):
 * Bool operands, broadcasting, a Bool result (sc_logical); no gradient. */
#define LOGICAL_OPS(OP)                                                                                               \
	OP(LOGICAL_NOT, "LogicalNot", 1, 1, 0, SH_LOGICAL, R_ELEMWISE, LOGICAL(NOT), GR_NONE, 0, PREC_FOLLOW, V_COPY)  \
	OP(LOGICAL_AND, "LogicalAnd", 2, 2, 0, SH_LOGICAL, R_BROADCAST, LOGICAL(AND), GR_NONE, 0, PREC_FOLLOW, V_COPY) \
	OP(LOGICAL_OR, "LogicalOr", 2, 2, 0, SH_LOGICAL, R_BROADCAST, LOGICAL(OR), GR_NONE, 0, PREC_FOLLOW, V_COPY)

/* MindSpore's integer operators (int_math.c): Invert (~x), PopulationCount
 * (the 1 bits of each element), LeftShift and RightShift (x shifted by y,
 * broadcasting) on Int32 and Int64. Their operands are integers, so none
 * carries a gradient (the nograd mask, which also lets them past
 * check_kernels' float rule: int_math.c checks their types); their rows
 * follow one another in this order (the runtime's sc_int_op indexes by
 * them). */
#define INT_MATH_OPS(OP)                                                                                                \
	OP(INVERT, "Invert", 1, 1, 0, SH_OWN, R_ELEMWISE, OWN, GR_NONE, 1u, PREC_ASIS, V_COPY)                           \
	OP(POPULATION_COUNT, "PopulationCount", 1, 1, 0, SH_OWN, R_ELEMWISE, OWN, GR_NONE, 1u, PREC_ASIS, V_COPY)        \
	OP(LEFT_SHIFT, "LeftShift", 2, 2, 0, SH_OWN, R_BROADCAST, OWN, GR_NONE, 3u, PREC_ASIS, V_COPY)                   \
	OP(RIGHT_SHIFT, "RightShift", 2, 2, 0, SH_OWN, R_BROADCAST, OWN, GR_NONE, 3u, PREC_ASIS, V_COPY)

/* MindSpore's TensorScatterUpdate, Add, Sub, Mul, Div, Max, Min
 * (scatter_nd.c): (x, indices, updates), the result x with the slices the
 * indices name replaced by (added to, less, times, divided by, the larger
 * of, the smaller of) updates. Their rows follow one another in this order
 * (the runtime's sc_scatter_op indexes by them). Mul's and Div's gradients
 * read x and updates, Max's and Min's the result too (the ties). */
#define TENSOR_SCATTER_OPS(OP)                                                                                          \
	OP(TENSOR_SCATTER_UPDATE, "TensorScatterUpdate", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_FOLLOW, V_COPY)  \
	OP(TENSOR_SCATTER_ADD, "TensorScatterAdd", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_FOLLOW, V_COPY)        \
	OP(TENSOR_SCATTER_SUB, "TensorScatterSub", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_FOLLOW, V_COPY)        \
	OP(TENSOR_SCATTER_MUL, "TensorScatterMul", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_FOLLOW, V_COPY)        \
	OP(TENSOR_SCATTER_DIV, "TensorScatterDiv", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_FOLLOW, V_COPY)        \
	OP(TENSOR_SCATTER_MAX, "TensorScatterMax", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_XY, 1u << 1, PREC_FOLLOW, V_COPY)       \
	OP(TENSOR_SCATTER_MIN, "TensorScatterMin", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_XY, 1u << 1, PREC_FOLLOW, V_COPY)

/* MindSpore's Ref operators that update a Parameter in place and return the
 * updated value (scatter_state.c; docs/language.md, State parameters):
 * ScatterUpdate .. ScatterMin(x, indices, updates), indices naming x's dim
 * 0 (updates indices.shape + x.shape[1:]); ScatterNdUpdate, Add, Sub(x,
 * indices, updates) as the tensor scatters; AssignAdd, AssignSub(x, value),
 * x += / -= value. x, operand 0, is a state Parameter: no gradient. Their
 * rows follow one another in this order (scatter_state.c maps each to its
 * tensor scatter's kernel). Mul's and Div's updates have no gradient
 * (MindSpore registers none: a model needing one is refused). */
#define STATE_OPS(OP)                                                                                           \
	OP(SCATTER_UPDATE, "ScatterUpdate", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 3u, PREC_FOLLOW, V_COPY)             \
	OP(SCATTER_ADD, "ScatterAdd", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 3u, PREC_FOLLOW, V_COPY)                   \
	OP(SCATTER_SUB, "ScatterSub", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 3u, PREC_FOLLOW, V_COPY)                   \
	OP(SCATTER_MUL, "ScatterMul", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 7u, PREC_FOLLOW, V_COPY)                   \
	OP(SCATTER_DIV, "ScatterDiv", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 7u, PREC_FOLLOW, V_COPY)                   \
	OP(SCATTER_MAX, "ScatterMax", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 3u, PREC_FOLLOW, V_COPY)                   \
	OP(SCATTER_MIN, "ScatterMin", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 3u, PREC_FOLLOW, V_COPY)                   \
	OP(SCATTER_ND_UPDATE, "ScatterNdUpdate", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 3u, PREC_FOLLOW, V_COPY)        \
	OP(SCATTER_ND_ADD, "ScatterNdAdd", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 3u, PREC_FOLLOW, V_COPY)              \
	OP(SCATTER_ND_SUB, "ScatterNdSub", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_X, 3u, PREC_FOLLOW, V_COPY)              \
	OP(ASSIGN_ADD, "AssignAdd", 2, 2, 0, SH_OWN, R_BROADCAST, OWN, GR_X, 1u, PREC_FOLLOW, V_COPY)               \
	OP(ASSIGN_SUB, "AssignSub", 2, 2, 0, SH_OWN, R_BROADCAST, OWN, GR_X, 1u, PREC_FOLLOW, V_COPY)

/* MindSpore's InplaceAdd, InplaceSub, InplaceUpdate(x, v) {indices}: x with
 * the rows of dim 0 its `indices` attribute names plus, less, replaced by
 * v's rows (scatter_state.c); functional in effect (x any value, not
 * updated). No gradient to either operand: MindSpore's bprops return zeros. */
#define INPLACE_OPS(OP)                                                                                          \
	OP(INPLACE_ADD, "InplaceAdd", 2, 2, A(INDICES), SH_OWN, R_OWN, OWN, GR_NONE, 3u, PREC_FOLLOW, V_COPY)       \
	OP(INPLACE_SUB, "InplaceSub", 2, 2, A(INDICES), SH_OWN, R_OWN, OWN, GR_NONE, 3u, PREC_FOLLOW, V_COPY)       \
	OP(INPLACE_UPDATE, "InplaceUpdate", 2, 2, A(INDICES), SH_OWN, R_OWN, OWN, GR_NONE, 3u, PREC_FOLLOW, V_COPY)

/* MindSpore's unsorted segment reductions (segment.c): (x, segment_ids),
 * num_segments an attribute; the result (num_segments,) + x's dims past
 * the ids'. Their rows follow one another in this order (emission and the
 * runtime's sc_segment_op index by them). */
#define SEGMENT_OPS(OP)                                                                                                 \
	OP(UNSORTED_SEGMENT_SUM, "UnsortedSegmentSum", 2, 2, A(NUM_SEGMENTS), SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_F32,  \
	   V_COPY)                                                                                                       \
	OP(UNSORTED_SEGMENT_MAX, "UnsortedSegmentMax", 2, 2, A(NUM_SEGMENTS), SH_OWN, R_OWN, OWN, GR_XY, 1u << 1,          \
	   PREC_FOLLOW, V_COPY)                                                                                          \
	OP(UNSORTED_SEGMENT_MIN, "UnsortedSegmentMin", 2, 2, A(NUM_SEGMENTS), SH_OWN, R_OWN, OWN, GR_XY, 1u << 1,          \
	   PREC_FOLLOW, V_COPY)                                                                                          \
	OP(UNSORTED_SEGMENT_PROD, "UnsortedSegmentProd", 2, 2, A(NUM_SEGMENTS), SH_OWN, R_OWN, OWN, GR_X, 1u << 1,         \
	   PREC_F32, V_COPY)

#define OP_TABLE(OP)                                                                                                                       \
	OP(MATMUL, "MatMul", 2, 2, A_MATMUL, SH_MATMUL, R_MATMUL, OWN, GR_X, 0, PREC_LOW, V_COPY)                                          \
	OP(BATCH_MATMUL, "BatchMatMul", 2, 2, A_MATMUL, SH_MATMUL, R_MATMUL, OWN, GR_X, 0, PREC_LOW, V_COPY)                               \
	BINARY_OPS(OP)                                                                                                                     \
	COMPARE_OPS(OP)                                                                                                                    \
	LOGICAL_OPS(OP)                                                                                                                    \
	OP(IS_FINITE, "IsFinite", 1, 1, 0, SH_OWN, R_ELEMWISE, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                                       \
	OP(BIAS_ADD, "BiasAdd", 2, 2, 0, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_LOW, V_COPY)                                                 \
	OP(PRELU, "PReLU", 2, 2, 0, SH_OWN, R_OWN, OWN, GR_X, 0, PREC_LOW, V_COPY)                                                         \
	UNARY_OPS(OP)                                                                                                                      \
	OP(DROPOUT, "Dropout", 1, 1, A(KEEP_PROB), SH_FLOAT, R_ELEMWISE, OWN, GR_NONE, 0, PREC_LOW, V_COPY)                                \
	OP(DROPOUT_DO_MASK, "DropoutDoMask", 2, 2, A(KEEP_PROB), SH_OWN, R_ELEMWISE, OWN, GR_X, 1u << 1, PREC_LOW, V_COPY)                \
	OP(SELECT, "Select", 3, 3, 0, SH_OWN, R_ELEMWISE, OWN, GR_X, 1u << 0, PREC_FOLLOW, V_COPY)                                         \
	OP(PAD_FILL, "PadFill", 1, 1, A(AXIS) | A(FILL), SH_OWN, R_ELEMWISE, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                         \
	OP(ROTARY, "RotaryPositionEmbedding", 3, 3, A(MODE), SH_OWN, R_OWN, OWN, GR_X, 0, PREC_LOW, V_COPY)                                \
	OP(FLASH_ATTENTION, "FlashAttentionScore", 3, 4, A_FLASH, SH_OWN, R_OWN, OWN, GR_XY, 1u << 3, PREC_F32, V_COPY)                    \
	OP(SOFTMAX, "Softmax", 1, 1, A(AXIS), SH_OWN, R_OWN, OWN, GR_Y, 0, PREC_F32, V_COPY)                                               \
	OP(LOG_SOFTMAX, "LogSoftmax", 1, 1, A(AXIS), SH_OWN, R_OWN, OWN, GR_Y, 0, PREC_F32, V_COPY)                                        \
	OP(REDUCE_SUM, "ReduceSum", 1, 1, A_REDUCE, SH_REDUCE, R_REDUCE, OWN, GR_NONE, 0, PREC_F32, V_COPY)                                \
	OP(REDUCE_MEAN, "ReduceMean", 1, 1, A_REDUCE, SH_REDUCE, R_REDUCE, OWN, GR_NONE, 0, PREC_F32, V_COPY)                              \
	OP(REDUCE_MAX, "ReduceMax", 1, 1, A_REDUCE, SH_REDUCE, R_REDUCE, OWN, GR_XY, 0, PREC_FOLLOW, V_COPY)                               \
	OP(REDUCE_MIN, "ReduceMin", 1, 1, A_REDUCE, SH_REDUCE, R_REDUCE, OWN, GR_XY, 0, PREC_FOLLOW, V_COPY)                               \
	OP(REDUCE_PROD, "ReduceProd", 1, 1, A_REDUCE, SH_REDUCE, R_REDUCE, OWN, GR_X, 0, PREC_F32, V_COPY)                                 \
	OP(REDUCE_ALL, "ReduceAll", 1, 1, A_REDUCE, SH_REDUCE, R_REDUCE, OWN, GR_NONE, 1u << 0, PREC_FOLLOW, V_COPY)                       \
	OP(REDUCE_ANY, "ReduceAny", 1, 1, A_REDUCE, SH_REDUCE, R_REDUCE, OWN, GR_NONE, 1u << 0, PREC_FOLLOW, V_COPY)                       \
	OP(CUMSUM, "CumSum", 1, 2, A_SCAN, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_F32, V_COPY)                                              \
	OP(CUMPROD, "CumProd", 1, 2, A_SCAN, SH_OWN, R_OWN, OWN, GR_X, 0, PREC_F32, V_COPY)                                               \
	OP(RESHAPE, "Reshape", 1, 1, A(SHAPE), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_VIEW)                                        \
	OP(TRANSPOSE, "Transpose", 1, 1, A(PERM), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                                     \
	OP(FLATTEN, "Flatten", 1, 1, 0, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_VIEW)                                               \
	OP(IDENTITY, "Identity", 1, 1, 0, SH_SAME, R_ELEMWISE, OWN, GR_NONE, 0, PREC_FOLLOW, V_VIEW)                                       \
	OP(EXPAND_DIMS, "ExpandDims", 1, 1, A(AXIS), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_VIEW)                                  \
	OP(SQUEEZE, "Squeeze", 1, 1, A(AXIS), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_VIEW)                                         \
	OP(BROADCAST_TO, "BroadcastTo", 1, 1, A(SHAPE), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_F32, V_COPY)                                  \
	OP(TILE, "Tile", 1, 1, A(MULTIPLES), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_F32, V_COPY)                                             \
	OP(ONE_HOT, "OneHot", 3, 3, A(DEPTH) | A(AXIS) | A(OFFSET), SH_OWN, R_OWN, OWN, GR_NONE, 7u, PREC_F32, V_COPY)                     \
	OP(ARGMAX_WITH_VALUE, "ArgMaxWithValue", 1, 1, A_REDUCE | A(OUTPUT_INDEX), SH_OWN, R_OWN, OWN, GR_X, 0, PREC_FOLLOW, V_COPY)     \
	OP(ARGMIN_WITH_VALUE, "ArgMinWithValue", 1, 1, A_REDUCE | A(OUTPUT_INDEX), SH_OWN, R_OWN, OWN, GR_X, 0, PREC_FOLLOW, V_COPY)     \
	OP(ARGMAX, "Argmax", 1, 1, A(AXIS) | A(OUTPUT_TYPE), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                          \
	OP(ARGMIN, "Argmin", 1, 1, A(AXIS) | A(OUTPUT_TYPE), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                          \
	OP(TOPK, "TopK", 1, 1, A(K) | A(SORTED) | A(OUTPUT_INDEX), SH_OWN, R_OWN, OWN, GR_X, 0, PREC_FOLLOW, V_COPY)                      \
	OP(TRIL, "Tril", 1, 1, A(DIAGONAL), SH_OWN, R_ELEMWISE, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                                     \
	OP(TRIU, "Triu", 1, 1, A(DIAGONAL), SH_OWN, R_ELEMWISE, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                                     \
	OP(CONV2D, "Conv2D", 2, 2, A_CONV, SH_OWN, R_OWN, OWN, GR_X, 0, PREC_LOW, V_COPY)                                                 \
	OP(CONV2D_TRANSPOSE, "Conv2DTranspose", 2, 2, A_CONV_T, SH_OWN, R_OWN, OWN, GR_X, 0, PREC_LOW, V_COPY)                            \
	OP(MAX_POOL, "MaxPool", 1, 1, A_POOL, SH_OWN, R_OWN, OWN, GR_X, 0, PREC_FOLLOW, V_COPY)                                            \
	OP(AVG_POOL, "AvgPool", 1, 1, A_POOL, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_LOW, V_COPY)                                            \
	OP(GATHER, "Gather", 2, 2, A(AXIS) | A(OFFSET), SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_FOLLOW, V_COPY)                            \
	OP(EMBEDDING_LOOKUP, "EmbeddingLookup", 2, 2, A(OFFSET), SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_FOLLOW, V_COPY)                 \
	OP(GATHER_D, "GatherD", 2, 2, A(DIM) | A(OFFSET), SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_FOLLOW, V_COPY)                                      \
	OP(GATHER_ND, "GatherNd", 2, 2, 0, SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_FOLLOW, V_COPY)                                      \
	TENSOR_SCATTER_OPS(OP)                                                                                                             \
	STATE_OPS(OP)                                                                                                                      \
	INPLACE_OPS(OP)                                                                                                                    \
	NORM_OPS(OP)                                                                                                                       \
	OP(L2_NORMALIZE, "L2Normalize", 1, 2, A(AXIS) | A(EPSILON), SH_OWN, R_OWN, OWN, GR_X, 0, PREC_F32, V_COPY)                         \
	OP(BATCH_NORM, "BatchNorm", 5, 7, A_BATCHNORM, SH_OWN, R_OWN, OWN, GR_X, 3u << 3, PREC_F32, V_COPY)                   \
	SEGMENT_OPS(OP)                                                                                                                    \
	OP(CONCAT, "Concat", 1, -1, A(AXIS), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                                          \
	OP(ADD_N, "AddN", 2, -1, 0, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_LOW, V_COPY)                                                     \
	OP(STACK, "Stack", 1, -1, A(AXIS), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                                           \
	OP(LERP, "Lerp", 3, 3, 0, SH_OWN, R_BROADCAST, OWN, GR_X, 0, PREC_LOW, V_COPY)                                                    \
	OP(MASKED_FILL, "MaskedFill", 3, 3, 0, SH_OWN, R_BROADCAST, OWN, GR_X, 1u << 1, PREC_FOLLOW, V_COPY)                               \
	INT_MATH_OPS(OP)                                                                                                                   \
	OP(REVERSE_V2, "ReverseV2", 1, 1, A(AXIS), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                                  \
	OP(TRACE_V2, "TraceV2", 1, 1, A(OFFSET) | A(AXIS1) | A(AXIS2) | A(DTYPE), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_F32, V_COPY)       \
	OP(CAST, "Cast", 1, 1, A(DTYPE), SH_OWN, R_ELEMWISE, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)                                           \
	OP(STRIDED_SLICE, "StridedSlice", 1, 1, A_SLICE | A_SLICE_MASKS | A(PAD), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                              \
	OP(SPLIT, "Split", 1, 1, A(AXIS) | A(OUTPUT_NUM) | A(OUTPUT_INDEX), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)          \
	OP(SPLIT_V, "SplitV", 1, 1, A(SIZE_SPLITS) | A(SPLIT_DIM) | A(NUM_SPLIT) | A(OUTPUT_INDEX), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY) \
	OP(SLICE, "Slice", 1, 1, A(BEGIN) | A(SIZE), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                               \
	OP(PAD_V3, "PadV3", 1, 2, A(PADDINGS) | A(PADDINGS_CONTIGUOUS) | A(MODE), SH_OWN, R_OWN, OWN, GR_NONE, 1u << 1, PREC_FOLLOW, V_COPY) \
	OP(RESIZE_NEAREST, "ResizeNearestNeighbor", 1, 1, A(SIZE) | A(ALIGN_CORNERS) | A(HALF_PIXEL_CENTERS), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY) \
	OP(RESIZE_BILINEAR, "ResizeBilinearV2", 1, 1, A(SIZE) | A(ALIGN_CORNERS) | A(HALF_PIXEL_CENTERS), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_F32, V_COPY) \
	OP(ARANGE, "Arange", 0, 0, A(DTYPE) | A(BEGIN) | A(END) | A(START) | A(STOP) | A(STEP) | A(MAXLEN), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)              \
	OP(CAUSAL_MASK, "CausalMask", 0, 0, A(DTYPE) | A(BEGIN) | A(END) | A(SHAPE) | A(FILL), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)          \
	OP(ROPE_COS, "RopeCos", 0, 0, A(DTYPE) | A(BEGIN) | A(END) | A(SHAPE) | A(THETA), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)               \
	OP(ROPE_SIN, "RopeSin", 0, 0, A(DTYPE) | A(BEGIN) | A(END) | A(SHAPE) | A(THETA), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)               \
	OP(EYE, "Eye", 0, 0, A(DTYPE) | A(BEGIN) | A(END) | A(N) | A(M), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                \
	OP(LIN_SPACE, "LinSpace", 0, 0, A(BEGIN) | A(END) | A(START) | A(STOP) | A(NUM), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY) \
	OP(FILL_V2, "FillV2", 0, 0, A(DTYPE) | A(BEGIN) | A(END) | A(SHAPE) | A(FILL), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)                  \
	OP(DROPOUT_GEN_MASK, "DropoutGenMask", 0, 0, A(BEGIN) | A(END) | A(SHAPE) | A(KEEP_PROB), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY)      \
	OP(UNIFORM_REAL, "UniformReal", 0, 0, A(BEGIN) | A(END) | A(SHAPE) | A(SEED) | A(SEED2), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_FOLLOW, V_COPY) \
	OP(SPARSE_SOFTMAX_CE, "SparseSoftmaxCrossEntropyWithLogits", 2, 4, A(OFFSET), SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_F32, V_COPY) \
	OP(SOFTMAX_CE, "SoftmaxCrossEntropyWithLogits", 2, 4, 0, SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_F32, V_COPY)                    \
	OP(MSE_LOSS, "MSELoss", 2, 2, 0, SH_OWN, R_OWN, OWN, GR_X, 0, PREC_F32, V_COPY)                                                    \
	OP(L1_LOSS, "L1Loss", 2, 2, 0, SH_OWN, R_OWN, OWN, GR_X, 0, PREC_F32, V_COPY)                                                      \
	OP(L2_LOSS, "L2Loss", 1, 1, 0, SH_OWN, R_OWN, OWN, GR_X, 0, PREC_F32, V_COPY)                                                      \
	OP(KL_DIV_LOSS, "KLDivLoss", 2, 2, A(REDUCTION), SH_OWN, R_OWN, OWN, GR_X, 1u << 1, PREC_F32, V_COPY)                            \
	OP(SQUARE_SUM_ALL, "SquareSumAll", 2, 2, A(OUTPUT_INDEX), SH_OWN, R_OWN, OWN, GR_X, 0, PREC_F32, V_COPY)                          \
	OP(ALL_REDUCE, "AllReduce", 1, 1, A(REDUCE_OP) | A(GROUP), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)                      \
	OP(ALL_GATHER, "AllGather", 1, 1, A(AXIS) | A(GROUP), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)                           \
	OP(REDUCE_SCATTER, "ReduceScatter", 1, 1, A(REDUCE_OP) | A(AXIS) | A(GROUP), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)    \
	OP(ALL_TO_ALL, "AllToAll", 1, 1, A(SPLIT_AXIS) | A(CONCAT_AXIS) | A(GROUP), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)     \
	OP(CALL, "Call", 0, -1, A(GRAPH) | A(SHARD), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)                                    \
	OP(DEPEND, "Depend", 2, 2, 0, SH_OWN, R_OWN, OWN, GR_NONE, 1u << 1, PREC_ASIS, V_VIEW)

/* The fused operators: what fuse.c rewrites a group of operators into, one
 * kernel computing them all. Rows of the table like any other, but no
 * operator of the language: op_from_name does not know them, so only
 * fuse.c makes them, and every pass before it refuses them. Their operands
 * are the values the group reads from outside it; what is not a kind (the
 * operators each replaced, which results a kernel stores too, a fold's
 * direction) is fuse.c's side table (Lowered.fusion).
 *   SOFTMAX_SCALED    softmax(x * scale): (x, scale), a Softmax's axis
 *   SOFTMAX_MASKED    softmax(x + mask) or softmax(x * scale + mask): (x, mask), (x, scale, mask)
 *   BIAS_UNARY        u(x + b), u the replaced unary operator's: (x, b)
 *   BIAS_ADD_RESIDUAL x + b + r: (x, b, r)
 *   EW_CHAIN          a chain of elementwise operators and Casts, one sc_ew_chain call
 *   BATCH_MATMUL_STRIDED a BatchMatMul (or its adjoint) reading or writing a folded Transpose's value
 *   TRANSPOSE_FOLDED  a Transpose (or its adjoint) that copies nothing: its values share a buffer
 *   NORM_GRAD         a normalizer's adjoint writing the other inputs' gradients too
 *   FLASH_ATTENTION_GRAD a FlashAttentionScore's adjoint writing the other inputs' gradients too
 *   FUSED             a placeholder: an operator another one's kernel computes (no code)
 * Their grad column is GR_NONE (an adjoint reads the operator as it was:
 * differentiated()) and their precision PREC_ASIS (made after autocast). */
#define FUSED_OPS(OP)                                                                                               \
	OP(SOFTMAX_SCALED, "SoftmaxScaled", 2, 2, A(AXIS), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)              \
	OP(SOFTMAX_MASKED, "SoftmaxMasked", 2, 3, A(AXIS), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)              \
	OP(BIAS_UNARY, "BiasUnary", 2, 2, 0, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)                            \
	OP(BIAS_ADD_RESIDUAL, "BiasAddResidual", 3, 3, 0, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)               \
	OP(EW_CHAIN, "ElementwiseChain", 1, -1, 0, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)                      \
	OP(BATCH_MATMUL_STRIDED, "BatchMatMulStrided", 1, 2, A_MATMUL, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)  \
	OP(TRANSPOSE_FOLDED, "TransposeFolded", 1, 1, A(PERM), SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)          \
	OP(NORM_GRAD, "NormGrad", 1, 1, A_LAYERNORM, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)                    \
	OP(FLASH_ATTENTION_GRAD, "FlashAttentionGrad", 1, 1, A_FLASH, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)   \
	OP(FUSED, "Fused", 0, -1, 0, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)

/* The operator lowering adds between pipeline stages (lower.c): a value
 * sent by the ranks of one stage to those of another, each rank to the one
 * at its place in the other stage (SendRecv: (x); the result x's bytes on
 * the receiving stage); a value every stage holds a part of, summed over the
 * ranks at one place in every stage (StageSum: the squared global norm of
 * the gradients). No operator of the language. */
#define PIPELINE_OPS(OP)                                                                 \
	OP(SEND_RECV, "SendRecv", 1, 1, 0, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY) \
	OP(STAGE_SUM, "StageSum", 1, 1, 0, SH_OWN, R_OWN, OWN, GR_NONE, 0, PREC_ASIS, V_COPY)

/* Every operator: the language's (OP_TABLE), lowering's, then fuse.c's. */
#define ALL_OPS(OP) OP_TABLE(OP) PIPELINE_OPS(OP) FUSED_OPS(OP)

/* `case OP_X:` for every row of a sub-table: OP_CASES(UNARY_OPS). */
#define OP_CASE(e, ...) case OP_##e:
#define OP_CASES(TABLE) TABLE(OP_CASE)
