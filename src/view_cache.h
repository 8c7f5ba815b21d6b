/* Converted views kept in memory, bounded by bytes, least recently used
 * dropped first.  Each view is converted once even under concurrent
 * readers; conversions of different views run in parallel. */
#ifndef EIFS_VIEW_CACHE_H
#define EIFS_VIEW_CACHE_H

#include <stdint.h>
#include <glib.h>

#include "tree.h"

struct view_cache;

struct view_cache *view_cache_new(uint64_t max_bytes);
void view_cache_free(struct view_cache *c);

/* Once a view had to be converted, convert the next one of its directory
 * too, on a thread of its own, so that a reader going through many views
 * finds the next one ready.  The mount turns this on. */
void view_cache_read_ahead(struct view_cache *c, struct tree *t);

/* fn is called on a thread about to convert a view (converting 1), or to
 * wait for another thread's conversion (0): the mount's loop then lets
 * another thread read requests meanwhile. */
void view_cache_before_wait(struct view_cache *c, void (*fn)(int converting));

/* The bytes of a view (a reference: g_bytes_unref it), converting on first
 * use; also settles view->size.  NULL with *err an errno when the
 * conversion failed (logged once, naming the file and the reason). */
GBytes *view_cache_get(struct view_cache *c, struct tree *t, struct tree_node *view, int *err);

/* The exact size of a view: from the source's header when the type allows,
 * else by converting.  Returns 0 or a negative errno (size 0 then). */
int view_cache_size(struct view_cache *c, struct tree *t, struct tree_node *view);

#endif
