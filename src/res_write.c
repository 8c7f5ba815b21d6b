#define _GNU_SOURCE
#include "res_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib.h>

#include "io.h"
enum { COPY_CHUNK = 1 << 20 };

static int item_order(const void *pa, const void *pb)
{
	const struct res_pack_item *a = pa, *b = pb;

	int c = res_name_order(a->name, a->name_len, b->name, b->name_len);

	if (c == 0 && a->hidden != b->hidden)
		return a->hidden - b->hidden; /* the entry the game finds first */
	if (c == 0) /* case variants: keep the output independent of qsort */
		c = memcmp(a->name, b->name, a->name_len < b->name_len ? a->name_len : b->name_len);
	return c ? c : (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

/* Where an archive is written: a file, or memory. */
struct sink {
	int fd;
	GByteArray *mem;
};

/* Opens the item's file data; *fd is the caller's to close when *owned is set. */
static int item_open(const struct res_pack_item *it, int *fd, int *owned, uint64_t *off)
{
	if (!it->path) {
		*fd = it->fd;
		*owned = 0;
		*off = it->offset;
		return 0;
	}
	*fd = open(it->path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	*owned = 1;
	*off = 0;
	return 0;
}

/* Room for len bytes at at in memory; a gap before them is zeroed, as a
 * file's hole would read.  NULL past 4 GiB, which a GByteArray cannot
 * hold (nor a RES archive: the writer refuses such data before, but the
 * padding before the table may come within 16 bytes of it). */
static unsigned char *mem_at(GByteArray *m, uint64_t at, size_t len)
{
	if (at + len > G_MAXUINT)
		return NULL;
	if (at + len > m->len) {
		guint old = m->len;

		g_byte_array_set_size(m, (guint)(at + len));
		memset(m->data + old, 0, m->len - old);
	}
	return m->data + at;
}

static int sink_write(struct sink *s, const void *buf, size_t len, uint64_t at)
{
	unsigned char *to;

	if (!s->mem)
		return io_pwrite_all(s->fd, buf, len, at);
	if (!len)
		return 0;
	to = mem_at(s->mem, at, len);
	if (!to)
		return -EFBIG;
	memcpy(to, buf, len);
	return 0;
}

/* One pread that retries on EINTR and calls a short source an error. */
static ssize_t read_some(int in, void *buf, size_t want, uint64_t at)
{
	ssize_t n;

	do
		n = pread(in, buf, want, (off_t)at);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == 0 ? -EIO : n; /* the source shrank under us */
}

/* Copies length bytes of in (at in_off) to out at out_at. */
static int copy_range(int in, uint64_t in_off, uint64_t length, struct sink *out, uint64_t out_at,
		      char *buf)
{
	uint64_t done = 0;

	while (done < length) {
		size_t want = length - done < COPY_CHUNK ? (size_t)(length - done) : COPY_CHUNK;
		ssize_t n;
		int rc;

		if (out->mem) {
			unsigned char *to = mem_at(out->mem, out_at + done, want);

			if (!to)
				return -EFBIG;
			n = read_some(in, to, want, in_off + done);
			if (n < 0)
				return (int)n;
			done += (uint64_t)n;
			continue;
		}
		{
			off_t ip = (off_t)(in_off + done), op = (off_t)(out_at + done);

			n = copy_file_range(in, &ip, out->fd, &op, want, 0);
			if (n > 0) {
				done += (uint64_t)n;
				continue;
			}
		}
		/* not supported between these files: fall back to read/write */
		n = read_some(in, buf, want, in_off + done);
		if (n < 0)
			return (int)n;
		rc = io_pwrite_all(out->fd, buf, (size_t)n, out_at + done);
		if (rc < 0)
			return rc;
		done += (uint64_t)n;
	}
	return 0;
}

static int digest_range(int in, uint64_t in_off, uint64_t length, GChecksum *sum, char *buf)
{
	uint64_t done = 0;

	while (done < length) {
		size_t want = length - done < COPY_CHUNK ? (size_t)(length - done) : COPY_CHUNK;
		ssize_t n = read_some(in, buf, want, in_off + done);

		if (n < 0)
			return (int)n;
		g_checksum_update(sum, (const guchar *)buf, (gssize)n);
		done += (uint64_t)n;
	}
	return 0;
}

static int item_digest(const struct res_pack_item *it, char *buf, char **digest_out)
{
	GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
	int fd = -1, owned = 0, rc = 0;
	uint64_t off = 0;

	if (!it->path && it->data) {
		g_checksum_update(sum, it->data, (gssize)it->length);
	} else {
		rc = item_open(it, &fd, &owned, &off);
		if (rc == 0) {
			rc = digest_range(fd, off, it->length, sum, buf);
			if (owned)
				close(fd);
		}
	}
	if (rc == 0)
		*digest_out = g_strdup_printf("%llu:%s", (unsigned long long)it->length,
					      g_checksum_get_string(sum));
	g_checksum_free(sum);
	return rc;
}

/* Items that read the same bytes of the same fd are entries that shared
 * their data in the archive they come from: they keep sharing one copy. */
static char *source_key(const struct res_pack_item *it)
{
	if (it->path || it->data || it->fd < 0 || it->length == 0)
		return NULL;
	return g_strdup_printf("@%d:%llu:%llu", it->fd, (unsigned long long)it->offset,
			       (unsigned long long)it->length);
}

static uint64_t align_up(uint64_t v, int align)
{
	return align ? (v + 15) & ~(uint64_t)15 : v;
}

/* The first item with the same data as it, looked up under its source key
 * and (with dedup) its content digest, both remembered for later items.
 * Returns 0 and sets *first (-1: none), or a negative errno. */
static int find_copy(GHashTable *seen, const struct res_pack_item *it, uint32_t i, int dedup,
		     char *buf, int64_t *first)
{
	char *keys[2] = { source_key(it), NULL };
	gpointer v;
	int rc = 0;

	*first = -1;
	if (keys[0] && g_hash_table_lookup_extended(seen, keys[0], NULL, &v))
		*first = GPOINTER_TO_UINT(v);
	if (*first < 0 && dedup) {
		rc = item_digest(it, buf, &keys[1]);
		if (rc == 0 && g_hash_table_lookup_extended(seen, keys[1], NULL, &v))
			*first = GPOINTER_TO_UINT(v);
	}
	for (int k = 0; k < 2; k++) {
		if (keys[k] && !g_hash_table_contains(seen, keys[k]))
			g_hash_table_insert(seen, keys[k], GUINT_TO_POINTER(*first >= 0 ? (uint32_t)*first : i));
		else
			g_free(keys[k]);
	}
	return rc;
}

/* Whether a source file read from its path is as it was listed: its
 * length and change time (listed_ctime).  Read before, it was whole. */
static int still_as_listed(const struct res_pack_item *it, struct res_error *err)
{
	struct stat st;

	if (!it->listed_ctime.tv_sec && !it->listed_ctime.tv_nsec)
		return 0;
	if (stat(it->path, &st) < 0)
		return res_fail(err, errno, it->data_offset, "cannot look at %s again: %s", it->path, strerror(errno));
	if ((uint64_t)st.st_size != it->length || st.st_ctim.tv_sec != it->listed_ctime.tv_sec
	    || st.st_ctim.tv_nsec != it->listed_ctime.tv_nsec)
		return res_fail(err, EAGAIN, it->data_offset, "%s changed while it was packed (%llu bytes when "
			    "listed, %llu now); pack again", it->path, (unsigned long long)it->length,
			    (unsigned long long)st.st_size);
	return 0;
}

/* Assigns data offsets; *end gets the offset right after the data. */
static int place_data(struct res_pack_item *items, uint32_t n, const struct res_pack_options *opt,
		      char *buf, uint64_t *end, struct res_error *err)
{
	GHashTable *seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	uint64_t pos = RES_HEADER_SIZE;
	int rc = 0;

	for (uint32_t i = 0; i < n && rc == 0; i++) {
		struct res_pack_item *it = &items[i];
		int64_t first;

		rc = find_copy(seen, it, i, opt->dedup, buf, &first);
		if (rc < 0) {
			res_fail(err, -rc, 0, "cannot read %.*s: %s", (int)it->name_len, it->name, strerror(-rc));
			break;
		}
		/* its digest is what it holds, or a copy would share wrong bytes */
		if (opt->dedup && it->path && (rc = still_as_listed(it, err)) < 0)
			break;
		if (first >= 0) {
			it->data_offset = items[first].data_offset;
			it->path = NULL; /* marks a shared copy: nothing to write */
			it->data = NULL;
			it->fd = -1;
			continue;
		}
		pos = align_up(pos, opt->align);
		if (pos + it->length > UINT32_MAX) {
			rc = res_fail(err, EFBIG, pos, "archive would pass 4 GiB at %.*s", (int)it->name_len, it->name);
			break;
		}
		it->data_offset = (uint32_t)pos;
		pos += it->length;
	}
	g_hash_table_destroy(seen);
	*end = pos;
	return rc;
}

static int item_copy(const struct res_pack_item *it, struct sink *out, char *buf)
{
	int fd = -1, owned = 0, rc;
	uint64_t off = 0;

	if (!it->path && it->data)
		return sink_write(out, it->data, it->length, it->data_offset);
	rc = item_open(it, &fd, &owned, &off);
	if (rc == 0) {
		rc = copy_range(fd, off, it->length, out, it->data_offset, buf);
		if (owned)
			close(fd);
	}
	return rc;
}

static int write_data(struct sink *out, const struct res_pack_item *items, uint32_t n, char *buf,
		      struct res_error *err)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct res_pack_item *it = &items[i];
		int rc;

		if (!it->path && !it->data && it->fd < 0)
			continue; /* shared with an earlier item */
		rc = item_copy(it, out, buf);
		if (rc < 0)
			return res_fail(err, -rc, it->data_offset, "cannot copy %.*s: %s",
				    (int)it->name_len, it->name, strerror(-rc));
		if (it->path && still_as_listed(it, err) < 0)
			return -1;
	}
	return 0;
}

int res_pack_table(const struct res_pack_item *items, uint32_t n, uint64_t table_offset,
		   GByteArray *out, struct res_header *h, struct res_error *err)
{
	const char **names = g_new(const char *, n ? n : 1);
	size_t *lens = g_new(size_t, n ? n : 1);
	uint32_t *slot_of = g_new(uint32_t, n ? n : 1);
	int32_t *next_of = g_new(int32_t, n ? n : 1);
	size_t table_len = (size_t)n * RES_ENTRY_SIZE;
	uint64_t names_len = 0;
	int rc = 0;

	g_byte_array_set_size(out, 0);
	for (uint32_t i = 0; i < n; i++) {
		names[i] = items[i].name;
		lens[i] = items[i].name_len;
		names_len += items[i].name_len;
	}
	if (table_offset + table_len + names_len > UINT32_MAX)
		rc = res_fail(err, EFBIG, table_offset, "archive would pass 4 GiB");
	else if (n && res_build_chains(n, names, lens, slot_of, next_of, err) < 0)
		rc = -1;
	if (rc == 0) {
		uint32_t name_off = 0;

		g_byte_array_set_size(out, (guint)(table_len + names_len));
		for (uint32_t i = 0; i < n; i++) {
			struct res_entry e = {
				.next = next_of[slot_of[i]], .length = (uint32_t)items[i].length,
				.offset = items[i].data_offset, .mtime = items[i].mtime,
				.name_len = (uint16_t)items[i].name_len, .name_off = name_off,
			};

			res_entry_encode(&e, out->data + (size_t)slot_of[i] * RES_ENTRY_SIZE);
			memcpy(out->data + table_len + name_off, items[i].name, items[i].name_len);
			name_off += (uint32_t)items[i].name_len;
		}
		/* the empty archive as other tools write it has table_offset 0 */
		*h = (struct res_header){ n, n ? (uint32_t)table_offset : 0, name_off };
	}
	g_free(names);
	g_free(lens);
	g_free(slot_of);
	g_free(next_of);
	return rc;
}

static int write_table(struct sink *out, const struct res_pack_item *items, uint32_t n,
		       uint64_t table_offset, struct res_error *err)
{
	GByteArray *block = g_byte_array_new();
	unsigned char hdr[RES_HEADER_SIZE];
	struct res_header h;
	int rc = res_pack_table(items, n, table_offset, block, &h, err);

	if (rc == 0) {
		res_header_encode(&h, hdr);
		rc = sink_write(out, block->data, block->len, table_offset);
		if (rc == 0)
			rc = sink_write(out, hdr, sizeof hdr, 0);
		if (rc < 0)
			rc = res_fail(err, -rc, table_offset, "cannot write: %s", strerror(-rc));
	}
	g_byte_array_unref(block);
	return rc;
}

void res_pack_sort(struct res_pack_item *items, uint32_t n)
{
	if (n > 1) /* an empty folder has no items at all (NULL) */
		qsort(items, n, sizeof *items, item_order);
}

static int pack(struct sink *out, struct res_pack_item *items, uint32_t n,
		const struct res_pack_options *opt, struct res_error *err)
{
	char *buf = g_malloc(COPY_CHUNK);
	uint64_t data_end = 0, table_offset;
	int rc = 0;

	for (uint32_t i = 0; i < n; i++)
		if (items[i].name_len == 0 || items[i].name_len > RES_NAME_MAX || items[i].length > UINT32_MAX) {
			rc = res_fail(err, !items[i].name_len ? EINVAL : items[i].name_len > RES_NAME_MAX ? ENAMETOOLONG : EFBIG, 0,
				  "entry %u: name of %zu bytes or %llu bytes of data cannot be stored",
				  i, items[i].name_len, (unsigned long long)items[i].length);
			break;
		}
	if (rc == 0) {
		res_pack_sort(items, n);
		rc = place_data(items, n, opt, buf, &data_end, err);
	}
	if (rc == 0)
		rc = write_data(out, items, n, buf, err);
	table_offset = align_up(data_end, opt->align);
	if (rc == 0 && table_offset > data_end) {
		static const char zeros[16];

		/* pad explicitly: the file may be shorter than table_offset otherwise */
		rc = sink_write(out, zeros, (size_t)(table_offset - data_end), data_end);
		if (rc < 0)
			rc = res_fail(err, -rc, data_end, "cannot write: %s", strerror(-rc));
	}
	if (rc == 0)
		rc = write_table(out, items, n, table_offset, err);
	g_free(buf);
	return rc;
}

int res_pack_write(int out_fd, struct res_pack_item *items, uint32_t n,
		   const struct res_pack_options *opt, struct res_error *err)
{
	struct sink out = { out_fd, NULL };

	return pack(&out, items, n, opt, err);
}

int res_pack_build(GByteArray *out, struct res_pack_item *items, uint32_t n,
		   const struct res_pack_options *opt, struct res_error *err)
{
	struct sink sink = { -1, out };

	g_byte_array_set_size(out, 0);
	return pack(&sink, items, n, opt, err);
}
