/* Builds the demo's binary game files from their text and PNG sources with
 * eifs' own writers (never copies of game files):
 *   mkasset mmp FORMAT LEVELS in.png out.mmp   FORMAT: dxt1 dxt3 pnt3 565 1555 4444 8888
 *   mkasset reg in.ini out.reg
 *   mkasset gen OUT KIND ARGS...                KIND: lnk fig bon anm mp sec (demo/models.c)
 *   mkasset synth DIR COUNT SEED                COUNT textures of mixed formats and sizes (bench/) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glib.h>

#include "format_error.h"
#include "ini.h"
#include "models_gen.h"
#include "mmp.h"
#include "pngio.h"

static int fail(const char *what, const struct format_error *err)
{
	fprintf(stderr, "mkasset: %s: offset %llu: %s\n", what, (unsigned long long)err->offset, err->msg);
	return 1;
}

static int write_file(const char *path, const GByteArray *data)
{
	GError *error = NULL;

	if (!g_file_set_contents(path, (const char *)data->data, data->len, &error)) {
		fprintf(stderr, "mkasset: %s\n", error->message);
		g_error_free(error);
		return 1;
	}
	return 0;
}

static int parse_format(const char *name, enum mmp_format *f)
{
	static const struct { const char *name; enum mmp_format f; } formats[] = {
		{ "dxt1", MMP_DXT1 }, { "dxt3", MMP_DXT3 }, { "pnt3", MMP_PNT3 }, { "565", MMP_R5G6B5 },
		{ "1555", MMP_A1R5G5B5 }, { "4444", MMP_A4R4G4B4 }, { "8888", MMP_A8R8G8B8 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(formats); i++)
		if (strcmp(name, formats[i].name) == 0) {
			*f = formats[i].f;
			return 0;
		}
	return -1;
}

static int make_mmp(const char *format, const char *levels, const char *in, const char *out)
{
	struct format_error err = { 0 };
	GByteArray *mmp = g_byte_array_new();
	unsigned char *rgba = NULL;
	enum mmp_format f;
	uint32_t w, h;
	gchar *png;
	gsize len;
	int rc = 1;

	if (parse_format(format, &f) < 0 || !g_file_get_contents(in, &png, &len, NULL)) {
		fprintf(stderr, "mkasset: bad format '%s' or unreadable %s\n", format, in);
		return 1;
	}
	if (png_read_rgba((const unsigned char *)png, len, &rgba, &w, &h, &err) < 0)
		rc = fail(in, &err);
	else if (mmp_encode(rgba, w, h, f, (unsigned)atoi(levels), mmp, &err) < 0)
		rc = fail(out, &err);
	else
		rc = write_file(out, mmp);
	g_free(png);
	g_free(rgba);
	g_byte_array_unref(mmp);
	return rc;
}

static int make_reg(const char *in, const char *out)
{
	struct format_error err = { 0 };
	GByteArray *reg = g_byte_array_new();
	gchar *text;
	gsize len;
	int rc;

	if (!g_file_get_contents(in, &text, &len, NULL)) {
		fprintf(stderr, "mkasset: cannot read %s\n", in);
		return 1;
	}
	rc = ini_to_reg_bytes(text, len, reg, &err) < 0 ? fail(in, &err) : write_file(out, reg);
	g_free(text);
	g_byte_array_unref(reg);
	return rc;
}

static int make_model(const char *out, const char *kind, int argc, char **argv)
{
	GByteArray *o = g_byte_array_new();
	int rc = 0;

	if (strcmp(kind, "lnk") == 0 && argc >= 1)
		gen_lnk(o, argc, argv);
	else if (strcmp(kind, "fig") == 0 && argc == 1)
		gen_fig(o, (float)g_ascii_strtod(argv[0], NULL));
	else if (strcmp(kind, "bon") == 0 && argc == 3)
		gen_bon(o, (float)g_ascii_strtod(argv[0], NULL), (float)g_ascii_strtod(argv[1], NULL),
			(float)g_ascii_strtod(argv[2], NULL));
	else if (strcmp(kind, "anm") == 0 && argc == 1)
		gen_anm(o, atoi(argv[0]));
	else if (strcmp(kind, "mp") == 0 && argc == 0)
		gen_mp(o);
	else if (strcmp(kind, "sec") == 0 && argc == 2)
		gen_sec(o, atoi(argv[0]), atoi(argv[1]));
	else
		rc = -1;
	if (rc < 0)
		fprintf(stderr, "mkasset: gen: bad kind or arguments: %s\n", kind);
	else
		rc = write_file(out, o);
	g_byte_array_unref(o);
	return rc ? 1 : 0;
}

/* A texture that is neither flat nor noise, so every format has work to do. */
static unsigned char *synth_pixels(uint32_t w, uint32_t h, GRand *rand)
{
	unsigned char *rgba = g_malloc((gsize)w * h * 4);
	int fx = g_rand_int_range(rand, 1, 9), fy = g_rand_int_range(rand, 1, 9);

	for (uint32_t y = 0; y < h; y++)
		for (uint32_t x = 0; x < w; x++) {
			unsigned char *p = rgba + ((gsize)y * w + x) * 4;

			p[0] = (unsigned char)(x * fx + y);
			p[1] = (unsigned char)(y * fy ^ x);
			p[2] = (unsigned char)((x + y) * 3);
			p[3] = (unsigned char)((x / 8 + y / 8) % 3 ? 255 : g_rand_int_range(rand, 0, 256));
		}
	return rgba;
}

static int make_synth(const char *dir, int count, guint32 seed)
{
	static const enum mmp_format formats[] = { MMP_DXT1, MMP_DXT1, MMP_DXT3, MMP_PNT3, MMP_R5G6B5, MMP_A4R4G4B4 };
	GRand *rand = g_rand_new_with_seed(seed);
	int rc = 0;

	for (int i = 0; i < count && rc == 0; i++) {
		uint32_t w = 64u << g_rand_int_range(rand, 0, 3), h = 64u << g_rand_int_range(rand, 0, 3);
		enum mmp_format f = formats[g_rand_int_range(rand, 0, G_N_ELEMENTS(formats))];
		unsigned char *rgba = synth_pixels(w, h, rand);
		GByteArray *mmp = g_byte_array_new();
		struct format_error err = { 0 };
		char *path = g_strdup_printf("%s/tex%05d.mmp", dir, i);

		if (mmp_encode(rgba, w, h, f, f == MMP_PNT3 ? 1 : 0, mmp, &err) < 0)
			rc = fail(path, &err);
		else
			rc = write_file(path, mmp);
		g_free(path);
		g_free(rgba);
		g_byte_array_unref(mmp);
	}
	g_rand_free(rand);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc == 5 && strcmp(argv[1], "synth") == 0)
		return make_synth(argv[2], atoi(argv[3]), (guint32)strtoul(argv[4], NULL, 10));
	if (argc >= 4 && strcmp(argv[1], "gen") == 0)
		return make_model(argv[2], argv[3], argc - 4, argv + 4);
	if (argc == 6 && strcmp(argv[1], "mmp") == 0)
		return make_mmp(argv[2], argv[3], argv[4], argv[5]);
	if (argc == 4 && strcmp(argv[1], "reg") == 0)
		return make_reg(argv[2], argv[3]);
	fprintf(stderr, "usage: mkasset mmp FORMAT LEVELS in.png out.mmp | mkasset reg in.ini out.reg\n");
	return 64;
}
