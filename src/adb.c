#include "adb.h"

#include <errno.h>

#include "models.h"

enum { ADB_HEADER = 44 };

/* aspadm's names (Formats/adb.py); the UNK ones are unknown values */
static const char *const weapons[] = { "SWORD", "AXE", "DAGGER", "SPEAR", "HAMMER", "BOW",
				       "CROSSBOW" };
static const char *const states[] = { "NEUTRAL", "REST", "ATTACK", "UNK3", "WARRY", "UNK5", "LIE",
				      "ALL" };
static const char *const types[] = { "UNK0", "SPECIAL", "ATTACK", "CAST", "RUN", "WALK", "IDLE",
				     "DEATH", "SUFFER", "CROSS", "UNK10", "UNK11", "UNK12", "UNK13",
				     "UNK14", "ALL" };
static const char *const stages[] = { "UNIQUE", "START", "CYCLE", "END" };
static const char *const forms[] = { "HIDES", "STEPS", "HIT", "SFXES", "LOWSHAPE", "HIGHSHAPE" };

/* the 12 words after the speed of an 88-byte record */
static const char *const frames[] = { "show_hide_frame_1", "show_hide_frame_2", "sound_frame_1",
				      "sound_frame_2", "sound_frame_3", "sound_frame_4", "hit_frame",
				      "special_sound_frame", "sound_id_1", "sound_id_2", "sound_id_3",
				      "sound_id_4" };

/* Set bits as a flow list; none and all by aspadm's NONE and ALL. */
static void bit_names(GString *out, unsigned bits, const char *const *names, unsigned n, int all)
{
	int first = 1;

	if (bits == 0) {
		g_string_append(out, "NONE");
		return;
	}
	if (all && bits == (1u << n) - 1) {
		g_string_append(out, "ALL");
		return;
	}
	g_string_append_c(out, '[');
	for (unsigned i = 0; i < n; i++)
		if (bits & 1u << i) {
			g_string_append_printf(out, "%s%s", first ? "" : ", ", names[i]);
			first = 0;
		}
	g_string_append_c(out, ']');
}

/* Bits 0-6 weapons, 15-17 state, 18-21 action type, 22-29 modifier, 30-31
 * stage, 32-37 forms (FORMATS 5); the raw value keeps the other bits. */
static void adb_packed(GString *out, uint64_t v)
{
	g_string_append_printf(out, "    packed: 0x%016llX\n    weapons: ", (unsigned long long)v);
	bit_names(out, (unsigned)(v & 0x7F), weapons, 7, 1);
	g_string_append_printf(out,
			       "\n    allowed_states: %s\n    action_type: %s\n    action_modifier: %u\n"
			       "    animation_stage: %s\n    action_forms: ",
			       states[(v >> 15) & 7], types[(v >> 18) & 15], (unsigned)((v >> 22) & 255),
			       stages[(v >> 30) & 3]);
	bit_names(out, (unsigned)((v >> 32) & 0x3F), forms, 6, 0);
	g_string_append_c(out, '\n');
}

/* The first 36 bytes, common to every known record size. */
static void adb_common(GString *out, const unsigned char *p)
{
	g_string_append(out, "  - action_name: ");
	view_quoted(out, (const char *)p, view_field_len(p, 16));
	g_string_append_printf(out, "\n    action_number: %u\n", view_u32(p + 16));
	adb_packed(out, view_u64(p + 20));
	g_string_append_printf(out, "    action_probability: %u\n    animation_length: %u\n",
			       view_u32(p + 28), view_u32(p + 32));
}

static void adb_record(GString *out, const unsigned char *p, size_t size)
{
	adb_common(out, p);
	if (size == 36)
		return;
	g_string_append(out, "    movement_speed: ");
	view_float(out, view_f32(p + 36));
	g_string_append_c(out, '\n');
	if (size == 88) {
		for (unsigned i = 0; i < G_N_ELEMENTS(frames); i++)
			g_string_append_printf(out, "    %s: %u\n", frames[i], view_u32(p + 40 + 4 * i));
		return;
	}
	/* 84 bytes: one word fewer, and no source says which one is missing */
	g_string_append(out, "    unnamed_words: [");
	for (unsigned i = 0; i < 11; i++)
		g_string_append_printf(out, "%s%u", i ? ", " : "", view_u32(p + 40 + 4 * i));
	g_string_append(out, "]\n");
}

static void adb_header(GString *out, const unsigned char *data, uint32_t n, size_t size)
{
	g_string_append(out, "model_name: ");
	view_quoted(out, (const char *)data + 8, view_field_len(data + 8, 24));
	g_string_append_printf(out, "\nactions_count: %u\nrecord_size: %zu\nminimal_height: ", n, size);
	view_float(out, view_f32(data + 32));
	g_string_append(out, "\naverage_height: ");
	view_float(out, view_f32(data + 36));
	g_string_append(out, "\nmaximal_height: ");
	view_float(out, view_f32(data + 40));
	g_string_append_printf(out, "\nactions:%s\n", n ? "" : " []");
}

int adb_to_text(const unsigned char *data, size_t len, GString *out, struct format_error *err)
{
	size_t body, size;
	uint32_t n;

	if (len < 4 || view_u32(data) != ADB_MAGIC)
		return format_fail(err, EINVAL, 0, "not an ADB (no \"ADB\\0\")");
	if (len < ADB_HEADER)
		return format_fail(err, EINVAL, len, "truncated header: %zu bytes, need %d", len,
				   ADB_HEADER);
	n = view_u32(data + 4);
	body = len - ADB_HEADER;
	if (n == 0 && body != 0)
		return format_fail(err, EINVAL, 4, "no records, yet %zu bytes follow the header", body);
	if (n != 0 && (body < n || body % n != 0))
		return format_fail(err, EINVAL, 4, "%zu bytes after the header are no %u equal records",
				   body, n);
	size = n ? body / n : 0;
	adb_header(out, data, n, size);
	for (uint32_t i = 0; i < n; i++) {
		const unsigned char *p = data + ADB_HEADER + (size_t)i * size;

		if (size == 88 || size == 84 || size == 36) {
			adb_record(out, p, size);
		} else {
			g_string_append_printf(out, "  - record: %u\n    hex:\n", i);
			view_hex(out, p, size, 3);
		}
	}
	return 0;
}
