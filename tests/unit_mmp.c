/* MMP textures and the PNG writer (src/mmp.c, src/png.c).  Known answers
 * are built by hand from FORMATS.md section 3, PNG output is read back with
 * libpng's own decoder, and the sample archives must all convert. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <png.h>
#include <zlib.h>

#include "helpers.h"
#include "mmp.h"
#include "pngio.h"
#include "res.h"

/* ---- building MMP files by hand --------------------------------------- */

struct masks {
	uint32_t a[3], r[3], g[3], b[3];   /* mask, shift, bits */
};

/* The masks of the game's files (FORMATS 3.2), typed in from the table. */
static const struct masks M_DXT1 = {
	{ 0x8000, 15, 1 }, { 0x7C00, 10, 5 }, { 0x03E0, 5, 5 }, { 0x001F, 0, 5 } };
static const struct masks M_DXT3 = {
	{ 0xF000, 12, 4 }, { 0x0F00, 8, 4 }, { 0x00F0, 4, 4 }, { 0x000F, 0, 4 } };
static const struct masks M_NONE = { { 0 }, { 0 }, { 0 }, { 0 } };
static const struct masks M_565 = {
	{ 0, 0, 0 }, { 0xF800, 11, 5 }, { 0x07E0, 5, 6 }, { 0x001F, 0, 5 } };
static const struct masks M_1555 = {
	{ 0x8000, 15, 1 }, { 0x7C00, 10, 5 }, { 0x03E0, 5, 5 }, { 0x001F, 0, 5 } };
static const struct masks M_4444 = {
	{ 0xF000, 12, 4 }, { 0x0F00, 8, 4 }, { 0x00F0, 4, 4 }, { 0x000F, 0, 4 } };
static const struct masks M_8888 = {
	{ 0xFF000000u, 24, 8 }, { 0xFF0000, 16, 8 }, { 0xFF00, 8, 8 }, { 0xFF, 0, 8 } };

static void put_channel(GByteArray *b, size_t at, const uint32_t c[3])
{
	h_put_u32(b, at, c[0]);
	h_put_u32(b, at + 4, c[1]);
	h_put_u32(b, at + 8, c[2]);
}

/* A header and then n data bytes; count is +12 (levels, or PNT3 payload). */
static GByteArray *mmp_file(uint32_t format, uint32_t bits, const struct masks *m, uint32_t w,
			    uint32_t h, uint32_t count, const void *data, size_t n)
{
	GByteArray *b = g_byte_array_new();

	h_put_u32(b, 0, 0x00504D4D);
	h_put_u32(b, 4, w);
	h_put_u32(b, 8, h);
	h_put_u32(b, 12, count);
	h_put_u32(b, 16, format);
	h_put_u32(b, 20, bits);
	put_channel(b, 24, m->a);
	put_channel(b, 36, m->r);
	put_channel(b, 48, m->g);
	put_channel(b, 60, m->b);
	h_put_u32(b, 72, 0);
	if (n)
		h_put(b, 76, data, n);
	return b;
}

static GByteArray *pnt3_file(uint32_t w, uint32_t h, const uint32_t *words, size_t nwords)
{
	GByteArray *b = mmp_file(MMP_PNT3, 32, &M_NONE, w, h, (uint32_t)(nwords * 4), NULL, 0);

	for (size_t i = 0; i < nwords; i++)
		h_put_u32(b, 76 + i * 4, words[i]);
	return b;
}

/* Decodes a copy of exactly len bytes, so that a read past them is caught
 * by ASan or valgrind. */
static int decode_exact(const void *buf, size_t len, unsigned level, unsigned char **rgba,
			uint32_t *w, uint32_t *h, struct format_error *err)
{
	unsigned char *copy = g_memdup2(buf, len);
	int rc = mmp_decode(copy, len, level, rgba, w, h, err);

	g_free(copy);
	return rc;
}

static unsigned char *decode_ok(const GByteArray *b, unsigned level, uint32_t ew, uint32_t eh)
{
	struct format_error err = { 0 };
	unsigned char *rgba;
	uint32_t w, h;

	cr_assert_eq(decode_exact(b->data, b->len, level, &rgba, &w, &h, &err), 0,
		     "decode failed at %llu: %s", (unsigned long long)err.offset, err.msg);
	cr_assert_eq(w, ew, "width %u, expected %u", w, ew);
	cr_assert_eq(h, eh, "height %u, expected %u", h, eh);
	return rgba;
}

static void expect_refused(const void *buf, size_t len, unsigned level, uint64_t offset,
			   const char *needle)
{
	struct format_error err = { 0 };
	unsigned char *rgba = (unsigned char *)1;
	uint32_t w, h;

	cr_assert_eq(decode_exact(buf, len, level, &rgba, &w, &h, &err), -1,
		     "a %zu-byte file was accepted", len);
	cr_assert_null(rgba);
	cr_assert_eq(err.code, EINVAL, "code %d (%s)", err.code, err.msg);
	cr_assert_eq(err.offset, offset, "offset %llu, expected %llu (%s)",
		     (unsigned long long)err.offset, (unsigned long long)offset, err.msg);
	cr_assert(strstr(err.msg, needle), "message \"%s\" lacks \"%s\"", err.msg, needle);
}

static void expect_pixels(const unsigned char *got, const unsigned char (*want)[4], size_t n)
{
	for (size_t i = 0; i < n; i++)
		cr_assert(memcmp(got + i * 4, want[i], 4) == 0,
			  "pixel %zu is %u,%u,%u,%u, expected %u,%u,%u,%u", i, got[i * 4],
			  got[i * 4 + 1], got[i * 4 + 2], got[i * 4 + 3], want[i][0], want[i][1],
			  want[i][2], want[i][3]);
}


/* ---- DXT known answers (FORMATS 3.5) ------------------------------------ */

/* Two colours in which every expansion rule shows (bit replication):
 * A = 0x8408: r 16 -> 132, g 32 -> 130, b 8 -> 66
 * B = 0x10BE: r 2 -> 16, g 5 -> 20, b 30 -> 247 */
#define A_LE 0x08, 0x84
#define B_LE 0xBE, 0x10
/* 2-bit indices from the low bits, rows of 4 pixels:
 * 0 1 2 3 / 3 2 1 0 / 0 0 1 1 / 2 2 3 3 */
#define INDICES 0xE4, 0x1B, 0x50, 0xFA

Test(mmp_dxt, dxt1_four_colour_block)
{
	/* c0 = A > c1 = B: c2 = (2A + B) / 3 = (280/3, 280/3, 379/3) = (93, 93, 126),
	 * c3 = (A + 2B) / 3 = (164/3, 170/3, 560/3) = (54, 56, 186), truncated */
	static const unsigned char blk[8] = { A_LE, B_LE, INDICES };
	static const unsigned char want[16][4] = {
		{ 132, 130, 66, 255 }, { 16, 20, 247, 255 }, { 93, 93, 126, 255 }, { 54, 56, 186, 255 },
		{ 54, 56, 186, 255 }, { 93, 93, 126, 255 }, { 16, 20, 247, 255 }, { 132, 130, 66, 255 },
		{ 132, 130, 66, 255 }, { 132, 130, 66, 255 }, { 16, 20, 247, 255 }, { 16, 20, 247, 255 },
		{ 93, 93, 126, 255 }, { 93, 93, 126, 255 }, { 54, 56, 186, 255 }, { 54, 56, 186, 255 },
	};
	GByteArray *b = mmp_file(MMP_DXT1, 4, &M_DXT1, 4, 4, 1, blk, sizeof blk);
	unsigned char *rgba = decode_ok(b, 0, 4, 4);

	expect_pixels(rgba, want, 16);
	g_free(rgba);
	g_byte_array_unref(b);
}

Test(mmp_dxt, dxt1_three_colour_transparent_block)
{
	/* c0 = B <= c1 = A: c2 = (B + A) / 2 = (148/2, 150/2, 313/2) = (74, 75, 156),
	 * c3 = transparent black */
	static const unsigned char blk[8] = { B_LE, A_LE, INDICES };
	static const unsigned char want[16][4] = {
		{ 16, 20, 247, 255 }, { 132, 130, 66, 255 }, { 74, 75, 156, 255 }, { 0, 0, 0, 0 },
		{ 0, 0, 0, 0 }, { 74, 75, 156, 255 }, { 132, 130, 66, 255 }, { 16, 20, 247, 255 },
		{ 16, 20, 247, 255 }, { 16, 20, 247, 255 }, { 132, 130, 66, 255 }, { 132, 130, 66, 255 },
		{ 74, 75, 156, 255 }, { 74, 75, 156, 255 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 },
	};
	GByteArray *b = mmp_file(MMP_DXT1, 4, &M_DXT1, 4, 4, 1, blk, sizeof blk);
	unsigned char *rgba = decode_ok(b, 0, 4, 4);

	expect_pixels(rgba, want, 16);
	g_free(rgba);
	g_byte_array_unref(b);
}

Test(mmp_dxt, dxt1_equal_endpoints_are_three_colour)
{
	static const unsigned char blk[8] = { A_LE, A_LE, 0xFF, 0xFF, 0xFF, 0x00 };
	GByteArray *b = mmp_file(MMP_DXT1, 4, &M_DXT1, 4, 4, 1, blk, sizeof blk);
	unsigned char *rgba = decode_ok(b, 0, 4, 4);
	static const unsigned char clear[4] = { 0, 0, 0, 0 }, a[4] = { 132, 130, 66, 255 };

	for (int k = 0; k < 12; k++)
		cr_assert(memcmp(rgba + k * 4, clear, 4) == 0, "pixel %d: index 3 is transparent", k);
	for (int k = 12; k < 16; k++)
		cr_assert(memcmp(rgba + k * 4, a, 4) == 0, "pixel %d: index 0 is c0", k);
	g_free(rgba);
	g_byte_array_unref(b);
}

Test(mmp_dxt, dxt3_explicit_alpha_and_always_four_colours)
{
	/* alpha nibble of pixel k is k (pixel 0 in the low nibble of byte 0),
	 * times 17; c0 = B <= c1 = A still gives 4 colours in DXT3:
	 * c2 = (2B + A) / 3 = (54, 56, 186), c3 = (B + 2A) / 3 = (93, 93, 126) */
	static const unsigned char blk[16] = { 0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE,
					       B_LE, A_LE, INDICES };
	static const unsigned char want[16][4] = {
		{ 16, 20, 247, 0 }, { 132, 130, 66, 17 }, { 54, 56, 186, 34 }, { 93, 93, 126, 51 },
		{ 93, 93, 126, 68 }, { 54, 56, 186, 85 }, { 132, 130, 66, 102 }, { 16, 20, 247, 119 },
		{ 16, 20, 247, 136 }, { 16, 20, 247, 153 }, { 132, 130, 66, 170 }, { 132, 130, 66, 187 },
		{ 54, 56, 186, 204 }, { 54, 56, 186, 221 }, { 93, 93, 126, 238 }, { 93, 93, 126, 255 },
	};
	GByteArray *b = mmp_file(MMP_DXT3, 8, &M_DXT3, 4, 4, 1, blk, sizeof blk);
	unsigned char *rgba = decode_ok(b, 0, 4, 4);

	expect_pixels(rgba, want, 16);
	g_free(rgba);
	g_byte_array_unref(b);
}

/* A DXT1 block of one opaque colour: c0 = c1, all indices 0. */
static void flat_block(GByteArray *b, size_t at, uint16_t c)
{
	h_put_u16(b, at, c);
	h_put_u16(b, at + 2, c);
	h_put_u32(b, at + 4, 0);
}

static const unsigned char RED[4] = { 255, 0, 0, 255 }, GREEN[4] = { 0, 255, 0, 255 },
	BLUE[4] = { 0, 0, 255, 255 }, WHITE[4] = { 255, 255, 255, 255 };

Test(mmp_dxt, partial_blocks)
{
	/* 6x5: 2x2 blocks, the right and bottom ones partly outside */
	const unsigned char *colour[4] = { RED, GREEN, BLUE, WHITE };
	GByteArray *b = mmp_file(MMP_DXT1, 4, &M_DXT1, 6, 5, 1, NULL, 0);
	unsigned char *rgba;

	flat_block(b, 76, 0xF800);
	flat_block(b, 84, 0x07E0);
	flat_block(b, 92, 0x001F);
	flat_block(b, 100, 0xFFFF);
	rgba = decode_ok(b, 0, 6, 5);
	for (int y = 0; y < 5; y++)
		for (int x = 0; x < 6; x++)
			cr_assert(memcmp(rgba + (y * 6 + x) * 4, colour[y / 4 * 2 + x / 4], 4) == 0,
				  "pixel %d,%d", x, y);
	g_free(rgba);
	expect_refused(b->data, b->len - 1, 0, 76, "pass the end");
	g_byte_array_unref(b);
}

/* ---- mip levels (FORMATS 3.3) -------------------------------------------- */

Test(mmp_levels, dxt1_offsets_and_sizes)
{
	/* 8x4, 4 levels: 8x4 (2 blocks), 4x2, 2x1, 1x1 (one block each) */
	static const uint64_t off[4] = { 76, 92, 100, 108 }, size[4] = { 16, 8, 8, 8 };
	static const uint32_t lw[4] = { 8, 4, 2, 1 }, lh[4] = { 4, 2, 1, 1 };
	const unsigned char *colour[4] = { RED, GREEN, BLUE, WHITE };
	GByteArray *b = mmp_file(MMP_DXT1, 4, &M_DXT1, 8, 4, 4, NULL, 0);
	struct format_error err;
	struct mmp_info info;
	uint64_t o, s;
	uint32_t w, h;

	flat_block(b, 76, 0xF800);
	flat_block(b, 84, 0xF800);
	flat_block(b, 92, 0x07E0);
	flat_block(b, 100, 0x001F);
	flat_block(b, 108, 0xFFFF);
	cr_assert_eq(b->len, 116);
	cr_assert_eq(mmp_read_header(b->data, 76, &info, &err), 0, "%s", err.msg);
	cr_assert_eq(info.levels, 4);
	for (unsigned l = 0; l < 4; l++) {
		unsigned char *rgba;

		cr_assert_eq(mmp_level_size(&info, l, &w, &h), 0);
		cr_assert(w == lw[l] && h == lh[l], "level %u is %ux%u", l, w, h);
		cr_assert_eq(mmp_level_span(&info, l, &o, &s), 0);
		cr_assert(o == off[l] && s == size[l], "level %u at %llu, %llu bytes", l,
			  (unsigned long long)o, (unsigned long long)s);
		rgba = decode_ok(b, l, lw[l], lh[l]);
		for (uint32_t i = 0; i < lw[l] * lh[l]; i++)
			cr_assert(memcmp(rgba + i * 4, colour[l], 4) == 0, "level %u pixel %u", l, i);
		g_free(rgba);
	}
	cr_assert_eq(mmp_level_size(&info, 4, &w, &h), -1);
	cr_assert_eq(mmp_level_span(&info, 4, &o, &s), -1);
	expect_refused(b->data, b->len, 4, 12, "no mip level 4");
	/* the last level cut short: the error points at that level */
	expect_refused(b->data, b->len - 1, 3, 108, "pass the end");
	g_byte_array_unref(b);
}

Test(mmp_levels, uncompressed_offsets_odd_sizes)
{
	/* R5G6B5 3x5, 3 levels: 3x5 (30 bytes), 1x2 (4), 1x1 (2) */
	GByteArray *b = mmp_file(MMP_R5G6B5, 16, &M_565, 3, 5, 3, NULL, 0);
	struct format_error err;
	struct mmp_info info;
	uint64_t o, s;
	unsigned char *rgba;

	h_put_u16(b, 110, 0xFFFF);
	cr_assert_eq(b->len, 112);
	cr_assert_eq(mmp_read_header(b->data, b->len, &info, &err), 0, "%s", err.msg);
	cr_assert(mmp_level_span(&info, 1, &o, &s) == 0 && o == 106 && s == 4);
	cr_assert(mmp_level_span(&info, 2, &o, &s) == 0 && o == 110 && s == 2);
	rgba = decode_ok(b, 2, 1, 1);
	cr_assert(memcmp(rgba, WHITE, 4) == 0);
	g_free(rgba);
	rgba = decode_ok(b, 0, 3, 5);
	cr_assert(rgba[0] == 0 && rgba[3] == 255, "zero pixel is opaque black");
	g_free(rgba);
	g_byte_array_unref(b);
}

Test(mmp_levels, dxt3_one_block_minimum)
{
	GByteArray *b = mmp_file(MMP_DXT3, 8, &M_DXT3, 64, 64, 7, NULL, 0);
	struct mmp_info info;
	uint64_t o, s;

	cr_assert_eq(mmp_read_header(b->data, b->len, &info, NULL), 0);
	cr_assert(mmp_level_span(&info, 0, &o, &s) == 0 && o == 76 && s == 4096);
	/* 64 + 32 + 16 + 8 + 4 levels before the 2x2 one: 4096+1024+256+64+16 */
	cr_assert(mmp_level_span(&info, 5, &o, &s) == 0 && o == 76 + 5456 && s == 16);
	cr_assert(mmp_level_span(&info, 6, &o, &s) == 0 && o == 76 + 5472 && s == 16);
	g_byte_array_unref(b);
}

/* ---- uncompressed formats (FORMATS 3.2), rounding to nearest ------------- */

Test(mmp_pixels, r5g6b5)
{
	/* 0x8401: r 16/31 -> 131.6 -> 132, g 32/63 -> 129.5 -> 130, b 1/31 -> 8.2 -> 8 */
	static const unsigned char px[6] = { 0x01, 0x84, 0xFF, 0xFF, 0x00, 0x00 };
	static const unsigned char want[3][4] = {
		{ 132, 130, 8, 255 }, { 255, 255, 255, 255 }, { 0, 0, 0, 255 } };
	GByteArray *b = mmp_file(MMP_R5G6B5, 16, &M_565, 3, 1, 1, px, sizeof px);
	unsigned char *rgba = decode_ok(b, 0, 3, 1);

	expect_pixels(rgba, want, 3);
	g_free(rgba);
	g_byte_array_unref(b);
}

Test(mmp_pixels, a1r5g5b5)
{
	/* 0xFC0F: a 1, r 31, g 0, b 15/31 -> 123.4 -> 123; 0x03E0: a 0, g 31 */
	static const unsigned char px[4] = { 0x0F, 0xFC, 0xE0, 0x03 };
	static const unsigned char want[2][4] = { { 255, 0, 123, 255 }, { 0, 255, 0, 0 } };
	GByteArray *b = mmp_file(MMP_A1R5G5B5, 16, &M_1555, 1, 2, 1, px, sizeof px);
	unsigned char *rgba = decode_ok(b, 0, 1, 2);

	expect_pixels(rgba, want, 2);
	g_free(rgba);
	g_byte_array_unref(b);
}

Test(mmp_pixels, a4r4g4b4)
{
	/* 0x8F17: a 8, r 15, g 1, b 7, each times 17 */
	static const unsigned char px[2] = { 0x17, 0x8F };
	static const unsigned char want[1][4] = { { 255, 17, 119, 136 } };
	GByteArray *b = mmp_file(MMP_A4R4G4B4, 16, &M_4444, 1, 1, 1, px, sizeof px);
	unsigned char *rgba = decode_ok(b, 0, 1, 1);

	expect_pixels(rgba, want, 1);
	g_free(rgba);
	g_byte_array_unref(b);
}

Test(mmp_pixels, a8r8g8b8)
{
	/* 0x80FF4010 stored little-endian */
	static const unsigned char px[4] = { 0x10, 0x40, 0xFF, 0x80 };
	static const unsigned char want[1][4] = { { 0xFF, 0x40, 0x10, 0x80 } };
	static const unsigned char swapped[1][4] = { { 0x10, 0x40, 0xFF, 0x80 } };
	struct masks m = M_8888;
	GByteArray *b = mmp_file(MMP_A8R8G8B8, 32, &M_8888, 1, 1, 1, px, sizeof px);
	GByteArray *zero = mmp_file(MMP_A8R8G8B8, 32, &M_NONE, 1, 1, 1, px, sizeof px);
	GByteArray *sw;
	unsigned char *rgba;

	rgba = decode_ok(b, 0, 1, 1);
	expect_pixels(rgba, want, 1);
	g_free(rgba);
	/* all masks 0 (aspadm's dds2mmp): the format's usual masks */
	rgba = decode_ok(zero, 0, 1, 1);
	expect_pixels(rgba, want, 1);
	g_free(rgba);
	/* the header's masks rule: red and blue swapped */
	memcpy(m.r, (uint32_t[3]){ 0xFF, 0, 8 }, sizeof m.r);
	memcpy(m.b, (uint32_t[3]){ 0xFF0000, 16, 8 }, sizeof m.b);
	sw = mmp_file(MMP_A8R8G8B8, 32, &m, 1, 1, 1, px, sizeof px);
	rgba = decode_ok(sw, 0, 1, 1);
	expect_pixels(rgba, swapped, 1);
	g_free(rgba);
	g_byte_array_unref(b);
	g_byte_array_unref(zero);
	g_byte_array_unref(sw);
}

Test(mmp_pixels, no_alpha_mask_is_opaque)
{
	/* X8R8G8B8-style header: alpha mask 0 */
	static const unsigned char px[4] = { 1, 2, 3, 0 };
	static const unsigned char want[1][4] = { { 3, 2, 1, 255 } };
	struct masks m = M_8888;
	GByteArray *b;
	unsigned char *rgba;

	memset(m.a, 0, sizeof m.a);
	b = mmp_file(MMP_A8R8G8B8, 32, &m, 1, 1, 1, px, sizeof px);
	rgba = decode_ok(b, 0, 1, 1);
	expect_pixels(rgba, want, 1);
	g_free(rgba);
	g_byte_array_unref(b);
}

Test(mmp_pixels, undecodable_masks)
{
	struct masks m = M_565;
	GByteArray *b;

	m.g[1] = 6;   /* 0x07E0 >> 6 drops bit 5 */
	b = mmp_file(MMP_R5G6B5, 16, &m, 1, 1, 1, "\0\0", 2);
	expect_refused(b->data, b->len, 0, 52, "shift 6 drops bits");
	g_byte_array_unref(b);
	m = M_565;
	m.r[0] = 0x1F800;   /* outside a 16-bit pixel */
	b = mmp_file(MMP_R5G6B5, 16, &m, 1, 1, 1, "\0\0", 2);
	expect_refused(b->data, b->len, 0, 36, "outside a 16-bit pixel");
	g_byte_array_unref(b);
}

/* ---- PNT3 (FORMATS 3.4) ---------------------------------------------------- */

Test(mmp_pnt3, runs_and_literals_aligned_rule)
{
	/* 4x2 = 32 output bytes from 5 words (20 < 32: compressed):
	 *  0x10 at output 0 (aligned): a run of 16 zero bytes, pixels 0..3
	 *  0x101 at 16 (aligned, not a multiple of 16): a literal, B=1 G=1 R=0 A=0;
	 *        the CE rule (1..1000000) would take it for a run (the sw_06 case)
	 *  0x10 at 20 (not aligned): a literal, B=16
	 *  0x80112233: B=33 G=22 R=11 A=80
	 *  0 at 28: a literal transparent black pixel, never a run */
	static const uint32_t words[5] = { 0x10, 0x101, 0x10, 0x80112233, 0 };
	static const unsigned char want[8][4] = {
		{ 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 },
		{ 0, 1, 1, 0 }, { 0, 0, 16, 0 }, { 0x11, 0x22, 0x33, 0x80 }, { 0, 0, 0, 0 },
	};
	GByteArray *b = pnt3_file(4, 2, words, 5);
	unsigned char *rgba = decode_ok(b, 0, 4, 2);

	expect_pixels(rgba, want, 8);
	g_free(rgba);
	g_byte_array_unref(b);
}

Test(mmp_pnt3, zero_word_at_aligned_output_is_a_pixel)
{
	static const uint32_t words[3] = { 0, 0xFF0000FF, 0x20 };
	static const unsigned char want[8][4] = {
		{ 0, 0, 0, 0 }, { 0, 0, 255, 255 }, { 0, 0, 32, 0 }, { 0, 0, 0, 0 },
		{ 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 },
	};
	/* 0 (pixel), pixel, 0x20 at output 8 (not aligned): a pixel, then short */
	GByteArray *b = pnt3_file(3, 2, words, 3);

	expect_refused(b->data, b->len, 0, 76 + 12, "decodes to 12 bytes, the image has 24");
	g_byte_array_unref(b);
	/* 4x2: one more pixel, then a 16-byte run at output 16 (aligned) */
	b = pnt3_file(4, 2, (const uint32_t[5]){ 0, 0xFF0000FF, 0x20, 0, 0x10 }, 5);
	{
		unsigned char *rgba = decode_ok(b, 0, 4, 2);

		expect_pixels(rgba, want, 8);
		g_free(rgba);
	}
	g_byte_array_unref(b);
}

Test(mmp_pnt3, raw_payload)
{
	/* payload >= w*h*4: raw B,G,R,A even where a word looks like a run */
	static const uint32_t words[3] = { 0x10, 0x44332211, 0xDEADBEEF };
	static const unsigned char want[2][4] = { { 0, 0, 16, 0 }, { 0x33, 0x22, 0x11, 0x44 } };
	GByteArray *b = pnt3_file(2, 1, words, 2);
	unsigned char *rgba = decode_ok(b, 0, 2, 1);

	expect_pixels(rgba, want, 2);
	g_free(rgba);
	g_byte_array_unref(b);
	b = pnt3_file(2, 1, words, 3);   /* longer than needed: still raw */
	rgba = decode_ok(b, 0, 2, 1);
	expect_pixels(rgba, want, 2);
	g_free(rgba);
	g_byte_array_unref(b);
}

Test(mmp_pnt3, wrong_output_sizes)
{
	GByteArray *b;

	/* too few: 16 of 32 bytes */
	b = pnt3_file(4, 2, (const uint32_t[1]){ 0x10 }, 1);
	expect_refused(b->data, b->len, 0, 80, "decodes to 16 bytes, the image has 32");
	g_byte_array_unref(b);
	/* a run past the end */
	b = pnt3_file(4, 2, (const uint32_t[2]){ 0x10, 0x20 }, 2);
	expect_refused(b->data, b->len, 0, 80, "zero run of 32 bytes");
	g_byte_array_unref(b);
	/* a pixel past the end */
	b = pnt3_file(4, 2, (const uint32_t[2]){ 0x20, 0xFFFFFFFF }, 2);
	expect_refused(b->data, b->len, 0, 80, "pixel past");
	g_byte_array_unref(b);
	/* a crafted huge run is refused at once, not produced */
	b = pnt3_file(4, 4, (const uint32_t[2]){ 0xFFFFF0, 0 }, 2);
	expect_refused(b->data, b->len, 0, 76, "zero run of 16777200 bytes");
	g_byte_array_unref(b);
	/* nothing at all */
	b = pnt3_file(1, 1, NULL, 0);
	expect_refused(b->data, b->len, 0, 12, "payload of 0 bytes cannot make 4 bytes");
	g_byte_array_unref(b);
	/* 1 GiB from 8 bytes: refused before anything is allocated, as one word
	 * makes at most 2^24 - 16 bytes */
	b = pnt3_file(16384, 16384, (const uint32_t[2]){ 0xFFFFF0, 0xFFFFF0 }, 2);
	expect_refused(b->data, b->len, 0, 12, "cannot make 1073741824 bytes");
	g_byte_array_unref(b);
}

Test(mmp_pnt3, payload_outside_file)
{
	GByteArray *b = pnt3_file(4, 2, (const uint32_t[2]){ 0x20, 0 }, 2);

	h_put_u32(b, 12, 12);   /* claims 12 bytes, 8 are there */
	expect_refused(b->data, b->len, 0, 76, "pass the end");
	h_put_u32(b, 12, 6);    /* not whole words */
	expect_refused(b->data, b->len, 0, 12, "not whole words");
	g_byte_array_unref(b);
}

/* ---- header checks ---------------------------------------------------------- */

static void expect_header_refused(const GByteArray *b, size_t len, uint64_t offset,
				  const char *needle)
{
	struct format_error err = { 0 };
	struct mmp_info info;
	uint64_t size;

	cr_assert_eq(mmp_read_header(b->data, len, &info, &err), -1);
	cr_assert_eq(err.code, EINVAL);
	cr_assert_eq(err.offset, offset, "offset %llu, expected %llu (%s)",
		     (unsigned long long)err.offset, (unsigned long long)offset, err.msg);
	cr_assert(strstr(err.msg, needle), "message \"%s\" lacks \"%s\"", err.msg, needle);
	cr_assert_eq(mmp_png_size(b->data, len, 0, &size, NULL), -1);
	expect_refused(b->data, len, 0, offset, needle);
}

Test(mmp_header, refused)
{
	GByteArray *b = mmp_file(MMP_DXT1, 4, &M_DXT1, 8, 8, 1, NULL, 0);

	expect_header_refused(b, 75, 0, "truncated header");
	expect_header_refused(b, 0, 0, "truncated header");
	h_put_u32(b, 0, 0x00504D4E);
	expect_header_refused(b, 76, 0, "bad magic");
	h_put_u32(b, 0, 0x00504D4D);
	h_put_u32(b, 4, 0);
	expect_header_refused(b, 76, 4, "width 0");
	h_put_u32(b, 4, 16385);
	expect_header_refused(b, 76, 4, "width 16385");
	h_put_u32(b, 4, 8);
	h_put_u32(b, 8, 0xFFFFFFFF);
	expect_header_refused(b, 76, 8, "height 4294967295");
	h_put_u32(b, 8, 8);
	h_put_u32(b, 16, 0x35545844);   /* DXT5: not a game format */
	expect_header_refused(b, 76, 16, "unknown format");
	h_put_u32(b, 16, MMP_DXT1);
	h_put_u32(b, 12, 0);
	expect_header_refused(b, 76, 12, "0 mip levels");
	h_put_u32(b, 12, 5);   /* 8x8 has 4: 8, 4, 2, 1 */
	expect_header_refused(b, 76, 12, "5 mip levels");
	g_byte_array_unref(b);
}

Test(mmp_header, needs_only_the_header)
{
	/* 16384x16384 A8R8G8B8 with 9 levels: no data, yet the header reads and
	 * the PNG size is known; decoding refuses (no 1 GiB allocation) */
	GByteArray *b = mmp_file(MMP_A8R8G8B8, 32, &M_8888, 16384, 16384, 9, NULL, 0);
	struct format_error err;
	struct mmp_info info;
	uint64_t size, off, len;

	cr_assert_eq(mmp_read_header(b->data, b->len, &info, &err), 0, "%s", err.msg);
	cr_assert(info.width == 16384 && info.height == 16384 && info.levels == 9);
	cr_assert_eq(info.format, MMP_A8R8G8B8);
	cr_assert_eq(mmp_png_size(b->data, b->len, 0, &size, &err), 0);
	cr_assert_eq(size, png_stored_size(16384, 16384));
	cr_assert_eq(mmp_level_span(&info, 8, &off, &len), 0);
	cr_assert_eq(len, 64ull * 64 * 4);
	cr_assert_eq(off, 76 + 4ull * (16384ull * 16384 + 8192ull * 8192 + 4096 * 4096 +
				      2048 * 2048 + 1024 * 1024 + 512 * 512 + 256 * 256 +
				      128 * 128));
	cr_assert_eq(mmp_png_size(b->data, b->len, 8, &size, &err), 0);
	cr_assert_eq(size, png_stored_size(64, 64));
	cr_assert_eq(mmp_png_size(b->data, b->len, 9, &size, &err), -1);
	cr_assert_eq(err.offset, 12);
	expect_refused(b->data, b->len, 0, 76, "pass the end");
	g_byte_array_unref(b);
}

Test(mmp_header, info_fields)
{
	GByteArray *b = mmp_file(MMP_PNT3, 32, &M_NONE, 128, 64, 14848, NULL, 0);
	struct mmp_info info;

	cr_assert_eq(mmp_read_header(b->data, b->len, &info, NULL), 0);
	cr_assert(info.levels == 1 && info.payload == 14848 && info.bit_count == 32);
	cr_assert_str_eq(mmp_format_name(info.format), "PNT3");
	cr_assert_null(mmp_format_name(0x35545844));
	g_byte_array_unref(b);
}

/* ---- PNG writer ------------------------------------------------------------ */

/* Deterministic pixels (an LCG), all 256 values of every channel. */
static unsigned char *noise(uint32_t w, uint32_t h, uint32_t seed)
{
	size_t n = (size_t)w * h * 4;
	unsigned char *p = g_malloc(n);

	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (unsigned char)(seed >> 16);
	}
	return p;
}

struct mem_src {
	const unsigned char *p;
	size_t len, at;
};

static void mem_read(png_structp png, png_bytep out, size_t n)
{
	struct mem_src *s = png_get_io_ptr(png);

	if (n > s->len - s->at)
		png_error(png, "read past the end");
	memcpy(out, s->p + s->at, n);
	s->at += n;
}

static void quiet_error(png_structp png, png_const_charp msg)
{
	(void)msg;
	png_longjmp(png, 1);
}

static void quiet_warning(png_structp png, png_const_charp msg)
{
	(void)png;
	(void)msg;
}

/* libpng's low-level reader (it checks every chunk CRC and the zlib
 * stream), insisting on 8-bit RGBA without interlace and on nothing after
 * IEND.  NULL if libpng refuses the file. */
static unsigned char *libpng_decode(const unsigned char *data, size_t len, uint32_t *pw,
				    uint32_t *ph)
{
	struct mem_src src = { data, len, 0 };
	png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, quiet_error,
					       quiet_warning);
	png_infop info = png_create_info_struct(p), end = png_create_info_struct(p);
	unsigned char *volatile rgba = NULL;
	png_bytep *volatile rows = NULL;
	uint32_t w, h;

	if (setjmp(png_jmpbuf(p))) {
		png_destroy_read_struct(&p, &info, &end);
		g_free(rgba);
		g_free(rows);
		return NULL;
	}
	png_set_read_fn(p, &src, mem_read);
	png_read_info(p, info);
	w = png_get_image_width(p, info);
	h = png_get_image_height(p, info);
	if (png_get_bit_depth(p, info) != 8 || png_get_color_type(p, info) != PNG_COLOR_TYPE_RGBA ||
	    png_get_interlace_type(p, info) != PNG_INTERLACE_NONE)
		png_error(p, "not 8-bit RGBA");
	rgba = g_malloc((size_t)w * h * 4);
	rows = g_new(png_bytep, h);
	for (uint32_t y = 0; y < h; y++)
		rows[y] = rgba + (size_t)y * w * 4;
	png_read_image(p, rows);
	png_read_end(p, end);
	png_destroy_read_struct(&p, &info, &end);
	g_free(rows);
	if (src.at != len) {
		g_free(rgba);
		return NULL;
	}
	*pw = w;
	*ph = h;
	return rgba;
}

/* The size formula of pngio.h, written out once more. */
static uint64_t formula(uint64_t w, uint64_t h)
{
	uint64_t raw = h * (4 * w + 1);
	uint64_t z = 2 + 5 * ((raw + 65534) / 65535) + raw + 4;

	return 8 + 25 + z + 12 * ((z + 65535) / 65536) + 12;
}

static void write_and_compare(uint32_t w, uint32_t h)
{
	unsigned char *img = noise(w, h, w * 31 + h), *back;
	GByteArray *out = g_byte_array_new();
	uint32_t bw = 0, bh = 0;

	g_byte_array_append(out, (const guint8 *)"xyz", 3);   /* appends, keeps what is there */
	png_write_rgba(img, w, h, out);
	cr_assert_eq(memcmp(out->data, "xyz", 3), 0);
	cr_assert_eq(out->len - 3, png_stored_size(w, h), "%ux%u: wrote %u bytes, size says %llu",
		     w, h, out->len - 3, (unsigned long long)png_stored_size(w, h));
	back = libpng_decode(out->data + 3, out->len - 3, &bw, &bh);
	cr_assert_not_null(back, "libpng refused the %ux%u PNG", w, h);
	cr_assert(bw == w && bh == h, "libpng read %ux%u for %ux%u", bw, bh, w, h);
	cr_assert_eq(memcmp(back, img, (size_t)w * h * 4), 0, "%ux%u pixels differ", w, h);
	g_free(back);
	g_free(img);
	g_byte_array_unref(out);
}

Test(png, libpng_reads_it_back_pixel_by_pixel)
{
	/* sizes around one stored block (65535 bytes), one IDAT (65536), rows
	 * longer than a block, many tiny rows */
	static const uint32_t sizes[][2] = {
		{ 1, 1 }, { 2, 1 }, { 1, 2 }, { 3, 7 }, { 100, 100 }, { 257, 300 },
		{ 5461, 3 },      /* 65535 filtered bytes: exactly one block */
		{ 1, 13105 },     /* 65525: the zlib stream is exactly 65536 */
		{ 50, 326 },      /* 65526: 65537, one byte in a second IDAT */
		{ 16384, 1 },     /* 65537: one byte into a second block */
		{ 16383, 2 }, { 65536, 1 }, { 1, 65536 }, { 1000, 70 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++)
		write_and_compare(sizes[i][0], sizes[i][1]);
}

Test(png, size_formula)
{
	GByteArray *out = g_byte_array_new();
	unsigned char *img = noise(300, 300, 1);

	cr_assert_eq(png_stored_size(1, 1), 8 + 25 + (2 + 5 + 5 + 4) + 12 + 12);
	for (uint32_t w = 1; w <= 300; w += 13) {
		for (uint32_t h = 1; h <= 300; h += 7) {
			g_byte_array_set_size(out, 0);
			png_write_rgba(img, w, h, out);
			cr_assert_eq(out->len, png_stored_size(w, h), "%ux%u", w, h);
			cr_assert_eq(png_stored_size(w, h), formula(w, h), "%ux%u", w, h);
		}
	}
	for (uint32_t w = 1; w <= 65536; w *= 2)
		cr_assert_eq(png_stored_size(w, 65536 / w), formula(w, 65536 / w));
	cr_assert_eq(png_stored_size(16384, 16384), formula(16384, 16384));
	cr_assert_eq(png_stored_size(0x7FFFFFFF, 0x7FFFFFFF), formula(0x7FFFFFFF, 0x7FFFFFFF));
	cr_assert_eq(png_stored_size(0, 5), 0);
	cr_assert_eq(png_stored_size(5, 0), 0);
	cr_assert_eq(png_stored_size(0x80000000u, 1), 0);
	g_free(img);
	g_byte_array_unref(out);
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Walks the chunks, checks their CRCs and the fixed layout, and returns
 * the concatenated IDAT data (the zlib stream). */
static GByteArray *check_layout(const GByteArray *png, uint32_t w, uint32_t h)
{
	static const unsigned char sig[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n' };
	GByteArray *z = g_byte_array_new();
	size_t at = 8, n = 0;

	cr_assert_eq(memcmp(png->data, sig, 8), 0);
	for (;;) {
		uint32_t len = be32(png->data + at);
		const unsigned char *type = png->data + at + 4;

		cr_assert(at + 12 + len <= png->len, "chunk %zu runs past the end", n);
		cr_assert_eq(be32(type + 4 + len), (uint32_t)crc32(0, type, len + 4), "chunk %zu CRC", n);
		if (n == 0) {
			cr_assert(memcmp(type, "IHDR", 4) == 0 && len == 13);
			cr_assert(be32(type + 4) == w && be32(type + 8) == h);
			cr_assert(memcmp(type + 12, "\x08\x06\x00\x00\x00", 5) == 0);
		} else if (memcmp(type, "IEND", 4) == 0) {
			cr_assert_eq(len, 0);
			cr_assert_eq(at + 12, png->len, "IEND is last");
			break;
		} else {
			cr_assert(memcmp(type, "IDAT", 4) == 0, "chunk %zu is not IDAT", n);
			cr_assert(z->len % 65536 == 0, "an IDAT before this one was short");
			g_byte_array_append(z, type + 4, len);
		}
		at += 12 + len;
		n++;
	}
	return z;
}

Test(png, layout_stored_blocks)
{
	uint32_t w = 257, h = 300;
	unsigned char *img = noise(w, h, 7);
	GByteArray *png = g_byte_array_new(), *z;
	size_t raw = (size_t)h * (4 * w + 1), at = 2, blocks = 0;
	unsigned char *inflated = g_malloc(raw + 1);
	uLongf got = raw + 1;

	png_write_rgba(img, w, h, png);
	z = check_layout(png, w, h);
	cr_assert(z->data[0] == 0x78 && (z->data[0] * 256 + z->data[1]) % 31 == 0, "zlib header");
	/* stored blocks: BFINAL on the last only, LEN 65535 but the last, NLEN */
	for (size_t left = raw; left; blocks++) {
		size_t len = z->data[at + 1] | z->data[at + 2] << 8;

		cr_assert_eq(z->data[at], left == len ? 1 : 0, "block %zu header", blocks);
		cr_assert_eq(len, left < 65535 ? left : 65535);
		cr_assert_eq(len ^ 0xFFFF, (size_t)(z->data[at + 3] | z->data[at + 4] << 8));
		at += 5 + len;
		left -= len;
	}
	cr_assert_eq(at + 4, z->len, "Adler-32 ends the stream");
	cr_assert_eq(uncompress(inflated, &got, z->data, z->len), Z_OK, "zlib (with Adler-32)");
	cr_assert_eq(got, raw);
	for (uint32_t y = 0; y < h; y++) {
		cr_assert_eq(inflated[(size_t)y * (4 * w + 1)], 0, "filter byte of row %u", y);
		cr_assert_eq(memcmp(inflated + (size_t)y * (4 * w + 1) + 1, img + (size_t)y * w * 4,
				    (size_t)w * 4), 0, "row %u", y);
	}
	g_free(inflated);
	g_free(img);
	g_byte_array_unref(z);
	g_byte_array_unref(png);
}

Test(png, read_rgba)
{
	unsigned char *img = noise(33, 17, 3), *back, *mem = NULL;
	GByteArray *png = g_byte_array_new();
	struct format_error err = { 0 };
	png_image pi = { 0 };
	png_alloc_size_t memlen = 0;
	uint32_t w, h;

	/* our stored PNG */
	png_write_rgba(img, 33, 17, png);
	cr_assert_eq(png_read_rgba(png->data, png->len, &back, &w, &h, &err), 0, "%s", err.msg);
	cr_assert(w == 33 && h == 17);
	cr_assert_eq(memcmp(back, img, 33 * 17 * 4), 0);
	g_free(back);
	/* a compressed RGB PNG written by libpng: alpha becomes 255 */
	pi.version = PNG_IMAGE_VERSION;
	pi.width = 33;
	pi.height = 17;
	pi.format = PNG_FORMAT_RGB;
	for (size_t i = 0; i < 33 * 17; i++)
		memmove(img + i * 3, img + i * 4, 3);
	cr_assert(png_image_write_get_memory_size(pi, memlen, 0, img, 0, NULL));
	mem = g_malloc(memlen);
	cr_assert(png_image_write_to_memory(&pi, mem, &memlen, 0, img, 0, NULL));
	cr_assert_eq(png_read_rgba(mem, memlen, &back, &w, &h, &err), 0, "%s", err.msg);
	for (size_t i = 0; i < 33 * 17; i++)
		cr_assert(memcmp(back + i * 4, img + i * 3, 3) == 0 && back[i * 4 + 3] == 255,
			  "pixel %zu", i);
	g_free(back);
	/* refusals */
	cr_assert_eq(png_read_rgba((const unsigned char *)"GIF89a", 6, &back, &w, &h, &err), -1);
	cr_assert_null(back);
	cr_assert(err.code == EINVAL && err.offset == 0);
	cr_assert_eq(png_read_rgba(png->data, png->len / 2, &back, &w, &h, &err), -1,
		     "a truncated PNG");
	cr_assert_null(back);
	png->data[60] ^= 1;   /* pixel data of the first IDAT: its CRC no longer matches */
	cr_assert_eq(png_read_rgba(png->data, png->len, &back, &w, &h, &err), -1, "a bad CRC");
	g_free(mem);
	g_free(img);
	g_byte_array_unref(png);
}

/* ---- MMP to PNG ------------------------------------------------------------ */

/* mmp_to_png's output is mmp_png_size bytes and libpng reads back exactly
 * what mmp_decode gives. */
static void check_png_view(const unsigned char *data, size_t len, unsigned level)
{
	struct format_error err = { 0 };
	GByteArray *png = g_byte_array_new();
	unsigned char *rgba, *back;
	uint32_t w, h, bw = 0, bh = 0;
	uint64_t size;

	cr_assert_eq(mmp_decode(data, len, level, &rgba, &w, &h, &err), 0, "level %u: %s at %llu",
		     level, err.msg, (unsigned long long)err.offset);
	cr_assert_eq(mmp_png_size(data, MMP_HEADER_SIZE, level, &size, &err), 0, "%s", err.msg);
	cr_assert_eq(mmp_to_png(data, len, level, png, &err), 0, "%s", err.msg);
	cr_assert_eq(png->len, size, "PNG of %u bytes, size said %llu", png->len,
		     (unsigned long long)size);
	back = libpng_decode(png->data, png->len, &bw, &bh);
	cr_assert_not_null(back);
	cr_assert(bw == w && bh == h);
	cr_assert_eq(memcmp(back, rgba, (size_t)w * h * 4), 0);
	g_free(back);
	g_free(rgba);
	g_byte_array_unref(png);
}

Test(mmp_png, views_of_hand_made_files)
{
	static const unsigned char blk[16] = { 0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE,
					       B_LE, A_LE, INDICES };
	GByteArray *b = mmp_file(MMP_DXT3, 8, &M_DXT3, 4, 4, 1, blk, sizeof blk);
	GByteArray *p = pnt3_file(4, 2, (const uint32_t[5]){ 0x10, 0x101, 0x10, 0x80112233, 0 }, 5);
	struct format_error err = { 0 };
	GByteArray *out = g_byte_array_new();

	check_png_view(b->data, b->len, 0);
	check_png_view(p->data, p->len, 0);
	/* a failed conversion leaves out as it was */
	cr_assert_eq(mmp_to_png(b->data, b->len - 1, 0, out, &err), -1);
	cr_assert_eq(out->len, 0);
	cr_assert_eq(err.offset, 76);
	g_byte_array_unref(out);
	g_byte_array_unref(b);
	g_byte_array_unref(p);
}

/* ---- samples (FORMATS 13) -------------------------------------------------- */

static GByteArray *read_at(int fd, uint64_t off, size_t len)
{
	GByteArray *b = g_byte_array_sized_new((guint)len);

	g_byte_array_set_size(b, (guint)len);
	cr_assert_eq(pread(fd, b->data, len, (off_t)off), (ssize_t)len);
	return b;
}

/* Every MMP entry of the archive: all levels decode, the last one ends at
 * the entry's end, and the PNG view of every level is sound.  Returns the
 * number of textures; counts[] per format (DXT1, DXT3, PNT3). */
static unsigned check_sample_textures(const char *path, unsigned counts[3])
{
	struct res_table t;
	struct res_error rerr = { 0 };
	struct stat st;
	unsigned n = 0;
	int fd = open(path, O_RDONLY);

	cr_assert(fd >= 0 && fstat(fd, &st) == 0);
	cr_assert_eq(res_table_read(&(struct res_window){ fd, 0, (uint64_t)st.st_size }, &t, &rerr),
		     0, "%s", rerr.msg);
	for (uint32_t i = 0; i < t.hdr.count; i++) {
		const struct res_entry *e = &t.entries[i];
		GByteArray *d;
		struct mmp_info info;
		struct format_error err = { 0 };
		uint64_t off, size;

		if (e->length < 4 || res_entry_faults(&t, i, (uint64_t)st.st_size))
			continue;
		d = read_at(fd, e->offset, e->length);
		if (memcmp(d->data, "MMP", 4) != 0) {
			g_byte_array_unref(d);
			continue;
		}
		cr_assert_eq(mmp_read_header(d->data, d->len, &info, &err), 0, "%.*s: %s",
			     (int)e->name_len, res_entry_name(&t, i), err.msg);
		cr_assert_eq(mmp_level_span(&info, info.levels - 1, &off, &size), 0);
		cr_assert_eq(off + size, d->len, "%.*s: the last level ends at %llu of %u",
			     (int)e->name_len, res_entry_name(&t, i),
			     (unsigned long long)(off + size), d->len);
		for (unsigned l = 0; l < info.levels; l++)
			check_png_view(d->data, d->len, l);
		counts[info.format == MMP_DXT1 ? 0 : info.format == MMP_DXT3 ? 1 : 2]++;
		n++;
		g_byte_array_unref(d);
	}
	res_table_free(&t);
	close(fd);
	return n;
}

Test(mmp_samples, auxdata_dxt_textures)
{
	char *path = g_build_filename(SAMPLES_DIR, "auxData.res", NULL);
	unsigned counts[3] = { 0, 0, 0 };

	if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
		g_free(path);
		cr_skip_test("no samples: " SAMPLES_DIR "/auxData.res is absent");
	}
	cr_assert_eq(check_sample_textures(path, counts), 10);
	cr_assert(counts[0] == 8 && counts[1] == 2, "%u DXT1, %u DXT3", counts[0], counts[1]);
	g_free(path);
}

Test(mmp_samples, redress_pnt3_textures)
{
	char *path = g_build_filename(SAMPLES_DIR, "redress_100.res", NULL);
	unsigned counts[3] = { 0, 0, 0 };

	if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
		g_free(path);
		cr_skip_test("no samples: " SAMPLES_DIR "/redress_100.res is absent");
	}
	/* includes the sw_06 textures the CE rule misreads */
	cr_assert_eq(check_sample_textures(path, counts), 41);
	cr_assert_eq(counts[2], 41);
	g_free(path);
}

/* ---- encoder ------------------------------------------------------------------ */

static GByteArray *encode_ok(const unsigned char *rgba, uint32_t w, uint32_t h,
			     enum mmp_format f, unsigned levels)
{
	GByteArray *b = g_byte_array_new();
	struct format_error err = { 0 };

	cr_assert_eq(mmp_encode(rgba, w, h, f, levels, b, &err), 0, "%s", err.msg);
	return b;
}

/* The largest difference of one channel between two images. */
static unsigned max_error(const unsigned char *a, const unsigned char *b, size_t n, int channel)
{
	unsigned m = 0;

	for (size_t i = 0; i < n; i++) {
		int d = a[i * 4 + channel] - b[i * 4 + channel];

		m = (unsigned)abs(d) > m ? (unsigned)abs(d) : m;
	}
	return m;
}

/* A smooth image with an alpha ramp (up to 64x64): what DXT is made for. */
static unsigned char *gradient(uint32_t w, uint32_t h)
{
	unsigned char *p = g_malloc((size_t)w * h * 4);

	for (uint32_t y = 0; y < h; y++) {
		for (uint32_t x = 0; x < w; x++) {
			unsigned char *q = p + ((size_t)y * w + x) * 4;

			q[0] = (unsigned char)(x * 3);
			q[1] = (unsigned char)(200 - y * 3);
			q[2] = (unsigned char)(255 - q[0] / 2 - q[1] / 3);
			q[3] = (unsigned char)((x + y) * 2);
		}
	}
	return p;
}

static void expect_header_fields(const GByteArray *b, uint32_t format, uint32_t bits,
				 const struct masks *m, uint32_t w, uint32_t h, uint32_t count)
{
	const uint32_t *ch[4] = { m->a, m->r, m->g, m->b };

	cr_assert_eq(h_get_u32(b, 0), 0x00504D4D);
	cr_assert(h_get_u32(b, 4) == w && h_get_u32(b, 8) == h);
	cr_assert_eq(h_get_u32(b, 12), count);
	cr_assert_eq(h_get_u32(b, 16), format);
	cr_assert_eq(h_get_u32(b, 20), bits);
	for (int c = 0; c < 4; c++)
		for (int k = 0; k < 3; k++)
			cr_assert_eq(h_get_u32(b, 24 + 12 * c + 4 * k), ch[c][k],
				     "format %08x: header field %d", format, 24 + 12 * c + 4 * k);
	cr_assert_eq(h_get_u32(b, 72), 0);
}

Test(mmp_encode, a8r8g8b8_exact_with_masks)
{
	unsigned char *img = noise(37, 23, 5), *back;
	GByteArray *b = encode_ok(img, 37, 23, MMP_A8R8G8B8, 1);

	expect_header_fields(b, MMP_A8R8G8B8, 32, &M_8888, 37, 23, 1);
	cr_assert_eq(b->len, 76 + 37 * 23 * 4);
	back = decode_ok(b, 0, 37, 23);
	cr_assert_eq(memcmp(back, img, 37 * 23 * 4), 0);
	g_free(back);
	g_free(img);
	g_byte_array_unref(b);
}

Test(mmp_encode, header_masks_of_every_format)
{
	unsigned char *img = noise(8, 8, 9);
	static const struct {
		uint32_t format, bits;
		const struct masks *m;
	} f[] = {
		{ MMP_DXT1, 4, &M_DXT1 }, { MMP_DXT3, 8, &M_DXT3 }, { MMP_R5G6B5, 16, &M_565 },
		{ MMP_A1R5G5B5, 16, &M_1555 }, { MMP_A4R4G4B4, 16, &M_4444 },
		{ MMP_A8R8G8B8, 32, &M_8888 },
	};

	for (size_t i = 0; i < G_N_ELEMENTS(f); i++) {
		GByteArray *b = encode_ok(img, 8, 8, f[i].format, 2);

		expect_header_fields(b, f[i].format, f[i].bits, f[i].m, 8, 8, 2);
		g_byte_array_unref(b);
	}
	g_free(img);
}

Test(mmp_encode, mip_chain_is_box_filtered)
{
	/* 4x4 A8R8G8B8, full chain (levels 0): 4x4, 2x2, 1x1 */
	unsigned char img[64], *l1, *l2;
	GByteArray *b;

	for (int i = 0; i < 64; i++)
		img[i] = (unsigned char)(i * 7 + (i % 4) * 50);
	b = encode_ok(img, 4, 4, MMP_A8R8G8B8, 0);
	cr_assert_eq(h_get_u32(b, 12), 3);
	cr_assert_eq(b->len, 76 + (16 + 4 + 1) * 4);
	l1 = decode_ok(b, 1, 2, 2);
	l2 = decode_ok(b, 2, 1, 1);
	for (int y = 0; y < 2; y++) {
		for (int x = 0; x < 2; x++) {
			for (int c = 0; c < 4; c++) {
				unsigned s = img[((2 * y) * 4 + 2 * x) * 4 + c] +
					     img[((2 * y) * 4 + 2 * x + 1) * 4 + c] +
					     img[((2 * y + 1) * 4 + 2 * x) * 4 + c] +
					     img[((2 * y + 1) * 4 + 2 * x + 1) * 4 + c];

				cr_assert_eq(l1[(y * 2 + x) * 4 + c], (s + 2) / 4, "%d,%d c%d", x, y, c);
			}
		}
	}
	for (int c = 0; c < 4; c++)
		cr_assert_eq(l2[c], (l1[c] + l1[4 + c] + l1[8 + c] + l1[12 + c] + 2) / 4);
	g_free(l1);
	g_free(l2);
	g_byte_array_unref(b);
}

Test(mmp_encode, dxt_levels_at_least_one_block)
{
	unsigned char *img = gradient(8, 8);
	GByteArray *b = encode_ok(img, 8, 8, MMP_DXT1, 0), *c;

	/* 8x8 (4 blocks), 4x4, 2x2, 1x1 (one each) */
	cr_assert_eq(h_get_u32(b, 12), 4);
	cr_assert_eq(b->len, 76 + 32 + 8 + 8 + 8);
	for (unsigned l = 0; l < 4; l++)
		g_free(decode_ok(b, l, 8 >> l, 8 >> l));
	c = encode_ok(img, 8, 8, MMP_DXT3, 0);
	cr_assert_eq(c->len, 76 + 64 + 16 + 16 + 16);
	g_free(img);
	g_byte_array_unref(b);
	g_byte_array_unref(c);
}

/* PNT3 decoded with the CE / aspadm rule (a word is a run iff 1..1000000),
 * or NULL where that rule fails. */
static unsigned char *ce_decode_pnt3(const GByteArray *b, uint32_t w, uint32_t h)
{
	uint32_t payload = h_get_u32(b, 12);
	size_t need = (size_t)w * h * 4, o = 0;
	unsigned char *out = g_malloc0(need);

	for (uint32_t i = 0; i < payload; i += 4) {
		uint32_t v = h_get_u32(b, 76 + i);

		if (v >= 1 && v <= 1000000) {
			if (v > need - o)
				break;
			o += v;
		} else if (o < need) {
			const unsigned char *p = b->data + 76 + i;
			unsigned char px[4] = { p[2], p[1], p[0], p[3] };

			memcpy(out + o, px, 4);
			o += 4;
		} else {
			o = need + 1;
			break;
		}
	}
	if (o != need) {
		g_free(out);
		return NULL;
	}
	return out;
}

static void expect_pnt3_round_trip(const unsigned char *img, uint32_t w, uint32_t h)
{
	GByteArray *b = encode_ok(img, w, h, MMP_PNT3, 5);   /* PNT3: always 1 level */
	unsigned char *back = decode_ok(b, 0, w, h), *ce;

	expect_header_fields(b, MMP_PNT3, 32, &M_NONE, w, h, b->len - 76);
	cr_assert_lt(b->len - 76, (size_t)w * h * 4, "compressed");
	cr_assert_eq(memcmp(back, img, (size_t)w * h * 4), 0);
	ce = ce_decode_pnt3(b, w, h);
	cr_assert_not_null(ce, "the CE rule cannot read it");
	cr_assert_eq(memcmp(ce, img, (size_t)w * h * 4), 0, "the CE rule reads it otherwise");
	g_free(ce);
	g_free(back);
	g_byte_array_unref(b);
}

Test(mmp_encode, pnt3_exact_round_trip)
{
	/* transparent left part (runs, and single zero pixels at odd places),
	 * opaque-ish noise on the right (alpha never 0) */
	uint32_t w = 61, h = 37;
	unsigned char *img = noise(w, h, 11);

	for (uint32_t y = 0; y < h; y++) {
		for (uint32_t x = 0; x < w; x++) {
			unsigned char *p = img + ((size_t)y * w + x) * 4;

			if (x < 29 || (x + y) % 9 == 0)
				memset(p, 0, 4);
			else if (p[3] == 0)
				p[3] = 1;
		}
	}
	expect_pnt3_round_trip(img, w, h);
	g_free(img);
}

Test(mmp_encode, pnt3_long_runs_stay_ce_readable)
{
	/* 1 MiB of zeros: runs are cut at 1000000 bytes, which the CE rule
	 * would read as a pixel above that */
	unsigned char *img = g_malloc0(512 * 512 * 4);
	GByteArray *b;

	img[4 * 5] = 9;
	img[4 * 5 + 3] = 255;   /* one opaque pixel at 5, not aligned */
	expect_pnt3_round_trip(img, 512, 512);
	memset(img, 0, 512 * 512 * 4);
	b = encode_ok(img, 512, 512, MMP_PNT3, 1);
	cr_assert_eq(b->len, 76 + 8);
	cr_assert_eq(h_get_u32(b, 76), 1000000);
	cr_assert_eq(h_get_u32(b, 80), 1048576 - 1000000);
	g_byte_array_unref(b);
	g_free(img);
}

Test(mmp_encode, pnt3_ambiguous_invisible_pixels)
{
	/* 8x1: pixel 0 = R0 G1 B1 A0, word 0x101: CE would read a run -> 0;
	 * pixels 4 and 5 = R16 A0, word 0x100000 (> 1000000, a multiple of 16
	 * below 2^24): at 4 (aligned) the aligned rule would read a run ->
	 * blue's low bit set; at 5 (not aligned) kept as is */
	static const unsigned char img[8][4] = {
		{ 0, 1, 1, 0 }, { 1, 2, 3, 255 }, { 1, 2, 3, 255 }, { 1, 2, 3, 255 },
		{ 16, 0, 0, 0 }, { 16, 0, 0, 0 }, { 1, 2, 3, 255 }, { 1, 2, 3, 255 },
	};
	static const unsigned char want[8][4] = {
		{ 0, 0, 0, 0 }, { 1, 2, 3, 255 }, { 1, 2, 3, 255 }, { 1, 2, 3, 255 },
		{ 16, 0, 1, 0 }, { 16, 0, 0, 0 }, { 1, 2, 3, 255 }, { 1, 2, 3, 255 },
	};
	GByteArray *b = encode_ok(&img[0][0], 8, 1, MMP_PNT3, 1);
	unsigned char *back = decode_ok(b, 0, 8, 1), *ce = ce_decode_pnt3(b, 8, 1);

	/* no run fits 8 pixels with these: all literal, so payload == w*h*4 and
	 * the file reads as raw: raw and literal reading agree */
	cr_assert_eq(h_get_u32(b, 12), 32);
	expect_pixels(back, want, 8);
	cr_assert_not_null(ce);
	expect_pixels(ce, want, 8);
	for (uint32_t i = 0; i < 8; i++) {
		uint32_t v = h_get_u32(b, 76 + i * 4);

		cr_assert(v == 0 || v > 1000000, "word %u is %u", i, v);
	}
	g_free(back);
	g_free(ce);
	g_byte_array_unref(b);
}

/* 16-bit formats: every channel value within half a step (plus rounding),
 * and values a channel can hold come back exactly. */
static void expect_16bit_round_trip(enum mmp_format f, const unsigned tol[4])
{
	unsigned char img[256 * 4], *back, *again;
	GByteArray *b, *c;

	for (int v = 0; v < 256; v++)
		memset(img + v * 4, v, 4);
	b = encode_ok(img, 256, 1, f, 1);
	back = decode_ok(b, 0, 256, 1);
	for (int ch = 0; ch < 4; ch++)
		cr_assert_leq(max_error(img, back, 256, ch), tol[ch], "%s channel %d: %u",
			      mmp_format_name(f), ch, max_error(img, back, 256, ch));
	c = encode_ok(back, 256, 1, f, 1);
	again = decode_ok(c, 0, 256, 1);
	cr_assert_eq(memcmp(again, back, sizeof img), 0, "%s: a decoded image re-encodes exactly",
		     mmp_format_name(f));
	g_free(again);
	g_free(back);
	g_byte_array_unref(b);
	g_byte_array_unref(c);
}

Test(mmp_encode, sixteen_bit_formats_within_tolerance)
{
	/* half a step: 255/31/2 = 4.1, 255/63/2 = 2.0, 255/15/2 = 8.5 */
	expect_16bit_round_trip(MMP_R5G6B5, (const unsigned[4]){ 4, 2, 4, 255 });
	expect_16bit_round_trip(MMP_A1R5G5B5, (const unsigned[4]){ 4, 4, 4, 127 });
	expect_16bit_round_trip(MMP_A4R4G4B4, (const unsigned[4]){ 8, 8, 8, 8 });
}

Test(mmp_encode, sixteen_bit_alpha)
{
	static const unsigned char img[3][4] = { { 9, 9, 9, 0 }, { 9, 9, 9, 127 }, { 9, 9, 9, 128 } };
	GByteArray *b = encode_ok(&img[0][0], 3, 1, MMP_A1R5G5B5, 1);
	GByteArray *c = encode_ok(&img[0][0], 3, 1, MMP_R5G6B5, 1);
	unsigned char *back = decode_ok(b, 0, 3, 1), *opaque = decode_ok(c, 0, 3, 1);

	cr_assert(back[3] == 0 && back[7] == 0 && back[11] == 255, "A1: alpha >= 128");
	cr_assert(opaque[3] == 255 && opaque[7] == 255 && opaque[11] == 255, "R5G6B5: opaque");
	g_free(back);
	g_free(opaque);
	g_byte_array_unref(b);
	g_byte_array_unref(c);
}

Test(mmp_encode, dxt_within_tolerance)
{
	static const uint32_t sizes[][2] = { { 64, 64 }, { 5, 7 }, { 1, 1 }, { 30, 2 } };

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		uint32_t w = sizes[i][0], h = sizes[i][1];
		unsigned char *img = gradient(w, h), *d1, *d3;
		GByteArray *b1, *b3;

		/* DXT1: opaque pixels only, alpha is all or nothing */
		for (size_t k = 0; k < (size_t)w * h; k++)
			img[k * 4 + 3] = 255;
		b1 = encode_ok(img, w, h, MMP_DXT1, 1);
		d1 = decode_ok(b1, 0, w, h);
		for (int c = 0; c < 3; c++)
			cr_assert_leq(max_error(img, d1, (size_t)w * h, c), 12, "DXT1 %ux%u channel %d: %u",
				      w, h, c, max_error(img, d1, (size_t)w * h, c));
		cr_assert_eq(max_error(img, d1, (size_t)w * h, 3), 0);
		g_free(img);
		img = gradient(w, h);
		b3 = encode_ok(img, w, h, MMP_DXT3, 1);
		d3 = decode_ok(b3, 0, w, h);
		for (int c = 0; c < 3; c++)
			cr_assert_leq(max_error(img, d3, (size_t)w * h, c), 12, "DXT3 %ux%u channel %d: %u",
				      w, h, c, max_error(img, d3, (size_t)w * h, c));
		cr_assert_leq(max_error(img, d3, (size_t)w * h, 3), 8, "DXT3 alpha: half a 4-bit step");
		g_free(d1);
		g_free(d3);
		g_free(img);
		g_byte_array_unref(b1);
		g_byte_array_unref(b3);
	}
}

Test(mmp_encode, dxt1_transparent_pixels)
{
	/* a block with three colours and holes: holes come back transparent
	 * black, the rest opaque and close */
	unsigned char img[16][4];
	GByteArray *b;
	unsigned char *d;

	for (int k = 0; k < 16; k++) {
		img[k][0] = (unsigned char)(k * 16);
		img[k][1] = (unsigned char)(255 - k * 16);
		img[k][2] = 40;
		img[k][3] = k % 3 == 0 ? 0 : 200;
	}
	b = encode_ok(&img[0][0], 4, 4, MMP_DXT1, 1);
	cr_assert_leq(b->data[76] | b->data[77] << 8, b->data[78] | b->data[79] << 8,
		      "3-colour mode: c0 <= c1");
	d = decode_ok(b, 0, 4, 4);
	for (int k = 0; k < 16; k++) {
		if (k % 3 == 0) {
			cr_assert(d[k * 4] == 0 && d[k * 4 + 1] == 0 && d[k * 4 + 2] == 0 &&
				  d[k * 4 + 3] == 0, "pixel %d is a hole", k);
			continue;
		}
		cr_assert_eq(d[k * 4 + 3], 255);
		for (int c = 0; c < 3; c++)
			cr_assert_leq(abs(d[k * 4 + c] - img[k][c]), 70, "pixel %d channel %d", k, c);
	}
	g_free(d);
	g_byte_array_unref(b);
}

Test(mmp_encode, flat_representable_colour_is_exact)
{
	/* (132, 130, 66) is 565 colour 0x8408: every format keeps it */
	unsigned char img[6 * 6 * 4], *d;
	GByteArray *b;

	for (int k = 0; k < 36; k++)
		memcpy(img + k * 4, (const unsigned char[4]){ 132, 130, 66, 255 }, 4);
	b = encode_ok(img, 6, 6, MMP_DXT1, 1);
	d = decode_ok(b, 0, 6, 6);
	cr_assert_eq(memcmp(d, img, sizeof img), 0);
	g_free(d);
	g_byte_array_unref(b);
}

Test(mmp_encode, refused)
{
	unsigned char px[4] = { 0 };
	GByteArray *b = g_byte_array_new();
	struct format_error err = { 0 };

	cr_assert_eq(mmp_encode(px, 0, 1, MMP_DXT1, 1, b, &err), -1);
	cr_assert(err.code == EINVAL && err.offset == 4, "%s", err.msg);
	cr_assert_eq(mmp_encode(px, 1, 16385, MMP_DXT1, 1, b, &err), -1);
	cr_assert(err.code == EINVAL && err.offset == 8, "%s", err.msg);
	cr_assert_eq(mmp_encode(px, 1, 1, (enum mmp_format)0x35545844, 1, b, &err), -1);
	cr_assert(err.code == EINVAL && err.offset == 16, "%s", err.msg);
	cr_assert_eq(mmp_encode(px, 1, 1, MMP_DXT1, 2, b, &err), -1);
	cr_assert(err.code == EINVAL && err.offset == 12, "%s", err.msg);
	cr_assert_eq(b->len, 0, "nothing appended on failure");
	g_byte_array_unref(b);
}
