/* Changing an archive file by the paths the tree shows inside it: the
 * entries named go into their innermost archive, nested archives are
 * rebuilt around them from the inside out, and the archive file takes the
 * result in one crash-safe commit (res_commit.h).  Shared by `eifs put/rm`
 * and the mount.  No FUSE, no globals. */
#ifndef EIFS_SAVE_H
#define EIFS_SAVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "res.h"
#include "res_commit.h"

struct save_op {
	int op;                    /* RES_PUT, RES_DELETE, RES_RENAME */
	const char *path;          /* UTF-8, '/' between folders, below the archive file */
	const char *to;            /* RES_RENAME: the new path, in the same innermost archive */
	const unsigned char *data; /* RES_PUT: len bytes */
	size_t len;
	uint32_t mtime;            /* RES_PUT: the entry's timestamp */
	int keep_same;             /* RES_PUT: res_change.keep_same */
	int must_exist;            /* RES_PUT: replace only, ENOENT when the entry is gone */
	int must_be_new;           /* RES_PUT: create only, EEXIST when an entry or view of
				    * that name (in any ASCII case) is there */
	const unsigned char *expect_sha256; /* RES_PUT, when not NULL: the entry must hold
				    * bytes of this SHA-256 (what the writer's copy began
				    * from) or already the new ones; ESTALE when another
				    * change came since, or the entry went */
};

/* The archive file as the lock found it and as the save left it: what
 * tells another program's change from this one. */
struct save_stamps {
	int known;
	struct stat before, after;
};

/* Applies ops, in order, to the archive file at file.  Every op must name
 * an entry of the same innermost archive (EXDEV otherwise); a put may
 * create the entry and the backslash folders above it.  The file is
 * locked (flock) and read afresh, so concurrent savers serialise and none
 * works from a stale table; a compaction that replaces the file meanwhile
 * is followed.  opt may be NULL.  Returns 0, 1 when the archive already
 * was so (nothing written), or -1 with err: ENOENT (no such entry),
 * EISDIR, ENOTDIR, EXDEV, EILSEQ (a name without a cp1251 form), EINVAL,
 * EEXIST (must_be_new), ESTALE (expect_sha256),
 * or what reading and writing the file gave.  stamps, when not NULL, gets
 * the file's stamps before and after, taken under the lock. */
int save_archive(const char *file, const struct save_op *ops, size_t n,
		 const struct res_commit_options *opt, struct res_error *err, struct save_stamps *stamps);

#endif
