/* The game's plain texts (texts.res entries, quest briefings) are cp1251;
 * their view is the same text in UTF-8, and saving the view writes cp1251
 * back.  Byte for byte both ways: line ends stay as they are, and the byte
 * cp1251 leaves undefined (0x98) is shown as U+0098. */
#ifndef EIFS_TEXT_H
#define EIFS_TEXT_H

#include <stddef.h>
#include <glib.h>

#include "format_error.h"

/* Appends the UTF-8 form of a cp1251 text to out.  A NUL byte means the
 * data is not a text: EINVAL, offset = its byte offset, nothing appended. */
int text_to_utf8(const unsigned char *data, size_t len, GString *out, struct format_error *err);

/* Appends the cp1251 form of a UTF-8 text to out (a leading byte order
 * mark is dropped).  Refuses, with offset = the line (1-based) and nothing
 * appended: bytes that are not UTF-8 and characters cp1251 has no byte for
 * (EILSEQ), and NUL (EINVAL). */
int text_from_utf8(const unsigned char *text, size_t len, GByteArray *out, struct format_error *err);

#endif
