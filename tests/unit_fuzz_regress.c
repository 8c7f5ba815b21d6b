/* Every input the fuzzers found a crash, hang, leak or OOM with
 * (tests/fuzz-regressions/<target>/) goes again through the target that
 * found it: the same fuzz_<target>_one() as fuzz/fuzz_<target>.c, which
 * abort()s when a property fails.  Then, per bug, the entry point's
 * documented refusal is asserted on its input. */
#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "ini.h"
#include "pngio.h"
#include "reg.h"

struct target {
	const char *name;
	void (*one)(const uint8_t *data, size_t size);
	int kept; /* the repository holds inputs for it */
};

static const struct target targets[] = {
	{ "res", fuzz_res_one, 0 }, { "reg", fuzz_reg_one, 1 }, { "ini", fuzz_ini_one, 1 },
	{ "mmp", fuzz_mmp_one, 0 }, { "png", fuzz_png_one, 1 }, { "db", fuzz_db_one, 0 },
	{ "jsonl", fuzz_jsonl_one, 0 }, { "adb", fuzz_adb_one, 0 }, { "mob", fuzz_mob_one, 0 },
	{ "models", fuzz_models_one, 0 }, { "mpr", fuzz_mpr_one, 0 }, { "tree", fuzz_tree_one, 0 },
};

static char *input_path(const char *target, const char *name)
{
	return g_build_filename(FUZZ_REGRESS_DIR, target, name, NULL);
}

/* The bytes of one regression input, in a buffer of exactly their size so
 * that ASan sees a read past them. */
static GBytes *input(const char *target, const char *name)
{
	char *path = input_path(target, name), *data, *exact;
	gsize len;

	cr_assert(g_file_get_contents(path, &data, &len, NULL), "cannot read %s", path);
	exact = g_malloc(len ? len : 1);
	memcpy(exact, data, len);
	g_free(data);
	g_free(path);
	return g_bytes_new_take(exact, len);
}

static unsigned run_dir(const struct target *t)
{
	char *dir = g_build_filename(FUZZ_REGRESS_DIR, t->name, NULL);
	GError *error = NULL;
	GDir *d = g_dir_open(dir, 0, &error);
	const char *name;
	unsigned n = 0;

	cr_assert_not_null(d, "%s", error ? error->message : dir);
	while ((name = g_dir_read_name(d))) {
		GBytes *b = input(t->name, name);
		gsize len;
		const uint8_t *p = g_bytes_get_data(b, &len);

		t->one(p, len);
		g_bytes_unref(b);
		n++;
	}
	g_dir_close(d);
	g_free(dir);
	return n;
}

static const struct target *target_named(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(targets); i++)
		if (strcmp(targets[i].name, name) == 0)
			return &targets[i];
	return NULL;
}

/* Every directory of tests/fuzz-regressions is a target's and replays at
 * least one input through it, and every target the repository holds
 * inputs for has its directory: a missing, empty or misnamed one, or one
 * that cannot be listed, fails rather than pass with 0 inputs. */
Test(fuzz_regress, every_input_through_its_target)
{
	GError *error = NULL;
	GDir *top = g_dir_open(FUZZ_REGRESS_DIR, 0, &error);
	unsigned seen[G_N_ELEMENTS(targets)] = { 0 }, n = 0;
	const char *name;

	cr_assert_not_null(top, "%s", error ? error->message : FUZZ_REGRESS_DIR);
	while ((name = g_dir_read_name(top))) {
		const struct target *t = target_named(name);

		cr_assert_not_null(t, "%s/%s: no fuzz target of that name, its inputs would never run",
				   FUZZ_REGRESS_DIR, name);
		seen[t - targets] = run_dir(t);
		cr_assert_gt(seen[t - targets], 0, "%s/%s: no input", FUZZ_REGRESS_DIR, name);
		n += seen[t - targets];
	}
	g_dir_close(top);
	for (size_t i = 0; i < G_N_ELEMENTS(targets); i++)
		cr_assert(!targets[i].kept || seen[i], "%s/%s: missing (the repository holds inputs for %s)",
			  FUZZ_REGRESS_DIR, targets[i].name, targets[i].name);
	cr_log_info("%u regression inputs", n);
}

/* ---- one test per bug: the documented refusal --------------------------- */

/* png_read_rgba allocated the 1 GiB a 69-byte header asked for before it
 * found there was no data for it. */
Test(fuzz_regress, png_header_larger_than_its_data)
{
	GBytes *b = input("png", "16384x16384-no-data.png");
	struct format_error err = { 0 };
	unsigned char *rgba = (unsigned char *)"not set";
	uint32_t w = 0, h = 0;
	gsize len;
	const unsigned char *p = g_bytes_get_data(b, &len);

	cr_assert_eq(png_read_rgba(p, len, &rgba, &w, &h, &err), -1);
	cr_assert_eq(err.code, EINVAL, "%d: %s", err.code, err.msg);
	cr_assert_eq(err.offset, 16);
	cr_assert(strstr(err.msg, "cannot come out of 12 bytes of IDAT data"), "%s", err.msg);
	cr_assert_null(rgba);
	g_bytes_unref(b);
}

/* reg_to_ini wrote an array's name once per value: text growing with the
 * name's length times the count (fuzz_reg: 146 KB of INI from 1.6 KB; a
 * 330 KB REG would have been 4 GiB).  The REG is valid; its INI view is
 * refused. */
Test(fuzz_regress, reg_array_name_repeated_per_value)
{
	GBytes *b = input("reg", "200-byte-name-300-values.reg");
	struct format_error err = { 0 };
	struct reg_file *f;
	GString *ini = g_string_new("kept");
	gsize len;
	const unsigned char *p = g_bytes_get_data(b, &len);

	cr_assert_eq(reg_parse(p, len, &f, &err), 0, "%s", err.msg);
	reg_free(f);
	cr_assert_eq(reg_bytes_to_ini(p, len, ini, &err), -1);
	cr_assert_eq(err.code, EFBIG, "%d: %s", err.code, err.msg);
	cr_assert_eq(err.offset, 0);
	cr_assert(strstr(err.msg, "[s] nnnn"), "%s", err.msg);
	cr_assert(strstr(err.msg, "300 values under a 200-byte name"), "%s", err.msg);
	cr_assert_str_eq(ini->str, "kept");
	g_string_free(ini, TRUE);
	g_bytes_unref(b);
}

/* A key line the INI parser refused (here: a value after the empty array
 * k[int]=) leaked the GString of its value: 152 bytes in 2 blocks per
 * refusal, which GLib's slice allocator hid from LeakSanitizer until
 * G_SLICE=always-malloc.  Refused a thousand times over, a leak is no
 * longer one LeakSanitizer could miss for a stale stack pointer. */
Test(fuzz_regress, refused_key_line_frees_its_value)
{
	GBytes *b = input("ini", "empty-array-then-a-value.ini");
	gsize len;
	const char *p = g_bytes_get_data(b, &len);

	for (int i = 0; i < 1000; i++) {
		struct format_error err = { 0 };
		GByteArray *reg = g_byte_array_new();

		cr_assert_eq(ini_to_reg_bytes(p, len, reg, &err), -1);
		cr_assert_eq(err.code, EINVAL, "%d: %s", err.code, err.msg);
		cr_assert_eq(err.offset, 3);
		cr_assert(strstr(err.msg, "\"k\" is also at line 2: an empty array"), "%s", err.msg);
		cr_assert_eq(reg->len, 0);
		g_byte_array_unref(reg);
	}
	g_bytes_unref(b);
}
