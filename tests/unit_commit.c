/* Saving changes (src/res_commit.c): the in-place commit, its crash
 * safety through the fault hook, rebuilding in memory, and compaction.
 * Every archive is checked the way the game reads it: through the header,
 * the hash chains and the data the entries point at. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "res.h"
#include "res_check.h"
#include "replace.h"
#include "res_commit.h"
#include "res_write.h"

/* The demo archive every test starts from: "same" is stored once for a.txt
 * and d.txt (packed with dedup), z.txt is empty. */
static const struct h_item base[] = {
	{ "a.txt", H_STR("same"), 100 },
	{ "b.txt", H_STR("bravo"), 200 },
	{ "dir\\c.txt", H_STR("charlie in a folder"), 300 },
	{ "d.txt", H_STR("same"), 400 },
	{ "z.txt", H_STR(""), 500 },
};

/* ---- what an archive holds, as the game sees it ------------------------- */

struct snap_entry {
	GBytes *data;
	uint32_t mtime;
	uint32_t offset;
};

static void snap_entry_free(gpointer p)
{
	struct snap_entry *e = p;

	g_bytes_unref(e->data);
	g_free(e);
}

static GHashTable *snap_new(void)
{
	return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, snap_entry_free);
}

static void snap_put(GHashTable *s, const char *name, const void *data, size_t len, uint32_t mtime)
{
	struct snap_entry *e = g_new0(struct snap_entry, 1);

	e->data = g_bytes_new(data, len);
	e->mtime = mtime;
	g_hash_table_replace(s, g_strdup(name), e);
}

static GHashTable *snap_of_items(const struct h_item *items, size_t n)
{
	GHashTable *s = snap_new();

	for (size_t i = 0; i < n; i++)
		snap_put(s, items[i].name, items[i].data, items[i].len, items[i].mtime);
	return s;
}

/* Entries in the order of the name block: the insertion order. */
static int by_name_off(const void *a, const void *b, void *ctx)
{
	const struct res_table *t = ctx;
	uint32_t x = t->entries[*(const uint32_t *)a].name_off, y = t->entries[*(const uint32_t *)b].name_off;

	return (x > y) - (x < y);
}

/* The table is the one the original packer would make of these names:
 * name block sorted, slots and links as res_build_chains places them. */
static void expect_packer_layout(const struct res_table *t)
{
	uint32_t n = t->hdr.count;
	uint32_t *order = g_new(uint32_t, n + 1), *slot_of = g_new(uint32_t, n + 1);
	int32_t *next_of = g_new(int32_t, n + 1);
	const char **names = g_new(const char *, n + 1);
	size_t *lens = g_new(size_t, n + 1);
	struct res_error err = { 0 };

	for (uint32_t i = 0; i < n; i++)
		order[i] = i;
	g_qsort_with_data(order, (gint)n, sizeof *order, by_name_off, (void *)t);
	for (uint32_t k = 0; k < n; k++) {
		names[k] = res_entry_name(t, order[k]);
		lens[k] = t->entries[order[k]].name_len;
		if (k)
			cr_assert_leq(res_name_order(names[k - 1], lens[k - 1], names[k], lens[k]), 0,
				      "name block not in packer order at %u", k);
	}
	cr_assert_eq(res_build_chains(n, names, lens, slot_of, next_of, &err), 0, "%s", err.msg);
	for (uint32_t k = 0; k < n; k++) {
		cr_assert_eq(slot_of[k], order[k], "%.*s sits in slot %u, the packer puts it in %u",
			     (int)lens[k], names[k], order[k], slot_of[k]);
		cr_assert_eq(t->entries[order[k]].next, next_of[slot_of[k]]);
	}
	g_free(order);
	g_free(slot_of);
	g_free(next_of);
	g_free(names);
	g_free(lens);
}

/* Reads the archive file and asserts it holds exactly the snapshot: every
 * entry found by the game's lookup with its bytes and timestamp, no other
 * entry, no problem for res_check.  Offsets go into the snapshot. */
static void expect_archive(const char *path, GHashTable *want)
{
	GError *ge = NULL;
	gchar *buf;
	gsize len;
	struct res_table t;
	struct res_error err = { 0 };
	struct h_reports r;
	GHashTableIter it;
	gpointer k, v;

	cr_assert(g_file_get_contents(path, &buf, &len, &ge), "%s", ge ? ge->message : "");
	cr_assert_eq(res_table_parse((const unsigned char *)buf, len, &t, &err), 0, "%s", err.msg);
	cr_assert_eq(t.hdr.count, g_hash_table_size(want), "%u entries, expected %u", t.hdr.count,
		     g_hash_table_size(want));
	g_hash_table_iter_init(&it, want);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		struct snap_entry *e = v;
		int64_t i = res_lookup(&t, k, strlen(k));
		size_t dlen;
		const void *d = g_bytes_get_data(e->data, &dlen);

		cr_assert_geq(i, 0, "%s is not found by the game's lookup", (char *)k);
		cr_assert_eq(t.entries[i].name_len, strlen(k));
		cr_assert_eq(memcmp(res_entry_name(&t, (uint32_t)i), k, strlen(k)), 0, "%s spelt differently", (char *)k);
		cr_assert_eq(t.entries[i].length, dlen, "%s: %u bytes, expected %zu", (char *)k, t.entries[i].length, dlen);
		cr_assert(dlen == 0 || memcmp(buf + t.entries[i].offset, d, dlen) == 0, "%s: contents differ", (char *)k);
		cr_assert_eq(t.entries[i].mtime, e->mtime, "%s: timestamp", (char *)k);
		e->offset = t.entries[i].offset;
	}
	h_reports_init(&r);
	cr_assert_eq(res_check(&t, len, h_report, &r), 0, "res_check: %s",
		     r.msgs->len ? (char *)r.msgs->pdata[0] : "");
	h_reports_free(&r);
	expect_packer_layout(&t);
	res_table_free(&t);
	g_free(buf);
}

/* ---- files -------------------------------------------------------------- */

struct fixture {
	char *dir;
	char *path;
};

static struct fixture fx;

static void setup(void)
{
	struct res_error err = { 0 };
	GByteArray *a = h_pack(base, G_N_ELEMENTS(base), 1, 1, &err);

	cr_assert_not_null(a, "%s", err.msg);
	fx.dir = h_tmpdir();
	fx.path = h_write_file(fx.dir, "test.res", a->data, a->len);
	g_byte_array_unref(a);
}

static void teardown(void)
{
	g_free(fx.path);
	h_tmpdir_remove(fx.dir);
}

static GByteArray *file_bytes(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	GByteArray *b;

	cr_assert_geq(fd, 0);
	b = h_read_fd(fd);
	close(fd);
	return b;
}

static int commit_path(const char *path, const struct res_change *c, size_t n,
		       const struct res_commit_options *opt, struct res_error *err)
{
	int fd = open(path, O_RDWR | O_CLOEXEC), rc;

	cr_assert_geq(fd, 0);
	rc = res_commit(fd, c, n, opt, err);
	close(fd);
	return rc;
}

static struct res_change put(const char *name, const char *data, uint32_t mtime)
{
	return (struct res_change){ name, strlen(name), RES_PUT, (const unsigned char *)data,
				    strlen(data), mtime, NULL, 0, 0 };
}

static struct res_change del(const char *name)
{
	return (struct res_change){ name, strlen(name), RES_DELETE, NULL, 0, 0, NULL, 0, 0 };
}

static uint32_t offset_of(GHashTable *s, const char *name)
{
	struct snap_entry *e = g_hash_table_lookup(s, name);

	cr_assert_not_null(e, "%s", name);
	return e->offset;
}

/* ---- commit --------------------------------------------------------------- */

TestSuite(commit, .init = setup, .fini = teardown);

Test(commit, put_replaces_and_adds_untouched_entries_stay_put)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change c[] = { put("b.txt", "BRAVO, longer than before", 201),
				  put("new\\deep\\e.txt", "echo", 600) };
	struct res_error err = { 0 };
	GByteArray *before = file_bytes(fx.path), *after;
	uint32_t a_off, d_off, c_off;

	expect_archive(fx.path, want);
	a_off = offset_of(want, "a.txt");
	d_off = offset_of(want, "d.txt");
	c_off = offset_of(want, "dir\\c.txt");
	cr_assert_eq(a_off, d_off, "the fixture shares the data of a.txt and d.txt");

	cr_assert_eq(commit_path(fx.path, c, 2, NULL, &err), 0, "%s", err.msg);
	snap_put(want, "b.txt", H_STR("BRAVO, longer than before"), 201);
	snap_put(want, "new\\deep\\e.txt", H_STR("echo"), 600);
	expect_archive(fx.path, want);
	cr_assert_eq(offset_of(want, "a.txt"), a_off, "untouched entries keep their offsets");
	cr_assert_eq(offset_of(want, "d.txt"), d_off, "shared data stays shared");
	cr_assert_eq(offset_of(want, "dir\\c.txt"), c_off);
	cr_assert_geq(offset_of(want, "b.txt"), before->len, "new data is appended");
	cr_assert_eq(offset_of(want, "b.txt") % 16, 0);
	cr_assert_eq(offset_of(want, "new\\deep\\e.txt") % 16, 0);

	/* every byte the old header reached is as it was, but the header */
	after = file_bytes(fx.path);
	cr_assert_gt(after->len, before->len);
	cr_assert_eq(memcmp(after->data + 16, before->data + 16, before->len - 16), 0,
		     "a commit overwrites nothing but the header");
	cr_assert_eq(h_get_u32(after, 8) % 16, 0, "the table is aligned");
	cr_assert_eq((uint64_t)h_get_u32(after, 8) + 22u * h_get_u32(after, 4) + h_get_u32(after, 12),
		     after->len, "the name block ends the file");
	g_byte_array_unref(before);
	g_byte_array_unref(after);
	g_hash_table_destroy(want);
}

Test(commit, put_of_one_shared_copy_leaves_the_other)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change c = put("a.txt", "alpha", 101);
	struct res_error err = { 0 };
	uint32_t d_off;

	expect_archive(fx.path, want);
	d_off = offset_of(want, "d.txt");
	cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 0, "%s", err.msg);
	snap_put(want, "a.txt", H_STR("alpha"), 101);
	expect_archive(fx.path, want);
	cr_assert_eq(offset_of(want, "d.txt"), d_off);
	cr_assert_neq(offset_of(want, "a.txt"), d_off);
	g_hash_table_destroy(want);
}

Test(commit, unchanged_commit_writes_nothing)
{
	struct res_change same[] = { put("b.txt", "bravo", 200), put("z.txt", "", 500),
				     put("D.TXT", "same", 400) };
	struct res_error err = { 0 };
	struct stat st0, st1;
	GByteArray *before = file_bytes(fx.path), *after;

	cr_assert_eq(stat(fx.path, &st0), 0);
	usleep(20000); /* a write now would show in the mtime */
	cr_assert_eq(commit_path(fx.path, same, 2, NULL, &err), 1, "%s", err.msg);
	cr_assert_eq(commit_path(fx.path, NULL, 0, NULL, &err), 1, "%s", err.msg);
	cr_assert_eq(stat(fx.path, &st1), 0);
	after = file_bytes(fx.path);
	cr_assert_eq(st1.st_size, st0.st_size);
	cr_assert(st1.st_mtim.tv_sec == st0.st_mtim.tv_sec && st1.st_mtim.tv_nsec == st0.st_mtim.tv_nsec,
		  "the file was written");
	cr_assert_eq(after->len, before->len);
	cr_assert_eq(memcmp(after->data, before->data, before->len), 0);

	/* another spelling is a change of the name only: no data appended */
	cr_assert_eq(commit_path(fx.path, &same[2], 1, NULL, &err), 0, "%s", err.msg);
	g_byte_array_unref(after);
	after = file_bytes(fx.path);
	cr_assert_eq(after->len, 16 * ((before->len + 15) / 16) + 5 * 22 + 29, "only a table was appended");
	g_byte_array_unref(before);
	g_byte_array_unref(after);
}

Test(commit, same_bytes_new_timestamp_keeps_the_data)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change c = put("dir\\c.txt", "charlie in a folder", 301);
	struct res_error err = { 0 };
	uint32_t c_off;

	expect_archive(fx.path, want);
	c_off = offset_of(want, "dir\\c.txt");
	cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 0, "%s", err.msg);
	snap_put(want, "dir\\c.txt", H_STR("charlie in a folder"), 301);
	expect_archive(fx.path, want);
	cr_assert_eq(offset_of(want, "dir\\c.txt"), c_off);
	g_hash_table_destroy(want);
}

/* An INI save that gives the REG it came from writes nothing, whatever its
 * timestamp: decided under the lock, on the bytes the file holds then. */
Test(commit, keep_same_leaves_equal_bytes_and_their_timestamp)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change c = put("b.txt", "bravo", 999);
	struct res_error err = { 0 };
	GByteArray *before = file_bytes(fx.path), *after;

	c.keep_same = 1;
	cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 1, "%s", err.msg);
	after = file_bytes(fx.path);
	cr_assert(after->len == before->len && memcmp(after->data, before->data, before->len) == 0);
	expect_archive(fx.path, want);
	c.data = (const unsigned char *)"BRAVO";
	cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 0, "%s", err.msg);
	snap_put(want, "b.txt", H_STR("BRAVO"), 999);
	expect_archive(fx.path, want);
	g_byte_array_unref(before);
	g_byte_array_unref(after);
	g_hash_table_destroy(want);
}

/* Another program that does not take the lock rewrites the file while a
 * commit flushes: the commit must not write its header over their bytes. */
static int rewrite_at_flush(void *ctx, int step)
{
	if (step == RES_STEP_SYNC_TABLE) {
		int fd = open(ctx, O_WRONLY | O_CLOEXEC);

		cr_assert_geq(fd, 0);
		cr_assert_eq(pwrite(fd, "<\xe2\x9c\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 16, 0), 16);
		close(fd);
	}
	return 0;
}

Test(commit, a_file_rewritten_during_the_commit_is_not_switched)
{
	struct res_change c = put("b.txt", "a new bravo", 9);
	struct res_commit_options opt = { .align = 1, .fault = rewrite_at_flush, .fault_ctx = fx.path };
	struct res_error err = { 0 };
	GByteArray *after;

	cr_assert_eq(commit_path(fx.path, &c, 1, &opt, &err), -1);
	cr_assert_eq(err.code, ESTALE, "%s", err.msg);
	after = file_bytes(fx.path);
	cr_assert_eq(h_get_u32(after, 4), 0, "the other program's header stays");
	g_byte_array_unref(after);
}

/* Another program that takes no lock renames another file over the
 * archive's name while a commit works (a game updater, mv of a backup):
 * with the name given, the commit is not switched into the file no one
 * reads any more, and says so. */
static int rename_over_at_flush(void *ctx, int step)
{
	if (step == RES_STEP_SYNC_TABLE) {
		char *other = g_strconcat(ctx, ".other", NULL);
		GByteArray *now = file_bytes(ctx);

		cr_assert(g_file_set_contents(other, (const char *)now->data, now->len, NULL));
		cr_assert_eq(rename(other, ctx), 0);
		g_byte_array_unref(now);
		g_free(other);
	}
	return 0;
}

Test(commit, a_file_renamed_over_the_archive_during_the_commit_is_not_switched)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change c = put("b.txt", "a new bravo", 9);
	struct res_commit_options opt = { .align = 1, .fault = rename_over_at_flush, .fault_ctx = fx.path,
					  .path = fx.path };
	struct res_error err = { 0 };

	cr_assert_eq(commit_path(fx.path, &c, 1, &opt, &err), -1);
	cr_assert_eq(err.code, ESTALE, "%s", err.msg);
	cr_assert(strstr(err.msg, "name"), "%s", err.msg);
	opt.fault = NULL;
	cr_assert_eq(commit_path(fx.path, &c, 1, &opt, &err), 0, "%s", err.msg);
	snap_put(want, "b.txt", H_STR("a new bravo"), 9);
	expect_archive(fx.path, want);
	g_hash_table_destroy(want);
}

/* The header is rewritten in place: an entry lying over it would change. */
Test(commit, an_entry_over_the_header_is_refused)
{
	static const unsigned char self[] = "<\xe2\x9c\x01\x01\x00\x00\x00\x10\x00\x00\x00\x04\x00\x00\x00"
		"\xff\xff\xff\xff\x2a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00"
		"self";
	char *path = h_write_file(fx.dir, "self.res", self, sizeof self - 1);
	struct res_change c = put("x.txt", "x", 9);
	struct res_error err = { 0 };

	cr_assert_eq(commit_path(path, &c, 1, NULL, &err), -1);
	cr_assert_eq(err.code, EINVAL, "%s", err.msg);
	cr_assert(strstr(err.msg, "header"), "%s", err.msg);
	cr_assert_eq(res_compact(path, &err), 0, "%s", err.msg);
	cr_assert_eq(commit_path(path, &c, 1, NULL, &err), 0, "%s", err.msg);
	g_free(path);
}

static struct res_change ren(const char *from, const char *to)
{
	return (struct res_change){ from, strlen(from), RES_RENAME, NULL, 0, 0, to, strlen(to), 0 };
}

Test(commit, rename_keeps_the_data_in_place_and_replaces_the_target)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change move = ren("dir\\c.txt", "moved\\c2.txt");
	struct res_change over = ren("b.txt", "A.TXT");
	struct res_change same = ren("z.txt", "z.txt");
	struct res_change missing = ren("nothing.txt", "x.txt");
	struct res_error err = { 0 };
	uint32_t c_off, b_off, d_off;
	GByteArray *before, *after;

	expect_archive(fx.path, want);
	c_off = offset_of(want, "dir\\c.txt");
	b_off = offset_of(want, "b.txt");
	d_off = offset_of(want, "d.txt");
	before = file_bytes(fx.path);
	cr_assert_eq(commit_path(fx.path, &move, 1, NULL, &err), 0, "%s", err.msg);
	after = file_bytes(fx.path);
	cr_assert_eq(after->len, 16 * ((before->len + 15) / 16) + 5 * 22 + 32,
		     "a rename appends a table, no data");
	g_hash_table_remove(want, "dir\\c.txt");
	snap_put(want, "moved\\c2.txt", H_STR("charlie in a folder"), 300);
	expect_archive(fx.path, want);
	cr_assert_eq(offset_of(want, "moved\\c2.txt"), c_off, "the data stays where it was");

	/* over an existing entry (another case): the target is replaced */
	cr_assert_eq(commit_path(fx.path, &over, 1, NULL, &err), 0, "%s", err.msg);
	g_hash_table_remove(want, "b.txt");
	g_hash_table_remove(want, "a.txt");
	snap_put(want, "A.TXT", H_STR("bravo"), 200);
	expect_archive(fx.path, want);
	cr_assert_eq(offset_of(want, "A.TXT"), b_off);
	cr_assert_eq(offset_of(want, "d.txt"), d_off, "d.txt shared a.txt's data and keeps it");

	g_byte_array_unref(before);
	before = file_bytes(fx.path);
	cr_assert_eq(commit_path(fx.path, &same, 1, NULL, &err), 1, "a rename to itself changes nothing");
	cr_assert_eq(commit_path(fx.path, &missing, 1, NULL, &err), -1);
	cr_assert_eq(err.code, ENOENT, "%s", err.msg);
	g_byte_array_unref(after);
	after = file_bytes(fx.path);
	cr_assert(before->len == after->len && memcmp(before->data, after->data, after->len) == 0);
	g_byte_array_unref(before);
	g_byte_array_unref(after);
	g_hash_table_destroy(want);
}

Test(commit, put_matches_case_insensitively_and_stores_the_new_spelling)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change c = put("DIR\\C.TXT", "upper", 7);
	struct res_error err = { 0 };

	cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 0, "%s", err.msg);
	g_hash_table_remove(want, "dir\\c.txt");
	snap_put(want, "DIR\\C.TXT", H_STR("upper"), 7);
	expect_archive(fx.path, want);
	g_hash_table_destroy(want);
}

Test(commit, delete_and_rename)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change rm = del("b.txt");
	struct res_change rename[] = { del("dir\\c.txt"), put("renamed.txt", "charlie in a folder", 300) };
	struct res_change missing = del("nothing.txt");
	struct res_error err = { 0 };
	GByteArray *before, *after;

	cr_assert_eq(commit_path(fx.path, &rm, 1, NULL, &err), 0, "%s", err.msg);
	g_hash_table_remove(want, "b.txt");
	expect_archive(fx.path, want);
	cr_assert_eq(commit_path(fx.path, rename, 2, NULL, &err), 0, "%s", err.msg);
	g_hash_table_remove(want, "dir\\c.txt");
	snap_put(want, "renamed.txt", H_STR("charlie in a folder"), 300);
	expect_archive(fx.path, want);

	before = file_bytes(fx.path);
	cr_assert_eq(commit_path(fx.path, &missing, 1, NULL, &err), -1);
	cr_assert_eq(err.code, ENOENT, "%s", err.msg);
	after = file_bytes(fx.path);
	cr_assert(before->len == after->len && memcmp(before->data, after->data, after->len) == 0,
		  "a refused commit wrote");
	g_byte_array_unref(before);
	g_byte_array_unref(after);
	g_hash_table_destroy(want);
}

Test(commit, delete_everything_then_put_again)
{
	GHashTable *want = snap_new();
	struct res_change all[G_N_ELEMENTS(base)];
	struct res_change c = put("only.txt", "one", 1);
	struct res_error err = { 0 };
	GByteArray *b;

	for (size_t i = 0; i < G_N_ELEMENTS(base); i++)
		all[i] = del(base[i].name);
	cr_assert_eq(commit_path(fx.path, all, G_N_ELEMENTS(all), NULL, &err), 0, "%s", err.msg);
	b = file_bytes(fx.path);
	cr_assert_eq(h_get_u32(b, 4), 0);
	cr_assert_eq(h_get_u32(b, 8), 0, "the empty archive as eilib writes it");
	cr_assert_eq(h_get_u32(b, 12), 0);
	g_byte_array_unref(b);
	expect_archive(fx.path, want);
	cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 0, "%s", err.msg);
	snap_put(want, "only.txt", H_STR("one"), 1);
	expect_archive(fx.path, want);
	g_hash_table_destroy(want);
}

Test(commit, later_changes_win_within_one_commit)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change c[] = { put("x.txt", "first", 1), put("X.txt", "second", 2), del("a.txt"),
				  put("a.txt", "back", 3) };
	struct res_error err = { 0 };

	cr_assert_eq(commit_path(fx.path, c, G_N_ELEMENTS(c), NULL, &err), 0, "%s", err.msg);
	snap_put(want, "X.txt", H_STR("second"), 2);
	snap_put(want, "a.txt", H_STR("back"), 3);
	expect_archive(fx.path, want);
	g_hash_table_destroy(want);
}

Test(commit, many_commits_in_a_row)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	GRand *rnd = g_rand_new_with_seed(1234);
	struct res_error err = { 0 };
	char names[8][16];

	for (int i = 0; i < 8; i++)
		g_snprintf(names[i], sizeof names[i], "%sf%d.dat", i % 3 ? "" : "sub\\", i);
	for (int round = 0; round < 120; round++) {
		const char *name = names[g_rand_int_range(rnd, 0, 8)];
		struct res_change c;
		char *data = NULL;

		if (g_hash_table_contains(want, name) && g_rand_int_range(rnd, 0, 4) == 0) {
			c = del(name);
			g_hash_table_remove(want, name);
		} else {
			size_t len = (size_t)g_rand_int_range(rnd, 0, 3000);

			data = g_malloc(len + 1);
			for (size_t k = 0; k < len; k++)
				data[k] = (char)('a' + g_rand_int_range(rnd, 0, 26));
			data[len] = '\0';
			c = put(name, data, (uint32_t)round);
			snap_put(want, name, data, len, (uint32_t)round);
		}
		cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 0, "round %d: %s", round, err.msg);
		expect_archive(fx.path, want);
		g_free(data);
	}
	g_rand_free(rnd);
	g_hash_table_destroy(want);
}

/* ---- crashes ------------------------------------------------------------ */

static int stop_at(void *ctx, int step)
{
	return step == *(int *)ctx;
}

/* A crash before each step leaves the old archive (steps 1 to 4: the header
 * was not switched yet) or the new one (step 5: only its flush is missing);
 * nothing else, and a later commit works on what is left. */
Test(commit, crash_before_each_step_leaves_old_or_new)
{
	GByteArray *orig = file_bytes(fx.path);
	struct res_change c[] = { put("b.txt", "a new bravo", 9), del("d.txt"), put("fresh.txt", "hi", 9) };
	struct res_change after_crash = put("later.txt", "later", 10);

	for (int step = RES_STEP_DATA; step <= RES_STEP_SYNC_HEADER + 1; step++) {
		GHashTable *old = snap_of_items(base, G_N_ELEMENTS(base));
		GHashTable *fresh = snap_of_items(base, G_N_ELEMENTS(base));
		struct res_commit_options opt = { .align = 1, .fault = stop_at, .fault_ctx = &step };
		struct res_error err = { 0 };
		char *path = h_write_file(fx.dir, "crash.res", orig->data, orig->len);
		int rc = commit_path(path, c, G_N_ELEMENTS(c), &opt, &err);

		snap_put(fresh, "b.txt", H_STR("a new bravo"), 9);
		g_hash_table_remove(fresh, "d.txt");
		snap_put(fresh, "fresh.txt", H_STR("hi"), 9);
		if (step <= RES_STEP_SYNC_HEADER) {
			cr_assert_eq(rc, -1, "step %d", step);
			cr_assert_eq(err.code, ECANCELED, "step %d: %s", step, err.msg);
		} else {
			cr_assert_eq(rc, 0, "%s", err.msg);
		}
		expect_archive(path, step < RES_STEP_SYNC_HEADER ? old : fresh);

		/* the next commit starts from whichever state that was */
		opt.fault = NULL;
		cr_assert_eq(commit_path(path, &after_crash, 1, &opt, &err), 0, "%s", err.msg);
		snap_put(step < RES_STEP_SYNC_HEADER ? old : fresh, "later.txt", H_STR("later"), 10);
		expect_archive(path, step < RES_STEP_SYNC_HEADER ? old : fresh);
		g_hash_table_destroy(old);
		g_hash_table_destroy(fresh);
		g_free(path);
	}
	g_byte_array_unref(orig);
}

static int flush_fails_at(void *ctx, int step)
{
	return step == *(int *)ctx ? RES_FAULT_EIO : 0;
}

/* The header's flush fails (a disk's EIO, ENOSPC on thin storage): the
 * commit reports it, and the file shows the old archive again, not the
 * new one the error says was not committed (it stayed, and a power loss
 * could take it back later).  The next commit works. */
Test(commit, a_failed_header_flush_puts_the_old_header_back)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change c = put("b.txt", "a new bravo", 9);
	int step = RES_STEP_SYNC_HEADER;
	struct res_commit_options opt = { .align = 1, .fault = flush_fails_at, .fault_ctx = &step };
	struct res_error err = { 0 };

	cr_assert_eq(commit_path(fx.path, &c, 1, &opt, &err), -1);
	cr_assert_eq(err.code, EIO, "%s", err.msg);
	expect_archive(fx.path, want);
	cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 0, "%s", err.msg);
	snap_put(want, "b.txt", H_STR("a new bravo"), 9);
	expect_archive(fx.path, want);
	g_hash_table_destroy(want);
}

/* A commit with nothing to change flushes all the same, and says when
 * that fails: after an earlier failed flush, a save of the same bytes
 * said it saved what might never reach the disk. */
Test(commit, a_commit_with_nothing_to_change_still_flushes)
{
	struct res_change c = put("b.txt", "bravo", 999);
	int step = RES_STEP_SYNC_UNCHANGED;
	struct res_commit_options opt = { .align = 1, .fault = flush_fails_at, .fault_ctx = &step };
	struct res_error err = { 0 };

	c.keep_same = 1;
	step = RES_STEP_SYNC_HEADER; /* a crash point of a commit that writes: not of this one */
	opt.fault = stop_at;
	cr_assert_eq(commit_path(fx.path, &c, 1, &opt, &err), 1, "%s", err.msg);
	step = RES_STEP_SYNC_UNCHANGED;
	opt.fault = stop_at;
	cr_assert_eq(commit_path(fx.path, &c, 1, &opt, &err), 1, "no crash point: %s", err.msg);
	opt.fault = flush_fails_at;
	cr_assert_eq(commit_path(fx.path, &c, 1, &opt, &err), -1);
	cr_assert_eq(err.code, EIO, "%s", err.msg);
	cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 1, "%s", err.msg);
}

/* A crash in the middle of a write: whatever part of the appended bytes
 * reached the file, the header still describes the old archive. */
Test(commit, torn_append_is_dead_space)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change c = put("b.txt", "bravo two", 2);
	struct res_error err = { 0 };
	int fd = open(fx.path, O_WRONLY | O_APPEND | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "\xff\xff\xff half a table", 17), 17);
	close(fd);
	expect_archive(fx.path, want);
	cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 0, "%s", err.msg);
	snap_put(want, "b.txt", H_STR("bravo two"), 2);
	expect_archive(fx.path, want);
	g_hash_table_destroy(want);
}

/* A write that fails (here: past a file size limit, as on a full disk)
 * leaves the old archive and takes back what it appended. */
Test(commit, failed_write_takes_back_the_append)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	GByteArray *before = file_bytes(fx.path), *after;
	char big[5000];
	struct res_change c = { "b.txt", 5, RES_PUT, (const unsigned char *)big, sizeof big, 1, NULL, 0, 0 };
	struct res_error err = { 0 };
	struct rlimit old, small;

	memset(big, 'b', sizeof big);
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	small = old;
	small.rlim_cur = before->len + 1000;
	signal(SIGXFSZ, SIG_IGN);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
	cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), -1);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	cr_assert_eq(err.code, EFBIG, "%s", err.msg);
	after = file_bytes(fx.path);
	cr_assert(before->len == after->len && memcmp(before->data, after->data, after->len) == 0,
		  "the file is not as it was (%u bytes, was %u)", after->len, before->len);
	expect_archive(fx.path, want);
	g_byte_array_unref(before);
	g_byte_array_unref(after);
	g_hash_table_destroy(want);
}

/* ---- refusals ----------------------------------------------------------- */

Test(commit, refuses_bad_changes_and_damaged_archives)
{
	static const struct h_file broken[] = { { "a", "x", 1, -1, 0 } };
	GByteArray *bad = h_archive(broken, 1);
	char *bad_path;
	struct res_change neg = { "x\xe0\xc0\xff\xdf\xfd\xdd", 7, RES_PUT, (const unsigned char *)"1", 1, 0, NULL, 0, 0 };
	struct res_change empty = { "", 0, RES_PUT, (const unsigned char *)"1", 1, 0, NULL, 0, 0 };
	struct res_change op = { "a", 1, 99, NULL, 0, 0, NULL, 0, 0 };
	struct res_change ok = put("a", "fine", 1);
	struct res_error err = { 0 };

	cr_assert_eq(commit_path(fx.path, &neg, 1, NULL, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert(strstr(err.msg, "negative"), "%s", err.msg);
	cr_assert_eq(commit_path(fx.path, &empty, 1, NULL, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert_eq(commit_path(fx.path, &op, 1, NULL, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	{
		char *over = g_strnfill(RES_NAME_MAX + 1, 'a');
		struct res_change too_long = put(over, "1", 1), renamed = { "a", 1, RES_RENAME, NULL, 0, 0, over,
									      RES_NAME_MAX + 1, 0 };

		cr_assert_eq(commit_path(fx.path, &too_long, 1, NULL, &err), -1);
		cr_assert_eq(err.code, ENAMETOOLONG, "%s", err.msg);
		cr_assert_eq(commit_path(fx.path, &renamed, 1, NULL, &err), -1);
		cr_assert_eq(err.code, ENAMETOOLONG, "%s", err.msg);
		g_free(over);
	}

	h_put_u32(bad, 16 + 1 + 8, 1000); /* the entry's data offset, past the end */
	bad_path = h_write_file(fx.dir, "bad.res", bad->data, bad->len);
	cr_assert_eq(commit_path(bad_path, &ok, 1, NULL, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert(strstr(err.msg, "damaged"), "%s", err.msg);
	g_free(bad_path);
	g_byte_array_unref(bad);
}

Test(commit, replaced_file_is_stale)
{
	struct res_change c = put("a.txt", "x", 1);
	struct res_error err = { 0 };
	int fd = open(fx.path, O_RDWR | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(unlink(fx.path), 0); /* what a compaction's rename does to it */
	cr_assert_eq(res_commit(fd, &c, 1, NULL, &err), -1);
	cr_assert_eq(err.code, ESTALE, "%s", err.msg);
	close(fd);
}

/* Whether another open file description could take the archive's lock now. */
static int lock_is_free(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), is_free;

	cr_assert_geq(fd, 0);
	is_free = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);
	return is_free;
}

/* A commit releases its lock on return; with caller_locks the caller's
 * lock is kept, so what it reads of the file afterwards (the stamps a save
 * reports) is still under the lock. */
Test(commit, the_lock_is_released_unless_the_caller_holds_it)
{
	struct res_change c = put("a.txt", "first", 1);
	struct res_commit_options held = { .align = 1, .caller_locks = 1 };
	struct res_error err = { 0 };
	int fd = open(fx.path, O_RDWR | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(res_commit(fd, &c, 1, NULL, &err), 0, "%s", err.msg);
	cr_assert(lock_is_free(fx.path), "the commit let its lock go");
	cr_assert_eq(flock(fd, LOCK_EX), 0);
	c = put("a.txt", "second", 2);
	cr_assert_eq(res_commit(fd, &c, 1, &held, &err), 0, "%s", err.msg);
	cr_assert_not(lock_is_free(fx.path), "the caller's lock is still held after the commit");
	close(fd);
	cr_assert(lock_is_free(fx.path));
}

Test(commit, refuses_to_pass_4_gib)
{
	struct res_change c = put("big.txt", "0123456789abcdef0123456789", 1);
	struct res_error err = { 0 };
	GByteArray *before = file_bytes(fx.path);
	int fd = open(fx.path, O_RDWR | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	/* dead space up to just below 4 GiB: a hole, it costs no disk */
	cr_assert_eq(ftruncate(fd, (off_t)UINT32_MAX - 16), 0);
	cr_assert_eq(res_commit(fd, &c, 1, NULL, &err), -1);
	cr_assert_eq(err.code, EFBIG, "%s", err.msg);
	cr_assert(strstr(err.msg, "compact"), "%s", err.msg);
	cr_assert_eq(ftruncate(fd, (off_t)before->len), 0);
	close(fd);
	g_byte_array_unref(before);
}

/* ---- rebuild and compact ------------------------------------------------ */

Test(commit, rebuild_of_a_nested_window)
{
	struct res_error err = { 0 };
	GByteArray *a = h_pack(base, G_N_ELEMENTS(base), 1, 1, &err), *outer = g_byte_array_new();
	GByteArray *out = g_byte_array_new();
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_change c[] = { put("dir\\c.txt", "changed", 5), del("b.txt") };
	struct res_window w;
	struct res_table t;
	char *path;
	int fd;

	/* the archive as an entry at offset 100 of something bigger */
	h_put(outer, 0, "garbage before", 14);
	h_put(outer, 100, a->data, a->len);
	h_put(outer, 100 + a->len, "garbage after", 13);
	fd = h_memfd(outer->data, outer->len);
	w = (struct res_window){ fd, 100, a->len };

	cr_assert_eq(res_rebuild(&w, NULL, 0, NULL, out, &err), 1, "%s", err.msg);
	cr_assert_eq(out->len, a->len, "no change: the same packer layout");
	cr_assert_eq(memcmp(out->data, a->data, a->len), 0);

	cr_assert_eq(res_rebuild(&w, c, 2, NULL, out, &err), 0, "%s", err.msg);
	snap_put(want, "dir\\c.txt", H_STR("changed"), 5);
	g_hash_table_remove(want, "b.txt");
	path = h_write_file(fx.dir, "rebuilt.res", out->data, out->len);
	expect_archive(path, want);
	cr_assert_eq(offset_of(want, "a.txt"), offset_of(want, "d.txt"), "sharing survives a rebuild");
	cr_assert_eq(res_table_parse(out->data, out->len, &t, &err), 0);
	cr_assert_eq((uint64_t)t.hdr.table_offset + 22u * t.hdr.count + t.hdr.names_len, out->len,
		     "nothing but the archive");
	res_table_free(&t);

	close(fd);
	g_free(path);
	g_hash_table_destroy(want);
	g_byte_array_unref(a);
	g_byte_array_unref(outer);
	g_byte_array_unref(out);
}

Test(commit, compact_reclaims_dead_space)
{
	GHashTable *want = snap_of_items(base, G_N_ELEMENTS(base));
	struct res_error err = { 0 };
	struct stat st0, st1;
	char big[5000];

	memset(big, 'q', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	cr_assert_eq(chmod(fx.path, 0640), 0);
	for (uint32_t i = 0; i < 10; i++) {
		struct res_change c = put("b.txt", big + i, i);

		cr_assert_eq(commit_path(fx.path, &c, 1, NULL, &err), 0, "%s", err.msg);
	}
	snap_put(want, "b.txt", big + 9, strlen(big + 9), 9);
	expect_archive(fx.path, want);
	cr_assert_eq(stat(fx.path, &st0), 0);
	cr_assert_gt(st0.st_size, 40000, "ten versions of b.txt");

	cr_assert_eq(res_compact(fx.path, &err), 0, "%s", err.msg);
	cr_assert_eq(stat(fx.path, &st1), 0);
	expect_archive(fx.path, want);
	cr_assert_lt(st1.st_size, 6000, "%lld bytes after compaction", (long long)st1.st_size);
	cr_assert_eq(st1.st_mode & 07777, 0640, "mode %o", st1.st_mode & 07777);
	cr_assert_eq(offset_of(want, "a.txt"), offset_of(want, "d.txt"), "sharing survives compaction");

	/* no temporary file left */
	{
		GDir *d = g_dir_open(fx.dir, 0, NULL);
		const char *name;
		int files = 0;

		while ((name = g_dir_read_name(d)))
			files++;
		g_dir_close(d);
		cr_assert_eq(files, 1);
	}
	g_hash_table_destroy(want);
}

Test(commit, compact_of_a_compact_archive_keeps_it)
{
	GByteArray *before = file_bytes(fx.path), *after;
	struct res_error err = { 0 };

	cr_assert_eq(res_compact(fx.path, &err), 0, "%s", err.msg);
	after = file_bytes(fx.path);
	cr_assert(before->len == after->len && memcmp(before->data, after->data, after->len) == 0,
		  "a packed archive is already compact");
	g_byte_array_unref(before);
	g_byte_array_unref(after);
}

/* Root may write anything, yet a read-only archive is left alone, as the
 * mount leaves it; a compaction replaces the file, which took leave to
 * write its folder only. */
Test(commit, compact_refuses_an_archive_without_write_permission)
{
	GByteArray *before = file_bytes(fx.path), *after;
	struct res_error err = { 0 };

	cr_assert_eq(chmod(fx.path, 0444), 0);
	cr_assert_eq(res_compact(fx.path, &err), -1);
	cr_assert_eq(err.code, EACCES, "%s", err.msg);
	after = file_bytes(fx.path);
	cr_assert(before->len == after->len && memcmp(before->data, after->data, after->len) == 0);
	g_byte_array_unref(before);
	g_byte_array_unref(after);
}

/* A damaged archive is refused, and what the refusal had read is freed
 * (a leak LeakSanitizer sees in the sanitizer run). */
Test(commit, compact_refuses_a_damaged_archive)
{
	/* one entry "x" whose 100 bytes would lie at 1000, past the end */
	static const unsigned char damaged[] = "<\xe2\x9c\x01\x01\x00\x00\x00\x10\x00\x00\x00\x01\x00\x00\x00"
		"\xff\xff\xff\xff\x64\x00\x00\x00\xe8\x03\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00"
		"x";
	char *path = h_write_file(fx.dir, "damaged.res", damaged, sizeof damaged - 1);
	struct res_error err = { 0 };

	cr_assert_eq(res_compact(path, &err), -1);
	cr_assert_eq(err.code, EINVAL, "%s", err.msg);
	cr_assert(strstr(err.msg, "damaged"), "%s", err.msg);
	g_free(path);
}

/* Names in dir other than keep. */
static unsigned others_in(const char *dir, const char *keep)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *name;
	unsigned n = 0;

	cr_assert_not_null(d);
	while ((name = g_dir_read_name(d)))
		n += strcmp(name, keep) != 0;
	g_dir_close(d);
	return n;
}

/* A replacement keeps the mode, and the owner and group where the caller
 * may give them (root here: the owner of a game's config.reg is the
 * player, not the mount's user); through a link it replaces the link's
 * target; it leaves no temporary, when put in place or dropped. */
Test(replace, keeps_mode_owner_and_links_and_leaves_nothing)
{
	char *dir = h_tmpdir(), *sub = g_build_filename(dir, "profile", NULL), *target, *link, *got = NULL;
	struct replacement r;
	struct res_error err = { 0 };
	struct stat st;

	cr_assert_eq(mkdir(sub, 0755), 0);
	target = h_write_file(sub, "config.reg", "old", 3);
	link = g_build_filename(dir, "config.reg", NULL);
	cr_assert_eq(symlink(target, link), 0);
	cr_assert_eq(chmod(target, 0640), 0);
	if (geteuid() == 0)
		cr_assert_eq(chown(target, 4321, 4322), 0);

	cr_assert_eq(replace_begin(&r, link, 0644, &err), 0, "%s", err.msg);
	cr_assert_eq(write(r.fd, "dropped", 7), 7);
	replace_abort(&r);
	cr_assert(g_file_get_contents(target, &got, NULL, NULL));
	cr_assert_str_eq(got, "old");
	g_free(got);
	cr_assert_eq(others_in(sub, "config.reg"), 0, "nothing left after a drop");

	cr_assert_eq(replace_begin(&r, link, 0644, &err), 0, "%s", err.msg);
	cr_assert_eq(write(r.fd, "new", 3), 3);
	cr_assert_eq(replace_commit(&r, &err), 0, "%s", err.msg);
	cr_assert_eq(lstat(link, &st), 0);
	cr_assert(S_ISLNK(st.st_mode), "the link stays a link");
	cr_assert(g_file_get_contents(target, &got, NULL, NULL));
	cr_assert_str_eq(got, "new");
	g_free(got);
	cr_assert_eq(stat(target, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0640);
	if (geteuid() == 0)
		cr_assert(st.st_uid == 4321 && st.st_gid == 4322, "owner %u:%u", (unsigned)st.st_uid,
			  (unsigned)st.st_gid);
	cr_assert_eq(others_in(sub, "config.reg"), 0, "nothing left after the replacement");
	g_free(target);
	g_free(link);
	g_free(sub);
	h_tmpdir_remove(dir);
}

/* A POSIX ACL as the kernel stores it in system.posix_acl_access: the
 * owner rw, user 4321 r, the group r, mask r, others nothing. */
static const unsigned char acl_blob[] = {
	2, 0, 0, 0,                                    /* version */
	1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,             /* USER_OBJ rw- */
	2, 0, 4, 0, 0xe1, 0x10, 0, 0,                   /* USER 4321 r-- */
	4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,             /* GROUP_OBJ r-- */
	0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,          /* MASK r-- */
	0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,          /* OTHER --- */
};

/* The extended attributes of the file replaced go to the new one, an ACL
 * among them; the ACL's mask stays the mode's group bits. */
Test(replace, keeps_extended_attributes_and_the_acl)
{
	char *dir = h_tmpdir(), *path = h_write_file(dir, "config.reg", "old", 3), value[64];
	struct replacement r;
	struct res_error err = { 0 };
	struct stat st;
	ssize_t n;

	if (setxattr(path, "user.eifs-test", "kept", 4, 0) < 0 && errno == ENOTSUP) {
		h_tmpdir_remove(dir);
		cr_skip_test("no user extended attributes on the file system of %s", dir);
	}
	cr_assert_eq(setxattr(path, "system.posix_acl_access", acl_blob, sizeof acl_blob, 0), 0, "%s",
		     strerror(errno));
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640, "the ACL set the mode to 0640, not 0%o", st.st_mode & 0777);

	cr_assert_eq(replace_begin(&r, path, 0644, &err), 0, "%s", err.msg);
	cr_assert_eq(write(r.fd, "new", 3), 3);
	cr_assert_eq(replace_commit(&r, &err), 0, "%s", err.msg);

	n = getxattr(path, "user.eifs-test", value, sizeof value);
	cr_assert(n == 4 && memcmp(value, "kept", 4) == 0, "user.eifs-test kept (%zd)", n);
	n = getxattr(path, "system.posix_acl_access", value, sizeof value);
	cr_assert(n == (ssize_t)sizeof acl_blob && memcmp(value, acl_blob, sizeof acl_blob) == 0,
		  "the ACL kept (%zd bytes)", n);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0640);
	g_free(path);
	h_tmpdir_remove(dir);
}

/* A process that dies while it writes the new contents leaves nothing in
 * the folder: the temporary has no name until the rename is near (a kill
 * left a hidden .NAME.eifs-XXXXXX there, and a compaction's full-size copy
 * showed in the mount as a second archive). */
Test(replace, a_process_killed_while_writing_leaves_nothing)
{
	char *dir = h_tmpdir(), *path = h_write_file(dir, "big.res", "old", 3);
	pid_t pid = fork();
	int status;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct replacement r;
		struct res_error err = { 0 };

		if (replace_begin(&r, path, 0644, &err) == 0 && write(r.fd, "half", 4) == 4)
			raise(SIGKILL);
		_exit(1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "the child was killed while writing");
	cr_assert_eq(others_in(dir, "big.res"), 0, "nothing left by the killed process");
	g_free(path);
	h_tmpdir_remove(dir);
}

/* The data of the entry the game's lookup finds for name. */
static char *game_reads(const char *path, const char *name)
{
	GByteArray *a = file_bytes(path);
	struct res_table t;
	struct res_error err = { 0 };
	int64_t i;
	char *data;

	cr_assert_eq(res_table_parse(a->data, a->len, &t, &err), 0, "%s", err.msg);
	i = res_lookup(&t, name, strlen(name));
	cr_assert_geq(i, 0, "%s not found", name);
	data = g_strndup((const char *)a->data + t.entries[i].offset, t.entries[i].length);
	res_table_free(&t);
	g_byte_array_unref(a);
	return data;
}

Test(commit, two_entries_of_one_name_are_left_as_the_game_reads_them)
{
	/* "other" in slot 0; "dup" twice: the game's chain starts at slot 2
	 * (329 % 3), which holds "second" and links to slot 1, "first" */
	static const unsigned char raw[] = "<\xe2\x9c\x01\x03\x00\x00\x00\x20\x00\x00\x00\x0b\x00\x00\x00"
		"otherfirstsecond"
		"\xff\xff\xff\xff\x05\x00\x00\x00\x10\x00\x00\x00\x01\x00\x00\x00\x05\x00\x00\x00\x00\x00"
		"\xff\xff\xff\xff\x05\x00\x00\x00\x15\x00\x00\x00\x01\x00\x00\x00\x03\x00\x05\x00\x00\x00"
		"\x01\x00\x00\x00\x06\x00\x00\x00\x1a\x00\x00\x00\x01\x00\x00\x00\x03\x00\x08\x00\x00\x00"
		"otherdupdup";
	char *path = h_write_file(fx.dir, "dup.res", raw, sizeof raw - 1), *got;
	struct res_change c = put("other", "new", 9);
	struct res_change of_dup[] = { put("dup", "x", 9), del("dup"), ren("dup", "single"), ren("other", "dup") };
	struct res_error err = { 0 };
	GByteArray *before, *after;

	got = game_reads(path, "dup");
	cr_assert_str_eq(got, "second");
	g_free(got);
	/* an unrelated change: the new table still leads the game to "second" */
	cr_assert_eq(commit_path(path, &c, 1, NULL, &err), 0, "%s", err.msg);
	got = game_reads(path, "dup");
	cr_assert_str_eq(got, "second");
	g_free(got);
	got = game_reads(path, "other");
	cr_assert_str_eq(got, "new");
	g_free(got);
	/* a change of "dup" itself could hit either: refused, nothing written */
	before = file_bytes(path);
	for (size_t k = 0; k < G_N_ELEMENTS(of_dup); k++) {
		memset(&err, 0, sizeof err);
		cr_assert_eq(commit_path(path, &of_dup[k], 1, NULL, &err), -1, "change %zu", k);
		cr_assert_eq(err.code, EPERM, "change %zu: %s", k, err.msg);
		cr_assert(strstr(err.msg, "two entries of that name"), "%s", err.msg);
	}
	after = file_bytes(path);
	cr_assert_eq(after->len, before->len);
	cr_assert_eq(memcmp(after->data, before->data, after->len), 0, "the archive is untouched");
	g_byte_array_unref(before);
	g_byte_array_unref(after);
	g_free(path);
}
