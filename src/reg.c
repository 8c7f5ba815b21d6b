#include "reg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cp1251.h"
#include "res.h"

enum { HEADER_SIZE = 6, SLOT_SIZE = 6, SECTION_HEAD = 4, KEY_HEAD = 3 };

static uint16_t get_u16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static unsigned char *put_u16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	return p + 2;
}

static unsigned char *put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
	return p + 4;
}

static unsigned char *put_bytes(unsigned char *p, const void *s, size_t len)
{
	if (len)
		memcpy(p, s, len);
	return p + len;
}

/* Floats move as bit patterns through memory, never through arithmetic, a
 * double or a by-value float (x87 would quiet a signalling NaN), so that
 * every NaN payload survives. */
static void bits_to_float(float *f, uint32_t bits)
{
	memcpy(f, &bits, sizeof *f);
}

static uint32_t float_to_bits(const float *f)
{
	uint32_t bits;

	memcpy(&bits, f, sizeof bits);
	return bits;
}

/* ---- the model ---------------------------------------------------------- */

static char *copy_name(const char *s, size_t len)
{
	char *c = g_malloc(len + 1);

	if (len)
		memcpy(c, s, len);
	c[len] = '\0';
	return c;
}

static void key_free(gpointer p)
{
	struct reg_key *k = p;

	if (reg_key_base(k) != REG_INT && reg_key_base(k) != REG_FLOAT)
		for (uint32_t i = 0; i < k->count; i++)
			g_free(k->v.str[i].s);
	g_free(k->v.i); /* the union's members share the one allocation */
	g_free(k->name);
	g_free(k);
}

static void section_free(gpointer p)
{
	struct reg_section *s = p;

	g_ptr_array_unref(s->keys);
	g_free(s->name);
	g_free(s);
}

struct reg_file *reg_new(void)
{
	struct reg_file *f = g_new0(struct reg_file, 1);

	f->sections = g_ptr_array_new_with_free_func(section_free);
	return f;
}

void reg_free(struct reg_file *f)
{
	if (!f)
		return;
	g_ptr_array_unref(f->sections);
	g_free(f);
}

struct reg_section *reg_add_section(struct reg_file *f, const char *name, size_t len)
{
	struct reg_section *s = g_new0(struct reg_section, 1);

	s->name = copy_name(name, len);
	s->name_len = len;
	s->keys = g_ptr_array_new_with_free_func(key_free);
	g_ptr_array_add(f->sections, s);
	return s;
}

struct reg_key *reg_add_key(struct reg_section *s, const char *name, size_t len,
			    uint8_t type, uint32_t count)
{
	struct reg_key *k = g_new0(struct reg_key, 1);

	k->name = copy_name(name, len);
	k->name_len = len;
	k->type = type;
	k->count = count;
	switch (reg_key_base(k)) {
	case REG_INT:
		k->v.i = g_new0(int32_t, count);
		break;
	case REG_FLOAT:
		k->v.f = g_new0(float, count);
		break;
	default:
		/* an unknown type gets string storage: freeing stays simple */
		k->v.str = g_new0(struct reg_str, count);
		for (uint32_t i = 0; i < count; i++)
			k->v.str[i].s = g_malloc0(1);
		break;
	}
	g_ptr_array_add(s->keys, k);
	return k;
}

void reg_set_string(struct reg_key *k, uint32_t i, const char *s, size_t len)
{
	g_free(k->v.str[i].s);
	k->v.str[i].s = copy_name(s, len);
	k->v.str[i].len = len;
}

const char *reg_msg_name(const char *name, size_t len, char out[REG_MSG_NAME])
{
	GString *u = g_string_new(NULL);

	cp1251_to_utf8(name, len < 40 ? len : 40, "", u); /* at most 3 bytes each */
	g_strlcpy(out, u->str, REG_MSG_NAME);
	g_string_free(u, TRUE);
	return out;
}

/* ---- the reader ----------------------------------------------------------- */

/* One slot of a table: where its payload is (absolute) and which slot it is. */
struct slot {
	uint64_t off;
	uint32_t index;
};

/* The byte where a payload must end and what lies there, for messages. */
struct bound {
	uint64_t end;
	const char *what;
};

static int slot_order(const void *pa, const void *pb)
{
	const struct slot *a = pa, *b = pb;

	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return (a->index > b->index) - (a->index < b->index);
}

/* Decodes the n slots of a table at `at` into out, sorted by payload
 * offset: that order is the order the file was written in (FORMATS 2.3).
 * Offsets are relative to base and must land in [lo, hi); a payload shared
 * by two slots is refused, so that a small file cannot fan out into a big
 * model. */
static int read_slots(const unsigned char *d, uint64_t at, uint32_t n, uint64_t base,
		      uint64_t lo, uint64_t hi, const char *what, struct slot *out,
		      struct format_error *err)
{
	for (uint32_t i = 0; i < n; i++) {
		const unsigned char *p = d + at + (uint64_t)i * SLOT_SIZE;
		int16_t next = (int16_t)get_u16(p);
		uint64_t off = base + get_u32(p + 2);

		if (next < -1 || next >= (int32_t)n)
			return format_fail(err, EINVAL, at + (uint64_t)i * SLOT_SIZE,
					   "%s slot %u: next index %d is neither -1 nor a slot of the %u",
					   what, i, next, n);
		if (off < lo || off >= hi)
			return format_fail(err, EINVAL, at + (uint64_t)i * SLOT_SIZE + 2,
					   "%s slot %u: payload offset %llu is outside %llu..%llu",
					   what, i, (unsigned long long)off, (unsigned long long)lo,
					   (unsigned long long)hi - 1);
		out[i].off = off;
		out[i].index = i;
	}
	qsort(out, n, sizeof *out, slot_order);
	for (uint32_t i = 1; i < n; i++)
		if (out[i].off == out[i - 1].off)
			return format_fail(err, EINVAL, at + (uint64_t)out[i].index * SLOT_SIZE + 2,
					   "%s slots %u and %u share the payload at %llu", what,
					   out[i - 1].index, out[i].index, (unsigned long long)out[i].off);
	return 0;
}

static int past(struct format_error *err, uint64_t at, const char *field, uint64_t need,
		const struct bound *b)
{
	return format_fail(err, EINVAL, at, "%s at %llu needs %llu bytes, runs past %s at %llu",
			   field, (unsigned long long)at, (unsigned long long)need, b->what,
			   (unsigned long long)b->end);
}

static void read_values(const unsigned char *p, struct reg_key *k)
{
	for (uint32_t i = 0; i < k->count; i++, p += 4) {
		if (reg_key_base(k) == REG_INT)
			k->v.i[i] = (int32_t)get_u32(p);
		else
			bits_to_float(&k->v.f[i], get_u32(p));
	}
}

static int read_strings(const unsigned char *d, uint64_t at, const struct bound *b,
			struct reg_key *k, struct format_error *err)
{
	for (uint32_t i = 0; i < k->count; i++) {
		uint16_t len;

		if (b->end - at < 2)
			return past(err, at, "string length", 2, b);
		len = get_u16(d + at);
		if (b->end - at - 2 < len)
			return past(err, at, "string", 2 + (uint64_t)len, b);
		reg_set_string(k, i, (const char *)d + at + 2, len);
		at += 2 + (uint64_t)len;
	}
	return 0;
}

/* Decodes the key record at `at`, which must end by b->end. */
static int parse_key(const unsigned char *d, uint64_t at, const struct bound *b,
		     struct reg_section *s, struct format_error *err)
{
	uint64_t p = at + KEY_HEAD, least;
	uint32_t count = 1;
	uint16_t name_len;
	uint8_t type;
	struct reg_key *k;

	if (b->end - at < KEY_HEAD)
		return past(err, at, "key record", KEY_HEAD, b);
	type = d[at];
	name_len = get_u16(d + at + 1);
	if ((type & ~REG_ARRAY) > REG_STRING)
		return format_fail(err, EINVAL, at, "key at %llu has unknown type 0x%02x",
				   (unsigned long long)at, type);
	if (b->end - p < name_len)
		return past(err, at + 1, "key name", name_len, b);
	p += name_len;
	if (type & REG_ARRAY) {
		if (b->end - p < 2)
			return past(err, p, "array count", 2, b);
		count = get_u16(d + p);
		p += 2;
	}
	/* a string takes at least its 2-byte length: a count that the bytes
	 * left cannot hold is refused before anything is allocated for it */
	least = (uint64_t)count * ((type & ~REG_ARRAY) == REG_STRING ? 2 : 4);
	if (b->end - p < least)
		return past(err, p, "values", least, b);
	k = reg_add_key(s, (const char *)d + at + KEY_HEAD, name_len, type, count);
	if (reg_key_base(k) != REG_STRING) {
		read_values(d + p, k);
		return 0;
	}
	return read_strings(d, p, b, k, err);
}

static int parse_keys(const unsigned char *d, const struct slot *slots, uint32_t m,
		      const struct bound *b, struct reg_section *s, struct format_error *err)
{
	for (uint32_t j = 0; j < m; j++) {
		struct bound kb = { b->end, b->what };

		if (j + 1 < m)
			kb = (struct bound){ slots[j + 1].off, "the next key" };
		if (parse_key(d, slots[j].off, &kb, s, err) < 0)
			return -1;
	}
	return 0;
}

/* Decodes the section payload at `at`, which must end by b->end. */
static int parse_section(const unsigned char *d, uint64_t at, const struct bound *b,
			 struct reg_file *f, struct format_error *err)
{
	uint64_t table;
	uint16_t m, name_len;
	struct slot *slots;
	struct reg_section *s;
	int rc;

	if (b->end - at < SECTION_HEAD)
		return past(err, at, "section header", SECTION_HEAD, b);
	m = get_u16(d + at);
	name_len = get_u16(d + at + 2);
	if (m > REG_MAX_SLOTS)
		return format_fail(err, EINVAL, at, "section at %llu has %u keys, more than %u",
				   (unsigned long long)at, m, REG_MAX_SLOTS);
	if (b->end - at - SECTION_HEAD < name_len)
		return past(err, at + 2, "section name", name_len, b);
	table = at + SECTION_HEAD + name_len;
	if (b->end - table < (uint64_t)m * SLOT_SIZE)
		return past(err, table, "key slot table", (uint64_t)m * SLOT_SIZE, b);
	slots = g_new(struct slot, m ? m : 1);
	rc = read_slots(d, table, m, at, table + (uint64_t)m * SLOT_SIZE, b->end, "key", slots, err);
	if (rc == 0) {
		s = reg_add_section(f, (const char *)d + at + SECTION_HEAD, name_len);
		rc = parse_keys(d, slots, m, b, s, err);
	}
	g_free(slots);
	return rc;
}

int reg_parse(const unsigned char *data, size_t len, struct reg_file **out,
	      struct format_error *err)
{
	struct bound file_end = { len, "the end of the file" };
	struct reg_file *f;
	struct slot *slots;
	uint64_t table_end;
	uint16_t n;
	int rc = 0;

	*out = NULL;
	if (len < HEADER_SIZE)
		return format_fail(err, EINVAL, 0, "truncated header: %zu bytes, need 6", len);
	if (get_u32(data) != REG_MAGIC)
		return format_fail(err, EINVAL, 0, "bad magic %08x, not a REG file", get_u32(data));
	n = get_u16(data + 4);
	table_end = HEADER_SIZE + (uint64_t)n * SLOT_SIZE;
	if (n > REG_MAX_SLOTS)
		return format_fail(err, EINVAL, 4, "%u sections, more than %u", n, REG_MAX_SLOTS);
	if (table_end > len)
		return format_fail(err, EINVAL, 4,
				   "slot table of %u sections ends at %llu, past the end of the file at %zu",
				   n, (unsigned long long)table_end, len);
	slots = g_new(struct slot, n ? n : 1);
	f = reg_new();
	rc = read_slots(data, HEADER_SIZE, n, 0, table_end, len, "section", slots, err);
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		struct bound b = file_end;

		if (i + 1 < n)
			b = (struct bound){ slots[i + 1].off, "the next section" };
		rc = parse_section(data, slots[i].off, &b, f, err);
	}
	g_free(slots);
	if (rc < 0) {
		reg_free(f);
		return -1;
	}
	*out = f;
	return 0;
}

/* ---- the writer ----------------------------------------------------------- */

static uint64_t key_size(const struct reg_key *k)
{
	uint64_t size = KEY_HEAD + (uint64_t)k->name_len + (reg_key_is_array(k) ? 2 : 0);

	if (reg_key_base(k) != REG_STRING)
		return size + 4 * (uint64_t)k->count;
	for (uint32_t i = 0; i < k->count; i++)
		size += 2 + (uint64_t)k->v.str[i].len;
	return size;
}

static uint64_t section_size(const struct reg_section *s)
{
	uint64_t size = SECTION_HEAD + (uint64_t)s->name_len + (uint64_t)s->keys->len * SLOT_SIZE;

	for (guint j = 0; j < s->keys->len; j++)
		size += key_size(g_ptr_array_index(s->keys, j));
	return size;
}

static int check_key(const struct reg_section *s, const struct reg_key *k,
		     struct format_error *err)
{
	char sn[REG_MSG_NAME], kn[REG_MSG_NAME];

	reg_msg_name(s->name, s->name_len, sn);
	reg_msg_name(k->name, k->name_len, kn);
	if (k->name_len > REG_MAX_LEN)
		return format_fail(err, ERANGE, 0, "[%s]: a key name of %zu bytes, more than %u",
				   sn, k->name_len, REG_MAX_LEN);
	if ((k->type & ~REG_ARRAY) > REG_STRING)
		return format_fail(err, EINVAL, 0, "[%s] %s: unknown type 0x%02x", sn, kn, k->type);
	if (!reg_key_is_array(k) && k->count != 1)
		return format_fail(err, EINVAL, 0, "[%s] %s: %u values but not an array",
				   sn, kn, k->count);
	if (k->count > REG_MAX_LEN)
		return format_fail(err, ERANGE, 0, "[%s] %s: %u values, more than %u",
				   sn, kn, k->count, REG_MAX_LEN);
	for (uint32_t i = 0; reg_key_base(k) == REG_STRING && i < k->count; i++)
		if (k->v.str[i].len > REG_MAX_LEN)
			return format_fail(err, ERANGE, 0, "[%s] %s: a string of %zu bytes, more than %u",
					   sn, kn, k->v.str[i].len, REG_MAX_LEN);
	return 0;
}

static int check_section(const struct reg_section *s, struct format_error *err)
{
	if (s->name_len > REG_MAX_LEN)
		return format_fail(err, ERANGE, 0, "a section name of %zu bytes, more than %u",
				   s->name_len, REG_MAX_LEN);
	if (s->keys->len > REG_MAX_SLOTS)
		return format_fail(err, ERANGE, 0, "[%s]: %u keys, more than %u",
				   reg_msg_name(s->name, s->name_len, (char[REG_MSG_NAME]){ 0 }),
				   s->keys->len, REG_MAX_SLOTS);
	for (guint j = 0; j < s->keys->len; j++)
		if (check_key(s, g_ptr_array_index(s->keys, j), err) < 0)
			return -1;
	return 0;
}

/* Everything the fields cannot hold, before a byte is written. */
static int check_file(const struct reg_file *f, guint have, uint64_t *total,
		      struct format_error *err)
{
	*total = HEADER_SIZE + (uint64_t)f->sections->len * SLOT_SIZE;
	if (f->sections->len > REG_MAX_SLOTS)
		return format_fail(err, ERANGE, 0, "%u sections, more than %u",
				   f->sections->len, REG_MAX_SLOTS);
	for (guint i = 0; i < f->sections->len; i++) {
		const struct reg_section *s = g_ptr_array_index(f->sections, i);

		if (check_section(s, err) < 0)
			return -1;
		*total += section_size(s);
	}
	/* every offset is below the total, so a total that fits u32 (and the
	 * byte array) makes every offset fit its field */
	if (*total > G_MAXUINT - have)
		return format_fail(err, ERANGE, 0, "a REG of %llu bytes is too large",
				   (unsigned long long)*total);
	return 0;
}

/* Slot tables by the RES algorithm (FORMATS 1.5, 2.2): where each of the n
 * names (in model order) goes and the chain link of each slot.  owner is
 * the section of the keys placed, NULL when the sections are. */
static int place(uint32_t n, const char *const *names, const size_t *lens, uint32_t *slot_of,
		 int32_t *next_of_slot, const struct reg_section *owner, struct format_error *err)
{
	struct res_error rerr = { 0 };
	char sn[REG_MSG_NAME] = "", name[REG_MSG_NAME];

	for (uint32_t k = 0; k < n; k++) {
		if (res_hash(names[k], lens[k], 1) >= 0)
			continue;
		if (owner)
			reg_msg_name(owner->name, owner->name_len, sn);
		return format_fail(err, EINVAL, 0,
				   "%s%s%s%s: the name's signed-char byte sum is negative, the game's hash cannot place it",
				   owner ? "[" : "", sn, owner ? "] " : "",
				   reg_msg_name(names[k], lens[k], name));
	}
	if (res_build_chains(n, names, lens, slot_of, next_of_slot, &rerr) < 0)
		return format_fail(err, rerr.code, 0, "%s", rerr.msg);
	return 0;
}

/* Writes the slot table of n payloads at p; size[k] is payload k's size,
 * first its offset. */
static int write_table(unsigned char *p, uint32_t n, const char *const *names,
		       const size_t *lens, const uint64_t *size, uint64_t first,
		       const struct reg_section *owner, struct format_error *err)
{
	uint32_t *slot_of = g_new(uint32_t, n ? n : 1);
	int32_t *next_of_slot = g_new(int32_t, n ? n : 1);
	int rc = place(n, names, lens, slot_of, next_of_slot, owner, err);

	for (uint32_t k = 0; rc == 0 && k < n; k++) {
		unsigned char *slot = p + (size_t)slot_of[k] * SLOT_SIZE;

		put_u16(slot, (uint16_t)next_of_slot[slot_of[k]]);
		put_u32(slot + 2, (uint32_t)first);
		first += size[k];
	}
	g_free(slot_of);
	g_free(next_of_slot);
	return rc;
}

static unsigned char *write_key(unsigned char *p, const struct reg_key *k)
{
	*p++ = k->type;
	p = put_u16(p, (uint16_t)k->name_len);
	p = put_bytes(p, k->name, k->name_len);
	if (reg_key_is_array(k))
		p = put_u16(p, (uint16_t)k->count);
	for (uint32_t i = 0; i < k->count; i++) {
		if (reg_key_base(k) == REG_INT) {
			p = put_u32(p, (uint32_t)k->v.i[i]);
		} else if (reg_key_base(k) == REG_FLOAT) {
			p = put_u32(p, float_to_bits(&k->v.f[i]));
		} else {
			p = put_u16(p, (uint16_t)k->v.str[i].len);
			p = put_bytes(p, k->v.str[i].s, k->v.str[i].len);
		}
	}
	return p;
}

/* Writes section s at p; returns the end of it, or NULL on error. */
static unsigned char *write_section(unsigned char *p, const struct reg_section *s,
				    struct format_error *err)
{
	uint32_t m = s->keys->len;
	const char **names = g_new(const char *, m ? m : 1);
	size_t *lens = g_new(size_t, m ? m : 1);
	uint64_t *size = g_new(uint64_t, m ? m : 1);
	unsigned char *table;
	int rc;

	for (uint32_t j = 0; j < m; j++) {
		const struct reg_key *k = g_ptr_array_index(s->keys, j);

		names[j] = k->name;
		lens[j] = k->name_len;
		size[j] = key_size(k);
	}
	p = put_u16(p, (uint16_t)m);
	p = put_u16(p, (uint16_t)s->name_len);
	p = put_bytes(p, s->name, s->name_len);
	table = p;
	rc = write_table(table, m, names, lens, size,
			 SECTION_HEAD + s->name_len + (uint64_t)m * SLOT_SIZE, s, err);
	p += (size_t)m * SLOT_SIZE;
	for (uint32_t j = 0; rc == 0 && j < m; j++)
		p = write_key(p, g_ptr_array_index(s->keys, j));
	g_free(names);
	g_free(lens);
	g_free(size);
	return rc == 0 ? p : NULL;
}

static int write_file(unsigned char *p, const struct reg_file *f, struct format_error *err)
{
	uint32_t n = f->sections->len;
	const char **names = g_new(const char *, n ? n : 1);
	size_t *lens = g_new(size_t, n ? n : 1);
	uint64_t *size = g_new(uint64_t, n ? n : 1);
	int rc;

	for (uint32_t i = 0; i < n; i++) {
		const struct reg_section *s = g_ptr_array_index(f->sections, i);

		names[i] = s->name;
		lens[i] = s->name_len;
		size[i] = section_size(s);
	}
	p = put_u32(p, REG_MAGIC);
	p = put_u16(p, (uint16_t)n);
	rc = write_table(p, n, names, lens, size, HEADER_SIZE + (uint64_t)n * SLOT_SIZE, NULL, err);
	p += (size_t)n * SLOT_SIZE;
	for (uint32_t i = 0; rc == 0 && i < n; i++) {
		p = write_section(p, g_ptr_array_index(f->sections, i), err);
		rc = p ? 0 : -1;
	}
	g_free(names);
	g_free(lens);
	g_free(size);
	return rc;
}

int reg_write(const struct reg_file *f, GByteArray *out, struct format_error *err)
{
	guint have = out->len;
	uint64_t total;

	if (check_file(f, have, &total, err) < 0)
		return -1;
	g_byte_array_set_size(out, have + (guint)total);
	if (write_file(out->data + have, f, err) < 0) {
		g_byte_array_set_size(out, have);
		return -1;
	}
	return 0;
}
