/* Readable text view of the animation databases (*.adb in database.res,
 * FORMATS.md section 5): the header, then one block per record with the
 * packed flags decoded to aspadm's names.  Same contract as the views of
 * models.h: 0 and text appended, or -1 with err filled and out as it was. */
#ifndef EIFS_ADB_H
#define EIFS_ADB_H

#include <stddef.h>
#include <glib.h>

#include "format_error.h"

#define ADB_MAGIC 0x00424441u /* "ADB\0" */

/* Records of 88 bytes, and the 84- and 36-byte ones of a few original
 * files; the record size is (len - 44) / count, any other size is shown as
 * a hex dump per record. */
int adb_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err);

#endif
