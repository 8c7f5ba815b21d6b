/* The FUSE glue, write side: files opened for writing inside archives
 * (entries and editable views: INI, game texts) get an edit (edit.h),
 * saved into the archive on fsync and on close (writeback.h), or when
 * the mount ends while the file is still open, as its release would
 * have; an edit no open holds (a failed save's text) is tried once more
 * at unmount only where the failure's cause may have gone (fs.c).  Loose
 * files of the game folder are written directly.
 *
 * A save that fails (an INI that does not parse, a full disk) returns the
 * error to fsync/close, logs one line, and keeps the edit with its text:
 * the view shows it until a valid save, or until `rm` of the view drops
 * it (fs_names.c); the status file lists it.  A saved view keeps
 * showing the text as written while its source stays as saved, so that
 * editors see the file they wrote. */
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

#include "io.h"
#include "log.h"
#include "views.h"

struct edit *fs_edit_get(struct fs *fs, struct inode *in)
{
	struct edit *e;

	/* most inodes never have one: no lock for them on the read path */
	if (!__atomic_load_n(&in->edit, __ATOMIC_ACQUIRE))
		return NULL;
	pthread_mutex_lock(&fs->edits_lock);
	e = in->edit;
	if (e)
		edit_ref(e);
	pthread_mutex_unlock(&fs->edits_lock);
	return e;
}

struct edit *fs_handle_edit(struct fs *fs, struct inode *in, const struct handle *h)
{
	struct edit *e = fs_edit_get(fs, in);

	/* a file removed while open keeps its contents for its opener */
	if (!e && h && h->edit) {
		e = h->edit;
		edit_ref(e);
	}
	return e;
}

/* The identity of what n is made from, or NULL when n is gone. */
static const struct identity *source_of(const struct tree_node *n, struct identity *id)
{
	if (!n)
		return NULL;
	node_identity(n, id);
	return id;
}

int fs_source_digest(struct fs *fs, const struct tree_node *n, struct edit_digest *d)
{
	struct tree_node *src = n->kind == NODE_VIEW ? view_source(n) : (struct tree_node *)n;
	uint64_t size = tree_file_size(fs->tree, src);
	unsigned char *buf;
	ssize_t got;

	if (size > VIEW_MAX_TEXT_SOURCE)
		return -EFBIG;
	/* a byte more than the size: a loose file grown since is not equal */
	buf = g_malloc(size + 1);
	got = tree_read(fs->tree, src, buf, size + 1, 0);
	if (got == (ssize_t)size)
		edit_digest_of(d, buf, size);
	g_free(buf);
	return got < 0 ? (int)got : got == (ssize_t)size ? 0 : -EIO;
}

void fs_written_of(const struct wb_plan *plan, struct fs_written *w)
{
	size_t len;
	const unsigned char *bytes = wb_plan_view_bytes(plan, &len);

	w->known = bytes != NULL;
	if (bytes)
		edit_digest_of(&w->digest, bytes, len);
}

const struct identity *fs_sticky_source(struct fs *fs, const struct tree_node *n, const struct fs_written *w,
					struct identity *id)
{
	struct edit_digest now;

	if (!n || n->kind != NODE_VIEW || !w->known || fs_source_digest(fs, n, &now) != 0
	    || memcmp(&now, &w->digest, sizeof now) != 0)
		return NULL;
	node_identity(n, id);
	return id;
}

int fs_edit_shows(struct fs *fs, struct edit *e, const struct tree_node *n)
{
	struct identity id;
	struct edit_digest d;
	const struct identity *src = source_of(n, &id);
	int shows = edit_shows(e, src);

	/* the source's identity moved on: the text stays if its bytes did not */
	if (shows == EDIT_ASK)
		shows = edit_shows_digest(e, src, fs_source_digest(fs, n, &d) == 0 ? &d : NULL);
	return shows;
}

/* Called with edits_lock.  An inode whose edit holds what exists nowhere
 * else (a temporary, a failed save's text, a saved view's text) stays
 * known when the kernel forgets it: a later lookup finds it again, edit
 * and all.  Its edit pins it with one reference. */
static void pin_locked(struct fs *fs, struct inode *in)
{
	int want = in->edit && !__atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE)
		   && (__atomic_load_n(&in->scratch, __ATOMIC_ACQUIRE) || !edit_idle(in->edit));

	if (want == in->pinned)
		return;
	in->pinned = want;
	if (want)
		inode_ref(fs->inodes, in);
	else
		inode_unref(fs->inodes, in); /* the caller holds in */
}

void fs_edit_pin(struct fs *fs, struct inode *in)
{
	pthread_mutex_lock(&fs->edits_lock);
	pin_locked(fs, in);
	pthread_mutex_unlock(&fs->edits_lock);
}

void fs_edit_install(struct fs *fs, struct inode *in, struct edit *e)
{
	struct edit *old;

	edit_ref(e);
	pthread_mutex_lock(&fs->edits_lock);
	old = in->edit;
	__atomic_store_n(&in->edit, e, __ATOMIC_RELEASE);
	pin_locked(fs, in);
	pthread_mutex_unlock(&fs->edits_lock);
	edit_unref(old);
}

struct edit *fs_edit_take(struct fs *fs, struct inode *in)
{
	struct edit *e;

	pthread_mutex_lock(&fs->edits_lock);
	e = in->edit;
	__atomic_store_n(&in->edit, NULL, __ATOMIC_RELEASE);
	pin_locked(fs, in);
	pthread_mutex_unlock(&fs->edits_lock);
	return e;
}

void fs_edit_drop_idle(struct fs *fs, struct inode *in, struct edit *e)
{
	int drop;

	pthread_mutex_lock(&fs->edits_lock);
	drop = in->edit == e && !in->scratch && edit_idle(e);
	if (drop)
		__atomic_store_n(&in->edit, NULL, __ATOMIC_RELEASE);
	pin_locked(fs, in);
	pthread_mutex_unlock(&fs->edits_lock);
	if (drop)
		edit_unref(e);
}

/* ---- filling an edit ----------------------------------------------------- */

/* Up to this size a source's bytes are digested for the base of an edit
 * (edit_set_base); a larger file's failed save is not tried again. */
enum { BASE_DIGEST_MAX = 4 << 20 };

/* The current contents of n into e, and for an entry its base (read lock
 * held). */
static int fill(struct fs *fs, struct edit *e, struct tree_node *n)
{
	GChecksum *sum;
	char *buf;
	int rc = 0;

	if (n->kind == NODE_VIEW) {
		int err = 0;
		GBytes *b = view_cache_get(fs->views, fs->tree, n, &err);
		gsize len;
		const void *data;

		if (!b)
			return -(err ? err : EIO);
		data = g_bytes_get_data(b, &len);
		rc = edit_load(e, data, len, 0);
		g_bytes_unref(b);
		return rc;
	}
	buf = g_malloc(1 << 20);
	sum = n->size <= BASE_DIGEST_MAX ? g_checksum_new(G_CHECKSUM_SHA256) : NULL;
	for (uint64_t off = 0; rc == 0 && off < n->size;) {
		ssize_t got = tree_read(fs->tree, n, buf, 1 << 20, off);

		if (got <= 0)
			rc = got < 0 ? (int)got : -EIO;
		else
			rc = edit_load(e, buf, (size_t)got, off);
		if (rc == 0 && sum)
			g_checksum_update(sum, (const guchar *)buf, got);
		off += got > 0 ? (uint64_t)got : 0;
	}
	if (sum) { /* the entry's bytes, digested as they are read */
		struct edit_digest d;
		gsize len = sizeof d.sha256;

		g_checksum_get_digest(sum, d.sha256, &len);
		edit_set_base(e, rc == 0 ? &d : NULL);
		g_checksum_free(sum);
	}
	g_free(buf);
	return rc;
}

/* Makes e in's edit and adds a writer, unless another opener's edit took
 * its place meanwhile (then that one, with a reference).  The writer is
 * added under the lock a release drops idle edits under: an edit never
 * goes while a writer is coming. */
static struct edit *attach_writer(struct fs *fs, struct inode *in, struct edit *e, int fresh)
{
	struct edit *old = NULL;

	pthread_mutex_lock(&fs->edits_lock);
	if (in->edit != e) {
		if (!fresh || (in->edit && !edit_idle(in->edit))) {
			/* ours went, or another opener was first: that is the file now */
			edit_unref(e);
			e = in->edit;
			if (e)
				edit_ref(e);
		} else {
			old = in->edit;
			edit_ref(e);
			__atomic_store_n(&in->edit, e, __ATOMIC_RELEASE);
		}
	}
	if (e)
		edit_add_writer(e);
	pin_locked(fs, in);
	pthread_mutex_unlock(&fs->edits_lock);
	edit_unref(old);
	return e;
}

/* The source's bytes as the edit begins, where fill did not digest them
 * (a view's source, an entry opened to be truncated; read lock). */
static void set_base(struct fs *fs, struct edit *e, const struct tree_node *n)
{
	const struct tree_node *src = n->kind == NODE_VIEW ? view_source(n) : n;
	struct edit_digest d;

	edit_set_base(e, tree_file_size(fs->tree, (struct tree_node *)src) <= BASE_DIGEST_MAX
			 && fs_source_digest(fs, n, &d) == 0 ? &d : NULL);
}

struct edit *fs_start_writing(struct fs *fs, struct inode *in, struct tree_node *n, int truncate, int *err)
{
	struct edit *e = NULL;

	for (int tries = 0; !e && tries < 8; tries++) {
		int fresh = 0;

		e = fs_edit_get(fs, in);
		if (e && !fs_edit_shows(fs, e, n)) {
			edit_unref(e);
			e = NULL; /* a view text whose source changed since: made anew */
		}
		if (!e) {
			e = edit_new(n->mtime);
			if (!e) {
				*err = errno;
				return NULL;
			}
			*err = truncate ? 0 : -fill(fs, e, n);
			if (*err) {
				edit_unref(e);
				return NULL;
			}
			if (!truncate && n->kind == NODE_VIEW)
				set_base(fs, e, n);
			fresh = 1;
		}
		e = attach_writer(fs, in, e, fresh);
	}
	if (!e) {
		*err = EAGAIN;
		return NULL;
	}
	if (truncate) {
		struct stat st;

		/* also an edit made empty rather than filled, when the file
		 * is not: it is a change to save (`: > file`) */
		edit_stat(e, &st);
		if (st.st_size || tree_file_size(fs->tree, n) != 0)
			edit_truncate(e, 0);
		/* what the open writes replaces whatever the source holds
		 * now (also where it joins another open's edit: a text whose
		 * save was refused, as the source changed meanwhile, is saved
		 * over that change only so, deliberately) */
		set_base(fs, e, n);
	}
	return e;
}

/* ---- saving -------------------------------------------------------------- */

struct inode *fs_unit_of(struct fs *fs, struct inode *in)
{
	struct tree_node *n = inode_node(fs->inodes, in), *unit = n ? tree_unit(n) : NULL;

	for (; in && unit; in = in->parent)
		if (inode_node(fs->inodes, in) == unit)
			return in;
	return NULL;
}

/* The gate of one file being saved: held from the write to the reload. */
struct gate {
	pthread_mutex_t lock;
	int users;   /* under fs->gates_lock */
	char *path;  /* the key in fs->gates */
};

static struct gate *gate_enter(struct fs *fs, const char *path)
{
	struct gate *g;

	pthread_mutex_lock(&fs->gates_lock);
	g = g_hash_table_lookup(fs->gates, path);
	if (!g) {
		g = g_new0(struct gate, 1);
		pthread_mutex_init(&g->lock, NULL);
		g->path = g_strdup(path);
		g_hash_table_insert(fs->gates, g->path, g);
	}
	g->users++;
	pthread_mutex_unlock(&fs->gates_lock);
	pthread_mutex_lock(&g->lock);
	return g;
}

int fs_saving_at(struct fs *fs, const char *path)
{
	size_t len = strlen(path);
	GHashTableIter it;
	gpointer key;
	int busy = 0;

	pthread_mutex_lock(&fs->gates_lock);
	g_hash_table_iter_init(&it, fs->gates);
	while (!busy && g_hash_table_iter_next(&it, &key, NULL)) {
		const char *g = key;

		busy = strcmp(g, path) == 0 || (strncmp(g, path, len) == 0 && g[len] == '/' && !strchr(g + len + 1, '/'));
	}
	pthread_mutex_unlock(&fs->gates_lock);
	return busy;
}

static void gate_leave(struct fs *fs, struct gate *g)
{
	int last;

	pthread_mutex_unlock(&g->lock);
	pthread_mutex_lock(&fs->gates_lock);
	last = --g->users == 0;
	if (last)
		g_hash_table_remove(fs->gates, g->path);
	pthread_mutex_unlock(&fs->gates_lock);
	if (last) {
		pthread_mutex_destroy(&g->lock);
		g_free(g->path);
		g_free(g);
	}
}

/* The stamp of the archive file the unit lies in, as the tree last saw
 * it (read lock): each save of ours moves it on (a save appends). */
static void unit_stamp(struct fs *fs, struct inode *unit, struct stat *st)
{
	struct tree_node *n = inode_node(fs->inodes, unit);

	memset(st, 0, sizeof *st);
	if (n && n->src)
		*st = n->src->stamp;
}

/* A save's hold on the gate of file: counted as a save under way (a
 * refresh leaves the archive alone meanwhile) until gate_release. */
static struct gate *gate_take(struct fs *fs, const char *file)
{
	__atomic_add_fetch(&fs->saving, 1, __ATOMIC_ACQ_REL);
	return gate_enter(fs, file);
}

static void gate_release(struct fs *fs, struct gate *g)
{
	gate_leave(fs, g);
	__atomic_sub_fetch(&fs->saving, 1, __ATOMIC_ACQ_REL);
}

void fs_turns_end(struct fs *fs, struct fs_turns *turns)
{
	if (turns->gate)
		gate_release(fs, turns->gate);
	turns->gate = NULL;
}

int fs_run_fresh_plan(struct fs *fs, struct wb_plan *plan, struct inode *unit, const struct fs_move *move,
		      struct res_error *err, struct fs_turns *turns)
{
	struct save_stamps stamps = { 0 };
	struct stat planned, now;
	struct gate *gate = turns->gate;
	int rc, check = ++turns->tries < FS_PLAN_TRIES;

	inode_ref(fs->inodes, unit);
	unit_stamp(fs, unit, &planned);
	tree_read_unlock(fs->tree);
	turns->gate = NULL;
	if (gate && strcmp(gate->path, wb_plan_file(plan)) != 0) {
		gate_release(fs, gate); /* planned for another file now (its archive file renamed) */
		gate = NULL;
	}
	if (!gate && fs->turn_delay_ms)
		g_usleep((gulong)fs->turn_delay_ms * 1000);
	if (!gate)
		gate = gate_take(fs, wb_plan_file(plan));
	if (check) {
		/* another save got through the gate first: this plan names
		 * what it found, which that one may have moved */
		tree_read_lock(fs->tree);
		unit_stamp(fs, unit, &now);
		tree_read_unlock(fs->tree);
		if (!tree_same_stamp(&planned, &now)) {
			turns->gate = gate;
			inode_unref(fs->inodes, unit);
			wb_plan_free(plan);
			return -EAGAIN;
		}
	}
	rc = wb_run(plan, &fs->commit, err, &stamps);
	wb_plan_free(plan);
	if (rc == 0)
		fs_reload(fs, unit, move, &stamps);
	else if (rc == 1 && move && move->in)
		fs_move(fs, move); /* nothing to write, but the name moved all the same */
	gate_release(fs, gate);
	inode_unref(fs->inodes, unit);
	return rc < 0 ? -err->code : 0;
}

/* One log line; the reason is kept for the status file. */
static void report_failure(struct fs *fs, struct inode *in, struct edit *e, const struct edit_snapshot *s,
			   const struct res_error *err, int text_stays)
{
	char *what = inode_path(fs->inodes, in);

	log_msg(LOG_ERR, "%s: not saved: %s (%s)%s", what, err->msg, strerror(err->code),
		text_stays ? "; the text stays in the view until a valid save or rm of the view" : "");
	g_free(what);
	edit_failed(e, s, err->code, g_strdup(err->msg));
}

/* The identity a saved view's text stays shown for: its source's now, if
 * it holds what the save wrote. */
static const struct identity *sticky_source(struct fs *fs, struct inode *in, const struct fs_written *w,
					    struct identity *id)
{
	const struct identity *r;

	tree_read_lock(fs->tree);
	r = fs_sticky_source(fs, inode_node(fs->inodes, in), w, id);
	tree_read_unlock(fs->tree);
	return r;
}

void fs_log_live_save(const char *what, size_t len)
{
	log_msg(LOG_WARNING, "%s: saved from the live file (%zu bytes, not memory enough for a copy): "
		"a write during the save may be in it in part, until the next save", what, len);
}

static int save(struct fs *fs, struct inode *in, struct edit *e, int transient);

int fs_save(struct fs *fs, struct inode *in, struct edit *e)
{
	return save(fs, in, e, 0);
}

/* transient: e lives for one call only (a truncate of a closed file), and
 * a failure leaves no text behind */
static int save(struct fs *fs, struct inode *in, struct edit *e, int transient)
{
	struct res_error err = { 0 };
	struct edit_snapshot s;
	struct identity id;
	struct fs_written written = { 0 };
	struct edit_digest base;
	struct wb_plan *plan;
	struct tree_node *n;
	struct inode *unit;
	struct fs_turns turns = { 0 };
	int rc, is_view;

	if (in->scratch)
		return 1; /* kept in memory until renamed (fs_names.c): not saved */
	rc = edit_snapshot_begin(e, &s, EDIT_DATA_UNSAVED);
	if (rc == 0 && s.mapped) {
		char *what = inode_path(fs->inodes, in);

		fs_log_live_save(what, s.len);
		g_free(what);
	}
	if (rc != 0) {
		edit_snapshot_end(e, &s);
		return rc < 0 ? rc : 0;
	}
	for (;;) {
		tree_read_lock(fs->tree);
		n = inode_node(fs->inodes, in);
		if (!n && inode_removed(in)) {
			tree_read_unlock(fs->tree); /* deleted while open: nothing to save */
			fs_turns_end(fs, &turns);
			edit_saved(e, &s, NULL, NULL);
			edit_snapshot_end(e, &s);
			return 0;
		}
		if (!n || tree_is_dir(n)) {
			/* not thrown away: its archive may be unreadable for a
			 * moment, or another program moved the entry; nor saved
			 * over the folder a reload gave its name to */
			tree_read_unlock(fs->tree);
			err.code = EIO;
			snprintf(err.msg, sizeof err.msg, "%s; what was written stays readable in the mount",
				 n ? "its name now leads to a folder of its archive (changed by another save or program)"
				   : "it is no longer in its archive (removed or renamed there, or the archive unreadable for now)");
			rc = -EIO;
			is_view = 0;
			break;
		}
		is_view = n->kind == NODE_VIEW;
		unit = fs_unit_of(fs, in);
		memset(&err, 0, sizeof err);
		plan = wb_put(fs->tree, n, s.data, s.len, (uint32_t)s.mtime, &err);
		if (!plan || !unit) {
			tree_read_unlock(fs->tree);
			wb_plan_free(plan);
			if (!err.code)
				snprintf(err.msg, sizeof err.msg, "%s", strerror(err.code = EIO));
			rc = -err.code;
			break;
		}
		fs_written_of(plan, &written);
		if (edit_base(e, &base))
			wb_plan_expect(plan, base.sha256);
		/* planned anew, under the gate, where another save (a
		 * rename of its folder) went first */
		rc = fs_run_fresh_plan(fs, plan, unit, NULL, &err, &turns);
		if (rc != -EAGAIN)
			break;
		if (log_debugging())
			log_msg(LOG_DEBUG, "save: another save of the archive went first; planned again");
	}
	fs_turns_end(fs, &turns);
	if (rc < 0) {
		report_failure(fs, in, e, &s, &err, is_view && !transient);
	} else if (is_view) {
		const struct identity *src = sticky_source(fs, in, &written, &id);

		edit_saved(e, &s, src, src ? &written.digest : NULL);
		edit_set_base(e, written.known ? &written.digest : NULL);
	} else {
		struct edit_digest d;

		edit_saved(e, &s, NULL, NULL);
		if (s.len <= BASE_DIGEST_MAX)
			edit_digest_of(&d, s.data, s.len);
		edit_set_base(e, s.len <= BASE_DIGEST_MAX ? &d : NULL);
	}
	edit_snapshot_end(e, &s);
	fs_edit_pin(fs, in);
	return rc;
}

/* ---- opening, writing, closing --------------------------------------------- */

int fs_may_change(struct fs *fs, struct tree_node *n)
{
	if (!fs->writable)
		return -EROFS;
	if (n->kind == NODE_VIEW && !view_is_editable(n->view))
		return -EACCES;
	if (n->kind == NODE_PLAIN)
		return 0; /* the file system of the folder decides */
	/* a view's save replaces its loose source, which takes only the
	 * folder's permission: a source without write bits is left alone
	 * even by root, as an archive is */
	if (n->kind == NODE_VIEW && view_source(n)->kind == NODE_PLAIN)
		return view_source(n)->mode & 0222 ? 0 : -EACCES;
	if (!(n->mode & 0222))
		return -EACCES;
	return 0;
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

uint64_t fs_size_max(const struct tree_node *n)
{
	return n && n->kind == NODE_VIEW ? VIEW_MAX_TEXT_SOURCE : UINT32_MAX;
}

static uint64_t handle_size_max(const struct handle *h)
{
	return h->size_max ? h->size_max : UINT32_MAX;
}

void fs_open_write(fuse_req_t req, struct fs *fs, struct inode *in, struct tree_node *n,
		   struct fuse_file_info *fi)
{
	int rc = fs_may_change(fs, n), err = 0;
	struct handle *h = NULL;

	if (rc == 0 && n->kind == NODE_PLAIN) {
		rc = open_plain(fs, n, fi->flags);
		if (rc >= 0) {
			h = fs_new_handle(fs, in);
			h->fd = rc;
			rc = 0;
		}
	} else if (rc == 0) {
		struct edit *e = fs_start_writing(fs, in, n, (fi->flags & O_TRUNC) != 0, &err);

		rc = -err;
		if (e) {
			h = fs_new_handle(fs, in);
			h->edit = e;
			h->truncated = (fi->flags & O_TRUNC) != 0;
			h->size_max = fs_size_max(n);
			/* an open that empties it makes a new version, which
			 * its release saves */
			h->retry = !h->truncated && edit_failed_as_is(e);
		}
	}
	tree_read_unlock(fs->tree);
	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = 0;
	if (fuse_reply_open(req, fi) == -ENOENT)
		fs_handle_free(fs, h); /* the open was interrupted: no release comes */
}

void fs_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
	      struct fuse_file_info *fi)
{
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	int rc;

	if (h && h->fd >= 0) {
		rc = io_pwrite_all(h->fd, buf, size, (uint64_t)off);
		if (rc == 0)
			__atomic_store_n(&h->wrote, 1, __ATOMIC_RELEASE);
	} else if (!h || !h->edit) {
		rc = -EBADF;
	} else if ((uint64_t)off + size > handle_size_max(h)) {
		rc = -EFBIG;
	} else {
		rc = edit_write(h->edit, buf, size, (uint64_t)off);
		__atomic_store_n(&h->wrote, 1, __ATOMIC_RELEASE);
	}
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_write(req, size);
}

/* Saves the edit h writes to.  What h wrote before is in this save, so its
 * release has nothing of its own left to save: a release saving anyway
 * would save what another open of the file did meanwhile (an open that
 * emptied it, with its writes still to come). */
static int save_handle(struct fs *fs, struct handle *h)
{
	int wrote = __atomic_exchange_n(&h->wrote, 0, __ATOMIC_ACQ_REL);
	int rc = fs_save(fs, h->inode, h->edit);

	if (rc != 0 && wrote)
		__atomic_store_n(&h->wrote, 1, __ATOMIC_RELEASE); /* tried again when released */
	else if (rc == 0)
		__atomic_store_n(&h->truncated, 0, __ATOMIC_RELEASE);
	notify_wait(fs); /* the kernel's caches are right before close returns */
	return rc < 0 ? rc : 0;
}

/* The first close or fsync of an open made after the file's save failed
 * tries that save again, where it may pass now (fs_may_retry): 1 then. */
static int retry_readied(struct fs *fs, struct handle *h)
{
	return __atomic_exchange_n(&h->retry, 0, __ATOMIC_ACQ_REL) && fs_may_retry(fs, h->inode, h->edit) == 1;
}

/* Every close(2) of a descriptor of the file flushes, also the close of
 * a duplicate (a shell's `> file` opens, dup2s and closes before it
 * writes): a file only truncated by its open is saved when released. */
void fs_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;

	/* read-only, opens send nothing (fs_init) and no close has anything
	 * to save: ENOSYS tells the kernel to stop sending flushes too */
	if (!fs->writable) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (h && h->fd >= 0)
		fs_loose_written(fs, h);
	if (h && h->edit && (retry_readied(fs, h) || __atomic_load_n(&h->wrote, __ATOMIC_ACQUIRE)))
		fuse_reply_err(req, -save_handle(fs, h));
	else
		fuse_reply_err(req, 0);
}

/* A loose file written through the mount is what its folder shows, with
 * its views, when close or fsync returns: the folder is read again. */
void fs_loose_written(struct fs *fs, struct handle *h)
{
	if (!__atomic_exchange_n(&h->wrote, 0, __ATOMIC_ACQ_REL))
		return;
	fs_reload(fs, h->inode, NULL, NULL);
	notify_wait(fs);
}

void fs_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct handle *h = (struct handle *)(uintptr_t)fi->fh;
	int rc = 0;

	if (h && h->fd >= 0) {
		rc = (datasync ? fdatasync(h->fd) : fsync(h->fd)) < 0 ? -errno : 0;
		fs_loose_written(fs, h);
	} else if (h && h->edit) {
		retry_readied(fs, h);
		rc = save_handle(fs, h);
	}
	fuse_reply_err(req, -rc);
}

void fs_release_edit(struct fs *fs, struct handle *h)
{
	int others = edit_remove_writer(h->edit);

	/* its own change no close saved (an open that emptied the file,
	 * `: > file`, or a save that failed), or, with no other open
	 * writing, whatever is left (pages of a shared map written back
	 * through another handle) */
	if (!others || __atomic_load_n(&h->wrote, __ATOMIC_ACQUIRE)
	    || __atomic_load_n(&h->truncated, __ATOMIC_ACQUIRE))
		fs_save(fs, h->inode, h->edit);
	fs_edit_drop_idle(fs, h->inode, h->edit);
	edit_unref(h->edit);
	h->edit = NULL;
}

/* ---- attributes ------------------------------------------------------------ */

/* The size and time changes of setattr, on an edit. */
static int change_edit(struct edit *e, const struct stat *attr, int to_set)
{
	int rc = 0;

	if (to_set & FUSE_SET_ATTR_SIZE)
		rc = edit_truncate(e, (uint64_t)attr->st_size);
	if (to_set & FUSE_SET_ATTR_MTIME)
		edit_touch(e, attr->st_mtime);
	else if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		edit_touch(e, time(NULL));
	return rc;
}

/* truncate(1) and touch(1) on a file not open: an edit for the moment.
 * Called with the read lock, which it drops. */
static int change_closed(struct fs *fs, struct inode *in, struct tree_node *n, const struct stat *attr,
			 int to_set)
{
	int err = 0, rc;
	uint64_t version;
	struct edit *before = fs_edit_get(fs, in);
	struct edit *e = fs_start_writing(fs, in, n, 0, &err);

	tree_read_unlock(fs->tree);
	if (!e) {
		edit_unref(before);
		return -err;
	}
	rc = change_edit(e, attr, to_set);
	edit_writers(e, &version);
	edit_remove_writer(e);
	if (rc == 0) {
		rc = save(fs, in, e, !before);
		rc = rc < 0 ? rc : 0; /* 1: a temporary, kept in memory */
	}
	if (rc < 0 && !before) {
		/* a call that failed changed nothing: no text of it stays,
		 * unless an open joined the edit meanwhile (writers join
		 * under edits_lock) or wrote to it since */
		struct edit *taken = NULL;
		uint64_t now;

		pthread_mutex_lock(&fs->edits_lock);
		if (in->edit == e && edit_writers(e, &now) == 0 && now == version) {
			taken = e;
			__atomic_store_n(&in->edit, NULL, __ATOMIC_RELEASE);
		}
		pin_locked(fs, in);
		pthread_mutex_unlock(&fs->edits_lock);
		edit_unref(taken);
	} else {
		fs_edit_drop_idle(fs, in, e);
	}
	edit_unref(before);
	edit_unref(e);
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

/* The attributes of in, renamed over or deleted, once attr's changes are
 * made to it (change_gone): its edit's, else what it was when opened for
 * reading, else an empty file's; no name shows it. */
static void gone_stat(struct fs *fs, struct inode *in, const struct stat *attr, int to_set, struct stat *st)
{
	struct edit *e = fs_edit_get(fs, in);

	if (!e && !inode_opened_stat(fs->inodes, in, st)) {
		fs_scratch_stat(fs, in, NULL, st);
		if (to_set & FUSE_SET_ATTR_SIZE)
			st->st_size = attr->st_size;
	}
	if (e)
		fs_scratch_stat(fs, in, e, st); /* the changes are in it */
	else if (to_set & FUSE_SET_ATTR_MTIME)
		st->st_mtim = attr->st_mtim;
	else if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		clock_gettime(CLOCK_REALTIME, &st->st_mtim);
	edit_unref(e);
	st->st_nlink = 0;
}

/* A truncate or touch by path that met its file renamed over or deleted
 * since the kernel looked it up (a rename over the name holds the file,
 * and the truncate waits for it): made to that file, which no name shows
 * any more, as on a disk; an open of it elsewhere (its edit) sees it. */
static int change_gone(struct fs *fs, struct inode *in, const struct stat *attr, int to_set)
{
	struct edit *e = fs_edit_get(fs, in);
	int rc = e ? change_edit(e, attr, to_set) : 0;

	edit_unref(e);
	return rc;
}

static void setattr_scratch(fuse_req_t req, struct fs *fs, struct inode *in, const struct handle *h,
			    const struct stat *attr, int to_set)
{
	struct edit *e = fs_handle_edit(fs, in, h);
	struct stat st;
	int rc;

	if (!e) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	rc = change_edit(e, attr, to_set);
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
	double timeout = fs->timeout;
	struct tree_node *n;
	struct stat st;
	int rc = 0, gone = 0;

	if (fs_is_status(in)) {
		fuse_reply_err(req, EPERM); /* made by eifs, as it is */
		return;
	}
	if (in->scratch) {
		setattr_scratch(req, fs, in, h, attr, to_set);
		return;
	}
	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	if (!n && fs_made_stat(fs, in, &st) == 0) {
		/* as for the archive's other folders (cp -a, mv across archives) */
		tree_read_unlock(fs->tree);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	if (!n && h && h->edit && (to_set & FUSE_SET_ATTR_SIZE) && (uint64_t)attr->st_size > handle_size_max(h))
		rc = -EFBIG;
	else if (!n && h && h->edit)
		rc = change_edit(h->edit, attr, to_set);
	else if (!n && inode_removed(in))
		rc = !fs->writable && content ? -EROFS : (gone = 1, change_gone(fs, in, attr, to_set));
	else if (!n)
		rc = -ENOENT;
	else if (n->kind == NODE_PLAIN)
		rc = change_plain(fs, n, h, attr, to_set);
	else if (tree_is_dir(n) || !content)
		rc = 0; /* modes and owners follow the archive file */
	else if ((rc = fs_may_change(fs, n)) < 0)
		;
	else if ((to_set & FUSE_SET_ATTR_SIZE) && (uint64_t)attr->st_size > fs_size_max(n))
		rc = -EFBIG;
	else if (h && h->edit) {
		rc = change_edit(h->edit, attr, to_set);
		__atomic_store_n(&h->wrote, 1, __ATOMIC_RELEASE);
	} else {
		rc = change_closed(fs, in, n, attr, to_set); /* unlocks */
		tree_read_lock(fs->tree);
		n = inode_node(fs->inodes, in);
		gone = !n && inode_removed(in); /* renamed over during its save */
	}
	if (rc == 0 && n && n->kind == NODE_PLAIN) {
		tree_read_unlock(fs->tree);
		fs_reload(fs, in, NULL, NULL); /* its size and views changed */
		tree_read_lock(fs->tree);
		n = inode_node(fs->inodes, in);
	}
	if (rc == 0 && n) {
		struct fuse_entry_param e;

		fs_fill_entry(fs, in, n, &e);
		st = e.attr;
		timeout = e.attr_timeout;
	} else if (rc == 0 && h && h->edit) {
		memset(&st, 0, sizeof st);
		st.st_mode = S_IFREG | 0644;
		edit_stat(h->edit, &st);
	} else if (rc == 0 && gone) {
		gone_stat(fs, in, attr, to_set, &st);
		timeout = 0;
	} else if (rc == 0) {
		rc = -ENOENT;
	}
	tree_read_unlock(fs->tree);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_attr(req, &st, timeout);
}

