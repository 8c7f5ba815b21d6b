/* PNG views of textures.  The writer stores the image data uncompressed
 * (deflate "stored" blocks) in a fixed chunk layout, so that the size of a
 * PNG is a formula of width and height alone: a directory listing reports
 * the exact size of a PNG view from the MMP header without converting.
 *
 * Layout, every length fixed by w and h:
 *   signature                               8
 *   IHDR  w, h, depth 8, RGBA, no interlace 25 (12 + 13)
 *   IDAT  the zlib stream cut in pieces of PNG_IDAT_SIZE bytes, the last
 *         one shorter; each chunk 12 + its piece
 *   IEND                                    12
 * zlib stream: header 78 01, the filtered rows (a 0 filter byte, then the
 * row's 4w bytes) in stored blocks of 65535 bytes (the last shorter), each
 * with a 5-byte block header, then the Adler-32.  With R = h * (4w + 1):
 *   Z = 2 + 5 * ceil(R / 65535) + R + 4
 *   size = 8 + 25 + Z + 12 * ceil(Z / PNG_IDAT_SIZE) + 12 */
#ifndef EIFS_PNGIO_H
#define EIFS_PNGIO_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "format_error.h"

enum { PNG_IDAT_SIZE = 1 << 16, PNG_STORED_BLOCK = 65535 };

/* The exact size png_write_rgba produces; 0 for w or h of 0 or above
 * 2^31 - 1 (PNG's limit). */
uint64_t png_stored_size(uint32_t w, uint32_t h);

/* Appends the PNG of w*h RGBA8 pixels (rows top to bottom) to out: exactly
 * png_stored_size(w, h) bytes.  w and h must be 1..2^31-1 and the result
 * must fit a GByteArray (4 GiB); aborts on memory exhaustion as g_malloc. */
void png_write_rgba(const unsigned char *rgba, uint32_t w, uint32_t h, GByteArray *out);

/* Reads any PNG (libpng) into RGBA8, *rgba g_malloc'ed.  Refuses images
 * above 65536 pixels a side or 2^28 pixels. */
int png_read_rgba(const unsigned char *data, size_t len, unsigned char **rgba, uint32_t *w,
		  uint32_t *h, struct format_error *err);

#endif
