/* RES archives: the hash, the chain builder, the writer, the reader and
 * the checker (src/res.c, src/res_write.c, src/res_check.c). */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "res.h"
#include "res_check.h"
#include "res_write.h"

/* "Gipat Medium (тип материала - кожа)" in cp1251: the one non-ASCII name of
 * the original Russian texts.res (FORMATS 1.3). */
#define GIPAT "Gipat Medium (\xf2\xe8\xef \xec\xe0\xf2\xe5\xf0\xe8\xe0\xeb\xe0 - \xea\xee\xe6\xe0)"
/* "xаАяЯэЭ" in cp1251: its signed-char sum is -48. */
#define NEGATIVE "x\xe0\xc0\xff\xdf\xfd\xdd"

static int64_t hash_of(const char *name, uint32_t count)
{
	return res_hash(name, strlen(name), count);
}

static uint16_t get_u16(const GByteArray *b, size_t at)
{
	return (uint16_t)(b->data[at] | b->data[at + 1] << 8);
}

/* Parses a copy of exactly len bytes, so that a read past them is an error
 * under valgrind or ASan. */
static int parse_exact(const void *buf, size_t len, struct res_table *t, struct res_error *err)
{
	unsigned char *copy = malloc(len ? len : 1);
	int rc;

	memcpy(copy, buf, len);
	rc = res_table_parse(copy, len, t, err);
	free(copy);
	return rc;
}

static void expect_refused(const void *buf, size_t len, uint64_t offset, const char *needle)
{
	struct res_table t;
	struct res_error err = { 0 };

	cr_assert_eq(parse_exact(buf, len, &t, &err), -1, "a %zu-byte archive was accepted", len);
	cr_assert_eq(err.code, EINVAL, "code %d for a %zu-byte archive", err.code, len);
	cr_assert_eq(err.offset, offset, "offset %llu, expected %llu (%s)",
		     (unsigned long long)err.offset, (unsigned long long)offset, err.msg);
	cr_assert(strstr(err.msg, needle), "message \"%s\" lacks \"%s\"", err.msg, needle);
	cr_assert_null(t.entries);
	cr_assert_null(t.names);
}

static void parse_ok(const GByteArray *a, struct res_table *t)
{
	struct res_error err = { 0 };

	cr_assert_eq(parse_exact(a->data, a->len, t, &err), 0, "parse failed at %llu: %s",
		     (unsigned long long)err.offset, err.msg);
}

static unsigned check_count(const struct res_table *t, uint64_t len, struct h_reports *r)
{
	h_reports_init(r);
	return res_check(t, len, h_report, r);
}

/* ---- the hash (FORMATS 1.3) -------------------------------------------- */

Test(hash, signed_chars_as_the_original_game)
{
	/* texts_ru.res: 3167 entries, the entry sits at slot 1089; an unsigned
	 * sum (5185) would give 2018 */
	cr_assert_eq(hash_of(GIPAT, 3167), 1089);
	cr_assert_eq(hash_of(GIPAT, 100000), 1089, "the signed sum itself is 1089");
	cr_assert_neq(hash_of(GIPAT, 3167), 5185 % 3167);
}

Test(hash, eilib_test_vector)
{
	/* EILib-C# GetEIStringHashTests: "C:\Temp\SomeFile.txt" sums to 2029 */
	cr_assert_eq(hash_of("C:\\Temp\\SomeFile.txt", 152), 53);
	cr_assert_eq(hash_of("C:\\Temp\\SomeFile.txt", 1u << 20), 2029);
	cr_assert_eq(hash_of("c:\\temp\\somefile.txt", 152), 53);
}

Test(hash, negative_sum_gives_minus_one)
{
	/* signed sum -48 (the unsigned sum of the C# test vector is 1488) */
	cr_assert_eq(hash_of(NEGATIVE, 3167), -1);
	cr_assert_eq(hash_of(NEGATIVE, 1), -1);
	cr_assert_eq(hash_of(NEGATIVE, 48), -1);
	/* one more 'x' (120) makes it positive: 72 */
	cr_assert_eq(hash_of(NEGATIVE "x", 1000), 72);
}

Test(hash, only_ascii_is_lowered)
{
	cr_assert_eq(hash_of("ABC", 1000), 294);
	cr_assert_eq(hash_of("abc", 1000), 294);
	cr_assert_eq(hash_of("_", 1000), '_', "'_' is not a letter");
	cr_assert_eq(hash_of("@[", 1000), '@' + '[', "the neighbours of A-Z stay");
	/* 'x' + cp1251 'А' (0xC0 = -64) and 'x' + 'а' (0xE0 = -32) */
	cr_assert_eq(hash_of("x\xc0", 1000), 56);
	cr_assert_eq(hash_of("x\xe0", 1000), 88);
}

Test(hash, empty_table_and_empty_name)
{
	cr_assert_eq(hash_of("abc", 0), -1);
	cr_assert_eq(res_hash("", 0, 7), 0);
	cr_assert_eq(res_hash("ab\0c", 4, 1000), 'a' + 'b' + 'c', "the length, not a NUL, ends a name");
}

Test(hash, name_equal_is_ascii_case_insensitive)
{
	cr_assert(res_name_equal("Texts.RES", 9, "tEXTS.res", 9));
	cr_assert(!res_name_equal("abc", 3, "abd", 3));
	cr_assert(!res_name_equal("abc", 3, "abcd", 4));
	cr_assert(!res_name_equal("\xc0", 1, "\xe0", 1), "Cyrillic А and а differ for the game");
	cr_assert(res_name_equal("\xc0", 1, "\xc0", 1));
	cr_assert(!res_name_equal("@", 1, "`", 1), "only A-Z are lowered");
}

/* ---- the chain builder (FORMATS 1.5) ------------------------------------ */

static void build(uint32_t n, const char *const *names, uint32_t *slot_of, int32_t *next_of)
{
	size_t lens[16];
	struct res_error err = { 0 };

	for (uint32_t i = 0; i < n; i++)
		lens[i] = strlen(names[i]);
	cr_assert_eq(res_build_chains(n, names, lens, slot_of, next_of, &err), 0, "%s", err.msg);
}

Test(chains, quest_reg_sections)
{
	/* z3q1\quest.reg (original game), FORMATS 2.2: hashes 2, 1, 3, 3 */
	static const char *const names[] = { "quest", "briefing receive", "briefing reject",
					     "briefing complete" };
	static const uint32_t want_slot[] = { 2, 1, 3, 0 };
	static const int32_t want_next[] = { -1, -1, -1, 0 };
	uint32_t slot[4];
	int32_t next[4];

	cr_assert_eq(hash_of("quest", 4), 2);
	cr_assert_eq(hash_of("briefing receive", 4), 1);
	cr_assert_eq(hash_of("briefing reject", 4), 3);
	cr_assert_eq(hash_of("briefing complete", 4), 3);
	build(4, names, slot, next);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(slot[i], want_slot[i], "%s: slot %u", names[i], slot[i]);
		cr_assert_eq(next[i], want_next[i], "slot %d: next %d", i, next[i]);
	}
}

Test(chains, z3q1_mq_table)
{
	/* the table of the original z3q1.mq, names in name-block order */
	static const char *const names[] = { "briefing z3q1_1", "briefing z3q1_2", "briefing z3q1_3",
					     "quest z3q1", "z3q1\\map.txt", "z3q1\\quest.reg" };
	static const uint32_t want_slot[] = { 5, 0, 1, 4, 3, 2 };
	static const int32_t want_next[] = { -1, -1, -1, 2, -1, 4 };
	uint32_t slot[6];
	int32_t next[6];

	build(6, names, slot, next);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(slot[i], want_slot[i], "%s: slot %u", names[i], slot[i]);
		cr_assert_eq(next[i], want_next[i], "slot %d: next %d", i, next[i]);
	}
}

Test(chains, one_long_chain_fills_from_the_top)
{
	/* anagrams: every name hashes to 294 % 5 = 4 */
	static const char *const names[] = { "abc", "acb", "bac", "bca", "cab" };
	static const uint32_t want_slot[] = { 4, 3, 2, 1, 0 };
	static const int32_t want_next[] = { -1, 0, 1, 2, 3 };
	uint32_t slot[5];
	int32_t next[5];

	build(5, names, slot, next);
	for (int i = 0; i < 5; i++) {
		cr_assert_eq(slot[i], want_slot[i]);
		cr_assert_eq(next[i], want_next[i]);
	}
}

Test(chains, collision_appends_to_the_end_of_a_coalesced_chain)
{
	/* n = 4; hashes: "b" 98%4=2, "f" 102%4=2, "j" 106%4=2, "c" 99%4=3.
	 * b -> 2; f -> end of 2 = 2, free 3; j -> 2 -> 3, free 1; c -> 3 is
	 * taken, end of its chain is 1, free 0. */
	static const char *const names[] = { "b", "f", "j", "c" };
	static const uint32_t want_slot[] = { 2, 3, 1, 0 };
	static const int32_t want_next[] = { -1, 0, 3, 1 };
	uint32_t slot[4];
	int32_t next[4];

	build(4, names, slot, next);
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(slot[i], want_slot[i], "%s: slot %u", names[i], slot[i]);
		cr_assert_eq(next[i], want_next[i], "slot %d: next %d", i, next[i]);
	}
}

/* The builder as FORMATS 1.5 words it: a collision walks the chain from
 * the name's slot to its end and links the highest free slot there. */
static void build_by_walking(uint32_t n, const char *const *names, const size_t *lens, uint32_t *slot_of,
			     int32_t *next_of)
{
	unsigned char *used = calloc(n, 1);
	int64_t last_free = (int64_t)n - 1;

	for (uint32_t s = 0; s < n; s++)
		next_of[s] = -1;
	for (uint32_t k = 0; k < n; k++) {
		int64_t i = res_hash(names[k], lens[k], n);

		if (used[i]) {
			while (next_of[i] != -1)
				i = next_of[i];
			while (used[last_free])
				last_free--;
			next_of[i] = (int32_t)last_free;
			i = last_free--;
		}
		used[i] = 1;
		slot_of[k] = (uint32_t)i;
	}
	free(used);
}

Test(chains, the_same_slots_and_links_as_walking_each_chain)
{
	enum { MAX = 3000 };
	static char text[MAX][8];
	static const char *names[MAX];
	static size_t lens[MAX];
	static uint32_t slot[MAX], want_slot[MAX];
	static int32_t next[MAX], want_next[MAX];
	struct res_error err = { 0 };
	uint32_t seed = 12345;

	/* names of 1 to 7 letters of a 4-letter alphabet: many share a
	 * sum, so chains run long and through each other */
	for (uint32_t k = 0; k < MAX; k++) {
		seed = seed * 1103515245u + 12345u;
		lens[k] = 1 + (seed >> 16) % 7;
		for (size_t j = 0; j < lens[k]; j++) {
			seed = seed * 1103515245u + 12345u;
			text[k][j] = (char)('a' + (seed >> 16) % 4);
		}
		names[k] = text[k];
	}
	for (uint32_t n = 1; n <= MAX; n += n / 3 + 1) {
		build_by_walking(n, names, lens, want_slot, want_next);
		cr_assert_eq(res_build_chains(n, names, lens, slot, next, &err), 0, "%s", err.msg);
		for (uint32_t i = 0; i < n; i++) {
			cr_assert_eq(slot[i], want_slot[i], "n %u, name %u: slot %u, want %u", n, i, slot[i],
				     want_slot[i]);
			cr_assert_eq(next[i], want_next[i], "n %u, slot %u: next %d, want %d", n, i, next[i],
				     want_next[i]);
		}
	}
}

Test(chains, negative_hash_is_refused)
{
	const char *names[] = { "ok", NEGATIVE };
	size_t lens[] = { 2, strlen(NEGATIVE) };
	uint32_t slot[2];
	int32_t next[2];
	struct res_error err = { 0 };

	cr_assert_eq(res_build_chains(2, names, lens, slot, next, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert(strstr(err.msg, "negative"), "%s", err.msg);
}

/* ---- lookup --------------------------------------------------------------- */

Test(lookup, coalesced_chain_of_zonemainmenunew_mpr)
{
	/* The table of the original zonemainmenunew.mpr (FORMATS 1.4): slot 2
	 * (h=2) -> slot 4 (h=2) -> slot 0 (ZoneMainMenuNew.MP, h=4). */
	static const struct h_file f[] = {
		{ "ZoneMainMenuNew.MP", H_STR("mp"), -1, 936264274 },
		{ "ZoneMainMenuNew000000.SEC", H_STR("s00"), -1, 959984848 },
		{ "ZoneMainMenuNew000001.SEC", H_STR("s01"), 4, 959984848 },
		{ "ZoneMainMenuNew001001.SEC", H_STR("s11"), -1, 959984848 },
		{ "ZoneMainMenuNew001000.SEC", H_STR("s10"), 0, 959984848 },
	};
	static const int64_t want_hash[] = { 4, 1, 2, 3, 2 };
	GByteArray *a = h_archive(f, 5);
	struct res_table t;
	struct h_reports r;

	parse_ok(a, &t);
	for (uint32_t i = 0; i < 5; i++) {
		char *lower = g_ascii_strdown(f[i].name, -1);

		cr_assert_eq(hash_of(f[i].name, 5), want_hash[i], "%s", f[i].name);
		cr_assert_eq(res_lookup(&t, f[i].name, strlen(f[i].name)), i, "%s", f[i].name);
		cr_assert_eq(res_lookup(&t, lower, strlen(lower)), i, "%s", lower);
		g_free(lower);
	}
	cr_assert_eq(res_lookup(&t, H_STR("ZoneMainMenuNew000002.SEC")), -1);
	cr_assert_eq(res_lookup(&t, H_STR("ZoneMainMenuNew.M")), -1);
	cr_assert_eq(check_count(&t, a->len, &r), 0, "%s", r.msgs->len ? (char *)r.msgs->pdata[0] : "");
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);
}

Test(lookup, finds_the_non_ascii_name_only_by_the_signed_hash)
{
	/* three slots: GIPAT's signed slot is 1089 % 3 = 0, where it sits; its
	 * unsigned slot 5185 % 3 = 1 holds "b", which has no link */
	static const struct h_file f[] = {
		{ GIPAT, H_STR("leather"), -1, 0 },
		{ "b", H_STR("1"), -1, 0 },
		{ "c", H_STR("2"), -1, 0 },
	};
	GByteArray *a = h_archive(f, 3);
	struct res_table t;

	parse_ok(a, &t);
	cr_assert_eq(res_lookup(&t, GIPAT, strlen(GIPAT)), 0);
	cr_assert_eq(res_lookup(&t, H_STR("b")), -1, "98 %% 3 = 2 holds \"c\", which has no link");
	cr_assert_eq(res_lookup(&t, H_STR("c")), -1, "99 %% 3 = 0 holds GIPAT, which has no link");
	res_table_free(&t);
	g_byte_array_unref(a);
}

/* ---- the packer's order ------------------------------------------------ */

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

static int order(const char *a, const char *b)
{
	int c = res_name_order(a, strlen(a), b, strlen(b));

	cr_assert_eq(sign(res_name_order(b, strlen(b), a, strlen(a))), -sign(c),
		     "order of \"%s\" and \"%s\" is not antisymmetric", a, b);
	return sign(c);
}

Test(order, ascii_upper_cased_bytes)
{
	cr_assert_eq(order("abc", "ABC"), 0);
	cr_assert_eq(order("abc", "ABD"), -1);
	cr_assert_eq(order("a_b", "aZb"), 1, "'_' sorts after letters once upper-cased");
	cr_assert_eq(order("a_b", "azb"), 1, "'_' after lower-case letters too");
	cr_assert_eq(order("UNIT x", "UNITx"), -1);
	cr_assert_eq(order("ab", "abc"), -1);
	cr_assert_eq(order("", "a"), -1);
	cr_assert_eq(order("\xe0", "\xc0"), 1, "Cyrillic is not upper-cased");
	cr_assert_eq(order("z", "\xc0"), -1, "bytes compare unsigned");
}

Test(order, component_wise)
{
	/* a plain byte compare puts '\' (0x5C) after ' ' (0x20) */
	cr_assert_eq(order("a\\b", "a b"), -1);
	cr_assert_eq(order("a\\z", "ab\\c"), -1, "the shorter first component first");
	cr_assert_eq(order("a", "a\\b"), -1);
	cr_assert_eq(order("a\\b", "A\\B"), 0);
	cr_assert_eq(order("z3q1\\quest.reg", "z3q1\\map.txt"), 1);
	cr_assert_eq(order("z3q1\\map.txt", "z3q1_x"), -1);
	cr_assert_eq(order("a\\", "a"), 1);
}

Test(order, sorting_a_list)
{
	const char *names[] = { "quest z3q1", "z3q1\\quest.reg", "Briefing z3q1_2", "z3q1\\map.txt",
				"briefing z3q1_1", "z3q1 x", "b_", "bz", "BA" };
	const char *want[] = { "BA", "briefing z3q1_1", "Briefing z3q1_2", "bz", "b_", "quest z3q1",
			       "z3q1\\map.txt", "z3q1\\quest.reg", "z3q1 x" };
	size_t n = G_N_ELEMENTS(names);

	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (order(names[i], names[j]) > 0) {
				const char *tmp = names[i];

				names[i] = names[j];
				names[j] = tmp;
			}
	for (size_t i = 0; i < n; i++)
		cr_assert_str_eq(names[i], want[i], "position %zu", i);
}

/* ---- the writer ------------------------------------------------------------ */

Test(write, reproduces_the_table_of_z3q1_mq)
{
	/* names, lengths and times of the original z3q1.mq, given out of order;
	 * the original is 16-byte aligned. */
	static const char *const names[] = { "z3q1\\quest.reg", "quest z3q1", "briefing z3q1_3",
					     "z3q1\\map.txt", "briefing z3q1_1", "briefing z3q1_2" };
	static const size_t lens[] = { 372, 344, 442, 183, 709, 251 };
	/* slot: next, length, offset, mtime, name_len, name_off */
	static const uint32_t want[6][6] = {
		{ 0xFFFFFFFF, 251, 736, 986379068, 15, 15 },
		{ 0xFFFFFFFF, 442, 992, 986379068, 15, 30 },
		{ 0xFFFFFFFF, 372, 1984, 986379068, 14, 67 },
		{ 2, 183, 1792, 986379068, 12, 55 },
		{ 0xFFFFFFFF, 344, 1440, 986379068, 10, 45 },
		{ 4, 709, 16, 986379068, 15, 0 },
	};
	static const char block[] = "briefing z3q1_1briefing z3q1_2briefing z3q1_3quest z3q1"
				    "z3q1\\map.txtz3q1\\quest.reg";
	struct h_item items[6];
	struct res_error err = { 0 };
	char *data[6];
	GByteArray *a;

	for (int i = 0; i < 6; i++) {
		data[i] = g_malloc(lens[i]);
		memset(data[i], 'a' + i, lens[i]);
		items[i] = (struct h_item){ names[i], data[i], lens[i], 986379068 };
	}
	a = h_pack(items, 6, 1, 1, &err);
	cr_assert_not_null(a, "%s", err.msg);
	cr_assert_eq(a->len, 2581, "the original is 2581 bytes");
	cr_assert_eq(h_get_u32(a, 0), 0x019CE23C);
	cr_assert_eq(h_get_u32(a, 4), 6);
	cr_assert_eq(h_get_u32(a, 8), 2368);
	cr_assert_eq(h_get_u32(a, 12), 81);
	for (uint32_t s = 0; s < 6; s++) {
		size_t at = 2368 + 22 * s;

		cr_assert_eq(h_get_u32(a, at), want[s][0], "slot %u next", s);
		cr_assert_eq(h_get_u32(a, at + 4), want[s][1], "slot %u length", s);
		cr_assert_eq(h_get_u32(a, at + 8), want[s][2], "slot %u offset", s);
		cr_assert_eq(h_get_u32(a, at + 12), want[s][3], "slot %u mtime", s);
		cr_assert_eq(get_u16(a, at + 16), want[s][4], "slot %u name length", s);
		cr_assert_eq(h_get_u32(a, at + 18), want[s][5], "slot %u name offset", s);
	}
	cr_assert_eq(memcmp(a->data + 2368 + 6 * 22, block, 81), 0);
	/* and the data went where the table says */
	for (int i = 0; i < 6; i++)
		for (uint32_t s = 0; s < 6; s++)
			if (want[s][1] == lens[i])
				cr_assert_eq(memcmp(a->data + want[s][2], data[i], lens[i]), 0, "%s", names[i]);
	for (int i = 0; i < 6; i++)
		g_free(data[i]);
	g_byte_array_unref(a);
}

static const struct h_item mixed[] = {
	{ "readme.txt", H_STR("hello world"), 1000 },
	{ "z3q1\\quest.reg", H_STR("\xfb\x3e\xab\x45\x00\x00"), 986379068 },
	{ GIPAT, H_STR("\xea\xee\xe6\xe0\r\n"), 5 },
	{ "empty.txt", H_STR(""), 7 },
	{ "Empty2", H_STR(""), 0xFFFFFFFF },
	{ "ZoneMainMenuNew.MP", H_STR("0123456789abcdef0"), 936264274 },
	{ "sub\\deeper\\file.bin", H_STR("\0\1\2\3\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"), 1 },
	{ "UNIT Human_Kania", H_STR("x"), 2 },
	{ "\xc0\xc1\\file\xe0", H_STR("cyrillic dir"), 3 },
};

static const struct res_table *sorting;

static int by_name_off(const void *a, const void *b)
{
	uint32_t x = sorting->entries[*(const uint32_t *)a].name_off;
	uint32_t y = sorting->entries[*(const uint32_t *)b].name_off;

	return (x > y) - (x < y);
}

/* Entry indexes in the order of their names in the name block. */
static uint32_t *name_block_order(const struct res_table *t)
{
	uint32_t *idx = g_new(uint32_t, t->hdr.count ? t->hdr.count : 1);

	for (uint32_t i = 0; i < t->hdr.count; i++)
		idx[i] = i;
	sorting = t;
	qsort(idx, t->hdr.count, sizeof *idx, by_name_off);
	return idx;
}

/* With dedup, the first entry in name order with the same contents. */
static const struct res_entry *copy_of(const GByteArray *a, const struct res_table *t,
				       const uint32_t *idx, uint32_t k)
{
	const struct res_entry *e = &t->entries[idx[k]];

	for (uint32_t j = 0; j < k; j++) {
		const struct res_entry *p = &t->entries[idx[j]];

		if (p->length == e->length && memcmp(a->data + p->offset, a->data + e->offset, e->length) == 0)
			return p;
	}
	return NULL;
}

/* Checks an archive written from items: everything found and intact, names
 * in packer order, data in name order, packed as align and dedup say. */
static void check_written(const GByteArray *a, const struct h_item *items, uint32_t n, int align, int dedup)
{
	struct res_table t;
	struct h_reports r;
	uint64_t names_len = 0, data_len = 0, expect;
	uint32_t *idx;

	parse_ok(a, &t);
	cr_assert_eq(t.hdr.count, n);
	for (uint32_t i = 0; i < n; i++)
		names_len += strlen(items[i].name);
	cr_assert_eq(t.hdr.names_len, names_len);
	cr_assert_eq((uint64_t)t.hdr.table_offset + 22u * n + names_len, a->len, "names end the file");
	for (uint32_t i = 0; i < n; i++) {
		size_t len = strlen(items[i].name);
		int64_t k = res_lookup(&t, items[i].name, len);
		const struct res_entry *e;

		cr_assert_geq(k, 0, "%s not found", items[i].name);
		e = &t.entries[k];
		cr_assert_eq(e->name_len, len);
		cr_assert_eq(memcmp(res_entry_name(&t, (uint32_t)k), items[i].name, len), 0);
		cr_assert_eq(e->length, items[i].len, "%s", items[i].name);
		cr_assert_eq(e->mtime, items[i].mtime, "%s", items[i].name);
		cr_assert_eq(res_entry_faults(&t, (uint32_t)k, a->len), 0);
		cr_assert_eq(memcmp(a->data + e->offset, items[i].data, items[i].len), 0, "%s", items[i].name);
		if (align)
			cr_assert_eq(e->offset % 16, 0, "%s at %u", items[i].name, e->offset);
	}
	/* names and data in packer order, data packed as the options say */
	idx = name_block_order(&t);
	expect = 16;
	for (uint32_t k = 0; k < n; k++) {
		const struct res_entry *e = &t.entries[idx[k]], *first = copy_of(a, &t, idx, k);

		if (k > 0) {
			const struct res_entry *p = &t.entries[idx[k - 1]];

			cr_assert_leq(res_name_order(t.names + p->name_off, p->name_len,
						     t.names + e->name_off, e->name_len), 0);
		}
		if (dedup && first) {
			cr_assert_eq(e->offset, first->offset, "entry %u of the name block is not shared", k);
			continue;
		}
		if (!dedup && first && e->length)
			cr_assert_neq(e->offset, first->offset, "entry %u of the name block is shared", k);
		if (align)
			expect = (expect + 15) / 16 * 16;
		cr_assert_eq(e->offset, expect, "entry %u of the name block at %u, expected %llu", k,
			     e->offset, (unsigned long long)expect);
		expect += e->length;
		data_len += e->length;
	}
	if (align)
		expect = (expect + 15) / 16 * 16;
	g_free(idx);
	cr_assert_eq(t.hdr.table_offset, expect);
	if (!align)
		cr_assert_eq(t.hdr.table_offset, 16 + data_len, "no padding anywhere");
	cr_assert_eq(check_count(&t, a->len, &r), 0, "%s", r.msgs->len ? (char *)r.msgs->pdata[0] : "");
	h_reports_free(&r);
	res_table_free(&t);
}

Test(write, round_trip_aligned)
{
	struct res_error err = { 0 };
	GByteArray *a = h_pack(mixed, G_N_ELEMENTS(mixed), 1, 0, &err);

	cr_assert_not_null(a, "%s", err.msg);
	check_written(a, mixed, G_N_ELEMENTS(mixed), 1, 0);
	cr_assert_eq(h_get_u32(a, 8) % 16, 0);
	g_byte_array_unref(a);
}

Test(write, round_trip_unaligned)
{
	struct res_error err = { 0 };
	GByteArray *a = h_pack(mixed, G_N_ELEMENTS(mixed), 0, 0, &err);
	uint32_t total = 0;

	cr_assert_not_null(a, "%s", err.msg);
	check_written(a, mixed, G_N_ELEMENTS(mixed), 0, 0);
	for (size_t i = 0; i < G_N_ELEMENTS(mixed); i++)
		total += (uint32_t)mixed[i].len;
	cr_assert_eq(h_get_u32(a, 8), 16 + total);
	g_byte_array_unref(a);
}

Test(write, round_trip_through_a_window_of_a_file)
{
	struct res_error err = { 0 };
	GByteArray *a = h_pack(mixed, G_N_ELEMENTS(mixed), 1, 1, &err);
	GByteArray *file = g_byte_array_new();
	struct res_table t, u;
	struct res_window w;
	char garbage[100];
	int fd;

	cr_assert_not_null(a, "%s", err.msg);
	memset(garbage, 0xAA, sizeof garbage);
	h_put(file, 0, garbage, sizeof garbage);
	h_put(file, 100, a->data, a->len);
	h_put(file, 100 + a->len, "trailer", 7);
	fd = h_memfd(file->data, file->len);
	w = (struct res_window){ fd, 100, a->len };
	cr_assert_eq(res_table_read(&w, &t, &err), 0, "%s", err.msg);
	parse_ok(a, &u);
	cr_assert_eq(t.hdr.count, u.hdr.count);
	cr_assert_eq(t.hdr.table_offset, u.hdr.table_offset);
	cr_assert_eq(t.hdr.names_len, u.hdr.names_len);
	cr_assert_eq(memcmp(t.entries, u.entries, sizeof *t.entries * t.hdr.count), 0);
	cr_assert_eq(memcmp(t.names, u.names, t.hdr.names_len), 0);
	res_table_free(&t);
	res_table_free(&u);

	/* the same window one byte short: the name block is cut */
	w.len = a->len - 1;
	cr_assert_eq(res_table_read(&w, &t, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert_eq(err.offset, 12, "%s", err.msg);
	close(fd);
	g_byte_array_unref(file);
	g_byte_array_unref(a);
}

Test(write, dedup_shares_identical_contents_only)
{
	static const struct h_item items[] = {
		{ "a.txt", H_STR("same"), 1 },
		{ "b.txt", H_STR("same"), 2 },
		{ "c.txt", H_STR("different"), 3 },
		{ "d.txt", H_STR("same"), 4 },
		{ "e.txt", H_STR("same!"), 5 },
		{ "f.txt", H_STR("SAME"), 6 },
		{ "g.txt", H_STR(""), 7 },
		{ "h.txt", H_STR(""), 8 },
	};
	struct res_error err = { 0 };
	GByteArray *a = h_pack(items, 8, 0, 1, &err), *b;
	struct res_table t;
	uint32_t off[8];

	cr_assert_not_null(a, "%s", err.msg);
	parse_ok(a, &t);
	for (uint32_t i = 0; i < 8; i++)
		off[i] = t.entries[res_lookup(&t, items[i].name, 5)].offset;
	cr_assert_eq(off[0], 16);
	cr_assert_eq(off[1], off[0]);
	cr_assert_eq(off[3], off[0]);
	cr_assert_eq(off[2], 20, "c follows the one copy of \"same\"");
	cr_assert_eq(off[4], 29);
	cr_assert_eq(off[5], 34);
	cr_assert_eq(off[6], 38, "the empty entries come after f");
	cr_assert_eq(off[7], off[6]);
	cr_assert_eq(t.hdr.table_offset, 38, "4 + 9 + 5 + 4 data bytes");
	res_table_free(&t);

	/* without dedup every entry has its own copy */
	b = h_pack(items, 8, 0, 0, &err);
	cr_assert_not_null(b, "%s", err.msg);
	parse_ok(b, &t);
	for (uint32_t i = 0; i < 8; i++)
		off[i] = t.entries[res_lookup(&t, items[i].name, 5)].offset;
	cr_assert_eq(off[1], 20);
	cr_assert_eq(off[3], 33);
	cr_assert_eq(t.hdr.table_offset, 16 + 4 * 4 + 9 + 5);
	cr_assert_eq(b->len, a->len + 8);
	check_written(a, items, 8, 0, 1);
	check_written(b, items, 8, 0, 0);
	res_table_free(&t);
	g_byte_array_unref(a);
	g_byte_array_unref(b);
}

Test(write, zero_length_entries)
{
	static const struct h_item items[] = {
		{ "a", H_STR(""), 1 },
		{ "b", H_STR("x"), 2 },
		{ "c", H_STR(""), 3 },
	};
	struct res_error err = { 0 };
	GByteArray *a = h_pack(items, 3, 1, 0, &err);
	struct res_table t;

	cr_assert_not_null(a, "%s", err.msg);
	parse_ok(a, &t);
	cr_assert_eq(t.entries[res_lookup(&t, H_STR("a"))].offset, 16);
	cr_assert_eq(t.entries[res_lookup(&t, H_STR("a"))].length, 0);
	cr_assert_eq(t.entries[res_lookup(&t, H_STR("b"))].offset, 16);
	cr_assert_eq(t.entries[res_lookup(&t, H_STR("c"))].offset, 32);
	cr_assert_eq(t.hdr.table_offset, 32);
	check_written(a, items, 3, 1, 0);
	res_table_free(&t);
	g_byte_array_unref(a);
}

Test(write, empty_archive_like_eilib)
{
	static const unsigned char want[16] = { 0x3C, 0xE2, 0x9C, 0x01 };
	struct res_error err = { 0 };
	GByteArray *a = h_pack(NULL, 0, 1, 1, &err);
	struct res_table t;

	cr_assert_not_null(a, "%s", err.msg);
	cr_assert_eq(a->len, 16);
	cr_assert_eq(memcmp(a->data, want, 16), 0);
	parse_ok(a, &t);
	cr_assert_eq(t.hdr.count, 0);
	cr_assert_eq(res_lookup(&t, H_STR("a")), -1);
	res_table_free(&t);
	g_byte_array_unref(a);
}

Test(write, refuses_names_it_cannot_store)
{
	static const struct h_item empty[] = { { "a", H_STR("1"), 0 }, { "", H_STR("2"), 0 } };
	static const struct h_item negative[] = { { "a", H_STR("1"), 0 }, { NEGATIVE, H_STR("2"), 0 } };
	struct res_error err = { 0 };

	cr_assert_null(h_pack(empty, 2, 1, 0, &err));
	cr_assert_eq(err.code, EINVAL, "%s", err.msg);
	memset(&err, 0, sizeof err);
	cr_assert_null(h_pack(negative, 2, 1, 0, &err));
	cr_assert_eq(err.code, EINVAL, "%s", err.msg);
	cr_assert(strstr(err.msg, "negative"), "%s", err.msg);
}

Test(write, names_up_to_res_name_max)
{
	char *longest = g_strnfill(RES_NAME_MAX, 'a'), *over = g_strnfill(RES_NAME_MAX + 1, 'a');
	struct h_item fits[] = { { longest, H_STR("1"), 0 } }, too_long[] = { { over, H_STR("2"), 0 } };
	struct res_error err = { 0 };
	GByteArray *a = h_pack(fits, 1, 1, 0, &err);
	struct res_table t;

	cr_assert_not_null(a, "%s", err.msg);
	parse_ok(a, &t);
	cr_assert_eq(res_entry_faults(&t, 0, a->len), 0);
	cr_assert_eq(res_lookup(&t, longest, RES_NAME_MAX), 0);
	res_table_free(&t);
	g_byte_array_unref(a);
	cr_assert_null(h_pack(too_long, 1, 1, 0, &err));
	cr_assert_eq(err.code, ENAMETOOLONG, "%s", err.msg);
	g_free(longest);
	g_free(over);
}

Test(write, data_from_paths)
{
	char *dir = h_tmpdir();
	char *p1 = h_write_file(dir, "one", H_STR("first file"));
	char *p2 = h_write_file(dir, "two", H_STR("second"));
	char *missing = g_build_filename(dir, "missing", NULL);
	char n1[] = "one.txt", n2[] = "two.txt";
	struct res_pack_item it[2] = {
		{ .name = n2, .name_len = 7, .mtime = 9, .length = 6, .path = p2, .fd = -1 },
		{ .name = n1, .name_len = 7, .mtime = 8, .length = 10, .path = p1, .fd = -1 },
	};
	struct res_pack_options opt = { 0, 0 };
	struct res_error err = { 0 };
	struct res_table t;
	GByteArray *a;
	int out = h_memfd(NULL, 0);

	cr_assert_eq(res_pack_write(out, it, 2, &opt, &err), 0, "%s", err.msg);
	cr_assert_str_eq(it[0].name, "one.txt", "items are sorted in place");
	cr_assert_eq(it[0].data_offset, 16);
	cr_assert_eq(it[1].data_offset, 26);
	a = h_read_fd(out);
	close(out);
	parse_ok(a, &t);
	cr_assert_eq(memcmp(a->data + 16, "first filesecond", 16), 0);
	cr_assert_eq(t.entries[res_lookup(&t, H_STR("two.txt"))].mtime, 9);
	res_table_free(&t);
	g_byte_array_unref(a);

	it[1].path = missing;
	out = h_memfd(NULL, 0);
	cr_assert_eq(res_pack_write(out, it, 2, &opt, &err), -1);
	cr_assert_eq(err.code, ENOENT, "%s", err.msg);
	close(out);
	g_free(p1);
	g_free(p2);
	g_free(missing);
	h_tmpdir_remove(dir);
}

Test(write, many_entries_all_reachable)
{
	enum { N = 1500 };
	struct h_item *items = g_new(struct h_item, N);
	char **names = g_new(char *, N);
	struct res_error err = { 0 };
	GByteArray *a;

	for (int i = 0; i < N; i++) {
		/* many collisions: short names, both cases, a directory */
		names[i] = g_strdup_printf(i % 3 ? "UNIT %d" : "dir\\item_%x", i);
		items[i] = (struct h_item){ names[i], names[i], strlen(names[i]) / 2, (uint32_t)i };
	}
	a = h_pack(items, N, 1, 1, &err);
	cr_assert_not_null(a, "%s", err.msg);
	check_written(a, items, N, 1, 1);
	for (int i = 0; i < N; i++)
		g_free(names[i]);
	g_free(names);
	g_free(items);
	g_byte_array_unref(a);
}

/* ---- the reader refuses what it cannot use ----------------------------------- */

Test(parse, truncated_header)
{
	static const unsigned char hdr[16] = { 0x3C, 0xE2, 0x9C, 0x01 };

	for (size_t len = 0; len < 16; len++)
		expect_refused(hdr, len, 0, "truncated header");
}

Test(parse, bad_magic)
{
	GByteArray *b = g_byte_array_new();

	h_put_header(b, 0x019CE23D, 0, 0, 0); /* Etherlords 2 */
	expect_refused(b->data, b->len, 0, "magic");
	h_put_header(b, 0x45AB3EFB, 0, 0, 0); /* a REG file */
	expect_refused(b->data, b->len, 0, "magic");
	h_put(b, 0, "MMP\0", 4);
	expect_refused(b->data, b->len, 0, "magic");
	g_byte_array_unref(b);
}

Test(parse, table_past_the_end)
{
	GByteArray *b = g_byte_array_new();

	h_put_header(b, RES_MAGIC, 1, 16, 0);
	h_put(b, 16, "0123456789abcdefghij", 21); /* 37 bytes, the table needs 38 */
	expect_refused(b->data, b->len, 4, "past the archive end");
	h_put_header(b, RES_MAGIC, 1, 0xFFFFFFF0, 0);
	expect_refused(b->data, b->len, 4, "past the archive end");
	h_put_header(b, RES_MAGIC, 0xFFFFFFFF, 16, 0xFFFFFFFF);
	expect_refused(b->data, b->len, 4, "past the archive end");
	g_byte_array_unref(b);
}

Test(parse, names_past_the_end)
{
	static const struct h_file f[] = { { "name", H_STR("data"), -1, 0 } };
	GByteArray *a = h_archive(f, 1);

	h_put_u32(a, 12, 5);
	expect_refused(a->data, a->len, 12, "past the archive end");
	h_put_u32(a, 12, 0xFFFFFFFF);
	expect_refused(a->data, a->len, 12, "past the archive end");
	h_put_u32(a, 12, 4);
	expect_refused(a->data, a->len - 1, 12, "past the archive end");
	g_byte_array_unref(a);
}

Test(parse, ten_million_entries_declared_in_100_bytes)
{
	GByteArray *b = g_byte_array_new();

	h_put_header(b, RES_MAGIC, 10000000, 16, 0);
	h_put(b, 99, "", 1);
	cr_assert_eq(b->len, 100);
	expect_refused(b->data, b->len, 4, "10000000 entries");
	g_byte_array_unref(b);
}

Test(parse, table_offset_inside_the_header)
{
	GByteArray *b = g_byte_array_new();

	h_put(b, 16, "names", 5);
	for (uint32_t off = 0; off < 16; off++) {
		h_put_header(b, RES_MAGIC, 0, off, 5);
		expect_refused(b->data, b->len, 8, "inside the header");
	}
	h_put_header(b, RES_MAGIC, 1, 15, 0);
	expect_refused(b->data, b->len, 8, "inside the header");
	g_byte_array_unref(b);
}

Test(parse, empty_tables)
{
	GByteArray *b = g_byte_array_new();
	struct res_table t;

	/* eilib's empty archive: table_offset 0 */
	h_put_header(b, RES_MAGIC, 0, 0, 0);
	parse_ok(b, &t);
	cr_assert_eq(t.hdr.count, 0);
	res_table_free(&t);
	/* any table offset is fine when there is no table */
	h_put_header(b, RES_MAGIC, 0, 0xFFFFFFFF, 0);
	parse_ok(b, &t);
	res_table_free(&t);
	/* no entries but a name block */
	h_put_header(b, RES_MAGIC, 0, 16, 3);
	h_put(b, 16, "abc", 3);
	parse_ok(b, &t);
	cr_assert_eq(t.hdr.names_len, 3);
	cr_assert_eq(memcmp(t.names, "abc", 3), 0);
	res_table_free(&t);
	g_byte_array_unref(b);
}

Test(parse, read_errors_of_a_window)
{
	GByteArray *b = g_byte_array_new();
	struct res_error err = { 0 };
	struct res_table t;
	struct res_window w;
	int fd;

	h_put_header(b, RES_MAGIC, 1, 16, 0);
	fd = h_memfd(b->data, b->len);
	/* the window is shorter than a header */
	w = (struct res_window){ fd, 0, 15 };
	cr_assert_eq(res_table_read(&w, &t, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert_eq(err.offset, 0);
	/* the window claims more than the file holds */
	w = (struct res_window){ fd, 0, 38 };
	cr_assert_eq(res_table_read(&w, &t, &err), -1);
	cr_assert_eq(err.code, EIO, "%s", err.msg);
	cr_assert_eq(err.offset, 16);
	/* a window starting past the end of the file */
	w = (struct res_window){ fd, 1000, 38 };
	cr_assert_eq(res_table_read(&w, &t, &err), -1);
	cr_assert_eq(err.code, EIO, "%s", err.msg);
	cr_assert_eq(err.offset, 0);
	cr_assert_null(t.entries);
	close(fd);
	g_byte_array_unref(b);
}

/* ---- faults and the checker ------------------------------------------------- */

Test(check, entry_faults)
{
	static const struct h_file f[] = {
		{ "name", H_STR("data"), -1, 0 },
		{ "other", H_STR("more"), -1, 0 },
		{ "third", H_STR("x"), -1, 0 },
		{ "fourth", H_STR("y"), -1, 0 },
	};
	GByteArray *a = h_archive(f, 4);
	struct res_table t;
	struct h_reports r;

	/* name 0 one byte past the name block, data 1 past the end,
	 * entry 2 ends exactly at the end, 3 wraps 32 bits */
	h_put_u32(a, h_entry_at(a, 0) + H_NAME_OFF, 17);
	h_put_u32(a, h_entry_at(a, 1) + H_OFFSET, (uint32_t)a->len - 3);
	h_put_u32(a, h_entry_at(a, 2) + H_OFFSET, (uint32_t)a->len - 1);
	h_put_u32(a, h_entry_at(a, 3) + H_OFFSET, 0xFFFFFFFF);
	h_put_u32(a, h_entry_at(a, 3) + H_NAME_OFF, 0xFFFFFFFF);
	parse_ok(a, &t);
	cr_assert_eq(res_entry_faults(&t, 0, a->len), RES_FAULT_NAME);
	cr_assert_eq(res_entry_faults(&t, 1, a->len), RES_FAULT_DATA);
	cr_assert_eq(res_entry_faults(&t, 2, a->len), 0);
	cr_assert_eq(res_entry_faults(&t, 3, a->len), RES_FAULT_NAME | RES_FAULT_DATA);
	cr_assert_eq(res_lookup(&t, H_STR("name")), -1);
	cr_assert_gt(check_count(&t, a->len, &r), 0);
	cr_assert_geq(h_reports_find(&r, "entry 0: name 17+4 is outside the name block"), 0);
	cr_assert_geq(h_reports_find(&r, "entry 1: data"), 0);
	cr_assert(strstr(r.msgs->pdata[h_reports_find(&r, "entry 1: data")], "past the archive end"));
	cr_assert_geq(h_reports_find(&r, "entry 3: name"), 0);
	/* entry 2 ends exactly at the end: inside the name block, not past it */
	cr_assert_geq(h_reports_find(&r, "entry 2: data 133+1 overlaps the header or the table"), 0);
	cr_assert_eq(h_reports_find(&r, "entry 2: data 133+1 ends past"), -1);
	cr_assert_eq(g_array_index(r.offsets, uint64_t, h_reports_find(&r, "entry 0: name")),
		     h_entry_at(a, 0) + H_NAME_LEN);
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);
}

/* A name inside the block but longer than RES_NAME_MAX is a fault of its
 * own: 65 535 entries naming one 64 KiB run took 15 s to list. */
Test(check, names_over_res_name_max)
{
	char *run = g_strnfill(RES_NAME_MAX + 1, 'a');
	struct h_file f[] = { { run, H_STR("x"), -1, 0 }, { "b", H_STR("y"), -1, 0 } };
	GByteArray *a = h_archive(f, 2);
	struct res_table t;
	struct h_reports r;

	parse_ok(a, &t);
	cr_assert_eq(res_entry_faults(&t, 0, a->len), RES_FAULT_NAME);
	cr_assert_eq(res_entry_faults(&t, 1, a->len), 0);
	cr_assert_str_eq(res_name_fault_text(&t, 0), "is longer than 1024 bytes");
	cr_assert_eq(res_lookup(&t, run, RES_NAME_MAX + 1), -1);
	cr_assert_gt(check_count(&t, a->len, &r), 0);
	cr_assert_geq(h_reports_find(&r, "entry 0: name 0+1025 is longer than 1024 bytes"), 0);
	cr_assert_eq(h_reports_find(&r, "entry 1:"), -1);
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);
	g_free(run);
}

Test(check, next_index_out_of_range)
{
	/* "a" (97 % 2 = 1) at slot 1 would be reached; its link points nowhere */
	static const struct h_file f[] = {
		{ "b", H_STR("1"), -1, 0 },
		{ "a", H_STR("2"), 7, 0 },
	};
	GByteArray *a = h_archive(f, 2);
	struct res_table t;
	struct h_reports r;

	parse_ok(a, &t);
	cr_assert_eq(res_lookup(&t, H_STR("a")), 1);
	cr_assert_eq(res_lookup(&t, H_STR("c")), -1, "99 %% 2 = 1, then the bad link ends the walk");
	cr_assert_eq(res_lookup(&t, H_STR("b")), 0);
	res_table_free(&t);
	h_put_u32(a, h_entry_at(a, 1) + H_NEXT, (uint32_t)-5);
	parse_ok(a, &t);
	cr_assert_eq(res_lookup(&t, H_STR("c")), -1);
	cr_assert_eq(check_count(&t, a->len, &r), 1, "%u reports", r.msgs->len);
	cr_assert_geq(h_reports_find(&r, "entry 1: next_index -5 is out of range"), 0);
	cr_assert_eq(g_array_index(r.offsets, uint64_t, h_reports_find(&r, "next_index")),
		     h_entry_at(a, 1));
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);
}

Test(check, cyclic_chain)
{
	/* "b" (98 % 3 = 2) -> slot 1 -> slot 2: a circle; "a" (97 % 3 = 1) is
	 * on it, "c" (99 % 3 = 0) sits at its own slot */
	static const struct h_file f[] = {
		{ "c", H_STR("0"), -1, 0 },
		{ "a", H_STR("1"), 2, 0 },
		{ "b", H_STR("2"), 1, 0 },
	};
	GByteArray *a = h_archive(f, 3);
	struct res_table t;
	struct h_reports r;

	parse_ok(a, &t);
	cr_assert_eq(res_lookup(&t, H_STR("a")), 1);
	cr_assert_eq(res_lookup(&t, H_STR("b")), 2);
	cr_assert_eq(res_lookup(&t, H_STR("e")), -1, "101 %% 3 = 2: the walk ends");
	cr_assert_eq(res_lookup(&t, H_STR("d")), -1, "100 %% 3 = 1: the walk ends");
	cr_assert_eq(check_count(&t, a->len, &r), 1, "every entry is reachable; one circle");
	cr_assert_geq(h_reports_find(&r, "circle"), 0);
	h_reports_free(&r);
	res_table_free(&t);

	/* a slot linking to itself */
	h_put_u32(a, h_entry_at(a, 0) + H_NEXT, 0);
	parse_ok(a, &t);
	cr_assert_eq(res_lookup(&t, H_STR("f")), -1, "102 %% 3 = 0");
	cr_assert_eq(check_count(&t, a->len, &r), 2);
	cr_assert_eq(g_array_index(r.offsets, uint64_t, h_reports_find(&r, "entry 0: its chain runs in a circle")),
		     h_entry_at(a, 0));
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);
}

Test(check, unreachable_and_case_duplicates)
{
	/* "ab" = 195, 195 % 3 = 0 but it sits at slot 1; "AB" and "ab" collide */
	static const struct h_file f[] = {
		{ "AB", H_STR("0"), 2, 0 },
		{ "ab", H_STR("1"), -1, 0 },
		{ "c", H_STR("2"), -1, 0 },
	};
	GByteArray *a = h_archive(f, 3);
	struct res_table t;
	struct h_reports r;

	parse_ok(a, &t);
	cr_assert_eq(check_count(&t, a->len, &r), 1, "%u reports", r.msgs->len);
	cr_assert_geq(h_reports_find(&r, "entry 1 \"ab\": the hash lookup finds entry 0"), 0);
	/* "c": 99 % 3 = 0 -> 0 -> 2: reachable through slot 0's link */
	cr_assert_eq(h_reports_find(&r, "\"c\""), -1);
	h_reports_free(&r);
	res_table_free(&t);

	h_put_u32(a, h_entry_at(a, 0) + H_NEXT, (uint32_t)-1);
	parse_ok(a, &t);
	cr_assert_eq(res_lookup(&t, H_STR("c")), -1);
	cr_assert_eq(check_count(&t, a->len, &r), 2);
	cr_assert_geq(h_reports_find(&r, "entry 2 \"c\": not reachable"), 0);
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);
}

/* res_lookup_all against res_lookup on tables of random links (circles,
 * links out of range, long chains) and names with case variants. */
Test(check, lookup_all_is_lookup_of_each_entry)
{
	static const char *const names[] = { "a", "A", "b", "ab", "aB", "Ab", "ba", "\xe0", "c" };
	GRand *rnd = g_rand_new_with_seed(2001);

	for (int round = 0; round < 300; round++) {
		uint32_t n = (uint32_t)g_rand_int_range(rnd, 1, 40);
		struct h_file *f = g_new0(struct h_file, n);
		GByteArray *a;
		struct res_table t;
		int64_t *all;

		for (uint32_t i = 0; i < n; i++) {
			f[i].name = names[g_rand_int_range(rnd, 0, G_N_ELEMENTS(names))];
			f[i].data = "x";
			f[i].len = 1;
			f[i].next = g_rand_int_range(rnd, -2, (gint32)n + 1);
			if (g_rand_int_range(rnd, 0, 3) == 0)
				f[i].next = (int32_t)i + 1 < (int32_t)n ? (int32_t)i + 1 : -1;
		}
		a = h_archive(f, n);
		parse_ok(a, &t);
		all = res_lookup_all(&t);
		cr_assert_not_null(all);
		for (uint32_t i = 0; i < n; i++)
			cr_assert_eq(all[i], res_lookup(&t, f[i].name, strlen(f[i].name)),
				     "round %d, entry %u (%s)", round, i, f[i].name);
		free(all);
		res_table_free(&t);
		g_byte_array_unref(a);
		g_free(f);
	}
	g_rand_free(rnd);
}

/* 200 000 distinct names of one hash sum in one chain: a lookup per entry
 * walks the chain (quadratic, minutes); res_check must not. */
Test(check, one_long_chain_in_linear_time, .timeout = 60)
{
	enum { N = 200000, PAIRS = 23 };
	struct h_file *f = g_new0(struct h_file, N);
	char (*names)[9] = g_malloc(sizeof *names * N);
	GByteArray *a;
	struct res_table t;
	struct h_reports r;
	int64_t h;

	/* four letter pairs that each sum to 'b' + 'y': every sum is equal */
	for (uint32_t k = 0; k < N; k++) {
		uint32_t c = k;

		for (int j = 0; j < 4; j++, c /= PAIRS) {
			names[k][2 * j] = (char)('b' + c % PAIRS);
			names[k][2 * j + 1] = (char)('y' - c % PAIRS);
		}
		names[k][8] = '\0';
	}
	h = res_hash(names[0], 8, N);
	/* the chain runs from slot h through every other slot upwards */
	for (uint32_t k = 0, slot = (uint32_t)h; k < N; k++) {
		uint32_t next = k + 1 == N ? 0 : k + 1 <= (uint32_t)h ? k : k + 1;

		f[slot].name = names[k];
		f[slot].data = "";
		f[slot].next = k + 1 == N ? -1 : (int32_t)next;
		slot = next;
	}
	a = h_archive(f, N);
	parse_ok(a, &t);
	cr_assert_eq(check_count(&t, a->len, &r), 0, "%s", r.msgs->len ? (char *)r.msgs->pdata[0] : "");
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);
	g_free(names);
	g_free(f);
}

Test(check, negative_hash_entry)
{
	static const struct h_file f[] = { { NEGATIVE, H_STR("x"), -1, 0 } };
	GByteArray *a = h_archive(f, 1);
	struct res_table t;
	struct h_reports r;

	parse_ok(a, &t);
	cr_assert_eq(res_lookup(&t, NEGATIVE, strlen(NEGATIVE)), -1);
	cr_assert_eq(check_count(&t, a->len, &r), 1);
	cr_assert_geq(h_reports_find(&r, "negative"), 0);
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);
}

static GByteArray *ranges(const uint32_t (*rg)[2], uint32_t n)
{
	/* n entries named "0".."n-1" in a table after 64 data bytes, each
	 * name at its own slot: 48+i % n == i needs n to divide 48 */
	GByteArray *b = g_byte_array_new();

	cr_assert_eq(48 % n, 0);
	h_put_header(b, RES_MAGIC, n, 80, n);
	for (uint32_t i = 0; i < n; i++) {
		char name = (char)('0' + i);

		h_put_entry(b, 80, i, -1, rg[i][1], rg[i][0], 0, 1, i);
		h_put(b, 80 + 22 * n + i, &name, 1);
	}
	return b;
}

Test(check, partial_overlap_reported_shared_data_not)
{
	static const uint32_t shared[4][2] = { { 16, 10 }, { 26, 20 }, { 16, 10 }, { 16, 10 } };
	static const uint32_t partial[4][2] = { { 16, 10 }, { 20, 10 }, { 40, 0 }, { 18, 0 } };
	static const uint32_t inside[4][2] = { { 16, 30 }, { 20, 4 }, { 20, 4 }, { 46, 34 } };
	GByteArray *a = ranges(shared, 4);
	struct res_table t;
	struct h_reports r;

	parse_ok(a, &t);
	cr_assert_eq(check_count(&t, a->len, &r), 0, "%s", r.msgs->len ? (char *)r.msgs->pdata[0] : "");
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);

	a = ranges(partial, 4);
	parse_ok(a, &t);
	cr_assert_eq(check_count(&t, a->len, &r), 1, "zero-length entries overlap nothing");
	cr_assert_geq(h_reports_find(&r, "data 20+10 partly overlaps data 16+10"), 0);
	cr_assert_eq(g_array_index(r.offsets, uint64_t, 0), 20);
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);

	a = ranges(inside, 4);
	parse_ok(a, &t);
	cr_assert_eq(check_count(&t, a->len, &r), 2, "both copies of 20+4 lie inside 16+30");
	cr_assert_geq(h_reports_find(&r, "data 20+4 partly overlaps data 16+30"), 0);
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);
}

Test(check, data_over_the_header_or_the_table)
{
	static const uint32_t over[4][2] = { { 0, 4 }, { 70, 20 }, { 80, 1 }, { 16, 64 } };
	GByteArray *a = ranges(over, 4);
	struct res_table t;
	struct h_reports r;

	parse_ok(a, &t);
	cr_assert_eq(check_count(&t, a->len, &r), 5, "%u", r.msgs->len);
	cr_assert_geq(h_reports_find(&r, "entry 0: data 0+4 overlaps the header or the table"), 0);
	cr_assert_geq(h_reports_find(&r, "entry 1: data 70+20 overlaps"), 0);
	cr_assert_geq(h_reports_find(&r, "entry 2: data 80+1 overlaps"), 0);
	cr_assert_eq(h_reports_find(&r, "entry 3:"), -1, "16+64 ends where the table starts");
	cr_assert_geq(h_reports_find(&r, "data 70+20 partly overlaps data 16+64"), 0);
	cr_assert_geq(h_reports_find(&r, "data 80+1 partly overlaps data 70+20"), 0);
	h_reports_free(&r);
	res_table_free(&t);
	g_byte_array_unref(a);
}

/* The reader decodes a table in place, in the memory the raw bytes were
 * read into: every field of every entry must come out as the in-memory
 * parser gives it, for a table large enough to take the huge-page path
 * (and its small pages after the huge ones). */
Test(write, large_table_read_in_place_equals_the_parsed_one)
{
	enum { N = 30011, NAME = 6 };
	uint32_t table_offset = 16, names_at = table_offset + N * RES_ENTRY_SIZE;
	GByteArray *a = g_byte_array_new();
	struct res_error err = { 0 };
	struct res_table t, u;
	int fd;

	h_put_header(a, RES_MAGIC, N, table_offset, N * NAME);
	for (uint32_t i = 0; i < N; i++) {
		char name[NAME + 1];

		h_put_entry(a, table_offset, i, i % 5 ? (int32_t)((i * 7919u) % N) : -1,
			    i * 3u + 1, 0x01000000u + i * 16u, 0x3B9ACA00u + i, NAME, i * NAME);
		snprintf(name, sizeof name, "n%05u", i % 100000);
		h_put(a, names_at + (size_t)i * NAME, name, NAME);
	}
	fd = h_memfd(a->data, a->len);
	cr_assert_eq(res_table_read(&(struct res_window){ fd, 0, a->len }, &t, &err), 0, "%s", err.msg);
	parse_ok(a, &u);
	cr_assert_eq(t.hdr.count, N);
	cr_assert_eq(memcmp(t.entries, u.entries, sizeof *t.entries * N), 0);
	cr_assert_eq(memcmp(t.names, u.names, t.hdr.names_len), 0);
	for (uint32_t i = 0; i < N; i += 997) {
		cr_assert_eq(t.entries[i].next, i % 5 ? (int32_t)((i * 7919u) % N) : -1);
		cr_assert_eq(t.entries[i].length, i * 3u + 1);
		cr_assert_eq(t.entries[i].offset, 0x01000000u + i * 16u);
		cr_assert_eq(t.entries[i].mtime, 0x3B9ACA00u + i);
		cr_assert_eq(t.entries[i].name_len, NAME);
		cr_assert_eq(t.entries[i].name_off, i * NAME);
	}
	res_table_free(&t);
	res_table_free(&u);
	close(fd);
	g_byte_array_unref(a);
}
