#include "format_error.h"

#include <stdarg.h>
#include <stdio.h>

int format_fail(struct format_error *err, int code, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->code = code;
		err->offset = offset;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return -1;
}
