/* Contents being written: see edit.h. */
#define _GNU_SOURCE
#include "edit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>

struct edit {
	int refs;
	pthread_mutex_t save_lock; /* one save at a time, held through it */
	pthread_mutex_t lock;      /* the fields below; held only briefly */
	int fd;                    /* a memory file with the contents */
	uint64_t size;
	int writing;               /* writes under way, unlocked */
	int copying;               /* a snapshot waits for them, or copies:
				    * writes wait until it is done */
	pthread_cond_t quiet;      /* writing or copying ended */
	size_t copy_max;           /* SIZE_MAX, or a test's "no memory" above it */
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

/* Writes len bytes at off, unlocked, and returns with the lock held.
 * Counted meanwhile: a snapshot's copy waits for them. */
static int write_locked_after(struct edit *e, const void *buf, size_t len, uint64_t off)
{
	int rc;

	pthread_mutex_lock(&e->lock);
	while (e->copying)
		pthread_cond_wait(&e->quiet, &e->lock);
	e->writing++;
	pthread_mutex_unlock(&e->lock);
	rc = write_at(e->fd, buf, len, off);
	pthread_mutex_lock(&e->lock);
	if (--e->writing == 0 && e->copying)
		pthread_cond_broadcast(&e->quiet);
	if (rc == 0 && off + len > e->size)
		e->size = off + len;
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

int edit_truncate(struct edit *e, uint64_t size)
{
	int rc;

	pthread_mutex_lock(&e->lock);
	rc = ftruncate(e->fd, (off_t)size) < 0 ? -errno : 0;
	if (rc == 0)
		e->size = size;
	e->version++;
	e->sticky = 0;
	e->mtime = time(NULL);
	pthread_mutex_unlock(&e->lock);
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

int edit_idle(struct edit *e)
{
	int idle;

	pthread_mutex_lock(&e->lock);
	idle = !e->writers && e->version == e->saved && !e->sticky;
	pthread_mutex_unlock(&e->lock);
	return idle;
}

/* The contents into a buffer of their own, the lock held and no write
 * under way; NULL when there is no memory for them. */
static void *copy_contents(struct edit *e, size_t len)
{
	unsigned char *copy = len <= e->copy_max ? g_try_malloc(len) : NULL;
	size_t done = 0;

	while (copy && done < len) {
		ssize_t n = pread(e->fd, copy + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) { /* the memory file is size long at least: not expected */
			g_free(copy);
			return NULL;
		}
		done += (size_t)n;
	}
	return copy;
}

void edit_set_snapshot_copy_max(struct edit *e, size_t max)
{
	pthread_mutex_lock(&e->lock);
	e->copy_max = max;
	pthread_mutex_unlock(&e->lock);
}

int edit_snapshot_begin(struct edit *e, struct edit_snapshot *s, unsigned flags)
{
	int rc = 0;

	pthread_mutex_lock(&e->save_lock);
	pthread_mutex_lock(&e->lock);
	e->copying = 1;
	while (e->writing)
		pthread_cond_wait(&e->quiet, &e->lock);
	s->version = e->version;
	s->len = (size_t)e->size;
	s->mtime = e->mtime;
	s->copy = NULL;
	s->data = (const unsigned char *)"";
	if (e->version == e->saved)
		rc = 1;
	else if (e->version + 1 == e->failed)
		rc = -e->error;
	/* A copy, however large, taken while writes wait (and reads, on the
	 * lock): a map of the memory file would let writes during the save
	 * store a mix of two versions, there until the next save, or for
	 * good after a crash.  No memory for it fails this save, not the
	 * version: a later one may have it. */
	if ((rc == 0 || (rc == 1 && (flags & EDIT_SNAPSHOT_SAVED_TOO))) && s->len) {
		s->copy = copy_contents(e, s->len);
		if (s->copy)
			s->data = s->copy;
		else
			rc = -ENOMEM;
	}
	if (!s->copy)
		s->len = 0;
	e->copying = 0;
	pthread_cond_broadcast(&e->quiet);
	pthread_mutex_unlock(&e->lock);
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
	g_free(s->copy);
	s->copy = NULL;
	pthread_mutex_unlock(&e->save_lock);
}

int edit_error(struct edit *e, char **msg)
{
	int err;

	pthread_mutex_lock(&e->lock);
	err = e->error;
	*msg = g_strdup(e->message ? e->message : "");
	pthread_mutex_unlock(&e->lock);
	return err;
}
