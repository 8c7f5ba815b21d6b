/* RES archives: the table parser from memory and from a file, the entry
 * checks, the game's lookup of every name (one by one and all at once),
 * the checker, the display names,
 * and archives nested in entries, walked like src/tree.c walks them. */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "names.h"
#include "res.h"
#include "res_check.h"

enum {
	MAX_DEPTH = 16,    /* TREE_MAX_DEPTH */
	/* Entries of one archive may all point at the same nested archive,
	 * whose entries may do the same: without a budget the walk grows
	 * exponentially with the depth.  The mount only opens what is
	 * listed, so it has no such fan-out. */
	MAX_ARCHIVES = 64,
};

static void count_report(void *ctx, uint64_t offset, const char *problem)
{
	FUZZ_CHECK(problem && problem[0], "res_check reported an empty problem at %llu",
		   (unsigned long long)offset);
	(*(unsigned *)ctx)++;
}

/* The file reader must see what the memory parser sees. */
static void compare_file_read(const uint8_t *data, size_t size, const struct res_table *mem)
{
	static int fd = -1;
	struct res_error err = { 0 };
	struct res_window w;
	struct res_table t;

	if (fd < 0)
		fd = memfd_create("fuzz_res", 0);
	if (fd < 0 || ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		return;
	w = (struct res_window){ fd, 0, size };
	if (res_table_read(&w, &t, &err) < 0) {
		FUZZ_CHECK(!mem, "res_table_read refused what res_table_parse read: %s", err.msg);
		return;
	}
	FUZZ_CHECK(mem, "res_table_read read what res_table_parse refused");
	FUZZ_CHECK(memcmp(&t.hdr, &mem->hdr, sizeof t.hdr) == 0, "headers differ");
	FUZZ_CHECK(memcmp(t.entries, mem->entries, sizeof *t.entries * t.hdr.count) == 0,
		   "entries differ");
	FUZZ_CHECK(memcmp(t.names, mem->names, t.hdr.names_len) == 0, "names differ");
	res_table_free(&t);
}

/* all: what res_lookup_all says the lookup of entry i finds */
static void check_name(const struct res_table *t, uint32_t i, const int64_t *all)
{
	const struct res_entry *e = &t->entries[i];
	const char *name = res_entry_name(t, i);
	int64_t found = res_lookup(t, name, e->name_len);
	GString *path = g_string_new(NULL);

	FUZZ_CHECK(found >= -1 && found < (int64_t)t->hdr.count, "lookup gave %lld of %u",
		   (long long)found, t->hdr.count);
	if (found >= 0) {
		const struct res_entry *f = &t->entries[found];

		FUZZ_CHECK(!(res_entry_faults(t, (uint32_t)found, UINT64_MAX) & RES_FAULT_NAME),
			   "lookup found entry %lld whose name is outside the block", (long long)found);
		FUZZ_CHECK(res_name_equal(name, e->name_len, res_entry_name(t, (uint32_t)found),
					  f->name_len), "lookup found another name");
	}
	FUZZ_CHECK(all[i] == found, "entry %u: res_lookup finds %lld, res_lookup_all %lld", i,
		   (long long)found, (long long)all[i]);
	names_display_path(name, e->name_len, path);
	FUZZ_CHECK(path->len > 0 && g_utf8_validate(path->str, (gssize)path->len, NULL),
		   "entry %u: display path is empty or not UTF-8", i);
	FUZZ_CHECK(!strstr(path->str, "//") && path->str[0] != '/', "entry %u: display path %s",
		   i, path->str);
	g_string_free(path, TRUE);
}

static void walk(const uint8_t *data, size_t size, unsigned depth, unsigned *budget)
{
	struct res_error err = { 0 };
	struct res_table t;
	unsigned problems = 0;
	int64_t *all;

	if (res_table_parse(data, size, &t, &err) < 0) {
		FUZZ_CHECK(err.code > 0 && err.msg[0], "refusal without errno or message");
		FUZZ_CHECK(!t.entries && !t.names, "a refused table holds memory");
		if (depth == 0)
			compare_file_read(data, size, NULL);
		return;
	}
	if (depth == 0)
		compare_file_read(data, size, &t);
	res_check(&t, size, count_report, &problems);
	all = res_lookup_all(&t);
	FUZZ_CHECK(all, "res_lookup_all: no memory");
	for (uint32_t i = 0; i < t.hdr.count; i++) {
		const struct res_entry *e = &t.entries[i];
		unsigned faults = res_entry_faults(&t, i, size);

		if (!(faults & RES_FAULT_NAME))
			check_name(&t, i, all);
		else
			FUZZ_CHECK(all[i] == -1, "entry %u: a name outside the block is found", i);
		if (faults & RES_FAULT_DATA)
			continue;
		FUZZ_CHECK((uint64_t)e->offset + e->length <= size, "entry %u passes the end", i);
		/* offset 0 would be this very archive again (tree.c refuses it too) */
		if (e->offset == 0 || !res_is_magic(data + e->offset, e->length)
		    || depth + 1 >= MAX_DEPTH || *budget == 0)
			continue;
		(*budget)--;
		walk(data + e->offset, e->length, depth + 1, budget);
	}
	free(all);
	res_table_free(&t);
}

void fuzz_res_one(const uint8_t *data, size_t size)
{
	unsigned budget = MAX_ARCHIVES;

	walk(data, size, 0, &budget);
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_res_one(data, size);
	return 0;
}
#endif
