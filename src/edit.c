/* Contents being written: see edit.h. */
#define _GNU_SOURCE
#include "edit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>

#include "io.h"

/* A snapshot is a copy, taken while writes wait: what a save stores is
 * then one version, whatever writes come during the save.  Up to this
 * size always; a larger one while twice its size is available, besides
 * the other copies held (edit_memory_available: the host's MemAvailable,
 * or less under a cgroup's memory limit).
 * Else, or when the copy's memory is refused, it maps the memory file
 * rather than risk the daemon (and every unsaved edit with it) to the
 * OOM killer: a write during that save can give it a mix of two
 * versions, which the save that write makes replaces. */
enum { SNAPSHOT_COPY_ALWAYS = 64 << 20 };

struct edit {
	int refs;
	pthread_mutex_t save_lock; /* one save at a time, held through it */
	pthread_mutex_t lock;      /* the fields below; held only briefly */
	int fd;                    /* a memory file with the contents */
	uint64_t size;
	/* The memory file's own size, size or more: it shrinks only while no
	 * save maps it (a map's pages past the end fault with SIGBUS, and a
	 * write of them fails with EFAULT).  Past size it holds zeros. */
	uint64_t file_size;
	int maps;                  /* snapshots mapping the memory file now */
	int writing;               /* writes under way, unlocked */
	int holding;               /* snapshots and truncates that wait for
				    * them, or work: writes wait meanwhile */
	int held;                  /* one of them works (one at a time) */
	pthread_cond_t quiet;      /* writing, holding or held ended */
	struct edit_digest base;   /* edit_set_base, when base_known */
	int base_known;
	size_t copy_max;           /* SIZE_MAX, or a test's: no copy above */
	uint64_t available;        /* 0, or a test's MemAvailable */
	int64_t mtime;
	int writers;
	uint64_t version;          /* counts changes of the contents */
	uint64_t saved;            /* the version last saved (or loaded) */
	uint64_t failed;           /* the version whose save failed, + 1; 0: none */
	int error;
	char *message;
	int sticky;
	struct identity sticky_source;
	struct edit_digest sticky_digest;
};

int identity_equal(const struct identity *a, const struct identity *b)
{
	return a->size == b->size && a->offset == b->offset && a->mtime == b->mtime && a->kind == b->kind
	       && a->epoch == b->epoch;
}

struct edit *edit_new(int64_t mtime)
{
	struct edit *e = g_new0(struct edit, 1);

	e->fd = memfd_create("eifs-edit", MFD_CLOEXEC);
	if (e->fd < 0) {
		g_free(e);
		return NULL;
	}
	e->refs = 1;
	e->mtime = mtime;
	e->copy_max = SIZE_MAX;
	pthread_cond_init(&e->quiet, NULL);
	pthread_mutex_init(&e->lock, NULL);
	pthread_mutex_init(&e->save_lock, NULL);
	return e;
}

void edit_ref(struct edit *e)
{
	__atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
}

void edit_unref(struct edit *e)
{
	if (!e || __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	close(e->fd);
	pthread_cond_destroy(&e->quiet);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->save_lock);
	g_free(e->message);
	g_free(e);
}

int edit_fd(const struct edit *e)
{
	return e->fd;
}

size_t edit_readable(struct edit *e, uint64_t off, size_t len)
{
	pthread_mutex_lock(&e->lock);
	if (off >= e->size)
		len = 0;
	else if (len > e->size - off)
		len = (size_t)(e->size - off);
	pthread_mutex_unlock(&e->lock);
	return len;
}

/* Zeros over len bytes at off of the memory file, whose size stays. */
static int zero_range(struct edit *e, uint64_t off, uint64_t len)
{
	static const char zeros[65536];

	if (fallocate(e->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	for (uint64_t at = off; at < off + len; at += sizeof zeros) {
		size_t n = off + len - at < sizeof zeros ? (size_t)(off + len - at) : sizeof zeros;
		int rc = io_pwrite_all(e->fd, zeros, n, at);

		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Takes the lock once no write and no other holder is at work, and
 * keeps new writes off until unhold: a truncate must not cut a write's
 * bytes between its pwrite and its size, and a snapshot sees one
 * version.  The holder may drop the lock meanwhile (a long copy) and
 * take it again: reads and stats go on, as nothing changes the file. */
static void hold_locked(struct edit *e)
{
	e->holding++;
	while (e->writing || e->held)
		pthread_cond_wait(&e->quiet, &e->lock);
	e->held = 1;
}

static void hold(struct edit *e)
{
	pthread_mutex_lock(&e->lock);
	hold_locked(e);
}

static void unhold_locked(struct edit *e)
{
	e->held = 0;
	e->holding--;
	pthread_cond_broadcast(&e->quiet);
}

static void unhold(struct edit *e)
{
	unhold_locked(e);
	pthread_mutex_unlock(&e->lock);
}

/* Writes len bytes at off, unlocked, and returns with the lock held.
 * Counted meanwhile: the end of a save's map must not cut them away, and
 * holders wait for them. */
static int write_locked_after(struct edit *e, const void *buf, size_t len, uint64_t off)
{
	int rc;

	pthread_mutex_lock(&e->lock);
	while (e->holding)
		pthread_cond_wait(&e->quiet, &e->lock);
	e->writing++;
	pthread_mutex_unlock(&e->lock);
	rc = io_pwrite_all(e->fd, buf, len, off);
	pthread_mutex_lock(&e->lock);
	if (--e->writing == 0 && e->holding)
		pthread_cond_broadcast(&e->quiet);
	if (rc < 0 && off + len > e->size) {
		/* A part may stand past the end, which must read as zeros.
		 * Held, once the other writes under way set their sizes: it
		 * zeros none of their bytes. */
		struct stat st;
		uint64_t from;

		hold_locked(e);
		from = off > e->size ? off : e->size;
		if (fstat(e->fd, &st) == 0 && (uint64_t)st.st_size > e->file_size)
			e->file_size = (uint64_t)st.st_size;
		if (from < e->file_size)
			zero_range(e, from, (off + len < e->file_size ? off + len : e->file_size) - from);
		unhold_locked(e);
	}
	if (rc == 0 && off + len > e->size)
		e->size = off + len;
	if (rc == 0 && off + len > e->file_size)
		e->file_size = off + len;
	return rc;
}

int edit_load(struct edit *e, const void *data, size_t len, uint64_t off)
{
	int rc = write_locked_after(e, data, len, off);

	pthread_mutex_unlock(&e->lock);
	return rc;
}

int edit_write(struct edit *e, const void *buf, size_t len, uint64_t off)
{
	int rc = write_locked_after(e, buf, len, off);

	e->version++;
	e->sticky = 0;
	e->mtime = time(NULL);
	pthread_mutex_unlock(&e->lock);
	return rc;
}

/* The memory file cut or grown to size (the lock held): cut only where
 * no save maps it, else zeroed past size. */
static int resize(struct edit *e, uint64_t size)
{
	if (size < e->file_size && e->maps > 0)
		return zero_range(e, size, e->file_size - size);
	if (size != e->file_size) {
		if (ftruncate(e->fd, (off_t)size) < 0)
			return -errno;
		e->file_size = size;
	}
	return 0;
}

int edit_truncate(struct edit *e, uint64_t size)
{
	int rc;

	hold(e);
	/* what lies between the old end and the new is zeros already */
	rc = size < e->size || size > e->file_size ? resize(e, size) : 0;
	if (rc == 0)
		e->size = size;
	e->version++;
	e->sticky = 0;
	e->mtime = time(NULL);
	unhold(e);
	return rc;
}

void edit_touch(struct edit *e, int64_t mtime)
{
	pthread_mutex_lock(&e->lock);
	e->mtime = mtime;
	e->version++;
	pthread_mutex_unlock(&e->lock);
}

void edit_stat(struct edit *e, struct stat *st)
{
	pthread_mutex_lock(&e->lock);
	st->st_size = (off_t)e->size;
	st->st_blocks = (blkcnt_t)((e->size + 511) / 512);
	st->st_mtime = st->st_ctime = (time_t)e->mtime;
	pthread_mutex_unlock(&e->lock);
}

void edit_add_writer(struct edit *e)
{
	pthread_mutex_lock(&e->lock);
	e->writers++;
	e->sticky = 0; /* what is written now is the text */
	pthread_mutex_unlock(&e->lock);
}

int edit_writers(struct edit *e, uint64_t *version)
{
	int n;

	pthread_mutex_lock(&e->lock);
	n = e->writers;
	if (version)
		*version = e->version;
	pthread_mutex_unlock(&e->lock);
	return n;
}

int edit_remove_writer(struct edit *e)
{
	int left;

	pthread_mutex_lock(&e->lock);
	left = --e->writers;
	pthread_mutex_unlock(&e->lock);
	return left;
}

void edit_digest_of(struct edit_digest *d, const void *data, size_t len)
{
	GChecksum *c = g_checksum_new(G_CHECKSUM_SHA256);
	gsize n = sizeof d->sha256;

	g_checksum_update(c, data, (gssize)len);
	g_checksum_get_digest(c, d->sha256, &n);
	g_checksum_free(c);
}

/* Called with e->lock. */
static int shows_locked(struct edit *e, const struct identity *source_now)
{
	if (e->writers || e->version != e->saved)
		return 1;
	if (!e->sticky || !source_now)
		return 0;
	return identity_equal(source_now, &e->sticky_source) ? 1 : EDIT_ASK;
}

int edit_shows(struct edit *e, const struct identity *source_now)
{
	int shows;

	pthread_mutex_lock(&e->lock);
	shows = shows_locked(e, source_now);
	pthread_mutex_unlock(&e->lock);
	return shows;
}

int edit_shows_digest(struct edit *e, const struct identity *source_now, const struct edit_digest *now)
{
	int shows;

	pthread_mutex_lock(&e->lock);
	shows = shows_locked(e, source_now);
	if (shows == EDIT_ASK) {
		if (now && memcmp(now, &e->sticky_digest, sizeof *now) == 0) {
			e->sticky_source = *source_now;
			e->mtime = source_now->mtime;
		} else {
			/* other bytes, or none to tell: the text goes, and no
			 * writer is handed it over the REG as it is now */
			e->sticky = 0;
		}
		shows = shows_locked(e, source_now);
	}
	pthread_mutex_unlock(&e->lock);
	return shows == 1;
}

int edit_unsaved(struct edit *e)
{
	int unsaved;

	pthread_mutex_lock(&e->lock);
	unsaved = e->version != e->saved;
	pthread_mutex_unlock(&e->lock);
	return unsaved;
}

void edit_set_base(struct edit *e, const struct edit_digest *d)
{
	pthread_mutex_lock(&e->lock);
	e->base_known = d != NULL;
	if (d)
		e->base = *d;
	pthread_mutex_unlock(&e->lock);
}

int edit_base(struct edit *e, struct edit_digest *d)
{
	int known;

	pthread_mutex_lock(&e->lock);
	known = e->base_known;
	*d = e->base;
	pthread_mutex_unlock(&e->lock);
	return known;
}

void edit_retry(struct edit *e)
{
	pthread_mutex_lock(&e->lock);
	e->failed = 0; /* the error and its message stay until the result */
	pthread_mutex_unlock(&e->lock);
}

int edit_idle(struct edit *e)
{
	int idle;

	pthread_mutex_lock(&e->lock);
	idle = !e->writers && e->version == e->saved && !e->sticky;
	pthread_mutex_unlock(&e->lock);
	return idle;
}

/* A snapshot's map is gone: the last one cuts the zeros a truncate left,
 * unless a write under way may have put its bytes there.  Else they stay
 * for the next truncate or save: reads end at size all the same. */
static void unmapped(struct edit *e)
{
	pthread_mutex_lock(&e->lock);
	if (--e->maps == 0 && !e->writing && e->file_size > e->size)
		resize(e, e->size);
	pthread_mutex_unlock(&e->lock);
}

/* A number from a file of one line; 0 when it is missing or "max". */
static uint64_t read_number(const char *path)
{
	char line[64];
	unsigned long long n = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	if (!fgets(line, sizeof line, f) || sscanf(line, "%llu", &n) != 1)
		n = 0;
	fclose(f);
	return n;
}

/* MemAvailable, in bytes; UINT64_MAX when the host does not say. */
static uint64_t host_available(const char *root)
{
	char *path = g_build_filename(root, "proc/meminfo", NULL), line[128];
	unsigned long long kb = 0;
	int found = 0;
	FILE *f = fopen(path, "re");

	g_free(path);
	if (!f)
		return UINT64_MAX;
	while (!found && fgets(line, sizeof line, f))
		found = sscanf(line, "MemAvailable: %llu kB", &kb) == 1;
	fclose(f);
	return found ? (uint64_t)kb * 1024 : UINT64_MAX;
}

/* The value of key in a memory.stat file; 0 when it is not there. */
static uint64_t stat_value(const char *dir, const char *key)
{
	char *path = g_build_filename(dir, "memory.stat", NULL), line[128];
	unsigned long long n = 0;
	size_t len = strlen(key);
	FILE *f = fopen(path, "re");

	g_free(path);
	if (!f)
		return 0;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, key, len) && line[len] == ' ' && sscanf(line + len, "%llu", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* The names of a cgroup version's files. */
struct cgroup_files {
	const char *limit, *usage;
	const char *inactive_file; /* in memory.stat: page cache the kernel takes back first */
};

/* The least room left under the limits of the cgroup at path in the
 * hierarchy mounted at base and of those above it, the top one too (a
 * container's, in a cgroup namespace); UINT64_MAX without a limit.  The
 * usage counts page cache: what of it is inactive is room. */
static uint64_t room_in(const char *base, const char *path, const struct cgroup_files *names)
{
	char *dir = g_build_filename(base, path, NULL);
	uint64_t room = UINT64_MAX;

	while (strlen(dir) >= strlen(base)) {
		char *limit_file = g_build_filename(dir, names->limit, NULL);
		char *usage_file = g_build_filename(dir, names->usage, NULL);
		uint64_t limit = read_number(limit_file), usage = read_number(usage_file);
		char *up = g_path_get_dirname(dir);

		if (limit) { /* 0: none here ("max", or the file missing) */
			usage -= MIN(usage, stat_value(dir, names->inactive_file));
			room = MIN(room, limit > usage ? limit - usage : 0);
		}
		g_free(limit_file);
		g_free(usage_file);
		g_free(dir);
		dir = up;
	}
	g_free(dir);
	return room;
}

/* The room left under the memory limits of this process's cgroups:
 * memory.max in cgroup v2, memory.limit_in_bytes in v1's memory
 * controller; UINT64_MAX without one. */
static uint64_t cgroup_room(const char *root)
{
	static const struct cgroup_files v2 = { "memory.max", "memory.current", "inactive_file" };
	static const struct cgroup_files v1 = { "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file" };
	char *path = g_build_filename(root, "proc/self/cgroup", NULL), *text = NULL, **lines;
	uint64_t room = UINT64_MAX;

	if (!g_file_get_contents(path, &text, NULL, NULL)) {
		g_free(path);
		return room;
	}
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		char **f = g_strsplit(*l, ":", 3), **controllers;
		char *base = NULL;

		if (g_strv_length(f) == 3 && f[2][0] == '/') {
			controllers = g_strsplit(f[1], ",", -1);
			if (!strcmp(f[0], "0") && !f[1][0]) {
				base = g_build_filename(root, "sys/fs/cgroup", NULL);
				room = MIN(room, room_in(base, f[2], &v2));
			} else if (g_strv_contains((const char *const *)controllers, "memory")) {
				base = g_build_filename(root, "sys/fs/cgroup/memory", NULL);
				room = MIN(room, room_in(base, f[2], &v1));
			}
			g_strfreev(controllers);
		}
		g_free(base);
		g_strfreev(f);
	}
	g_strfreev(lines);
	g_free(path);
	g_free(text);
	return room;
}

uint64_t edit_memory_available(const char *root)
{
	uint64_t host = host_available(root), room = cgroup_room(root);

	return MIN(host, room) == UINT64_MAX ? 0 : MIN(host, room);
}

/* Bytes in snapshot copies that exist now, in every edit: what one more
 * copy must leave room for.  Process-wide, as the memory is. */
static pthread_mutex_t copies_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t copies_held;

/* Whether a copy of len bytes may be made, and if so its bytes counted
 * (give_back_copy). */
static int reserve_copy(const struct edit *e, size_t len)
{
	uint64_t available = 0;
	int ok;

	if (len > e->copy_max)
		return 0;
	if (len > SNAPSHOT_COPY_ALWAYS)
		available = e->available ? e->available : edit_memory_available("/");
	pthread_mutex_lock(&copies_lock);
	ok = len <= SNAPSHOT_COPY_ALWAYS || (available > copies_held && len <= (available - copies_held) / 2);
	if (ok)
		copies_held += len;
	pthread_mutex_unlock(&copies_lock);
	return ok;
}

static void give_back_copy(size_t len)
{
	pthread_mutex_lock(&copies_lock);
	copies_held -= len;
	pthread_mutex_unlock(&copies_lock);
}

/* The contents into a buffer of their own, held (no write under way):
 * 0, -ENOMEM, or -EIO when the memory file reads short (not expected:
 * it is size long at least). */
static int copy_contents(struct edit *e, size_t len, void **out)
{
	unsigned char *copy = g_try_malloc(len);
	size_t done = 0;

	if (!copy)
		return -ENOMEM;
	while (done < len) {
		ssize_t n = pread(e->fd, copy + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int rc = n < 0 ? -errno : -EIO;

			g_free(copy);
			return rc;
		}
		done += (size_t)n;
	}
	*out = copy;
	return 0;
}

void edit_set_snapshot_copy_max(struct edit *e, size_t max, uint64_t available)
{
	pthread_mutex_lock(&e->lock);
	e->copy_max = max;
	e->available = available;
	pthread_mutex_unlock(&e->lock);
}

int edit_snapshot_begin(struct edit *e, struct edit_snapshot *s, enum edit_snapshot_data want)
{
	int rc = 0, copied = 0, tried = 0;

	pthread_mutex_lock(&e->save_lock);
	hold(e);
	s->version = e->version;
	s->len = (size_t)e->size;
	s->mtime = e->mtime;
	s->map = NULL;
	s->copy = NULL;
	s->data = (const unsigned char *)"";
	s->mapped = 0;
	if (e->version == e->saved)
		rc = 1;
	else if (e->version + 1 == e->failed)
		rc = -e->error;
	if (rc < 0 || want == EDIT_DATA_NONE || (rc == 1 && want != EDIT_DATA_ALWAYS))
		s->len = 0;
	if (s->len && reserve_copy(e, s->len)) {
		pthread_mutex_unlock(&e->lock); /* held: no write comes */
		copied = copy_contents(e, s->len, &s->copy);
		pthread_mutex_lock(&e->lock);
		tried = 1;
		if (copied != 0)
			give_back_copy(s->len);
	}
	if (tried && copied == 0) {
		s->data = s->copy;
	} else if (tried && copied != -ENOMEM) {
		rc = copied; /* the memory file read short: a map would fault */
		s->len = 0;
	} else if (s->len) {
		e->maps++; /* the memory file keeps its size from now on */
	}
	unhold(e);
	if (s->len && !s->copy) {
		/* writes may go on meanwhile: they make a newer version */
		s->map = mmap(NULL, s->len, PROT_READ, MAP_SHARED, e->fd, 0);
		if (s->map == MAP_FAILED) {
			s->map = NULL;
			rc = -errno;
			s->len = 0;
			unmapped(e);
		} else {
			s->data = s->map;
			s->mapped = 1;
		}
	}
	return rc;
}

void edit_saved(struct edit *e, const struct edit_snapshot *s, const struct identity *sticky_source,
		const struct edit_digest *sticky_digest)
{
	pthread_mutex_lock(&e->lock);
	if (s->version > e->saved)
		e->saved = s->version;
	e->failed = 0;
	e->error = 0;
	if (sticky_source && sticky_digest && e->version == s->version) {
		e->sticky = 1;
		e->sticky_source = *sticky_source;
		e->sticky_digest = *sticky_digest;
		/* the time its source has: a save that changed no byte of it
		 * left it older than the writes, and the file must not show
		 * one time while the text stays and another once it goes */
		e->mtime = sticky_source->mtime;
	} else {
		e->sticky = 0; /* an older save's text is not this one's */
	}
	pthread_mutex_unlock(&e->lock);
}

void edit_failed(struct edit *e, const struct edit_snapshot *s, int err, char *msg)
{
	pthread_mutex_lock(&e->lock);
	e->failed = s->version + 1;
	e->error = err;
	g_free(e->message);
	e->message = msg;
	pthread_mutex_unlock(&e->lock);
}

void edit_snapshot_end(struct edit *e, struct edit_snapshot *s)
{
	if (s->map) {
		munmap(s->map, s->len);
		unmapped(e);
	}
	if (s->copy)
		give_back_copy(s->len);
	g_free(s->copy);
	s->map = NULL;
	s->copy = NULL;
	pthread_mutex_unlock(&e->save_lock);
}

int edit_failed_as_is(struct edit *e)
{
	int as_is;

	pthread_mutex_lock(&e->lock);
	as_is = e->failed && e->version + 1 == e->failed;
	pthread_mutex_unlock(&e->lock);
	return as_is;
}

int edit_error(struct edit *e, char **msg)
{
	int err;

	pthread_mutex_lock(&e->lock);
	err = e->error;
	if (msg)
		*msg = g_strdup(e->message ? e->message : "");
	pthread_mutex_unlock(&e->lock);
	return err;
}
