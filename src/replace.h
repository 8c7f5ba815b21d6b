/* A file replaced as a whole, never seen half written: the new contents
 * go to a temporary in the same folder, flushed, then renamed over the
 * name, and the folder flushed.  The temporary has no name until the
 * rename is near (O_TMPFILE where the file system has it), so that a
 * crash mostly leaves nothing behind; what one leaves (.NAME.eifs-XXXXXX)
 * the next replacement of NAME removes.  A symbolic link stays a link: the file it
 * leads to is replaced.  The replaced file's mode and owner are kept (a
 * caller that cannot give the owner, neither root nor the owner, is
 * refused with EPERM), its group where the caller may give it (else the
 * caller's), and its extended attributes (ACLs among them) where the
 * caller may set them.  Hard links to the old file keep the old contents.
 * No FUSE, no globals. */
#ifndef EIFS_REPLACE_H
#define EIFS_REPLACE_H

#include <sys/stat.h>

#include "res.h"

struct replacement {
	int fd;          /* the new contents go here */
	/* private */
	char *path;      /* the file replaced (a link's target) */
	char *tmp;       /* the temporary's name, once it has one */
	int dir_fd;
	int unnamed;     /* opened with O_TMPFILE */
};

/* Starts replacing path (which need not exist yet; then mode is the new
 * file's).  0, or -1 with err filled. */
int replace_begin(struct replacement *r, const char *path, mode_t mode, struct res_error *err);

/* Flushes what was written to r->fd and puts it in place: 0, or -1 with
 * err filled.  The old file is then as it was, unless only the flush of
 * its folder failed: the new file is in place, but a crash may bring the
 * old one back (the message says so).  Ends r either way. */
int replace_commit(struct replacement *r, struct res_error *err);

/* The caller's last check, made after the flush and right before the
 * rename (a flush of a large file may take seconds): 0 to go on, or -1
 * with err filled to leave the old file in place. */
typedef int replace_check_fn(void *ctx, struct res_error *err);

/* replace_commit, with check (when not NULL) made last. */
int replace_commit_checked(struct replacement *r, replace_check_fn *check, void *ctx, struct res_error *err);

/* Drops the new contents; the old file stays. */
void replace_abort(struct replacement *r);

#endif
