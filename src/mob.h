/* Readable text views of the map object files (*.mob, FORMATS.md section
 * 6): the node tree, and the level script it carries (SS_TEXT, encrypted
 * with the MSVC rand() generator).  Same contract as the views of
 * models.h: 0 and text appended, or -1 with err filled and out as it was. */
#ifndef EIFS_MOB_H
#define EIFS_MOB_H

#include <stddef.h>
#include <glib.h>

#include "format_error.h"

#define MOB_MAGIC 0x0000A000u /* type of the first node, OBJECTDBFILE */

/* The sequence of top-level nodes, nested by indentation, with type names
 * (FORMATS 6.2) and every payload decoded by its kind; unknown types and
 * payloads that do not fit their kind as hex.  The first script is shown as
 * "(see *.mob.script)": its text is the view below. */
int mob_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err);

/* The first SS_TEXT (decrypted) or SS_TEXT_OLD node of the tree as UTF-8
 * with LF line ends; -1 with ENOENT when there is none. */
int mob_script_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err);

/* 1 when mob_script_to_text has something to show, else 0. */
int mob_has_script(const unsigned char *data, size_t len);

#endif
