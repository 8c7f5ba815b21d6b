#include "mmp.h"
#include "pngio.h"

#include <errno.h>
#include <string.h>

/* Header fields (FORMATS 3.1). */
enum {
	OFF_MAGIC = 0, OFF_WIDTH = 4, OFF_HEIGHT = 8, OFF_LEVELS = 12, OFF_FORMAT = 16,
	OFF_BITS = 20, OFF_A = 24, OFF_R = 36, OFF_G = 48, OFF_B = 60, OFF_USER = 72,
};

/* A PNT3 word from 1 to this is a run for the CE reader (FORMATS 3.4). */
#define PNT3_CE_RUN_MAX 1000000u
/* Runs of the aligned rule are below 2^24 and multiples of 16. */
#define PNT3_RUN_LIMIT (1u << 24)

struct format_desc {
	uint32_t format;
	const char *name;
	uint32_t bit_count;
	unsigned pixel_bytes;   /* uncompressed; 0 for DXT */
	unsigned block_bytes;   /* DXT; 0 otherwise */
	struct mmp_channel a, r, g, b;  /* as the game's files have them */
};

static const struct format_desc formats[] = {
	{ MMP_DXT1, "DXT1", 4, 0, 8,
	  { 0x8000, 15, 1 }, { 0x7C00, 10, 5 }, { 0x03E0, 5, 5 }, { 0x001F, 0, 5 } },
	{ MMP_DXT3, "DXT3", 8, 0, 16,
	  { 0xF000, 12, 4 }, { 0x0F00, 8, 4 }, { 0x00F0, 4, 4 }, { 0x000F, 0, 4 } },
	{ MMP_PNT3, "PNT3", 32, 4, 0, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } },
	{ MMP_R5G6B5, "R5G6B5", 16, 2, 0,
	  { 0, 0, 0 }, { 0xF800, 11, 5 }, { 0x07E0, 5, 6 }, { 0x001F, 0, 5 } },
	{ MMP_A1R5G5B5, "A1R5G5B5", 16, 2, 0,
	  { 0x8000, 15, 1 }, { 0x7C00, 10, 5 }, { 0x03E0, 5, 5 }, { 0x001F, 0, 5 } },
	{ MMP_A4R4G4B4, "A4R4G4B4", 16, 2, 0,
	  { 0xF000, 12, 4 }, { 0x0F00, 8, 4 }, { 0x00F0, 4, 4 }, { 0x000F, 0, 4 } },
	{ MMP_A8R8G8B8, "A8R8G8B8", 32, 4, 0,
	  { 0xFF000000u, 24, 8 }, { 0xFF0000, 16, 8 }, { 0xFF00, 8, 8 }, { 0xFF, 0, 8 } },
};

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static const struct format_desc *find_format(uint32_t format)
{
	for (size_t i = 0; i < G_N_ELEMENTS(formats); i++)
		if (formats[i].format == format)
			return &formats[i];
	return NULL;
}

const char *mmp_format_name(uint32_t format)
{
	const struct format_desc *d = find_format(format);

	return d ? d->name : NULL;
}

static int is_dxt(uint32_t format)
{
	return format == MMP_DXT1 || format == MMP_DXT3;
}

/* Levels down to 1x1: 1 + floor(log2(max(w, h))). */
static unsigned full_chain(uint32_t w, uint32_t h)
{
	uint32_t m = w > h ? w : h;
	unsigned n = 1;

	while (m >>= 1)
		n++;
	return n;
}

/* ---- header ----------------------------------------------------------- */

static void read_channel(const unsigned char *p, struct mmp_channel *c)
{
	c->mask = get_u32(p);
	c->shift = get_u32(p + 4);
	c->bits = get_u32(p + 8);
}

/* The generic decoder needs (px & mask) >> shift to keep every mask bit,
 * the mask inside the pixel, and a value small enough for a lookup table. */
static int check_channel(const struct mmp_channel *c, unsigned pixel_bits, uint64_t at,
			 const char *name, struct format_error *err)
{
	if (c->mask == 0)
		return 0;
	if (pixel_bits < 32 && c->mask >> pixel_bits)
		return format_fail(err, EINVAL, at, "%s mask %08x outside a %u-bit pixel",
				   name, c->mask, pixel_bits);
	if (c->shift >= 32 || (c->mask >> c->shift) << c->shift != c->mask)
		return format_fail(err, EINVAL, at + 4, "%s shift %u drops bits of mask %08x",
				   name, c->shift, c->mask);
	if (c->mask >> c->shift > 0xFFFF)
		return format_fail(err, EINVAL, at, "%s mask %08x wider than 16 bits",
				   name, c->mask);
	return 0;
}

static int check_masks(struct mmp_info *info, const struct format_desc *d,
		       struct format_error *err)
{
	unsigned bits = d->pixel_bytes * 8;

	if (!info->a.mask && !info->r.mask && !info->g.mask && !info->b.mask) {
		info->a = d->a;
		info->r = d->r;
		info->g = d->g;
		info->b = d->b;
		return 0;
	}
	if (check_channel(&info->a, bits, OFF_A, "alpha", err) < 0 ||
	    check_channel(&info->r, bits, OFF_R, "red", err) < 0 ||
	    check_channel(&info->g, bits, OFF_G, "green", err) < 0 ||
	    check_channel(&info->b, bits, OFF_B, "blue", err) < 0)
		return -1;
	return 0;
}

static int check_size(uint32_t v, uint64_t at, const char *what, struct format_error *err)
{
	if (v == 0 || v > MMP_MAX_SIZE)
		return format_fail(err, EINVAL, at, "%s %u outside 1..%u", what, v, MMP_MAX_SIZE);
	return 0;
}

static int check_levels(const struct mmp_info *info, struct format_error *err)
{
	unsigned full = full_chain(info->width, info->height);

	if (info->levels == 0 || info->levels > full)
		return format_fail(err, EINVAL, OFF_LEVELS,
				   "%u mip levels, a %ux%u texture has 1..%u", info->levels,
				   info->width, info->height, full);
	return 0;
}

int mmp_read_header(const unsigned char *data, size_t len, struct mmp_info *info,
		    struct format_error *err)
{
	const struct format_desc *d;

	memset(info, 0, sizeof *info);
	if (len < MMP_HEADER_SIZE)
		return format_fail(err, EINVAL, 0, "truncated header: %zu bytes, need %d", len,
				   MMP_HEADER_SIZE);
	if (get_u32(data + OFF_MAGIC) != MMP_MAGIC)
		return format_fail(err, EINVAL, OFF_MAGIC, "bad magic %08x", get_u32(data));
	info->width = get_u32(data + OFF_WIDTH);
	info->height = get_u32(data + OFF_HEIGHT);
	if (check_size(info->width, OFF_WIDTH, "width", err) < 0 ||
	    check_size(info->height, OFF_HEIGHT, "height", err) < 0)
		return -1;
	info->format = get_u32(data + OFF_FORMAT);
	d = find_format(info->format);
	if (!d)
		return format_fail(err, EINVAL, OFF_FORMAT, "unknown format %08x", info->format);
	info->bit_count = get_u32(data + OFF_BITS);
	read_channel(data + OFF_A, &info->a);
	read_channel(data + OFF_R, &info->r);
	read_channel(data + OFF_G, &info->g);
	read_channel(data + OFF_B, &info->b);
	info->user_data = get_u32(data + OFF_USER);
	if (info->format == MMP_PNT3) {
		info->levels = 1;
		info->payload = get_u32(data + OFF_LEVELS);
		return 0;
	}
	info->levels = get_u32(data + OFF_LEVELS);
	if (check_levels(info, err) < 0)
		return -1;
	return is_dxt(info->format) ? 0 : check_masks(info, d, err);
}

/* ---- levels ----------------------------------------------------------- */

/* level < 32 */
static void level_dims(const struct mmp_info *info, unsigned level, uint32_t *w, uint32_t *h)
{
	*w = info->width >> level ? info->width >> level : 1;
	*h = info->height >> level ? info->height >> level : 1;
}

int mmp_level_size(const struct mmp_info *info, unsigned level, uint32_t *w, uint32_t *h)
{
	if (level >= info->levels || level >= 32)
		return -1;
	level_dims(info, level, w, h);
	return 0;
}

static uint64_t level_bytes(const struct format_desc *d, uint32_t w, uint32_t h)
{
	if (d->block_bytes)
		return (uint64_t)((w + 3) / 4) * ((h + 3) / 4) * d->block_bytes;
	return (uint64_t)w * h * d->pixel_bytes;
}

int mmp_level_span(const struct mmp_info *info, unsigned level, uint64_t *offset,
		   uint64_t *size)
{
	const struct format_desc *d = find_format(info->format);
	uint64_t off = MMP_HEADER_SIZE;
	uint32_t w, h;

	if (!d || mmp_level_size(info, level, &w, &h) < 0)
		return -1;
	if (info->format == MMP_PNT3) {
		*offset = off;
		*size = info->payload;
		return 0;
	}
	for (unsigned i = 0; i < level; i++) {
		uint32_t lw, lh;

		level_dims(info, i, &lw, &lh);
		off += level_bytes(d, lw, lh);
	}
	*offset = off;
	*size = level_bytes(d, w, h);
	return 0;
}

/* ---- DXT -------------------------------------------------------------- */

/* 5/6-bit channels to 8 bits by bit replication (libsquish, D3D). */
static void expand_565(uint16_t c, unsigned char px[4])
{
	unsigned r = c >> 11, g = (c >> 5) & 63, b = c & 31;

	px[0] = (unsigned char)(r << 3 | r >> 2);
	px[1] = (unsigned char)(g << 2 | g >> 4);
	px[2] = (unsigned char)(b << 3 | b >> 2);
	px[3] = 255;
}

/* The four colours of a colour block.  DXT3 always uses the 4-colour mode;
 * DXT1 switches to 3 colours + transparent black when c0 <= c1. */
static void dxt_palette(const unsigned char *blk, int dxt1, unsigned char pal[4][4])
{
	uint16_t c0 = (uint16_t)(blk[0] | blk[1] << 8);
	uint16_t c1 = (uint16_t)(blk[2] | blk[3] << 8);

	expand_565(c0, pal[0]);
	expand_565(c1, pal[1]);
	if (!dxt1 || c0 > c1) {
		for (int k = 0; k < 3; k++) {
			pal[2][k] = (unsigned char)((2 * pal[0][k] + pal[1][k]) / 3);
			pal[3][k] = (unsigned char)((pal[0][k] + 2 * pal[1][k]) / 3);
		}
		pal[2][3] = pal[3][3] = 255;
		return;
	}
	for (int k = 0; k < 3; k++)
		pal[2][k] = (unsigned char)((pal[0][k] + pal[1][k]) / 2);
	pal[2][3] = 255;
	memset(pal[3], 0, 4);
}

/* Pixel k of a block is row k / 4, column k % 4; 2-bit indices from the
 * low bits up. */
static void dxt_colours(const unsigned char *blk, int dxt1, unsigned char px[16][4])
{
	unsigned char pal[4][4];
	uint32_t idx = get_u32(blk + 4);

	dxt_palette(blk, dxt1, pal);
	for (int k = 0; k < 16; k++, idx >>= 2)
		memcpy(px[k], pal[idx & 3], 4);
}

/* DXT3 alpha: 16 nibbles, pixel 0 in the low nibble of byte 0, times 17. */
static void dxt3_alpha(const unsigned char *blk, unsigned char px[16][4])
{
	for (int k = 0; k < 16; k++)
		px[k][3] = (unsigned char)(((blk[k / 2] >> (k % 2 * 4)) & 15) * 17);
}

/* Copies the visible part of a block: blocks on the right and bottom edges
 * of a size that is not a multiple of 4 are partial. */
static void put_block(unsigned char px[16][4], unsigned char *out, uint32_t w, uint32_t h,
		      uint32_t x0, uint32_t y0)
{
	uint32_t cols = w - x0 < 4 ? w - x0 : 4;
	uint32_t rows = h - y0 < 4 ? h - y0 : 4;

	for (uint32_t r = 0; r < rows; r++)
		memcpy(out + ((size_t)(y0 + r) * w + x0) * 4, px[r * 4], (size_t)cols * 4);
}

static void decode_dxt(const unsigned char *src, uint32_t format, uint32_t w, uint32_t h,
		       unsigned char *out)
{
	int dxt1 = format == MMP_DXT1;
	unsigned char px[16][4];

	for (uint32_t y = 0; y < h; y += 4) {
		for (uint32_t x = 0; x < w; x += 4) {
			if (dxt1) {
				dxt_colours(src, 1, px);
				src += 8;
			} else {
				dxt_colours(src + 8, 0, px);
				dxt3_alpha(src, px);
				src += 16;
			}
			put_block(px, out, w, h, x, y);
		}
	}
}

/* ---- uncompressed: generic masks --------------------------------------- */

/* Per channel, the 8-bit value of every possible channel value; an absent
 * channel has one entry (255 for alpha, 0 for a colour). */
struct channel_lut {
	uint32_t mask, shift;
	unsigned char *v;
};

static void lut_build(struct channel_lut *l, const struct mmp_channel *c, unsigned absent)
{
	uint32_t max = c->mask ? c->mask >> c->shift : 0;

	l->mask = c->mask;
	l->shift = c->mask ? c->shift : 0;
	l->v = g_malloc((size_t)max + 1);
	if (!c->mask) {
		l->v[0] = (unsigned char)absent;
		return;
	}
	for (uint32_t i = 0; i <= max; i++)
		l->v[i] = (unsigned char)(((uint64_t)i * 255 + max / 2) / max);
}

static inline unsigned char lut_get(const struct channel_lut *l, uint32_t px)
{
	return l->v[(px & l->mask) >> l->shift];
}

static void decode_masked(const unsigned char *src, const struct mmp_info *info,
			  unsigned bytes, uint64_t n, unsigned char *out)
{
	struct channel_lut l[4];

	lut_build(&l[0], &info->r, 0);
	lut_build(&l[1], &info->g, 0);
	lut_build(&l[2], &info->b, 0);
	lut_build(&l[3], &info->a, 255);
	for (uint64_t i = 0; i < n; i++, src += bytes, out += 4) {
		uint32_t px = bytes == 2 ? (uint32_t)(src[0] | src[1] << 8) : get_u32(src);

		out[0] = lut_get(&l[0], px);
		out[1] = lut_get(&l[1], px);
		out[2] = lut_get(&l[2], px);
		out[3] = lut_get(&l[3], px);
	}
	for (int k = 0; k < 4; k++)
		g_free(l[k].v);
}

/* ---- PNT3 ------------------------------------------------------------- */

static void bgra_pixel(const unsigned char *s, unsigned char *d)
{
	d[0] = s[2];
	d[1] = s[1];
	d[2] = s[0];
	d[3] = s[3];
}

/* The aligned rule (FORMATS 3.4): a word is a run of zero bytes iff the
 * output is at a multiple of 16 and the word is a non-zero multiple of 16
 * below 2^24; else it is a B,G,R,A pixel.  The output must come out at
 * exactly `need` bytes, which also bounds what a crafted run can ask for. */
static int decode_pnt3_rle(const unsigned char *p, uint32_t payload, uint64_t need,
			   unsigned char *out, struct format_error *err)
{
	uint64_t o = 0;

	for (uint32_t i = 0; i < payload; i += 4) {
		uint32_t v = get_u32(p + i);

		if (o % 16 == 0 && v && v < PNT3_RUN_LIMIT && v % 16 == 0) {
			if (v > need - o)
				return format_fail(err, EINVAL, MMP_HEADER_SIZE + (uint64_t)i,
						   "zero run of %u bytes at output byte %llu passes "
						   "the image's %llu bytes", v,
						   (unsigned long long)o, (unsigned long long)need);
			memset(out + o, 0, v);
			o += v;
			continue;
		}
		if (o == need)
			return format_fail(err, EINVAL, MMP_HEADER_SIZE + (uint64_t)i,
					   "pixel past the image's %llu bytes",
					   (unsigned long long)need);
		bgra_pixel(p + i, out + o);
		o += 4;
	}
	if (o != need)
		return format_fail(err, EINVAL, MMP_HEADER_SIZE + (uint64_t)payload,
				   "payload decodes to %llu bytes, the image has %llu",
				   (unsigned long long)o, (unsigned long long)need);
	return 0;
}

/* Checks a compressed payload before the image is allocated: whole words,
 * and enough of them, as one word makes at most 2^24 - 16 bytes (so that a
 * few bytes cannot make the caller allocate a gigabyte in vain). */
static int check_pnt3(const struct mmp_info *info, struct format_error *err)
{
	uint64_t need = (uint64_t)info->width * info->height * 4;

	if (info->payload >= need)
		return 0;
	if (info->payload % 4)
		return format_fail(err, EINVAL, OFF_LEVELS,
				   "compressed payload of %u bytes is not whole words",
				   info->payload);
	if ((uint64_t)info->payload / 4 * (PNT3_RUN_LIMIT - 16) < need)
		return format_fail(err, EINVAL, OFF_LEVELS,
				   "compressed payload of %u bytes cannot make %llu bytes",
				   info->payload, (unsigned long long)need);
	return 0;
}

/* A payload of at least w*h*4 bytes is raw (CE, verified on modifier0000). */
static int decode_pnt3(const unsigned char *p, const struct mmp_info *info, uint64_t need,
		       unsigned char *out, struct format_error *err)
{
	if (info->payload >= need) {
		for (uint64_t i = 0; i < need; i += 4)
			bgra_pixel(p + i, out + i);
		return 0;
	}
	return decode_pnt3_rle(p, info->payload, need, out, err);
}

/* ---- decoding --------------------------------------------------------- */

static int decode_level(const unsigned char *src, const struct mmp_info *info, uint32_t w,
			uint32_t h, unsigned char *out, struct format_error *err)
{
	uint64_t n = (uint64_t)w * h;

	switch (info->format) {
	case MMP_DXT1:
	case MMP_DXT3:
		decode_dxt(src, info->format, w, h, out);
		return 0;
	case MMP_PNT3:
		return decode_pnt3(src, info, n * 4, out, err);
	default:
		decode_masked(src, info, find_format(info->format)->pixel_bytes, n, out);
		return 0;
	}
}

/* Finds level `level` of a whole file and checks its data is there. */
static int locate(const unsigned char *data, size_t len, unsigned level, struct mmp_info *info,
		  uint64_t *off, uint32_t *w, uint32_t *h, struct format_error *err)
{
	uint64_t size;

	if (mmp_read_header(data, len, info, err) < 0)
		return -1;
	if (mmp_level_span(info, level, off, &size) < 0)
		return format_fail(err, EINVAL, OFF_LEVELS, "no mip level %u: the file has %u",
				   level, info->levels);
	level_dims(info, level, w, h);
	if (*off + size > len)
		return format_fail(err, EINVAL, *off,
				   "level %u: %llu bytes at %llu pass the end of the %zu-byte file",
				   level, (unsigned long long)size, (unsigned long long)*off, len);
	return info->format == MMP_PNT3 ? check_pnt3(info, err) : 0;
}

int mmp_decode(const unsigned char *data, size_t len, unsigned level, unsigned char **rgba,
	       uint32_t *w, uint32_t *h, struct format_error *err)
{
	struct mmp_info info;
	uint64_t off;
	uint32_t lw = 0, lh = 0;   /* set by locate; gcc cannot tell */
	unsigned char *out;

	*rgba = NULL;
	if (locate(data, len, level, &info, &off, &lw, &lh, err) < 0)
		return -1;
	/* at most 16384 * 16384 * 4 = 1 GiB: fits size_t even on 32 bits */
	out = g_try_malloc((size_t)lw * lh * 4);
	if (!out)
		return format_fail(err, ENOMEM, 0, "no memory for a %ux%u image", lw, lh);
	if (decode_level(data + off, &info, lw, lh, out, err) < 0) {
		g_free(out);
		return -1;
	}
	*rgba = out;
	*w = lw;
	*h = lh;
	return 0;
}

/* ---- PNG views ---------------------------------------------------------- */

int mmp_png_size(const unsigned char *data, size_t len, unsigned level, uint64_t *size,
		 struct format_error *err)
{
	struct mmp_info info;
	uint32_t w, h;

	if (mmp_read_header(data, len, &info, err) < 0)
		return -1;
	if (mmp_level_size(&info, level, &w, &h) < 0)
		return format_fail(err, EINVAL, OFF_LEVELS, "no mip level %u: the file has %u",
				   level, info.levels);
	*size = png_stored_size(w, h);
	return 0;
}

int mmp_to_png(const unsigned char *data, size_t len, unsigned level, GByteArray *out,
	       struct format_error *err)
{
	unsigned char *rgba;
	uint32_t w, h;

	if (mmp_decode(data, len, level, &rgba, &w, &h, err) < 0)
		return -1;
	png_write_rgba(rgba, w, h, out);
	g_free(rgba);
	return 0;
}

/* ---- encoding: mip chain ------------------------------------------------ */

/* The next level: each pixel the rounded mean of the 2x2 (2x1, 1x2) source
 * pixels under it; an odd last row or column is dropped. */
static unsigned char *box_half(const unsigned char *src, uint32_t w, uint32_t h, uint32_t *nw,
			       uint32_t *nh)
{
	uint32_t dw = w > 1 ? w / 2 : 1, dh = h > 1 ? h / 2 : 1;
	unsigned sx = w > 1 ? 2 : 1, sy = h > 1 ? 2 : 1, n = sx * sy;
	unsigned char *dst = g_malloc((size_t)dw * dh * 4);

	for (uint32_t y = 0; y < dh; y++) {
		for (uint32_t x = 0; x < dw; x++) {
			for (int c = 0; c < 4; c++) {
				unsigned sum = 0;

				for (unsigned j = 0; j < sy; j++)
					for (unsigned i = 0; i < sx; i++)
						sum += src[(((size_t)y * sy + j) * w + x * sx + i) * 4 + c];
				dst[((size_t)y * dw + x) * 4 + c] = (unsigned char)((sum + n / 2) / n);
			}
		}
	}
	*nw = dw;
	*nh = dh;
	return dst;
}

/* ---- encoding: DXT ------------------------------------------------------ */

/* The 16 pixels of a block; outside the image the edge pixels repeat, so
 * that the hidden part of a partial block does not pull the endpoints. */
static void fetch_block(const unsigned char *rgba, uint32_t w, uint32_t h, uint32_t x0,
			uint32_t y0, unsigned char px[16][4])
{
	for (uint32_t r = 0; r < 4; r++) {
		uint32_t y = y0 + r < h ? y0 + r : h - 1;

		for (uint32_t c = 0; c < 4; c++) {
			uint32_t x = x0 + c < w ? x0 + c : w - 1;

			memcpy(px[r * 4 + c], rgba + ((size_t)y * w + x) * 4, 4);
		}
	}
}

static uint16_t pack_565(const int c[3])
{
	unsigned r = ((unsigned)c[0] * 31 + 127) / 255;
	unsigned g = ((unsigned)c[1] * 63 + 127) / 255;
	unsigned b = ((unsigned)c[2] * 31 + 127) / 255;

	return (uint16_t)(r << 11 | g << 5 | b);
}

/* Endpoints: the corners of the colours' bounding box on the diagonal that
 * follows them (a channel falling while the widest one rises is swapped).
 * Only pixels with use[k] set count; at least one has it. */
static void dxt_endpoints(unsigned char px[16][4], const int use[16], uint16_t *hi,
			  uint16_t *lo)
{
	int mn[3] = { 255, 255, 255 }, mx[3] = { 0, 0, 0 }, sum[3] = { 0, 0, 0 }, n = 0, wide = 0;
	long cov[3] = { 0, 0, 0 };

	for (int k = 0; k < 16; k++) {
		if (!use[k])
			continue;
		n++;
		for (int c = 0; c < 3; c++) {
			mn[c] = px[k][c] < mn[c] ? px[k][c] : mn[c];
			mx[c] = px[k][c] > mx[c] ? px[k][c] : mx[c];
			sum[c] += px[k][c];
		}
	}
	for (int c = 1; c < 3; c++)
		if (mx[c] - mn[c] > mx[wide] - mn[wide])
			wide = c;
	for (int k = 0; k < 16; k++)
		for (int c = 0; use[k] && c < 3; c++)
			cov[c] += (long)(px[k][c] * n - sum[c]) * (px[k][wide] * n - sum[wide]);
	for (int c = 0; c < 3; c++) {
		if (cov[c] < 0) {
			int t = mn[c];

			mn[c] = mx[c];
			mx[c] = t;
		}
	}
	*hi = pack_565(mx);
	*lo = pack_565(mn);
}

static unsigned colour_dist(const unsigned char a[4], const unsigned char b[4])
{
	unsigned d = 0;

	for (int c = 0; c < 3; c++)
		d += (unsigned)((a[c] - b[c]) * (a[c] - b[c]));
	return d;
}

/* Writes c0, c1 and, per pixel, the nearest of the first `choices` palette
 * entries; pixels without use[k] get index 3 (transparent in 3-colour mode). */
static void dxt_indices(unsigned char *blk, uint16_t c0, uint16_t c1, int dxt1, unsigned choices,
			unsigned char px[16][4], const int use[16])
{
	unsigned char pal[4][4];
	uint32_t idx = 0;

	blk[0] = (unsigned char)c0;
	blk[1] = (unsigned char)(c0 >> 8);
	blk[2] = (unsigned char)c1;
	blk[3] = (unsigned char)(c1 >> 8);
	dxt_palette(blk, dxt1, pal);
	for (int k = 15; k >= 0; k--) {
		unsigned best = 3;

		if (use[k]) {
			best = 0;
			for (unsigned i = 1; i < choices; i++)
				if (colour_dist(px[k], pal[i]) < colour_dist(px[k], pal[best]))
					best = i;
		}
		idx = idx << 2 | best;
	}
	put_u32(blk + 4, idx);
}

/* DXT1: 4-colour mode (c0 > c1) for opaque blocks, 3-colour mode (c0 <= c1)
 * with index 3 for pixels of alpha < 128; equal endpoints use index 0. */
static void encode_dxt1_block(unsigned char px[16][4], unsigned char *blk)
{
	int use[16], opaque = 0;
	uint16_t hi, lo;

	for (int k = 0; k < 16; k++)
		opaque += use[k] = px[k][3] >= 128;
	if (!opaque) {
		memset(blk, 0, 4);
		memset(blk + 4, 0xFF, 4);
		return;
	}
	dxt_endpoints(px, use, &hi, &lo);
	if (opaque < 16 || hi == lo)
		dxt_indices(blk, hi < lo ? hi : lo, hi < lo ? lo : hi, 1, 3, px, use);
	else
		dxt_indices(blk, hi > lo ? hi : lo, hi > lo ? lo : hi, 1, 4, px, use);
}

static void encode_dxt3_block(unsigned char px[16][4], unsigned char *blk)
{
	static const int all[16] = { 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
	uint16_t hi, lo;

	memset(blk, 0, 8);
	for (int k = 0; k < 16; k++)
		blk[k / 2] |= (unsigned char)((px[k][3] * 15 + 127) / 255 << (k % 2 * 4));
	dxt_endpoints(px, all, &hi, &lo);
	dxt_indices(blk + 8, hi, lo, 0, 4, px, all);
}

static void encode_dxt(const unsigned char *rgba, uint32_t w, uint32_t h, uint32_t format,
		       unsigned char *out)
{
	unsigned char px[16][4];

	for (uint32_t y = 0; y < h; y += 4) {
		for (uint32_t x = 0; x < w; x += 4) {
			fetch_block(rgba, w, h, x, y, px);
			if (format == MMP_DXT1) {
				encode_dxt1_block(px, out);
				out += 8;
			} else {
				encode_dxt3_block(px, out);
				out += 16;
			}
		}
	}
}

/* ---- encoding: uncompressed --------------------------------------------- */

/* An 8-bit value on a channel of max = mask >> shift, rounded to nearest. */
static uint32_t quantise(unsigned v, const struct mmp_channel *c)
{
	uint32_t max = c->mask >> c->shift;

	if (!c->mask)
		return 0;
	return (uint32_t)(((uint64_t)v * max + 127) / 255) << c->shift;
}

static void encode_masked(const unsigned char *rgba, uint64_t n, const struct format_desc *d,
			  unsigned char *out)
{
	for (uint64_t i = 0; i < n; i++, rgba += 4, out += d->pixel_bytes) {
		uint32_t px = quantise(rgba[0], &d->r) | quantise(rgba[1], &d->g) |
			      quantise(rgba[2], &d->b) | quantise(rgba[3], &d->a);

		out[0] = (unsigned char)px;
		out[1] = (unsigned char)(px >> 8);
		if (d->pixel_bytes == 4) {
			out[2] = (unsigned char)(px >> 16);
			out[3] = (unsigned char)(px >> 24);
		}
	}
}

/* ---- encoding: PNT3 ------------------------------------------------------ */

/* The word of pixel i, changed where a reader could take it for a run:
 * 1..1000000 (CE rule) becomes 0; at an aligned output position (i % 4 == 0)
 * a multiple of 16 below 2^24 (aligned rule) gets blue's low bit.  Only
 * pixels of alpha 0 are ever changed. */
static uint32_t pnt3_word(const unsigned char *rgba, uint64_t i)
{
	const unsigned char *p = rgba + i * 4;
	uint32_t v = (uint32_t)p[2] | (uint32_t)p[1] << 8 | (uint32_t)p[0] << 16 |
		     (uint32_t)p[3] << 24;

	if (v <= PNT3_CE_RUN_MAX)
		return 0;
	if (i % 4 == 0 && v < PNT3_RUN_LIMIT && v % 16 == 0)
		return v | 1;
	return v;
}

/* Zero pixels from i on, in whole 16-byte groups, at most 1000000 bytes
 * (a multiple of 16) so that the CE rule reads the run as a run too. */
static uint64_t zero_run(const unsigned char *rgba, uint64_t i, uint64_t n)
{
	uint64_t j = i, cap = PNT3_CE_RUN_MAX / 4;

	while (j < n && j - i < cap && pnt3_word(rgba, j) == 0)
		j++;
	return (j - i) / 4 * 4;
}

/* Zero runs only at 16-byte aligned output, as multiples of 16 up to
 * 1000000 (below 2^24); everything else literal (FORMATS 3.4, Kyr4l).  Returns the payload size,
 * at most n * 4. */
static size_t encode_pnt3(const unsigned char *rgba, uint64_t n, unsigned char *out)
{
	unsigned char *o = out;
	uint64_t i = 0;

	while (i < n) {
		uint32_t v = pnt3_word(rgba, i);
		uint64_t run = v == 0 && i % 4 == 0 ? zero_run(rgba, i, n) : 0;

		if (run) {
			put_u32(o, (uint32_t)(run * 4));
			i += run;
		} else {
			put_u32(o, v);
			i++;
		}
		o += 4;
	}
	return (size_t)(o - out);
}

/* ---- encoding ------------------------------------------------------------ */

static void put_header(unsigned char *p, const struct format_desc *d, uint32_t w, uint32_t h,
		       uint32_t levels)
{
	const struct mmp_channel *ch[4] = { &d->a, &d->r, &d->g, &d->b };

	memset(p, 0, MMP_HEADER_SIZE);
	put_u32(p + OFF_MAGIC, MMP_MAGIC);
	put_u32(p + OFF_WIDTH, w);
	put_u32(p + OFF_HEIGHT, h);
	put_u32(p + OFF_LEVELS, levels);
	put_u32(p + OFF_FORMAT, d->format);
	put_u32(p + OFF_BITS, d->bit_count);
	for (int i = 0; i < 4; i++) {
		put_u32(p + OFF_A + 12 * i, ch[i]->mask);
		put_u32(p + OFF_A + 12 * i + 4, ch[i]->shift);
		put_u32(p + OFF_A + 12 * i + 8, ch[i]->bits);
	}
}

/* Appends one level's data to out. */
static void encode_level(const unsigned char *rgba, uint32_t w, uint32_t h,
			 const struct format_desc *d, GByteArray *out)
{
	size_t at = out->len;

	g_byte_array_set_size(out, (guint)(at + level_bytes(d, w, h)));
	if (d->block_bytes)
		encode_dxt(rgba, w, h, d->format, out->data + at);
	else if (d->format == MMP_PNT3)
		g_byte_array_set_size(out, (guint)(at + encode_pnt3(rgba, (uint64_t)w * h,
								     out->data + at)));
	else
		encode_masked(rgba, (uint64_t)w * h, d, out->data + at);
}

static int check_encode_args(uint32_t w, uint32_t h, const struct format_desc *d,
			     uint32_t format, unsigned levels, struct format_error *err)
{
	if (check_size(w, OFF_WIDTH, "width", err) < 0 ||
	    check_size(h, OFF_HEIGHT, "height", err) < 0)
		return -1;
	if (!d)
		return format_fail(err, EINVAL, OFF_FORMAT, "unknown format %08x", format);
	if (levels > full_chain(w, h))
		return format_fail(err, EINVAL, OFF_LEVELS, "%u mip levels, a %ux%u texture has 1..%u",
				   levels, w, h, full_chain(w, h));
	return 0;
}

int mmp_encode(const unsigned char *rgba, uint32_t w, uint32_t h, enum mmp_format format,
	       unsigned levels, GByteArray *out, struct format_error *err)
{
	const struct format_desc *d = find_format((uint32_t)format);
	size_t base = out->len;
	const unsigned char *level = rgba;
	unsigned char *owned = NULL;   /* the current level when it is not rgba */
	uint32_t lw = w, lh = h;

	if (check_encode_args(w, h, d, (uint32_t)format, levels, err) < 0)
		return -1;
	if (format == MMP_PNT3)
		levels = 1;
	else if (levels == 0)
		levels = full_chain(w, h);
	g_byte_array_set_size(out, (guint)(base + MMP_HEADER_SIZE));
	put_header(out->data + base, d, w, h, levels);
	for (unsigned i = 0; i < levels; i++) {
		if (i > 0) {
			unsigned char *next = box_half(level, lw, lh, &lw, &lh);

			g_free(owned);
			level = owned = next;
		}
		encode_level(level, lw, lh, d, out);
	}
	g_free(owned);
	if (format == MMP_PNT3)
		put_u32(out->data + base + OFF_LEVELS, out->len - base - MMP_HEADER_SIZE);
	return 0;
}
