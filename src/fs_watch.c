/* Changes another program makes to the source, acted on when the kernel
 * tells of them (watch.h) rather than at the next look through the mount.
 * The kernel keeps a file's attributes and names for the mount's timeout
 * (a day by default): without this, `ls -l` and `stat` of an archive that
 * `eifs put` or a packer rewrote showed the old sizes, times and mode
 * until something in it was opened.  A thread of its own waits for an
 * event, lets a burst of them settle, then looks at every folder, archive
 * and loose file read so far, and reads again the ones that changed, which
 * tells the kernel (fs_refresh). */
#include "fs.h"

#include <glib.h>
#include <signal.h>

#include "log.h"
#include "watch.h"

/* A program that rewrites a file writes it many times: the look waits
 * until events stop for this long (at most SETTLE_MAX_MS in all). */
enum { SETTLE_MS = 50, SETTLE_MAX_MS = 1000 };

/* The names from the root down to n: a path the inodes can follow. */
static void collect_changed(struct tree_node *n, void *ctx)
{
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);

	for (; n->parent; n = n->parent)
		g_ptr_array_insert(names, 0, g_strdup(n->name));
	g_ptr_array_add(ctx, names);
}

/* The inode the kernel knows at names, with a reference; NULL when it
 * knows none there (nothing of it is cached then). */
static struct inode *known_inode(struct fs *fs, GPtrArray *names)
{
	struct inode *in = inodes_root(fs->inodes);

	inode_ref(fs->inodes, in);
	for (guint i = 0; in && i < names->len; i++) {
		struct inode *child = inodes_find_ref(fs->inodes, in, names->pdata[i]);

		inode_unref(fs->inodes, in);
		in = child;
	}
	return in;
}

static void refresh_changed(struct fs *fs)
{
	GPtrArray *changed = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);

	tree_read_lock(fs->tree);
	tree_each_changed(fs->tree, collect_changed, changed);
	tree_read_unlock(fs->tree);
	for (guint i = 0; i < changed->len; i++) {
		struct inode *in = known_inode(fs, changed->pdata[i]);

		if (in) {
			fs_refresh(fs, in, 0);
			inode_unref(fs->inodes, in);
		}
	}
	g_ptr_array_unref(changed);
}

static int watcher_stopping(struct fs *fs)
{
	return __atomic_load_n(&fs->watcher_stop, __ATOMIC_ACQUIRE);
}

static void *watcher_main(void *p)
{
	struct fs *fs = p;
	uint64_t seen = watch_generation();

	while (!watcher_stopping(fs)) {
		uint64_t before;
		unsigned waited = 0;

		before = seen;
		seen = watch_wait(seen);
		if (seen == before)
			continue; /* woken to stop, or by an event looked at already */
		do {
			before = seen;
			g_usleep(SETTLE_MS * 1000);
			waited += SETTLE_MS;
			seen = watch_generation();
		} while (seen != before && waited < SETTLE_MAX_MS && !watcher_stopping(fs));
		if (!watcher_stopping(fs))
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
