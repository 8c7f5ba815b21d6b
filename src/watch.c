#define _GNU_SOURCE
#include "watch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/inotify.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <glib.h>

/* Process-wide by nature: one signal handler, one inotify descriptor. */
static int started;                  /* watch_start was called */
static int inotify_fd = -1;          /* set once, under init_lock */
static int init_error;               /* -errno of a failed set-up: not tried again */
static uint64_t generation;          /* 0 until set up */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static sem_t changed;                /* posted by every event (watch_wait) */
/* watch_file calls not yet forgotten, by the file's watch descriptor (one
 * inode has one, however many times or names it is watched by); folders
 * stay watched: they are shared and few */
static GHashTable *file_users;       /* wd -> count, under users_lock */
static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
/* the folders armed, with those above them (paths), under users_lock: a
 * folder of a hundred archives is armed once, not at each of them */
static GHashTable *armed_folders;

/* A change of the file's bytes, times, mode or link count, or of its name */
#define FILE_EVENTS (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVE_SELF | IN_DELETE_SELF)
/* Another file put under its name, or the name taken away */
#define FOLDER_EVENTS (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MOVE_SELF | IN_DELETE_SELF)
/* A folder on the way to it renamed or removed */
#define ABOVE_EVENTS (IN_MOVE_SELF | IN_DELETE_SELF)

#ifndef EXFAT_SUPER_MAGIC
#define EXFAT_SUPER_MAGIC 0x2011BAB0
#endif
#define NTFS3_SUPER_MAGIC 0x7366746e
#define JFS_SUPER_MAGIC 0x3153464a
#define BCACHEFS_SUPER_MAGIC 0xca451a4e

/* Plain SIGIO: one pending signal stands for any number of events, and the
 * handler empties the whole queue. */
void watch_signals(sigset_t *set)
{
	sigaddset(set, SIGIO);
}

/* Empties the queue (an event that matches the last one queued raises no
 * signal of its own) and moves the generation on. */
static void on_event(int sig, siginfo_t *info, void *context)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	int saved = errno, fd = __atomic_load_n(&inotify_fd, __ATOMIC_ACQUIRE);

	(void)sig;
	(void)info;
	(void)context;
	if (fd >= 0)
		while (read(fd, buf, sizeof buf) > 0)
			;
	__atomic_add_fetch(&generation, 1, __ATOMIC_SEQ_CST);
	sem_post(&changed); /* async-signal-safe */
	errno = saved;
}

static void set_mask(int how)
{
	sigset_t set;

	sigemptyset(&set);
	watch_signals(&set);
	pthread_sigmask(how, &set, NULL);
}

void watch_start(void)
{
	struct sigaction sa = { .sa_sigaction = on_event, .sa_flags = SA_SIGINFO | SA_RESTART };

	set_mask(SIG_BLOCK);
	sem_init(&changed, 0, 0);
	/* now: a reader takes SIGIO from its first request on */
	sigemptyset(&sa.sa_mask);
	watch_signals(&sa.sa_mask);
	if (sigaction(SIGIO, &sa, NULL) == 0)
		__atomic_store_n(&started, 1, __ATOMIC_RELEASE);
}

void watch_reader(void)
{
	if (__atomic_load_n(&started, __ATOMIC_ACQUIRE))
		set_mask(SIG_UNBLOCK);
}

void watch_not_reader(void)
{
	if (__atomic_load_n(&started, __ATOMIC_ACQUIRE))
		set_mask(SIG_BLOCK);
}

uint64_t watch_generation(void)
{
	return __atomic_load_n(&generation, __ATOMIC_SEQ_CST);
}

int watch_is_started(void)
{
	return __atomic_load_n(&started, __ATOMIC_ACQUIRE);
}

uint64_t watch_wait(uint64_t seen)
{
	if (watch_generation() == seen)
		while (sem_wait(&changed) < 0 && errno == EINTR)
			;
	return watch_generation();
}

void watch_wake(void)
{
	sem_post(&changed);
}

static int set_up_locked(void)
{
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);

	if (fd < 0)
		return -errno;
	__atomic_store_n(&inotify_fd, fd, __ATOMIC_RELEASE);
	if (fcntl(fd, F_SETOWN, getpid()) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK | O_ASYNC) < 0) {
		int err = errno;

		fcntl(fd, F_SETFL, O_NONBLOCK);
		return -err;
	}
	__atomic_store_n(&generation, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int set_up(void)
{
	int rc;

	pthread_mutex_lock(&init_lock);
	if (!init_error && inotify_fd < 0)
		init_error = set_up_locked();
	rc = init_error;
	pthread_mutex_unlock(&init_lock);
	return rc;
}

/* Local file systems, where every change goes through this kernel. */
static int changes_seen_here(const char *path)
{
	struct statfs sf;

	if (statfs(path, &sf) < 0)
		return 0;
	switch ((unsigned long)sf.f_type) {
	case EXT4_SUPER_MAGIC: case XFS_SUPER_MAGIC: case BTRFS_SUPER_MAGIC:
	case TMPFS_MAGIC: case F2FS_SUPER_MAGIC: case REISERFS_SUPER_MAGIC:
	case MSDOS_SUPER_MAGIC: case EXFAT_SUPER_MAGIC: case NTFS3_SUPER_MAGIC:
	case JFS_SUPER_MAGIC: case BCACHEFS_SUPER_MAGIC: case OVERLAYFS_SUPER_MAGIC:
		return 1;
	default:
		return 0;
	}
}

static int add(const char *path, uint32_t events)
{
	return inotify_add_watch(inotify_fd, path, events | IN_MASK_ADD) < 0 ? -errno : 0;
}

/* Arms the file's own watch and counts this use of it. */
static int add_file(const char *path)
{
	int wd;

	/* under the lock: a forget of the same inode's last use in between
	 * would take away the watch this one counts on */
	pthread_mutex_lock(&users_lock);
	wd = inotify_add_watch(inotify_fd, path, FILE_EVENTS | IN_MASK_ADD);
	if (wd < 0) {
		wd = -errno;
	} else {
		gpointer key = GINT_TO_POINTER(wd);

		if (!file_users)
			file_users = g_hash_table_new(NULL, NULL);
		g_hash_table_insert(file_users, key,
				    GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(file_users, key)) + 1));
	}
	pthread_mutex_unlock(&users_lock);
	return wd;
}

void watch_forget(int wd)
{
	gpointer key = GINT_TO_POINTER(wd);
	unsigned users;

	pthread_mutex_lock(&users_lock);
	users = file_users ? GPOINTER_TO_UINT(g_hash_table_lookup(file_users, key)) : 0;
	if (users > 1) {
		g_hash_table_insert(file_users, key, GUINT_TO_POINTER(users - 1));
	} else if (users == 1) {
		g_hash_table_remove(file_users, key);
		/* EINVAL when the kernel already dropped it (the file deleted) */
		inotify_rm_watch(inotify_fd, wd);
	}
	pthread_mutex_unlock(&users_lock);
}

static int folder_armed(const char *dir)
{
	int armed;

	pthread_mutex_lock(&users_lock);
	armed = armed_folders && g_hash_table_contains(armed_folders, dir);
	pthread_mutex_unlock(&users_lock);
	return armed;
}

static void note_folder_armed(const char *dir)
{
	pthread_mutex_lock(&users_lock);
	if (!armed_folders)
		armed_folders = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_hash_table_add(armed_folders, g_strdup(dir));
	pthread_mutex_unlock(&users_lock);
}

/* Arms the folder dir and those above it. */
static int add_folders(const char *dir)
{
	char *at = g_strdup(dir);
	int rc = add(at, FOLDER_EVENTS | IN_ONLYDIR);

	while (rc == 0 && strcmp(at, "/") != 0) {
		char *up = g_path_get_dirname(at);

		g_free(at);
		at = up;
		rc = add(at, ABOVE_EVENTS | IN_ONLYDIR);
	}
	g_free(at);
	if (rc == 0)
		note_folder_armed(dir);
	return rc;
}

int watch_file(const char *path)
{
	char *dir, *real;
	int rc, wd = -1, armed;

	if (!__atomic_load_n(&started, __ATOMIC_ACQUIRE))
		return -ENOSYS;
	if (path[0] != '/')
		return -EREMOTE;
	dir = g_path_get_dirname(path);
	armed = folder_armed(dir); /* a local file system, then */
	if (!armed && !changes_seen_here(path)) {
		g_free(dir);
		return -EREMOTE;
	}
	/* a symbolic link on the way may be pointed elsewhere, which no
	 * watch of the path's folders sees */
	real = realpath(path, NULL);
	rc = real && !strcmp(real, path) ? 0 : -ELOOP;
	free(real);
	if (rc == 0)
		rc = set_up();
	if (rc == 0 && (wd = add_file(path)) < 0)
		rc = wd;
	if (rc == 0 && !armed)
		rc = add_folders(dir);
	g_free(dir);
	if (rc < 0 && wd >= 0)
		watch_forget(wd);
	return rc < 0 ? rc : wd;
}
