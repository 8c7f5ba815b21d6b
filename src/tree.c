#define _GNU_SOURCE
#include "tree.h"

#include "bigmem.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cp1251.h"
#include "io.h"
#include "log.h"
#include "names.h"
#include "res.h"
#include "views.h"
#include "watch.h"

struct tree {
	struct tree_node root;
	char *src_path;
	char *root_name;
	pthread_mutex_t lock;            /* serialises directory loads */
	pthread_rwlock_t reload_lock; /* readers of nodes against tree_reload */
	uint64_t generation;    /* bumped by every reload */
	pthread_mutex_t epoch_lock;
	uint32_t epochs;        /* the last tree_source.epoch given out */
	GHashTable *file_epochs; /* struct file_epoch: the epoch of each archive file seen */
	uint64_t nodes;
	uint64_t copy_nodes;    /* nodes of directories in copies (COPY_NODES_MAX) */
	uint64_t copy_nodes_max;
	int writable;
	void (*before_wait)(void); /* see tree_before_wait */
	uid_t uid;              /* owner of SRC, shown as every node's owner */
	gid_t gid;
	int has_hidden;
	struct tree_hidden hidden; /* its name owned */
};

/* ---- small helpers ------------------------------------------------------ */

/* Directories that lie in a copy of another entry's archive (via_copy)
 * show the same bytes again: 1000 entries sharing one window of a
 * 3000-entry archive are 3 million files of a 116 KB file, and a
 * megabyte of them would take all memory.  Their nodes, all copies
 * together, stay under this; a copy's directory past it fails to list,
 * with EIO and a log line, until others are freed. */
enum { COPY_NODES_MAX = 1 << 18 };

/* Whether the directory of n counts against COPY_NODES_MAX. */
static int in_copy(const struct tree_node *n)
{
	return (n->kind == NODE_ARCHIVE || n->kind == NODE_VDIR) && n->via_copy;
}

static int arm_watch(struct tree_source *s);

/* The top bit of a view's inode number, clear in every other one.  cp -r
 * and mv copy a directory in the order of its inode numbers, so they make
 * a source before its views: a view's name is then taken when cp comes
 * to it, rather than stored as an entry of its own.  Listings, in the
 * order of tree_dir_cookie, show views first instead: rm -r removes them
 * (which leaves them: fs_unlink), then their sources, and the directory
 * is empty. */
#define VIEW_INO_BIT ((uint64_t)1 << 63)

static uint64_t node_ino(uint64_t parent_ino, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull ^ parent_ino;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	h ^= h >> 29;
	h &= ~VIEW_INO_BIT;
	return h <= 1 ? h + 2 : h; /* 0 is invalid, 1 is the root */
}

/* An archive shown as a directory: searchable where readable, and
 * writable where the mount may write its file. */
static uint32_t dir_mode(uint32_t file_mode, int writable)
{
	uint32_t r = file_mode & 0444;

	return S_IFDIR | r | (r >> 2) | (writable ? file_mode & 0222 : 0);
}

static uint32_t entry_mode(uint32_t archive_mode)
{
	return S_IFREG | (archive_mode & 0666);
}

int tree_is_dir(const struct tree_node *n)
{
	return n->kind == NODE_FOLDER || n->kind == NODE_VDIR || n->kind == NODE_ARCHIVE;
}

char *tree_path(const struct tree_node *n)
{
	GString *s = g_string_new(n->name);

	for (n = n->parent; n; n = n->parent) {
		g_string_prepend_c(s, '/');
		g_string_prepend(s, n->name);
	}
	return g_string_free(s, FALSE);
}

/* The real path of a FOLDER or PLAIN node (or a top-level archive). */
static char *real_path(const struct tree *t, const struct tree_node *n)
{
	GString *s = g_string_new(NULL);

	for (; n->parent; n = n->parent) {
		g_string_prepend(s, n->name);
		g_string_prepend_c(s, '/');
	}
	g_string_prepend(s, t->src_path);
	return g_string_free(s, FALSE);
}

char *tree_real_path(const struct tree *t, const struct tree_node *n)
{
	return real_path(t, n);
}

/* Writable for the mount: write bits in the mode (root, who may write
 * anything, still leaves a read-only archive alone) and write access. */
static int may_write(const struct tree *t, const char *path, const struct stat *st)
{
	return t->writable && (st->st_mode & 0222) && access(path, W_OK) == 0;
}

/* A time this close to the clock may be shared by a later change: file
 * systems keep times in ticks (a jiffy without fine-grained times, 2 s on
 * FAT), so a file seen in the tick of its last change can change again
 * unseen.  Such a stamp is trusted only once the ticks have passed, like
 * git's "racily clean" index entries. */
enum { RACY_SECONDS = 2 };

static int racy(const struct timespec *changed)
{
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return changed->tv_sec >= now.tv_sec - RACY_SECONDS;
}

/* Racy with times in whole seconds (FAT, ext2 with small inodes), where a
 * tick is long enough for another program to change a file unseen right
 * after a save of ours.  Where times are finer the tick is milliseconds
 * or, on kernels with multigrain times, none: re-reading an archive after
 * every save for it would cost every view of it. */
static int coarse_racy(const struct stat *st)
{
	return st->st_mtim.tv_nsec == 0 && st->st_ctim.tv_nsec == 0 && racy(&st->st_ctim);
}

static int same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* The contents of an archive file as last seen: an epoch names them. */
struct file_epoch {
	dev_t dev;
	ino_t ino;              /* the key: dev and ino */
	off_t size;
	struct timespec mtim, ctim;
	int racy;               /* seen within RACY_SECONDS of its change */
	uint32_t epoch;
};

static guint file_epoch_hash(gconstpointer p)
{
	const struct file_epoch *f = p;

	return (guint)(((uint64_t)f->ino * 0x9E3779B97F4A7C15ull) >> 32) ^ (guint)f->dev;
}

static gboolean file_epoch_equal(gconstpointer a, gconstpointer b)
{
	const struct file_epoch *x = a, *y = b;

	return x->dev == y->dev && x->ino == y->ino;
}

/* Archive files whose stamps are kept.  A file replaced by a rename leaves
 * its old inode's record behind, so a daemon that runs for months beside a
 * build that replaces an archive again and again would grow without end.
 * Forgetting every record is always safe (epochs are never reused; the
 * views are made again once), so past the bound the map starts over. */
enum { FILE_EPOCHS_MAX = 4096 };

/* Records st as the file's stamp for the epoch given (0: a new one), and
 * returns the epoch. */
static uint32_t file_epoch_set(struct tree *t, const struct stat *st, uint32_t epoch, int is_racy)
{
	struct file_epoch key = { .dev = st->st_dev, .ino = st->st_ino }, *f;

	f = g_hash_table_lookup(t->file_epochs, &key);
	if (!f) {
		if (g_hash_table_size(t->file_epochs) >= FILE_EPOCHS_MAX)
			g_hash_table_remove_all(t->file_epochs);
		f = g_new(struct file_epoch, 1);
		*f = key;
		g_hash_table_add(t->file_epochs, f);
	}
	f->size = st->st_size;
	f->mtim = st->st_mtim;
	f->ctim = st->st_ctim;
	f->racy = is_racy;
	f->epoch = epoch ? epoch : ++t->epochs;
	return f->epoch;
}

/* The epoch of an archive file's contents: the one given before while the
 * file keeps its stamp (a folder listed again reopens every archive in
 * it, and their cached views stay good), a new one when it changed or was
 * last seen too soon after a change to be sure.  Never one given to other
 * contents: a file put back as it was would meet views of what it held. */
static uint32_t epoch_of(struct tree *t, const struct stat *st)
{
	struct file_epoch key = { .dev = st->st_dev, .ino = st->st_ino }, *f;
	uint32_t epoch;

	pthread_mutex_lock(&t->epoch_lock);
	f = g_hash_table_lookup(t->file_epochs, &key);
	if (f && !f->racy && f->size == st->st_size && same_time(&f->mtim, &st->st_mtim)
	    && same_time(&f->ctim, &st->st_ctim))
		epoch = f->epoch;
	else
		epoch = file_epoch_set(t, st, 0, racy(&st->st_ctim));
	pthread_mutex_unlock(&t->epoch_lock);
	return epoch;
}

/* A save through this tree made st the file's stamp: the bytes read before
 * are still there (a save appends), so the epoch stays. */
static void epoch_after_save(struct tree *t, const struct stat *st, uint32_t epoch)
{
	pthread_mutex_lock(&t->epoch_lock);
	file_epoch_set(t, st, epoch, coarse_racy(st));
	pthread_mutex_unlock(&t->epoch_lock);
}

static struct tree_source *source_new(struct tree *t, int fd, const char *path, const struct stat *st)
{
	struct tree_source *s = g_new0(struct tree_source, 1);

	/* members are mostly read whole, front to back: a longer readahead
	 * keeps the disk busy while FUSE hands out one request at a time */
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	s->fd = fd;
	s->path = g_strdup(path);
	s->refs = 1;
	s->stamp = *st;
	s->racy = coarse_racy(st);
	s->writable = may_write(t, path, st);
	s->epoch = epoch_of(t, st);
	return s;
}

void tree_source_ref(struct tree_source *s)
{
	__atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void tree_source_unref(struct tree_source *s)
{
	if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	if (__atomic_load_n(&s->watched, __ATOMIC_ACQUIRE) > 0)
		watch_forget(__atomic_load_n(&s->watch_wd, __ATOMIC_RELAXED));
	close(s->fd);
	g_free(s->path);
	g_free(s);
}

/* ASCII case-insensitive, like the game's lookup. */
/* A directory's index hashes names with a seed of its own, and mixes all
 * bits into the low ones it uses: names an archive's maker chose to
 * collide there (every lookup and insert then walks them all) cannot be
 * chosen without knowing the seed. */
static uint32_t name_hash_len(const struct tree_dir *d, const char *name, size_t len)
{
	uint32_t h = 2166136261u ^ d->seed;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		h = (h ^ (uint32_t)(c >= 'A' && c <= 'Z' ? c + 32 : c)) * 16777619u;
	}
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	return h;
}

static uint32_t name_hash(const struct tree_dir *d, const char *name)
{
	return name_hash_len(d, name, strlen(name));
}

static void dir_index_alloc(struct tree_dir *d, uint32_t capacity)
{
	uint32_t size = 8;

	while (size < 2 * (uint64_t)capacity)
		size *= 2;
	g_free(d->index);
	d->index = g_new0(uint32_t, size);
	d->mask = size - 1;
}

static void dir_index_add(struct tree_dir *d, uint32_t i, uint32_t hash)
{
	uint32_t h = hash & d->mask;

	while (d->index[h])
		h = (h + 1) & d->mask;
	d->index[h] = i + 1;
}

static void dir_reindex(struct tree_dir *d)
{
	dir_index_alloc(d, d->capacity);
	for (uint32_t i = 0; i < d->count; i++)
		dir_index_add(d, i, name_hash(d, d->child[i].name));
}

/* Room for n children, zeroed, or for the first n of the old_n at old.
 * A thousand children are 88 KiB, twenty-two pages: from bigmem, which
 * faults them in with one call, a folder of them takes a third less time
 * to build than from the heap.  Out of memory ends the program, as GLib's
 * g_new does. */
static struct tree_node *children_realloc(struct tree_node *old, uint32_t old_n, uint32_t n)
{
	struct tree_node *c = bigmem_realloc(old, old_n, n, sizeof *c);

	if (!c)
		g_error("out of memory for %u directory entries", n);
	return c;
}

/* A directory with room for capacity children; count grows as they come. */
static struct tree_dir *dir_new(struct tree *t, uint32_t capacity)
{
	struct tree_dir *d = g_new0(struct tree_dir, 1);

	d->seed = g_random_int();
	d->capacity = capacity ? capacity : 1;
	d->child = children_realloc(NULL, 0, d->capacity);
	dir_index_alloc(d, d->capacity);
	/* names average some 20 bytes; the chunk grows if they are longer */
	d->names = g_string_chunk_new(MIN(64 * 1024, 24 * (gsize)d->capacity + 64));
	return d;
}

static void pending_dir_free(struct pending_dir *p);

/* Frees a directory and everything loaded below it. */
static void dir_free(struct tree *t, struct tree_dir *d)
{
	if (!d)
		return;
	for (uint32_t k = 0; k < d->count; k++) {
		struct tree_node *n = &d->child[k];

		if (n->kind == NODE_PLAIN && n->plain_fd >= 0)
			close(n->plain_fd);
		else if (n->kind == NODE_VDIR && n->pending)
			pending_dir_free(n->pending);
		if (tree_is_dir(n) && in_copy(n) && n->dir)
			__atomic_sub_fetch(&t->copy_nodes, MIN(t->copy_nodes, n->dir->count), __ATOMIC_RELAXED);
		if (tree_is_dir(n))
			dir_free(t, n->dir);
		/* a top-level archive opened its file; nested ones share it */
		if (n->kind == NODE_ARCHIVE && (!n->parent || n->parent->kind == NODE_FOLDER))
			tree_source_unref(n->src);
	}
	__atomic_sub_fetch(&t->nodes, MIN(t->nodes, d->count), __ATOMIC_RELAXED);
	bigmem_free(d->child);
	g_free(d->index);
	g_free(d->order);
	g_free(d->archive_named);
	g_string_chunk_free(d->names);
	g_free(d);
}

/* Room for one more child.  Children move when the room grows: nothing
 * may point at them until the directory is finished. */
static struct tree_node *dir_next_child(struct tree_dir *d)
{
	if (d->count == d->capacity) {
		d->child = children_realloc(d->child, d->capacity, 2 * d->capacity);
		d->capacity *= 2;
		dir_reindex(d);
	}
	return &d->child[d->count];
}

static int by_node_name(const void *a, const void *b)
{
	return strcmp((*(struct tree_node *const *)a)->name, (*(struct tree_node *const *)b)->name);
}

/* Where cookie goes in a table of mask + 1 slots of child indices + 1:
 * its slot, or the slot of the child that has it. */
static uint32_t cookie_slot(const struct tree_dir *d, const uint32_t *seen, uint32_t mask, uint64_t cookie)
{
	uint32_t h = (uint32_t)((cookie ^ cookie >> 32) * 0x9E3779B97F4A7C15ull >> 32) & mask;

	while (seen[h] && tree_dir_cookie(&d->child[seen[h] - 1]) != cookie)
		h = (h + 1) & mask;
	return h;
}

/* No two children share a listing position (tree_dir_cookie), so none
 * shares an inode number either: names crafted for their hashes to meet
 * would otherwise show two files as one to cmp and diff, and a listing
 * resumed between them would skip one.  Of a clash, the smaller name
 * keeps its number; the others are hashed again with a salt, in name
 * order, so a remount gives the same numbers. */
static void unique_cookies(struct tree_dir *d)
{
	uint32_t size = 8, mask;
	uint32_t *seen;
	GPtrArray *losers = NULL;

	while (size < 2 * (uint64_t)d->count)
		size *= 2;
	mask = size - 1;
	seen = g_new0(uint32_t, size);
	for (uint32_t k = 0; k < d->count; k++) {
		struct tree_node *n = &d->child[k], *other;
		uint32_t h = cookie_slot(d, seen, mask, tree_dir_cookie(n));

		if (!seen[h]) {
			seen[h] = k + 1;
			continue;
		}
		if (!losers)
			losers = g_ptr_array_new();
		other = &d->child[seen[h] - 1];
		if (strcmp(other->name, n->name) > 0) {
			seen[h] = k + 1;
			n = other;
		}
		g_ptr_array_add(losers, n);
	}
	if (losers) {
		g_ptr_array_sort(losers, by_node_name);
		for (guint i = 0; i < losers->len; i++) {
			struct tree_node *n = losers->pdata[i];
			uint32_t h;

			for (uint64_t salt = 1;; salt++) {
				n->ino = node_ino(n->parent->ino + salt * 0x9E3779B97F4A7C15ull, n->name)
					 | (n->kind == NODE_VIEW ? VIEW_INO_BIT : 0);
				h = cookie_slot(d, seen, mask, tree_dir_cookie(n));
				if (!seen[h])
					break;
			}
			seen[h] = (uint32_t)(n - d->child) + 1;
		}
		g_ptr_array_free(losers, TRUE);
	}
	g_free(seen);
}

/* Gives back unused room once all children are in. */
static void dir_finish(struct tree *t, struct tree_dir *d)
{
	unique_cookies(d);
	if (d->count < d->capacity) {
		d->child = children_realloc(d->child, d->capacity, d->count ? d->count : 1);
		d->capacity = d->count ? d->count : 1;
		dir_reindex(d);
	}
	__atomic_add_fetch(&t->nodes, d->count, __ATOMIC_RELAXED);
}

/* The child named name (len bytes), ASCII case-insensitively; the exact
 * case wins. */
static struct tree_node *dir_find_len(const struct tree_dir *d, const char *name, size_t len,
				      uint32_t hash)
{
	struct tree_node *found = NULL;

	for (uint32_t h = hash & d->mask; d->index[h]; h = (h + 1) & d->mask) {
		struct tree_node *c = &d->child[d->index[h] - 1];

		if (g_ascii_strncasecmp(c->name, name, len) != 0 || c->name[len] != '\0')
			continue;
		if (memcmp(c->name, name, len) == 0)
			return c;
		if (!found)
			found = c;
	}
	return found;
}

static struct tree_node *dir_find(const struct tree_dir *d, const char *name)
{
	size_t len = strlen(name);

	return dir_find_len(d, name, len, name_hash_len(d, name, len));
}

static void node_init_len(struct tree_dir *d, struct tree_node *n, struct tree_node *parent,
			  const char *name, size_t len)
{
	n->parent = parent;
	n->name = g_string_chunk_insert_len(d->names, name, (gssize)len);
	n->ino = node_ino(parent->ino, n->name);
}

static void node_init(struct tree_dir *d, struct tree_node *n, struct tree_node *parent, const char *name)
{
	node_init_len(d, n, parent, name, strlen(name));
}

/* What one directory build logs: its first warnings, then a count.  An
 * archive of 65 535 faulty entries must not write as many lines at each
 * load of a folder. */
enum { BUILD_LOG_LINES = 64, LOG_NAME_MAX = 256 };

struct build_log {
	const char *what;     /* the directory's path */
	unsigned lines, more;
};

/* NULL: always */
static int build_log_ok(struct build_log *bl)
{
	if (!bl)
		return 1;
	if (bl->lines < BUILD_LOG_LINES) {
		bl->lines++;
		return 1;
	}
	bl->more++;
	return 0;
}

/* Validates the header of the archive in [off, off+len) of fd: magic, and
 * a table and name block that fit.  Returns 0 for an archive, 1 for no RES
 * magic at all, or a negative errno after logging why a RES archive is
 * unusable (at priority: an error where that ends the mount, else a
 * warning, the archive shown as a file). */
static int probe_archive(int fd, uint64_t off, uint64_t len, const char *what,
			 const char *consequence, int priority, struct build_log *bl)
{
	unsigned char hdr[RES_HEADER_SIZE] = { 0 };
	struct res_header h;
	struct res_error err = { 0 };
	size_t got = len < sizeof hdr ? (size_t)len : sizeof hdr;

	if (got < 4 || io_pread_all(fd, hdr, got, off) < 0 || !res_is_magic(hdr, 4))
		return 1; /* not an archive at all: a plain file, nothing to say */
	if (got < sizeof hdr) /* the magic, and the header cut short */
		res_fail(&err, EINVAL, 0, "truncated header: %llu bytes, need %d", (unsigned long long)len,
			 RES_HEADER_SIZE);
	if (err.code || res_header_decode(hdr, len, &h, &err) < 0) {
		if (build_log_ok(bl))
			log_msg(priority, "%s: offset %llu: %s (%s); %s", what,
				(unsigned long long)err.offset, err.msg, strerror(err.code), consequence);
		return -err.code;
	}
	return 0;
}

/* ---- views ------------------------------------------------------------ */

struct view_name {
	uint32_t source;
	unsigned type;
	char *name;
};

static void collect_view(void *ctx, unsigned type, const char *name)
{
	struct view_name v = { 0, type, g_strdup(name) };

	g_array_append_val((GArray *)ctx, v);
}

/* Adds the views of every file of d once its real children are in; a real
 * entry of the same name always wins. */
static void add_views(struct tree *t, struct tree_dir *d, struct tree_node *dir)
{
	GArray *views = g_array_new(FALSE, FALSE, sizeof(struct view_name));

	for (uint32_t i = 0; i < d->count; i++) {
		guint before = views->len;

		views_for(t, &d->child[i], dir, collect_view, views);
		for (guint k = before; k < views->len; k++)
			g_array_index(views, struct view_name, k).source = i;
	}
	for (guint k = 0; k < views->len; k++) {
		struct view_name *v = &g_array_index(views, struct view_name, k);
		struct tree_node *n, *src;

		if (!dir_find(d, v->name)) {
			n = dir_next_child(d); /* may move the children: src after it */
			src = &d->child[v->source];
			node_init(d, n, dir, v->name);
			n->ino |= VIEW_INO_BIT;
			n->kind = NODE_VIEW;
			n->view = (uint8_t)v->type;
			n->source = v->source;
			n->size = TREE_SIZE_UNKNOWN;
			n->src = src->src;
			n->mtime = src->mtime;
			n->depth = src->depth;
			n->mode = S_IFREG | (src->mode & (view_is_editable(n->view) ? 0666 : 0444));
			dir_index_add(d, d->count++, name_hash(d, n->name));
		}
		g_free(v->name);
	}
	g_array_unref(views);
}

/* ---- folders ------------------------------------------------------------ */

/* A loose file's change time (and mtime's nanoseconds) folded into 32
 * bits: it moves with every write in place, which may keep size and mtime
 * seconds, and unlike the clock it is the file's own.  The low bit says
 * the stamp is racy (taken too soon after the change to be sure of). */
static uint32_t file_stamp(const struct stat *st)
{
	uint64_t h = 0xcbf29ce484222325ull;
	const uint64_t parts[] = { (uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec,
				   (uint64_t)st->st_mtim.tv_nsec };

	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		h = (h ^ parts[i]) * 0x100000001b3ull;
	return ((uint32_t)(h ^ (h >> 32)) & ~1u) | (uint32_t)racy(&st->st_ctim);
}

/* Opens path for reading if it is a regular file, with its stat in *st;
 * -1 with errno otherwise.  Never waits on a fifo renamed over the name. */
static int open_regular(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0 && errno == EWOULDBLOCK) /* a lease held: a fifo never says so */
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		close(fd);
		errno = EIO;
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

static void folder_child(struct tree *t, struct tree_node *n, const char *path, const struct stat *st)
{
	n->mtime = st->st_mtime;
	n->size = (uint64_t)st->st_size;
	n->mode = st->st_mode;
	if (S_ISDIR(st->st_mode)) {
		n->kind = NODE_FOLDER;
		n->size = 0;
		return;
	}
	n->kind = NODE_PLAIN;
	n->plain_fd = -1;
	n->plain_stamp = file_stamp(st);
	n->offset = (uint64_t)st->st_ino; /* who it is, for caches of its views */
	if (names_is_archive_ext(n->name)) {
		struct stat opened;
		int fd = open_regular(path, &opened);

		/* the stamp of the file opened, not of the one listed: another
		 * may have been renamed over the name in between */
		if (fd >= 0) {
			st = &opened;
			n->mtime = st->st_mtime;
			n->size = (uint64_t)st->st_size;
			n->mode = st->st_mode;
		}
		if (fd >= 0 && probe_archive(fd, 0, n->size, path, "shown as a file", LOG_WARNING, NULL) == 0) {
			n->kind = NODE_ARCHIVE;
			n->offset = 0;
			n->plain_fd = 0; /* the union now holds no table */
			n->table = NULL;
			n->src = source_new(t, fd, path, st);
			n->mode = dir_mode(st->st_mode, n->src->writable);
			/* a change to it is then told (fs_watch.c), also
			 * before anything in it is opened */
			arm_watch(n->src);
			return;
		}
		if (fd >= 0)
			close(fd);
	}
}

static int is_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/* Whether path, resolved a link at a time as realpath(3) would, leads to
 * the mount point or into it: every look (lstat, readlink) is at a path
 * already known to lie outside it, so none is a request to the mount. */
static int leads_into(const char *path, const char *mnt)
{
	GString *done = g_string_new(NULL); /* resolved so far, "" for / */
	GQueue todo = G_QUEUE_INIT;         /* the components still to go */
	char **parts = g_strsplit(path, "/", -1);
	int links = 0, into = 0;

	for (char **p = parts; *p; p++)
		g_queue_push_tail(&todo, g_strdup(*p));
	g_strfreev(parts);
	while (!g_queue_is_empty(&todo)) {
		char *comp = g_queue_pop_head(&todo), target[4096];
		size_t was = done->len;
		struct stat st;
		ssize_t n;

		if (!*comp || !strcmp(comp, ".")) {
			g_free(comp);
			continue;
		}
		if (!strcmp(comp, "..")) {
			char *slash = strrchr(done->str, '/');

			g_string_truncate(done, slash ? (gsize)(slash - done->str) : 0);
			g_free(comp);
			continue;
		}
		g_string_append_c(done, '/');
		g_string_append(done, comp);
		g_free(comp);
		if (is_within(done->str, mnt)) {
			into = 1;
			break;
		}
		if (lstat(done->str, &st) < 0 || !S_ISLNK(st.st_mode))
			continue; /* one that is not there leads nowhere: the stat fails too */
		n = readlink(done->str, target, sizeof target - 1);
		if (n < 0 || ++links > 40)
			break;
		target[n] = '\0';
		g_string_truncate(done, target[0] == '/' ? 0 : was);
		parts = g_strsplit(target, "/", -1);
		for (guint k = g_strv_length(parts); k-- > 0;)
			g_queue_push_head(&todo, g_strdup(parts[k]));
		g_strfreev(parts);
	}
	g_queue_clear_full(&todo, g_free);
	g_string_free(done, TRUE);
	return into;
}

/* Whether entry name of the folder at path (whose stat is self) is the
 * mount point, or a link that leads to it or into it (tree_hidden). */
static int hidden_entry(const struct tree *t, const char *path, const struct stat *self,
			const struct dirent *de)
{
	char *entry;
	int hidden;

	if (!t->has_hidden)
		return 0;
	if (self->st_dev == t->hidden.dev && self->st_ino == t->hidden.ino && !strcmp(de->d_name, t->hidden.name))
		return 1;
	if (de->d_type != DT_LNK && de->d_type != DT_UNKNOWN)
		return 0;
	entry = g_build_filename(path, de->d_name, NULL);
	hidden = t->hidden.path && leads_into(entry, t->hidden.path);
	g_free(entry);
	return hidden;
}

/* Whether the folder at real path "to" holds the one at "here", or is it. */
static int holds_or_is(const char *to, const char *here)
{
	size_t len = strlen(to);

	return strncmp(here, to, len) == 0 && (here[len] == '/' || here[len] == '\0' || len == 1);
}

/* Whether name in folder dir (at path) is a link to a folder that holds
 * dir, or one of the folders dir is shown in (a/x -> ../b, b/y -> ../a):
 * followed, it would show the tree inside itself, again and again, to
 * find and cp -r.  Logged, as it is not shown. */
static int links_up(const struct tree *t, const struct tree_node *dir, const char *path, const char *name)
{
	char *link = g_build_filename(path, name, NULL);
	char *to = realpath(link, NULL);
	int up = 0;

	for (const struct tree_node *n = dir; to && n && !up; n = n->parent) {
		char *shown = real_path(t, n), *here = realpath(shown, NULL);

		up = here && holds_or_is(to, here);
		free(here);
		g_free(shown);
	}
	if (up)
		log_msg(LOG_WARNING, "%s: a link to %s, which holds the folder it is in; not shown", link, to);
	free(to);
	g_free(link);
	return up;
}

static int load_folder(struct tree *t, struct tree_node *dir, struct tree_dir **out)
{
	char *path = real_path(t, dir);
	DIR *d = opendir(path);
	GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
	GArray *stats = g_array_new(FALSE, FALSE, sizeof(struct stat));
	struct dirent *de;
	struct tree_dir *td;
	int rc = 0;

	struct stat self;

	if (!d || fstat(dirfd(d), &self) < 0) {
		rc = -errno;
		log_msg(LOG_ERR, "%s: cannot open folder: %s", path, strerror(errno));
		if (d)
			closedir(d);
		goto out;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (hidden_entry(t, path, &self, de))
			continue; /* not even a stat: see tree_hidden */
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
			continue; /* dangling links, devices, sockets: nothing a game reads */
		if (S_ISDIR(st.st_mode) && de->d_type != DT_DIR && links_up(t, dir, path, de->d_name))
			continue;
		g_ptr_array_add(names, g_strdup(de->d_name));
		g_array_append_val(stats, st);
	}
	closedir(d);
	td = dir_new(t, names->len);
	td->stamp = self.st_mtim;
	td->racy = racy(&self.st_mtim);
	for (guint i = 0; i < names->len; i++) {
		struct tree_node *n = &td->child[i];
		char *child_path = g_build_filename(path, names->pdata[i], NULL);

		node_init(td, n, dir, names->pdata[i]);
		folder_child(t, n, child_path, &g_array_index(stats, struct stat, i));
		if (n->kind == NODE_PLAIN && names_is_archive_ext(n->name)) {
			td->archive_named = g_renew(uint32_t, td->archive_named, td->archive_named_count + 1);
			td->archive_named[td->archive_named_count++] = td->count;
		}
		dir_index_add(td, td->count, name_hash(td, n->name));
		td->count++;
		g_free(child_path);
	}
	add_views(t, td, dir);
	dir_finish(t, td);
	*out = td;
out:
	g_free(path);
	g_ptr_array_unref(names);
	g_array_unref(stats);
	return rc;
}

/* ---- archives ----------------------------------------------------------- */

/* What an archive's directories are made from: its table.  Kept until
 * the last backslash directory has been loaded, so that each of them is
 * built only when first used. */
struct archive_table {
	struct res_table tab;
	uint32_t refs;        /* the directory being built + those not loaded yet */
	uint8_t *windows;     /* WINDOW_* of each entry; made when the first
			       * nested archive is met */
};

struct member {
	uint32_t entry;
	uint32_t at;          /* where in the name block the next component starts */
};

/* The members of all backslash directories one directory build met, in
 * one block, each directory's together: a large archive's members then
 * cost one allocation, not a growing array per directory.  The block goes
 * with the last of them to load. */
struct member_block {
	uint32_t refs;        /* the directories not loaded yet */
	struct member v[];
};

/* A backslash directory waiting for its first use. */
struct pending_dir {
	struct archive_table *at;
	struct tree_node *archive;
	struct member_block *block;
	struct member *members; /* entries below this directory: len of them in block */
	uint32_t len;
	uint32_t first;         /* while built: where its first member is in the build's members ... */
	int scattered;          /* ... and whether others lie between its own */
	uint32_t made_at;       /* its place among the directories its build made */
	uint32_t named_by;      /* the entry whose stored name made it ... */
	uint32_t named_len;     /* ... and the length of its part up to the end of the folder's name */
};

static void archive_table_unref(struct archive_table *at)
{
	if (--at->refs > 0)
		return;
	g_free(at->windows);
	res_table_free(&at->tab);
	g_free(at);
}

/* A stored name for a log line: cp1251 shown as UTF-8, NUL and the
 * undefined byte escaped, cut after LOG_NAME_MAX bytes. */
static char *raw_name_for_log(const char *raw, size_t len)
{
	GString *s = g_string_new(NULL);

	cp1251_to_utf8(raw, len < LOG_NAME_MAX ? len : LOG_NAME_MAX, "", s);
	if (len > LOG_NAME_MAX)
		g_string_append_printf(s, "... (%zu bytes)", len);
	return g_string_free(s, FALSE);
}

static void log_rewritten_name(struct build_log *bl, uint32_t i, const char *raw, size_t len)
{
	GString *shown;

	if (names_is_plain(raw, len) || !build_log_ok(bl))
		return;
	shown = g_string_new(NULL);
	if (names_display_path(raw, len, shown)) {
		char *stored = raw_name_for_log(raw, len);

		log_msg(LOG_WARNING, "%s: entry %u: name \"%s\" cannot be shown as stored; shown as \"%s\"",
			bl->what, i, stored, shown->str);
		g_free(stored);
	}
	g_string_free(shown, TRUE);
}

/* ---- entries that share bytes ------------------------------------------ */

/* Entries may share their bytes: a packer's dedup gives identical ones
 * one copy (the same offset and length), and the game reads each.  A
 * nested archive shown as a directory in every copy is fine once; copies
 * of copies multiply, though: four entries sharing one window, nested 10
 * deep, made 350 000 directories of a 1.3 KB file (4^16 allowed by the
 * depth limit).  So a copy is a directory
 * unless it lies in a copy already, and bytes that only partly overlap
 * another entry's (no packer makes those) are never one. */
enum { WINDOW_OWN, WINDOW_COPY, WINDOW_OVERLAP };

struct window {
	uint64_t off, len;
	const char *name;
	uint32_t name_len, slot;
};

/* By place, then the stored name: the first of a set of copies is the
 * same after a save renumbers the table. */
static int window_order(const void *a, const void *b)
{
	const struct window *x = a, *y = b;
	int c;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	c = memcmp(x->name, y->name, MIN(x->name_len, y->name_len));
	if (c)
		return c;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	return (x->slot > y->slot) - (x->slot < y->slot);
}

/* Marks the windows g up to h (copies of one another) as overlapping. */
static void mark_overlap(uint8_t *kind, const struct window *w, uint32_t g)
{
	for (uint32_t h = g; ; h++) {
		kind[w[h].slot] = WINDOW_OVERLAP;
		if (w[h + 1].off != w[g].off || w[h + 1].len != w[g].len)
			break;
	}
}

/* WINDOW_* of every entry of tab, by one sweep over the entries sorted by
 * place (those that could hold an archive: whole, at least a header).  An
 * entry overlaps an earlier one exactly when it starts before the furthest
 * end met so far; the one that reached that end overlaps it too, and so
 * is every entry that overlaps any other marked (the one right after it
 * in the sweep does, and the furthest end is its own then). */
static uint8_t *table_windows(const struct res_table *tab, uint64_t archive_len)
{
	uint32_t n = tab->hdr.count, m = 0, far = 0;
	struct window *w = g_new(struct window, (size_t)n + 1);
	uint8_t *kind = g_malloc0(n ? n : 1);
	uint64_t far_end = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct res_entry *e = &tab->entries[i];

		if (e->length >= RES_HEADER_SIZE && !res_entry_faults(tab, i, archive_len))
			w[m++] = (struct window){ e->offset, e->length, res_entry_name(tab, i), e->name_len, i };
	}
	qsort(w, m, sizeof *w, window_order);
	w[m] = (struct window){ UINT64_MAX, 0, "", 0, 0 }; /* ends mark_overlap's walks */
	for (uint32_t g = 0, h; g < m; g = h) {
		for (h = g + 1; h < m && w[h].off == w[g].off && w[h].len == w[g].len; h++)
			kind[w[h].slot] = WINDOW_COPY;
		if (g > 0 && w[g].off < far_end) {
			mark_overlap(kind, w, g);
			if (kind[w[far].slot] != WINDOW_OVERLAP)
				mark_overlap(kind, w, far);
		}
		if (w[g].off + w[g].len > far_end) {
			far_end = w[g].off + w[g].len;
			far = g;
		}
	}
	g_free(w);
	return kind;
}

/* Is this entry itself an archive to show as a directory? */
static int is_nested_archive(struct tree_node *n, const struct tree_node *archive, struct archive_table *at,
			     struct build_log *bl)
{
	int candidate = names_is_archive_ext(n->name)
		|| (!strchr(n->name, '.')
		    && (names_has_ext(archive->name, "anm") || names_has_ext(archive->name, "bon")));
	char *what;
	int ok;

	if (!candidate || n->faults || n->size < RES_HEADER_SIZE)
		return 0;
	what = tree_path(n);
	ok = probe_archive(n->src->fd, n->offset, n->size, what, "shown as a file", LOG_WARNING, bl) == 0;
	if (ok && archive->depth + 1 > TREE_MAX_DEPTH) {
		if (build_log_ok(bl))
			log_msg(LOG_WARNING, "%s: archives nested deeper than %d levels are shown as files",
				what, TREE_MAX_DEPTH);
		ok = 0;
	}
	/* A window that starts where an enclosing archive starts holds that
	 * archive's own header: the archive would contain itself. */
	for (const struct tree_node *a = archive; ok && a; a = a->parent)
		if (a->kind == NODE_ARCHIVE && a->offset == n->offset) {
			if (build_log_ok(bl))
				log_msg(LOG_WARNING, "%s: archive contains itself (offset %llu); shown as a file",
					what, (unsigned long long)n->offset);
			ok = 0;
		}
	if (ok && !at->windows)
		at->windows = table_windows(&at->tab, archive->size);
	if (ok && at->windows[n->slot] == WINDOW_OVERLAP) {
		if (build_log_ok(bl))
			log_msg(LOG_WARNING, "%s: its bytes partly overlap another entry's; shown as a file", what);
		ok = 0;
	} else if (ok && at->windows[n->slot] == WINDOW_COPY && archive->via_copy) {
		if (build_log_ok(bl))
			log_msg(LOG_WARNING, "%s: shares its bytes with an entry beside it, inside an archive "
				"that does too; shown as a file", what);
		ok = 0;
	}
	g_free(what);
	return ok;
}

static void fill_entry(struct tree_node *n, struct tree_node *archive, struct archive_table *at,
		       uint32_t i, struct build_log *bl)
{
	const struct res_table *tab = &at->tab;
	const struct res_entry *e = &tab->entries[i];

	n->kind = NODE_ENTRY;
	n->slot = i;
	n->src = archive->src;
	n->size = e->length;
	n->offset = archive->offset + e->offset;
	n->mtime = e->mtime;
	n->depth = archive->depth;
	n->faults = (uint8_t)res_entry_faults(tab, i, archive->size);
	n->mode = entry_mode(archive->mode);
	if (n->faults && build_log_ok(bl)) {
		char *what = tree_path(n);

		log_msg(LOG_WARNING, "%s: data at %u+%u is past the archive end %llu; reads give EIO",
			what, e->offset, e->length, (unsigned long long)archive->size);
		g_free(what);
	}
	if (is_nested_archive(n, archive, at, bl)) {
		n->kind = NODE_ARCHIVE;
		n->via_copy = archive->via_copy || at->windows[i] == WINDOW_COPY;
		n->depth = archive->depth + 1;
		n->mode = dir_mode(archive->mode, archive->src->writable);
	}
}

/* Adds a child under a free name: a taken one (the game would find only
 * one of two case variants) becomes "name~TAG", TAG from the stored bytes
 * that make it (names_tag: the whole name of a file, a folder's up to and
 * with the backslash after its name), and if that is taken too,
 * "name~TAG~SLOT". */
static struct tree_node *add_child_as(struct tree_dir *d, struct tree_node *parent, const char *name,
				      size_t len, uint32_t hash, int taken_already, uint32_t slot,
				      const char *stored, size_t stored_len, struct build_log *bl)
{
	struct tree_node *n = dir_next_child(d);

	if (!taken_already) {
		node_init_len(d, n, parent, name, len);
	} else {
		char *taken = g_strndup(name, len);
		char *free_name = names_dedup(taken, names_tag(stored, stored_len));

		/* the same stored bytes twice give the same tag: the table
		 * index tells those apart (changes to them are refused) */
		while (dir_find(d, free_name)) {
			char *other = g_strdup_printf("%s~%u", free_name, slot);

			g_free(free_name);
			free_name = other;
		}
		if (build_log_ok(bl))
			log_msg(LOG_WARNING, "%s: entry %u: name \"%s\" is taken (a case variant, or a name shown alike); shown as \"%s\"",
				bl->what, slot, taken, free_name);
		node_init_len(d, n, parent, free_name, strlen(free_name));
		hash = name_hash(d, free_name);
		g_free(taken);
		g_free(free_name);
	}
	dir_index_add(d, d->count++, hash);
	return n;
}

static struct tree_node *add_child(struct tree *t, struct tree_dir *d, struct tree_node *parent,
				   const char *name, size_t len, uint32_t slot, const char *stored,
				   size_t stored_len, struct build_log *bl)
{
	uint32_t hash = name_hash_len(d, name, len);

	return add_child_as(d, parent, name, len, hash, dir_find_len(d, name, len, hash) != NULL, slot, stored,
			    stored_len, bl);
}

/* Whether entry i's last stored part is shown as it is stored, as shown. */
static int shown_as_stored(const struct res_table *tab, uint32_t i, const char *shown, size_t shown_len)
{
	const char *name = res_entry_name(tab, i), *end = name + tab->entries[i].name_len, *part;

	while (end > name && end[-1] == '\\')
		end--;
	for (part = end; part > name && part[-1] != '\\'; part--)
		;
	return shown_len == (size_t)(end - part) && memcmp(shown, part, shown_len) == 0;
}

/* Bytewise order of two stored names, the shorter first on a tie. */
static int stored_order(const struct res_table *tab, uint32_t a, uint32_t b)
{
	size_t la = tab->entries[a].name_len, lb = tab->entries[b].name_len;
	int c = memcmp(res_entry_name(tab, a), res_entry_name(tab, b), MIN(la, lb));

	return c ? c : (la > lb) - (la < lb);
}

/* The file already shown as comp (ASCII case-insensitively) when entry i
 * is to have the name rather than it, by rules that hold however a save
 * renumbers the table (table order would hand the name to the other after
 * a save, and a file open under it would be saved to the other entry):
 * - of two case variants, the one the game's lookup finds (saves keep it
 *   in front of its variants: res_write's hidden);
 * - of names shown alike through a rewrite (x%00, stored as x%00 and as
 *   x and a NUL), the one shown as stored, else the smaller stored bytes. */
static struct tree_node *name_taken_from(struct tree_node *there, const struct res_table *tab, uint32_t i,
					 const char *comp, size_t len)
{
	uint32_t j;
	int i_plain, j_plain;

	if (!there || (there->kind != NODE_ENTRY && there->kind != NODE_ARCHIVE) || there->dir)
		return NULL;
	j = there->slot;
	if (res_name_equal(res_entry_name(tab, i), tab->entries[i].name_len, res_entry_name(tab, j),
			   tab->entries[j].name_len))
		return res_lookup(tab, res_entry_name(tab, i), tab->entries[i].name_len) == (int64_t)i ? there : NULL;
	i_plain = shown_as_stored(tab, i, comp, len);
	j_plain = shown_as_stored(tab, j, there->name, strlen(there->name));
	if (i_plain != j_plain)
		return i_plain ? there : NULL;
	return stored_order(tab, i, j) < 0 ? there : NULL;
}

/* A file's name held by the folder there, which came first in the table:
 * the file has it (the game finds the file by it; a folder is no entry),
 * and the folder is renamed as it would be had it come second, so that
 * which one is renamed does not change when a save renumbers the table.
 * Members of the folder still to come find it through renamed. */
static void folder_gives_way(struct tree_dir *d, struct tree_node *there, const struct res_table *tab,
			     GHashTable **renamed, struct build_log *bl)
{
	struct pending_dir *p = there->pending;
	const struct res_entry *e = &tab->entries[p->named_by];
	char *shown = g_strdup(there->name);
	char *free_name = names_dedup(shown, names_tag(tab->names + e->name_off, p->named_len));

	while (dir_find(d, free_name)) {
		char *other = g_strdup_printf("%s~%u", free_name, p->named_by);

		g_free(free_name);
		free_name = other;
	}
	if (build_log_ok(bl))
		log_msg(LOG_WARNING, "%s: entry %u: folder name \"%s\" is taken by a file; shown as \"%s\"",
			bl->what, p->named_by, shown, free_name);
	if (!*renamed)
		*renamed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_hash_table_insert(*renamed, g_ascii_strdown(shown, -1), p);
	node_init_len(d, there, there->parent, free_name, strlen(free_name));
	dir_reindex(d);
	g_free(free_name);
	g_free(shown);
}

/* Entry i takes the name of the file there (name_taken_from); that file's
 * entry gets a name of its own, as it would had it come second. */
static void take_name(struct tree *t, struct tree_dir *d, struct tree_node *dir, struct tree_node *archive,
		      struct archive_table *at, struct tree_node *there, uint32_t i, const char *comp, size_t len,
		      struct build_log *bl)
{
	const struct res_table *tab = &at->tab;
	uint32_t was = there->slot, at_index = (uint32_t)(there - d->child);
	const struct res_entry *we = &tab->entries[was];
	char *shown = g_strdup(there->name);
	struct tree_node *c = add_child(t, d, dir, shown, strlen(shown), was, tab->names + we->name_off,
					we->name_len, bl);

	fill_entry(c, archive, at, was, bl);
	there = &d->child[at_index]; /* the room may have moved */
	node_init_len(d, there, dir, comp, len);
	fill_entry(there, archive, at, i, bl);
	g_free(shown);
}

/* The next component of member m's stored name: sets comp and len to its
 * display form (kept in scratch when it had to be rewritten), next_at to
 * where the following one starts, and returns whether it is the last. */
static int next_component(const struct res_table *tab, const struct member *m, GString *scratch,
			  const char **comp, size_t *len, uint32_t *next_at)
{
	const struct res_entry *e = &tab->entries[m->entry];
	const char *end = tab->names + e->name_off + e->name_len;
	const char *p = tab->names + m->at, *stop;
	int plain = 1;

	while (p < end && *p == '\\')
		p++; /* empty components */
	if (p == end) {
		*comp = "%EMPTY";
		*len = 6;
		*next_at = (uint32_t)(end - tab->names);
		return 1;
	}
	for (stop = p; stop < end && *stop != '\\'; stop++)
		if ((unsigned char)*stop < 0x20 || (unsigned char)*stop >= 0x7F || *stop == '/')
			plain = 0;
	if ((*p == '.' && (stop - p == 1 || (stop - p == 2 && p[1] == '.'))) || stop - p > NAMES_COMPONENT_MAX)
		plain = 0;
	if (plain) {
		*comp = p;
		*len = (size_t)(stop - p);
	} else {
		g_string_truncate(scratch, 0);
		names_display_path(p, (size_t)(stop - p), scratch);
		*comp = scratch->str;
		*len = scratch->len;
	}
	*next_at = (uint32_t)(stop - tab->names);
	while (stop < end && *stop == '\\')
		stop++;
	return stop == end;
}

/* Whether member m lies in the folder last, the component met before it:
 * its next component is last, byte for byte, and more follows.  Sets
 * next_at as next_component() would.  Names come sorted, so members of
 * one folder mostly follow each other, and this spares them the scan. */
static int in_last_folder(const struct res_table *tab, const struct member *m, const char *last,
			  size_t last_len, uint32_t *next_at)
{
	const struct res_entry *e = &tab->entries[m->entry];
	const char *p = tab->names + m->at, *end = tab->names + e->name_off + e->name_len, *q;

	if ((size_t)(end - p) <= last_len || p[last_len] != '\\')
		return 0;
	for (size_t i = 0; i < last_len; i++)
		if (p[i] != last[i])
			return 0;
	for (q = p + last_len; q < end && *q == '\\'; q++)
		;
	if (q == end)
		return 0; /* "last\" names a file */
	*next_at = (uint32_t)(p + last_len - tab->names);
	return 1;
}

static struct pending_dir *new_vdir(struct tree_node *c, struct archive_table *at, struct tree_node *archive)
{
	struct pending_dir *p = g_new0(struct pending_dir, 1);

	c->kind = NODE_VDIR;
	c->via_copy = archive->via_copy;
	c->src = archive->src;
	c->mtime = archive->mtime;
	c->mode = dir_mode(archive->mode, archive->src->writable);
	c->depth = archive->depth;
	p->at = at;
	p->archive = archive;
	c->pending = p;
	at->refs++;
	return p;
}

/* Where member k of a build goes: 0 for a file, else 1 + the made_at of
 * its backslash directory. */
typedef uint32_t member_dest;

/* Member k of a build goes to p. */
static void add_member(struct pending_dir *p, uint32_t k)
{
	if (p->len == 0)
		p->first = k;
	else if (p->first + p->len != k)
		p->scattered = 1;
	p->len++;
}

/* A directory whose members lie together in the build's block (names
 * come sorted, so they mostly do) takes its slice of it rather than a
 * copy; the block goes with the last of them to load. */
static void members_as_slices(GPtrArray *made, struct member *m, struct member_block *m_block)
{
	for (guint i = 0; i < made->len; i++) {
		struct pending_dir *p = made->pdata[i];

		if (!m_block)
			p->scattered = 1; /* copied then */
		if (p->scattered)
			continue;
		p->block = m_block;
		p->members = m + p->first;
		m_block->refs++;
	}
}

/* Gives each backslash directory one build made whose members are
 * scattered its slice of one block and copies its members there, in
 * table order: dest[k] says where member k goes.  The block is room,
 * when the caller has it for n members (the count takes one more), or
 * allocated here. */
static int hand_out_members(GPtrArray *made, const member_dest *dest, const struct member *m, uint32_t n,
			    struct member_block *room)
{
	struct member_block *block = room;
	uint32_t total = 0, copied = 0;

	for (guint i = 0; i < made->len; i++) {
		struct pending_dir *p = made->pdata[i];

		if (p->scattered) {
			total += p->len;
			copied++;
		}
	}
	if (copied == 0)
		return 0;
	/* room for the count too: one member more than needed; brief, as it
	 * goes once the directories are loaded (a find loads them all) */
	_Static_assert(sizeof(struct member_block) <= sizeof(struct member), "count fits in one member");
	if (!block)
		block = bigmem_alloc_brief((size_t)total + 1, sizeof block->v[0]);
	if (!block)
		return -ENOMEM;
	block->refs += copied; /* room may hold slices already */
	total = 0;
	for (guint i = 0; i < made->len; i++) {
		struct pending_dir *p = made->pdata[i];

		if (!p->scattered)
			continue;
		p->block = block;
		p->members = block->v + total;
		total += p->len;
		p->len = 0;
	}
	for (uint32_t k = 0; k < n; k++)
		if (dest[k]) {
			struct pending_dir *p = made->pdata[dest[k] - 1];

			if (p->scattered)
				p->members[p->len++] = m[k];
		}
	return 0;
}

/* Builds one directory of an archive from the entries below it, in table
 * order; backslash sub-directories collect their members and load later.
 * m is the caller's and is overwritten; so is dest, room for n of them,
 * and block_room, for n + 1 members, if the caller has them (NULL: the
 * build allocates them).  m lies in m_block, whose count of directories
 * holding slices of it the build raises by those it makes, when they can
 * share it (NULL: they cannot).  NULL when out of memory. */
static struct tree_dir *build_dir(struct tree *t, struct archive_table *at, struct tree_node *archive,
				  struct tree_node *dir, struct member *m, uint32_t n, struct member_block *m_block,
				  member_dest *callers_dest, struct member_block *block_room)
{
	const struct res_table *tab = &at->tab;
	member_dest *dest = callers_dest ? callers_dest : bigmem_alloc_brief(n ? n : 1, sizeof *dest);
	struct tree_dir *d;
	GPtrArray *made;                    /* the backslash directories met */
	GHashTable *renamed = NULL; /* lowered component -> pending_dir of a renamed directory */
	GString *scratch;
	const char *last = NULL;            /* the last folder component met ... */
	size_t last_len = 0;
	struct pending_dir *last_p = NULL;  /* ... and where its members go */
	char *what;
	struct build_log bl = { 0 };

	if (!dest)
		return NULL;
	/* room for every member at once where that is little: most members
	 * of a backslash directory are its files, and each growth copies
	 * the children and hashes them again (fresh pages, at that) */
	d = dir_new(t, n <= 4096 ? n : 256);
	made = g_ptr_array_new();
	scratch = g_string_new(NULL);
	what = tree_path(dir);
	bl.what = what;
	for (uint32_t k = 0; k < n; k++) {
		const struct res_entry *e = &tab->entries[m[k].entry];
		const char *comp;
		size_t len;
		uint32_t next_at, folder_tagged;
		struct pending_dir *p = NULL;
		struct tree_node *c;

		if (last_p && in_last_folder(tab, &m[k], last, last_len, &next_at)) {
			m[k].at = next_at;
			dest[k] = last_p->made_at + 1;
			add_member(last_p, k);
			continue;
		}
		if (next_component(tab, &m[k], scratch, &comp, &len, &next_at)) {
			uint32_t hash = name_hash_len(d, comp, len);
			struct tree_node *there = dir_find_len(d, comp, len, hash);

			if (there && there->kind == NODE_VDIR && there->pending) {
				folder_gives_way(d, there, tab, &renamed, &bl);
				there = NULL;
			}
			if (name_taken_from(there, tab, m[k].entry, comp, len)) {
				take_name(t, d, dir, archive, at, there, m[k].entry, comp, len, &bl);
			} else {
				c = add_child_as(d, dir, comp, len, hash, there != NULL, m[k].entry,
						 tab->names + e->name_off, e->name_len, &bl);
				fill_entry(c, archive, at, m[k].entry, &bl);
			}
			log_rewritten_name(&bl, m[k].entry, tab->names + e->name_off, e->name_len);
			dest[k] = 0;
			continue;
		}
		m[k].at = next_at;
		/* a renamed folder's tag is of its stored bytes up to and with
		 * the backslash after its name: never a file's of that name */
		folder_tagged = next_at - e->name_off + 1;
		c = dir_find_len(d, comp, len, name_hash_len(d, comp, len));
		if (c && c->kind == NODE_VDIR) {
			p = c->pending;
		} else if (c) {
			/* a file took the name first: the directory was renamed */
			char *key = g_ascii_strdown(comp, (gssize)len);

			if (!renamed)
				renamed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
			p = g_hash_table_lookup(renamed, key);
			if (!p) {
				c = add_child(t, d, dir, comp, len, m[k].entry, tab->names + e->name_off, folder_tagged, &bl);
				p = new_vdir(c, at, archive);
				p->made_at = made->len;
				p->named_by = m[k].entry;
				p->named_len = folder_tagged;
				g_ptr_array_add(made, p);
				g_hash_table_insert(renamed, key, p);
			} else {
				g_free(key);
			}
		} else {
			c = add_child(t, d, dir, comp, len, m[k].entry, tab->names + e->name_off, folder_tagged, &bl);
			p = new_vdir(c, at, archive);
			p->made_at = made->len;
			p->named_by = m[k].entry;
			p->named_len = folder_tagged;
			g_ptr_array_add(made, p);
		}
		dest[k] = p->made_at + 1;
		add_member(p, k);
		/* the shortcut compares stored bytes: only with a component
		 * shown as stored (a rewritten one's UTF-8 could match other
		 * stored bytes); it lies in the name block, which stays */
		last = comp;
		last_len = len;
		last_p = comp == scratch->str ? NULL : p;
	}
	members_as_slices(made, m, m_block);
	if (hand_out_members(made, dest, m, n, block_room) < 0) {
		dir_finish(t, d); /* dir_free counts what dir_finish counted */
		dir_free(t, d);
		d = NULL;
	}
	if (renamed)
		g_hash_table_destroy(renamed);
	g_ptr_array_free(made, TRUE);
	g_string_free(scratch, TRUE);
	if (!callers_dest)
		bigmem_free(dest);
	if (bl.more)
		log_msg(LOG_WARNING, "%s: %u more warnings of this folder's build not logged", what, bl.more);
	g_free(what);
	if (d) {
		add_views(t, d, dir);
		dir_finish(t, d);
	}
	return d;
}

static void pending_dir_free(struct pending_dir *p)
{
	if (p->block && --p->block->refs == 0)
		bigmem_free(p->block);
	archive_table_unref(p->at);
	g_free(p);
}

static int load_vdir(struct tree *t, struct tree_node *v, struct tree_dir **out)
{
	struct pending_dir *p = v->pending;

	*out = build_dir(t, p->at, p->archive, v, p->members, p->len, p->block, NULL, NULL);
	if (!*out)
		return -ENOMEM;
	v->pending = NULL;
	pending_dir_free(p);
	return 0;
}

static int load_archive(struct tree *t, struct tree_node *a, struct tree_dir **out)
{
	struct res_window w = { a->src->fd, a->offset, a->size };
	struct stat st;

	/* an archive file listed a while ago may have grown since (a save by
	 * another program): its header now is what it says now */
	if (a->src->fd >= 0 && (!a->parent || a->parent->kind == NODE_FOLDER) && fstat(a->src->fd, &st) == 0
	    && (uint64_t)st.st_size != a->size) {
		w.len = (uint64_t)st.st_size;
		__atomic_store_n(&a->size, w.len, __ATOMIC_RELEASE);
	}
	struct res_error err = { 0 };
	struct archive_table *at = g_new0(struct archive_table, 1);
	struct member_block *room;
	member_dest *dest;
	struct member *members;
	uint32_t n = 0, count;
	size_t room_len;
	char *what = tree_path(a);
	struct build_log bl = { .what = what };

	if (!a->parent && a->table) {
		at->tab = *a->table; /* read at mount */
		g_free(a->table);
		a->table = NULL;
	} else if (res_table_read(&w, &at->tab, &err) < 0) {
		log_msg(LOG_ERR, "%s: offset %llu: %s", what, (unsigned long long)err.offset, err.msg);
		g_free(what);
		g_free(at);
		return -(err.code == ENOMEM ? ENOMEM : EIO);
	}
	at->refs = 1; /* held while the top directory is built */
	/* the members the build hands out to its directories, and its
	 * scratch after them, in one block: a 100 000-entry table then needs
	 * one fresh huge page for them all rather than two.  The block goes
	 * with the last of those directories to load (the scratch part, dead
	 * by then, shares their pages), or here if the build made none. */
	count = at->tab.hdr.count;
	room_len = offsetof(struct member_block, v) + ((size_t)count + 1) * sizeof(struct member);
	room = bigmem_alloc_brief(1, room_len + (size_t)count * (sizeof *members + sizeof *dest));
	if (!room) {
		g_free(what);
		archive_table_unref(at);
		return -ENOMEM;
	}
	_Static_assert(sizeof(struct member) % _Alignof(member_dest) == 0, "dest lies aligned after members");
	members = (struct member *)((char *)room + room_len);
	dest = (member_dest *)(members + count);
	for (uint32_t i = 0; i < at->tab.hdr.count; i++) {
		const struct res_entry *e = &at->tab.entries[i];

		if (!(res_entry_faults(&at->tab, i, a->size) & RES_FAULT_NAME))
			members[n++] = (struct member){ i, e->name_off };
		else if (build_log_ok(&bl))
			log_msg(LOG_WARNING, "%s: entry %u: name at %u+%u %s; skipped",
				what, i, e->name_off, e->name_len, res_name_fault_text(&at->tab, i));
	}
	if (bl.more)
		log_msg(LOG_WARNING, "%s: %u more entries with a bad name not logged", what, bl.more);
	*out = build_dir(t, at, a, a, members, n, room, dest, room);
	if (room->refs == 0)
		bigmem_free(room);
	if (!*out) {
		archive_table_unref(at);
		g_free(what);
		return -ENOMEM;
	}
	archive_table_unref(at);
	g_free(what);
	return 0;
}

/* ---- the public face ---------------------------------------------------- */

static int copies_too_many(struct tree_node *n, uint64_t max)
{
	const struct tree_node *a = n->kind == NODE_VDIR && n->pending ? n->pending->archive : n;
	char *what = tree_path(n);

	log_msg(LOG_ERR, "%s: not listed: the copies of archives that share their bytes with other entries "
		"already show %llu files and folders; this one lies in such a copy (archive at offset %llu)",
		what, (unsigned long long)max, (unsigned long long)a->offset);
	g_free(what);
	return -EIO;
}

int tree_children(struct tree *t, struct tree_node *n, const struct tree_dir **out)
{
	struct tree_dir *d = __atomic_load_n(&n->dir, __ATOMIC_ACQUIRE);

	if (!tree_is_dir(n))
		return -ENOTDIR;
	if (!d) {
		/* a folder or an archive is read from the disk */
		if (n->kind != NODE_VDIR && t->before_wait)
			t->before_wait();
		pthread_mutex_lock(&t->lock);
		d = n->dir;
		if (!d) {
			int rc = in_copy(n) && __atomic_load_n(&t->copy_nodes, __ATOMIC_RELAXED) >= t->copy_nodes_max
				 ? copies_too_many(n, t->copy_nodes_max)
				 : n->kind == NODE_FOLDER ? load_folder(t, n, &d)
				 : n->kind == NODE_VDIR ? load_vdir(t, n, &d)
				 : load_archive(t, n, &d);

			if (rc == 0 && in_copy(n))
				__atomic_add_fetch(&t->copy_nodes, d->count, __ATOMIC_RELAXED);
			if (rc < 0) {
				d = dir_new(t, 0);
				d->error = -rc;
			}
			__atomic_store_n(&n->dir, d, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&t->lock);
	}
	*out = d;
	return d->error ? -d->error : 0;
}

uint64_t tree_child_ino(uint64_t parent_ino, const char *name)
{
	return node_ino(parent_ino, name);
}

uint64_t tree_ino_cookie(uint64_t ino)
{
	/* positive as an off_t, and odd: never 0; one to one with the
	 * inode numbers but for their lowest bit, with views first */
	return ((ino ^ VIEW_INO_BIT) >> 1) | 1;
}

uint64_t tree_dir_cookie(const struct tree_node *child)
{
	return tree_ino_cookie(child->ino);
}

struct by_cookie {
	uint64_t cookie;
	uint32_t index;
};

static int cookie_order(const void *a, const void *b)
{
	const struct by_cookie *x = a, *y = b;

	if (x->cookie != y->cookie)
		return x->cookie < y->cookie ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

const uint32_t *tree_dir_order(struct tree *t, const struct tree_dir *cd)
{
	struct tree_dir *d = (struct tree_dir *)cd; /* the order is made once, under the lock */
	uint32_t *order = __atomic_load_n(&d->order, __ATOMIC_ACQUIRE);
	struct by_cookie *pairs;

	if (order)
		return order;
	pthread_mutex_lock(&t->lock);
	order = d->order;
	if (!order) {
		pairs = g_new(struct by_cookie, d->count ? d->count : 1);
		for (uint32_t i = 0; i < d->count; i++)
			pairs[i] = (struct by_cookie){ tree_dir_cookie(&d->child[i]), i };
		qsort(pairs, d->count, sizeof *pairs, cookie_order);
		order = g_new(uint32_t, d->count ? d->count : 1);
		for (uint32_t i = 0; i < d->count; i++)
			order[i] = pairs[i].index;
		g_free(pairs);
		__atomic_store_n(&d->order, order, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&t->lock);
	return order;
}

struct tree_node *tree_lookup(struct tree *t, struct tree_node *dir, const char *name, int *err)
{
	const struct tree_dir *d;
	struct tree_node *n;
	int rc = tree_children(t, dir, &d);

	if (rc < 0) {
		*err = -rc;
		return NULL;
	}
	n = dir_find(d, name);
	if (!n)
		*err = ENOENT;
	return n;
}

struct tree_node *tree_resolve(struct tree *t, struct tree_node *dir, const char *path, int *err)
{
	gchar **parts = g_strsplit(path, "/", -1);
	struct tree_node *n = dir;

	for (gchar **p = parts; n && *p; p++)
		if (**p && strcmp(*p, ".") != 0)
			n = tree_lookup(t, n, *p, err);
	g_strfreev(parts);
	return n;
}

static int plain_fd(struct tree *t, struct tree_node *n)
{
	int fd = __atomic_load_n(&n->plain_fd, __ATOMIC_ACQUIRE);
	int expected = -1;
	struct stat st;
	char *path;

	if (fd >= 0)
		return fd;
	path = real_path(t, n);
	fd = open_regular(path, &st);
	if (fd < 0) {
		int e = errno;

		log_msg(LOG_ERR, "%s: %s", path, strerror(e));
		g_free(path);
		return -e;
	}
	g_free(path);
	if (!__atomic_compare_exchange_n(&n->plain_fd, &expected, fd, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		close(fd); /* another reader opened it first */
		fd = expected;
	}
	return fd;
}

static void clamp(uint64_t size, uint64_t off, size_t *len)
{
	if (off >= size)
		*len = 0;
	else if (*len > size - off)
		*len = (size_t)(size - off);
}

int tree_data(struct tree *t, struct tree_node *n, uint64_t off, size_t *len, int *fd, uint64_t *pos)
{
	struct stat st;

	if (tree_is_dir(n))
		return -EISDIR;
	if (n->kind == NODE_VIEW)
		return -EINVAL; /* made by a conversion, see views.h */
	if (n->kind == NODE_ENTRY && n->faults)
		return -EIO;
	if (n->kind == NODE_PLAIN) {
		/* a loose file is what it is now, whatever it was when listed */
		*fd = plain_fd(t, n);
		if (*fd < 0)
			return *fd;
		if (fstat(*fd, &st) < 0)
			return -errno;
		clamp((uint64_t)st.st_size, off, len);
		*pos = off;
	} else {
		clamp(n->size, off, len);
		*fd = n->src->fd;
		*pos = n->offset + off;
	}
	return 0;
}

int tree_entry_slot(const struct tree_node *n, uint32_t *slot)
{
	if (n->kind != NODE_ENTRY && !(n->kind == NODE_ARCHIVE && n->parent && n->parent->kind != NODE_FOLDER))
		return -1;
	*slot = n->slot;
	return 0;
}

uint64_t tree_file_size(struct tree *t, struct tree_node *n)
{
	struct stat st;
	int fd;

	if (n->kind != NODE_PLAIN)
		return n->size;
	fd = plain_fd(t, n);
	return fd >= 0 && fstat(fd, &st) == 0 ? (uint64_t)st.st_size : n->size;
}

int tree_plain_stat(struct tree *t, const struct tree_node *n, struct stat *st)
{
	char *path = real_path(t, n);
	struct stat now;
	int rc = stat(path, &now) < 0 ? -errno : 0;

	g_free(path);
	if (rc < 0)
		return rc;
	st->st_size = now.st_size;
	st->st_blocks = now.st_blocks;
	st->st_mode = now.st_mode;
	st->st_atim = now.st_atim;
	st->st_mtim = now.st_mtim;
	st->st_ctim = now.st_ctim;
	return 0;
}

ssize_t tree_read(struct tree *t, struct tree_node *n, void *buf, size_t len, uint64_t off)
{
	uint64_t pos;
	size_t done = 0;
	int fd, rc = tree_data(t, n, off, &len, &fd, &pos);

	if (rc < 0)
		return rc;
	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(pos + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break; /* a plain file shrank since it was listed */
		done += (size_t)r;
	}
	return (ssize_t)done;
}

void tree_stat(const struct tree *t, const struct tree_node *n, struct stat *st)
{
	memset(st, 0, sizeof *st);
	st->st_ino = n->ino;
	st->st_mode = n->mode;
	st->st_nlink = tree_is_dir(n) ? 2 : 1;
	st->st_uid = t->uid;
	st->st_gid = t->gid;
	uint64_t size = __atomic_load_n(&n->size, __ATOMIC_ACQUIRE);

	st->st_size = size == TREE_SIZE_UNKNOWN ? 0 : (off_t)size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)(((uint64_t)st->st_size + 511) / 512);
	st->st_mtime = st->st_ctime = st->st_atime = (time_t)n->mtime;
}

struct tree_node *tree_root(struct tree *t)
{
	return &t->root;
}

uint64_t tree_node_count(struct tree *t)
{
	return __atomic_load_n(&t->nodes, __ATOMIC_RELAXED) + 1;
}

unsigned tree_stamps_kept(struct tree *t)
{
	unsigned n;

	pthread_mutex_lock(&t->epoch_lock);
	n = g_hash_table_size(t->file_epochs);
	pthread_mutex_unlock(&t->epoch_lock);
	return n;
}

/* The table of a mounted archive is read before the mount goes to the
 * background, so that a bad one is reported on the terminal. */
static int read_root_table(struct tree *t, int fd, uint64_t len, const char *path)
{
	struct res_window w = { fd, 0, len };
	struct res_error err = { 0 };
	struct res_table *tab = g_new0(struct res_table, 1);

	if (res_table_read(&w, tab, &err) < 0) {
		log_msg(LOG_ERR, "%s: offset %llu: %s", path, (unsigned long long)err.offset, err.msg);
		g_free(tab);
		return -err.code;
	}
	t->root.table = tab;
	return 0;
}

static struct tree *tree_new(const char *path, int writable)
{
	struct tree *t = g_new0(struct tree, 1);
	pthread_rwlockattr_t attr;

	t->src_path = realpath(path, NULL); /* the daemon runs from / */
	t->root_name = g_path_get_basename(path);
	t->writable = writable;
	pthread_mutex_init(&t->lock, NULL);
	pthread_mutex_init(&t->epoch_lock, NULL);
	t->file_epochs = g_hash_table_new_full(file_epoch_hash, file_epoch_equal, g_free, NULL);
	pthread_rwlockattr_init(&attr);
	/* a save must not wait behind an endless stream of readers */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&t->reload_lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	t->root.name = t->root_name;
	t->root.ino = 1;
	t->copy_nodes_max = COPY_NODES_MAX;
	return t;
}

static int open_root_archive(struct tree *t, const char *path, const struct stat *st)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc;

	if (fd < 0) {
		log_msg(LOG_ERR, "%s: %s", path, strerror(errno));
		return -errno;
	}
	rc = probe_archive(fd, 0, (uint64_t)st->st_size, path, "cannot be opened", LOG_ERR, NULL);
	if (rc == 0)
		rc = read_root_table(t, fd, (uint64_t)st->st_size, path);
	if (rc != 0) {
		if (rc > 0)
			log_msg(LOG_ERR, "%s: offset 0: not a folder or a RES archive (no 3C E2 9C 01 magic)", path);
		close(fd);
		return rc > 0 ? -EINVAL : rc;
	}
	t->root.kind = NODE_ARCHIVE;
	t->root.src = source_new(t, fd, path, st);
	t->root.size = (uint64_t)st->st_size;
	t->root.mode = dir_mode(st->st_mode, t->root.src->writable);
	return 0;
}

static struct tree *open_tree(const char *path, int writable, const struct tree_hidden *hidden, int *err)
{
	struct tree *t = tree_new(path, writable);
	struct stat st;
	int rc;

	if (hidden) {
		t->has_hidden = 1;
		t->hidden = *hidden;
		t->hidden.name = g_strdup(hidden->name);
		t->hidden.path = g_strdup(hidden->path);
	}

	if (!t->src_path || stat(path, &st) < 0) {
		*err = errno;
		log_msg(LOG_ERR, "%s: %s", path, strerror(errno));
		tree_free(t);
		return NULL;
	}
	t->root.mtime = st.st_mtime;
	t->uid = st.st_uid;
	t->gid = st.st_gid;
	if (S_ISDIR(st.st_mode)) {
		const struct tree_dir *d;

		t->root.kind = NODE_FOLDER;
		t->root.mode = st.st_mode;
		rc = tree_children(t, &t->root, &d);
	} else {
		rc = open_root_archive(t, t->src_path, &st);
	}
	if (rc < 0) {
		*err = -rc;
		tree_free(t);
		return NULL;
	}
	return t;
}

struct tree *tree_open(const char *path, int *err)
{
	return open_tree(path, 0, NULL, err);
}

struct tree *tree_open_rw(const char *path, int *err)
{
	return open_tree(path, 1, NULL, err);
}

struct tree *tree_open_hiding(const char *path, int writable, const struct tree_hidden *hidden, int *err)
{
	return open_tree(path, writable, hidden, err);
}

void tree_limit_copies(struct tree *t, uint64_t max)
{
	t->copy_nodes_max = max;
}

int tree_is_writable(const struct tree *t)
{
	return t->writable;
}

static void drop_root_table(struct tree *t)
{
	if (t->root.kind == NODE_ARCHIVE && t->root.table && !t->root.dir) {
		res_table_free(t->root.table);
		g_free(t->root.table);
		t->root.table = NULL;
	}
}

void tree_free(struct tree *t)
{
	if (!t)
		return;
	drop_root_table(t);
	if (tree_is_dir(&t->root))
		dir_free(t, t->root.dir);
	if (t->root.kind == NODE_ARCHIVE)
		tree_source_unref(t->root.src);
	pthread_rwlock_destroy(&t->reload_lock);
	pthread_mutex_destroy(&t->lock);
	pthread_mutex_destroy(&t->epoch_lock);
	g_hash_table_destroy(t->file_epochs);
	free(t->src_path);
	g_free(t->root_name);
	g_free((char *)t->hidden.name);
	g_free((char *)t->hidden.path);
	g_free(t);
}

/* ---- changes on disk ------------------------------------------------------ */

void tree_read_lock(struct tree *t)
{
	if (t->before_wait && pthread_rwlock_tryrdlock(&t->reload_lock) == 0)
		return;
	if (t->before_wait)
		t->before_wait(); /* a reload holds it, or a save waits for it */
	pthread_rwlock_rdlock(&t->reload_lock);
}

void tree_before_wait(struct tree *t, void (*fn)(void))
{
	t->before_wait = fn;
}

void tree_read_unlock(struct tree *t)
{
	pthread_rwlock_unlock(&t->reload_lock);
}

void tree_write_lock(struct tree *t)
{
	pthread_rwlock_wrlock(&t->reload_lock);
}

void tree_write_unlock(struct tree *t)
{
	pthread_rwlock_unlock(&t->reload_lock);
}

uint64_t tree_generation(struct tree *t)
{
	return __atomic_load_n(&t->generation, __ATOMIC_ACQUIRE);
}

struct tree_node *tree_unit(struct tree_node *n)
{
	struct tree_node *top = NULL;

	for (struct tree_node *p = n; p; p = p->parent) {
		if (p->kind == NODE_FOLDER)
			return top ? top : p;
		if (p->kind == NODE_ARCHIVE)
			top = p;
	}
	return top;
}

int tree_same_stamp(const struct stat *a, const struct stat *b)
{
	/* ctime too: a tool that puts the mtime back still moves it */
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size
	       && same_time(&a->st_mtim, &b->st_mtim) && same_time(&a->st_ctim, &b->st_ctim);
}

enum tree_look tree_plain_changed(struct tree *t, const struct tree_node *n)
{
	struct stat st;
	char *path;
	enum tree_look look = TREE_SAME;
	uint32_t stamp;

	if (n->kind == NODE_VIEW)
		n = &n->parent->dir->child[n->source];
	if (n->kind != NODE_PLAIN)
		return TREE_SAME;
	path = real_path(t, n);
	if (stat(path, &st) < 0 || (uint64_t)st.st_ino != n->offset || (uint64_t)st.st_size != n->size)
		look = TREE_CHANGED;
	else if ((stamp = file_stamp(&st)) != n->plain_stamp)
		/* a racy stamp is taken again once it can be trusted */
		look = (stamp ^ n->plain_stamp) == 1 ? TREE_RACY : TREE_CHANGED;
	g_free(path);
	return look;
}

/* Writes through a shared memory map raise no event: looked at anyway
 * once this long after the last look. */
enum { TRUST_MS = 1000 };

static uint64_t coarse_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &t); /* the vDSO: no system call */
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* Records what watch_file gave (watched: 1 or -1); false when another
 * thread did first, and the watch taken here is given back. */
static int arm_once(struct tree_source *s, int wd, int watched)
{
	int none = 0;

	if (!__atomic_compare_exchange_n(&s->watched, &none, watched, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (wd >= 0)
			watch_forget(wd);
		return 0;
	}
	/* read only when the last reference goes, after this thread's */
	__atomic_store_n(&s->watch_wd, wd, __ATOMIC_RELAXED);
	return 1;
}

/* Arms s's watch, the first time: 1 when armed, -1 when it cannot be. */
static int arm_watch(struct tree_source *s)
{
	int watched = __atomic_load_n(&s->watched, __ATOMIC_ACQUIRE);

	if (!watched) {
		int wd = watch_file(s->path);

		watched = wd >= 0 ? 1 : -1;
		if (!arm_once(s, wd, watched))
			watched = __atomic_load_n(&s->watched, __ATOMIC_ACQUIRE);
	}
	return watched;
}

/* Looks at the file only when the kernel told of a change since it last
 * did (or cannot tell), or a second after: the watch is armed before the
 * look, and the generation read before it, so a change after the look
 * moves it on. */
static enum tree_look archive_changed(struct tree_source *s)
{
	uint64_t generation = watch_generation(), now = coarse_ms();
	struct stat st;
	enum tree_look look;
	int watched = __atomic_load_n(&s->watched, __ATOMIC_ACQUIRE);

	if (generation && watched > 0 && __atomic_load_n(&s->fresh, __ATOMIC_ACQUIRE) == generation
	    && now < __atomic_load_n(&s->fresh_until, __ATOMIC_RELAXED))
		return TREE_SAME;
	if (!watched) {
		watched = arm_watch(s);
		generation = watch_generation();
	}
	look = stat(s->path, &st) < 0 || !tree_same_stamp(&st, &s->stamp) ? TREE_CHANGED
	       : s->racy && !racy(&s->stamp.st_ctim) ? TREE_RACY : TREE_SAME;
	/* a racy stamp is looked at until it can be trusted */
	if (look == TREE_SAME && !s->racy && watched > 0 && generation) {
		__atomic_store_n(&s->fresh_until, now + TRUST_MS, __ATOMIC_RELAXED);
		__atomic_store_n(&s->fresh, generation, __ATOMIC_RELEASE);
	}
	return look;
}

enum tree_look tree_unit_changed(struct tree *t, struct tree_node *unit)
{
	struct stat st;

	if (unit->kind == NODE_FOLDER) {
		const struct tree_dir *d = __atomic_load_n(&unit->dir, __ATOMIC_ACQUIRE);
		char *path;
		enum tree_look look;

		if (!d)
			return TREE_SAME;
		path = real_path(t, unit);
		/* a listing racy when made is made again once it can be trusted */
		look = stat(path, &st) < 0 || !same_time(&st.st_mtim, &d->stamp) ? TREE_CHANGED
		       : d->racy && !racy(&d->stamp) ? TREE_RACY : TREE_SAME;
		g_free(path);
		for (uint32_t i = 0; look != TREE_CHANGED && i < d->archive_named_count; i++) {
			enum tree_look child = tree_plain_changed(t, &d->child[d->archive_named[i]]);

			if (child > look)
				look = child;
		}
		return look;
	}
	return archive_changed(unit->src);
}

/* Reads an archive file's identity again, opening it anew when another
 * file took its name (a compaction).  Fails when it is no archive now. */
static int reopen_archive(struct tree *t, struct tree_node *a, int external, const struct stat *left)
{
	struct tree_source *s = a->src;
	struct stat st;
	int fd;

	if (stat(s->path, &st) < 0 || !S_ISREG(st.st_mode))
		return -1;
	if (left && !tree_same_stamp(&st, left))
		external = 1;
	if (st.st_dev == s->stamp.st_dev && st.st_ino == s->stamp.st_ino) {
		if (probe_archive(s->fd, 0, (uint64_t)st.st_size, s->path, "shown as a file", LOG_WARNING, NULL) != 0)
			return -1;
		s->stamp = st;
		s->racy = coarse_racy(&st);
		__atomic_store_n(&s->fresh, 0, __ATOMIC_RELEASE);
		s->writable = may_write(t, s->path, &st);
		if (external)
			s->epoch = epoch_of(t, &st);
		else
			epoch_after_save(t, &st, s->epoch);
	} else {
		/* the name may have moved on between the stat and the open */
		fd = open_regular(s->path, &st);
		if (fd < 0)
			return -1;
		if (probe_archive(fd, 0, (uint64_t)st.st_size, s->path, "shown as a file", LOG_WARNING, NULL) != 0) {
			close(fd);
			return -1;
		}
		a->src = source_new(t, fd, s->path, &st);
		tree_source_unref(s);
	}
	a->size = (uint64_t)st.st_size;
	a->mtime = st.st_mtime;
	a->mode = dir_mode(st.st_mode, a->src->writable);
	return 0;
}

void tree_reload(struct tree *t, struct tree_node *unit, int external, const struct stat *left)
{
	__atomic_add_fetch(&t->generation, 1, __ATOMIC_ACQ_REL);
	if (unit->kind == NODE_ARCHIVE && reopen_archive(t, unit, external, left) < 0 && unit->parent) {
		tree_reload(t, unit->parent, external, NULL); /* frees unit with its folder */
		return;
	}
	drop_root_table(t);
	dir_free(t, unit->dir);
	unit->dir = NULL;
}
