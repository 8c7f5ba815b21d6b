#include "view_cache.h"

#include <errno.h>

#include "log.h"
#include "views.h"

enum { FAILURE_COST = 256 }; /* what a remembered failure counts against the bound */

struct cached {
	struct tree_node *view;
	GBytes *bytes;      /* NULL while converting or after a failure */
	int error;          /* errno of a failed conversion */
	int converting;
	int users;          /* threads inside view_cache_get: not to be evicted */
	GList link;         /* in the LRU list, most recent first */
};

struct view_cache {
	GThreadPool *ahead; /* converts the next view of a directory while one is read */
	struct tree *ahead_tree;
	GMutex lock;
	GCond done;         /* a conversion finished */
	GHashTable *map;    /* view node -> struct cached */
	GQueue lru;
	uint64_t bytes, max_bytes;
};

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

static void convert_ahead(gpointer view, gpointer cache)
{
	struct view_cache *c = cache;
	int err;
	GBytes *b = view_cache_get_one(c, c->ahead_tree, view, &err, 0);

	if (b)
		g_bytes_unref(b);
}

struct view_cache *view_cache_new(uint64_t max_bytes)
{
	struct view_cache *c = g_new0(struct view_cache, 1);

	g_mutex_init(&c->lock);
	g_cond_init(&c->done);
	c->map = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, cached_free);
	g_queue_init(&c->lru);
	c->max_bytes = max_bytes;
	return c;
}

void view_cache_free(struct view_cache *c)
{
	if (!c)
		return;
	if (c->ahead)
		g_thread_pool_free(c->ahead, TRUE, TRUE);
	g_hash_table_destroy(c->map);
	g_cond_clear(&c->done);
	g_mutex_clear(&c->lock);
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
			g_hash_table_remove(c->map, e->view);
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

static void convert(struct view_cache *c, struct tree *t, struct cached *e)
{
	struct format_error ferr = { 0 };
	GByteArray *out = NULL;
	int rc;

	g_mutex_unlock(&c->lock);
	rc = view_convert(t, e->view, &out, &ferr);
	if (rc == 0 && log_debugging()) {
		char *what = tree_path(e->view);

		log_msg(LOG_DEBUG, "%s: %s view made, %u bytes", what, view_type_label(e->view->view), out->len);
		g_free(what);
	} else if (rc < 0) {
		char *what = tree_path(e->view);

		log_msg(LOG_ERR, "%s: cannot make the %s view: offset %llu: %s; reads give EIO",
			what, view_type_label(e->view->view), (unsigned long long)ferr.offset, ferr.msg);
		g_free(what);
	}
	g_mutex_lock(&c->lock);
	e->converting = 0;
	if (rc < 0) {
		e->error = ferr.code == ENOMEM ? ENOMEM : EIO;
		g_byte_array_unref(out);
	} else {
		e->bytes = g_byte_array_free_to_bytes(out);
	}
	if (e->bytes)
		__atomic_store_n(&e->view->size, (uint64_t)g_bytes_get_size(e->bytes), __ATOMIC_RELEASE);
	else if (__atomic_load_n(&e->view->size, __ATOMIC_ACQUIRE) == TREE_SIZE_UNKNOWN)
		/* not empty, or the kernel would never ask: a read must say EIO */
		__atomic_store_n(&e->view->size, failed_size(e->view), __ATOMIC_RELEASE);
	c->bytes += cost(e);
	g_cond_broadcast(&c->done);
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

void view_cache_read_ahead(struct view_cache *c, struct tree *t, int threads)
{
	c->ahead_tree = t;
	c->ahead = g_thread_pool_new(convert_ahead, c, threads, FALSE, NULL);
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

	g_mutex_lock(&c->lock);
	e = g_hash_table_lookup(c->map, view);
	if (!e) {
		e = g_new0(struct cached, 1);
		e->view = view;
		e->converting = 1;
		e->link.data = e;
		g_hash_table_insert(c->map, view, e);
		g_queue_push_head_link(&c->lru, &e->link);
		convert(c, t, e);
		if (ahead && c->ahead && (next = next_view(view)) && g_hash_table_contains(c->map, next))
			next = NULL;
	} else {
		e->users++;
		while (e->converting)
			g_cond_wait(&c->done, &c->lock);
		e->users--;
		g_queue_unlink(&c->lru, &e->link);
		g_queue_push_head_link(&c->lru, &e->link);
	}
	bytes = e->bytes ? g_bytes_ref(e->bytes) : NULL;
	*err = e->error;
	evict(c, e);
	g_mutex_unlock(&c->lock);
	if (next)
		g_thread_pool_push(c->ahead, next, NULL);
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
