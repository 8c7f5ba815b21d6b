/* Why a converter refused its input: an errno value (EINVAL for bad data,
 * ERANGE/EILSEQ for values a format cannot hold, ENOMEM), the byte offset
 * in the input where the problem is, and one line of text for the log. */
#ifndef EIFS_FORMAT_ERROR_H
#define EIFS_FORMAT_ERROR_H

#include <stdint.h>

struct format_error {
	int code;
	uint64_t offset;
	char msg[400]; /* a path and the reason after it: cut short, the reason is lost */
};

/* Fills err (which may be NULL) and returns -1, so that a parser can say
 * `return format_fail(err, EINVAL, off, "...", ...);`. */
int format_fail(struct format_error *err, int code, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
