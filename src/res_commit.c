/* Saving changes to RES archives.
 *
 * How res_commit stays crash-safe.  The header (16 bytes at offset 0) is
 * the only thing that says where the table is.  A commit never overwrites
 * a byte the current header reaches: it appends the new and changed data
 * at the end of the file, then a complete new table and name block after
 * them, flushes all that to the disk, and only then rewrites the header in
 * one 16-byte pwrite (one sector, which disks write whole) and flushes
 * again.  Until the header write the old header still describes the old,
 * untouched table and data; after it the new header describes the new
 * table, which is already on the disk.  So a crash at any moment leaves
 * the old archive or the new one, never a mix; what a crash before the
 * header write appended is dead space nobody refers to.
 *
 * Why not write a temporary file and rename it over the archive, the usual
 * way to replace a file atomically?  Because game archives are big and the
 * changes small: rename costs a full copy of a 1 GiB archive per save
 * (and its fsync), needs free space the size of the archive, and replaces
 * the inode, so hard links, ownership and open readers keep the old file.
 * Appending costs the changed data plus the table (22 bytes and a name per
 * entry).  The price is dead space: replaced data and old tables stay in
 * the file until res_compact, which does use the rename, once, on request.
 * Untouched entries keep their offsets, so readers holding the old table
 * (a mount) still read the old, consistent bytes.
 *
 * The new table is laid out as the original packer does (names sorted,
 * chains built by res_build_chains in that order), so the game's lookup
 * finds every entry. */
#define _GNU_SOURCE
#include "res_commit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cp1251.h"
#include "io.h"
#include "replace.h"

static uint64_t align_up(uint64_t v, int align)
{
	return align ? (v + 15) & ~(uint64_t)15 : v;
}

/* ---- the archive after the changes ------------------------------------ */

/* Entries as res_pack_items: those kept from the archive read their data
 * from the window (data NULL); those with new contents have data set (a
 * non-NULL pointer even for an empty entry), which is how the commit tells
 * what to append. */
struct edit {
	struct res_table tab;
	GArray *items;         /* struct res_pack_item */
	GByteArray *gone;      /* per item: deleted */
	GHashTable *by_name;   /* ASCII-lowered name (GBytes) -> item index + 1 */
	int dups;              /* the archive holds names that differ only in case */
	int changed;
};

static const unsigned char no_bytes[1];

static GBytes *name_key(const char *name, size_t len)
{
	char *low = g_malloc(len ? len : 1);

	for (size_t i = 0; i < len; i++)
		low[i] = g_ascii_tolower(name[i]);
	return g_bytes_new_take(low, len);
}

static struct res_pack_item *item(struct edit *ed, guint i)
{
	return &g_array_index(ed->items, struct res_pack_item, i);
}

static void edit_add(struct edit *ed, const struct res_pack_item *it)
{
	GBytes *key = name_key(it->name, it->name_len);
	guint i = ed->items->len;

	g_array_append_val(ed->items, *it);
	g_byte_array_append(ed->gone, (const guint8 *)"", 1);
	if (g_hash_table_contains(ed->by_name, key)) {
		ed->dups = 1;
		g_bytes_unref(key);
	} else {
		g_hash_table_insert(ed->by_name, key, GUINT_TO_POINTER(i + 1));
	}
}

static void edit_free(struct edit *ed)
{
	res_table_free(&ed->tab);
	if (ed->items)
		g_array_unref(ed->items);
	if (ed->gone)
		g_byte_array_unref(ed->gone);
	if (ed->by_name)
		g_hash_table_destroy(ed->by_name);
}

/* Reads the archive in w; one whose entries point outside it is refused:
 * its entries could not be carried over as they are. */
static int edit_open(struct edit *ed, const struct res_window *w, struct res_error *err)
{
	memset(ed, 0, sizeof *ed);
	if (res_table_read(w, &ed->tab, err) < 0)
		return -1;
	ed->items = g_array_sized_new(FALSE, TRUE, sizeof(struct res_pack_item), ed->tab.hdr.count + 1);
	ed->gone = g_byte_array_sized_new(ed->tab.hdr.count + 1);
	ed->by_name = g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
					    (GDestroyNotify)g_bytes_unref, NULL);
	for (uint32_t i = 0; i < ed->tab.hdr.count; i++) {
		const struct res_entry *e = &ed->tab.entries[i];
		unsigned faults = res_entry_faults(&ed->tab, i, w->len);
		struct res_pack_item it = {
			.name = ed->tab.names + e->name_off, .name_len = e->name_len,
			.mtime = e->mtime, .length = e->length, .fd = w->fd,
			.offset = w->base + e->offset, .data_offset = e->offset,
		};

		if (faults)
			return res_fail(err, EINVAL, (uint64_t)ed->tab.hdr.table_offset + (uint64_t)i * RES_ENTRY_SIZE,
				    "entry %u: %s %s; a damaged archive is not written to", i,
				    faults & RES_FAULT_NAME ? "name" : "data",
				    faults & RES_FAULT_NAME ? res_name_fault_text(&ed->tab, i) : "is outside the archive");
		edit_add(ed, &it);
	}
	/* names that occur twice: the game reads the entry its lookup finds,
	 * which the new table keeps first */
	for (uint32_t i = 0; ed->dups && i < ed->tab.hdr.count; i++) {
		struct res_pack_item *it = item(ed, i);
		int64_t found = res_lookup(&ed->tab, it->name, it->name_len);

		it->hidden = found >= 0 && found != (int64_t)i;
	}
	return 0;
}

enum { EDIT_AMBIGUOUS = -2 };

/* The live item the name refers to; -1 for none, EDIT_AMBIGUOUS when two
 * entries hold that exact name, or none does and several hold it in
 * other ASCII cases: a change could not tell which one it is for. */
static int64_t edit_find(struct edit *ed, const char *name, size_t len)
{
	int64_t found = -1, exact = -1;
	int variants = 0;

	if (!ed->dups) {
		GBytes *key = name_key(name, len);
		guint v = GPOINTER_TO_UINT(g_hash_table_lookup(ed->by_name, key));

		g_bytes_unref(key);
		return (int64_t)v - 1;
	}
	/* case variants in the archive: the exact spelling wins */
	for (guint i = 0; i < ed->items->len; i++) {
		const struct res_pack_item *it = item(ed, i);

		if (ed->gone->data[i] || !res_name_equal(it->name, it->name_len, name, len))
			continue;
		if (it->name_len == len && memcmp(it->name, name, len) == 0) {
			if (exact >= 0)
				return EDIT_AMBIGUOUS;
			exact = i;
		} else if (found < 0) {
			found = i;
		}
		variants++;
	}
	if (exact >= 0)
		return exact;
	return variants > 1 ? EDIT_AMBIGUOUS : found;
}

static int ambiguous(struct res_error *err, const char *name, size_t len)
{
	return res_fail(err, EPERM, 0, "\"%.*s\": the archive holds two entries of that name, and a change "
		    "could not tell which one it is for; none is made", (int)len, name);
}

/* Whether item it holds exactly these bytes; reads as much as it compares. */
static int same_data(const struct res_pack_item *it, const unsigned char *data, size_t len, int *same)
{
	unsigned char buf[65536];
	uint64_t done = 0;

	*same = it->length == len;
	if (!*same || len == 0)
		return 0;
	if (it->data) {
		*same = memcmp(it->data, data, len) == 0;
		return 0;
	}
	while (*same && done < len) {
		size_t want = len - done < sizeof buf ? (size_t)(len - done) : sizeof buf;
		ssize_t n = pread(it->fd, buf, want, (off_t)(it->offset + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		*same = memcmp(buf, data + done, (size_t)n) == 0;
		done += (uint64_t)n;
	}
	return 0;
}

static int storable_name(const char *name, size_t len, size_t k, struct res_error *err)
{
	if (len == 0 || len > RES_NAME_MAX)
		return res_fail(err, len ? ENAMETOOLONG : EINVAL, 0, "change %zu: a name of %zu bytes cannot be stored",
			    k, len);
	if (res_hash(name, len, 1) < 0) {
		GString *shown = g_string_new(NULL);

		cp1251_to_utf8(name, len, "\r\n", shown); /* one line for the log */
		res_fail(err, EINVAL, 0, "\"%s\": negative signed-char hash sum; the game could not find it", shown->str);
		g_string_free(shown, TRUE);
		return -1;
	}
	return 0;
}

static int check_change(const struct res_change *c, size_t k, struct res_error *err)
{
	if (c->op != RES_PUT && c->op != RES_DELETE && c->op != RES_RENAME)
		return res_fail(err, EINVAL, 0, "change %zu: unknown operation %d", k, c->op);
	if (c->name_len == 0 || c->name_len > RES_NAME_MAX)
		return res_fail(err, c->name_len ? ENAMETOOLONG : EINVAL, 0,
			    "change %zu: a name of %zu bytes cannot be stored", k, c->name_len);
	if (c->op == RES_PUT && storable_name(c->name, c->name_len, k, err) < 0)
		return -1;
	if (c->op == RES_RENAME && storable_name(c->to, c->to_len, k, err) < 0)
		return -1;
	if (c->op == RES_PUT && (uint64_t)c->len > UINT32_MAX)
		return res_fail(err, EFBIG, 0, "\"%.*s\": %zu bytes do not fit an entry", (int)c->name_len,
			    c->name, c->len);
	return 0;
}

static int apply_put(struct edit *ed, const struct res_change *c, struct res_error *err)
{
	int64_t i = edit_find(ed, c->name, c->name_len);
	struct res_pack_item *it;
	int same = 0, rc;

	if (i == EDIT_AMBIGUOUS)
		return ambiguous(err, c->name, c->name_len);
	if (i < 0) {
		struct res_pack_item fresh = {
			.name = (char *)c->name, .name_len = c->name_len, .mtime = c->mtime,
			.length = c->len, .data = c->len ? c->data : no_bytes, .fd = -1,
		};

		edit_add(ed, &fresh);
		ed->changed = 1;
		return 0;
	}
	it = item(ed, (guint)i);
	rc = same_data(it, c->data, c->len, &same);
	if (rc < 0)
		return res_fail(err, -rc, it->data_offset, "cannot read \"%.*s\": %s", (int)it->name_len,
			    it->name, strerror(-rc));
	if (same && (c->keep_same || (it->mtime == c->mtime && it->name_len == c->name_len
					&& memcmp(it->name, c->name, c->name_len) == 0)))
		return 0; /* as asked already: decided here, under the lock, on
			   * what the file holds now */
	if (!same) {
		it->data = c->len ? c->data : no_bytes;
		it->length = c->len;
	}
	/* same bytes: the entry keeps its data (and any sharing of it) */
	it->name = (char *)c->name;
	it->mtime = c->mtime;
	ed->changed = 1;
	return 0;
}

/* Forgets item i (deleted, or renamed away from its name). */
static void edit_unname(struct edit *ed, int64_t i)
{
	struct res_pack_item *it = item(ed, (guint)i);
	GBytes *key = name_key(it->name, it->name_len);

	if (GPOINTER_TO_UINT(g_hash_table_lookup(ed->by_name, key)) == (guint)i + 1)
		g_hash_table_remove(ed->by_name, key);
	g_bytes_unref(key);
}

static int apply_delete(struct edit *ed, const struct res_change *c, struct res_error *err)
{
	int64_t i = edit_find(ed, c->name, c->name_len);

	if (i == EDIT_AMBIGUOUS)
		return ambiguous(err, c->name, c->name_len);
	if (i < 0)
		return res_fail(err, ENOENT, 0, "\"%.*s\" is not in the archive", (int)c->name_len, c->name);
	edit_unname(ed, i);
	ed->gone->data[i] = 1;
	ed->changed = 1;
	return 0;
}

/* The entry keeps its data, offset and timestamp; only the name moves. */
static int apply_rename(struct edit *ed, const struct res_change *c, struct res_error *err)
{
	int64_t i = edit_find(ed, c->name, c->name_len), taken;
	struct res_pack_item *it;

	if (i == EDIT_AMBIGUOUS)
		return ambiguous(err, c->name, c->name_len);
	if (i < 0)
		return res_fail(err, ENOENT, 0, "\"%.*s\" is not in the archive", (int)c->name_len, c->name);
	it = item(ed, (guint)i);
	if (it->name_len == c->to_len && memcmp(it->name, c->to, c->to_len) == 0)
		return 0;
	taken = edit_find(ed, c->to, c->to_len);
	if (taken == EDIT_AMBIGUOUS)
		return ambiguous(err, c->to, c->to_len);
	if (taken >= 0 && taken != i) {
		edit_unname(ed, taken);
		ed->gone->data[taken] = 1;
	}
	edit_unname(ed, i);
	it->name = (char *)c->to;
	it->name_len = c->to_len;
	g_hash_table_insert(ed->by_name, name_key(c->to, c->to_len), GUINT_TO_POINTER((guint)i + 1));
	ed->changed = 1;
	return 0;
}

static int edit_apply(struct edit *ed, const struct res_change *changes, size_t n,
		      struct res_error *err)
{
	for (size_t k = 0; k < n; k++) {
		const struct res_change *c = &changes[k];
		int rc = check_change(c, k, err);

		if (rc == 0)
			rc = c->op == RES_PUT ? apply_put(ed, c, err)
			     : c->op == RES_DELETE ? apply_delete(ed, c, err) : apply_rename(ed, c, err);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* The live items, in packer order; g_free the array. */
static struct res_pack_item *edit_result(struct edit *ed, uint32_t *count)
{
	struct res_pack_item *out = g_new(struct res_pack_item, ed->items->len + 1);
	uint32_t n = 0;

	for (guint i = 0; i < ed->items->len; i++)
		if (!ed->gone->data[i])
			out[n++] = *item(ed, i);
	res_pack_sort(out, n);
	*count = n;
	return out;
}

/* ---- in memory -------------------------------------------------------- */

int res_rebuild(const struct res_window *w, const struct res_change *changes, size_t n,
		const struct res_pack_options *opt, GByteArray *out, struct res_error *err)
{
	struct res_pack_options aligned = { .align = 1, .dedup = 0 };
	struct res_pack_item *items = NULL;
	struct edit ed;
	uint32_t count = 0;
	int rc = edit_open(&ed, w, err);

	if (rc == 0)
		rc = edit_apply(&ed, changes, n, err);
	if (rc == 0) {
		items = edit_result(&ed, &count);
		rc = res_pack_build(out, items, count, opt ? opt : &aligned, err);
	}
	if (rc == 0 && !ed.changed)
		rc = 1;
	g_free(items);
	edit_free(&ed);
	return rc;
}

/* ---- in place --------------------------------------------------------- */

static int lock(int fd, int how)
{
	while (flock(fd, how) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* Where the appended data goes: after everything in the file, including
 * what an interrupted commit left, so no byte that any state refers to is
 * overwritten.  Sets each new item's data_offset; returns the table's. */
static int place_new(struct res_pack_item *items, uint32_t n, uint64_t file_end, int align,
		     uint64_t *table_offset, struct res_error *err)
{
	uint64_t pos = align_up(file_end, align);

	for (uint32_t i = 0; i < n; i++) {
		if (!items[i].data)
			continue;
		pos = align_up(pos, align);
		if (pos + items[i].length > UINT32_MAX)
			return res_fail(err, EFBIG, pos, "the archive would pass 4 GiB; compact it first");
		items[i].data_offset = (uint32_t)pos;
		pos += items[i].length;
	}
	*table_offset = align_up(pos, align);
	return 0;
}

struct committer {
	int fd;
	const struct res_commit_options *opt;
	struct res_error *err;
};

/* Runs the fault hook before step; nonzero: stop as a crash would. */
static int fault_at(const struct committer *c, int step)
{
	return c->opt->fault ? c->opt->fault(c->opt->fault_ctx, step) : 0;
}

static int stop_before(const struct committer *c, int step)
{
	if (fault_at(c, step))
		return res_fail(c->err, ECANCELED, 0, "stopped before step %d by the fault hook", step);
	return 0;
}

static int sync_step(const struct committer *c, int step)
{
	int fault = fault_at(c, step);

	if (fault && fault != RES_FAULT_EIO && step != RES_STEP_SYNC_UNCHANGED)
		return res_fail(c->err, ECANCELED, 0, "stopped before step %d by the fault hook", step);
	if (fault == RES_FAULT_EIO || fdatasync(c->fd) < 0) { /* also flushes the grown file size */
		int code = fault == RES_FAULT_EIO ? EIO : errno;

		return res_fail(c->err, code, 0, "cannot flush: %s", strerror(code));
	}
	return 0;
}

static int append_data(const struct committer *c, const struct res_pack_item *items, uint32_t n)
{
	if (stop_before(c, RES_STEP_DATA) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		int rc;

		if (!items[i].data)
			continue;
		/* gaps left for alignment are holes: they read as zeros */
		rc = io_pwrite_all(c->fd, items[i].data, items[i].length, items[i].data_offset);
		if (rc < 0)
			return res_fail(c->err, -rc, items[i].data_offset, "cannot write \"%.*s\": %s",
				    (int)items[i].name_len, items[i].name, strerror(-rc));
	}
	return 0;
}

static int append_table(const struct committer *c, const struct res_pack_item *items, uint32_t n,
			uint64_t table_offset, struct res_header *h, uint64_t *end)
{
	GByteArray *block = g_byte_array_new();
	int rc = res_pack_table(items, n, table_offset, block, h, c->err);

	if (rc == 0)
		rc = stop_before(c, RES_STEP_TABLE);
	if (rc == 0 && (rc = io_pwrite_all(c->fd, block->data, block->len, table_offset)) < 0)
		rc = res_fail(c->err, -rc, table_offset, "cannot write the table: %s", strerror(-rc));
	/* where the file ends now (an empty archive's table is nowhere) */
	if (block->len)
		*end = MAX(*end, table_offset + block->len);
	g_byte_array_unref(block);
	return rc;
}

/* The header is overwritten in place: an entry whose data covers any of
 * its 16 bytes (a crafted archive, one that contains itself) would change
 * without being asked to. */
static int header_overlap(const struct res_pack_item *items, uint32_t n, struct res_error *err)
{
	for (uint32_t i = 0; i < n; i++)
		if (!items[i].data && items[i].length && items[i].data_offset < RES_HEADER_SIZE)
			return res_fail(err, EINVAL, items[i].data_offset,
				    "\"%.*s\" lies over the header, which a commit rewrites; compact the archive first",
				    (int)items[i].name_len, items[i].name);
	return 0;
}

/* Whether the file is still what this commit read under its lock and then
 * appended to: another program that does not take the lock (a packer, a
 * copy over it) may have rewritten it meanwhile, and a header written now
 * would point into its bytes. */
/* Whether fd holds the header read and ends between lo and hi: 0 when it
 * does, 1 when not, a negative errno when it cannot be told. */
static int holds_header(int fd, const struct res_header *read, uint64_t lo, uint64_t hi)
{
	unsigned char now[RES_HEADER_SIZE], was[RES_HEADER_SIZE];
	struct stat st;
	ssize_t got;

	res_header_encode(read, was);
	do
		got = pread(fd, now, sizeof now, 0);
	while (got < 0 && errno == EINTR);
	if (got < 0 || fstat(fd, &st) < 0)
		return -errno;
	return got != (ssize_t)sizeof now || memcmp(now, was, sizeof now) != 0 || (uint64_t)st.st_size < lo
	       || (uint64_t)st.st_size > hi;
}

static int still_ours(const struct committer *c, const struct res_header *read, uint64_t end)
{
	int rc = holds_header(c->fd, read, end, end);

	if (rc < 0)
		return res_fail(c->err, -rc, 0, "cannot read the header back: %s; nothing was switched",
				strerror(-rc));
	if (rc > 0)
		return res_fail(c->err, ESTALE, 0, "the file was changed by another program during the commit; "
			    "nothing was switched (the old archive, or what the other program wrote, stays)");
	return 0;
}

/* Whether the archive's name still leads to the file committed into: a
 * program that takes no lock may rename another file over it (a game
 * updater, mv of a backup), and the change would land where no one reads
 * it any more. */
static int still_named(const struct committer *c)
{
	struct stat st, named;

	if (!c->opt->path)
		return 0;
	if (fstat(c->fd, &st) < 0 || stat(c->opt->path, &named) < 0 || named.st_dev != st.st_dev
	    || named.st_ino != st.st_ino)
		return res_fail(c->err, ESTALE, 0, "another file took the archive's name during the commit; "
			    "nothing was switched");
	return 0;
}

static int switch_header(const struct committer *c, const struct res_header *h)
{
	unsigned char hdr[RES_HEADER_SIZE];
	int rc;

	if (stop_before(c, RES_STEP_HEADER) < 0)
		return -1;
	res_header_encode(h, hdr);
	rc = io_pwrite_all(c->fd, hdr, sizeof hdr, 0);
	if (rc < 0)
		return res_fail(c->err, -rc, 0, "cannot write the header: %s", strerror(-rc));
	return 0;
}

static int write_commit(const struct committer *c, struct edit *ed, uint64_t file_end)
{
	uint32_t n = 0;
	struct res_pack_item *items = edit_result(ed, &n);
	struct res_header h;
	uint64_t table_offset = 0, end = 0;
	int rc = header_overlap(items, n, c->err);
	int appending;

	if (rc == 0)
		rc = place_new(items, n, file_end, c->opt->align, &table_offset, c->err);
	appending = rc == 0;
	if (rc == 0)
		rc = append_data(c, items, n);
	end = file_end;
	if (rc == 0)
		rc = append_table(c, items, n, table_offset, &h, &end);
	if (rc == 0)
		rc = sync_step(c, RES_STEP_SYNC_TABLE);
	if (rc == 0 && (rc = still_ours(c, &ed->tab.hdr, end)) < 0)
		appending = 0; /* not ours to cut any more */
	if (rc == 0)
		rc = still_named(c); /* what it appended, under our lock, is cut */
	/* A failed write or flush (a full disk) before the header switch takes
	 * back what it appended: nothing refers to it.  Only from a file that
	 * still holds the old header and no more than was appended: another
	 * program that takes no lock may have written its own file meanwhile
	 * (and filled the disk doing so).  The fault hook is a crash and
	 * cleans nothing; a failed header write may be partly done. */
	if (rc < 0 && appending && c->err->code != ECANCELED
	    && holds_header(c->fd, &ed->tab.hdr, file_end, MAX(end, table_offset)) == 0
	    && ftruncate(c->fd, (off_t)file_end) < 0) {
		/* the old archive is intact all the same; the bytes stay dead */
	}
	if (rc == 0)
		rc = switch_header(c, &h);
	if (rc == 0 && (rc = sync_step(c, RES_STEP_SYNC_HEADER)) < 0 && c->err->code != ECANCELED) {
		/* The new header may or may not reach the disk, while the
		 * caller is told the commit failed: the old one goes back, so
		 * the file shows what the error says (best effort: its own
		 * flush may fail too).  The appended bytes stay dead. */
		unsigned char old[RES_HEADER_SIZE];

		res_header_encode(&ed->tab.hdr, old);
		if (io_pwrite_all(c->fd, old, sizeof old, 0) == 0)
			fdatasync(c->fd);
	}
	g_free(items);
	return rc;
}

/* Locks fd and reads what it holds now: another process may have
 * committed since the caller last looked. */
static int lock_and_stat(int fd, struct stat *st, struct res_error *err)
{
	int rc = lock(fd, LOCK_EX);

	if (rc < 0)
		return res_fail(err, -rc, 0, "cannot lock: %s", strerror(-rc));
	if (fstat(fd, st) < 0)
		rc = res_fail(err, errno, 0, "cannot stat: %s", strerror(errno));
	else if (!S_ISREG(st->st_mode))
		rc = res_fail(err, EINVAL, 0, "not a regular file");
	else if (st->st_nlink == 0) /* res_compact renamed a new file over it */
		rc = res_fail(err, ESTALE, 0, "the archive was replaced while waiting for the lock; open it again");
	if (rc < 0)
		lock(fd, LOCK_UN);
	return rc;
}

int res_commit(int fd, const struct res_change *changes, size_t n,
	       const struct res_commit_options *opt, struct res_error *err)
{
	static const struct res_commit_options aligned = { .align = 1 };
	struct committer c = { fd, opt ? opt : &aligned, err };
	struct res_window w = { fd, 0, 0 };
	struct stat st;
	struct edit ed;
	int rc;

	if (lock_and_stat(fd, &st, err) < 0)
		return -1;
	w.len = (uint64_t)st.st_size;
	rc = edit_open(&ed, &w, err);
	if (rc == 0)
		rc = edit_apply(&ed, changes, n, err);
	/* nothing to write; flushed all the same, as an earlier commit's
	 * flush may have failed with its bytes still to reach the disk */
	if (rc == 0 && !ed.changed)
		rc = sync_step(&c, RES_STEP_SYNC_UNCHANGED) < 0 ? -1 : 1;
	if (rc == 0)
		rc = write_commit(&c, &ed, w.len);
	edit_free(&ed);
	if (!c.opt->caller_locks)
		lock(fd, LOCK_UN); /* as the end of a crashed process would */
	return rc;
}

/* ---- compaction ------------------------------------------------------- */

/* Whether the archive starts its data and table on 16-byte boundaries, as
 * the original packer does; compaction keeps the style it finds. */
static int is_aligned(const struct res_table *t)
{
	if (t->hdr.count && t->hdr.table_offset % 16)
		return 0;
	for (uint32_t i = 0; i < t->hdr.count; i++)
		if (t->entries[i].length && t->entries[i].offset % 16)
			return 0;
	return 1;
}

/* Opens and locks path; retries when a concurrent compaction replaced
 * the file while we waited. */
static int open_locked(const char *path, struct stat *st, struct res_error *err)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		struct stat now;

		if (fd < 0)
			return res_fail(err, errno, 0, "%s", strerror(errno));
		if (lock_and_stat(fd, st, err) == 0) {
			if (stat(path, &now) == 0 && now.st_dev == st->st_dev && now.st_ino == st->st_ino)
				return fd;
			/* replaced meanwhile, an old link keeping the old file */
			res_fail(err, ESTALE, 0, "replaced while waiting for the lock");
			lock(fd, LOCK_UN);
		}
		close(fd);
		if (err->code != ESTALE)
			return -1;
	}
	return -1;
}

/* What compaction read, under its lock, to check just before the rename:
 * a program that takes no lock may have written the archive in place or
 * renamed another file over its name meanwhile (a game updater), and the
 * compacted copy of the old archive would replace its work. */
struct compacted_from {
	int fd;
	const char *path;
	struct stat st;
};

static int still_compacted_from(void *ctx, struct res_error *err)
{
	const struct compacted_from *f = ctx;
	struct stat now, named;

	if (fstat(f->fd, &now) < 0 || stat(f->path, &named) < 0)
		return res_fail(err, errno, 0, "cannot check the archive again: %s; nothing was switched",
				strerror(errno));
	if (named.st_dev != f->st.st_dev || named.st_ino != f->st.st_ino)
		return res_fail(err, ESTALE, 0, "another file took the archive's name during the compaction; "
			    "nothing was switched");
	if (now.st_size != f->st.st_size || now.st_mtim.tv_sec != f->st.st_mtim.tv_sec
	    || now.st_mtim.tv_nsec != f->st.st_mtim.tv_nsec || now.st_ctim.tv_sec != f->st.st_ctim.tv_sec
	    || now.st_ctim.tv_nsec != f->st.st_ctim.tv_nsec)
		return res_fail(err, ESTALE, 0, "the archive was changed by another program during the "
			    "compaction; nothing was switched");
	return 0;
}

/* Writes the rebuilt archive to fd. */
static int write_compacted(int fd, struct edit *ed, struct res_error *err)
{
	struct res_pack_options opt = { .align = is_aligned(&ed->tab), .dedup = 0 };
	uint32_t n = 0;
	struct res_pack_item *items = edit_result(ed, &n);
	int rc = res_pack_write(fd, items, n, &opt, err);

	g_free(items);
	return rc;
}

int res_compact(const char *link_path, struct res_error *err)
{
	/* a link to the archive stays a link: the file it names is replaced */
	char *path = realpath(link_path, NULL);
	struct replacement r;
	struct res_window w;
	struct stat st;
	struct edit ed;
	int fd = path ? open_locked(path, &st, err) : res_fail(err, errno, 0, "%s", strerror(errno)), rc = -1;

	if (fd < 0) {
		free(path);
		return -1;
	}
	w = (struct res_window){ fd, 0, (uint64_t)st.st_size };
	/* the file is replaced, not written: it takes leave to write the
	 * file, not only its folder (and write bits: root, who may write
	 * anything, leaves a read-only archive alone, as the mount does) */
	if (!(st.st_mode & 0222) || faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) < 0) {
		int code = st.st_mode & 0222 ? errno : EACCES;

		res_fail(err, code, 0, "cannot compact: the archive is not writable (%s)", strerror(code));
	} else {
		/* edit_free after a failed edit_open too: it frees what that
		 * made before it failed */
		struct compacted_from from = { fd, path, st };

		if (edit_open(&ed, &w, err) == 0 && replace_begin(&r, path, 0, err) == 0) {
			if (write_compacted(r.fd, &ed, err) == 0)
				rc = replace_commit_checked(&r, still_compacted_from, &from, err);
			else
				replace_abort(&r);
		}
		edit_free(&ed);
	}
	close(fd); /* releases the lock: waiting writers see the old file unlinked */
	free(path);
	return rc;
}
