/* INI -> REG on arbitrary text; what it accepts must survive
 * REG -> INI -> REG byte for byte (ini.h). */
#include "fuzz.h"

#include <string.h>

#include "ini.h"

void fuzz_ini_one(const uint8_t *data, size_t size)
{
	struct format_error err = { 0 };
	GByteArray *reg = g_byte_array_new(), *back = g_byte_array_new();
	GString *ini = g_string_new(NULL);

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
