/* MMP textures: header, mip levels, decoding of the seven game formats to
 * RGBA8 and encoding back.  FORMATS.md section 3.  Pure functions over
 * memory: no FUSE, no globals, errors returned in a format_error. */
#ifndef EIFS_MMP_H
#define EIFS_MMP_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

#include "format_error.h"

#define MMP_MAGIC 0x00504D4Du
enum { MMP_HEADER_SIZE = 76, MMP_MAX_SIZE = 16384 };

enum mmp_format {
	MMP_DXT1 = 0x31545844,
	MMP_DXT3 = 0x33545844,
	MMP_PNT3 = 0x33544E50,
	MMP_R5G6B5 = 0x00005650,
	MMP_A1R5G5B5 = 0x00005551,
	MMP_A4R4G4B4 = 0x00004444,
	MMP_A8R8G8B8 = 0x00008888,
};

/* One colour channel of an uncompressed pixel: the value is
 * (px & mask) >> shift, its maximum mask >> shift. */
struct mmp_channel {
	uint32_t mask, shift, bits;
};

struct mmp_info {
	uint32_t width, height;
	uint32_t levels;      /* mip levels; 1 for PNT3 */
	uint32_t format;      /* enum mmp_format */
	uint32_t bit_count;   /* as stored; the format alone decides the layout */
	uint32_t payload;     /* PNT3: the payload size of header +12, else 0 */
	uint32_t user_data;   /* header +72, 0 in game files, not used */
	/* Masks the uncompressed formats are decoded with: the header's, or
	 * the format's usual ones when the header has all four masks 0 (as
	 * aspadm's dds2mmp writes).  For DXT and PNT3 as stored. */
	struct mmp_channel a, r, g, b;
};

/* Reads and validates the 76-byte header; needs only those bytes (len may
 * be 76 whatever the file size).  Refuses a width or height of 0 or above
 * MMP_MAX_SIZE, unknown formats, 0 levels or more than a full mip chain,
 * and masks that cannot be decoded (a channel wider than 16 bits, a shift
 * that drops mask bits, a mask outside the pixel). */
int mmp_read_header(const unsigned char *data, size_t len, struct mmp_info *info,
		    struct format_error *err);

/* Dimensions of mip level `level` (0 = base): max(1, w >> level) by
 * max(1, h >> level); -1 if the file has no such level. */
int mmp_level_size(const struct mmp_info *info, unsigned level, uint32_t *w, uint32_t *h);

/* Where level `level` lies in the file: byte offset from the start of the
 * file and stored size (DXT levels: whole 4x4 blocks, at least one; PNT3:
 * the payload).  -1 if the file has no such level.  A file shorter than
 * offset + size cannot be decoded at that level. */
int mmp_level_span(const struct mmp_info *info, unsigned level, uint64_t *offset,
		   uint64_t *size);

/* Decodes one level of a whole MMP file to RGBA8, rows top to bottom as
 * stored (no flip).  *rgba is g_malloc'ed, w*h*4 bytes.  Channels of the
 * uncompressed formats are scaled to 0..255 rounding to nearest:
 * (v * 255 + max / 2) / max, alpha 255 without an alpha mask; DXT colours
 * expand 5/6 bits by bit replication and interpolate with truncation
 * ((2*c0 + c1) / 3, (c0 + c1) / 2), as libsquish does. */
int mmp_decode(const unsigned char *data, size_t len, unsigned level, unsigned char **rgba,
	       uint32_t *w, uint32_t *h, struct format_error *err);

/* Encodes RGBA8 rows (top to bottom) into an MMP appended to out, with
 * `levels` mip levels box-filtered from the base (PNT3: always 1; 0 means
 * a full chain), header masks as the game's files have them.  DXT1/DXT3:
 * a deterministic bounding-box encoder (endpoints on the box diagonal that
 * follows the colours, nearest palette entry per pixel); DXT1 blocks with
 * a pixel of alpha < 128 use the 3-colour + transparent mode.  PNT3: the
 * aligned zero-run encoder of FORMATS 3.4, readable by the CE rule too:
 * alpha-0 pixels whose word is 1..1000000 are written as 0, and an alpha-0
 * pixel that the aligned rule would take for a run gets blue's low bit set.
 * 16-bit formats round each channel to nearest; A1 is set for alpha >= 128. */
int mmp_encode(const unsigned char *rgba, uint32_t w, uint32_t h, enum mmp_format format,
	       unsigned levels, GByteArray *out, struct format_error *err);

/* The name of a format ("DXT1", "R5G6B5", ...), NULL if unknown. */
const char *mmp_format_name(uint32_t format);

/* The size of the PNG view of one level, from the header alone (data may
 * be just the 76 header bytes); it does not check that the level's data
 * is present: see mmp_level_span. */
int mmp_png_size(const unsigned char *data, size_t len, unsigned level, uint64_t *size,
		 struct format_error *err);

/* Decodes one level and appends its PNG (png_write_rgba) to out: exactly
 * the size mmp_png_size reports. */
int mmp_to_png(const unsigned char *data, size_t len, unsigned level, GByteArray *out,
	       struct format_error *err);

#endif
