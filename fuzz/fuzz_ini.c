/* INI -> REG on arbitrary text; what it accepts must survive
 * REG -> INI -> REG byte for byte (ini.h).  The same input, as a text view
 * would read and save it, must survive cp1251 -> UTF-8 -> cp1251 and
 * UTF-8 -> cp1251 -> UTF-8 (text.h). */
#include "fuzz.h"

#include <string.h>

#include "ini.h"
#include "text.h"

static void text_round_trips(const uint8_t *data, size_t size)
{
	struct format_error err = { 0 };
	GByteArray *bytes = g_byte_array_new();
	GString *text = g_string_new(NULL);
	int bom = size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0;

	if (text_to_utf8(data, size, text, &err) == 0) {
		FUZZ_CHECK(g_utf8_validate(text->str, (gssize)text->len, NULL), "text view is not UTF-8");
		FUZZ_CHECK(text_from_utf8((const unsigned char *)text->str, text->len, bytes, &err) == 0,
			   "a text view does not save: %s", err.msg);
		/* (an empty array's data is NULL, which memcmp may not get) */
		FUZZ_CHECK(bytes->len == size && (size == 0 || memcmp(bytes->data, data, size) == 0),
			   "cp1251 -> UTF-8 -> cp1251 changed the bytes");
	} else {
		fuzz_check_refusal(&err, "text_to_utf8");
	}
	g_byte_array_set_size(bytes, 0);
	g_string_truncate(text, 0);
	if (text_from_utf8(data, size, bytes, &err) == 0) {
		FUZZ_CHECK(text_to_utf8(bytes->data, bytes->len, text, &err) == 0, "a saved text has no view: %s",
			   err.msg);
		FUZZ_CHECK(text->len == size - (bom ? 3 : 0)
				   && (text->len == 0 || memcmp(text->str, data + (bom ? 3 : 0), text->len) == 0),
			   "UTF-8 -> cp1251 -> UTF-8 changed the text");
	} else {
		fuzz_check_refusal(&err, "text_from_utf8");
		FUZZ_CHECK(bytes->len == 0, "a refused text left bytes");
	}
	g_byte_array_unref(bytes);
	g_string_free(text, TRUE);
}

void fuzz_ini_one(const uint8_t *data, size_t size)
{
	struct format_error err = { 0 };
	GByteArray *reg = g_byte_array_new(), *back = g_byte_array_new();
	GString *ini = g_string_new(NULL);

	text_round_trips(data, size);
	if (ini_to_reg_bytes((const char *)data, size, reg, &err) < 0) {
		fuzz_check_refusal(&err, "ini_to_reg_bytes");
		FUZZ_CHECK(reg->len == 0, "a refused INI left bytes");
		goto out;
	}
	FUZZ_CHECK(reg_bytes_to_ini(reg->data, reg->len, ini, &err) == 0,
		   "the REG made of an INI has no INI view: %s at %llu", err.msg,
		   (unsigned long long)err.offset);
	FUZZ_CHECK(g_utf8_validate(ini->str, (gssize)ini->len, NULL), "INI is not UTF-8");
	fuzz_check_growth(reg->len, ini->len, "reg_bytes_to_ini");
	FUZZ_CHECK(ini_to_reg_bytes(ini->str, ini->len, back, &err) == 0,
		   "the INI view does not read back: %s (line %llu)", err.msg,
		   (unsigned long long)err.offset);
	FUZZ_CHECK(back->len == reg->len && memcmp(back->data, reg->data, reg->len) == 0,
		   "REG -> INI -> REG changed the bytes (%u -> %u)", reg->len, back->len);
out:
	g_byte_array_unref(reg);
	g_byte_array_unref(back);
	g_string_free(ini, TRUE);
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_ini_one(data, size);
	return 0;
}
#endif
