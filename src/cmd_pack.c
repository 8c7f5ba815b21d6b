/* eifs pack DIR OUT.res: every file below DIR becomes an entry named by its
 * path, with '\' between directories, in cp1251. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib.h>

#include "cli.h"
#include "cp1251.h"
#include "res.h"
#include "replace.h"
#include "res_write.h"

struct pack_list {
	GArray *items;       /* struct res_pack_item */
	GPtrArray *owned;    /* names and paths to free */
	int64_t fixed_time;  /* -1: each file's mtime */
	int errors;
	/* OUT may lie in DIR: it and its temporaries are not packed */
	int have_out;        /* OUT exists: out is it */
	struct stat out;
	int have_out_dir;    /* out_dir is the folder OUT is written in */
	struct stat out_dir;
	char *tmp_prefix;    /* ".NAME.eifs-", the temporaries' names (replace.c) */
};

static void add_file(struct pack_list *l, const char *path, const char *rel, const struct stat *st)
{
	GString *name = g_string_new(NULL);
	char *stored = g_strdelimit(g_strdup(rel), "/", '\\');
	size_t bad = 0;
	struct res_pack_item it = { 0 };

	if (utf8_to_cp1251(stored, strlen(stored), name, &bad) < 0) {
		fprintf(stderr, "eifs: pack: %s: byte %zu of the name has no cp1251 form\n", path, bad);
		l->errors++;
		g_string_free(name, TRUE);
		g_free(stored);
		return;
	}
	g_free(stored);
	it.name_len = name->len;
	it.name = g_string_free(name, FALSE);
	it.path = g_strdup(path);
	it.fd = -1;
	it.length = (uint64_t)st->st_size;
	it.listed_ctime = st->st_ctim;
	it.mtime = (uint32_t)(l->fixed_time >= 0 ? l->fixed_time : st->st_mtime);
	g_ptr_array_add(l->owned, it.name);
	g_ptr_array_add(l->owned, (char *)it.path);
	g_array_append_val(l->items, it);
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* What OUT is before the pack: the file a link leads to, which is what
 * is replaced, and the folder its temporaries are made in. */
static void find_out(struct pack_list *l, const char *out)
{
	char *real = realpath(out, NULL);
	char *path = real ? g_strdup(real) : g_strdup(out);
	char *dir = g_path_get_dirname(path), *base = g_path_get_basename(path);

	l->have_out = stat(path, &l->out) == 0;
	l->have_out_dir = stat(dir, &l->out_dir) == 0;
	l->tmp_prefix = g_strconcat(".", base, ".eifs-", NULL);
	free(real);
	g_free(path);
	g_free(dir);
	g_free(base);
}

/* OUT is replaced, which its folder's permission alone would allow: as
 * put and compact do, pack leaves alone an OUT that has no write
 * permission bits (root too) or that the caller may not write. */
static int out_writable(const struct pack_list *l, const char *out)
{
	int code = 0;

	if (l->have_out && !(l->out.st_mode & 0222))
		code = EACCES;
	else if (l->have_out && faccessat(AT_FDCWD, out, W_OK, AT_EACCESS) < 0)
		code = errno;
	if (code)
		fprintf(stderr, "eifs: pack: %s: not writable (%s); it is left as it is\n", out, strerror(code));
	return !code;
}

/* Whether the file name in the folder dir is OUT or a temporary of a
 * pack to OUT: with OUT inside DIR, a second pack would nest the first
 * one's archive in the new one. */
static const char *own_output(const struct pack_list *l, const struct stat *dir, const char *name,
			      const struct stat *st)
{
	if (l->have_out && same_file(st, &l->out))
		return "the archive being written";
	if (l->have_out_dir && same_file(dir, &l->out_dir) && g_str_has_prefix(name, l->tmp_prefix))
		return "a temporary of a pack to that archive";
	return NULL;
}

static void walk(struct pack_list *l, const char *dir, const struct stat *dir_st, const char *rel);

/* A link's stat failed so: it leads to no file (a dangling link, a loop
 * of links), rather than to one that cannot be read. */
static int leads_nowhere(int err)
{
	return err == ENOENT || err == ENOTDIR || err == ELOOP;
}

static void walk_entry(struct pack_list *l, const char *path, const char *sub, const char *name,
		       const struct stat *dir_st)
{
	struct stat st, lst = { 0 };
	int err = lstat(path, &lst) < 0 || stat(path, &st) < 0 ? errno : 0;
	const char *own;

	if (err && S_ISLNK(lst.st_mode) && leads_nowhere(err)) {
		/* the mount does not show it either */
		fprintf(stderr, "eifs: pack: warning: %s: symbolic link to nothing (%s) skipped\n", path,
			strerror(err));
	} else if (err) {
		fprintf(stderr, "eifs: pack: %s: %s\n", path, strerror(err));
		l->errors++;
	} else if (S_ISDIR(st.st_mode) && S_ISLNK(lst.st_mode)) {
		/* a link may lead back up the tree: never followed */
		fprintf(stderr, "eifs: pack: warning: %s: symbolic link to a folder skipped\n", path);
	} else if (S_ISDIR(st.st_mode)) {
		walk(l, path, &st, sub);
	} else if (S_ISREG(st.st_mode) && (own = own_output(l, dir_st, name, &st))) {
		fprintf(stderr, "eifs: pack: note: %s: %s, not packed\n", path, own);
	} else if (S_ISREG(st.st_mode)) {
		add_file(l, path, sub, &st);
	}
}

static void walk(struct pack_list *l, const char *dir, const struct stat *dir_st, const char *rel)
{
	GDir *d = g_dir_open(dir, 0, NULL);
	const char *name;

	if (!d) {
		fprintf(stderr, "eifs: pack: %s: %s\n", dir, strerror(errno));
		l->errors++;
		return;
	}
	while ((name = g_dir_read_name(d))) {
		char *path = g_build_filename(dir, name, NULL);
		char *sub = *rel ? g_strconcat(rel, "/", name, NULL) : g_strdup(name);

		walk_entry(l, path, sub, name, dir_st);
		g_free(path);
		g_free(sub);
	}
	g_dir_close(d);
}

/* Two files that get the same name in the archive (a file named a\b
 * beside a folder a holding b): the game and eifs would find only one,
 * and check rejects the archive, so the pack fails. */
static int refuse_identical_names(struct pack_list *l)
{
	GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal); /* name: path */
	int dups = 0;

	for (guint i = 0; i < l->items->len; i++) {
		const struct res_pack_item *it = &g_array_index(l->items, struct res_pack_item, i);
		const char *other = g_hash_table_lookup(seen, it->name);

		if (other) {
			fprintf(stderr, "eifs: pack: %s and %s: identical names in the archive; rename one\n",
				other, it->path);
			dups++;
		} else {
			g_hash_table_insert(seen, it->name, (char *)it->path);
		}
	}
	g_hash_table_destroy(seen);
	l->errors += dups;
	return dups;
}

static int warn_case_duplicates(const struct res_pack_item *items, guint n)
{
	int dups = 0;

	/* packer order puts case variants next to each other */
	for (guint i = 1; i < n; i++)
		if (res_name_equal(items[i - 1].name, items[i - 1].name_len, items[i].name, items[i].name_len)) {
			fprintf(stderr, "eifs: pack: warning: \"%.*s\" and \"%.*s\" differ only in case; the game finds one of them\n",
				(int)items[i - 1].name_len, items[i - 1].name, (int)items[i].name_len, items[i].name);
			dups++;
		}
	return dups;
}

/* Writes next to OUT and renames over it only when complete (replace.h),
 * so that a failed or interrupted pack never leaves a half archive under
 * OUT, nor a temporary beside it. */
static int write_archive(const char *out, struct pack_list *l, const struct res_pack_options *opt)
{
	struct res_error err = { 0 };
	struct replacement r;
	mode_t mask = umask(0);
	int rc;

	umask(mask);
	rc = replace_begin(&r, out, 0644 & ~mask, &err);
	if (rc == 0) {
		rc = res_pack_write(r.fd, (struct res_pack_item *)(void *)l->items->data, l->items->len, opt, &err);
		if (rc == 0)
			rc = replace_commit(&r, &err);
		else
			replace_abort(&r);
	}
	if (rc < 0 && err.offset)
		fprintf(stderr, "eifs: pack: %s: offset %llu: %s\n", out, (unsigned long long)err.offset, err.msg);
	else if (rc < 0)
		fprintf(stderr, "eifs: pack: %s: %s\n", out, err.msg);
	return rc;
}

/* --time takes Unix seconds that fit the table's u32. */
static int parse_time(const char *arg, int64_t *out)
{
	guint64 v;

	if (!g_ascii_string_to_unsigned(arg, 10, 0, UINT32_MAX, &v, NULL)) {
		fprintf(stderr, "eifs pack: --time wants Unix seconds from 0 to %u, not '%s'\n", UINT32_MAX, arg);
		return -1;
	}
	*out = (int64_t)v;
	return 0;
}

int cmd_pack(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dedup", no_argument, NULL, 'D' },
		{ "no-align", no_argument, NULL, 'A' },
		{ "time", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	struct res_pack_options opt = { .align = 1, .dedup = 0 };
	struct pack_list l = { 0 };
	struct stat st;
	int c, rc;

	l.fixed_time = -1;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc + 1, argv - 1, "", longopts, NULL)) != -1) {
		if (c == 'D')
			opt.dedup = 1;
		else if (c == 'A')
			opt.align = 0;
		else if (c == 'T' && parse_time(optarg, &l.fixed_time) < 0)
			return EXIT_USAGE;
		else if (c == '?') {
			fprintf(stderr, "eifs pack: unknown option '%s'\n", argv[optind - 2]);
			return EXIT_USAGE;
		}
	}
	argc -= optind - 1;
	argv += optind - 1;
	if (argc != 2) {
		fprintf(stderr, "eifs pack: usage: eifs pack [--dedup] [--no-align] [--time T] DIR OUT.res\n");
		return EXIT_USAGE;
	}
	if (stat(argv[0], &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "eifs: pack: %s: not a folder\n", argv[0]);
		return EXIT_NO_SOURCE;
	}
	l.items = g_array_new(FALSE, TRUE, sizeof(struct res_pack_item));
	l.owned = g_ptr_array_new_with_free_func(g_free);
	find_out(&l, argv[1]);
	if (!out_writable(&l, argv[1])) {
		l.errors++;
	} else {
		walk(&l, argv[0], &st, "");
		refuse_identical_names(&l);
	}
	rc = l.errors ? -1 : write_archive(argv[1], &l, &opt);
	if (rc == 0)
		warn_case_duplicates((struct res_pack_item *)(void *)l.items->data, l.items->len);
	g_array_unref(l.items);
	g_ptr_array_unref(l.owned);
	g_free(l.tmp_prefix);
	return rc == 0 ? EXIT_OK : EXIT_PROBLEMS;
}
