/* The tree eifs shows: a game folder (or one archive) with every RES
 * archive, nested ones too, as a directory.  Directories are loaded on
 * first use.  When an archive file or a folder changes on disk (a save
 * through the mount, another program), its part of the tree is thrown
 * away and loaded again on next use: node addresses are valid only until
 * then, which the tree's lock and generation tell (tree_reload).  No FUSE
 * here: the offline commands walk the same tree as the mount. */
#ifndef EIFS_TREE_H
#define EIFS_TREE_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <glib.h>

enum tree_kind {
	NODE_FOLDER,  /* a real directory */
	NODE_VDIR,    /* a backslash directory inside an archive */
	NODE_ARCHIVE, /* a RES archive, shown as a directory */
	NODE_PLAIN,   /* a real file passed through */
	NODE_ENTRY,   /* a file inside an archive */
	NODE_VIEW,    /* a converted view of the file beside it (views.h) */
};

/* An archive file held open.  Shared by the nodes of its archive (who do
 * not count) and counted by whoever keeps it beyond a reload. */
struct tree_source {
	int fd;
	char *path;
	int refs;
	int writable;               /* the mount may change it */
	struct stat stamp;          /* when read: a change of it means a reload */
	int racy;                   /* stamp in whole seconds, taken within 2 s
				     * of the change: looked at again after */
	uint32_t epoch;             /* names the contents read: kept while the
				     * file keeps its stamp and across saves of
				     * this tree (which append); new when another
				     * program changed it (bytes read before may
				     * be gone) or its stamp was racy */
	int watched;                /* 1: the kernel tells of changes (watch.h);
				     * -1: it cannot; 0: not asked yet */
	int watch_wd;               /* when watched: the file's, to forget */
	uint64_t fresh;             /* the watch generation in which the file was
				     * last found as stamped: no need to look
				     * again while it lasts, until fresh_until */
	uint64_t fresh_until;       /* CLOCK_MONOTONIC_COARSE, in ms */
};

struct tree_dir {
	uint32_t count;
	int error;                  /* errno when the directory could not be read */
	struct tree_node *child;    /* count nodes, in no particular order */
	uint32_t capacity;          /* room in child while the directory is built */
	uint32_t *index;            /* open addressing by lowered name: child + 1 */
	uint32_t *order;            /* children by tree_dir_cookie, made on first use */
	uint32_t mask;              /* index size - 1 */
	uint32_t seed;              /* of the index's hash: random */
	GStringChunk *names;        /* the children's names */
	struct timespec stamp;      /* FOLDER: the folder's mtime when listed */
	int racy;                   /* FOLDER: listed too soon after a change to be sure */
	/* FOLDER: the children named as archives that were none when listed
	 * (an archive being rewritten by another program, say): looked at
	 * with the folder, which lists again once one changed */
	uint32_t *archive_named;
	uint32_t archive_named_count;
};

struct tree_node {
	struct tree_node *parent;   /* NULL for the root */
	const char *name;           /* UTF-8 */
	uint64_t ino;               /* stable across mounts: a hash of the path */
	uint64_t size;              /* VIEW: TREE_SIZE_UNKNOWN until converted or read from a header */
	uint64_t offset;            /* ENTRY, ARCHIVE: absolute offset in src */
	int64_t mtime;
	struct tree_source *src;    /* ENTRY, ARCHIVE, VDIR: the file holding it */
	struct tree_dir *dir;       /* directories: set once loaded */
	uint32_t mode;              /* type and permission bits */
	uint8_t kind;
	uint8_t depth;              /* archive nesting level */
	uint8_t faults;             /* RES_FAULT_* of an entry */
	union {
		uint8_t view;       /* VIEW: its type in the table of views.c */
		uint8_t via_copy;   /* nested ARCHIVE: it, or an archive it lies in,
				     * shares its bytes with an entry beside it */
	};
	union {
		struct {
			int plain_fd;        /* PLAIN: opened on first read, -1 before */
			uint32_t plain_stamp; /* PLAIN: its change time when listed (tree_plain_changed) */
		};
		struct pending_dir *pending; /* VDIR: what it holds, until first use */
		struct res_table *table;     /* the mounted ARCHIVE: read at mount, until first use */
		uint32_t slot;               /* ENTRY, nested ARCHIVE: its index in its archive's table */
		uint32_t source;             /* VIEW: the source's index in the same directory */
	};
};

struct tree;

enum { TREE_MAX_DEPTH = 16 };
#define TREE_SIZE_UNKNOWN UINT64_MAX

/* Opens SRC (a folder or one archive) and parses the tables of the archives
 * at its top level.  Returns NULL with *err (an errno) after logging why. */
struct tree *tree_open(const char *path, int *err);

/* Tests: the nodes that copies of archives sharing their bytes with other
 * entries may show, all together (default 1 << 18); a directory in such a
 * copy past it fails to list with EIO. */
void tree_limit_copies(struct tree *t, uint64_t max);
void tree_free(struct tree *t);

/* The same for a mount that may change what it serves: it shows the
 * write permission of each archive file it may write (one whose mode has
 * write bits and which this process may open for writing), and of the
 * editable views; tree_open's tree shows everything read-only. */
struct tree *tree_open_rw(const char *path, int *err);
int tree_is_writable(const struct tree *t);

/* The mount point, which the tree never looks at, nor shows: a look at
 * it, or at a path through it, would be a request to the mount itself,
 * which waits for the look.  dev and ino are the folder's that holds it,
 * name its name there (the entry of a folder in SRC that it is), and path
 * its absolute, resolved path (a link in SRC that leads to it or into
 * it). */
struct tree_hidden {
	dev_t dev;
	ino_t ino;
	const char *name;
	const char *path;
};

/* tree_open (writable 0) or tree_open_rw (1), with hidden (may be NULL). */
struct tree *tree_open_hiding(const char *path, int writable, const struct tree_hidden *hidden, int *err);

/* Readers hold the read lock while they use nodes; tree_reload needs the
 * write lock, and bumps the generation: node addresses taken under an
 * older one are gone.  Writers are preferred, so a reader must not take
 * the read lock twice. */
void tree_read_lock(struct tree *t);
void tree_read_unlock(struct tree *t);
void tree_write_lock(struct tree *t);
void tree_write_unlock(struct tree *t);
uint64_t tree_generation(struct tree *t);

/* fn is called on a thread about to wait: for a folder or archive read
 * from the disk on first use, or for the lock (the mount's loop then lets
 * another thread read requests meanwhile). */
void tree_before_wait(struct tree *t, void (*fn)(void));

/* The part of the tree that is reloaded as one: the archive file n lies
 * in (its top-level archive node), or for a folder, a plain file or its
 * views, the folder. */
struct tree_node *tree_unit(struct tree_node *n);

/* What a look at a file or folder on disk found: the same; read in the
 * tick of its last change and now old enough to be trusted, so read again
 * to be sure (nothing seen to differ); or changed.  Ordered: the worse of
 * two looks is the larger. */
enum tree_look { TREE_SAME, TREE_RACY, TREE_CHANGED };

/* Whether a unit differs on disk from what was read (another program, a
 * save): an archive file's identity, size or mtime, a folder's mtime. */
enum tree_look tree_unit_changed(struct tree *t, struct tree_node *unit);

/* Whether a loose file (n PLAIN, or a VIEW of one) was changed in place
 * since its folder was listed, which leaves the folder's mtime alone: one
 * stat(2).  TREE_SAME for any other node. */
enum tree_look tree_plain_changed(struct tree *t, const struct tree_node *n);

/* Throws away what was loaded of unit (under the write lock); it is read
 * again on next use.  An archive file that is gone or no longer an archive
 * reloads the folder it was in.  external: another program changed it,
 * not a save of ours (which only appends): its source's epoch moves on.
 * left (may be NULL): the stamp a save of ours left; a file that has
 * another one now was changed by another program too. */
void tree_reload(struct tree *t, struct tree_node *unit, int external, const struct stat *left);

/* Whether two stamps of a file (identity, size, times) are the same. */
int tree_same_stamp(const struct stat *a, const struct stat *b);

void tree_source_ref(struct tree_source *s);
void tree_source_unref(struct tree_source *s);

/* The path on disk of a FOLDER or PLAIN node, or of an archive file. */
char *tree_real_path(const struct tree *t, const struct tree_node *n);

struct tree_node *tree_root(struct tree *t);
int tree_is_dir(const struct tree_node *n);

/* Loads a directory on first use.  Returns 0 or a negative errno. */
int tree_children(struct tree *t, struct tree_node *n, const struct tree_dir **out);

/* A listing position that means the same after the directory is read
 * again (a reload rebuilds the children in another order): children are
 * listed by cookie, a function of their inode number (views first), and
 * a listing goes on after the last cookie it returned.  Never 0. */
uint64_t tree_dir_cookie(const struct tree_node *child);
/* The cookie of a child numbered ino. */
uint64_t tree_ino_cookie(uint64_t ino);

/* The inode number a child called name of a node numbered parent_ino
 * gets: the number a folder made before its first entry keeps after. */
uint64_t tree_child_ino(uint64_t parent_ino, const char *name);

/* The children of d (of dir) by cookie, as indexes into d->child. */
const uint32_t *tree_dir_order(struct tree *t, const struct tree_dir *d);

/* ASCII case-insensitive lookup; the exact case wins among variants. */
struct tree_node *tree_lookup(struct tree *t, struct tree_node *dir, const char *name, int *err);

/* Resolves a '/'-separated path below dir ("" is dir itself). */
struct tree_node *tree_resolve(struct tree *t, struct tree_node *dir, const char *path, int *err);

/* Where a file's bytes are: *fd and the absolute *pos of byte off, with
 * *len clamped to the file.  Returns 0 or a negative errno. */
int tree_data(struct tree *t, struct tree_node *n, uint64_t off, size_t *len, int *fd, uint64_t *pos);

/* A file's size now: a loose file's may have changed since it was listed. */
uint64_t tree_file_size(struct tree *t, struct tree_node *n);

/* A loose file's size, times and mode as they are on disk now, over what
 * tree_stat put in st.  Returns 0 or a negative errno. */
int tree_plain_stat(struct tree *t, const struct tree_node *n, struct stat *st);

/* The index in its archive's table of the entry n shows (an entry or an
 * archive nested in one): 0 and *slot, or -1 for anything else. */
int tree_entry_slot(const struct tree_node *n, uint32_t *slot);

/* pread() of a file node; returns bytes read or a negative errno. */
ssize_t tree_read(struct tree *t, struct tree_node *n, void *buf, size_t len, uint64_t off);

void tree_stat(const struct tree *t, const struct tree_node *n, struct stat *st);

/* Path from the root for messages ("texts.res/UNIT x"); g_free it. */
char *tree_path(const struct tree_node *n);

/* Counts of what was loaded so far, for statfs. */
uint64_t tree_node_count(struct tree *t);

/* How many archive files' stamps (and epochs) the tree remembers: bounded,
 * however often the archives are replaced. */
unsigned tree_stamps_kept(struct tree *t);

#endif
