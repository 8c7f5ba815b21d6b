/* Converted views: the virtual files shown beside convertible files
 * (x.png beside x.mmp, x.ini beside x.reg, x.idb.jsonl beside x.idb...).
 * Which files get which views, under which names, is one table in
 * views.c.  No FUSE here: the mount and the offline commands share it. */
#ifndef EIFS_VIEWS_H
#define EIFS_VIEWS_H

#include <glib.h>

#include "format_error.h"
#include "tree.h"

/* Calls add(ctx, type, name) for every view the file src gets; dir is
 * the directory src is in (views of archive members depend on it). */
void views_for(struct tree *t, struct tree_node *src, const struct tree_node *dir,
	       void (*add)(void *ctx, unsigned type, const char *name), void *ctx);

/* The file a view is made from. */
struct tree_node *view_source(const struct tree_node *view);

/* Sets view->size from the source's header when the view type allows it
 * (textures): returns 0 then, 1 when only a conversion can tell, or a
 * negative errno. */
int view_size_from_header(struct tree *t, struct tree_node *view);

/* Reads the source whole and converts it; *out is the caller's. */
int view_convert(struct tree *t, struct tree_node *view, GByteArray **out, struct format_error *err);

/* Whether saving a view of this type writes its source back (INI, texts). */
int view_is_editable(unsigned type);

/* The source bytes a saved text of an editable view stands for (the REG of
 * an INI), or NULL with err set: EACCES for a read-only view type, EFBIG
 * for a text longer than VIEW_MAX_TEXT_SOURCE, EINVAL for a text that
 * holds nothing (an INI of no section, an empty text) while the source,
 * source_len bytes now, holds more (a shell's `cmd x.ini > x.ini` empties
 * the file before cmd reads it), else the converter's (EINVAL, EILSEQ for
 * a character the source cannot hold; offset = the text's line).  The
 * result is the caller's. */
GByteArray *view_to_source(unsigned type, const unsigned char *text, size_t len, uint64_t source_len,
			   struct format_error *err);

/* Whether name ends as the name of some view does (".ini", ".txt"...):
 * when not, no file's view has it. */
int views_may_name(const char *name);

/* What a view type is, for messages: "PNG", "INI"... */
const char *view_type_label(unsigned type);

/* Bounds on what one conversion holds in memory: the largest source of a
 * text view (text can be ~20 times its source), and the largest PNG. */
#define VIEW_MAX_TEXT_SOURCE (32u << 20)
#define VIEW_MAX_PNG (512u << 20)

#endif
