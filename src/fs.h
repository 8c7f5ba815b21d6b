/* The FUSE low-level glue: node ids are inodes (inodes.h), which find
 * their tree nodes; fs.c answers reads, fs_write.c writes and saves. */
#ifndef EIFS_FS_H
#define EIFS_FS_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>

#include "edit.h"
#include "inodes.h"
#include "res_commit.h"
#include "save.h"
#include "tree.h"
#include "view_cache.h"

struct worker;

struct fs {
	struct tree *tree;
	struct inodes *inodes;
	struct view_cache *views;
	double timeout;      /* kernel cache time for entries and attributes, s */
	int no_open;         /* the kernel opens files and folders without asking */
	int writable;        /* a read-write mount (saves through it) */
	struct fuse_session *se;
	struct worker *notifier;     /* sends kernel cache invalidations */
	unsigned notify_delay_ms;    /* a test hook: each notice goes out late */
	int notices_ended;           /* fs_end_notices began: none pushed after */
	pthread_mutex_t edits_lock; /* inode->edit pointers and edit counts */
	struct res_commit_options commit; /* how saves commit (a test hook too) */
	int saving;          /* saves under way: they reload what they change */
	/* Saves of one file run one at a time from their write to their
	 * reload, so that each finds the file as the last one left it, and a
	 * file found otherwise was changed by another program: a gate per
	 * file being saved (fs_write.c), by path. */
	pthread_mutex_t gates_lock;
	GHashTable *gates;
	unsigned turn_delay_ms; /* a test hook: each plan waits before its turn */
	/* Folders made (or emptied) inside archives, kept until rmdir (fs_made.c):
	 * inode -> its record, with a reference; and the same folders by the
	 * folder they lie in (inode -> array of them), so that a listing or a
	 * lookup reads only its own folder's */
	pthread_mutex_t made_lock;
	GHashTable *made;
	GHashTable *made_in;
	/* Changes planned into a made folder and not yet saved (place_of in
	 * fs_names.c): a made folder is not renamed meanwhile, or the save
	 * would make the folder again under its old name */
	int made_plans;
	/* Every open the kernel was given, until its release: an unmount
	 * drops the releases still queued, whose saves fs_stop runs */
	pthread_mutex_t opens_lock;
	struct handle *opens;
	/* Acts on changes the kernel tells of (fs_watch.c) */
	pthread_t watcher;
	int watcher_running;
	int watcher_stop;
};

extern const struct fuse_lowlevel_ops fs_ops;

/* Sets up what fs needs beyond the tree: inodes, edits; the notifier
 * thread starts with fs_start (after the daemon forked). */
void fs_init_state(struct fs *fs);
void fs_start(struct fs *fs, struct fuse_session *se);
/* What fs_start gives the view cache to call before a wait (the test
 * hook in cmd_mount.c wraps it). */
void fs_before_view_wait(int converting);
/* Once no thread answers requests any more, before the session is
 * destroyed: drops the notices not sent yet, and no more go after.  A
 * notice under way that still waits after a second (on a request queued
 * in the kernel, which none will answer now) is ended by
 * abort_connection(ctx) (may be NULL; 0 or -errno); failing that, its
 * thread is left behind, so that the open files are saved all the same,
 * and 1 is returned: the session is still the thread's, not to be
 * destroyed.  0 otherwise. */
int fs_end_notices(struct fs *fs, int (*abort_connection)(void *ctx), void *ctx);
/* Waits until the notices queued so far went out, timeout_ms at most:
 * while requests are still answered (one may hold what a notice waits
 * for). */
void fs_drain_notices(struct fs *fs, unsigned timeout_ms);
void fs_stop(struct fs *fs);

/* ---- shared by fs.c, fs_write.c and fs_names.c --------------------------- */

/* What n's bytes (a view's: its source's) and attributes are: a change of
 * it means the kernel's caches of the inode are stale. */
void node_identity(const struct tree_node *n, struct identity *id);

/* An open file. */
struct handle {
	struct inode *inode;
	int fd;                    /* a loose file: its own descriptor, else -1 */
	struct edit *edit;         /* opened for writing: the contents being written */
	struct tree_source *src;   /* an entry's bytes when opened, read after */
	uint64_t offset, size;     /*   it is gone (deleted, renamed over) */
	GBytes *bytes;             /* a view's bytes when opened, the same; */
	struct identity id;        /*   and what they were made from */
	struct stat st;            /* the attributes when opened, the same */
	int status;                /* the status file */
	int wrote;                 /* written through and not saved since: a
				    * close saves (a loose file: read again) */
	int truncated;             /* its open emptied the file: saved when
				    * released, if no close saved it before */
	int retry;                 /* the file's last save failed before this
				    * open: its first close or fsync tries again */
	int read_open;             /* counted by inode_opened, until release */
	int own_bytes;             /* opened in a replacement's place: reads give
				    * the bytes kept above, past the page cache */
	uint64_t size_max;         /* an edit: writes past it fail with EFBIG
				    * (fs_size_max; 0: an entry's) */
	struct handle *prev, *next; /* fs->opens */
};

/* Under ThreadSanitizer, what was done before a reply is ordered before
 * the requests the reply lets the kernel send (fs.c). */
#ifdef __SANITIZE_THREAD__
void fs_kernel_order_release(void);
#define fuse_reply_err(r, ...) (fs_kernel_order_release(), fuse_reply_err(r, __VA_ARGS__))
#define fuse_reply_none(r) (fs_kernel_order_release(), fuse_reply_none(r))
#define fuse_reply_entry(r, ...) (fs_kernel_order_release(), fuse_reply_entry(r, __VA_ARGS__))
#define fuse_reply_create(r, ...) (fs_kernel_order_release(), fuse_reply_create(r, __VA_ARGS__))
#define fuse_reply_attr(r, ...) (fs_kernel_order_release(), fuse_reply_attr(r, __VA_ARGS__))
#define fuse_reply_open(r, ...) (fs_kernel_order_release(), fuse_reply_open(r, __VA_ARGS__))
#define fuse_reply_write(r, ...) (fs_kernel_order_release(), fuse_reply_write(r, __VA_ARGS__))
#define fuse_reply_buf(r, ...) (fs_kernel_order_release(), fuse_reply_buf(r, __VA_ARGS__))
#define fuse_reply_data(r, ...) (fs_kernel_order_release(), fuse_reply_data(r, __VA_ARGS__))
#define fuse_reply_statfs(r, ...) (fs_kernel_order_release(), fuse_reply_statfs(r, __VA_ARGS__))
#endif

struct inode *fs_inode(struct fs *fs, fuse_ino_t ino);
fuse_ino_t fs_ino(struct fs *fs, struct inode *in);

/* Fills e for inode in at node n (read lock held). */
void fs_fill_entry(struct fs *fs, struct inode *in, struct tree_node *n, struct fuse_entry_param *e);
/* How long the kernel may keep n's attributes. */
double fs_attr_timeout(const struct fs *fs, const struct tree_node *n);

/* A rename done by a save: the inode moves to name in to_parent in the
 * same instant the tree shows the new state, so that no one sees the new
 * contents under the old inode. */
struct fs_move {
	struct inode *in;
	struct inode *to_parent;
	const char *name;
	int unlink;       /* in is NULL: name in to_parent is gone (a delete) */
	struct inode *from; /* a rename's source folder (in may be NULL: a
			     * name the kernel never looked up) */
};

/* After a unit changed on disk (a save, another program): reloads it and
 * tells the kernel what went stale.  in is an inode of the unit (its own
 * inode is best: a save may make the others vanish); move, when not NULL,
 * is carried out with it; saved, when not NULL, what a save of ours found
 * and left (another program's change shows as a difference).  Takes the
 * write lock itself. */
void fs_reload(struct fs *fs, struct inode *in, const struct fs_move *move, const struct save_stamps *saved);
/* The move alone, when the save it came with wrote nothing. */
void fs_move(struct fs *fs, const struct fs_move *move);

/* Checks whether the unit of in's node changed on disk (or in's loose
 * file, in place); reloads if so (returns 1 then).  wait: the kernel is
 * told before it returns (not from a lookup: see reload_changed). */
int fs_refresh(struct fs *fs, struct inode *in, int wait);

/* A thread that reads again, and tells the kernel of, what another
 * program changed in the source as soon as the kernel tells of it
 * (fs_watch.c); none where changes are not watched. */
void fs_watch_start(struct fs *fs);
void fs_watch_stop(struct fs *fs);

/* Kernel cache invalidations, sent by a thread of their own (the kernel
 * may hold locks the request in progress needs). */
void notify_inode(struct fs *fs, struct inode *in, int data);
void notify_entry(struct fs *fs, struct inode *parent, const char *name);
/* Waits (bounded) until what was queued so far has been sent. */
void notify_wait(struct fs *fs);

/* Write side (fs_write.c, fs_names.c). */
/* The edit of in with a reference, or NULL. */
struct edit *fs_edit_get(struct fs *fs, struct inode *in);
/* Whether reads and attributes of n come from the edit (edit_shows). */
int fs_edit_shows(struct fs *fs, struct edit *e, const struct tree_node *n);
/* Names of editors' temporaries, kept in memory (fs_names.c). */
int fs_is_scratch_name(const char *name);
/* The attributes of a file held only in memory, e (NULL: empty). */
void fs_scratch_stat(struct fs *fs, struct inode *in, struct edit *e, struct stat *st);
/* Folders made inside archives (fs_made.c).  An archive holds folders
 * only as parts of entry names: a folder made by mkdir inside one is kept
 * in memory until a file saved in it gives it entries, and shown (empty
 * or not) until rmdir or the unmount; so is a folder of the archive
 * emptied through the mount.  Read lock for all but init/free and the
 * two that keep emptied folders. */
void fs_made_init(struct fs *fs);
void fs_made_free(struct fs *fs);
/* Whether in is a made folder no tree node stands for now. */
int fs_made_empty(struct fs *fs, struct inode *in);
/* The nearest of in and its parents that a tree node stands for, NULL if
 * none (gone); rel gets the path of the made folders between ("a/b", or
 * "" when in has a node). */
struct inode *fs_made_anchor(struct fs *fs, struct inode *in, GString *rel);
/* Where name in folder in goes: the node of its anchor, with path the
 * name as seen from there ("a/b/name"), and *anchor its inode (if not
 * NULL).  NULL when in is gone. */
struct tree_node *fs_made_target(struct fs *fs, struct inode *in, const char *name, GString *path,
				 struct inode **anchor);
/* The attributes, or the entry, of made folder in; -ENOENT if it is none. */
int fs_made_stat(struct fs *fs, struct inode *in, struct stat *st);
int fs_made_entry(struct fs *fs, struct inode *in, struct fuse_entry_param *e);
/* The made folders in dir the tree does not show, by listing cookie
 * (even, where the tree's are odd), each with a reference: free with
 * fs_made_children_free.  NULL when no folder was made at all. */
GPtrArray *fs_made_children(struct fs *fs, struct inode *dir);
void fs_made_children_free(struct fs *fs, GPtrArray *v);
uint64_t fs_made_cookie(const struct inode *in);
/* mkdir of name in pin, an archive, a folder in one or a made folder:
 * 0 and e filled, or a negative errno.  Takes the read lock itself. */
int fs_made_mkdir(struct fs *fs, struct inode *pin, const char *name, struct fuse_entry_param *e);
/* rmdir of name in pin where it is a made folder the tree does not show:
 * 1 when it went, 0 when it is no such folder, or -ENOTEMPTY. */
int fs_made_rmdir(struct fs *fs, struct inode *pin, const char *name);
/* The made folder in dir called name in any ASCII case (as the archive
 * will) that the tree does not show, with a reference; NULL if none. */
struct inode *fs_made_find(struct fs *fs, struct inode *dir, const char *name);
/* Whether a made folder or an editor's temporary lies in dir. */
int fs_made_has_child(struct fs *fs, struct inode *dir);
/* After top moved: if it is a made folder or lies above one, the
 * archive's folders it now lies in are kept like those of a folder made
 * there, and the made folders below it are numbered as there.  Takes the
 * read lock itself. */
void fs_made_moved(struct fs *fs, struct inode *top);
/* A folder of an archive whose last entry goes through the mount
 * (unlink, rename, rmdir of a nested archive) stays, empty, as a disk's
 * folder stays: kept like a made one.  Before the reload that shows the
 * change, fs_made_archive_folders gives dir and the archive's folders it
 * lies in, innermost first, each with a reference; after it,
 * fs_made_keep_emptied keeps those the tree no longer shows and frees
 * the list.  Write lock for both. */
GPtrArray *fs_made_archive_folders(struct fs *fs, struct inode *dir);
void fs_made_keep_emptied(struct fs *fs, GPtrArray *folders);
/* in is no made folder any more (replaced by a rename). */
void fs_made_forget(struct fs *fs, struct inode *in);
/* After inodes_move gave in another parent: if it is a made folder, it
 * is filed under that one. */
void fs_made_reparented(struct fs *fs, struct inode *in);
/* Made folder in (empty) becomes newname in npin.  Takes the write lock
 * itself.  0 or a negative errno; 1 when in is no empty made folder now
 * (a file was saved in it): the caller renames the archive's folder. */
int fs_made_rename(struct fs *fs, struct inode *in, struct inode *npin, const char *newname, unsigned flags);

/* The status file: failed saves, one a line. */
GString *fs_status_text(struct fs *fs);
#define FS_STATUS_NAME ".eifs-status"
int fs_is_status(const struct inode *in);
/* Whether name in pin is the status file's (which a game folder's own
 * file of that name would hide) */
int fs_is_status_name(struct fs *fs, struct inode *pin, const char *name);

void fs_open_write(fuse_req_t req, struct fs *fs, struct inode *in, struct tree_node *n,
		   struct fuse_file_info *fi);
void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi);
void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void fs_release_edit(struct fs *fs, struct handle *h);
/* After in's edit changed state: whether it keeps in known (fs_write.c). */
void fs_edit_pin(struct fs *fs, struct inode *in);
/* in's edit, or the one h writes to when in has none (removed while
 * open), with a reference; NULL if neither. */
struct edit *fs_handle_edit(struct fs *fs, struct inode *in, const struct handle *h);
/* An open file of in (holding a reference to it; NULL: the status file),
 * on fs's list of opens until fs_handle_free. */
struct handle *fs_new_handle(struct fs *fs, struct inode *in);
/* Ends an open file: saves what it left (fs_release_edit), closes. */
void fs_handle_free(struct fs *fs, struct handle *h);
/* An open of an editor's temporary (fs_names.c). */
void fs_open_scratch(fuse_req_t req, struct fs *fs, struct inode *in, struct fuse_file_info *fi);
/* After writes to a loose file through h: its folder read again. */
void fs_loose_written(struct fs *fs, struct handle *h);
void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi);
void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi);
void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags);

#endif
