#include "mpr.h"

#include <errno.h>

#include "models.h"

/* ---- MP header (FORMATS 10.1) ------------------------------------------ */

enum { MP_HEADER = 38, MP_MATERIAL = 44 };

/* eilib/CE names; the sample's opaque earth is 1 and its blue water 3,
 * which rules out aspadm's order */
static const char *const material_types[] = { "UNDEF", "TERRAIN", "WATER_NOTEXTURE", "WATER",
					      "GRASS" };
static const char *const tile_types[] = { "grass", "ground", "stone", "sand", "rock", "field",
					  "water", "road", "empty", "snow", "ice", "drygrass",
					  "snowballs", "lava", "swamp", "highrock" };

struct mp {
	uint32_t sectors_x, sectors_y, textures, texture_size, tiles, tile_size, anim_tiles;
	uint16_t materials;
	float max_altitude;
};

static void mp_header(GString *out, const struct mp *m)
{
	g_string_append_printf(out, "magic: 0x%08X\nmax_altitude: ", MP_MAGIC);
	view_float(out, m->max_altitude);
	g_string_append_printf(out,
			       "\nsectors_x: %u\nsectors_y: %u\ntextures_count: %u\ntexture_size: %u\n"
			       "tiles_count: %u\ntile_size: %u\nmaterials_count: %u\nanim_tiles_count: %u\n",
			       m->sectors_x, m->sectors_y, m->textures, m->texture_size, m->tiles,
			       m->tile_size, m->materials, m->anim_tiles);
}

/* u32 type; f32 r,g,b,a; f32 self_illum, wave_multiplier, warp_speed;
 * 3 reserved f32 (eilib reads them as floats) */
static void mp_material(GString *out, const unsigned char *p)
{
	uint32_t type = view_u32(p);

	if (type < G_N_ELEMENTS(material_types))
		g_string_append_printf(out, "  - type: %s\n", material_types[type]);
	else
		g_string_append_printf(out, "  - type: %u\n", type);
	g_string_append(out, "    color: ");
	view_floats(out, p + 4, 4);
	g_string_append(out, "\n    self_illumination: ");
	view_float(out, view_f32(p + 20));
	g_string_append(out, "\n    wave_multiplier: ");
	view_float(out, view_f32(p + 24));
	g_string_append(out, "\n    warp_speed: ");
	view_float(out, view_f32(p + 28));
	g_string_append(out, "\n    reserved: ");
	view_floats(out, p + 32, 3);
	g_string_append_c(out, '\n');
}

static void mp_tables(GString *out, const unsigned char *p, const struct mp *m)
{
	g_string_append_printf(out, "materials:%s\n", m->materials ? "" : " []");
	for (uint32_t i = 0; i < m->materials; i++, p += MP_MATERIAL)
		mp_material(out, p);
	g_string_append_printf(out, "tile_types:%s\n", m->tiles ? "" : " {}");
	for (uint32_t i = 0; i < m->tiles; i++, p += 4) {
		uint32_t t = view_u32(p);

		if (t < G_N_ELEMENTS(tile_types))
			g_string_append_printf(out, "  %u: %s\n", i, tile_types[t]);
		else
			g_string_append_printf(out, "  %u: %u\n", i, t);
	}
	g_string_append_printf(out, "anim_tiles:%s\n", m->anim_tiles ? "" : " []");
	for (uint32_t i = 0; i < m->anim_tiles; i++, p += 4)
		g_string_append_printf(out, "  - tile_index: %u\n    phase_count: %u\n", view_u16(p),
				       view_u16(p + 2));
}

int mp_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	uint64_t need;
	struct mp m;

	if (len < 4 || view_u32(data) != MP_MAGIC)
		return format_fail(err, EINVAL, 0, "not a map header (magic %08X expected)", MP_MAGIC);
	if (len < MP_HEADER)
		return format_fail(err, EINVAL, len, "truncated header: %zu bytes, need %d", len, MP_HEADER);
	m.max_altitude = view_f32(data + 4);
	m.sectors_x = view_u32(data + 8);
	m.sectors_y = view_u32(data + 12);
	m.textures = view_u32(data + 16);
	m.texture_size = view_u32(data + 20);
	m.tiles = view_u32(data + 24);
	m.tile_size = view_u32(data + 28);
	m.materials = view_u16(data + 32);
	m.anim_tiles = view_u32(data + 34);
	need = MP_HEADER + (uint64_t)MP_MATERIAL * m.materials + 4ull * m.tiles + 4ull * m.anim_tiles;
	if (need != len)
		return format_fail(err, EINVAL, need < len ? need : len,
				   "size %zu does not match the counts, which give %llu", len,
				   (unsigned long long)need);
	mp_header(out, &m);
	mp_tables(out, data + MP_HEADER, &m);
	return 0;
}

/* ---- SEC (FORMATS 10.2) ------------------------------------------------ */

enum {
	SEC_VERTS = 33,              /* a side of the vertex grid */
	SEC_TILES = 16,              /* a side of the tile grid */
	SEC_VERTEX = 8,              /* i8 dx, i8 dy, u16 z, u32 normal */
	SEC_VERTEX_GRID = SEC_VERTS * SEC_VERTS * SEC_VERTEX,
	SEC_TILE_GRID = SEC_TILES * SEC_TILES * 2,
	SEC_LAND = 5 + SEC_VERTEX_GRID + SEC_TILE_GRID,                 /* 9229 */
	SEC_LIQUID = 5 + 2 * SEC_VERTEX_GRID + 3 * SEC_TILE_GRID,       /* 18965 */
};

/* "dx dy z" per vertex, raw: the height scale (max_altitude) is in the .mp */
static void sec_vertices(GString *out, const char *key, const unsigned char *p)
{
	g_string_append_printf(out, "%s:  # dx dy z\n", key);
	for (int r = 0; r < SEC_VERTS; r++) {
		g_string_append(out, "  - [");
		for (int c = 0; c < SEC_VERTS; c++, p += SEC_VERTEX)
			g_string_append_printf(out, "%s%d %d %u", c ? ", " : "", (signed char)p[0],
					       (signed char)p[1], view_u16(p + 2));
		g_string_append(out, "]\n");
	}
}

/* x = (bits 11-21) - 1000, y = (bits 0-10) - 1000, z = bits 22-31, all
 * in thousandths */
static void sec_normal(GString *out, uint32_t n)
{
	view_float(out, (float)((int)((n >> 11) & 0x7FF) - 1000) / 1000.0f);
	g_string_append_c(out, ' ');
	view_float(out, (float)((int)(n & 0x7FF) - 1000) / 1000.0f);
	g_string_append_c(out, ' ');
	view_float(out, (float)(n >> 22) / 1000.0f);
}

static void sec_normals(GString *out, const char *key, const unsigned char *p)
{
	g_string_append_printf(out, "%s:  # x y z\n", key);
	for (int r = 0; r < SEC_VERTS; r++) {
		g_string_append(out, "  - [");
		for (int c = 0; c < SEC_VERTS; c++, p += SEC_VERTEX) {
			if (c)
				g_string_append(out, ", ");
			sec_normal(out, view_u32(p + 4));
		}
		g_string_append(out, "]\n");
	}
}

/* index = bits 0-5, atlas (texture) = bits 6-13, rotation = bits 14-15 */
static void sec_tiles(GString *out, const char *key, const unsigned char *p)
{
	g_string_append_printf(out, "%s:  # index atlas rotation(x90°)\n", key);
	for (int r = 0; r < SEC_TILES; r++) {
		g_string_append(out, "  - [");
		for (int c = 0; c < SEC_TILES; c++, p += 2) {
			uint16_t t = view_u16(p);

			g_string_append_printf(out, "%s%u %u %u", c ? ", " : "", t & 63u, (t >> 6) & 255u,
					       (t >> 14) & 3u);
		}
		g_string_append(out, "]\n");
	}
}

static void sec_u16_grid(GString *out, const char *key, const unsigned char *p)
{
	g_string_append_printf(out, "%s:\n", key);
	for (int r = 0; r < SEC_TILES; r++) {
		g_string_append(out, "  - [");
		for (int c = 0; c < SEC_TILES; c++, p += 2)
			g_string_append_printf(out, "%s%u", c ? ", " : "", view_u16(p));
		g_string_append(out, "]\n");
	}
}

int sec_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	const unsigned char *p = data + 5;
	size_t need;

	if (len < 5 || view_u32(data) != SEC_MAGIC)
		return format_fail(err, EINVAL, 0, "not a map sector (magic %08X expected)", SEC_MAGIC);
	need = data[4] ? SEC_LIQUID : SEC_LAND;
	if (len != need)
		return format_fail(err, EINVAL, need < len ? need : len,
				   "size %zu, a sector %s liquid has %zu", len, data[4] ? "with" : "without",
				   need);
	g_string_append_printf(out, "magic: 0x%08X\nliquid_flag: %u\n", SEC_MAGIC, data[4]);
	sec_vertices(out, "land_vertices", p);
	sec_normals(out, "land_normals", p);
	p += SEC_VERTEX_GRID;
	if (data[4]) {
		sec_vertices(out, "liquid_vertices", p);
		sec_normals(out, "liquid_normals", p);
		p += SEC_VERTEX_GRID;
	}
	sec_tiles(out, "land_tiles", p);
	p += SEC_TILE_GRID;
	if (data[4]) {
		sec_tiles(out, "liquid_tiles", p);
		sec_u16_grid(out, "liquid_materials", p + SEC_TILE_GRID);
	}
	return 0;
}
