/* RES archives (.res .mod .anm .bon .mpr .mq): header, hash-linked entry
 * table, name block.  FORMATS.md section 1.  No FUSE, no globals: the
 * reader works on a window of an open file, the writer on caller's items. */
#ifndef EIFS_RES_H
#define EIFS_RES_H

#include <stddef.h>
#include <stdint.h>

#define RES_MAGIC 0x019CE23Cu
enum { RES_HEADER_SIZE = 16, RES_ENTRY_SIZE = 22 };

/* Where and why a parse failed: code is an errno value, offset is relative
 * to the start of the archive. */
struct res_error {
	int code;
	uint64_t offset;
	char msg[400]; /* a path and the reason after it: cut short, the reason is lost */
};

struct res_header {
	uint32_t count;
	uint32_t table_offset;
	uint32_t names_len;
};

struct res_entry {
	int32_t next;       /* next slot of the collision chain, -1 = end */
	uint32_t length;
	uint32_t offset;    /* from the start of the archive */
	uint32_t mtime;
	uint16_t name_len;
	uint16_t zero;      /* no hidden padding: decoded tables compare with memcmp */
	uint32_t name_off;  /* into the name block */
};

struct res_table {
	struct res_header hdr;
	struct res_entry *entries; /* hdr.count of them */
	char *names;               /* hdr.names_len bytes, not NUL-terminated */
};

/* A byte range of an open file that holds one archive. */
struct res_window {
	int fd;
	uint64_t base;
	uint64_t len;
};

/* The longest name eifs reads or writes.  The game's archives hold none
 * over 44 bytes; every use of a name (its components, how it is shown,
 * the game's hash) costs its length, and 65 535 entries may each name the
 * same 64 KiB: a 1.5 MB archive would cost 4 GB of name bytes per walk. */
#define RES_NAME_MAX 1024
#define RES_NAME_MAX_TEXT "1024"

/* Faults of one entry; an archive with faulty entries still lists the rest. */
enum {
	RES_FAULT_NAME = 1 << 0, /* name outside the name block, or over RES_NAME_MAX */
	RES_FAULT_DATA = 1 << 1, /* data outside the archive */
};

/* Fills err (when not NULL) and returns -1: the errors of every module
 * that reads or writes archive files. */
int res_fail(struct res_error *err, int code, uint64_t offset, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

int res_is_magic(const unsigned char *buf, size_t len);

/* Validates a 16-byte header against the archive length. */
int res_header_decode(const unsigned char *buf, uint64_t archive_len,
		      struct res_header *h, struct res_error *err);

/* Decodes the table and name block that follow a decoded header; buf holds
 * the bytes from table_offset to table_offset + 22*count + names_len. */
int res_table_decode(const struct res_header *h, const unsigned char *buf,
		     struct res_table *t, struct res_error *err);

/* Whole-archive parse from memory (the fuzz target and unit tests). */
int res_table_parse(const unsigned char *buf, size_t len, struct res_table *t,
		    struct res_error *err);

/* Reads header, table and names of the archive in w. */
int res_table_read(const struct res_window *w, struct res_table *t,
		   struct res_error *err);

void res_table_free(struct res_table *t);

/* RES_FAULT_* of entry i; inline, as a directory build asks it of every
 * entry. */
static inline unsigned res_entry_faults(const struct res_table *t, uint32_t i, uint64_t archive_len)
{
	const struct res_entry *e = &t->entries[i];
	unsigned faults = 0;

	if ((uint64_t)e->name_off + e->name_len > t->hdr.names_len || e->name_len > RES_NAME_MAX)
		faults |= RES_FAULT_NAME;
	if ((uint64_t)e->offset + e->length > archive_len)
		faults |= RES_FAULT_DATA;
	return faults;
}

/* What is wrong with the name of an entry with RES_FAULT_NAME, for a
 * message: "name 10+2000 <this>". */
static inline const char *res_name_fault_text(const struct res_table *t, uint32_t i)
{
	return t->entries[i].name_len > RES_NAME_MAX ? "is longer than " RES_NAME_MAX_TEXT " bytes" : "is outside the name block";
}

static inline const char *res_entry_name(const struct res_table *t, uint32_t i)
{
	return t->names + t->entries[i].name_off;
}

/* The game's hash: sum of the name's bytes as *signed* chars after lowering
 * ASCII A-Z, modulo count.  Returns -1 when the sum is negative (the game's
 * behaviour is undefined then) or count is 0. */
int64_t res_hash(const char *name, size_t len, uint32_t count);

/* Equality as the game compares names: ASCII case-insensitive. */
int res_name_equal(const char *a, size_t alen, const char *b, size_t blen);

/* The original packer's order: backslash-separated components compared
 * one by one, bytes with ASCII upper-cased. */
int res_name_order(const char *a, size_t alen, const char *b, size_t blen);

/* The game's lookup through the hash chain.  Returns the entry index or -1;
 * a cyclic chain ends the walk after count steps. */
int64_t res_lookup(const struct res_table *t, const char *name, size_t len);

/* Places n names, given in insertion order, in a table of n slots the way
 * the original tools do (FORMATS 1.5).  slot_of[i] receives the slot of
 * name i, next_of_slot[s] the chain link stored in slot s.  Returns 0, or
 * -1 with err filled when a name has a negative hash. */
int res_build_chains(uint32_t n, const char *const *names, const size_t *lens,
		     uint32_t *slot_of, int32_t *next_of_slot, struct res_error *err);

/* Encodes one table entry / a header into its on-disk bytes. */
void res_entry_encode(const struct res_entry *e, unsigned char out[RES_ENTRY_SIZE]);
void res_header_encode(const struct res_header *h, unsigned char out[RES_HEADER_SIZE]);

#endif
