/* Offline commands: ls, cat, extract, check.  They walk the same tree the
 * mount shows, so scripts and tests see exactly what a mount would. */
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
#include "io.h"
#include "mmp.h"
#include "names.h"
#include "res.h"
#include "res_check.h"
#include "view_cache.h"
#include "views.h"

int cli_has_res_magic(const char *path)
{
	unsigned char magic[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int ok = fd >= 0 && read(fd, magic, 4) == 4 && res_is_magic(magic, 4);

	if (fd >= 0)
		close(fd);
	return ok;
}

struct tree_node *cli_open_path(const char *arg, struct tree **tree)
{
	char *disk;
	char *inside;
	struct tree_node *n;
	struct stat st;
	int err = 0;

	if (!strchr(arg, '/') && strcmp(arg, ".") != 0 && !(stat(arg, &st) == 0 && (S_ISDIR(st.st_mode) || cli_has_res_magic(arg)))) {
		/* a file named without a folder (a view, a plain file): look in "." */
		char *in_dot = g_strconcat("./", arg, NULL);
		struct tree_node *found = cli_open_path(in_dot, tree);

		g_free(in_dot);
		return found;
	}
	disk = g_strdup(arg);
	/* the longest prefix on disk that is a folder or an archive */
	while (stat(disk, &st) < 0 || (S_ISREG(st.st_mode) && !cli_has_res_magic(disk))) {
		char *slash = strrchr(disk, '/');

		if (!slash || slash == disk) {
			fprintf(stderr, "eifs: %s: %s\n", arg, strerror(ENOENT));
			g_free(disk);
			return NULL;
		}
		*slash = '\0';
	}
	inside = g_strdelimit(g_strdup(arg + strlen(disk)), "\\", '/');
	*tree = tree_open(disk, &err);
	n = *tree ? tree_resolve(*tree, tree_root(*tree), inside, &err) : NULL;
	if (*tree && !n)
		fprintf(stderr, "eifs: %s: %s\n", arg, strerror(err));
	g_free(inside);
	g_free(disk);
	return n;
}

/* ---- ls ----------------------------------------------------------------- */

static void print_long(const struct tree_node *n, const char *path)
{
	char mode[11] = "----------", when[32];
	static const char rwx[] = "rwxrwxrwx";
	struct tm tm;
	time_t t = (time_t)n->mtime;

	if (tree_is_dir(n))
		mode[0] = 'd';
	for (int i = 0; i < 9; i++)
		if (n->mode & (0400u >> i))
			mode[i + 1] = rwx[i];
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s %12llu %s %s\n", mode, (unsigned long long)n->size, when, path);
}

/* The offline commands convert views as the mount does: on demand. */
static struct view_cache *views;

static void print_node(struct tree *t, struct tree_node *n, const char *path, int lng)
{
	if (lng && n->kind == NODE_VIEW)
		view_cache_size(views, t, n);
	if (lng)
		print_long(n, path);
	else
		puts(path);
}

static int by_name(const void *a, const void *b)
{
	return names_order((*(struct tree_node *const *)a)->name, (*(struct tree_node *const *)b)->name);
}

/* The children of a directory in the listing's order; g_free it. */
static struct tree_node **sorted_children(const struct tree_dir *d)
{
	struct tree_node **sorted = g_new(struct tree_node *, d->count ? d->count : 1);

	for (uint32_t i = 0; i < d->count; i++)
		sorted[i] = &d->child[i];
	qsort(sorted, d->count, sizeof *sorted, by_name);
	return sorted;
}

struct listing {
	int lng, recursive;
	GArray *folders; /* struct folder_id: the folders on the current path */
};

/* A folder as the disk knows it: links may show it under other paths. */
struct folder_id {
	dev_t dev;
	ino_t ino;
};

static int folder_id(struct tree *t, const struct tree_node *n, struct folder_id *id)
{
	char *path = tree_real_path(t, n);
	struct stat st;
	int rc = stat(path, &st);

	g_free(path);
	if (rc == 0)
		*id = (struct folder_id){ st.st_dev, st.st_ino };
	return rc;
}

/* Whether ls -R goes into n.  Not into a folder already on the path being
 * listed: a link up the tree (a/up -> ..) leads there again, and the
 * listing would go round until names grew too long or files ran out.
 * Other links to folders are followed, as the mount shows them. */
static int may_enter(struct tree *t, struct tree_node *n, const struct listing *ls)
{
	struct folder_id id = { 0 };

	if (n->kind != NODE_FOLDER || folder_id(t, n, &id) < 0)
		return 1;
	for (guint i = 0; i < ls->folders->len; i++) {
		const struct folder_id *a = &g_array_index(ls->folders, struct folder_id, i);

		if (a->dev == id.dev && a->ino == id.ino) {
			char *p = tree_path(n);

			fprintf(stderr, "eifs: ls: %s: a folder being listed already (a link up the tree); not entered\n", p);
			g_free(p);
			return 0;
		}
	}
	return 1;
}

static int list_dir(struct tree *t, struct tree_node *dir, const char *prefix, struct listing *ls)
{
	const struct tree_dir *d;
	struct tree_node **sorted;
	struct folder_id self;
	int rc = tree_children(t, dir, &d), status = EXIT_OK;
	guint depth = ls->folders->len;

	if (rc < 0) {
		char *p = tree_path(dir);

		fprintf(stderr, "eifs: %s: %s\n", p, strerror(-rc));
		g_free(p);
		return EXIT_PROBLEMS;
	}
	if (dir->kind == NODE_FOLDER && folder_id(t, dir, &self) == 0)
		g_array_append_val(ls->folders, self);
	sorted = sorted_children(d);
	for (uint32_t i = 0; i < d->count; i++) {
		struct tree_node *n = sorted[i];
		char *path = *prefix ? g_strconcat(prefix, "/", n->name, NULL) : g_strdup(n->name);

		print_node(t, n, ls->recursive ? path : n->name, ls->lng);
		if (ls->recursive && tree_is_dir(n) && may_enter(t, n, ls) && list_dir(t, n, path, ls) != EXIT_OK)
			status = EXIT_PROBLEMS;
		g_free(path);
	}
	g_free(sorted);
	g_array_set_size(ls->folders, depth);
	return status;
}

int cmd_ls(int argc, char **argv)
{
	struct listing ls = { 0 };
	int opt, status = EXIT_OK;

	optind = 0;
	opterr = 0;
	while ((opt = getopt(argc + 1, argv - 1, "lR")) != -1) {
		if (opt == 'l') {
			ls.lng = 1;
		} else if (opt == 'R') {
			ls.recursive = 1;
		} else {
			fprintf(stderr, "eifs ls: unknown option '-%c'\n", optopt);
			return EXIT_USAGE;
		}
	}
	if (optind - 1 >= argc) {
		fprintf(stderr, "eifs ls: which archive or folder?\n");
		return EXIT_USAGE;
	}
	views = view_cache_new(64u << 20);
	ls.folders = g_array_new(FALSE, FALSE, sizeof(struct folder_id));
	for (int i = optind - 1; i < argc; i++) {
		struct tree *t = NULL;
		struct tree_node *n = cli_open_path(argv[i], &t);

		if (!n)
			status = t ? EXIT_PROBLEMS : EXIT_NO_SOURCE;
		else if (!tree_is_dir(n))
			print_node(t, n, argv[i], ls.lng);
		else if (list_dir(t, n, "", &ls) != EXIT_OK)
			status = EXIT_PROBLEMS;
		tree_free(t);
	}
	g_array_unref(ls.folders);
	view_cache_free(views);
	return status;
}

/* ---- cat ---------------------------------------------------------------- */

/* The bytes of a view, made as the mount makes them. */
static GByteArray *view_bytes(struct tree *t, struct tree_node *n, const char *arg)
{
	struct format_error err = { 0 };
	GByteArray *out = NULL;

	if (view_convert(t, n, &out, &err) < 0) {
		fprintf(stderr, "eifs: %s: cannot make the %s view: offset %llu: %s\n", arg,
			view_type_label(n->view), (unsigned long long)err.offset, err.msg);
		g_byte_array_unref(out);
		return NULL;
	}
	return out;
}

static int write_view(struct tree *t, struct tree_node *n, const char *arg, FILE *to)
{
	GByteArray *out = view_bytes(t, n, arg);
	/* an empty view has no data pointer, which fwrite may not get */
	int ok = out && (out->len == 0 || fwrite(out->data, 1, out->len, to) == out->len);

	if (out && !ok)
		cli_stdout_failed(errno);
	if (out)
		g_byte_array_unref(out);
	return ok ? EXIT_OK : EXIT_PROBLEMS;
}

static int cat_node(struct tree *t, struct tree_node *n, const char *arg)
{
	enum { CHUNK = 1 << 20 };
	char *buf;
	uint64_t off = 0;
	ssize_t got;

	if (n->kind == NODE_VIEW)
		return write_view(t, n, arg, stdout);
	buf = g_malloc(CHUNK);
	while ((got = tree_read(t, n, buf, CHUNK, off)) > 0) {
		if (fwrite(buf, 1, (size_t)got, stdout) != (size_t)got) {
			g_free(buf);
			cli_stdout_failed(errno);
			return EXIT_PROBLEMS;
		}
		off += (uint64_t)got;
	}
	g_free(buf);
	if (got < 0) {
		fprintf(stderr, "eifs: %s: %s\n", arg, strerror((int)-got));
		return EXIT_PROBLEMS;
	}
	return EXIT_OK;
}

int cmd_cat(int argc, char **argv)
{
	int status = EXIT_OK;

	if (argc < 1) {
		fprintf(stderr, "eifs cat: which ARCHIVE/PATH?\n");
		return EXIT_USAGE;
	}
	for (int i = 0; i < argc; i++) {
		struct tree *t = NULL;
		struct tree_node *n = cli_open_path(argv[i], &t);

		if (!n)
			status = t ? EXIT_PROBLEMS : EXIT_NO_SOURCE;
		else if (tree_is_dir(n)) {
			fprintf(stderr, "eifs: %s: %s\n", argv[i], strerror(EISDIR));
			status = EXIT_PROBLEMS;
		} else if (cat_node(t, n, argv[i]) != EXIT_OK)
			status = EXIT_PROBLEMS;
		tree_free(t);
		if (ferror(stdout))
			break; /* nothing more would get there */
	}
	return status;
}

/* ---- convert ------------------------------------------------------------ */

/* The first view made from n (n may be a view itself). */
static struct tree_node *view_of(struct tree *t, struct tree_node *n)
{
	const struct tree_dir *d;

	if (n->kind == NODE_VIEW || !n->parent || tree_children(t, n->parent, &d) < 0)
		return n->kind == NODE_VIEW ? n : NULL;
	for (uint32_t i = 0; i < d->count; i++)
		if (d->child[i].kind == NODE_VIEW && view_source(&d->child[i]) == n)
			return &d->child[i];
	return NULL;
}

/* A mip level other than the base: the PNG of that level of an MMP. */
static GByteArray *mip_level_bytes(struct tree *t, struct tree_node *src, unsigned level, const char *arg)
{
	struct format_error err = { 0 };
	GByteArray *in = g_byte_array_sized_new((guint)src->size), *out = g_byte_array_new();
	ssize_t got;

	g_byte_array_set_size(in, (guint)src->size);
	got = tree_read(t, src, in->data, in->len, 0);
	if ((got < 0 ? format_fail(&err, (int)-got, 0, "%s", g_strerror((int)-got))
		     : mmp_to_png(in->data, (size_t)got, level, out, &err)) < 0) {
		fprintf(stderr, "eifs: %s: level %u: offset %llu: %s\n", arg, level,
			(unsigned long long)err.offset, err.msg);
		g_byte_array_unref(out);
		out = NULL;
	}
	g_byte_array_unref(in);
	return out;
}

static int write_out(const char *path, const GByteArray *data)
{
	FILE *to;
	int err = 0;

	if (strcmp(path, "-") == 0) {
		/* main flushes standard output, and tells of a failure */
		if (data->len == 0 || fwrite(data->data, 1, data->len, stdout) == data->len)
			return EXIT_OK;
		cli_stdout_failed(errno);
		return EXIT_PROBLEMS;
	}
	to = fopen(path, "wb");
	if (!to) {
		fprintf(stderr, "eifs: %s: %s\n", path, strerror(errno));
		return EXIT_PROBLEMS;
	}
	errno = 0;
	if (data->len > 0 && fwrite(data->data, 1, data->len, to) != data->len)
		err = errno ? errno : EIO;
	if (fclose(to) != 0 && !err)
		err = errno;
	if (err)
		fprintf(stderr, "eifs: %s: %s\n", path, strerror(err));
	return err ? EXIT_PROBLEMS : EXIT_OK;
}

static int convert_usage(void)
{
	fprintf(stderr, "eifs convert: usage: eifs convert [--level N] FILE|ARCHIVE/PATH [OUT|-]\n");
	return EXIT_USAGE;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = { { "level", required_argument, NULL, 'l' }, { NULL, 0, NULL, 0 } };
	struct tree *t = NULL;
	struct tree_node *n, *v;
	GByteArray *bytes = NULL;
	guint64 level = 0;
	char *default_name = NULL;
	int c, status = EXIT_PROBLEMS;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc + 1, argv - 1, "", longopts, NULL)) != -1)
		if (c != 'l' || !g_ascii_string_to_unsigned(optarg, 10, 0, 15, &level, NULL))
			return convert_usage();
	argc -= optind - 1;
	argv += optind - 1;
	if (argc < 1 || argc > 2)
		return convert_usage();
	n = cli_open_path(argv[0], &t);
	v = n ? view_of(t, n) : NULL;
	if (!n) {
		tree_free(t);
		return t ? EXIT_PROBLEMS : EXIT_NO_SOURCE;
	}
	if (!v || (level && !names_has_ext(view_source(v)->name, "mmp"))) {
		fprintf(stderr, "eifs: %s: %s\n", argv[0], level ? "no mip levels: not an MMP texture"
								: "no converted view for this file");
	} else {
		/* made whole before OUT is opened: a failure leaves OUT as it was */
		bytes = level ? mip_level_bytes(t, view_source(v), (unsigned)level, argv[0])
			      : view_bytes(t, v, argv[0]);
		if (level)
			default_name = g_strdup_printf("%.*s.mip%u.png", (int)(strlen(v->name) - 4), v->name,
						       (unsigned)level);
	}
	if (bytes)
		status = write_out(argc == 2 ? argv[1] : default_name ? default_name : v->name, bytes);
	if (bytes)
		g_byte_array_unref(bytes);
	g_free(default_name);
	tree_free(t);
	return status;
}

/* ---- extract ------------------------------------------------------------ */

static int copy_out(int in, uint64_t pos, uint64_t len, int out)
{
	char buf[1 << 16];

	while (len > 0) {
		size_t want = len < sizeof buf ? (size_t)len : sizeof buf;
		ssize_t n = pread(in, buf, want, (off_t)pos);
		int rc;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		rc = io_write_all(out, buf, (size_t)n);
		if (rc < 0)
			return rc;
		pos += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* An extract in progress.  Everything below DIR is reached from DIR's
 * descriptor one name at a time, never by a path: a link already in DIR
 * cannot lead a write elsewhere. */
struct extract {
	const char *archive;  /* as named on the command line, for messages */
	const char *dir;      /* DIR, for messages */
	int status;
};

/* A hidden temporary beside name in dfd (O_EXCL: never one that is there,
 * link or not).  The descriptor, or a negative errno; *tmp is its name. */
static int open_temporary(int dfd, const char *name, char **tmp)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		int fd;

		*tmp = g_strdup_printf(".%s.eifs-%08x", name, g_random_int());
		fd = openat(dfd, *tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0) {
			/* in use: replace.c's clean-up of what crashes left
			 * passes over a locked temporary */
			flock(fd, LOCK_EX | LOCK_NB);
			return fd;
		}
		g_free(*tmp);
		*tmp = NULL;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Writes a file node's bytes as name in dfd, with its entry's time.  The
 * bytes go to a temporary renamed over name when whole: whatever name was
 * (a hard link, a symbolic link, a file) is replaced, never written
 * through, and a failure leaves it as it was.  Not flushed to the disk:
 * an extract cut short by a crash is simply made again.  0 or a negative
 * errno. */
static int write_node(int dfd, const char *name, const struct tree_node *n)
{
	struct timespec ts[2] = { { (time_t)n->mtime, 0 }, { (time_t)n->mtime, 0 } };
	char *tmp = NULL;
	int fd = open_temporary(dfd, name, &tmp), rc;

	if (fd < 0)
		return fd;
	rc = copy_out(n->src->fd, n->offset, n->size, fd);
	if (rc == 0 && futimens(fd, ts) < 0)
		rc = -errno;
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc < 0)
		unlinkat(dfd, tmp, 0);
	g_free(tmp);
	return rc;
}

/* Opens (making it first when missing) the folder name in dfd; a symbolic
 * link there is not followed.  The descriptor, or a negative errno, with
 * *is_link set when name is a symbolic link. */
static int enter_folder(int dfd, const char *name, int *is_link)
{
	struct stat st;
	int fd, err;

	*is_link = 0;
	if (mkdirat(dfd, name, 0755) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	err = errno;
	/* with O_DIRECTORY a link fails as ENOTDIR, not ELOOP: ask what it is */
	*is_link = fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
	return -err;
}

static void extract_dir(struct extract *x, struct tree *t, struct tree_node *dir, int dfd, const char *rel);

/* One child of a directory being extracted, rel its path in the archive. */
static void extract_node(struct extract *x, struct tree *t, struct tree_node *n, int dfd, const char *rel)
{
	char *disk = g_build_filename(x->dir, rel, NULL);
	int rc = 0, is_link;

	if (n->kind == NODE_VDIR) {
		int sub = enter_folder(dfd, n->name, &is_link);

		if (sub >= 0) {
			extract_dir(x, t, n, sub, rel);
			close(sub);
		} else {
			fprintf(stderr, "eifs: %s/%s: %s%s%s; nothing in it is extracted\n", x->archive, rel, disk,
				is_link ? " " : ": ", is_link ? "is a symbolic link, not followed" : strerror(-sub));
			x->status = EXIT_PROBLEMS;
		}
	} else if ((n->kind == NODE_ENTRY && !n->faults) || n->kind == NODE_ARCHIVE) {
		/* a nested archive is a file of the archive extracted */
		rc = write_node(dfd, n->name, n);
	} /* views are made from the entries, and damaged entries were reported */
	if (rc < 0) {
		fprintf(stderr, "eifs: %s/%s: %s: %s; not extracted\n", x->archive, rel, disk, strerror(-rc));
		x->status = EXIT_PROBLEMS;
	}
	g_free(disk);
}

/* The directory dir of the archive (rel its path in it, "" for the
 * archive itself) into the folder dfd, by the names the listing shows:
 * the tree's, with case duplicates and clashes of a file and a folder
 * already given names of their own. */
static void extract_dir(struct extract *x, struct tree *t, struct tree_node *dir, int dfd, const char *rel)
{
	const struct tree_dir *d;
	struct tree_node **sorted;
	int rc = tree_children(t, dir, &d);

	if (rc < 0) {
		fprintf(stderr, "eifs: %s%s%s: %s\n", x->archive, *rel ? "/" : "", rel, strerror(-rc));
		x->status = EXIT_PROBLEMS;
		return;
	}
	sorted = sorted_children(d);
	for (uint32_t i = 0; i < d->count; i++) {
		char *path = *rel ? g_strconcat(rel, "/", sorted[i]->name, NULL) : g_strdup(sorted[i]->name);

		extract_node(x, t, sorted[i], dfd, path);
		g_free(path);
	}
	g_free(sorted);
}

static char *default_extract_dir(const char *archive_name)
{
	char *d = g_strdup(archive_name);
	char *dot = strrchr(d, '.');

	if (dot && dot != d)
		*dot = '_';
	else {
		char *x = g_strconcat(d, "_res", NULL);

		g_free(d);
		d = x;
	}
	return d;
}

/* The entries the tree leaves out or cannot read (a name or data outside
 * the archive), each named by its index: the listing cannot show them. */
static int report_damaged(const char *arg, const struct tree_node *a, const struct res_table *tab)
{
	int status = EXIT_OK;

	for (uint32_t i = 0; i < tab->hdr.count; i++) {
		unsigned faults = res_entry_faults(tab, i, a->size);

		if (!faults)
			continue;
		fprintf(stderr, "eifs: %s: entry %u: %s %s; skipped\n", arg, i,
			faults & RES_FAULT_NAME ? "name" : "data",
			faults & RES_FAULT_NAME ? res_name_fault_text(tab, i) : "is outside the archive");
		status = EXIT_PROBLEMS;
	}
	return status;
}

/* DIR, made when missing: the one path followed as given (links too, as
 * the user named it); everything below it is reached from it. */
static int open_extract_dir(const char *dir)
{
	int fd = g_mkdir_with_parents(dir, 0755) < 0 ? -1 : open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		fprintf(stderr, "eifs: %s: %s\n", dir, strerror(errno));
	return fd;
}

int cmd_extract(int argc, char **argv)
{
	struct tree *t = NULL;
	struct tree_node *a;
	struct res_table tab;
	struct res_error err = { 0 };
	struct extract x = { 0 };
	char *dir, *arg;
	int dfd;

	if (argc < 1 || argc > 2) {
		fprintf(stderr, "eifs extract: usage: eifs extract ARCHIVE [DIR]\n");
		return EXIT_USAGE;
	}
	a = cli_open_path(argv[0], &t);
	if (!a || a->kind != NODE_ARCHIVE) {
		if (a)
			fprintf(stderr, "eifs: %s: not an archive\n", argv[0]);
		tree_free(t);
		return a ? EXIT_PROBLEMS : EXIT_NO_SOURCE;
	}
	if (res_table_read(&(struct res_window){ a->src->fd, a->offset, a->size }, &tab, &err) < 0) {
		fprintf(stderr, "eifs: %s: offset %llu: %s\n", argv[0], (unsigned long long)err.offset, err.msg);
		tree_free(t);
		return EXIT_NO_SOURCE;
	}
	/* messages name entries as ARCHIVE/PATH, the form cat takes */
	arg = g_strdup(argv[0]);
	for (size_t len = strlen(arg); len > 1 && arg[len - 1] == '/'; len--)
		arg[len - 1] = '\0';
	x.status = report_damaged(arg, a, &tab);
	res_table_free(&tab);
	dir = argc == 2 ? g_strdup(argv[1]) : default_extract_dir(a->name);
	x.archive = arg;
	x.dir = dir;
	dfd = open_extract_dir(dir);
	if (dfd < 0) {
		x.status = EXIT_PROBLEMS;
	} else {
		extract_dir(&x, t, a, dfd, "");
		close(dfd);
	}
	g_free(dir);
	g_free(arg);
	tree_free(t);
	return x.status;
}

/* ---- check -------------------------------------------------------------- */

struct check_ctx {
	const char *path;
	unsigned problems;
};

static void check_report(void *ctx, uint64_t offset, const char *problem)
{
	struct check_ctx *c = ctx;

	printf("%s: offset %llu: %s\n", c->path, (unsigned long long)offset, problem);
}

static unsigned check_tree(struct tree *t, struct tree_node *n);

static unsigned check_archive(struct tree *t, struct tree_node *a)
{
	struct res_window w = { a->src->fd, a->offset, a->size };
	struct check_ctx c = { tree_path(a), 0 };
	struct res_error err = { 0 };
	struct res_table tab;

	if (res_table_read(&w, &tab, &err) < 0) {
		check_report(&c, err.offset, err.msg);
		c.problems = 1;
	} else {
		c.problems = res_check(&tab, a->size, check_report, &c);
		printf("%s: %u entries, %s\n", c.path, tab.hdr.count,
		       c.problems ? "PROBLEMS" : "ok");
		res_table_free(&tab);
		c.problems += check_tree(t, a);
	}
	g_free((char *)c.path);
	return c.problems;
}

/* A file named as an archive that the tree shows as a file: none (no RES
 * magic) is fine; one with the magic is a problem, and so is one that
 * cannot be read at all, for the tree shows such a file as a plain file
 * too (the open failed: EACCES, EMFILE), and it may well be an archive. */
static unsigned check_archive_named(struct tree *t, struct tree_node *c)
{
	unsigned char magic[4];
	ssize_t got = tree_read(t, c, magic, 4, 0);
	char *p;

	if (got >= 0 && !(got == 4 && res_is_magic(magic, 4)))
		return 0;
	p = tree_path(c);
	if (got < 0)
		printf("%s: cannot be opened: %s\n", p, strerror((int)-got));
	else if (c->depth + 1 > TREE_MAX_DEPTH)
		printf("%s: not checked: an archive nested deeper than %d levels, which eifs does not open\n", p,
		       TREE_MAX_DEPTH);
	else
		printf("%s: has the RES magic but cannot be opened as an archive (the log says why)\n", p);
	g_free(p);
	return 1;
}

/* The archives shown directly in n, nested ones below them; an entry that
 * has the RES magic but could not be opened as an archive counts as a
 * problem too.  Sub-folders of a folder are not entered (eifs(1) says
 * so): links among folders may lead round in circles. */
static unsigned check_tree(struct tree *t, struct tree_node *n)
{
	const struct tree_dir *d;
	unsigned problems = 0;

	if (tree_children(t, n, &d) < 0)
		return 1;
	for (uint32_t i = 0; i < d->count; i++) {
		struct tree_node *c = &d->child[i];

		if (c->kind == NODE_ARCHIVE)
			problems += check_archive(t, c);
		else if (c->kind == NODE_VDIR)
			problems += check_tree(t, c);
		else if (names_is_archive_ext(c->name))
			problems += check_archive_named(t, c);
	}
	return problems;
}

int cmd_check(int argc, char **argv)
{
	int status = EXIT_OK;

	if (argc < 1) {
		fprintf(stderr, "eifs check: which archive?\n");
		return EXIT_USAGE;
	}
	for (int i = 0; i < argc; i++) {
		struct tree *t = NULL;
		struct tree_node *a = cli_open_path(argv[i], &t);

		if (!a) {
			status = t ? EXIT_PROBLEMS : EXIT_NO_SOURCE;
		} else if (!tree_is_dir(a)) {
			fprintf(stderr, "eifs: %s: not an archive or a folder\n", argv[i]);
			status = EXIT_NO_SOURCE;
		} else if (a->kind == NODE_ARCHIVE ? check_archive(t, a) : check_tree(t, a)) {
			status = EXIT_PROBLEMS;
		}
		tree_free(t);
	}
	return status;
}
