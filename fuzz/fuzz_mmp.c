/* MMP textures: the header, the predicted PNG size of every level the
 * header declares, and the PNG itself, which must have exactly that size
 * and decode (libpng) to the pixels mmp_decode gives. */
#include "fuzz.h"

#include <string.h>

#include "mmp.h"
#include "pngio.h"

/* A mount converts only what its size bound allows (views.c: 512 MiB); a
 * smaller bound here keeps the fuzzer fast.  Larger levels still get
 * their header, size and span checked. */
enum { PNG_LIMIT = 16 << 20 };

static void check_png(const uint8_t *data, size_t size, unsigned level, const GByteArray *png)
{
	struct format_error err = { 0 };
	unsigned char *want, *got;
	uint32_t w, h, pw, ph;

	FUZZ_CHECK(mmp_decode(data, size, level, &want, &w, &h, &err) == 0,
		   "mmp_decode refuses what mmp_to_png converted: %s", err.msg);
	FUZZ_CHECK(png_read_rgba(png->data, png->len, &got, &pw, &ph, &err) == 0,
		   "libpng refuses the PNG of level %u: %s", level, err.msg);
	FUZZ_CHECK(pw == w && ph == h, "PNG is %ux%u, level %u is %ux%u", pw, ph, level, w, h);
	FUZZ_CHECK(memcmp(want, got, (size_t)w * h * 4) == 0, "PNG pixels differ, level %u", level);
	g_free(want);
	g_free(got);
}

static void check_level(const uint8_t *data, size_t size, const struct mmp_info *info,
			unsigned level)
{
	struct format_error err = { 0 };
	uint64_t png_size, off, span;
	uint32_t w, h;
	GByteArray *png;

	FUZZ_CHECK(mmp_level_size(info, level, &w, &h) == 0, "declared level %u has no size", level);
	FUZZ_CHECK(mmp_level_span(info, level, &off, &span) == 0, "level %u has no span", level);
	FUZZ_CHECK(mmp_png_size(data, size, level, &png_size, &err) == 0,
		   "no PNG size for declared level %u: %s", level, err.msg);
	FUZZ_CHECK(png_size == png_stored_size(w, h), "PNG size is not the formula's");
	if (png_size > PNG_LIMIT)
		return;
	png = g_byte_array_new();
	if (mmp_to_png(data, size, level, png, &err) < 0) {
		fuzz_check_refusal(&err, "mmp_to_png");
		FUZZ_CHECK(png->len == 0, "a refused conversion left bytes");
	} else {
		FUZZ_CHECK(png->len == png_size, "level %u: PNG of %u bytes, %llu predicted",
			   level, png->len, (unsigned long long)png_size);
		FUZZ_CHECK(off + span <= size, "converted a level whose data is missing");
		if ((uint64_t)w * h <= 256 * 256)
			check_png(data, size, level, png);
	}
	g_byte_array_unref(png);
}

void fuzz_mmp_one(const uint8_t *data, size_t size)
{
	struct format_error err = { 0 };
	struct mmp_info info;
	uint64_t png_size;
	uint32_t w, h;

	if (mmp_read_header(data, size, &info, &err) < 0) {
		fuzz_check_refusal(&err, "mmp_read_header");
		FUZZ_CHECK(mmp_png_size(data, size, 0, &png_size, &err) < 0,
			   "a PNG size for a refused header");
		return;
	}
	FUZZ_CHECK(info.levels >= 1 && info.levels <= 32, "%u levels", info.levels);
	FUZZ_CHECK(mmp_format_name(info.format), "unnamed format %08x", info.format);
	for (unsigned level = 0; level < info.levels; level++)
		check_level(data, size, &info, level);
	FUZZ_CHECK(mmp_level_size(&info, info.levels, &w, &h) < 0, "a level past the last");
	FUZZ_CHECK(mmp_png_size(data, size, info.levels, &png_size, &err) < 0,
		   "a PNG size past the last level");
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_mmp_one(data, size);
	return 0;
}
#endif
