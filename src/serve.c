#define _GNU_SOURCE
#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/fuse.h>
#include <glib.h>

#include "log.h"
#include "spin.h"
#include "watch.h"

struct serve_loop {
	struct fuse_session *se;
	struct fuse_session *(*setup)(void *ctx); /* run by the first thread */
	void (*set_up_idle)(void *ctx);           /* then, once the caller has the session */
	void *setup_ctx;
	pthread_mutex_t lock;
	pthread_cond_t turn;   /* the reading is free, or the loop ends */
	pthread_cond_t handshake; /* set up, or running, or ending */
	int set_up;            /* setup returned */
	int running;           /* serve_loop_run was called */
	int reading;           /* a thread is the reader */
	int waiting;           /* threads waiting to become it */
	int ending;            /* no thread starts any more */
	int max_threads;
	unsigned spin_us;      /* serve_loop_spin */
	void (*before_stop)(void *ctx); /* serve_loop_before_stop */
	void *before_stop_ctx;
	int may_spin;          /* serve_loop_run started the spinning */
	int nonblocking;       /* the device is: the reader spins (reader's) */
	struct spin_choice choice; /* whether it should (reader's) */
	int last_quick;        /* no request was handed to another thread since
				* the last quick one: readers may spin */
	GArray *threads;       /* pthread_t, every thread started */
	pthread_t first;       /* the thread that mounts */
	int first_gone;        /* it left (leave_idle): not placed again; lock */
	cpu_set_t cpus;        /* where threads may run (the caller's mask) */
	int placed;            /* the first thread runs on other CPUs until the
				* loop runs: so do threads it starts, at first */
	int start_failed;      /* logged once */
	sem_t finished;        /* the session ended (posted by the reader), or
				* a signal came (stop_signal) */
	int stop_signal;       /* SIGINT, SIGTERM or SIGHUP came (before_stop) */
	int error;
};

/* The loop whose reader this thread is, if it is: what serve_will_block
 * needs without being handed the loop through every handler. */
static __thread struct serve_loop *reader_of;

static void *serve_thread(void *p);

/* By the thread itself: one system call, where naming another thread
 * writes a file under /proc, a tenth of a millisecond that the thread
 * starting it (the mount's, or a reader before a slow request) waits. */
static void name_thread(void)
{
	pthread_setname_np(pthread_self(), "eifs-serve");
}

/* Asynchronous signals go to the main thread, which waits for the end;
 * a fault still reaches the thread that caused it (crash report). */
static int start_thread_with(struct serve_loop *l, void *(*run)(void *), const pthread_attr_t *attr)
{
	sigset_t block, old;
	pthread_t t;
	int rc;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGQUIT);
	watch_signals(&block); /* taken when it becomes the reader */
	pthread_sigmask(SIG_BLOCK, &block, &old);
	rc = pthread_create(&t, attr, run, l);
	if (rc != 0 && attr) /* the placement refused (its CPU gone offline): anywhere then */
		rc = pthread_create(&t, NULL, run, l);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		if (!l->start_failed++)
			log_msg(LOG_ERR, "cannot start a thread to serve requests: %s", strerror(rc));
		return -rc;
	}
	g_array_append_val(l->threads, t);
	l->waiting++; /* from its start: a second hand-over does not start another */
	return 0;
}

/* A thread the first one starts inherits its mask, which may still keep
 * it off one CPU (place_elsewhere): it takes the caller's whole mask. */
static void *later_thread(void *p)
{
	struct serve_loop *l = p;

	name_thread();
	if (l->placed)
		pthread_setaffinity_np(pthread_self(), sizeof l->cpus, &l->cpus);
	return serve_thread(l);
}

static int start_thread(struct serve_loop *l)
{
	return start_thread_with(l, later_thread, NULL);
}

/* The reader gives the reading to a waiting thread, or starts one.  When
 * neither can be, the reading stays free and the first thread to finish
 * its request takes it. */
static void pass_reading(struct serve_loop *l)
{
	watch_not_reader();
	__atomic_store_n(&l->last_quick, 0, __ATOMIC_RELAXED); /* no spin meanwhile */
	pthread_mutex_lock(&l->lock);
	l->reading = 0;
	if (l->waiting)
		pthread_cond_signal(&l->turn);
	else if (!l->ending && (int)l->threads->len < l->max_threads)
		start_thread(l);
	pthread_mutex_unlock(&l->lock);
	reader_of = NULL;
}

int serve_is_reader(void)
{
	return reader_of != NULL;
}

void serve_will_block(void)
{
	if (reader_of)
		pass_reading(reader_of);
}

/* A thread left waiting after a burst of slow requests goes away; the
 * loop forgets it (nothing joins it).  Under the lock, and never once the
 * loop ends: stop_threads then reads the list unlocked. */
static void leave_idle(struct serve_loop *l)
{
	pthread_t self = pthread_self();

	for (guint i = 0; i < l->threads->len; i++) {
		if (pthread_equal(g_array_index(l->threads, pthread_t, i), self)) {
			g_array_remove_index_fast(l->threads, i);
			break;
		}
	}
	/* gone soon: serve_loop_run must not place it any more */
	if (pthread_equal(l->first, self))
		l->first_gone = 1;
	pthread_detach(self);
}

/* Waits for the reading until SERVE_IDLE_MS passed; ETIMEDOUT then. */
static int wait_turn(struct serve_loop *l)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += SERVE_IDLE_MS % 1000 * 1000000L;
	t.tv_sec += SERVE_IDLE_MS / 1000 + t.tv_nsec / 1000000000L;
	t.tv_nsec %= 1000000000L;
	return pthread_cond_timedwait(&l->turn, &l->lock, &t);
}

/* Waits to become the reader; 0 when the session ended, or when this
 * thread waited SERVE_IDLE_MS while another one did too (one stays
 * ready for the next slow request) and has left.  A new thread was
 * counted as waiting when it was started. */
static int take_reading(struct serve_loop *l, int new_thread)
{
	pthread_mutex_lock(&l->lock);
	if (!new_thread)
		l->waiting++;
	while (l->reading && !l->ending) {
		/* the last one waiting sleeps until it is needed: an idle
		 * mount wakes no thread */
		if (l->waiting <= 1)
			pthread_cond_wait(&l->turn, &l->lock);
		else if (wait_turn(l) == ETIMEDOUT && l->reading && !l->ending && l->waiting > 1)
			break;
	}
	l->waiting--;
	if (l->ending || l->reading) {
		if (!l->ending)
			leave_idle(l);
		pthread_mutex_unlock(&l->lock);
		return 0;
	}
	l->reading = 1;
	pthread_mutex_unlock(&l->lock);
	reader_of = l;
	watch_reader();
	return 1;
}

static void end_session(struct serve_loop *l, int res)
{
	pthread_mutex_lock(&l->lock);
	if (res < 0 && !l->error)
		l->error = res;
	l->ending = 1;
	pthread_cond_broadcast(&l->turn);
	pthread_mutex_unlock(&l->lock);
	fuse_session_exit(l->se);
	reader_of = NULL;
	sem_post(&l->finished);
}

/* Requests answered from memory or the page cache.  Their handlers call
 * serve_will_block where that is not so (a view to convert, a save at
 * close, a file changed on disk). */
static int quick(const struct fuse_buf *buf, size_t len)
{
	struct fuse_in_header in;
	uint32_t size;

	if ((buf->flags & FUSE_BUF_IS_FD) || len < sizeof in)
		return 0;
	memcpy(&in, buf->mem, sizeof in);
	switch (in.opcode) {
	case FUSE_READ:
		if (len < sizeof in + offsetof(struct fuse_read_in, size) + sizeof size)
			return 0;
		memcpy(&size, (const char *)buf->mem + sizeof in + offsetof(struct fuse_read_in, size),
		       sizeof size);
		/* larger reads are a stream (the kernel's read-ahead sends
		 * several at once): a second thread pays for itself */
		return size <= SERVE_QUICK_READ;
	case FUSE_LOOKUP: case FUSE_FORGET: case FUSE_BATCH_FORGET: case FUSE_GETATTR:
	case FUSE_OPEN: case FUSE_RELEASE: case FUSE_OPENDIR: case FUSE_READDIR:
	case FUSE_READDIRPLUS: case FUSE_RELEASEDIR: case FUSE_STATFS: case FUSE_ACCESS:
	case FUSE_GETXATTR: case FUSE_LISTXATTR: case FUSE_INTERRUPT: case FUSE_INIT:
	case FUSE_DESTROY:
		return 1;
	default:
		return 0;
	}
}

static int64_t monotonic_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The next request, as fuse_session_receive_buf gives it.  A spinning
 * reader finds the queue empty (EAGAIN) and asks again until spin_us
 * passed without a request, then sleeps until one comes.  It spins only
 * after a quick request: a program that gets such an answer sends its
 * next request at once (cat over many small files).  After a slow one (a
 * big read, a save) the answer comes from another thread, and the CPU a
 * spin would take is the one that thread and the kernel's reading need:
 * a cold read of a 1 GiB member took 30% longer with it. */
static int receive(struct serve_loop *l, struct fuse_buf *buf)
{
	int64_t empty_since = 0;

	for (;;) {
		int res = fuse_session_receive_buf(l->se, buf);
		int64_t now;

		if (res != -EAGAIN || !l->nonblocking)
			return res;
		now = monotonic_ns();
		if (!empty_since)
			empty_since = now;
		if (!__atomic_load_n(&l->last_quick, __ATOMIC_RELAXED)
		    || now - empty_since >= (int64_t)l->spin_us * 1000) {
			struct pollfd p = { .fd = fuse_session_fd(l->se), .events = POLLIN };

			if (poll(&p, 1, -1) < 0) {
				/* EINTR (a watch's signal): asked again, at once
				 * asleep, not spinning anew after no request */
				__atomic_store_n(&l->last_quick, 0, __ATOMIC_RELAXED);
				return -errno;
			}
			empty_since = 0;
		}
	}
}

/* Only the reader reads the device, and only between its reads does it
 * change whether the device blocks. */
static void set_nonblocking(struct serve_loop *l, int on)
{
	int fd = fuse_session_fd(l->se), flags = fcntl(fd, F_GETFL);

	if (flags < 0 || fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) < 0)
		return;
	l->nonblocking = on;
}

/* The next request; after a quick answer of its own the reader spins or
 * sleeps as the choice says, and tells it how soon the request came.
 * *chose is set when that made a new choice. */
static int next_request(struct serve_loop *l, struct fuse_buf *buf, int *chose)
{
	int measured = __atomic_load_n(&l->may_spin, __ATOMIC_ACQUIRE)
		       && __atomic_load_n(&l->last_quick, __ATOMIC_RELAXED);
	int64_t start = 0;
	int res;

	if (measured) {
		if (spin_choice_spins(&l->choice) != l->nonblocking)
			set_nonblocking(l, spin_choice_spins(&l->choice));
		start = monotonic_ns();
	}
	res = receive(l, buf);
	*chose = measured && res > 0 && spin_choice_note(&l->choice, monotonic_ns() - start);
	return res;
}

static void log_choice(const struct spin_choice *c)
{
	log_msg(LOG_DEBUG, "the reader %s from now on: the next request came %lld us after an answer "
		"when it spun, %lld us when it slept", spin_choice_spins(c) ? "spins" : "sleeps",
		(long long)(c->spin_mean_ns / 1000), (long long)(c->sleep_mean_ns / 1000));
}

/* Reads and answers while it is the reader; the loop ends when the
 * session does.  Cancelled (at the end) only while it waits for a
 * request. */
static void serve_as_reader(struct serve_loop *l, struct fuse_buf *buf)
{
	while (reader_of == l && !fuse_session_exited(l->se)) {
		int res, chose;

		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		res = next_request(l, buf, &chose);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		if (chose)
			log_choice(&l->choice);
		if (res == -EINTR || res == -EAGAIN)
			continue;
		if (res <= 0) {
			end_session(l, res);
			return;
		}
		if (quick(buf, (size_t)res))
			__atomic_store_n(&l->last_quick, 1, __ATOMIC_RELAXED);
		else
			pass_reading(l);
		fuse_session_process_buf(l->se, buf);
	}
	if (reader_of == l)
		end_session(l, 0); /* the session was marked exited (signals) */
}

static void free_buf(void *buf)
{
	free(((struct fuse_buf *)buf)->mem);
}

/* Serves with buf, which it frees at the end. */
static void *serve_with(struct serve_loop *l, struct fuse_buf *buf)
{
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	pthread_cleanup_push(free_buf, buf);
	for (int new_thread = 1; take_reading(l, new_thread); new_thread = 0)
		serve_as_reader(l, buf);
	pthread_cleanup_pop(1);
	return NULL;
}

static void *serve_thread(void *p)
{
	struct fuse_buf buf = { .mem = NULL };

	return serve_with(p, &buf);
}

/* The kernel sends INIT first, as it mounts, and holds every other request
 * until it is answered: answered at once, the first lookups need not wait
 * for it behind set_up_idle's work.  Nothing else is read before the loop
 * runs.  Read without waiting (should INIT not be there, the loop answers
 * it); a failure is left to the loop, which reads the device next. */
static void answer_init(struct serve_loop *l, struct fuse_buf *buf)
{
	int res;

	set_nonblocking(l, 1);
	do
		res = fuse_session_receive_buf(l->se, buf);
	while (res == -EINTR);
	set_nonblocking(l, 0);
	if (res > 0)
		fuse_session_process_buf(l->se, buf);
}

/* Until the session ends (the reader posts), or a stop signal came.  With
 * own_signals their handler posts; a signal before they were taken was
 * libfuse's, which ended the session: seen at the first look.  Without,
 * libfuse's handler ends the session unposted: seen within a second.  An
 * idle mount with its own signals wakes no thread.  later(ctx), if given,
 * runs SERVE_LATER_MS after the wait began. */
static void wait_for_end(struct serve_loop *l, int own_signals, void (*later)(void *ctx), void *ctx)
{
	while (!fuse_session_exited(l->se) && !__atomic_load_n(&l->stop_signal, __ATOMIC_ACQUIRE)) {
		struct timespec t;

		if (!later && own_signals) {
			sem_wait(&l->finished); /* EINTR: looked at again */
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (later) {
			t.tv_nsec += SERVE_LATER_MS * 1000000L;
			t.tv_sec += t.tv_nsec / 1000000000L;
			t.tv_nsec %= 1000000000L;
		} else {
			t.tv_sec += 1;
		}
		if (sem_clockwait(&l->finished, CLOCK_MONOTONIC, &t) < 0 && errno == ETIMEDOUT && later) {
			later(ctx);
			later = NULL;
		}
	}
}

/* Sets up the session, answers INIT, does set_up_idle's work, waits for
 * the loop to run, and serves in it. */
static void *first_thread(void *p)
{
	struct serve_loop *l = p;
	struct fuse_session *se;
	struct fuse_buf buf = { .mem = NULL };
	int go;

	name_thread();
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	se = l->setup(l->setup_ctx);
	pthread_mutex_lock(&l->lock);
	l->se = se;
	l->set_up = 1;
	pthread_cond_broadcast(&l->handshake);
	pthread_mutex_unlock(&l->lock);
	if (se)
		answer_init(l, &buf);
	if (se && l->set_up_idle)
		l->set_up_idle(l->setup_ctx);
	pthread_mutex_lock(&l->lock);
	while (!l->running && !l->ending)
		pthread_cond_wait(&l->handshake, &l->lock);
	go = !l->ending;
	pthread_mutex_unlock(&l->lock);
	if (go)
		return serve_with(l, &buf);
	free(buf.mem);
	return NULL;
}

/* A thread started or woken by the main thread is often queued on its
 * CPU, and there it waits for as long as the main thread works on, the
 * other CPU idle: in half of the mounts measured the kernel's mount
 * started only once SRC was read.  The first thread, which mounts, does
 * set_up_idle's work and then reads the first requests, is kept off the
 * caller's CPU until the loop runs and meanwhile() is done; attr is set
 * for that. */
static int place_elsewhere(struct serve_loop *l, pthread_attr_t *attr)
{
	cpu_set_t other;
	unsigned cpu;
	/* the system call, not sched_getcpu(): glibc's answer comes from a
	 * per-thread record the kernel stops updating in a process started
	 * by clone with shared memory, as the daemon is */
	int here = syscall(SYS_getcpu, &cpu, NULL, NULL) == 0 ? (int)cpu : -1;

	if (here < 0 || pthread_getaffinity_np(pthread_self(), sizeof l->cpus, &l->cpus) != 0)
		return 0;
	other = l->cpus;
	if (here < CPU_SETSIZE)
		CPU_CLR(here, &other);
	if (CPU_COUNT(&other) == 0 || pthread_attr_setaffinity_np(attr, sizeof other, &other) != 0)
		return 0;
	return 1;
}

struct serve_loop *serve_loop_start(int max_threads, struct fuse_session *(*setup)(void *ctx),
				    void (*set_up_idle)(void *ctx), void *ctx)
{
	pthread_attr_t attr;
	struct serve_loop *l = g_new0(struct serve_loop, 1);
	pthread_condattr_t monotonic;
	int rc;

	l->setup = setup;
	l->set_up_idle = set_up_idle;
	l->setup_ctx = ctx;
	spin_choice_init(&l->choice);
	l->max_threads = max_threads > 0 ? max_threads : 1;
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&monotonic);
	pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
	pthread_cond_init(&l->turn, &monotonic);
	pthread_condattr_destroy(&monotonic);
	pthread_cond_init(&l->handshake, NULL);
	sem_init(&l->finished, 0, 0);
	l->threads = g_array_new(FALSE, FALSE, sizeof(pthread_t));
	pthread_attr_init(&attr);
	l->placed = place_elsewhere(l, &attr);
	pthread_mutex_lock(&l->lock);
	rc = start_thread_with(l, first_thread, &attr);
	if (rc == 0)
		l->first = g_array_index(l->threads, pthread_t, 0);
	pthread_mutex_unlock(&l->lock);
	pthread_attr_destroy(&attr);
	if (rc < 0) {
		serve_loop_free(l);
		errno = -rc;
		return NULL;
	}
	return l;
}

struct fuse_session *serve_loop_session(struct serve_loop *l)
{
	struct fuse_session *se;

	pthread_mutex_lock(&l->lock);
	while (!l->set_up)
		pthread_cond_wait(&l->handshake, &l->lock);
	se = l->se;
	pthread_mutex_unlock(&l->lock);
	return se;
}

/* Ends every thread, the first one too if the loop never ran, and waits
 * for them: one may wait in a read nothing will answer now. */
static void stop_threads(struct serve_loop *l)
{
	pthread_mutex_lock(&l->lock);
	l->ending = 1;
	pthread_cond_broadcast(&l->turn);
	pthread_cond_broadcast(&l->handshake);
	for (guint i = 0; i < l->threads->len; i++)
		pthread_cancel(g_array_index(l->threads, pthread_t, i));
	pthread_mutex_unlock(&l->lock);
	for (guint i = 0; i < l->threads->len; i++)
		pthread_join(g_array_index(l->threads, pthread_t, i), NULL);
	g_array_set_size(l->threads, 0);
}

void serve_loop_spin(struct serve_loop *l, unsigned usec)
{
	l->spin_us = usec;
}

void serve_loop_spin_fixed(struct serve_loop *l, int spins)
{
	spin_choice_fix(&l->choice, spins);
}

void serve_loop_before_stop(struct serve_loop *l, void (*fn)(void *ctx), void *ctx)
{
	l->before_stop = fn;
	l->before_stop_ctx = ctx;
}

/* Spinning needs a CPU beside the one of the program that waits for the
 * answer: on one alone it would only keep that program from running. */
static int may_spin(void)
{
	cpu_set_t cpus;

	return sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) > 1;
}

/* Readers may be waiting in a blocking read already: the reader turns
 * the device non-blocking itself, at its next request. */
static void start_spinning(struct serve_loop *l)
{
	if (l->spin_us && may_spin())
		__atomic_store_n(&l->may_spin, 1, __ATOMIC_RELEASE);
}

/* The loop the stop signals end while serve_loop_run takes them: a
 * handler has no other way to it (one loop runs in a daemon). */
static struct serve_loop *signalled;
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };

static void on_stop_signal(int sig)
{
	struct serve_loop *l = __atomic_load_n(&signalled, __ATOMIC_ACQUIRE);
	int saved = errno;

	(void)sig;
	if (l) {
		__atomic_store_n(&l->stop_signal, 1, __ATOMIC_RELEASE);
		sem_post(&l->finished); /* async-signal-safe */
	}
	errno = saved;
}

static void take_stop_signals(struct serve_loop *l, struct sigaction *before)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	__atomic_store_n(&signalled, l, __ATOMIC_RELEASE);
	for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) {
		/* one ignored stays so (nohup, a script's background job), as
		 * libfuse leaves it */
		if (sigaction(stop_signals[i], NULL, &before[i]) == 0 && before[i].sa_handler != SIG_IGN)
			sigaction(stop_signals[i], &sa, NULL);
	}
}

static void give_back_stop_signals(const struct sigaction *before)
{
	for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
		if (before[i].sa_handler != SIG_IGN)
			sigaction(stop_signals[i], &before[i], NULL);
	__atomic_store_n(&signalled, NULL, __ATOMIC_RELEASE);
}

int serve_loop_run(struct serve_loop *l, void (*meanwhile)(void *ctx), void (*later)(void *ctx), void *ctx)
{
	struct sigaction before[sizeof stop_signals / sizeof stop_signals[0]];
	int own_signals = l->before_stop != NULL;

	if (own_signals)
		take_stop_signals(l, before);
	pthread_mutex_lock(&l->lock);
	l->running = 1;
	pthread_cond_broadcast(&l->handshake);
	pthread_mutex_unlock(&l->lock);
	if (meanwhile)
		meanwhile(ctx);
	pthread_mutex_lock(&l->lock); /* the first thread may have left (leave_idle) */
	if (l->placed && !l->first_gone)
		pthread_setaffinity_np(l->first, sizeof l->cpus, &l->cpus);
	pthread_mutex_unlock(&l->lock);
	/* not before: a reader spinning on the other CPU would keep the
	 * program that waits for the first answers from running */
	start_spinning(l);
	wait_for_end(l, own_signals, later, ctx);
	if (own_signals) {
		/* the readers still answer while before_stop works */
		if (__atomic_load_n(&l->stop_signal, __ATOMIC_ACQUIRE))
			l->before_stop(l->before_stop_ctx);
		fuse_session_exit(l->se);
		give_back_stop_signals(before);
	}
	stop_threads(l);
	fuse_session_reset(l->se);
	return l->error;
}

void serve_loop_free(struct serve_loop *l)
{
	if (!l)
		return;
	stop_threads(l);
	g_array_unref(l->threads);
	sem_destroy(&l->finished);
	pthread_cond_destroy(&l->handshake);
	pthread_cond_destroy(&l->turn);
	pthread_mutex_destroy(&l->lock);
	g_free(l);
}
