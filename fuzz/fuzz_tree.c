/* The tree that the mount and the offline commands show, built by
 * src/tree.c itself from one archive file: every directory listed (nested
 * archives, backslash folders, views beside), every entry's first bytes
 * read, under a budget of nodes.  What the kernel and the user rely on:
 * every name one the kernel takes, no name twice in a directory, and the
 * lookup of each name finding its own node. */
#include "fuzz.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "res.h"
#include "tree.h"

enum {
	/* a crafted archive may hold far more nodes than its size (that is
	 * what tree.c must keep bounded): the walk stops after these */
	MAX_NODES = 20000,
	NAME_MAX_KERNEL = 255,
};

/* The file the tree opens, rewritten with each input; named .anm so that
 * its extensionless entries count as archives too (FORMATS 7.1). */
static char archive_path[64];

static void remove_archive_file(void)
{
	unlink(archive_path);
}

static const char *archive_file(void)
{
	if (!archive_path[0]) {
		int fd;

		snprintf(archive_path, sizeof archive_path, "/tmp/fuzz_tree-XXXXXX.anm");
		fd = mkstemps(archive_path, 4);
		FUZZ_CHECK(fd >= 0, "cannot make %s", archive_path);
		close(fd);
		atexit(remove_archive_file);
		log_set_quiet(1); /* every bad entry is logged: not per input */
	}
	return archive_path;
}

static int write_file(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	int ok = fd >= 0 && write(fd, data, size) == (ssize_t)size;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

static void check_names(struct tree *t, struct tree_node *dir, const struct tree_dir *d)
{
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);

	for (uint32_t i = 0; i < d->count; i++) {
		struct tree_node *c = &d->child[i];
		size_t len = strlen(c->name);
		int err = 0;

		FUZZ_CHECK(len > 0 && len <= NAME_MAX_KERNEL, "a name of %zu bytes", len);
		FUZZ_CHECK(g_utf8_validate(c->name, (gssize)len, NULL), "a name that is not UTF-8");
		FUZZ_CHECK(!strchr(c->name, '/') && strcmp(c->name, ".") && strcmp(c->name, ".."),
			   "name \"%s\" breaks a path", c->name);
		FUZZ_CHECK(g_hash_table_add(seen, (gpointer)c->name), "\"%s\" twice in one directory", c->name);
		FUZZ_CHECK(c->parent == dir, "\"%s\" has another parent", c->name);
		FUZZ_CHECK(tree_lookup(t, dir, c->name, &err) == c, "the lookup of \"%s\" finds another node",
			   c->name);
	}
	g_hash_table_destroy(seen);
}

static void walk(struct tree *t, struct tree_node *dir, unsigned *budget)
{
	const struct tree_dir *d;
	unsigned char buf[64];

	if (tree_children(t, dir, &d) < 0)
		return;
	check_names(t, dir, d);
	for (uint32_t i = 0; i < d->count && *budget > 0; i++) {
		struct tree_node *c = &d->child[i];

		(*budget)--;
		if (tree_is_dir(c)) {
			FUZZ_CHECK(c->kind != NODE_ARCHIVE || c->depth <= TREE_MAX_DEPTH,
				   "an archive %u levels deep", c->depth);
			walk(t, c, budget);
		} else if (c->kind == NODE_ENTRY) {
			ssize_t n = tree_read(t, c, buf, sizeof buf, 0);

			FUZZ_CHECK(n < 0 || (uint64_t)n == MIN(c->size, sizeof buf),
				   "read %zd bytes of an entry of %llu", n, (unsigned long long)c->size);
			FUZZ_CHECK(n >= 0 || c->faults, "an entry without faults gave an error");
		}
	}
}

void fuzz_tree_one(const uint8_t *data, size_t size)
{
	const char *path = archive_file();
	unsigned budget = MAX_NODES;
	struct tree *t;
	int err = 0;

	/* not an archive: tree_open's one refusal, logged (fuzz_res has these) */
	if (!res_is_magic(data, size) || write_file(path, data, size) < 0)
		return;
	t = tree_open(path, &err);
	if (!t) {
		FUZZ_CHECK(err > 0, "tree_open failed without an errno");
		return;
	}
	tree_read_lock(t);
	walk(t, tree_root(t), &budget);
	tree_read_unlock(t);
	tree_free(t);
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_tree_one(data, size);
	return 0;
}
#endif
