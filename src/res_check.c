#include "res_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp1251.h"

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

/* found_by[i]: what the game's lookup of entry i's name finds. */
static void check_entry(struct checker *c, uint32_t i, uint64_t archive_len,
			const int64_t *found_by)
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
		problem(c, entry_at(t, i) + 16, "entry %u: name %u+%u %s",
			i, e->name_off, e->name_len, res_name_fault_text(t, i));
		return;
	}
	name = res_entry_name(t, i);
	if (res_hash(name, e->name_len, t->hdr.count) < 0) {
		GString *shown = g_string_new(NULL);

		cp1251_to_utf8(name, e->name_len, "\r\n", shown); /* one line for the report */
		problem(c, entry_at(t, i) + 16, "entry %u \"%s\": negative signed-char hash sum; the game cannot look it up",
			i, shown->str);
		g_string_free(shown, TRUE);
		return;
	}
	found = found_by[i];
	if (found < 0)
		problem(c, entry_at(t, i), "entry %u \"%.*s\": not reachable through its hash chain",
			i, (int)e->name_len, name);
	else if (found != i)
		problem(c, entry_at(t, i),
			"entry %u \"%.*s\": the hash lookup finds entry %lld instead (case duplicate)",
			i, (int)e->name_len, name, (long long)found);
}


/* ---- every entry's lookup at once ------------------------------------------ */

/* The chain links make a functional graph: every slot links to at most one
 * other, so the walk from a slot is a path that ends where a chain ends or
 * runs into a circle.  res_lookup per entry costs the chain's length, which
 * makes one long chain quadratic (100 000 entries took 10 s, a 30 MB
 * archive would take a quarter of an hour).  Here the paths are laid out
 * once, so that "is slot i on the walk from slot s, after how many steps"
 * costs constant time.  The end of every chain is one more node, END = n,
 * linked to itself: every walk ends on a circle. */
struct paths {
	uint32_t n;
	uint32_t *link;        /* next slot, END where the chain ends */
	uint32_t *depth;       /* steps to the first slot on a circle */
	uint32_t *root;        /* that slot */
	uint32_t *len;         /* on a circle: its length; 0 off circles */
	uint32_t *circle;      /* on a circle: the slot that names it */
	uint32_t *pos;         /* on a circle: steps from that slot */
	uint32_t *tin, *tout;  /* off circles: the interval of the slot's subtree
				* in a walk of the reversed links */
};

static void paths_free(struct paths *p)
{
	free(p->link);
	free(p->depth);
	free(p->root);
	free(p->len);
	free(p->circle);
	free(p->pos);
	free(p->tin);
	free(p->tout);
}

static int paths_alloc(struct paths *p, uint32_t n)
{
	size_t m = (size_t)n + 1;

	memset(p, 0, sizeof *p);
	p->n = n;
	p->link = malloc(m * sizeof *p->link);
	p->depth = malloc(m * sizeof *p->depth);
	p->root = malloc(m * sizeof *p->root);
	p->len = calloc(m, sizeof *p->len);
	p->circle = malloc(m * sizeof *p->circle);
	p->pos = malloc(m * sizeof *p->pos);
	p->tin = malloc(m * sizeof *p->tin);
	p->tout = malloc(m * sizeof *p->tout);
	if (p->link && p->depth && p->root && p->len && p->circle && p->pos && p->tin && p->tout)
		return 0;
	paths_free(p);
	return -1;
}

static int on_circle(const struct paths *p, uint32_t v)
{
	return p->len[v] != 0;
}

/* Marks the circle through slot v. */
static void mark_circle(struct paths *p, uint32_t v)
{
	uint32_t k = 0, u = v;

	do {
		p->circle[u] = v;
		p->pos[u] = k++;
		p->depth[u] = 0;
		p->root[u] = u;
		u = p->link[u];
	} while (u != v);
	do {
		p->len[u] = k;
		u = p->link[u];
	} while (u != v);
}

/* Depth, root and circles of every slot; stack has room for n + 1. */
static void lay_out(struct paths *p, unsigned char *state, uint32_t *stack)
{
	for (uint32_t s = 0; s <= p->n; s++) {
		size_t top = 0;
		uint32_t v = s;

		while (state[v] == 0) { /* 0: not seen, 1: on this walk, 2: done */
			state[v] = 1;
			stack[top++] = v;
			v = p->link[v];
		}
		if (state[v] == 1)
			mark_circle(p, v);
		while (top > 0) {
			uint32_t u = stack[--top];

			if (!on_circle(p, u)) {
				p->depth[u] = p->depth[p->link[u]] + 1;
				p->root[u] = p->root[p->link[u]];
			}
			state[u] = 2;
		}
	}
}

/* Reversed links of the slots off circles, grouped by the slot they link
 * to: the children of v are child[start[v] .. start[v + 1]). */
static void reverse_links(const struct paths *p, size_t *start, uint32_t *child, size_t *cur)
{
	size_t m = (size_t)p->n + 1;

	for (uint32_t u = 0; u <= p->n; u++)
		if (!on_circle(p, u))
			start[(size_t)p->link[u] + 1]++;
	for (size_t v = 0; v < m; v++)
		cur[v] = start[v + 1] += start[v];
	for (uint32_t u = p->n + 1; u-- > 0;)
		if (!on_circle(p, u))
			child[--cur[p->link[u]]] = u;
}

/* Numbers the trees that hang off the circles, depth first: slot i (off
 * circles) lies on the walk from s iff s is in i's subtree. */
static void number_trees(struct paths *p, const size_t *start, const uint32_t *child,
			 size_t *cur, uint32_t *stack)
{
	uint32_t clock = 0;

	for (uint32_t r = 0; r <= p->n; r++) {
		size_t top = 0;

		if (!on_circle(p, r))
			continue;
		stack[top++] = r;
		cur[r] = start[r];
		while (top > 0) {
			uint32_t v = stack[top - 1];

			if (cur[v] < start[v + 1]) {
				uint32_t u = child[cur[v]++];

				p->tin[u] = clock++;
				cur[u] = start[u];
				stack[top++] = u;
			} else {
				p->tout[v] = clock;
				top--;
			}
		}
	}
}

static int paths_build(struct paths *p, const struct res_table *t)
{
	uint32_t n = t->hdr.count;
	size_t m = (size_t)n + 1;
	unsigned char *state = calloc(m, 1);
	uint32_t *stack = malloc(m * sizeof *stack), *child = malloc(m * sizeof *child);
	size_t *start = calloc(m + 1, sizeof *start), *cur = malloc(m * sizeof *cur);
	int rc = -1;

	if (state && stack && child && start && cur && paths_alloc(p, n) == 0) {
		for (uint32_t i = 0; i < n; i++) {
			int32_t next = t->entries[i].next;

			p->link[i] = next >= 0 && (uint32_t)next < n ? (uint32_t)next : n;
		}
		p->link[n] = n;
		lay_out(p, state, stack);
		reverse_links(p, start, child, cur);
		number_trees(p, start, child, cur, stack);
		rc = 0;
	}
	free(state);
	free(stack);
	free(child);
	free(start);
	free(cur);
	return rc;
}

/* Steps the walk from slot s takes to reach slot i, or -1 when it never
 * does.  Every walk through the n slots meets each slot at most once
 * before it repeats, so within the n steps res_lookup allows. */
static int64_t steps(const struct paths *p, uint32_t s, uint32_t i)
{
	uint32_t r = p->root[s];

	if (on_circle(p, i)) {
		if (p->circle[r] != p->circle[i])
			return -1;
		return (int64_t)p->depth[s]
		       + ((uint64_t)p->pos[i] + p->len[i] - p->pos[r]) % p->len[i];
	}
	if (on_circle(p, s) || p->tin[s] < p->tin[i] || p->tin[s] >= p->tout[i])
		return -1;
	return (int64_t)p->depth[s] - p->depth[i];
}

/* An entry whose name the game can look up. */
struct named {
	const char *name;
	uint16_t len;
	uint32_t slot;
};

static int lower_ascii(int c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Names that res_name_equal takes for one sort next to each other. */
static int by_name(const void *pa, const void *pb)
{
	const struct named *a = pa, *b = pb;

	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	for (uint16_t k = 0; k < a->len; k++) {
		int x = lower_ascii((unsigned char)a->name[k]), y = lower_ascii((unsigned char)b->name[k]);

		if (x != y)
			return x < y ? -1 : 1;
	}
	return (a->slot > b->slot) - (a->slot < b->slot);
}

/* The names a lookup cannot tell apart start at one slot (the hash lowers
 * ASCII too); the lookup finds the one its walk meets first. */
static void look_up_group(const struct paths *p, const struct named *v, size_t count,
			  int64_t *found_by)
{
	uint32_t h = (uint32_t)res_hash(v[0].name, v[0].len, p->n);
	int64_t best = -1, best_steps = -1;

	for (size_t k = 0; k < count; k++) {
		int64_t d = steps(p, h, v[k].slot);

		if (d >= 0 && (best < 0 || d < best_steps)) {
			best = v[k].slot;
			best_steps = d;
		}
	}
	for (size_t k = 0; k < count; k++)
		found_by[v[k].slot] = best;
}

int64_t *res_lookup_all(const struct res_table *t)
{
	uint32_t n = t->hdr.count;
	int64_t *found_by = malloc((n ? n : 1) * sizeof *found_by);
	struct named *v = malloc((n ? n : 1) * sizeof *v);
	struct paths p;
	size_t m = 0;

	if (!found_by || !v || (n && paths_build(&p, t) < 0)) {
		free(found_by);
		free(v);
		return NULL;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct res_entry *e = &t->entries[i];

		found_by[i] = -1;
		if (!(res_entry_faults(t, i, UINT64_MAX) & RES_FAULT_NAME)
		    && res_hash(res_entry_name(t, i), e->name_len, n) >= 0)
			v[m++] = (struct named){ res_entry_name(t, i), e->name_len, i };
	}
	qsort(v, m, sizeof *v, by_name);
	for (size_t a = 0, b; a < m; a = b) {
		for (b = a + 1; b < m && v[b].len == v[a].len
		     && res_name_equal(v[a].name, v[a].len, v[b].name, v[b].len); b++)
			;
		look_up_group(&p, v + a, b - a, found_by);
	}
	if (n)
		paths_free(&p);
	free(v);
	return found_by;
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
	int64_t *found_by = res_lookup_all(t);

	if (!found_by) {
		problem(&c, 0, "no memory to look the entries up");
		return c.problems;
	}
	for (uint32_t i = 0; i < t->hdr.count; i++)
		check_entry(&c, i, archive_len, found_by);
	free(found_by);
	check_cycles(&c);
	check_overlaps(&c);
	return c.problems;
}
