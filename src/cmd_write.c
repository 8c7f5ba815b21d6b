/* Write commands: put, rm, compact.  The archive file on disk changes in
 * place through res_commit.  An entry of a nested archive changes by
 * rebuilding each archive around it, innermost first (res_rebuild), whose
 * new bytes become one change of its parent, up to the archive file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>

#include "cli.h"
#include "cp1251.h"
#include "names.h"
#include "res.h"
#include "res_commit.h"

/* The longest prefix of arg that is an archive file on disk, or NULL. */
static char *archive_file(const char *arg)
{
	char *p = g_strdup(arg);

	for (;;) {
		struct stat st;
		char *slash;

		if (stat(p, &st) == 0) {
			if (S_ISREG(st.st_mode) && cli_has_res_magic(p))
				return p;
			break; /* a folder or a plain file: no archive holds the path */
		}
		slash = strrchr(p, '/');
		if (!slash || slash == p)
			break;
		*slash = '\0';
	}
	g_free(p);
	return NULL;
}

static struct tree_node *enclosing_archive(struct tree_node *n)
{
	for (n = n->parent; n && n->kind != NODE_ARCHIVE; n = n->parent)
		;
	return n;
}

/* The '/'-separated path of n below archive a, with more appended. */
static char *path_below(const struct tree_node *a, const struct tree_node *n, const char *more)
{
	GString *s = g_string_new(more);

	for (; n != a; n = n->parent) {
		if (s->len)
			g_string_prepend_c(s, '/');
		g_string_prepend(s, n->name);
	}
	return g_string_free(s, FALSE);
}

/* Where ARCHIVE/PATH points inside the archive file: the innermost archive
 * and the path inside it.  The entry itself need not exist (put makes it),
 * the archive and backslash folders it is in need not either. */
struct target {
	struct tree_node *archive;
	char *rel;
	int exists;
};

/* One step down the path: into an existing child, else onto the part of
 * the path that does not exist yet (rest). */
static int step_down(struct tree *t, struct tree_node **n, const char *comp, GString *rest)
{
	struct tree_node *child;
	int err = 0;

	if (strcmp(comp, "..") == 0)
		return -EINVAL;
	if (!rest->len) {
		if (!tree_is_dir(*n))
			return -ENOTDIR;
		child = tree_lookup(t, *n, comp, &err);
		if (child) {
			*n = child;
			return 0;
		}
		if (err != ENOENT)
			return -err;
	}
	g_string_append_printf(rest, "%s%s", rest->len ? "/" : "", comp);
	return 0;
}

static int locate(struct tree *t, const char *inside, struct target *out)
{
	gchar **comps = g_strsplit_set(inside, "/\\", -1);
	struct tree_node *n = tree_root(t);
	GString *rest = g_string_new(NULL);
	int rc = 0;

	for (gchar **c = comps; rc == 0 && *c; c++)
		if (**c && strcmp(*c, ".") != 0)
			rc = step_down(t, &n, *c, rest);
	g_strfreev(comps);
	out->exists = rest->len == 0;
	if (rc == 0 && out->exists && (n->kind == NODE_VDIR || !n->parent))
		rc = -EISDIR; /* a folder inside, or the archive file itself */
	if (rc == 0 && !out->exists && n->kind != NODE_ARCHIVE && n->kind != NODE_VDIR)
		rc = -ENOTDIR;
	if (rc == 0) {
		/* an existing entry (a nested archive too) belongs to the archive
		 * around it; a new one to the deepest existing archive */
		out->archive = out->exists || n->kind != NODE_ARCHIVE ? enclosing_archive(n) : n;
		out->rel = path_below(out->archive, n, rest->str);
	}
	g_string_free(rest, TRUE);
	return rc;
}

static struct res_window window_of(const struct tree_node *a)
{
	return (struct res_window){ a->src->fd, a->offset, a->size };
}

/* The stored name rel refers to in archive a: the name of the entry shown
 * under that path (exact, else ASCII case-insensitively), else rel in
 * cp1251 with '\' between folders.  Returns 0 or a negative errno; *bad
 * gets the offending byte of an EILSEQ. */
static int stored_name(const struct tree_node *a, const char *rel, GString *out, size_t *bad)
{
	struct res_window w = window_of(a);
	struct res_error err = { 0 };
	struct res_table tab;
	GString *shown = g_string_new(NULL);
	int64_t found = -1;
	char *backslashed;
	int rc = 0;

	if (res_table_read(&w, &tab, &err) < 0) {
		g_string_free(shown, TRUE);
		return -err.code;
	}
	for (uint32_t i = 0; i < tab.hdr.count; i++) {
		if (res_entry_faults(&tab, i, a->size) & RES_FAULT_NAME)
			continue;
		g_string_truncate(shown, 0);
		names_display_path(res_entry_name(&tab, i), tab.entries[i].name_len, shown);
		if (strcmp(shown->str, rel) == 0) {
			found = i;
			break;
		}
		if (found < 0 && g_ascii_strcasecmp(shown->str, rel) == 0)
			found = i;
	}
	if (found >= 0) {
		g_string_append_len(out, res_entry_name(&tab, (uint32_t)found), tab.entries[found].name_len);
	} else {
		backslashed = g_strdelimit(g_strdup(rel), "/", '\\');
		if (utf8_to_cp1251(backslashed, strlen(backslashed), out, bad) < 0)
			rc = -EILSEQ;
		g_free(backslashed);
	}
	g_string_free(shown, TRUE);
	res_table_free(&tab);
	return rc;
}

/* ---- one change, carried out to the archive file ------------------------- */

struct job {
	const char *arg;
	int op;
	const unsigned char *data;
	size_t len;
	uint32_t mtime;
};

/* Test hook, not a user option: EIFS_FAULT_STEP=N stops res_commit before
 * step N (res_commit.h), as a crash there would (tests/commit.sh). */
static int fault_at_env_step(void *ctx, int step)
{
	return step == *(const int *)ctx;
}

static void report(const struct job *j, const struct res_error *err)
{
	fprintf(stderr, "eifs: %s: offset %llu: %s\n", j->arg, (unsigned long long)err->offset, err->msg);
}

/* The change of the entry in its innermost archive; its name goes to name. */
static int first_change(const struct job *j, const struct target *tg, GString *name,
			struct res_change *ch)
{
	size_t bad = 0;
	int rc = stored_name(tg->archive, tg->rel, name, &bad);

	if (rc == -EILSEQ)
		fprintf(stderr, "eifs: %s: byte %zu of \"%s\" has no cp1251 form: %s\n", j->arg, bad,
			tg->rel, strerror(EILSEQ));
	else if (rc < 0)
		fprintf(stderr, "eifs: %s: %s\n", j->arg, strerror(-rc));
	if (rc == 0 && j->op == RES_DELETE && !tg->exists) {
		fprintf(stderr, "eifs: %s: %s\n", j->arg, strerror(ENOENT));
		rc = -ENOENT;
	}
	*ch = (struct res_change){ name->str, name->len, j->op, j->data, j->len, j->mtime };
	return rc;
}

/* Rebuilds the nested archives from the innermost out; *ch becomes the
 * change of the archive file, its bytes kept in bufs and names.  Returns
 * 0, 1 when nothing changed, or -1 after saying why. */
static int rebuild_outward(const struct job *j, struct tree_node *a, struct res_change *ch,
			   GPtrArray *bufs, GPtrArray *names)
{
	static const struct res_pack_options opt = { .align = 1, .dedup = 0 };

	for (struct tree_node *parent; (parent = enclosing_archive(a)); a = parent) {
		struct res_window w = window_of(a);
		struct res_error err = { 0 };
		GByteArray *out = g_byte_array_new();
		GString *name = g_string_new(NULL);
		char *rel = path_below(parent, a, "");
		size_t bad = 0;
		int rc = res_rebuild(&w, ch, 1, &opt, out, &err);

		g_ptr_array_add(bufs, out);
		g_ptr_array_add(names, name);
		if (rc < 0)
			report(j, &err);
		else if (rc == 0 && stored_name(parent, rel, name, &bad) < 0) {
			fprintf(stderr, "eifs: %s: cannot name %s in its archive\n", j->arg, rel);
			rc = -1;
		}
		g_free(rel);
		if (rc != 0)
			return rc;
		*ch = (struct res_change){ name->str, name->len, RES_PUT, out->data, out->len,
					   (uint32_t)time(NULL) };
	}
	return 0;
}

static void string_free(gpointer s)
{
	g_string_free(s, TRUE);
}

/* Carries the job out on the archive file held open and locked as fd.
 * Returns an exit status, or -ESTALE to start again on a replaced file. */
static int run_locked(const struct job *j, const char *file, int fd)
{
	struct res_commit_options opt = { .align = 1 };
	const char *fault = getenv("EIFS_FAULT_STEP");
	int fault_step = fault ? atoi(fault) : 0, err_code = 0, rc;
	struct tree *t = tree_open(file, &err_code);
	struct target tg = { 0 };
	struct res_change ch;
	struct res_error err = { 0 };
	GString *name = g_string_new(NULL);
	GPtrArray *bufs = g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
	GPtrArray *names = g_ptr_array_new_with_free_func(string_free);
	int status = EXIT_PROBLEMS;

	if (fault_step) {
		opt.fault = fault_at_env_step;
		opt.fault_ctx = &fault_step;
	}
	if (!t) {
		status = EXIT_NO_SOURCE;
		goto out;
	}
	rc = locate(t, j->arg + strlen(file), &tg);
	if (rc < 0) {
		fprintf(stderr, "eifs: %s: %s\n", j->arg, strerror(-rc));
		goto out;
	}
	if (first_change(j, &tg, name, &ch) < 0)
		goto out;
	rc = rebuild_outward(j, tg.archive, &ch, bufs, names);
	if (rc == 0)
		rc = res_commit(fd, &ch, 1, &opt, &err);
	if (rc < 0 && err.code == ESTALE)
		status = -ESTALE;
	else if (rc < 0 && err.msg[0])
		report(j, &err);
	else if (rc >= 0)
		status = EXIT_OK; /* 1: it already was so */
out:
	g_ptr_array_unref(bufs);
	g_ptr_array_unref(names);
	g_string_free(name, TRUE);
	g_free(tg.rel);
	tree_free(t);
	return status;
}

/* Opens and locks the archive file, then reads it: what the tree shows is
 * what the commit changes.  A compaction may replace the file while we
 * wait for the lock; then the new file is opened. */
static int run_job(const struct job *j)
{
	char *file = archive_file(j->arg);
	int status = EXIT_NO_SOURCE;

	if (!file) {
		fprintf(stderr, "eifs: %s: no archive file on this path\n", j->arg);
		return EXIT_NO_SOURCE;
	}
	for (int attempt = 0; attempt < 8; attempt++) {
		int fd = open(file, O_RDWR | O_CLOEXEC);
		struct stat st;

		if (fd < 0) {
			fprintf(stderr, "eifs: %s: %s\n", file, strerror(errno));
			break;
		}
		while (flock(fd, LOCK_EX) < 0 && errno == EINTR)
			;
		status = fstat(fd, &st) == 0 && st.st_nlink == 0 ? -ESTALE : run_locked(j, file, fd);
		close(fd);
		if (status != -ESTALE)
			break;
	}
	if (status == -ESTALE) {
		fprintf(stderr, "eifs: %s: the archive keeps being replaced\n", j->arg);
		status = EXIT_PROBLEMS;
	}
	g_free(file);
	return status;
}

/* ---- put, rm, compact ---------------------------------------------------- */

static int read_stdin(GByteArray *buf)
{
	unsigned char chunk[65536];
	ssize_t n;

	while ((n = read(0, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		g_byte_array_append(buf, chunk, (guint)n);
	}
	return 0;
}

static int parse_time(const char *arg, int64_t *out)
{
	guint64 v;

	if (!g_ascii_string_to_unsigned(arg, 10, 0, UINT32_MAX, &v, NULL)) {
		fprintf(stderr, "eifs put: --time wants Unix seconds from 0 to %u, not '%s'\n", UINT32_MAX, arg);
		return -1;
	}
	*out = (int64_t)v;
	return 0;
}

/* Reads FILE (mapped, its mtime is the entry's) or standard input (now). */
static int put_input(const char *src, struct job *j, GMappedFile **map, GByteArray *buf)
{
	GError *ge = NULL;
	struct stat st;

	if (!src || strcmp(src, "-") == 0) {
		int rc = read_stdin(buf);

		if (rc < 0) {
			fprintf(stderr, "eifs: put: standard input: %s\n", strerror(-rc));
			return -1;
		}
		j->data = buf->data;
		j->len = buf->len;
		j->mtime = (uint32_t)time(NULL);
		return 0;
	}
	if (stat(src, &st) < 0 || !(*map = g_mapped_file_new(src, FALSE, &ge))) {
		fprintf(stderr, "eifs: put: %s: %s\n", src, ge ? ge->message : strerror(errno));
		g_clear_error(&ge);
		return -1;
	}
	j->data = (const unsigned char *)g_mapped_file_get_contents(*map);
	j->len = g_mapped_file_get_length(*map);
	j->mtime = (uint32_t)st.st_mtime;
	return 0;
}

int cmd_put(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "time", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	struct job j = { .op = RES_PUT };
	GMappedFile *map = NULL;
	GByteArray *buf = g_byte_array_new();
	int64_t fixed_time = -1;
	int c, status;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc + 1, argv - 1, "", longopts, NULL)) != -1) {
		if (c == 'T' && parse_time(optarg, &fixed_time) < 0) {
			g_byte_array_unref(buf);
			return EXIT_USAGE;
		}
		if (c == '?') {
			fprintf(stderr, "eifs put: unknown option '%s'\n", argv[optind - 2]);
			g_byte_array_unref(buf);
			return EXIT_USAGE;
		}
	}
	argc -= optind - 1;
	argv += optind - 1;
	if (argc < 1 || argc > 2) {
		fprintf(stderr, "eifs put: usage: eifs put [--time T] ARCHIVE/PATH [FILE|-]\n");
		g_byte_array_unref(buf);
		return EXIT_USAGE;
	}
	j.arg = argv[0];
	status = put_input(argc == 2 ? argv[1] : NULL, &j, &map, buf) < 0 ? EXIT_PROBLEMS : EXIT_OK;
	if (fixed_time >= 0)
		j.mtime = (uint32_t)fixed_time;
	if (status == EXIT_OK)
		status = run_job(&j);
	if (map)
		g_mapped_file_unref(map);
	g_byte_array_unref(buf);
	return status;
}

int cmd_rm(int argc, char **argv)
{
	int status = EXIT_OK;

	if (argc < 1) {
		fprintf(stderr, "eifs rm: which ARCHIVE/PATH?\n");
		return EXIT_USAGE;
	}
	for (int i = 0; i < argc; i++) {
		struct job j = { .arg = argv[i], .op = RES_DELETE };
		int s = run_job(&j);

		if (s != EXIT_OK)
			status = s;
	}
	return status;
}

int cmd_compact(int argc, char **argv)
{
	int status = EXIT_OK;

	if (argc < 1) {
		fprintf(stderr, "eifs compact: which archive?\n");
		return EXIT_USAGE;
	}
	for (int i = 0; i < argc; i++) {
		struct res_error err = { 0 };
		struct stat st;

		if (stat(argv[i], &st) < 0 || !S_ISREG(st.st_mode) || !cli_has_res_magic(argv[i])) {
			fprintf(stderr, "eifs: compact: %s: not an archive file\n", argv[i]);
			status = EXIT_NO_SOURCE;
		} else if (res_compact(argv[i], &err) < 0) {
			fprintf(stderr, "eifs: compact: %s: offset %llu: %s\n", argv[i],
				(unsigned long long)err.offset, err.msg);
			status = EXIT_PROBLEMS;
		}
	}
	return status;
}
