/* The tree of folders and (nested) archives (src/tree.c), on temporary
 * files. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "names.h"
#include "res.h"
#include "save.h"
#include "tree.h"

static char *dir;

static void setup(void)
{
	dir = h_tmpdir();
}

static void teardown(void)
{
	h_tmpdir_remove(dir);
	dir = NULL;
}

TestSuite(tree, .init = setup, .fini = teardown);

static GByteArray *pack(const struct h_item *items, uint32_t n)
{
	struct res_error err = { 0 };
	GByteArray *a = h_pack(items, n, 1, 0, &err);

	cr_assert_not_null(a, "pack: %s", err.msg);
	return a;
}

/* Writes a to dir/name and frees it; returns the path. */
static char *put(const char *name, GByteArray *a)
{
	char *path = h_write_file(dir, name, a->data, a->len);

	g_byte_array_unref(a);
	return path;
}

static struct tree *open_tree(const char *path)
{
	int err = 0;
	struct tree *t = tree_open(path, &err);

	cr_assert_not_null(t, "tree_open %s: %s", path, strerror(err));
	return t;
}

static struct tree_node *child(struct tree *t, struct tree_node *d, const char *name)
{
	int err = 0;
	struct tree_node *n = tree_lookup(t, d, name, &err);

	cr_assert_not_null(n, "%s not found in %s: %s", name, d->name, strerror(err));
	return n;
}

/* The name a clashing child shown as shown gets, stored as stored. */
static const char *clash(const char *shown, const char *stored)
{
	static char buf[8][256];
	static unsigned next;
	char *name = names_dedup(shown, names_tag(stored, strlen(stored)));
	char *out = buf[next++ % 8];

	g_strlcpy(out, name, sizeof buf[0]);
	g_free(name);
	return out;
}

static struct tree_node *at(struct tree *t, const char *path)
{
	int err = 0;
	struct tree_node *n = tree_resolve(t, tree_root(t), path, &err);

	cr_assert_not_null(n, "%s: %s", path, strerror(err));
	return n;
}

/* The whole contents of a file node, NUL-terminated. */
static char *contents(struct tree *t, struct tree_node *n)
{
	char *buf = g_malloc(n->size + 1);
	ssize_t got = tree_read(t, n, buf, n->size, 0);

	cr_assert_eq(got, (ssize_t)n->size, "%s: read %zd of %llu", n->name, got,
		     (unsigned long long)n->size);
	buf[got] = '\0';
	return buf;
}

static void expect_contents(struct tree *t, struct tree_node *n, const char *want)
{
	char *got = contents(t, n);

	cr_assert_str_eq(got, want, "%s", n->name);
	g_free(got);
}

static uint32_t child_count(struct tree *t, struct tree_node *d)
{
	const struct tree_dir *td;

	cr_assert_eq(tree_children(t, d, &td), 0, "%s", d->name);
	return td->count;
}

/* The children of d that are views (extensionless entries of a .res get
 * UTF-8 text views). */
static uint32_t view_count(struct tree *t, struct tree_node *d)
{
	const struct tree_dir *td;
	uint32_t n = 0;

	cr_assert_eq(tree_children(t, d, &td), 0, "%s", d->name);
	for (uint32_t i = 0; i < td->count; i++)
		n += td->child[i].kind == NODE_VIEW;
	return n;
}

Test(tree, nested_archive_is_a_directory)
{
	static const struct h_item inner_items[] = {
		{ "a.txt", H_STR("hello"), 1000 },
		{ "b.txt", H_STR("world!"), 2000 },
	};
	GByteArray *inner = pack(inner_items, 2);
	struct h_item outer_items[] = {
		{ "inner.res", inner->data, inner->len, 3000 },
		{ "x.txt", H_STR("outer"), 4000 },
	};
	char *path = put("outer.res", pack(outer_items, 2));
	struct tree *t = open_tree(path);
	struct tree_node *root = tree_root(t), *in, *a, *b;
	struct stat st;
	char buf[16];

	cr_assert_eq(root->kind, NODE_ARCHIVE);
	cr_assert_eq(root->ino, 1);
	cr_assert_eq(child_count(t, root), 2);
	in = child(t, root, "inner.res");
	cr_assert_eq(in->kind, NODE_ARCHIVE);
	cr_assert(tree_is_dir(in));
	cr_assert_eq(in->depth, 1);
	cr_assert_eq(in->size, inner->len);
	tree_stat(t, in, &st);
	cr_assert(S_ISDIR(st.st_mode));
	cr_assert_eq(st.st_mtime, 3000);
	cr_assert_eq(child_count(t, in), 2);

	a = child(t, in, "a.txt");
	cr_assert_eq(a->kind, NODE_ENTRY);
	cr_assert_eq(a->depth, 1);
	expect_contents(t, a, "hello");
	tree_stat(t, a, &st);
	cr_assert(S_ISREG(st.st_mode));
	cr_assert_eq(st.st_size, 5);
	cr_assert_eq(st.st_mtime, 1000);
	cr_assert_eq(st.st_mode & 0222, 0, "read-only");

	b = at(t, "inner.res/b.txt");
	cr_assert_eq(tree_read(t, b, buf, 3, 2), 3);
	cr_assert_eq(memcmp(buf, "rld", 3), 0);
	cr_assert_eq(tree_read(t, b, buf, sizeof buf, 0), 6, "clamped to the entry");
	cr_assert_eq(tree_read(t, b, buf, sizeof buf, 6), 0);
	cr_assert_eq(tree_read(t, b, buf, sizeof buf, 1000), 0);
	expect_contents(t, at(t, "x.txt"), "outer");
	{
		char *p = tree_path(b);

		cr_assert_str_eq(p, "outer.res/inner.res/b.txt");
		g_free(p);
	}
	cr_assert_eq(tree_read(t, in, buf, sizeof buf, 0), -EISDIR);
	{
		const struct tree_dir *td;

		cr_assert_eq(tree_children(t, a, &td), -ENOTDIR);
	}
	tree_free(t);
	g_byte_array_unref(inner);
	g_free(path);
}

Test(tree, backslash_names_are_directories)
{
	static const struct h_item items[] = {
		{ "z3q1\\quest.reg", H_STR("reg"), 1 },
		{ "z3q1\\map.txt", H_STR("map"), 2 },
		{ "Z3Q1\\Deep\\x.txt", H_STR("x"), 3 },
		{ "top.txt", H_STR("t"), 4 },
	};
	char *path = put("q.mq", pack(items, 4));
	struct tree *t = open_tree(path);
	struct tree_node *root = tree_root(t), *v, *deep;

	cr_assert_eq(child_count(t, root), 2, "top.txt and one directory for both cases");
	v = child(t, root, "z3q1");
	cr_assert_eq(v->kind, NODE_VDIR);
	cr_assert(tree_is_dir(v));
	cr_assert_eq(g_ascii_strcasecmp(v->name, "z3q1"), 0, "%s", v->name);
	cr_assert_eq(child_count(t, v), 4, "quest.reg, its quest.ini view, map.txt, Deep");
	cr_assert_eq(child(t, v, "quest.ini")->kind, NODE_VIEW);
	expect_contents(t, child(t, v, "quest.reg"), "reg");
	expect_contents(t, child(t, v, "map.txt"), "map");
	deep = child(t, v, "deep");
	cr_assert_eq(deep->kind, NODE_VDIR);
	cr_assert_str_eq(deep->name, "Deep");
	expect_contents(t, at(t, "Z3Q1/DEEP/X.TXT"), "x");
	expect_contents(t, at(t, "top.txt"), "t");
	tree_free(t);
	g_free(path);
}

Test(tree, lookup_ignores_ascii_case_and_prefers_the_exact_one)
{
	static const struct h_item items[] = { { "Readme.TXT", H_STR("r"), 1 } };
	struct tree *t;
	struct tree_node *root;
	const struct tree_dir *td;
	int err = 0;
	char *path;

	g_free(h_write_file(dir, "d/Foo", H_STR("1")));
	g_free(h_write_file(dir, "d/FOO", H_STR("2")));
	g_free(h_write_file(dir, "d/foo", H_STR("3")));
	g_free(h_write_file(dir, "d/bar", H_STR("4")));
	path = g_build_filename(dir, "d", NULL);
	t = open_tree(path);
	root = tree_root(t);
	cr_assert_eq(root->kind, NODE_FOLDER);
	expect_contents(t, child(t, root, "Foo"), "1");
	expect_contents(t, child(t, root, "FOO"), "2");
	expect_contents(t, child(t, root, "foo"), "3");
	cr_assert_eq(g_ascii_strcasecmp(child(t, root, "fOO")->name, "foo"), 0);
	cr_assert_str_eq(child(t, root, "BAR")->name, "bar");
	cr_assert_null(tree_lookup(t, root, "baz", &err));
	cr_assert_eq(err, ENOENT);
	cr_assert_eq(tree_children(t, root, &td), 0);
	cr_assert_eq(td->count, 4);
	{
		unsigned seen = 0;

		for (uint32_t i = 0; i < td->count; i++)
			for (unsigned k = 0; k < 4; k++)
				if (strcmp(td->child[i].name, (const char *const[]){ "Foo", "FOO", "foo", "bar" }[k]) == 0)
					seen |= 1u << k;
		cr_assert_eq(seen, 15, "every name listed once");
	}
	tree_free(t);
	g_free(path);

	path = put("r.res", pack(items, 1));
	t = open_tree(path);
	cr_assert_str_eq(child(t, tree_root(t), "readme.txt")->name, "Readme.TXT");
	cr_assert_str_eq(child(t, tree_root(t), "README.TXT")->name, "Readme.TXT");
	tree_free(t);
	g_free(path);
}

Test(tree, case_duplicates_get_a_tag_of_their_stored_name)
{
	static const struct h_file f[] = {
		{ "abc", H_STR("1"), -1, 0 },
		{ "ABC", H_STR("2"), -1, 0 },
		{ "Abc", H_STR("3"), -1, 0 },
		{ "dir", H_STR("4"), -1, 0 },
		{ "DIR\\x", H_STR("5"), -1, 0 },
	};
	char *path = put("dup.res", h_archive(f, 5));
	struct tree *t = open_tree(path);
	struct tree_node *root = tree_root(t), *d;

	cr_assert_eq(child_count(t, root) - view_count(t, root), 5);
	cr_assert_eq(view_count(t, root), 4, "a text view for each entry");
	cr_assert_str_eq(clash("ABC", "ABC"), "ABC~5c842f6b");
	cr_assert_eq(child(t, root, "ABC~5c842f6b.txt")->kind, NODE_VIEW, "views follow the rewritten name");
	expect_contents(t, child(t, root, "abc"), "1");
	expect_contents(t, child(t, root, clash("ABC", "ABC")), "2");
	expect_contents(t, child(t, root, clash("Abc", "Abc")), "3");
	cr_assert_str_eq(child(t, root, "ABC")->name, "abc", "the only case variant left");
	d = child(t, root, "dir");
	cr_assert_eq(d->kind, NODE_ENTRY);
	expect_contents(t, d, "4");
	d = child(t, root, clash("DIR", "DIR\\"));
	cr_assert_eq(d->kind, NODE_VDIR);
	expect_contents(t, child(t, d, "x"), "5");
	tree_free(t);
	g_free(path);
}

Test(tree, archive_containing_itself_is_a_file)
{
	static const struct h_file f[] = {
		{ "self.res", H_STR(""), -1, 0 },
		{ "a.txt", H_STR("a"), -1, 0 },
	};
	GByteArray *self = h_archive(f, 2), *inner = h_archive(f, 2), *trail = h_archive(f, 2);
	struct h_item outer_items[] = { { "inner.res", NULL, 0, 0 } };
	struct tree *t;
	struct tree_node *n;
	char *path, *path2, *path3, buf[4];

	/* the top archive: self.res is the whole file */
	h_put_u32(self, h_entry_at(self, 0) + H_OFFSET, 0);
	h_put_u32(self, h_entry_at(self, 0) + H_LENGTH, self->len);
	/* the same made to be nested: again its own whole window */
	h_put_u32(inner, h_entry_at(inner, 0) + H_OFFSET, 0);
	h_put_u32(inner, h_entry_at(inner, 0) + H_LENGTH, inner->len);
	outer_items[0].data = inner->data;
	outer_items[0].len = inner->len;
	path2 = put("outer.res", pack(outer_items, 1));
	path = put("self.res", self);

	t = open_tree(path);
	n = child(t, tree_root(t), "self.res");
	cr_assert_eq(n->kind, NODE_ENTRY);
	cr_assert(!tree_is_dir(n));
	cr_assert_eq(tree_read(t, n, buf, 4, 0), 4);
	cr_assert_eq(memcmp(buf, "\x3c\xe2\x9c\x01", 4), 0);
	expect_contents(t, child(t, tree_root(t), "a.txt"), "a");
	tree_free(t);

	/* a window one byte shorter than the file, which has one byte of
	 * trailing junk: the same header and table again, never ending */
	h_put_u32(trail, h_entry_at(trail, 0) + H_OFFSET, 0);
	h_put_u32(trail, h_entry_at(trail, 0) + H_LENGTH, trail->len);
	h_put(trail, trail->len, "", 1);
	path3 = put("trail.res", trail);
	t = open_tree(path3);
	n = child(t, tree_root(t), "self.res");
	cr_assert_eq(n->kind, NODE_ENTRY);
	cr_assert_eq(n->size, tree_root(t)->size - 1);
	tree_free(t);

	t = open_tree(path2);
	n = at(t, "inner.res");
	cr_assert_eq(n->kind, NODE_ARCHIVE);
	n = at(t, "inner.res/self.res");
	cr_assert_eq(n->kind, NODE_ENTRY);
	cr_assert_eq(n->size, inner->len);
	expect_contents(t, at(t, "inner.res/a.txt"), "a");
	tree_free(t);
	g_byte_array_unref(inner);
	g_free(path);
	g_free(path2);
	g_free(path3);
}

Test(tree, nesting_stops_at_the_maximum_depth)
{
	enum { LEVELS = TREE_MAX_DEPTH + 4 };
	static const struct h_item leaf[] = { { "leaf.txt", H_STR("leaf"), 0 } };
	GByteArray *a = pack(leaf, 1);
	struct tree *t;
	struct tree_node *n;
	char *path, buf[4];

	for (int level = 1; level < LEVELS; level++) {
		struct h_item items[] = { { "n.res", a->data, a->len, (uint32_t)level } };
		GByteArray *up = pack(items, 1);

		g_byte_array_unref(a);
		a = up;
	}
	path = put("deep.res", a);
	t = open_tree(path);
	n = tree_root(t);
	cr_assert_eq(n->depth, 0);
	for (int d = 1; d <= TREE_MAX_DEPTH; d++) {
		n = child(t, n, "n.res");
		cr_assert_eq(n->kind, NODE_ARCHIVE, "level %d", d);
		cr_assert_eq(n->depth, d);
	}
	n = child(t, n, "n.res");
	cr_assert_eq(n->kind, NODE_ENTRY, "level %d is shown as a file", TREE_MAX_DEPTH + 1);
	cr_assert_eq(tree_read(t, n, buf, 4, 0), 4);
	cr_assert_eq(memcmp(buf, "\x3c\xe2\x9c\x01", 4), 0);
	tree_free(t);
	g_free(path);
}

Test(tree, entries_past_the_end_give_eio)
{
	static const struct h_file f[] = {
		{ "good.txt", H_STR("ok"), -1, 0 },
		{ "bad.txt", H_STR("bad"), -1, 0 },
		{ "lost.txt", H_STR("lost"), -1, 0 },
		{ "far.res", H_STR("far"), -1, 0 },
	};
	GByteArray *a = h_archive(f, 4);
	struct tree *t;
	struct tree_node *n;
	char *path, buf[8];
	int fd;
	size_t len = 1;
	uint64_t pos;

	h_put_u32(a, h_entry_at(a, 1) + H_LENGTH, 65535);
	h_put_u32(a, h_entry_at(a, 2) + H_NAME_OFF, 1000);
	h_put_u32(a, h_entry_at(a, 3) + H_OFFSET, 0xFFFFFFFF);
	path = put("oob.res", a);
	t = open_tree(path);
	cr_assert_eq(child_count(t, tree_root(t)), 3, "the entry without a name is left out");
	expect_contents(t, child(t, tree_root(t), "good.txt"), "ok");
	n = child(t, tree_root(t), "bad.txt");
	cr_assert_eq(n->kind, NODE_ENTRY);
	cr_assert_eq(n->size, 65535);
	cr_assert_eq(n->faults, RES_FAULT_DATA);
	cr_assert_eq(tree_read(t, n, buf, sizeof buf, 0), -EIO);
	cr_assert_eq(tree_data(t, n, 0, &len, &fd, &pos), -EIO);
	n = child(t, tree_root(t), "far.res");
	cr_assert_eq(n->kind, NODE_ENTRY, "a faulty entry is never opened as an archive");
	cr_assert_eq(tree_read(t, n, buf, sizeof buf, 0), -EIO);
	tree_free(t);
	g_free(path);
}

Test(tree, folder_shows_broken_archives_as_files)
{
	static const struct h_item items[] = { { "a.txt", H_STR("a"), 0 } };
	GByteArray *huge = g_byte_array_new(), *good = pack(items, 1), *with_broken;
	struct h_item outer[] = {
		{ "broken.res", NULL, 0, 0 },
		{ "ok.mod", good->data, good->len, 0 },
	};
	struct tree *t;
	struct tree_node *root, *n;
	char *got;

	h_put_header(huge, RES_MAGIC, 10000000, 16, 0);
	h_put(huge, 99, "", 1);
	outer[0].data = huge->data;
	outer[0].len = huge->len;
	with_broken = pack(outer, 2);
	g_free(h_write_file(dir, "bad.res", huge->data, huge->len));
	g_free(h_write_file(dir, "text.res", H_STR("not an archive at all")));
	g_free(h_write_file(dir, "short.mq", H_STR("\x3c\xe2\x9c")));
	g_free(h_write_file(dir, "notes.txt", H_STR("notes")));
	g_free(h_write_file(dir, "good.res", with_broken->data, with_broken->len));
	g_free(h_write_file(dir, "sub/inner.mq", good->data, good->len));

	t = open_tree(dir);
	root = tree_root(t);
	cr_assert_eq(root->kind, NODE_FOLDER);
	cr_assert_eq(child_count(t, root), 6);
	n = child(t, root, "bad.res");
	cr_assert_eq(n->kind, NODE_PLAIN);
	cr_assert_eq(n->size, 100);
	got = contents(t, n);
	cr_assert_eq(memcmp(got, huge->data, 100), 0, "passed through byte for byte");
	g_free(got);
	cr_assert_eq(child(t, root, "text.res")->kind, NODE_PLAIN);
	expect_contents(t, child(t, root, "text.res"), "not an archive at all");
	cr_assert_eq(child(t, root, "short.mq")->kind, NODE_PLAIN);
	cr_assert_eq(child(t, root, "notes.txt")->kind, NODE_PLAIN);
	cr_assert_eq(child(t, root, "good.res")->kind, NODE_ARCHIVE);
	cr_assert_eq(child(t, root, "sub")->kind, NODE_FOLDER);
	cr_assert_eq(at(t, "sub/inner.mq")->kind, NODE_ARCHIVE);
	expect_contents(t, at(t, "sub/inner.mq/a.txt"), "a");
	n = at(t, "good.res/broken.res");
	cr_assert_eq(n->kind, NODE_ENTRY, "a nested archive with a broken header is a file");
	cr_assert_eq(n->size, 100);
	cr_assert_eq(at(t, "good.res/ok.mod")->kind, NODE_ARCHIVE);
	expect_contents(t, at(t, "good.res/ok.mod/a.txt"), "a");
	tree_free(t);
	g_byte_array_unref(huge);
	g_byte_array_unref(good);
	g_byte_array_unref(with_broken);
}

Test(tree, members_without_extension_are_archives_only_in_anm_and_bon)
{
	static const struct h_item track[] = { { "frame", H_STR("f"), 0 } };
	GByteArray *inner = pack(track, 1);
	struct h_item items[] = {
		{ "track", inner->data, inner->len, 0 },
		{ "track.txt", inner->data, inner->len, 0 },
	};
	struct tree *t;

	g_free(put("x.anm", pack(items, 2)));
	g_free(put("x.BON", pack(items, 2)));
	g_free(put("x.res", pack(items, 2)));
	t = open_tree(dir);
	cr_assert_eq(at(t, "x.anm/track")->kind, NODE_ARCHIVE);
	expect_contents(t, at(t, "x.anm/track/frame"), "f");
	cr_assert_eq(at(t, "x.BON/track")->kind, NODE_ARCHIVE);
	cr_assert_eq(at(t, "x.anm/track.txt")->kind, NODE_ENTRY);
	cr_assert_eq(at(t, "x.res/track")->kind, NODE_ENTRY);
	tree_free(t);
	g_byte_array_unref(inner);
}

Test(tree, stored_names_that_cannot_be_paths)
{
	static const struct h_file f[] = {
		{ "a/b", H_STR("slash"), -1, 0 },
		{ "..", H_STR("dotdot"), -1, 0 },
		{ "", H_STR("empty"), -1, 0 },
		{ "\\x\\\\y\\", H_STR("xy"), -1, 0 },
		{ "\xca\xee\xe6\xe0", H_STR("leather"), -1, 0 },
	};
	char *path = put("names.res", h_archive(f, 5));
	struct tree *t = open_tree(path);

	cr_assert_eq(child_count(t, tree_root(t)) - view_count(t, tree_root(t)), 5);
	cr_assert_eq(at(t, "%2E%2E.txt")->kind, NODE_VIEW, "views follow the rewritten name");
	expect_contents(t, at(t, "a%2Fb"), "slash");
	expect_contents(t, at(t, "%2E%2E"), "dotdot");
	expect_contents(t, at(t, "%EMPTY"), "empty");
	expect_contents(t, at(t, "x/y"), "xy");
	expect_contents(t, at(t, "Кожа"), "leather");
	tree_free(t);
	g_free(path);
}

Test(tree, inode_numbers_are_stable)
{
	/* the file keeps the name, the folder (first in the table) gives way */
	char *clashing = g_strconcat("a.res/", clash("d", "d\\"), NULL);
	char *below = g_strconcat(clashing, "/x.txt", NULL);
	const char *const paths[] = { "a.res", clashing, below, "a.res/D",
				      "a.res/in.res", "a.res/in.res/y.txt", "sub", "sub/f.txt" };
	static const struct h_item inner_items[] = { { "y.txt", H_STR("y"), 0 } };
	GByteArray *inner = pack(inner_items, 1);
	struct h_file f[] = {
		{ "d\\x.txt", H_STR("x"), -1, 0 },
		{ "in.res", NULL, 0, -1, 0 },
		{ "D", H_STR("file"), -1, 0 },
	};
	uint64_t ino[G_N_ELEMENTS(paths)];
	struct tree *t1, *t2;

	f[1].data = inner->data;
	f[1].len = inner->len;
	g_free(put("a.res", h_archive(f, 3)));
	g_free(h_write_file(dir, "sub/f.txt", H_STR("f")));
	t1 = open_tree(dir);
	t2 = open_tree(dir);
	cr_assert_eq(tree_root(t1)->ino, 1);
	cr_assert_eq(tree_root(t2)->ino, 1);
	/* visit in different orders */
	for (size_t i = 0; i < G_N_ELEMENTS(paths); i++)
		ino[i] = at(t1, paths[i])->ino;
	for (size_t i = G_N_ELEMENTS(paths); i-- > 0;)
		cr_assert_eq(at(t2, paths[i])->ino, ino[i], "%s", paths[i]);
	for (size_t i = 0; i < G_N_ELEMENTS(paths); i++) {
		cr_assert_gt(ino[i], 1, "%s", paths[i]);
		for (size_t j = i + 1; j < G_N_ELEMENTS(paths); j++)
			cr_assert_neq(ino[i], ino[j], "%s and %s", paths[i], paths[j]);
	}
	tree_free(t1);
	tree_free(t2);
	g_byte_array_unref(inner);
	g_free(clashing);
	g_free(below);
}

/* Which of two clashing names keeps the plain one follows rules a save's
 * new table order cannot change (a file open under the name would be
 * saved to the other entry): a file before a folder, and a name shown as
 * stored before one shown so through a rewrite. */
Test(tree, clashes_are_settled_the_same_in_either_table_order)
{
	char *folder = g_strconcat(clash("d", "d\\"), "/x.txt", NULL);
	char *rewritten = g_strdup(clash("x%2F", "x/"));

	for (int order = 0; order < 2; order++) {
		struct h_file f[4] = {
			{ "d\\x.txt", H_STR("in the folder"), -1, 0 },
			{ "D", H_STR("file"), -1, 0 },
			{ "x%2F", H_STR("literal"), -1, 0 },
			{ "x/", H_STR("slash"), -1, 0 },
		};
		char name[16], *a, *b;
		struct tree *t;
		struct h_file swap;

		if (order) {
			swap = f[0], f[0] = f[1], f[1] = swap;
			swap = f[2], f[2] = f[3], f[3] = swap;
		}
		g_snprintf(name, sizeof name, "o%d.res", order);
		g_free(put(name, h_archive(f, 4)));
		t = open_tree(dir);
		a = g_strdup_printf("%s/%s", name, folder);
		b = g_strdup_printf("%s/%s", name, rewritten);
		expect_contents(t, at(t, a), "in the folder");
		g_free(a);
		a = g_strdup_printf("%s/D", name);
		expect_contents(t, at(t, a), "file");
		g_free(a);
		a = g_strdup_printf("%s/x%%2F", name);
		expect_contents(t, at(t, a), "literal");
		expect_contents(t, at(t, b), "slash");
		g_free(a);
		g_free(b);
		tree_free(t);
	}
	g_free(folder);
	g_free(rewritten);
}

/* A folder and a file that both lose their name to a case variant get
 * tags of their own: the folder's is of its stored bytes with the
 * backslash, so the two never meet and need no table index (which a save
 * renumbers) to tell them apart. */
Test(tree, a_folder_and_a_file_renamed_for_one_case_variant_get_different_tags)
{
	static const struct h_item items[] = {
		{ "A", H_STR("upper"), 0 }, { "a\\b", H_STR("in the folder"), 0 }, { "a", H_STR("lower"), 0 },
	};
	struct tree *t;
	struct tree_node *root, *folder;
	const char *file_tag = clash("a", "a"), *folder_tag = clash("a", "a\\");
	char *plain;

	cr_assert_str_neq(file_tag, folder_tag);
	g_free(put("v.res", pack(items, 3)));
	t = open_tree(dir);
	root = at(t, "v.res");
	folder = child(t, root, folder_tag);
	cr_assert_eq(folder->kind, NODE_VDIR);
	expect_contents(t, child(t, folder, "b"), "in the folder");
	/* the file the game does not find has the tag; the other the name */
	plain = contents(t, child(t, root, "A"));
	if (!strcmp(plain, "upper"))
		expect_contents(t, child(t, root, file_tag), "lower");
	else
		expect_contents(t, child(t, root, clash("A", "A")), "upper");
	g_free(plain);
	for (uint32_t i = 0; i < root->dir->count; i++) {
		const char *tilde = strchr(root->dir->child[i].name, '~');

		cr_assert(!tilde || !strchr(tilde + 1, '~'), "%s: no name needs the table index",
			  root->dir->child[i].name);
	}
	tree_free(t);
}

Test(tree, names_whose_hashes_meet_get_inode_numbers_of_their_own)
{
	/* found by a collision search: the same 64-bit hash under the root */
	static const char *const a = "j0pbiehlhvmve", *const b = "nh5vqeffpuv8d";
	struct tree *t;
	struct tree_node *na, *nb;
	uint64_t b_ino;

	cr_assert_eq(tree_child_ino(1, a), tree_child_ino(1, b), "the names still collide");
	g_free(h_write_file(dir, a, H_STR("one")));
	g_free(h_write_file(dir, b, H_STR("two")));
	t = open_tree(dir);
	na = at(t, a);
	nb = at(t, b);
	cr_assert_neq(na->ino, nb->ino);
	cr_assert_neq(tree_dir_cookie(na), tree_dir_cookie(nb), "a listing resumed between them skips none");
	cr_assert_eq(na->ino, tree_child_ino(1, a), "the smaller name keeps its number");
	b_ino = nb->ino;
	tree_free(t);
	t = open_tree(dir);
	cr_assert_eq(at(t, b)->ino, b_ino, "and the other gets the same one at every mount");
	tree_free(t);
}

Test(tree, sources_that_cannot_be_opened)
{
	char *missing = g_build_filename(dir, "missing", NULL);
	char *plain = h_write_file(dir, "plain.res", H_STR("not an archive"));
	GByteArray *b = g_byte_array_new();
	char *broken;
	int err = 0;

	h_put_header(b, RES_MAGIC, 0xFFFFFF, 16, 0);
	broken = h_write_file(dir, "huge.res", b->data, b->len);
	cr_assert_null(tree_open(missing, &err));
	cr_assert_eq(err, ENOENT);
	err = 0;
	cr_assert_null(tree_open(plain, &err));
	cr_assert_eq(err, EINVAL);
	err = 0;
	cr_assert_null(tree_open(broken, &err));
	cr_assert_eq(err, EINVAL);
	g_byte_array_unref(b);
	g_free(missing);
	g_free(plain);
	g_free(broken);
}

/* A save changes the archive file: the tree notices, and a reload shows
 * the new state, nested archives included. */
Test(tree, reload_after_a_save_shows_the_new_state)
{
	static const struct h_item inner_items[] = { { "q.reg", H_STR("old"), 10 } };
	GByteArray *inner = pack(inner_items, 1);
	struct h_item outer_items[] = {
		{ "inner.mq", inner->data, inner->len, 20 },
		{ "x.txt", H_STR("outer"), 30 },
	};
	char *top = dir, *sub = g_build_filename(dir, "game", NULL), *path;
	struct save_op put_op = { .op = RES_PUT, .path = "inner.mq/q.reg", .data = (const unsigned char *)"brand new",
				  .len = 9, .mtime = 40 };
	struct save_op ren_op = { .op = RES_RENAME, .path = "x.txt", .to = "y.txt" };
	struct res_error err = { 0 };
	struct tree *t;
	struct tree_node *a;
	struct stat st;
	int e = 0;
	uint64_t gen;

	cr_assert_eq(mkdir(sub, 0755), 0);
	dir = sub; /* a folder holding nothing but the archive */
	path = put("outer.res", pack(outer_items, 2));
	t = tree_open_rw(dir, &e);
	cr_assert_not_null(t, "%s", strerror(e));
	a = at(t, "outer.res");
	tree_stat(t, at(t, "outer.res/x.txt"), &st);
	cr_assert_neq(st.st_mode & 0200, 0, "entries of a writable archive are writable in a rw tree");
	tree_stat(t, a, &st);
	cr_assert_neq(st.st_mode & 0200, 0);
	expect_contents(t, at(t, "outer.res/inner.mq/q.reg"), "old");
	cr_assert_eq(tree_unit(at(t, "outer.res/inner.mq/q.reg")), a, "the archive file is the unit");
	cr_assert_eq(tree_unit(a), a);
	cr_assert_eq(tree_unit_changed(t, a), TREE_SAME);

	cr_assert_eq(save_archive(path, &put_op, 1, NULL, &err, NULL), 0, "%s", err.msg);
	cr_assert_eq(save_archive(path, &ren_op, 1, NULL, &err, NULL), 0, "%s", err.msg);
	cr_assert_eq(tree_unit_changed(t, a), TREE_CHANGED, "the tree sees the file changed");
	gen = tree_generation(t);
	tree_write_lock(t);
	tree_reload(t, a, 1, NULL);
	tree_write_unlock(t);
	cr_assert_gt(tree_generation(t), gen);
	cr_assert_eq(tree_unit_changed(t, a), TREE_SAME);
	expect_contents(t, at(t, "outer.res/inner.mq/q.reg"), "brand new");
	expect_contents(t, at(t, "outer.res/y.txt"), "outer");
	cr_assert_null(tree_resolve(t, tree_root(t), "outer.res/x.txt", &e));
	cr_assert_eq(e, ENOENT);

	/* a create (must_be_new) never replaces what is there, in any case */
	{
		struct save_op create_op = { .op = RES_PUT, .path = "Y.TXT", .data = (const unsigned char *)"",
					     .len = 0, .mtime = 50, .must_be_new = 1 };

		cr_assert_eq(save_archive(path, &create_op, 1, NULL, &err, NULL), -1);
		cr_assert_eq(err.code, EEXIST, "%s", err.msg);
		create_op.path = "inner.mq/q.ini"; /* a view of the REG there */
		cr_assert_eq(save_archive(path, &create_op, 1, NULL, &err, NULL), -1);
		cr_assert_eq(err.code, EEXIST, "%s", err.msg);
		create_op.path = "z.txt";
		cr_assert_eq(save_archive(path, &create_op, 1, NULL, &err, NULL), 0, "%s", err.msg);
		tree_write_lock(t);
		tree_reload(t, a, 1, NULL);
		tree_write_unlock(t);
		expect_contents(t, at(t, "outer.res/y.txt"), "outer");
		expect_contents(t, at(t, "outer.res/z.txt"), "");
	}

	/* a put over bytes that are not what the writer's copy began from */
	{
		unsigned char was[32];
		gsize n = sizeof was;
		GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
		struct save_op over = { .op = RES_PUT, .path = "y.txt", .data = (const unsigned char *)"mine",
					.len = 4, .mtime = 60, .expect_sha256 = was };

		g_checksum_update(sum, (const guchar *)"before", 6);
		g_checksum_get_digest(sum, was, &n);
		cr_assert_eq(save_archive(path, &over, 1, NULL, &err, NULL), -1);
		cr_assert_eq(err.code, ESTALE, "%s", err.msg);
		cr_assert(strstr(err.msg, "changed since it was opened"), "%s", err.msg);
		g_checksum_reset(sum);
		g_checksum_update(sum, (const guchar *)"outer", 5);
		n = sizeof was;
		g_checksum_get_digest(sum, was, &n);
		cr_assert_eq(save_archive(path, &over, 1, NULL, &err, NULL), 0, "%s", err.msg);
		cr_assert_eq(save_archive(path, &over, 1, NULL, &err, NULL), 1, "the new bytes already: %s", err.msg);
		over.path = "gone.txt";
		cr_assert_eq(save_archive(path, &over, 1, NULL, &err, NULL), -1);
		cr_assert_eq(err.code, EIO, "an entry removed since: %s", err.msg);
		g_checksum_free(sum);
		tree_write_lock(t);
		tree_reload(t, a, 1, NULL);
		tree_write_unlock(t);
		expect_contents(t, at(t, "outer.res/y.txt"), "mine");
	}

	/* a read-only archive shows read-only, even to root */
	cr_assert_eq(chmod(path, 0444), 0);
	tree_write_lock(t);
	tree_reload(t, tree_root(t), 1, NULL);
	tree_write_unlock(t);
	tree_stat(t, at(t, "outer.res/y.txt"), &st);
	cr_assert_eq(st.st_mode & 0222, 0);
	tree_free(t);
	g_byte_array_unref(inner);
	g_free(path);
	dir = top;
	g_free(sub);
}

/* put() without its fsync: thousands of files in a test */
static char *write_quickly(const char *name, GByteArray *a)
{
	char *path = g_build_filename(dir, name, NULL);
	FILE *f = fopen(path, "wb");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(a->data, 1, a->len, f), a->len);
	cr_assert_eq(fclose(f), 0);
	g_byte_array_unref(a);
	return path;
}

/* Every archive file the tree sees gets a record of its stamp; replacing an
 * archive file by a new one leaves the old inode's record behind.  Thousands of
 * replacements (each old file kept alive, so no inode number comes back)
 * must not grow the records without end, and the archive still reads. */
Test(tree, replaced_archives_leave_a_bounded_record)
{
	enum { REPLACEMENTS = 4200 };
	char *top = dir, *game = g_build_filename(dir, "game", NULL);
	char *keep = g_build_filename(dir, "keep", NULL);
	char *live = g_build_filename(game, "a.res", NULL);
	char want[32];
	struct tree *t = NULL;
	unsigned most = 0;

	cr_assert_eq(mkdir(game, 0755), 0);
	cr_assert_eq(mkdir(keep, 0755), 0);
	dir = keep;
	for (int i = 0; i < REPLACEMENTS; i++) {
		char name[32], *version;

		snprintf(name, sizeof name, "v%d.res", i);
		snprintf(want, sizeof want, "version %d", i);
		struct h_item item = { "x.txt", (const unsigned char *)want, strlen(want), 10 };
		version = write_quickly(name, pack(&item, 1));
		/* unlink and link, not rename: ext4 flushes a file renamed over another */
		cr_assert(unlink(live) == 0 || errno == ENOENT, "%s", strerror(errno));
		cr_assert_eq(link(version, live), 0, "%s", strerror(errno));
		g_free(version);
		if (i == 0) {
			t = open_tree(game);
		} else {
			tree_write_lock(t);
			tree_reload(t, tree_root(t), 1, NULL);
			tree_write_unlock(t);
		}
		expect_contents(t, at(t, "a.res/x.txt"), want);
		if (tree_stamps_kept(t) > most)
			most = tree_stamps_kept(t);
	}
	cr_assert_geq(most, 1000, "the records are kept across replacements (%u)", most);
	cr_assert_leq(most, 4096, "at most 4096 records, %u after %d replacements", most, REPLACEMENTS);
	tree_free(t);
	dir = top;
	g_free(game);
	g_free(keep);
	g_free(live);
}

/* A large archive (the hash scatters a folder's members through the
 * table), its directories loaded in an order of their own, most never: each gets
 * exactly its members, and the members' shared storage outlives every
 * directory still waiting (the sanitizer builds see a use after free). */
Test(tree, large_archive_with_scattered_directory_members)
{
	enum { DIRS = 40, PER_DIR = 1000, SUBS = 5 };
	struct h_item *items = g_new0(struct h_item, DIRS * PER_DIR);
	char **names = g_new0(char *, DIRS * PER_DIR);
	struct tree *t;
	struct tree_node *root;
	char *path;
	uint32_t n = 0;

	for (uint32_t f = 0; f < PER_DIR; f++)
		for (uint32_t d = 0; d < DIRS; d++) {
			/* every fourth file of a folder one level deeper */
			names[n] = f % 4 ? g_strdup_printf("d%02u\\f%04u.dat", d, f)
					 : g_strdup_printf("d%02u\\s%u\\f%04u.dat", d, f / 4 % SUBS, f);
			items[n] = (struct h_item){ names[n], names[n], strlen(names[n]), 7 };
			n++;
		}
	path = put("big.res", pack(items, n));
	t = open_tree(path);
	root = tree_root(t);
	cr_assert_eq(child_count(t, root), DIRS);
	for (uint32_t d = 0; d < DIRS; d += 3) { /* every third folder, from the end */
		uint32_t dd = DIRS - 1 - d;
		char *dn = g_strdup_printf("D%02u", dd);
		struct tree_node *v = child(t, root, dn);

		cr_assert_eq(v->kind, NODE_VDIR);
		cr_assert_eq(child_count(t, v), PER_DIR * 3 / 4 + SUBS, "%s", dn);
		for (uint32_t s = 0; s < SUBS; s++) {
			char *sn = g_strdup_printf("s%u", s);
			struct tree_node *sub = child(t, v, sn);

			cr_assert_eq(child_count(t, sub), PER_DIR / 4 / SUBS, "%s/%s", dn, sn);
			g_free(sn);
		}
		for (uint32_t f = 1; f < PER_DIR; f += 97) {
			char *fn = g_strdup_printf("f%04u.dat", f), *want;

			if (f % 4) {
				want = g_strdup_printf("d%02u\\f%04u.dat", dd, f);
				expect_contents(t, child(t, v, fn), want);
				g_free(want);
			}
			g_free(fn);
		}
		g_free(dn);
	}
	expect_contents(t, at(t, "d00/s1/f0004.dat"), "d00\\s1\\f0004.dat");
	tree_free(t); /* with most folders never loaded */
	for (uint32_t i = 0; i < n; i++)
		g_free(names[i]);
	g_free(names);
	g_free(items);
	g_free(path);
}

/* A directory renamed because a file took its name, its members apart in
 * the table, shares the members' block with a directory loaded or not. */
static struct tree_node *renamed_dir(struct tree *t, struct tree_node *root)
{
	const struct tree_dir *td;

	cr_assert_eq(tree_children(t, root, &td), 0);
	for (uint32_t i = 0; i < td->count; i++)
		if (td->child[i].kind == NODE_VDIR && g_ascii_strncasecmp(td->child[i].name, "foo~", 4) == 0)
			return &td->child[i];
	cr_assert_fail("no renamed directory foo~N");
	return NULL;
}

Test(tree, renamed_directory_members_apart_in_the_table)
{
	static const struct h_file f[] = {
		{ "foo", H_STR("file"), -1, 0 },
		{ "foo\\a.dat", H_STR("a"), -1, 0 },
		{ "bar\\x.dat", H_STR("x"), -1, 0 },
		{ "FOO\\b.dat", H_STR("b"), -1, 0 },
		{ "bar\\y.dat", H_STR("y"), -1, 0 },
		{ "foo\\sub\\c.dat", H_STR("c"), -1, 0 },
	};
	char *path = put("renamed.res", h_archive(f, 6));
	struct tree *t = open_tree(path);
	struct tree_node *root = tree_root(t), *r;

	expect_contents(t, child(t, root, "foo"), "file");
	r = renamed_dir(t, root);
	cr_assert_eq(child_count(t, r), 3, "a.dat, b.dat and sub under %s", r->name);
	expect_contents(t, child(t, r, "a.dat"), "a");
	expect_contents(t, child(t, r, "B.DAT"), "b");
	expect_contents(t, child(t, child(t, r, "sub"), "c.dat"), "c");
	tree_free(t); /* bar never loaded: it still holds the block */

	t = open_tree(path);
	root = tree_root(t);
	r = child(t, root, "bar");
	cr_assert_eq(child_count(t, r), 2);
	expect_contents(t, child(t, r, "y.dat"), "y");
	tree_free(t); /* the renamed one never loaded */
	g_free(path);
}

/* In a table not in name order, the members of a directory lie apart;
 * gathered into one slice per directory, they keep their table order,
 * which decides which case variant keeps its name.  (An unstable sort in
 * place of the members d e d D e would give d its entries as 0 3 2.) */
Test(tree, case_duplicates_in_a_scattered_directory_keep_table_order)
{
	static const struct h_file f[] = {
		{ "d\\x", H_STR("x"), -1, 0 },
		{ "e\\1", H_STR("1"), -1, 0 },
		{ "d\\a", H_STR("first"), -1, 0 },
		{ "D\\A", H_STR("second"), -1, 0 },
		{ "e\\2", H_STR("2"), -1, 0 },
	};
	char *path = put("scattered.res", h_archive(f, 5));
	struct tree *t = open_tree(path);
	struct tree_node *d = child(t, tree_root(t), "d"), *e = child(t, tree_root(t), "e");

	expect_contents(t, child(t, d, "a"), "first");
	cr_assert_str_eq(child(t, d, "a")->name, "a");
	expect_contents(t, child(t, d, clash("A", "D\\A")), "second");
	expect_contents(t, child(t, d, "x"), "x");
	cr_assert_eq(child_count(t, d) - view_count(t, d), 3);
	expect_contents(t, child(t, e, "1"), "1");
	expect_contents(t, child(t, e, "2"), "2");
	tree_free(t);
	g_free(path);
}

/* Entries sharing the bytes of one nested archive (a packer's dedup) are
 * each a directory; all of them together show at most so many nodes,
 * the rest fail to list (EIO), and a reload gives their room back. */
Test(tree, copies_of_a_nested_archive_show_a_bounded_number_of_nodes)
{
	enum { COPIES = 40, INNER = 100 };
	struct h_file inner_files[INNER];
	struct h_item copies[COPIES];
	char names[INNER][24], copy_names[COPIES][24];
	GByteArray *inner;
	struct tree *t;
	char *path;
	int listed = 0, refused = 0;

	for (int i = 0; i < INNER; i++) {
		snprintf(names[i], sizeof names[i], "e%03d.txt", i);
		inner_files[i] = (struct h_file){ names[i], (const unsigned char *)"x", 1, -1, 0 };
	}
	inner = h_archive(inner_files, INNER);
	for (int i = 0; i < COPIES; i++) {
		snprintf(copy_names[i], sizeof copy_names[i], "c%02d.res", i);
		copies[i] = (struct h_item){ copy_names[i], inner->data, inner->len, 0 };
	}
	{
		struct res_error err = { 0 };
		GByteArray *outer = h_pack(copies, COPIES, 1, 1, &err);

		cr_assert_not_null(outer, "%s", err.msg);
		cr_assert_lt(outer->len, 2 * inner->len + 2048, "the copies share one window");
		path = put("copies.res", outer);
	}
	t = open_tree(path);
	tree_limit_copies(t, 10 * INNER);
	for (int round = 0; round < 2; round++) {
		listed = refused = 0;
		for (int i = 0; i < COPIES; i++) {
			struct tree_node *c = child(t, tree_root(t), copy_names[i]);
			const struct tree_dir *d;
			int rc;

			cr_assert_eq(c->kind, NODE_ARCHIVE, "%s is a directory", copy_names[i]);
			rc = tree_children(t, c, &d);
			if (rc == 0)
				listed++;
			else if (rc == -EIO)
				refused++;
			else
				cr_assert_fail("%s: %s", copy_names[i], strerror(-rc));
		}
		cr_assert_eq(listed, 11, "the first and ten copies (round %d)", round);
		cr_assert_eq(refused, COPIES - 11);
		tree_write_lock(t);
		tree_reload(t, tree_root(t), 1, NULL);
		tree_write_unlock(t);
	}
	tree_free(t);
	g_byte_array_unref(inner);
	g_free(path);
}

/* A folder listed, and a loose file seen, in the tick of their last change
 * are looked at again once their times can be trusted: as racy (a change
 * in that tick would leave no trace), not as changed, which the mount
 * would log as another program's change. */
Test(tree, what_was_read_in_the_tick_of_its_change_is_racy_then_trusted)
{
	char *top = dir, *sub = g_build_filename(dir, "fresh", NULL);
	struct timespec now, when[2];
	struct tree *t;
	struct tree_node *root, *loose;
	enum tree_look folder_look = TREE_SAME, file_look = TREE_SAME;
	gint64 deadline;

	cr_assert_eq(mkdir(sub, 0755), 0);
	dir = sub;
	g_free(put("note.txt", g_byte_array_append(g_byte_array_new(), (const guint8 *)"hi", 2)));
	/* the folder's time two seconds back: racy when listed, trusted a
	 * second or so later; the file's change time is now */
	clock_gettime(CLOCK_REALTIME, &now);
	when[0] = when[1] = (struct timespec){ .tv_sec = now.tv_sec - 2 };
	cr_assert_eq(utimensat(AT_FDCWD, sub, when, 0), 0);
	t = open_tree(sub);
	root = tree_root(t);
	loose = child(t, root, "note.txt");
	cr_assert_eq(tree_unit(loose), root, "a loose file's unit is its folder");

	deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
	while ((folder_look == TREE_SAME || file_look == TREE_SAME) && g_get_monotonic_time() < deadline) {
		if (folder_look == TREE_SAME)
			folder_look = tree_unit_changed(t, root);
		if (file_look == TREE_SAME)
			file_look = tree_plain_changed(t, loose);
		g_usleep(50 * 1000);
	}
	cr_assert_eq(folder_look, TREE_RACY, "the listing, made in its tick, is looked at again as racy");
	cr_assert_eq(file_look, TREE_RACY, "the file, seen in its tick, is looked at again as racy");

	tree_write_lock(t);
	tree_reload(t, root, 1, NULL);
	tree_write_unlock(t);
	loose = child(t, tree_root(t), "note.txt");
	cr_assert_eq(tree_unit_changed(t, tree_root(t)), TREE_SAME, "listed again once trusted: the same");
	cr_assert_eq(tree_plain_changed(t, loose), TREE_SAME);

	/* a real change is a change, racy or not */
	g_free(put("note.txt", g_byte_array_append(g_byte_array_new(), (const guint8 *)"hello", 5)));
	cr_assert_eq(tree_plain_changed(t, loose), TREE_CHANGED);
	tree_free(t);
	dir = top;
	g_free(sub);
}
