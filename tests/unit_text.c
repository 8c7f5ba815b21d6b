/* The UTF-8 views of the game's cp1251 texts (src/text.c). */
#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

#include "text.h"

/* "Гипат\r\n" in cp1251 */
static const unsigned char gipat_cp1251[] = { 0xC3, 0xE8, 0xEF, 0xE0, 0xF2, '\r', '\n' };
static const char gipat_utf8[] = "Гипат\r\n";

Test(text, cp1251_to_utf8_keeps_line_ends)
{
	GString *out = g_string_new(NULL);
	struct format_error err = { 0 };

	cr_assert_eq(text_to_utf8(gipat_cp1251, sizeof gipat_cp1251, out, &err), 0);
	cr_assert_str_eq(out->str, gipat_utf8);
	g_string_free(out, TRUE);
}

Test(text, every_byte_but_nul_goes_there_and_back)
{
	unsigned char all[255];
	GString *utf8 = g_string_new(NULL);
	GByteArray *back = g_byte_array_new();
	struct format_error err = { 0 };

	for (int i = 0; i < 255; i++)
		all[i] = (unsigned char)(i + 1);
	cr_assert_eq(text_to_utf8(all, sizeof all, utf8, &err), 0, "%s", err.msg);
	cr_assert(g_utf8_validate(utf8->str, (gssize)utf8->len, NULL));
	cr_assert_not_null(strstr(utf8->str, "\xC2\x98"), "the undefined 0x98 is U+0098");
	cr_assert_eq(text_from_utf8((const unsigned char *)utf8->str, utf8->len, back, &err), 0, "%s", err.msg);
	cr_assert_eq(back->len, sizeof all);
	cr_assert_eq(memcmp(back->data, all, sizeof all), 0);
	g_string_free(utf8, TRUE);
	g_byte_array_unref(back);
}

Test(text, every_byte_is_the_character_iconv_gives)
{
	struct format_error err = { 0 };

	for (int c = 1; c < 256; c++) {
		char byte = (char)c;
		GString *ours = g_string_new(NULL);
		gchar *theirs = c == 0x98 ? g_strdup("\xC2\x98") /* iconv has none: ours is U+0098 */
					  : g_convert(&byte, 1, "UTF-8", "CP1251", NULL, NULL, NULL);

		cr_assert_not_null(theirs, "iconv knows no CP1251 byte %02X", c);
		cr_assert_eq(text_to_utf8((const unsigned char *)&byte, 1, ours, &err), 0);
		cr_assert_str_eq(ours->str, theirs, "byte %02X", c);
		g_free(theirs);
		g_string_free(ours, TRUE);
	}
}

Test(text, nul_is_binary_data_and_appends_nothing)
{
	static const unsigned char bin[] = { 'a', 'b', 0, 'c' };
	GString *out = g_string_new("kept");
	struct format_error err = { 0 };

	cr_assert_eq(text_to_utf8(bin, sizeof bin, out, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert_eq(err.offset, 2);
	cr_assert_str_eq(out->str, "kept");
	g_string_free(out, TRUE);
}

Test(text, utf8_to_cp1251_drops_a_byte_order_mark)
{
	GByteArray *out = g_byte_array_new();
	struct format_error err = { 0 };
	GString *in = g_string_new("\xEF\xBB\xBF");

	g_string_append(in, gipat_utf8);
	cr_assert_eq(text_from_utf8((const unsigned char *)in->str, in->len, out, &err), 0);
	cr_assert_eq(out->len, sizeof gipat_cp1251);
	cr_assert_eq(memcmp(out->data, gipat_cp1251, sizeof gipat_cp1251), 0);
	g_string_free(in, TRUE);
	g_byte_array_unref(out);
}

/* text, the errno and line text_from_utf8 must refuse it with */
static void refused(const char *text, size_t len, int code, uint64_t line, const char *says)
{
	GByteArray *out = g_byte_array_new();
	struct format_error err = { 0 };

	g_byte_array_append(out, (const guint8 *)"kept", 4);
	cr_assert_eq(text_from_utf8((const unsigned char *)text, len, out, &err), -1, "%s accepted", says);
	cr_assert_eq(err.code, code, "%s: errno %d", says, err.code);
	cr_assert_eq(err.offset, line, "%s: line %llu", says, (unsigned long long)err.offset);
	cr_assert_not_null(strstr(err.msg, says), "message \"%s\" lacks \"%s\"", err.msg, says);
	cr_assert_eq(out->len, 4, "a refusal appends nothing");
	g_byte_array_unref(out);
}

Test(text, utf8_to_cp1251_refusals_name_the_line)
{
	static const char cjk[] = "line one\r\nname=中文\r\n";
	static const char broken[] = "a\nb\nc\xC3(\n";
	static const char nul[] = "a\nb\0c";

	refused(cjk, sizeof cjk - 1, EILSEQ, 2, "U+4E2D has no cp1251 form");
	refused(broken, sizeof broken - 1, EILSEQ, 3, "not UTF-8");
	refused(nul, sizeof nul - 1, EINVAL, 2, "NUL");
	refused("\xE2\x82", 2, EILSEQ, 1, "not UTF-8"); /* cut short */
}
