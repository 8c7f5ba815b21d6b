/* What every target shares: failing loudly, and the text-view contract. */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: property failed: %s: ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void fuzz_check_refusal(const struct format_error *err, const char *what)
{
	FUZZ_CHECK(err->code > 0, "%s refused with errno %d (%s)", what, err->code, err->msg);
	FUZZ_CHECK(err->msg[0] != '\0', "%s refused without a message", what);
}

void fuzz_check_growth(size_t in, size_t out, const char *what)
{
	FUZZ_CHECK((uint64_t)out <= (uint64_t)in * FUZZ_GROWTH + FUZZ_GROWTH_SLACK,
		   "%s made %zu bytes of %zu, more than %d per byte", what, out, in, FUZZ_GROWTH);
}

/* The prefix stands for text a caller had in out before the call. */
static const char kept[] = "kept\n";

int fuzz_view(fuzz_view_fn *fn, const char *what, const uint8_t *data, size_t size)
{
	struct format_error err = { 0 };
	GString *out = g_string_new(kept);
	int rc = fn(data, size, out, &err);

	FUZZ_CHECK(rc == 0 || rc == -1, "%s returned %d", what, rc);
	if (rc < 0) {
		fuzz_check_refusal(&err, what);
		FUZZ_CHECK(strcmp(out->str, kept) == 0, "%s changed out although it refused (%s)",
			   what, err.msg);
	} else {
		FUZZ_CHECK(strncmp(out->str, kept, strlen(kept)) == 0, "%s dropped text of out", what);
		FUZZ_CHECK(g_utf8_validate(out->str, (gssize)out->len, NULL),
			   "%s wrote text that is not UTF-8", what);
		fuzz_check_growth(size, out->len - strlen(kept), what);
	}
	g_string_free(out, TRUE);
	return rc;
}
