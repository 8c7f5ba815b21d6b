/* REG files and their INI text (src/reg.c, src/ini.c): known answers made
 * by hand, the real samples, round trips of every type and edge case, and
 * malformed input of both kinds. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "ini.h"
#include "reg.h"
#include "res.h"
#include "sanitizer.h"

/* ---- helpers ------------------------------------------------------------ */

/* Parses a copy of exactly len bytes, so that a read past them is caught
 * by ASan. */
static int parse_exact(const void *buf, size_t len, struct reg_file **f, struct format_error *err)
{
	unsigned char *copy = g_malloc(len ? len : 1);
	int rc;

	memcpy(copy, buf, len);
	rc = reg_parse(copy, len, f, err);
	g_free(copy);
	return rc;
}

static struct reg_file *parse_ok(const void *buf, size_t len)
{
	struct format_error err = { 0 };
	struct reg_file *f = NULL;

	cr_assert_eq(parse_exact(buf, len, &f, &err), 0, "reg_parse failed at %llu: %s",
		     (unsigned long long)err.offset, err.msg);
	cr_assert_not_null(f);
	return f;
}

static GByteArray *write_ok(const struct reg_file *f)
{
	struct format_error err = { 0 };
	GByteArray *b = g_byte_array_new();

	cr_assert_eq(reg_write(f, b, &err), 0, "reg_write: %s", err.msg);
	return b;
}

static char *to_ini_ok(const struct reg_file *f)
{
	struct format_error err = { 0 };
	GString *s = g_string_new(NULL);

	cr_assert_eq(reg_to_ini(f, s, &err), 0, "reg_to_ini: %s", err.msg);
	return g_string_free(s, FALSE);
}

static struct reg_file *from_ini_ok(const char *text, size_t len)
{
	struct format_error err = { 0 };
	struct reg_file *f = NULL;

	cr_assert_eq(ini_to_reg(text, len, &f, &err), 0, "ini_to_reg: line %llu: %s",
		     (unsigned long long)err.offset, err.msg);
	cr_assert_not_null(f);
	return f;
}

static void assert_bytes(const GByteArray *got, const void *want, size_t len, const char *what)
{
	cr_assert_eq(got->len, len, "%s: %u bytes, expected %zu", what, got->len, len);
	for (size_t i = 0; i < len; i++)
		cr_assert_eq(got->data[i], ((const unsigned char *)want)[i],
			     "%s: byte %zu is %02x, expected %02x", what, i, got->data[i],
			     ((const unsigned char *)want)[i]);
}

static uint32_t bits_of(const float *f)
{
	uint32_t b;

	memcpy(&b, f, sizeof b);
	return b;
}

static void set_bits(float *f, uint32_t b)
{
	memcpy(f, &b, sizeof b);
}

static void assert_same_key(const struct reg_key *a, const struct reg_key *b)
{
	cr_assert_eq(a->name_len, b->name_len, "key %s: name length", a->name);
	cr_assert(memcmp(a->name, b->name, a->name_len) == 0, "key %s: name", a->name);
	cr_assert_eq(a->type, b->type, "key %s: type %02x vs %02x", a->name, a->type, b->type);
	cr_assert_eq(a->count, b->count, "key %s: count %u vs %u", a->name, a->count, b->count);
	for (uint32_t i = 0; i < a->count; i++) {
		switch (reg_key_base(a)) {
		case REG_INT:
			cr_assert_eq(a->v.i[i], b->v.i[i], "key %s[%u]", a->name, i);
			break;
		case REG_FLOAT:
			cr_assert_eq(bits_of(&a->v.f[i]), bits_of(&b->v.f[i]),
				     "key %s[%u]: bits %08x vs %08x", a->name, i,
				     bits_of(&a->v.f[i]), bits_of(&b->v.f[i]));
			break;
		default:
			cr_assert_eq(a->v.str[i].len, b->v.str[i].len, "key %s[%u]: length", a->name, i);
			cr_assert(memcmp(a->v.str[i].s, b->v.str[i].s, a->v.str[i].len) == 0,
				  "key %s[%u]: text", a->name, i);
			cr_assert_eq(b->v.str[i].s[b->v.str[i].len], '\0', "NUL-terminated copy");
			break;
		}
	}
}

static void assert_same_model(const struct reg_file *a, const struct reg_file *b)
{
	cr_assert_eq(a->sections->len, b->sections->len, "section count");
	for (guint i = 0; i < a->sections->len; i++) {
		const struct reg_section *sa = g_ptr_array_index(a->sections, i);
		const struct reg_section *sb = g_ptr_array_index(b->sections, i);

		cr_assert_eq(sa->name_len, sb->name_len, "section %u: name length", i);
		cr_assert(memcmp(sa->name, sb->name, sa->name_len) == 0, "section %u: name", i);
		cr_assert_eq(sa->keys->len, sb->keys->len, "section %s: key count", sa->name);
		for (guint j = 0; j < sa->keys->len; j++)
			assert_same_key(g_ptr_array_index(sa->keys, j), g_ptr_array_index(sb->keys, j));
	}
}

/* REG -> model -> REG and REG -> INI -> REG are byte-identical, and the
 * models agree. */
static void assert_round_trips(const void *reg, size_t len)
{
	struct reg_file *f = parse_ok(reg, len), *back;
	GByteArray *again = write_ok(f), *via_ini = g_byte_array_new();
	struct format_error err = { 0 };
	char *ini = to_ini_ok(f);

	assert_bytes(again, reg, len, "REG -> model -> REG");
	cr_assert_eq(ini_to_reg_bytes(ini, strlen(ini), via_ini, &err), 0,
		     "INI back: line %llu: %s\n%s", (unsigned long long)err.offset, err.msg, ini);
	assert_bytes(via_ini, reg, len, "REG -> INI -> REG");
	back = from_ini_ok(ini, strlen(ini));
	assert_same_model(f, back);
	reg_free(back);
	reg_free(f);
	g_free(ini);
	g_byte_array_unref(again);
	g_byte_array_unref(via_ini);
}

/* Writes a model, then round-trips the bytes. */
static void assert_model_round_trips(const struct reg_file *f)
{
	GByteArray *b = write_ok(f);
	struct reg_file *back = parse_ok(b->data, b->len);

	assert_same_model(f, back);
	assert_round_trips(b->data, b->len);
	reg_free(back);
	g_byte_array_unref(b);
}

static char *ini_of(const void *reg, size_t len)
{
	struct format_error err = { 0 };
	GString *s = g_string_new(NULL);

	cr_assert_eq(reg_bytes_to_ini(reg, len, s, &err), 0, "reg_bytes_to_ini at %llu: %s",
		     (unsigned long long)err.offset, err.msg);
	return g_string_free(s, FALSE);
}

static void assert_ini(const struct reg_file *f, const char *want)
{
	char *got = to_ini_ok(f);

	cr_assert_str_eq(got, want);
	g_free(got);
}

/* Every name of a slot table at `at` (n slots) is found by the game's walk
 * from its hash slot. */
static void assert_reachable(const unsigned char *d, size_t at, uint32_t n, size_t base,
			     const char *(*name_at)(const unsigned char *, size_t, size_t *))
{
	for (uint32_t s = 0; s < n; s++) {
		size_t len;
		const char *name = name_at(d, base + (size_t)(d[at + 6 * s + 2] | d[at + 6 * s + 3] << 8 |
							      d[at + 6 * s + 4] << 16 | d[at + 6 * s + 5] << 24),
					   &len);
		int64_t i = res_hash(name, len, n);
		uint32_t steps = 0;

		while (i >= 0 && (uint32_t)i != s && steps++ < n)
			i = (int16_t)(d[at + 6 * i] | d[at + 6 * i + 1] << 8);
		cr_assert_eq(i, (int64_t)s, "slot %u (%.*s) is not on the chain of its hash", s,
			     (int)len, name);
	}
}

static const char *section_name_at(const unsigned char *d, size_t off, size_t *len)
{
	*len = (size_t)(d[off + 2] | d[off + 3] << 8);
	return (const char *)d + off + 4;
}

static const char *key_name_at(const unsigned char *d, size_t off, size_t *len)
{
	*len = (size_t)(d[off + 1] | d[off + 2] << 8);
	return (const char *)d + off + 3;
}

static uint16_t u16_at(const unsigned char *d, size_t at)
{
	return (uint16_t)(d[at] | d[at + 1] << 8);
}

static uint32_t u32_at(const unsigned char *d, size_t at)
{
	return (uint32_t)d[at] | (uint32_t)d[at + 1] << 8 | (uint32_t)d[at + 2] << 16 |
	       (uint32_t)d[at + 3] << 24;
}

/* Checks the section table and every key table of a REG. */
static void assert_all_reachable(const unsigned char *d)
{
	uint32_t n = u16_at(d, 4);

	assert_reachable(d, 6, n, 0, section_name_at);
	for (uint32_t s = 0; s < n; s++) {
		size_t off = u32_at(d, 6 + 6 * s + 2);

		assert_reachable(d, off + 4 + u16_at(d, off + 2), u16_at(d, off), off, key_name_at);
	}
}

/* ---- a REG made by hand ------------------------------------------------- */

/* [A] x=5 y=0.5; [B] s="hi" arr=[1,2].  Hashes (sum of lowered bytes):
 * sections a=97, b=98 mod 2 -> A slot 1, B slot 0.  Keys of A: x=120,
 * y=121 mod 2 -> 0, 1.  Keys of B: s=115 -> 1, arr=325 -> 1 collides, walks
 * to the end of slot 1's chain and takes the highest free slot, 0; slot 1
 * links to it. */
static const unsigned char hand_reg[] = {
	0xfb, 0x3e, 0xab, 0x45, 2, 0,           /* magic, 2 sections */
	0xff, 0xff, 51, 0, 0, 0,                /* slot 0: B at 51, end of chain */
	0xff, 0xff, 18, 0, 0, 0,                /* slot 1: A at 18 */
	/* 18: section A */
	2, 0, 1, 0, 'A',                        /* 2 keys, name "A" */
	0xff, 0xff, 17, 0, 0, 0,                /* key slot 0: x at +17 */
	0xff, 0xff, 25, 0, 0, 0,                /* key slot 1: y at +25 */
	0, 1, 0, 'x', 5, 0, 0, 0,               /* int x = 5 */
	1, 1, 0, 'y', 0, 0, 0, 0x3f,            /* float y = 0.5 */
	/* 51: section B */
	2, 0, 1, 0, 'B',
	0xff, 0xff, 25, 0, 0, 0,                /* key slot 0: arr at +25 */
	0, 0, 17, 0, 0, 0,                      /* key slot 1: s at +17, next 0 */
	2, 1, 0, 's', 2, 0, 'h', 'i',           /* string s = "hi" */
	0x80, 3, 0, 'a', 'r', 'r', 2, 0,        /* int array arr, 2 values */
	1, 0, 0, 0, 2, 0, 0, 0,
};

static const char hand_ini[] =
	"[A]\n"
	"x=5\n"
	"y=0.5\n"
	"\n"
	"[B]\n"
	"s=hi\n"
	"arr=1\n"
	"arr=2\n";

Test(reg, hand_made_file_reads_as_expected)
{
	struct reg_file *f = parse_ok(hand_reg, sizeof hand_reg);
	const struct reg_section *a = g_ptr_array_index(f->sections, 0);
	const struct reg_section *b = g_ptr_array_index(f->sections, 1);
	const struct reg_key *k;

	cr_assert_eq(f->sections->len, 2);
	cr_assert_str_eq(a->name, "A", "payload order, not slot order");
	cr_assert_str_eq(b->name, "B");
	k = g_ptr_array_index(a->keys, 0);
	cr_assert_str_eq(k->name, "x");
	cr_assert_eq(k->type, REG_INT);
	cr_assert_eq(k->count, 1);
	cr_assert_eq(k->v.i[0], 5);
	k = g_ptr_array_index(a->keys, 1);
	cr_assert_eq(k->type, REG_FLOAT);
	cr_assert_eq(k->v.f[0], 0.5f);
	k = g_ptr_array_index(b->keys, 0);
	cr_assert_str_eq(k->name, "s", "payload order: s before arr although arr has slot 0");
	cr_assert_eq(k->type, REG_STRING);
	cr_assert_eq(k->v.str[0].len, 2);
	cr_assert_str_eq(k->v.str[0].s, "hi");
	k = g_ptr_array_index(b->keys, 1);
	cr_assert_str_eq(k->name, "arr");
	cr_assert_eq(k->type, REG_INT | REG_ARRAY);
	cr_assert_eq(k->count, 2);
	cr_assert_eq(k->v.i[0], 1);
	cr_assert_eq(k->v.i[1], 2);
	reg_free(f);
}

Test(reg, hand_made_file_to_ini)
{
	char *ini = ini_of(hand_reg, sizeof hand_reg);

	cr_assert_str_eq(ini, hand_ini);
	g_free(ini);
}

Test(reg, hand_made_ini_to_reg)
{
	struct format_error err = { 0 };
	GByteArray *b = g_byte_array_new();

	cr_assert_eq(ini_to_reg_bytes(H_STR(hand_ini), b, &err), 0, "%s", err.msg);
	assert_bytes(b, hand_reg, sizeof hand_reg, "hand INI -> REG");
	g_byte_array_unref(b);
}

Test(reg, hand_made_file_round_trips)
{
	assert_round_trips(hand_reg, sizeof hand_reg);
}

Test(reg, writer_appends_and_keeps_output_on_error)
{
	struct reg_file *f = parse_ok(hand_reg, sizeof hand_reg);
	struct format_error err = { 0 };
	GByteArray *b = g_byte_array_new();
	struct reg_key *k;

	g_byte_array_append(b, (const guint8 *)"xy", 2);
	cr_assert_eq(reg_write(f, b, &err), 0);
	cr_assert_eq(b->len, 2 + sizeof hand_reg);
	cr_assert(memcmp(b->data + 2, hand_reg, sizeof hand_reg) == 0);
	/* a scalar with two values cannot be written */
	k = g_ptr_array_index(((struct reg_section *)g_ptr_array_index(f->sections, 0))->keys, 0);
	k->count = 2;
	cr_assert_eq(reg_write(f, b, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert_eq(b->len, 2 + sizeof hand_reg, "output untouched on error");
	k->count = 1;
	reg_free(f);
	g_byte_array_unref(b);
}

Test(reg, empty_file_and_empty_section)
{
	static const unsigned char empty[] = { 0xfb, 0x3e, 0xab, 0x45, 0, 0 };
	struct reg_file *f = parse_ok(empty, sizeof empty);
	char *ini = to_ini_ok(f);

	cr_assert_eq(f->sections->len, 0);
	cr_assert_str_eq(ini, "");
	assert_round_trips(empty, sizeof empty);
	reg_free(f);
	g_free(ini);

	f = reg_new();
	reg_add_section(f, H_STR("lonely"));
	assert_ini(f, "[lonely]\n");
	assert_model_round_trips(f);
	reg_free(f);
}

/* ---- slot tables (FORMATS 2.2) ------------------------------------------ */

Test(reg, formats_example_slot_layout)
{
	static const char *const names[] = { "quest", "briefing receive", "briefing reject",
					      "briefing complete" };
	struct reg_file *f = reg_new();
	GByteArray *b;
	struct reg_file *back;
	const char *name;
	size_t len;

	cr_assert_eq(res_hash(H_STR("quest"), 4), 2);
	cr_assert_eq(res_hash(H_STR("briefing receive"), 4), 1);
	cr_assert_eq(res_hash(H_STR("briefing reject"), 4), 3);
	cr_assert_eq(res_hash(H_STR("briefing complete"), 4), 3);
	for (int i = 0; i < 4; i++)
		reg_add_section(f, names[i], strlen(names[i]));
	b = write_ok(f);
	/* slot 0 = briefing complete (-1), 1 = receive (-1), 2 = quest (-1),
	 * 3 = reject, linking to 0 */
	cr_assert_eq((int16_t)u16_at(b->data, 6), -1);
	cr_assert_eq((int16_t)u16_at(b->data, 12), -1);
	cr_assert_eq((int16_t)u16_at(b->data, 18), -1);
	cr_assert_eq((int16_t)u16_at(b->data, 24), 0);
	name = section_name_at(b->data, u32_at(b->data, 8), &len);
	cr_assert(len == 17 && memcmp(name, "briefing complete", 17) == 0, "slot 0: %.*s",
		  (int)len, name);
	cr_assert_eq(u32_at(b->data, 20), 30, "quest's payload comes first, right after the table");
	cr_assert_eq(u32_at(b->data, 14), 30 + 4 + 5, "briefing receive follows quest");
	assert_all_reachable(b->data);
	back = parse_ok(b->data, b->len);
	assert_same_model(f, back);
	reg_free(back);
	reg_free(f);
	g_byte_array_unref(b);
}

Test(reg, many_sections_and_keys_coalesce)
{
	struct reg_file *f = reg_new();
	GByteArray *b;
	unsigned foreign = 0;

	for (int i = 0; i < 300; i++) {
		char name[32];
		struct reg_section *s;

		g_snprintf(name, sizeof name, "Section %d", i);
		s = reg_add_section(f, name, strlen(name));
		for (int j = 0; j < i % 40; j++) {
			g_snprintf(name, sizeof name, "key%d", j * 7);
			reg_add_key(s, name, strlen(name), REG_INT, 1)->v.i[0] = i * j;
		}
	}
	b = write_ok(f);
	assert_all_reachable(b->data);
	/* coalesced: some link joins chains of different hashes */
	for (uint32_t s = 0; s < 300; s++) {
		int16_t next = (int16_t)u16_at(b->data, 6 + 6 * s);
		size_t len, lenn;
		const char *a = section_name_at(b->data, u32_at(b->data, 8 + 6 * s), &len);
		const char *c;

		if (next < 0)
			continue;
		c = section_name_at(b->data, u32_at(b->data, 8 + 6 * (uint32_t)next), &lenn);
		foreign += res_hash(a, len, 300) != res_hash(c, lenn, 300);
	}
	cr_assert_gt(foreign, 0, "no chain coalesced: the test does not test that");
	assert_model_round_trips(f);
	reg_free(f);
	g_byte_array_unref(b);
}

/* ---- the real files ------------------------------------------------------ */

static GByteArray *sample_quest_reg(void)
{
	struct res_window w = { .fd = open(SAMPLES_DIR "/z3q1.mq", O_RDONLY | O_CLOEXEC) };
	struct res_error err = { 0 };
	struct res_table t;
	struct stat st;
	GByteArray *b;
	int64_t i;

	if (w.fd < 0)
		cr_skip_test("samples absent: " SAMPLES_DIR "/z3q1.mq");
	cr_assert_eq(fstat(w.fd, &st), 0);
	w.len = (uint64_t)st.st_size;
	cr_assert_eq(res_table_read(&w, &t, &err), 0, "%s", err.msg);
	i = res_lookup(&t, H_STR("z3q1\\quest.reg"));
	cr_assert_geq(i, 0, "z3q1\\quest.reg not found by hash");
	b = g_byte_array_sized_new(t.entries[i].length);
	g_byte_array_set_size(b, t.entries[i].length);
	cr_assert_eq(pread(w.fd, b->data, b->len, t.entries[i].offset), (ssize_t)b->len);
	res_table_free(&t);
	close(w.fd);
	return b;
}

static GByteArray *sample_config_reg(void)
{
	gchar *buf;
	gsize len;

	if (!g_file_get_contents(SAMPLES_DIR "/config.reg", &buf, &len, NULL))
		cr_skip_test("samples absent: " SAMPLES_DIR "/config.reg");
	return g_byte_array_new_take((guint8 *)buf, len);
}

Test(reg_samples, quest_reg_round_trips)
{
	GByteArray *b = sample_quest_reg();

	cr_assert_eq(b->len, 372);
	assert_round_trips(b->data, b->len);
	assert_all_reachable(b->data);
	g_byte_array_unref(b);
}

Test(reg_samples, quest_reg_as_ini)
{
	GByteArray *b = sample_quest_reg();
	char *ini = ini_of(b->data, b->len);

	cr_assert_str_eq(ini,
			 "[quest]\n"
			 "name=z3q1\n"
			 "exp=0\n"
			 "money=0\n"
			 "questplaces={148;185}\n"
			 "\n"
			 "[briefing receive]\n"
			 "name=z3q1_1\n"
			 "give items=\n"
			 "give quests=q.z3q1.z3q1\n"
			 "give quests=q.z3q1.z3q1.1\n"
			 "\n"
			 "[briefing reject]\n"
			 "name=z3q1_2\n"
			 "\n"
			 "[briefing complete]\n"
			 "name=z3q1_3\n"
			 "exp=150\n"
			 "money=0\n"
			 "give items=\n");
	g_free(ini);
	g_byte_array_unref(b);
}

Test(reg_samples, quest_reg_slot_layout)
{
	GByteArray *b = sample_quest_reg();
	static const char *const want[] = { "briefing complete", "briefing receive", "quest",
					    "briefing reject" };
	static const int16_t next[] = { -1, -1, -1, 0 };

	for (uint32_t s = 0; s < 4; s++) {
		size_t len;
		const char *name = section_name_at(b->data, u32_at(b->data, 8 + 6 * s), &len);

		cr_assert_eq(len, strlen(want[s]));
		cr_assert(memcmp(name, want[s], len) == 0, "slot %u", s);
		cr_assert_eq((int16_t)u16_at(b->data, 6 + 6 * s), next[s], "slot %u", s);
	}
	g_byte_array_unref(b);
}

Test(reg_samples, config_reg_round_trips)
{
	GByteArray *b = sample_config_reg();
	char *ini = ini_of(b->data, b->len);

	assert_round_trips(b->data, b->len);
	assert_all_reachable(b->data);
	/* versions and dates with several dots stay strings, unquoted */
	cr_assert(strstr(ini, "[MOD]\nTitle=Pro100 Mod beta\n"), "%s", ini);
	cr_assert(strstr(ini, "\nVersion=0.9.1\n"), "%s", ini);
	cr_assert(strstr(ini, "\nDate_DMY=29.06.2022\n"), "%s", ini);
	cr_assert(strstr(ini, "\nSingle=0\n"), "%s", ini);
	cr_assert(strstr(ini, "\nfigures.res=res\\figures_100.res\nfigures.res=res\\figures_HDPack.res\n"),
		  "%s", ini);
	cr_assert(strstr(ini, "\n[CONFIG]\nai.reg=config\\ai.reg\n"), "%s", ini);
	g_free(ini);
	g_byte_array_unref(b);
}

/* ---- floats ----------------------------------------------------------------- */

static char *float_text(uint32_t bits)
{
	struct reg_file *f = reg_new();
	struct reg_key *k = reg_add_key(reg_add_section(f, H_STR("s")), H_STR("k"), REG_FLOAT, 1);
	char *ini, *text;

	set_bits(&k->v.f[0], bits);
	ini = to_ini_ok(f);
	cr_assert(g_str_has_prefix(ini, "[s]\nk="), "%s", ini);
	text = g_strndup(ini + 6, strlen(ini) - 7);
	g_free(ini);
	reg_free(f);
	return text;
}

static void assert_float_text(float v, const char *want)
{
	char *got = float_text(bits_of(&v));

	cr_assert_str_eq(got, want, "%.9g", (double)v);
	g_free(got);
}

Test(reg_float, shortest_text_with_a_point)
{
	assert_float_text(1.0f, "1.0");
	assert_float_text(0.1f, "0.1");
	assert_float_text(0.33f, "0.33");
	assert_float_text(-2.5f, "-2.5");
	assert_float_text(0.0f, "0.0");
	assert_float_text(-0.0f, "-0.0");
	assert_float_text(40.0f, "40.0");
	assert_float_text(100000.0f, "100000.0");
	assert_float_text(123456792.0f, "123456792.0");
	assert_float_text(1e10f, "1.0e+10");
	assert_float_text(3.4028235e38f, "3.4028235e+38");
	assert_float_text(1e-45f, "1.0e-45");
	assert_float_text(FLT_MIN, "1.1754944e-38");
	assert_float_text(1.5e-5f, "1.5e-05");
	assert_float_text(16777216.0f, "16777216.0");
}

Test(reg_float, infinities_and_nans)
{
	static const struct { uint32_t bits; const char *text; } cases[] = {
		{ 0x7f800000, "inf" }, { 0xff800000, "-inf" }, { 0x7fc00000, "nan" },
		{ 0xffc00000, "-nan" }, { 0x7fa00001, "nan(0x7fa00001)" },
		{ 0xffffffff, "nan(0xffffffff)" }, { 0x7f800001, "nan(0x7f800001)" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		char *got = float_text(cases[i].bits);

		cr_assert_str_eq(got, cases[i].text);
		g_free(got);
	}
}

Test(reg_float, every_tricky_float_round_trips)
{
	static const uint32_t bits[] = {
		0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff, 0x00800000,
		0x7f7fffff, 0xff7fffff, 0x3dcccccd, 0x3f800000, 0x3f800001, 0x3effffff,
		0x4b800001, 0x4cbebc20, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000,
		0x7fa00001, 0x7f800001, 0xffffffff, 0x7fffffff, 0x501502f9, 0x2edbe6ff,
	};
	struct reg_file *f = reg_new();
	struct reg_section *s = reg_add_section(f, H_STR("floats"));
	struct reg_key *arr = reg_add_key(s, H_STR("all"), REG_FLOAT | REG_ARRAY, G_N_ELEMENTS(bits));

	for (size_t i = 0; i < G_N_ELEMENTS(bits); i++) {
		char name[16];

		g_snprintf(name, sizeof name, "f%zu", i);
		set_bits(&reg_add_key(s, name, strlen(name), REG_FLOAT, 1)->v.f[0], bits[i]);
		set_bits(&arr->v.f[i], bits[i]);
	}
	assert_model_round_trips(f);
	reg_free(f);
}

Test(reg_float, random_floats_round_trip)
{
	GRand *r = g_rand_new_with_seed(2000);
	struct reg_file *f = reg_new();
	struct reg_key *k = reg_add_key(reg_add_section(f, H_STR("r")), H_STR("v"),
					REG_FLOAT | REG_ARRAY, 20000);
	GByteArray *b;
	struct reg_file *back;
	char *ini;

	for (uint32_t i = 0; i < k->count; i++)
		set_bits(&k->v.f[i], g_rand_int(r));
	b = write_ok(f);
	ini = to_ini_ok(f);
	back = from_ini_ok(ini, strlen(ini));
	assert_same_model(f, back);
	reg_free(back);
	reg_free(f);
	g_free(ini);
	g_byte_array_unref(b);
	g_rand_free(r);
}

/* ---- every type and edge case through INI and back ------------------------- */

static void add_string(struct reg_section *s, const char *name, const char *v, size_t len)
{
	reg_set_string(reg_add_key(s, name, strlen(name), REG_STRING, 1), 0, v, len);
}

/* Key name -> the INI line it must give. */
static const struct { const char *name; const char *value; size_t len; const char *line; }
string_cases[] = {
	{ "plain", H_STR("zone2"), "plain=zone2" },
	{ "empty", H_STR(""), "empty=" },
	{ "int", H_STR("5"), "int=\"5\"" },
	{ "neg", H_STR("-3"), "neg=\"-3\"" },
	{ "float", H_STR("1.5"), "float=\"1.5\"" },
	{ "exp", H_STR("1e5"), "exp=\"1e5\"" },
	{ "inf", H_STR("inf"), "inf=\"inf\"" },
	{ "nan", H_STR("-nan"), "nan=\"-nan\"" },
	{ "nanbits", H_STR("nan(0x00000000)"), "nanbits=\"nan(0x00000000)\"" },
	{ "version", H_STR("0.9.1"), "version=0.9.1" },
	{ "lead", H_STR(" x"), "lead=\" x\"" },
	{ "trail", H_STR("x\t"), "trail=\"x\\t\"" },
	{ "quote", H_STR("say \"hi\""), "quote=say \"hi\"" },
	{ "openq", H_STR("\"hi"), "openq=\"\\\"hi\"" },
	{ "nl", H_STR("a\nb"), "nl=\"a\\nb\"" },
	{ "cr", H_STR("a\rb\\c"), "cr=\"a\\rb\\\\c\"" },
	{ "path", H_STR("res\\texts.res"), "path=res\\texts.res" },
	{ "cyr", H_STR("\xcf\xf0\xe8\xe2\xe5\xf2"), "cyr=Привет" },
	{ "undef", H_STR("a\x98" "b"), "undef=\"a\\x98b\"" },
	{ "nul", H_STR("a\0b"), "nul=\"a\\x00b\"" },
	{ "del", H_STR("\x7f"), "del=\"\\x7F\"" },
	{ "eq", H_STR("=x;y"), "eq==x;y" },
	{ "semi", H_STR(";not a comment"), "semi=;not a comment" },
	{ "brackets", H_STR("[x]"), "brackets=[x]" },
	{ "places", H_STR("{148;185}"), "places={148;185}" },
};

Test(reg_ini, strings_are_quoted_only_when_needed)
{
	struct reg_file *f = reg_new();
	struct reg_section *s = reg_add_section(f, H_STR("strings"));
	char *ini;

	for (size_t i = 0; i < G_N_ELEMENTS(string_cases); i++)
		add_string(s, string_cases[i].name, string_cases[i].value, string_cases[i].len);
	ini = to_ini_ok(f);
	for (size_t i = 0; i < G_N_ELEMENTS(string_cases); i++) {
		char *line = g_strdup_printf("\n%s\n", string_cases[i].line);

		cr_assert(strstr(ini, line), "missing %s in\n%s", line, ini);
		g_free(line);
	}
	assert_model_round_trips(f);
	g_free(ini);
	reg_free(f);
}

Test(reg_ini, ints_and_arrays_of_every_kind)
{
	struct reg_file *f = reg_new();
	struct reg_section *s = reg_add_section(f, H_STR("arrays"));
	struct reg_key *k;

	reg_add_key(s, H_STR("min"), REG_INT, 1)->v.i[0] = INT32_MIN;
	reg_add_key(s, H_STR("max"), REG_INT, 1)->v.i[0] = INT32_MAX;
	reg_add_key(s, H_STR("one int"), REG_INT | REG_ARRAY, 1)->v.i[0] = 7;
	reg_add_key(s, H_STR("one float"), REG_FLOAT | REG_ARRAY, 1)->v.f[0] = 2.0f;
	reg_set_string(reg_add_key(s, H_STR("one string"), REG_STRING | REG_ARRAY, 1), 0, H_STR("x"));
	reg_add_key(s, H_STR("one empty string"), REG_STRING | REG_ARRAY, 1);
	reg_add_key(s, H_STR("no ints"), REG_INT | REG_ARRAY, 0);
	reg_add_key(s, H_STR("no floats"), REG_FLOAT | REG_ARRAY, 0);
	reg_add_key(s, H_STR("no strings"), REG_STRING | REG_ARRAY, 0);
	k = reg_add_key(s, H_STR("numbery"), REG_STRING | REG_ARRAY, 3);
	reg_set_string(k, 0, H_STR("1"));
	reg_set_string(k, 1, H_STR("abc"));
	reg_set_string(k, 2, H_STR("2.5"));
	k = reg_add_key(s, H_STR("floats"), REG_FLOAT | REG_ARRAY, 2);
	k->v.f[0] = 1.0f;
	k->v.f[1] = 0.33f;
	assert_ini(f, "[arrays]\n"
		      "min=-2147483648\n"
		      "max=2147483647\n"
		      "one int[]=7\n"
		      "one float[]=2.0\n"
		      "one string[]=x\n"
		      "one empty string[]=\n"
		      "no ints[int]=\n"
		      "no floats[float]=\n"
		      "no strings[string]=\n"
		      "numbery=\"1\"\n"
		      "numbery=abc\n"
		      "numbery=\"2.5\"\n"
		      "floats=1.0\n"
		      "floats=0.33\n");
	assert_model_round_trips(f);
	reg_free(f);
}

Test(reg_ini, odd_names_are_quoted)
{
	static const struct { const char *name; size_t len; const char *text; } keys[] = {
		{ H_STR("HP Val 1"), "HP Val 1=1" },
		{ H_STR("a=b"), "\"a=b\"=1" },
		{ H_STR("x[]"), "\"x[]\"=1" },
		{ H_STR("y[int]"), "\"y[int]\"=1" },
		{ H_STR("arr]"), "\"arr]\"=1" },
		{ H_STR(";c"), "\";c\"=1" },
		{ H_STR("#c"), "\"#c\"=1" },
		{ H_STR("[s"), "\"[s\"=1" },
		{ H_STR("\"q"), "\"\\\"q\"=1" },
		{ H_STR(""), "\"\"=1" },
		{ H_STR(" sp "), "\" sp \"=1" },
		{ H_STR("mid\"q"), "mid\"q=1" },
		{ H_STR("a\\b"), "a\\b=1" },
		{ H_STR("\xca\xeb\xfe\xf7 key name with enough ASCII"), "Ключ key name with enough ASCII=1" },
	};
	static const struct { const char *name; size_t len; const char *text; } sections[] = {
		{ H_STR(""), "[]" },
		{ H_STR("a]b"), "[a]b]" },
		{ H_STR(" pad"), "[\" pad\"]" },
		{ H_STR("\"q\""), "[\"\\\"q\\\"\"]" },
		{ H_STR("x=y;z"), "[x=y;z]" },
		{ H_STR("tab\there"), "[\"tab\\there\"]" },
	};
	struct reg_file *f = reg_new();
	struct reg_section *s = NULL;
	char *ini;

	for (size_t i = 0; i < G_N_ELEMENTS(sections); i++)
		s = reg_add_section(f, sections[i].name, sections[i].len);
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++)
		reg_add_key(s, keys[i].name, keys[i].len, REG_INT, 1)->v.i[0] = 1;
	ini = to_ini_ok(f);
	for (size_t i = 0; i < G_N_ELEMENTS(sections); i++) {
		char *line = g_strdup_printf("%s\n", sections[i].text);

		cr_assert(strstr(ini, line), "missing %s in\n%s", line, ini);
		g_free(line);
	}
	for (size_t i = 0; i < G_N_ELEMENTS(keys); i++) {
		char *line = g_strdup_printf("\n%s\n", keys[i].text);

		cr_assert(strstr(ini, line), "missing %s in\n%s", line, ini);
		g_free(line);
	}
	assert_model_round_trips(f);
	g_free(ini);
	reg_free(f);
}

Test(reg_ini, random_models_round_trip)
{
	GRand *r = g_rand_new_with_seed(1251);

	for (int round = 0; round < 40; round++) {
		struct reg_file *f = reg_new();
		int sections = g_rand_int_range(r, 0, 8);

		for (int i = 0; i < sections; i++) {
			char name[24];
			struct reg_section *s;
			int keys = g_rand_int_range(r, 0, 12);

			g_snprintf(name, sizeof name, "s%d_%u", i, g_rand_int(r) % 1000);
			s = reg_add_section(f, name, strlen(name));
			for (int j = 0; j < keys; j++) {
				uint8_t type = (uint8_t)g_rand_int_range(r, 0, 3);
				uint32_t count = 1;
				struct reg_key *k;

				if (g_rand_boolean(r)) {
					type |= REG_ARRAY;
					count = (uint32_t)g_rand_int_range(r, 0, 5);
				}
				g_snprintf(name, sizeof name, "k%d", j);
				k = reg_add_key(s, name, strlen(name), type, count);
				for (uint32_t v = 0; v < count; v++) {
					char text[8];
					size_t len = (size_t)g_rand_int_range(r, 0, 8);

					for (size_t c = 0; c < len; c++)
						text[c] = (char)g_rand_int_range(r, 0, 256);
					if (reg_key_base(k) == REG_INT)
						k->v.i[v] = (int32_t)g_rand_int(r);
					else if (reg_key_base(k) == REG_FLOAT)
						set_bits(&k->v.f[v], g_rand_int(r));
					else
						reg_set_string(k, v, text, len);
				}
			}
		}
		assert_model_round_trips(f);
		reg_free(f);
	}
	g_rand_free(r);
}

Test(reg_ini, number_like_strings_round_trip)
{
	static const char alphabet[] = "0123456789+-.eE nafi()x\"";
	GRand *r = g_rand_new_with_seed(7);
	struct reg_file *f = reg_new();
	struct reg_section *s = reg_add_section(f, H_STR("s"));

	for (int i = 0; i < 5000; i++) {
		char name[16], text[16];
		size_t len = (size_t)g_rand_int_range(r, 0, 9);

		for (size_t c = 0; c < len; c++)
			text[c] = alphabet[g_rand_int_range(r, 0, sizeof alphabet - 1)];
		if (i % 3 == 0 && len >= 6) /* now and then a nan() form */
			memcpy(text, "nan(0x", 6);
		g_snprintf(name, sizeof name, "k%d", i);
		add_string(s, name, text, len);
	}
	assert_model_round_trips(f);
	reg_free(f);
	g_rand_free(r);
}

Test(reg_ini, scalar_with_many_values_is_refused)
{
	struct reg_file *f = reg_new();
	struct reg_key *k = reg_add_key(reg_add_section(f, H_STR("s")), H_STR("k"), REG_INT, 1);
	struct format_error err = { 0 };
	GString *out = g_string_new(NULL);

	k->count = 0;
	cr_assert_eq(reg_to_ini(f, out, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert(strstr(err.msg, "not an array"), "%s", err.msg);
	cr_assert_eq(out->len, 0);
	k->count = 1;
	g_string_free(out, TRUE);
	reg_free(f);
}

Test(reg_ini, duplicate_names_cannot_be_written)
{
	struct reg_file *f = reg_new();
	struct reg_section *s = reg_add_section(f, H_STR("s"));
	struct format_error err = { 0 };
	GString *out = g_string_new("keep");

	reg_add_key(s, H_STR("k"), REG_INT, 1);
	reg_add_key(s, H_STR("K"), REG_INT, 1);
	assert_model_round_trips(f); /* names differing in case are two keys */
	reg_add_key(s, H_STR("k"), REG_INT, 1);
	cr_assert_eq(reg_to_ini(f, out, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert(strstr(err.msg, "two keys"), "%s", err.msg);
	cr_assert_str_eq(out->str, "keep");
	g_ptr_array_remove_index(s->keys, 2);
	reg_add_section(f, H_STR("s"));
	cr_assert_eq(reg_to_ini(f, out, &err), -1);
	cr_assert(strstr(err.msg, "two sections"), "%s", err.msg);
	cr_assert_str_eq(out->str, "keep");
	g_string_free(out, TRUE);
	reg_free(f);
}

/* A 200-byte name on every line of its values: 48 empty strings take
 * 9600 bytes of names, within 32 times the key's 301 REG bytes; 49 take
 * 9800, past 32 x 303.  Both directions draw the line at the same place. */
static void add_named_array(struct reg_file *f, const char *name, uint32_t count)
{
	reg_add_key(reg_add_section(f, H_STR("s")), name, strlen(name), REG_STRING | REG_ARRAY,
		    count);
}

static GString *repeated_lines(const char *name, uint32_t count)
{
	GString *t = g_string_new("[s]\n");

	for (uint32_t i = 0; i < count; i++)
		g_string_append_printf(t, "%s=\"\"\n", name);
	return t;
}

Test(reg_ini, long_names_of_long_arrays_are_refused_both_ways)
{
	char name[201];
	struct reg_file *f = reg_new(), *g = reg_new(), *back = NULL;
	struct format_error err = { 0 };
	GString *out = g_string_new("keep"), *t;

	memset(name, 'n', 200);
	name[200] = '\0';
	add_named_array(f, name, 48);
	assert_model_round_trips(f);
	add_named_array(g, name, 49);
	cr_assert_eq(reg_to_ini(g, out, &err), -1);
	cr_assert_eq(err.code, EFBIG, "%d: %s", err.code, err.msg);
	cr_assert(strstr(err.msg, "49 values under a 200-byte name"), "%s", err.msg);
	cr_assert_str_eq(out->str, "keep");

	t = repeated_lines(name, 48);
	back = from_ini_ok(t->str, t->len);
	assert_same_model(f, back);
	reg_free(back);
	g_string_free(t, TRUE);
	t = repeated_lines(name, 49);
	g_string_prepend(t, "; a comment first\n");
	cr_assert_eq(ini_to_reg(t->str, t->len, &back, &err), -1);
	cr_assert_null(back);
	cr_assert_eq(err.code, EFBIG, "%d: %s", err.code, err.msg);
	cr_assert_eq(err.offset, 3, "the key's first line");
	cr_assert(strstr(err.msg, "line 3: "), "%s", err.msg);
	g_string_free(t, TRUE);
	g_string_free(out, TRUE);
	reg_free(f);
	reg_free(g);
}

Test(reg_ini, writer_refuses_names_the_hash_cannot_place)
{
	struct reg_file *f = reg_new();
	struct format_error err = { 0 };
	GByteArray *b = g_byte_array_new();

	/* "яяя": signed sum -3 */
	reg_add_key(reg_add_section(f, H_STR("s")), H_STR("\xff\xff\xff"), REG_INT, 1);
	cr_assert_eq(reg_write(f, b, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert(strstr(err.msg, "negative"), "%s", err.msg);
	cr_assert_eq(b->len, 0);
	reg_free(f);
	g_byte_array_unref(b);
}

Test(reg_ini, writer_refuses_what_fields_cannot_hold)
{
	struct reg_file *f = reg_new();
	struct reg_section *s = reg_add_section(f, H_STR("s"));
	struct format_error err = { 0 };
	GByteArray *b = g_byte_array_new();
	char *big = g_malloc0(70000);
	struct reg_key *k;

	k = reg_add_key(s, H_STR("str"), REG_STRING, 1);
	reg_set_string(k, 0, big, 65536);
	cr_assert_eq(reg_write(f, b, &err), -1);
	cr_assert_eq(err.code, ERANGE);
	reg_set_string(k, 0, big, 65535);
	cr_assert_eq(reg_write(f, b, &err), 0, "%s", err.msg);
	g_byte_array_set_size(b, 0);
	reg_add_key(s, big, 65536, REG_INT, 1);
	cr_assert_eq(reg_write(f, b, &err), -1);
	cr_assert_eq(err.code, ERANGE);
	g_ptr_array_remove_index(s->keys, 1);
	k = reg_add_key(s, H_STR("a"), REG_INT | REG_ARRAY, 65536);
	cr_assert_eq(reg_write(f, b, &err), -1);
	cr_assert_eq(err.code, ERANGE);
	k->type = 3;
	cr_assert_eq(reg_write(f, b, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	k->type = REG_INT | REG_ARRAY;
	cr_assert_eq(b->len, 0);
	g_free(big);
	reg_free(f);
	g_byte_array_unref(b);
}

/* ---- INI written by the community tools (FORMATS 2.4) ------------------------ */

static const struct reg_key *key_of(const struct reg_file *f, guint sec, guint key)
{
	const struct reg_section *s = g_ptr_array_index(f->sections, sec);

	cr_assert_lt(key, s->keys->len);
	return g_ptr_array_index(s->keys, key);
}

Test(ini, community_text_reads_as_ini2reg)
{
	static const char text[] =
		"; made by reg2ini\n"
		"[RPG]\n"
		"HumanCrossAnimationSpeed=1\n"
		"BackstabMult=0.00\n"
		"Int1ExpBonus=0.20\n"
		"HP Val 1=25\n"
		"[DifficultyLevels]\n"
		"Absorption=1.00\n"
		"Absorption=0.33\n"
		"[MPZone]\n"
		"Gipath=zone2\n"
		"Gipath=\n"
		"[RES]\n"
		"texts.res=res\\texts.res\n"
		"version=0.9.1\n"
		"mixed=1\n"
		"mixed=abc\n"
		"mixed=2.5\n";
	struct reg_file *f = from_ini_ok(H_STR(text));
	const struct reg_key *k;

	cr_assert_eq(f->sections->len, 4);
	k = key_of(f, 0, 0);
	cr_assert_eq(k->type, REG_INT);
	cr_assert_eq(k->v.i[0], 1);
	k = key_of(f, 0, 1);
	cr_assert_eq(k->type, REG_FLOAT);
	cr_assert_eq(bits_of(&k->v.f[0]), 0);
	cr_assert_eq(key_of(f, 0, 2)->v.f[0], 0.2f);
	k = key_of(f, 0, 3);
	cr_assert_str_eq(k->name, "HP Val 1");
	cr_assert_eq(k->v.i[0], 25);
	k = key_of(f, 1, 0);
	cr_assert_eq(k->type, REG_FLOAT | REG_ARRAY);
	cr_assert_eq(k->count, 2);
	cr_assert_eq(k->v.f[0], 1.0f);
	cr_assert_eq(k->v.f[1], 0.33f);
	k = key_of(f, 2, 0);
	cr_assert_eq(k->type, REG_STRING | REG_ARRAY);
	cr_assert_eq(k->count, 2);
	cr_assert_str_eq(k->v.str[0].s, "zone2");
	cr_assert_eq(k->v.str[1].len, 0);
	k = key_of(f, 3, 0);
	cr_assert_str_eq(k->name, "texts.res");
	cr_assert_eq(k->type, REG_STRING);
	cr_assert_str_eq(k->v.str[0].s, "res\\texts.res");
	cr_assert_eq(key_of(f, 3, 1)->type, REG_STRING);
	k = key_of(f, 3, 2);
	cr_assert_eq(k->type, REG_STRING | REG_ARRAY, "a string among numbers: a string array");
	cr_assert_str_eq(k->v.str[0].s, "1");
	cr_assert_str_eq(k->v.str[2].s, "2.5");
	reg_free(f);
}

Test(ini, classify)
{
	static const struct { const char *text; enum ini_class c; } cases[] = {
		{ "0", INI_INT }, { "-12", INI_INT }, { "+7", INI_INT }, { "007", INI_INT },
		{ "3000000000", INI_INT }, { "1.", INI_FLOAT }, { ".5", INI_FLOAT },
		{ "-0.0", INI_FLOAT }, { "1e5", INI_FLOAT }, { "1E-5", INI_FLOAT },
		{ "+.5e+3", INI_FLOAT }, { "inf", INI_FLOAT }, { "-inf", INI_FLOAT },
		{ "nan", INI_FLOAT }, { "-nan", INI_FLOAT }, { "nan(0x7fa00000)", INI_FLOAT },
		{ "", INI_STRING }, { "-", INI_STRING }, { ".", INI_STRING }, { "e5", INI_STRING },
		{ "1e", INI_STRING }, { "1e+", INI_STRING }, { "0.9.1", INI_STRING },
		{ "0x10", INI_STRING }, { "1,5", INI_STRING }, { " 1", INI_STRING },
		{ "Inf", INI_STRING }, { "infinity", INI_STRING }, { "NaN", INI_STRING },
		{ "nan()", INI_STRING }, { "1.5f", INI_STRING }, { "--1", INI_STRING },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
		cr_assert_eq(ini_classify(cases[i].text, strlen(cases[i].text)), cases[i].c,
			     "\"%s\"", cases[i].text);
}

Test(ini, markers_quotes_comments_crlf_bom)
{
	static const char text[] =
		"\xef\xbb\xbf# comment\r\n"
		"  [ sec ]  \r\n"
		"\r\n"
		"  one []  =  7  \r\n"
		"none[float]=\r\n"
		"q = \"5\"  \r\n"
		"\"a=b\"[]=\"x\\ty\\x98\\\\\"\r\n"
		"arr=1\r\n"
		"\t; a comment between values\r\n"
		"arr[]=2\r\n"
		"neg=-0.0\r\n"
		"big=1e-50\r\n"
		"cyr=Привет";
	struct reg_file *f = from_ini_ok(H_STR(text));
	const struct reg_section *s = g_ptr_array_index(f->sections, 0);
	const struct reg_key *k;

	cr_assert_str_eq(s->name, "sec", "blanks inside the brackets are trimmed");
	cr_assert_eq(s->keys->len, 8);
	k = key_of(f, 0, 0);
	cr_assert_str_eq(k->name, "one");
	cr_assert_eq(k->type, REG_INT | REG_ARRAY);
	cr_assert_eq(k->count, 1);
	cr_assert_eq(k->v.i[0], 7);
	k = key_of(f, 0, 1);
	cr_assert_eq(k->type, REG_FLOAT | REG_ARRAY);
	cr_assert_eq(k->count, 0);
	k = key_of(f, 0, 2);
	cr_assert_eq(k->type, REG_STRING);
	cr_assert_str_eq(k->v.str[0].s, "5");
	k = key_of(f, 0, 3);
	cr_assert_str_eq(k->name, "a=b");
	cr_assert_eq(k->type, REG_STRING | REG_ARRAY);
	cr_assert_eq(k->v.str[0].len, 5);
	cr_assert(memcmp(k->v.str[0].s, "x\ty\x98\\", 5) == 0);
	k = key_of(f, 0, 4);
	cr_assert_eq(k->type, REG_INT | REG_ARRAY, "a repeated key is an array, [] or not");
	cr_assert_eq(k->count, 2);
	cr_assert_eq(k->v.i[1], 2);
	cr_assert_eq(bits_of(&key_of(f, 0, 5)->v.f[0]), 0x80000000);
	cr_assert_eq(bits_of(&key_of(f, 0, 6)->v.f[0]), 0, "underflow rounds to zero");
	k = key_of(f, 0, 7);
	cr_assert_str_eq(k->v.str[0].s, "\xcf\xf0\xe8\xe2\xe5\xf2", "UTF-8 becomes cp1251");
	reg_free(f);
}

Test(ini, only_comments_make_an_empty_reg)
{
	struct format_error err = { 0 };
	GByteArray *b = g_byte_array_new();

	cr_assert_eq(ini_to_reg_bytes(H_STR("; nothing\n\n# at all\n"), b, &err), 0);
	assert_bytes(b, "\xfb\x3e\xab\x45\0\0", 6, "empty");
	g_byte_array_set_size(b, 0);
	cr_assert_eq(ini_to_reg_bytes("", 0, b, &err), 0);
	cr_assert_eq(b->len, 6);
	g_byte_array_unref(b);
}

Test(ini, limits_are_reached_exactly)
{
	GString *t = g_string_new("[s]\n");
	struct reg_file *f;
	GByteArray *b;

	g_string_append(t, "long=");
	for (int i = 0; i < 65535; i++)
		g_string_append_c(t, 'x');
	g_string_append(t, "\n");
	for (int i = 0; i < 65535; i++)
		g_string_append(t, "a=1\n");
	f = from_ini_ok(t->str, t->len);
	cr_assert_eq(key_of(f, 0, 0)->v.str[0].len, 65535);
	cr_assert_eq(key_of(f, 0, 1)->count, 65535);
	b = write_ok(f);
	assert_round_trips(b->data, b->len);
	reg_free(f);
	g_byte_array_unref(b);
	g_string_free(t, TRUE);
}

Test(ini, most_sections_and_keys)
{
	GString *t = g_string_new(NULL);
	struct reg_file *f;
	GByteArray *b;

	for (int i = 0; i < REG_MAX_SLOTS; i++)
		g_string_append_printf(t, "[s%d]\n", i);
	for (int i = 0; i < REG_MAX_SLOTS; i++)
		g_string_append_printf(t, "k%d=%d\n", i, i);
	f = from_ini_ok(t->str, t->len);
	b = write_ok(f);
	assert_all_reachable(b->data);
	assert_round_trips(b->data, b->len);
	reg_free(f);
	g_byte_array_unref(b);
	g_string_free(t, TRUE);
}

Test(ini, random_text_never_crashes_and_what_reads_round_trips)
{
	static const char *const pieces[] = {
		"[", "]", "=", "\"", "\\", ";", "#", "\n", "\r\n", " ", "\t", "[]", "[int]",
		"[float]", "[string]", "k", "K", "s", "1", "-", ".", "e", "5", "inf", "nan",
		"nan(0x7fa00000)", "\\x98", "\\n", "Жук", "\xff", "\x98", "3000000000", "1e39",
	};
	GRand *r = g_rand_new_with_seed(1999);
	unsigned accepted = 0;

	for (int round = 0; round < 20000; round++) {
		GString *t = g_string_new("[s]\n");
		struct format_error err = { 0 };
		struct reg_file *f = NULL;
		int n = g_rand_int_range(r, 1, 30);

		for (int i = 0; i < n; i++)
			g_string_append(t, pieces[g_rand_int_range(r, 0, G_N_ELEMENTS(pieces))]);
		if (ini_to_reg(t->str, t->len, &f, &err) == 0) {
			char *ini = to_ini_ok(f);
			struct reg_file *back = from_ini_ok(ini, strlen(ini));

			assert_same_model(f, back);
			reg_free(back);
			reg_free(f);
			g_free(ini);
			accepted++;
		} else {
			cr_assert_null(f);
			cr_assert(err.offset >= 1 && err.offset <= (uint64_t)n + 1, "line %llu",
				  (unsigned long long)err.offset);
		}
		g_string_free(t, TRUE);
	}
	cr_assert_gt(accepted, 1000, "only %u texts were accepted", accepted);
	g_rand_free(r);
}

/* ---- INI errors ------------------------------------------------------------- */

static void expect_ini_error(const char *text, size_t len, int code, unsigned line, const char *needle)
{
	struct format_error err = { 0 };
	struct reg_file *f = (struct reg_file *)1;
	GByteArray *b = g_byte_array_new();

	cr_assert_eq(ini_to_reg(text, len, &f, &err), -1, "accepted:\n%.200s", text);
	cr_assert_null(f);
	cr_assert_eq(err.code, code, "code %d, expected %d (%s)", err.code, code, err.msg);
	cr_assert_eq(err.offset, line, "line %llu, expected %u (%s)", (unsigned long long)err.offset,
		     line, err.msg);
	cr_assert(strstr(err.msg, needle), "message \"%s\" lacks \"%s\"", err.msg, needle);
	cr_assert_eq(ini_to_reg_bytes(text, len, b, &err), -1);
	cr_assert_eq(b->len, 0);
	g_byte_array_unref(b);
}

#define INI_ERROR(text, code, line, needle) expect_ini_error(H_STR(text), code, line, needle)

Test(ini_errors, syntax)
{
	INI_ERROR("[s]\nfoo\n", EINVAL, 2, "not a [section], key=value");
	INI_ERROR("a=1\n[s]\n", EINVAL, 1, "before any [section]");
	INI_ERROR("; c\n\nk=1\n", EINVAL, 3, "before any [section]");
	INI_ERROR("[s]\n[t\n", EINVAL, 2, "']'");
	INI_ERROR("[s] ; comment\n", EINVAL, 1, "']'");
	INI_ERROR("[s]\n=5\n", EINVAL, 2, "empty key name");
	INI_ERROR("[s]\nk=\"abc\n", EINVAL, 2, "not closed");
	INI_ERROR("[s]\nk=\"abc\" x\n", EINVAL, 2, "after the closing quote");
	INI_ERROR("[s]\nk=\"a\\qb\"\n", EINVAL, 2, "unknown escape");
	INI_ERROR("[s]\nk=\"a\\x4\"\n", EINVAL, 2, "unknown escape");
	INI_ERROR("[s]\nk=\"a\\", EINVAL, 2, "unknown escape");
	INI_ERROR("[s]\n\"k=1\n", EINVAL, 2, "not closed");
	INI_ERROR("[s]\n\"k\" x=1\n", EINVAL, 2, "after the closing quote");
	INI_ERROR("[\"s\" x]\n", EINVAL, 1, "after the closing quote");
	INI_ERROR("[s]\nk[int]=5\n", EINVAL, 2, "empty array");
	INI_ERROR("[s]\nk[string]=\"\"\n", EINVAL, 2, "empty array");
	INI_ERROR("[s]\nk[int]=\nk=1\n", EINVAL, 3, "line 2");
	INI_ERROR("[s]\nk=1\nk[float]=\n", EINVAL, 3, "line 2");
	INI_ERROR("[s]\nk=1\n\"k\"[int]=\n", EINVAL, 3, "empty array");
	INI_ERROR("[s]\nk=1\n[t]\n[s]\n", EINVAL, 4, "first at line 1");
}

Test(ini_errors, types)
{
	INI_ERROR("[s]\n\nk=3000000000\n", ERANGE, 3, "32-bit");
	INI_ERROR("[s]\nk=-2147483649\n", ERANGE, 2, "32-bit");
	INI_ERROR("[s]\nk=2147483648\n", ERANGE, 2, "32-bit");
	INI_ERROR("[s]\nk=1\nk=99999999999999999999999\nk=3\n", ERANGE, 3, "32-bit");
	INI_ERROR("[s]\nk=1e39\n", ERANGE, 2, "float range");
	INI_ERROR("[s]\nk=-3.5e38\n", ERANGE, 2, "float range");
	INI_ERROR("[s]\nk=nan(0x7f800000)\n", EINVAL, 2, "NaN");
	INI_ERROR("[s]\nk=nan(0x00000001)\n", EINVAL, 2, "NaN");
	INI_ERROR("[s]\nk=1.0\nk=2.0\nk=3\n", EINVAL, 4, "mixes ints and floats (line 2 has a float)");
	INI_ERROR("[s]\nk=3\nk=2.0\n", EINVAL, 3, "line 2 has an int");
	/* a type error is reported before a syntax error of a later section */
	INI_ERROR("[s]\nk=1\nk=1.5\n[t]\nbad\n", EINVAL, 3, "mixes");
}

Test(ini_errors, ints_that_fit)
{
	struct reg_file *f = from_ini_ok(H_STR("[s]\na=2147483647\nb=-2147483648\nc=-0\nd=+5\n"));

	cr_assert_eq(key_of(f, 0, 0)->v.i[0], INT32_MAX);
	cr_assert_eq(key_of(f, 0, 1)->v.i[0], INT32_MIN);
	cr_assert_eq(key_of(f, 0, 2)->v.i[0], 0);
	cr_assert_eq(key_of(f, 0, 3)->v.i[0], 5);
	reg_free(f);
	/* in a string array a big number is just text */
	f = from_ini_ok(H_STR("[s]\nk=3000000000\nk=x\n"));
	cr_assert_str_eq(key_of(f, 0, 0)->v.str[0].s, "3000000000");
	reg_free(f);
}

Test(ini_errors, encoding)
{
	INI_ERROR("[s]\nk=\xe6\x97\xa5\n", EILSEQ, 2, "column 3");
	INI_ERROR("[s]\nk=a\xff\n", EILSEQ, 2, "column 4");
	INI_ERROR("[\xe6\x97\xa5]\n", EILSEQ, 1, "cp1251");
	INI_ERROR("[s]\n\xe6\x97\xa5=1\n", EILSEQ, 2, "column 1");
	INI_ERROR("[s]\nЖук key=ок\xe6\x97\xa5\n", EILSEQ, 2, "column 11");
	INI_ERROR("[s]\nk=\"Жук\\q\"\n", EINVAL, 2, "column 7");
	INI_ERROR("[s]\nk=\"ok\xe6\x97\xa5\"\n", EILSEQ, 2, "column 6");
	/* "яяя": the game's hash cannot place it */
	INI_ERROR("[s]\nяяя=1\n", EINVAL, 2, "negative");
	INI_ERROR("[яяя]\n", EINVAL, 1, "negative");
}

static void expect_big_error(GString *t, int code, unsigned line, const char *needle)
{
	expect_ini_error(t->str, t->len, code, line, needle);
	g_string_free(t, TRUE);
}

static GString *repeat(const char *head, char c, size_t n, const char *tail)
{
	GString *t = g_string_new(head);

	for (size_t i = 0; i < n; i++)
		g_string_append_c(t, c);
	g_string_append(t, tail);
	return t;
}

Test(ini_errors, lengths_and_counts)
{
	GString *t;

	expect_big_error(repeat("[s]\nk=", 'x', 65536, "\n"), ERANGE, 2, "65535");
	expect_big_error(repeat("[s]\nk=\"", 'x', 65536, "\"\n"), ERANGE, 2, "65535");
	expect_big_error(repeat("[s]\n", 'k', 65536, "=1\n"), ERANGE, 2, "key name");
	expect_big_error(repeat("[", 's', 65536, "]\n"), ERANGE, 1, "section name");
	t = g_string_new("[s]\n");
	for (int i = 0; i < 65536; i++)
		g_string_append(t, "a=x\n");
	expect_big_error(t, ERANGE, 65537, "more than 65535 values");
	t = g_string_new(NULL);
	for (int i = 0; i <= 65535; i++)
		g_string_append_printf(t, "[s%d]\n", i);
	expect_big_error(t, ERANGE, REG_MAX_SLOTS + 1, "sections");
	t = g_string_new("; keys\n[s]\n");
	for (int i = 0; i <= 65535; i++)
		g_string_append_printf(t, "k%d=1\n", i);
	expect_big_error(t, ERANGE, REG_MAX_SLOTS + 3, "keys");
}

/* ---- malformed REG ------------------------------------------------------------ */

static void expect_refused(const void *buf, size_t len, uint64_t offset, const char *needle)
{
	struct format_error err = { 0 };
	struct reg_file *f = (struct reg_file *)1;
	GString *ini = g_string_new(NULL);

	cr_assert_eq(parse_exact(buf, len, &f, &err), -1, "a %zu-byte REG was accepted", len);
	cr_assert_null(f);
	cr_assert_eq(err.code, EINVAL, "code %d (%s)", err.code, err.msg);
	cr_assert_eq(err.offset, offset, "offset %llu, expected %llu (%s)",
		     (unsigned long long)err.offset, (unsigned long long)offset, err.msg);
	cr_assert(strstr(err.msg, needle), "message \"%s\" lacks \"%s\"", err.msg, needle);
	cr_assert_eq(reg_bytes_to_ini(buf, len, ini, &err), -1);
	cr_assert_eq(ini->len, 0);
	g_string_free(ini, TRUE);
}

static GByteArray *hand_copy(void)
{
	return g_byte_array_append(g_byte_array_new(), hand_reg, sizeof hand_reg);
}

static void expect_patch_refused(size_t at, const void *p, size_t n, uint64_t offset,
				 const char *needle)
{
	GByteArray *b = hand_copy();

	h_put(b, at, p, n);
	expect_refused(b->data, b->len, offset, needle);
	g_byte_array_unref(b);
}

#define PATCH(at, bytes, offset, needle) \
	expect_patch_refused(at, bytes, sizeof(bytes) - 1, offset, needle)

Test(reg_malformed, every_truncation_of_a_small_file)
{
	for (size_t len = 0; len < sizeof hand_reg; len++) {
		struct format_error err = { 0 };
		struct reg_file *f = (struct reg_file *)1;

		cr_assert_eq(parse_exact(hand_reg, len, &f, &err), -1, "%zu bytes accepted", len);
		cr_assert_null(f);
		cr_assert_eq(err.code, EINVAL);
		cr_assert_leq(err.offset, len, "offset %llu past the data", (unsigned long long)err.offset);
	}
}

Test(reg_malformed, every_truncation_of_the_sample)
{
	GByteArray *b = sample_quest_reg();

	for (size_t len = 0; len < b->len; len++) {
		struct format_error err = { 0 };
		struct reg_file *f = (struct reg_file *)1;

		cr_assert_eq(parse_exact(b->data, len, &f, &err), -1, "%zu bytes accepted", len);
		cr_assert_null(f);
	}
	g_byte_array_unref(b);
}

Test(reg_malformed, header)
{
	expect_refused("", 0, 0, "truncated header");
	expect_refused("\xfb\x3e\xab\x45\0", 5, 0, "truncated header");
	PATCH(0, "\xfb\x3e\xab\x46", 0, "bad magic");
	PATCH(4, "\x10\x00", 4, "slot table of 16 sections");
	PATCH(4, "\xff\xff", 4, "more than 32768");
}

Test(reg_malformed, slot_tables)
{
	/* section slots at 6 and 12, key slots of A at 23, of B at 56 */
	PATCH(6, "\x02\x00", 6, "next index 2");
	PATCH(12, "\xfe\xff", 12, "next index -2");
	PATCH(8, "\x5c\x00\x00\x00", 8, "outside 18..91");
	PATCH(8, "\x11\x00\x00\x00", 8, "outside 18..91");
	PATCH(14, "\x00\x00\x00\x80", 14, "outside");
	PATCH(8, "\x12\x00\x00\x00", 14, "share the payload at 18");
	PATCH(23, "\x02\x00", 23, "key slot 0: next index 2");
	PATCH(62, "\x05\x00", 62, "key slot 1: next index 5");
	PATCH(25, "\x10\x00\x00\x00", 25, "outside 35..50");
	PATCH(25, "\x21\x00\x00\x00", 25, "outside 35..50");
	PATCH(31, "\x11\x00\x00\x00", 31, "share");
	PATCH(58, "\xff\xff\xff\xff", 58, "outside");
}

Test(reg_malformed, records)
{
	PATCH(35, "\x03", 35, "unknown type 0x03");
	PATCH(43, "\x41", 43, "unknown type 0x41");
	PATCH(68, "\x7f", 68, "unknown type 0x7f");
	/* A's name runs past B; a third key slot of A swallows x's first
	 * bytes, so x's offset points into the table */
	PATCH(20, "\x40\x00", 20, "section name");
	PATCH(18, "\x03\x00", 25, "outside 41..50");
	PATCH(36, "\x09\x00", 36, "key name");
	/* the string length of s runs into arr */
	PATCH(72, "\x09\x00", 72, "string");
	/* arr claims 3 values but holds 2 */
	PATCH(82, "\x03\x00", 84, "values");
	/* x's int runs into y when y moves one byte down */
	PATCH(31, "\x18\x00\x00\x00", 39, "the next key");
}

/* ---- what a refused parse allocates --------------------------------------------- */

/* What the parse of a small REG may add to the address space: its copy,
 * the file, a section, a key, the message (a few hundred bytes; the heap
 * grows by pages). */
#define PARSE_ROOM (64 << 10)

#ifndef UNDER_SANITIZER
static void touch_stack(void)
{
	volatile char pages[128 << 10];

	for (size_t i = 0; i < sizeof pages; i += 4096)
		pages[i] = 0;
}

/* The program's size in bytes (/proc/self/statm, in pages). */
static size_t address_space(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu", &pages) != 1)
			pages = 0;
		fclose(f);
	}
	return pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* tests/unit started with EIFS_REG_PROBE=AT:HEX is a probe, before
 * Criterion's main: a fresh process with one thread, so one malloc arena
 * and no other arena's reserved heap to fall back on.  It parses hand_reg
 * with HEX written at AT while its address space may grow by PARSE_ROOM
 * only: every allocation of 16 KiB or more is mapped on its own, the heap
 * keeps no free top (malloc_trim, no top pad), so an allocation that a
 * count asked for before the bytes were checked fails, and g_malloc
 * aborts.  Exit 0: refused with the message EIFS_REG_PROBE_NEEDLE; 3: a
 * 2 * PARSE_ROOM allocation went through (the measure does not work
 * here); 4: accepted; 5: another message; 6: a bad probe. */
__attribute__((constructor)) static void reg_probe(void)
{
	static unsigned char buf[sizeof hand_reg];
	const char *spec = getenv("EIFS_REG_PROBE"), *needle = getenv("EIFS_REG_PROBE_NEEDLE"), *hex;
	struct format_error err = { 0 };
	struct reg_file *f = NULL;
	struct rlimit lim;
	unsigned long at;
	char *end;

	if (!spec)
		return;
	memcpy(buf, hand_reg, sizeof buf);
	at = strtoul(spec, &end, 10);
	if (*end != ':' || !needle)
		_exit(6);
	for (hex = end + 1; hex[0] && hex[1]; hex += 2, at++) {
		char byte[3] = { hex[0], hex[1], 0 };

		if (at >= sizeof buf)
			_exit(6);
		buf[at] = (unsigned char)strtoul(byte, NULL, 16);
	}
	touch_stack(); /* the stack's growth is address space too */
	mallopt(M_MMAP_THRESHOLD, 16 << 10);
	mallopt(M_TOP_PAD, 0);
	malloc_trim(0);
	lim.rlim_cur = lim.rlim_max = address_space() + PARSE_ROOM;
	if (lim.rlim_cur == PARSE_ROOM || setrlimit(RLIMIT_AS, &lim) < 0)
		_exit(6);
	if (g_try_malloc(2 * PARSE_ROOM))
		_exit(3);
	if (reg_parse(buf, sizeof buf, &f, &err) == 0)
		_exit(4);
	_exit(strstr(err.msg, needle) ? 0 : 5);
}

/* The patch refused as expect_refused says, and, by a probe, with no
 * allocation near PARSE_ROOM. */
static void expect_refused_within_room(size_t at, const void *p, size_t n, uint64_t offset,
				       const char *needle)
{
	GString *spec = g_string_new(NULL);
	char *argv[] = { "/proc/self/exe", NULL }, **envp = g_get_environ(), *out = NULL, *errout = NULL;
	GError *error = NULL;
	int status;

	expect_patch_refused(at, p, n, offset, needle);
	g_string_printf(spec, "%zu:", at);
	for (size_t i = 0; i < n; i++)
		g_string_append_printf(spec, "%02x", ((const unsigned char *)p)[i]);
	envp = g_environ_setenv(envp, "EIFS_REG_PROBE", spec->str, TRUE);
	envp = g_environ_setenv(envp, "EIFS_REG_PROBE_NEEDLE", needle, TRUE);
	cr_assert(g_spawn_sync(NULL, argv, envp, G_SPAWN_DEFAULT, NULL, NULL, &out, &errout, &status, &error),
		  "%s", error ? error->message : "");
	cr_assert(!WIFSIGNALED(status),
		  "patch %s: the parse needed more than %d KiB (signal %d): %s", spec->str, PARSE_ROOM >> 10,
		  WTERMSIG(status), errout);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "patch %s: probe exit %d (3: the limit does not bite, 4: accepted, 5: another message, "
		  "6: a bad probe): %s", spec->str, WEXITSTATUS(status), errout);
	g_free(out);
	g_free(errout);
	g_strfreev(envp);
	g_string_free(spec, TRUE);
}

#define PATCH_WITHIN_ROOM(at, bytes, offset, needle) \
	expect_refused_within_room(at, bytes, sizeof(bytes) - 1, offset, needle)
#else
/* A sanitizer's allocator reserves its space at the start: a limit on
 * the address space does not measure what is allocated. */
#define PATCH_WITHIN_ROOM PATCH
#endif

Test(reg_malformed, crafted_counts_allocate_nothing_big)
{
	/* 32768 keys in a section of a few bytes (a 512 KiB slot table),
	 * 65535 array values with none present (256 KiB of ints; 1 MiB of
	 * strings and 65535 empty ones): refused from the lengths, before
	 * anything is allocated for them */
	PATCH_WITHIN_ROOM(51, "\x00\x80", 56, "key slot table");
	PATCH_WITHIN_ROOM(82, "\xff\xff", 84, "values");
	PATCH_WITHIN_ROOM(76, "\x82\x03\x00" "arr" "\xff\xff", 84, "values");
#ifdef UNDER_SANITIZER
	cr_skip_test("refused; what the parse allocates is not measured under a sanitizer");
#endif
}

Test(reg_malformed, random_damage_never_crashes)
{
	GRand *r = g_rand_new_with_seed(45);
	GByteArray *sample = hand_copy();

	for (int round = 0; round < 20000; round++) {
		GByteArray *b = g_byte_array_append(g_byte_array_new(), sample->data, sample->len);
		struct format_error err = { 0 };
		struct reg_file *f = NULL;
		int flips = g_rand_int_range(r, 1, 4);

		for (int i = 0; i < flips; i++)
			b->data[g_rand_int_range(r, 0, (gint32)b->len)] = (guint8)g_rand_int(r);
		if (parse_exact(b->data, b->len, &f, &err) == 0) {
			GString *ini = g_string_new(NULL);
			GByteArray *out = g_byte_array_new();

			(void)reg_to_ini(f, ini, &err);
			(void)reg_write(f, out, &err);
			g_string_free(ini, TRUE);
			g_byte_array_unref(out);
			reg_free(f);
		} else {
			cr_assert_null(f);
		}
		g_byte_array_unref(b);
	}
	g_byte_array_unref(sample);
	g_rand_free(r);
}

Test(reg_malformed, gaps_and_trailing_bytes_are_read_and_dropped)
{
	GByteArray *b = hand_copy();
	struct reg_file *f;
	GByteArray *again;

	g_byte_array_append(b, (const guint8 *)"junk", 4);
	f = parse_ok(b->data, b->len);
	again = write_ok(f);
	assert_bytes(again, hand_reg, sizeof hand_reg, "rewritten without the junk");
	reg_free(f);
	g_byte_array_unref(again);
	g_byte_array_unref(b);
}
