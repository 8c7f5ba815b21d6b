/* Write commands: put, rm, compact.  The archive file on disk changes in
 * place and crash-safely (save.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>

#include "cli.h"
#include "log.h"
#include "res.h"
#include "res_commit.h"
#include "save.h"
#include "tree.h"
#include "views.h"

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

/* Test hook, not a user option: EIFS_FAULT_STEP=N stops res_commit before
 * step N (res_commit.h), as a crash there would (tests/commit.sh). */
static int fault_at_env_step(void *ctx, int step)
{
	return step == *(const int *)ctx;
}

/* Carries one change out to the archive file arg lies in, to the entry
 * op->path (below the file) or, when that is NULL, the one arg names. */
static int run_job(const char *arg, struct save_op *op)
{
	struct res_commit_options opt = { .align = 1 };
	const char *fault = getenv("EIFS_FAULT_STEP");
	int fault_step = fault ? atoi(fault) : 0;
	struct res_error err = { 0 };
	char *file = archive_file(arg);
	int rc;

	if (!file) {
		fprintf(stderr, "eifs: %s: no archive file on this path\n", arg);
		return EXIT_NO_SOURCE;
	}
	if (fault_step) {
		opt.fault = fault_at_env_step;
		opt.fault_ctx = &fault_step;
	}
	if (!op->path)
		op->path = arg + strlen(file);
	rc = save_archive(file, op, 1, &opt, &err, NULL);
	if (rc < 0)
		fprintf(stderr, "eifs: %s: %s\n", arg, err.msg);
	g_free(file);
	return rc < 0 ? EXIT_PROBLEMS : EXIT_OK; /* 1: it already was so */
}

/* ---- views --------------------------------------------------------------- */

/* The path of n below the root of its tree, as save_op wants it. */
static char *path_below_root(const struct tree_node *n)
{
	GString *s = g_string_new(NULL);

	for (; n->parent; n = n->parent) {
		g_string_prepend(s, n->name);
		g_string_prepend_c(s, '/');
	}
	return g_string_free(s, FALSE);
}

/* When arg names a view in its archive (x.ini beside x.reg), what putting
 * text there means: the source the text stands for, in *source_path and
 * *source (both the caller's), as a save through a mount makes it.
 * Returns 0 (a view, or no view and nothing set: an entry is put), or -1
 * after saying why not (a view that is not editable, text that does not
 * parse).  A real entry of that name is an entry, not a view. */
static int view_put(const char *arg, const unsigned char *text, size_t len, char **source_path,
		    GByteArray **source)
{
	char *file = archive_file(arg), *inside;
	struct format_error ferr = { 0 };
	struct tree_node *n = NULL;
	struct tree *t = NULL;
	int err = 0, rc = 0;

	if (!file || !views_may_name(arg)) {
		g_free(file);
		return 0; /* an entry; run_job tells when there is no archive */
	}
	inside = g_strdelimit(g_strdup(arg + strlen(file)), "\\", '/');
	/* the save reads the archive again and warns of what it finds */
	log_set_quiet(1);
	t = tree_open(file, &err);
	if (t) /* a new entry's name resolves to nothing: put as an entry */
		n = tree_resolve(t, tree_root(t), inside, &err);
	if (n && n->kind == NODE_VIEW) {
		if (!view_is_editable(n->view)) {
			fprintf(stderr, "eifs: put: %s: a view (%s) made from its source, not saved to it:"
				" put the source instead\n", arg, view_type_label(n->view));
			rc = -1;
		} else if (!(*source = view_to_source(n->view, text, len, tree_file_size(t, view_source(n)), &ferr))) {
			/* the message names the line */
			fprintf(stderr, "eifs: put: %s: %s; the archive is untouched\n", arg, ferr.msg);
			rc = -1;
		} else {
			*source_path = path_below_root(view_source(n));
		}
	}
	log_set_quiet(0);
	if (t)
		tree_free(t);
	g_free(inside);
	g_free(file);
	return rc;
}

/* ---- put, rm, compact ---------------------------------------------------- */

static int read_whole(int fd, GByteArray *buf)
{
	unsigned char chunk[65536];
	ssize_t n;

	while ((n = read(fd, chunk, sizeof chunk)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		/* an entry's limit, and the array's: past it glib aborts */
		if ((uint64_t)buf->len + (uint64_t)n > UINT32_MAX)
			return -EFBIG;
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

/* A regular FILE of size bytes, read whole into memory of exactly that
 * size (grown as it is read, an array would take up to twice as much),
 * which *buf then holds; a FILE that shrank meanwhile gives what it still
 * held. */
static int read_sized(int fd, uint64_t size, GByteArray **buf)
{
	unsigned char *data;
	size_t got = 0;

	if (size > UINT32_MAX)
		return -EFBIG; /* an entry's limit */
	data = g_try_malloc(size ? size : 1);
	if (!data)
		return -ENOMEM;
	while (got < size) {
		ssize_t n = read(fd, data + got, size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;

			g_free(data);
			return -err;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	g_byte_array_unref(*buf);
	*buf = g_byte_array_new_take(data, got);
	return 0;
}

/* Reads FILE (its mtime is the entry's) or standard input (now).  Read,
 * not mapped: a FILE another program truncates meanwhile would end put
 * with SIGBUS. */
static int put_input(const char *src, struct save_op *j, GByteArray **buf)
{
	const char *what = !src || strcmp(src, "-") == 0 ? NULL : src;
	int fd = what ? open(what, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
	struct stat st;
	int rc;

	if (fd < 0 || (what && fstat(fd, &st) < 0)) {
		fprintf(stderr, "eifs: put: %s: %s\n", src, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	rc = what && S_ISREG(st.st_mode) ? read_sized(fd, (uint64_t)st.st_size, buf) : read_whole(fd, *buf);
	if (what)
		close(fd);
	if (rc < 0) {
		fprintf(stderr, "eifs: put: %s: %s%s\n", what ? what : "standard input", strerror(-rc),
			rc == -EFBIG ? " (an entry holds at most 4294967295 bytes)" : "");
		return -1;
	}
	j->data = (*buf)->data;
	j->len = (*buf)->len;
	j->mtime = what ? (uint32_t)st.st_mtime : (uint32_t)time(NULL);
	return 0;
}

int cmd_put(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "time", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	struct save_op j = { .op = RES_PUT };
	GByteArray *buf = g_byte_array_new(), *source = NULL;
	char *source_path = NULL;
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
	status = put_input(argc == 2 ? argv[1] : NULL, &j, &buf) < 0 ? EXIT_PROBLEMS : EXIT_OK;
	if (fixed_time >= 0)
		j.mtime = (uint32_t)fixed_time;
	if (status == EXIT_OK && view_put(argv[0], j.data, j.len, &source_path, &source) < 0)
		status = EXIT_PROBLEMS;
	if (source) {
		/* as a save through a mount: the same bytes leave the source
		 * as it is, timestamp included, unless --time asks; and a
		 * source gone since is not made anew */
		j.path = source_path;
		j.data = source->data;
		j.len = source->len;
		j.keep_same = fixed_time < 0;
		j.must_exist = 1;
	}
	if (status == EXIT_OK)
		status = run_job(argv[0], &j);
	if (source)
		g_byte_array_unref(source);
	g_free(source_path);
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
		struct save_op j = { .op = RES_DELETE };
		int s = run_job(argv[i], &j);

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
