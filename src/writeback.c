/* Planning and running changes made through the mount: see writeback.h. */
#define _GNU_SOURCE
#include "writeback.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib.h>

#include "edit.h"
#include "io.h"
#include "replace.h"
#include "save.h"
#include "views.h"

struct wb_plan {
	char *file;           /* the archive file, or the loose file to replace */
	int replace;          /* a loose file: data replaces it whole */
	char *unlink_after;   /* a loose file to remove once the save is done */
	GArray *ops;          /* struct save_op, paths below file */
	GPtrArray *owned;     /* what the ops point at */
	GByteArray *data;     /* replace: the new contents */
	int unchanged;        /* nothing to do */
	unsigned char expect[32]; /* wb_plan_expect's SHA-256, when has_expect */
	int has_expect;
};

static struct wb_plan *plan_new(void)
{
	struct wb_plan *p = g_new0(struct wb_plan, 1);

	p->ops = g_array_new(FALSE, TRUE, sizeof(struct save_op));
	p->owned = g_ptr_array_new_with_free_func(g_free);
	return p;
}

void wb_plan_free(struct wb_plan *p)
{
	if (!p)
		return;
	g_free(p->file);
	g_free(p->unlink_after);
	g_array_unref(p->ops);
	g_ptr_array_unref(p->owned);
	if (p->data)
		g_byte_array_unref(p->data);
	g_free(p);
}

const char *wb_plan_file(const struct wb_plan *p)
{
	return p->file;
}

const unsigned char *wb_plan_view_bytes(const struct wb_plan *p, size_t *len)
{
	*len = p->data ? p->data->len : 0;
	return p->data ? p->data->data : NULL;
}

void wb_plan_expect(struct wb_plan *p, const unsigned char sha256[32])
{
	memcpy(p->expect, sha256, sizeof p->expect);
	p->has_expect = 1;
	for (guint i = 0; i < p->ops->len; i++) {
		struct save_op *o = &g_array_index(p->ops, struct save_op, i);

		if (o->op == RES_PUT)
			o->expect_sha256 = p->expect;
	}
}

/* A loose file's check of wb_plan_expect, right before it is replaced
 * (no lock guards it: other programs may write it at any time). */
static int loose_as_expected(const struct wb_plan *p, struct res_error *err)
{
	gchar *now = NULL;
	gsize len = 0;
	GError *gerr = NULL;
	int same;

	if (!g_file_get_contents(p->file, &now, &len, &gerr)) {
		int code = gerr->domain == G_FILE_ERROR && gerr->code == G_FILE_ERROR_NOENT ? ESTALE : EIO;

		res_fail(err, code, 0, "%s: cannot read it to compare: %s", p->file, gerr->message);
		g_error_free(gerr);
		return -1;
	}
	same = len == p->data->len && memcmp(now, p->data->data, len) == 0;
	if (!same) {
		struct edit_digest d;

		edit_digest_of(&d, now, len);
		same = memcmp(d.sha256, p->expect, sizeof d.sha256) == 0;
	}
	g_free(now);
	if (!same)
		return res_fail(err, ESTALE, 0, "%s: changed since it was opened for writing (through another name "
				"of it, such as its INI view, or by another program); not saved, so as not to undo "
				"that change", p->file);
	return 0;
}

/* -1 (EACCES) when the loose file to replace has no write permission bit:
 * its mode may have changed since it was listed, and the replacement
 * needs only the folder's permission, root's none. */
static int loose_read_only(const char *file, struct res_error *err)
{
	struct stat st;

	if (stat(file, &st) == 0 && !(st.st_mode & 0222))
		return res_fail(err, EACCES, 0, "%s: the file has no write permission bit; it is left as it is", file);
	return 0;
}

static struct wb_plan *refuse(struct wb_plan *p)
{
	wb_plan_free(p);
	return NULL;
}

static const char *own(struct wb_plan *p, char *s)
{
	g_ptr_array_add(p->owned, s);
	return s;
}

/* The path of n below its unit (the archive file), and the file's path. */
static char *path_in_unit(const struct tree_node *unit, const struct tree_node *n)
{
	GString *s = g_string_new(NULL);

	for (; n != unit; n = n->parent) {
		if (s->len)
			g_string_prepend_c(s, '/');
		g_string_prepend(s, n->name);
	}
	return g_string_free(s, FALSE);
}

static int in_archive(const struct tree_node *n)
{
	return n->kind == NODE_ENTRY || n->kind == NODE_VDIR
	       || (n->kind == NODE_ARCHIVE && n->parent && n->parent->kind != NODE_FOLDER);
}

/* An archive file's plan; NULL unless n lies in a writable archive. */
static struct wb_plan *archive_plan(struct tree_node *n, struct res_error *err)
{
	struct tree_node *unit = tree_unit(n);
	struct wb_plan *p;

	if (!unit || unit->kind != NODE_ARCHIVE) {
		res_fail(err, EXDEV, 0, "not inside an archive");
		return NULL;
	}
	if (!unit->src->writable) {
		res_fail(err, EROFS, 0, "%s is read-only", unit->src->path);
		return NULL;
	}
	p = plan_new();
	p->file = g_strdup(unit->src->path);
	return p;
}

static void add_op(struct wb_plan *p, int op, const char *path, const char *to,
		   const unsigned char *data, size_t len, uint32_t mtime)
{
	struct save_op o = { .op = op, .path = path, .to = to, .data = data, .len = len, .mtime = mtime };

	g_array_append_val(p->ops, o);
}

/* Reads a file node whole (entries and loose files of text size). */
static GByteArray *read_whole(struct tree *t, struct tree_node *n, struct res_error *err)
{
	uint64_t size = tree_file_size(t, n);
	GByteArray *b = g_byte_array_sized_new((guint)size);
	ssize_t got;

	g_byte_array_set_size(b, (guint)size);
	got = tree_read(t, n, b->data, b->len, 0);
	if (got < 0) {
		res_fail(err, (int)-got, 0, "cannot read %s: %s", n->name, strerror((int)-got));
		g_byte_array_unref(b);
		return NULL;
	}
	g_byte_array_set_size(b, (guint)got);
	return b;
}

/* Whether n holds exactly these bytes now. */
static int holds(struct tree *t, struct tree_node *n, const unsigned char *data, size_t len)
{
	unsigned char buf[65536];
	uint64_t done = 0;

	if (tree_file_size(t, n) != len)
		return 0;
	while (done < len) {
		size_t want = MIN(sizeof buf, len - done);
		ssize_t got = tree_read(t, n, buf, want, done);

		if (got <= 0 || memcmp(buf, data + done, (size_t)got) != 0)
			return 0;
		done += (uint64_t)got;
	}
	return 1;
}

/* The source bytes the saved text of view type stands for. */
static GByteArray *source_of_text(struct tree *t, struct tree_node *view, const unsigned char *text, size_t len,
				  struct res_error *err)
{
	struct format_error ferr = { 0 };
	GByteArray *bytes;

	bytes = view_to_source(view->view, text, len, tree_file_size(t, view_source(view)), &ferr);

	/* a value the source cannot hold is a bad value all the same */
	if (!bytes)
		res_fail(err, ferr.code == EILSEQ || ferr.code == EACCES || ferr.code == EFBIG ? ferr.code : EINVAL,
		     ferr.offset, "%s", ferr.msg);
	return bytes;
}

/* Source src of a view (an entry, or a loose .reg) gets bytes;
 * unchanged bytes keep everything as it is, timestamp included. */
static struct wb_plan *put_source(struct tree *t, struct tree_node *src, GByteArray *bytes, uint32_t mtime,
				  struct res_error *err)
{
	struct wb_plan *p;

	if (src->kind == NODE_PLAIN) {
		p = plan_new();
		p->file = tree_real_path(t, src);
		p->replace = 1;
	} else if (!(p = archive_plan(src, err))) {
		g_byte_array_unref(bytes);
		return NULL;
	}
	p->data = bytes;
	if (p->replace) {
		p->unchanged = holds(t, src, bytes->data, bytes->len); /* the file as it is now */
	} else {
		/* whether the entry holds these bytes is decided by the commit,
		 * under the archive's lock: the mount's table may be older than
		 * another program's save */
		add_op(p, RES_PUT, own(p, path_in_unit(tree_unit(src), src)), NULL, bytes->data, bytes->len, mtime);
		g_array_index(p->ops, struct save_op, p->ops->len - 1).keep_same = 1;
	}
	return p;
}

struct wb_plan *wb_put(struct tree *t, struct tree_node *n, const unsigned char *data, size_t len,
		       uint32_t mtime, struct res_error *err)
{
	struct wb_plan *p;

	if (n->kind == NODE_VIEW) {
		GByteArray *bytes = source_of_text(t, n, data, len, err);

		return bytes ? put_source(t, view_source(n), bytes, mtime, err) : NULL;
	}
	if (n->kind != NODE_ENTRY) {
		res_fail(err, EISDIR, 0, "not an entry");
		return NULL;
	}
	p = archive_plan(n, err);
	if (!p)
		return NULL;
	/* the same bytes with a new timestamp (touch) are a change; the
	 * commit compares with what the file holds when it is locked */
	add_op(p, RES_PUT, own(p, path_in_unit(tree_unit(n), n)), NULL, data, len, mtime);
	return p;
}

static char *child_path(struct tree_node *unit, struct tree_node *dir, const char *name)
{
	char *base = path_in_unit(unit, dir);
	char *path = *base ? g_strconcat(base, "/", name, NULL) : g_strdup(name);

	g_free(base);
	return path;
}

struct wb_plan *wb_create(struct tree *t, struct tree_node *dir, const char *name,
			  const unsigned char *data, size_t len, uint32_t mtime, int only_new,
			  struct res_error *err)
{
	int e = 0;
	struct tree_node *there = tree_lookup(t, dir, name, &e);
	struct wb_plan *p;

	if (there && (there->kind == NODE_VIEW || there->kind == NODE_ENTRY) && !only_new)
		return wb_put(t, there, data, len, mtime, err);
	if (there) {
		res_fail(err, tree_is_dir(there) ? EISDIR : EEXIST, 0, "%s is there", name);
		return NULL;
	}
	p = archive_plan(dir, err);
	if (p) {
		add_op(p, RES_PUT, own(p, child_path(tree_unit(dir), dir, name)), NULL, data, len, mtime);
		g_array_index(p->ops, struct save_op, p->ops->len - 1).must_be_new = only_new;
	}
	return p;
}

struct wb_plan *wb_delete(struct tree *t, struct tree_node *n, struct res_error *err)
{
	struct wb_plan *p;

	if (!in_archive(n) || n->kind == NODE_VDIR) {
		res_fail(err, n->kind == NODE_VDIR ? EISDIR : EPERM, 0, "not an entry of an archive");
		return NULL;
	}
	p = archive_plan(n, err);
	if (p)
		add_op(p, RES_DELETE, own(p, path_in_unit(tree_unit(n), n)), NULL, NULL, 0, 0);
	return p;
}

/* Every entry below folder v, renamed from below v to below to. */
static int rename_below(struct tree *t, struct wb_plan *p, struct tree_node *unit, struct tree_node *v,
			const char *to, struct res_error *err)
{
	const struct tree_dir *d;
	int rc = tree_children(t, v, &d);

	if (rc < 0)
		return res_fail(err, -rc, 0, "cannot read %s: %s", v->name, strerror(-rc));
	for (uint32_t i = 0; i < d->count && rc == 0; i++) {
		struct tree_node *c = &d->child[i];
		char *c_to = g_strconcat(to, "/", c->name, NULL);

		if (c->kind == NODE_VDIR)
			rc = rename_below(t, p, unit, c, c_to, err);
		else if (c->kind != NODE_VIEW)
			add_op(p, RES_RENAME, own(p, path_in_unit(unit, c)), own(p, g_strdup(c_to)), NULL, 0, 0);
		g_free(c_to);
	}
	return rc;
}

/* A file saved over an editable view: its contents become the view's
 * source (the REG of an INI), it goes. */
static struct wb_plan *rename_onto_view(struct tree *t, struct tree_node *n, struct tree_node *view,
					struct res_error *err)
{
	GByteArray *text, *bytes;
	struct wb_plan *p;

	if (n->kind != NODE_ENTRY && n->kind != NODE_PLAIN) {
		res_fail(err, EISDIR, 0, "only a file can replace a view");
		return NULL;
	}
	/* the save would write the source and then delete it */
	if (n == view_source(view)) {
		res_fail(err, EPERM, 0, "a file cannot replace its own view");
		return NULL;
	}
	if (tree_file_size(t, n) > VIEW_MAX_TEXT_SOURCE) {
		res_fail(err, EFBIG, 0, "too big for a %s view", view_type_label(view->view));
		return NULL;
	}
	text = read_whole(t, n, err);
	if (!text)
		return NULL;
	bytes = source_of_text(t, view, text->data, text->len, err);
	g_byte_array_unref(text);
	if (!bytes)
		return NULL;
	if ((n->kind == NODE_PLAIN) != (view_source(view)->kind == NODE_PLAIN)
	    || (n->kind == NODE_ENTRY && tree_unit(n) != tree_unit(view))) {
		g_byte_array_unref(bytes);
		res_fail(err, EXDEV, 0, "the file and the view are not in one archive or folder");
		return NULL;
	}
	p = put_source(t, view_source(view), bytes, (uint32_t)n->mtime, err);
	if (!p)
		return NULL;
	p->unchanged = 0; /* the renamed file goes in any case */
	if (n->kind == NODE_PLAIN)
		p->unlink_after = tree_real_path(t, n);
	else
		add_op(p, RES_DELETE, own(p, path_in_unit(tree_unit(n), n)), NULL, NULL, 0, 0);
	return p;
}

struct wb_plan *wb_rename(struct tree *t, struct tree_node *n, struct tree_node *dir, const char *name,
			  struct res_error *err)
{
	struct tree_node *unit = tree_unit(n), *target;
	struct wb_plan *p;
	int e = 0;

	target = tree_lookup(t, dir, name, &e);
	if (target && target->kind == NODE_VIEW && view_is_editable(target->view))
		return rename_onto_view(t, n, target, err);
	if (n->kind == NODE_VIEW || (target && target->kind == NODE_VIEW)) {
		res_fail(err, EPERM, 0, "views are made by eifs: they cannot be renamed or replaced");
		return NULL;
	}
	if (!in_archive(n) || tree_unit(dir) != unit || !(in_archive(dir) || dir == unit)) {
		res_fail(err, EXDEV, 0, "a rename stays inside one archive");
		return NULL;
	}
	if (target && tree_is_dir(target) && !tree_is_dir(n)) {
		res_fail(err, EISDIR, 0, "%s is a folder", name);
		return NULL;
	}
	p = archive_plan(n, err);
	if (!p)
		return NULL;
	if (n->kind == NODE_VDIR) {
		if (rename_below(t, p, unit, n, own(p, child_path(unit, dir, name)), err) < 0)
			return refuse(p);
	} else {
		add_op(p, RES_RENAME, own(p, path_in_unit(unit, n)), own(p, child_path(unit, dir, name)), NULL,
		       0, 0);
	}
	return p;
}

/* ---- running a plan ------------------------------------------------------- */

int wb_replace_file(const char *path, const unsigned char *data, size_t len, struct res_error *err)
{
	struct replacement r;
	int rc;

	if (replace_begin(&r, path, 0644, err) < 0)
		return -1;
	rc = io_write_all(r.fd, data, len);
	if (rc < 0) {
		replace_abort(&r);
		return res_fail(err, -rc, 0, "cannot write the new %s: %s", path, strerror(-rc));
	}
	return replace_commit(&r, err);
}

int wb_run(struct wb_plan *p, const struct res_commit_options *opt, struct res_error *err,
	   struct save_stamps *stamps)
{
	int rc;

	if (p->unchanged)
		return 1;
	if (p->replace && loose_read_only(p->file, err) < 0)
		rc = -1;
	else if (p->replace && p->has_expect && loose_as_expected(p, err) < 0)
		rc = -1;
	else if (p->replace)
		rc = wb_replace_file(p->file, p->data->data, p->data->len, err);
	else
		rc = save_archive(p->file, (const struct save_op *)(void *)p->ops->data, p->ops->len, opt, err,
				  stamps);
	if (rc >= 0 && p->unlink_after && unlink(p->unlink_after) < 0 && errno != ENOENT)
		rc = res_fail(err, errno, 0, "saved, but cannot remove %s: %s", p->unlink_after, strerror(errno));
	return rc;
}
