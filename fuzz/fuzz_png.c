/* PNG -> MMP, the way textures enter the game data (demo/mkasset): libpng
 * through png_read_rgba, then mmp_encode into every format, whose output
 * must read back as a texture of the same size with every level; the
 * 32-bit format must keep the pixels exactly. */
#include "fuzz.h"

#include <string.h>

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

void fuzz_png_one(const uint8_t *data, size_t size)
{
	struct format_error err = { 0 };
	unsigned char *rgba;
	uint32_t w, h;

	if (png_read_rgba(data, size, &rgba, &w, &h, &err) < 0) {
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
