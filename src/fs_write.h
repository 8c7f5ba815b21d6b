/* What fs_write.c (edits, saves) offers fs_names.c (names).  Functions
 * marked "read lock" are called with the tree's read lock held. */
#ifndef EIFS_FS_WRITE_H
#define EIFS_FS_WRITE_H

#include "fs.h"
#include "writeback.h"

/* in gets e as its edit (taking a reference), replacing any other. */
void fs_edit_install(struct fs *fs, struct inode *in, struct edit *e);
/* in's edit, taken away from it (the caller's reference now), or NULL. */
struct edit *fs_edit_take(struct fs *fs, struct inode *in);
/* Drops in's edit e when nothing needs it any more (edit_idle). */
void fs_edit_drop_idle(struct fs *fs, struct inode *in, struct edit *e);

/* The edit of in, made from n's contents if there is none (or only a
 * stale view text), with one more writer and a reference for the caller;
 * truncate: emptied.  Read lock.  NULL with *err an errno. */
struct edit *fs_start_writing(struct fs *fs, struct inode *in, struct tree_node *n, int truncate, int *err);

/* The largest file n can be saved as: an entry's 4 GiB - 1 (offsets are
 * 32 bits), a view's text VIEW_MAX_TEXT_SOURCE.  Writes and truncates
 * past it fail at once with EFBIG, not at the close, after holding it. */
uint64_t fs_size_max(const struct tree_node *n);

/* Whether a save of ours is writing the file at path, or a file right in
 * the folder at path. */
int fs_saving_at(struct fs *fs, const char *path);

/* Saves e, in's edit, if it changed since its last save.  Returns 0, 1
 * for an editor's temporary (kept in memory, not saved), or a negative
 * errno (the failure logged once and kept for the status file). */
int fs_save(struct fs *fs, struct inode *in, struct edit *e);
/* Readies e's last failed save to be tried again, where its cause may
 * have gone (a full disk, an archive being rewritten) and in's source
 * still holds what e began from (1); 0 when another program changed it
 * since (a save would undo that), -1 for a cause that stays or a source
 * not known.  No lock held. */
int fs_may_retry(struct fs *fs, struct inode *in, struct edit *e);
/* The digest of the bytes n (a view: its source) holds now; 0 or -errno
 * (EFBIG over VIEW_MAX_TEXT_SOURCE).  Read lock. */
int fs_source_digest(struct fs *fs, const struct tree_node *n, struct edit_digest *d);
/* Logs that a save of what (len bytes) reads the live file (a snapshot
 * mapped, edit.h): writes during it may be in it. */
void fs_log_live_save(const char *what, size_t len);

/* The inode of the unit (archive file or folder) of in's node: the one to
 * reload after a save, which may make in itself vanish.  Read lock. */
struct inode *fs_unit_of(struct fs *fs, struct inode *in);

/* What a save of an editable view wrote into its source (taken from the plan
 * before it runs): the view keeps its text as written only while the
 * source holds it. */
struct fs_written {
	int known;
	struct edit_digest digest;
};
void fs_written_of(const struct wb_plan *plan, struct fs_written *w);

/* The identity of view n's source now, into id, if the source holds what
 * w says was written; NULL otherwise (another save came between).  Read
 * lock. */
const struct identity *fs_sticky_source(struct fs *fs, const struct tree_node *n, const struct fs_written *w,
					struct identity *id);

/* One operation's turns at saving its archive file.  A plan that another
 * save overtook keeps the file's gate, so the plan made next, under it,
 * is the one that runs: on a busy archive an operation would otherwise
 * lose its turn again and again, and at last run a stale plan, which the
 * archive's check refuses when the name it saves was renamed over or
 * removed meanwhile.  Zeroed to begin; fs_turns_end on every way out. */
struct gate;
struct fs_turns {
	struct gate *gate; /* held from a -EAGAIN to the next plan's run */
	int tries;
};
void fs_turns_end(struct fs *fs, struct fs_turns *turns);

/* Runs a plan made under the read lock, which it releases, then reloads
 * the unit (with move, when not NULL).  Returns 0 or a negative errno; err
 * has the reason.  -EAGAIN, having run nothing, when another save of the
 * archive ran between the plan and its turn: the caller plans again (a
 * plan names entries by path, and that save may have moved them), with
 * the gate kept in turns.  From FS_PLAN_TRIES plans on (another program
 * changing the archive all the time) it runs as made. */
int fs_run_fresh_plan(struct fs *fs, struct wb_plan *plan, struct inode *unit, const struct fs_move *move,
		      struct res_error *err, struct fs_turns *turns);
enum { FS_PLAN_TRIES = 8 };

/* 0 when the mount may change n, else -EROFS or -EACCES.  Read lock. */
int fs_may_change(struct fs *fs, struct tree_node *n);

#endif
