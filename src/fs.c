/* The FUSE glue, read side: lookups, attributes, listings, reads; reloads
 * after changes on disk and the kernel cache invalidations they need. */
#define _GNU_SOURCE
#include "fs.h"
#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "fs_write.h"
#include "log.h"
#include "views.h"
#include "worker.h"

/* The status file is no tree node: a fixed inode the kernel may know. */
static struct inode status_inode = { .name = FS_STATUS_NAME, .ino = 3 };

int fs_is_status(const struct inode *in)
{
	return in == &status_inode;
}

int fs_is_status_name(struct fs *fs, struct inode *pin, const char *name)
{
	return fs->writable && pin == inodes_root(fs->inodes) && strcmp(name, FS_STATUS_NAME) == 0;
}

struct inode *fs_inode(struct fs *fs, fuse_ino_t ino)
{
	return ino == FUSE_ROOT_ID ? inodes_root(fs->inodes) : (struct inode *)(uintptr_t)ino;
}

fuse_ino_t fs_ino(struct fs *fs, struct inode *in)
{
	return in == inodes_root(fs->inodes) ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)in;
}

void node_identity(const struct tree_node *n, struct identity *id)
{
	if (n->kind == NODE_VIEW)
		n = view_source(n);
	id->size = n->size;
	id->offset = n->offset;
	id->mtime = n->mtime;
	id->kind = n->kind;
	if (n->kind == NODE_PLAIN)
		id->epoch = n->plain_stamp; /* rewritten in place: same size, same second */
	else
		id->epoch = n->kind != NODE_FOLDER && n->src ? n->src->epoch : 0;
}

/* ---- notifications ----------------------------------------------------- */

enum { NOTIFY_WAIT_MS = 1000, NOTICE_END_MS = 1000 };

/* Kernel notices go out from a thread of their own: a request in progress
 * may hold kernel locks an invalidation would wait for. */
struct notice {
	fuse_ino_t ino;       /* the inode, or the parent of name */
	char *name;           /* an entry; NULL: the inode */
	int data;             /* also the cached contents */
};

static void send_notice(void *item, void *ctx)
{
	struct fs *fs = ctx;
	struct notice *n = item;

	if (fs->notify_delay_ms)
		g_usleep((gulong)fs->notify_delay_ms * 1000);
	/* ENOENT: the kernel has forgotten it already, nothing to do */
	if (n->name)
		fuse_lowlevel_notify_inval_entry(fs->se, n->ino, n->name, strlen(n->name));
	else
		fuse_lowlevel_notify_inval_inode(fs->se, n->ino, n->data ? 0 : -1, 0);
	g_free(n->name);
	g_free(n);
}

static void free_notice(void *item)
{
	struct notice *n = item;

	g_free(n->name);
	g_free(n);
}

static void push(struct fs *fs, struct notice *n)
{
	/* not serving yet, or no more (fs_end_notices) */
	if (!fs->notifier || __atomic_load_n(&fs->notices_ended, __ATOMIC_ACQUIRE)) {
		free_notice(n);
		return;
	}
	worker_push(fs->notifier, n);
}

void notify_inode(struct fs *fs, struct inode *in, int data)
{
	struct notice *n = g_new0(struct notice, 1);

	n->ino = fs_ino(fs, in);
	n->data = data;
	if (data)
		__atomic_store_n(&in->pages_stored, 0, __ATOMIC_RELAXED);
	push(fs, n);
}

/* The attributes alone, sent at once rather than queued: the reply that
 * follows must not leave the kernel answering a stat from what it had
 * (a rename's: the kernel keeps the moved inode's attributes).  Safe
 * within a request, as the kernel takes no lock of the inode for it. */
static void notify_attrs_now(struct fs *fs, struct inode *in)
{
	if (fs->se && fs->notifier)
		fuse_lowlevel_notify_inval_inode(fs->se, fs_ino(fs, in), -1, 0);
}

void notify_entry(struct fs *fs, struct inode *parent, const char *name)
{
	struct notice *n = g_new0(struct notice, 1);

	n->ino = fs_ino(fs, parent);
	n->name = g_strdup(name);
	push(fs, n);
}

void notify_wait(struct fs *fs)
{
	/* Bounded: a kernel that holds a lock this very request keeps would
	 * otherwise never let the notice through.  A notice that comes later
	 * than close lets a reader see old attributes for a moment: say so. */
	if (fs->notifier && worker_wait(fs->notifier, NOTIFY_WAIT_MS) < 0)
		log_msg(LOG_WARNING, "kernel cache notices still pending after %d ms; "
			"a reader may see old attributes for a moment", NOTIFY_WAIT_MS);
}

void fs_init_state(struct fs *fs)
{
	fs->inodes = inodes_new(fs->tree);
	inodes_set_edit_free(fs->inodes, edit_unref);
	pthread_mutex_init(&fs->edits_lock, NULL);
	pthread_mutex_init(&fs->gates_lock, NULL);
	pthread_mutex_init(&fs->opens_lock, NULL);
	fs->gates = g_hash_table_new(g_str_hash, g_str_equal);
	fs_made_init(fs);
	/* before any request: the top directory may be built before the loop
	 * serves (cmd_mount.c) */
	tree_before_wait(fs->tree, serve_will_block);
}

void fs_before_view_wait(int converting)
{
	(void)converting;
	serve_will_block();
}

void fs_start(struct fs *fs, struct fuse_session *se)
{
	fs->se = se;
	fs->notifier = worker_new("eifs-notify", send_notice, fs);
	view_cache_before_wait(fs->views, fs_before_view_wait);
}

void fs_drain_notices(struct fs *fs, unsigned timeout_ms)
{
	gint64 end = g_get_monotonic_time() + (gint64)timeout_ms * 1000;

	/* requests answered meanwhile may queue more */
	while (fs->notifier && worker_pending(fs->notifier)) {
		gint64 left = (end - g_get_monotonic_time()) / 1000;

		if (left <= 0) {
			log_msg(LOG_WARNING, "notices to the kernel still under way after %u ms at the end", timeout_ms);
			return;
		}
		worker_wait(fs->notifier, (unsigned)left);
	}
}

int fs_end_notices(struct fs *fs, int (*abort_connection)(void *ctx), void *ctx)
{
	int rc = -ENOTSUP, left_behind = 0;

	if (!fs->notifier)
		return 0;
	/* no thread answers requests any more, and the kernel's caches go
	 * with the connection: the notices not sent yet are moot, and so
	 * are those a reload pushes from now on (the watch's) */
	__atomic_store_n(&fs->notices_ended, 1, __ATOMIC_RELEASE);
	worker_discard(fs->notifier, free_notice);
	if (worker_wait(fs->notifier, NOTICE_END_MS) < 0) {
		/* the one under way waits on a request queued in the kernel
		 * (a page or a folder it locked), which none will answer */
		if (abort_connection)
			rc = abort_connection(ctx);
		if (rc == 0 && worker_wait(fs->notifier, NOTICE_END_MS) == 0) {
			log_msg(LOG_WARNING, "a notice to the kernel still waited %d ms after the last request "
				"was answered: the connection was aborted", NOTICE_END_MS);
		} else {
			/* the open files are saved all the same; the daemon
			 * ends once the kernel lets the thread go */
			log_msg(LOG_ERR, "a notice to the kernel waits on a request no thread answers any more, "
				"and the connection could not be aborted (%s)",
				rc < 0 ? strerror(-rc) : "still waiting after the abort");
			worker_abandon(fs->notifier, free_notice);
			fs->notifier = NULL;
			left_behind = 1;
		}
	}
	worker_free(fs->notifier);
	fs->notifier = NULL;
	fs->se = NULL;
	return left_behind;
}

/* Opens whose release never came: the kernel drops the releases still
 * queued when the mount goes, and a signal ends the loop before those it
 * had not read.  What they wrote is saved now, as their release would
 * have. */
static void end_opens(struct fs *fs)
{
	unsigned writing = 0;

	for (struct handle *h = fs->opens; h; h = h->next)
		writing += h->edit && !h->inode->scratch; /* a temporary stays unsaved */
	if (writing)
		log_msg(LOG_NOTICE, "saving %u file(s) still open for writing at unmount", writing);
	while (fs->opens)
		fs_handle_free(fs, fs->opens);
}

/* A file written through the mount whose save failed goes with the
 * unmount: said, once (not of a temporary: one by design).  Called with
 * the inodes' lock held: the path is made here. */
static void warn_unsaved(struct inode *in, void *ctx)
{
	char *msg = NULL;
	int err = edit_error(in->edit, &msg);

	(void)ctx;
	if (!in->scratch && edit_unsaved(in->edit)) {
		GString *path = g_string_new(NULL);

		for (struct inode *a = in; a && a->parent; a = a->parent) {
			g_string_prepend(path, a->name);
			g_string_prepend_c(path, '/');
		}
		log_msg(LOG_WARNING, "%s: not saved (%s%s%s); what was written through the mount is gone with the unmount",
			path->str, err ? strerror(err) : "no save came", err && *msg ? ": " : "", err ? msg : "");
		g_string_free(path, TRUE);
	}
	g_free(msg);
}

static void collect_unsaved(struct inode *in, void *ctx)
{
	if (!in->scratch && edit_unsaved(in->edit)) {
		in->refs++; /* under the table's lock: kept until tried */
		g_ptr_array_add(ctx, in);
	}
}

/* Reads again what changed on disk of in's folders and archives, from
 * the top down, and of in. */
static void refresh_above(struct fs *fs, struct inode *in)
{
	GPtrArray *chain = g_ptr_array_new();

	/* parents are read under the lock, and held: a move or a forget
	 * meanwhile may take one away (a close's retry runs beside them) */
	tree_read_lock(fs->tree);
	for (struct inode *a = in; a; a = a->parent) {
		inode_ref(fs->inodes, a);
		g_ptr_array_add(chain, a);
	}
	tree_read_unlock(fs->tree);
	for (guint i = chain->len; i-- > 0;)
		fs_refresh(fs, g_ptr_array_index(chain, i), 0);
	for (guint i = 0; i < chain->len; i++)
		inode_unref(fs->inodes, g_ptr_array_index(chain, i));
	g_ptr_array_free(chain, TRUE);
}

/* A failure whose cause may have gone by the unmount: a disk full then,
 * an archive another program was rewriting or held. */
static int may_pass(int err)
{
	switch (err) {
	case EIO: case ENOSPC: case EDQUOT: case ESTALE: case EAGAIN: case EBUSY:
	case ENOLCK: case ETIMEDOUT: case ENOMEM: case EINTR:
		return 1;
	default: /* a text that does not convert, a name or size the
		  * archive cannot hold: it fails the same way again */
		return 0;
	}
}

static void log_inode(struct fs *fs, int level, struct inode *in, const char *what)
{
	char *path = inode_path(fs->inodes, in);

	log_msg(level, "%s: %s", path, what);
	g_free(path);
}

/* Whether in's source still holds what it did when e began, or as e's
 * last save left it (1): else another program changed it since (0), and
 * a save tried again would write over that; -1 when that is not known
 * (a file too large to digest, a new one). */
static int as_it_began(struct fs *fs, struct inode *in, struct edit *e)
{
	struct edit_digest base, now;
	struct tree_node *n;
	int same;

	if (!edit_base(e, &base))
		return -1;
	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	same = n && fs_source_digest(fs, n, &now) == 0 && memcmp(&now, &base, sizeof now) == 0;
	tree_read_unlock(fs->tree);
	return same;
}

int fs_may_retry(struct fs *fs, struct inode *in, struct edit *e)
{
	int began;

	/* not over text written since the failure, which its own close saves */
	if (!edit_failed_as_is(e) || !may_pass(edit_error(e, NULL)))
		return -1;
	refresh_above(fs, in); /* an archive readable again is one again */
	began = as_it_began(fs, in, e);
	if (began == 1)
		edit_retry(e);
	return began;
}

/* Files written through the mount whose last save failed of a cause that
 * may have gone get one more try before the unmount drops their text. */
static void retry_unsaved(struct fs *fs)
{
	GPtrArray *unsaved = g_ptr_array_new();

	pthread_mutex_lock(&fs->edits_lock);
	inodes_each_edit(fs->inodes, collect_unsaved, unsaved);
	pthread_mutex_unlock(&fs->edits_lock);
	for (guint i = 0; i < unsaved->len; i++) {
		struct inode *in = g_ptr_array_index(unsaved, i);
		struct edit *e = fs_edit_get(fs, in);
		int began = e ? fs_may_retry(fs, in, e) : -1;

		if (began == 1) {
			if (fs_save(fs, in, e) >= 0)
				log_inode(fs, LOG_NOTICE, in, "saved at the unmount, after a failed save");
		} else if (began == 0) {
			log_inode(fs, LOG_WARNING, in, "not tried again at the unmount: its entry changed on "
				  "disk since it was opened or last saved, and is kept as it is");
		}
		if (e)
			edit_unref(e);
		inode_unref(fs->inodes, in);
	}
	g_ptr_array_free(unsaved, TRUE);
}

/* After the session ended: ends the opens left, then what fs_init_state
 * set up. */
void fs_stop(struct fs *fs)
{
	fs_watch_stop(fs);
	fs_end_notices(fs, NULL, NULL);
	end_opens(fs);
	retry_unsaved(fs);
	pthread_mutex_lock(&fs->edits_lock);
	inodes_each_edit(fs->inodes, warn_unsaved, NULL);
	pthread_mutex_unlock(&fs->edits_lock);
	inodes_free(fs->inodes);
	fs->inodes = NULL;
	fs_made_free(fs);
	pthread_mutex_destroy(&fs->edits_lock);
	pthread_mutex_destroy(&fs->gates_lock);
	pthread_mutex_destroy(&fs->opens_lock);
	g_hash_table_destroy(fs->gates);
}

/* ---- reloads ----------------------------------------------------------- */

/* A known inode and what its node was before a reload. */
struct before {
	struct inode *in;
	struct identity id;
	int had_node;
	int was_dir;
};

static void collect(struct inode *in, void *ctx)
{
	struct before b = { .in = in };

	in->refs++; /* under the table's lock: kept until compared */
	g_array_append_val((GArray *)ctx, b);
}

/* The inode whose node is the unit of in's node. */
static struct inode *unit_inode(struct fs *fs, struct inode *in, struct tree_node **unit)
{
	struct tree_node *n = inode_node(fs->inodes, in);

	*unit = n ? tree_unit(n) : NULL;
	for (; in && *unit; in = in->parent)
		if (inode_node(fs->inodes, in) == *unit)
			return in;
	return NULL;
}

/* Tells the kernel which known inodes below top changed or went. */
static void invalidate_changed(struct fs *fs, GArray *before)
{
	for (guint i = 0; i < before->len; i++) {
		struct before *b = &g_array_index(before, struct before, i);
		struct tree_node *n = inode_node(fs->inodes, b->in);
		struct identity now;

		if (b->in->scratch)
			continue; /* in memory: no reload changes it */
		if (!n) {
			/* unlinked or renamed over through the mount: the kernel
			 * moved its names itself, and the name may stand for the
			 * file that took its place by now (a notice would drop
			 * that one's dentry, and with its inode a saved view's
			 * text).  An emptied folder kept keeps its name too (a
			 * shell in it would lose its working directory). */
			if (b->had_node && b->in->parent && !__atomic_load_n(&b->in->unlinked, __ATOMIC_ACQUIRE)
			    && !fs_made_empty(fs, b->in))
				notify_entry(fs, b->in->parent, b->in->name);
			notify_inode(fs, b->in, 1);
			continue;
		}
		node_identity(n, &now);
		/* a file that became a folder or the other way (an archive
		 * unreadable for a while): the kernel keeps an inode's type,
		 * so its name must go for the next lookup to find the new one */
		if (b->had_node && b->was_dir != tree_is_dir(n) && b->in->parent)
			notify_entry(fs, b->in->parent, b->in->name);
		/* a folder's listing may differ with the same identity (two
		 * changes in one second) */
		if (!b->had_node || !identity_equal(&now, &b->id) || tree_is_dir(n))
			notify_inode(fs, b->in, 1);
	}
}

/* Carries out m (write lock); returns the inode that lost its name, with
 * a reference, for done_moving. */
static struct inode *move_inode(struct fs *fs, const struct fs_move *m)
{
	struct tree_node *pn = inode_node(fs->inodes, m->to_parent), *n;
	struct inode *gone;
	int err = 0;

	n = pn && tree_is_dir(pn) && !m->unlink ? tree_lookup(fs->tree, pn, m->name, &err) : NULL;
	gone = inodes_find_ref(fs->inodes, m->to_parent, n ? n->name : m->name);
	if (gone && gone == m->in) {
		inode_unref(fs->inodes, gone); /* m->in's caller holds it too */
		gone = NULL;
	}
	if (m->unlink) {
		inodes_unlink(fs->inodes, m->to_parent, m->name);
	} else {
		inodes_move(fs->inodes, m->in, m->to_parent, n ? n->name : m->name, 0);
		fs_made_reparented(fs, m->in);
		/* it is another file now (a temporary became the view it
		 * saved, or it came from another unit): the kernel's
		 * attributes of it are what it was, until the rename's reply
		 * (at once) and its pages (queued) */
		notify_attrs_now(fs, m->in);
		notify_inode(fs, m->in, 1);
	}
	return gone;
}

/* After the write lock: what lost its name no longer needs its edit. */
static void done_moving(struct fs *fs, struct inode *gone)
{
	if (gone) {
		fs_edit_pin(fs, gone);
		inode_unref(fs->inodes, gone);
	}
}

void fs_move(struct fs *fs, const struct fs_move *move)
{
	struct inode *gone;

	tree_write_lock(fs->tree);
	gone = move_inode(fs, move);
	tree_write_unlock(fs->tree);
	done_moving(fs, gone);
}

static void reload(struct fs *fs, struct inode *in, const struct fs_move *move, int external,
		   const struct save_stamps *saved);

void fs_reload(struct fs *fs, struct inode *in, const struct fs_move *move, const struct save_stamps *saved)
{
	reload(fs, in, move, 0, saved);
}

static void reload(struct fs *fs, struct inode *in, const struct fs_move *move, int external,
		   const struct save_stamps *saved)
{
	GArray *before = g_array_new(FALSE, FALSE, sizeof(struct before));
	struct inode *top, *gone = NULL, *from;
	struct tree_node *unit;
	GPtrArray *left = NULL;

	tree_write_lock(fs->tree);
	top = unit_inode(fs, in, &unit);
	if (!top) {
		tree_write_unlock(fs->tree);
		g_array_unref(before);
		return;
	}
	/* the identities of the nodes as they are before the reload */
	inodes_each_below(fs->inodes, top, collect, before);
	for (guint i = 0; i < before->len; i++) {
		struct before *b = &g_array_index(before, struct before, i);
		struct tree_node *n = inode_node(fs->inodes, b->in);

		b->had_node = n != NULL;
		b->was_dir = n && tree_is_dir(n);
		if (n)
			node_identity(n, &b->id);
	}
	/* a save of ours that found the file other than the tree last saw
	 * it, or left it other than it is now: another program changed it */
	if (saved && saved->known && unit->kind == NODE_ARCHIVE
	    && !tree_same_stamp(&saved->before, &unit->src->stamp))
		external = 1;
	/* the folders the entry leaves, which stay if it was their last */
	from = !move ? NULL : move->unlink ? move->to_parent : move->from ? move->from : move->in ? move->in->parent : NULL;
	if (from)
		left = fs_made_archive_folders(fs, from);
	tree_reload(fs->tree, unit, external, saved && saved->known ? &saved->after : NULL);
	if (move && (move->in || move->unlink))
		gone = move_inode(fs, move);
	if (left)
		fs_made_keep_emptied(fs, left);
	notify_inode(fs, top, 1);
	invalidate_changed(fs, before);
	tree_write_unlock(fs->tree);
	done_moving(fs, gone);
	for (guint i = 0; i < before->len; i++)
		inode_unref(fs->inodes, g_array_index(before, struct before, i).in);
	g_array_unref(before);
}

/* Reads in's unit again after another program changed it, or may have
 * (look TREE_RACY: a change in the tick it was read in shows no trace). */
static void reload_changed(struct fs *fs, struct inode *in, int wait, enum tree_look look)
{
	char *what = inode_path(fs->inodes, in);

	serve_will_block(); /* a reload, and maybe a wait for the kernel */
	if (look == TREE_CHANGED)
		log_msg(LOG_INFO, "%s: changed on disk; reading it again", what);
	else /* after every copy into the folder: no news for the log */
		log_msg(LOG_DEBUG, "%s: read within seconds of its last change on disk; reading it again, "
			"now that its times can be trusted", what);
	g_free(what);
	reload(fs, in, NULL, 1, NULL);
	/* the kernel learns what went stale before the open that found the
	 * change replies.  Never in a lookup: the kernel holds the parent's
	 * lock, which forgetting a name of it needs */
	if (wait)
		notify_wait(fs);
}

/* Whether a save of ours is writing what n's unit is made of (read lock):
 * it reads that again itself, and a look meanwhile would take its work
 * half done for another program's.  Other files' changes are looked at
 * all the same. */
static int saving_unit_of(struct fs *fs, struct tree_node *n)
{
	struct tree_node *unit = tree_unit(n);
	char *path;
	int busy;

	if (!unit || !__atomic_load_n(&fs->saving, __ATOMIC_ACQUIRE))
		return 0;
	path = unit->kind == NODE_ARCHIVE ? g_strdup(unit->src->path) : tree_real_path(fs->tree, unit);
	busy = !path || fs_saving_at(fs, path);
	g_free(path);
	return busy;
}

int fs_refresh(struct fs *fs, struct inode *in, int wait)
{
	struct tree_node *n, *unit;
	enum tree_look look = TREE_SAME;

	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	unit = n ? tree_unit(n) : NULL;
	if (unit && !saving_unit_of(fs, n)) {
		look = tree_unit_changed(fs->tree, unit);
		if (look != TREE_CHANGED) {
			enum tree_look plain = tree_plain_changed(fs->tree, n);

			if (plain > look)
				look = plain;
		}
	}
	tree_read_unlock(fs->tree);
	if (look != TREE_SAME)
		reload_changed(fs, in, wait, look);
	else if (wait && fs->notifier && worker_pending(fs->notifier)) {
		/* another request's reload found the change: its notices go
		 * first, and they may wait for requests queued behind this one */
		serve_will_block();
		notify_wait(fs);
	}
	return look != TREE_SAME;
}

/* ---- attributes -------------------------------------------------------- */

/* A view's size is exact before its first read: from the source's header,
 * or by converting it now (small text views). */
static void settle_size(struct fs *fs, struct tree_node *n)
{
	if (n->kind == NODE_VIEW)
		view_cache_size(fs->views, fs->tree, n);
}

static void stat_inode(struct fs *fs, struct inode *in, struct tree_node *n, struct stat *st)
{
	struct edit *e = fs_edit_get(fs, in);

	settle_size(fs, n);
	tree_stat(fs->tree, n, st);
	if (n->kind == NODE_PLAIN)
		tree_plain_stat(fs->tree, n, st); /* passed through: as it is now */
	if (e) {
		if (fs_edit_shows(fs, e, n))
			edit_stat(e, st);
		edit_unref(e);
	}
}

/* A loose file of the game folder, or a view of one: it changes under the
 * tree (anyone may write it), so the kernel asks for it every second. */
static int loose(const struct tree_node *n)
{
	return n && (n->kind == NODE_PLAIN || (n->kind == NODE_VIEW && view_source(n)->kind == NODE_PLAIN));
}

double fs_attr_timeout(const struct fs *fs, const struct tree_node *n)
{
	/* a loose file may be changed by anyone at any time, and only its
	 * folder's listing says when: its attributes are asked for again
	 * after a second */
	return loose(n) && fs->timeout > 1.0 ? 1.0 : fs->timeout;
}

void fs_fill_entry(struct fs *fs, struct inode *in, struct tree_node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof *e);
	e->ino = fs_ino(fs, in);
	e->generation = 1;
	e->attr_timeout = fs_attr_timeout(fs, n);
	e->entry_timeout = fs->timeout;
	stat_inode(fs, in, n, &e->attr);
}

static void status_stat(struct fs *fs, struct stat *st)
{
	GString *text = fs_status_text(fs);

	tree_stat(fs->tree, tree_root(fs->tree), st); /* its owner */
	st->st_ino = status_inode.ino;
	st->st_mode = S_IFREG | 0444;
	st->st_nlink = 1;
	st->st_size = (off_t)text->len;
	st->st_blocks = 0;
	st->st_mtime = st->st_ctime = st->st_atime = time(NULL);
	g_string_free(text, TRUE);
}

/* A folder made inside an archive, before its first entry (fs_made.c). */
static int reply_made(fuse_req_t req, struct fs *fs, struct inode *pin, const char *name)
{
	struct fuse_entry_param e;
	struct inode *in;
	int rc = -ENOENT;

	tree_read_lock(fs->tree);
	in = fs_made_find(fs, pin, name);
	if (in) {
		rc = fs_made_entry(fs, in, &e);
		if (rc == 0)
			inodes_count_lookup(fs->inodes, in);
		inode_unref(fs->inodes, in);
	}
	tree_read_unlock(fs->tree);
	if (rc < 0)
		return 0;
	fuse_reply_entry(req, &e);
	return 1;
}

/* An editor's temporary has no tree node: found among the inodes. */
static int reply_scratch(fuse_req_t req, struct fs *fs, struct inode *pin, const char *name)
{
	struct inode *in = inodes_find_ref(fs->inodes, pin, name);
	struct fuse_entry_param e;
	struct edit *ed;

	if (!in)
		return 0;
	if (!in->scratch || !(ed = fs_edit_get(fs, in))) {
		inode_unref(fs->inodes, in);
		return 0;
	}
	memset(&e, 0, sizeof e);
	e.ino = fs_ino(fs, in);
	e.generation = 1;
	e.attr_timeout = e.entry_timeout = fs->timeout;
	fs_scratch_stat(fs, in, ed, &e.attr);
	edit_unref(ed);
	inodes_count_lookup(fs->inodes, in);
	inode_unref(fs->inodes, in);
	fuse_reply_entry(req, &e);
	return 1;
}

static int is_folder(const struct tree_node *n)
{
	return n && n->kind == NODE_FOLDER;
}

/* Whether in's node, if it has one, is what pred says.  A folder of the
 * game folder and a loose file change under the mount, and a stat of them
 * is cheap: lookup and getattr look at them again. */
static int inode_is(struct fs *fs, struct inode *in, int (*pred)(const struct tree_node *))
{
	int is;

	tree_read_lock(fs->tree);
	is = pred(inode_node(fs->inodes, in));
	tree_read_unlock(fs->tree);
	return is;
}

/* The error for an inode the tree no longer has, when nothing open
 * stands for it.  ESTALE has the kernel walk the path once more, but
 * only once: a second change meanwhile brings it to the program.  So
 * inside an archive, whose changes come through the mount, a file or
 * folder removed through the mount, or gone with nothing standing at its
 * name, is ENOENT, as a lookup in a removed folder on a disk.  ESTALE is
 * kept where the kernel must look again to see what is there now:
 * something else at the name (an archive that can no longer be read,
 * shown as a file; another ASCII case), an archive another program
 * changed and that is not read again yet, and real folders, which other
 * programs change at any time (and a rename of ours between two of them
 * reloads each on its own).  Called with the tree's read lock held. */
static int gone_err(struct fs *fs, struct inode *in)
{
	struct tree_node *pn = NULL, *unit;
	int err = 0;

	if (fs_made_empty(fs, in) || inode_removed(in))
		return ENOENT;
	for (; in->parent; in = in->parent) {
		if (fs_made_empty(fs, in->parent))
			return ENOENT; /* a made folder holds no entries */
		pn = inode_node(fs->inodes, in->parent);
		if (pn)
			break;
	}
	if (!pn || !tree_is_dir(pn) || pn->kind == NODE_FOLDER)
		return ESTALE;
	unit = tree_unit(pn);
	if (unit && !saving_unit_of(fs, pn) && tree_unit_changed(fs->tree, unit))
		return ESTALE;
	if (tree_lookup(fs->tree, pn, in->name, &err) || err != ENOENT)
		return ESTALE; /* another file there now, or its archive unreadable */
	return ENOENT;
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *pin = fs_inode(fs, parent), *in;
	struct fuse_entry_param e;
	struct tree_node *pn, *n;
	int err = 0, refreshed = 0, plain_checked = 0, parent_gone = 0;
	char *pname = NULL;

	/* another program may have changed what the name stands for: a
	 * folder is checked each time (its mtime; a loose file found, its
	 * own times), an archive when the name is not found */
	if (inode_is(fs, pin, is_folder))
		refreshed = fs_refresh(fs, pin, 0) >= 0;
again:
	tree_read_lock(fs->tree);
	pn = inode_node(fs->inodes, pin);
	n = pn ? tree_lookup(fs->tree, pn, name, &err) : NULL;
	if (!pn)
		err = gone_err(fs, pin);
	if (!n && !refreshed && (err == ENOENT || err == EIO)) {
		tree_read_unlock(fs->tree);
		refreshed = 1;
		if (fs_refresh(fs, pin, 0) > 0)
			goto again; /* nodes of the old generation are gone */
		tree_read_lock(fs->tree);
		pn = inode_node(fs->inodes, pin);
		n = pn ? tree_lookup(fs->tree, pn, name, &err) : NULL;
		if (!pn)
			err = gone_err(fs, pin);
	}
	parent_gone = !pn && !fs_made_empty(fs, pin);
	if (n && !plain_checked && loose(n) && !saving_unit_of(fs, n)) {
		enum tree_look look = tree_plain_changed(fs->tree, n);

		plain_checked = 1;
		if (look != TREE_SAME) {
			tree_read_unlock(fs->tree);
			reload_changed(fs, pin, 0, look);
			goto again;
		}
	}
	if (!n && err == ENOENT && log_debugging() && pn)
		pname = g_strdup(pn->name);
	if (n) {
		in = inodes_lookup(fs->inodes, pin, n);
		fs_fill_entry(fs, in, n, &e);
	}
	tree_read_unlock(fs->tree);
	if (!n && err == ENOENT && (reply_scratch(req, fs, pin, name) || reply_made(req, fs, pin, name))) {
		g_free(pname);
		return;
	}
	if (n) {
		fuse_reply_entry(req, &e);
	} else if (err == ENOENT && fs_is_status_name(fs, pin, name)) {
		memset(&e, 0, sizeof e);
		e.ino = (fuse_ino_t)(uintptr_t)&status_inode;
		e.generation = 1;
		status_stat(fs, &e.attr);
		fuse_reply_entry(req, &e);
	} else if (err == ENOENT && !parent_gone) {
		if (log_debugging())
			log_msg(LOG_DEBUG, "lookup: no %s in %s", name, pname ? pname : "?");
		/* a negative entry: the kernel may remember that it is absent
		 * (briefly when the mount changes) */
		memset(&e, 0, sizeof e);
		e.entry_timeout = fs->writable ? 1.0 : fs->timeout;
		fuse_reply_entry(req, &e);
	} else {
		fuse_reply_err(req, err);
	}
	g_free(pname);
}

static void fs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *in = fs_inode(fs, ino);

	if (in != &status_inode)
		inodes_forget(fs->inodes, in, nlookup);
	fuse_reply_none(req);
}

static void fs_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	struct fs *fs = fuse_req_userdata(req);

	for (size_t i = 0; i < count; i++) {
		struct inode *in = fs_inode(fs, forgets[i].ino);

		if (in != &status_inode)
			inodes_forget(fs->inodes, in, forgets[i].nlookup);
	}
	fuse_reply_none(req);
}

/* The node that has the name of an inode renamed over now. */
static struct tree_node *replacement(struct fs *fs, struct inode *in)
{
	struct tree_node *pn = inode_node(fs->inodes, in->parent);
	int err = 0;

	return pn && tree_is_dir(pn) ? tree_lookup(fs->tree, pn, in->name, &err) : NULL;
}

static int made_stat(struct fs *fs, struct inode *in, struct stat *st)
{
	int rc;

	tree_read_lock(fs->tree);
	rc = fs_made_empty(fs, in) ? fs_made_stat(fs, in, st) : -ENOENT;
	tree_read_unlock(fs->tree);
	return rc;
}

static void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *in = fs_inode(fs, ino);
	struct handle *h = fi ? (struct handle *)(uintptr_t)fi->fh : NULL;
	struct tree_node *n;
	struct stat st;
	struct edit *e;
	double timeout;
	int err;

	if (in == &status_inode) {
		status_stat(fs, &st);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	if (h && !h->edit && h->fd < 0 && __atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE)) {
		/* gone, but open: the attributes it had, as its reads give */
		st = h->st;
		st.st_nlink = 0;
		fuse_reply_attr(req, &st, 0);
		return;
	}
	if (!h && __atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE) && inode_opened_stat(fs->inodes, in, &st)) {
		st.st_nlink = 0; /* fstat(2) of a file gone while open */
		fuse_reply_attr(req, &st, fs->timeout);
		return;
	}
	if (inode_is(fs, in, loose))
		fs_refresh(fs, in, 0); /* rewritten in place: its views follow */
	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	if (!n && !h && __atomic_load_n(&in->replaced, __ATOMIC_ACQUIRE))
		n = replacement(fs, in); /* stat(2) of a name renamed over just now */
	if (n)
		stat_inode(fs, in, n, &st);
	timeout = fs_attr_timeout(fs, n);
	tree_read_unlock(fs->tree);
	if (n) {
		fuse_reply_attr(req, &st, timeout);
		return;
	}
	if (made_stat(fs, in, &st) == 0) {
		fuse_reply_attr(req, &st, 0);
		return;
	}
	/* gone (deleted, renamed over) but maybe still open */
	e = fs_handle_edit(fs, in, h);
	if (e) {
		fs_scratch_stat(fs, in, e, &st);
		st.st_nlink = in->scratch && !__atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE);
		edit_unref(e);
		fuse_reply_attr(req, &st, 0);
		return;
	}
	if ((h && h->read_open) || inode_opened_stat(fs->inodes, in, &st)) {
		/* fstat(2) of a file open while another program took it
		 * away (its archive renamed out of the folder, the entry
		 * deleted): what it was, as its reads give */
		if (h && h->read_open)
			st = h->st;
		st.st_nlink = 0;
		fuse_reply_attr(req, &st, 0);
		return;
	}
	tree_read_lock(fs->tree);
	err = gone_err(fs, in);
	tree_read_unlock(fs->tree);
	fuse_reply_err(req, err); /* as for open */
}

/* ---- opening ------------------------------------------------------------ */

struct handle *fs_new_handle(struct fs *fs, struct inode *in)
{
	struct handle *h = g_new0(struct handle, 1);

	h->inode = in;
	h->fd = -1;
	if (in) {
		inode_ref(fs->inodes, in);
		__atomic_add_fetch(&in->handles, 1, __ATOMIC_ACQ_REL);
	}
	pthread_mutex_lock(&fs->opens_lock);
	h->next = fs->opens;
	if (h->next)
		h->next->prev = h;
	fs->opens = h;
	pthread_mutex_unlock(&fs->opens_lock);
	return h;
}

static void forget_open(struct fs *fs, struct handle *h)
{
	pthread_mutex_lock(&fs->opens_lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->opens = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->opens_lock);
}

/* Ends an open: saves what was written, lets go of what it held. */
void fs_handle_free(struct fs *fs, struct handle *h)
{
	if (!h)
		return;
	forget_open(fs, h);
	if (h->edit || h->fd >= 0)
		serve_will_block(); /* a save */
	if (h->edit)
		fs_release_edit(fs, h);
	if (h->fd >= 0) {
		fs_loose_written(fs, h); /* written after its last flush */
		close(h->fd);
	}
	tree_source_unref(h->src);
	if (h->bytes)
		g_bytes_unref(h->bytes);
	if (h->read_open)
		inode_closed(fs->inodes, h->inode);
	if (h->inode) {
		__atomic_sub_fetch(&h->inode->handles, 1, __ATOMIC_ACQ_REL);
		inode_unref(fs->inodes, h->inode);
	}
	g_free(h);
}

/* A small file's bytes go into the kernel's cache with its open, so that
 * reading it needs no request: the open's reply follows the pages, and
 * the open keeps them.  Only when the kernel may not have them: once
 * stored, they stay until it forgets the inode (or an invalidation); if it
 * drops them sooner, a read asks for them as before.  Called under the
 * tree's read lock: a change of the file, and its invalidation, come
 * after.  An edit's bytes are not the tree's: none are stored under one. */
enum { STORE_VIEW_MAX = 128 << 10 }; /* made at the open: no disk read */

/* The kernel holds a page locked while it waits for a read or write of
 * it, and a store waits for that lock: on the reading thread, whose
 * waiting would leave that very request unread, it must not wait.  Only
 * an open file asks for pages, so this open (its handle made) must be the
 * only one of the inode, of any kind (a loose file's or a temporary's,
 * moved to an entry's name, too), done or under way (one under way counts
 * from its start: it read its request before this thread did). */
static int may_store(const struct inode *in, const struct tree_node *n, size_t max)
{
	return !__atomic_load_n(&in->pages_stored, __ATOMIC_RELAXED) && n->size > 0 && n->size <= max
	       && __atomic_load_n(&in->opening, __ATOMIC_ACQUIRE) == 1
	       && __atomic_load_n(&in->handles, __ATOMIC_ACQUIRE) == 1
	       && !__atomic_load_n(&in->edit, __ATOMIC_ACQUIRE);
}

static void store_bytes(struct fs *fs, struct inode *in, fuse_ino_t ino, const void *bytes, size_t len)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(len);

	buf.buf[0].mem = (void *)bytes;
	if (fuse_lowlevel_notify_store(fs->se, ino, 0, &buf, 0) != 0)
		return;
	if (!__atomic_load_n(&in->edit, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&in->pages_stored, 1, __ATOMIC_RELAXED);
		return;
	}
	/* an edit begun meanwhile (only possible once this thread handed the
	 * reading on): its writes may be older than the bytes stored.  Gone
	 * at once, not queued: the writer's requests have a reader. */
	if (serve_is_reader())
		notify_inode(fs, in, 1);
	else
		fuse_lowlevel_notify_inval_inode(fs->se, ino, 0, 0);
}

static void store_entry(struct fs *fs, struct inode *in, fuse_ino_t ino, struct tree_node *n)
{
	char bytes[SERVE_QUICK_READ];
	struct iovec iov = { .iov_base = bytes };
	size_t len = SERVE_QUICK_READ + 1;
	uint64_t pos;
	int fd;

	if (!may_store(in, n, SERVE_QUICK_READ) || tree_data(fs->tree, n, 0, &len, &fd, &pos) < 0
	    || len != n->size)
		return;
	iov.iov_len = len;
	if (preadv2(fd, &iov, 1, (off_t)pos, RWF_NOWAIT) != (ssize_t)len) {
		serve_will_block(); /* from the disk */
		if (preadv(fd, &iov, 1, (off_t)pos) != (ssize_t)len)
			return; /* the read that comes will say why */
	}
	store_bytes(fs, in, ino, bytes, len);
}

static void store_view(struct fs *fs, struct inode *in, fuse_ino_t ino, struct tree_node *n, GBytes *made)
{
	gsize len;
	const void *bytes = made ? g_bytes_get_data(made, &len) : NULL;

	if (bytes && may_store(in, n, STORE_VIEW_MAX) && len == n->size)
		store_bytes(fs, in, ino, bytes, len);
}

static void open_inode(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *in = fs_inode(fs, ino);
	struct tree_node *n;
	struct handle *h;
	int replaced;

	if (fs->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (in == &status_inode && ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))) {
		fuse_reply_err(req, EACCES); /* read-only, even to root */
		return;
	}
	if (in == &status_inode) {
		h = fs_new_handle(fs, NULL);
		h->status = 1;
		fi->fh = (uint64_t)(uintptr_t)h;
		fi->direct_io = 1;
		fuse_reply_open(req, fi);
		return;
	}
	if (__atomic_load_n(&in->scratch, __ATOMIC_ACQUIRE)) {
		fs_open_scratch(req, fs, in, fi);
		return;
	}
	fs_refresh(fs, in, 1);
	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	replaced = !n && __atomic_load_n(&in->replaced, __ATOMIC_ACQUIRE);
	if (replaced) {
		/* opened through a name looked up just before a rename over it
		 * (ESTALE would make the kernel look once more, and a rename
		 * again meanwhile fails the open): what has the name now.  The
		 * kernel forgets the old attributes and pages first; an entry
		 * or a view is then read past the cache (own_bytes, below),
		 * as other readers may still fill it with the old file. */
		n = replacement(fs, in);
		if (n && fs->se)
			fuse_lowlevel_notify_inval_inode(fs->se, ino, -1, 0);
		fi->keep_cache = 0;
	}
	if (!n) {
		int err = gone_err(fs, in);

		tree_read_unlock(fs->tree);
		fuse_reply_err(req, err);
		return;
	}
	if (tree_is_dir(n)) {
		tree_read_unlock(fs->tree);
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (replaced && ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))) {
		/* what is written goes to the inode's file, which is gone:
		 * the kernel looks the name up again and opens what it has */
		tree_read_unlock(fs->tree);
		fuse_reply_err(req, ESTALE);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		serve_will_block(); /* an edit may copy the file first */
		fs_open_write(req, fs, in, n, fi); /* replies, unlocks */
		return;
	}
	h = fs_new_handle(fs, in);
	stat_inode(fs, in, n, &h->st);
	/* Opened in a replacement's place (entries and views, whose bytes
	 * the handle keeps): the inode's pages and size may still be those
	 * of the file replaced, which others read.  This open reads its own
	 * bytes past the kernel's cache (direct I/O: no shared pages, and
	 * the end is where the reads end, not the inode's size), and leaves
	 * the inode's attributes to the file the inode stood for. */
	h->own_bytes = replaced && (n->kind == NODE_ENTRY || n->kind == NODE_VIEW);
	if (h->own_bytes) {
		fi->direct_io = 1;
	} else {
		inode_opened(fs->inodes, in, &h->st);
		h->read_open = 1;
	}
	/* what was opened, for reads after it is gone (deleted, renamed
	 * over): an entry's bytes stay in the archive file, a view's are
	 * kept (an open of a view converts it: a read comes next) */
	if (n->kind == NODE_ENTRY) {
		h->src = n->src;
		tree_source_ref(h->src);
		h->offset = n->offset;
		h->size = n->size;
	} else if (n->kind == NODE_VIEW) {
		int err;

		h->bytes = view_cache_get(fs->views, fs->tree, n, &err);
		node_identity(n, &h->id);
	}
	/* a loose file (or a view of one) may have changed since its pages
	 * were read */
	fi->keep_cache = !in->replaced && !loose(n);
	if (fi->keep_cache && !h->own_bytes && fs->se && n->kind == NODE_ENTRY)
		store_entry(fs, in, ino, n);
	else if (fi->keep_cache && !h->own_bytes && fs->se && n->kind == NODE_VIEW)
		store_view(fs, in, ino, n, h->bytes);
	tree_read_unlock(fs->tree);
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->noflush = 1; /* nothing to save: closing it needs no request */
	if (fuse_reply_open(req, fi) == -ENOENT)
		fs_handle_free(fs, h); /* the open was interrupted: no release comes */
}

/* Counted while under way, for may_store; the reference keeps the inode
 * for the count's end, as a release and a forget may follow the reply. */
static void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *in = fs_inode(fs, ino);

	if (in == &status_inode || in == inodes_root(fs->inodes)) {
		open_inode(req, ino, fi); /* not counted: never stored */
		return;
	}
	inode_ref(fs->inodes, in);
	__atomic_add_fetch(&in->opening, 1, __ATOMIC_ACQ_REL);
	open_inode(req, ino, fi);
	__atomic_sub_fetch(&in->opening, 1, __ATOMIC_ACQ_REL);
	inode_unref(fs->inodes, in);
}

static void fs_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);

	fs_handle_free(fs, (struct handle *)(uintptr_t)fi->fh);
	fuse_reply_err(req, 0);
}

static int opened_dir_stat(struct fs *fs, struct inode *in, struct stat *st)
{
	struct tree_node *n;

	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	if (n)
		stat_inode(fs, in, n, st);
	tree_read_unlock(fs->tree);
	return n ? 0 : made_stat(fs, in, st);
}

static void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *in = fs_inode(fs, ino);
	struct stat st;

	if (fs->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fs_refresh(fs, in, 1);
	if (opened_dir_stat(fs, in, &st) < 0) {
		/* gone since the kernel looked it up: refused here, where the
		 * kernel walks the path again on ESTALE.  Opened, its first
		 * listing would ask its attributes, and an error there
		 * reaches the program. */
		int err;

		tree_read_lock(fs->tree);
		err = gone_err(fs, in);
		tree_read_unlock(fs->tree);
		fuse_reply_err(req, err);
		return;
	}
	/* what fstat(2) of it shows, and that it lists empty, if it is
	 * removed while open (fs_getattr, fs_readdir): as on a disk */
	if (fs->writable) {
		inode_opened(fs->inodes, in, &st);
		fi->fh = 1;
	}
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void fs_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);

	if (fi->fh)
		inode_closed(fs->inodes, fs_inode(fs, ino));
	fuse_reply_err(req, 0);
}

/* A folder of the source holds names that loose files were made or
 * renamed under; an archive's folders need nothing: each commit flushed
 * its archive before it was told done. */
static void fs_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *in = fs_inode(fs, ino);
	struct tree_node *n;
	char *path = NULL;
	int rc = 0, fd;

	(void)fi;
	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	if (n && n->kind == NODE_FOLDER)
		path = tree_real_path(fs->tree, n);
	tree_read_unlock(fs->tree);
	if (path) {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || (datasync ? fdatasync(fd) : fsync(fd)) < 0)
			rc = -errno;
		if (fd >= 0)
			close(fd);
		if (rc < 0)
			log_msg(LOG_ERR, "%s: cannot flush the folder: %s", path, strerror(-rc));
		g_free(path);
	}
	fuse_reply_err(req, -rc);
}

/* ---- listings ------------------------------------------------------------ */

static int view_known_cheaply(struct fs *fs, struct tree_node *n)
{
	return __atomic_load_n(&n->size, __ATOMIC_ACQUIRE) != TREE_SIZE_UNKNOWN
	       || view_size_from_header(fs->tree, n) == 0;
}

static size_t add_direntry(fuse_req_t req, struct fs *fs, struct inode *dir, struct tree_node *n, char *buf,
			   size_t room, off_t next, int plus)
{
	if (!plus) {
		struct stat st = { .st_ino = n->ino, .st_mode = n->mode };

		return fuse_add_direntry(req, buf, room, n->name, &st, next);
	}
	if (n->kind == NODE_VIEW && !view_known_cheaply(fs, n)) {
		/* no attributes: a listing must not convert; a stat will */
		struct fuse_entry_param e = { .attr = { .st_ino = n->ino, .st_mode = n->mode } };

		return fuse_add_direntry_plus(req, buf, room, n->name, &e, next);
	} else {
		struct fuse_entry_param e;
		size_t len;

		/* counted as a lookup only if the entry fits */
		memset(&e, 0, sizeof e);
		len = fuse_add_direntry_plus(req, NULL, 0, n->name, &e, next);
		if (len > room)
			return len;
		fs_fill_entry(fs, inodes_lookup(fs->inodes, dir, n), n, &e);
		return fuse_add_direntry_plus(req, buf, room, n->name, &e, next);
	}
}

/* A made folder's line of a listing (fs_made.c); 0 when it went. */
static size_t add_made_direntry(fuse_req_t req, struct fs *fs, struct inode *in, char *buf, size_t room,
				off_t next, int plus)
{
	struct fuse_entry_param e;
	size_t len;

	if (fs_made_entry(fs, in, &e) < 0)
		return 0;
	if (!plus) {
		struct stat st = { .st_ino = e.attr.st_ino, .st_mode = e.attr.st_mode };

		return fuse_add_direntry(req, buf, room, in->name, &st, next);
	}
	len = fuse_add_direntry_plus(req, NULL, 0, in->name, &e, next);
	if (len > room)
		return len;
	inodes_count_lookup(fs->inodes, in);
	return fuse_add_direntry_plus(req, buf, room, in->name, &e, next);
}

/* The first of the cookie-ordered children past off. */
static uint32_t first_past(const struct tree_dir *d, const uint32_t *order, off_t off)
{
	uint32_t lo = 0, hi = d->count;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (tree_dir_cookie(&d->child[order[mid]]) <= (uint64_t)off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus, int opened)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *dir = fs_inode(fs, ino);
	const struct tree_dir *d = NULL;
	struct tree_node *dn;
	GPtrArray *made = NULL;
	char *buf;
	size_t used = 0;
	int rc;

	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	tree_read_lock(fs->tree);
	dn = inode_node(fs->inodes, dir);
	rc = dn ? tree_children(fs->tree, dn, &d) : -ENOENT;
	if (rc == -ENOENT && fs->writable && fs_made_empty(fs, dir))
		rc = 0; /* a made folder: made folders in it, if any */
	else if (rc == -ENOENT && opened && inode_opened_stat(fs->inodes, dir, &(struct stat){ 0 }))
		rc = 0; /* removed while open: empty, as on a disk */
	if (rc == 0 && fs->writable)
		made = fs_made_children(fs, dir);
	if (rc == 0) {
		/* off is the cookie of the last name listed (0: none yet): the
		 * listing goes on after it even when the directory was read
		 * again meanwhile in another order.  The tree's names and the
		 * made folders (none of which the tree shows) are merged by
		 * cookie. */
		const uint32_t *order = d ? tree_dir_order(fs->tree, d) : NULL;
		uint32_t i = d ? first_past(d, order, off) : 0, count = d ? d->count : 0;
		guint m = 0, made_count = made ? made->len : 0;

		while (m < made_count && fs_made_cookie(made->pdata[m]) <= (uint64_t)off)
			m++;
		while (i < count || m < made_count) {
			struct tree_node *c = i < count ? &d->child[order[i]] : NULL;
			size_t len;

			if (m < made_count && (!c || fs_made_cookie(made->pdata[m]) < tree_dir_cookie(c))) {
				len = add_made_direntry(req, fs, made->pdata[m], buf + used, size - used,
							(off_t)fs_made_cookie(made->pdata[m]), plus);
				if (len > size - used)
					break;
				m++;
			} else {
				len = add_direntry(req, fs, dir, c, buf + used, size - used, (off_t)tree_dir_cookie(c),
						   plus);
				if (len > size - used)
					break;
				i++;
			}
			used += len;
		}
	}
	if (made)
		fs_made_children_free(fs, made);
	tree_read_unlock(fs->tree);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		fuse_reply_buf(req, buf, used);
	free(buf);
}

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, 0, fi->fh != 0);
}

static void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, 1, fi->fh != 0);
}

/* ---- reading --------------------------------------------------------------- */

static void reply_bytes(fuse_req_t req, const char *data, size_t len, size_t size, off_t off)
{
	if ((uint64_t)off >= len)
		size = 0;
	else if (size > len - (uint64_t)off)
		size = len - (size_t)off;
	fuse_reply_buf(req, size ? data + off : NULL, size);
}

static void read_view(fuse_req_t req, struct fs *fs, struct tree_node *n, size_t size, off_t off)
{
	int err = 0;
	GBytes *bytes = view_cache_get(fs->views, fs->tree, n, &err);
	gsize len;
	const char *data;

	if (!bytes) {
		fuse_reply_err(req, err ? err : EIO);
		return;
	}
	data = g_bytes_get_data(bytes, &len);
	reply_bytes(req, data, len, size, off);
	g_bytes_unref(bytes);
}

static void reply_fd(fuse_req_t req, int fd, uint64_t pos, size_t len)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(len);

	/* On the reading thread, a read from the disk would hold up every
	 * other request: what the page cache has is copied at once, the rest
	 * is read after handing the reading on. */
	if (len && len <= SERVE_QUICK_READ && serve_is_reader()) {
		char bytes[SERVE_QUICK_READ];
		struct iovec iov = { .iov_base = bytes, .iov_len = len };

		if (preadv2(fd, &iov, 1, (off_t)pos, RWF_NOWAIT) == (ssize_t)len) {
			fuse_reply_buf(req, bytes, len);
			return;
		}
		serve_will_block();
	}

	/* straight from the file: spliced when the kernel allows */
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = fd;
	buf.buf[0].pos = (off_t)pos;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void read_file(fuse_req_t req, struct fs *fs, struct tree_node *n, size_t size, off_t off)
{
	uint64_t pos;
	int fd, rc = tree_data(fs->tree, n, (uint64_t)off, &size, &fd, &pos);

	if (rc < 0)
		fuse_reply_err(req, -rc);
	else
		reply_fd(req, fd, pos, size);
}

/* A file as it was opened (it went since, or is a view made then). */
static void read_gone(fuse_req_t req, const struct handle *h, size_t size, off_t off)
{
	if (h && h->bytes) {
		/* the kernel may send the release as soon as the reply is in,
		 * before fuse_reply_buf has returned: hold the bytes till then */
		GBytes *bytes = g_bytes_ref(h->bytes);
		gsize len;
		const char *data = g_bytes_get_data(bytes, &len);

		reply_bytes(req, data, len, size, off);
		g_bytes_unref(bytes);
		return;
	}
	if (!h || !h->src) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if ((uint64_t)off >= h->size)
		size = 0;
	else if (size > h->size - (uint64_t)off)
		size = (size_t)(h->size - (uint64_t)off);
	reply_fd(req, h->src->fd, h->offset + (uint64_t)off, size);
}

static int same_source(const struct tree_node *view, const struct identity *then)
{
	struct identity now;

	node_identity(view, &now);
	return identity_equal(&now, then);
}

static void read_status(fuse_req_t req, struct fs *fs, size_t size, off_t off)
{
	GString *text = fs_status_text(fs);

	reply_bytes(req, text->str, text->len, size, off);
	g_string_free(text, TRUE);
}

static void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct inode *in = fs_inode(fs, ino);
	struct handle *h = fi ? (struct handle *)(uintptr_t)fi->fh : NULL;
	struct tree_node *n;
	struct edit *e;

	if (h && h->status) {
		read_status(req, fs, size, off);
		return;
	}
	if (h && h->own_bytes) {
		read_gone(req, h, size, off); /* what it opened, whatever came since */
		return;
	}
	if (h && h->fd >= 0) {
		reply_fd(req, h->fd, (uint64_t)off, size);
		return;
	}
	tree_read_lock(fs->tree);
	n = inode_node(fs->inodes, in);
	e = fs_handle_edit(fs, in, h);
	if (e && (!n || fs_edit_shows(fs, e, n)))
		reply_fd(req, edit_fd(e), (uint64_t)off, edit_readable(e, (uint64_t)off, size));
	else if (!n || __atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE))
		read_gone(req, h, size, off); /* also renamed over: the old bytes */
	else if (n->kind == NODE_VIEW && h && h->bytes && same_source(n, &h->id))
		read_gone(req, h, size, off); /* the bytes the open made */
	else if (n->kind == NODE_VIEW)
		read_view(req, fs, n, size, off);
	else
		read_file(req, fs, n, size, off);
	tree_read_unlock(fs->tree);
	if (e)
		edit_unref(e);
}

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fuse_req_userdata(req);
	struct statvfs sv = {
		.f_bsize = 4096,
		.f_frsize = 4096,
		.f_files = tree_node_count(fs->tree),
		.f_namemax = 255,
		.f_flag = fs->writable ? 0 : ST_RDONLY,
	};

	fuse_reply_statfs(req, &sv);
}

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;

	/* A read-only mount is a snapshot (man: -o ro): the kernel may skip
	 * open/opendir and keep page and directory caches (its defaults once
	 * open says ENOSYS), so changes by other programs go unnoticed.  A
	 * writable one sees opens: for writing, and to notice such changes. */
	if (!fs->writable && (conn->capable & FUSE_CAP_NO_OPEN_SUPPORT)
	    && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT)) {
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT | FUSE_CAP_NO_OPENDIR_SUPPORT;
		fs->no_open = 1;
	}
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	/* O_TRUNC comes with the open: one request, not a setattr and an open */
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO; /* always plus: saves a lookup per name */
}

/* Requests are ordered by the kernel (a release comes after its open's
 * reply), which ThreadSanitizer cannot see through /dev/fuse: under it,
 * every request acquires what the ones finished before it released, and
 * what was made before a node id or file handle went to the kernel. */
#ifdef __SANITIZE_THREAD__
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char kernel_order;

void fs_kernel_order_release(void)
{
	__tsan_release(&kernel_order);
}

#define ORDERED(call) do { __tsan_acquire(&kernel_order); call; __tsan_release(&kernel_order); } while (0)
static void ordered_init(void *u, struct fuse_conn_info *c)
{
	ORDERED(fs_init(u, c));
}
static void ordered_lookup(fuse_req_t r, fuse_ino_t p, const char *n)
{
	ORDERED(fs_lookup(r, p, n));
}
static void ordered_forget(fuse_req_t r, fuse_ino_t i, uint64_t n)
{
	ORDERED(fs_forget(r, i, n));
}
static void ordered_forget_multi(fuse_req_t r, size_t c, struct fuse_forget_data *f)
{
	ORDERED(fs_forget_multi(r, c, f));
}
static void ordered_getattr(fuse_req_t r, fuse_ino_t i, struct fuse_file_info *f)
{
	ORDERED(fs_getattr(r, i, f));
}
static void ordered_setattr(fuse_req_t r, fuse_ino_t i, struct stat *a, int s, struct fuse_file_info *f)
{
	ORDERED(fs_setattr(r, i, a, s, f));
}
static void ordered_open(fuse_req_t r, fuse_ino_t i, struct fuse_file_info *f)
{
	ORDERED(fs_open(r, i, f));
}
static void ordered_release(fuse_req_t r, fuse_ino_t i, struct fuse_file_info *f)
{
	ORDERED(fs_release(r, i, f));
}
static void ordered_opendir(fuse_req_t r, fuse_ino_t i, struct fuse_file_info *f)
{
	ORDERED(fs_opendir(r, i, f));
}
static void ordered_readdir(fuse_req_t r, fuse_ino_t i, size_t s, off_t o, struct fuse_file_info *f)
{
	ORDERED(fs_readdir(r, i, s, o, f));
}
static void ordered_readdirplus(fuse_req_t r, fuse_ino_t i, size_t s, off_t o, struct fuse_file_info *f)
{
	ORDERED(fs_readdirplus(r, i, s, o, f));
}
static void ordered_read(fuse_req_t r, fuse_ino_t i, size_t s, off_t o, struct fuse_file_info *f)
{
	ORDERED(fs_read(r, i, s, o, f));
}
static void ordered_write(fuse_req_t r, fuse_ino_t i, const char *b, size_t s, off_t o, struct fuse_file_info *f)
{
	ORDERED(fs_write(r, i, b, s, o, f));
}
static void ordered_flush(fuse_req_t r, fuse_ino_t i, struct fuse_file_info *f)
{
	ORDERED(fs_flush(r, i, f));
}
static void ordered_fsync(fuse_req_t r, fuse_ino_t i, int d, struct fuse_file_info *f)
{
	ORDERED(fs_fsync(r, i, d, f));
}
static void ordered_create(fuse_req_t r, fuse_ino_t p, const char *n, mode_t m, struct fuse_file_info *f)
{
	ORDERED(fs_create(r, p, n, m, f));
}
static void ordered_unlink(fuse_req_t r, fuse_ino_t p, const char *n)
{
	ORDERED(fs_unlink(r, p, n));
}
static void ordered_rmdir(fuse_req_t r, fuse_ino_t p, const char *n)
{
	ORDERED(fs_rmdir(r, p, n));
}
static void ordered_mkdir(fuse_req_t r, fuse_ino_t p, const char *n, mode_t m)
{
	ORDERED(fs_mkdir(r, p, n, m));
}
static void ordered_rename(fuse_req_t r, fuse_ino_t p, const char *n, fuse_ino_t np, const char *nn, unsigned int fl)
{
	ORDERED(fs_rename(r, p, n, np, nn, fl));
}
static void ordered_releasedir(fuse_req_t r, fuse_ino_t i, struct fuse_file_info *f)
{
	ORDERED(fs_releasedir(r, i, f));
}
static void ordered_fsyncdir(fuse_req_t r, fuse_ino_t i, int d, struct fuse_file_info *f)
{
	ORDERED(fs_fsyncdir(r, i, d, f));
}
static void ordered_statfs(fuse_req_t r, fuse_ino_t i)
{
	ORDERED(fs_statfs(r, i));
}
#define OP(name, fn) .name = ordered_##name
#else
#define OP(name, fn) .name = fn
#endif

const struct fuse_lowlevel_ops fs_ops = {
	OP(init, fs_init),
	OP(lookup, fs_lookup),
	OP(forget, fs_forget),
	OP(forget_multi, fs_forget_multi),
	OP(getattr, fs_getattr),
	OP(setattr, fs_setattr),
	OP(open, fs_open),
	OP(release, fs_release),
	OP(opendir, fs_opendir),
	OP(releasedir, fs_releasedir),
	OP(readdir, fs_readdir),
	OP(readdirplus, fs_readdirplus),
	OP(fsyncdir, fs_fsyncdir),
	OP(read, fs_read),
	OP(write, fs_write),
	OP(flush, fs_flush),
	OP(fsync, fs_fsync),
	OP(create, fs_create),
	OP(unlink, fs_unlink),
	OP(rmdir, fs_rmdir),
	OP(mkdir, fs_mkdir),
	OP(rename, fs_rename),
	OP(statfs, fs_statfs),
};
