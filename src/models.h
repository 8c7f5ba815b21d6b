/* Readable text views of the model files (FORMATS.md section 7): LNK bone
 * trees, BON offsets, raw ANM tracks, CAM paths and FIG meshes; and the
 * small helpers every text view shares (adb.c, mob.c and mpr.c use them
 * too).
 *
 * Each *_to_text appends YAML-like UTF-8 text to out and returns 0, or
 * returns -1 with err filled (EINVAL and the input offset of the fault) and
 * out as it was.  Inputs are never read past len and nothing is allocated
 * beyond what the input's size can justify. */
#ifndef EIFS_MODELS_H
#define EIFS_MODELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <glib.h>

#include "format_error.h"

/* u32 link_count, then per link child and parent name with their lengths;
 * shown as the nested bone tree. */
int lnk_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err);
/* vec3 per complection variant. */
int bon_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err);
/* One part's track inside <model>.anm/<clip>: rotations, translations,
 * morph frames. */
int anm_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err);
/* 36-byte camera keys until the end. */
int cam_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err);
/* FIG8 / FIG1 mesh; its size must match the counts exactly. */
int fig_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err);
/* "FIG" and a digit 1-9 (the variant count): how a .mod tells meshes from
 * its LNK entry. */
int fig_is_magic(const unsigned char *data, size_t len);

/* ---- shared by the text views ------------------------------------------ */

static inline uint16_t view_u16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t view_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t view_u64(const unsigned char *p)
{
	return (uint64_t)view_u32(p) | (uint64_t)view_u32(p + 4) << 32;
}

static inline float view_f32(const unsigned char *p)
{
	uint32_t u = view_u32(p);
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

/* Two spaces per level. */
void view_indent(GString *out, unsigned depth);

/* The shortest decimal that reads back as the same float ("0.1", not
 * "0.100000001"); NaNs keep their bits: "nan(0x7fc00000)". */
void view_float(GString *out, float f);

/* n little-endian f32 at p as "[a, b, c]". */
void view_floats(GString *out, const unsigned char *p, size_t n);

/* cp1251 text as a double-quoted UTF-8 string; control characters, '"',
 * '\' and the undefined byte 0x98 are escaped (\n \r \t \" \\ \xNN). */
void view_quoted(GString *out, const char *s, size_t n);

/* A name bare when it is made of [A-Za-z0-9_.-] only, else quoted. */
void view_label(GString *out, const char *s, size_t n);

/* Bytes up to the first NUL of a fixed-size field. */
size_t view_field_len(const unsigned char *p, size_t size);

/* Hex dump, 16 bytes a line, each line indented and led by its offset. */
void view_hex(GString *out, const unsigned char *p, size_t n, unsigned depth);

#endif
