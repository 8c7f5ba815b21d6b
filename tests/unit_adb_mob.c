/* Text views of the animation databases and the map object files
 * (src/adb.c, src/mob.c): known answers from inputs built here by hand,
 * the SS_TEXT cipher against values worked out from FORMATS 6.3, malformed
 * inputs, and the ADB sample. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "adb.h"
#include "helpers.h"
#include "mob.h"
#include "models.h"

typedef int view_fn(const unsigned char *data, size_t len, GString *out, struct format_error *err);

/* Runs fn on a copy of exactly len bytes, so that a read past them is an
 * ASan error. */
static int run(view_fn *fn, const void *buf, size_t len, GString *out, struct format_error *err)
{
	unsigned char *copy = malloc(len ? len : 1);
	int rc;

	memcpy(copy, buf, len);
	rc = fn(copy, len, out, err);
	free(copy);
	return rc;
}

static GString *view_ok(view_fn *fn, const GByteArray *b)
{
	struct format_error err = { 0 };
	GString *out = g_string_new(NULL);

	cr_assert_eq(run(fn, b->data, b->len, out, &err), 0, "refused at %llu: %s",
		     (unsigned long long)err.offset, err.msg);
	return out;
}

static void expect_text(view_fn *fn, const GByteArray *b, const char *want)
{
	GString *out = view_ok(fn, b);

	cr_assert_str_eq(out->str, want);
	g_string_free(out, TRUE);
}

static void expect_refused(view_fn *fn, const void *buf, size_t len, uint64_t offset, const char *needle)
{
	struct format_error err = { 0 };
	GString *out = g_string_new("kept");

	cr_assert_eq(run(fn, buf, len, out, &err), -1, "a %zu-byte input was accepted", len);
	cr_assert_eq(err.code, EINVAL, "code %d (%s)", err.code, err.msg);
	cr_assert_eq(err.offset, offset, "offset %llu, expected %llu (%s)",
		     (unsigned long long)err.offset, (unsigned long long)offset, err.msg);
	cr_assert(strstr(err.msg, needle), "message \"%s\" lacks \"%s\"", err.msg, needle);
	cr_assert_str_eq(out->str, "kept", "output changed by a refused input");
	g_string_free(out, TRUE);
}

static void put_u32(GByteArray *b, uint32_t v)
{
	h_put_u32(b, b->len, v);
}

static void put_f32(GByteArray *b, float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	put_u32(b, u);
}

/* A fixed-size, NUL-padded text field. */
static void put_field(GByteArray *b, const char *s, size_t size)
{
	size_t at = b->len;

	g_byte_array_set_size(b, (guint)(at + size));
	memset(b->data + at, 0, size);
	memcpy(b->data + at, s, strlen(s));
}

/* ---- ADB --------------------------------------------------------------------- */

/* "Жаба" in cp1251 */
#define TOAD "\xc6\xe0\xe1\xe0"

static GByteArray *adb_header(uint32_t n)
{
	GByteArray *b = g_byte_array_new();

	g_byte_array_append(b, (const guint8 *)"ADB", 4);
	put_u32(b, n);
	put_field(b, TOAD, 24);
	put_f32(b, 0.5f), put_f32(b, 1), put_f32(b, 1.25f);
	return b;
}

/* The first 36 bytes of a record: name, number, packed flags, probability,
 * length. */
static void adb_common(GByteArray *b, const char *name, uint32_t number, uint64_t packed)
{
	put_field(b, name, 16);
	put_u32(b, number);
	put_u32(b, (uint32_t)packed);
	put_u32(b, (uint32_t)(packed >> 32));
	put_u32(b, 100);
	put_u32(b, 59);
}

/* SWORD|BOW, bit 10 (no name), ATTACK state, CAST, modifier 14, CYCLE,
 * forms HIDES|HIT */
#define PACKED (0x21ull | 1ull << 10 | 2ull << 15 | 3ull << 18 | 14ull << 22 | 2ull << 30 | 5ull << 32)

#define ADB_HEAD(n, size) \
	"model_name: \"Жаба\"\n" \
	"actions_count: " #n "\n" \
	"record_size: " #size "\n" \
	"minimal_height: 0.5\n" \
	"average_height: 1\n" \
	"maximal_height: 1.25\n" \
	"actions:\n"

#define ADB_COMMON(name, number) \
	"  - action_name: \"" name "\"\n" \
	"    action_number: " #number "\n" \
	"    packed: 0x00000005838D0421\n" \
	"    weapons: [SWORD, BOW]\n" \
	"    allowed_states: ATTACK\n" \
	"    action_type: CAST\n" \
	"    action_modifier: 14\n" \
	"    animation_stage: CYCLE\n" \
	"    action_forms: [HIDES, HIT]\n" \
	"    action_probability: 100\n" \
	"    animation_length: 59\n"

Test(adb, record_of_88_bytes)
{
	GByteArray *b = adb_header(1);

	adb_common(b, "uattack01", 3, PACKED);
	put_f32(b, 1.5f);
	for (uint32_t i = 1; i <= 12; i++)
		put_u32(b, i);
	cr_assert_eq(b->len, 44 + 88);
	expect_text(adb_to_text, b,
		    ADB_HEAD(1, 88)
		    ADB_COMMON("uattack01", 3)
		    "    movement_speed: 1.5\n"
		    "    show_hide_frame_1: 1\n"
		    "    show_hide_frame_2: 2\n"
		    "    sound_frame_1: 3\n"
		    "    sound_frame_2: 4\n"
		    "    sound_frame_3: 5\n"
		    "    sound_frame_4: 6\n"
		    "    hit_frame: 7\n"
		    "    special_sound_frame: 8\n"
		    "    sound_id_1: 9\n"
		    "    sound_id_2: 10\n"
		    "    sound_id_3: 11\n"
		    "    sound_id_4: 12\n");
	g_byte_array_unref(b);
}

Test(adb, none_and_all)
{
	GByteArray *b = adb_header(1);
	GString *out;

	/* all weapons, state ALL, type ALL, END, all forms: aspadm has no ALL for forms */
	adb_common(b, "x", 0, 0x7Full | 7ull << 15 | 15ull << 18 | 3ull << 30 | 0x3Full << 32);
	g_byte_array_set_size(b, 44 + 88);
	out = view_ok(adb_to_text, b);
	cr_assert(strstr(out->str, "    weapons: ALL\n    allowed_states: ALL\n    action_type: ALL\n"
				   "    action_modifier: 0\n    animation_stage: END\n"
				   "    action_forms: [HIDES, STEPS, HIT, SFXES, LOWSHAPE, HIGHSHAPE]\n"),
		  "%s", out->str);
	g_string_free(out, TRUE);
	memset(b->data + 44 + 20, 0, 8);
	out = view_ok(adb_to_text, b);
	cr_assert(strstr(out->str, "    weapons: NONE\n    allowed_states: NEUTRAL\n    action_type: UNK0\n"
				   "    action_modifier: 0\n    animation_stage: UNIQUE\n"
				   "    action_forms: NONE\n"),
		  "%s", out->str);
	g_string_free(out, TRUE);
	g_byte_array_unref(b);
}

Test(adb, irregular_records_of_84_and_36_bytes)
{
	GByteArray *b = adb_header(2);

	for (uint32_t r = 0; r < 2; r++) {
		adb_common(b, r ? "b" : "a", r, PACKED);
		put_f32(b, -2);
		for (uint32_t i = 1; i <= 11; i++)
			put_u32(b, i);
	}
	expect_text(adb_to_text, b,
		    ADB_HEAD(2, 84)
		    ADB_COMMON("a", 0)
		    "    movement_speed: -2\n"
		    "    unnamed_words: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n"
		    ADB_COMMON("b", 1)
		    "    movement_speed: -2\n"
		    "    unnamed_words: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n");
	g_byte_array_unref(b);
	/* inmm1.adb: 80 bytes, one record of 36 */
	b = adb_header(1);
	adb_common(b, "cidle", 7, PACKED);
	cr_assert_eq(b->len, 80);
	expect_text(adb_to_text, b, ADB_HEAD(1, 36) ADB_COMMON("cidle", 7));
	g_byte_array_unref(b);
}

Test(adb, unknown_record_size_as_hex)
{
	GByteArray *b = adb_header(2);

	for (int i = 0; i < 2 * 20; i++)
		g_byte_array_append(b, (const guint8 *)&(guint8){ (guint8)i }, 1);
	expect_text(adb_to_text, b,
		    ADB_HEAD(2, 20)
		    "  - record: 0\n"
		    "    hex:\n"
		    "      00000000: 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f\n"
		    "      00000010: 10 11 12 13\n"
		    "  - record: 1\n"
		    "    hex:\n"
		    "      00000000: 14 15 16 17 18 19 1a 1b 1c 1d 1e 1f 20 21 22 23\n"
		    "      00000010: 24 25 26 27\n");
	g_byte_array_unref(b);
}

Test(adb, no_records)
{
	GByteArray *b = adb_header(0);

	expect_text(adb_to_text, b,
		    "model_name: \"Жаба\"\nactions_count: 0\nrecord_size: 0\nminimal_height: 0.5\n"
		    "average_height: 1\nmaximal_height: 1.25\nactions: []\n");
	g_byte_array_unref(b);
}

Test(adb, malformed)
{
	GByteArray *b = adb_header(3);

	g_byte_array_set_size(b, 44 + 3 * 88);
	for (size_t n = 0; n < 44; n++)
		expect_refused(adb_to_text, b->data, n, n < 4 ? 0 : n, n < 4 ? "not an ADB" : "truncated");
	expect_refused(adb_to_text, b->data, b->len - 1, 4, "no 3 equal records");
	expect_refused(adb_to_text, b->data, 44 + 2, 4, "no 3 equal records");
	expect_refused(adb_to_text, b->data, 44, 4, "no 3 equal records");
	h_put_u32(b, 4, 0xFFFFFFFF);
	expect_refused(adb_to_text, b->data, b->len, 4, "equal records");
	h_put_u32(b, 4, 0);
	expect_refused(adb_to_text, b->data, b->len, 4, "no records, yet");
	b->data[3] = 1;
	expect_refused(adb_to_text, b->data, b->len, 0, "not an ADB");
	g_byte_array_unref(b);
}

Test(adb, sample_unhufe)
{
	gchar *buf;
	gsize len;
	GString *out = g_string_new(NULL);
	struct format_error err = { 0 };
	unsigned records = 0;

	if (!g_file_get_contents(SAMPLES_DIR "/unhufe.adb", &buf, &len, NULL))
		cr_skip_test("samples absent: " SAMPLES_DIR "/unhufe.adb");
	cr_assert_eq(adb_to_text((const unsigned char *)buf, len, out, &err), 0, "%s", err.msg);
	for (const char *p = out->str; (p = strstr(p, "\n  - action_name: ")); p++)
		records++;
	cr_assert_eq(records, h_get_u32(&(GByteArray){ (guint8 *)buf, (guint)len }, 4));
	cr_assert_eq(records, 170);
	cr_assert(g_str_has_prefix(out->str, "model_name: \"Female\"\nactions_count: 170\nrecord_size: 88\n"));
	cr_assert(strstr(out->str, "  - action_name: \"uattack01\"\n    action_number: 0\n"
				   "    packed: 0x0000003D03890020\n    weapons: [BOW]\n"
				   "    allowed_states: ATTACK\n    action_type: ATTACK\n"
				   "    action_modifier: 14\n    animation_stage: UNIQUE\n"
				   "    action_forms: [HIDES, HIT, SFXES, LOWSHAPE, HIGHSHAPE]\n"
				   "    action_probability: 100\n    animation_length: 59\n"));
	g_string_free(out, TRUE);
	g_free(buf);
}

/* ---- MOB: building nodes ----------------------------------------------------- */

enum {
	OBJECTDBFILE = 0xA000, SC_OBJECTDBFILE = 0xC000, SS_TEXT = 0xACCEECCB,
	SS_TEXT_OLD = 0xACCEECCA, AIGRAPH = 0x31415926, MAIN_RANGE = 0xFF01, RANGE = 0xFF02,
	MIN_ID = 0xFF05, MAX_ID = 0xFF06, DIPLOMATION = 0xDDDDDDD1, DIPLOMATION_FOF = 0xDDDDDDD2,
	DIPLOMATION_PL_NAMES = 0xDDDDDDD3, WORLD_SET = 0xABD0, WS_WIND_DIR = 0xABD1, WS_TIME = 0xABD3,
	VSS_SECTION = 0x1E00, VSS_TRIGER = 0x1E01, VSS_RECT = 0x1E05, VSS_TITLE = 0x1E08,
	VSS_ISSTART = 0x1E0A, DIRICTORY = 0xE000, OBJECTSECTION = 0xB000, OBJECT = 0xB001, NID = 0xB002,
	OBJNAME = 0xB004, OBJROTATION = 0xB00A, OBJBODYPARTS = 0xB00D, UNIT = 0xBBBB0000,
	UNIT_STATS = 0xBBBB0004, LEVER = 0xBBAC0000, LEVER_SCIENCE_STATS_NEW = 0xBBAC0006,
};

/* Opens a node whose length node_close fills in. */
static size_t node_open(GByteArray *b, uint32_t type)
{
	size_t at = b->len;

	put_u32(b, type);
	put_u32(b, 0);
	return at;
}

static void node_close(GByteArray *b, size_t at)
{
	h_put_u32(b, at + 4, (uint32_t)(b->len - at));
}

static void node_bytes(GByteArray *b, uint32_t type, const void *p, size_t n)
{
	size_t at = node_open(b, type);

	g_byte_array_append(b, p, (guint)n);
	node_close(b, at);
}

static void node_u32(GByteArray *b, uint32_t type, uint32_t v)
{
	size_t at = node_open(b, type);

	put_u32(b, v);
	node_close(b, at);
}

static void node_f32s(GByteArray *b, uint32_t type, const float *f, size_t n)
{
	size_t at = node_open(b, type);

	for (size_t i = 0; i < n; i++)
		put_f32(b, f[i]);
	node_close(b, at);
}

static void node_str(GByteArray *b, uint32_t type, const char *s)
{
	node_bytes(b, type, s, strlen(s));
}

/* u32 count, then per string a sub-node typed as its parent. */
static void node_strings(GByteArray *b, uint32_t type, const char *const *s, uint32_t n)
{
	size_t at = node_open(b, type);

	put_u32(b, n);
	for (uint32_t i = 0; i < n; i++)
		node_str(b, type, s[i]);
	node_close(b, at);
}

/* The cipher of FORMATS 6.3, written here independently of src/mob.c: it
 * is its own inverse. */
static void script_crypt(unsigned char *p, size_t n, uint32_t key)
{
	for (size_t i = 0; i < n; i++) {
		key = key * 214013u + 2531011u;
		p[i] ^= (unsigned char)((key >> 16) & 0xFF);
	}
}

static void node_script(GByteArray *b, uint32_t key, const char *plain, size_t n)
{
	size_t at = node_open(b, SS_TEXT);
	size_t text = b->len + 4;

	put_u32(b, key);
	g_byte_array_append(b, (const guint8 *)plain, (guint)n);
	script_crypt(b->data + text, n, key);
	node_close(b, at);
}

/* ---- MOB: the tree ------------------------------------------------------------ */

/* "Игрок", "Кувшин" in cp1251 */
#define PLAYER "\xc8\xe3\xf0\xee\xea"
#define JUG "\xca\xf3\xe2\xf8\xe8\xed"

static GByteArray *mob_sample(size_t *root_end)
{
	static const char *const names[] = { PLAYER, "b\"q" };
	static const float wind[] = { 0, 1, 0.5f }, time[] = { 0.25f }, rot[] = { 1, 0, 0, 0 };
	static const int32_t rect[] = { 33, 77, -152, 242 }, lever[] = { 1, -2, 3 };
	GByteArray *b = g_byte_array_new();
	size_t root = node_open(b, OBJECTDBFILE), at, at2;

	node_bytes(b, SC_OBJECTDBFILE, NULL, 0);
	at = node_open(b, MAIN_RANGE);
	at2 = node_open(b, RANGE);
	node_u32(b, MIN_ID, 1);
	node_u32(b, MAX_ID, 200);
	node_close(b, at2);
	node_close(b, at);
	at = node_open(b, DIPLOMATION);
	node_strings(b, DIPLOMATION_PL_NAMES, names, 2);
	node_close(b, at);
	at = node_open(b, WORLD_SET);
	node_f32s(b, WS_WIND_DIR, wind, 3);
	node_f32s(b, WS_TIME, time, 1);
	node_close(b, at);
	at = node_open(b, VSS_SECTION);
	at2 = node_open(b, VSS_TRIGER);
	node_bytes(b, VSS_RECT, rect, sizeof rect); /* little-endian host */
	node_bytes(b, VSS_ISSTART, "\x01", 1);
	node_str(b, VSS_TITLE, "t");
	node_close(b, at2);
	node_close(b, at);
	at = node_open(b, OBJECTSECTION);
	at2 = node_open(b, OBJECT);
	node_u32(b, NID, 5);
	node_str(b, OBJNAME, JUG);
	node_f32s(b, OBJROTATION, rot, 4);
	node_strings(b, OBJBODYPARTS, NULL, 0);
	node_close(b, at2);
	at2 = node_open(b, LEVER);
	node_bytes(b, LEVER_SCIENCE_STATS_NEW, lever, sizeof lever);
	node_close(b, at2);
	node_close(b, at);
	node_bytes(b, DIRICTORY, NULL, 0);
	node_close(b, root);
	*root_end = b->len;
	node_bytes(b, AIGRAPH, "\x01\x02\x03", 3);
	return b;
}

Test(mob, tree_of_every_kind)
{
	size_t root_end;
	GByteArray *b = mob_sample(&root_end);

	expect_text(mob_to_text, b,
		    "OBJECTDBFILE:\n"
		    "  SC_OBJECTDBFILE: null\n"
		    "  MAIN_RANGE:\n"
		    "    RANGE:\n"
		    "      MIN_ID: 1\n"
		    "      MAX_ID: 200\n"
		    "  DIPLOMATION:\n"
		    "    DIPLOMATION_PL_NAMES:\n"
		    "      - \"Игрок\"\n"
		    "      - \"b\\\"q\"\n"
		    "  WORLD_SET:\n"
		    "    WS_WIND_DIR: [0, 1, 0.5]\n"
		    "    WS_TIME: 0.25\n"
		    "  VSS_SECTION:\n"
		    "    VSS_TRIGER:\n"
		    "      VSS_RECT: [33, 77, -152, 242]\n"
		    "      VSS_ISSTART: 1\n"
		    "      VSS_TITLE: \"t\"\n"
		    "  OBJECTSECTION:\n"
		    "    OBJECT:\n"
		    "      NID: 5\n"
		    "      OBJNAME: \"Кувшин\"\n"
		    "      OBJROTATION: [1, 0, 0, 0]\n"
		    "      OBJBODYPARTS: []\n"
		    "    LEVER:\n"
		    "      LEVER_SCIENCE_STATS_NEW: [1, -2, 3]\n"
		    "  DIRICTORY: {}\n"
		    "AIGRAPH:  # 3 bytes, hex\n"
		    "  00000000: 01 02 03\n");
	cr_assert_eq(mob_has_script(b->data, b->len), 0);
	g_byte_array_unref(b);
}

Test(mob, diplomacy_and_unit_stats)
{
	GByteArray *b = g_byte_array_new();
	size_t root = node_open(b, OBJECTDBFILE), at, unit;
	GString *out, *want = g_string_new("  DIPLOMATION_FOF:\n");

	at = node_open(b, DIPLOMATION_FOF);
	for (int i = 0; i < 1024; i++)
		put_u32(b, (uint32_t)(i - 512));
	node_close(b, at);
	unit = node_open(b, UNIT);
	at = node_open(b, UNIT_STATS);
	put_u32(b, 100);
	put_f32(b, 1.5f);
	put_u32(b, 0);
	put_u32(b, 0xFFFFFFFF);
	put_f32(b, -3e6f);
	for (int i = 5; i < 43; i++)
		put_u32(b, 7);
	node_close(b, at);
	node_close(b, unit);
	node_close(b, root);
	for (int r = 0; r < 32; r++) {
		g_string_append(want, "    - [");
		for (int c = 0; c < 32; c++)
			g_string_append_printf(want, "%s%d", c ? ", " : "", r * 32 + c - 512);
		g_string_append(want, "]\n");
	}
	g_string_append(want, "  UNIT:\n    UNIT_STATS:\n      - u32 100\n      - f32 1.5\n      - u32 0\n"
			      "      - u32 4294967295\n      - f32 -3000000\n      - u32 7\n");
	out = view_ok(mob_to_text, b);
	cr_assert(strstr(out->str, want->str), "%s", out->str);
	g_string_free(want, TRUE);
	g_string_free(out, TRUE);
	g_byte_array_unref(b);
}

Test(mob, odd_payloads_as_hex)
{
	static const char *const one[] = { "a" };
	GByteArray *b = g_byte_array_new();
	size_t root = node_open(b, OBJECTDBFILE);

	node_bytes(b, MIN_ID, "\x01\x02\x03\x04\x05", 5);    /* a dword of 5 bytes */
	node_bytes(b, 0x12345678, "\xab\xcd", 2);           /* no known type */
	node_strings(b, OBJBODYPARTS, one, 1);
	h_put_u32(b, b->len - 13, 2);                       /* says 2 strings, holds 1 */
	node_bytes(b, SS_TEXT, "\x01\x02", 2);              /* no room for the key */
	node_close(b, root);
	expect_text(mob_to_text, b,
		    "OBJECTDBFILE:\n"
		    "  MIN_ID:  # expected 12 bytes with the header, 5 bytes, hex\n"
		    "    00000000: 01 02 03 04 05\n"
		    "  0x12345678:  # unknown type, 2 bytes, hex\n"
		    "    00000000: ab cd\n"
		    "  OBJBODYPARTS:  # not a string array, 13 bytes, hex\n"
		    "    00000000: 02 00 00 00 0d b0 00 00 09 00 00 00 61\n"
		    "  SS_TEXT:  # no key, 2 bytes, hex\n"
		    "    00000000: 01 02\n");
	cr_assert_eq(mob_has_script(b->data, b->len), 0);
	g_byte_array_unref(b);
}

Test(mob, malformed)
{
	size_t root_end;
	GByteArray *b = mob_sample(&root_end);
	GByteArray *deep = g_byte_array_new();
	size_t at[70];

	/* every prefix but the one that ends between the two top-level nodes */
	for (size_t n = 0; n < b->len; n++) {
		struct format_error err = { 0 };
		GString *out;

		if (n == root_end)
			continue;
		out = g_string_new(NULL);
		cr_assert_eq(run(mob_to_text, b->data, n, out, &err), -1, "a %zu-byte prefix was accepted", n);
		cr_assert_eq(err.code, EINVAL);
		cr_assert_eq(out->len, 0, "output left by a refused input");
		g_string_free(out, TRUE);
	}
	expect_refused(mob_to_text, b->data, root_end + 7, root_end, "truncated node header");
	h_put_u32(b, 4, 7);
	expect_refused(mob_to_text, b->data, b->len, 4, "shorter than its header");
	h_put_u32(b, 4, (uint32_t)root_end + 1000);
	expect_refused(mob_to_text, b->data, b->len, 4, "passes its parent's end");
	h_put_u32(b, 4, (uint32_t)root_end);
	h_put_u32(b, 20, 0xFFFFFF00); /* MAIN_RANGE's length */
	expect_refused(mob_to_text, b->data, b->len, 20, "passes its parent's end");
	h_put_u32(b, 0, AIGRAPH);
	expect_refused(mob_to_text, b->data, b->len, 0, "not a MOB");
	/* 70 nested records */
	at[0] = node_open(deep, OBJECTDBFILE);
	for (int i = 1; i < 70; i++)
		at[i] = node_open(deep, MAIN_RANGE);
	for (int i = 69; i >= 0; i--)
		node_close(deep, at[i]);
	expect_refused(mob_to_text, deep->data, deep->len, 65 * 8, "deeper than");
	cr_assert_eq(mob_has_script(deep->data, deep->len), 0);
	g_byte_array_unref(deep);
	g_byte_array_unref(b);
}

/* ---- MOB: the script (FORMATS 6.3) -------------------------------------------- */

static char *script_of(const GByteArray *b)
{
	struct format_error err = { 0 };
	GString *out = g_string_new(NULL);

	cr_assert_eq(run(mob_script_to_text, b->data, b->len, out, &err), 0, "%s", err.msg);
	return g_string_free(out, FALSE);
}

Test(mob_script, known_answer)
{
	/* "GlobalVars (\r\n" under key 0x7DA7 (the sample's): the keys are
	 * 0x9A7A81CE, 0x409BD159, 0x15F9CEB8, ... and the pad is their bits
	 * 16-23, 7A 9B F9 4A 0A E5 71 2A D7 75 1B 55 15 BF */
	static const unsigned char cipher[] = { 0x3D, 0xF7, 0x96, 0x28, 0x6B, 0x89, 0x27,
						0x4B, 0xA5, 0x06, 0x3B, 0x7D, 0x18, 0xB5 };
	GByteArray *b = g_byte_array_new();
	size_t root = node_open(b, OBJECTDBFILE), at;
	GString *out;
	char *s;

	at = node_open(b, SS_TEXT);
	put_u32(b, 0x7DA7);
	g_byte_array_append(b, cipher, sizeof cipher);
	node_close(b, at);
	node_close(b, root);
	cr_assert_eq(mob_has_script(b->data, b->len), 1);
	s = script_of(b);
	cr_assert_str_eq(s, "GlobalVars (\n");
	g_free(s);
	out = view_ok(mob_to_text, b);
	cr_assert_str_eq(out->str,
			 "OBJECTDBFILE:\n  SS_TEXT: (see the .mob.script.txt view)  # encrypted, key 0x00007DA7, 14 bytes\n");
	g_string_free(out, TRUE);
	g_byte_array_unref(b);
}

Test(mob_script, round_trip_cp1251_crlf_padding)
{
	/* "Привет\r\nмир\r\n" and two NULs of padding; a lone CR stays */
	static const char plain[] = "\xcf\xf0\xe8\xe2\xe5\xf2\r\n\xec\xe8\xf0\r\nx\ry\r\n\0";
	GByteArray *b = g_byte_array_new();
	size_t root = node_open(b, OBJECTDBFILE), at;
	char *s;

	at = node_open(b, MAIN_RANGE);
	node_script(b, 0xDEADBEEF, plain, sizeof plain);
	node_close(b, at);
	node_script(b, 1, "second", 6);
	node_close(b, root);
	s = script_of(b);
	cr_assert_str_eq(s, "Привет\nмир\nx\ry\n");
	g_free(s);
	{
		GString *out = view_ok(mob_to_text, b);

		cr_assert(strstr(out->str, "    SS_TEXT: (see the .mob.script.txt view)  # encrypted, key 0xDEADBEEF, 20 bytes\n"
					   "  SS_TEXT: \"second\"\n"),
			  "%s", out->str);
		g_string_free(out, TRUE);
	}
	g_byte_array_unref(b);
}

Test(mob_script, every_byte_is_a_character_of_its_own)
{
	/* 0x98 (undefined in cp1251) and an inner NUL: not "%98" and "%00",
	 * which the text "100%98" would show as well */
	static const char plain[] = "a\0b 100%98 \x98" "c\0";
	GByteArray *b = g_byte_array_new();
	size_t root = node_open(b, OBJECTDBFILE);
	char *s;

	node_script(b, 0x7DA7, plain, sizeof plain);
	node_close(b, root);
	s = script_of(b);
	cr_assert_str_eq(s, "a\xef\xbf\xbd" "b 100%98 \xc2\x98" "c");
	g_free(s);
	g_byte_array_unref(b);
}

Test(mob_script, plain_old_script)
{
	GByteArray *b = g_byte_array_new();
	size_t root = node_open(b, OBJECTDBFILE);
	GString *out;
	char *s;

	node_str(b, SS_TEXT_OLD, "a\r\nb");
	node_close(b, root);
	cr_assert_eq(mob_has_script(b->data, b->len), 1);
	s = script_of(b);
	cr_assert_str_eq(s, "a\nb");
	g_free(s);
	out = view_ok(mob_to_text, b);
	cr_assert_str_eq(out->str, "OBJECTDBFILE:\n  SS_TEXT_OLD: (see the .mob.script.txt view)  # plain, 4 bytes\n");
	g_string_free(out, TRUE);
	g_byte_array_unref(b);
}

Test(mob_script, none)
{
	size_t root_end;
	GByteArray *b = mob_sample(&root_end);
	struct format_error err = { 0 };
	GString *out = g_string_new(NULL);

	cr_assert_eq(mob_has_script(b->data, b->len), 0);
	cr_assert_eq(mob_script_to_text(b->data, b->len, out, &err), -1);
	cr_assert_eq(err.code, ENOENT);
	cr_assert_eq(out->len, 0);
	cr_assert_eq(mob_script_to_text(b->data, 5, out, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	g_string_free(out, TRUE);
	g_byte_array_unref(b);
}
