/* What a change made through the mount does to the files eifs serves.
 * A change is planned while the tree is read-locked (the plan reads nodes
 * and copies all it needs), then run without the lock: the archive file
 * (or the loose file) is written crash-safely, and the caller reloads the
 * tree's unit.  No FUSE here.
 *
 *   an archive entry            -> saved raw into its innermost archive
 *   an INI view of an entry     -> the INI parsed to REG, saved as the .reg
 *   an INI view of a loose .reg -> the .reg file replaced (temp + rename)
 *   a UTF-8 view of a text      -> the text in cp1251, saved as the entry
 *
 * Errors: struct res_error, whose offset is the line of a view's text that
 * does not convert (code EINVAL or EILSEQ). */
#ifndef EIFS_WRITEBACK_H
#define EIFS_WRITEBACK_H

#include <stddef.h>
#include <stdint.h>

#include "res.h"
#include "res_commit.h"
#include "save.h"
#include "tree.h"

struct wb_plan;

/* n gets these contents: an entry, or an editable view (views.h).  data
 * must stay valid until the plan has run. */
struct wb_plan *wb_put(struct tree *t, struct tree_node *n, const unsigned char *data, size_t len,
		       uint32_t mtime, struct res_error *err);

/* name in dir (an archive or a folder inside one) gets these contents:
 * a new entry, or the entry or editable view of that name.  With only_new,
 * a name that is there (or is there by the time the save looks, another
 * program's) is refused with EEXIST. */
struct wb_plan *wb_create(struct tree *t, struct tree_node *dir, const char *name,
			  const unsigned char *data, size_t len, uint32_t mtime, int only_new,
			  struct res_error *err);

/* Entry n is deleted. */
struct wb_plan *wb_delete(struct tree *t, struct tree_node *n, struct res_error *err);

/* n (an entry, or a folder inside an archive with all below it) moves to
 * name in dir, replacing what is there; within one archive (EXDEV
 * otherwise).  Onto an editable view, n's contents are saved through the
 * view and n goes: the way editors save (write a temporary, rename it over
 * the file); n may then be a loose file beside a loose .reg's view. */
struct wb_plan *wb_rename(struct tree *t, struct tree_node *n, struct tree_node *dir, const char *name,
			  struct res_error *err);

/* Runs the plan.  Returns 0, 1 when nothing had to change (nothing was
 * written), or -1 with err.  stamps (may be NULL) as save_archive's; not
 * known for a loose file. */
int wb_run(struct wb_plan *p, const struct res_commit_options *opt, struct res_error *err,
	   struct save_stamps *stamps);

void wb_plan_free(struct wb_plan *p);

/* The plan saves only over bytes of this SHA-256 (what the writer's copy
 * began from) or the very bytes it writes: else it fails with ESTALE,
 * rather than undo a change made since through another name or by
 * another program. */
void wb_plan_expect(struct wb_plan *p, const unsigned char sha256[32]);

/* The file the plan writes (an archive file, or a loose file). */
const char *wb_plan_file(const struct wb_plan *p);

/* The bytes the plan gives the source of an INI view (the REG made of its
 * text), or NULL when it saves no view. */
const unsigned char *wb_plan_view_bytes(const struct wb_plan *p, size_t *len);

/* Replaces the file at path by data, crash-safely: a temporary beside it,
 * flushed, renamed over it, the folder flushed.  Keeps the mode. */
int wb_replace_file(const char *path, const unsigned char *data, size_t len, struct res_error *err);

#endif
