/* fuzz_parser.c: libFuzzer target for the front end. Feeds any bytes through
 * the pipeline's stages from parse to validate (pipeline_run), as the driver does,
 * with diagnostics (and their caret lines) printed to /dev/null. Any crash,
 * leak or sanitizer report is a bug. `make fuzz` runs it. */
#include "pipeline.h"

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
	Compilation c = {.stop = STAGE_VALIDATE, .name = "fuzz.ir", .text = text, .len = (int)size, .d = &d};
	if (pipeline_run(&c)) {
		StrBuf b = {0};
		print_module(&b, c.m);
		sb_free(&b);
	}
	compilation_free(&c);
	free(text);
	return 0;
}
