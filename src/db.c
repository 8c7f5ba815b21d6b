/* Databases <-> JSON Lines (FORMATS.md section 4; the text format is in
 * the VIEWS section of eifs(1)).  Reading a DB checks every node against its parent's
 * end; a value that does not fit its schema type is shown as hex, so every
 * file that has a view gets back byte for byte from it.  The JSON reader
 * reads only what a JSON text may hold and builds a small tree per line. */
#include "db.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp1251.h"

/* ---- schemas (FORMATS 4.4) ------------------------------------------- */

enum db_type {
	DB_STR = 1,   /* cp1251 + NUL */
	DB_I32,
	DB_U32,
	DB_F32,
	DB_BYTE,
	DB_HEX,       /* raw bytes; also every field a schema does not name */
	DB_F32S,      /* packed f32 */
	DB_BYTES,     /* packed u8 */
	DB_STRS,      /* node(1, cp1251 + NUL) ... */
	DB_MSTRS,     /* node(1, cp1251 padded with NUL to >= 4 bytes) ... */
	DB_FIX4,      /* 4 bytes, NUL padded */
	DB_SHOPS,     /* u32 bit mask, bit i = shop i + 1 */
	DB_STRUCT,    /* node(subfield id, value) ... */
	DB_ACKS,      /* node(1, [node(subfield id, value) ...]) ... */
};

struct db_fields;

struct db_field {
	unsigned char id;
	unsigned char type;
	const char *name;              /* NULL: the key is "f<id>" */
	const struct db_fields *sub;   /* DB_STRUCT and DB_ACKS */
};

struct db_fields {
	const struct db_field *f;
	size_t n;
};

struct db_table {
	unsigned char id;
	const char *name;
	struct db_fields head, tail;   /* tail: the fields after a shared prefix */
};

struct db_schema {
	const char *name;
	const char *file;
	const char *ext;               /* NULL: only the exact file name */
	const struct db_table *t;
	size_t n;
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define FIELDS(a) { (a), N_OF(a) }
#define NO_FIELDS { NULL, 0 }

#define DSTR(i, n) { (i), DB_STR, (n), NULL }
#define DI32(i, n) { (i), DB_I32, (n), NULL }
#define DU32(i, n) { (i), DB_U32, (n), NULL }
#define DF32(i, n) { (i), DB_F32, (n), NULL }
#define DBYTE(i, n) { (i), DB_BYTE, (n), NULL }
#define DHEX(i, n) { (i), DB_HEX, (n), NULL }
#define DF32S(i, n) { (i), DB_F32S, (n), NULL }
#define DBYTES(i, n) { (i), DB_BYTES, (n), NULL }
#define DSTRS(i, n) { (i), DB_STRS, (n), NULL }
#define DMSTRS(i, n) { (i), DB_MSTRS, (n), NULL }
#define DFIX4(i, n) { (i), DB_FIX4, (n), NULL }
#define DSHOPS(i, n) { (i), DB_SHOPS, (n), NULL }
#define DSTRUCT(i, n, s) { (i), DB_STRUCT, (n), &(s) }
#define DACKS(i, n, s) { (i), DB_ACKS, (n), &(s) }

/* items.idb */
static const struct db_field items_materials[] = {
	DSTR(0, "Name"), DSTR(1, "Type"), DSTR(2, "Code"), DI32(3, "ID"), DF32(4, "Price"),
	DF32(5, "Weight"), DF32(6, "Mana"), DI32(7, "Slots"), DF32(8, "Durability"),
	DI32(9, "Skill"), DF32(10, "Damage"), DF32S(11, "Absorption"), DI32(12, "Unk12"),
	DSHOPS(13, "Shops"),
};
static const struct db_field items_common[] = {
	DSTR(0, "Name"), DSTR(1, "Type"), DI32(2, "TypeID/Unk"), DSTR(3, "Material Type"),
	DI32(4, "Unk4"), DI32(5, "Texture Type Index"), DI32(6, "TTI2"), DF32(7, "Price"),
	DF32(8, "Weight"), DF32(9, "Size"), DF32(10, "Mana"), DI32(11, "Slots"),
	DF32(12, "Durability"), DI32(13, "Components"), DSHOPS(14, "Shops"),
	DBYTE(15, "Deconstructable"),
};
static const struct db_field items_weapons[] = {
	DI32(21, "Actions"), DF32S(22, "Unk22"), DF32(23, "Range"), DF32(24, "DamageMin"),
	DF32(25, "DamageMax"), DF32S(26, "DamageProportions"), DHEX(27, NULL), DHEX(28, NULL),
	DF32(29, "Attack modifier"), DF32(30, "Defence modifier"),
};
static const struct db_field items_armors[] = {
	DF32S(21, "Main"), DF32S(22, "Additional"), DBYTE(23, "Apply wounds"),
	DI32(24, "Wear order"), DHEX(25, NULL), DHEX(26, NULL),
};
static const struct db_field items_quick[] = {
	DI32(21, "QuickItemID"), DI32(22, "Graphics level"), DF32(23, "Damage"), DF32(24, "Unk"),
	DSTR(25, "Spell"), DBYTES(26, "Modifiers"), DHEX(27, NULL),
};
static const struct db_field items_quest[] = {
	DI32(21, "ScriptID"), DSTRS(22, "Zones"),
};
static const struct db_field items_loot[] = {
	DI32(21, "TypeID"), DHEX(22, NULL), DI32(23, "Unk"),
};
static const struct db_table items_tables[] = {
	{ 1, "Materials", FIELDS(items_materials), NO_FIELDS },
	{ 2, "Weapons", FIELDS(items_common), FIELDS(items_weapons) },
	{ 3, "Armors", FIELDS(items_common), FIELDS(items_armors) },
	{ 4, "Quick Items", FIELDS(items_common), FIELDS(items_quick) },
	{ 5, "Quest Items", FIELDS(items_common), FIELDS(items_quest) },
	{ 6, "Loot Items", FIELDS(items_common), FIELDS(items_loot) },
};

/* levers.ldb */
static const struct db_field levers_prototypes[] = {
	DSTR(0, "Name"), DF32S(1, "Places"), DI32(2, "PlacesNum"), DF32(3, "Scale"),
	DI32(4, "Switch Time"), DSTR(5, "Material"), DSTR(6, "Switch Sound"),
	DSTR(7, "Lever Text"),
};
static const struct db_table levers_tables[] = {
	{ 1, "Lever Prototypes", FIELDS(levers_prototypes), NO_FIELDS },
};

/* perks.pdb */
static const struct db_field perks_skills[] = {
	DSTR(0, "Name"), DSTR(1, "Code"), DI32(2, "TTI"), DSTRS(10, "Base Attributes"),
};
static const struct db_field perks_perks[] = {
	DSTR(0, "Name"), DSTR(1, "Code"), DI32(2, "TTI"), DSTR(10, "Perk"), DSTR(11, "Skill"),
	DI32(12, "SkillID"), DI32(13, "Unk"), DI32(14, "Skill Level"), DF32(15, "Str"),
	DF32(16, "Dex"), DF32(17, "Int"), DI32(18, "Cost"), DI32(19, "Modifier"),
	DI32(20, "Mult"), DI32(21, "Add"), DBYTE(22, "Active"), DI32(23, "Exclusive"),
};
static const struct db_table perks_tables[] = {
	{ 1, "Skills", FIELDS(perks_skills), NO_FIELDS },
	{ 2, "Perks", FIELDS(perks_perks), NO_FIELDS },
};

/* prints.db */
static const struct db_field prints_params_f[] = {
	DF32(1, "Opacity"), DI32(2, "Lifetime"), DI32(3, "Fadeout"),
};
static const struct db_fields prints_params = FIELDS(prints_params_f);
static const struct db_field prints_blood[] = {
	DSTR(1, "Terrain Type"), DSTRUCT(2, "Clear Weather", prints_params),
	DSTRUCT(3, "Weather Precipitation", prints_params),
};
static const struct db_field prints_foot[] = {
	DSTR(1, "Terrain Type"), DSTRUCT(2, "Clear Weather", prints_params),
	DSTRUCT(3, "Weather Precipitation", prints_params), DSTRUCT(10, "Bloody", prints_params),
};
static const struct db_table prints_tables[] = {
	{ 1, "Blood Prints", FIELDS(prints_blood), NO_FIELDS },
	{ 2, "Foot Prints", FIELDS(prints_foot), NO_FIELDS },
	{ 3, "Fire Prints", FIELDS(prints_blood), NO_FIELDS },
};

/* spells.sdb */
static const struct db_field spells_prototypes[] = {
	DSTR(0, "Name"), DSTR(1, "Code"), DSTR(2, "SubType"), DF32(3, "Price"), DI32(4, "Type"),
	DF32(5, "Mana"), DI32(6, "Slots"), DF32(7, "Speed"), DF32(8, "Range"), DF32(9, "Area"),
	DF32(10, "Effect"), DI32(11, "Target"), DI32(12, "Targets"), DI32(13, "Duration"),
	DI32(14, "Actions"), DU32(15, "Require Trace"), DMSTRS(16, "BuiltIn Mods"),
	DMSTRS(17, "Special Mods"), DI32(18, "TTI"), DI32(19, "SubTypeCode"),
	DBYTES(20, "Available Mods"), DI32(21, "Complex"), DSHOPS(22, "Shops"),
	DF32(23, "Light R"), DF32(24, "Light G"), DF32(25, "Light B"), DF32(26, "Light Radius"),
	DF32(27, "Fadeout"),
};
static const struct db_field spells_modifiers[] = {
	DSTR(0, "Name"), DFIX4(1, "Code"), DF32(2, "Price"), DI32(3, "Type"), DF32(4, "Mana"),
	DF32(5, "Value"), DI32(6, "Complex"), DSTR(7, "Allod"), DSHOPS(8, "Shops"),
};
static const struct db_field spells_templates[] = {
	DSTR(1, "Prototype"), DSTRS(2, "Required"), DSTRS(3, "Optional"), DSTR(4, "Power"),
	DSHOPS(5, "Shops"),
};
static const struct db_table spells_tables[] = {
	{ 1, "Spell Prototypes", FIELDS(spells_prototypes), NO_FIELDS },
	{ 2, "Spell Modifiers", FIELDS(spells_modifiers), NO_FIELDS },
	{ 3, "Spell Templates", FIELDS(spells_templates), NO_FIELDS },
	{ 4, "Armor Spell Templates", FIELDS(spells_templates), NO_FIELDS },
	{ 5, "Weapon Spell Templates", FIELDS(spells_templates), NO_FIELDS },
};

/* units.udb */
static const struct db_field units_race_f[] = {
	DSTR(0, "Type"), DU32(1, "Unk"), DF32(2, "Weight"), DF32(3, "Vitality"),
};
static const struct db_fields units_race = FIELDS(units_race_f);
static const struct db_field units_loot_f[] = {
	DF32(0, "Probability"), DF32(1, "Mask"), DF32(2, "Min"), DF32(3, "Max"),
};
static const struct db_fields units_loot = FIELDS(units_loot_f);
static const struct db_field units_hit[] = {
	DSTR(0, "Name"), DF32S(1, NULL), DF32S(2, NULL), DU32(3, NULL), DU32(4, NULL),
};
static const struct db_field units_races[] = {
	DSTR(0, "Name"), DU32(1, "TypeId"), DF32(2, "RegenHealth"), DF32(3, "RegenMana"),
	DU32(4, "Language"), DU32(5, "Locomotion"), DF32(6, "Vision arc"), DF32S(7, "Speeds"),
	DF32(8, "Attack Distance"), DU32(9, "AI stay"), DU32(10, "AI lie"), DF32S(11, "Attack"),
	DSTRUCT(12, "head", units_race), DSTRUCT(13, "torso", units_race),
	DSTRUCT(14, "rarm", units_race), DSTRUCT(15, "larm", units_race),
	DSTRUCT(16, "rleg", units_race), DSTRUCT(17, "lleg", units_race),
	DSTR(30, "Mask name"), DSTRS(31, "Primary textures"), DSTRS(32, "Secondary textures"),
	DF32(33, "Model shift"), DSTR(34, "SFX path"), DSTRS(35, "Steps"),
	DF32S(36, "Anim speeds"), DU32(37, "Idle snd prob"), DU32(38, "Attack snd prob"),
	DF32S(39, "Defence"), DU32(40, "Blood type"), DU32(41, "Cast type"),
	DI32(42, "Footprint type"), DU32(43, "Leg segments"), DSTR(44, "Skin type"),
	DBYTE(45, "First step right"), DF32(46, "Head height"), DU32(47, NULL), DU32(48, NULL),
	DU32(49, NULL), DU32(50, NULL),
};
static const struct db_field units_monsters[] = {
	DSTR(0, "Name"), DSTR(1, "Base Race"), DI32(2, NULL), DU32(3, "Skin"), DI32(4, "Hair"),
	DF32(5, NULL), DF32(6, NULL), DF32(7, NULL), DSTR(8, NULL), DF32(9, "HP"),
	DF32(10, "Mana"), DF32(11, "Absorption"), DF32(12, "Actions"), DF32(13, "Move"),
	DF32(14, "Attack range"), DF32(15, "To hit"), DF32(16, "Parry"),
	DF32(17, "Weapon weight"), DU32(18, "Weapon type"), DF32(19, "Dmg min"),
	DF32(20, "Dmg max"), DF32(21, NULL), DF32(22, NULL), DF32(23, NULL), DF32(24, NULL),
	DF32S(25, "Senses"), DF32S(26, "Detections"), DSTRUCT(27, "Common loot", units_loot),
	DSTRUCT(28, "Rare loot", units_loot), DSTRS(29, "Items"), DF32S(30, "Astral"),
	DSTRS(31, "Spells"), DSTRS(32, "Wears"), DSTR(33, "Weapon1"), DF32(34, NULL),
	DF32(35, NULL), DF32(36, NULL), DF32(37, NULL), DF32(38, NULL),
	DU32(39, "Real weapon type"), DF32(40, "Detonation"), DU32(41, "Base level"),
	DSTR(42, "Weapon2"), DF32(43, "Exp"),
};
static const struct db_field units_npcs[] = {
	DSTR(0, "Name"), DU32(1, NULL), DF32(2, "Exp"), DF32(3, "Str"), DF32(4, "Dex"),
	DF32(5, "Int"), DBYTES(6, NULL), DBYTES(7, NULL), DSTRS(8, "Perks"), DSTRS(9, "Weapons"),
	DSTRS(10, "Quest items"), DSTRS(11, "Spells"), DF32(12, "Exp to distribute"),
	DU32(13, "Money"), DBYTE(14, "Voice"),
};
static const struct db_table units_tables[] = {
	{ 1, "Hit Locations", FIELDS(units_hit), NO_FIELDS },
	{ 2, "Race Models", FIELDS(units_races), NO_FIELDS },
	{ 3, "Monster Prototypes", FIELDS(units_monsters), NO_FIELDS },
	{ 4, "NPCs", FIELDS(units_npcs), NO_FIELDS },
};

/* quests.qdb */
static const struct db_field quests_quests[] = {
	DSTR(0, "Name"), DF32(1, "Experience"), DI32(2, NULL), DI32(3, "Zone"),
	DSTR(4, "Comment"), DI32(5, "Money"), DI32(6, "Record"), DSTRS(7, NULL),
};
static const struct db_field quests_briefings[] = {
	DSTR(0, "Name"), DF32(1, NULL), DF32(2, "Money"), DSTRS(3, "Give items"),
	DSTR(4, "Comment"), DSTRS(5, "Take items"), DSTRS(6, "Give quests 1"),
	DSTRS(7, "Give quests 2"), DSTRS(8, "Open zones"), DSTRS(9, NULL), DI32(10, "Bonus"),
};
static const struct db_table quests_tables[] = {
	{ 1, "Quests", FIELDS(quests_quests), NO_FIELDS },
	{ 2, "Briefings", FIELDS(quests_briefings), NO_FIELDS },
};

/* acks.db */
static const struct db_field acks_item_f[] = {
	DSTR(1, "Path"), DI32(2, "weight"), DSTR(3, "Text"), DSTR(4, "Code"),
};
static const struct db_fields acks_item = FIELDS(acks_item_f);
static const struct db_field acks_item2_f[] = {
	DSTR(1, "Path"), DI32(2, "weight"), DSTR(3, "Text"), DSTR(4, "Code"), DU32(10, NULL),
};
static const struct db_fields acks_item2 = FIELDS(acks_item2_f);
static const struct db_field acks_answers[] = {
	DSTR(1, "Name"), DACKS(10, "Select", acks_item), DACKS(11, "Move", acks_item),
	DACKS(12, "Attack", acks_item), DACKS(13, "Cast", acks_item), DACKS(14, "Loot", acks_item),
	DACKS(15, "UseObj", acks_item), DACKS(16, "Steal", acks_item),
	DACKS(17, "Follow", acks_item), DACKS(18, "UsePot", acks_item),
	DACKS(19, "ChPos", acks_item), DACKS(20, "NoWay", acks_item),
	DACKS(21, "CntChPos", acks_item), DACKS(22, "NoPath", acks_item),
	DACKS(23, "CantCast", acks_item), DACKS(24, "CantTele", acks_item),
	DACKS(25, "SkiFail", acks_item), DACKS(26, "NoTarget", acks_item),
	DACKS(27, "ComplSp", acks_item), DACKS(28, "DecToAtt", acks_item),
	DACKS(29, "OutStam", acks_item), DACKS(30, "ArmCrip", acks_item),
	DACKS(31, "LegCrip", acks_item), DACKS(32, "Bored", acks_item2),
	DACKS(33, "Unknown", acks_item), DACKS(34, "Overload", acks_item),
	DACKS(35, "Injured", acks_item), DACKS(36, "BigAtt", acks_item),
	DACKS(37, "ArmorCrip", acks_item), DACKS(38, "WearCrip", acks_item),
	DACKS(39, "AttInDef", acks_item), DACKS(40, "WaitFoll", acks_item),
	DACKS(41, "Scenario", acks_item), DACKS(42, "StealEmp", acks_item),
	DACKS(43, "ShopYes", acks_item), DACKS(44, "ShopNo", acks_item),
};
static const struct db_field acks_cryes[] = {
	DSTR(1, "Name"), DACKS(10, "Agress", acks_item), DACKS(11, "Suspect", acks_item),
	DACKS(12, "Kill", acks_item), DACKS(13, "Rest", acks_item),
	DACKS(14, "InAgress", acks_item),
};
static const struct db_field acks_others[] = {
	DSTR(1, "Name"), DACKS(10, "Talk", acks_item), DACKS(11, "Rest", acks_item),
};
static const struct db_table acks_tables[] = {
	{ 1, "Answers", FIELDS(acks_answers), NO_FIELDS },
	{ 2, "Cryes", FIELDS(acks_cryes), NO_FIELDS },
	{ 3, "Others", FIELDS(acks_others), NO_FIELDS },
};

static const struct db_schema schemas[] = {
	{ "items", "items.idb", ".idb", items_tables, N_OF(items_tables) },
	{ "units", "units.udb", ".udb", units_tables, N_OF(units_tables) },
	{ "spells", "spells.sdb", ".sdb", spells_tables, N_OF(spells_tables) },
	{ "perks", "perks.pdb", ".pdb", perks_tables, N_OF(perks_tables) },
	{ "quests", "quests.qdb", ".qdb", quests_tables, N_OF(quests_tables) },
	{ "levers", "levers.ldb", ".ldb", levers_tables, N_OF(levers_tables) },
	{ "prints", "prints.db", NULL, prints_tables, N_OF(prints_tables) },
	{ "acks", "acks.db", NULL, acks_tables, N_OF(acks_tables) },
};

/* The game's files are 10 bytes longer than their root node (FORMATS 4.2). */
static const unsigned char db_trailer[10] = { 0x00, 0x00, 0x02, 0x0C, 0x02, 0x08, 0x01, 0x00, 0x00, 0x00 };
enum { DB_TRAILER = 10 };

/* Sub-structures hold plain values; the bound keeps a faulty schema or a
 * crafted text from recursing without end. */
enum { DB_MAX_DEPTH = 4, JSON_MAX_DEPTH = 32 };

/* Names in the text that a field may not take. */
static const char *const reserved_keys[] = { "table", "row", "wide", "unsorted", "hex" };

static const struct db_field *fields_find(const struct db_fields *fs, unsigned id)
{
	for (size_t i = 0; i < fs->n; i++)
		if (fs->f[i].id == id)
			return &fs->f[i];
	return NULL;
}

static const struct db_field *table_field(const struct db_table *t, unsigned id)
{
	const struct db_field *f;

	if (!t)
		return NULL;
	f = fields_find(&t->head, id);
	return f ? f : fields_find(&t->tail, id);
}

static const struct db_table *schema_table(const struct db_schema *s, unsigned id)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (s->t[i].id == id)
			return &s->t[i];
	return NULL;
}

/* The name after the last '/' or '\\'. */
static const char *base_name(const char *file_name)
{
	const char *base = file_name;

	for (const char *p = file_name; *p; p++)
		if (*p == '/' || *p == '\\')
			base = p + 1;
	return base;
}

static const struct db_schema *schema_by_file(const char *file_name)
{
	const char *base = base_name(file_name), *dot;

	for (size_t i = 0; i < N_OF(schemas); i++)
		if (!g_ascii_strcasecmp(base, schemas[i].file))
			return &schemas[i];
	dot = strrchr(base, '.');
	for (size_t i = 0; dot && i < N_OF(schemas); i++)
		if (schemas[i].ext && !g_ascii_strcasecmp(dot, schemas[i].ext))
			return &schemas[i];
	return NULL;
}

const char *db_schema_of(const char *file_name)
{
	const struct db_schema *s = file_name ? schema_by_file(file_name) : NULL;

	return s ? s->name : NULL;
}

int db_is_database(const char *file_name)
{
	return db_schema_of(file_name) != NULL;
}

/* "f12" / "t3": the generic key of an id; returns the id or -1. */
static int generic_id(const char *s, size_t n, char prefix)
{
	unsigned v = 0;

	if (n < 2 || n > 4 || s[0] != prefix || (s[1] == '0' && n > 2))
		return -1;
	for (size_t i = 1; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v <= 255 ? (int)v : -1;
}

/* ---- nodes (FORMATS 4.1) ---------------------------------------------- */

struct node {
	unsigned id;
	size_t at;     /* the id byte */
	size_t pos;    /* the payload */
	size_t len;
	int wide;      /* 4-byte length form for a length the 1-byte form holds */
};

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* Reads the node at d[at] of a parent that ends at end (at <= end). */
static int node_read(const unsigned char *d, size_t at, size_t end, struct node *n,
		     struct format_error *err)
{
	if (end - at < 2)
		return format_fail(err, EINVAL, at, "node header cut short by its parent's end at %zu",
				   end);
	n->id = d[at];
	n->at = at;
	if (!(d[at + 1] & 1)) {
		n->len = d[at + 1] / 2;
		n->pos = at + 2;
		n->wide = 0;
	} else {
		if (end - at < 5)
			return format_fail(err, EINVAL, at,
					   "4-byte length cut short by its parent's end at %zu", end);
		n->len = (get_le32(d + at + 1) - 1) / 2;
		n->pos = at + 5;
		n->wide = n->len <= 127;
	}
	if (n->len > end - n->pos)
		return format_fail(err, EINVAL, at,
				   "node of id %u: %zu bytes at %zu run past its parent's end at %zu",
				   n->id, n->len, n->pos, end);
	return 0;
}

/* ---- DB -> JSON Lines ------------------------------------------------- */

struct emit {
	GString *out;
	struct node tables[256];         /* the root's: no id twice */
	unsigned n_tables;
	char utf8[128][4];               /* UTF-8 of the cp1251 bytes 0x80..0xFF */
	unsigned char utf8_len[128];
};

static const char hex_digits[] = "0123456789abcdef";

static void put_hex(GString *out, const unsigned char *p, size_t n)
{
	size_t at = out->len;

	g_string_set_size(out, at + 2 + 2 * n);
	out->str[at++] = '"';
	for (size_t i = 0; i < n; i++) {
		out->str[at++] = hex_digits[p[i] >> 4];
		out->str[at++] = hex_digits[p[i] & 15];
	}
	out->str[at] = '"';
}

/* A JSON string of cp1251 bytes.  NUL, the other C0 controls, DEL and the
 * byte cp1251 leaves undefined (0x98, written \u0098) are escaped, so that
 * each character of the text stands for one byte. */
static void put_str(struct emit *e, const unsigned char *p, size_t n)
{
	size_t at = e->out->len;
	char *o;

	g_string_set_size(e->out, at + 6 * n + 2);   /* "\u0098" is the longest */
	o = e->out->str + at;
	*o++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			*o++ = (char)c;
		} else if (c >= 0x80 && c != 0x98) {
			memcpy(o, e->utf8[c - 0x80], 4);
			o += e->utf8_len[c - 0x80];
		} else if (c == '"' || c == '\\' || c == '\n' || c == '\t' || c == '\r') {
			*o++ = '\\';
			*o++ = c == '\n' ? 'n' : c == '\t' ? 't' : c == '\r' ? 'r' : (char)c;
		} else {
			memcpy(o, "\\u00", 4);
			o[4] = hex_digits[c >> 4];
			o[5] = hex_digits[c & 15];
			o += 6;
		}
	}
	*o++ = '"';
	g_string_truncate(e->out, (gsize)(o - e->out->str));
}

/* A name of the schema: plain ASCII. */
static void put_name(GString *out, const char *name)
{
	size_t n = strlen(name), at = out->len;

	g_string_set_size(out, at + n + 2);
	out->str[at] = '"';
	memcpy(out->str + at + 1, name, n);
	out->str[at + n + 1] = '"';
}

/* A UTF-8 name (the file's) as a JSON string; invalid bytes become U+FFFD. */
static void put_utf8(GString *out, const char *s)
{
	char *valid = g_utf8_make_valid(s, -1);

	g_string_append_c(out, '"');
	for (const char *p = valid; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '"' || c == '\\')
			g_string_append_c(out, '\\');
		if (c < 0x20)
			g_string_append_printf(out, "\\u%04x", c);
		else
			g_string_append_c(out, (char)c);
	}
	g_string_append_c(out, '"');
	g_free(valid);
}

static void put_uint(GString *out, uint32_t v)
{
	char buf[12];
	size_t i = sizeof buf, at = out->len;

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	g_string_set_size(out, at + sizeof buf - i);
	memcpy(out->str + at, buf + i, sizeof buf - i);
}

static void put_int(GString *out, int32_t v)
{
	if (v < 0) {
		g_string_append_c(out, '-');
		put_uint(out, 0u - (uint32_t)v);
	} else {
		put_uint(out, (uint32_t)v);
	}
}

static uint32_t f32_bits(float f)
{
	uint32_t b;

	memcpy(&b, &f, 4);
	return b;
}

/* The float a decimal text stands for, the same way on both directions:
 * the round-trip search below uses it, so what it finds reads back. */
static float f32_parse(const char *s, int *range)
{
	double d = g_ascii_strtod(s, NULL);

	*range = 0;
	if (fabs(d) > FLT_MAX) {
		/* the decimal form of FLT_MAX is a little above it */
		if (fabs(d) >= 3.4028235677973366e38) {
			*range = 1;
			return 0;
		}
		return d < 0 ? -FLT_MAX : FLT_MAX;
	}
	return (float)d;
}

/* The shortest %g text that reads back as the same float; whole numbers as
 * integers.  Non-finite values keep their bits: "nan:0x7fc00000".  For a
 * normal float, a text of at most 6 digits that reads back is what %.6g
 * prints (its half ulp is below half a unit in the 6th digit), so one try
 * finds most of the game's values; the rest need 7 to 9 digits.  (A
 * subnormal may get more digits than it needs, never too few.) */
static void put_f32(GString *out, uint32_t bits)
{
	static const char *const fmt[] = { "%.6g", "%.7g", "%.8g", "%.9g" };
	char buf[G_ASCII_DTOSTR_BUF_SIZE];
	float f;
	int range;

	memcpy(&f, &bits, 4);
	if (!isfinite(f)) {
		g_string_append_printf(out, "\"%s:0x%08" PRIx32 "\"", isnan(f) ? "nan" : "inf", bits);
		return;
	}
	if (f == truncf(f) && fabsf(f) < 16777216.0f && !(f == 0 && signbit(f))) {
		put_int(out, (int32_t)f);
		return;
	}
	for (size_t i = 0; i < N_OF(fmt); i++) {
		g_ascii_formatd(buf, sizeof buf, fmt[i], f);
		if (f32_bits(f32_parse(buf, &range)) == bits)
			break;
	}
	g_string_append(out, buf);
}

static void put_key(GString *out, const struct db_field *def, unsigned id, char prefix)
{
	if (def && def->name) {
		put_name(out, def->name);
	} else {
		g_string_append_c(out, '"');
		g_string_append_c(out, prefix);
		put_uint(out, id);
		g_string_append_c(out, '"');
	}
	g_string_append_c(out, ':');
}

static void put_field(struct emit *e, const struct db_field *def, const unsigned char *p,
		      size_t n, int depth);

/* Sub-structure: node(subfield id, value)... in ascending ids, 1-byte
 * length forms (anything else is shown as hex by the caller). */
static int put_struct(struct emit *e, const struct db_fields *sub, const unsigned char *p, size_t n,
		      int depth)
{
	GString *out = e->out;
	struct node c;
	int prev = -1;

	if (depth > DB_MAX_DEPTH)
		return -1;
	g_string_append_c(out, '{');
	for (size_t at = 0; at < n; at = c.pos + c.len) {
		if (node_read(p, at, n, &c, NULL) < 0 || c.wide || (int)c.id < prev)
			return -1;
		if (prev >= 0)
			g_string_append_c(out, ',');
		prev = (int)c.id;
		put_key(out, fields_find(sub, c.id), c.id, 'f');
		put_field(e, fields_find(sub, c.id), p + c.pos, c.len, depth + 1);
	}
	g_string_append_c(out, '}');
	return 0;
}

static int put_acks(struct emit *e, const struct db_fields *sub, const unsigned char *p, size_t n,
		    int depth)
{
	GString *out = e->out;
	struct node c;

	g_string_append_c(out, '[');
	for (size_t at = 0; at < n; at = c.pos + c.len) {
		if (node_read(p, at, n, &c, NULL) < 0 || c.wide || c.id != 1)
			return -1;
		if (at)
			g_string_append_c(out, ',');
		if (put_struct(e, sub, p + c.pos, c.len, depth + 1) < 0)
			return -1;
	}
	g_string_append_c(out, ']');
	return 0;
}

/* Bytes a minfixed string keeps: the text without its NUL padding, and the
 * payload must be what writing that text gives back. */
static size_t mstr_text(const unsigned char *p, size_t n, int *exact)
{
	size_t t = n;

	while (t && !p[t - 1])
		t--;
	*exact = n == (t > 4 ? t : 4);
	return t;
}

static int put_strings(struct emit *e, const unsigned char *p, size_t n, int minfixed)
{
	GString *out = e->out;
	struct node c;

	g_string_append_c(out, '[');
	for (size_t at = 0; at < n; at = c.pos + c.len) {
		const unsigned char *s;
		size_t t;
		int exact;

		if (node_read(p, at, n, &c, NULL) < 0 || c.wide || c.id != 1)
			return -1;
		s = p + c.pos;
		if (minfixed) {
			t = mstr_text(s, c.len, &exact);
			if (!exact)
				return -1;
		} else {
			if (!c.len || s[c.len - 1])
				return -1;
			t = c.len - 1;
		}
		if (at)
			g_string_append_c(out, ',');
		put_str(e, s, t);
	}
	g_string_append_c(out, ']');
	return 0;
}

/* Appends the value of a typed field; -1 when the bytes do not have the
 * form of the type (the caller then shows hex). */
static int put_typed(struct emit *e, const struct db_field *def, const unsigned char *p, size_t n,
		     int depth)
{
	GString *out = e->out;
	uint32_t v;
	size_t t;

	switch (def->type) {
	case DB_STR:
		if (!n || p[n - 1])
			return -1;
		put_str(e, p, n - 1);
		return 0;
	case DB_I32: case DB_U32: case DB_F32:
		if (n != 4)
			return -1;
		v = get_le32(p);
		if (def->type == DB_I32)
			put_int(out, (int32_t)v);
		else if (def->type == DB_U32)
			put_uint(out, v);
		else
			put_f32(out, v);
		return 0;
	case DB_BYTE:
		if (n != 1)
			return -1;
		put_uint(out, p[0]);
		return 0;
	case DB_F32S: case DB_BYTES:
		t = def->type == DB_F32S ? 4 : 1;
		if (n % t)
			return -1;
		g_string_append_c(out, '[');
		for (size_t i = 0; i < n; i += t) {
			if (i)
				g_string_append_c(out, ',');
			if (t == 4)
				put_f32(out, get_le32(p + i));
			else
				put_uint(out, p[i]);
		}
		g_string_append_c(out, ']');
		return 0;
	case DB_STRS: case DB_MSTRS:
		return put_strings(e, p, n, def->type == DB_MSTRS);
	case DB_FIX4:
		if (n != 4)
			return -1;
		for (t = 4; t && !p[t - 1]; t--)
			;
		put_str(e, p, t);
		return 0;
	case DB_SHOPS:
		if (n != 4)
			return -1;
		v = get_le32(p);
		g_string_append_c(out, '[');
		for (unsigned i = 0, first = 1; i < 32; i++) {
			if (!(v >> i & 1))
				continue;
			if (!first)
				g_string_append_c(out, ',');
			first = 0;
			put_uint(out, i + 1);
		}
		g_string_append_c(out, ']');
		return 0;
	case DB_STRUCT:
		return put_struct(e, def->sub, p, n, depth);
	case DB_ACKS:
		return put_acks(e, def->sub, p, n, depth);
	default:
		return -1;
	}
}

/* A field's value; hex where the schema knows no type or the bytes do not
 * fit it: {"hex":"..."} then, so that the type of the field stays clear. */
static void put_field(struct emit *e, const struct db_field *def, const unsigned char *p, size_t n,
		      int depth)
{
	GString *out = e->out;
	size_t mark = out->len;

	if (!def || def->type == DB_HEX) {
		put_hex(out, p, n);
		return;
	}
	if (put_typed(e, def, p, n, depth) == 0)
		return;
	g_string_truncate(out, mark);
	g_string_append(out, "{\"hex\":");
	put_hex(out, p, n);
	g_string_append_c(out, '}');
}

static void put_table_name(GString *out, const struct db_schema *s, unsigned id)
{
	const struct db_table *t = schema_table(s, id);

	if (t)
		put_name(out, t->name);
	else
		g_string_append_printf(out, "\"t%u\"", id);
}

/* What a row's fields say before they are shown: are they in ascending ids,
 * and which use the 4-byte length form although the 1-byte form would hold
 * their length (form[id]: -1 no such field, 0 or 1 its wide flag).  A key
 * stands for every field of its id, so two fields of one id must agree.
 * The row's fields are walked, never stored, so that a crafted row of many
 * tiny fields costs no memory. */
static int row_survey(const unsigned char *d, const struct node *row, int *sorted, int *any_wide,
		      signed char form[256], struct format_error *err)
{
	struct node f;
	int prev = -1;

	*sorted = 1;
	*any_wide = row->wide;
	memset(form, -1, 256);
	for (size_t at = row->pos; at < row->pos + row->len; at = f.pos + f.len) {
		if (node_read(d, at, row->pos + row->len, &f, err) < 0)
			return -1;
		if (form[f.id] >= 0 && form[f.id] != f.wide)
			return format_fail(err, EINVAL, f.at,
					   "field %u appears twice with different length forms", f.id);
		form[f.id] = (signed char)f.wide;
		*any_wide |= f.wide;
		*sorted &= (int)f.id >= prev;
		prev = (int)f.id;
	}
	return 0;
}

/* ,"wide":["row","Name",...] in the order the fields come. */
static void put_row_wide(struct emit *e, const unsigned char *d, const struct node *row,
			 const struct db_field *const *by_id, signed char form[256])
{
	struct node f;

	g_string_append(e->out, ",\"wide\":[");
	if (row->wide)
		g_string_append(e->out, "\"row\",");
	for (size_t at = row->pos; at < row->pos + row->len; at = f.pos + f.len) {
		node_read(d, at, row->pos + row->len, &f, NULL);   /* read once already */
		if (form[f.id] != 1)
			continue;
		form[f.id] = 2;   /* listed */
		put_key(e->out, by_id[f.id], f.id, 'f');
		e->out->str[e->out->len - 1] = ',';
	}
	e->out->str[e->out->len - 1] = ']';
}

static int put_row(struct emit *e, const unsigned char *d, const struct db_schema *s,
		   const struct node *table, size_t index, const struct node *row,
		   const struct db_field *const *by_id, struct format_error *err)
{
	signed char form[256];
	int sorted, any_wide;
	struct node f;

	if (row->id != 1)
		return format_fail(err, EINVAL, row->at, "row node has id %u, not 1", row->id);
	if (row_survey(d, row, &sorted, &any_wide, form, err) < 0)
		return -1;
	g_string_append(e->out, "{\"table\":");
	put_table_name(e->out, s, table->id);
	g_string_append(e->out, ",\"row\":");
	put_uint(e->out, (uint32_t)index);
	if (!sorted)
		g_string_append(e->out, ",\"unsorted\":true");
	if (any_wide)
		put_row_wide(e, d, row, by_id, form);
	for (size_t at = row->pos; at < row->pos + row->len; at = f.pos + f.len) {
		node_read(d, at, row->pos + row->len, &f, NULL);
		g_string_append_c(e->out, ',');
		put_key(e->out, by_id[f.id], f.id, 'f');
		put_field(e, by_id[f.id], d + f.pos, f.len, 0);
	}
	g_string_append(e->out, "}\n");
	return 0;
}

static int put_table(struct emit *e, const unsigned char *d, const struct db_schema *s,
		     const struct node *table, struct format_error *err)
{
	const struct db_table *t = schema_table(s, table->id);
	const struct db_field *by_id[256];
	struct node row;
	size_t index = 0;

	for (unsigned id = 0; id < 256; id++)
		by_id[id] = table_field(t, id);
	for (size_t at = table->pos; at < table->pos + table->len; at = row.pos + row.len) {
		if (node_read(d, at, table->pos + table->len, &row, err) < 0 ||
		    put_row(e, d, s, table, index++, &row, by_id, err) < 0)
			return -1;
	}
	return 0;
}

/* The first line: what the file is and which tables it holds, in order. */
static void put_header(struct emit *e, const char *file_name, const struct db_schema *s,
		       const struct node *root)
{
	const struct node *t = e->tables;
	unsigned n = e->n_tables;
	int wide = root->wide;

	g_string_append(e->out, "{\"file\":");
	put_utf8(e->out, base_name(file_name));
	g_string_append(e->out, ",\"format\":\"eifs-db\",\"version\":1,\"schema\":");
	if (s)
		put_name(e->out, s->name);
	else
		g_string_append(e->out, "null");
	g_string_append(e->out, ",\"tables\":[");
	for (unsigned i = 0; i < n; i++) {
		if (i)
			g_string_append_c(e->out, ',');
		put_table_name(e->out, s, t[i].id);
		wide |= t[i].wide;
	}
	g_string_append_c(e->out, ']');
	if (wide) {
		g_string_append(e->out, ",\"wide\":[");
		if (root->wide)
			g_string_append(e->out, "\"root\",");
		for (unsigned i = 0; i < n; i++)
			if (t[i].wide) {
				put_table_name(e->out, s, t[i].id);
				g_string_append_c(e->out, ',');
			}
		e->out->str[e->out->len - 1] = ']';
	}
	g_string_append(e->out, "}\n");
}

/* The tables of the root, each id once. */
static int root_tables(struct emit *e, const unsigned char *d, const struct node *root,
		       struct format_error *err)
{
	unsigned char seen[256] = { 0 };
	struct node t;

	e->n_tables = 0;
	for (size_t at = root->pos; at < root->pos + root->len; at = t.pos + t.len) {
		if (node_read(d, at, root->pos + root->len, &t, err) < 0)
			return -1;
		if (seen[t.id]++)
			return format_fail(err, EINVAL, t.at, "table %u appears twice", t.id);
		e->tables[e->n_tables++] = t;
	}
	return 0;
}

static int emit_db(struct emit *e, const char *file_name, const unsigned char *d, size_t len,
		   struct format_error *err)
{
	const struct db_schema *s = schema_by_file(file_name);
	struct node root;

	if (len < DB_TRAILER + 2)
		return format_fail(err, EINVAL, 0, "%zu bytes are too few for a database", len);
	if (memcmp(d + len - DB_TRAILER, db_trailer, DB_TRAILER))
		return format_fail(err, EINVAL, len - DB_TRAILER,
				   "the last 10 bytes are not 00 00 02 0C 02 08 01 00 00 00");
	if (node_read(d, 0, len - DB_TRAILER, &root, err) < 0)
		return -1;
	if (root.id != 1)
		return format_fail(err, EINVAL, 0, "root node has id %u, not 1", root.id);
	if (root.pos + root.len != len - DB_TRAILER)
		return format_fail(err, EINVAL, root.pos + root.len,
				   "%zu bytes between the root node and the trailer",
				   len - DB_TRAILER - root.pos - root.len);
	if (root_tables(e, d, &root, err) < 0)
		return -1;
	put_header(e, file_name, s, &root);
	for (unsigned i = 0; i < e->n_tables; i++)
		if (put_table(e, d, s, &e->tables[i], err) < 0)
			return -1;
	return 0;
}

/* The UTF-8 of each cp1251 byte, from cp1251.c, looked up per byte after. */
static void utf8_table(struct emit *e)
{
	GString *one = g_string_sized_new(8);

	for (unsigned c = 0x80; c < 0x100; c++) {
		char b = (char)c;
		size_t n;

		g_string_truncate(one, 0);
		cp1251_to_utf8(&b, 1, NULL, one);
		n = one->len < 4 ? one->len : 4;
		memcpy(e->utf8[c - 0x80], one->str, n);
		e->utf8_len[c - 0x80] = (unsigned char)n;
	}
	g_string_free(one, TRUE);
}

int db_to_jsonl(const char *file_name, const unsigned char *data, size_t len, GString *out,
		struct format_error *err)
{
	struct emit e = { .out = out };
	size_t mark = out->len;

	utf8_table(&e);
	if (emit_db(&e, file_name ? file_name : "", data, len, err) == 0)
		return 0;
	g_string_truncate(out, mark);
	return -1;
}

/* ---- growing arrays ----------------------------------------------------- */

/* Bytes and tree nodes are appended a few at a time; these grow by doubling
 * without the per-call cost of GArray. */
struct buf {
	unsigned char *d;
	size_t len, cap;
};

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
	size_t cap2 = *cap ? *cap : 64;

	while (cap2 < need)
		cap2 *= 2;
	*cap = cap2;
	return g_realloc_n(p, cap2, size);
}

/* Room for n more bytes at the end of b, counted in b->len. */
static unsigned char *buf_room(struct buf *b, size_t n)
{
	unsigned char *at;

	if (n > b->cap - b->len)
		b->d = grow(b->d, &b->cap, b->len + n, 1);
	at = b->d + b->len;
	b->len += n;
	return at;
}

static void buf_add(struct buf *b, const void *p, size_t n)
{
	if (n)
		memcpy(buf_room(b, n), p, n);
}

/* ---- JSON reader ------------------------------------------------------ */

enum { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ };

struct jv {
	unsigned char kind;
	size_t at;      /* offset in the line, for messages */
	size_t n;       /* J_STR: bytes; J_NUM: characters; J_ARR: items; J_OBJ: keys + values */
	size_t first;   /* J_STR: into str; J_NUM: into the line; J_ARR, J_OBJ: into pool */
};

struct jread {
	const char *s;          /* the line, not NUL-terminated */
	size_t len, pos;
	uint64_t line;
	struct jvs {
		struct jv *v;
		size_t len, cap;
	} pool, stack;          /* the items of each container, side by side; the items
				 * of the containers being read */
	struct buf str;         /* the strings, decoded to cp1251, each NUL-terminated */
	GString *scratch;       /* for utf8_to_cp1251 */
	struct format_error *err;
};

static int jfail(const struct jread *r, int code, size_t col, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int jfail(const struct jread *r, int code, size_t col, const char *fmt, ...)
{
	char msg[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return format_fail(r->err, code, r->line, "line %" PRIu64 ", column %zu: %s", r->line,
			   col + 1, msg);
}

static void jskip_ws(struct jread *r)
{
	while (r->pos < r->len && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' ||
				   r->s[r->pos] == '\r'))
		r->pos++;
}

/* Appends the cp1251 form of UTF-8 text; U+0098 stands for the byte 0x98
 * that cp1251 leaves undefined.  ASCII runs are copied as they are. */
static int jcp1251(struct jread *r, const char *p, size_t n, size_t col)
{
	while (n) {
		size_t run = 0, bad;
		int n_ok;

		while (run < n && !(p[run] & 0x80))
			run++;
		buf_add(&r->str, p, run);
		p += run;
		n -= run;
		col += run;
		for (run = 0; run < n && (p[run] & 0x80); run++)
			;
		if (!run)
			break;
		g_string_truncate(r->scratch, 0);
		n_ok = utf8_to_cp1251(p, run, r->scratch, &bad);
		buf_add(&r->str, r->scratch->str, r->scratch->len);
		if (n_ok == 0) {
			p += run;
			n -= run;
			col += run;
			continue;
		}
		if (g_utf8_get_char_validated(p + bad, (gssize)(run - bad)) == 0x98) {
			*buf_room(&r->str, 1) = 0x98;
			p += bad + 2;
			n -= bad + 2;
			col += bad + 2;
			continue;
		}
		if (g_utf8_get_char_validated(p + bad, (gssize)(run - bad)) >= 0x80000000u)
			return jfail(r, EILSEQ, col + bad, "invalid UTF-8");
		return jfail(r, EILSEQ, col + bad, "U+%04X has no cp1251 form",
			     (unsigned)g_utf8_get_char(p + bad));
	}
	return 0;
}

static int jhex4(const char *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		int d = g_ascii_xdigit_value(p[i]);

		if (d < 0)
			return -1;
		*v = *v << 4 | (unsigned)d;
	}
	return 0;
}

static int jescape(struct jread *r, size_t col)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	char c = r->s[r->pos], utf8[8];
	const char *hit = c ? strchr(from, c) : NULL;
	unsigned u;

	if (hit) {
		*buf_room(&r->str, 1) = (unsigned char)to[hit - from];
		r->pos++;
		return 0;
	}
	if (c != 'u' || r->len - r->pos < 5 || jhex4(r->s + r->pos + 1, &u) < 0)
		return jfail(r, EINVAL, col, "bad escape in a string");
	r->pos += 5;
	if (u < 0x80 || u == 0x98) {
		*buf_room(&r->str, 1) = (unsigned char)u;
		return 0;
	}
	if (u >= 0xD800 && u <= 0xDFFF)
		return jfail(r, EILSEQ, col, "\\u%04x: cp1251 has no such character", u);
	return jcp1251(r, utf8, (size_t)g_unichar_to_utf8(u, utf8), col);
}

static int jstring(struct jread *r, struct jv *v)
{
	v->kind = J_STR;
	v->at = r->pos++;
	v->first = r->str.len;
	for (;;) {
		size_t run = r->pos;
		unsigned char c = 0;

		while (r->pos < r->len && (c = (unsigned char)r->s[r->pos]) != '"' && c != '\\' &&
		       c >= 0x20)
			r->pos++;
		if (jcp1251(r, r->s + run, r->pos - run, run) < 0)
			return -1;
		if (r->pos >= r->len)
			return jfail(r, EINVAL, v->at, "string not closed");
		if (c == '"')
			break;
		if (c < 0x20)
			return jfail(r, EINVAL, r->pos, "control character in a string");
		if (++r->pos >= r->len)
			return jfail(r, EINVAL, v->at, "string not closed");
		if (jescape(r, r->pos - 1) < 0)
			return -1;
	}
	r->pos++;
	v->n = r->str.len - v->first;
	*buf_room(&r->str, 1) = 0;   /* so that messages can print it */
	return 0;
}

static size_t jdigits(struct jread *r)
{
	size_t from = r->pos;

	while (r->pos < r->len && g_ascii_isdigit(r->s[r->pos]))
		r->pos++;
	return r->pos - from;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static int jnumber(struct jread *r, struct jv *v)
{
	const char *s = r->s;
	size_t int_at;

	v->kind = J_NUM;
	v->at = v->first = r->pos;
	if (s[r->pos] == '-')
		r->pos++;
	int_at = r->pos;
	if (!jdigits(r) || (s[int_at] == '0' && r->pos - int_at > 1))
		return jfail(r, EINVAL, v->at, "bad number");
	if (r->pos < r->len && s[r->pos] == '.') {
		r->pos++;
		if (!jdigits(r))
			return jfail(r, EINVAL, v->at, "bad number");
	}
	if (r->pos < r->len && (s[r->pos] == 'e' || s[r->pos] == 'E')) {
		r->pos++;
		if (r->pos < r->len && (s[r->pos] == '+' || s[r->pos] == '-'))
			r->pos++;
		if (!jdigits(r))
			return jfail(r, EINVAL, v->at, "bad number");
	}
	v->n = r->pos - v->first;
	return 0;
}

static int jvalue(struct jread *r, struct jv *v, int depth);

static int jexpect(struct jread *r, char c)
{
	jskip_ws(r);
	if (r->pos < r->len && r->s[r->pos] == c) {
		r->pos++;
		return 0;
	}
	return -1;
}

static void jvs_push(struct jvs *a, const struct jv *v)
{
	if (a->len == a->cap)
		a->v = grow(a->v, &a->cap, a->len + 1, sizeof *a->v);
	a->v[a->len++] = *v;
}

static int jcontainer(struct jread *r, struct jv *v, int depth)
{
	int obj = r->s[r->pos] == '{';
	char close = obj ? '}' : ']';
	size_t base = r->stack.len;

	if (depth >= JSON_MAX_DEPTH)
		return jfail(r, EINVAL, r->pos, "nested more than %d deep", JSON_MAX_DEPTH);
	v->kind = obj ? J_OBJ : J_ARR;
	v->at = r->pos++;
	if (jexpect(r, close) < 0) {
		for (;;) {
			struct jv k, x;

			if (obj) {
				jskip_ws(r);
				if (r->pos >= r->len || r->s[r->pos] != '"')
					return jfail(r, EINVAL, r->pos, "a key (a string) expected");
				if (jstring(r, &k) < 0)
					return -1;
				jvs_push(&r->stack, &k);
				if (jexpect(r, ':') < 0)
					return jfail(r, EINVAL, r->pos, "':' expected");
			}
			if (jvalue(r, &x, depth + 1) < 0)
				return -1;
			jvs_push(&r->stack, &x);
			if (jexpect(r, ',') == 0)
				continue;
			if (jexpect(r, close) == 0)
				break;
			return jfail(r, EINVAL, r->pos, "',' or '%c' expected", close);
		}
	}
	v->n = r->stack.len - base;
	v->first = r->pool.len;
	for (size_t i = 0; i < v->n; i++)
		jvs_push(&r->pool, &r->stack.v[base + i]);
	r->stack.len = base;
	return 0;
}

static int jliteral(struct jread *r, struct jv *v)
{
	static const struct { const char *text; unsigned char kind; } lit[] = {
		{ "null", J_NULL }, { "false", J_FALSE }, { "true", J_TRUE },
	};

	v->at = r->pos;
	for (size_t i = 0; i < N_OF(lit); i++) {
		size_t n = strlen(lit[i].text);

		if (r->len - r->pos >= n && !memcmp(r->s + r->pos, lit[i].text, n)) {
			v->kind = lit[i].kind;
			v->n = v->first = 0;
			r->pos += n;
			return 0;
		}
	}
	return jfail(r, EINVAL, r->pos, "unexpected character '%c'", r->s[r->pos]);
}

static int jvalue(struct jread *r, struct jv *v, int depth)
{
	char c;

	jskip_ws(r);
	if (r->pos >= r->len)
		return jfail(r, EINVAL, r->pos, "a value expected");
	c = r->s[r->pos];
	if (c == '{' || c == '[')
		return jcontainer(r, v, depth);
	if (c == '"')
		return jstring(r, v);
	if (c == '-' || g_ascii_isdigit(c))
		return jnumber(r, v);
	return jliteral(r, v);
}

/* Reads one line, which must hold one JSON object. */
static int jline(struct jread *r, const char *s, size_t len, struct jv *v)
{
	r->s = s;
	r->len = len;
	r->pos = 0;
	r->pool.len = 0;
	r->stack.len = 0;
	r->str.len = 0;
	jskip_ws(r);
	if (r->pos >= r->len || r->s[r->pos] != '{')
		return jfail(r, EINVAL, r->pos, "a line must hold one JSON object");
	if (jvalue(r, v, 0) < 0)
		return -1;
	jskip_ws(r);
	if (r->pos != r->len)
		return jfail(r, EINVAL, r->pos, "text after the object");
	return 0;
}

static const struct jv *jat(const struct jread *r, const struct jv *v, size_t i)
{
	return &r->pool.v[v->first + i];
}

static const char *jstr(const struct jread *r, const struct jv *v)
{
	return (const char *)r->str.d + v->first;
}

static int jis(const struct jread *r, const struct jv *v, const char *text)
{
	return v->kind == J_STR && v->n == strlen(text) && !memcmp(jstr(r, v), text, v->n);
}

/* ---- JSON Lines -> DB ------------------------------------------------- */

struct wtable {
	unsigned id;
	int wide;
	const struct db_table *t;
	struct buf rows;
};

struct wfield {
	unsigned id;
	size_t index;                 /* place in the object: ties keep text order */
	const struct db_field *def;
	const struct jv *key, *val;
};

struct wr {
	struct jread r;
	const struct db_schema *s;
	GArray *tables;               /* struct wtable, in the header's order */
	GArray *fields;               /* struct wfield, of the row being written */
	GArray *sub[DB_MAX_DEPTH + 1]; /* struct wfield, of a sub-structure per depth */
	int table_at[256];            /* id -> index in tables, or -1 */
	int root_wide;
};

static size_t node_open(struct buf *o, unsigned id)
{
	size_t at = o->len;

	buf_room(o, 5)[0] = (unsigned char)id;
	return at;
}

/* Writes the length of the node opened at `at`: the 1-byte form when it
 * holds the length and the node is not listed as wide. */
static int node_close(struct wr *w, struct buf *o, size_t at, int wide, size_t col)
{
	size_t len = o->len - at - 5;

	if (len > 0x7fffffffu)
		return jfail(&w->r, ERANGE, col, "a node of %zu bytes is too long", len);
	if (len <= 127 && !wide) {
		o->d[at + 1] = (unsigned char)(len * 2);
		memmove(o->d + at + 2, o->d + at + 5, len);
		o->len -= 3;
	} else {
		put_le32(o->d + at + 1, (uint32_t)(len * 2 + 1));
	}
	return 0;
}

static void append_le32(struct buf *o, uint32_t v)
{
	put_le32(buf_room(o, 4), v);
}

static int w_int(struct wr *w, const struct jv *v, int64_t min, int64_t max, int64_t *out,
		 const char *what)
{
	const char *p = w->r.s + v->first;
	size_t n = v->n, i = 0;
	uint64_t acc = 0;
	int neg = 0;

	if (v->kind != J_NUM)
		return jfail(&w->r, EINVAL, v->at, "%s: an integer expected", what);
	if (p[0] == '-')
		neg = 1, i = 1;
	for (; i < n; i++) {
		if (!g_ascii_isdigit(p[i]))
			return jfail(&w->r, EINVAL, v->at, "%s: an integer expected", what);
		if (acc > UINT64_C(1) << 40)
			return jfail(&w->r, ERANGE, v->at, "%s: %.*s is out of range", what, (int)n, p);
		acc = acc * 10 + (uint64_t)(p[i] - '0');
	}
	*out = neg ? -(int64_t)acc : (int64_t)acc;
	if (*out < min || *out > max)
		return jfail(&w->r, ERANGE, v->at, "%s: %.*s is out of range %" PRId64 "..%" PRId64,
			     what, (int)n, p, min, max);
	return 0;
}

/* A whole number of at most 7 digits, which a float holds exactly: most of
 * the game's values, read without strtod. */
static int small_int(const char *p, size_t n, float *f)
{
	int neg = p[0] == '-';
	int32_t v = 0;

	if (n - (size_t)neg < 1 || n - (size_t)neg > 7)
		return -1;
	for (size_t i = (size_t)neg; i < n; i++) {
		if (!g_ascii_isdigit(p[i]))
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	*f = neg ? -(float)v : (float)v;   /* "-0" is -0 */
	return 0;
}

static int w_f32(struct wr *w, const struct jv *v, struct buf *o, const char *what)
{
	char buf[64], *text;
	int range;
	float f;

	if (v->kind == J_STR) {
		const char *s = jstr(&w->r, v);
		uint32_t bits = 0;

		if (v->n != 14 || (memcmp(s, "nan:0x", 6) && memcmp(s, "inf:0x", 6)))
			return jfail(&w->r, EINVAL, v->at, "%s: a number or \"nan:0x...\" expected", what);
		for (int i = 6; i < 14; i++) {
			int d = g_ascii_xdigit_value(s[i]);

			if (d < 0)
				return jfail(&w->r, EINVAL, v->at, "%s: 8 hex digits expected", what);
			bits = bits << 4 | (uint32_t)d;
		}
		memcpy(&f, &bits, 4);
		if (s[0] == 'n' ? !isnan(f) : !isinf(f))
			return jfail(&w->r, EINVAL, v->at, "%s: 0x%08" PRIx32 " is not %.3s", what,
				     bits, s);
		append_le32(o, bits);
		return 0;
	}
	if (v->kind != J_NUM)
		return jfail(&w->r, EINVAL, v->at, "%s: a number expected", what);
	if (small_int(w->r.s + v->first, v->n, &f) == 0) {
		append_le32(o, f32_bits(f));
		return 0;
	}
	text = v->n < sizeof buf ? buf : g_malloc(v->n + 1);
	memcpy(text, w->r.s + v->first, v->n);
	text[v->n] = 0;
	f = f32_parse(text, &range);
	if (text != buf)
		g_free(text);
	if (range)
		return jfail(&w->r, ERANGE, v->at, "%s: %.*s is out of float range", what,
			     (int)v->n, w->r.s + v->first);
	append_le32(o, f32_bits(f));
	return 0;
}

static int w_hex(struct wr *w, const struct jv *v, struct buf *o, const char *what)
{
	const char *s;

	if (v->kind != J_STR || v->n % 2)
		return jfail(&w->r, EINVAL, v->at, "%s: a string of hex digit pairs expected", what);
	s = jstr(&w->r, v);
	for (size_t i = 0; i < v->n; i += 2) {
		int hi = g_ascii_xdigit_value(s[i]), lo = g_ascii_xdigit_value(s[i + 1]);
		if (hi < 0 || lo < 0)
			return jfail(&w->r, EINVAL, v->at, "%s: a string of hex digit pairs expected",
				     what);
		*buf_room(o, 1) = (unsigned char)(hi << 4 | lo);
	}
	return 0;
}

static int w_kind(struct wr *w, const struct jv *v, unsigned char kind, const char *what)
{
	static const char *const names[] = { "null", "false", "true", "a number", "a string",
					     "an array", "an object" };

	if (v->kind == kind)
		return 0;
	return jfail(&w->r, EINVAL, v->at, "%s: %s expected", what, names[kind]);
}

static int w_strings(struct wr *w, const struct jv *v, struct buf *o, int minfixed,
		     const char *what)
{
	static const unsigned char zeros[4] = { 0 };

	if (w_kind(w, v, J_ARR, what) < 0)
		return -1;
	for (size_t i = 0; i < v->n; i++) {
		const struct jv *x = jat(&w->r, v, i);
		size_t at;

		if (w_kind(w, x, J_STR, what) < 0)
			return -1;
		at = node_open(o, 1);
		buf_add(o, jstr(&w->r, x), x->n);
		if (!minfixed)
			buf_add(o, zeros, 1);
		else if (x->n < 4)
			buf_add(o, zeros, 4 - x->n);
		if (node_close(w, o, at, 0, x->at) < 0)
			return -1;
	}
	return 0;
}

static int w_shops(struct wr *w, const struct jv *v, struct buf *o, const char *what)
{
	uint32_t mask = 0;

	if (w_kind(w, v, J_ARR, what) < 0)
		return -1;
	for (size_t i = 0; i < v->n; i++) {
		int64_t shop;

		if (w_int(w, jat(&w->r, v, i), 1, 32, &shop, what) < 0)
			return -1;
		if (mask >> (shop - 1) & 1)
			return jfail(&w->r, EINVAL, jat(&w->r, v, i)->at, "%s: shop %" PRId64 " twice",
				     what, shop);
		mask |= UINT32_C(1) << (shop - 1);
	}
	append_le32(o, mask);
	return 0;
}

static int w_list(struct wr *w, const struct db_field *def, const struct jv *v, struct buf *o,
		  const char *what)
{
	if (w_kind(w, v, J_ARR, what) < 0)
		return -1;
	for (size_t i = 0; i < v->n; i++) {
		const struct jv *x = jat(&w->r, v, i);
		int64_t b;

		if (def->type == DB_F32S) {
			if (w_f32(w, x, o, what) < 0)
				return -1;
			continue;
		}
		if (w_int(w, x, 0, 255, &b, what) < 0)
			return -1;
		*buf_room(o, 1) = (unsigned char)b;
	}
	return 0;
}

static int w_struct(struct wr *w, const struct db_fields *sub, const struct jv *v, struct buf *o,
		    int depth, const char *what);

static int w_value(struct wr *w, const struct db_field *def, const struct jv *v, struct buf *o,
		   int depth, const char *what)
{
	int64_t n;

	if (v->kind == J_OBJ && v->n == 2 && jis(&w->r, jat(&w->r, v, 0), "hex"))
		return w_hex(w, jat(&w->r, v, 1), o, what);
	if (!def || def->type == DB_HEX)
		return w_hex(w, v, o, what);
	switch (def->type) {
	case DB_STR:
		if (w_kind(w, v, J_STR, what) < 0)
			return -1;
		buf_add(o, jstr(&w->r, v), v->n + 1);   /* with the NUL after it */
		return 0;
	case DB_I32:
		if (w_int(w, v, INT32_MIN, INT32_MAX, &n, what) < 0)
			return -1;
		append_le32(o, (uint32_t)n);
		return 0;
	case DB_U32:
		if (w_int(w, v, 0, UINT32_MAX, &n, what) < 0)
			return -1;
		append_le32(o, (uint32_t)n);
		return 0;
	case DB_F32:
		return w_f32(w, v, o, what);
	case DB_BYTE:
		if (w_int(w, v, 0, 255, &n, what) < 0)
			return -1;
		*buf_room(o, 1) = (unsigned char)n;
		return 0;
	case DB_F32S: case DB_BYTES:
		return w_list(w, def, v, o, what);
	case DB_STRS: case DB_MSTRS:
		return w_strings(w, v, o, def->type == DB_MSTRS, what);
	case DB_FIX4:
		if (w_kind(w, v, J_STR, what) < 0)
			return -1;
		if (v->n > 4)
			return jfail(&w->r, ERANGE, v->at, "%s: more than 4 bytes", what);
		memcpy(memset(buf_room(o, 4), 0, 4), jstr(&w->r, v), v->n);
		return 0;
	case DB_SHOPS:
		return w_shops(w, v, o, what);
	case DB_STRUCT:
		return w_struct(w, def->sub, v, o, depth + 1, what);
	case DB_ACKS:
		if (w_kind(w, v, J_ARR, what) < 0)
			return -1;
		for (size_t i = 0; i < v->n; i++) {
			size_t at = node_open(o, 1);

			if (w_struct(w, def->sub, jat(&w->r, v, i), o, depth + 1, what) < 0 ||
			    node_close(w, o, at, 0, v->at) < 0)
				return -1;
		}
		return 0;
	default:
		return jfail(&w->r, EINVAL, v->at, "%s: no such type", what);
	}
}

static int wfield_cmp(const void *a, const void *b)
{
	const struct wfield *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The field a key names in the field lists fs (a table's head and tail,
 * or one sub-structure): a schema name or "f<id>".  Returns the id, or -1;
 * *def is NULL for an id the schema does not know.  Keys come in schema
 * order, so each list's search starts after the previous hit. */
static int key_field(const struct jread *r, const struct jv *k, const struct db_fields *const fs[2],
		     size_t hint[2], const struct db_field **def)
{
	const char *s = jstr(r, k);
	int id = generic_id(s, k->n, 'f');

	*def = NULL;
	for (int j = 0; id >= 0 && j < 2 && !*def; j++)
		*def = fs[j] ? fields_find(fs[j], (unsigned)id) : NULL;
	if (id >= 0)
		return id;   /* no name reads as "f<id>" (db_schemas_check) */
	for (int j = 0; j < 2; j++) {
		for (size_t i = 0; fs[j] && i < fs[j]->n; i++) {
			size_t at = (hint[j] + i) % fs[j]->n;
			const struct db_field *f = &fs[j]->f[at];

			if (f->name && strlen(f->name) == k->n && !memcmp(f->name, s, k->n)) {
				hint[j] = at + 1;
				*def = f;
				return f->id;
			}
		}
	}
	return -1;
}

static int is_row_meta(const struct jread *r, const struct jv *k)
{
	return jis(r, k, "table") || jis(r, k, "row") || jis(r, k, "wide") || jis(r, k, "unsorted");
}

/* The fields of an object as (id, type, value), in ascending ids unless
 * unsorted; every key must name a field (or, in a row, be a meta key). */
static int w_fields(struct wr *w, const struct jv *obj, const struct db_fields *const fs[2],
		    int row, int unsorted, GArray *out)
{
	size_t hint[2] = { 0, 0 };

	g_array_set_size(out, 0);
	for (size_t i = 0; i < obj->n; i += 2) {
		struct wfield f = { .index = i, .key = jat(&w->r, obj, i), .val = jat(&w->r, obj, i + 1) };
		int id;

		if (row && is_row_meta(&w->r, f.key))
			continue;
		id = key_field(&w->r, f.key, fs, hint, &f.def);
		if (id < 0)
			return jfail(&w->r, EINVAL, f.key->at, "no field \"%.*s\" here",
				     (int)f.key->n, jstr(&w->r, f.key));
		f.id = (unsigned)id;
		g_array_append_val(out, f);
	}
	for (guint i = 1; !unsorted && i < out->len; i++) {
		if (g_array_index(out, struct wfield, i - 1).id > g_array_index(out, struct wfield, i).id) {
			qsort(out->data, out->len, sizeof(struct wfield), wfield_cmp);
			break;
		}
	}
	return 0;
}

static int w_struct(struct wr *w, const struct db_fields *sub, const struct jv *v, struct buf *o,
		    int depth, const char *what)
{
	const struct db_fields *fs[2] = { sub, NULL };
	GArray *f;

	if (depth > DB_MAX_DEPTH)
		return jfail(&w->r, EINVAL, v->at, "%s: nested too deep", what);
	if (w_kind(w, v, J_OBJ, what) < 0)
		return -1;
	if (!w->sub[depth])
		w->sub[depth] = g_array_new(FALSE, FALSE, sizeof(struct wfield));
	f = w->sub[depth];
	if (w_fields(w, v, fs, 0, 0, f) < 0)
		return -1;
	for (guint i = 0; i < f->len; i++) {
		const struct wfield *x = &g_array_index(f, struct wfield, i);
		size_t at = node_open(o, x->id);

		if (w_value(w, x->def, x->val, o, depth, jstr(&w->r, x->key)) < 0 ||
		    node_close(w, o, at, 0, x->key->at) < 0)
			return -1;
	}
	return 0;
}

/* The id of a table name: the schema's name or "t<id>"; -1 if neither. */
static int table_id(const struct wr *w, const struct jv *v)
{
	for (size_t i = 0; w->s && i < w->s->n; i++)
		if (jis(&w->r, v, w->s->t[i].name))
			return w->s->t[i].id;
	return v->kind == J_STR ? generic_id(jstr(&w->r, v), v->n, 't') : -1;
}

static struct wtable *row_table(struct wr *w, const struct jv *name)
{
	int id;

	if (w_kind(w, name, J_STR, "table") < 0)
		return NULL;
	id = table_id(w, name);
	if (id < 0) {
		jfail(&w->r, EINVAL, name->at, "no table \"%s\" in this schema", jstr(&w->r, name));
		return NULL;
	}
	if (w->table_at[id] < 0) {
		jfail(&w->r, EINVAL, name->at, "table \"%s\" is not in the first line's list",
		      jstr(&w->r, name));
		return NULL;
	}
	return &g_array_index(w->tables, struct wtable, w->table_at[id]);
}

/* Which nodes of a row a "wide" list names: the row, and fields by key. */
static int row_wide(struct wr *w, const struct jv *list, const struct db_fields *const fs[2],
		    int *row, unsigned char wide[256])
{
	size_t hint[2] = { 0, 0 };

	if (w_kind(w, list, J_ARR, "wide") < 0)
		return -1;
	for (size_t i = 0; i < list->n; i++) {
		const struct jv *k = jat(&w->r, list, i);
		const struct db_field *def;
		int id;

		if (w_kind(w, k, J_STR, "wide") < 0)
			return -1;
		if (jis(&w->r, k, "row")) {
			*row = 1;
			continue;
		}
		id = key_field(&w->r, k, fs, hint, &def);
		if (id < 0)
			return jfail(&w->r, EINVAL, k->at, "wide: no field \"%s\" here",
				     jstr(&w->r, k));
		wide[id] = 1;
	}
	return 0;
}

static int w_row(struct wr *w, const struct jv *v)
{
	const struct jv *name = NULL, *wide_list = NULL;
	const struct db_fields *fs[2] = { NULL, NULL };
	unsigned char wide[256] = { 0 };
	struct wtable *t;
	int unsorted = 0, wide_row = 0;
	size_t at;

	for (size_t i = 0; i < v->n; i += 2) {
		const struct jv *k = jat(&w->r, v, i), *x = jat(&w->r, v, i + 1);

		if (jis(&w->r, k, "table"))
			name = x;
		else if (jis(&w->r, k, "wide"))
			wide_list = x;
		else if (jis(&w->r, k, "unsorted") && x->kind != J_TRUE && x->kind != J_FALSE)
			return jfail(&w->r, EINVAL, x->at, "unsorted: true or false expected");
		else if (jis(&w->r, k, "unsorted"))
			unsorted = x->kind == J_TRUE;
	}
	if (!name)
		return jfail(&w->r, EINVAL, v->at, "a row needs a \"table\" key");
	if (!(t = row_table(w, name)))
		return -1;
	if (t->t) {
		fs[0] = &t->t->head;
		fs[1] = &t->t->tail;
	}
	if ((wide_list && row_wide(w, wide_list, fs, &wide_row, wide) < 0) ||
	    w_fields(w, v, fs, 1, unsorted, w->fields) < 0)
		return -1;
	at = node_open(&t->rows, 1);
	for (guint i = 0; i < w->fields->len; i++) {
		const struct wfield *f = &g_array_index(w->fields, struct wfield, i);
		size_t fat = node_open(&t->rows, f->id);

		if (w_value(w, f->def, f->val, &t->rows, 0, jstr(&w->r, f->key)) < 0 ||
		    node_close(w, &t->rows, fat, wide[f->id], f->key->at) < 0)
			return -1;
	}
	return node_close(w, &t->rows, at, wide_row, v->at);
}

static int w_header_tables(struct wr *w, const struct jv *list, const struct jv *wide)
{
	if (w_kind(w, list, J_ARR, "tables") < 0)
		return -1;
	for (size_t i = 0; i < list->n; i++) {
		const struct jv *name = jat(&w->r, list, i);
		struct wtable t = { 0 };
		int id = table_id(w, name);

		if (id < 0)
			return jfail(&w->r, EINVAL, name->at, "tables: no table %s%s%s in this schema",
				     name->kind == J_STR ? "\"" : "",
				     name->kind == J_STR ? jstr(&w->r, name) : "of that kind",
				     name->kind == J_STR ? "\"" : "");
		if (w->table_at[id] >= 0)
			return jfail(&w->r, EINVAL, name->at, "tables: table %d listed twice", id);
		t.id = (unsigned)id;
		t.t = schema_table(w->s, t.id);
		w->table_at[id] = (int)w->tables->len;
		g_array_append_val(w->tables, t);
	}
	if (!wide)
		return 0;
	if (w_kind(w, wide, J_ARR, "wide") < 0)
		return -1;
	for (size_t i = 0; i < wide->n; i++) {
		const struct jv *name = jat(&w->r, wide, i);
		int id = table_id(w, name);

		if (jis(&w->r, name, "root"))
			w->root_wide = 1;
		else if (id >= 0 && w->table_at[id] >= 0)
			g_array_index(w->tables, struct wtable, w->table_at[id]).wide = 1;
		else
			return jfail(&w->r, EINVAL, name->at, "wide: not \"root\" nor a listed table");
	}
	return 0;
}

/* {"file":..., "format":"eifs-db", "version":1, "schema":..., "tables":[...], "wide":[...]} */
static int w_header(struct wr *w, const struct jv *v)
{
	const struct jv *format = NULL, *version = NULL, *schema = NULL, *tables = NULL, *wide = NULL;

	for (size_t i = 0; i < v->n; i += 2) {
		const struct jv *k = jat(&w->r, v, i), *x = jat(&w->r, v, i + 1);

		if (jis(&w->r, k, "format"))
			format = x;
		else if (jis(&w->r, k, "version"))
			version = x;
		else if (jis(&w->r, k, "schema"))
			schema = x;
		else if (jis(&w->r, k, "tables"))
			tables = x;
		else if (jis(&w->r, k, "wide"))
			wide = x;
		else if (!jis(&w->r, k, "file"))
			return jfail(&w->r, EINVAL, k->at, "unknown key \"%s\" in the first line",
				     jstr(&w->r, k));
	}
	if (!format || !jis(&w->r, format, "eifs-db"))
		return jfail(&w->r, EINVAL, v->at, "the first line needs \"format\":\"eifs-db\"");
	if (!version || version->kind != J_NUM || version->n != 1 || w->r.s[version->first] != '1')
		return jfail(&w->r, EINVAL, version ? version->at : v->at,
			     "the first line needs \"version\":1");
	if (!schema || (schema->kind != J_NULL && schema->kind != J_STR))
		return jfail(&w->r, EINVAL, v->at, "the first line needs \"schema\", a name or null");
	for (size_t i = 0; schema->kind == J_STR && !w->s && i < N_OF(schemas); i++)
		if (jis(&w->r, schema, schemas[i].name))
			w->s = &schemas[i];
	if (schema->kind == J_STR && !w->s)
		return jfail(&w->r, EINVAL, schema->at, "no schema \"%s\"", jstr(&w->r, schema));
	if (!tables)
		return jfail(&w->r, EINVAL, v->at, "the first line needs \"tables\"");
	return w_header_tables(w, tables, wide);
}

static int w_line(struct wr *w, const char *s, size_t n, int *have_header)
{
	struct jv v;

	if (jline(&w->r, s, n, &v) < 0)
		return -1;
	if (*have_header)
		return w_row(w, &v);
	*have_header = 1;
	return w_header(w, &v);
}

static int is_blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

static int w_text(struct wr *w, const char *text, size_t len, struct buf *out)
{
	const char *p = text, *end = text + len;
	int have_header = 0;
	size_t at;

	if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3))
		p += 3;   /* a byte order mark some editors add */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);

		w->r.line++;
		if (!is_blank(p, n) && w_line(w, p, n, &have_header) < 0)
			return -1;
		p = nl ? nl + 1 : end;
	}
	if (!have_header)
		return format_fail(w->r.err, EINVAL, 1, "line 1: no first line with \"format\"");
	at = node_open(out, 1);
	for (guint i = 0; i < w->tables->len; i++) {
		const struct wtable *t = &g_array_index(w->tables, struct wtable, i);
		size_t tat = node_open(out, t->id);

		buf_add(out, t->rows.d, t->rows.len);
		if (node_close(w, out, tat, t->wide, 0) < 0)
			return -1;
	}
	if (node_close(w, out, at, w->root_wide, 0) < 0)
		return -1;
	buf_add(out, db_trailer, DB_TRAILER);
	return 0;
}

int jsonl_to_db(const char *text, size_t len, GByteArray *out, struct format_error *err)
{
	struct wr w = {
		.r = { .scratch = g_string_new(NULL), .err = err },
		.tables = g_array_new(FALSE, FALSE, sizeof(struct wtable)),
		.fields = g_array_new(FALSE, FALSE, sizeof(struct wfield)),
	};
	struct buf db = { NULL, 0, 0 };
	int rc;

	for (int i = 0; i < 256; i++)
		w.table_at[i] = -1;
	rc = w_text(&w, text, len, &db);
	if (rc == 0 && db.len > G_MAXUINT - out->len)
		rc = format_fail(err, ERANGE, w.r.line, "a database of %zu bytes is too long", db.len);
	if (rc == 0)
		g_byte_array_append(out, db.d, (guint)db.len);
	for (guint i = 0; i < w.tables->len; i++)
		g_free(g_array_index(w.tables, struct wtable, i).rows.d);
	g_array_free(w.tables, TRUE);
	g_array_free(w.fields, TRUE);
	for (int i = 0; i <= DB_MAX_DEPTH; i++)
		if (w.sub[i])
			g_array_free(w.sub[i], TRUE);
	g_free(w.r.pool.v);
	g_free(w.r.stack.v);
	g_string_free(w.r.scratch, TRUE);
	g_free(w.r.str.d);
	g_free(db.d);
	return rc;
}

/* ---- self-check of the schemas ---------------------------------------- */

static int check_fields(const char *where, const struct db_fields *const fs[2], int depth,
			struct format_error *err)
{
	const struct db_field *seen[256] = { NULL };

	for (int j = 0; j < 2; j++) {
		for (size_t i = 0; fs[j] && i < fs[j]->n; i++) {
			const struct db_field *f = &fs[j]->f[i];
			const struct db_fields *sub[2] = { f->sub, NULL };

			if (seen[f->id])
				return format_fail(err, EINVAL, f->id, "%s: field id %u twice", where,
						   f->id);
			seen[f->id] = f;
			if (f->type < DB_STR || f->type > DB_ACKS ||
			    (f->type >= DB_STRUCT) != (f->sub != NULL))
				return format_fail(err, EINVAL, f->id, "%s: field %u has a bad type",
						   where, f->id);
			if (f->sub && (depth >= DB_MAX_DEPTH ||
				       check_fields(where, sub, depth + 1, err) < 0))
				return format_fail(err, EINVAL, f->id, "%s: field %u: bad subfields",
						   where, f->id);
			if (!f->name)
				continue;
			if (generic_id(f->name, strlen(f->name), 'f') >= 0)
				return format_fail(err, EINVAL, f->id, "%s: name %s reads as an id",
						   where, f->name);
			for (size_t r = 0; r < N_OF(reserved_keys); r++)
				if (!strcmp(f->name, reserved_keys[r]))
					return format_fail(err, EINVAL, f->id, "%s: name %s is reserved",
							   where, f->name);
			for (unsigned id = 0; id < 256; id++)
				if (seen[id] && seen[id] != f && seen[id]->name &&
				    !strcmp(seen[id]->name, f->name))
					return format_fail(err, EINVAL, f->id, "%s: name %s twice",
							   where, f->name);
		}
	}
	return 0;
}

int db_schemas_check(struct format_error *err)
{
	for (size_t i = 0; i < N_OF(schemas); i++) {
		const struct db_schema *s = &schemas[i];

		if (schema_by_file(s->file) != s)
			return format_fail(err, EINVAL, i, "%s: its file name finds another", s->name);
		for (size_t j = 0; j < s->n; j++) {
			const struct db_table *t = &s->t[j];
			const struct db_fields *fs[2] = { &t->head, &t->tail };
			char where[96];

			snprintf(where, sizeof where, "%s/%s", s->name, t->name);
			if (generic_id(t->name, strlen(t->name), 't') >= 0 || !strcmp(t->name, "root"))
				return format_fail(err, EINVAL, j, "%s: reserved table name", where);
			for (size_t k = 0; k < j; k++)
				if (s->t[k].id == t->id || !strcmp(s->t[k].name, t->name))
					return format_fail(err, EINVAL, j, "%s: table twice", where);
			if (check_fields(where, fs, 0, err) < 0)
				return -1;
		}
	}
	return 0;
}
