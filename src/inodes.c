/* Kernel-known inodes: see inodes.h.
 *
 * Locking: s->lock guards the table, the counts and each inode's cached
 * node.  An inode's parent and name change only in inodes_move, which
 * runs under the tree's write lock, so whoever holds the tree's read lock
 * may read them without s->lock. */
#include "inodes.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

struct inodes {
	struct tree *tree;
	struct inode root;
	pthread_mutex_t lock;
	GHashTable *by_name;   /* set of struct inode *, keyed by parent and name */
	GHashTable *gone;     /* unlinked inodes the kernel or a holder still has */
	uint64_t count;
	void (*edit_free)(struct edit *e);
};

static guint inode_hash(gconstpointer p)
{
	const struct inode *in = p;

	return g_str_hash(in->name) ^ (guint)((uintptr_t)in->parent >> 4);
}

static gboolean inode_equal(gconstpointer a, gconstpointer b)
{
	const struct inode *x = a, *y = b;

	return x->parent == y->parent && strcmp(x->name, y->name) == 0;
}

struct inodes *inodes_new(struct tree *t)
{
	struct inodes *s = g_new0(struct inodes, 1);

	s->tree = t;
	s->root.name = g_strdup("");
	s->root.refs = 1;
	s->root.ino = 1;
	s->root.generation = UINT64_MAX;
	pthread_mutex_init(&s->lock, NULL);
	s->by_name = g_hash_table_new(inode_hash, inode_equal);
	s->gone = g_hash_table_new(NULL, NULL);
	return s;
}

void inodes_set_edit_free(struct inodes *s, void (*fn)(struct edit *e))
{
	s->edit_free = fn;
}

static void inode_destroy(struct inodes *s, struct inode *in)
{
	if (in->edit && s->edit_free)
		s->edit_free(in->edit);
	g_free(in->opened_st);
	g_free(in->name);
	g_free(in);
}

void inodes_free(struct inodes *s)
{
	GHashTableIter it;
	gpointer key;
	GPtrArray *all = g_ptr_array_new();

	if (!s)
		return;
	/* the kernel is gone: every inode, reachable or not, goes */
	g_hash_table_iter_init(&it, s->by_name);
	while (g_hash_table_iter_next(&it, &key, NULL))
		g_ptr_array_add(all, key);
	g_hash_table_iter_init(&it, s->gone);
	while (g_hash_table_iter_next(&it, &key, NULL))
		g_ptr_array_add(all, key);
	for (guint i = 0; i < all->len; i++)
		inode_destroy(s, all->pdata[i]);
	g_ptr_array_unref(all);
	if (s->root.edit && s->edit_free)
		s->edit_free(s->root.edit);
	g_hash_table_destroy(s->by_name);
	g_hash_table_destroy(s->gone);
	pthread_mutex_destroy(&s->lock);
	g_free(s->root.opened_st); /* an opendir of the mount's root */
	g_free(s->root.name);
	g_free(s);
}

struct inode *inodes_root(struct inodes *s)
{
	return &s->root;
}

/* Drops one reference; frees what nobody holds, up the parents.  Called
 * with s->lock held. */
static void unref_locked(struct inodes *s, struct inode *in)
{
	while (in && in != &s->root && --in->refs == 0) {
		struct inode *parent = in->parent;

		g_hash_table_remove(in->unlinked ? s->gone : s->by_name, in);
		s->count--;
		inode_destroy(s, in);
		in = parent;
	}
}

void inode_ref(struct inodes *s, struct inode *in)
{
	pthread_mutex_lock(&s->lock);
	in->refs++;
	pthread_mutex_unlock(&s->lock);
}

void inode_unref(struct inodes *s, struct inode *in)
{
	pthread_mutex_lock(&s->lock);
	unref_locked(s, in);
	pthread_mutex_unlock(&s->lock);
}

struct tree_node *inode_node(struct inodes *s, struct inode *in)
{
	uint64_t gen = tree_generation(s->tree);
	struct tree_node *n, *pn;
	int err = 0;

	/* Resolvers run under the tree's read lock, so all of them find the
	 * same node for one generation: the node is stored before the
	 * generation that says it is current, and read after it. */
	if (__atomic_load_n(&in->generation, __ATOMIC_ACQUIRE) == gen)
		return __atomic_load_n(&in->node, __ATOMIC_RELAXED);
	if (in == &s->root)
		n = tree_root(s->tree);
	else if (__atomic_load_n(&in->scratch, __ATOMIC_ACQUIRE) || __atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE)
		 || !in->parent || !(pn = inode_node(s, in->parent))
		 || !tree_is_dir(pn))
		n = NULL;
	else
		n = tree_lookup(s->tree, pn, in->name, &err);
	if (n && in != &s->root && strcmp(n->name, in->name) != 0)
		n = NULL; /* only another spelling is left: that is another file */
	/* an unlink (under this lock, with the tree's read lock or none)
	 * may have come since the look above: it wins, or the name that
	 * went would resolve until the next reload */
	pthread_mutex_lock(&s->lock);
	if (__atomic_load_n(&in->unlinked, __ATOMIC_RELAXED))
		n = NULL;
	__atomic_store_n(&in->node, n, __ATOMIC_RELAXED);
	if (n)
		__atomic_store_n(&in->ino, n->ino, __ATOMIC_RELAXED);
	__atomic_store_n(&in->generation, gen, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->lock);
	return n;
}

struct inode *inodes_find_ref(struct inodes *s, struct inode *parent, const char *name)
{
	struct inode key = { .parent = parent, .name = (char *)name };
	struct inode *in;

	pthread_mutex_lock(&s->lock);
	in = g_hash_table_lookup(s->by_name, &key);
	if (in)
		in->refs++;
	pthread_mutex_unlock(&s->lock);
	return in;
}

struct inode *inodes_lookup(struct inodes *s, struct inode *parent, struct tree_node *node)
{
	struct inode key = { .parent = parent, .name = (char *)node->name };
	struct inode *in;

	pthread_mutex_lock(&s->lock);
	in = g_hash_table_lookup(s->by_name, &key);
	if (!in) {
		in = g_new0(struct inode, 1);
		in->parent = parent;
		in->name = g_strdup(node->name);
		parent->refs++;
		s->count++;
		g_hash_table_add(s->by_name, in);
	}
	if (in->nlookup++ == 0)
		in->refs++;
	__atomic_store_n(&in->node, node, __ATOMIC_RELAXED);
	__atomic_store_n(&in->ino, node->ino, __ATOMIC_RELAXED);
	__atomic_store_n(&in->generation, tree_generation(s->tree), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&s->lock);
	return in;
}

int inode_removed(const struct inode *in)
{
	for (; in; in = in->parent)
		if (__atomic_load_n(&in->unlinked, __ATOMIC_ACQUIRE))
			return 1;
	return 0;
}

static void unlink_locked(struct inodes *s, struct inode *in);

static struct inode *add_named(struct inodes *s, struct inode *parent, const char *name, uint64_t ino,
			       int scratch)
{
	struct inode key = { .parent = parent, .name = (char *)name };
	struct inode *in;

	pthread_mutex_lock(&s->lock);
	in = g_hash_table_lookup(s->by_name, &key);
	if (in)
		unlink_locked(s, in); /* what was there went (only a view can be) */
	in = g_new0(struct inode, 1);
	in->parent = parent;
	in->name = g_strdup(name);
	in->scratch = scratch;
	in->ino = ino;
	in->nlookup = 1;
	in->refs = 1;
	parent->refs++;
	s->count++;
	g_hash_table_add(s->by_name, in);
	pthread_mutex_unlock(&s->lock);
	return in;
}

struct inode *inodes_scratch(struct inodes *s, struct inode *parent, const char *name, uint64_t ino)
{
	return add_named(s, parent, name, ino, 1);
}

struct inode *inodes_named(struct inodes *s, struct inode *parent, const char *name, uint64_t ino)
{
	return add_named(s, parent, name, ino, 0);
}

void inode_opened(struct inodes *s, struct inode *in, const struct stat *st)
{
	pthread_mutex_lock(&s->lock);
	if (!in->opened_st)
		in->opened_st = g_new(struct stat, 1);
	*in->opened_st = *st;
	in->reads_open++;
	pthread_mutex_unlock(&s->lock);
}

void inode_closed(struct inodes *s, struct inode *in)
{
	pthread_mutex_lock(&s->lock);
	if (in->reads_open > 0)
		in->reads_open--;
	pthread_mutex_unlock(&s->lock);
}

int inode_opened_stat(struct inodes *s, struct inode *in, struct stat *st)
{
	int known;

	pthread_mutex_lock(&s->lock);
	known = in->opened_st != NULL && in->reads_open > 0;
	if (known)
		*st = *in->opened_st;
	pthread_mutex_unlock(&s->lock);
	return known;
}

void inodes_count_lookup(struct inodes *s, struct inode *in)
{
	pthread_mutex_lock(&s->lock);
	if (in->nlookup++ == 0)
		in->refs++;
	pthread_mutex_unlock(&s->lock);
}

void inodes_forget(struct inodes *s, struct inode *in, uint64_t n)
{
	if (in == &s->root)
		return;
	pthread_mutex_lock(&s->lock);
	if (n > in->nlookup)
		n = in->nlookup;
	in->nlookup -= n;
	if (n && in->nlookup == 0)
		unref_locked(s, in);
	pthread_mutex_unlock(&s->lock);
}

static void unlink_locked(struct inodes *s, struct inode *in)
{
	g_hash_table_remove(s->by_name, in);
	g_hash_table_add(s->gone, in);
	__atomic_store_n(&in->unlinked, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&in->node, NULL, __ATOMIC_RELAXED);
	__atomic_store_n(&in->generation, tree_generation(s->tree), __ATOMIC_RELEASE);
}

void inodes_unlink(struct inodes *s, struct inode *parent, const char *name)
{
	struct inode key = { .parent = parent, .name = (char *)name };
	struct inode *in;

	pthread_mutex_lock(&s->lock);
	in = g_hash_table_lookup(s->by_name, &key);
	if (in)
		unlink_locked(s, in);
	pthread_mutex_unlock(&s->lock);
}

void inodes_unlink_inode(struct inodes *s, struct inode *in)
{
	pthread_mutex_lock(&s->lock);
	if (g_hash_table_lookup(s->by_name, in) == in)
		unlink_locked(s, in);
	pthread_mutex_unlock(&s->lock);
}

void inodes_move(struct inodes *s, struct inode *in, struct inode *new_parent, const char *name, int scratch)
{
	struct inode key = { .parent = new_parent, .name = (char *)name };
	struct inode *there, *old_parent;

	pthread_mutex_lock(&s->lock);
	there = g_hash_table_lookup(s->by_name, &key);
	if (there && there != in) {
		unlink_locked(s, there);
		__atomic_store_n(&there->replaced, 1, __ATOMIC_RELEASE);
	}
	g_hash_table_remove(in->unlinked ? s->gone : s->by_name, in);
	old_parent = in->parent;
	new_parent->refs++;
	in->parent = new_parent;
	g_free(in->name);
	in->name = g_strdup(name);
	/* read without this lock (inode_node, opens, saves) */
	__atomic_store_n(&in->unlinked, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&in->scratch, scratch, __ATOMIC_RELEASE);
	__atomic_store_n(&in->generation, UINT64_MAX, __ATOMIC_RELEASE);
	g_hash_table_add(s->by_name, in);
	unref_locked(s, old_parent);
	pthread_mutex_unlock(&s->lock);
}

static int is_below(const struct inode *in, const struct inode *top)
{
	for (in = in->parent; in; in = in->parent)
		if (in == top)
			return 1;
	return 0;
}

void inodes_each_below(struct inodes *s, struct inode *top, void (*fn)(struct inode *in, void *ctx),
		       void *ctx)
{
	GHashTableIter it;
	gpointer key;

	pthread_mutex_lock(&s->lock);
	g_hash_table_iter_init(&it, s->by_name);
	while (g_hash_table_iter_next(&it, &key, NULL))
		if (is_below(key, top))
			fn(key, ctx);
	pthread_mutex_unlock(&s->lock);
}

void inodes_each_edit(struct inodes *s, void (*fn)(struct inode *in, void *ctx), void *ctx)
{
	GHashTableIter it;
	gpointer key;

	pthread_mutex_lock(&s->lock);
	g_hash_table_iter_init(&it, s->by_name);
	while (g_hash_table_iter_next(&it, &key, NULL))
		if (((struct inode *)key)->edit)
			fn(key, ctx);
	pthread_mutex_unlock(&s->lock);
}

char *inode_path(struct inodes *s, struct inode *in)
{
	GString *p = g_string_new(NULL);

	pthread_mutex_lock(&s->lock);
	for (; in && in != &s->root; in = in->parent) {
		g_string_prepend(p, in->name);
		g_string_prepend_c(p, '/');
	}
	pthread_mutex_unlock(&s->lock);
	if (!p->len)
		g_string_append_c(p, '/');
	return g_string_free(p, FALSE);
}

uint64_t inodes_count(struct inodes *s)
{
	return s->count;
}
