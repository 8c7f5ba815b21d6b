#include "view_cache.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "log.h"
#include "views.h"
#include "worker.h"

enum { FAILURE_COST = 256 }; /* what a remembered failure counts against the bound */

/* What a view is made from: the same source bytes give the same view,
 * whichever node (of whichever reload) asks. */
struct view_key {
	uint64_t dev, ino;  /* the file the source lies in */
	uint32_t epoch;     /* of that file (tree_source, a loose file's
			     * plain_stamp): rewritten by others */
	uint64_t offset, size;
	int64_t mtime;
	uint32_t type;
	guint name;         /* a hash of the source's name (a database's
			     * tables follow from its name) */
};

struct cached {
	struct view_key key;
	GBytes *bytes;      /* NULL while converting or after a failure */
	int error;          /* errno of a failed conversion */
	int converting;
	int users;          /* threads inside view_cache_get: not to be evicted */
	GList link;         /* in the LRU list, most recent first */
};

struct view_cache {
	struct worker *ahead; /* converts the next view of a directory while one is read */
	void (*before_wait)(int converting); /* see view_cache_before_wait */
	int stopping;
	struct tree *ahead_tree;
	pthread_mutex_t lock;
	pthread_cond_t done;         /* a conversion finished */
	GHashTable *map;    /* struct view_key -> struct cached */
	GQueue lru;
	uint64_t bytes, max_bytes;
};

static guint key_hash(gconstpointer p)
{
	const struct view_key *k = p;

	return (guint)(k->ino * 31 + k->offset * 131 + k->size * 7 + (uint64_t)k->mtime + k->type + k->name
		       + k->epoch);
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
	const struct view_key *x = a, *y = b;

	return x->dev == y->dev && x->ino == y->ino && x->epoch == y->epoch && x->offset == y->offset
	       && x->size == y->size && x->mtime == y->mtime && x->type == y->type
	       && x->name == y->name;
}

static void key_of(const struct tree_node *view, struct view_key *k)
{
	const struct tree_node *src = view_source(view);

	memset(k, 0, sizeof *k);
	k->size = src->size;
	k->mtime = src->mtime;
	if (src->kind == NODE_PLAIN) {
		k->ino = src->offset; /* a folder's file: its inode number */
		/* its times when listed: a rewrite in place, noticed, relists */
		k->epoch = src->plain_stamp;
	} else {
		k->dev = (uint64_t)src->src->stamp.st_dev;
		k->ino = (uint64_t)src->src->stamp.st_ino;
		k->epoch = src->src->epoch;
		k->offset = src->offset;
	}
	k->type = view->view;
	k->name = g_str_hash(src->name);
}

static uint64_t cost(const struct cached *e)
{
	return e->bytes ? g_bytes_get_size(e->bytes) + 64 : FAILURE_COST;
}

static void cached_free(gpointer p)
{
	struct cached *e = p;

	if (e->bytes)
		g_bytes_unref(e->bytes);
	g_free(e);
}

static GBytes *view_cache_get_one(struct view_cache *c, struct tree *t, struct tree_node *view, int *err,
				  int ahead);

/* A view to convert ahead, valid while the tree keeps its generation. */
struct ahead_job {
	struct tree_node *view;
	uint64_t generation;
};

static void convert_ahead(void *job, void *cache)
{
	struct view_cache *c = cache;
	struct ahead_job *j = job;
	int err;

	if (__atomic_load_n(&c->stopping, __ATOMIC_ACQUIRE)) {
		g_free(j);
		return;
	}
	tree_read_lock(c->ahead_tree);
	if (tree_generation(c->ahead_tree) == j->generation) {
		GBytes *b = view_cache_get_one(c, c->ahead_tree, j->view, &err, 0);

		if (b)
			g_bytes_unref(b);
	}
	tree_read_unlock(c->ahead_tree);
	g_free(j);
}

struct view_cache *view_cache_new(uint64_t max_bytes)
{
	struct view_cache *c = g_new0(struct view_cache, 1);

	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->done, NULL);
	c->map = g_hash_table_new_full(key_hash, key_equal, NULL, cached_free);
	g_queue_init(&c->lru);
	c->max_bytes = max_bytes;
	return c;
}

void view_cache_free(struct view_cache *c)
{
	if (!c)
		return;
	__atomic_store_n(&c->stopping, 1, __ATOMIC_RELEASE);
	worker_free(c->ahead);
	g_hash_table_destroy(c->map);
	pthread_cond_destroy(&c->done);
	pthread_mutex_destroy(&c->lock);
	g_free(c);
}

/* Drops least recently used finished views until the bound holds; the one
 * just used stays even when it alone is larger. */
static void evict(struct view_cache *c, struct cached *keep)
{
	GList *l = c->lru.tail;

	while (c->bytes > c->max_bytes && l) {
		GList *prev = l->prev;
		struct cached *e = l->data;

		if (e != keep && !e->converting && !e->users) {
			c->bytes -= cost(e);
			g_queue_unlink(&c->lru, l);
			g_hash_table_remove(c->map, &e->key);
		}
		l = prev;
	}
}

/* The size a view that failed to convert shows: its source's, so that a
 * read reaches eifs and gets EIO. */
static uint64_t failed_size(const struct tree_node *view)
{
	uint64_t src = view_source(view)->size;

	return src ? src : 1;
}

static void convert(struct view_cache *c, struct tree *t, struct cached *e, struct tree_node *view)
{
	struct format_error ferr = { 0 };
	GByteArray *out = NULL;
	int rc;

	pthread_mutex_unlock(&c->lock);
	if (c->before_wait)
		c->before_wait(1);
	rc = view_convert(t, view, &out, &ferr);
	if (rc == 0 && log_debugging()) {
		char *what = tree_path(view);

		log_msg(LOG_DEBUG, "%s: %s view made, %u bytes", what, view_type_label(view->view), out->len);
		g_free(what);
	} else if (rc < 0) {
		char *what = tree_path(view);

		log_msg(LOG_ERR, "%s: cannot make the %s view: offset %llu: %s; reads give EIO",
			what, view_type_label(view->view), (unsigned long long)ferr.offset, ferr.msg);
		g_free(what);
	}
	pthread_mutex_lock(&c->lock);
	e->converting = 0;
	if (rc < 0) {
		e->error = ferr.code == ENOMEM ? ENOMEM : EIO;
		g_byte_array_unref(out);
	} else {
		e->bytes = g_byte_array_free_to_bytes(out);
	}
	c->bytes += cost(e);
	pthread_cond_broadcast(&c->done);
}

/* The view's size once its conversion is known. */
static void settle(struct tree_node *view, const struct cached *e)
{
	if (e->bytes)
		__atomic_store_n(&view->size, (uint64_t)g_bytes_get_size(e->bytes), __ATOMIC_RELEASE);
	else if (__atomic_load_n(&view->size, __ATOMIC_ACQUIRE) == TREE_SIZE_UNKNOWN)
		/* not empty, or the kernel would never ask: a read must say EIO */
		__atomic_store_n(&view->size, failed_size(view), __ATOMIC_RELEASE);
}

/* The view after this one in its directory: where a reader of many views
 * (cat *.png, a thumbnailer) goes next. */
static struct tree_node *next_view(struct tree_node *view)
{
	const struct tree_dir *d = view->parent->dir;
	struct tree_node *end = d->child + d->count;

	for (struct tree_node *n = view + 1; n < end; n++)
		if (n->kind == NODE_VIEW && n->view == view->view)
			return n;
	return NULL;
}

void view_cache_before_wait(struct view_cache *c, void (*fn)(int converting))
{
	c->before_wait = fn;
}

void view_cache_read_ahead(struct view_cache *c, struct tree *t)
{
	c->ahead_tree = t;
	c->ahead = worker_new("eifs-ahead", convert_ahead, c);
}

GBytes *view_cache_get(struct view_cache *c, struct tree *t, struct tree_node *view, int *err)
{
	return view_cache_get_one(c, t, view, err, 1);
}

static GBytes *view_cache_get_one(struct view_cache *c, struct tree *t, struct tree_node *view, int *err,
				  int ahead)
{
	struct cached *e;
	GBytes *bytes;
	struct tree_node *next = NULL;
	struct view_key key;

	key_of(view, &key);
	pthread_mutex_lock(&c->lock);
	e = g_hash_table_lookup(c->map, &key);
	if (!e) {
		e = g_new0(struct cached, 1);
		e->key = key;
		e->converting = 1;
		e->link.data = e;
		g_hash_table_insert(c->map, &e->key, e);
		g_queue_push_head_link(&c->lru, &e->link);
		convert(c, t, e, view);
		if (ahead && c->ahead && (next = next_view(view))) {
			key_of(next, &key);
			if (g_hash_table_contains(c->map, &key))
				next = NULL;
		}
	} else {
		e->users++;
		if (e->converting && c->before_wait) {
			pthread_mutex_unlock(&c->lock);
			c->before_wait(0);
			pthread_mutex_lock(&c->lock);
		}
		while (e->converting)
			pthread_cond_wait(&c->done, &c->lock);
		e->users--;
		g_queue_unlink(&c->lru, &e->link);
		g_queue_push_head_link(&c->lru, &e->link);
	}
	settle(view, e);
	bytes = e->bytes ? g_bytes_ref(e->bytes) : NULL;
	*err = e->error;
	evict(c, e);
	pthread_mutex_unlock(&c->lock);
	if (next) {
		struct ahead_job *j = g_new(struct ahead_job, 1);

		j->view = next;
		j->generation = tree_generation(t);
		worker_push(c->ahead, j);
	}
	return bytes;
}

int view_cache_size(struct view_cache *c, struct tree *t, struct tree_node *view)
{
	GBytes *b;
	int err = 0, rc;

	if (__atomic_load_n(&view->size, __ATOMIC_ACQUIRE) != TREE_SIZE_UNKNOWN)
		return 0;
	rc = view_size_from_header(t, view);
	if (rc <= 0)
		return rc;
	b = view_cache_get(c, t, view, &err);
	if (b)
		g_bytes_unref(b);
	return -err;
}
