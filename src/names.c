#include "names.h"

#include <string.h>
#include "cp1251.h"

unsigned names_split(const char *raw, size_t len, GPtrArray *comps)
{
	unsigned rewrites = 0;
	guint before = comps->len;
	size_t start = 0;

	for (size_t i = 0; i <= len; i++) {
		GString *c;

		if (i < len && raw[i] != '\\')
			continue;
		if (i == start) {
			rewrites++; /* empty component */
			start = i + 1;
			continue;
		}
		c = g_string_sized_new(i - start + 8);
		rewrites += (unsigned)cp1251_to_utf8(raw + start, i - start, "/", c);
		if (strcmp(c->str, ".") == 0 || strcmp(c->str, "..") == 0) {
			g_string_assign(c, c->len == 1 ? "%2E" : "%2E%2E");
			rewrites++;
		}
		g_ptr_array_add(comps, g_string_free(c, FALSE));
		start = i + 1;
	}
	if (comps->len == before) {
		g_ptr_array_add(comps, g_strdup("%EMPTY"));
		if (rewrites == 0)
			rewrites = 1;
	}
	return rewrites;
}

char *names_dedup(const char *name, unsigned slot)
{
	return g_strdup_printf("%s~%u", name, slot);
}

int names_has_ext(const char *name, const char *ext)
{
	const char *dot = strrchr(name, '.');

	return dot && g_ascii_strcasecmp(dot + 1, ext) == 0;
}

int names_is_archive_ext(const char *name)
{
	static const char *const exts[] = { "res", "mod", "anm", "bon", "mpr", "mq" };

	for (size_t i = 0; i < G_N_ELEMENTS(exts); i++)
		if (names_has_ext(name, exts[i]))
			return 1;
	return 0;
}

int names_order(const char *a, const char *b)
{
	int c = g_ascii_strcasecmp(a, b);

	return c ? c : strcmp(a, b);
}
