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

struct serve_loop;

/* Starts a loop with its first thread, before there is a session: the
 * thread runs setup(ctx), which makes and mounts the session (NULL when it
 * cannot), hands it to the caller, answers the kernel's INIT, runs
 * set_up_idle(ctx) if given (work the caller need not wait for; every
 * other request does) and waits for serve_loop_run.  The mount so happens
 * beside the caller's own work, and the thread that will answer the first
 * requests is running by then.  It runs on the caller's other CPUs (where
 * it has any) until meanwhile() of serve_loop_run is done, so that
 * neither waits behind the caller's work.  At most max_threads threads
 * at once.  serve_loop_run and serve_loop_free wait for set_up_idle to
 * return: the caller lets go of whatever it waits for before them.
 * NULL, with errno set, when no thread can be started. */
struct serve_loop *serve_loop_start(int max_threads, struct fuse_session *(*setup)(void *ctx),
				    void (*set_up_idle)(void *ctx), void *ctx);

/* Waits for setup to return; what it returned. */
struct fuse_session *serve_loop_session(struct serve_loop *l);

/* After each request the reader keeps asking for the next one for usec
 * microseconds (0: it sleeps at once) before it sleeps until one comes:
 * a program reading file after file sends its next request within
 * microseconds, and a reader still awake answers it without the wake-up
 * of a sleeping thread, which on a virtual machine's idle CPU costs more
 * than the request itself (on others the spinning CPU slows the program
 * down instead: the reader spins only while it measures that spinning
 * brings the next request sooner, spin.h).  It costs at most usec of CPU
 * time a request, and only where another CPU can run the program.
 * Before serve_loop_run; the default is 0. */
void serve_loop_spin(struct serve_loop *l, unsigned usec);

/* Whether it spins is measured and chosen as it serves (spin.h); a test
 * fixes it: always (1) or never (0).  Before serve_loop_run. */
void serve_loop_spin_fixed(struct serve_loop *l, int spins);

/* Serves the session setup made until it ends (unmount, signal).  The
 * calling thread runs meanwhile(ctx), if given, once the first request can
 * be read: work that the first requests will want.  Then later(ctx), if
 * given, SERVE_LATER_MS after meanwhile returned (unless the loop ended
 * before): work no request waits for, kept off the CPUs while the first
 * ones are answered.  Returns 0, or a negative errno when reading failed. */
enum { SERVE_LATER_MS = 100 };
int serve_loop_run(struct serve_loop *l, void (*meanwhile)(void *ctx), void (*later)(void *ctx), void *ctx);

/* fn(ctx), once SIGINT, SIGTERM or SIGHUP came, before the session is
 * marked exited and the threads stop: they still answer requests
 * meanwhile.  A kernel notice under way may wait for the answer to a
 * request (a page lock a queued read holds): with the readers stopped
 * first, it waited for ever, and so did the daemon.  serve_loop_run then
 * takes those signals itself (the handlers fuse_set_signal_handlers set
 * mark the session exited at once, and libfuse then drops the request a
 * reader reads) and gives the ones before back when it returns.  Before
 * serve_loop_run; the default is none. */
void serve_loop_before_stop(struct serve_loop *l, void (*fn)(void *ctx), void *ctx);

/* Ends the loop's threads (the first one also when the loop never ran)
 * and frees it; the session stays the caller's. */
void serve_loop_free(struct serve_loop *l);

/* Called by a request's handler before something that may block or take
 * long: if this thread is the reader, another thread takes over reading.
 * Anywhere else (other threads, fuse_session_loop), it does nothing. */
void serve_will_block(void);

/* Whether this thread is the reader (a handler that can tell quick from
 * slow only by trying: reads from the page cache). */
int serve_is_reader(void);

/* A thread that waited this long for the reading, while another thread
 * waited too, ends: a burst of slow requests leaves no crowd behind. */
enum { SERVE_IDLE_MS = 2000 };

/* The largest read served on the reading thread. */
#define SERVE_QUICK_READ (32u << 10)

#endif
