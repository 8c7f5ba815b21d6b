/* Folders made inside archives.  An archive holds folders only as parts
 * of its entries' names ("maps\new\a.reg"), so a folder made there by
 * mkdir has nothing to be saved as: it lives here, in memory, shown
 * empty, until a file saved into it gives it entries and the tree shows
 * it; and it stays known, so that it is still there (empty) when its
 * last file goes, until rmdir or the unmount.  cp -r, a file manager's
 * "new folder" and mv into it work as they do on a disk.  So that a
 * folder of the archive also stays when its last entry goes through the
 * mount, it joins them then (fs_made_keep_emptied). */
#define _GNU_SOURCE
#include "fs_write.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cp1251.h"
#include "serve.h"

/* What the set keeps of a made folder (its inode is the key, with a
 * reference the set holds). */
struct made {
	time_t mtime;
	struct inode *filed_in; /* its key in fs->made_in */
};

void fs_made_init(struct fs *fs)
{
	pthread_mutex_init(&fs->made_lock, NULL);
	fs->made = g_hash_table_new_full(NULL, NULL, NULL, g_free);
	fs->made_in = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_ptr_array_unref);
}

void fs_made_free(struct fs *fs)
{
	/* the inodes go with the table of inodes */
	g_hash_table_destroy(fs->made_in);
	g_hash_table_destroy(fs->made);
	pthread_mutex_destroy(&fs->made_lock);
}

/* The made folders filed under dir (made_lock), or NULL.  A key stays a
 * live inode while a folder filed under it is its child (children hold
 * their parent); each is checked against in->parent still, in case a
 * move was not told (fs_made_reparented). */
static GPtrArray *filed_in(struct fs *fs, struct inode *dir)
{
	return g_hash_table_lookup(fs->made_in, dir);
}

static void file_under_parent(struct fs *fs, struct inode *in, struct made *m)
{
	GPtrArray *v = filed_in(fs, in->parent);

	if (!v) {
		v = g_ptr_array_new();
		g_hash_table_insert(fs->made_in, in->parent, v);
	}
	g_ptr_array_add(v, in);
	m->filed_in = in->parent;
}

static void unfile(struct fs *fs, struct inode *in, struct made *m)
{
	GPtrArray *v = filed_in(fs, m->filed_in);

	if (v && g_ptr_array_remove_fast(v, in) && !v->len)
		g_hash_table_remove(fs->made_in, m->filed_in);
	m->filed_in = NULL;
}

void fs_made_reparented(struct fs *fs, struct inode *in)
{
	struct made *m;

	pthread_mutex_lock(&fs->made_lock);
	m = g_hash_table_lookup(fs->made, in);
	if (m && m->filed_in != in->parent) {
		unfile(fs, in, m);
		file_under_parent(fs, in, m);
	}
	pthread_mutex_unlock(&fs->made_lock);
}

/* The made folder's record, or NULL; valid while made_lock is held.  The
 * set is asked first: an inode not in it may be gone already. */
static struct made *made_of(struct fs *fs, struct inode *in)
{
	struct made *m = in ? g_hash_table_lookup(fs->made, in) : NULL;

	return m && !__atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE) ? m : NULL;
}

int fs_made_empty(struct fs *fs, struct inode *in)
{
	int made;

	pthread_mutex_lock(&fs->made_lock);
	made = made_of(fs, in) != NULL;
	pthread_mutex_unlock(&fs->made_lock);
	return made && !inode_node(fs->inodes, in);
}

struct inode *fs_made_anchor(struct fs *fs, struct inode *in, GString *rel)
{
	g_string_truncate(rel, 0);
	while (in && !inode_node(fs->inodes, in)) {
		if (!fs_made_empty(fs, in))
			return NULL;
		if (rel->len)
			g_string_prepend_c(rel, '/');
		g_string_prepend(rel, in->name);
		in = in->parent;
	}
	return in;
}

struct tree_node *fs_made_target(struct fs *fs, struct inode *in, const char *name, GString *path,
				 struct inode **anchor)
{
	struct inode *a = fs_made_anchor(fs, in, path);

	if (!a)
		return NULL;
	if (path->len)
		g_string_append_c(path, '/');
	g_string_append(path, name);
	if (anchor)
		*anchor = a;
	return inode_node(fs->inodes, a);
}

int fs_made_stat(struct fs *fs, struct inode *in, struct stat *st)
{
	GString *rel = g_string_new(NULL);
	struct inode *a = fs_made_anchor(fs, in, rel);
	struct tree_node *an = a ? inode_node(fs->inodes, a) : NULL;
	struct made *m;
	time_t mtime = 0;

	g_string_free(rel, TRUE);
	pthread_mutex_lock(&fs->made_lock);
	m = made_of(fs, in);
	if (m)
		mtime = m->mtime;
	pthread_mutex_unlock(&fs->made_lock);
	if (!an || !m)
		return -ENOENT;
	tree_stat(fs->tree, an, st); /* its owner and permissions */
	st->st_ino = __atomic_load_n(&in->ino, __ATOMIC_RELAXED);
	st->st_mode = S_IFDIR | (an->mode & 07777);
	st->st_nlink = 2;
	st->st_size = 0;
	st->st_blocks = 0;
	st->st_mtime = st->st_ctime = st->st_atime = mtime;
	return 0;
}

int fs_made_entry(struct fs *fs, struct inode *in, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof *e);
	e->ino = fs_ino(fs, in);
	e->generation = 1;
	e->entry_timeout = fs->timeout;
	/* a file saved into it turns it into the archive's folder */
	e->attr_timeout = 0;
	return fs_made_stat(fs, in, &e->attr);
}

/* A made folder in dir called name in any ASCII case (any name: NULL),
 * with a reference; NULL if none. */
static struct inode *made_child(struct fs *fs, struct inode *dir, const char *name)
{
	GPtrArray *v;
	struct inode *found = NULL;

	pthread_mutex_lock(&fs->made_lock);
	v = filed_in(fs, dir);
	for (guint i = 0; v && !found && i < v->len; i++) {
		struct inode *in = v->pdata[i];

		if (in->parent == dir && !__atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE)
		    && (!name || g_ascii_strcasecmp(in->name, name) == 0))
			found = in;
	}
	if (found)
		inode_ref(fs->inodes, found);
	pthread_mutex_unlock(&fs->made_lock);
	return found;
}

struct inode *fs_made_find(struct fs *fs, struct inode *dir, const char *name)
{
	struct inode *in = made_child(fs, dir, name);

	if (in && inode_node(fs->inodes, in)) {
		inode_unref(fs->inodes, in); /* the tree shows it */
		in = NULL;
	}
	return in;
}

struct scratch_search {
	struct inode *dir;
	int found;
};

static void find_scratch(struct inode *in, void *ctx)
{
	struct scratch_search *q = ctx;

	if (in->parent == q->dir && in->scratch && !in->unlinked)
		q->found = 1;
}

int fs_made_has_child(struct fs *fs, struct inode *dir)
{
	struct inode *in = made_child(fs, dir, NULL);
	struct scratch_search q = { dir, 0 };

	if (in) {
		inode_unref(fs->inodes, in);
		return 1;
	}
	/* an editor's temporary would have nowhere to be saved */
	inodes_each_below(fs->inodes, dir, find_scratch, &q);
	return q.found;
}

uint64_t fs_made_cookie(const struct inode *in)
{
	/* the cookie of the archive's folder it becomes (tree_dir_cookie),
	 * whose number it has: a listing that goes on after it finds the
	 * folder once, also when a file saved in it meanwhile made it the
	 * archive's, or its last file went */
	return tree_ino_cookie(__atomic_load_n(&in->ino, __ATOMIC_RELAXED));
}

static gint by_cookie(gconstpointer a, gconstpointer b)
{
	uint64_t x = fs_made_cookie(*(struct inode *const *)a), y = fs_made_cookie(*(struct inode *const *)b);

	return x < y ? -1 : x > y;
}

/* Takes made folder in out of the set (the set's reference then is the
 * caller's); 0 if it was not in it. */
static int take_out(struct fs *fs, struct inode *in)
{
	struct made *m;

	pthread_mutex_lock(&fs->made_lock);
	m = g_hash_table_lookup(fs->made, in);
	if (m) {
		unfile(fs, in, m);
		g_hash_table_remove(fs->made, in);
	}
	pthread_mutex_unlock(&fs->made_lock);
	return m != NULL;
}

void fs_made_forget(struct fs *fs, struct inode *in)
{
	if (take_out(fs, in))
		inode_unref(fs->inodes, in);
}

/* The made folders in dir, each with a reference (also those the tree
 * shows now). */
static GPtrArray *kept_in(struct fs *fs, struct inode *dir)
{
	GPtrArray *v = g_ptr_array_new(), *filed;

	pthread_mutex_lock(&fs->made_lock);
	filed = filed_in(fs, dir);
	for (guint i = 0; filed && i < filed->len; i++) {
		struct inode *in = filed->pdata[i];

		if (in->parent == dir && !__atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE)) {
			inode_ref(fs->inodes, in);
			g_ptr_array_add(v, in);
		}
	}
	pthread_mutex_unlock(&fs->made_lock);
	return v;
}

GPtrArray *fs_made_children(struct fs *fs, struct inode *dir)
{
	GPtrArray *v;
	GString *rel;
	guint kept;

	/* every listing of a writable mount asks: mostly there are none */
	pthread_mutex_lock(&fs->made_lock);
	kept = g_hash_table_size(fs->made);
	pthread_mutex_unlock(&fs->made_lock);
	if (!kept)
		return NULL;
	v = kept_in(fs, dir);
	rel = g_string_new(NULL);

	for (guint i = v->len; i-- > 0;) {
		struct inode *in = v->pdata[i];

		if (inode_node(fs->inodes, in)) {
			/* the tree lists it */
		} else if (!fs_made_anchor(fs, in, rel)) {
			fs_made_forget(fs, in); /* its archive went: so did it */
		} else {
			continue;
		}
		inode_unref(fs->inodes, in);
		g_ptr_array_remove_index(v, i);
	}
	g_string_free(rel, TRUE);
	g_ptr_array_sort(v, by_cookie);
	return v;
}

void fs_made_children_free(struct fs *fs, GPtrArray *v)
{
	for (guint i = 0; i < v->len; i++)
		inode_unref(fs->inodes, v->pdata[i]);
	g_ptr_array_free(v, TRUE);
}

/* A name an archive can hold: cp1251, and no backslash (which would make
 * folders of it). */
static int name_fits(const char *name)
{
	GString *bytes = g_string_new(NULL);
	size_t bad;
	int ok = !strchr(name, '\\') && utf8_to_cp1251(name, strlen(name), bytes, &bad) == 0;

	g_string_free(bytes, TRUE);
	return ok;
}

/* Whether name in pin stands for something now: a tree node or a made
 * folder (in any ASCII case, as the archive will), or an editor's
 * temporary. */
static int taken(struct fs *fs, struct inode *pin, struct tree_node *pn, const char *name)
{
	struct inode *in, *made;
	int err = 0, scratch;

	if (pn && tree_lookup(fs->tree, pn, name, &err))
		return 1;
	made = made_child(fs, pin, name);
	if (made) {
		inode_unref(fs->inodes, made);
		return 1;
	}
	in = inodes_find_ref(fs->inodes, pin, name);
	if (!in)
		return 0;
	scratch = in->scratch && !__atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE);
	inode_unref(fs->inodes, in);
	return scratch;
}

/* Puts in into the set, with a reference (read or write lock); if it is
 * there already, its time is mtime only when renew is set. */
static void keep(struct fs *fs, struct inode *in, time_t mtime, int renew)
{
	struct made *m = g_new(struct made, 1), *had;

	m->mtime = mtime;
	inode_ref(fs->inodes, in);
	pthread_mutex_lock(&fs->made_lock);
	had = g_hash_table_lookup(fs->made, in);
	if (had) {
		if (renew)
			had->mtime = mtime;
		g_free(m);
		m = NULL;
	} else {
		g_hash_table_insert(fs->made, in, m);
		file_under_parent(fs, in, m);
	}
	pthread_mutex_unlock(&fs->made_lock);
	if (!m)
		inode_unref(fs->inodes, in);
}

/* The archive's folders dir lies in (dir too) stay while a made folder
 * in them does, also when their last entry goes. */
static void keep_ancestors(struct fs *fs, struct inode *dir)
{
	for (struct inode *up = dir; up; up = up->parent) {
		struct tree_node *n = inode_node(fs->inodes, up);

		if (n && n->kind != NODE_VDIR)
			break;
		if (n)
			keep(fs, up, n->mtime, 0);
	}
}

GPtrArray *fs_made_archive_folders(struct fs *fs, struct inode *dir)
{
	GPtrArray *v = g_ptr_array_new();

	for (struct inode *up = dir; up; up = up->parent) {
		struct tree_node *n = inode_node(fs->inodes, up);

		if (!n || n->kind != NODE_VDIR)
			break;
		inode_ref(fs->inodes, up);
		g_ptr_array_add(v, up);
	}
	return v;
}

/* Whether the tree shows in, in any ASCII case (write lock). */
static int shown(struct fs *fs, struct inode *in)
{
	struct tree_node *pn = in->parent ? inode_node(fs->inodes, in->parent) : NULL;
	int err = 0;

	return pn && tree_lookup(fs->tree, pn, in->name, &err);
}

void fs_made_keep_emptied(struct fs *fs, GPtrArray *folders)
{
	time_t now = time(NULL);
	guint i, emptied;

	/* from the innermost: once one is shown, so are those it lies in */
	for (emptied = 0; emptied < folders->len && !shown(fs, folders->pdata[emptied]); emptied++)
		;
	/* shown only in another spelling: those below would hang from nothing */
	if (emptied < folders->len && !inode_node(fs->inodes, folders->pdata[emptied]))
		emptied = 0;
	for (i = 0; i < emptied; i++)
		keep(fs, folders->pdata[i], now, 1);
	for (i = 0; i < folders->len; i++)
		inode_unref(fs->inodes, folders->pdata[i]);
	g_ptr_array_free(folders, TRUE);
}

/* The made folders below dir get the numbers of the archive's folders
 * they become there. */
static void renumber_below(struct fs *fs, struct inode *dir)
{
	GPtrArray *v = kept_in(fs, dir);

	for (guint i = 0; i < v->len; i++) {
		struct inode *in = v->pdata[i];

		__atomic_store_n(&in->ino, tree_child_ino(__atomic_load_n(&dir->ino, __ATOMIC_RELAXED), in->name),
				 __ATOMIC_RELAXED);
		renumber_below(fs, in);
		inode_unref(fs->inodes, in);
	}
	g_ptr_array_free(v, TRUE);
}

/* Whether top is a made folder or lies above one: whether it is one of
 * the folders made ones are filed in, or lies above one of those. */
static int made_below(struct fs *fs, struct inode *top)
{
	GHashTableIter it;
	gpointer key;
	int found;

	pthread_mutex_lock(&fs->made_lock);
	found = g_hash_table_contains(fs->made, top);
	g_hash_table_iter_init(&it, fs->made_in);
	while (!found && g_hash_table_iter_next(&it, &key, NULL))
		for (struct inode *up = key; up && !found; up = up->parent)
			found = up == top;
	pthread_mutex_unlock(&fs->made_lock);
	return found;
}

void fs_made_moved(struct fs *fs, struct inode *in)
{
	tree_read_lock(fs->tree);
	if (made_below(fs, in)) {
		inode_node(fs->inodes, in); /* its number where it is now */
		if (in->parent)
			keep_ancestors(fs, in->parent);
		renumber_below(fs, in);
	}
	tree_read_unlock(fs->tree);
}

int fs_made_mkdir(struct fs *fs, struct inode *pin, const char *name, struct fuse_entry_param *e)
{
	GString *rel = g_string_new(NULL);
	struct inode *a, *in;
	struct tree_node *an;
	int rc;

	tree_read_lock(fs->tree);
	a = fs_made_anchor(fs, pin, rel);
	an = a ? inode_node(fs->inodes, a) : NULL;
	if (!an)
		rc = -ENOENT;
	else if (an->kind != NODE_ARCHIVE && an->kind != NODE_VDIR)
		rc = -EPERM;
	else if ((rc = fs_may_change(fs, an)) < 0)
		;
	else if (!name_fits(name))
		rc = -EINVAL;
	else if (taken(fs, pin, rel->len ? NULL : an, name))
		rc = -EEXIST;
	if (rc < 0) {
		tree_read_unlock(fs->tree);
		g_string_free(rel, TRUE);
		return rc;
	}
	keep_ancestors(fs, pin);
	in = inodes_named(fs->inodes, pin, name, tree_child_ino(__atomic_load_n(&pin->ino, __ATOMIC_RELAXED), name));
	keep(fs, in, time(NULL), 0);
	rc = fs_made_entry(fs, in, e);
	tree_read_unlock(fs->tree);
	g_string_free(rel, TRUE);
	return rc;
}

int fs_made_rmdir(struct fs *fs, struct inode *pin, const char *name)
{
	struct inode *in = fs_made_find(fs, pin, name);
	int rc = 0;

	if (!in)
		return 0;
	if (fs_made_has_child(fs, in))
		rc = -ENOTEMPTY;
	else if (take_out(fs, in)) {
		inodes_unlink_inode(fs->inodes, in);
		inode_unref(fs->inodes, in); /* the set's */
		rc = 1;
	}
	inode_unref(fs->inodes, in);
	return rc;
}

int fs_made_rename(struct fs *fs, struct inode *in, struct inode *npin, const char *newname, unsigned flags)
{
	GString *rel = g_string_new(NULL);
	struct inode *a, *there = NULL;
	struct tree_node *an, *from, *target = NULL;
	int rc = 0, err = 0;

	tree_write_lock(fs->tree); /* inodes_move */
	while (__atomic_load_n(&fs->made_plans, __ATOMIC_ACQUIRE) > 0) {
		/* a save into a made folder is under way (this one, maybe):
		 * once it is in, the folder it saved in is the archive's */
		tree_write_unlock(fs->tree);
		serve_will_block();
		g_usleep(1000);
		tree_write_lock(fs->tree);
	}
	if (!fs_made_empty(fs, in)) {
		/* a file was saved in it meanwhile: the archive's folder now */
		tree_write_unlock(fs->tree);
		g_string_free(rel, TRUE);
		return 1;
	}
	a = fs_made_anchor(fs, in, rel);
	from = a ? inode_node(fs->inodes, a) : NULL;
	a = fs_made_anchor(fs, npin, rel);
	an = a ? inode_node(fs->inodes, a) : NULL;
	if (!rel->len && an)
		target = tree_lookup(fs->tree, an, newname, &err);
	there = made_child(fs, npin, newname);
	if (there == in) {
		inode_unref(fs->inodes, there);
		there = NULL;
	}
	if (!an || !from)
		rc = -ENOENT;
	else if ((an->kind != NODE_ARCHIVE && an->kind != NODE_VDIR) || tree_unit(an) != tree_unit(from))
		rc = -EXDEV; /* as for entries: mv then makes it there and removes this one */
	else if ((rc = fs_may_change(fs, an)) < 0)
		;
	else if (!name_fits(newname))
		rc = -EINVAL;
	else if ((flags & RENAME_NOREPLACE) && (target || there))
		rc = -EEXIST;
	else if (target)
		rc = tree_is_dir(target) ? -ENOTEMPTY : -ENOTDIR;
	else if (there && fs_made_has_child(fs, there))
		rc = -ENOTEMPTY;
	for (struct inode *up = npin; rc == 0 && up; up = up->parent)
		if (up == in)
			rc = -EINVAL; /* into itself */
	if (rc == 0) {
		/* an empty folder there is replaced, as rename(2) does */
		if (there)
			inodes_unlink_inode(fs->inodes, there);
		inodes_move(fs->inodes, in, npin, newname, 0);
		fs_made_reparented(fs, in);
		__atomic_store_n(&in->ino, tree_child_ino(__atomic_load_n(&npin->ino, __ATOMIC_RELAXED), newname),
				 __ATOMIC_RELAXED);
		renumber_below(fs, in);
		keep_ancestors(fs, npin);
		if (there)
			fs_made_forget(fs, there);
	}
	if (there)
		inode_unref(fs->inodes, there);
	tree_write_unlock(fs->tree);
	g_string_free(rel, TRUE);
	return rc;
}
