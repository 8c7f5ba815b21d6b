#include "res.h"

#include "bigmem.h"
#include "cp1251.h"
#include "io.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint16_t get_u16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

int res_fail(struct res_error *err, int code, uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	if (err) {
		err->code = code;
		err->offset = offset;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof err->msg, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int res_is_magic(const unsigned char *buf, size_t len)
{
	return len >= 4 && get_u32(buf) == RES_MAGIC;
}

int res_header_decode(const unsigned char *buf, uint64_t archive_len,
		      struct res_header *h, struct res_error *err)
{
	uint64_t table_end;

	if (archive_len < RES_HEADER_SIZE)
		return res_fail(err, EINVAL, 0, "truncated header: %llu bytes, need 16",
			    (unsigned long long)archive_len);
	if (!res_is_magic(buf, 4))
		return res_fail(err, EINVAL, 0, "bad magic %08x", get_u32(buf));
	h->count = get_u32(buf + 4);
	h->table_offset = get_u32(buf + 8);
	h->names_len = get_u32(buf + 12);
	if (h->count == 0 && h->names_len == 0)
		return 0; /* empty archive; eilib writes table_offset 0 */
	if (h->table_offset < RES_HEADER_SIZE)
		return res_fail(err, EINVAL, 8, "table offset %u inside the header", h->table_offset);
	table_end = (uint64_t)h->table_offset + (uint64_t)h->count * RES_ENTRY_SIZE;
	if (table_end > archive_len)
		return res_fail(err, EINVAL, 4,
			    "table of %u entries at %u ends at %llu, past the archive end %llu",
			    h->count, h->table_offset,
			    (unsigned long long)table_end, (unsigned long long)archive_len);
	if (table_end + h->names_len > archive_len)
		return res_fail(err, EINVAL, 12,
			    "name block of %u bytes at %llu ends at %llu, past the archive end %llu",
			    h->names_len, (unsigned long long)table_end,
			    (unsigned long long)(table_end + h->names_len), (unsigned long long)archive_len);
	return 0;
}

/* Decodes entry i of the raw table at buf into out[i].  All fields are
 * read before out[i] is written, which may overlap buf (res_table_read). */
static inline void decode_entry(const unsigned char *buf, uint32_t i, struct res_entry *out)
{
	const unsigned char *p = buf + (size_t)i * RES_ENTRY_SIZE;
	int32_t next = (int32_t)get_u32(p);
	uint32_t length = get_u32(p + 4), offset = get_u32(p + 8), mtime = get_u32(p + 12);
	uint16_t name_len = get_u16(p + 16);
	uint32_t name_off = get_u32(p + 18);
	struct res_entry *e = &out[i];

	e->next = next;
	e->length = length;
	e->offset = offset;
	e->mtime = mtime;
	e->name_len = name_len;
	e->zero = 0;
	e->name_off = name_off;
}

static void decode_entries(const unsigned char *buf, uint32_t n, struct res_entry *out)
{
	for (uint32_t i = 0; i < n; i++)
		decode_entry(buf, i, out);
}

/* The decoded entries and the name block after them, in one block: one
 * allocation, and a 100 000-entry table fits two huge pages, not three. */
static int table_alloc(const struct res_header *h, struct res_table *t, struct res_error *err)
{
	size_t entries_len = (size_t)h->count * sizeof *t->entries;

	memset(t, 0, sizeof *t);
	t->hdr = *h;
	t->entries = bigmem_alloc(entries_len + h->names_len + 1, 1);
	if (!t->entries)
		return res_fail(err, ENOMEM, 4, "no memory for a table of %u entries", h->count);
	t->names = (char *)t->entries + entries_len;
	return 0;
}

int res_table_decode(const struct res_header *h, const unsigned char *buf,
		     struct res_table *t, struct res_error *err)
{
	if (table_alloc(h, t, err) < 0)
		return -1;
	decode_entries(buf, h->count, t->entries);
	memcpy(t->names, buf + (size_t)h->count * RES_ENTRY_SIZE, h->names_len);
	return 0;
}

int res_table_parse(const unsigned char *buf, size_t len, struct res_table *t,
		    struct res_error *err)
{
	struct res_header h;

	memset(t, 0, sizeof *t);
	if (res_header_decode(buf, len, &h, err) < 0)
		return -1;
	return res_table_decode(&h, buf + (h.count || h.names_len ? h.table_offset : 0), t, err);
}

/* The raw table and the name block after it are read, with one read,
 * into the end of the decoded entries and the name block's place, and the
 * entries decoded in place, front to back: no buffer of their own (the
 * faults of fresh memory are most of the cost).  Entry i is written to
 * bytes [S*i, S*(i+1)) of the array and read from [gap + 22*i,
 * gap + 22*(i+1)), where S is the decoded size and gap = (S - 22) * count:
 * for i < count that starts at or past S*i, and entry i + 1 starts at or
 * past S*(i+1), so no raw entry is overwritten before it is read. */
int res_table_read(const struct res_window *w, struct res_table *t, struct res_error *err)
{
	unsigned char hdr[RES_HEADER_SIZE], *raw;
	struct res_header h;
	int rc;

	_Static_assert(sizeof(struct res_entry) == 24, "no hidden padding, and room to decode in place");
	memset(t, 0, sizeof *t);
	if (w->len < RES_HEADER_SIZE)
		return res_fail(err, EINVAL, 0, "truncated header: %llu bytes, need 16",
			    (unsigned long long)w->len);
	rc = io_pread_all(w->fd, hdr, sizeof hdr, w->base);
	if (rc < 0)
		return res_fail(err, -rc, 0, "cannot read header: %s", strerror(-rc));
	if (res_header_decode(hdr, w->len, &h, err) < 0 || table_alloc(&h, t, err) < 0)
		return -1;
	raw = (unsigned char *)t->entries + (size_t)h.count * (sizeof *t->entries - RES_ENTRY_SIZE);
	rc = io_pread_all_ahead(w->fd, raw, (size_t)h.count * RES_ENTRY_SIZE + h.names_len, w->base + h.table_offset);
	if (rc == 0)
		decode_entries(raw, h.count, t->entries);
	if (rc < 0) {
		res_table_free(t);
		return res_fail(err, -rc, h.table_offset, "cannot read table: %s", strerror(-rc));
	}
	return 0;
}

void res_table_free(struct res_table *t)
{
	bigmem_free(t->entries); /* the names too */
	t->entries = NULL;
	t->names = NULL;
}

static int lower_ascii(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

static int upper_ascii(int c)
{
	return c >= 'a' && c <= 'z' ? c - ('a' - 'A') : c;
}

int64_t res_hash(const char *name, size_t len, uint32_t count)
{
	int64_t sum = 0;

	for (size_t i = 0; i < len; i++)
		sum += (signed char)lower_ascii((unsigned char)name[i]);
	if (count == 0 || sum < 0)
		return -1;
	return sum % count;
}

int res_name_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	if (alen != blen)
		return 0;
	for (size_t i = 0; i < alen; i++)
		if (lower_ascii((unsigned char)a[i]) != lower_ascii((unsigned char)b[i]))
			return 0;
	return 1;
}

int res_name_order(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t i = 0, j = 0;

	for (;;) {
		int ca = i < alen && a[i] != '\\' ? upper_ascii((unsigned char)a[i]) : -1;
		int cb = j < blen && b[j] != '\\' ? upper_ascii((unsigned char)b[j]) : -1;

		if (ca != cb)
			return ca < cb ? -1 : 1;
		if (ca == -1) {
			/* both components ended: step over the separators */
			if (i >= alen || j >= blen)
				return (i < alen) - (j < blen);
		}
		i++;
		j++;
	}
}

int64_t res_lookup(const struct res_table *t, const char *name, size_t len)
{
	int64_t i = res_hash(name, len, t->hdr.count);

	for (uint32_t steps = 0; i >= 0 && i < t->hdr.count && steps < t->hdr.count; steps++) {
		const struct res_entry *e = &t->entries[i];

		if (!(res_entry_faults(t, (uint32_t)i, UINT64_MAX) & RES_FAULT_NAME)
		    && res_name_equal(name, len, res_entry_name(t, (uint32_t)i), e->name_len))
			return i;
		i = e->next;
	}
	return -1;
}

/* Chains only ever grow at their ends, by a slot that was free, so every
 * slot stays in the chain it joined, and the chain's first slot names it:
 * head_of[s] is that first slot, tail_of[h] the end of the chain that
 * starts at h.  A collision then finds the end at once rather than by
 * walking the chain, which crafted names of one hash make long. */
int res_build_chains(uint32_t n, const char *const *names, const size_t *lens,
		     uint32_t *slot_of, int32_t *next_of_slot, struct res_error *err)
{
	uint32_t *head_of = malloc((n ? n : 1) * sizeof *head_of);
	uint32_t *tail_of = malloc((n ? n : 1) * sizeof *tail_of);
	unsigned char *used = calloc(n ? n : 1, 1);
	int64_t last_free = (int64_t)n - 1;
	int rc = 0;

	if (!used || !head_of || !tail_of) {
		rc = res_fail(err, ENOMEM, 0, "no memory for %u slots", n);
		goto out;
	}
	for (uint32_t s = 0; s < n; s++)
		next_of_slot[s] = -1;
	for (uint32_t k = 0; k < n; k++) {
		int64_t i = res_hash(names[k], lens[k], n);

		if (i < 0) {
			GString *shown = g_string_new(NULL);

			cp1251_to_utf8(names[k], lens[k], "\r\n", shown); /* one line for the log */
			rc = res_fail(err, EINVAL, 0, "name %u (%s) has a negative signed-char hash sum: the game cannot find it",
				      k, shown->str);
			g_string_free(shown, TRUE);
			goto out;
		}
		if (used[i]) {
			uint32_t head = head_of[i];

			while (used[last_free])
				last_free--;
			next_of_slot[tail_of[head]] = (int32_t)last_free;
			tail_of[head] = (uint32_t)last_free;
			head_of[last_free] = head;
			i = last_free--;
		} else {
			head_of[i] = tail_of[i] = (uint32_t)i;
		}
		used[i] = 1;
		slot_of[k] = (uint32_t)i;
	}
out:
	free(used);
	free(head_of);
	free(tail_of);
	return rc;
}

void res_entry_encode(const struct res_entry *e, unsigned char out[RES_ENTRY_SIZE])
{
	put_u32(out, (uint32_t)e->next);
	put_u32(out + 4, e->length);
	put_u32(out + 8, e->offset);
	put_u32(out + 12, e->mtime);
	out[16] = (unsigned char)e->name_len;
	out[17] = (unsigned char)(e->name_len >> 8);
	put_u32(out + 18, e->name_off);
}

void res_header_encode(const struct res_header *h, unsigned char out[RES_HEADER_SIZE])
{
	put_u32(out, RES_MAGIC);
	put_u32(out + 4, h->count);
	put_u32(out + 8, h->table_offset);
	put_u32(out + 12, h->names_len);
}
