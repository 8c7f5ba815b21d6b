/* cp1251 <-> UTF-8, the encoding of every name and text in the game files. */
#ifndef EIFS_CP1251_H
#define EIFS_CP1251_H

#include <stddef.h>
#include <glib.h>

/* Appends the UTF-8 form of len cp1251 bytes to out.  The byte cp1251 leaves
 * undefined (0x98) and, when escape is not NULL, NUL and every byte listed in
 * escape are written as "%XX" so that no information is lost.  Returns the
 * number of bytes that were escaped. */
size_t cp1251_to_utf8(const char *in, size_t len, const char *escape, GString *out);

/* Appends the cp1251 form of a UTF-8 string to out.  Returns 0, or -1 when
 * the text is not valid UTF-8 or holds a character cp1251 cannot represent;
 * *bad_at then gets the byte offset of the offending character. */
int utf8_to_cp1251(const char *in, size_t len, GString *out, size_t *bad_at);

/* The character of one cp1251 byte; 0 for the undefined 0x98. */
gunichar cp1251_char(unsigned char c);

/* The cp1251 byte of a character, or -1 when cp1251 has none. */
int cp1251_byte(gunichar u);

#endif
