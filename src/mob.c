#include "mob.h"

#include <errno.h>
#include <stdio.h>

#include "cp1251.h"
#include "models.h"

enum { MOB_NODE_HEADER = 8, MOB_MAX_DEPTH = 64 };

#define MOB_SS_TEXT 0xACCEECCBu     /* the script, encrypted */
#define MOB_SS_TEXT_OLD 0xACCEECCAu /* the script, plain */

/* Payload kinds of FORMATS 6.2. */
enum kind {
	K_UNKNOWN,
	K_RECORD,    /* child nodes */
	K_NULL,
	K_DWORD,
	K_BYTE,
	K_FLOAT,
	K_PLOT,      /* 3 x f32 */
	K_QUAT,      /* 4 x f32 */
	K_RECT,      /* 4 x i32 */
	K_STRING,    /* cp1251, no NUL */
	K_STRINGS,   /* u32 count, count x {u32 type, u32 len, bytes} */
	K_UNITSTATS, /* 43 words, u32 or f32 */
	K_DIPLOMACY, /* 32 x 32 i32 */
	K_LEVER,     /* 3 x i32 */
	K_BLOB,      /* opaque */
	K_SCRIPT,    /* u32 key + encrypted cp1251 */
	K_SCRIPT_PLAIN,
};

/* Node size (header included) of the fixed-size kinds; 0: any. */
static const uint32_t kind_size[] = {
	[K_NULL] = 8, [K_DWORD] = 12, [K_BYTE] = 9, [K_FLOAT] = 12, [K_PLOT] = 20, [K_QUAT] = 24,
	[K_RECT] = 24, [K_UNITSTATS] = 180, [K_DIPLOMACY] = 4104, [K_LEVER] = 20,
};

struct mob_type {
	uint32_t id;
	enum kind kind;
	const char *name;
};

/* aspadm Formats/mob.py names (= MobExplorer, ei_maper), its
 * VSS_CUSTOM_SRIPT typo mended. */
static const struct mob_type mob_types[] = {
	{ 0x0000A000, K_RECORD, "OBJECTDBFILE" },
	{ 0x0000C000, K_NULL, "SC_OBJECTDBFILE" },
	{ 0x0000D000, K_NULL, "PR_OBJECTDBFILE" },
	{ MOB_SS_TEXT, K_SCRIPT, "SS_TEXT" },
	{ MOB_SS_TEXT_OLD, K_SCRIPT_PLAIN, "SS_TEXT_OLD" },
	{ 0x31415926, K_BLOB, "AIGRAPH" },
	{ 0x0000FF00, K_RECORD, "SEC_RANGE" },
	{ 0x0000FF01, K_RECORD, "MAIN_RANGE" },
	{ 0x0000FF02, K_RECORD, "RANGE" },
	{ 0x0000FF05, K_DWORD, "MIN_ID" },
	{ 0x0000FF06, K_DWORD, "MAX_ID" },
	{ 0xDDDDDDD1, K_RECORD, "DIPLOMATION" },
	{ 0xDDDDDDD2, K_DIPLOMACY, "DIPLOMATION_FOF" },
	{ 0xDDDDDDD3, K_STRINGS, "DIPLOMATION_PL_NAMES" },
	{ 0x0000ABD0, K_RECORD, "WORLD_SET" },
	{ 0x0000ABD1, K_PLOT, "WS_WIND_DIR" },
	{ 0x0000ABD2, K_FLOAT, "WS_WIND_STR" },
	{ 0x0000ABD3, K_FLOAT, "WS_TIME" },
	{ 0x0000ABD4, K_FLOAT, "WS_AMBIENT" },
	{ 0x0000ABD5, K_FLOAT, "WS_SUN_LIGHT" },
	{ 0x00001E00, K_RECORD, "VSS_SECTION" },
	{ 0x00001E01, K_RECORD, "VSS_TRIGER" },
	{ 0x00001E02, K_RECORD, "VSS_CHECK" },
	{ 0x00001E03, K_RECORD, "VSS_PATH" },
	{ 0x00001E04, K_DWORD, "VSS_ID" },
	{ 0x00001E05, K_RECT, "VSS_RECT" },
	{ 0x00001E06, K_DWORD, "VSS_SRC_ID" },
	{ 0x00001E07, K_DWORD, "VSS_DST_ID" },
	{ 0x00001E08, K_STRING, "VSS_TITLE" },
	{ 0x00001E09, K_STRING, "VSS_COMMANDS" },
	{ 0x00001E0A, K_BYTE, "VSS_ISSTART" },
	{ 0x00001E0B, K_RECORD, "VSS_LINK" },
	{ 0x00001E0C, K_STRING, "VSS_GROUP" },
	{ 0x00001E0D, K_BYTE, "VSS_IS_USE_GROUP" },
	{ 0x00001E0E, K_RECORD, "VSS_VARIABLE" },
	{ 0x00001E0F, K_STRINGS, "VSS_BS_CHECK" },
	{ 0x00001E10, K_STRINGS, "VSS_BS_COMMANDS" },
	{ 0x00001E11, K_STRING, "VSS_CUSTOM_SCRIPT" },
	{ 0x0000E000, K_RECORD, "DIRICTORY" },
	{ 0x0000E001, K_RECORD, "FOLDER" },
	{ 0x0000E002, K_STRING, "DIR_NAME" },
	{ 0x0000E003, K_DWORD, "DIR_NINST" },
	{ 0x0000E004, K_DWORD, "DIR_PARENT_FOLDER" },
	{ 0x0000E005, K_BYTE, "DIR_TYPE" },
	{ 0x0000F000, K_RECORD, "DIRICTORY_ELEMENTS" },
	{ 0x0000B000, K_RECORD, "OBJECTSECTION" },
	{ 0x0000B001, K_RECORD, "OBJECT" },
	{ 0x0000B002, K_DWORD, "NID" },
	{ 0x0000B003, K_DWORD, "OBJTYPE" },
	{ 0x0000B004, K_STRING, "OBJNAME" },
	{ 0x0000B005, K_NULL, "OBJINDEX" },
	{ 0x0000B006, K_STRING, "OBJTEMPLATE" },
	{ 0x0000B007, K_STRING, "OBJPRIMTXTR" },
	{ 0x0000B008, K_STRING, "OBJSECTXTR" },
	{ 0x0000B009, K_PLOT, "OBJPOSITION" },
	{ 0x0000B00A, K_QUAT, "OBJROTATION" },
	{ 0x0000B00B, K_NULL, "OBJTEXTURE" },
	{ 0x0000B00C, K_PLOT, "OBJCOMPLECTION" },
	{ 0x0000B00D, K_STRINGS, "OBJBODYPARTS" },
	{ 0x0000B00E, K_STRING, "PARENTTEMPLATE" },
	{ 0x0000B00F, K_STRING, "OBJCOMMENTS" },
	{ 0x0000B010, K_NULL, "OBJ_DEF_LOGIC" },
	{ 0x0000B011, K_BYTE, "OBJ_PLAYER" },
	{ 0x0000B012, K_DWORD, "OBJ_PARENT_ID" },
	{ 0x0000B013, K_BYTE, "OBJ_USE_IN_SCRIPT" },
	{ 0x0000B014, K_BYTE, "OBJ_IS_SHADOW" },
	{ 0x0000B015, K_NULL, "OBJ_R" },
	{ 0x0000B016, K_STRING, "OBJ_QUEST_INFO" },
	{ 0xBBBB0000, K_RECORD, "UNIT" },
	{ 0xBBBB0001, K_NULL, "UNIT_R" },
	{ 0xBBBB0002, K_STRING, "UNIT_PROTOTYPE" },
	{ 0xBBBB0003, K_NULL, "UNIT_ITEMS" },
	{ 0xBBBB0004, K_UNITSTATS, "UNIT_STATS" },
	{ 0xBBBB0005, K_STRINGS, "UNIT_QUEST_ITEMS" },
	{ 0xBBBB0006, K_STRINGS, "UNIT_QUICK_ITEMS" },
	{ 0xBBBB0007, K_STRINGS, "UNIT_SPELLS" },
	{ 0xBBBB0008, K_STRINGS, "UNIT_WEAPONS" },
	{ 0xBBBB0009, K_STRINGS, "UNIT_ARMORS" },
	{ 0xBBBB000A, K_BYTE, "UNIT_NEED_IMPORT" },
	{ 0xBBBC0000, K_RECORD, "UNIT_LOGIC" },
	{ 0xBBBC0001, K_NULL, "UNIT_LOGIC_AGRESSIV" },
	{ 0xBBBC0002, K_BYTE, "UNIT_LOGIC_CYCLIC" },
	{ 0xBBBC0003, K_DWORD, "UNIT_LOGIC_MODEL" },
	{ 0xBBBC0004, K_FLOAT, "UNIT_LOGIC_GUARD_R" },
	{ 0xBBBC0005, K_PLOT, "UNIT_LOGIC_GUARD_PT" },
	{ 0xBBBC0006, K_BYTE, "UNIT_LOGIC_NALARM" },
	{ 0xBBBC0007, K_BYTE, "UNIT_LOGIC_USE" },
	{ 0xBBBC0008, K_NULL, "UNIT_LOGIC_REVENGE" },
	{ 0xBBBC0009, K_NULL, "UNIT_LOGIC_FEAR" },
	{ 0xBBBC000A, K_FLOAT, "UNIT_LOGIC_WAIT" },
	{ 0xBBBC000B, K_BYTE, "UNIT_LOGIC_ALARM_CONDITION" },
	{ 0xBBBC000C, K_FLOAT, "UNIT_LOGIC_HELP" },
	{ 0xBBBC000D, K_BYTE, "UNIT_LOGIC_ALWAYS_ACTIVE" },
	{ 0xBBBC000E, K_BYTE, "UNIT_LOGIC_AGRESSION_MODE" },
	{ 0xBBBD0000, K_RECORD, "GUARD_PT" },
	{ 0xBBBD0001, K_PLOT, "GUARD_PT_POSITION" },
	{ 0xBBBD0002, K_NULL, "GUARD_PT_ACTION" },
	{ 0xBBBE0000, K_RECORD, "ACTION_PT" },
	{ 0xBBBE0001, K_PLOT, "ACTION_PT_LOOK_PT" },
	{ 0xBBBE0002, K_DWORD, "ACTION_PT_WAIT_SEG" },
	{ 0xBBBE0003, K_DWORD, "ACTION_PT_TURN_SPEED" },
	{ 0xBBBE0004, K_BYTE, "ACTION_PT_FLAGS" },
	{ 0xBBBF0000, K_RECORD, "TORCH" },
	{ 0xBBBF0001, K_FLOAT, "TORCH_STRENGHT" },
	{ 0xBBBF0002, K_PLOT, "TORCH_PTLINK" },
	{ 0xBBBF0003, K_STRING, "TORCH_SOUND" },
	{ 0xBBAB0000, K_RECORD, "MAGIC_TRAP" },
	{ 0xBBAB0001, K_DWORD, "MT_DIPLOMACY" },
	{ 0xBBAB0002, K_STRING, "MT_SPELL" },
	{ 0xBBAB0003, K_BLOB, "MT_AREAS" },
	{ 0xBBAB0004, K_BLOB, "MT_TARGETS" },
	{ 0xBBAB0005, K_DWORD, "MT_CAST_INTERVAL" },
	{ 0xBBAC0000, K_RECORD, "LEVER" },
	{ 0xBBAC0001, K_NULL, "LEVER_SCIENCE_STATS" },
	{ 0xBBAC0002, K_BYTE, "LEVER_CUR_STATE" },
	{ 0xBBAC0003, K_BYTE, "LEVER_TOTAL_STATE" },
	{ 0xBBAC0004, K_BYTE, "LEVER_IS_CYCLED" },
	{ 0xBBAC0005, K_BYTE, "LEVER_CAST_ONCE" },
	{ 0xBBAC0006, K_LEVER, "LEVER_SCIENCE_STATS_NEW" },
	{ 0xBBAC0007, K_BYTE, "LEVER_IS_DOOR" },
	{ 0xBBAC0008, K_BYTE, "LEVER_RECALC_GRAPH" },
	{ 0x0000AA00, K_NULL, "LIGHT_SECTION" },
	{ 0x0000AA01, K_RECORD, "LIGHT" },
	{ 0x0000AA02, K_FLOAT, "LIGHT_RANGE" },
	{ 0x0000AA03, K_STRING, "LIGHT_NAME" },
	{ 0x0000AA04, K_PLOT, "LIGHT_POSITION" },
	{ 0x0000AA05, K_DWORD, "LIGHT_ID" },
	{ 0x0000AA06, K_BYTE, "LIGHT_SHADOW" },
	{ 0x0000AA07, K_PLOT, "LIGHT_COLOR" },
	{ 0x0000AA08, K_STRING, "LIGHT_COMMENTS" },
	{ 0x0000CC00, K_NULL, "SOUND_SECTION" },
	{ 0x0000CC01, K_RECORD, "SOUND" },
	{ 0x0000CC02, K_DWORD, "SOUND_ID" },
	{ 0x0000CC03, K_PLOT, "SOUND_POSITION" },
	{ 0x0000CC04, K_DWORD, "SOUND_RANGE" },
	{ 0x0000CC05, K_STRING, "SOUND_NAME" },
	{ 0x0000CC06, K_DWORD, "SOUND_MIN" },
	{ 0x0000CC07, K_DWORD, "SOUND_MAX" },
	{ 0x0000CC08, K_STRING, "SOUND_COMMENTS" },
	{ 0x0000CC09, K_NULL, "SOUND_VOLUME" },
	{ 0x0000CC0A, K_STRINGS, "SOUND_RESNAME" },
	{ 0x0000CC0B, K_DWORD, "SOUND_RANGE2" },
	{ 0x0000CC0D, K_BYTE, "SOUND_AMBIENT" },
	{ 0x0000CC0E, K_BYTE, "SOUND_IS_MUSIC" },
	{ 0x0000DD00, K_NULL, "PARTICL_SECTION" },
	{ 0x0000DD01, K_RECORD, "PARTICL" },
	{ 0x0000DD02, K_DWORD, "PARTICL_ID" },
	{ 0x0000DD03, K_PLOT, "PARTICL_POSITION" },
	{ 0x0000DD04, K_STRING, "PARTICL_COMMENTS" },
	{ 0x0000DD05, K_STRING, "PARTICL_NAME" },
	{ 0x0000DD06, K_DWORD, "PARTICL_TYPE" },
	{ 0x0000DD07, K_FLOAT, "PARTICL_SCALE" },
};

static const struct mob_type *mob_type(uint32_t id)
{
	for (size_t i = 0; i < G_N_ELEMENTS(mob_types); i++)
		if (mob_types[i].id == id)
			return &mob_types[i];
	return NULL;
}

struct mob_node {
	uint32_t type;
	uint32_t len;                 /* header included */
	size_t at;                    /* offset of the header in the file */
	const unsigned char *payload; /* len - 8 bytes */
};

/* The node at `at`, which must end by `end` (its parent's end). */
static int mob_node_at(const unsigned char *data, size_t at, size_t end, struct mob_node *n,
		       struct format_error *err)
{
	if (end - at < MOB_NODE_HEADER)
		return format_fail(err, EINVAL, at, "truncated node header: %zu bytes left, need 8",
				   end - at);
	n->type = view_u32(data + at);
	n->len = view_u32(data + at + 4);
	n->at = at;
	n->payload = data + at + MOB_NODE_HEADER;
	if (n->len < MOB_NODE_HEADER)
		return format_fail(err, EINVAL, at + 4, "node length %u is shorter than its header",
				   n->len);
	if (n->len > end - at)
		return format_fail(err, EINVAL, at + 4, "node of %u bytes passes its parent's end at %zu",
				   n->len, end);
	return 0;
}

/* ---- SS_TEXT (FORMATS 6.3) --------------------------------------------- */

/* MSVC rand(): the key steps before every byte; XOR makes it its own
 * inverse. */
static void mob_crypt(const unsigned char *in, size_t n, uint32_t key, unsigned char *out)
{
	for (size_t i = 0; i < n; i++) {
		key = key * 214013u + 2531011u;
		out[i] = in[i] ^ (unsigned char)(key >> 16);
	}
}

/* The cp1251 text of a script node (free it), NULL when an encrypted one
 * lacks its key. */
static unsigned char *mob_script_bytes(const struct mob_node *n, size_t *len)
{
	size_t size = n->len - MOB_NODE_HEADER;
	unsigned char *text;

	if (n->type == MOB_SS_TEXT_OLD) {
		*len = size;
		text = g_malloc(size ? size : 1);
		memcpy(text, n->payload, size);
		return text;
	}
	if (size < 4)
		return NULL;
	*len = size - 4;
	text = g_malloc(size - 4 ? size - 4 : 1);
	mob_crypt(n->payload + 4, size - 4, view_u32(n->payload), text);
	return text;
}

/* Pre-order search of the records between at and end: 1 and *found, 0,
 * or -1 for a malformed tree. */
static int mob_find_script(const unsigned char *data, size_t at, size_t end, unsigned depth,
			   struct mob_node *found, struct format_error *err)
{
	struct mob_node n;
	int rc;

	if (depth > MOB_MAX_DEPTH)
		return format_fail(err, EINVAL, at, "nodes nested deeper than %d", MOB_MAX_DEPTH);
	for (; at < end; at += n.len) {
		const struct mob_type *t;

		if (mob_node_at(data, at, end, &n, err) < 0)
			return -1;
		t = mob_type(n.type);
		if (t && (t->kind == K_SCRIPT_PLAIN || (t->kind == K_SCRIPT && n.len >= 12))) {
			*found = n;
			return 1;
		}
		if (t && t->kind == K_RECORD) {
			rc = mob_find_script(data, at + MOB_NODE_HEADER, at + n.len, depth + 1, found, err);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}

static int mob_magic(const unsigned char *data, size_t len, struct format_error *err)
{
	if (len < 4 || view_u32(data) != MOB_MAGIC)
		return format_fail(err, EINVAL, 0, "not a MOB (first node is no OBJECTDBFILE 0000A000)");
	return 0;
}

/* The script node of a MOB: 1, 0 when there is none, -1 when the file is
 * no MOB or its tree breaks before a script is found. */
static int mob_script_node(const unsigned char *data, size_t len, struct mob_node *n,
			   struct format_error *err)
{
	if (mob_magic(data, len, err) < 0)
		return -1;
	return mob_find_script(data, 0, len, 0, n, err);
}

/* Drops the NULs that pad the end (Kyr4l) and turns CRLF into LF. */
static size_t mob_script_tidy(unsigned char *p, size_t n)
{
	size_t w = 0;

	while (n > 0 && p[n - 1] == 0)
		n--;
	for (size_t r = 0; r < n; r++)
		if (!(p[r] == '\r' && r + 1 < n && p[r + 1] == '\n'))
			p[w++] = p[r];
	return w;
}

/* The script's cp1251 as UTF-8, every byte a character of its own: the
 * byte cp1251 leaves undefined, 0x98, as U+0098 (as the game texts show
 * it), and a NUL inside the script as U+FFFD, which no byte maps to. */
static void script_to_utf8(const unsigned char *text, size_t len, GString *out)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = text[i];

		if (c == 0)
			g_string_append_unichar(out, 0xFFFD);
		else if (c < 0x80)
			g_string_append_c(out, (char)c);
		else
			g_string_append_unichar(out, c == 0x98 ? 0x98 : cp1251_char(c));
	}
}

int mob_script_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	struct mob_node n;
	unsigned char *text;
	size_t tlen;
	int rc;

	rc = mob_script_node(data, len, &n, err);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return format_fail(err, ENOENT, 0, "no script (SS_TEXT) node");
	text = mob_script_bytes(&n, &tlen);
	tlen = mob_script_tidy(text, tlen);
	script_to_utf8(text, tlen, out);
	g_free(text);
	return 0;
}

int mob_has_script(const unsigned char *data, size_t len)
{
	struct mob_node n;

	return mob_script_node(data, len, &n, NULL) == 1;
}

/* ---- the node tree (FORMATS 6.1, 6.2) ---------------------------------- */

struct mob_walk {
	const unsigned char *data;
	GString *out;
	struct format_error *err;
	int scripts; /* script nodes shown so far */
};

static int mob_nodes(struct mob_walk *w, size_t at, size_t end, unsigned depth);

static void mob_hex(struct mob_walk *w, const struct mob_node *n, unsigned depth, const char *why)
{
	g_string_append_printf(w->out, "  # %s%s%u bytes, hex\n", why, *why ? ", " : "",
			       n->len - MOB_NODE_HEADER);
	view_hex(w->out, n->payload, n->len - MOB_NODE_HEADER, depth + 1);
}

static void mob_ints(GString *out, const unsigned char *p, size_t count)
{
	g_string_append_c(out, '[');
	for (size_t i = 0; i < count; i++)
		g_string_append_printf(out, "%s%d", i ? ", " : "", (int32_t)view_u32(p + 4 * i));
	g_string_append_c(out, ']');
}

/* A StringArray whose sub-nodes fill the payload exactly, each typed as
 * its parent. */
static int mob_strings_valid(const struct mob_node *n)
{
	size_t size = n->len - MOB_NODE_HEADER, at = 4;
	uint32_t count;

	if (size < 4)
		return 0;
	count = view_u32(n->payload);
	for (uint32_t i = 0; i < count; i++) {
		uint32_t sub;

		if (size - at < 8 || view_u32(n->payload + at) != n->type)
			return 0;
		sub = view_u32(n->payload + at + 4);
		if (sub < 8 || sub > size - at)
			return 0;
		at += sub;
	}
	return at == size;
}

static void mob_strings(struct mob_walk *w, const struct mob_node *n, unsigned depth)
{
	uint32_t count = view_u32(n->payload);
	size_t at = 4;

	g_string_append(w->out, count ? "\n" : " []\n");
	for (uint32_t i = 0; i < count; i++) {
		uint32_t sub = view_u32(n->payload + at + 4);

		view_indent(w->out, depth + 1);
		g_string_append(w->out, "- ");
		view_quoted(w->out, (const char *)n->payload + at + 8, sub - 8);
		g_string_append_c(w->out, '\n');
		at += sub;
	}
}

/* 43 words of unknown types: a word is shown as f32 when it reads as a
 * float of plain magnitude (2^-20 to 2^25), else as u32. */
static void mob_unit_stats(struct mob_walk *w, const unsigned char *p, unsigned depth)
{
	g_string_append_c(w->out, '\n');
	for (int i = 0; i < 43; i++, p += 4) {
		uint32_t u = view_u32(p), e = (u >> 23) & 0xFF;

		view_indent(w->out, depth + 1);
		if (e >= 127 - 20 && e <= 127 + 24) {
			g_string_append(w->out, "- f32 ");
			view_float(w->out, view_f32(p));
		} else {
			g_string_append_printf(w->out, "- u32 %u", u);
		}
		g_string_append_c(w->out, '\n');
	}
}

static void mob_diplomacy(struct mob_walk *w, const unsigned char *p, unsigned depth)
{
	g_string_append_c(w->out, '\n');
	for (int r = 0; r < 32; r++, p += 32 * 4) {
		view_indent(w->out, depth + 1);
		g_string_append(w->out, "- ");
		mob_ints(w->out, p, 32);
		g_string_append_c(w->out, '\n');
	}
}

/* The first script goes to its own view; any later one is shown here. */
static void mob_script(struct mob_walk *w, const struct mob_node *n, unsigned depth)
{
	unsigned char *text;
	size_t tlen;

	text = mob_script_bytes(n, &tlen);
	if (!text) {
		mob_hex(w, n, depth, "no key");
		return;
	}
	if (w->scripts++ == 0) {
		g_string_append(w->out, " (see the .mob.script.txt view)");
		if (n->type == MOB_SS_TEXT)
			g_string_append_printf(w->out, "  # encrypted, key 0x%08X,", view_u32(n->payload));
		else
			g_string_append(w->out, "  # plain,");
		g_string_append_printf(w->out, " %zu bytes\n", tlen);
	} else {
		g_string_append_c(w->out, ' ');
		view_quoted(w->out, (const char *)text, tlen);
		g_string_append_c(w->out, '\n');
	}
	g_free(text);
}

/* Kinds of a fixed size whose node has it: one value on the key's line. */
static void mob_scalar(struct mob_walk *w, const struct mob_node *n, enum kind k)
{
	const unsigned char *p = n->payload;

	g_string_append_c(w->out, ' ');
	switch (k) {
	case K_NULL: g_string_append(w->out, "null"); break;
	case K_DWORD: g_string_append_printf(w->out, "%u", view_u32(p)); break;
	case K_BYTE: g_string_append_printf(w->out, "%u", p[0]); break;
	case K_FLOAT: view_float(w->out, view_f32(p)); break;
	case K_PLOT: view_floats(w->out, p, 3); break;
	case K_QUAT: view_floats(w->out, p, 4); break;
	case K_RECT: mob_ints(w->out, p, 4); break;
	case K_LEVER: mob_ints(w->out, p, 3); break;
	default: break;
	}
	g_string_append_c(w->out, '\n');
}

static int mob_value(struct mob_walk *w, const struct mob_node *n, enum kind k, unsigned depth)
{
	char why[64];

	if (k < G_N_ELEMENTS(kind_size) && kind_size[k] && n->len != kind_size[k]) {
		snprintf(why, sizeof why, "expected %u bytes with the header", kind_size[k]);
		mob_hex(w, n, depth, why);
		return 0;
	}
	switch (k) {
	case K_RECORD:
		if (n->len == MOB_NODE_HEADER) {
			g_string_append(w->out, " {}\n");
			return 0;
		}
		g_string_append_c(w->out, '\n');
		return mob_nodes(w, n->at + MOB_NODE_HEADER, n->at + n->len, depth + 1);
	case K_STRING:
		g_string_append_c(w->out, ' ');
		view_quoted(w->out, (const char *)n->payload, n->len - MOB_NODE_HEADER);
		g_string_append_c(w->out, '\n');
		return 0;
	case K_STRINGS:
		if (mob_strings_valid(n))
			mob_strings(w, n, depth);
		else
			mob_hex(w, n, depth, "not a string array");
		return 0;
	case K_UNITSTATS: mob_unit_stats(w, n->payload, depth); return 0;
	case K_DIPLOMACY: mob_diplomacy(w, n->payload, depth); return 0;
	case K_SCRIPT:
	case K_SCRIPT_PLAIN: mob_script(w, n, depth); return 0;
	case K_BLOB: mob_hex(w, n, depth, ""); return 0;
	case K_UNKNOWN: mob_hex(w, n, depth, "unknown type"); return 0;
	default: mob_scalar(w, n, k); return 0;
	}
}

static int mob_nodes(struct mob_walk *w, size_t at, size_t end, unsigned depth)
{
	struct mob_node n;

	if (depth > MOB_MAX_DEPTH)
		return format_fail(w->err, EINVAL, at, "nodes nested deeper than %d", MOB_MAX_DEPTH);
	for (; at < end; at += n.len) {
		const struct mob_type *t;

		if (mob_node_at(w->data, at, end, &n, w->err) < 0)
			return -1;
		t = mob_type(n.type);
		view_indent(w->out, depth);
		if (t)
			g_string_append_printf(w->out, "%s:", t->name);
		else
			g_string_append_printf(w->out, "0x%08X:", n.type);
		if (mob_value(w, &n, t ? t->kind : K_UNKNOWN, depth) < 0)
			return -1;
	}
	return 0;
}

int mob_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	struct mob_walk w = { data, out, err, 0 };
	size_t start = out->len;

	if (mob_magic(data, len, err) < 0)
		return -1;
	if (mob_nodes(&w, 0, len, 0) < 0) {
		g_string_truncate(out, start);
		return -1;
	}
	return 0;
}
