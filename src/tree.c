#define _GNU_SOURCE
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cp1251.h"
#include "log.h"
#include "names.h"
#include "res.h"

struct tree {
	struct tree_node root;
	char *src_path;
	GMutex lock;            /* serialises directory loads */
	GStringChunk *names;    /* every node name */
	GPtrArray *sources;     /* struct tree_source *, closed at free */
	GPtrArray *dirs;        /* struct tree_dir *, freed at free */
	uint64_t nodes;
	uid_t uid;              /* owner of SRC, shown as every node's owner */
	gid_t gid;
};

/* ---- small helpers ------------------------------------------------------ */

static uint64_t node_ino(uint64_t parent_ino, const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull ^ parent_ino;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	h ^= h >> 29;
	return h <= 1 ? h + 2 : h; /* 0 is invalid, 1 is the root */
}

static uint32_t dir_mode(uint32_t file_mode)
{
	uint32_t r = file_mode & 0444;

	return S_IFDIR | r | (r >> 2);
}

static uint32_t entry_mode(uint32_t archive_mode)
{
	return S_IFREG | (archive_mode & 0444);
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

/* The real path of a FOLDER or PLAIN node. */
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

static struct tree_source *source_new(struct tree *t, int fd, const char *path)
{
	struct tree_source *s = g_new0(struct tree_source, 1);

	s->fd = fd;
	s->path = g_strdup(path);
	g_ptr_array_add(t->sources, s);
	return s;
}

static struct tree_dir *dir_new(struct tree *t, uint32_t count)
{
	struct tree_dir *d = g_new0(struct tree_dir, 1);

	d->count = count;
	d->child = g_new0(struct tree_node, count ? count : 1);
	g_ptr_array_add(t->dirs, d);
	t->nodes += count;
	return d;
}

static void node_init(struct tree *t, struct tree_node *n, struct tree_node *parent, const char *name)
{
	n->parent = parent;
	n->name = g_string_chunk_insert(t->names, name);
	n->ino = node_ino(parent->ino, n->name);
	n->plain_fd = -1;
}

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	do
		n = pread(fd, buf, len, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* Validates the archive in [off, off+len) of fd: header and, when full is
 * set, the whole table.  Returns 0 for an archive, 1 for no RES magic at
 * all, or a negative errno after logging why a RES archive is unusable. */
static int probe_archive(int fd, uint64_t off, uint64_t len, int full, const char *what)
{
	unsigned char hdr[RES_HEADER_SIZE];
	struct res_header h;
	struct res_error err = { 0 };

	if (len < RES_HEADER_SIZE || read_at(fd, hdr, sizeof hdr, off) < 0 || !res_is_magic(hdr, 4))
		return 1; /* not an archive at all: a plain file, nothing to say */
	if (res_header_decode(hdr, len, &h, &err) == 0 && full) {
		struct res_window w = { fd, off, len };
		struct res_table tab;

		if (res_table_read(&w, &tab, &err) == 0)
			res_table_free(&tab);
	}
	if (err.code) {
		log_msg(LOG_WARNING, "%s: offset %llu: %s (%s); shown as a file", what,
			(unsigned long long)err.offset, err.msg, strerror(err.code));
		return -err.code;
	}
	return 0;
}

/* ---- folders ------------------------------------------------------------ */

static int child_order(const void *a, const void *b)
{
	return names_order(((const struct tree_node *)a)->name, ((const struct tree_node *)b)->name);
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
	if (names_is_archive_ext(n->name)) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd >= 0 && probe_archive(fd, 0, n->size, 1, path) == 0) {
			n->kind = NODE_ARCHIVE;
			n->src = source_new(t, fd, path);
			n->mode = dir_mode(st->st_mode);
			return;
		}
		if (fd >= 0)
			close(fd);
	}
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

	if (!d) {
		rc = -errno;
		log_msg(LOG_ERR, "%s: cannot open folder: %s", path, strerror(errno));
		goto out;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, 0) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
			continue; /* dangling links, devices, sockets: nothing a game reads */
		g_ptr_array_add(names, g_strdup(de->d_name));
		g_array_append_val(stats, st);
	}
	closedir(d);
	td = dir_new(t, names->len);
	for (guint i = 0; i < names->len; i++) {
		struct tree_node *n = &td->child[i];
		char *child_path = g_build_filename(path, names->pdata[i], NULL);

		node_init(t, n, dir, names->pdata[i]);
		folder_child(t, n, child_path, &g_array_index(stats, struct stat, i));
		g_free(child_path);
	}
	qsort(td->child, td->count, sizeof *td->child, child_order);
	*out = td;
out:
	g_free(path);
	g_ptr_array_unref(names);
	g_array_unref(stats);
	return rc;
}

/* ---- archives ----------------------------------------------------------- */

/* While an archive loads, its names form a temporary tree of these. */
struct bdir;
struct bitem {
	char *name;         /* display name, owned */
	int64_t entry;      /* table index of a file, -1 for a directory */
	struct bdir *sub;
};
struct bdir {
	GHashTable *taken;   /* ASCII-lowered display name -> bitem */
	GHashTable *subdirs; /* ASCII-lowered stored component -> bitem */
	GPtrArray *items;
};

static struct bdir *bdir_new(void)
{
	struct bdir *d = g_new0(struct bdir, 1);

	d->taken = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	d->subdirs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	d->items = g_ptr_array_new();
	return d;
}

static void bdir_free(struct bdir *d)
{
	for (guint i = 0; i < d->items->len; i++) {
		struct bitem *it = d->items->pdata[i];

		if (it->sub)
			bdir_free(it->sub);
		g_free(it->name);
		g_free(it);
	}
	g_hash_table_destroy(d->taken);
	g_hash_table_destroy(d->subdirs);
	g_ptr_array_unref(d->items);
	g_free(d);
}

/* Adds an item under a free name: a taken one becomes "name~slot". */
static struct bitem *bdir_add(struct bdir *d, const char *name, int64_t entry, uint32_t slot,
			      const char *archive)
{
	struct bitem *it = g_new0(struct bitem, 1);
	char *key;

	it->name = g_strdup(name);
	it->entry = entry;
	for (;;) {
		key = g_ascii_strdown(it->name, -1);
		if (!g_hash_table_contains(d->taken, key))
			break;
		g_free(key);
		key = names_dedup(it->name, slot);
		g_free(it->name);
		it->name = key;
	}
	if (strcmp(it->name, name) != 0)
		log_msg(LOG_WARNING, "%s: entry %u: name \"%s\" is taken (case duplicate); shown as \"%s\"",
			archive, slot, name, it->name);
	g_hash_table_insert(d->taken, key, it);
	g_ptr_array_add(d->items, it);
	return it;
}

static void bdir_add_entry(struct bdir *root, GPtrArray *comps, uint32_t i, const char *archive)
{
	struct bdir *d = root;

	for (guint c = 0; c + 1 < comps->len; c++) {
		char *key = g_ascii_strdown(comps->pdata[c], -1);
		struct bitem *sub = g_hash_table_lookup(d->subdirs, key);

		if (!sub) {
			sub = bdir_add(d, comps->pdata[c], -1, i, archive);
			sub->sub = bdir_new();
			g_hash_table_insert(d->subdirs, key, sub);
		} else {
			g_free(key);
		}
		d = sub->sub;
	}
	bdir_add(d, comps->pdata[comps->len - 1], i, i, archive);
}

static int bitem_order(const void *a, const void *b)
{
	return names_order((*(struct bitem *const *)a)->name, (*(struct bitem *const *)b)->name);
}

/* Is this entry itself an archive to show as a directory? */
static int is_nested_archive(struct tree_node *n, const struct tree_node *archive)
{
	int candidate = names_is_archive_ext(n->name)
		|| (!strchr(n->name, '.')
		    && (names_has_ext(archive->name, "anm") || names_has_ext(archive->name, "bon")));
	char *what;
	int ok;

	if (!candidate || n->faults || n->size < RES_HEADER_SIZE)
		return 0;
	what = tree_path(n);
	ok = probe_archive(n->src->fd, n->offset, n->size, 0, what) == 0;
	if (ok && archive->depth + 1 > TREE_MAX_DEPTH) {
		log_msg(LOG_WARNING, "%s: archives nested deeper than %d levels are shown as files",
			what, TREE_MAX_DEPTH);
		ok = 0;
	}
	for (const struct tree_node *a = archive; ok && a; a = a->parent)
		if (a->kind == NODE_ARCHIVE && a->offset == n->offset && a->size == n->size) {
			log_msg(LOG_WARNING, "%s: archive contains itself (offset %llu); shown as a file",
				what, (unsigned long long)n->offset);
			ok = 0;
		}
	g_free(what);
	return ok;
}

static void fill_entry(struct tree_node *n, const struct tree_node *archive, const struct res_table *tab,
		       uint32_t i)
{
	const struct res_entry *e = &tab->entries[i];

	n->kind = NODE_ENTRY;
	n->src = archive->src;
	n->size = e->length;
	n->offset = archive->offset + e->offset;
	n->mtime = e->mtime;
	n->depth = archive->depth;
	n->faults = (uint8_t)res_entry_faults(tab, i, archive->size);
	n->mode = entry_mode(archive->mode);
	if (n->faults) {
		char *what = tree_path(n);

		log_msg(LOG_WARNING, "%s: data at %u+%u is past the archive end %llu; reads give EIO",
			what, e->offset, e->length, (unsigned long long)archive->size);
		g_free(what);
	}
	if (is_nested_archive(n, archive)) {
		n->kind = NODE_ARCHIVE;
		n->depth = archive->depth + 1;
		n->mode = dir_mode(archive->mode);
	}
}

static struct tree_dir *materialize(struct tree *t, struct bdir *b, struct tree_node *parent,
				    const struct tree_node *archive, const struct res_table *tab)
{
	struct tree_dir *td = dir_new(t, b->items->len);

	g_ptr_array_sort(b->items, bitem_order);
	for (guint k = 0; k < b->items->len; k++) {
		struct bitem *it = b->items->pdata[k];
		struct tree_node *n = &td->child[k];

		node_init(t, n, parent, it->name);
		if (it->sub) {
			n->kind = NODE_VDIR;
			n->src = archive->src;
			n->mtime = archive->mtime;
			n->mode = dir_mode(archive->mode);
			n->depth = archive->depth;
			n->dir = materialize(t, it->sub, n, archive, tab);
		} else {
			fill_entry(n, archive, tab, (uint32_t)it->entry);
		}
	}
	return td;
}

/* A stored name for a log line: cp1251 shown as UTF-8, NUL and the
 * undefined byte escaped. */
static char *raw_name_for_log(const char *raw, size_t len)
{
	GString *s = g_string_new(NULL);

	cp1251_to_utf8(raw, len, "", s);
	return g_string_free(s, FALSE);
}

static int load_archive(struct tree *t, struct tree_node *a, struct tree_dir **out)
{
	struct res_window w = { a->src->fd, a->offset, a->size };
	struct res_error err = { 0 };
	struct res_table tab;
	char *what = tree_path(a);
	struct bdir *root;
	GPtrArray *comps;

	if (res_table_read(&w, &tab, &err) < 0) {
		log_msg(LOG_ERR, "%s: offset %llu: %s", what, (unsigned long long)err.offset, err.msg);
		g_free(what);
		return -(err.code == ENOMEM ? ENOMEM : EIO);
	}
	root = bdir_new();
	comps = g_ptr_array_new_with_free_func(g_free);
	for (uint32_t i = 0; i < tab.hdr.count; i++) {
		const struct res_entry *e = &tab.entries[i];

		if (res_entry_faults(&tab, i, a->size) & RES_FAULT_NAME) {
			log_msg(LOG_WARNING, "%s: entry %u: name at %u+%u is outside the name block; skipped",
				what, i, e->name_off, e->name_len);
			continue;
		}
		g_ptr_array_set_size(comps, 0);
		if (names_split(res_entry_name(&tab, i), e->name_len, comps)) {
			GString *shown = g_string_new(NULL);
			char *stored = raw_name_for_log(res_entry_name(&tab, i), e->name_len);

			for (guint c = 0; c < comps->len; c++)
				g_string_append_printf(shown, "%s%s", c ? "/" : "", (char *)comps->pdata[c]);
			log_msg(LOG_WARNING, "%s: entry %u: name \"%s\" cannot be shown as stored; shown as \"%s\"",
				what, i, stored, shown->str);
			g_string_free(shown, TRUE);
			g_free(stored);
		}
		bdir_add_entry(root, comps, i, what);
	}
	*out = materialize(t, root, a, a, &tab);
	g_ptr_array_unref(comps);
	bdir_free(root);
	res_table_free(&tab);
	g_free(what);
	return 0;
}

/* ---- the public face ---------------------------------------------------- */

int tree_children(struct tree *t, struct tree_node *n, const struct tree_dir **out)
{
	struct tree_dir *d = __atomic_load_n(&n->dir, __ATOMIC_ACQUIRE);

	if (!tree_is_dir(n))
		return -ENOTDIR;
	if (!d) {
		g_mutex_lock(&t->lock);
		d = n->dir;
		if (!d) {
			int rc = n->kind == NODE_FOLDER ? load_folder(t, n, &d) : load_archive(t, n, &d);

			if (rc < 0) {
				d = dir_new(t, 0);
				d->error = -rc;
			}
			__atomic_store_n(&n->dir, d, __ATOMIC_RELEASE);
		}
		g_mutex_unlock(&t->lock);
	}
	*out = d;
	return d->error ? -d->error : 0;
}

struct tree_node *tree_lookup(struct tree *t, struct tree_node *dir, const char *name, int *err)
{
	const struct tree_dir *d;
	uint32_t lo = 0, hi;
	int rc = tree_children(t, dir, &d);

	if (rc < 0) {
		*err = -rc;
		return NULL;
	}
	hi = d->count;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = g_ascii_strcasecmp(name, d->child[mid].name);

		if (c == 0) {
			/* case variants sit next to each other: prefer the exact one */
			uint32_t i = mid;

			while (i > 0 && g_ascii_strcasecmp(name, d->child[i - 1].name) == 0)
				i--;
			for (uint32_t j = i; j < d->count && g_ascii_strcasecmp(name, d->child[j].name) == 0; j++)
				if (strcmp(name, d->child[j].name) == 0)
					return &d->child[j];
			return &d->child[i];
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*err = ENOENT;
	return NULL;
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
	char *path;

	if (fd >= 0)
		return fd;
	path = real_path(t, n);
	fd = open(path, O_RDONLY | O_CLOEXEC);
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

int tree_data(struct tree *t, struct tree_node *n, uint64_t off, size_t *len, int *fd, uint64_t *pos)
{
	if (tree_is_dir(n))
		return -EISDIR;
	if (n->kind == NODE_ENTRY && n->faults)
		return -EIO;
	if (off >= n->size)
		*len = 0;
	else if (*len > n->size - off)
		*len = (size_t)(n->size - off);
	if (n->kind == NODE_PLAIN) {
		*fd = plain_fd(t, n);
		if (*fd < 0)
			return *fd;
		*pos = off;
	} else {
		*fd = n->src->fd;
		*pos = n->offset + off;
	}
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
	st->st_size = (off_t)n->size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((n->size + 511) / 512);
	st->st_mtime = st->st_ctime = st->st_atime = (time_t)n->mtime;
}

struct tree_node *tree_root(struct tree *t)
{
	return &t->root;
}

uint64_t tree_node_count(struct tree *t)
{
	return t->nodes + 1;
}

struct tree *tree_open(const char *path, int *err)
{
	struct tree *t = g_new0(struct tree, 1);
	char *base = g_path_get_basename(path);
	struct stat st;

	t->src_path = realpath(path, NULL); /* the daemon runs from / */
	t->names = g_string_chunk_new(64 * 1024);
	t->sources = g_ptr_array_new();
	t->dirs = g_ptr_array_new();
	g_mutex_init(&t->lock);
	t->root.name = g_string_chunk_insert(t->names, base);
	t->root.ino = 1;
	t->root.plain_fd = -1;
	g_free(base);
	if (!t->src_path || stat(path, &st) < 0) {
		*err = errno;
		log_msg(LOG_ERR, "%s: %s", path, strerror(errno));
		goto fail;
	}
	t->root.mtime = st.st_mtime;
	t->uid = st.st_uid;
	t->gid = st.st_gid;
	if (S_ISDIR(st.st_mode)) {
		const struct tree_dir *d;
		int rc;

		t->root.kind = NODE_FOLDER;
		t->root.mode = st.st_mode;
		rc = tree_children(t, &t->root, &d);
		if (rc < 0) {
			*err = -rc;
			goto fail;
		}
	} else {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		int rc;

		if (fd < 0) {
			*err = errno;
			log_msg(LOG_ERR, "%s: %s", path, strerror(errno));
			goto fail;
		}
		rc = probe_archive(fd, 0, (uint64_t)st.st_size, 1, path);
		if (rc != 0) {
			if (rc > 0)
				log_msg(LOG_ERR, "%s: offset 0: not a folder or a RES archive (no 3C E2 9C 01 magic)", path);
			close(fd);
			*err = rc > 0 ? EINVAL : -rc;
			goto fail;
		}
		t->root.kind = NODE_ARCHIVE;
		t->root.src = source_new(t, fd, path);
		t->root.size = (uint64_t)st.st_size;
		t->root.mode = dir_mode(st.st_mode);
	}
	return t;
fail:
	tree_free(t);
	return NULL;
}

void tree_free(struct tree *t)
{
	if (!t)
		return;
	for (guint i = 0; i < t->dirs->len; i++) {
		struct tree_dir *d = t->dirs->pdata[i];

		for (uint32_t k = 0; k < d->count; k++)
			if (d->child[k].plain_fd >= 0)
				close(d->child[k].plain_fd);
		g_free(d->child);
		g_free(d);
	}
	for (guint i = 0; i < t->sources->len; i++) {
		struct tree_source *s = t->sources->pdata[i];

		close(s->fd);
		g_free(s->path);
		g_free(s);
	}
	g_ptr_array_unref(t->dirs);
	g_ptr_array_unref(t->sources);
	g_string_chunk_free(t->names);
	g_mutex_clear(&t->lock);
	free(t->src_path);
	g_free(t);
}
