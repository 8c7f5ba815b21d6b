/* Changes another program makes to the source, acted on when the kernel
 * tells of them (watch.h) rather than at the next look through the mount.
 * The kernel keeps a file's attributes and names for the mount's timeout
 * (a day by default): without this, `ls -l` and `stat` of an archive that
 * `eifs put` or a packer rewrote showed the old sizes, times and mode
 * until something in it was opened.  A thread of its own waits for an
 * event, lets a burst of them settle, then looks at every folder and
 * archive file the kernel knows, and reads again the ones that changed,
 * which tells the kernel (fs_refresh). */
#include "fs.h"

#include <glib.h>
#include <signal.h>

#include "log.h"
#include "watch.h"

/* A program that rewrites a file writes it many times: the look waits
 * until events stop for this long (at most SETTLE_MAX_MS in all). */
enum { SETTLE_MS = 50, SETTLE_MAX_MS = 1000, SAVES_MAX_MS = 10000 };

/* The folders and archive files below folder n (in, its inode), n among
 * them, that the kernel knows (only their attributes and names can be
 * stale in its cache), held, into units.  Loose files need none: the
 * kernel keeps their attributes for a second only.  No look at the disk
 * here, under the lock: a writer waiting for it would hold up every
 * request meanwhile. */
static void known_units_below(struct fs *fs, struct tree_node *n, struct inode *in, GPtrArray *units)
{
	const struct tree_dir *d = __atomic_load_n(&n->dir, __ATOMIC_ACQUIRE);

	inode_ref(fs->inodes, in);
	g_ptr_array_add(units, in);
	for (uint32_t i = 0; d && i < d->count; i++) {
		struct tree_node *c = &d->child[i];
		struct inode *cin;

		if (c->kind != NODE_FOLDER && c->kind != NODE_ARCHIVE)
			continue;
		cin = inodes_find_ref(fs->inodes, in, c->name);
		if (!cin)
			continue;
		if (c->kind == NODE_FOLDER) {
			known_units_below(fs, c, cin, units);
		} else {
			inode_ref(fs->inodes, cin);
			g_ptr_array_add(units, cin);
		}
		inode_unref(fs->inodes, cin);
	}
}

/* Each unit looks at its file or folder (one stat, under the lock for
 * that one only) and is read again if it changed, which tells the
 * kernel. */
static void refresh_changed(struct fs *fs)
{
	GPtrArray *units = g_ptr_array_new();
	struct inode *root = inodes_root(fs->inodes);
	struct tree_node *rn;

	tree_read_lock(fs->tree);
	rn = inode_node(fs->inodes, root);
	if (rn && rn->kind == NODE_FOLDER)
		known_units_below(fs, rn, root, units);
	else if (rn) {
		inode_ref(fs->inodes, root);
		g_ptr_array_add(units, root);
	}
	tree_read_unlock(fs->tree);
	for (guint i = 0; i < units->len && !__atomic_load_n(&fs->watcher_stop, __ATOMIC_ACQUIRE); i++)
		fs_refresh(fs, units->pdata[i], 0);
	for (guint i = 0; i < units->len; i++)
		inode_unref(fs->inodes, units->pdata[i]);
	g_ptr_array_free(units, TRUE);
}

static int watcher_stopping(struct fs *fs)
{
	return __atomic_load_n(&fs->watcher_stop, __ATOMIC_ACQUIRE);
}

/* Waits until no event came for SETTLE_MS (SETTLE_MAX_MS at most);
 * returns the generation then. */
static uint64_t settled(struct fs *fs, uint64_t seen)
{
	uint64_t before;
	unsigned waited = 0;

	do {
		before = seen;
		g_usleep(SETTLE_MS * 1000);
		waited += SETTLE_MS;
		seen = watch_generation();
	} while (seen != before && waited < SETTLE_MAX_MS && !watcher_stopping(fs));
	return seen;
}

/* Whether saves were under way, waiting until they are done (at most
 * SAVES_MAX_MS): a look passes over a unit being saved, and its save
 * reloads that one but not its folder, which another program may have
 * changed meanwhile with no event to come. */
static int waited_for_saves(struct fs *fs)
{
	unsigned waited = 0;

	if (!__atomic_load_n(&fs->saving, __ATOMIC_ACQUIRE))
		return 0;
	while (__atomic_load_n(&fs->saving, __ATOMIC_ACQUIRE) && waited < SAVES_MAX_MS && !watcher_stopping(fs)) {
		g_usleep(SETTLE_MS * 1000);
		waited += SETTLE_MS;
	}
	return !watcher_stopping(fs);
}

static void *watcher_main(void *p)
{
	struct fs *fs = p;
	uint64_t seen = watch_generation();

	while (!watcher_stopping(fs)) {
		uint64_t before = seen;

		seen = watch_wait(seen);
		if (seen == before)
			continue; /* woken to stop, or by an event looked at already */
		seen = settled(fs, seen);
		if (!watcher_stopping(fs))
			refresh_changed(fs);
		if (waited_for_saves(fs))
			refresh_changed(fs);
	}
	return NULL;
}

void fs_watch_start(struct fs *fs)
{
	int rc;

	sigset_t all, was;

	if (!watch_is_started())
		return; /* every look is a stat then: nothing is told */
	/* started with every signal blocked: a stop signal or the watch's
	 * own goes to the threads that serve requests */
	sigfillset(&all);
	/* a fault still reaches the thread that caused it (crash.c) */
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGABRT);
	pthread_sigmask(SIG_BLOCK, &all, &was);
	rc = pthread_create(&fs->watcher, NULL, watcher_main, fs);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (rc != 0)
		log_msg(LOG_WARNING, "cannot start the thread that acts on changes on disk: %s; they are seen "
			"at the next look through the mount", g_strerror(rc));
	fs->watcher_running = rc == 0;
}

void fs_watch_stop(struct fs *fs)
{
	if (!fs->watcher_running)
		return;
	__atomic_store_n(&fs->watcher_stop, 1, __ATOMIC_RELEASE);
	watch_wake();
	pthread_join(fs->watcher, NULL);
	fs->watcher_running = 0;
}
