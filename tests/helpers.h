/* Test helpers: archives made by hand (so that malformed ones can be made
 * too), archives made by the writer from memory, and temporary files. */
#ifndef EIFS_TEST_HELPERS_H
#define EIFS_TEST_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "res.h"
#include "res_write.h"

/* Data given as a string literal: pointer and length without the NUL. */
#define H_STR(s) (s), (sizeof(s) - 1)

/* ---- raw bytes, encoded here and not by the code under test ---------- */

/* Writes n bytes at offset at, growing b with zero bytes when needed. */
void h_put(GByteArray *b, size_t at, const void *p, size_t n);
void h_put_u16(GByteArray *b, size_t at, uint16_t v);
void h_put_u32(GByteArray *b, size_t at, uint32_t v);
uint32_t h_get_u32(const GByteArray *b, size_t at);

void h_put_header(GByteArray *b, uint32_t magic, uint32_t count, uint32_t table_offset,
		  uint32_t names_len);
void h_put_entry(GByteArray *b, uint32_t table_offset, uint32_t slot, int32_t next,
		 uint32_t length, uint32_t offset, uint32_t mtime, uint16_t name_len,
		 uint32_t name_off);

/* Byte offsets of the fields of entry slot in an archive. */
enum { H_NEXT = 0, H_LENGTH = 4, H_OFFSET = 8, H_MTIME = 12, H_NAME_LEN = 16, H_NAME_OFF = 18 };
size_t h_entry_at(const GByteArray *b, uint32_t slot);

/* One entry of a hand-made archive; slot i of the table holds files[i]. */
struct h_file {
	const char *name;   /* cp1251, NUL-terminated */
	const void *data;
	size_t len;
	int32_t next;       /* stored verbatim */
	uint32_t mtime;
};

/* An archive laid out like DBEditor's: data from offset 16 without padding,
 * in slot order, then the table, then the names in slot order.  Nothing is
 * checked: chains are whatever the caller says. */
GByteArray *h_archive(const struct h_file *files, uint32_t n);

/* ---- through the writer ---------------------------------------------- */

struct h_item {
	const char *name;   /* cp1251 */
	const void *data;
	size_t len;
	uint32_t mtime;
};

/* Packs items with res_pack_write (their data read by fd from one
 * temporary file) and returns the archive bytes, or NULL with err filled. */
GByteArray *h_pack(const struct h_item *items, uint32_t n, int align, int dedup,
		   struct res_error *err);

/* ---- temporary files ------------------------------------------------- */

/* A fresh directory under $TMPDIR; h_tmpdir_remove deletes it with all
 * its contents. */
char *h_tmpdir(void);
void h_tmpdir_remove(char *dir);

/* Writes len bytes to dir/name (name may contain '/': parents are made);
 * returns the path (g_free it). */
char *h_write_file(const char *dir, const char *name, const void *buf, size_t len);

/* An anonymous read-write file holding buf, positioned at 0. */
int h_memfd(const void *buf, size_t len);

/* Reads a whole fd from offset 0. */
GByteArray *h_read_fd(int fd);

/* ---- collecting res_check reports ------------------------------------ */

struct h_reports {
	GPtrArray *msgs;    /* char * */
	GArray *offsets;    /* uint64_t */
};

void h_reports_init(struct h_reports *r);
void h_reports_free(struct h_reports *r);
void h_report(void *ctx, uint64_t offset, const char *problem);
/* Index of the first report containing needle, or -1. */
int h_reports_find(const struct h_reports *r, const char *needle);

#endif
