/* The loop that answers the kernel's requests, leader and followers: one
 * thread at a time reads /dev/fuse (the reader) and answers what it read
 * itself while that is quick, so a program reading file after file talks
 * to one thread that stays awake, not to a new one per request.  A request
 * that may take long (a save, a conversion, a large read) first passes the
 * reading to another thread, started when none is waiting. */
#ifndef EIFS_SERVE_H
#define EIFS_SERVE_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

/* Serves se until it ends (unmount, signal); at most max_threads threads
 * at once.  The calling thread runs meanwhile(ctx), if given, once the
 * first request can be read: work that the first requests will want.
 * Then later(ctx), if given, SERVE_LATER_MS after meanwhile returned
 * (unless the loop ended before): work no request waits for, kept off the
 * CPUs while the first ones are answered.  Returns 0, or a negative errno when
 * reading failed. */
enum { SERVE_LATER_MS = 100 };
int serve_requests(struct fuse_session *se, int max_threads, void (*meanwhile)(void *ctx),
		   void (*later)(void *ctx), void *ctx);

/* Called by a request's handler before something that may block or take
 * long: if this thread is the reader, another thread takes over reading.
 * Anywhere else (other threads, fuse_session_loop), it does nothing. */
void serve_will_block(void);

/* Whether this thread is the reader (a handler that can tell quick from
 * slow only by trying: reads from the page cache). */
int serve_is_reader(void);

/* The largest read served on the reading thread. */
#define SERVE_QUICK_READ (32u << 10)

#endif
