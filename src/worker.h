/* A thread that works through a queue of items, one at a time, in order.
 * Plain pthreads, so that ThreadSanitizer sees every hand-over (GLib's
 * queues and pools synchronise with futexes it cannot see). */
#ifndef EIFS_WORKER_H
#define EIFS_WORKER_H

#include <stdint.h>

struct worker;

/* A thread calling fn(item, ctx) for every item pushed; it starts with
 * the first item. */
struct worker *worker_new(const char *name, void (*fn)(void *item, void *ctx), void *ctx);

void worker_push(struct worker *w, void *item);

/* Whether items pushed so far are not all done. */
int worker_pending(struct worker *w);

/* Waits until every item pushed so far is done (0), or timeout_ms passed
 * (-ETIMEDOUT). */
int worker_wait(struct worker *w, unsigned timeout_ms);

/* Does what is queued, then stops the thread and frees w. */
void worker_free(struct worker *w);

/* Drops the items not started yet, each given to free_item; they count
 * as done.  The item under way, if any, goes on. */
void worker_discard(struct worker *w, void (*free_item)(void *item));

/* Lets go of w without waiting for the item under way, which may never
 * end: the items not started are dropped (free_item), and the thread
 * frees w when it ends, if ever.  w is not to be used after. */
void worker_abandon(struct worker *w, void (*free_item)(void *item));

#endif
