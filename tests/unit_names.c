/* Display names of entries and the cp1251 conversions (src/names.c,
 * src/cp1251.c). */
#include <criterion/criterion.h>

#include <string.h>

#include "cp1251.h"
#include "helpers.h"
#include "names.h"

/* Splits raw, checks the components (NULL-terminated list) and returns the
 * rewrites. */
static unsigned split(const char *raw, size_t len, const char *const *want)
{
	GPtrArray *comps = g_ptr_array_new_with_free_func(g_free);
	unsigned rewrites;
	guint n = 0;

	g_ptr_array_add(comps, g_strdup("already there"));
	rewrites = names_split(raw, len, comps);
	cr_assert_str_eq(comps->pdata[0], "already there", "names_split appends");
	while (want[n])
		n++;
	cr_assert_eq(comps->len, n + 1, "%u components for a %zu-byte name, expected %u",
		     comps->len - 1, len, n);
	for (guint i = 0; i < n; i++)
		cr_assert_str_eq(comps->pdata[i + 1], want[i], "component %u", i);
	g_ptr_array_unref(comps);
	return rewrites;
}

#define COMPS(...) ((const char *const[]){ __VA_ARGS__, NULL })

Test(names_split, plain_names_are_kept)
{
	cr_assert_eq(split(H_STR("readme.txt"), COMPS("readme.txt")), 0);
	cr_assert_eq(split(H_STR("UNIT Human_Kania_Police_Helm_F10"), COMPS("UNIT Human_Kania_Police_Helm_F10")), 0);
	cr_assert_eq(split(H_STR("..."), COMPS("...")), 0);
	cr_assert_eq(split(H_STR(".hidden"), COMPS(".hidden")), 0);
	cr_assert_eq(split(H_STR("a..b"), COMPS("a..b")), 0);
	cr_assert_eq(split(H_STR("100%"), COMPS("100%")), 0);
}

Test(names_split, backslash_directories)
{
	cr_assert_eq(split(H_STR("z3q1\\quest.reg"), COMPS("z3q1", "quest.reg")), 0);
	cr_assert_eq(split(H_STR("a\\b\\c\\d.txt"), COMPS("a", "b", "c", "d.txt")), 0);
	cr_assert_eq(split(H_STR("a\\.b"), COMPS("a", ".b")), 0);
}

Test(names_split, empty_components_are_dropped)
{
	cr_assert_eq(split(H_STR("\\a"), COMPS("a")), 1);
	cr_assert_eq(split(H_STR("a\\"), COMPS("a")), 1);
	cr_assert_eq(split(H_STR("a\\\\b"), COMPS("a", "b")), 1);
	cr_assert_eq(split(H_STR("\\a\\\\b\\"), COMPS("a", "b")), 3);
}

Test(names_split, slash_and_nul_are_escaped)
{
	cr_assert_eq(split(H_STR("a/b"), COMPS("a%2Fb")), 1);
	cr_assert_eq(split(H_STR("/"), COMPS("%2F")), 1);
	cr_assert_eq(split(H_STR("../x"), COMPS("..%2Fx")), 1);
	cr_assert_eq(split(H_STR("a\0b"), COMPS("a%00b")), 1);
	cr_assert_eq(split(H_STR("\0"), COMPS("%00")), 1);
	cr_assert_eq(split(H_STR("d\\a/b\\c\0"), COMPS("d", "a%2Fb", "c%00")), 2);
}

Test(names_split, dot_and_dotdot)
{
	cr_assert_eq(split(H_STR("."), COMPS("%2E")), 1);
	cr_assert_eq(split(H_STR(".."), COMPS("%2E%2E")), 1);
	cr_assert_eq(split(H_STR("a\\..\\b"), COMPS("a", "%2E%2E", "b")), 1);
	cr_assert_eq(split(H_STR("..\\..\\etc\\passwd"), COMPS("%2E%2E", "%2E%2E", "etc", "passwd")), 2);
	cr_assert_eq(split(H_STR("a\\."), COMPS("a", "%2E")), 1);
}

Test(names_split, empty_names)
{
	cr_assert_eq(split("", 0, COMPS("%EMPTY")), 1);
	cr_assert_gt(split(H_STR("\\"), COMPS("%EMPTY")), 0);
	cr_assert_gt(split(H_STR("\\\\\\"), COMPS("%EMPTY")), 0);
}

Test(names_split, cp1251)
{
	/* "Привет", "Кожа\тип" */
	cr_assert_eq(split(H_STR("\xcf\xf0\xe8\xe2\xe5\xf2"), COMPS("Привет")), 0);
	cr_assert_eq(split(H_STR("\xca\xee\xe6\xe0\\\xf2\xe8\xef"), COMPS("Кожа", "тип")), 0);
	cr_assert_eq(split(H_STR("\xa8\xb8\xb9\x88\x96"), COMPS("Ёё№€–")), 0);
	/* 0x98 is the one byte cp1251 leaves undefined */
	cr_assert_eq(split(H_STR("\x98"), COMPS("%98")), 1);
	cr_assert_eq(split(H_STR("a\x98\xe0"), COMPS("a%98а")), 1);
}

Test(names_split, display_path_joins_with_slash)
{
	GString *s = g_string_new("x/");

	cr_assert_eq(names_display_path(H_STR("z3q1\\quest.reg"), s), 0);
	cr_assert_str_eq(s->str, "x/z3q1/quest.reg");
	g_string_truncate(s, 0);
	cr_assert_eq(names_display_path(H_STR("\\a/b\\..\\\xe0"), s), 3);
	cr_assert_str_eq(s->str, "a%2Fb/%2E%2E/а");
	g_string_truncate(s, 0);
	cr_assert_eq(names_display_path("", 0, s), 1);
	cr_assert_str_eq(s->str, "%EMPTY");
	g_string_free(s, TRUE);
}

Test(names, dedup_and_extensions)
{
	char *d = names_dedup("abc", 0x12);

	cr_assert_str_eq(d, "abc~00000012");
	g_free(d);
	/* FNV-1a: the same stored bytes give the same tag, other bytes another */
	cr_assert_eq(names_tag("", 0), 2166136261u);
	cr_assert_eq(names_tag(H_STR("a")), 0xe40c292cu);
	cr_assert_neq(names_tag(H_STR("ABC")), names_tag(H_STR("Abc")));
	cr_assert(names_has_ext("texts.RES", "res"));
	cr_assert(names_has_ext(".res", "res"));
	cr_assert(!names_has_ext("texts.res.txt", "res"));
	cr_assert(!names_has_ext("res", "res"));
	cr_assert(!names_has_ext("texts.resx", "res"));
	for (const char *const *p = (const char *const[]){ "a.res", "a.MOD", "a.anm", "a.Bon", "a.mpr",
							   "a.MQ", "x.y.res", NULL }; *p; p++)
		cr_assert(names_is_archive_ext(*p), "%s", *p);
	for (const char *const *p = (const char *const[]){ "a.reg", "a.mmp", "mq", "a.mqx", "a.res~1",
							   "a_res", "", NULL }; *p; p++)
		cr_assert(!names_is_archive_ext(*p), "%s", *p);
}

Test(names, directory_order)
{
	cr_assert_lt(names_order("a", "B"), 0);
	cr_assert_gt(names_order("B", "a"), 0);
	cr_assert_lt(names_order("ABC", "abc"), 0, "ties broken by bytes");
	cr_assert_eq(names_order("abc", "abc"), 0);
	cr_assert_lt(names_order("_", "a"), 0, "lowered, unlike the packer's order");
	cr_assert_lt(names_order("a", "a~1"), 0);
}

/* ---- cp1251 ---------------------------------------------------------------- */

static char *to_utf8(const char *in, size_t len, const char *escape, size_t *escaped)
{
	GString *s = g_string_new(NULL);

	*escaped = cp1251_to_utf8(in, len, escape, s);
	return g_string_free(s, FALSE);
}

Test(cp1251, known_characters)
{
	static const struct { unsigned char byte; const char *utf8; } known[] = {
		{ 0x41, "A" }, { 0xC0, "А" }, { 0xDF, "Я" }, { 0xE0, "а" }, { 0xFF, "я" },
		{ 0xA8, "Ё" }, { 0xB8, "ё" }, { 0x88, "€" }, { 0xB9, "№" }, { 0x96, "–" },
		{ 0x97, "—" }, { 0xA0, "\u00a0" }, { 0xA2, "ў" }, { 0x80, "Ђ" }, { 0xBF, "ї" },
		{ 0x99, "™" }, { 0xAB, "«" }, { 0xBB, "»" },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(known); i++) {
		size_t escaped;
		char *s = to_utf8((const char *)&known[i].byte, 1, "/", &escaped);
		GString *back = g_string_new(NULL);
		size_t bad = 99;

		cr_assert_str_eq(s, known[i].utf8, "byte %02X", known[i].byte);
		cr_assert_eq(escaped, 0);
		cr_assert_eq(utf8_to_cp1251(known[i].utf8, strlen(known[i].utf8), back, &bad), 0);
		cr_assert_eq(back->len, 1);
		cr_assert_eq((unsigned char)back->str[0], known[i].byte, "%s", known[i].utf8);
		cr_assert_eq(bad, 99, "bad_at untouched on success");
		g_string_free(back, TRUE);
		g_free(s);
	}
}

Test(cp1251, every_byte_agrees_with_iconv_and_round_trips)
{
	for (unsigned b = 1; b < 256; b++) {
		char in = (char)b;
		size_t escaped, bad = 0;
		char *ours = to_utf8(&in, 1, NULL, &escaped);
		char *ref = g_convert(&in, 1, "UTF-8", "CP1251", NULL, NULL, NULL);
		GString *back = g_string_new(NULL);

		if (b == 0x98) {
			cr_assert_null(ref, "iconv maps 0x98");
			cr_assert_str_eq(ours, "%98");
			cr_assert_eq(escaped, 1);
		} else {
			cr_assert_not_null(ref, "iconv refuses %02X", b);
			cr_assert_str_eq(ours, ref, "byte %02X", b);
			cr_assert_eq(escaped, 0);
			cr_assert_eq(utf8_to_cp1251(ours, strlen(ours), back, &bad), 0, "byte %02X", b);
			cr_assert_eq(back->len, 1);
			cr_assert_eq((unsigned char)back->str[0], b);
		}
		g_string_free(back, TRUE);
		g_free(ours);
		g_free(ref);
	}
}

Test(cp1251, escapes)
{
	size_t escaped;
	char *s = to_utf8(H_STR("a/b\0c\\d%"), "/", &escaped);

	cr_assert_str_eq(s, "a%2Fb%00c\\d%");
	cr_assert_eq(escaped, 2);
	g_free(s);
	s = to_utf8(H_STR("a/b:c"), "/:", &escaped);
	cr_assert_str_eq(s, "a%2Fb%3Ac");
	cr_assert_eq(escaped, 2);
	g_free(s);
	s = to_utf8(H_STR("a/b"), NULL, &escaped);
	cr_assert_str_eq(s, "a/b");
	cr_assert_eq(escaped, 0);
	g_free(s);
	s = to_utf8(H_STR("a/\xaf"), "\xaf", &escaped);
	cr_assert_str_eq(s, "a/%AF", "a listed high byte is escaped, and only that byte");
	cr_assert_eq(escaped, 1);
	g_free(s);
	s = to_utf8(H_STR("\xe0/\x98"), "", &escaped);
	cr_assert_str_eq(s, "а/%98");
	cr_assert_eq(escaped, 1);
	g_free(s);
}

Test(cp1251, from_utf8_failures)
{
	GString *out = g_string_new(NULL);
	size_t bad = 0;

	cr_assert_eq(utf8_to_cp1251(H_STR("Привет"), out, &bad), 0);
	cr_assert_eq(memcmp(out->str, "\xcf\xf0\xe8\xe2\xe5\xf2", 6), 0);
	cr_assert_eq(out->len, 6);
	g_string_truncate(out, 0);
	cr_assert_eq(utf8_to_cp1251(H_STR("ab中c"), out, &bad), -1);
	cr_assert_eq(bad, 2, "offset of the character cp1251 lacks");
	cr_assert_eq(utf8_to_cp1251(H_STR("Жж\xff"), out, &bad), -1);
	cr_assert_eq(bad, 4, "offset of the invalid byte");
	cr_assert_eq(utf8_to_cp1251(H_STR("a\xd0"), out, &bad), -1);
	cr_assert_eq(bad, 1, "a truncated sequence");
	cr_assert_eq(utf8_to_cp1251(H_STR("x\xc0\xaf"), out, &bad), -1);
	cr_assert_eq(bad, 1, "an overlong '/'");
	cr_assert_eq(utf8_to_cp1251(H_STR("é"), out, &bad), -1, "Latin-1 letters are not in cp1251");
	cr_assert_eq(bad, 0);
	cr_assert_eq(utf8_to_cp1251(H_STR("ok"), out, NULL), 0);
	cr_assert_eq(utf8_to_cp1251(H_STR("中"), out, NULL), -1, "bad_at may be NULL");
	g_string_free(out, TRUE);
}

/* The display form of raw, as one string (g_free it), and its rewrites. */
static char *shown(const char *raw, size_t len, unsigned *rewrites)
{
	GString *s = g_string_new(NULL);

	*rewrites = names_display_path(raw, len, s);
	return g_string_free(s, FALSE);
}

Test(names_split, long_components_are_cut_with_a_hash)
{
	char raw[601];
	unsigned rw;
	char *a, *b, *c;

	/* 200 bytes: kept, and plain */
	memset(raw, 'x', sizeof raw);
	a = shown(raw, NAMES_COMPONENT_MAX, &rw);
	cr_assert_eq(rw, 0);
	cr_assert_eq(strlen(a), NAMES_COMPONENT_MAX);
	cr_assert(names_is_plain(raw, NAMES_COMPONENT_MAX));
	cr_assert_not(names_is_plain(raw, NAMES_COMPONENT_MAX + 1));
	g_free(a);
	/* 300 bytes: 190 of them, '~' and 8 hex digits; stable; another
	 * name with the same start gets another hash */
	a = shown(raw, 300, &rw);
	b = shown(raw, 300, &rw);
	raw[299] = 'y';
	c = shown(raw, 300, &rw);
	cr_assert_eq(rw, 1);
	cr_assert_eq(strlen(a), 199, "%zu bytes", strlen(a));
	cr_assert_eq(strncmp(a, raw, 190), 0);
	cr_assert_eq(a[190], '~');
	cr_assert_eq(strspn(a + 191, "0123456789abcdef"), 8);
	cr_assert_str_eq(a, b);
	cr_assert_str_neq(a, c);
	g_free(a);
	g_free(b);
	g_free(c);
	/* each component on its own: "short\<300 bytes>\short" */
	memset(raw, 'x', sizeof raw);
	raw[5] = '\\';
	raw[306] = '\\';
	a = shown(raw, 312, &rw);
	cr_assert_eq(rw, 1);
	cr_assert_eq(strlen(a), 5 + 1 + 199 + 1 + 5, "%s", a);
	cr_assert_eq(strncmp(a, "xxxxx/", 6), 0);
	cr_assert_str_eq(a + strlen(a) - 6, "/xxxxx");
	g_free(a);
}

Test(names_split, long_cp1251_is_cut_between_characters)
{
	char raw[150];
	unsigned rw;
	char *a;

	memset(raw, '\xe0', sizeof raw); /* "а": two bytes in UTF-8 */
	raw[0] = 'x'; /* so that 190 falls inside a character */
	a = shown(raw, sizeof raw, &rw);
	cr_assert_eq(rw, 1);
	cr_assert(g_utf8_validate(a, -1, NULL), "%s", a);
	cr_assert_eq(strlen(a), 189 + 9, "%zu bytes", strlen(a));
	cr_assert_eq(a[189], '~');
	g_free(a);
}
