/* Text views of the model files and the map archive parts (src/models.c,
 * src/mpr.c): known answers from inputs built here by hand, every
 * truncation and crafted count refused, and the samples. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "models.h"
#include "mpr.h"
#include "res.h"

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

static void expect_text(view_fn *fn, const GByteArray *b, const char *want)
{
	struct format_error err = { 0 };
	GString *out = g_string_new(NULL);

	cr_assert_eq(run(fn, b->data, b->len, out, &err), 0, "refused at %llu: %s",
		     (unsigned long long)err.offset, err.msg);
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

/* Every proper prefix of a valid input is refused. */
static void expect_prefixes_refused(view_fn *fn, const GByteArray *b)
{
	for (size_t n = 0; n < b->len; n++) {
		struct format_error err = { 0 };
		GString *out = g_string_new(NULL);

		cr_assert_eq(run(fn, b->data, n, out, &err), -1, "a %zu-byte prefix was accepted", n);
		cr_assert_eq(err.code, EINVAL);
		cr_assert_eq(out->len, 0);
		g_string_free(out, TRUE);
	}
}

static void put_f32(GByteArray *b, float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	h_put_u32(b, b->len, u);
}

static void put_u32(GByteArray *b, uint32_t v)
{
	h_put_u32(b, b->len, v);
}

static void put_u16(GByteArray *b, uint16_t v)
{
	h_put_u16(b, b->len, v);
}

/* ---- shared helpers ------------------------------------------------------ */

static char *float_text(float f)
{
	GString *s = g_string_new(NULL);

	view_float(s, f);
	return g_string_free(s, FALSE);
}

Test(lnk_helpers, floats_shortest_round_trip)
{
	static const struct { float f; const char *want; } cases[] = {
		{ 0.0f, "0" }, { -0.0f, "-0" }, { 1.0f, "1" }, { 0.1f, "0.1" }, { -0.25f, "-0.25" },
		{ 1e10f, "1e+10" }, { 16777217.0f, "16777216" }, { 0.45882356f, "0.45882356" },
		{ 1.17549435e-38f, "1.1754944e-38" }, { 3.40282347e38f, "3.4028235e+38" },
		/* what %.9g shows without an exponent has none here either */
		{ 40.0f, "40" }, { -3e6f, "-3000000" }, { 123456789.0f, "123456792" },
		{ 1e9f, "1e+09" }, { 0.0001f, "0.0001" }, { 1e-5f, "1e-05" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		char *s = float_text(cases[i].f);

		cr_assert_str_eq(s, cases[i].want);
		g_free(s);
	}
}

Test(lnk_helpers, special_floats)
{
	GByteArray *b = g_byte_array_new();
	GString *s = g_string_new(NULL);

	put_u32(b, 0x7FC00001);
	put_u32(b, 0x7F800000);
	put_u32(b, 0xFF800000);
	view_floats(s, b->data, 3);
	cr_assert_str_eq(s->str, "[nan(0x7fc00001), inf, -inf]");
	g_string_free(s, TRUE);
	g_byte_array_unref(b);
}

Test(lnk_helpers, quoted_cp1251)
{
	GString *s = g_string_new(NULL);

	/* "Ёж" in cp1251, then every escape */
	view_quoted(s, H_STR("\xa8\xe6 \"q\" \\ \n\r\t\x01\x98\x7f"));
	cr_assert_str_eq(s->str, "\"Ёж \\\"q\\\" \\\\ \\n\\r\\t\\x01\\x98\\x7F\"");
	g_string_truncate(s, 0);
	view_label(s, H_STR("bd.0_x-1"));
	view_label(s, H_STR("a b"));
	view_label(s, "", 0);
	cr_assert_str_eq(s->str, "bd.0_x-1\"a b\"\"\"");
	g_string_free(s, TRUE);
}

/* ---- LNK ------------------------------------------------------------------ */

/* One link; a NULL parent is the root (length 0).  Lengths count the NUL
 * as in the real files. */
static void lnk_add(GByteArray *b, const char *child, const char *parent)
{
	put_u32(b, (uint32_t)strlen(child) + 1);
	g_byte_array_append(b, (const guint8 *)child, (guint)strlen(child) + 1);
	if (!parent) {
		put_u32(b, 0);
		return;
	}
	put_u32(b, (uint32_t)strlen(parent) + 1);
	g_byte_array_append(b, (const guint8 *)parent, (guint)strlen(parent) + 1);
}

static GByteArray *lnk_sample(void)
{
	GByteArray *b = g_byte_array_new();

	put_u32(b, 5);
	lnk_add(b, "hp", NULL);
	lnk_add(b, "bd", "hp");
	lnk_add(b, "hd", "bd");
	lnk_add(b, "la", "bd");
	lnk_add(b, "rl", "hp");
	return b;
}

Test(lnk, nested_tree)
{
	GByteArray *b = lnk_sample();

	expect_text(lnk_to_text, b,
		    "links: 5\n"
		    "tree:\n"
		    "  - hp:\n"
		    "    - bd:\n"
		    "      - hd\n"
		    "      - la\n"
		    "    - rl\n");
	g_byte_array_unref(b);
}

Test(lnk, names_without_nul_and_odd_names)
{
	GByteArray *b = g_byte_array_new();

	put_u32(b, 2);
	put_u32(b, 4);
	g_byte_array_append(b, (const guint8 *)"mesh", 4); /* CE: the NUL may be missing */
	put_u32(b, 0);
	lnk_add(b, "\xf0\xf3\xea\xe0 1", "mesh");         /* "рука 1" */
	expect_text(lnk_to_text, b, "links: 2\ntree:\n  - mesh:\n    - \"рука 1\"\n");
	g_byte_array_unref(b);
}

Test(lnk, children_listed_before_their_parent)
{
	GByteArray *b = g_byte_array_new();

	put_u32(b, 3);
	lnk_add(b, "hd", "bd");
	lnk_add(b, "hp", NULL);
	lnk_add(b, "bd", "hp");
	expect_text(lnk_to_text, b, "links: 3\ntree:\n  - hp:\n    - bd:\n      - hd\n");
	g_byte_array_unref(b);
}

Test(lnk, empty)
{
	GByteArray *b = g_byte_array_new();

	put_u32(b, 0);
	expect_text(lnk_to_text, b, "links: 0\ntree: []\n");
	g_byte_array_unref(b);
}

Test(lnk, malformed)
{
	GByteArray *b = lnk_sample();
	GByteArray *c = g_byte_array_new();
	size_t len = b->len;

	expect_prefixes_refused(lnk_to_text, b);
	g_byte_array_append(b, (const guint8 *)"x", 1);
	expect_refused(lnk_to_text, b->data, b->len, len, "after the last link");
	/* a count no input of this size can hold: refused before any allocation */
	h_put_u32(b, 0, 0xFFFFFFFF);
	expect_refused(lnk_to_text, b->data, len, 0, "cannot fit");
	/* a name length past the end */
	put_u32(c, 1);
	put_u32(c, 0x7FFFFFFF);
	put_u32(c, 0);
	expect_refused(lnk_to_text, c->data, c->len, 4, "runs past the end");
	g_byte_array_set_size(c, 0);
	put_u32(c, 2);
	lnk_add(c, "hp", NULL);
	lnk_add(c, "bd", "nobody");
	expect_refused(lnk_to_text, c->data, c->len, 15, "no bone of this file");
	g_byte_array_set_size(c, 0);
	put_u32(c, 3);
	lnk_add(c, "hp", NULL);
	lnk_add(c, "a", "b");
	lnk_add(c, "b", "a");
	expect_refused(lnk_to_text, c->data, c->len, 4, "a cycle");
	g_byte_array_unref(b);
	g_byte_array_unref(c);
}

Test(lnk, depth_is_limited)
{
	GByteArray *b = g_byte_array_new();
	char name[16], parent[16];

	put_u32(b, 300);
	lnk_add(b, "b0", NULL);
	for (int i = 1; i < 300; i++) {
		snprintf(name, sizeof name, "b%d", i);
		snprintf(parent, sizeof parent, "b%d", i - 1);
		lnk_add(b, name, parent);
	}
	{
		struct format_error err = { 0 };
		GString *out = g_string_new(NULL);

		cr_assert_eq(run(lnk_to_text, b->data, b->len, out, &err), -1);
		cr_assert(strstr(err.msg, "deeper than"), "%s", err.msg);
		cr_assert_eq(out->len, 0);
		g_string_free(out, TRUE);
	}
	g_byte_array_unref(b);
}

/* ---- BON ------------------------------------------------------------------ */

Test(bon, vectors)
{
	GByteArray *b = g_byte_array_new();

	put_f32(b, 1), put_f32(b, 2), put_f32(b, 3);
	put_f32(b, 0.1f), put_f32(b, -0.25f), put_f32(b, 1e10f);
	expect_text(bon_to_text, b, "variants: 2\npositions:\n  - [1, 2, 3]\n  - [0.1, -0.25, 1e+10]\n");
	g_byte_array_set_size(b, 0);
	expect_text(bon_to_text, b, "variants: 0\npositions: []\n");
	g_byte_array_unref(b);
}

Test(bon, malformed)
{
	unsigned char z[97] = { 0 };

	expect_refused(bon_to_text, z, 97, 96, "12-byte vectors");
	expect_refused(bon_to_text, z, 11, 0, "12-byte vectors");
}

/* ---- ANM ------------------------------------------------------------------ */

static GByteArray *anm_sample(void)
{
	GByteArray *b = g_byte_array_new();

	put_u32(b, 1);
	put_f32(b, 1), put_f32(b, 0), put_f32(b, 0), put_f32(b, 0);
	put_u32(b, 2);
	put_f32(b, 0), put_f32(b, 0), put_f32(b, 0);
	put_f32(b, 0.5f), put_f32(b, 0), put_f32(b, 1);
	put_u32(b, 2);
	put_u32(b, 1);
	put_f32(b, 1), put_f32(b, 1), put_f32(b, 1);
	put_f32(b, 2), put_f32(b, 2), put_f32(b, -2);
	return b;
}

Test(anm, track)
{
	GByteArray *b = anm_sample();

	expect_text(anm_to_text, b,
		    "rotation_count: 1\n"
		    "rotations:\n"
		    "  - [1, 0, 0, 0]\n"
		    "translation_count: 2\n"
		    "translations:\n"
		    "  - [0, 0, 0]\n"
		    "  - [0.5, 0, 1]\n"
		    "morph_frames: 2\n"
		    "morph_vertices: 1\n"
		    "morph:\n"
		    "  - frame: 0\n"
		    "    vertices:\n"
		    "      - [1, 1, 1]\n"
		    "  - frame: 1\n"
		    "    vertices:\n"
		    "      - [2, 2, -2]\n");
	g_byte_array_unref(b);
}

Test(anm, empty_track)
{
	GByteArray *b = g_byte_array_new();

	g_byte_array_set_size(b, 16);
	memset(b->data, 0, 16);
	expect_text(anm_to_text, b,
		    "rotation_count: 0\nrotations: []\ntranslation_count: 0\ntranslations: []\n"
		    "morph_frames: 0\nmorph_vertices: 0\nmorph: []\n");
	/* frames of no vertices cost no bytes: they are counted, not listed */
	h_put_u32(b, 8, 0xFFFFFFFF);
	expect_text(anm_to_text, b,
		    "rotation_count: 0\nrotations: []\ntranslation_count: 0\ntranslations: []\n"
		    "morph_frames: 4294967295\nmorph_vertices: 0\nmorph: []\n");
	g_byte_array_unref(b);
}

Test(anm, malformed)
{
	GByteArray *b = anm_sample();
	size_t len = b->len;

	expect_prefixes_refused(anm_to_text, b);
	g_byte_array_append(b, (const guint8 *)"x", 1);
	expect_refused(anm_to_text, b->data, b->len, len, "after the morph frames");
	g_byte_array_set_size(b, len);
	h_put_u32(b, 0, 0x10000000);
	expect_refused(anm_to_text, b->data, b->len, 0, "rotations");
	h_put_u32(b, 0, 1);
	h_put_u32(b, 20, 0xFFFFFFFF);
	expect_refused(anm_to_text, b->data, b->len, 20, "translations");
	h_put_u32(b, 20, 2);
	/* frames x vertices x 12 overflows 64 bits */
	h_put_u32(b, 48, 0xFFFFFFFF);
	h_put_u32(b, 52, 0xFFFFFFFF);
	expect_refused(anm_to_text, b->data, b->len, 48, "morph frames");
	g_byte_array_unref(b);
}

/* ---- CAM ------------------------------------------------------------------ */

Test(cam, keys)
{
	GByteArray *b = g_byte_array_new();

	put_u32(b, 100), put_u32(b, 7);
	put_f32(b, 1), put_f32(b, 2), put_f32(b, 3.5f);
	put_f32(b, 1), put_f32(b, 0), put_f32(b, 0), put_f32(b, -0.5f);
	expect_text(cam_to_text, b,
		    "keys: 1\nframes:\n  - time: 100\n    unknown: 7\n    position: [1, 2, 3.5]\n"
		    "    rotation: [1, 0, 0, -0.5]\n");
	g_byte_array_set_size(b, 0);
	expect_text(cam_to_text, b, "keys: 0\nframes: []\n");
	g_byte_array_unref(b);
}

Test(cam, malformed)
{
	unsigned char z[73] = { 0 };

	expect_refused(cam_to_text, z, 35, 0, "36-byte");
	expect_refused(cam_to_text, z, 73, 72, "36-byte");
}

/* ---- FIG ------------------------------------------------------------------ */

/* A FIG with n variants and one block of everything; vertex values encode
 * axis, variant and point (100a + 10v + p), normal values component and
 * point (10c + p). */
static GByteArray *fig_sample(unsigned n)
{
	GByteArray *b = g_byte_array_new();
	char magic[4] = { 'F', 'I', 'G', (char)('0' + n) };

	g_byte_array_append(b, (const guint8 *)magic, 4);
	put_u32(b, 1), put_u32(b, 1), put_u32(b, 1), put_u32(b, 3);
	put_u32(b, 1), put_u32(b, 1), put_u32(b, 0), put_u32(b, 18), put_u32(b, 4);
	for (unsigned k = 0; k < 9 * n; k++) /* center, min, max */
		put_f32(b, (float)k);
	for (unsigned v = 0; v < n; v++)
		put_f32(b, 5.5f + (float)v);
	for (unsigned a = 0; a < 3; a++)
		for (unsigned v = 0; v < n; v++)
			for (unsigned p = 0; p < 4; p++)
				put_f32(b, (float)(100 * a + 10 * v + p));
	for (unsigned c = 0; c < 4; c++)
		for (unsigned p = 0; p < 4; p++)
			put_f32(b, (float)(10 * c + p));
	put_f32(b, 0.25f), put_f32(b, 0.75f);
	put_u16(b, 0), put_u16(b, 1), put_u16(b, 2);
	put_u16(b, 3), put_u16(b, 0), put_u16(b, 0);
	put_u16(b, 2), put_u16(b, 3);
	return b;
}

Test(fig, fig1_known_answer)
{
	GByteArray *b = fig_sample(1);

	cr_assert_eq(b->len, 40 + 40 + 48 + 64 + 8 + 6 + 6 + 4);
	expect_text(fig_to_text, b,
		    "magic: FIG1\n"
		    "variants: 1\n"
		    "vertex_blocks: 1\n"
		    "normal_blocks: 1\n"
		    "texcoord_count: 1\n"
		    "index_count: 3\n"
		    "vertex_component_count: 1\n"
		    "morph_component_count: 1\n"
		    "unknown: 0\n"
		    "group: 18\n"
		    "texture_number: 4\n"
		    "center:\n  - [0, 1, 2]\n"
		    "min:\n  - [3, 4, 5]\n"
		    "max:\n  - [6, 7, 8]\n"
		    "radius: [5.5]\n"
		    "vertices:\n"
		    "  - variant: 0\n"
		    "    points:\n"
		    "      - [0, 100, 200]\n"
		    "      - [1, 101, 201]\n"
		    "      - [2, 102, 202]\n"
		    "      - [3, 103, 203]\n"
		    "normals:\n"
		    "  - [0, 10, 20, 30]\n"
		    "  - [1, 11, 21, 31]\n"
		    "  - [2, 12, 22, 32]\n"
		    "  - [3, 13, 23, 33]\n"
		    "texcoords:\n  - [0.25, 0.75]\n"
		    "indices:\n  - [0, 1, 2]\n"
		    "vertex_components:\n  - [3, 0, 0]\n"
		    "morph_components:\n  - [2, 3]\n");
	g_byte_array_unref(b);
}

Test(fig, fig8_variants_interleave)
{
	GByteArray *b = fig_sample(8);
	struct format_error err = { 0 };
	GString *out = g_string_new(NULL);
	GString *want = g_string_new("vertices:\n");

	cr_assert_eq(b->len, 40 + 320 + 48 * 8 + 64 + 8 + 6 + 6 + 4);
	for (unsigned v = 0; v < 8; v++) {
		g_string_append_printf(want, "  - variant: %u\n    points:\n", v);
		for (unsigned p = 0; p < 4; p++)
			g_string_append_printf(want, "      - [%u, %u, %u]\n", 10 * v + p,
					       100 + 10 * v + p, 200 + 10 * v + p);
	}
	g_string_append(want, "normals:\n");
	cr_assert_eq(run(fig_to_text, b->data, b->len, out, &err), 0, "%s", err.msg);
	cr_assert(strstr(out->str, "magic: FIG8\nvariants: 8\n"));
	cr_assert(strstr(out->str, "center:\n  - [0, 1, 2]\n  - [3, 4, 5]\n"), "%s", out->str);
	cr_assert(strstr(out->str, "radius: [5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5]\n"));
	cr_assert(strstr(out->str, want->str), "%s", out->str);
	g_string_free(want, TRUE);
	g_string_free(out, TRUE);
	g_byte_array_unref(b);
}

Test(fig, empty_arrays)
{
	GByteArray *b = g_byte_array_new();

	g_byte_array_append(b, (const guint8 *)"FIG1", 4);
	for (int k = 0; k < 9; k++)
		put_u32(b, 0);
	for (int k = 0; k < 10; k++)
		put_f32(b, 0);
	expect_text(fig_to_text, b,
		    "magic: FIG1\nvariants: 1\nvertex_blocks: 0\nnormal_blocks: 0\ntexcoord_count: 0\n"
		    "index_count: 0\nvertex_component_count: 0\nmorph_component_count: 0\nunknown: 0\n"
		    "group: 0\ntexture_number: 0\ncenter:\n  - [0, 0, 0]\nmin:\n  - [0, 0, 0]\n"
		    "max:\n  - [0, 0, 0]\nradius: [0]\nvertices: []\nnormals: []\ntexcoords: []\n"
		    "indices: []\nvertex_components: []\nmorph_components: []\n");
	g_byte_array_unref(b);
}

Test(fig, size_must_match)
{
	GByteArray *b = fig_sample(8);
	size_t len = b->len;

	expect_prefixes_refused(fig_to_text, b);
	expect_refused(fig_to_text, b->data, len - 1, len - 1, "does not match");
	g_byte_array_append(b, (const guint8 *)"x", 1);
	expect_refused(fig_to_text, b->data, b->len, len, "does not match");
	g_byte_array_set_size(b, len);
	/* counts whose product overflows 32 bits are no match either */
	h_put_u32(b, 4, 0xFFFFFFFF);
	h_put_u32(b, 24, 0xFFFFFFFF);
	expect_refused(fig_to_text, b->data, b->len, len, "does not match");
	memcpy(b->data, "FIG0", 4);
	expect_refused(fig_to_text, b->data, b->len, 0, "not a FIG");
	memcpy(b->data, "FIGX", 4);
	expect_refused(fig_to_text, b->data, b->len, 0, "not a FIG");
	g_byte_array_unref(b);
}

/* ---- MP -------------------------------------------------------------------- */

static void mp_material(GByteArray *b, uint32_t type, float r, float g, float bl, float a, float wave)
{
	put_u32(b, type);
	put_f32(b, r), put_f32(b, g), put_f32(b, bl), put_f32(b, a);
	put_f32(b, 0), put_f32(b, wave), put_f32(b, 0);
	put_u32(b, 0), put_u32(b, 0), put_u32(b, 0);
}

static GByteArray *mp_sample(void)
{
	GByteArray *b = g_byte_array_new();

	put_u32(b, 0xCE4AF672);
	put_f32(b, 2.5f);
	put_u32(b, 1), put_u32(b, 2), put_u32(b, 1), put_u32(b, 512), put_u32(b, 3), put_u32(b, 64);
	put_u16(b, 2);
	put_u32(b, 1);
	mp_material(b, 1, 0.5f, 0.25f, 1, 1, 1);
	mp_material(b, 9, 0, 0, 0, 0.5f, 0.5f);
	put_u32(b, 0), put_u32(b, 6), put_u32(b, 99);
	put_u16(b, 2), put_u16(b, 8);
	return b;
}

Test(mp, header_materials_tiles)
{
	GByteArray *b = mp_sample();

	cr_assert_eq(b->len, 38 + 2 * 44 + 3 * 4 + 4);
	expect_text(mp_to_text, b,
		    "magic: 0xCE4AF672\n"
		    "max_altitude: 2.5\n"
		    "sectors_x: 1\n"
		    "sectors_y: 2\n"
		    "textures_count: 1\n"
		    "texture_size: 512\n"
		    "tiles_count: 3\n"
		    "tile_size: 64\n"
		    "materials_count: 2\n"
		    "anim_tiles_count: 1\n"
		    "materials:\n"
		    "  - type: TERRAIN\n"
		    "    color: [0.5, 0.25, 1, 1]\n"
		    "    self_illumination: 0\n"
		    "    wave_multiplier: 1\n"
		    "    warp_speed: 0\n"
		    "    reserved: [0, 0, 0]\n"
		    "  - type: 9\n"
		    "    color: [0, 0, 0, 0.5]\n"
		    "    self_illumination: 0\n"
		    "    wave_multiplier: 0.5\n"
		    "    warp_speed: 0\n"
		    "    reserved: [0, 0, 0]\n"
		    "tile_types:\n"
		    "  0: grass\n"
		    "  1: water\n"
		    "  2: 99\n"
		    "anim_tiles:\n"
		    "  - tile_index: 2\n"
		    "    phase_count: 8\n");
	g_byte_array_unref(b);
}

Test(mp, multiplayer_mp_is_no_map_header)
{
	/* mp/N.mp: u32 0x114, u32 0x74, ... (FORMATS 0, 11) */
	static const unsigned char mp[] = { 0x14, 0x01, 0, 0, 0x74, 0, 0, 0, 1, 2, 3, 4, 1, 0, 0, 0, 0 };

	expect_refused(mp_to_text, mp, sizeof mp, 0, "not a map header");
}

Test(mp, malformed)
{
	GByteArray *b = mp_sample();
	size_t len = b->len;

	expect_prefixes_refused(mp_to_text, b);
	g_byte_array_append(b, (const guint8 *)"x", 1);
	expect_refused(mp_to_text, b->data, b->len, len, "does not match");
	g_byte_array_set_size(b, len);
	h_put_u32(b, 24, 0xFFFFFFFF); /* tiles_count */
	expect_refused(mp_to_text, b->data, b->len, len, "does not match");
	g_byte_array_unref(b);
}

/* ---- SEC ------------------------------------------------------------------- */

/* A sector of zeros but for vertex (0,0) of each grid and tile (0,0). */
static GByteArray *sec_sample(int liquid)
{
	GByteArray *b = g_byte_array_new();
	size_t verts = 33 * 33 * 8, tiles = 16 * 16 * 2;
	size_t size = 5 + verts * (liquid ? 2 : 1) + tiles * (liquid ? 3 : 1);
	/* normal x 0.5 (1500 in bits 11-21), y -0.25 (750 in 0-10), z 0.75 (750 in 22-31) */
	uint32_t normal = 1500u << 11 | 750u | 750u << 22;

	g_byte_array_set_size(b, (guint)size);
	memset(b->data, 0, size);
	h_put_u32(b, 0, 0xCF4BF774);
	b->data[4] = liquid ? 3 : 0;
	b->data[5] = 0xFF;           /* dx -1 */
	b->data[6] = 2;              /* dy */
	h_put_u16(b, 7, 300);
	h_put_u32(b, 9, normal);
	if (liquid) {
		b->data[5 + verts] = 0x80; /* dx -128 */
		h_put_u16(b, 5 + verts + 2, 65535);
	}
	/* index 5, atlas 2, rotation 3 */
	h_put_u16(b, 5 + verts * (liquid ? 2 : 1), 5 | 2 << 6 | 3 << 14);
	if (liquid)
		h_put_u16(b, 5 + verts * 2 + tiles * 2, 7);
	return b;
}

/* A grid row of `count` cells, the first one `first`, the others `rest`. */
static void sec_row(GString *s, const char *first, const char *rest, int count)
{
	g_string_append_printf(s, "  - [%s", first);
	for (int i = 1; i < count; i++)
		g_string_append_printf(s, ", %s", rest);
	g_string_append(s, "]\n");
}

static void sec_grid(GString *s, const char *key, const char *first, const char *rest, int side)
{
	g_string_append(s, key);
	sec_row(s, first, rest, side);
	for (int r = 1; r < side; r++)
		sec_row(s, rest, rest, side);
}

Test(sec, land_only)
{
	GByteArray *b = sec_sample(0);
	GString *want = g_string_new("magic: 0xCF4BF774\nliquid_flag: 0\n");

	cr_assert_eq(b->len, 9229);
	sec_grid(want, "land_vertices:  # dx dy z\n", "-1 2 300", "0 0 0", 33);
	sec_grid(want, "land_normals:  # x y z\n", "0.5 -0.25 0.75", "-1 -1 0", 33);
	sec_grid(want, "land_tiles:  # index atlas rotation(x90°)\n", "5 2 3", "0 0 0", 16);
	expect_text(sec_to_text, b, want->str);
	g_string_free(want, TRUE);
	g_byte_array_unref(b);
}

Test(sec, land_and_liquid)
{
	GByteArray *b = sec_sample(1);
	GString *want = g_string_new("magic: 0xCF4BF774\nliquid_flag: 3\n");

	cr_assert_eq(b->len, 18965);
	sec_grid(want, "land_vertices:  # dx dy z\n", "-1 2 300", "0 0 0", 33);
	sec_grid(want, "land_normals:  # x y z\n", "0.5 -0.25 0.75", "-1 -1 0", 33);
	sec_grid(want, "liquid_vertices:  # dx dy z\n", "-128 0 65535", "0 0 0", 33);
	sec_grid(want, "liquid_normals:  # x y z\n", "-1 -1 0", "-1 -1 0", 33);
	sec_grid(want, "land_tiles:  # index atlas rotation(x90°)\n", "5 2 3", "0 0 0", 16);
	sec_grid(want, "liquid_tiles:  # index atlas rotation(x90°)\n", "0 0 0", "0 0 0", 16);
	sec_grid(want, "liquid_materials:\n", "7", "0", 16);
	expect_text(sec_to_text, b, want->str);
	g_string_free(want, TRUE);
	g_byte_array_unref(b);
}

Test(sec, malformed)
{
	GByteArray *b = sec_sample(0);

	expect_refused(sec_to_text, b->data, 4, 0, "not a map sector");
	expect_refused(sec_to_text, b->data, b->len - 1, b->len - 1, "without liquid");
	b->data[4] = 3; /* says liquid, has none */
	expect_refused(sec_to_text, b->data, b->len, b->len, "with liquid");
	b->data[0] ^= 1;
	expect_refused(sec_to_text, b->data, b->len, 0, "not a map sector");
	g_byte_array_unref(b);
}

/* ---- the samples ------------------------------------------------------------ */

struct sample {
	int fd;
	struct res_window w;
	struct res_table t;
};

static int sample_open(const char *path, struct sample *s)
{
	struct res_error err = { 0 };
	struct stat st;

	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0)
		return -1;
	cr_assert_eq(fstat(s->fd, &st), 0);
	s->w = (struct res_window){ s->fd, 0, (uint64_t)st.st_size };
	cr_assert_eq(res_table_read(&s->w, &s->t, &err), 0, "%s: %s", path, err.msg);
	return 0;
}

static void sample_close(struct sample *s)
{
	res_table_free(&s->t);
	close(s->fd);
}

static unsigned char *entry_read(const struct res_window *w, const struct res_entry *e)
{
	unsigned char *buf = malloc(e->length ? e->length : 1);

	cr_assert_eq(pread(w->fd, buf, e->length, (off_t)(w->base + e->offset)), (ssize_t)e->length);
	return buf;
}

static int name_ends(const struct res_table *t, uint32_t i, const char *ext)
{
	size_t n = t->entries[i].name_len, e = strlen(ext);

	return n >= e && g_ascii_strncasecmp(res_entry_name(t, i) + n - e, ext, e) == 0;
}

/* The view of entry i, which must be accepted; returns the text. */
static GString *entry_view(view_fn *fn, const struct res_window *w, const struct res_table *t, uint32_t i)
{
	unsigned char *buf = entry_read(w, &t->entries[i]);
	struct format_error err = { 0 };
	GString *out = g_string_new(NULL);

	cr_assert_eq(fn(buf, t->entries[i].length, out, &err), 0, "%.*s refused at %llu: %s",
		     (int)t->entries[i].name_len, res_entry_name(t, i), (unsigned long long)err.offset,
		     err.msg);
	free(buf);
	return out;
}

Test(mp, sample_map_archive)
{
	struct sample s;
	unsigned mp = 0, sec = 0, liquid = 0;

	if (sample_open(SAMPLES_DIR "/zonemainmenunew.mpr", &s) < 0)
		cr_skip_test("samples absent: " SAMPLES_DIR "/zonemainmenunew.mpr");
	for (uint32_t i = 0; i < s.t.hdr.count; i++) {
		GString *v;

		if (name_ends(&s.t, i, ".mp")) {
			v = entry_view(mp_to_text, &s.w, &s.t, i);
			cr_assert(strstr(v->str, "tiles_count: 192\n"), "%s", v->str);
			cr_assert(strstr(v->str, "materials:\n  - type: TERRAIN\n"));
			cr_assert(strstr(v->str, "  - type: WATER\n"));
			cr_assert(strstr(v->str, "anim_tiles:\n  - tile_index: 9\n    phase_count: 32\n"));
			mp++;
		} else if (name_ends(&s.t, i, ".sec")) {
			v = entry_view(sec_to_text, &s.w, &s.t, i);
			cr_assert(strstr(v->str, "land_tiles:"));
			liquid += strstr(v->str, "liquid_materials:") != NULL;
			sec++;
		} else {
			continue;
		}
		g_string_free(v, TRUE);
	}
	cr_assert_eq(mp, 1);
	cr_assert_eq(sec, 4);
	cr_assert_eq(liquid, 3, "three sectors of 18965 bytes hold liquid");
	sample_close(&s);
}

/* Views of every entry of the .mod and .bon archives nested in auxData.res. */
static void nested_models(const struct sample *s, uint32_t i, unsigned *figs, unsigned *lnks,
			  unsigned *bons)
{
	const struct res_entry *e = &s->t.entries[i];
	struct res_window w = { s->fd, s->w.base + e->offset, e->length };
	size_t stem = e->name_len - 4;
	int is_mod = name_ends(&s->t, i, ".mod");
	struct res_error err = { 0 };
	struct res_table t;

	cr_assert_eq(res_table_read(&w, &t, &err), 0, "%s", err.msg);
	for (uint32_t k = 0; k < t.hdr.count; k++) {
		unsigned char *buf = entry_read(&w, &t.entries[k]);
		int fig = fig_is_magic(buf, t.entries[k].length);
		GString *v;

		free(buf);
		if (!is_mod) {
			v = entry_view(bon_to_text, &w, &t, k);
			(*bons)++;
		} else if (fig) {
			v = entry_view(fig_to_text, &w, &t, k);
			(*figs)++;
		} else {
			cr_assert(res_name_equal(res_entry_name(&t, k), t.entries[k].name_len,
						 res_entry_name(&s->t, i), stem),
				  "a .mod entry neither FIG nor the LNK");
			v = entry_view(lnk_to_text, &w, &t, k);
			(*lnks)++;
		}
		cr_assert_gt(v->len, 0);
		g_string_free(v, TRUE);
	}
	res_table_free(&t);
}

Test(fig, sample_models_of_auxdata)
{
	unsigned figs = 0, lnks = 0, bons = 0, mods = 0;
	struct sample s;

	if (sample_open(SAMPLES_DIR "/auxData.res", &s) < 0)
		cr_skip_test("samples absent: " SAMPLES_DIR "/auxData.res");
	for (uint32_t i = 0; i < s.t.hdr.count; i++)
		if (name_ends(&s.t, i, ".mod") || name_ends(&s.t, i, ".bon")) {
			nested_models(&s, i, &figs, &lnks, &bons);
			mods++;
		}
	cr_assert_eq(mods, 20);
	cr_assert_eq(figs, 10);
	cr_assert_eq(lnks, 10);
	cr_assert_eq(bons, 10);
	sample_close(&s);
}
