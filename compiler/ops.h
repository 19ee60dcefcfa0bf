/* ops.h: the one table of operators and attributes (X-macros).
 *
 * OP(enum, name, min_inputs, max_inputs, attribute mask)
 * max_inputs -1 means any number. in_strategy and out_strategy are allowed on
 * every computing operator and are not listed. Nothing about an operator's
 * identity is written anywhere else. */

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
	ATTR(REDUCE_OP, "op", AK_REDUCE_OP)                    \
	ATTR(GROUP, "group", AK_INTS)                          \
	ATTR(SPLIT_AXIS, "split_axis", AK_INT)                 \
	ATTR(CONCAT_AXIS, "concat_axis", AK_INT)               \
	ATTR(OFFSET, "offset", AK_INT)                         \
	ATTR(GRAPH, "graph", AK_GRAPH)                         \
	ATTR(SHARD, "shard", AK_SHARD)                         \
	ATTR(IN_STRATEGY, "in_strategy", AK_STRATEGY)          \
	ATTR(OUT_STRATEGY, "out_strategy", AK_STRATEGY)

#define A(x) (1u << ATTR_##x)
#define A_MATMUL (A(TRANSPOSE_A) | A(TRANSPOSE_B))
#define A_REDUCE (A(AXIS) | A(KEEP_DIMS))
#define A_LAYERNORM (A(BEGIN_NORM_AXIS) | A(BEGIN_PARAMS_AXIS) | A(EPSILON))
#define A_SLICE (A(BEGIN) | A(END) | A(STRIDES))

#define OP_TABLE(OP)                                                              \
	OP(MATMUL, "MatMul", 2, 2, A_MATMUL)                                          \
	OP(BATCH_MATMUL, "BatchMatMul", 2, 2, A_MATMUL)                               \
	OP(ADD, "Add", 2, 2, 0)                                                       \
	OP(SUB, "Sub", 2, 2, 0)                                                       \
	OP(MUL, "Mul", 2, 2, 0)                                                       \
	OP(DIV, "Div", 2, 2, 0)                                                       \
	OP(MAXIMUM, "Maximum", 2, 2, 0)                                               \
	OP(MINIMUM, "Minimum", 2, 2, 0)                                               \
	OP(BIAS_ADD, "BiasAdd", 2, 2, 0)                                              \
	OP(RELU, "ReLU", 1, 1, 0)                                                     \
	OP(GELU, "GeLU", 1, 1, 0)                                                     \
	OP(TANH, "Tanh", 1, 1, 0)                                                     \
	OP(SIGMOID, "Sigmoid", 1, 1, 0)                                               \
	OP(EXP, "Exp", 1, 1, 0)                                                       \
	OP(LOG, "Log", 1, 1, 0)                                                       \
	OP(NEG, "Neg", 1, 1, 0)                                                       \
	OP(SQRT, "Sqrt", 1, 1, 0)                                                     \
	OP(SQUARE, "Square", 1, 1, 0)                                                 \
	OP(SOFTMAX, "Softmax", 1, 1, A(AXIS))                                         \
	OP(LOG_SOFTMAX, "LogSoftmax", 1, 1, A(AXIS))                                  \
	OP(REDUCE_SUM, "ReduceSum", 1, 1, A_REDUCE)                                   \
	OP(REDUCE_MEAN, "ReduceMean", 1, 1, A_REDUCE)                                 \
	OP(REDUCE_MAX, "ReduceMax", 1, 1, A_REDUCE)                                   \
	OP(RESHAPE, "Reshape", 1, 1, A(SHAPE))                                        \
	OP(TRANSPOSE, "Transpose", 1, 1, A(PERM))                                     \
	OP(FLATTEN, "Flatten", 1, 1, 0)                                               \
	OP(GATHER, "Gather", 2, 2, A(AXIS) | A(OFFSET))                                         \
	OP(LAYER_NORM, "LayerNorm", 3, 5, A_LAYERNORM)                                \
	OP(CONCAT, "Concat", 1, -1, A(AXIS))                                          \
	OP(CAST, "Cast", 1, 1, A(DTYPE))                                              \
	OP(STRIDED_SLICE, "StridedSlice", 1, 1, A_SLICE)                              \
	OP(SPARSE_SOFTMAX_CE, "SparseSoftmaxCrossEntropyWithLogits", 2, 4, A(OFFSET))  \
	OP(MSE_LOSS, "MSELoss", 2, 2, 0)                                              \
	OP(L1_LOSS, "L1Loss", 2, 2, 0)                                                \
	OP(ALL_REDUCE, "AllReduce", 1, 1, A(REDUCE_OP) | A(GROUP))                    \
	OP(ALL_GATHER, "AllGather", 1, 1, A(AXIS) | A(GROUP))                         \
	OP(REDUCE_SCATTER, "ReduceScatter", 1, 1, A(REDUCE_OP) | A(AXIS) | A(GROUP))  \
	OP(ALL_TO_ALL, "AllToAll", 1, 1, A(SPLIT_AXIS) | A(CONCAT_AXIS) | A(GROUP))   \
	OP(CALL, "Call", 0, -1, A(GRAPH) | A(SHARD))
