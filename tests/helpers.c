#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- raw bytes --------------------------------------------------------- */

void h_put(GByteArray *b, size_t at, const void *p, size_t n)
{
	if (at + n > b->len) {
		guint old = b->len;

		g_byte_array_set_size(b, (guint)(at + n));
		memset(b->data + old, 0, b->len - old);
	}
	if (n)
		memcpy(b->data + at, p, n);
}

void h_put_u16(GByteArray *b, size_t at, uint16_t v)
{
	unsigned char p[2] = { (unsigned char)v, (unsigned char)(v >> 8) };

	h_put(b, at, p, sizeof p);
}

void h_put_u32(GByteArray *b, size_t at, uint32_t v)
{
	unsigned char p[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 24) };

	h_put(b, at, p, sizeof p);
}

uint32_t h_get_u32(const GByteArray *b, size_t at)
{
	const unsigned char *p = b->data + at;

	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void h_put_header(GByteArray *b, uint32_t magic, uint32_t count, uint32_t table_offset,
		  uint32_t names_len)
{
	h_put_u32(b, 0, magic);
	h_put_u32(b, 4, count);
	h_put_u32(b, 8, table_offset);
	h_put_u32(b, 12, names_len);
}

void h_put_entry(GByteArray *b, uint32_t table_offset, uint32_t slot, int32_t next,
		 uint32_t length, uint32_t offset, uint32_t mtime, uint16_t name_len,
		 uint32_t name_off)
{
	size_t at = (size_t)table_offset + (size_t)slot * 22;

	h_put_u32(b, at + H_NEXT, (uint32_t)next);
	h_put_u32(b, at + H_LENGTH, length);
	h_put_u32(b, at + H_OFFSET, offset);
	h_put_u32(b, at + H_MTIME, mtime);
	h_put_u16(b, at + H_NAME_LEN, name_len);
	h_put_u32(b, at + H_NAME_OFF, name_off);
}

size_t h_entry_at(const GByteArray *b, uint32_t slot)
{
	return (size_t)h_get_u32(b, 8) + (size_t)slot * 22;
}

GByteArray *h_archive(const struct h_file *files, uint32_t n)
{
	GByteArray *b = g_byte_array_new();
	uint32_t pos = 16, table_offset, name_off = 0;

	h_put_header(b, RES_MAGIC, n, 0, 0);
	for (uint32_t i = 0; i < n; i++) {
		h_put(b, pos, files[i].data, files[i].len);
		pos += (uint32_t)files[i].len;
	}
	table_offset = pos;
	pos = 16;
	for (uint32_t i = 0; i < n; i++) {
		size_t len = strlen(files[i].name);

		h_put_entry(b, table_offset, i, files[i].next, (uint32_t)files[i].len, pos,
			    files[i].mtime, (uint16_t)len, name_off);
		h_put(b, table_offset + (size_t)n * 22 + name_off, files[i].name, len);
		pos += (uint32_t)files[i].len;
		name_off += (uint32_t)len;
	}
	h_put_header(b, RES_MAGIC, n, table_offset, name_off);
	return b;
}

/* ---- through the writer ------------------------------------------------ */

GByteArray *h_pack(const struct h_item *items, uint32_t n, int align, int dedup,
		   struct res_error *err)
{
	struct res_pack_item *it = g_new0(struct res_pack_item, n ? n : 1);
	struct res_pack_options opt = { align, dedup };
	GByteArray *data = g_byte_array_new();
	GByteArray *out = NULL;
	int in_fd, out_fd;

	for (uint32_t i = 0; i < n; i++) {
		it[i].name = g_strdup(items[i].name);
		it[i].name_len = strlen(items[i].name);
		it[i].mtime = items[i].mtime;
		it[i].length = items[i].len;
		it[i].fd = -1;
		it[i].offset = data->len;
		h_put(data, data->len, items[i].data, items[i].len);
	}
	in_fd = h_memfd(data->data, data->len);
	out_fd = h_memfd(NULL, 0);
	for (uint32_t i = 0; i < n; i++)
		it[i].fd = in_fd;
	if (res_pack_write(out_fd, it, n, &opt, err) == 0)
		out = h_read_fd(out_fd);
	close(in_fd);
	close(out_fd);
	for (uint32_t i = 0; i < n; i++)
		g_free(it[i].name);
	g_free(it);
	g_byte_array_unref(data);
	return out;
}

/* ---- temporary files --------------------------------------------------- */

char *h_tmpdir(void)
{
	char *dir = g_build_filename(g_get_tmp_dir(), "eifs-unit-XXXXXX", NULL);

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		abort();
	}
	return dir;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void h_tmpdir_remove(char *dir)
{
	if (dir)
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	g_free(dir);
}

char *h_write_file(const char *dir, const char *name, const void *buf, size_t len)
{
	char *path = g_build_filename(dir, name, NULL);
	char *parent = g_path_get_dirname(path);
	GError *e = NULL;

	g_mkdir_with_parents(parent, 0755);
	g_free(parent);
	if (!g_file_set_contents(path, buf, (gssize)len, &e)) {
		fprintf(stderr, "%s\n", e->message);
		abort();
	}
	return path;
}

int h_memfd(const void *buf, size_t len)
{
	int fd = memfd_create("eifs-unit", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0) {
		perror("memfd_create");
		abort();
	}
	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n <= 0) {
			perror("write");
			abort();
		}
		done += (size_t)n;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

GByteArray *h_read_fd(int fd)
{
	GByteArray *b = g_byte_array_new();
	unsigned char chunk[4096];
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, chunk, sizeof chunk, off)) > 0) {
		g_byte_array_append(b, chunk, (guint)n);
		off += n;
	}
	return b;
}

/* ---- collecting res_check reports -------------------------------------- */

void h_reports_init(struct h_reports *r)
{
	r->msgs = g_ptr_array_new_with_free_func(g_free);
	r->offsets = g_array_new(FALSE, FALSE, sizeof(uint64_t));
}

void h_reports_free(struct h_reports *r)
{
	g_ptr_array_unref(r->msgs);
	g_array_unref(r->offsets);
}

void h_report(void *ctx, uint64_t offset, const char *problem)
{
	struct h_reports *r = ctx;

	g_ptr_array_add(r->msgs, g_strdup(problem));
	g_array_append_val(r->offsets, offset);
}

int h_reports_find(const struct h_reports *r, const char *needle)
{
	for (guint i = 0; i < r->msgs->len; i++)
		if (strstr(r->msgs->pdata[i], needle))
			return (int)i;
	return -1;
}
