/* Writing a RES archive the way the original packer does (FORMATS 1.5, 1.6):
 * names in packer order, signed-char hash with coalesced chains, data in
 * name order, optionally 16-byte aligned and de-duplicated. */
#ifndef EIFS_RES_WRITE_H
#define EIFS_RES_WRITE_H

#include <glib.h>
#include <time.h>

#include "res.h"

struct res_pack_item {
	char *name;          /* cp1251 bytes, '\' between directories; not owned */
	size_t name_len;
	uint32_t mtime;
	uint64_t length;
	const char *path;    /* data comes from this file, or when NULL ... */
	const unsigned char *data; /* ... from length bytes here, or when NULL ... */
	int fd;              /* ... from length bytes of fd at offset; items that
			      * name the same bytes of the same fd share one copy */
	uint64_t offset;
	uint32_t data_offset; /* set by the writer */
	struct timespec listed_ctime; /* path items, when set: the file's change
			      * time when it was listed; a file changed since
			      * (or no longer of its length) once copied fails
			      * the pack with EAGAIN: it may have changed while
			      * it was read */
	int hidden;          /* another entry of this name (in any ASCII case)
			      * is what the game's lookup finds: this one
			      * goes after it, so that the game still does */
};

struct res_pack_options {
	int align;  /* start every entry and the table on a 16-byte boundary */
	int dedup;  /* store identical contents once */
};

/* Sorts items into packer order and writes the whole archive to out_fd from
 * offset 0.  Returns 0, or -1 with err filled (code is an errno value). */
int res_pack_write(int out_fd, struct res_pack_item *items, uint32_t n,
		   const struct res_pack_options *opt, struct res_error *err);

/* The same archive built in out (emptied first), for nested archives that
 * become the data of an entry of their parent. */
int res_pack_build(GByteArray *out, struct res_pack_item *items, uint32_t n,
		   const struct res_pack_options *opt, struct res_error *err);

/* Sorts items into packer order: the order of the name block and of the
 * insertion into the hash table (FORMATS 1.5). */
void res_pack_sort(struct res_pack_item *items, uint32_t n);

/* Encodes the table and name block of items, taken in the given order
 * (res_pack_sort's for the game's tools' layout) with their data_offset
 * set, into out (emptied first); *h gets the header for a table placed at
 * table_offset.  Returns 0, or -1 with err filled. */
int res_pack_table(const struct res_pack_item *items, uint32_t n, uint64_t table_offset,
		   GByteArray *out, struct res_header *h, struct res_error *err);

#endif
