/* JSON Lines -> database on arbitrary text.  What it writes must have a
 * view (db_to_jsonl, under the file name the text gives) that reads back
 * into the same bytes. */
#include "fuzz.h"

#include <string.h>

#include "db.h"

/* The "file" member of the first line, which db_to_jsonl writes first;
 * a text without one gets a name without a schema. */
static char *file_name(const char *text, size_t len)
{
	static const char key[] = "{\"file\":\"";
	const char *nl = memchr(text, '\n', len);
	size_t line = nl ? (size_t)(nl - text) : len;
	const char *end;

	if (line < sizeof key || memcmp(text, key, sizeof key - 1) != 0)
		return g_strdup("other.db");
	end = memchr(text + sizeof key - 1, '"', line - (sizeof key - 1));
	if (!end)
		return g_strdup("other.db");
	return g_strndup(text + sizeof key - 1, (size_t)(end - text) - (sizeof key - 1));
}

void fuzz_jsonl_one(const uint8_t *data, size_t size)
{
	struct format_error err = { 0 };
	const char *text = (const char *)data;
	GByteArray *db = g_byte_array_new(), *back = g_byte_array_new();
	GString *view = g_string_new(NULL);
	char *name;

	if (jsonl_to_db(text, size, db, &err) < 0) {
		fuzz_check_refusal(&err, "jsonl_to_db");
		FUZZ_CHECK(db->len == 0, "a refused text left bytes");
		goto out;
	}
	name = file_name(text, size);
	FUZZ_CHECK(db_to_jsonl(name, db->data, db->len, view, &err) == 0,
		   "the database jsonl_to_db wrote has no view as %s: %s at %llu", name, err.msg,
		   (unsigned long long)err.offset);
	fuzz_check_growth(db->len, view->len, "db_to_jsonl");
	FUZZ_CHECK(jsonl_to_db(view->str, view->len, back, &err) == 0,
		   "the view of a written database does not read back: %s", err.msg);
	FUZZ_CHECK(back->len == db->len && memcmp(back->data, db->data, db->len) == 0,
		   "JSONL -> DB -> JSONL -> DB changed the bytes (%u -> %u)", db->len, back->len);
	g_free(name);
out:
	g_byte_array_unref(db);
	g_byte_array_unref(back);
	g_string_free(view, TRUE);
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_jsonl_one(data, size);
	return 0;
}
#endif
