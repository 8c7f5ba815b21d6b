/* Saving by path: see save.h.  An entry of a nested archive changes by
 * rebuilding each archive around it, innermost first (res_rebuild), whose
 * new bytes become one change of its parent, up to the archive file, which
 * res_commit changes in place. */
#define _GNU_SOURCE
#include "save.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <glib.h>

#include "cp1251.h"
#include "edit.h"
#include "names.h"
#include "tree.h"

static int fail(struct res_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	err->offset = 0;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
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

/* Where a path points: the innermost archive and the path inside it.  The
 * entry need not exist (a put makes it), nor the backslash folders above. */
struct target {
	struct tree_node *archive;
	char *rel;
	int exists;
	struct tree_node *node;  /* what exists there */
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
	if (rc == 0 && out->exists && n->kind == NODE_VIEW)
		rc = -ENOENT; /* made by eifs, not stored */
	if (rc == 0 && !out->exists && n->kind != NODE_ARCHIVE && n->kind != NODE_VDIR)
		rc = -ENOTDIR;
	if (rc == 0) {
		/* an existing entry (a nested archive too) belongs to the archive
		 * around it; a new one to the deepest existing archive */
		out->archive = out->exists || n->kind != NODE_ARCHIVE ? enclosing_archive(n) : n;
		out->rel = path_below(out->archive, n, rest->str);
		out->node = out->exists ? n : NULL;
	}
	g_string_free(rest, TRUE);
	return rc;
}

static struct res_window window_of(const struct tree_node *a)
{
	return (struct res_window){ a->src->fd, a->offset, a->size };
}

/* The stored name rel refers to in archive a: the name of the entry the
 * tree shows there (node, when it exists: also a "name~TAG" of a case
 * duplicate), else of the entry shown under that path (exact, else ASCII
 * case-insensitively), else rel in cp1251 with '\' between folders. */
static int stored_name(const struct tree_node *a, const char *rel, const struct tree_node *node, GString *out,
		       struct res_error *err)
{
	struct res_window w = window_of(a);
	struct res_table tab;
	GString *shown = g_string_new(NULL);
	int64_t found = -1;
	uint32_t slot;
	size_t bad = 0;
	int rc = 0, node_found;

	if (res_table_read(&w, &tab, err) < 0) {
		g_string_free(shown, TRUE);
		return -1;
	}
	if (node && tree_entry_slot(node, &slot) == 0 && slot < tab.hdr.count
	    && !(res_entry_faults(&tab, slot, a->size) & RES_FAULT_NAME))
		found = slot;
	node_found = found >= 0;
	for (uint32_t i = 0; !node_found && i < tab.hdr.count; i++) {
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
		char *backslashed = g_strdelimit(g_strdup(rel), "/", '\\');

		if (utf8_to_cp1251(backslashed, strlen(backslashed), out, &bad) < 0) {
			rc = fail(err, EILSEQ, "byte %zu of \"%s\" has no cp1251 form", bad, rel);
		} else if (out->len > RES_NAME_MAX) {
			rc = fail(err, ENAMETOOLONG, "\"%s\" is longer than " RES_NAME_MAX_TEXT " bytes", rel);
		} else {
			/* a new name must show as itself, or the file would
			 * turn up under another one (a part over 200 bytes) */
			g_string_truncate(shown, 0);
			names_display_path(out->str, out->len, shown);
			if (strcmp(shown->str, rel) != 0)
				rc = fail(err, strlen(rel) > NAMES_COMPONENT_MAX ? ENAMETOOLONG : EINVAL,
					  "\"%s\" would show as \"%s\"", rel, shown->str);
		}
		g_free(backslashed);
	}
	g_string_free(shown, TRUE);
	res_table_free(&tab);
	return rc;
}

/* Whether node's bytes, in the tree read under the lock, are what the
 * writer's copy began from (expect) or already the new ones: a copy taken
 * before another change (through another name of it, such as its INI
 * view, or by another program) would undo that change. */
static int as_expected(struct tree *t, struct tree_node *node, const struct save_op *op, struct res_error *err)
{
	uint64_t size = node ? tree_file_size(t, node) : 0;
	unsigned char *buf;
	struct edit_digest now;
	ssize_t got;
	int same;

	if (!node)
		return fail(err, EIO, "%s: removed since it was opened for writing; not saved again", op->path);
	buf = g_try_malloc(size + 1);
	if (!buf)
		return fail(err, ENOMEM, "%s: no memory to compare its %llu bytes", op->path, (unsigned long long)size);
	got = tree_read(t, node, buf, size + 1, 0);
	if (got == (ssize_t)size)
		edit_digest_of(&now, buf, size);
	same = got == (ssize_t)size && (memcmp(now.sha256, op->expect_sha256, sizeof now.sha256) == 0
					|| (size == op->len && memcmp(buf, op->data, size) == 0));
	g_free(buf);
	if (got < 0)
		return fail(err, (int)-got, "%s: cannot read it to compare: %s", op->path, strerror((int)-got));
	if (!same)
		return fail(err, ESTALE, "%s: changed since it was opened for writing (through another name of it, "
			    "such as its INI view, or by another program); not saved, so as not to undo that change",
			    op->path);
	return 0;
}

/* ---- one save, on the locked archive file --------------------------------- */

/* A failure that a new try on the file read again would meet again. */
enum { SAVE_FINAL = -2 };

/* What a save holds while it works: the changes of the innermost archive,
 * then of each one around it, and the bytes and names they point at. */
struct work {
	struct tree *tree;
	struct tree_node *archive;  /* the innermost archive of every op */
	GArray *changes;            /* struct res_change */
	GPtrArray *names;           /* GString: the stored names they point at */
	GPtrArray *bufs;            /* GByteArray: the rebuilt nested archives */
};

static void string_free(gpointer p)
{
	g_string_free(p, TRUE);
}

static GString *new_name(struct work *w)
{
	GString *s = g_string_new(NULL);

	g_ptr_array_add(w->names, s);
	return s;
}

/* The change of the innermost archive that op asks for. */
static int change_of(struct work *w, const struct save_op *op, struct res_error *err)
{
	struct target tg = { 0 }, to = { 0 };
	struct res_change ch = { .op = op->op, .data = op->data, .len = op->len, .mtime = op->mtime,
				 .keep_same = op->keep_same };
	GString *name = new_name(w), *to_name = NULL;
	int rc = locate(w->tree, op->path, &tg);

	/* a create on a stale look: another program made the name meanwhile
	 * (a view of it: locate's ENOENT) */
	if (op->must_be_new && tg.exists && (rc == 0 || rc == -ENOENT)) {
		rc = fail(err, EEXIST, "%s: made meanwhile by another program", op->path);
		goto out;
	}
	if (rc < 0) {
		rc = fail(err, -rc, "%s: %s", op->path, strerror(-rc));
		goto out;
	}
	if ((op->op != RES_PUT || op->must_exist) && !tg.exists) {
		rc = fail(err, ENOENT, "%s: %s", op->path, strerror(ENOENT));
		goto out;
	}
	if (op->op == RES_PUT && op->expect_sha256 && as_expected(w->tree, tg.node, op, err) < 0) {
		rc = SAVE_FINAL; /* its ESTALE is no reason to read the file again */
		goto out;
	}
	if (op->op == RES_RENAME && (rc = locate(w->tree, op->to, &to)) < 0) {
		rc = fail(err, -rc, "%s: %s", op->to, strerror(-rc));
		goto out;
	}
	if (w->archive && w->archive != tg.archive)
		rc = fail(err, EXDEV, "%s: not in the same archive as the other changes", op->path);
	else if (op->op == RES_RENAME && to.archive != tg.archive)
		rc = fail(err, EXDEV, "%s: a rename stays inside one archive", op->to);
	if (rc < 0)
		goto out;
	w->archive = tg.archive;
	rc = stored_name(tg.archive, tg.rel, tg.node, name, err);
	if (rc == 0 && op->op == RES_RENAME) {
		to_name = new_name(w);
		rc = stored_name(tg.archive, to.rel, to.node, to_name, err);
		ch.to = to_name->str;
		ch.to_len = to_name->len;
	}
	ch.name = name->str;
	ch.name_len = name->len;
	if (rc == 0)
		g_array_append_val(w->changes, ch);
out:
	g_free(tg.rel);
	g_free(to.rel);
	return rc;
}

/* Rebuilds the nested archives from the innermost out, until the changes
 * are those of the archive file.  Returns 0, 1 when nothing changes, -1. */
static int rebuild_outward(struct work *w, struct res_error *err)
{
	static const struct res_pack_options opt = { .align = 1, .dedup = 0 };
	struct tree_node *a = w->archive, *parent;

	for (; (parent = enclosing_archive(a)); a = parent) {
		struct res_window win = window_of(a);
		GByteArray *out = g_byte_array_new();
		GString *name = new_name(w);
		char *rel = path_below(parent, a, "");
		int rc = res_rebuild(&win, (const struct res_change *)(void *)w->changes->data,
				     w->changes->len, &opt, out, err);

		g_ptr_array_add(w->bufs, out);
		if (rc == 0)
			rc = stored_name(parent, rel, a, name, err);
		g_free(rel);
		if (rc != 0)
			return rc;
		g_array_set_size(w->changes, 1);
		g_array_index(w->changes, struct res_change, 0) = (struct res_change){
			.name = name->str, .name_len = name->len, .op = RES_PUT,
			.data = out->data, .len = out->len, .mtime = (uint32_t)time(NULL),
		};
	}
	return 0;
}

static int save_locked(const char *file, int fd, const struct save_op *ops, size_t n,
		       const struct res_commit_options *opt, struct res_error *err)
{
	int open_err = 0, rc = 0;
	struct work w = { 0 };

	w.tree = tree_open(file, &open_err);
	/* a damaged archive (another program in the middle of rewriting
	 * it) is EIO, as any read of it: EINVAL says the text is at fault */
	if (!w.tree)
		return fail(err, open_err == EINVAL ? EIO : open_err, "cannot read the archive: %s",
			    strerror(open_err));
	w.changes = g_array_new(FALSE, TRUE, sizeof(struct res_change));
	w.names = g_ptr_array_new_with_free_func(string_free);
	w.bufs = g_ptr_array_new_with_free_func((GDestroyNotify)g_byte_array_unref);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = change_of(&w, &ops[i], err);
	if (rc == 0)
		rc = rebuild_outward(&w, err);
	if (rc == 0)
		rc = res_commit(fd, (const struct res_change *)(void *)w.changes->data, w.changes->len, opt, err);
	g_array_unref(w.changes);
	g_ptr_array_unref(w.names);
	g_ptr_array_unref(w.bufs);
	tree_free(w.tree);
	return rc;
}

int save_archive(const char *file, const struct save_op *ops, size_t n,
		 const struct res_commit_options *opt, struct res_error *err, struct save_stamps *stamps)
{
	/* the lock taken here is kept until the stamps are read */
	struct res_commit_options held = opt ? *opt : (struct res_commit_options){ .align = 1 };

	held.caller_locks = 1;
	held.path = file;
	for (int attempt = 0; attempt < 8; attempt++) {
		int fd = open(file, O_RDWR | O_CLOEXEC), rc, locked;
		struct stat st, now;

		if (fd < 0)
			return fail(err, errno, "%s", strerror(errno));
		while ((locked = flock(fd, LOCK_EX)) < 0 && errno == EINTR)
			;
		/* a compaction renames a new file over this one while it holds
		 * the lock: the name must still lead to the file locked (a hard
		 * link keeps the old one alive, so its link count says nothing) */
		if (locked < 0)
			rc = fail(err, errno, "cannot lock: %s", strerror(errno));
		else if (fstat(fd, &st) < 0 || stat(file, &now) < 0 || st.st_dev != now.st_dev || st.st_ino != now.st_ino)
			rc = fail(err, ESTALE, "replaced while waiting for the lock");
		else if (!(st.st_mode & 0222)) /* root may open it to write: it is left alone, as the mount does */
			rc = fail(err, EACCES, "the archive has no write permission bit; it is left as it is");
		else
			rc = save_locked(file, fd, ops, n, &held, err);
		if (rc >= 0 && stamps) {
			stamps->before = st;
			stamps->known = fstat(fd, &stamps->after) == 0;
		}
		close(fd);
		if (rc >= 0 || err->code != ESTALE || rc == SAVE_FINAL)
			return rc < 0 ? -1 : rc;
	}
	return fail(err, ESTALE, "the archive keeps being replaced");
}
