/* The contents of a file being written through the mount: held in a memory
 * file, changed by writes, and counted in versions against the last one
 * saved, so that a save knows whether there is anything to do and a
 * version whose save failed is not tried (nor reported) again until it
 * changes.  A saved view (INI, game text) keeps its text as written
 * ("sticky") while its source stays as the save left it.  No FUSE, no
 * tree. */
#ifndef EIFS_EDIT_H
#define EIFS_EDIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* What a file's bytes and attributes were: a change of it means what was
 * made from it is stale. */
struct identity {
	uint64_t size, offset;
	int64_t mtime;
	uint32_t kind;
	uint32_t epoch;  /* of the file it lies in (tree_source) */
};

int identity_equal(const struct identity *a, const struct identity *b);

struct edit;

/* An empty edit with this mtime; NULL with errno. */
struct edit *edit_new(int64_t mtime);
void edit_ref(struct edit *e);
void edit_unref(struct edit *e);

/* The memory file, for reads (spliced) and nothing else: of len bytes
 * at off, edit_readable of them (it may be longer than the contents, by
 * zeros a save still maps). */
int edit_fd(const struct edit *e);
size_t edit_readable(struct edit *e, uint64_t off, size_t len);

/* Contents as they are now, not a change (e.g. the entry's bytes when it
 * is opened for writing).  Returns 0 or -errno. */
int edit_load(struct edit *e, const void *data, size_t len, uint64_t off);

/* Changes: each makes a new version, to be saved. */
int edit_write(struct edit *e, const void *buf, size_t len, uint64_t off);
int edit_truncate(struct edit *e, uint64_t size);
void edit_touch(struct edit *e, int64_t mtime);

/* Size and mtime into st (the rest is the caller's). */
void edit_stat(struct edit *e, struct stat *st);

/* Opens writing to it; remove returns how many are left. */
void edit_add_writer(struct edit *e);
int edit_remove_writer(struct edit *e);
/* How many opens write to it; *version (when not NULL) gets a number
 * that every write, truncate and touch moves on. */
int edit_writers(struct edit *e, uint64_t *version);

/* What a saved view's source held: a source whose identity moved on (its
 * stamp trusted at last, its archive saved again) with these bytes still
 * is as saved. */
struct edit_digest {
	unsigned char sha256[32];
};
void edit_digest_of(struct edit_digest *d, const void *data, size_t len);

/* Whether reads come from the edit: open for writing, not yet saved, or a
 * sticky text whose source is as saved (source_now NULL: gone).  Returns
 * EDIT_ASK when only the source's bytes can tell: the caller digests them
 * and calls edit_shows_digest. */
enum { EDIT_ASK = 2 };
int edit_shows(struct edit *e, const struct identity *source_now);

/* edit_shows after EDIT_ASK, with the digest of what the source holds now
 * (NULL: it cannot be read).  The same bytes keep the text for the new
 * identity; other bytes, or none, end it. */
int edit_shows_digest(struct edit *e, const struct identity *source_now, const struct edit_digest *now);

/* Nothing would be lost without it: no writer, saved, not sticky. */
int edit_idle(struct edit *e);

/* Changed since the last save that landed (a failed save's version too). */
int edit_unsaved(struct edit *e);

/* The version whose save failed may be saved again (edit_snapshot_begin
 * refuses it otherwise): where the cause may have gone. */
void edit_retry(struct edit *e);

/* What the file's source held when the edit began, or as its last save
 * left it (d NULL: not known): a save tried again later must not write
 * over a change another program made since. */
void edit_set_base(struct edit *e, const struct edit_digest *d);
int edit_base(struct edit *e, struct edit_digest *d);

/* A consistent look at the contents for a save.  edit_snapshot_begin
 * takes the edit's save lock (one save at a time; writes go on) and
 * returns 0 when the snapshot is to be saved, 1 when it already was, or
 * -errno (data is then empty): this very version failed before, or the
 * contents could not be read (not expected).
 * want says which versions come with their data (else len is 0).  The
 * data is a copy of the version, taken while writes wait (reads go on):
 * always up to 64 MiB, larger ones while twice their size is available
 * besides the other copies held (edit_memory_available).  Else it maps the memory file (mapped is set), and writes
 * during the save may change it: they make a newer version, saved next.  Every
 * call is followed by edit_snapshot_end, after edit_saved or
 * edit_failed. */
enum edit_snapshot_data {
	EDIT_DATA_UNSAVED, /* a version to save */
	EDIT_DATA_ALWAYS,  /* also one saved already */
	EDIT_DATA_NONE,
};
struct edit_snapshot {
	const unsigned char *data; /* len bytes ("" when empty) */
	size_t len;
	int64_t mtime;
	uint64_t version;
	int mapped;                /* data is the live memory file, not a copy */
	void *map;                 /* private */
	void *copy;                /* private */
};
int edit_snapshot_begin(struct edit *e, struct edit_snapshot *s, enum edit_snapshot_data want);
/* Tests: snapshots of contents over max bytes map rather than copy, and
 * available (0: ask the host) stands for edit_memory_available. */
void edit_set_snapshot_copy_max(struct edit *e, size_t max, uint64_t available);
/* The memory this process may still take, in bytes: the host's
 * MemAvailable, or the room left under the memory limit of its cgroup
 * and those above it (v2's memory.max, v1's memory.limit_in_bytes),
 * whichever is less; 0 when neither is known.  root
 * is "/", or a test's tree with proc/ and sys/fs/cgroup/ in it. */
uint64_t edit_memory_available(const char *root);
/* The snapshot's version is saved; sticky_source and sticky_digest, when
 * not NULL, make the text stay shown while the source has this identity
 * (with its mtime) or holds these bytes; NULL ends an earlier save's. */
void edit_saved(struct edit *e, const struct edit_snapshot *s, const struct identity *sticky_source,
		const struct edit_digest *sticky_digest);
/* Its save failed: err (an errno) and msg (taken) are kept for status. */
void edit_failed(struct edit *e, const struct edit_snapshot *s, int err, char *msg);
void edit_snapshot_end(struct edit *e, struct edit_snapshot *s);

/* Whether the last save failed and nothing was written since. */
int edit_failed_as_is(struct edit *e);
/* The errno of the last failed save (0: none) and, when msg is not NULL,
 * its reason (g_free it). */
int edit_error(struct edit *e, char **msg);

#endif
