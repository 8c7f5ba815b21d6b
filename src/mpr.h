/* Readable text views of the two kinds of file inside a map archive (.mpr,
 * FORMATS.md section 10): the map header (.mp) and the 32x32 sectors
 * (.sec).  Same contract as the views of models.h: 0 and text appended, or
 * -1 with err filled and out as it was. */
#ifndef EIFS_MPR_H
#define EIFS_MPR_H

#include <stddef.h>
#include <glib.h>

#include "format_error.h"

#define MP_MAGIC 0xCE4AF672u
#define SEC_MAGIC 0xCF4BF774u

/* Header, materials with type names, tile types with names, animated
 * tiles.  Only the map header has a view: the multiplayer characters that
 * share the .mp extension (other magic) are refused with EINVAL "not a map
 * header". */
int mp_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err);

/* Land (and liquid) vertices, normals and tiles, one grid row a line. */
int sec_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err);

#endif
