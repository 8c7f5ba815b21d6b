#define _GNU_SOURCE
#include "worker.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <glib.h>

#include "watch.h"

struct worker {
	pthread_t thread;
	int started;           /* the thread runs: it starts with the first item */
	char name[16];
	pthread_mutex_t lock;
	pthread_cond_t more;   /* an item came, or stop */
	pthread_cond_t done;   /* an item was done */
	GQueue items;
	uint64_t pushed, finished;
	int stop;
	int ended;             /* the thread left its loop */
	int abandoned;         /* the thread frees the worker as it ends */
	void (*fn)(void *item, void *ctx);
	void *ctx;
};

static void free_worker(struct worker *w)
{
	pthread_cond_destroy(&w->more);
	pthread_cond_destroy(&w->done);
	pthread_mutex_destroy(&w->lock);
	g_free(w);
}

static void *work(void *p)
{
	struct worker *w = p;
	int abandoned;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		void *item;

		while (g_queue_is_empty(&w->items) && !w->stop)
			pthread_cond_wait(&w->more, &w->lock);
		if (g_queue_is_empty(&w->items))
			break;
		item = g_queue_pop_head(&w->items);
		pthread_mutex_unlock(&w->lock);
		w->fn(item, w->ctx);
		pthread_mutex_lock(&w->lock);
		w->finished++;
		pthread_cond_broadcast(&w->done);
	}
	w->ended = 1;
	abandoned = w->abandoned;
	pthread_mutex_unlock(&w->lock);
	if (abandoned)
		free_worker(w);
	return NULL;
}

struct worker *worker_new(const char *name, void (*fn)(void *item, void *ctx), void *ctx)
{
	struct worker *w = g_new0(struct worker, 1);
	pthread_condattr_t attr;

	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->more, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->done, &attr);
	pthread_condattr_destroy(&attr);
	g_queue_init(&w->items);
	w->fn = fn;
	w->ctx = ctx;
	g_strlcpy(w->name, name, sizeof w->name);
	return w;
}

/* Without the signals of changes: they go to the reader of requests. */
static int start(struct worker *w)
{
	sigset_t block, old;
	int rc;

	sigemptyset(&block);
	watch_signals(&block);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	rc = pthread_create(&w->thread, NULL, work, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

void worker_push(struct worker *w, void *item)
{
	pthread_mutex_lock(&w->lock);
	/* not before: a mount serves its first request sooner without threads
	 * it may never need.  Should it fail, the next push tries again. */
	if (!w->started && start(w) == 0) {
		pthread_setname_np(w->thread, w->name);
		w->started = 1;
	}
	g_queue_push_tail(&w->items, item);
	w->pushed++;
	pthread_cond_signal(&w->more);
	pthread_mutex_unlock(&w->lock);
}

int worker_pending(struct worker *w)
{
	int pending;

	pthread_mutex_lock(&w->lock);
	pending = w->finished < w->pushed;
	pthread_mutex_unlock(&w->lock);
	return pending;
}

int worker_wait(struct worker *w, unsigned timeout_ms)
{
	struct timespec until = { 0 };
	uint64_t want;
	int done;

	pthread_mutex_lock(&w->lock);
	want = w->pushed;
	if (w->finished < want) {
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
	}
	while (w->finished < want && pthread_cond_timedwait(&w->done, &w->lock, &until) == 0)
		;
	done = w->finished >= want;
	pthread_mutex_unlock(&w->lock);
	return done ? 0 : -ETIMEDOUT;
}

void worker_free(struct worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	pthread_cond_signal(&w->more);
	pthread_mutex_unlock(&w->lock);
	if (w->started)
		pthread_join(w->thread, NULL);
	else
		work(w); /* no thread could start: what is queued is done here */
	free_worker(w);
}

void worker_discard(struct worker *w, void (*free_item)(void *item))
{
	GQueue dropped;

	pthread_mutex_lock(&w->lock);
	dropped = w->items;
	g_queue_init(&w->items);
	w->finished += dropped.length; /* as if done: a wait ends with the item under way */
	pthread_cond_broadcast(&w->done);
	pthread_mutex_unlock(&w->lock);
	while (!g_queue_is_empty(&dropped))
		free_item(g_queue_pop_head(&dropped));
}

void worker_abandon(struct worker *w, void (*free_item)(void *item))
{
	int running;

	if (!w)
		return;
	worker_discard(w, free_item);
	pthread_mutex_lock(&w->lock);
	w->stop = 1;
	running = w->started && !w->ended;
	w->abandoned = running;
	if (running) /* under the lock: the thread frees w once it has it */
		pthread_detach(w->thread);
	pthread_cond_signal(&w->more);
	pthread_mutex_unlock(&w->lock);
	if (!running)
		worker_free(w);
}
