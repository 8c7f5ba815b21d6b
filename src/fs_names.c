/* The FUSE glue for names: create, mkdir, unlink, rmdir, rename, in
 * archives (saved into them at once, see writeback.h) and in the folders
 * of the game (passed through); editors' temporaries kept in memory; the
 * status file of failed saves. */
#define _GNU_SOURCE
#include "fs_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "views.h"

/* ---- names ----------------------------------------------------------------- */

/* Editors' temporaries (swap files, backups, the files sed -i and gedit
 * write before renaming them over the real one) made inside an archive
 * live in memory only: the archive gets the file they are renamed to, not
 * the junk.  Patterns: .NAME.swp (any .sw?, and .swpx), vim's 4913, NAME~,
 * .goutputstream-*, sed's sedXXXXXX, emacs's .#NAME and #NAME#,
 * .NAME.kate-swp. */
int fs_is_scratch_name(const char *name)
{
	size_t len = strlen(name);

	const char *ext = strrchr(name, '.');

	/* .NAME.swp, .swo ..., and the .swpx vim makes to probe the file system */
	if (name[0] == '.' && ext && ext != name && ext[1] == 's' && ext[2] == 'w' && ext[3]
	    && (!ext[4] || (ext[4] == 'x' && !ext[5])))
		return 1;
	if (strcmp(name, "4913") == 0 || (len > 1 && name[len - 1] == '~'))
		return 1;
	if (g_str_has_prefix(name, ".goutputstream-") || g_str_has_prefix(name, ".#")
	    || (len > 2 && name[0] == '#' && name[len - 1] == '#') || g_str_has_suffix(name, ".kate-swp"))
		return 1;
	if (len == 9 && g_str_has_prefix(name, "sed")) {
		for (size_t i = 3; i < len; i++)
			if (!g_ascii_isalnum(name[i]))
				return 0;
		return 1;
	}
	return 0;
}

/* A new temporary in archive folder pin: an inode and an empty edit. */
static void create_scratch(fuse_req_t req, struct fs *fs, struct inode *pin, const char *name,
			   struct fuse_file_info *fi)
{
	struct edit *e = edit_new(time(NULL));
	struct fuse_entry_param ep;
	struct inode *in;
	struct handle *h;

	if (!e) {
		fuse_reply_err(req, errno);
		return;
	}
	in = inodes_scratch(fs->inodes, pin, name, g_str_hash(name) ^ (uint64_t)(uintptr_t)pin);
	edit_add_writer(e);
	fs_edit_install(fs, in, e);
	h = fs_new_handle(fs, in);
	h->edit = e; /* the handle's reference */
	memset(&ep, 0, sizeof ep);
	ep.ino = fs_ino(fs, in);
	ep.generation = 1;
	ep.attr_timeout = ep.entry_timeout = fs->timeout;
	fs_scratch_stat(fs, in, e, &ep.attr);
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fuse_reply_create(req, &ep, fi) == -ENOENT)
		fs_handle_free(fs, h); /* interrupted: no release comes */
}

void fs_open_scratch(fuse_req_t req, struct fs *fs, struct inode *in, struct fuse_file_info *fi)
{
	struct edit *e = fs_edit_get(fs, in);
	struct handle *h;

	if (!e) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	h = fs_new_handle(fs, in);
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		edit_add_writer(e); /* a temporary's edit is never dropped as idle */
		if (fi->flags & O_TRUNC)
			edit_truncate(e, 0);
		h->edit = e; /* the handle's reference */
	} else {
		edit_unref(e); /* reads find it on the inode */
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) == -ENOENT)
		fs_handle_free(fs, h); /* interrupted: no release comes */
}

void fs_scratch_stat(struct fs *fs, struct inode *in, struct edit *e, struct stat *st)
{
	struct stat root;

	tree_stat(fs->tree, tree_root(fs->tree), &root);
	memset(st, 0, sizeof *st);
	st->st_ino = in->ino;
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	st->st_uid = root.st_uid;
	st->st_gid = root.st_gid;
	st->st_blksize = 4096;
	if (e)
		edit_stat(e, st);
}

/* Replies with the entry of name in the folder pin, just made. */
static void reply_new(fuse_req_t req, struct fs *fs, struct inode *pin, const char *name,
		      struct fuse_file_info *fi, int fd)
{
	struct tree_node *pn, *n;
	struct fuse_entry_param e;
	struct inode *in;
	struct handle *h;
	int err = 0;

	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	n = pn ? tree_lookup(fs->tree, pn, name, &err) : NULL;
	if (!n) {
		tree_read_unlock(fs->tree);
		if (fd >= 0)
			close(fd);
		fuse_reply_err(req, EIO);
		return;
	}
	in = inodes_lookup(fs->inodes, pin, n);
	if (!fi) {
		fs_fill_entry(fs, in, n, &e);
		tree_read_unlock(fs->tree);
		fuse_reply_entry(req, &e);
		return;
	}
	h = fs_new_handle(fs, in);
	h->fd = fd;
	if (fd < 0) {
		h->edit = fs_start_writing(fs, in, n, 1, &err);
		h->truncated = 1;
		h->size_max = fs_size_max(n);
		if (!h->edit) { /* no memory for its text: every write would fail */
			tree_read_unlock(fs->tree);
			fs_handle_free(fs, h);
			inodes_forget(fs->inodes, in, 1); /* no entry goes to the kernel */
			fuse_reply_err(req, err > 0 ? err : EIO);
			return;
		}
	}
	fs_fill_entry(fs, in, n, &e);
	tree_read_unlock(fs->tree);
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fuse_reply_create(req, &e, fi) == -ENOENT)
		fs_handle_free(fs, h); /* the create was interrupted: no release comes */
}

static int is_folder(const struct tree_node *n)
{
	return n->kind == NODE_FOLDER;
}

/* Where name in folder pin goes: pin's node, or for a folder made in an
 * archive (fs_made.c) the node of the archive's folder it lies in; path
 * gets the name as seen from that node, and *anchor that node's inode (the
 * one to reload).  NULL when pin is gone.  Read lock. */
static struct tree_node *place_of(struct fs *fs, struct inode *pin, const char *name, GString *path,
				  struct inode **anchor, int *into_made)
{
	struct tree_node *pn = inode_node(fs->inodes, pin);

	*into_made = 0;
	if (pn || !fs_made_empty(fs, pin)) {
		g_string_assign(path, name);
		*anchor = pin;
		return pn;
	}
	pn = fs_made_target(fs, pin, name, path, anchor);
	if (pn) {
		/* counted under the read lock, which fs_made_rename's check
		 * excludes: until place_done, after the save's reload */
		__atomic_add_fetch(&fs->made_plans, 1, __ATOMIC_ACQ_REL);
		*into_made = 1;
	}
	return pn;
}

static void place_done(struct fs *fs, int into_made)
{
	if (into_made)
		__atomic_sub_fetch(&fs->made_plans, 1, __ATOMIC_ACQ_REL);
}

/* A name an entry can take: a backslash would make folders of it. */
static int entry_name_ok(const char *name)
{
	return !strchr(name, '\\');
}

/* Whether an empty folder made in pin has name, in any ASCII case. */
static int made_named(struct fs *fs, struct inode *pin, const char *name)
{
	struct inode *in = fs_made_find(fs, pin, name);

	if (in)
		inode_unref(fs->inodes, in);
	return in != NULL;
}

void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent), *unit = NULL, *anchor;
	struct res_error err = { 0 };
	struct wb_plan *plan;
	struct tree_node *pn;
	GString *path = g_string_new(NULL);
	struct fs_turns turns = { 0 };
	int rc, fd = -1, into_made, lookup_err = 0;

	if (fs_is_status_name(fs, pin, name)) {
		g_string_free(path, TRUE);
		fuse_reply_err(req, EEXIST);
		return;
	}
again:
	tree_read_lock(fs->tree);
	pn = place_of(fs, pin, name, path, &anchor, &into_made);
	if (!pn) {
		rc = -ENOENT;
	} else if (tree_lookup(fs->tree, pn, path->str, &lookup_err)) {
		/* The kernel creates where it holds the name for missing (a
		 * look a moment ago; a name in another case; a view whose
		 * source came since): what is there is opened, never made
		 * anew.  ESTALE has the kernel look the name up again, and
		 * open what it finds with the program's flags. */
		rc = fi->flags & O_EXCL ? -EEXIST : -ESTALE;
	} else if (!fs->writable) {
		rc = -EROFS;
	} else if (is_folder(pn)) {
		char *dir = tree_real_path(fs->tree, pn), *file = g_build_filename(dir, name, NULL);

		fd = open(file, fi->flags | O_CREAT | O_CLOEXEC, mode);
		rc = fd < 0 ? -errno : 0;
		g_free(file);
		g_free(dir);
	} else if (!entry_name_ok(name)) {
		rc = -EINVAL;
	} else if (!(pn->mode & 0222)) {
		rc = -EACCES;
	} else if (made_named(fs, pin, name)) {
		rc = -EISDIR; /* in another case (a lookup the kernel trusted, made before it) */
	} else if (fs_is_scratch_name(name)) {
		tree_read_unlock(fs->tree);
		fs_turns_end(fs, &turns);
		g_string_free(path, TRUE);
		place_done(fs, into_made);
		create_scratch(req, fs, pin, name, fi);
		return;
	} else if (!(plan = wb_create(fs->tree, pn, path->str, (const unsigned char *)"", 0, (uint32_t)time(NULL),
				      1, &err))
		   || !(unit = fs_unit_of(fs, anchor))) {
		rc = -(err.code ? err.code : EIO);
		wb_plan_free(plan);
	} else {
		/* unlocks; planned anew where a rename of the folder went first */
		rc = fs_run_fresh_plan(fs, plan, unit, NULL, &err, &turns);
		if (rc == -EAGAIN) {
			place_done(fs, into_made);
			memset(&err, 0, sizeof err);
			unit = NULL;
			goto again;
		}
		if (rc == -EEXIST) {
			/* another program put the name in the archive since the
			 * tree was read: read it again, for the kernel's look
			 * (also while a save of this archive runs, which
			 * fs_refresh leaves alone; no wait for the notices: the
			 * kernel holds the folder) */
			fs_reload(fs, anchor, NULL, NULL);
			rc = fi->flags & O_EXCL ? -EEXIST : -ESTALE;
		} else if (rc < 0) {
			log_msg(LOG_ERR, "%s: cannot create: %s", name, err.msg);
		}
		tree_read_lock(fs->tree);
	}
	tree_read_unlock(fs->tree);
	fs_turns_end(fs, &turns);
	g_string_free(path, TRUE);
	place_done(fs, into_made);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (fd >= 0)
		fs_reload(fs, pin, NULL, NULL);
	reply_new(req, fs, pin, name, fi, fd);
}

void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent);
	struct tree_node *pn;
	int rc;

	if (fs_is_status_name(fs, pin, name)) {
		fuse_reply_err(req, EEXIST);
		return;
	}
	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	if (!pn && !fs_made_empty(fs, pin))
		rc = -ENOENT;
	else if (!fs->writable)
		rc = -EROFS;
	else if (pn && is_folder(pn)) {
		char *dir = tree_real_path(fs->tree, pn), *path = g_build_filename(dir, name, NULL);

		rc = mkdir(path, mode) < 0 ? -errno : 0;
		g_free(path);
		g_free(dir);
	} else {
		struct fuse_entry_param e;

		/* in an archive: kept in memory until a file is saved in it */
		tree_read_unlock(fs->tree);
		rc = fs_made_mkdir(fs, pin, name, &e);
		if (rc < 0)
			fuse_reply_err(req, -rc);
		else
			fuse_reply_entry(req, &e);
		return;
	}
	tree_read_unlock(fs->tree);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_reload(fs, pin, NULL, NULL);
	reply_new(req, fs, pin, name, NULL, -1);
}

/* Nothing but views in it (an archive shown as a folder counts too). */
static int is_empty(struct fs *fs, struct tree_node *n)
{
	const struct tree_dir *d;

	if (tree_children(fs->tree, n, &d) < 0)
		return 0;
	for (uint32_t i = 0; i < d->count; i++)
		if (d->child[i].kind != NODE_VIEW)
			return 0;
	return 1;
}

/* Whether folders made in the mount (fs_made.c) lie in n, of folder pin. */
static int made_in(struct fs *fs, struct inode *pin, struct tree_node *n)
{
	struct inode *in = inodes_find_ref(fs->inodes, pin, n->name);
	int has = in && fs_made_has_child(fs, in);

	if (in)
		inode_unref(fs->inodes, in);
	return has;
}

/* Whether name in folder pin is a temporary kept in memory (fs_create). */
static int is_scratch(struct fs *fs, struct inode *pin, const char *name)
{
	struct inode *in = inodes_find_ref(fs->inodes, pin, name);
	int scratch = in && in->scratch;

	if (in)
		inode_unref(fs->inodes, in);
	return scratch;
}

static void revert_view(struct fs *fs, struct inode *pin, const char *name)
{
	struct inode *in = inodes_find_ref(fs->inodes, pin, name);

	/* the name now stands for the view made from the source; the old
	 * inode keeps its edit for whoever still has it open (its saves
	 * find no file and write nothing) */
	if (in) {
		inodes_unlink(fs->inodes, pin, name);
		fs_edit_pin(fs, in);
		inode_unref(fs->inodes, in);
	}
}

/* Removes entry or loose file n of folder pin; unlocks.  -EAGAIN when
 * another save of the archive went first (the rename of a folder the
 * entry lies in): the caller looks n up again and tries again, turns
 * holding the gate; any other return ends the turns. */
static int remove_node(struct fs *fs, struct inode *pin, struct tree_node *pn, struct tree_node *n,
		       int is_dir, struct fs_turns *turns)
{
	struct res_error err = { 0 };
	struct inode *unit = fs_unit_of(fs, pin);
	char *name = g_strdup(n->name);
	struct wb_plan *plan;
	int rc;

	if (is_folder(pn)) {
		char *path = tree_real_path(fs->tree, n);
		struct fs_move gone = { NULL, pin, name, 1, NULL };

		rc = (is_dir ? rmdir(path) : unlink(path)) < 0 ? -errno : 0;
		g_free(path);
		tree_read_unlock(fs->tree);
		fs_turns_end(fs, turns);
		if (rc == 0)
			fs_reload(fs, pin, &gone, NULL);
		g_free(name);
		return rc;
	}
	if (!(plan = wb_delete(fs->tree, n, &err)) || !unit) {
		tree_read_unlock(fs->tree);
		wb_plan_free(plan);
		rc = -(err.code ? err.code : EIO);
	} else {
		/* the name goes in the instant the reload shows it gone, before
		 * the notices: none of them may stand for a file made anew */
		struct fs_move gone = { NULL, pin, name, 1, NULL };

		rc = fs_run_fresh_plan(fs, plan, unit, &gone, &err, turns);
		if (rc < 0 && rc != -EAGAIN)
			log_msg(LOG_ERR, "%s: cannot delete: %s", name, err.msg);
		if (rc == -EAGAIN && log_debugging())
			log_msg(LOG_DEBUG, "%s: another save of the archive went first; planned again", name);
	}
	if (rc != -EAGAIN)
		fs_turns_end(fs, turns);
	g_free(name);
	return rc;
}

void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent);
	struct tree_node *pn, *n = NULL;
	struct fs_turns turns = { 0 };
	int rc = 0, err = 0;

	if (fs_is_status_name(fs, pin, name)) {
		fuse_reply_err(req, EPERM);
		return;
	}
again:
	rc = 0;
	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	n = pn ? tree_lookup(fs->tree, pn, name, &err) : NULL;
	if (!n && is_scratch(fs, pin, name))
		revert_view(fs, pin, name); /* a temporary: forgotten */
	else if (!n)
		rc = -(pn ? err : ENOENT);
	else if (!fs->writable)
		rc = -EROFS;
	else if (n->kind == NODE_VIEW) {
		/* it stays while its source does: an edit of it is undone, and
		 * rm -r, which meets views first, goes on to their sources */
		if (view_is_editable(n->view))
			revert_view(fs, pin, n->name);
	} else if (n->kind != NODE_PLAIN && (rc = fs_may_change(fs, n)) < 0) {
		;
	} else {
		rc = remove_node(fs, pin, pn, n, 0, &turns); /* unlocks */
		if (rc == -EAGAIN)
			goto again;
		fuse_reply_err(req, -rc);
		return;
	}
	tree_read_unlock(fs->tree);
	fs_turns_end(fs, &turns);
	fuse_reply_err(req, -rc);
}

/* Looks for another program's change to folder pin and to what name in it
 * is: an archive file rewritten in place changes nothing its folder's
 * listing shows. */
static void refresh_folder_and_child(struct fs *fs, struct inode *pin, const char *name)
{
	struct inode *in;

	fs_refresh(fs, pin, 0);
	in = inodes_find_ref(fs->inodes, pin, name);
	if (in) {
		fs_refresh(fs, in, 0);
		inode_unref(fs->inodes, in);
	}
}

void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent);
	struct tree_node *pn, *n;
	struct fs_turns turns = { 0 };
	int rc = 0, err = 0;

	/* another program may have emptied it since: not "not empty" then.
	 * No wait for the notices: the kernel holds the folder's lock */
	if (fs->writable)
		refresh_folder_and_child(fs, pin, name);
again:
	rc = 0;
	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	n = pn ? tree_lookup(fs->tree, pn, name, &err) : NULL;
	if (!n && fs->writable && (rc = fs_made_rmdir(fs, pin, name)) != 0)
		rc = rc < 0 ? rc : 0;
	else if (!pn)
		rc = -ENOENT;
	else if (!n)
		rc = 0; /* another program took its last entry: empty, as a disk's folder would be, and now gone */
	else if (!fs->writable)
		rc = -EROFS;
	else if (!tree_is_dir(n))
		rc = -ENOTDIR;
	else if (n->kind == NODE_FOLDER || (n->kind == NODE_ARCHIVE && is_empty(fs, n) && !made_in(fs, pin, n))) {
		/* an empty archive goes as a whole; a folder as the system says */
		rc = remove_node(fs, pin, pn, n, n->kind == NODE_FOLDER, &turns); /* unlocks */
		if (rc == -EAGAIN)
			goto again;
		fuse_reply_err(req, -rc);
		return;
	} else {
		rc = -ENOTEMPTY;
	}
	tree_read_unlock(fs->tree);
	fs_turns_end(fs, &turns);
	fuse_reply_err(req, -rc);
}

/* A loose file or folder (or an archive file) renamed in the folders. */
static int rename_real(struct fs *fs, struct tree_node *n, struct tree_node *npn, const char *newname)
{
	char *from = tree_real_path(fs->tree, n), *dir = tree_real_path(fs->tree, npn);
	char *to = g_build_filename(dir, newname, NULL);
	int rc = rename(from, to) < 0 ? -errno : 0;

	g_free(from);
	g_free(dir);
	g_free(to);
	return rc;
}

static int in_folder(const struct tree_node *n)
{
	return n->kind == NODE_PLAIN || n->kind == NODE_FOLDER
	       || (n->kind == NODE_ARCHIVE && (!n->parent || n->parent->kind == NODE_FOLDER));
}

/* Saves what is being written to in before it moves. */
static int save_pending(struct fs *fs, struct inode *in)
{
	struct edit *e = in ? fs_edit_get(fs, in) : NULL;
	int rc = e ? fs_save(fs, in, e) : 0;

	rc = rc < 0 ? rc : 0; /* 1: a temporary, not saved */

	edit_unref(e);
	return rc;
}

/* The text of an entry just saved over a view stays what the view shows,
 * while the view's source holds what the save wrote. */
static void keep_text(struct fs *fs, struct inode *in, GBytes *text, const struct fs_written *written)
{
	struct edit_snapshot snap;
	struct identity id;
	const struct identity *src = NULL;
	struct tree_node *n;
	struct edit *e;
	gsize len;
	const void *data = g_bytes_get_data(text, &len);

	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	if (n)
		src = fs_sticky_source(fs, n, written, &id);
	e = src ? edit_new(n->mtime) : NULL;
	tree_read_unlock(fs->tree);
	if (!e)
		return;
	if (edit_load(e, data, len, 0) == 0) {
		if (edit_snapshot_begin(e, &snap, EDIT_DATA_NONE) == 1) {
			/* as saved: only the sticky text is new */
			edit_saved(e, &snap, src, &written->digest);
			fs_edit_install(fs, in, e);
		}
		edit_snapshot_end(e, &snap);
	}
	edit_unref(e);
}

static GBytes *read_text(struct fs *fs, struct tree_node *n)
{
	uint64_t size = tree_file_size(fs->tree, n);
	GByteArray *b;
	ssize_t got;

	if (size > VIEW_MAX_TEXT_SOURCE)
		return NULL;
	b = g_byte_array_sized_new((guint)size);
	g_byte_array_set_size(b, (guint)size);
	got = tree_read(fs->tree, n, b->data, b->len, 0);
	g_byte_array_set_size(b, got > 0 ? (guint)got : 0);
	return g_byte_array_free_to_bytes(b);
}

/* A temporary renamed to a real name: its contents are saved under it. */
static int rename_scratch(struct fs *fs, struct inode *in, struct inode *npin, const char *newname)
{
	struct edit *e = fs_edit_get(fs, in);
	struct fs_turns turns = { 0 };
	int scratch = fs_is_scratch_name(newname), rc = 0, into_made = 0;
	struct res_error err = { 0 };
	struct edit_snapshot s;
	struct identity id;
	const struct identity *src;
	struct fs_written written = { 0 };
	struct tree_node *npn, *n;
	struct inode *anchor;
	GString *path;

	if (!e)
		return -ENOENT;
	path = g_string_new(NULL);
	/* a temporary's contents go under the real name, saved or not */
	if (edit_snapshot_begin(e, &s, scratch ? EDIT_DATA_NONE : EDIT_DATA_ALWAYS) < 0 && !scratch)
		rc = -EIO;
	if (s.mapped)
		fs_log_live_save(newname, s.len);
plan_again:
	tree_read_lock(fs->tree);
	npn = rc == 0 ? place_of(fs, npin, newname, path, &anchor, &into_made) : NULL;
	if (rc == 0 && (!npn || is_folder(npn)))
		rc = npn ? -EXDEV : -ENOENT;
	if (rc == 0 && !scratch) {
		struct wb_plan *plan = wb_create(fs->tree, npn, path->str, s.data, s.len, (uint32_t)s.mtime, 0, &err);
		struct inode *unit = plan ? fs_unit_of(fs, anchor) : NULL;
		struct fs_move move = { in, npin, newname, 0, NULL };

		if (plan && unit) {
			fs_written_of(plan, &written);
			/* unlocks; planned anew where another save went first
			 * (the rename of the folder it goes to) */
			rc = fs_run_fresh_plan(fs, plan, unit, &move, &err, &turns);
		} else {
			tree_read_unlock(fs->tree);
			wb_plan_free(plan);
			if (!err.code)
				snprintf(err.msg, sizeof err.msg, "%s", strerror(err.code = EIO));
			rc = -err.code;
		}
		if (rc == -EAGAIN) {
			place_done(fs, into_made);
			memset(&err, 0, sizeof err);
			rc = 0;
			goto plan_again;
		}
		fs_turns_end(fs, &turns); /* a plan failed after a -EAGAIN */
		if (rc < 0)
			log_msg(LOG_ERR, "%s: not saved: %s", newname, err.msg);
		tree_read_lock(fs->tree);
		n = rc == 0 ? inode_node(fs->inodes, in) : NULL;
		src = n ? fs_sticky_source(fs, n, &written, &id) : NULL; /* the text shows as written */
		if (rc == 0)
			edit_saved(e, &s, src, src ? &written.digest : NULL);
	} else if (rc == 0) {
		struct inode *there;

		tree_read_unlock(fs->tree);
		tree_write_lock(fs->tree); /* one temporary renamed to another */
		there = inodes_find_ref(fs->inodes, npin, newname);
		inodes_move(fs->inodes, in, npin, newname, 1); /* still a temporary */
		fs_made_reparented(fs, in); /* no made folder: every move tells it all the same */
		tree_write_unlock(fs->tree);
		/* a temporary replaced loses its name: its edit no longer
		 * pins it, or it stayed, with its memory, until the unmount */
		if (there && there != in)
			fs_edit_pin(fs, there);
		if (there)
			inode_unref(fs->inodes, there);
		tree_read_lock(fs->tree);
	}
	tree_read_unlock(fs->tree);
	fs_turns_end(fs, &turns); /* a place gone after a -EAGAIN */
	g_string_free(path, TRUE);
	place_done(fs, into_made);
	edit_snapshot_end(e, &s);
	fs_edit_drop_idle(fs, in, e);
	edit_unref(e);
	return rc;
}

void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent), *npin = fs_inode(fs, newparent), *in, *unit = NULL;
	struct inode *from_unit = NULL, *nanchor = NULL, *there, *made, *held;
	GString *npath;
	struct tree_node *pn, *npn, *n, *target;
	struct res_error err = { 0 };
	struct wb_plan *plan = NULL;
	struct fs_written written = { 0 };
	struct fs_move move;
	GBytes *text = NULL;
	struct fs_turns turns = { 0 };
	int rc = 0, e = 0, real = 0, into_made, gone_made = 0;

	if (flags & ~RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (!fs->writable) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (fs_is_status_name(fs, pin, name) || fs_is_status_name(fs, npin, newname)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	n = pn ? tree_lookup(fs->tree, pn, name, &e) : NULL;
	/* held: another save's reload may move the name on meanwhile, and
	 * the kernel then forget the inode it found */
	in = held = inodes_find_ref(fs->inodes, pin, n ? n->name : name);
	made = n || (in && in->scratch) ? NULL : fs_made_find(fs, pin, name);
	tree_read_unlock(fs->tree);
	if (!n && in && in->scratch) {
		rc = rename_scratch(fs, in, npin, newname);
		inode_unref(fs->inodes, held);
		fuse_reply_err(req, -rc);
		return;
	}
	if (made) {
		rc = fs_made_rename(fs, made, npin, newname, flags);
		if (rc <= 0) {
			inode_unref(fs->inodes, made);
			if (held)
				inode_unref(fs->inodes, held);
			fuse_reply_err(req, -rc);
			return;
		}
		/* a file was saved in it meanwhile: renamed as the archive's
		 * folder, whose inode it is (in the spelling made) */
		in = made;
	}
	rc = save_pending(fs, in);
	move = (struct fs_move){ in, npin, newname, 0, pin };
	npath = g_string_new(NULL);
plan_again:
	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	npn = place_of(fs, npin, newname, npath, &nanchor, &into_made);
	n = pn ? tree_lookup(fs->tree, pn, name, &e) : NULL;
	target = npn ? tree_lookup(fs->tree, npn, npath->str, &e) : NULL;
	/* an empty folder made there (fs_made.c) */
	there = target ? NULL : fs_made_find(fs, npin, newname);
	if (rc < 0)
		;
	else if (!n || !npn) {
		rc = -ENOENT;
		/* the archive's folder lost its last file meanwhile; it
		 * stays (empty, fs_made.c): renamed as such, below */
		gone_made = !n && npn && in && !made && fs_made_empty(fs, in);
	} else if ((flags & RENAME_NOREPLACE) && (target || there))
		rc = -EEXIST;
	else if (there && !tree_is_dir(n))
		rc = -EISDIR;
	else if (there && fs_made_has_child(fs, there))
		rc = -ENOTEMPTY;
	else if (target && target != n && tree_is_dir(target) && made_in(fs, npin, target))
		rc = -ENOTEMPTY;
	else if (target && target != n && tree_is_dir(n) && tree_is_dir(target) && !is_empty(fs, target))
		rc = -ENOTEMPTY; /* as rename(2): a folder replaces only an empty one */
	else if (in_folder(n) && is_folder(npn) && !(target && target->kind == NODE_VIEW))
		real = 1;
	else if (!(plan = wb_rename(fs->tree, n, npn, npath->str, &err)) || !(unit = fs_unit_of(fs, nanchor)))
		rc = -(err.code ? err.code : EIO);
	if (plan && unit) {
		/* a loose file renamed onto a view in another folder leaves its own */
		from_unit = fs_unit_of(fs, pin);
		if (from_unit == unit)
			from_unit = NULL;
		else if (from_unit)
			inode_ref(fs->inodes, from_unit);
	}
	if (plan && target && target->kind == NODE_VIEW)
		text = read_text(fs, n);
	if (real) {
		rc = rename_real(fs, n, npn, newname);
		tree_read_unlock(fs->tree);
		if (rc == 0 && npin != pin)
			fs_reload(fs, pin, NULL, NULL);
		if (rc == 0)
			fs_reload(fs, npin, &move, NULL);
	} else if (rc == 0) {
		fs_written_of(plan, &written);
		/* unlocks; planned anew where another save went first (the
		 * delete of a file it moves) */
		rc = fs_run_fresh_plan(fs, plan, unit, &move, &err, &turns);
		if (rc == -EAGAIN) {
			place_done(fs, into_made);
			if (from_unit)
				inode_unref(fs->inodes, from_unit);
			if (text)
				g_bytes_unref(text);
			if (there)
				inode_unref(fs->inodes, there);
			from_unit = NULL;
			text = NULL;
			there = NULL;
			plan = NULL;
			unit = NULL;
			memset(&err, 0, sizeof err);
			rc = 0;
			goto plan_again;
		}
		if (rc < 0)
			log_msg(LOG_ERR, "%s -> %s: not renamed: %s", name, newname, err.msg);
		else if (from_unit)
			fs_reload(fs, from_unit, NULL, NULL);
		if (rc == 0 && there) {
			/* replaced, as rename(2) replaces an empty folder (the
			 * move took its name when spelt the same) */
			inodes_unlink_inode(fs->inodes, there);
			fs_made_forget(fs, there);
		}
	} else {
		wb_plan_free(plan);
		tree_read_unlock(fs->tree);
	}
	fs_turns_end(fs, &turns); /* planned otherwise, or not, after a -EAGAIN */
	place_done(fs, into_made);
	if (gone_made) {
		int r = fs_made_rename(fs, in, npin, newname, flags); /* after place_done: it waits for those */

		rc = r <= 0 ? r : -ENOENT;
	}
	if (from_unit)
		inode_unref(fs->inodes, from_unit);
	if (rc == 0 && in && text)
		keep_text(fs, in, text, &written);
	if (text)
		g_bytes_unref(text);
	if (rc == 0 && in)
		fs_made_moved(fs, in); /* folders made in it (an archive file's too): renumbered, kept */
	if (there)
		inode_unref(fs->inodes, there);
	if (made)
		inode_unref(fs->inodes, made);
	if (held)
		inode_unref(fs->inodes, held);
	g_string_free(npath, TRUE);
	fuse_reply_err(req, -rc);
}

/* ---- the status file ----------------------------------------------------------- */

static void status_line(struct inode *in, void *ctx)
{
	GString *s = ctx, *path;
	char *msg;
	int err = edit_error(in->edit, &msg);

	if (err) {
		path = g_string_new(NULL);
		for (struct inode *a = in; a && a->parent; a = a->parent) {
			g_string_prepend(path, a->name);
			g_string_prepend_c(path, '/');
		}
		g_string_append_printf(s, "%s\t%s\t%s\n", path->str + 1, strerror(err), msg);
		g_string_free(path, TRUE);
	}
	g_free(msg);
}

GString *fs_status_text(struct fs *fs)
{
	GString *s = g_string_new(NULL);

	pthread_mutex_lock(&fs->edits_lock);
	inodes_each_edit(fs->inodes, status_line, s);
	pthread_mutex_unlock(&fs->edits_lock);
	return s;
}
