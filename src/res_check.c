#include "res_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct checker {
	const struct res_table *t;
	res_check_report report;
	void *ctx;
	unsigned problems;
};

static void problem(struct checker *c, uint64_t offset, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	c->report(c->ctx, offset, msg);
	c->problems++;
}

static uint64_t entry_at(const struct res_table *t, uint32_t i)
{
	return (uint64_t)t->hdr.table_offset + (uint64_t)i * RES_ENTRY_SIZE;
}

static void check_entry(struct checker *c, uint32_t i, uint64_t archive_len)
{
	const struct res_table *t = c->t;
	const struct res_entry *e = &t->entries[i];
	unsigned faults = res_entry_faults(t, i, archive_len);
	uint64_t table_end = entry_at(t, t->hdr.count) + t->hdr.names_len;
	const char *name;
	int64_t found;

	if (e->next < -1 || e->next >= (int64_t)t->hdr.count)
		problem(c, entry_at(t, i), "entry %u: next_index %d is out of range", i, e->next);
	if (faults & RES_FAULT_DATA)
		problem(c, entry_at(t, i) + 4, "entry %u: data %u+%u ends past the archive end %llu",
			i, e->offset, e->length, (unsigned long long)archive_len);
	else if (e->length && (e->offset < RES_HEADER_SIZE
			       || ((uint64_t)e->offset + e->length > t->hdr.table_offset
				   && e->offset < table_end)))
		problem(c, entry_at(t, i) + 8, "entry %u: data %u+%u overlaps the header or the table",
			i, e->offset, e->length);
	if (faults & RES_FAULT_NAME) {
		problem(c, entry_at(t, i) + 16, "entry %u: name %u+%u is outside the name block",
			i, e->name_off, e->name_len);
		return;
	}
	name = res_entry_name(t, i);
	if (res_hash(name, e->name_len, t->hdr.count) < 0) {
		problem(c, entry_at(t, i) + 16,
			"entry %u \"%.*s\": negative signed-char hash sum; the game cannot look it up",
			i, (int)e->name_len, name);
		return;
	}
	found = res_lookup(t, name, e->name_len);
	if (found < 0)
		problem(c, entry_at(t, i), "entry %u \"%.*s\": not reachable through its hash chain",
			i, (int)e->name_len, name);
	else if (found != i)
		problem(c, entry_at(t, i),
			"entry %u \"%.*s\": the hash lookup finds entry %lld instead (case duplicate)",
			i, (int)e->name_len, name, (long long)found);
}

static int by_offset(const void *a, const void *b)
{
	const struct res_entry *x = *(const struct res_entry *const *)a;
	const struct res_entry *y = *(const struct res_entry *const *)b;

	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return (x->length > y->length) - (x->length < y->length);
}

/* Entries may share one copy of their data, but never overlap partly. */
static void check_overlaps(struct checker *c)
{
	const struct res_table *t = c->t;
	const struct res_entry **sorted = malloc(sizeof *sorted * (t->hdr.count ? t->hdr.count : 1));
	uint64_t reach = 0;
	const struct res_entry *far = NULL;

	if (!sorted) {
		problem(c, 0, "no memory to check overlaps");
		return;
	}
	for (uint32_t i = 0; i < t->hdr.count; i++)
		sorted[i] = &t->entries[i];
	qsort(sorted, t->hdr.count, sizeof *sorted, by_offset);
	for (uint32_t k = 0; k < t->hdr.count; k++) {
		const struct res_entry *e = sorted[k];

		if (e->length == 0)
			continue;
		if (far && e->offset < reach && !(e->offset == far->offset && e->length == far->length))
			problem(c, e->offset, "data %u+%u partly overlaps data %u+%u",
				e->offset, e->length, far->offset, far->length);
		if ((uint64_t)e->offset + e->length > reach) {
			reach = (uint64_t)e->offset + e->length;
			far = e;
		}
	}
	free(sorted);
}

/* A chain that runs in a circle hangs the game's lookup of any name that
 * hashes into it and is not there, even when every entry is reachable. */
static void check_cycles(struct checker *c)
{
	const struct res_table *t = c->t;
	int64_t n = t->hdr.count;
	unsigned char *state = calloc(n ? (size_t)n : 1, 1); /* 1: on this walk, 2: done */

	if (!state) {
		problem(c, 0, "no memory to check chains");
		return;
	}
	for (int64_t s = 0; s < n; s++) {
		int64_t i = s;

		while (i >= 0 && i < n && state[i] == 0) {
			state[i] = 1;
			i = t->entries[i].next;
		}
		if (i >= 0 && i < n && state[i] == 1)
			problem(c, entry_at(t, (uint32_t)i), "entry %u: its chain runs in a circle",
				(uint32_t)i);
		for (i = s; i >= 0 && i < n && state[i] == 1; i = t->entries[i].next)
			state[i] = 2;
	}
	free(state);
}

unsigned res_check(const struct res_table *t, uint64_t archive_len,
		   res_check_report report, void *ctx)
{
	struct checker c = { t, report, ctx, 0 };

	for (uint32_t i = 0; i < t->hdr.count; i++)
		check_entry(&c, i, archive_len);
	check_cycles(&c);
	check_overlaps(&c);
	return c.problems;
}
