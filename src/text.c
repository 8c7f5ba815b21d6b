#include "text.h"

#include <errno.h>

#include "cp1251.h"

#define UNDEFINED_BYTE 0x98 /* the one byte cp1251 gives no character */

int text_to_utf8(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	gsize start = out->len;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = data[i];

		if (c == 0) {
			g_string_truncate(out, start);
			return format_fail(err, EINVAL, i, "a NUL byte: binary data, not a text");
		}
		if (c < 0x80)
			g_string_append_c(out, (char)c);
		else
			g_string_append_unichar(out, c == UNDEFINED_BYTE ? UNDEFINED_BYTE : cp1251_char(c));
	}
	return 0;
}

int text_from_utf8(const unsigned char *text, size_t len, GByteArray *out, struct format_error *err)
{
	const char *p = (const char *)text, *end;
	guint start = out->len;
	uint64_t line = 1;
	gunichar u = 0;
	int c;

	if (len == 0)
		return 0; /* text may then be NULL, and NULL + 0 is not a pointer */
	end = p + len;
	if (len >= 3 && text[0] == 0xEF && text[1] == 0xBB && text[2] == 0xBF)
		p += 3;
	for (; p < end; p = g_utf8_next_char(p)) {
		guint8 byte;

		/* glib takes a NUL for a broken sequence: it is told apart first */
		u = *p == 0 ? 0 : g_utf8_get_char_validated(p, end - p);
		c = u == 0 || u >= 0x80000000u ? -1 : u == UNDEFINED_BYTE ? UNDEFINED_BYTE : cp1251_byte(u);
		if (c < 0)
			break;
		if (c == '\n')
			line++;
		byte = (guint8)c;
		g_byte_array_append(out, &byte, 1);
	}
	if (p >= end)
		return 0;
	g_byte_array_set_size(out, start);
	if (u == 0)
		return format_fail(err, EINVAL, line, "line %llu: a NUL character", (unsigned long long)line);
	if (u >= 0x80000000u) /* (gunichar)-1 and -2 */
		return format_fail(err, EILSEQ, line, "line %llu: bytes that are not UTF-8", (unsigned long long)line);
	return format_fail(err, EILSEQ, line, "line %llu: U+%04X has no cp1251 form", (unsigned long long)line,
			   (unsigned)u);
}
