/* fuzz_parser.c: libFuzzer target for the front end. Feeds any bytes through
 * parse, context, names, shapes and strategies, exactly as the driver does,
 * with diagnostics (and their caret lines) printed to /dev/null. Any crash,
 * leak or sanitizer report is a bug. `make fuzz` runs it. */
#include "shardc.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	if (!devnull)
		devnull = fopen("/dev/null", "w");
	char *text = xmalloc(size + 1);
	memcpy(text, data, size);
	text[size] = 0;
	Diag d = {.out = devnull, .caret = true};
	Module *m = parse_module("fuzz.ir", text, (int)size, &d);
	bool ok = d.nerrors == 0 && check_context(m, &d);
	ok = ok && check_names(m, &d);
	ok = ok && infer_shapes(m, &d);
	ok = ok && check_strategies(m, &d);
	if (ok) {
		StrBuf b = {0};
		print_module(&b, m);
		sb_free(&b);
	}
	module_free(m);
	free(text);
	return 0;
}
