#include "names.h"

#include <stdint.h>
#include <string.h>
#include "cp1251.h"

enum { LONG_NAME_KEEP = 190 };

static uint32_t fnv1a32(const char *p, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h;
}

/* Appends one component; returns its rewrites. */
static unsigned append_component(const char *raw, size_t len, GString *out)
{
	size_t start = out->len;
	unsigned rewrites = (unsigned)cp1251_to_utf8(raw, len, "/", out);
	const char *c = out->str + start;

	if (strcmp(c, ".") == 0 || strcmp(c, "..") == 0) {
		g_string_truncate(out, start);
		g_string_append(out, len == 1 ? "%2E" : "%2E%2E");
		rewrites++;
	}
	if (out->len - start > NAMES_COMPONENT_MAX) {
		size_t keep = LONG_NAME_KEEP;

		while (keep > 0 && ((unsigned char)out->str[start + keep] & 0xC0) == 0x80)
			keep--; /* not inside a character */
		g_string_truncate(out, start + keep);
		g_string_append_printf(out, "~%08x", fnv1a32(raw, len));
		rewrites++;
	}
	return rewrites;
}

int names_is_plain(const char *raw, size_t len)
{
	size_t component = 0;

	if (len == 0 || raw[0] == '\\' || raw[len - 1] == '\\' || raw[0] == '.')
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)raw[i];

		if (c < 0x20 || c >= 0x7F || c == '/' || (c == '\\' && (raw[i + 1] == '\\' || raw[i + 1] == '.')))
			return 0;
		component = c == '\\' ? 0 : component + 1;
		if (component > NAMES_COMPONENT_MAX)
			return 0;
	}
	return 1;
}

unsigned names_display_path(const char *raw, size_t len, GString *out)
{
	unsigned rewrites = 0;
	size_t start = 0, begin = out->len;

	if (names_is_plain(raw, len)) {
		/* the common case: nothing to rewrite */
		g_string_append_len(out, raw, (gssize)len);
		for (char *p = out->str + begin; *p; p++)
			if (*p == '\\')
				*p = '/';
		return 0;
	}
	for (size_t i = 0; i <= len; i++) {
		if (i < len && raw[i] != '\\')
			continue;
		if (i == start) {
			rewrites++; /* empty component */
		} else {
			if (out->len > begin)
				g_string_append_c(out, '/');
			rewrites += append_component(raw + start, i - start, out);
		}
		start = i + 1;
	}
	if (out->len == begin) {
		g_string_append(out, "%EMPTY");
		if (rewrites == 0)
			rewrites = 1;
	}
	return rewrites;
}

unsigned names_split(const char *raw, size_t len, GPtrArray *comps)
{
	GString *path = g_string_new(NULL);
	unsigned rewrites = names_display_path(raw, len, path);
	gchar **parts = g_strsplit(path->str, "/", -1);

	for (gchar **p = parts; *p; p++)
		g_ptr_array_add(comps, *p);
	g_free(parts); /* the strings now belong to comps */
	g_string_free(path, TRUE);
	return rewrites;
}

uint32_t names_tag(const char *raw, size_t len)
{
	return fnv1a32(raw, len);
}

char *names_dedup(const char *name, uint32_t tag)
{
	return g_strdup_printf("%s~%08x", name, tag);
}

int names_has_ext(const char *name, const char *ext)
{
	const char *dot = strrchr(name, '.');

	return dot && g_ascii_strcasecmp(dot + 1, ext) == 0;
}

int names_is_archive_ext(const char *name)
{
	static const char *const exts[] = { "res", "mod", "anm", "bon", "mpr", "mq" };
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < G_N_ELEMENTS(exts); i++)
		if (g_ascii_strcasecmp(dot + 1, exts[i]) == 0)
			return 1;
	return 0;
}

int names_order(const char *a, const char *b)
{
	int c = g_ascii_strcasecmp(a, b);

	return c ? c : strcmp(a, b);
}
