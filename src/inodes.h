/* The files and folders the kernel knows, by node id.  A node id must
 * outlive the tree nodes it stood for when the tree reloads a part of
 * itself (tree.h): an inode remembers its parent and its name, finds its
 * tree node again after a reload, and follows renames.  Inodes live while
 * the kernel holds them (lookup counts) or a file is open on them.
 * No FUSE calls here. */
#ifndef EIFS_INODES_H
#define EIFS_INODES_H

#include <stdint.h>
#include <glib.h>

#include "tree.h"

struct edit;

/* 100 000 of them after a find: the flags are bytes, packed together
 * (88 bytes in all). */
struct inode {
	struct inode *parent;      /* NULL for the root */
	char *name;                /* in parent, as the tree shows it */
	uint64_t nlookup;          /* the kernel's references */
	uint32_t refs;             /* nlookup > 0, child inodes, open files */
	uint32_t handles;          /* open files of it, of every kind (fs.c) */
	uint64_t generation;       /* of the tree when node was found */
	struct tree_node *node;    /* NULL: gone */
	uint64_t ino;              /* st_ino shown: the node's, kept after it goes */
	struct edit *edit;         /* contents being written (fs_write.c) */
	struct stat *opened_st;    /* its attributes when last opened: what
				    * fstat shows after it is gone */
	uint32_t reads_open;       /* opened for reading and not yet released */
	uint8_t unlinked;          /* no longer reachable by its name */
	uint8_t replaced;          /* unlinked by a rename over it */
	uint8_t scratch;           /* an editor's temporary: in memory only */
	uint8_t pinned;            /* a reference its edit holds (fs_edit_pin) */
	uint8_t pages_stored;      /* its bytes were put in the kernel's cache
				    * (fs.c store_bytes); cleared when they may
				    * be gone or stale */
	uint8_t opening;           /* opens of it under way (fs.c fs_open) */
};

struct inodes;

struct inodes *inodes_new(struct tree *t);
void inodes_free(struct inodes *s);

/* How an inode's edit is freed with it. */
void inodes_set_edit_free(struct inodes *s, void (*fn)(struct edit *e));

struct inode *inodes_root(struct inodes *s);

/* The tree node of an inode now, NULL when it is gone.  The caller holds
 * the tree's read lock (or write lock), and the node is valid while it
 * does. */
struct tree_node *inode_node(struct inodes *s, struct inode *in);

/* Whether in, or a folder it lies in, was removed through the mount (an
 * unlink, rmdir or rename over it), as against gone from the tree for
 * another reason (its archive unreadable on a reload, another program's
 * change). */
int inode_removed(const struct inode *in);

/* The inode of node (a child of parent's node, just looked up), counted
 * as one more kernel reference. */
struct inode *inodes_lookup(struct inodes *s, struct inode *parent, struct tree_node *node);

/* A file no tree node stands for: an editor's temporary, kept in memory
 * (fs_write.c), counted as one kernel reference. */
struct inode *inodes_scratch(struct inodes *s, struct inode *parent, const char *name, uint64_t ino);

/* A name no tree node stands for yet, found again by its name once one
 * does (a folder made inside an archive, fs_made.c); counted as one
 * kernel reference. */
struct inode *inodes_named(struct inodes *s, struct inode *parent, const char *name, uint64_t ino);

/* Counts an open for reading and remembers the attributes it was opened
 * with, until inode_closed; inode_opened_stat gives the last back while
 * some open lasts (returns 0 when none does: a stat of a path whose file
 * went is an error, fs.c gone_err, not a file gone while open). */
void inode_opened(struct inodes *s, struct inode *in, const struct stat *st);
void inode_closed(struct inodes *s, struct inode *in);
int inode_opened_stat(struct inodes *s, struct inode *in, struct stat *st);

/* One more kernel reference to an inode (a lookup's answer). */
void inodes_count_lookup(struct inodes *s, struct inode *in);

/* The inode known for parent/name, with a reference the caller drops
 * (inode_unref); NULL if none.  Not the kernel's for a request's name:
 * another save's reload may have moved the name on, and the kernel then
 * forget the inode found. */
struct inode *inodes_find_ref(struct inodes *s, struct inode *parent, const char *name);

/* The kernel drops n references. */
void inodes_forget(struct inodes *s, struct inode *in, uint64_t n);

/* Open files and other holders beyond the kernel's references. */
void inode_ref(struct inodes *s, struct inode *in);
void inode_unref(struct inodes *s, struct inode *in);

/* The inode at parent/name (if known) is gone from there: unlinked. */
void inodes_unlink(struct inodes *s, struct inode *parent, const char *name);
/* in is gone from its name, if it still stands there. */
void inodes_unlink_inode(struct inodes *s, struct inode *in);

/* in is now called name in new_parent, an editor's temporary there if
 * scratch; what was there is unlinked.  Call with the tree's write lock
 * held, and tell fs_made_reparented before it is released (the made
 * folders' index is by parent). */
void inodes_move(struct inodes *s, struct inode *in, struct inode *new_parent, const char *name,
		 int scratch);

/* Calls fn on every known inode below top (not top itself), parents
 * before children not guaranteed.  fn must not add or remove inodes. */
void inodes_each_below(struct inodes *s, struct inode *top, void (*fn)(struct inode *in, void *ctx),
		       void *ctx);

/* Every known inode with an edit, for the status file. */
void inodes_each_edit(struct inodes *s, void (*fn)(struct inode *in, void *ctx), void *ctx);

/* The path of an inode from the mount's root, for messages; g_free it. */
char *inode_path(struct inodes *s, struct inode *in);

uint64_t inodes_count(struct inodes *s);

#endif
