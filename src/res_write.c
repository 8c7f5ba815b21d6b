#define _GNU_SOURCE
#include "res_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib.h>

enum { COPY_CHUNK = 1 << 20 };

static int fail(struct res_error *err, int code, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	err->code = code;
	err->offset = offset;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

static int item_order(const void *pa, const void *pb)
{
	const struct res_pack_item *a = pa, *b = pb;

	int c = res_name_order(a->name, a->name_len, b->name, b->name_len);

	if (c == 0) /* case variants: keep the output independent of qsort */
		c = memcmp(a->name, b->name, a->name_len < b->name_len ? a->name_len : b->name_len);
	return c ? c : (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

/* Opens the item's data; *fd is the caller's to close when *owned is set. */
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

static int write_all(int fd, const void *buf, size_t len, uint64_t at)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(at + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

/* Streams length bytes of in (at in_off) either to out at out_at, or into
 * the checksum when out is -1. */
static int stream(int in, uint64_t in_off, uint64_t length, int out, uint64_t out_at,
		  GChecksum *sum, char *buf)
{
	uint64_t done = 0;

	while (done < length) {
		size_t want = length - done < COPY_CHUNK ? (size_t)(length - done) : COPY_CHUNK;
		ssize_t n;

		if (out >= 0) {
			off_t ip = (off_t)(in_off + done), op = (off_t)(out_at + done);

			n = copy_file_range(in, &ip, out, &op, want, 0);
			if (n > 0) {
				done += (uint64_t)n;
				continue;
			}
			/* not supported between these files: fall back to read/write */
		}
		n = pread(in, buf, want, (off_t)(in_off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO; /* the source shrank under us */
		if (out >= 0) {
			int rc = write_all(out, buf, (size_t)n, out_at + done);

			if (rc < 0)
				return rc;
		} else {
			g_checksum_update(sum, (const guchar *)buf, (gssize)n);
		}
		done += (uint64_t)n;
	}
	return 0;
}

static int item_digest(const struct res_pack_item *it, char *buf, char **digest_out)
{
	GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
	int fd = -1, owned = 0, rc;
	uint64_t off = 0;

	rc = item_open(it, &fd, &owned, &off);
	if (rc == 0) {
		rc = stream(fd, off, it->length, -1, 0, sum, buf);
		if (owned)
			close(fd);
	}
	if (rc == 0)
		*digest_out = g_strdup_printf("%llu:%s", (unsigned long long)it->length,
					      g_checksum_get_string(sum));
	g_checksum_free(sum);
	return rc;
}

static uint64_t align_up(uint64_t v, int align)
{
	return align ? (v + 15) & ~(uint64_t)15 : v;
}

/* Assigns data offsets; *end gets the offset right after the data. */
static int place_data(struct res_pack_item *items, uint32_t n, const struct res_pack_options *opt,
		      char *buf, uint64_t *end, struct res_error *err)
{
	GHashTable *seen = opt->dedup ? g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL) : NULL;
	uint64_t pos = RES_HEADER_SIZE;
	int rc = 0;

	for (uint32_t i = 0; i < n && rc == 0; i++) {
		struct res_pack_item *it = &items[i];
		char *digest = NULL;
		gpointer first;

		if (seen) {
			rc = item_digest(it, buf, &digest);
			if (rc < 0) {
				fail(err, -rc, 0, "cannot read %.*s: %s", (int)it->name_len, it->name, strerror(-rc));
				break;
			}
			if (g_hash_table_lookup_extended(seen, digest, NULL, &first)) {
				it->data_offset = items[GPOINTER_TO_UINT(first)].data_offset;
				it->path = NULL; /* marks a shared copy: nothing to write */
				it->fd = -1;
				g_free(digest);
				continue;
			}
			g_hash_table_insert(seen, digest, GUINT_TO_POINTER(i));
		}
		pos = align_up(pos, opt->align);
		if (pos + it->length > UINT32_MAX) {
			rc = fail(err, EFBIG, pos, "archive would pass 4 GiB at %.*s", (int)it->name_len, it->name);
			break;
		}
		it->data_offset = (uint32_t)pos;
		pos += it->length;
	}
	if (seen)
		g_hash_table_destroy(seen);
	*end = pos;
	return rc;
}

static int write_data(int out_fd, const struct res_pack_item *items, uint32_t n, char *buf,
		      struct res_error *err)
{
	for (uint32_t i = 0; i < n; i++) {
		const struct res_pack_item *it = &items[i];
		int fd = -1, owned = 0, rc;
		uint64_t off = 0;

		if (!it->path && it->fd < 0)
			continue; /* shared with an earlier item */
		rc = item_open(it, &fd, &owned, &off);
		if (rc == 0) {
			rc = stream(fd, off, it->length, out_fd, it->data_offset, NULL, buf);
			if (owned)
				close(fd);
		}
		if (rc < 0)
			return fail(err, -rc, it->data_offset, "cannot copy %.*s: %s",
				    (int)it->name_len, it->name, strerror(-rc));
	}
	return 0;
}

static int write_table(int out_fd, const struct res_pack_item *items, uint32_t n,
		       uint64_t table_offset, struct res_error *err)
{
	const char **names = g_new(const char *, n ? n : 1);
	size_t *lens = g_new(size_t, n ? n : 1);
	uint32_t *slot_of = g_new(uint32_t, n ? n : 1);
	int32_t *next_of = g_new(int32_t, n ? n : 1);
	size_t table_len = (size_t)n * RES_ENTRY_SIZE;
	GByteArray *block = g_byte_array_sized_new((guint)table_len + 16);
	unsigned char hdr[RES_HEADER_SIZE];
	struct res_header h = { n, (uint32_t)table_offset, 0 };
	int rc = 0;

	for (uint32_t i = 0; i < n; i++) {
		names[i] = items[i].name;
		lens[i] = items[i].name_len;
		h.names_len += (uint32_t)items[i].name_len;
	}
	if (table_offset + table_len + h.names_len > UINT32_MAX)
		rc = fail(err, EFBIG, table_offset, "archive would pass 4 GiB");
	else if (n && res_build_chains(n, names, lens, slot_of, next_of, err) < 0)
		rc = -1;
	if (rc == 0) {
		uint32_t name_off = 0;

		g_byte_array_set_size(block, (guint)(table_len + h.names_len));
		for (uint32_t i = 0; i < n; i++) {
			struct res_entry e = {
				.next = next_of[slot_of[i]], .length = (uint32_t)items[i].length,
				.offset = items[i].data_offset, .mtime = items[i].mtime,
				.name_len = (uint16_t)items[i].name_len, .name_off = name_off,
			};

			res_entry_encode(&e, block->data + (size_t)slot_of[i] * RES_ENTRY_SIZE);
			memcpy(block->data + table_len + name_off, items[i].name, items[i].name_len);
			name_off += (uint32_t)items[i].name_len;
		}
		if (n == 0)
			h.table_offset = 0; /* the empty archive as other tools write it */
		res_header_encode(&h, hdr);
		rc = write_all(out_fd, block->data, block->len, table_offset);
		if (rc == 0)
			rc = write_all(out_fd, hdr, sizeof hdr, 0);
		if (rc < 0)
			rc = fail(err, -rc, table_offset, "cannot write: %s", strerror(-rc));
	}
	g_byte_array_unref(block);
	g_free(names);
	g_free(lens);
	g_free(slot_of);
	g_free(next_of);
	return rc;
}

int res_pack_write(int out_fd, struct res_pack_item *items, uint32_t n,
		   const struct res_pack_options *opt, struct res_error *err)
{
	char *buf = g_malloc(COPY_CHUNK);
	uint64_t data_end = 0, table_offset;
	int rc = 0;

	for (uint32_t i = 0; i < n; i++)
		if (items[i].name_len == 0 || items[i].name_len > UINT16_MAX || items[i].length > UINT32_MAX) {
			rc = fail(err, items[i].name_len ? EFBIG : EINVAL, 0,
				  "entry %u: name of %zu bytes or %llu bytes of data cannot be stored",
				  i, items[i].name_len, (unsigned long long)items[i].length);
			break;
		}
	if (rc == 0) {
		qsort(items, n, sizeof *items, item_order);
		rc = place_data(items, n, opt, buf, &data_end, err);
	}
	if (rc == 0)
		rc = write_data(out_fd, items, n, buf, err);
	table_offset = align_up(data_end, opt->align);
	if (rc == 0 && table_offset > data_end) {
		static const char zeros[16];

		/* pad explicitly: the file may be shorter than table_offset otherwise */
		rc = write_all(out_fd, zeros, (size_t)(table_offset - data_end), data_end);
		if (rc < 0)
			rc = fail(err, -rc, data_end, "cannot write: %s", strerror(-rc));
	}
	if (rc == 0)
		rc = write_table(out_fd, items, n, table_offset, err);
	g_free(buf);
	return rc;
}
