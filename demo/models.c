/* Small but valid model and map files for the demo, generated from a few
 * parameters (FORMATS 7 and 10): the demo ships no copies of game files. */
#include "models_gen.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static void u32(GByteArray *o, uint32_t v)
{
	guint8 b[4] = { (guint8)v, (guint8)(v >> 8), (guint8)(v >> 16), (guint8)(v >> 24) };

	g_byte_array_append(o, b, 4);
}

static void u16(GByteArray *o, uint16_t v)
{
	guint8 b[2] = { (guint8)v, (guint8)(v >> 8) };

	g_byte_array_append(o, b, 2);
}

static void f32(GByteArray *o, float v)
{
	uint32_t bits;

	memcpy(&bits, &v, 4);
	u32(o, bits);
}

static void name(GByteArray *o, const char *s)
{
	u32(o, (uint32_t)strlen(s) + 1); /* lengths count the NUL in game files */
	g_byte_array_append(o, (const guint8 *)s, (guint)strlen(s) + 1);
}

/* links: "child:parent" pairs, root first ("bd:"), depth first */
void gen_lnk(GByteArray *o, int n, char **links)
{
	u32(o, (uint32_t)n);
	for (int i = 0; i < n; i++) {
		char *colon = strchr(links[i], ':');
		char *child = g_strndup(links[i], colon ? (gsize)(colon - links[i]) : strlen(links[i]));
		const char *parent = colon ? colon + 1 : "";

		name(o, child);
		if (*parent)
			name(o, parent);
		else
			u32(o, 0);
		g_free(child);
	}
}

/* one offset per FIG8 variant */
void gen_bon(GByteArray *o, float x, float y, float z)
{
	for (int v = 0; v < 8; v++) {
		f32(o, x);
		f32(o, y);
		f32(o, z * (1.0f + 0.05f * (float)v));
	}
}

/* a square of side `size`, two triangles, eight complection variants */
void gen_fig(GByteArray *o, float size)
{
	static const float px[4] = { 0, 1, 1, 0 }, py[4] = { 0, 0, 1, 1 };
	static const uint16_t tri[6] = { 0, 1, 2, 0, 2, 3 };
	enum { N = 8 };

	g_byte_array_append(o, (const guint8 *)"FIG8", 4);
	u32(o, 1); u32(o, 1); u32(o, 4); u32(o, 6); u32(o, 4); u32(o, 0); u32(o, 0);
	u32(o, 18); u32(o, 1);
	for (int v = 0; v < N; v++) { f32(o, size / 2); f32(o, size / 2); f32(o, 0); }  /* centre */
	for (int v = 0; v < N; v++) { f32(o, 0); f32(o, 0); f32(o, 0); }                /* min */
	for (int v = 0; v < N; v++) { f32(o, size); f32(o, size); f32(o, 0); }          /* max */
	for (int v = 0; v < N; v++) f32(o, size * 0.7072f);                              /* radius */
	for (int axis = 0; axis < 3; axis++)
		for (int v = 0; v < N; v++)
			for (int p = 0; p < 4; p++)
				f32(o, axis == 2 ? 0 : (axis == 0 ? px[p] : py[p]) * size * (1.0f + 0.02f * (float)v));
	for (int c = 0; c < 4; c++)
		for (int p = 0; p < 4; p++)
			f32(o, c == 2 ? 1.0f : 0.0f); /* every normal +z */
	for (int p = 0; p < 4; p++) { f32(o, px[p]); f32(o, py[p]); }
	for (int i = 0; i < 6; i++) u16(o, tri[i]);
	for (int p = 0; p < 4; p++) { u16(o, (uint16_t)p); u16(o, 0); u16(o, (uint16_t)p); }
}

/* `frames` rotations about z, a small bounce, no morphs */
void gen_anm(GByteArray *o, int frames)
{
	u32(o, (uint32_t)frames);
	for (int f = 0; f < frames; f++) {
		float a = (float)f / (float)frames * 3.14159265f / 2;

		f32(o, cosf(a / 2)); f32(o, 0); f32(o, 0); f32(o, sinf(a / 2));
	}
	u32(o, (uint32_t)frames);
	for (int f = 0; f < frames; f++) { f32(o, 0); f32(o, 0); f32(o, 0.1f * (float)(f % 2)); }
	u32(o, 0);
	u32(o, 0);
}

/* map header: 2x2 sectors, one terrain and one water material, four tiles */
void gen_mp(GByteArray *o)
{
	u32(o, 0xCE4AF672u); f32(o, 40.0f);
	u32(o, 2); u32(o, 2); u32(o, 1); u32(o, 512); u32(o, 4); u32(o, 64);
	u16(o, 2); u32(o, 0);
	for (int m = 0; m < 2; m++) {
		u32(o, m ? 3 : 1);
		f32(o, m ? 0.2f : 0.45f); f32(o, m ? 0.3f : 0.35f); f32(o, m ? 0.8f : 0.2f); f32(o, m ? 0.6f : 1.0f);
		f32(o, 0); f32(o, m ? 1.0f : 0); f32(o, m ? 0.5f : 0);
		for (int r = 0; r < 3; r++) u32(o, 0);
	}
	u32(o, 0); u32(o, 1); u32(o, 6); u32(o, 7); /* grass, ground, water, road */
}

/* one sector: a gentle hill, no liquid */
void gen_sec(GByteArray *o, int sx, int sy)
{
	u32(o, 0xCF4BF774u);
	g_byte_array_append(o, (const guint8 *)"\0", 1);
	for (int y = 0; y < 33; y++)
		for (int x = 0; x < 33; x++) {
			double h = sin((x + 32 * sx) / 20.0) * cos((y + 32 * sy) / 25.0);
			guint8 d[2] = { 0, 0 };

			g_byte_array_append(o, d, 2);
			u16(o, (uint16_t)(32768 + 20000 * h));
			u32(o, (1000u << 22) | (1000u << 11) | 1000u); /* normal (0, 0, 1) */
		}
	for (int t = 0; t < 256; t++)
		u16(o, (uint16_t)((t % 4) | ((t / 4 % 4) << 14)));
}
