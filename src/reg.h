/* REG, the game's binary INI (FORMATS.md section 2): reader, model and a
 * writer that lays files out exactly as the original tools do.  No FUSE,
 * no globals; errors are returned, never printed. */
#ifndef EIFS_REG_H
#define EIFS_REG_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "format_error.h"

#define REG_MAGIC 0x45AB3EFBu

enum reg_type { REG_INT = 0, REG_FLOAT = 1, REG_STRING = 2 };

enum {
	REG_ARRAY = 0x80,      /* type bit: the key holds a u16 count of values */
	REG_MAX_LEN = 65535,   /* names, strings and array counts are u16 */
	/* Slot-table links are signed 16-bit, so a table can address slots
	 * 0..32767 only: the limit for sections and for keys of a section. */
	REG_MAX_SLOTS = 32768,
};

/* One string value: cp1251 bytes, len of them, plus a NUL after them. */
struct reg_str {
	char *s;
	size_t len;
};

struct reg_key {
	char *name;          /* cp1251 bytes, NUL-terminated copy */
	size_t name_len;
	uint8_t type;        /* reg_type | REG_ARRAY for arrays */
	uint32_t count;      /* values; always 1 without REG_ARRAY */
	union {
		int32_t *i;
		float *f;          /* bit patterns kept: NaN payloads survive */
		struct reg_str *str;
	} v;
};

struct reg_section {
	char *name;          /* cp1251 bytes, NUL-terminated copy */
	size_t name_len;
	GPtrArray *keys;     /* struct reg_key *, in payload (insertion) order */
};

/* The model keeps payload order, which is the order of the INI the file
 * was made from (FORMATS 2.3). */
struct reg_file {
	GPtrArray *sections; /* struct reg_section * */
};

static inline enum reg_type reg_key_base(const struct reg_key *k)
{
	return (enum reg_type)(k->type & ~REG_ARRAY);
}

static inline int reg_key_is_array(const struct reg_key *k)
{
	return (k->type & REG_ARRAY) != 0;
}

/* Parses a whole REG file.  Every offset, count and length is checked
 * against the input, so a crafted file cannot make it read outside data or
 * allocate more than a small multiple of len.  Sections and keys come out
 * in payload-offset order.  On error *out is NULL and err says what is
 * wrong where (a byte offset into data). */
int reg_parse(const unsigned char *data, size_t len, struct reg_file **out,
	      struct format_error *err);

/* Appends the REG bytes of f to out (FORMATS 2.3 writer rules: payloads
 * contiguous in model order, slot tables by the RES chain algorithm with
 * the signed-char hash).  Refuses what the format or the game's hash
 * cannot hold; out is left as it was then. */
int reg_write(const struct reg_file *f, GByteArray *out, struct format_error *err);

void reg_free(struct reg_file *f);

/* ---- building a model (the INI reader, tests, editors) ------------- */

struct reg_file *reg_new(void);

/* Appends a section / a key; names are copied.  A new key holds count
 * zero values (empty strings); a key without REG_ARRAY must have count 1. */
struct reg_section *reg_add_section(struct reg_file *f, const char *name, size_t len);
struct reg_key *reg_add_key(struct reg_section *s, const char *name, size_t len,
			    uint8_t type, uint32_t count);

/* Replaces string value i of a REG_STRING key with a copy of s. */
void reg_set_string(struct reg_key *k, uint32_t i, const char *s, size_t len);

/* A name for an error message: its first 40 bytes as UTF-8, NUL and the
 * undefined byte as %XX.  Returns out. */
enum { REG_MSG_NAME = 128 };
const char *reg_msg_name(const char *name, size_t len, char out[REG_MSG_NAME]);

#endif
