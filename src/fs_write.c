/* The FUSE glue, write side.  A file opened for writing inside an archive
 * (an entry, or an INI view) gets an edit: its contents in a memory file,
 * written by the writes, read back by the reads, and saved into the
 * archive on fsync and on close (writeback.h), never at unmount.  Loose
 * files of the game folder are written directly.
 *
 * A save that fails (an INI that does not parse, a full disk) returns the
 * error to fsync/close, logs one line, and keeps the edit with its text:
 * the view shows it until a valid save, or until `rm` of the view drops
 * it; the status file lists it.  A saved INI view keeps showing the text
 * as written (not as converted back) while its .reg stays as saved, so
 * that editors see the file they wrote. */
#define _GNU_SOURCE
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "views.h"
#include "writeback.h"

struct edit {
	int refs;             /* the inode's, handles', readers' */
	pthread_mutex_t save_lock;     /* one save at a time, held through it */
	pthread_mutex_t lock;          /* the fields below; never held while waiting
			       * for the tree's lock, which readers hold */
	int fd;               /* a memory file with the contents */
	uint64_t size;
	int64_t mtime;
	int writers;          /* handles open for writing */
	uint64_t version;     /* counts changes of the contents */
	uint64_t saved;       /* the version last saved (or read) */
	uint64_t failed;      /* the version whose save failed (+1; 0: none) */
	int sticky;           /* a saved view's text, shown while ... */
	struct identity saved_source; /* ... its source is as the save left it */
	int error;            /* of the last save, 0 when it worked */
	char *message;
};

static struct edit *edit_new(void)
{
	struct edit *e = g_new0(struct edit, 1);

	e->refs = 1;
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->save_lock, NULL);
	e->fd = memfd_create("eifs-edit", MFD_CLOEXEC);
	e->mtime = time(NULL);
	if (e->fd < 0) {
		pthread_mutex_destroy(&e->lock);
		pthread_mutex_destroy(&e->save_lock);
		g_free(e);
		return NULL;
	}
	return e;
}

void edit_unref(struct edit *e)
{
	if (!e || __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	close(e->fd);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->save_lock);
	g_free(e->message);
	g_free(e);
}

struct edit *fs_edit_get(struct fs *fs, struct inode *in)
{
	struct edit *e;

	/* most inodes never have one: no lock for them on the read path */
	if (!__atomic_load_n(&in->edit, __ATOMIC_ACQUIRE))
		return NULL;
	pthread_mutex_lock(&fs->edits_lock);
	e = in->edit;
	if (e)
		__atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fs->edits_lock);
	return e;
}

int edit_fd(struct edit *e)
{
	return e->fd;
}

int edit_stat(struct edit *e, struct stat *st)
{
	pthread_mutex_lock(&e->lock);
	st->st_size = (off_t)e->size;
	st->st_blocks = (blkcnt_t)((e->size + 511) / 512);
	st->st_mtime = st->st_ctime = (time_t)e->mtime;
	pthread_mutex_unlock(&e->lock);
	return 1;
}

int edit_shows(struct fs *fs, struct inode *in, struct edit *e, struct tree_node *n)
{
	struct identity now;
	int shows;

	pthread_mutex_lock(&e->lock);
	shows = e->writers || e->version != e->saved;
	if (!shows && e->sticky) {
		node_identity(n, &now);
		shows = identity_equal(&now, &e->saved_source);
	}
	pthread_mutex_unlock(&e->lock);
	return shows;
}

/* Drops the inode's edit once nothing needs it any more. */
static void maybe_drop(struct fs *fs, struct inode *in, struct edit *e)
{
	int drop;

	pthread_mutex_lock(&fs->edits_lock);
	pthread_mutex_lock(&e->lock);
	drop = in->edit == e && !e->writers && e->version == e->saved && !e->sticky && !in->scratch;
	pthread_mutex_unlock(&e->lock);
	if (drop)
		__atomic_store_n(&in->edit, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fs->edits_lock);
	if (drop)
		edit_unref(e);
}

/* ---- filling an edit ----------------------------------------------------- */

static int write_at(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* The current contents of n into e (read lock held). */
static int fill(struct fs *fs, struct edit *e, struct tree_node *n)
{
	if (n->kind == NODE_VIEW) {
		int err = 0;
		GBytes *b = view_cache_get(fs->views, fs->tree, n, &err);
		gsize len;
		const void *data;
		int rc;

		if (!b)
			return -(err ? err : EIO);
		data = g_bytes_get_data(b, &len);
		rc = write_at(e->fd, data, len, 0);
		e->size = len;
		g_bytes_unref(b);
		return rc;
	}
	for (uint64_t off = 0; off < n->size;) {
		static __thread char buf[1 << 20];
		ssize_t got = tree_read(fs->tree, n, buf, sizeof buf, off);
		int rc;

		if (got <= 0)
			return got < 0 ? (int)got : -EIO;
		rc = write_at(e->fd, buf, (size_t)got, off);
		if (rc < 0)
			return rc;
		off += (uint64_t)got;
	}
	e->size = n->size;
	return 0;
}

/* The edit of in, made from n's contents if there is none (or only a
 * stale view text), with one more writer and a reference for the caller.
 * Called with the read lock held.  Returns NULL with *err. */
static struct edit *start_writing(struct fs *fs, struct inode *in, struct tree_node *n, int truncate,
				  int *err)
{
	struct edit *e = fs_edit_get(fs, in), *fresh = NULL;

	if (e && !edit_shows(fs, in, e, n)) {
		edit_unref(e);
		e = NULL; /* a view text whose source changed since: made anew */
	}
	if (!e) {
		fresh = edit_new();
		if (!fresh) {
			*err = errno;
			return NULL;
		}
		fresh->mtime = n->mtime;
		*err = truncate ? 0 : -fill(fs, fresh, n);
		if (*err) {
			edit_unref(fresh);
			return NULL;
		}
		pthread_mutex_lock(&fs->edits_lock);
		e = in->edit;
		if (e && e != fresh && (e->writers || e->version != e->saved)) {
			__atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED); /* another opener was first */
			edit_unref(fresh);
		} else {
			struct edit *old = in->edit;

			__atomic_store_n(&in->edit, fresh, __ATOMIC_RELEASE); /* the inode's reference */
			__atomic_add_fetch(&fresh->refs, 1, __ATOMIC_RELAXED);
			e = fresh;
			edit_unref(old);
		}
		pthread_mutex_unlock(&fs->edits_lock);
	}
	pthread_mutex_lock(&e->lock);
	e->writers++;
	e->sticky = 0;
	if (truncate && e->size) {
		if (ftruncate(e->fd, 0) == 0)
			e->size = 0;
		e->version++;
		e->mtime = time(NULL);
	}
	pthread_mutex_unlock(&e->lock);
	return e;
}

static void stop_writing(struct fs *fs, struct inode *in, struct edit *e)
{
	pthread_mutex_lock(&e->lock);
	e->writers--;
	pthread_mutex_unlock(&e->lock);
}

/* ---- saving -------------------------------------------------------------- */

/* The inode whose node is the unit (archive file or folder) of in's node:
 * the one to reload after a save, which may make in itself vanish. */
static struct inode *unit_of(struct fs *fs, struct inode *in)
{
	struct tree_node *n = inode_node(fs->inodes, in), *unit = n ? tree_unit(n) : NULL;

	for (; in && unit; in = in->parent)
		if (inode_node(fs->inodes, in) == unit)
			return in;
	return NULL;
}

/* Runs a plan made under the read lock (released here), then reloads the
 * unit.  Returns 0 or a negative errno; err has the reason. */
static int run_plan(struct fs *fs, struct wb_plan *plan, struct inode *unit, struct res_error *err)
{
	int rc;

	inode_ref(fs->inodes, unit);
	tree_read_unlock(fs->tree);
	__atomic_add_fetch(&fs->saving, 1, __ATOMIC_ACQ_REL);
	rc = wb_run(plan, &fs->commit, err);
	wb_plan_free(plan);
	if (rc == 0)
		fs_reload(fs, unit);
	__atomic_sub_fetch(&fs->saving, 1, __ATOMIC_ACQ_REL);
	inode_unref(fs->inodes, unit);
	return rc < 0 ? -err->code : 0;
}

/* One log line, and the reason kept for the status file. */
static void remember_failure(struct fs *fs, struct inode *in, struct edit *e, uint64_t version,
			     const struct res_error *err, int is_view)
{
	char *what = inode_path(fs->inodes, in), *msg;

	msg = g_strdup(err->msg); /* an INI's says which line */
	log_msg(LOG_ERR, "%s: not saved: %s (%s)%s", what, msg, strerror(err->code),
		is_view ? "; the text stays in the view until a valid save or rm of the view" : "");
	g_free(what);
	pthread_mutex_lock(&e->lock);
	g_free(e->message);
	e->message = msg;
	e->failed = version + 1;
	e->error = err->code;
	pthread_mutex_unlock(&e->lock);
}

/* Saves e if it was written since its last save; a version whose save
 * failed is not tried again (nor logged again) until it changes.
 * Returns 0 or -errno. */
static int save(struct fs *fs, struct inode *in, struct edit *e)
{
	struct res_error err = { 0 };
	struct wb_plan *plan = NULL;
	struct tree_node *n;
	struct inode *unit = NULL;
	unsigned char *data = NULL;
	uint64_t version;
	size_t len = 0;
	int rc = 0, is_view = 0;

	pthread_mutex_lock(&e->save_lock);
	pthread_mutex_lock(&e->lock);
	version = e->version;
	len = (size_t)e->size;
	if (version == e->saved || version + 1 == e->failed) {
		rc = version == e->saved ? 0 : -e->error;
		pthread_mutex_unlock(&e->lock);
		goto out;
	}
	pthread_mutex_unlock(&e->lock);
	/* writes may go on meanwhile: they make a newer version, saved next */
	data = len ? mmap(NULL, len, PROT_READ, MAP_SHARED, e->fd, 0) : NULL;
	if (data == MAP_FAILED) {
		data = NULL;
		rc = -errno;
		goto out;
	}
	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	if (!n) {
		tree_read_unlock(fs->tree); /* deleted while open: nothing to save */
		goto done;
	}
	is_view = n->kind == NODE_VIEW;
	unit = unit_of(fs, in);
	plan = wb_put(fs->tree, n, data ? data : (const unsigned char *)"", len, (uint32_t)e->mtime, &err);
	if (!plan || !unit) {
		tree_read_unlock(fs->tree);
		wb_plan_free(plan);
		rc = -(plan ? EIO : err.code);
	} else {
		rc = run_plan(fs, plan, unit, &err);
	}
	if (rc < 0) {
		if (!err.code)
			err.code = -rc;
		remember_failure(fs, in, e, version, &err, is_view);
		rc = -err.code;
		goto out;
	}
	if (is_view) {
		tree_read_lock(fs->tree);
		n = inode_node(fs->inodes, in);
		pthread_mutex_lock(&e->lock);
		if (n) {
			node_identity(n, &e->saved_source);
			e->sticky = 1;
		}
		pthread_mutex_unlock(&e->lock);
		tree_read_unlock(fs->tree);
	}
done:
	pthread_mutex_lock(&e->lock);
	e->saved = version;
	e->failed = 0;
	e->error = 0;
	pthread_mutex_unlock(&e->lock);
out:
	pthread_mutex_unlock(&e->save_lock);
	if (data)
		munmap(data, len);
	return rc;
}

/* ---- opening, writing, closing --------------------------------------------- */

static int may_change(struct fs *fs, struct tree_node *n)
{
	if (!fs->writable)
		return -EROFS;
	if (n->kind == NODE_VIEW && !view_is_editable(n->view))
		return -EACCES;
	if (n->kind == NODE_PLAIN || (n->kind == NODE_VIEW && view_source(n)->kind == NODE_PLAIN))
		return 0; /* the file system of the folder decides */
	if (!(n->mode & 0222))
		return -EACCES;
	return 0;
}

static struct handle *new_handle(struct fs *fs, struct inode *in)
{
	struct handle *h = g_new0(struct handle, 1);

	h->inode = in;
	h->fd = -1;
	inode_ref(fs->inodes, in);
	return h;
}

/* A loose file of the folder, opened as asked. */
static int open_plain(struct fs *fs, struct tree_node *n, int flags)
{
	char *path = tree_real_path(fs->tree, n);
	int fd = open(path, (flags & ~(O_CREAT | O_EXCL | O_NOCTTY)) | O_CLOEXEC);
	int rc = fd < 0 ? -errno : fd;

	g_free(path);
	return rc;
}

void fs_open_write(fuse_req_t req, struct fs *fs, struct inode *in, struct tree_node *n,
		   struct fuse_file_info *fi)
{
	int rc = may_change(fs, n), err = 0;
	struct handle *h = NULL;

	if (rc == 0 && n->kind == NODE_PLAIN) {
		rc = open_plain(fs, n, fi->flags);
		if (rc >= 0) {
			h = new_handle(fs, in);
			h->fd = rc;
			rc = 0;
		}
	} else if (rc == 0) {
		struct edit *e = start_writing(fs, in, n, (fi->flags & O_TRUNC) != 0, &err);

		rc = -err;
		if (e) {
			h = new_handle(fs, in);
			h->edit = e;
		}
	}
	tree_read_unlock(fs->tree);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = 0;
	fuse_reply_open(req, fi);
}

void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	struct edit *e = h ? h->edit : NULL;
	int rc;

	if (h && h->fd >= 0) {
		rc = write_at(h->fd, buf, size, (uint64_t)off);
	} else if (!e) {
		rc = -EBADF;
	} else {
		rc = write_at(e->fd, buf, size, (uint64_t)off);
		h->wrote = 1;
		pthread_mutex_lock(&e->lock);
		if (rc == 0 && (uint64_t)off + size > e->size)
			e->size = (uint64_t)off + size;
		e->version++;
		e->mtime = time(NULL);
		pthread_mutex_unlock(&e->lock);
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

static int save_handle(struct fs *fs, struct handle *h)
{
	int rc = save(fs, h->inode, h->edit);

	notify_wait(fs); /* the kernel's caches are right before close returns */
	return rc;
}

/* Every close(2) of a descriptor of the file flushes, also the close of
 * a duplicate (a shell's `> file` opens, dup2s and closes before it
 * writes): a file only truncated by its open is saved when released. */
void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	fuse_reply_err(req, h && h->edit && h->wrote ? -save_handle(fs, h) : 0);
}

void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	int rc = 0;

	if (h && h->fd >= 0)
		rc = (datasync ? fdatasync(h->fd) : fsync(h->fd)) < 0 ? -errno : 0;
	else if (h && h->edit)
		rc = save_handle(fs, h);
	fuse_reply_err(req, -rc);
}

void fs_release_edit(struct fs *fs, struct handle *h)
{
	stop_writing(fs, h->inode, h->edit);
	save(fs, h->inode, h->edit); /* close already saved it, unless it failed */
	maybe_drop(fs, h->inode, h->edit);
	edit_unref(h->edit);
	h->edit = NULL;
}

/* ---- attributes ------------------------------------------------------------ */

/* truncate(1) and touch(1) on a file not open: an edit for the moment. */
static int change_closed(struct fs *fs, struct inode *in, struct tree_node *n, const struct stat *attr,
			 int to_set)
{
	int err = 0, rc = 0;
	struct edit *e = start_writing(fs, in, n, 0, &err);

	tree_read_unlock(fs->tree);
	if (!e)
		return -err;
	pthread_mutex_lock(&e->lock);
	if ((to_set & FUSE_SET_ATTR_SIZE) && ftruncate(e->fd, attr->st_size) < 0)
		rc = -errno;
	else if (to_set & FUSE_SET_ATTR_SIZE)
		e->size = (uint64_t)attr->st_size;
	if (to_set & FUSE_SET_ATTR_MTIME)
		e->mtime = attr->st_mtime;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		e->mtime = time(NULL);
	e->version++;
	pthread_mutex_unlock(&e->lock);
	stop_writing(fs, in, e);
	if (rc == 0)
		rc = save(fs, in, e);
	maybe_drop(fs, in, e);
	edit_unref(e);
	return rc;
}

static int change_open(struct edit *e, const struct stat *attr, int to_set)
{
	int rc = 0;

	pthread_mutex_lock(&e->lock);
	if (to_set & FUSE_SET_ATTR_SIZE) {
		if (ftruncate(e->fd, attr->st_size) < 0)
			rc = -errno;
		else
			e->size = (uint64_t)attr->st_size;
		e->version++;
	}
	if (to_set & FUSE_SET_ATTR_MTIME)
		e->mtime = attr->st_mtime;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		e->mtime = time(NULL);
	if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW))
		e->version++;
	pthread_mutex_unlock(&e->lock);
	return rc;
}

static int change_plain(struct fs *fs, struct tree_node *n, const struct handle *h, const struct stat *attr,
			int to_set)
{
	char *path = tree_real_path(fs->tree, n);
	struct timespec times[2] = { { 0, UTIME_OMIT }, { 0, UTIME_OMIT } };
	int rc = 0;

	if ((to_set & FUSE_SET_ATTR_SIZE)
	    && (h && h->fd >= 0 ? ftruncate(h->fd, attr->st_size) : truncate(path, attr->st_size)) < 0)
		rc = -errno;
	if (rc == 0 && (to_set & FUSE_SET_ATTR_MODE) && chmod(path, attr->st_mode & 07777) < 0)
		rc = -errno;
	if (to_set & FUSE_SET_ATTR_ATIME)
		times[0] = attr->st_atim;
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		times[0].tv_nsec = UTIME_NOW;
	if (to_set & FUSE_SET_ATTR_MTIME)
		times[1] = attr->st_mtim;
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		times[1].tv_nsec = UTIME_NOW;
	if (rc == 0 && (times[0].tv_nsec != UTIME_OMIT || times[1].tv_nsec != UTIME_OMIT)
	    && utimensat(AT_FDCWD, path, times, 0) < 0)
		rc = -errno;
	g_free(path);
	return rc;
}

static void setattr_scratch(fuse_req_t req, struct fs *fs, struct inode *in, const struct stat *attr,
			    int to_set)
{
	struct edit *e = fs_edit_get(fs, in);
	struct stat st;
	int rc;

	if (!e) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = change_open(e, attr, to_set);
	fs_scratch_stat(fs, in, e, &st);
	edit_unref(e);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, fs->timeout);
}

void fs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *in = fs_inode(fs, ino);
	struct handle *h = fi ? (struct handle *)(uintptr_t)fi->fh : NULL;
	int content = to_set & (FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW);
	struct tree_node *n;
	struct stat st;
	int rc = 0;

	if (in->scratch) {
		setattr_scratch(req, fs, in, attr, to_set);
		return;
	}
	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	if (!n)
		rc = h && h->edit ? change_open(h->edit, attr, to_set) : -ENOENT;
	else if (n->kind == NODE_PLAIN)
		rc = change_plain(fs, n, h, attr, to_set);
	else if (tree_is_dir(n) || !content)
		rc = 0; /* modes and owners follow the archive file */
	else if ((rc = may_change(fs, n)) < 0)
		;
	else if (h && h->edit) {
		rc = change_open(h->edit, attr, to_set);
		h->wrote = 1;
	} else {
		rc = change_closed(fs, in, n, attr, to_set); /* unlocks */
		tree_read_lock(fs->tree);
		n = inode_node(fs->inodes, in);
	}
	if (rc == 0 && n && n->kind == NODE_PLAIN) {
		tree_read_unlock(fs->tree);
		fs_reload(fs, in); /* its size and views changed */
		tree_read_lock(fs->tree);
		n = inode_node(fs->inodes, in);
	}
	if (rc == 0 && n) {
		struct fuse_entry_param e;

		fs_fill_entry(fs, in, n, &e);
		st = e.attr;
	} else if (rc == 0 && h && h->edit) {
		memset(&st, 0, sizeof st);
		st.st_mode = S_IFREG | 0644;
		edit_stat(h->edit, &st);
	} else if (rc == 0) {
		rc = -ENOENT;
	}
	tree_read_unlock(fs->tree);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, fs->timeout);
}

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
	struct edit *e = edit_new();
	struct fuse_entry_param ep;
	struct inode *in;
	struct handle *h;

	if (!e) {
		fuse_reply_err(req, errno);
		return;
	}
	in = inodes_scratch(fs->inodes, pin, name, g_str_hash(name) ^ (uint64_t)(uintptr_t)pin);
	e->writers = 1;
	__atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED); /* the handle's */
	pthread_mutex_lock(&fs->edits_lock);
	__atomic_store_n(&in->edit, e, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&fs->edits_lock);
	h = new_handle(fs, in);
	h->edit = e;
	memset(&ep, 0, sizeof ep);
	ep.ino = fs_ino(fs, in);
	ep.generation = 1;
	ep.attr_timeout = ep.entry_timeout = fs->timeout;
	fs_scratch_stat(fs, in, e, &ep.attr);
	fi->fh = (uint64_t)(uintptr_t)h;
	fuse_reply_create(req, &ep, fi);
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
	h = new_handle(fs, in);
	h->fd = fd;
	if (fd < 0)
		h->edit = start_writing(fs, in, n, 1, &err);
	fs_fill_entry(fs, in, n, &e);
	tree_read_unlock(fs->tree);
	fi->fh = (uint64_t)(uintptr_t)h;
	fuse_reply_create(req, &e, fi);
}

static int is_folder(const struct tree_node *n)
{
	return n->kind == NODE_FOLDER;
}

/* A name an entry can take: a backslash would make folders of it. */
static int entry_name_ok(const char *name)
{
	return !strchr(name, '\\');
}

void fs_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent), *unit = NULL;
	struct res_error err = { 0 };
	struct wb_plan *plan;
	struct tree_node *pn;
	int rc, fd = -1;

	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	if (!pn) {
		rc = -ENOENT;
	} else if (!fs->writable) {
		rc = -EROFS;
	} else if (is_folder(pn)) {
		char *dir = tree_real_path(fs->tree, pn), *path = g_build_filename(dir, name, NULL);

		fd = open(path, fi->flags | O_CREAT | O_CLOEXEC, mode);
		rc = fd < 0 ? -errno : 0;
		g_free(path);
		g_free(dir);
	} else if (!entry_name_ok(name)) {
		rc = -EINVAL;
	} else if (!(pn->mode & 0222)) {
		rc = -EACCES;
	} else if (fs_is_scratch_name(name)) {
		tree_read_unlock(fs->tree);
		create_scratch(req, fs, pin, name, fi);
		return;
	} else if (!(plan = wb_create(fs->tree, pn, name, (const unsigned char *)"", 0, (uint32_t)time(NULL), &err))
		   || !(unit = unit_of(fs, pin))) {
		rc = -(err.code ? err.code : EIO);
		wb_plan_free(plan);
	} else {
		rc = run_plan(fs, plan, unit, &err); /* unlocks */
		if (rc < 0)
			log_msg(LOG_ERR, "%s: cannot create: %s", name, err.msg);
		tree_read_lock(fs->tree);
	}
	tree_read_unlock(fs->tree);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	if (fd >= 0)
		fs_reload(fs, pin);
	reply_new(req, fs, pin, name, fi, fd);
}

void fs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent);
	struct tree_node *pn;
	int rc;

	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	if (!pn)
		rc = -ENOENT;
	else if (!fs->writable)
		rc = -EROFS;
	else if (is_folder(pn)) {
		char *dir = tree_real_path(fs->tree, pn), *path = g_build_filename(dir, name, NULL);

		rc = mkdir(path, mode) < 0 ? -errno : 0;
		g_free(path);
		g_free(dir);
	} else {
		rc = -EPERM; /* an archive holds folders only as parts of entry names */
	}
	tree_read_unlock(fs->tree);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fs_reload(fs, pin);
	reply_new(req, fs, pin, name, NULL, -1);
}

/* Drops a view's unsaved text (`rm x.ini` reverts it), or a temporary. */
static void revert_view(struct fs *fs, struct inode *pin, const char *name)
{
	struct inode *in = inodes_find(fs->inodes, pin, name);
	struct edit *e = NULL;

	if (in) {
		pthread_mutex_lock(&fs->edits_lock);
		e = in->edit;
		__atomic_store_n(&in->edit, NULL, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&fs->edits_lock);
		inodes_unlink(fs->inodes, pin, name);
	}
	edit_unref(e);
}

/* Removes entry or loose file n of folder pin; unlocks. */
static int remove_node(struct fs *fs, struct inode *pin, struct tree_node *pn, struct tree_node *n,
		       int is_dir)
{
	struct res_error err = { 0 };
	struct inode *unit = unit_of(fs, pin);
	char *name = g_strdup(n->name);
	struct wb_plan *plan;
	int rc;

	if (is_folder(pn)) {
		char *path = tree_real_path(fs->tree, n);

		rc = (is_dir ? rmdir(path) : unlink(path)) < 0 ? -errno : 0;
		g_free(path);
		tree_read_unlock(fs->tree);
		if (rc == 0)
			fs_reload(fs, pin);
	} else if (!(plan = wb_delete(fs->tree, n, &err)) || !unit) {
		tree_read_unlock(fs->tree);
		wb_plan_free(plan);
		rc = -(err.code ? err.code : EIO);
	} else {
		rc = run_plan(fs, plan, unit, &err);
		if (rc < 0)
			log_msg(LOG_ERR, "%s: cannot delete: %s", name, err.msg);
	}
	if (rc == 0)
		inodes_unlink(fs->inodes, pin, name);
	g_free(name);
	return rc;
}

void fs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent), *in;
	struct tree_node *pn, *n = NULL;
	int rc = 0, err = 0;

	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	n = pn ? tree_lookup(fs->tree, pn, name, &err) : NULL;
	if (!n && (in = inodes_find(fs->inodes, pin, name)) && in->scratch)
		revert_view(fs, pin, name); /* a temporary: forgotten */
	else if (!n)
		rc = -(pn ? err : ENOENT);
	else if (!fs->writable)
		rc = -EROFS;
	else if (n->kind == NODE_VIEW && view_is_editable(n->view)) {
		revert_view(fs, pin, n->name);
	} else if (n->kind == NODE_VIEW) {
		rc = -EPERM;
	} else if (n->kind != NODE_PLAIN && (rc = may_change(fs, n)) < 0) {
		;
	} else {
		fuse_reply_err(req, -remove_node(fs, pin, pn, n, 0)); /* unlocks */
		return;
	}
	tree_read_unlock(fs->tree);
	fuse_reply_err(req, -rc);
}

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

void fs_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent);
	struct tree_node *pn, *n;
	int rc = 0, err = 0;

	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	n = pn ? tree_lookup(fs->tree, pn, name, &err) : NULL;
	if (!pn)
		rc = -ENOENT;
	else if (!n)
		rc = 0; /* a folder inside an archive goes with its last entry */
	else if (!fs->writable)
		rc = -EROFS;
	else if (!tree_is_dir(n))
		rc = -ENOTDIR;
	else if (n->kind == NODE_FOLDER || (n->kind == NODE_ARCHIVE && is_empty(fs, n))) {
		/* an empty archive goes as a whole; a folder as the system says */
		fuse_reply_err(req, -remove_node(fs, pin, pn, n, n->kind == NODE_FOLDER)); /* unlocks */
		return;
	} else {
		rc = -ENOTEMPTY;
	}
	tree_read_unlock(fs->tree);
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
	int rc = e ? save(fs, in, e) : 0;

	edit_unref(e);
	return rc;
}

/* The text of an entry just saved over a view stays what the view shows. */
static void keep_text(struct fs *fs, struct inode *in, GBytes *text)
{
	struct edit *e = edit_new();
	struct tree_node *n;
	gsize len;
	const void *data = g_bytes_get_data(text, &len);

	if (!e || write_at(e->fd, data, len, 0) < 0) {
		edit_unref(e);
		return;
	}
	e->size = len;
	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	if (n) {
		node_identity(n, &e->saved_source);
		e->mtime = n->mtime;
		e->sticky = 1;
	}
	tree_read_unlock(fs->tree);
	pthread_mutex_lock(&fs->edits_lock);
	if (!in->edit && e->sticky) {
		__atomic_store_n(&in->edit, e, __ATOMIC_RELEASE);
		e = NULL;
	}
	pthread_mutex_unlock(&fs->edits_lock);
	edit_unref(e);
}

static GBytes *read_text(struct fs *fs, struct tree_node *n)
{
	GByteArray *b;
	ssize_t got;

	if (n->size > VIEW_MAX_TEXT_SOURCE)
		return NULL;
	b = g_byte_array_sized_new((guint)n->size);
	g_byte_array_set_size(b, (guint)n->size);
	got = tree_read(fs->tree, n, b->data, b->len, 0);
	g_byte_array_set_size(b, got > 0 ? (guint)got : 0);
	return g_byte_array_free_to_bytes(b);
}

/* A temporary renamed to a real name: its contents are saved under it. */
static int rename_scratch(struct fs *fs, struct inode *in, struct inode *npin, const char *newname)
{
	struct edit *e = fs_edit_get(fs, in);
	struct res_error err = { 0 };
	struct wb_plan *plan = NULL;
	struct inode *unit = NULL;
	struct tree_node *npn, *n;
	unsigned char *data = NULL;
	uint64_t version;
	size_t len;
	int rc = 0, e2 = 0;

	if (!e)
		return -ENOENT;
	pthread_mutex_lock(&e->save_lock);
	pthread_mutex_lock(&e->lock);
	version = e->version;
	len = (size_t)e->size;
	pthread_mutex_unlock(&e->lock);
	data = len ? mmap(NULL, len, PROT_READ, MAP_SHARED, e->fd, 0) : NULL;
	if (data == MAP_FAILED) {
		data = NULL;
		rc = -errno;
	}
	tree_read_lock(fs->tree);
	npn = rc == 0 ? inode_node(fs->inodes, npin) : NULL;
	if (rc == 0 && (!npn || is_folder(npn)))
		rc = npn ? -EXDEV : -ENOENT;
	if (rc == 0 && !fs_is_scratch_name(newname)) {
		plan = wb_create(fs->tree, npn, newname, data ? data : (const unsigned char *)"", len,
				 (uint32_t)e->mtime, &err);
		unit = plan ? unit_of(fs, npin) : NULL;
		rc = plan && unit ? run_plan(fs, plan, unit, &err) /* unlocks */ : -(err.code ? err.code : EIO);
		if (!unit)
			wb_plan_free(plan);
		if (rc < 0)
			log_msg(LOG_ERR, "%s: not saved: %s", newname, err.msg);
		tree_read_lock(fs->tree);
	}
	tree_read_unlock(fs->tree);
	if (rc == 0) {
		int scratch = fs_is_scratch_name(newname);

		tree_write_lock(fs->tree);
		npn = inode_node(fs->inodes, npin);
		n = npn && !scratch ? tree_lookup(fs->tree, npn, newname, &e2) : NULL;
		inodes_move(fs->inodes, in, npin, n ? n->name : newname);
		in->scratch = scratch;
		pthread_mutex_lock(&e->lock);
		e->saved = version;
		if (n && n->kind == NODE_VIEW) {
			node_identity(n, &e->saved_source); /* the text shows as written */
			e->sticky = 1;
		}
		pthread_mutex_unlock(&e->lock);
		tree_write_unlock(fs->tree);
	}
	pthread_mutex_unlock(&e->save_lock);
	if (data)
		munmap(data, len);
	maybe_drop(fs, in, e);
	edit_unref(e);
	return rc;
}

void fs_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
	       const char *newname, unsigned int flags)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent), *npin = fs_inode(fs, newparent), *in, *unit = NULL;
	struct tree_node *pn, *npn, *n, *target;
	struct res_error err = { 0 };
	struct wb_plan *plan = NULL;
	GBytes *text = NULL;
	int rc = 0, e = 0, real = 0;

	if (flags & ~RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (!fs->writable) {
		fuse_reply_err(req, EROFS);
		return;
	}
	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	n = pn ? tree_lookup(fs->tree, pn, name, &e) : NULL;
	in = inodes_find(fs->inodes, pin, n ? n->name : name);
	tree_read_unlock(fs->tree);
	if (!n && in && in->scratch) {
		fuse_reply_err(req, -rename_scratch(fs, in, npin, newname));
		return;
	}
	rc = save_pending(fs, in);
	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	npn = inode_node(fs->inodes, npin);
	n = pn ? tree_lookup(fs->tree, pn, name, &e) : NULL;
	target = npn ? tree_lookup(fs->tree, npn, newname, &e) : NULL;
	if (rc < 0)
		;
	else if (!n || !npn)
		rc = -ENOENT;
	else if ((flags & RENAME_NOREPLACE) && target)
		rc = -EEXIST;
	else if (in_folder(n) && is_folder(npn) && !(target && target->kind == NODE_VIEW))
		real = 1;
	else if (!(plan = wb_rename(fs->tree, n, npn, newname, &err)) || !(unit = unit_of(fs, npin)))
		rc = -(err.code ? err.code : EIO);
	if (plan && target && target->kind == NODE_VIEW)
		text = read_text(fs, n);
	if (real) {
		rc = rename_real(fs, n, npn, newname);
		tree_read_unlock(fs->tree);
		if (rc == 0) {
			fs_reload(fs, pin);
			if (npin != pin)
				fs_reload(fs, npin);
		}
	} else if (rc == 0) {
		rc = run_plan(fs, plan, unit, &err); /* unlocks */
		if (rc < 0)
			log_msg(LOG_ERR, "%s -> %s: not renamed: %s", name, newname, err.msg);
	} else {
		wb_plan_free(plan);
		tree_read_unlock(fs->tree);
	}
	if (rc == 0 && in) {
		tree_write_lock(fs->tree);
		npn = inode_node(fs->inodes, npin);
		target = npn ? tree_lookup(fs->tree, npn, newname, &e) : NULL;
		inodes_move(fs->inodes, in, npin, target ? target->name : newname);
		tree_write_unlock(fs->tree);
		if (text)
			keep_text(fs, in, text);
	}
	if (text)
		g_bytes_unref(text);
	fuse_reply_err(req, -rc);
}

/* ---- the status file ----------------------------------------------------------- */

static void status_line(struct inode *in, void *ctx)
{
	struct edit *e = in->edit;
	GString *s = ctx;

	pthread_mutex_lock(&e->lock);
	if (e->error) {
		GString *path = g_string_new(NULL);

		for (struct inode *a = in; a && a->parent; a = a->parent) {
			g_string_prepend(path, a->name);
			g_string_prepend_c(path, '/');
		}
		g_string_append_printf(s, "%s\t%s\t%s\n", path->str + 1, strerror(e->error), e->message);
		g_string_free(path, TRUE);
	}
	pthread_mutex_unlock(&e->lock);
}

GString *fs_status_text(struct fs *fs)
{
	GString *s = g_string_new(NULL);

	pthread_mutex_lock(&fs->edits_lock);
	inodes_each_edit(fs->inodes, status_line, s);
	pthread_mutex_unlock(&fs->edits_lock);
	return s;
}
