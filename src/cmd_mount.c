/* eifs mount SRC MNT, eifs SRC MNT (mount.fuse3 / fstab), eifs umount MNT. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib.h>

#include "bigmem.h"
#include "cli.h"
#include "crash.h"
#include "fs.h"
#include "serve.h"
#include "log.h"
#include "sanitizer.h"
#include "watch.h"

struct mount_args {
	const char *src;
	const char *mnt;
	GString *fuse_opts;  /* -o options passed on to the kernel/libfuse */
	double timeout;
	uint64_t cache_size;  /* bytes of converted views kept in memory */
	unsigned spin_us;     /* serve_loop_spin */
	int read_only;
	int foreground, debug, single_thread;
};

/* "256M", "1G", "65536": a byte count with an optional K/M/G suffix. */
static int parse_bytes(const char *text, uint64_t *out)
{
	char *end;
	guint64 v;
	unsigned shift = 0;

	/* strtoull takes "-1" for 2^64 - 1, and a number too large for its
	 * largest value */
	if (!g_ascii_isdigit(*text))
		return -1;
	errno = 0;
	v = g_ascii_strtoull(text, &end, 10);
	if (errno == ERANGE)
		return -1;
	switch (g_ascii_toupper(*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	default: break;
	}
	if (*end || v > (UINT64_MAX >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

/* -o spin: cat reading the benchmark's 10 000 small files sends its next
 * request 20 to 100 us after an answer (spinning 20 us saved nothing,
 * 50 us 43% of the time, 100 us 49%); more would only cost CPU time. */
enum { DEFAULT_SPIN_US = 100, MAX_SPIN_US = 10000 };

/* Splits one -o list: eifs' own options are taken, the rest passed on. */
static int take_options(struct mount_args *m, const char *list)
{
	gchar **opts = g_strsplit(list, ",", -1);
	int rc = 0;

	for (gchar **o = opts; *o; o++) {
		if (!**o)
			continue;
		if (g_str_has_prefix(*o, "timeout=")) {
			char *end;

			m->timeout = g_ascii_strtod(*o + 8, &end);
			if (end == *o + 8 || *end || !isfinite(m->timeout) || m->timeout < 0) {
				fprintf(stderr, "eifs: bad option '%s' (seconds expected)\n", *o);
				rc = -1;
			}
		} else if (g_str_has_prefix(*o, "cache_size=")) {
			if (parse_bytes(*o + 11, &m->cache_size) < 0) {
				fprintf(stderr, "eifs: bad option '%s' (bytes expected, e.g. 256M)\n", *o);
				rc = -1;
			}
		} else if (g_str_has_prefix(*o, "spin=")) {
			guint64 us = 0;

			if (!g_ascii_string_to_unsigned(*o + 5, 10, 0, MAX_SPIN_US, &us, NULL)) {
				fprintf(stderr, "eifs: bad option '%s' (microseconds from 0 to %u expected)\n",
					*o, MAX_SPIN_US);
				rc = -1;
			}
			m->spin_us = (unsigned)us;
		} else if (!strcmp(*o, "rw") || !strcmp(*o, "ro")) {
			m->read_only = !strcmp(*o, "ro"); /* the last one says */
		} else {
			g_string_append_printf(m->fuse_opts, ",%s", *o);
		}
	}
	g_strfreev(opts);
	return rc;
}

static int parse_mount_args(int argc, char **argv, struct mount_args *m)
{
	int positional = 0;

	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-o") && i + 1 < argc) {
			if (take_options(m, argv[++i]) < 0)
				return -1;
		} else if (g_str_has_prefix(a, "-o") && a[2]) {
			if (take_options(m, a + 2) < 0)
				return -1;
		} else if (!strcmp(a, "-f")) {
			m->foreground = 1;
		} else if (!strcmp(a, "-d")) {
			m->debug = m->foreground = 1;
		} else if (!strcmp(a, "-s")) {
			m->single_thread = 1;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "eifs: unknown mount option '%s'\n", a);
			return -1;
		} else if (positional == 0) {
			m->src = a;
			positional++;
		} else if (positional == 1) {
			m->mnt = a;
			positional++;
		} else {
			fprintf(stderr, "eifs: unexpected argument '%s'\n", a);
			return -1;
		}
	}
	if (positional != 2) {
		fprintf(stderr, "eifs: usage: eifs mount SRC MNT [-o OPTS] [-f] [-d] [-s]\n");
		return -1;
	}
	return 0;
}

/* Test hook, not a user option: EIFS_FAULT_STEP=N kills the daemon
 * before step N of its first commit (res_commit.h), as a crash there
 * would (tests/crash.sh). */
static int die_at_step(void *ctx, int step)
{
	if (step == *(const int *)ctx)
		_exit(70);
	return 0;
}

/* Test hook, not a user option: EIFS_SAVE_DELAY_MS=N makes every save
 * through the mount take N ms longer before it writes, so that tests can
 * do something while one is under way (tests/writeback.sh). */
static int pause_at_first_step(void *ctx, int step)
{
	if (step == RES_STEP_DATA)
		g_usleep((gulong)*(const int *)ctx * 1000);
	return 0;
}

static void set_fault_hook(struct fs *fs)
{
	static int step, delay_ms;
	const char *env = getenv("EIFS_FAULT_STEP"), *delay = getenv("EIFS_SAVE_DELAY_MS");

	fs->commit.align = 1;
	if (env && (step = atoi(env)) > 0) {
		fs->commit.fault = die_at_step;
		fs->commit.fault_ctx = &step;
	} else if (delay && (delay_ms = atoi(delay)) > 0) {
		fs->commit.fault = pause_at_first_step;
		fs->commit.fault_ctx = &delay_ms;
	}
}

/* Test hook, not a user option: EIFS_CONVERT_DELAY_MS=N makes every view
 * conversion take N ms longer, so that tests can see what the mount
 * answers while one is under way (tests/views.sh). */
static unsigned convert_delay_ms;

static void delayed_view_wait(int converting)
{
	fs_before_view_wait(converting);
	if (converting)
		g_usleep((gulong)convert_delay_ms * 1000);
}

static void set_convert_delay(struct fs *fs)
{
	const char *env = getenv("EIFS_CONVERT_DELAY_MS");

	if (env && (convert_delay_ms = (unsigned)atoi(env)) > 0)
		view_cache_before_wait(fs->views, delayed_view_wait);
}

/* Test hook, not a user option: EIFS_LOAD_DELAY_MS=N makes every first
 * read of a folder or an archive, and every wait for the tree's lock,
 * take N ms longer (in a serving thread, after it handed on the reading
 * of requests) (tests/mount.sh). */
static unsigned load_delay_ms;

static void delayed_tree_wait(void)
{
	serve_will_block();
	g_usleep((gulong)load_delay_ms * 1000);
}

static void set_load_delay(struct fs *fs)
{
	const char *env = getenv("EIFS_LOAD_DELAY_MS");

	if (env && (load_delay_ms = (unsigned)atoi(env)) > 0)
		tree_before_wait(fs->tree, delayed_tree_wait);
}

/* Test hook, not a user option: EIFS_SPIN=always or never fixes whether
 * the reader spins, which it otherwise chooses by measuring (tests that
 * look at the spinning itself). */
static void set_spin_fixed(struct serve_loop *loop)
{
	const char *env = getenv("EIFS_SPIN");

	if (env && (!strcmp(env, "always") || !strcmp(env, "never")))
		serve_loop_spin_fixed(loop, !strcmp(env, "always"));
}

/* Test hook, not a user option: EIFS_NOTIFY_DELAY_MS=N sends each kernel
 * cache notice N ms late, as a busy machine may (tests/consistency.sh). */
static void set_notify_delay(struct fs *fs)
{
	const char *env = getenv("EIFS_NOTIFY_DELAY_MS");

	if (env && atoi(env) > 0)
		fs->notify_delay_ms = (unsigned)atoi(env);
}

/* Test hook, not a user option: EIFS_TURN_DELAY_MS=N makes each save
 * through the mount wait N ms between its plan and its turn at the
 * archive, as a thread put aside on a busy machine does, so that other
 * saves overtake it (tests/writeback.sh). */
static void set_turn_delay(struct fs *fs)
{
	const char *env = getenv("EIFS_TURN_DELAY_MS");

	if (env && atoi(env) > 0)
		fs->turn_delay_ms = (unsigned)atoi(env);
}

/* Test hook, not a user option: EIFS_OPEN_DELAY_MS=N makes the reading of
 * SRC at mount take N ms longer, the kernel's mount in place meanwhile
 * (tests/mount.sh: a signal before the mount is ready). */
static void delay_open(void)
{
	const char *env = getenv("EIFS_OPEN_DELAY_MS");
	int ms = env ? atoi(env) : 0;

	if (ms > 0)
		g_usleep((gulong)ms * 1000);
}

/* The kernel's first lookup needs the top directory, which for a large
 * archive takes a millisecond or more to build: the serving loop's first
 * thread builds it as soon as SRC is read (before_serving), while the
 * main thread tells the mount command and that command exits, rather
 * than after.  The main thread's call (serve's meanwhile) finds it
 * built, or waits for that build to end. */
static void build_top(void *ctx)
{
	struct fs *fs = ctx;
	const struct tree_dir *top;

	tree_read_lock(fs->tree);
	tree_children(fs->tree, tree_root(fs->tree), &top); /* its errors are the lookup's */
	tree_read_unlock(fs->tree);
}

/* The kernel's mount and SRC's tables do not depend on each other, and on
 * two cores they take about as long: the serving loop's first thread
 * mounts while the main thread reads SRC.  That thread answers INIT at
 * once and builds the top directory once SRC is read; the other requests
 * wait until the loop runs, after that; no one has been told of the
 * mount before. */
struct mounting {
	struct mount_args *m;
	struct fs *fs;
	struct fuse_session *se;
	char *mnt_abs;
	int handlers;  /* fuse_set_signal_handlers succeeded */
	int mounted;
	unsigned conn; /* the connection's number (fusectl's), when conn_known */
	int conn_known;
	int aborted;   /* its connection, by abort_mounted_connection */
	pthread_mutex_t src_lock;
	pthread_cond_t src_told;
	int src_state; /* SRC_*, under src_lock */
};

enum { SRC_PENDING, SRC_OPENED, SRC_NOT_OPENED };

/* Tells the first thread whether fs->tree is there for it to build the
 * top directory of; once, the first word counts.  Every path of the main
 * thread says it before the loop's threads are stopped. */
static void tell_src_state(struct mounting *g, int state)
{
	pthread_mutex_lock(&g->src_lock);
	if (g->src_state == SRC_PENDING) {
		g->src_state = state;
		pthread_cond_broadcast(&g->src_told);
	}
	pthread_mutex_unlock(&g->src_lock);
}

static void remember_connection(struct mounting *g);

static void build_top_of(void *g)
{
	build_top(((struct mounting *)g)->fs);
}

/* Loading the crash report's library takes a millisecond of CPU that the
 * first lookups would wait for on two cores: it comes once they are
 * answered (until then a report walks eifs' frame pointers); so does the
 * note of the mount's connection. */
static void after_first_requests(void *g)
{
	crash_report_warm_up();
	remember_connection(g);
}

/* As many as libfuse's own multi-threaded loop starts at most. */
#define MAX_SERVE_THREADS 10

/* Before the serving threads stop: the notices queued go out while
 * requests are still answered. */
static void drain_notices(void *p)
{
	fs_drain_notices(p, 2000);
}

/* Whether the comma-separated opts (each after a comma) hold name=... */
static int has_option(const char *opts, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = opts; (p = strstr(p, name)); p += len)
		if ((p == opts || p[-1] == ',') && p[len] == '=')
			return 1;
	return 0;
}

/* Without a loop (-s, its first thread only mounted) the main thread
 * answers every request. */
static int serve(struct serve_loop *l, struct fuse_session *se, struct mounting *g)
{
	if (!l) {
		build_top_of(g);
		after_first_requests(g);
		watch_reader(); /* the only one */
		return fuse_session_loop(se);
	}
	return serve_loop_run(l, build_top_of, after_first_requests, g);
}

static struct fuse_session *new_session(struct mount_args *m, struct fs *fs)
{
	char *opts;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;

	fuse_opt_add_arg(&args, "eifs");
	opts = g_strdup_printf("%s,default_permissions,subtype=eifs%s", m->read_only ? "ro" : "rw",
			       m->fuse_opts->str);
	fuse_opt_add_arg(&args, "-o");
	fuse_opt_add_arg(&args, opts);
	if (!has_option(m->fuse_opts->str, "fsname")) {
		char *abs = realpath(m->src, NULL);
		char *name = g_strdup_printf("fsname=%s", abs ? abs : m->src);
		/* escapes the commas a path may hold */
		char *o = NULL;

		fuse_opt_add_opt_escaped(&o, name);
		fuse_opt_add_arg(&args, "-o");
		fuse_opt_add_arg(&args, o);
		free(o);
		free(abs);
		g_free(name);
	}
	if (m->debug)
		fuse_opt_add_arg(&args, "-d");
	se = fuse_session_new(&args, &fs_ops, sizeof fs_ops, fs);
	fuse_opt_free_args(&args);
	g_free(opts);
	return se;
}

/* ---- leaving the terminal ---------------------------------------------- */

/* The daemon ended without a word: killed (a crash before its handler was
 * in place, the OOM killer) or gone another way. */
static void report_early_end(pid_t pid)
{
	int st;

	/* not through stderr's lock: a thread of the daemon may have died
	 * holding it */
	if (waitpid(pid, &st, 0) == pid && WIFSIGNALED(st))
		dprintf(STDERR_FILENO, "eifs: the daemon was killed by SIG%s before the mount was ready\n",
			sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
	else
		dprintf(STDERR_FILENO, "eifs: the daemon ended before the mount was ready\n");
}

/* Started with stdin, stdout or stderr closed, the status pipe or an
 * archive could get fd 0-2, which detach() then points at /dev/null. */
static void keep_standard_fds(void)
{
	int fd;

	do
		fd = open("/dev/null", O_RDWR);
	while (fd >= 0 && fd <= STDERR_FILENO);
	if (fd > STDERR_FILENO)
		close(fd);
}

/* The parent exits with status; only the first word counts, as the
 * parent is gone after it. */
static int tell_parent(int *to_parent, int status)
{
	unsigned char byte = (unsigned char)status;
	int rc = 0;

	if (*to_parent < 0)
		return 0;
	if (write(*to_parent, &byte, 1) != 1) {
		rc = -errno;
		log_msg(LOG_ERR, "cannot pass exit status %d to the mount command: %s", status, strerror(errno));
	}
	close(*to_parent);
	*to_parent = -1;
	return rc;
}

/* / as its directory (it holds no file system busy); in the background
 * also a session of its own, and no terminal. */
static void detach(int foreground)
{
	int null;

	if (chdir("/") < 0)
		log_msg(LOG_WARNING, "cannot change to /: %s", strerror(errno));
	if (foreground)
		return;
	setsid();
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
}

/* ---- the kernel's mount, beside the reading of SRC -------------------- */


static struct fuse_session *mount_session(void *p)
{
	struct mounting *g = p;

	g->se = new_session(g->m, g->fs);
	if (!g->se)
		return NULL;
	if (fuse_set_signal_handlers(g->se) < 0)
		return NULL;
	g->handlers = 1;
	/* absolute: the daemon runs from /, and unmounts itself when killed */
	g->mnt_abs = realpath(g->m->mnt, NULL);
	if (fuse_session_mount(g->se, g->mnt_abs ? g->mnt_abs : g->m->mnt) < 0)
		return NULL;
	g->mounted = 1;
	return g->se;
}

/* The first thread, once the main thread has the session (which does not
 * wait for this): it faults in memory for the top directory's build (a
 * huge page cleared takes a few hundred microseconds), then builds it once
 * SRC is read. */
static void before_serving(void *p)
{
	struct mounting *g = p;
	int state;

	bigmem_prepare();
	pthread_mutex_lock(&g->src_lock);
	while ((state = g->src_state) == SRC_PENDING)
		pthread_cond_wait(&g->src_told, &g->src_lock);
	pthread_mutex_unlock(&g->src_lock);
	if (state == SRC_OPENED)
		build_top(g->fs);
}

/* The serving loop, its first thread mounting; NULL with *err set when no
 * thread could be started. */
static struct serve_loop *start_mounting(struct mount_args *m, struct mounting *g, int *err)
{
	struct serve_loop *l = serve_loop_start(m->single_thread ? 1 : MAX_SERVE_THREADS, mount_session,
						before_serving, g);

	*err = l ? 0 : errno;
	return l;
}

/* A mount point as /proc/self/mountinfo writes it: space, tab, newline
 * and backslash as octal escapes.  Decoded in place. */
static void unescape_mountinfo(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* Whether what was mounted last at mnt is a FUSE mount, and then its
 * connection's number (its device, as the kernel numbers it; fusectl
 * names it so).  Read from the mount table, not by a stat that would be a
 * request to this very daemon. */
static int top_fuse_mount(const char *mnt, unsigned *conn)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;
	int fuse = 0;

	if (!f)
		return 0;
	while (getline(&line, &cap, f) > 0) {
		unsigned major, minor;
		char point[4097];
		const char *type = strstr(line, " - ");

		if (!type || sscanf(line, "%*u %*u %u:%u %*s %4096s", &major, &minor, point) != 3)
			continue;
		unescape_mountinfo(point);
		if (strcmp(point, mnt) != 0)
			continue;
		type += 3;
		fuse = !strncmp(type, "fuse ", 5) || !strncmp(type, "fuse.", 5) || !strncmp(type, "fuseblk ", 8);
		*conn = major << 20 | minor;
	}
	free(line);
	fclose(f);
	return fuse;
}

static const char *mount_point(const struct mounting *g)
{
	return g->mnt_abs ? g->mnt_abs : g->m->mnt;
}

/* The mount's connection, noted while it is surely this daemon's (a
 * moment after the mount, off the first requests' way): what the end
 * aborts, should it have to, even after another mount went on top. */
static void remember_connection(struct mounting *g)
{
	g->conn_known = g->mounted && top_fuse_mount(mount_point(g), &g->conn);
}

/* Whether this daemon's mount is still what mnt shows. */
static int ours_on_top(const struct mounting *g)
{
	unsigned conn;

	return top_fuse_mount(mount_point(g), &conn) && (!g->conn_known || conn == g->conn);
}

static int write_abort(const char *file)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	rc = write(fd, "1", 1) == 1 ? 0 : -errno;
	close(fd);
	return rc;
}

/* Fails every request still waiting on the mount's connection, and lets
 * go of what the kernel holds for them: through fusectl's abort file
 * (the mount's owner may write it), else by a forced unmount, which
 * aborts the connection first (root; it then fails as busy when files
 * are open, the abort done), only of a mount that is surely ours. */
static int abort_mounted_connection(void *p)
{
	struct mounting *g = p;
	int on_top = ours_on_top(g), rc = -ENOENT;

	if (!g->conn_known && on_top)
		remember_connection(g); /* it stopped before noting it */
	if (g->conn_known) {
		char file[64];

		snprintf(file, sizeof file, "/sys/fs/fuse/connections/%u/abort", g->conn);
		rc = write_abort(file);
	}
	if (rc < 0 && on_top) { /* fusectl not mounted here */
		/* 0: unmounted too, nothing was open (libfuse's unmount
		 * then only frees its record: the device has the error) */
		rc = umount2(mount_point(g), MNT_FORCE) == 0 || errno == EBUSY ? 0 : -errno;
	}
	g->aborted = rc == 0;
	return rc;
}

/* libfuse leaves the mount of an aborted connection in place (it takes
 * the error on the device for an unmount done already): detached here,
 * as it would have been. */
static void detach_aborted(const struct mounting *g)
{
	const char *args[] = { "fusermount3", "-u", "-z", "-q", mount_point(g), NULL };

	if (!ours_on_top(g))
		return;
	if (geteuid() == 0)
		umount2(mount_point(g), MNT_DETACH);
	else
		g_spawn_sync(NULL, (char **)args, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDOUT_TO_DEV_NULL,
			     NULL, NULL, NULL, NULL, NULL, NULL);
}

/* Undoes what mount_session did, in the other order; after the loop's
 * threads ended. */
static void end_mounting(struct mounting *g)
{
	/* before the unmount: the connection is found, and aborted, through
	 * the mount */
	int left_behind = fs_end_notices(g->fs, g->mounted ? abort_mounted_connection : NULL, g);

	if (g->mounted) {
		fuse_session_unmount(g->se);
		if (g->aborted)
			detach_aborted(g);
	}
	if (g->handlers)
		fuse_remove_signal_handlers(g->se);
	if (g->se && !left_behind) /* else the notice thread, stuck in it, keeps it */
		fuse_session_destroy(g->se);
	free(g->mnt_abs);
	*g = (struct mounting){ 0 };
}

/* The first of path and its parents that does not exist, or NULL: what a
 * failed mount removes again of what it made. */
static char *first_missing(const char *path)
{
	char *missing = NULL, *p = g_strdup(path);
	struct stat st;

	while (*p && stat(p, &st) < 0 && errno == ENOENT) {
		char *up = g_path_get_dirname(p);

		g_free(missing);
		missing = p;
		p = up;
		if (!strcmp(p, missing))
			break;
	}
	g_free(p);
	return missing;
}

/* Removes the directories g_mkdir_with_parents made for path, from path up
 * to made (the first that was missing); those not empty stay. */
static void remove_made(const char *path, const char *made)
{
	char *p = g_strdup(path);

	while ((rmdir(p) == 0 || errno == ENOENT) && strcmp(p, made)) {
		char *up = g_path_get_dirname(p);

		g_free(p);
		p = up;
	}
	g_free(p);
}

/* Whether a is b or lies inside it (both absolute and resolved). */
static int path_within(const char *a, const char *b)
{
	size_t n = strlen(b);

	return !strncmp(a, b, n) && (a[n] == '\0' || a[n] == '/' || (n == 1 && b[0] == '/'));
}

/* How SRC and MNT lie: -1 when SRC is MNT or inside it: every look at
 * SRC would go through eifs' own mount, and wait on itself; 1 when MNT is
 * inside SRC: the mount must then wait for SRC to be read, which would
 * otherwise look at MNT (one of a folder's entries) through a mount that
 * cannot answer yet; else 0. */
static int paths_nest(const char *src, const char *mnt)
{
	char *s = realpath(src, NULL), *m = realpath(mnt, NULL);
	int nest = !s || !m ? 0 : path_within(s, m) ? -1 : path_within(m, s) ? 1 : 0;

	free(s);
	free(m);
	return nest;
}

/* A stop signal (SIGINT, SIGTERM, SIGHUP) that came before libfuse's
 * handlers were in place: SRC is read first when the mount must wait for
 * it, and the default action would end the daemon leaving MNT's folders
 * made behind it. */
static volatile sig_atomic_t stopped_early;

static void note_stop(int sig)
{
	stopped_early = sig;
}

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
static int caught_early[3];

/* Only signals left to their default action: one the mount was started
 * with ignored (nohup) stays ignored, as libfuse leaves it. */
static void catch_stops_early(void)
{
	struct sigaction sa = { .sa_handler = note_stop }, old;

	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		caught_early[i] = sigaction(stop_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL
				  && sigaction(stop_signals[i], &sa, NULL) == 0;
}

/* Back to the default actions, which libfuse replaces only when it finds
 * them; whether a stop came meanwhile. */
static int release_stops_early(void)
{
	for (int i = 0; i < 3; i++)
		if (caught_early[i]) {
			signal(stop_signals[i], SIG_DFL);
			caught_early[i] = 0;
		}
	return stopped_early != 0;
}

/* The mount point, for a tree that must never look at it (tree_hidden),
 * known before the mount is there; 0, or -1 when it cannot be known.
 * g_free name and path. */
static int hidden_mount_point(const char *mnt, struct tree_hidden *h, char **name, char **path)
{
	char *abs = realpath(mnt, NULL), *dir;
	struct stat st;
	int rc = -1;

	if (!abs)
		return -1;
	dir = g_path_get_dirname(abs);
	if (stat(dir, &st) == 0) {
		*name = g_path_get_basename(abs);
		*path = g_strdup(abs);
		*h = (struct tree_hidden){ st.st_dev, st.st_ino, *name, *path };
		rc = 0;
	}
	g_free(dir);
	free(abs);
	return rc;
}

/* Whether a FUSE file system is mounted on mnt already: another mount on
 * top of it would be unmounted in its place when this one ends. */
static int fuse_mounted_on(const char *mnt)
{
	struct statx stx;
	char *abs;
	unsigned conn;
	int on;

	/* the mount table takes a tenth of the mount's time to read; a folder
	 * no mount is on (the usual case) needs none.  Asked without a
	 * request to a file system that may be there (DONT_SYNC) */
	if (statx(AT_FDCWD, mnt, AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC, 0, &stx) == 0
	    && (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && !(stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
		return 0;
	abs = realpath(mnt, NULL);
	on = abs && top_fuse_mount(abs, &conn);

	free(abs);
	return on;
}

/* libfuse's own messages, in the background: to syslog with eifs' (its
 * default, stderr, is /dev/null by then).  Its levels are syslog's. */
static void log_from_libfuse(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[1024];
	int n = vsnprintf(line, sizeof line, fmt, ap);

	if (n < 0)
		return;
	n = MIN(n, (int)sizeof line - 1);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	log_msg((int)level, "libfuse: %s", line);
}

static int mount_and_serve(struct mount_args *m, int helper_form, int *to_parent)
{
	struct fs fs = { 0 };
	struct mounting g = { .m = m, .fs = &fs, .src_lock = PTHREAD_MUTEX_INITIALIZER,
				.src_told = PTHREAD_COND_INITIALIZER };
	struct serve_loop *loop = NULL;
	struct fuse_session *se;
	char *made = NULL, *made_in = NULL; /* the first folder made for MNT, and MNT: absolute */
	struct stat st;
	int err = 0, loop_err = 0, mkdir_err = 0, mount_after, nest, status = EXIT_MOUNT;
	unsigned errors_before;
	struct tree_hidden hidden;
	char *hidden_name = NULL, *hidden_path = NULL;
	int have_hidden;

	log_set_debug(m->debug);
	crash_report_install();
	cli_raise_fd_limit();
	/* before any thread: they inherit its mask.  EIFS_NO_WATCH (a test
	 * hook) leaves every check to a stat, as on a network share */
	if (!getenv("EIFS_NO_WATCH"))
		watch_start();
	/* the kernel mounts on a file too, but the root is a directory: every
	 * access would fail with EIO */
	if (stat(m->mnt, &st) == 0 && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "eifs: cannot mount on %s: %s\n", m->mnt, strerror(ENOTDIR));
		return EXIT_MOUNT;
	}
	if (paths_nest(m->src, m->mnt) < 0) {
		fprintf(stderr, "eifs: cannot mount %s on %s: the mount would hide it from eifs itself\n",
			m->src, m->mnt);
		return EXIT_USAGE;
	}
	if (fuse_mounted_on(m->mnt)) {
		fprintf(stderr, "eifs: cannot mount on %s: a FUSE file system is mounted there already; "
			"unmount it first\n", m->mnt);
		return EXIT_MOUNT;
	}
	catch_stops_early();
	/* its failure is told after SRC's, as SRC is the first to check */
	if (!helper_form && (made = first_missing(m->mnt)) && g_mkdir_with_parents(m->mnt, 0755) < 0)
		mkdir_err = errno;
	if (made) { /* removed, should the mount fail, after detach() moved to / */
		char *abs = g_canonicalize_filename(made, NULL);

		g_free(made);
		made = abs;
		made_in = g_canonicalize_filename(m->mnt, NULL);
	}
	fs.timeout = m->timeout;
	fs.writable = !m->read_only;
	fs.views = view_cache_new(m->cache_size);
	nest = paths_nest(m->src, m->mnt);
	mount_after = mkdir_err || nest > 0;
	/* before the mount is there: a look at MNT would then go to it */
	have_hidden = !mkdir_err && hidden_mount_point(m->mnt, &hidden, &hidden_name, &hidden_path) == 0;
	if (!mount_after && !release_stops_early())
		loop = start_mounting(m, &g, &loop_err);
	delay_open();
	errors_before = log_errors_logged();
	fs.tree = tree_open_hiding(m->src, !m->read_only, have_hidden ? &hidden : NULL, &err);
	g_free(hidden_name);
	g_free(hidden_path);
	if (mount_after && !release_stops_early() && fs.tree && !mkdir_err)
		loop = start_mounting(m, &g, &loop_err);
	se = loop ? serve_loop_session(loop) : NULL;
	if (!fs.tree) {
		/* one line for one failure: the tree's names file and offset */
		if (log_errors_logged() == errors_before)
			fprintf(stderr, "eifs: cannot mount %s: %s\n", m->src, strerror(err));
		status = EXIT_NO_SOURCE;
		goto out;
	}
	if (stopped_early) {
		fprintf(stderr, "eifs: stopped by a signal before the mount was ready\n");
		goto out;
	}
	fs_init_state(&fs);
	set_fault_hook(&fs);
	if (mkdir_err) {
		fprintf(stderr, "eifs: cannot create %s: %s\n", m->mnt, strerror(mkdir_err));
		goto out;
	}
	if (!loop)
		fprintf(stderr, "eifs: cannot start a thread to mount: %s\n", strerror(loop_err));
	if (!se)
		goto out;
	/* libfuse's handlers, in place since the mount, end the session on
	 * SIGINT, SIGTERM or SIGHUP: one that came meanwhile ends the mount */
	if (fuse_session_exited(se)) {
		fprintf(stderr, "eifs: stopped by a signal before the mount was ready\n");
		goto out;
	}
	/* Only now, with SRC parsed and the mount in place, leave the terminal,
	 * before the first thread's build may log */
	if (!m->foreground) {
		log_to_syslog();
		fuse_set_log_func(log_from_libfuse);
	}
	set_load_delay(&fs);
	set_turn_delay(&fs);
	tell_src_state(&g, SRC_OPENED);
	detach(m->foreground);
	if (tell_parent(to_parent, EXIT_OK) == -EPIPE) {
		/* the command was ended before it could say the mount is
		 * ready: a script took it for failed, so it is not left */
		log_msg(LOG_ERR, "%s: the mount command ended before the mount was ready; unmounting", m->mnt);
		goto out;
	}
	g_free(made); /* the mount's now, for good */
	made = NULL;
	view_cache_read_ahead(fs.views, fs.tree);
	fs_start(&fs, se);
	if (!m->single_thread) /* -s: one thread, and changes seen at the next look */
		fs_watch_start(&fs);
	set_convert_delay(&fs);
	set_notify_delay(&fs);
	/* the loops return 0 when an unmount or a signal ended them (-s:
	 * the signal's number), or a negative errno when they failed */
	if (m->single_thread) {
		serve_loop_free(loop);
		loop = NULL;
	}
	if (loop) {
		serve_loop_spin(loop, m->spin_us);
		set_spin_fixed(loop);
		serve_loop_before_stop(loop, drain_notices, &fs);
	}
	status = serve(loop, se, &g) >= 0 ? EXIT_OK : EXIT_MOUNT;
out:
	tell_src_state(&g, SRC_NOT_OPENED);
	serve_loop_free(loop);
	if (fs.inodes)
		fs_watch_stop(&fs); /* its reloads tell the session, which ends now */
	end_mounting(&g);
	if (made) {
		remove_made(made_in, made);
		g_free(made);
	}
	g_free(made_in);
	/* a second Ctrl-C or SIGTERM no longer ends the last saves half
	 * way (the handlers are gone; the default action killed) */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (fs.inodes)
		fs_stop(&fs); /* saves what opens left, which may convert views */
	view_cache_free(fs.views); /* its read-ahead thread uses the tree */
	fs.views = NULL;
	tree_free(fs.tree);
	return status;
}

/* The daemon starts before SRC is read and does every step itself; the
 * parent waits for one byte, the exit status, so that a failure still
 * reaches the terminal.
 *
 * The daemon is a process of its own that shares the parent's memory
 * (clone with CLONE_VM) rather than a copy of it (fork): a copy pays a
 * page fault for every page either side writes first, and the parent's
 * exit tears the copy down, all while the mount command still runs
 * (1.7 ms of 10 here).  Sharing is safe because the parent, once the
 * daemon runs, only waits in a raw read() and exits: it touches neither
 * the heap nor the C library's state.  The parent's stack stays mapped,
 * and what lies on it (the mount arguments) stays the daemon's to use.
 * The one per-thread value the two tell apart is the thread id the C
 * library caches (mutex owners): daemon_main puts the daemon's there.
 * (The kernel does not carry the parent's rseq registration over, so
 * sched_getcpu() in the daemon's main thread tells a stale CPU; serve.c
 * asks the system call instead.  The parent sets no signal handler, so no frame of one
 * lands on its stack.)
 * Where the kernel cannot say where that cache is, and under a sanitizer
 * (its run-time's per-thread state would be shared too), the daemon is
 * forked. */
struct daemon_start {
	struct mount_args *m;
	int helper_form;
	int to_parent;   /* the daemon's end of the status pipe */
	int from_daemon; /* the parent's end, closed in the daemon */
	int *tid_cache;  /* the C library's record of the thread's id; NULL when forked */
};

enum { DAEMON_STACK = 8 << 20, DAEMON_STACK_GUARD = 64 << 10 };

static int daemon_main(void *p)
{
	struct daemon_start *d = p;
	int status;

	/* the id the parent left there becomes the daemon's, and the kernel
	 * clears it at the daemon's exit as it would the parent's */
	if (d->tid_cache)
		*d->tid_cache = (int)syscall(SYS_set_tid_address, d->tid_cache);
	close(d->from_daemon);
	/* should the parent be gone, telling it fails with EPIPE */
	signal(SIGPIPE, SIG_IGN);
	status = mount_and_serve(d->m, d->helper_form, &d->to_parent);
	tell_parent(&d->to_parent, status); /* a failure before the mount was ready */
	exit(status);
}

/* Starts daemon_main in a process that shares this one's memory; its pid,
 * or -1 with errno set (ENOSYS: not possible here). */
static pid_t clone_daemon(struct daemon_start *d)
{
	/* test hook, not a user option: EIFS_FORK_DAEMON=1 takes the other way */
	const char *hook = getenv("EIFS_FORK_DAEMON");
	char *stack;
	pid_t pid;
	int e;

#ifdef UNDER_SANITIZER
	hook = "sanitizer";
#endif
	if (hook && *hook) {
		errno = ENOSYS;
		return -1;
	}
	stack = mmap(NULL, DAEMON_STACK, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
	if (stack == MAP_FAILED)
		return -1;
	if (mprotect(stack, DAEMON_STACK_GUARD, PROT_NONE) < 0 ||
	    prctl(PR_GET_TID_ADDRESS, &d->tid_cache) < 0 || !d->tid_cache) {
		d->tid_cache = NULL;
		munmap(stack, DAEMON_STACK);
		errno = ENOSYS;
		return -1;
	}
	/* else the parent's exit would clear the id the daemon keeps there */
	syscall(SYS_set_tid_address, NULL);
	pid = clone(daemon_main, stack + DAEMON_STACK, CLONE_VM | SIGCHLD, d);
	if (pid >= 0)
		return pid;
	e = errno;
	syscall(SYS_set_tid_address, d->tid_cache);
	d->tid_cache = NULL;
	munmap(stack, DAEMON_STACK);
	errno = e;
	return -1;
}

static pid_t fork_daemon(struct daemon_start *d)
{
	pid_t pid = fork();

	if (pid == 0)
		daemon_main(d);
	return pid;
}

/* Returns only when the daemon could not be started (a negative errno);
 * the parent exits with the daemon's word. */
static int start_daemon(struct mount_args *m, int helper_form)
{
	struct daemon_start d = { .m = m, .helper_form = helper_form };
	int p[2];
	pid_t pid;
	unsigned char status;
	long n;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	d.to_parent = p[1];
	d.from_daemon = p[0];
	pid = clone_daemon(&d);
	if (pid < 0) /* not possible here, or refused (seccomp): a copy then */
		pid = fork_daemon(&d);
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	/* raw calls: the C library's close() and read() would mark the thread
	 * state the daemon shares (cancellation); no handler is set here, so
	 * no EINTR */
	syscall(SYS_close, p[1]);
	n = syscall(SYS_read, p[0], &status, 1);
	if (n == 1)
		_exit(status);
	/* the daemon ended without a word: nothing shares the memory now */
	report_early_end(pid);
	_exit(EXIT_MOUNT);
}

int cmd_mount(int argc, char **argv, int helper_form)
{
	struct mount_args m = { .fuse_opts = g_string_new(NULL), .timeout = 86400, .cache_size = 128u << 20,
				  .spin_us = DEFAULT_SPIN_US };
	int to_parent = -1, status, rc;

	if (parse_mount_args(argc, argv, &m) < 0) {
		g_string_free(m.fuse_opts, TRUE);
		return EXIT_USAGE;
	}
	keep_standard_fds();
	if (!m.foreground) {
		rc = start_daemon(&m, helper_form); /* returns only when it cannot */
		fprintf(stderr, "eifs: cannot start the daemon: %s\n", strerror(-rc));
		g_string_free(m.fuse_opts, TRUE);
		return EXIT_MOUNT;
	}
	status = mount_and_serve(&m, helper_form, &to_parent);
	g_string_free(m.fuse_opts, TRUE);
	return status;
}

int cmd_umount(int argc, char **argv)
{
	const char *args[5] = { "fusermount3", "-u", NULL, NULL, NULL };
	int lazy = argc == 2 && !strcmp(argv[0], "-z");

	/* an option alone is no MNT (./-x names a folder so named) */
	if (argc != 1 + lazy || argv[lazy][0] == '-') {
		fprintf(stderr, "eifs umount: usage: eifs umount [-z] MNT\n");
		return EXIT_USAGE;
	}
	if (lazy)
		args[2] = "-z";
	args[2 + lazy] = argv[lazy];
	execvp(args[0], (char **)args);
	fprintf(stderr, "eifs: cannot run fusermount3: %s\n", strerror(errno));
	return EXIT_MOUNT;
}
