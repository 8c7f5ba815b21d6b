/* Databases <-> JSON Lines (src/db.c): known answers from databases built
 * here byte by byte, both length forms, every value type and its hex
 * fallback; the sample databases (row counts, byte-identical round trip,
 * a grep); malformed databases and texts; edits of the text. */
#include <criterion/criterion.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "db.h"
#include "helpers.h"

/* ---- databases built by hand ----------------------------------------- */

/* A node around n bytes, in the 1-byte length form when it holds n and
 * wide is 0, else in the 4-byte form. */
static GByteArray *raw(unsigned id, const void *p, size_t n, int wide)
{
	GByteArray *b = g_byte_array_new();
	unsigned char h[5] = { (unsigned char)id };

	if (n <= 127 && !wide) {
		h[1] = (unsigned char)(n * 2);
		g_byte_array_append(b, h, 2);
	} else {
		uint32_t l = (uint32_t)(2 * n + 1);

		h[1] = (unsigned char)l;
		h[2] = (unsigned char)(l >> 8);
		h[3] = (unsigned char)(l >> 16);
		h[4] = (unsigned char)(l >> 24);
		g_byte_array_append(b, h, 5);
	}
	g_byte_array_append(b, p, (guint)n);
	return b;
}

/* A node around the children (consumed), the list ending in NULL. */
static GByteArray *node_v(unsigned id, int wide, va_list ap)
{
	GByteArray *content = g_byte_array_new(), *c, *b;

	while ((c = va_arg(ap, GByteArray *))) {
		g_byte_array_append(content, c->data, c->len);
		g_byte_array_free(c, TRUE);
	}
	b = raw(id, content->data, content->len, wide);
	g_byte_array_free(content, TRUE);
	return b;
}

static GByteArray *node_(unsigned id, ...)
{
	va_list ap;
	GByteArray *b;

	va_start(ap, id);
	b = node_v(id, 0, ap);
	va_end(ap);
	return b;
}

static GByteArray *wnode_(unsigned id, ...)
{
	va_list ap;
	GByteArray *b;

	va_start(ap, id);
	b = node_v(id, 1, ap);
	va_end(ap);
	return b;
}

#define NODE(...) node_(__VA_ARGS__, NULL)
#define WNODE(...) wnode_(__VA_ARGS__, NULL)
#define ROW(...) node_(1, __VA_ARGS__, NULL)
#define EMPTY(id) raw((id), "", 0, 0)

static GByteArray *str(unsigned id, const char *s)
{
	return raw(id, s, strlen(s) + 1, 0);
}

static GByteArray *u32(unsigned id, uint32_t v)
{
	unsigned char p[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 24) };

	return raw(id, p, 4, 0);
}

static uint32_t bits_of(float f)
{
	uint32_t v;

	memcpy(&v, &f, 4);
	return v;
}

static GByteArray *f32(unsigned id, float f)
{
	return u32(id, bits_of(f));
}

/* Root node around the tables (consumed), then the trailer. */
static GByteArray *dbfile_v(int wide, va_list ap)
{
	GByteArray *b = node_v(1, wide, ap);

	g_byte_array_append(b, (const guint8 *)"\x00\x00\x02\x0C\x02\x08\x01\x00\x00\x00", 10);
	return b;
}

static GByteArray *dbfile_(int wide, ...)
{
	va_list ap;
	GByteArray *b;

	va_start(ap, wide);
	b = dbfile_v(wide, ap);
	va_end(ap);
	return b;
}

#define DBFILE(...) dbfile_(0, __VA_ARGS__, NULL)

/* ---- checks ------------------------------------------------------------ */

static char *to_text(const char *name, const GByteArray *db)
{
	GString *out = g_string_new(NULL);
	struct format_error err = { 0 };

	cr_assert_eq(db_to_jsonl(name, db->data, db->len, out, &err), 0, "%s: %s at %" PRIu64,
		     name, err.msg, err.offset);
	return g_string_free(out, FALSE);
}

static GByteArray *to_db(const char *text)
{
	GByteArray *db = g_byte_array_new();
	struct format_error err = { 0 };

	cr_assert_eq(jsonl_to_db(text, strlen(text), db, &err), 0, "%s (%" PRIu64 ")", err.msg,
		     err.offset);
	return db;
}

static void assert_same_bytes(const GByteArray *a, const GByteArray *b, const char *what)
{
	cr_assert_eq(a->len, b->len, "%s: %u bytes, expected %u", what, a->len, b->len);
	for (guint i = 0; i < a->len; i++)
		cr_assert_eq(a->data[i], b->data[i], "%s: byte %u is %02x, expected %02x", what, i,
			     a->data[i], b->data[i]);
}

/* db (consumed) shows as want, and want gives db back. */
static void known(const char *name, GByteArray *db, const char *want)
{
	char *text = to_text(name, db);
	GByteArray *back;

	cr_assert_str_eq(text, want);
	back = to_db(text);
	assert_same_bytes(back, db, name);
	g_byte_array_free(back, TRUE);
	g_byte_array_free(db, TRUE);
	g_free(text);
}

/* ---- known answers ----------------------------------------------------- */

Test(db, one_byte_lengths)
{
	known("spells.sdb",
	      DBFILE(NODE(2, ROW(str(0, "Cut Range"), raw(1, "r0\0\0", 4, 0), f32(2, 24), u32(3, 0),
				f32(4, 9), f32(5, -1), u32(6, 9), str(7, "Gipath"), u32(8, 0x12)))),
	      "{\"file\":\"spells.sdb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"spells\","
	      "\"tables\":[\"Spell Modifiers\"]}\n"
	      "{\"table\":\"Spell Modifiers\",\"row\":0,\"Name\":\"Cut Range\",\"Code\":\"r0\","
	      "\"Price\":24,\"Type\":0,\"Mana\":9,\"Value\":-1,\"Complex\":9,\"Allod\":\"Gipath\","
	      "\"Shops\":[2,5]}\n");
}

Test(db, four_byte_lengths)
{
	char name[201], *want;

	memset(name, 'a', 200);
	name[200] = 0;
	/* 200 bytes: the 4-byte form by rule, so not "wide"; a 4-byte form
	 * for a short field, row, table or root is kept as "wide" */
	want = g_strdup_printf(
		"{\"file\":\"items.idb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"items\","
		"\"tables\":[\"Materials\",\"Weapons\"],\"wide\":[\"Weapons\"]}\n"
		"{\"table\":\"Materials\",\"row\":0,\"Name\":\"%s\",\"ID\":7}\n"
		"{\"table\":\"Materials\",\"row\":1,\"wide\":[\"row\",\"Type\"],\"Type\":\"x\"}\n",
		name);
	known("items.idb",
	      DBFILE(NODE(1, ROW(str(0, name), u32(3, 7)), WNODE(1, raw(1, "x", 2, 1))), WNODE(2)),
	      want);
	g_free(want);
	known("items.idb", dbfile_(1, NODE(6), NULL),
	      "{\"file\":\"items.idb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"items\","
	      "\"tables\":[\"Loot Items\"],\"wide\":[\"root\"]}\n");
}

Test(db, floats_keep_their_bits)
{
	static const uint32_t places[] = {
		0xffffffffu, 0x7f800000u, 0xff800000u, 0x80000000u, 0x00000001u, 0x7f7fffffu,
		0x3dcccccdu, 0x3eaaaaabu, 0x7fc00000u, 0x3f800000u,
	};
	unsigned char p[sizeof places];

	for (size_t i = 0; i < sizeof places / 4; i++)
		for (int k = 0; k < 4; k++)
			p[4 * i + k] = (unsigned char)(places[i] >> (8 * k));
	known("levers.ldb",
	      DBFILE(NODE(1, ROW(str(0, "lever"), raw(1, p, sizeof p, 0), u32(2, 0xffffffffu),
				f32(3, 16777216.0f), f32(4, 1.5f)))),
	      "{\"file\":\"levers.ldb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"levers\","
	      "\"tables\":[\"Lever Prototypes\"]}\n"
	      "{\"table\":\"Lever Prototypes\",\"row\":0,\"Name\":\"lever\",\"Places\":"
	      "[\"nan:0xffffffff\",\"inf:0x7f800000\",\"inf:0xff800000\",-0,1.4013e-45,"
	      "3.4028235e+38,0.1,0.33333334,\"nan:0x7fc00000\",1],\"PlacesNum\":-1,"
	      "\"Scale\":16777216,\"Switch Time\":1069547520}\n");
}

Test(db, acks_items_keep_absent_and_unknown_subfields)
{
	known("ACKS.DB",
	      DBFILE(NODE(1, ROW(str(1, "HMW"),
				 NODE(10, NODE(1, str(1, "a.wav"), u32(2, 30), str(3, "\xd5\xe0!"),
					       str(4, "C1")),
				      NODE(1, str(1, "b.wav"), str(4, "C2"))),
				 EMPTY(11),
				 NODE(32, NODE(1, str(1, "c.wav"), raw(7, "ab", 2, 0), u32(10, 7)))))),
	      "{\"file\":\"ACKS.DB\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"acks\","
	      "\"tables\":[\"Answers\"]}\n"
	      "{\"table\":\"Answers\",\"row\":0,\"Name\":\"HMW\",\"Select\":[{\"Path\":\"a.wav\","
	      "\"weight\":30,\"Text\":\"Ха!\",\"Code\":\"C1\"},{\"Path\":\"b.wav\",\"Code\":\"C2\"}],"
	      "\"Move\":[],\"Bored\":[{\"Path\":\"c.wav\",\"f7\":\"6162\",\"f10\":7}]}\n");
}

Test(db, type_lists_are_objects)
{
	known("prints.db",
	      DBFILE(NODE(2, ROW(str(1, "grass"), NODE(2, f32(1, 0.5f), u32(2, 1000), u32(3, 200)),
				 NODE(10, f32(1, 1))))),
	      "{\"file\":\"prints.db\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"prints\","
	      "\"tables\":[\"Foot Prints\"]}\n"
	      "{\"table\":\"Foot Prints\",\"row\":0,\"Terrain Type\":\"grass\",\"Clear Weather\":"
	      "{\"Opacity\":0.5,\"Lifetime\":1000,\"Fadeout\":200},\"Bloody\":{\"Opacity\":1}}\n");
}

Test(db, lists_and_strings)
{
	known("units.udb",
	      DBFILE(NODE(4, ROW(str(0, "\xcf\xf0\xe8\xe2\xe5\xf2 \"q\" \\ \t\x98\x7f"),
				 raw(6, "\x00\x01\xff", 3, 0), NODE(8, str(1, "a"), str(1, ""),
								    raw(1, "x\0y\0", 4, 0)),
				 EMPTY(9), raw(14, "\x01", 1, 0)))),
	      "{\"file\":\"units.udb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"units\","
	      "\"tables\":[\"NPCs\"]}\n"
	      "{\"table\":\"NPCs\",\"row\":0,\"Name\":\"Привет \\\"q\\\" \\\\ \\t\\u0098\\u007f\","
	      "\"f6\":[0,1,255],\"Perks\":[\"a\",\"\",\"x\\u0000y\"],\"Weapons\":[],\"Voice\":1}\n");
	known("spells.sdb",
	      DBFILE(NODE(1, ROW(NODE(16, raw(1, "ab\0\0", 4, 0), raw(1, "abcd", 4, 0),
				      raw(1, "abcdef", 6, 0)),
				 raw(20, "\x01\x00\x01\x00\x00", 5, 0), u32(22, 0x80000001u)))),
	      "{\"file\":\"spells.sdb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"spells\","
	      "\"tables\":[\"Spell Prototypes\"]}\n"
	      "{\"table\":\"Spell Prototypes\",\"row\":0,\"BuiltIn Mods\":[\"ab\",\"abcd\","
	      "\"abcdef\"],\"Available Mods\":[1,0,1,0,0],\"Shops\":[1,32]}\n");
}

Test(db, bytes_that_do_not_fit_their_type_are_hex)
{
	known("items.idb",
	      DBFILE(NODE(1, ROW(raw(0, "abc", 3, 0), raw(4, "\x01\x00", 2, 0),
				 raw(11, "\x01\x02\x03\x04\x05", 5, 0), u32(13, 1), raw(99, "\x01\x02", 2, 0))),
		     NODE(9, ROW(raw(3, "\x07", 1, 0))),
		     NODE(2, ROW(raw(14, "", 0, 0), raw(15, "\x01\x02", 2, 0), raw(27, "\x00", 1, 0))),
		     NODE(5, ROW(NODE(22, raw(2, "a", 2, 0)), raw(1, "", 0, 0)))),
	      "{\"file\":\"items.idb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"items\","
	      "\"tables\":[\"Materials\",\"t9\",\"Weapons\",\"Quest Items\"]}\n"
	      "{\"table\":\"Materials\",\"row\":0,\"Name\":{\"hex\":\"616263\"},\"Price\":"
	      "{\"hex\":\"0100\"},\"Absorption\":{\"hex\":\"0102030405\"},\"Shops\":[1],"
	      "\"f99\":\"0102\"}\n"
	      "{\"table\":\"t9\",\"row\":0,\"f3\":\"07\"}\n"
	      "{\"table\":\"Weapons\",\"row\":0,\"Shops\":{\"hex\":\"\"},\"Deconstructable\":"
	      "{\"hex\":\"0102\"},\"f27\":\"00\"}\n"
	      "{\"table\":\"Quest Items\",\"row\":0,\"unsorted\":true,\"Zones\":{\"hex\":\"02046100\"},"
	      "\"Type\":{\"hex\":\"\"}}\n");
	/* nested nodes that the typed form would not give back */
	known("spells.sdb",
	      DBFILE(NODE(1, ROW(NODE(16, raw(1, "abcd\0", 5, 0)), NODE(17, raw(1, "ab", 2, 0)),
				 NODE(17, raw(1, "abcd", 4, 1))))),
	      "{\"file\":\"spells.sdb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"spells\","
	      "\"tables\":[\"Spell Prototypes\"]}\n"
	      "{\"table\":\"Spell Prototypes\",\"row\":0,\"BuiltIn Mods\":{\"hex\":\"010a6162636400\"},"
	      "\"Special Mods\":{\"hex\":\"01046162\"},\"Special Mods\":{\"hex\":\"01090000006162636"
	      "4\"}}\n");
	known("prints.db",
	      DBFILE(NODE(1, ROW(NODE(2, u32(2, 1), f32(1, 1)), NODE(3, raw(1, "\0\0\x80\x3f", 4, 1))))),
	      "{\"file\":\"prints.db\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"prints\","
	      "\"tables\":[\"Blood Prints\"]}\n"
	      "{\"table\":\"Blood Prints\",\"row\":0,\"Clear Weather\":{\"hex\":\"020801000000010800"
	      "00803f\"},\"Weather Precipitation\":{\"hex\":\"01090000000000803f\"}}\n");
	known("acks.db",
	      DBFILE(NODE(3, ROW(NODE(10, NODE(2, str(1, "a"))), NODE(11, NODE(1, raw(2, "\x01", 1, 0)))))),
	      "{\"file\":\"acks.db\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"acks\","
	      "\"tables\":[\"Others\"]}\n"
	      "{\"table\":\"Others\",\"row\":0,\"Talk\":{\"hex\":\"020801046100\"},"
	      "\"Rest\":[{\"weight\":{\"hex\":\"01\"}}]}\n");
}

Test(db, perks_and_quests)
{
	known("perks.pdb",
	      DBFILE(NODE(1, ROW(str(0, "Str"), str(1, "s"), u32(2, 3), NODE(10, str(1, "a"), str(1, "b")))),
		     NODE(2, ROW(str(10, "p"), f32(15, 0.25f), raw(22, "\x01", 1, 0), u32(23, 0xfffffffe)))),
	      "{\"file\":\"perks.pdb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"perks\","
	      "\"tables\":[\"Skills\",\"Perks\"]}\n"
	      "{\"table\":\"Skills\",\"row\":0,\"Name\":\"Str\",\"Code\":\"s\",\"TTI\":3,"
	      "\"Base Attributes\":[\"a\",\"b\"]}\n"
	      "{\"table\":\"Perks\",\"row\":0,\"Perk\":\"p\",\"Str\":0.25,\"Active\":1,"
	      "\"Exclusive\":-2}\n");
	known("quests.qdb",
	      DBFILE(NODE(2, ROW(str(0, "b1"), f32(2, 150), NODE(8, str(1, "zone1")), u32(10, 4))),
		     NODE(1, ROW(str(0, "q"), u32(2, 1), NODE(7)))),
	      "{\"file\":\"quests.qdb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"quests\","
	      "\"tables\":[\"Briefings\",\"Quests\"]}\n"
	      "{\"table\":\"Briefings\",\"row\":0,\"Name\":\"b1\",\"Money\":150,"
	      "\"Open zones\":[\"zone1\"],\"Bonus\":4}\n"
	      "{\"table\":\"Quests\",\"row\":0,\"Name\":\"q\",\"f2\":1,\"f7\":[]}\n");
}

Test(db, names_without_a_schema_are_generic)
{
	known("x/y\\thing.bin", DBFILE(NODE(3, ROW(str(0, "a"), raw(5, "\xff", 1, 0)))),
	      "{\"file\":\"thing.bin\",\"format\":\"eifs-db\",\"version\":1,\"schema\":null,"
	      "\"tables\":[\"t3\"]}\n"
	      "{\"table\":\"t3\",\"row\":0,\"f0\":\"6100\",\"f5\":\"ff\"}\n");
}

Test(db, which_names_are_databases)
{
	static const struct { const char *name, *schema; } cases[] = {
		{ "items.idb", "items" }, { "ITEMS.IDB", "items" }, { "units.udb", "units" },
		{ "spells.sdb", "spells" }, { "perks.pdb", "perks" }, { "quests.qdb", "quests" },
		{ "levers.ldb", "levers" }, { "prints.db", "prints" }, { "Acks.Db", "acks" },
		{ "items_100.idb", "items" }, { "a/b\\x.udb", "units" }, { "dir/prints.db", "prints" },
		{ "Thumbs.db", NULL }, { "items.idb.bak", NULL }, { "idb", NULL }, { "", NULL },
		{ "acks.db/", NULL },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *s = db_schema_of(cases[i].name);

		if (cases[i].schema)
			cr_assert(s && !strcmp(s, cases[i].schema), "%s", cases[i].name);
		else
			cr_assert_null(s, "%s", cases[i].name);
		cr_assert_eq(db_is_database(cases[i].name), cases[i].schema != NULL);
	}
}

Test(db, schemas_are_consistent)
{
	struct format_error err = { 0 };

	cr_assert_eq(db_schemas_check(&err), 0, "%s", err.msg);
}

/* ---- the sample databases --------------------------------------------- */

struct sample {
	const char *name;
	const char *tables[6];
	unsigned rows[6];
};

static const struct sample samples[] = {
	{ "items.idb",
	  { "Materials", "Weapons", "Armors", "Quick Items", "Quest Items", "Loot Items" },
	  { 33, 37, 192, 22, 71, 95 } },
	{ "units.udb", { "Hit Locations", "Race Models", "Monster Prototypes", "NPCs" },
	  { 5, 51, 389, 14 } },
	{ "acks.db", { "Answers", "Cryes", "Others" }, { 27, 64, 13 } },
	{ "spells.sdb",
	  { "Spell Prototypes", "Spell Modifiers", "Spell Templates", "Armor Spell Templates",
	    "Weapon Spell Templates" },
	  { 42, 38, 60, 22, 20 } },
};

static GByteArray *read_sample(const char *name)
{
	char *path = g_build_filename(SAMPLES_DIR, name, NULL);
	gchar *buf;
	gsize len;
	GByteArray *b;

	if (!g_file_get_contents(path, &buf, &len, NULL)) {
		g_free(path);
		return NULL;
	}
	g_free(path);
	b = g_byte_array_new_take((guint8 *)buf, len);
	return b;
}

/* Lines of text that start with {"table":"<table>", */
static unsigned rows_of(const char *text, const char *table)
{
	char *start = g_strdup_printf("{\"table\":\"%s\",", table);
	unsigned n = 0;

	for (const char *p = text; *p; p = strchr(p, '\n') + 1)
		n += g_str_has_prefix(p, start);
	g_free(start);
	return n;
}

Test(db, samples_row_counts_and_round_trip)
{
	for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
		const struct sample *s = &samples[i];
		GByteArray *db = read_sample(s->name), *back;
		unsigned lines = 0, total = 1;
		char *text;

		if (!db)
			cr_skip_test("samples absent: " SAMPLES_DIR "/%s", s->name);
		text = to_text(s->name, db);
		for (const char *p = text; *p; p = strchr(p, '\n') + 1)
			lines++;
		for (int t = 0; t < 6 && s->tables[t]; t++) {
			cr_expect_eq(rows_of(text, s->tables[t]), s->rows[t], "%s: %s has %u rows",
				     s->name, s->tables[t], rows_of(text, s->tables[t]));
			total += s->rows[t];
		}
		cr_expect_eq(lines, total, "%s: %u lines, expected %u", s->name, lines, total);
		cr_expect_null(strstr(text, "{\"hex\":"), "%s: a value that fits no type", s->name);
		back = to_db(text);
		assert_same_bytes(back, db, s->name);
		g_byte_array_free(back, TRUE);
		g_byte_array_free(db, TRUE);
		g_free(text);
	}
}

/* A record is found on one line with its table, as grep shows it. */
Test(db, grep_finds_a_record_with_its_table)
{
	static const struct { const char *file, *needle, *table; } cases[] = {
		{ "items.idb", "\"Name\":\"stone axe\",", "Weapons" },
		{ "acks.db", "\"Text\":\"Пошла потеха!\"", "Answers" },
		{ "spells.sdb", "\"Name\":\"Fire Arrow\",", "Spell Prototypes" },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		GByteArray *db = read_sample(cases[i].file);
		char *text, *prefix, **lines;
		unsigned hits = 0;

		if (!db)
			cr_skip_test("samples absent: " SAMPLES_DIR "/%s", cases[i].file);
		text = to_text(cases[i].file, db);
		prefix = g_strdup_printf("{\"table\":\"%s\",\"row\":", cases[i].table);
		lines = g_strsplit(text, "\n", -1);
		for (char **l = lines; *l; l++) {
			if (!strstr(*l, cases[i].needle))
				continue;
			hits++;
			cr_expect(g_str_has_prefix(*l, prefix), "%s: %.80s", cases[i].file, *l);
		}
		cr_expect_eq(hits, 1, "%s: %s on %u lines", cases[i].file, cases[i].needle, hits);
		g_strfreev(lines);
		g_free(prefix);
		g_free(text);
		g_byte_array_free(db, TRUE);
	}
}

static double ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Both directions for all samples; well under 100 ms in an -O2 build, the
 * bound here only catches a slow path (sanitizers, valgrind, busy CI). */
Test(db, samples_convert_fast)
{
	double to_ms = 0, back_ms = 0;

	for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
		GByteArray *db = read_sample(samples[i].name), *back = g_byte_array_new();
		GString *text = g_string_new(NULL);
		struct timespec t0;

		if (!db)
			cr_skip_test("samples absent: " SAMPLES_DIR "/%s", samples[i].name);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		cr_assert_eq(db_to_jsonl(samples[i].name, db->data, db->len, text, NULL), 0);
		to_ms += ms_since(&t0);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		cr_assert_eq(jsonl_to_db(text->str, text->len, back, NULL), 0);
		back_ms += ms_since(&t0);
		g_byte_array_free(back, TRUE);
		g_byte_array_free(db, TRUE);
		g_string_free(text, TRUE);
	}
	cr_log_info("4 sample databases: %.1f ms to text, %.1f ms back", to_ms, back_ms);
	cr_expect_lt(to_ms + back_ms, 2000.0);
}

/* ---- malformed databases ----------------------------------------------- */

static GByteArray *small_acks(void)
{
	return DBFILE(NODE(1, ROW(str(1, "HMW"), NODE(10, NODE(1, str(1, "a.wav"), u32(2, 30))))),
		      NODE(3, ROW(str(1, "x"))));
}

/* db_to_jsonl fails with EINVAL and leaves out as it was. */
static void refused(const char *name, const GByteArray *db, const char *why)
{
	GString *out = g_string_new("kept");
	struct format_error err = { 0 };

	cr_assert_eq(db_to_jsonl(name, db->data, db->len, out, &err), -1, "%s accepted", why);
	cr_assert_eq(err.code, EINVAL, "%s", why);
	cr_assert_str_eq(out->str, "kept", "%s", why);
	cr_assert_leq(err.offset, db->len, "%s", why);
	g_string_free(out, TRUE);
}

Test(db, truncated_databases_are_refused)
{
	GByteArray *db = small_acks();

	for (guint n = 0; n < db->len; n++) {
		GByteArray *cut = g_byte_array_new();
		char why[32];

		g_byte_array_append(cut, db->data, n);
		snprintf(why, sizeof why, "cut to %u bytes", n);
		refused("acks.db", cut, why);
		g_byte_array_free(cut, TRUE);
	}
	g_byte_array_free(db, TRUE);
}

Test(db, broken_structure_is_refused)
{
	GByteArray *db = small_acks(), *b;

	/* every byte of the trailer */
	for (guint i = db->len - 10; i < db->len; i++) {
		b = g_byte_array_new();
		g_byte_array_append(b, db->data, db->len);
		b->data[i] ^= 0x40;
		refused("acks.db", b, "trailer");
		g_byte_array_free(b, TRUE);
	}
	/* a node one byte longer than what its parent has left, at each level,
	 * in both length forms */
	static const struct { const char *bytes; size_t n; } past[] = {
		{ "\x01\x10\x01\x0c\x01\x08\x01\x06\x61\x00", 10 },   /* field past row */
		{ "\x01\x10\x01\x0c\x01\x0a\x01\x04\x61\x00", 10 },   /* row past table */
		{ "\x01\x10\x01\x0e\x01\x08\x01\x04\x61\x00", 10 },   /* table past root */
		{ "\x01\x12\x01\x0c\x01\x08\x01\x04\x61\x00", 10 },   /* root into trailer */
		{ "\x01\x16\x01\x12\x01\x0e\x01\x07\x00\x00\x00\x61\x00", 13 },
		{ "\x01\x13\x00\x00\x00\x01\x0c\x01\x08\x01\x04\x61\x00", 13 },
	};

	b = DBFILE(NODE(1, ROW(str(1, "a"))));
	cr_assert_eq(memcmp(b->data, "\x01\x10\x01\x0c\x01\x08\x01\x04\x61\x00", 10), 0);
	g_byte_array_free(b, TRUE);
	for (size_t i = 0; i < sizeof past / sizeof past[0]; i++) {
		b = g_byte_array_new();
		g_byte_array_append(b, (const guint8 *)past[i].bytes, (guint)past[i].n);
		g_byte_array_append(b, db->data + db->len - 10, 10);
		refused("acks.db", b, "length past the end");
		g_byte_array_free(b, TRUE);
	}
	b = DBFILE(raw(1, "\x01\xff\xff\xff\xff\x02\x04\x61\x00", 9, 0));
	refused("acks.db", b, "row of 2^31 - 1 bytes");
	g_byte_array_free(b, TRUE);

	b = DBFILE(NODE(1, ROW(str(1, "a"))));
	g_byte_array_prepend(b, (const guint8 *)"\x01\x0c", 2);   /* root of one byte less */
	g_byte_array_remove_range(b, 2, 2);
	refused("acks.db", b, "a byte between root and trailer");
	g_byte_array_free(b, TRUE);

	b = DBFILE(NODE(1, ROW(str(1, "a"))));
	b->data[0] = 2;
	refused("acks.db", b, "root id 2");
	g_byte_array_free(b, TRUE);

	b = DBFILE(NODE(1, NODE(2, str(1, "a"))));
	refused("acks.db", b, "row id 2");
	g_byte_array_free(b, TRUE);

	b = DBFILE(NODE(1), NODE(2), NODE(1));
	refused("acks.db", b, "table 1 twice");
	g_byte_array_free(b, TRUE);

	b = DBFILE(NODE(1, ROW(raw(1, "a", 2, 1), raw(1, "b", 2, 0))));
	refused("acks.db", b, "one field id in both length forms");
	g_byte_array_free(b, TRUE);

	b = g_byte_array_new();
	refused("acks.db", b, "empty");
	g_byte_array_free(b, TRUE);
	g_byte_array_free(db, TRUE);
}

/* Databases made by changing a few bytes of small ones: whatever is
 * accepted comes back byte for byte from its text. */
Test(db, every_accepted_database_round_trips)
{
	GByteArray *seeds[] = {
		small_acks(),
		DBFILE(NODE(2, ROW(str(1, "grass"), NODE(2, f32(1, 0.5f), u32(2, 1000), u32(3, 200)),
				   NODE(10, f32(1, 1))))),
		DBFILE(NODE(1, ROW(str(0, "Fire"), str(1, "f"), f32(3, 300), u32(15, 1),
				   NODE(16, raw(1, "ab\0\0", 4, 0)), raw(20, "\x01\x00\x01\x00\x00", 5, 0),
				   u32(22, 0x12))),
		       NODE(2, ROW(str(0, "Cut"), raw(1, "r0\0\0", 4, 0), f32(2, 24))),
		       NODE(3, ROW(str(1, "p"), NODE(2, str(1, "a"), str(1, "b"))))),
	};
	const char *names[] = { "acks.db", "prints.db", "spells.sdb" };
	GRand *rnd = g_rand_new_with_seed(1);
	unsigned accepted = 0, tries = 0;

	for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
		for (int k = 0; k < 3000; k++) {
			GByteArray *b = g_byte_array_new(), *back;
			GString *text = g_string_new(NULL);
			int flips = g_rand_int_range(rnd, 1, 4);

			g_byte_array_append(b, seeds[s]->data, seeds[s]->len);
			for (int f = 0; f < flips; f++) {
				guint at = (guint)g_rand_int_range(rnd, 0, (gint32)b->len - 10);

				b->data[at] = (guint8)g_rand_int_range(rnd, 0, 256);
			}
			tries++;
			if (db_to_jsonl(names[s], b->data, b->len, text, NULL) == 0) {
				struct format_error err = { 0 };

				accepted++;
				back = g_byte_array_new();
				cr_assert_eq(jsonl_to_db(text->str, text->len, back, &err), 0, "%s\n%s",
					     err.msg, text->str);
				assert_same_bytes(back, b, text->str);
				g_byte_array_free(back, TRUE);
			}
			g_string_free(text, TRUE);
			g_byte_array_free(b, TRUE);
		}
		g_byte_array_free(seeds[s], TRUE);
	}
	g_rand_free(rnd);
	cr_log_info("%u of %u changed databases accepted, all round-tripped", accepted, tries);
	cr_expect_gt(accepted, tries / 10);
}

/* ---- malformed and edited texts ---------------------------------------- */

static const char head_items[] =
	"{\"file\":\"items.idb\",\"format\":\"eifs-db\",\"version\":1,\"schema\":\"items\","
	"\"tables\":[\"Materials\",\"Weapons\"]}\n";

/* text fails with code at line. */
static void text_refused(const char *text, int code, uint64_t line)
{
	GByteArray *out = g_byte_array_new();
	struct format_error err = { 0 };

	g_byte_array_append(out, (const guint8 *)"kept", 4);
	cr_assert_eq(jsonl_to_db(text, strlen(text), out, &err), -1, "accepted: %s", text);
	cr_expect_eq(err.code, code, "code %d, expected %d (%s) for %s", err.code, code, err.msg,
		     text);
	cr_expect_eq(err.offset, line, "line %" PRIu64 ", expected %" PRIu64 " (%s)", err.offset,
		     line, err.msg);
	cr_expect_eq(out->len, 4, "out changed");
	cr_expect(strstr(err.msg, "line ") != NULL, "%s", err.msg);
	g_byte_array_free(out, TRUE);
}

/* The header, a good row, then the row under test on line 3. */
static void row_refused(const char *row, int code)
{
	char *text = g_strconcat(head_items, "{\"table\":\"Materials\",\"row\":0,\"Name\":\"a\"}\n",
				 row, "\n", NULL);

	text_refused(text, code, 3);
	g_free(text);
}

Test(db, malformed_texts_name_their_line)
{
	char deep[200];

	text_refused("", EINVAL, 1);
	text_refused("\n\n", EINVAL, 1);
	text_refused("{\"table\":\"Materials\"}\n", EINVAL, 1);
	text_refused("{\"format\":\"eifs-db\",\"version\":2,\"schema\":\"items\",\"tables\":[]}", EINVAL, 1);
	text_refused("{\"format\":\"eifs-db\",\"version\":1,\"schema\":\"weapons\",\"tables\":[]}", EINVAL, 1);
	text_refused("{\"format\":\"eifs-db\",\"version\":1,\"schema\":\"items\",\"tables\":[\"Materials\",\"t1\"]}",
		     EINVAL, 1);
	text_refused("{\"format\":\"eifs-db\",\"version\":1,\"schema\":\"items\",\"tables\":[],\"x\":1}", EINVAL, 1);
	text_refused("\n{\"format\":\"eifs-db\",\"version\":1,\"schema\":\"items\",\"tables\":[], }", EINVAL, 2);
	row_refused("{\"table\":\"Armors\",\"row\":0}", EINVAL);
	row_refused("{\"table\":\"Swords\",\"row\":0}", EINVAL);
	row_refused("{\"row\":0,\"Name\":\"a\"}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Nmae\":\"a\"}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Price\":\"8\"}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Price\":1e39}", ERANGE);
	row_refused("{\"table\":\"Materials\",\"Price\":\"nan:0x3f800000\"}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Price\":\"nan:0xfffffff\"}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"ID\":2147483648}", ERANGE);
	row_refused("{\"table\":\"Materials\",\"ID\":1.5}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"ID\":99999999999999999999999}", ERANGE);
	row_refused("{\"table\":\"Materials\",\"Shops\":[1,1]}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Shops\":[33]}", ERANGE);
	row_refused("{\"table\":\"Materials\",\"Absorption\":[1,\"x\"]}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Name\":\"\xf0\x9f\x98\x80\"}", EILSEQ);
	row_refused("{\"table\":\"Materials\",\"Name\":\"\\ud83d\\ude00\"}", EILSEQ);
	row_refused("{\"table\":\"Materials\",\"Name\":\"\xff\"}", EILSEQ);
	row_refused("{\"table\":\"Materials\",\"Name\":\"a\tb\"}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Name\":\"a\\qb\"}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Name\":\"ab}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Name\":\"a\"} x", EINVAL);
	row_refused("{\"table\":\"Materials\",}", EINVAL);
	row_refused("{\"table\":\"Materials\" \"Name\":\"a\"}", EINVAL);
	row_refused("[{\"table\":\"Materials\"}]", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Unk12\":01}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"f12\":\"zz\"}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"Unk12\":{\"hex\":\"abc\"}}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"unsorted\":1}", EINVAL);
	row_refused("{\"table\":\"Materials\",\"wide\":[\"Nmae\"]}", EINVAL);
	row_refused("{\"table\":\"Weapons\",\"Deconstructable\":256}", ERANGE);
	memset(deep, '[', sizeof deep);
	memcpy(deep, "{\"table\":\"Materials\",\"f1\":", 26);
	deep[sizeof deep - 1] = 0;
	row_refused(deep, EINVAL);
	text_refused("{\"format\":\"eifs-db\",\"version\":1,\"schema\":\"spells\",\"tables\":[\"Spell Modifiers\"]}\n"
		     "{\"table\":\"Spell Modifiers\",\"Code\":\"abcde\"}", ERANGE, 2);
	text_refused("{\"format\":\"eifs-db\",\"version\":1,\"schema\":\"prints\",\"tables\":[\"Blood Prints\"]}\n"
		     "{\"table\":\"Blood Prints\",\"Clear Weather\":{\"Opacity\":1,\"Colour\":2}}", EINVAL, 2);
	text_refused("{\"format\":\"eifs-db\",\"version\":1,\"schema\":\"acks\",\"tables\":[\"Others\"]}\n"
		     "{\"table\":\"Others\",\"Talk\":[{\"Path\":1}]}", EINVAL, 2);
}

/* The same database from texts that differ only where JSON allows. */
Test(db, texts_may_be_edited)
{
	GByteArray *db = DBFILE(NODE(1, ROW(str(0, "thin"), f32(4, 8), f32(5, 2), u32(13, 1))),
				NODE(2)), *b;
	const char *want = "{\"file\":\"items.idb\",\"format\":\"eifs-db\",\"version\":1,"
			   "\"schema\":\"items\",\"tables\":[\"Materials\",\"Weapons\"]}\n"
			   "{\"table\":\"Materials\",\"row\":0,\"Name\":\"thin\",\"Price\":8,"
			   "\"Weight\":2,\"Shops\":[1]}\n";
	static const char *const same[] = {
		/* keys in any order, the header's too; spaces, CRLF, blank lines, a BOM */
		"\xEF\xBB\xBF{ \"tables\" : [ \"Materials\" , \"Weapons\" ] , \"schema\":\"items\","
		"\"version\":1,\"format\":\"eifs-db\"}\r\n\r\n"
		"  {\"Shops\":[1],\"Weight\":2.0,\"Price\":8e0,\"Name\":\"thin\",\"table\":\"Materials\"}\r\n",
		/* generic keys and names, escapes, no row numbers, hex for a float */
		"{\"format\":\"eifs-db\",\"version\":1,\"schema\":\"items\",\"tables\":[\"t1\",\"t2\"]}\n"
		"{\"table\":\"t1\",\"f0\":\"th\\u0069n\",\"f4\":{\"hex\":\"00000041\"},\"Weight\":2,"
		"\"Shops\":[1]}",
	};

	known("items.idb", db, want);
	for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
		b = to_db(same[i]);
		db = DBFILE(NODE(1, ROW(str(0, "thin"), f32(4, 8), f32(5, 2), u32(13, 1))), NODE(2));
		assert_same_bytes(b, db, same[i]);
		g_byte_array_free(b, TRUE);
		g_byte_array_free(db, TRUE);
	}
	/* a changed value, an added row and an added field */
	b = to_db("{\"format\":\"eifs-db\",\"version\":1,\"schema\":\"items\",\"tables\":[\"Materials\",\"Weapons\"]}\n"
		  "{\"table\":\"Weapons\",\"Name\":\"axe\"}\n"
		  "{\"table\":\"Materials\",\"Name\":\"thin\",\"Price\":9.5,\"Weight\":2,\"Shops\":[1]}\n"
		  "{\"table\":\"Materials\",\"Name\":\"Тонкая\",\"Shops\":[],\"ID\":3}\n");
	db = DBFILE(NODE(1, ROW(str(0, "thin"), f32(4, 9.5f), f32(5, 2), u32(13, 1)),
			 ROW(str(0, "\xd2\xee\xed\xea\xe0\xff"), u32(3, 3), u32(13, 0))),
		    NODE(2, ROW(str(0, "axe"))));
	assert_same_bytes(b, db, "edited");
	g_byte_array_free(b, TRUE);
	g_byte_array_free(db, TRUE);
}

/* Texts made by changing a few characters of good ones: each is refused or
 * gives a database whose own text gives it back. */
Test(db, every_accepted_text_gives_a_viewable_database)
{
	static const char alphabet[] = "{}[]\":,0123456789-.eEtrufalsn \\u\tabcdf\xd0\x9f";
	GByteArray *seeds[] = {
		small_acks(),
		DBFILE(NODE(2, ROW(str(1, "grass"), NODE(2, f32(1, 0.5f), u32(2, 1000), u32(3, 200))))),
		DBFILE(NODE(1, ROW(str(0, "thin"), f32(4, 8.25f), raw(11, "\0\0\x80\x3f", 4, 0), u32(13, 5))),
		       WNODE(2, ROW(raw(15, "\x01", 1, 1), raw(27, "\x01\x02", 2, 0)))),
	};
	const char *names[] = { "acks.db", "prints.db", "items.idb" };
	GRand *rnd = g_rand_new_with_seed(2);
	unsigned accepted = 0, tries = 0;

	for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
		char *seed = to_text(names[s], seeds[s]);
		size_t len = strlen(seed);

		for (int k = 0; k < 3000; k++) {
			char *t = g_strdup(seed);
			int edits = g_rand_int_range(rnd, 1, 4);
			GByteArray *db = g_byte_array_new();

			for (int e = 0; e < edits; e++)
				t[g_rand_int_range(rnd, 0, (gint32)len)] =
					alphabet[g_rand_int_range(rnd, 0, sizeof alphabet - 1)];
			tries++;
			if (jsonl_to_db(t, len, db, NULL) == 0) {
				char *again = to_text(names[s], db);
				GByteArray *db2 = to_db(again);

				accepted++;
				assert_same_bytes(db2, db, again);
				g_byte_array_free(db2, TRUE);
				g_free(again);
			}
			g_byte_array_free(db, TRUE);
			g_free(t);
		}
		g_free(seed);
		g_byte_array_free(seeds[s], TRUE);
	}
	g_rand_free(rnd);
	cr_log_info("%u of %u changed texts accepted", accepted, tries);
	cr_expect_gt(accepted, 0);
}
