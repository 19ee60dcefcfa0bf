/* embedding_lookup.h: MindSpore's EmbeddingLookup (embedding_lookup.c): its
 * result shape for shape.c, the combinations of splits MindSpore's
 * EmbeddingLookupInfo refuses for rules.c and the search, and the limit
 * its kernel takes for the emitters. Its op dims are Gather's on axis 0
 * (rules.c). */
#ifndef SHARDC_EMBEDDING_LOOKUP_H
#define SHARDC_EMBEDDING_LOOKUP_H

#include "shardc.h"

/* False, with the reason in why (NULL: none), where MindSpore's
 * EmbeddingLookupInfo refuses op-dim splits `split` (od: its op dims) on
 * device_num devices. */
bool embedding_lookup_split_ok(const OpDims *od, const int64_t *split, int64_t device_num, StrBuf *why);
/* The first id past the whole table of EmbeddingLookup o (lowered): its
 * offset plus the table's global rows; ids from there on read zeros. */
int64_t embedding_lookup_limit(const Lowered *l, const LOp *o);

#endif
