/* Databases -> JSON Lines under every schema (the first input byte picks
 * the file name), and back: db.h promises jsonl_to_db(db_to_jsonl(f)) = f. */
#include "fuzz.h"

#include <string.h>

#include "db.h"

/* The eight kinds of the game, and a .db without a schema (generic keys). */
static const char *const names[] = {
	"x.idb", "x.udb", "x.sdb", "x.pdb", "x.qdb", "x.ldb", "prints.db", "acks.db", "other.db",
};

void fuzz_db_one(const uint8_t *data, size_t size)
{
	struct format_error err = { 0 };
	const char *name;
	GString *text;
	GByteArray *back;

	if (size == 0)
		return;
	name = names[data[0] % G_N_ELEMENTS(names)];
	data++;
	size--;
	text = g_string_new("kept");
	back = g_byte_array_new();
	if (db_to_jsonl(name, data, size, text, &err) < 0) {
		fuzz_check_refusal(&err, "db_to_jsonl");
		FUZZ_CHECK(strcmp(text->str, "kept") == 0, "a refused database left text");
		goto out;
	}
	g_string_erase(text, 0, 4);
	FUZZ_CHECK(g_utf8_validate(text->str, (gssize)text->len, NULL), "JSONL is not UTF-8");
	fuzz_check_growth(size, text->len, "db_to_jsonl");
	FUZZ_CHECK(jsonl_to_db(text->str, text->len, back, &err) == 0,
		   "%s: the JSON Lines view does not read back: %s", name, err.msg);
	FUZZ_CHECK(back->len == size && memcmp(back->data, data, size) == 0,
		   "%s: DB -> JSONL -> DB changed the bytes (%zu -> %u)", name, size, back->len);
out:
	g_string_free(text, TRUE);
	g_byte_array_unref(back);
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_db_one(data, size);
	return 0;
}
#endif
