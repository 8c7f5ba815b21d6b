/* PNG -> MMP, the way textures enter the game data (demo/mkasset): libpng
 * through png_read_rgba (on a copy with the chunk CRCs set right), then mmp_encode into every format, whose output
 * must read back as a texture of the same size with every level; the
 * 32-bit format must keep the pixels exactly. */
#include "fuzz.h"

#include <string.h>
#include <zlib.h>

#include "mmp.h"
#include "pngio.h"

/* Encoding is the slow part: only small images go through every format. */
enum { ENCODE_MAX_PIXELS = 128 * 128 };

static const enum mmp_format formats[] = {
	MMP_DXT1, MMP_DXT3, MMP_PNT3, MMP_R5G6B5, MMP_A1R5G5B5, MMP_A4R4G4B4, MMP_A8R8G8B8,
};

static void check_encoded(const unsigned char *rgba, uint32_t w, uint32_t h,
			  enum mmp_format format, const GByteArray *mmp)
{
	struct format_error err = { 0 };
	struct mmp_info info;
	unsigned char *back;
	uint32_t bw, bh;

	FUZZ_CHECK(mmp_read_header(mmp->data, mmp->len, &info, &err) == 0,
		   "the encoder's %s header is refused: %s", mmp_format_name(format), err.msg);
	FUZZ_CHECK(info.width == w && info.height == h && info.format == (uint32_t)format,
		   "header says %ux%u %08x", info.width, info.height, info.format);
	for (unsigned level = 0; level < info.levels; level++) {
		FUZZ_CHECK(mmp_decode(mmp->data, mmp->len, level, &back, &bw, &bh, &err) == 0,
			   "%s level %u does not decode: %s", mmp_format_name(format), level, err.msg);
		if (level == 0 && format == MMP_A8R8G8B8)
			FUZZ_CHECK(memcmp(back, rgba, (size_t)w * h * 4) == 0, "A8R8G8B8 is lossy");
		g_free(back);
	}
}

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* libpng refuses a chunk whose CRC is wrong and is not instrumented, so
 * the fuzzer would learn nothing past a mutated chunk: the copy has every
 * CRC that can be set set right. */
static unsigned char *with_crcs(const uint8_t *data, size_t size)
{
	unsigned char *p = g_malloc(size ? size : 1);
	size_t at = 8;

	memcpy(p, data, size);
	while (size >= 12 && at <= size - 12 && get_be32(p + at) <= size - 12 - at) {
		uint32_t len = get_be32(p + at);
		uLong crc = crc32(0, p + at + 4, len + 4);

		for (int k = 0; k < 4; k++)
			p[at + 8 + len + k] = (unsigned char)(crc >> (24 - 8 * k));
		at += 12 + (size_t)len;
	}
	return p;
}

void fuzz_png_one(const uint8_t *data, size_t size)
{
	struct format_error err = { 0 };
	unsigned char *png = with_crcs(data, size), *rgba;
	uint32_t w, h;
	int rc = png_read_rgba(png, size, &rgba, &w, &h, &err);

	g_free(png);
	if (rc < 0) {
		fuzz_check_refusal(&err, "png_read_rgba");
		FUZZ_CHECK(!rgba, "a refused PNG gave pixels");
		return;
	}
	FUZZ_CHECK(w && h, "a %ux%u image", w, h);
	for (size_t i = 0; (uint64_t)w * h <= ENCODE_MAX_PIXELS && i < G_N_ELEMENTS(formats); i++) {
		GByteArray *mmp = g_byte_array_new();

		if (mmp_encode(rgba, w, h, formats[i], 0, mmp, &err) < 0)
			fuzz_check_refusal(&err, "mmp_encode");
		else
			check_encoded(rgba, w, h, formats[i], mmp);
		g_byte_array_unref(mmp);
	}
	g_free(rgba);
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_png_one(data, size);
	return 0;
}
#endif
