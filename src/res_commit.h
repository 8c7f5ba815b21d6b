/* Saving changes to RES archives: in place and crash-safe for an archive
 * file on disk, in memory for nested archives (whose new bytes become one
 * change of their parent), and compaction of the space old versions leave.
 * No FUSE, no globals. */
#ifndef EIFS_RES_COMMIT_H
#define EIFS_RES_COMMIT_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "res.h"
#include "res_write.h"

enum { RES_PUT = 1, RES_DELETE = 2, RES_RENAME = 3 };

/* One change.  Its name matches an entry ASCII case-insensitively, as the
 * game compares (an entry spelt exactly so is preferred among case
 * variants): RES_PUT replaces that entry, stored under this spelling, or
 * adds one; RES_DELETE removes it; RES_RENAME gives it the name `to`,
 * keeping its data where it is, and replaces an entry already so named.
 * Changes apply in order. */
struct res_change {
	const char *name;          /* stored cp1251 name, '\' between directories */
	size_t name_len;
	int op;                    /* RES_PUT, RES_DELETE, RES_RENAME */
	const unsigned char *data; /* RES_PUT: the new contents, len bytes */
	size_t len;
	uint32_t mtime;            /* RES_PUT: the entry's timestamp */
	const char *to;            /* RES_RENAME: the new stored name */
	size_t to_len;
	int keep_same;             /* RES_PUT: bytes equal to the entry's leave
				    * it as it is, timestamp included (an INI
				    * save that gives the same REG) */
};

enum { RES_FAULT_EIO = 2 };

/* The steps of res_commit, in order. */
enum {
	RES_STEP_DATA = 1,    /* append the new data */
	RES_STEP_TABLE,       /* append the new table and name block */
	RES_STEP_SYNC_TABLE,  /* flush them to the disk */
	RES_STEP_HEADER,      /* overwrite the header: the new state is live */
	RES_STEP_SYNC_HEADER, /* flush it */
	RES_STEP_SYNC_UNCHANGED, /* a commit with nothing to change: the flush
				  * it does all the same (not a crash point) */
};

struct res_commit_options {
	int align;  /* new data and the table start on 16-byte boundaries */
	/* For tests: called before each step; nonzero stops the commit right
	 * there, leaving the file as a crash at that moment would, except
	 * RES_FAULT_EIO before a flush: the flush fails as a disk's would. */
	int (*fault)(void *ctx, int step);
	void *fault_ctx;
	/* The caller holds flock(LOCK_EX) on fd and releases it: what it reads
	 * of the file after the commit is then still under the lock. */
	int caller_locks;
	/* The name fd was opened by, or NULL: the commit checks that it still
	 * names fd's file before the header switch (a program that takes no
	 * lock may rename another file over it: the commit then went into a
	 * file no one reads any more), and fails with ESTALE if not. */
	const char *path;
};

/* The archive in w with the changes applied, built whole into out as the
 * original packer lays it out (opt as for res_pack_write; NULL: aligned).
 * Entries that share data keep sharing it.  Returns 0, 1 when the changes
 * leave every entry as it was (out is built all the same), or -1 with err
 * filled (code ENOENT: a deleted name is not there). */
int res_rebuild(const struct res_window *w, const struct res_change *changes, size_t n,
		const struct res_pack_options *opt, GByteArray *out, struct res_error *err);

/* Applies the changes to the archive file fd (open read-write, the whole
 * file one archive) in place: new data, table and name block are appended,
 * then the header is switched over; at every moment the file is the old or
 * the new archive (how and why: res_commit.c).  Untouched entries keep
 * their data, offsets and timestamps.  Holds flock(LOCK_EX) on fd while it
 * works and releases it on return (unless opt->caller_locks).  opt may be
 * NULL (aligned, no hook).
 * A failed flush after the header switch puts the old header back, so
 * that what the file shows is what the error says: not committed.
 * Returns 0, 1 when nothing had to change (nothing was written, the file
 * flushed all the same: an earlier commit's flush may have failed), or -1
 * with err filled: ESTALE when the file was replaced (compacted) while we
 * waited for the lock (open it again and retry), EFBIG past 4 GiB (compact
 * first), ECANCELED when the fault hook stopped it. */
int res_commit(int fd, const struct res_change *changes, size_t n,
	       const struct res_commit_options *opt, struct res_error *err);

/* Rewrites the archive at path without the space old versions left:
 * built in a temporary file next to it, flushed, renamed over it, and the
 * folder flushed.  Keeps the file mode (and the owner when allowed); hard
 * links to the old file keep the old file.  Returns 0 or -1 with err. */
int res_compact(const char *path, struct res_error *err);

#endif
