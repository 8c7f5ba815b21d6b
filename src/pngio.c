#include "pngio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
/* libpng's header by its versioned path: <png.h> would find this module's
 * own src/png.h first (-I src comes before PNG_CFLAGS) */
#include <png.h>
#include <zlib.h>

/* PNG allows 2^31 - 1 pixels a side. */
#define PNG_MAX_SIDE 0x7FFFFFFFu
/* png_read_rgba's limits: a 1 GiB image at most. */
#define READ_MAX_SIDE 65536u
#define READ_MAX_PIXELS (1u << 28)
/* Deflate makes at most 1032 bytes of one (a 258-byte match costs at
 * least two bits); the slack covers the zlib and block headers. */
#define DEFLATE_MAX_RATIO 1032u
#define DEFLATE_SLACK 1024u

static const unsigned char signature[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n' };

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

/* Bytes of the filtered image data: one filter byte per row. */
static uint64_t raw_size(uint32_t w, uint32_t h)
{
	return (uint64_t)h * ((uint64_t)w * 4 + 1);
}

/* zlib header, stored blocks with their 5-byte headers, Adler-32. */
static uint64_t zlib_size(uint64_t raw)
{
	return 2 + 5 * ceil_div(raw, PNG_STORED_BLOCK) + raw + 4;
}

uint64_t png_stored_size(uint32_t w, uint32_t h)
{
	uint64_t z;

	if (w == 0 || h == 0 || w > PNG_MAX_SIDE || h > PNG_MAX_SIDE)
		return 0;
	z = zlib_size(raw_size(w, h));   /* < 2^64: raw < 2^31 * 2^33 * (1 + 1e-4) */
	return sizeof signature + 25 + z + 12 * ceil_div(z, PNG_IDAT_SIZE) + 12;
}

/* ---- writer ------------------------------------------------------------- */

/* Writes the zlib stream straight into the output buffer, framing it in
 * IDAT chunks and stored blocks as it goes; copies and checksums work on
 * whole spans (rows, chunk pieces), never per byte. */
struct png_sink {
	unsigned char *p;        /* next byte of out */
	unsigned char *chunk;    /* type field of the open IDAT, NULL before the first */
	uint32_t chunk_len;      /* its data length */
	uint32_t chunk_left;     /* zlib bytes still to go into it */
	uint64_t z_left;         /* zlib bytes not yet written */
	uint32_t block_left;     /* filtered bytes still to go into the open stored block */
	uint64_t raw_left;       /* filtered bytes not yet written */
	uLong adler;
};

static unsigned char *chunk_begin(unsigned char *p, uint32_t len, const char type[4])
{
	put_be32(p, len);
	memcpy(p + 4, type, 4);
	return p + 8;
}

/* CRC over the type and data that start at type. */
static unsigned char *chunk_end(unsigned char *type, uint32_t len)
{
	uLong crc = crc32(0L, type, len + 4);

	put_be32(type + 4 + len, (uint32_t)crc);
	return type + 8 + len;
}

static void idat_next(struct png_sink *s)
{
	if (s->chunk)
		s->p = chunk_end(s->chunk, s->chunk_len);
	s->chunk_len = (uint32_t)(s->z_left < PNG_IDAT_SIZE ? s->z_left : PNG_IDAT_SIZE);
	s->chunk_left = s->chunk_len;
	s->p = chunk_begin(s->p, s->chunk_len, "IDAT");
	s->chunk = s->p - 4;
}

/* Appends n bytes of the zlib stream. */
static void z_put(struct png_sink *s, const unsigned char *src, size_t n)
{
	while (n) {
		size_t k;

		if (s->chunk_left == 0)
			idat_next(s);
		k = n < s->chunk_left ? n : s->chunk_left;
		memcpy(s->p, src, k);
		s->p += k;
		s->chunk_left -= (uint32_t)k;
		s->z_left -= k;
		src += k;
		n -= k;
	}
}

static void block_next(struct png_sink *s)
{
	unsigned char hdr[5];
	uint32_t len = (uint32_t)(s->raw_left < PNG_STORED_BLOCK ? s->raw_left : PNG_STORED_BLOCK);

	hdr[0] = s->raw_left == len;   /* BFINAL, BTYPE 00 = stored */
	hdr[1] = (unsigned char)len;
	hdr[2] = (unsigned char)(len >> 8);
	hdr[3] = (unsigned char)~len;
	hdr[4] = (unsigned char)(~len >> 8);
	z_put(s, hdr, sizeof hdr);
	s->block_left = len;
}

/* Appends n bytes of filtered image data. */
static void raw_put(struct png_sink *s, const unsigned char *src, size_t n)
{
	s->adler = adler32(s->adler, src, (uInt)n);
	while (n) {
		size_t k;

		if (s->block_left == 0)
			block_next(s);
		k = n < s->block_left ? n : s->block_left;
		z_put(s, src, k);
		s->block_left -= (uint32_t)k;
		s->raw_left -= k;
		src += k;
		n -= k;
	}
}

static unsigned char *put_ihdr(unsigned char *p, uint32_t w, uint32_t h)
{
	unsigned char *type;

	p = chunk_begin(p, 13, "IHDR");
	type = p - 4;
	put_be32(p, w);
	put_be32(p + 4, h);
	p[8] = 8;    /* bit depth */
	p[9] = 6;    /* colour type RGBA */
	p[10] = 0;   /* deflate */
	p[11] = 0;   /* filter method 0 */
	p[12] = 0;   /* no interlace */
	return chunk_end(type, 13);
}

static void put_image(struct png_sink *s, const unsigned char *rgba, uint32_t w, uint32_t h)
{
	static const unsigned char zlib_header[2] = { 0x78, 0x01 };  /* deflate, 32K window */
	static const unsigned char filter_none = 0;
	size_t row = (size_t)w * 4;
	unsigned char adler[4];

	z_put(s, zlib_header, 2);
	for (uint32_t y = 0; y < h; y++) {
		raw_put(s, &filter_none, 1);
		raw_put(s, rgba + row * y, row);
	}
	put_be32(adler, (uint32_t)s->adler);
	z_put(s, adler, 4);
	s->p = chunk_end(s->chunk, s->chunk_len);
}

void png_write_rgba(const unsigned char *rgba, uint32_t w, uint32_t h, GByteArray *out)
{
	uint64_t size = png_stored_size(w, h);
	size_t at = out->len;
	struct png_sink s = { 0 };
	unsigned char *p;

	/* a caller's bug: writing past a wrong size would corrupt memory */
	if (size == 0 || size > (uint64_t)G_MAXUINT - at)
		abort();
	g_byte_array_set_size(out, (guint)(at + size));
	p = out->data + at;
	memcpy(p, signature, sizeof signature);
	p = put_ihdr(p + sizeof signature, w, h);
	s.p = p;
	s.raw_left = raw_size(w, h);
	s.z_left = zlib_size(s.raw_left);
	s.adler = adler32(0L, NULL, 0);
	put_image(&s, rgba, w, h);
	p = chunk_begin(s.p, 0, "IEND");
	chunk_end(p - 4, 0);
}

/* ---- reader ------------------------------------------------------------- */

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* IHDR's width and height sit at 16 and 20 in every valid PNG. */
static int check_dimensions(const png_image *img, const unsigned char *data,
			    struct format_error *err)
{
	if (img->width > READ_MAX_SIDE)
		return format_fail(err, EINVAL, 16, "width %u above %u", get_be32(data + 16),
				   READ_MAX_SIDE);
	if (img->height > READ_MAX_SIDE)
		return format_fail(err, EINVAL, 20, "height %u above %u", get_be32(data + 20),
				   READ_MAX_SIDE);
	if ((uint64_t)img->width * img->height > READ_MAX_PIXELS)
		return format_fail(err, EINVAL, 16, "%ux%u is more than %u pixels", img->width,
				   img->height, READ_MAX_PIXELS);
	return 0;
}

/* Bytes of the IDAT chunks: the compressed image.  A chunk is a 4-byte
 * length, a 4-byte type, the data and a 4-byte CRC. */
static uint64_t idat_bytes(const unsigned char *data, size_t len)
{
	uint64_t sum = 0;
	size_t at = sizeof signature;

	while (len - at >= 12 && get_be32(data + at) <= len - at - 12) {
		uint32_t n = get_be32(data + at);

		if (memcmp(data + at + 4, "IDAT", 4) == 0)
			sum += n;
		at += 12 + (size_t)n;
	}
	return sum;
}

/* The bytes the image's pixels take before compression, from IHDR's bit
 * depth (+24) and colour type (+25), filter bytes left out: what the IDAT
 * data must at least inflate to. */
static uint64_t pixel_bytes(const png_image *img, const unsigned char *data)
{
	static const unsigned channels[7] = { 1, 0, 3, 1, 2, 0, 4 };
	unsigned bits = data[24] * (data[25] < 7 ? channels[data[25]] : 0);

	return (uint64_t)img->height * (((uint64_t)img->width * (bits ? bits : 1) + 7) / 8);
}

/* Refuses, before the image is allocated, a header that asks for more
 * pixels than the compressed data can make: a 69-byte PNG can say
 * 16384 x 16384, 1 GiB of RGBA. */
static int check_data(const png_image *img, const unsigned char *data, size_t len,
		      struct format_error *err)
{
	uint64_t have = idat_bytes(data, len), need = pixel_bytes(img, data);

	if (need > have * DEFLATE_MAX_RATIO + DEFLATE_SLACK)
		return format_fail(err, EINVAL, 16,
				   "%ux%u image of %llu bytes cannot come out of %llu bytes of IDAT data",
				   img->width, img->height, (unsigned long long)need,
				   (unsigned long long)have);
	return 0;
}

int png_read_rgba(const unsigned char *data, size_t len, unsigned char **rgba, uint32_t *w,
		  uint32_t *h, struct format_error *err)
{
	png_image img;
	unsigned char *buf;

	*rgba = NULL;
	if (len < 24 || memcmp(data, signature, sizeof signature) != 0)
		return format_fail(err, EINVAL, 0, "not a PNG");
	memset(&img, 0, sizeof img);
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&img, data, len))
		return format_fail(err, EINVAL, 0, "PNG: %s", img.message);
	if (check_dimensions(&img, data, err) < 0 || check_data(&img, data, len, err) < 0) {
		png_image_free(&img);
		return -1;
	}
	img.format = PNG_FORMAT_RGBA;
	buf = g_try_malloc(PNG_IMAGE_SIZE(img));
	if (!buf) {
		png_image_free(&img);
		return format_fail(err, ENOMEM, 0, "no memory for a %ux%u image", img.width,
				   img.height);
	}
	if (!png_image_finish_read(&img, NULL, buf, 0, NULL)) {
		g_free(buf);
		return format_fail(err, EINVAL, 0, "PNG: %s", img.message);
	}
	*rgba = buf;
	*w = img.width;
	*h = img.height;
	return 0;
}
