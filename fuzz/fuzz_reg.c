/* REG: the parser, the writer on what it parsed, the INI view, and the
 * promise of ini.h that REG -> INI -> REG gives the bytes the writer
 * makes of the model. */
#include "fuzz.h"

#include <string.h>

#include "ini.h"
#include "reg.h"

static void check_written(const GByteArray *w)
{
	struct format_error err = { 0 };
	struct reg_file *again;
	GByteArray *w2;

	FUZZ_CHECK(reg_parse(w->data, w->len, &again, &err) == 0,
		   "reg_parse refuses reg_write's output: %s at %llu", err.msg,
		   (unsigned long long)err.offset);
	w2 = g_byte_array_new();
	FUZZ_CHECK(reg_write(again, w2, &err) == 0, "rewriting failed: %s", err.msg);
	FUZZ_CHECK(w2->len == w->len && memcmp(w2->data, w->data, w->len) == 0,
		   "parse + write of the writer's output is not a fixed point");
	g_byte_array_unref(w2);
	reg_free(again);
}

/* The INI of a model reads back into a model the writer turns into the
 * same bytes. */
static void check_ini_round_trip(const GString *ini, const GByteArray *w)
{
	struct format_error err = { 0 };
	GByteArray *back = g_byte_array_new();

	FUZZ_CHECK(ini_to_reg_bytes(ini->str, ini->len, back, &err) == 0,
		   "the INI reg_to_ini wrote does not read back: %s", err.msg);
	FUZZ_CHECK(back->len == w->len && memcmp(back->data, w->data, w->len) == 0,
		   "REG -> INI -> REG changed the bytes (%u -> %u)", w->len, back->len);
	g_byte_array_unref(back);
}

void fuzz_reg_one(const uint8_t *data, size_t size)
{
	struct format_error err = { 0 }, ierr = { 0 }, werr = { 0 };
	struct reg_file *f;
	GString *ini = g_string_new(NULL), *ini2 = g_string_new(NULL);
	GByteArray *w = g_byte_array_new();
	int rc_ini, rc_w;

	rc_ini = reg_bytes_to_ini(data, size, ini2, &ierr);
	if (reg_parse(data, size, &f, &err) < 0) {
		fuzz_check_refusal(&err, "reg_parse");
		FUZZ_CHECK(!f, "a refused REG gave a model");
		FUZZ_CHECK(rc_ini < 0 && ierr.code == err.code && ierr.offset == err.offset,
			   "reg_bytes_to_ini and reg_parse disagree");
		goto out;
	}
	rc_w = reg_write(f, w, &werr);
	if (rc_w < 0) {
		fuzz_check_refusal(&werr, "reg_write");
		FUZZ_CHECK(w->len == 0, "a refused write left bytes");
	} else {
		check_written(w);
	}
	if (reg_to_ini(f, ini, &err) < 0) {
		fuzz_check_refusal(&err, "reg_to_ini");
		FUZZ_CHECK(ini->len == 0 && rc_ini < 0, "a refused INI left text");
	} else {
		FUZZ_CHECK(rc_ini == 0 && g_string_equal(ini, ini2),
			   "reg_bytes_to_ini differs from reg_parse + reg_to_ini");
		FUZZ_CHECK(g_utf8_validate(ini->str, (gssize)ini->len, NULL), "INI is not UTF-8");
		fuzz_check_growth(size, ini->len, "reg_to_ini");
		if (rc_w == 0)
			check_ini_round_trip(ini, w);
	}
	reg_free(f);
out:
	g_byte_array_unref(w);
	g_string_free(ini, TRUE);
	g_string_free(ini2, TRUE);
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_reg_one(data, size);
	return 0;
}
#endif
