/* How a stored entry name becomes a path that is safe to show. */
#ifndef EIFS_NAMES_H
#define EIFS_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <glib.h>

/* The longest component shown as stored, in UTF-8 bytes: the kernel
 * takes names of up to 255, and views and case duplicates add a suffix. */
enum { NAMES_COMPONENT_MAX = 200 };

/* Splits a cp1251 entry name at its backslashes into UTF-8 path
 * components, appended to comps (g_free them).  Rewrites, so that no
 * name can escape or break a path:
 *   '/' -> %2F, NUL -> %00, the undefined cp1251 byte 0x98 -> %98,
 *   empty components are dropped, "." -> %2E, ".." -> %2E%2E,
 *   a name with no component left -> %EMPTY,
 *   a component longer than NAMES_COMPONENT_MAX -> its first 190 bytes
 *   or fewer (whole characters) and "~" with 8 hex digits of a hash of
 *   its stored bytes.
 * Returns the number of rewrites (0: shown as stored). */
unsigned names_split(const char *raw, size_t len, GPtrArray *comps);

/* The same rules, appended to out as one UTF-8 path with '/' between the
 * components (none of which can hold a '/').  Returns the rewrites. */
unsigned names_display_path(const char *raw, size_t len, GString *out);

/* True when a stored name is shown exactly as stored (with '/' for '\'):
 * printable ASCII, no '/', no empty, "." or ".." component. */
int names_is_plain(const char *raw, size_t len);

/* What tells apart names that clash: a hash of the stored bytes, which
 * stays the same however the archive's table is rebuilt (a table index
 * does not). */
uint32_t names_tag(const char *raw, size_t len);

/* The name a case duplicate (or a name already taken) gets: "name~TAG",
 * TAG as 8 hex digits. */
char *names_dedup(const char *name, uint32_t tag);

/* Extension test, ASCII case-insensitive; ext without the dot. */
int names_has_ext(const char *name, const char *ext);

/* Names whose extension marks a RES archive. */
int names_is_archive_ext(const char *name);

/* Ordering of a directory: ASCII case-insensitive, ties broken by bytes. */
int names_order(const char *a, const char *b);

#endif
