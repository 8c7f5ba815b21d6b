/* Seed inputs for what neither the demo data nor the samples have.
 *   mkseeds DIR            MOB files (an encrypted and a plain script) in
 *                          DIR/mob/, a CAM path in DIR/models/
 *   mkseeds --db IN OUT    the database of a JSON Lines text: small valid
 *                          databases from a few rows of the samples' views */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <glib.h>

#include "db.h"

static void u32(GByteArray *b, uint32_t v)
{
	unsigned char p[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 24) };

	g_byte_array_append(b, p, 4);
}

static void f32(GByteArray *b, float f)
{
	uint32_t v;

	memcpy(&v, &f, 4);
	u32(b, v);
}

/* Opens a node; node_end fills in its length (header included). */
static guint node(GByteArray *b, uint32_t type)
{
	guint at = b->len;

	u32(b, type);
	u32(b, 0);
	return at;
}

static void node_end(GByteArray *b, guint at)
{
	uint32_t len = b->len - at;

	memcpy(b->data + at + 4, (unsigned char[4]){ (unsigned char)len, (unsigned char)(len >> 8),
						     (unsigned char)(len >> 16), (unsigned char)(len >> 24) }, 4);
}

static void leaf(GByteArray *b, uint32_t type, const void *p, size_t n)
{
	guint at = node(b, type);

	g_byte_array_append(b, p, (guint)n);
	node_end(b, at);
}

static void leaf_u32(GByteArray *b, uint32_t type, uint32_t v)
{
	guint at = node(b, type);

	u32(b, v);
	node_end(b, at);
}

static void leaf_floats(GByteArray *b, uint32_t type, unsigned n)
{
	guint at = node(b, type);

	for (unsigned i = 0; i < n; i++)
		f32(b, 0.5f * (float)i - 1.0f);
	node_end(b, at);
}

/* FORMATS 6.3: the MSVC rand() generator, key advanced before each byte. */
static void script(GByteArray *b, const char *text, uint32_t key)
{
	guint at = node(b, 0xACCEECCBu);

	u32(b, key);
	for (const char *p = text; *p; p++) {
		unsigned char c;

		key = key * 214013u + 2531011u;
		c = (unsigned char)(*p ^ ((key >> 16) & 0xFF));
		g_byte_array_append(b, &c, 1);
	}
	node_end(b, at);
}

static void string_array(GByteArray *b, uint32_t type)
{
	static const char *const items[] = { "player", "enemy", "\xcf\xf0\xe8\xe2\xe5\xf2" };
	guint at = node(b, type);

	u32(b, 3);
	for (int i = 0; i < 3; i++)
		leaf(b, type, items[i], strlen(items[i]));
	node_end(b, at);
}

static void object(GByteArray *b)
{
	guint at = node(b, 0xB001);

	leaf_u32(b, 0xB002, 7);
	leaf(b, 0xB004, "Chest01", 7);
	leaf_floats(b, 0xB009, 3);
	leaf_floats(b, 0xB00A, 4);
	string_array(b, 0xB00D);
	leaf(b, 0xB014, "\1", 1);
	node_end(b, at);
}

static void unit(GByteArray *b)
{
	guint at = node(b, 0xBBBB0000u);

	leaf(b, 0xBBBB0002u, "Human", 5);
	leaf_floats(b, 0xBBBB0004u, 43);
	string_array(b, 0xBBBB0009u);
	node_end(b, at);
}

static GByteArray *mob(int encrypted)
{
	static const char text[] = "GlobalVars ( x : float )\r\nDeclareScript Main ( )\r\n";
	GByteArray *b = g_byte_array_new();
	guint root = node(b, 0xA000), r, s;
	int32_t dipl[1024] = { 0 };

	leaf(b, 0xC000, NULL, 0);
	if (encrypted)
		script(b, text, 0x7DA7);
	else
		leaf(b, 0xACCEECCAu, text, sizeof text - 1);
	r = node(b, 0xFF01);
	s = node(b, 0xFF02);
	leaf_u32(b, 0xFF05, 1);
	leaf_u32(b, 0xFF06, 100);
	node_end(b, s);
	node_end(b, r);
	r = node(b, 0xDDDDDDD1u);
	dipl[1] = 2;
	leaf(b, 0xDDDDDDD2u, dipl, sizeof dipl);
	string_array(b, 0xDDDDDDD3u);
	node_end(b, r);
	r = node(b, 0xABD0);
	leaf_floats(b, 0xABD1, 3);
	leaf_floats(b, 0xABD2, 1);
	node_end(b, r);
	r = node(b, 0x1E00);
	s = node(b, 0x1E01);
	leaf_u32(b, 0x1E04, 1);
	leaf(b, 0x1E05, (int32_t[4]){ 33, 77, 152, 242 }, 16);
	leaf(b, 0x1E09, "Wait(1)", 7);
	node_end(b, s);
	node_end(b, r);
	r = node(b, 0xB000);
	object(b);
	unit(b);
	node_end(b, r);
	node_end(b, root);
	leaf(b, 0x31415926u, "\1\2\3\4\5\6\7\10", 8);
	return b;
}

static GByteArray *cam(void)
{
	GByteArray *b = g_byte_array_new();

	for (uint32_t t = 0; t < 3; t++) {
		u32(b, t * 1000);
		u32(b, 0);
		for (int k = 0; k < 7; k++)
			f32(b, (float)(t + k) * 0.25f);
	}
	return b;
}

static int save(const char *dir, const char *sub, const char *name, GByteArray *b)
{
	char *d = g_build_filename(dir, sub, NULL), *path = g_build_filename(d, name, NULL);
	int ok = g_mkdir_with_parents(d, 0755) == 0
		 && g_file_set_contents(path, (const char *)b->data, b->len, NULL);

	if (!ok)
		fprintf(stderr, "mkseeds: cannot write %s\n", path);
	g_free(d);
	g_free(path);
	g_byte_array_unref(b);
	return ok ? 0 : 1;
}

static int db_of_jsonl(const char *in, const char *out)
{
	struct format_error err = { 0 };
	GByteArray *db = g_byte_array_new();
	char *text = NULL;
	gsize len;
	int rc = 1;

	if (!g_file_get_contents(in, &text, &len, NULL))
		fprintf(stderr, "mkseeds: cannot read %s\n", in);
	else if (jsonl_to_db(text, len, db, &err) < 0)
		fprintf(stderr, "mkseeds: %s: %s\n", in, err.msg);
	else if (!g_file_set_contents(out, (const char *)db->data, db->len, NULL))
		fprintf(stderr, "mkseeds: cannot write %s\n", out);
	else
		rc = 0;
	g_free(text);
	g_byte_array_unref(db);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--db") == 0)
		return db_of_jsonl(argv[2], argv[3]);
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds DIR | mkseeds --db IN.jsonl OUT\n");
		return 2;
	}
	return save(argv[1], "mob", "script.mob", mob(1)) | save(argv[1], "mob", "old.mob", mob(0))
	       | save(argv[1], "models", "path.cam", cam());
}
