#include "views.h"

#include <errno.h>
#include <string.h>

#include "adb.h"
#include "db.h"
#include "ini.h"
#include "mmp.h"
#include "mob.h"
#include "models.h"
#include "mpr.h"
#include "names.h"
#include "text.h"

typedef int (*text_fn)(const unsigned char *data, size_t len, GString *out, struct format_error *err);

static int mmp_png(const char *name, const unsigned char *d, size_t n, GByteArray *out, struct format_error *err)
{
	return mmp_to_png(d, n, 0, out, err);
}

static int mmp_png_size0(const unsigned char *hdr, size_t n, uint64_t *size, struct format_error *err)
{
	return mmp_png_size(hdr, n, 0, size, err);
}

/* A map without a script gets an empty script view, not an error. */
static int mob_script(const unsigned char *d, size_t n, GString *out, struct format_error *err)
{
	return mob_has_script(d, n) ? mob_script_to_text(d, n, out, err) : 0;
}

static int ini_reg(const unsigned char *text, size_t n, GByteArray *out, struct format_error *err)
{
	return ini_to_reg_bytes((const char *)text, n, out, err);
}

static int db_jsonl(const char *name, const unsigned char *d, size_t n, GByteArray *out, struct format_error *err)
{
	GString *s = g_string_new(NULL);
	int rc = db_to_jsonl(name, d, n, s, err);

	g_byte_array_append(out, (const guint8 *)s->str, (guint)s->len);
	g_string_free(s, TRUE);
	return rc;
}

/* ---- which files get views ------------------------------------------------ */

/* The archive a member sits in (NULL for a file of a folder). */
static const struct tree_node *archive_of(const struct tree_node *dir)
{
	for (; dir; dir = dir->parent)
		if (dir->kind == NODE_ARCHIVE)
			return dir;
		else if (dir->kind == NODE_FOLDER)
			return NULL;
	return NULL;
}

static int has_ext(const struct tree_node *n)
{
	return strchr(n->name, '.') != NULL;
}

/* Parts of composite models carry no extension: what they are follows from
 * the archive they are in (FORMATS 7.1). */
static int is_mod_part(const struct tree_node *src, const struct tree_node *dir, int lnk)
{
	const struct tree_node *a = archive_of(dir);
	size_t stem;

	if (has_ext(src) || !a || a != dir || !names_has_ext(a->name, "mod"))
		return 0;
	stem = strlen(a->name) - 4;
	return lnk == (strlen(src->name) == stem && g_ascii_strncasecmp(src->name, a->name, stem) == 0);
}

static int claims_fig_part(struct tree *t, const struct tree_node *src, const struct tree_node *dir)
{
	return is_mod_part(src, dir, 0);
}

static int claims_lnk_part(struct tree *t, const struct tree_node *src, const struct tree_node *dir)
{
	return is_mod_part(src, dir, 1);
}

static int claims_bon_part(struct tree *t, const struct tree_node *src, const struct tree_node *dir)
{
	const struct tree_node *a = archive_of(dir);

	return !has_ext(src) && a == dir && names_has_ext(a->name, "bon");
}

/* raw tracks: parts of a clip, the clip an extensionless archive in a .anm */
static int claims_anm_track(struct tree *t, const struct tree_node *src, const struct tree_node *dir)
{
	const struct tree_node *clip = archive_of(dir);
	const struct tree_node *anm = clip ? archive_of(clip->parent) : NULL;

	return !has_ext(src) && clip == dir && !has_ext(clip) && anm && names_has_ext(anm->name, "anm");
}

static int claims_db(struct tree *t, const struct tree_node *src, const struct tree_node *dir)
{
	const char *dot = strrchr(src->name, '.');
	size_t n = dot ? strlen(dot) : 0;

	/* every database name ends in "db": most names are refused here */
	return n >= 3 && g_ascii_tolower(dot[n - 2]) == 'd' && g_ascii_tolower(dot[n - 1]) == 'b'
	       && db_is_database(src->name);
}

/* The game's texts: the extensionless entries of .res and .mq archives
 * (texts.res, "briefing z1q1_1" in a quest; those of models are parts)
 * whose first bytes hold no NUL: binary data shown as a text would fail
 * every grep -r and cp -r, and a save over it would replace it. */
static int claims_game_text(struct tree *t, const struct tree_node *src, const struct tree_node *dir)
{
	const struct tree_node *a = archive_of(dir);
	unsigned char head[512];
	ssize_t got;

	if (has_ext(src) || !a || !(names_has_ext(a->name, "res") || names_has_ext(a->name, "mq")))
		return 0;
	got = tree_read(t, (struct tree_node *)src, head, sizeof head, 0);
	return got >= 0 && !memchr(head, 0, (size_t)got);
}

/* .mp is also the multiplayer character format: only map headers count */
static int claims_map_header(struct tree *t, const struct tree_node *src, const struct tree_node *dir)
{
	static const unsigned char magic[4] = { 0x72, 0xF6, 0x4A, 0xCE };
	unsigned char head[4];

	return names_has_ext(src->name, "mp") && tree_read(t, (struct tree_node *)src, head, 4, 0) == 4
	       && memcmp(head, magic, 4) == 0;
}

/* ---- the table ------------------------------------------------------------- */

struct view_type {
	const char *label;
	const char *ext;       /* source extension, or NULL when claims decides */
	int (*claims)(struct tree *t, const struct tree_node *src, const struct tree_node *dir);
	int claims_dotted;     /* claims takes only names with a dot (1) or only names without (0) */
	int replace_ext;       /* x.mmp -> x.png, rather than x.adb -> x.adb.txt */
	const char *suffix;
	text_fn text;          /* a text view, or ... */
	int (*binary)(const char *name, const unsigned char *d, size_t n, GByteArray *out, struct format_error *err);
	size_t header_len;     /* > 0: the size follows from this many bytes */
	int (*size)(const unsigned char *hdr, size_t n, uint64_t *size, struct format_error *err);
	/* an editable view: what saving a text writes to the source */
	int (*to_source)(const unsigned char *text, size_t n, GByteArray *out, struct format_error *err);
};

static const struct view_type types[] = {
	{ "PNG", "mmp", NULL, 0, 1, ".png", NULL, mmp_png, 76, mmp_png_size0, NULL },
	{ "INI", "reg", NULL, 0, 1, ".ini", reg_bytes_to_ini, NULL, 0, NULL, ini_reg },
	{ "JSON Lines", NULL, claims_db, 1, 0, ".jsonl", NULL, db_jsonl, 0, NULL, NULL },
	{ "ADB text", "adb", NULL, 0, 0, ".txt", adb_to_text, NULL, 0, NULL, NULL },
	{ "MOB text", "mob", NULL, 0, 0, ".txt", mob_to_text, NULL, 0, NULL, NULL },
	{ "MOB script", "mob", NULL, 0, 0, ".script.txt", mob_script, NULL, 0, NULL, NULL },
	{ "LNK text", "lnk", NULL, 0, 0, ".txt", lnk_to_text, NULL, 0, NULL, NULL },
	{ "LNK text", NULL, claims_lnk_part, 0, 0, ".lnk.txt", lnk_to_text, NULL, 0, NULL, NULL },
	{ "FIG text", "fig", NULL, 0, 0, ".txt", fig_to_text, NULL, 0, NULL, NULL },
	{ "FIG text", NULL, claims_fig_part, 0, 0, ".fig.txt", fig_to_text, NULL, 0, NULL, NULL },
	{ "BON text", "bon", NULL, 0, 0, ".txt", bon_to_text, NULL, 0, NULL, NULL },
	{ "BON text", NULL, claims_bon_part, 0, 0, ".bon.txt", bon_to_text, NULL, 0, NULL, NULL },
	{ "ANM text", NULL, claims_anm_track, 0, 0, ".anm.txt", anm_to_text, NULL, 0, NULL, NULL },
	{ "CAM text", "cam", NULL, 0, 0, ".txt", cam_to_text, NULL, 0, NULL, NULL },
	{ "MP text", NULL, claims_map_header, 1, 0, ".txt", mp_to_text, NULL, 0, NULL, NULL },
	{ "SEC text", "sec", NULL, 0, 0, ".txt", sec_to_text, NULL, 0, NULL, NULL },
	{ "UTF-8 text", NULL, claims_game_text, 0, 0, ".txt", text_to_utf8, NULL, 0, NULL, text_from_utf8 },
};

int view_is_editable(unsigned type)
{
	return type < G_N_ELEMENTS(types) && types[type].to_source;
}

/* Whether source bytes made of a view's text hold nothing: a REG of no
 * section, an empty entry. */
static int holds_nothing(unsigned type, const GByteArray *source)
{
	struct reg_file *f = NULL;
	struct format_error err = { 0 };
	int none;

	if (types[type].to_source != ini_reg)
		return source->len == 0;
	if (reg_parse(source->data, source->len, &f, &err) < 0)
		return 0;
	none = f->sections->len == 0;
	reg_free(f);
	return none;
}

GByteArray *view_to_source(unsigned type, const unsigned char *text, size_t len, uint64_t source_len,
			   struct format_error *err)
{
	GByteArray *out;

	if (!view_is_editable(type)) {
		format_fail(err, EACCES, 0, "a %s view is read-only", view_type_label(type));
		return NULL;
	}
	if (len > VIEW_MAX_TEXT_SOURCE) { /* its view could not show it again */
		format_fail(err, EFBIG, 0, "%zu bytes is more than a %s view holds", len, view_type_label(type));
		return NULL;
	}
	out = g_byte_array_new();
	if (types[type].to_source(text, len, out, err) < 0) {
		g_byte_array_unref(out);
		return NULL;
	}
	/* `sed ... x.ini > x.ini` empties the file before sed reads it */
	if (source_len > out->len && holds_nothing(type, out)) {
		format_fail(err, EINVAL, 0, "the text holds nothing (%s): it would empty the %llu bytes of its "
			    "source; to empty that, write the source itself (removing this view through a mount "
			    "shows the source's text again)", types[type].to_source == ini_reg ? "no section" : "no character",
			    (unsigned long long)source_len);
		g_byte_array_unref(out);
		return NULL;
	}
	return out;
}

int views_may_name(const char *name)
{
	size_t len = strlen(name);

	for (unsigned i = 0; i < G_N_ELEMENTS(types); i++) {
		size_t n = strlen(types[i].suffix);

		if (len > n && g_ascii_strcasecmp(name + len - n, types[i].suffix) == 0)
			return 1;
	}
	return 0;
}

const char *view_type_label(unsigned type)
{
	return type < G_N_ELEMENTS(types) ? types[type].label : "?";
}

void views_for(struct tree *t, struct tree_node *src, const struct tree_node *dir,
	       void (*add)(void *ctx, unsigned type, const char *name), void *ctx)
{
	const char *dot = strrchr(src->name, '.');
	char first = dot ? g_ascii_tolower(dot[1]) : 0;

	if (src->kind != NODE_ENTRY && src->kind != NODE_PLAIN)
		return;
	/* a folder of a thousand files asks this a thousand times: the name's
	 * dot and first letter rule out most types before any compare */
	for (unsigned i = 0; i < G_N_ELEMENTS(types); i++) {
		const struct view_type *v = &types[i];
		GString *name;

		if (v->ext ? !dot || first != v->ext[0] || g_ascii_strcasecmp(dot + 1, v->ext) != 0
			   : v->claims_dotted != !!dot || !v->claims(t, src, dir))
			continue;
		name = g_string_new(src->name);
		if (v->replace_ext)
			g_string_truncate(name, (gsize)(strrchr(name->str, '.') - name->str));
		g_string_append(name, v->suffix);
		add(ctx, i, name->str);
		g_string_free(name, TRUE);
	}
}

struct tree_node *view_source(const struct tree_node *view)
{
	return &view->parent->dir->child[view->source];
}

int view_size_from_header(struct tree *t, struct tree_node *view)
{
	const struct view_type *v = &types[view->view];
	struct format_error err = { 0 };
	unsigned char hdr[256];
	uint64_t size;
	ssize_t got;

	if (!v->size)
		return 1;
	got = tree_read(t, view_source(view), hdr, v->header_len, 0);
	if (got < 0)
		return (int)got;
	if (v->size(hdr, (size_t)got, &size, &err) < 0)
		return 1; /* a bad header: the conversion will say why */
	__atomic_store_n(&view->size, size, __ATOMIC_RELEASE);
	return 0;
}

/* Refuses what would take more memory than a view may: a crafted texture
 * header can ask for a 1 GiB image, a huge file for gigabytes of text. */
static int check_bounds(struct tree *t, const struct view_type *v, struct tree_node *src,
			struct format_error *err)
{
	uint64_t size = tree_file_size(t, src);

	if (v->size && size > VIEW_MAX_PNG)
		return format_fail(err, EFBIG, 0, "%llu bytes is more than a view converts (%u MiB)",
				   (unsigned long long)size, VIEW_MAX_PNG >> 20);
	if (v->size) {
		unsigned char hdr[256];
		ssize_t got = tree_read(t, src, hdr, v->header_len, 0);
		uint64_t image;

		if (got >= 0 && v->size(hdr, (size_t)got, &image, NULL) == 0 && image > VIEW_MAX_PNG)
			return format_fail(err, EFBIG, 4, "a %llu-byte image is more than a view makes (%u MiB)",
					   (unsigned long long)image, VIEW_MAX_PNG >> 20);
		return 0;
	}
	if (size > VIEW_MAX_TEXT_SOURCE)
		return format_fail(err, EFBIG, 0, "%llu bytes is more than a text view converts (%u MiB)",
				   (unsigned long long)size, VIEW_MAX_TEXT_SOURCE >> 20);
	return 0;
}

static int read_source(struct tree *t, struct tree_node *src, GByteArray *buf, struct format_error *err)
{
	ssize_t got;

	g_byte_array_set_size(buf, (guint)tree_file_size(t, src));
	got = tree_read(t, src, buf->data, buf->len, 0);
	if (got < 0)
		return format_fail(err, (int)-got, 0, "cannot read the source: %s", g_strerror((int)-got));
	g_byte_array_set_size(buf, (guint)got);
	return 0;
}

int view_convert(struct tree *t, struct tree_node *view, GByteArray **out, struct format_error *err)
{
	const struct view_type *v = &types[view->view];
	struct tree_node *src = view_source(view);
	GByteArray *in = g_byte_array_new();
	int rc = check_bounds(t, v, src, err);

	if (rc == 0)
		rc = read_source(t, src, in, err);

	*out = g_byte_array_new();
	if (rc == 0 && v->binary) {
		rc = v->binary(src->name, in->data, in->len, *out, err);
	} else if (rc == 0) {
		GString *text = g_string_new(NULL);

		rc = v->text(in->data, in->len, text, err);
		g_byte_array_append(*out, (const guint8 *)text->str, (guint)text->len);
		g_string_free(text, TRUE);
	}
	g_byte_array_unref(in);
	if (rc < 0 && err->code == 0)
		format_fail(err, EIO, 0, "conversion failed");
	return rc;
}
