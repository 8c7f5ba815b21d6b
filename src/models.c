#include "models.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "cp1251.h"

/* ---- shared by the text views ------------------------------------------ */

void view_indent(GString *out, unsigned depth)
{
	for (unsigned i = 0; i < depth; i++)
		g_string_append(out, "  ");
}

void view_float(GString *out, float f)
{
	static const char *const fmt[] = { "%.1g", "%.2g", "%.3g", "%.4g", "%.5g",
					   "%.6g", "%.7g", "%.8g", "%.9g" };
	char buf[G_ASCII_DTOSTR_BUF_SIZE], *e;
	uint32_t bits;
	size_t i;

	if (isnan(f)) {
		memcpy(&bits, &f, sizeof bits);
		g_string_append_printf(out, "nan(0x%08x)", bits);
		return;
	}
	if (isinf(f)) {
		g_string_append(out, f < 0 ? "-inf" : "inf");
		return;
	}
	/* g_ascii_*: a '.' whatever the locale; 9 digits always round-trip */
	for (i = 0; i < G_N_ELEMENTS(fmt) - 1; i++) {
		g_ascii_formatd(buf, sizeof buf, fmt[i], f);
		if ((float)g_ascii_strtod(buf, NULL) == f)
			break;
	}
	/* few digits turn %g exponential early ("4e+01" for 40): what %.9g
	 * prints without an exponent is printed in full (%g uses one only
	 * for an exponent of at least the precision, so no digit is lost) */
	e = strchr(buf, 'e');
	if (e && atoi(e + 1) >= 0 && atoi(e + 1) < 9)
		i = (size_t)atoi(e + 1);
	g_ascii_formatd(buf, sizeof buf, fmt[i], f);
	g_string_append(out, buf);
}

void view_floats(GString *out, const unsigned char *p, size_t n)
{
	g_string_append_c(out, '[');
	for (size_t i = 0; i < n; i++) {
		if (i)
			g_string_append(out, ", ");
		view_float(out, view_f32(p + 4 * i));
	}
	g_string_append_c(out, ']');
}

static int needs_escape(unsigned char c)
{
	return c < 0x20 || c == '"' || c == '\\' || c == 0x7f || c == 0x98;
}

static void append_escape(GString *out, unsigned char c)
{
	switch (c) {
	case '\n': g_string_append(out, "\\n"); break;
	case '\r': g_string_append(out, "\\r"); break;
	case '\t': g_string_append(out, "\\t"); break;
	case '"': g_string_append(out, "\\\""); break;
	case '\\': g_string_append(out, "\\\\"); break;
	default: g_string_append_printf(out, "\\x%02X", c); break;
	}
}

void view_quoted(GString *out, const char *s, size_t n)
{
	size_t run = 0;

	g_string_append_c(out, '"');
	for (size_t i = 0; i < n; i++) {
		if (!needs_escape((unsigned char)s[i]))
			continue;
		cp1251_to_utf8(s + run, i - run, NULL, out);
		append_escape(out, (unsigned char)s[i]);
		run = i + 1;
	}
	cp1251_to_utf8(s + run, n - run, NULL, out);
	g_string_append_c(out, '"');
}

void view_label(GString *out, const char *s, size_t n)
{
	int bare = n > 0;

	for (size_t i = 0; bare && i < n; i++)
		bare = g_ascii_isalnum(s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-';
	if (bare)
		g_string_append_len(out, s, (gssize)n);
	else
		view_quoted(out, s, n);
}

size_t view_field_len(const unsigned char *p, size_t size)
{
	const unsigned char *nul = memchr(p, 0, size);

	return nul ? (size_t)(nul - p) : size;
}

void view_hex(GString *out, const unsigned char *p, size_t n, unsigned depth)
{
	for (size_t at = 0; at < n; at += 16) {
		view_indent(out, depth);
		g_string_append_printf(out, "%08zx:", at);
		for (size_t i = at; i < n && i < at + 16; i++)
			g_string_append_printf(out, " %02x", p[i]);
		g_string_append_c(out, '\n');
	}
}

/* Lists of fixed-size float vectors, one a line: "<indent>- [x, y, z]". */
static void float_rows(GString *out, const char *key, const unsigned char *p, size_t rows,
		       size_t width, unsigned depth)
{
	view_indent(out, depth);
	g_string_append_printf(out, "%s:%s\n", key, rows ? "" : " []");
	for (size_t r = 0; r < rows; r++) {
		view_indent(out, depth + 1);
		g_string_append(out, "- ");
		view_floats(out, p + r * width * 4, width);
		g_string_append_c(out, '\n');
	}
}

/* Trailing NULs of a name are its terminator: real files count it in the
 * length, CE says it may be missing. */
static size_t name_len(const unsigned char *p, size_t n)
{
	while (n > 0 && p[n - 1] == 0)
		n--;
	return n;
}

/* ---- LNK (FORMATS 7.2) ------------------------------------------------- */

enum { LNK_MAX_DEPTH = 64 }; /* bounds the indentation a crafted chain of bones costs */

struct lnk_bone {
	const unsigned char *name, *parent;
	size_t name_len, parent_len;
	uint64_t at;             /* offset of the link, for errors */
	long first_child, last_child, next_sibling;
};

struct lnk {
	struct lnk_bone *bones;
	uint32_t n;
	uint32_t shown;
};

/* One name field: u32 length, then that many bytes. */
static int lnk_name(const unsigned char *data, size_t len, size_t *at, const unsigned char **name,
		    size_t *n, struct format_error *err)
{
	uint32_t l;

	if (len - *at < 4)
		return format_fail(err, EINVAL, *at, "truncated name length: %zu bytes left, need 4",
				   len - *at);
	l = view_u32(data + *at);
	if (l > len - *at - 4)
		return format_fail(err, EINVAL, *at, "name of %u bytes runs past the end (%zu bytes left)",
				   l, len - *at - 4);
	*name = data + *at + 4;
	*n = name_len(*name, l);
	*at += 4 + (size_t)l;
	return 0;
}

static int lnk_parse(const unsigned char *data, size_t len, struct lnk *l, struct format_error *err)
{
	size_t at = 4;

	if (len < 4)
		return format_fail(err, EINVAL, 0, "truncated link count: %zu bytes, need 4", len);
	l->n = view_u32(data);
	if (l->n > (len - 4) / 8)
		return format_fail(err, EINVAL, 0, "%u links cannot fit in %zu bytes (8 each at least)",
				   l->n, len - 4);
	l->bones = g_new0(struct lnk_bone, l->n ? l->n : 1);
	for (uint32_t i = 0; i < l->n; i++) {
		struct lnk_bone *b = &l->bones[i];

		b->at = at;
		b->first_child = b->last_child = b->next_sibling = -1;
		if (lnk_name(data, len, &at, &b->name, &b->name_len, err) < 0 ||
		    lnk_name(data, len, &at, &b->parent, &b->parent_len, err) < 0)
			return -1;
	}
	if (at != len)
		return format_fail(err, EINVAL, at, "%zu bytes after the last link", len - at);
	return 0;
}

/* Children in file order under the first bone of their parent's name. */
static int lnk_link(struct lnk *l, struct format_error *err)
{
	GHashTable *by_name = g_hash_table_new_full(g_bytes_hash, g_bytes_equal,
						    (GDestroyNotify)g_bytes_unref, NULL);
	int rc = 0;

	for (uint32_t i = 0; i < l->n; i++) {
		GBytes *k = g_bytes_new_static(l->bones[i].name, l->bones[i].name_len);

		if (g_hash_table_contains(by_name, k))
			g_bytes_unref(k);
		else
			g_hash_table_insert(by_name, k, GUINT_TO_POINTER(i + 1));
	}
	for (uint32_t i = 0; i < l->n && rc == 0; i++) {
		struct lnk_bone *b = &l->bones[i];
		GBytes *k;
		guint p;

		if (b->parent_len == 0)
			continue;
		k = g_bytes_new_static(b->parent, b->parent_len);
		p = GPOINTER_TO_UINT(g_hash_table_lookup(by_name, k));
		g_bytes_unref(k);
		if (p == 0) {
			rc = format_fail(err, EINVAL, b->at, "the parent of link %u is no bone of this file", i);
		} else if (l->bones[p - 1].last_child < 0) {
			l->bones[p - 1].first_child = l->bones[p - 1].last_child = i;
		} else {
			l->bones[l->bones[p - 1].last_child].next_sibling = i;
			l->bones[p - 1].last_child = i;
		}
	}
	g_hash_table_unref(by_name);
	return rc;
}

static int lnk_show(struct lnk *l, long i, unsigned depth, GString *out, struct format_error *err)
{
	const struct lnk_bone *b = &l->bones[i];

	if (depth > LNK_MAX_DEPTH)
		return format_fail(err, EINVAL, b->at, "bone tree deeper than %d levels", LNK_MAX_DEPTH);
	l->shown++;
	view_indent(out, depth);
	g_string_append(out, "- ");
	view_label(out, (const char *)b->name, b->name_len);
	g_string_append(out, b->first_child >= 0 ? ":\n" : "\n");
	for (long c = b->first_child; c >= 0; c = l->bones[c].next_sibling)
		if (lnk_show(l, c, depth + 1, out, err) < 0)
			return -1;
	return 0;
}

static int lnk_tree(struct lnk *l, GString *out, struct format_error *err)
{
	g_string_append_printf(out, "links: %u\ntree:%s\n", l->n, l->n ? "" : " []");
	for (uint32_t i = 0; i < l->n; i++)
		if (l->bones[i].parent_len == 0 && lnk_show(l, i, 1, out, err) < 0)
			return -1;
	/* every bone has a known parent by now: one never reached sits in a cycle */
	if (l->shown < l->n)
		return format_fail(err, EINVAL, 4, "%u of %u bones are not below a root (a cycle)",
				   l->n - l->shown, l->n);
	return 0;
}

int lnk_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	struct lnk l = { 0 };
	size_t start = out->len;
	int rc;

	rc = lnk_parse(data, len, &l, err);
	if (rc == 0)
		rc = lnk_link(&l, err);
	if (rc == 0)
		rc = lnk_tree(&l, out, err);
	g_free(l.bones);
	if (rc < 0)
		g_string_truncate(out, start);
	return rc;
}

/* ---- BON (FORMATS 7.3) ------------------------------------------------- */

int bon_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	if (len % 12)
		return format_fail(err, EINVAL, len - len % 12,
				   "%zu bytes are no whole number of 12-byte vectors", len);
	g_string_append_printf(out, "variants: %zu\n", len / 12);
	float_rows(out, "positions", data, len / 12, 3, 0);
	return 0;
}

/* ---- ANM track (FORMATS 7.4) ------------------------------------------- */

/* A u32 count at *at followed by count items of size bytes; returns the
 * count, or -1 when the items cannot fit. */
static int anm_count(const unsigned char *data, size_t len, size_t *at, size_t size,
		     const char *what, uint32_t *count, struct format_error *err)
{
	if (len - *at < 4)
		return format_fail(err, EINVAL, *at, "truncated %s count: %zu bytes left, need 4",
				   what, len - *at);
	*count = view_u32(data + *at);
	if (*count > (len - *at - 4) / size)
		return format_fail(err, EINVAL, *at, "%u %s of %zu bytes cannot fit in the %zu bytes left",
				   *count, what, size, len - *at - 4);
	*at += 4;
	return 0;
}

static void anm_morph(GString *out, const unsigned char *p, uint32_t frames, uint32_t verts)
{
	/* frames of no vertices are not listed: their count costs no input bytes */
	g_string_append_printf(out, "morph_frames: %u\nmorph_vertices: %u\nmorph:%s\n", frames, verts,
			       frames && verts ? "" : " []");
	for (uint32_t f = 0; verts && f < frames; f++) {
		g_string_append_printf(out, "  - frame: %u\n", f);
		float_rows(out, "vertices", p + (size_t)f * verts * 12, verts, 3, 2);
	}
}

int anm_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	uint32_t rots, trans, frames, verts;
	size_t at = 0, rot_at, trans_at;

	if (anm_count(data, len, &at, 16, "rotations", &rots, err) < 0)
		return -1;
	rot_at = at;
	at += (size_t)rots * 16;
	if (anm_count(data, len, &at, 12, "translations", &trans, err) < 0)
		return -1;
	trans_at = at;
	at += (size_t)trans * 12;
	if (len - at < 8)
		return format_fail(err, EINVAL, at, "truncated morph counts: %zu bytes left, need 8",
				   len - at);
	frames = view_u32(data + at);
	verts = view_u32(data + at + 4);
	at += 8;
	if (verts && frames > (len - at) / 12 / verts)
		return format_fail(err, EINVAL, at - 8, "%u morph frames of %u vertices cannot fit in %zu bytes",
				   frames, verts, len - at);
	if (len - at != (size_t)frames * verts * 12)
		return format_fail(err, EINVAL, at + (size_t)frames * verts * 12,
				   "%zu bytes after the morph frames", len - at - (size_t)frames * verts * 12);
	g_string_append_printf(out, "rotation_count: %u\n", rots);
	float_rows(out, "rotations", data + rot_at, rots, 4, 0);
	g_string_append_printf(out, "translation_count: %u\n", trans);
	float_rows(out, "translations", data + trans_at, trans, 3, 0);
	anm_morph(out, data + at, frames, verts);
	return 0;
}

/* ---- CAM (FORMATS 7.6) ------------------------------------------------- */

int cam_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	if (len % 36)
		return format_fail(err, EINVAL, len - len % 36,
				   "%zu bytes are no whole number of 36-byte camera keys", len);
	g_string_append_printf(out, "keys: %zu\n", len / 36);
	if (len == 0)
		g_string_append(out, "frames: []\n");
	else
		g_string_append(out, "frames:\n");
	for (size_t at = 0; at < len; at += 36) {
		g_string_append_printf(out, "  - time: %u\n    unknown: %u\n    position: ",
				       view_u32(data + at), view_u32(data + at + 4));
		view_floats(out, data + at + 8, 3);
		g_string_append(out, "\n    rotation: ");
		view_floats(out, data + at + 20, 4);
		g_string_append_c(out, '\n');
	}
	return 0;
}

/* ---- FIG (FORMATS 7.5) ------------------------------------------------- */

enum { FIG_HEADER = 40 };

struct fig {
	unsigned n;               /* variants */
	uint32_t vb, nb, t, i, vc, mc, unknown, group, texture;
	size_t bounds, verts, normals, uvs, indices, comps, morphs, end; /* offsets */
};

int fig_is_magic(const unsigned char *data, size_t len)
{
	return len >= 4 && data[0] == 'F' && data[1] == 'I' && data[2] == 'G' &&
	       data[3] >= '1' && data[3] <= '9';
}

/* Offsets of the arrays; the size formula of FORMATS 7.5 in 64 bits, as
 * the counts are anything a crafted file says. */
static uint64_t fig_layout(const unsigned char *data, struct fig *f)
{
	uint64_t at = FIG_HEADER;
	uint32_t v[9];

	for (int k = 0; k < 9; k++)
		v[k] = view_u32(data + 4 + 4 * k);
	f->n = (unsigned)(data[3] - '0');
	f->vb = v[0], f->nb = v[1], f->t = v[2], f->i = v[3], f->vc = v[4], f->mc = v[5];
	f->unknown = v[6], f->group = v[7], f->texture = v[8];
	f->bounds = (size_t)at;
	at += 40ull * f->n;
	f->verts = (size_t)at;
	at += 48ull * f->n * f->vb;
	f->normals = (size_t)at;
	at += 64ull * f->nb;
	f->uvs = (size_t)at;
	at += 8ull * f->t;
	f->indices = (size_t)at;
	at += 2ull * f->i;
	f->comps = (size_t)at;
	at += 6ull * f->vc;
	f->morphs = (size_t)at;
	at += 4ull * f->mc;
	f->end = (size_t)at;
	return at;
}

static void fig_header(GString *out, const struct fig *f)
{
	g_string_append_printf(out,
			       "magic: FIG%u\nvariants: %u\nvertex_blocks: %u\nnormal_blocks: %u\n"
			       "texcoord_count: %u\nindex_count: %u\nvertex_component_count: %u\n"
			       "morph_component_count: %u\nunknown: %u\ngroup: %u\ntexture_number: %u\n",
			       f->n, f->n, f->vb, f->nb, f->t, f->i, f->vc, f->mc, f->unknown, f->group,
			       f->texture);
}

/* center[n][3], min[n][3], max[n][3], radius[n] */
static void fig_bounds(GString *out, const unsigned char *p, unsigned n)
{
	float_rows(out, "center", p, n, 3, 0);
	float_rows(out, "min", p + 12 * n, n, 3, 0);
	float_rows(out, "max", p + 24 * n, n, 3, 0);
	g_string_append(out, "radius: ");
	view_floats(out, p + 36 * n, n);
	g_string_append_c(out, '\n');
}

/* Block b holds 4 vertices as x[variant][point], y[..][..], z[..][..]. */
static void fig_vertices(GString *out, const unsigned char *p, const struct fig *f)
{
	g_string_append_printf(out, "vertices:%s\n", f->vb ? "" : " []");
	for (unsigned v = 0; f->vb && v < f->n; v++) {
		g_string_append_printf(out, "  - variant: %u\n    points:\n", v);
		for (size_t k = 0; k < (size_t)f->vb * 4; k++) {
			const unsigned char *blk = p + (k / 4) * 48 * f->n;

			g_string_append(out, "      - [");
			for (unsigned a = 0; a < 3; a++) {
				if (a)
					g_string_append(out, ", ");
				view_float(out, view_f32(blk + ((a * f->n + v) * 4 + k % 4) * 4));
			}
			g_string_append(out, "]\n");
		}
	}
}

/* Block b holds 4 normals as x[point], y[point], z[point], w[point]. */
static void fig_normals(GString *out, const unsigned char *p, uint32_t nb)
{
	g_string_append_printf(out, "normals:%s\n", nb ? "" : " []");
	for (size_t k = 0; k < (size_t)nb * 4; k++) {
		g_string_append(out, "  - [");
		for (unsigned c = 0; c < 4; c++) {
			if (c)
				g_string_append(out, ", ");
			view_float(out, view_f32(p + (k / 4) * 64 + (c * 4 + k % 4) * 4));
		}
		g_string_append(out, "]\n");
	}
}

/* rows of width u16 each; a last short row when count is no multiple */
static void u16_rows(GString *out, const char *key, const unsigned char *p, size_t count,
		     size_t width)
{
	g_string_append_printf(out, "%s:%s\n", key, count ? "" : " []");
	for (size_t r = 0; r < count; r += width) {
		g_string_append(out, "  - [");
		for (size_t k = r; k < count && k < r + width; k++)
			g_string_append_printf(out, k > r ? ", %u" : "%u", view_u16(p + 2 * k));
		g_string_append(out, "]\n");
	}
}

int fig_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	uint64_t need;
	struct fig f;

	if (!fig_is_magic(data, len))
		return format_fail(err, EINVAL, 0, "not a FIG (no \"FIG\" and a digit 1-9)");
	if (len < FIG_HEADER)
		return format_fail(err, EINVAL, len, "truncated header: %zu bytes, need %d", len, FIG_HEADER);
	need = fig_layout(data, &f);
	if (need != len)
		return format_fail(err, EINVAL, need < len ? need : len,
				   "size %zu does not match the counts, which give %llu", len,
				   (unsigned long long)need);
	fig_header(out, &f);
	fig_bounds(out, data + f.bounds, f.n);
	fig_vertices(out, data + f.verts, &f);
	fig_normals(out, data + f.normals, f.nb);
	float_rows(out, "texcoords", data + f.uvs, f.t, 2, 0);
	u16_rows(out, "indices", data + f.indices, f.i, 3);
	u16_rows(out, "vertex_components", data + f.comps, (size_t)f.vc * 3, 3);
	u16_rows(out, "morph_components", data + f.morphs, (size_t)f.mc * 2, 2);
	return 0;
}
