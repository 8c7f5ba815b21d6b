#define _GNU_SOURCE
#include "crash.h"

#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

#ifndef UNDER_SANITIZER
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

static int warmed; /* backtrace() can run in the handler */
static pthread_t warmer;
static int warming; /* warmer is to be joined */

static void put(const char *s)
{
	ssize_t rc = write(STDERR_FILENO, s, strlen(s));

	(void)rc;
}

/* Only async-signal-safe calls, but for the syslog line: the process is
 * going anyway, and a lost line is the worst that can happen. */
static void on_fatal(int sig)
{
	void *frames[48];
	/* until libgcc is loaded, backtrace() would load it here, perhaps
	 * while the loader's or malloc's lock is held: no backtrace then */
	int n = __atomic_load_n(&warmed, __ATOMIC_ACQUIRE) ? backtrace(frames, 48) : 0;
	const char *name = sigabbrev_np(sig);

	put("eifs: fatal signal SIG");
	put(name ? name : "?");
	put("; the mount is gone.  Backtrace (addr2line -e eifs OFFSET):\n");
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	if (log_to_syslog_active())
		syslog(LOG_CRIT, "fatal signal SIG%s; the mount is gone", name ? name : "?");
	signal(sig, SIG_DFL);
	raise(sig);
}

/* backtrace() loads libgcc on first use, which should not happen inside
 * the handler; a thread of its own does it beside the reading of SRC, not
 * before it (a millisecond or two). */
static void *warm_up(void *unused)
{
	void *frame[1];

	(void)unused;
	backtrace(frame, 1);
	__atomic_store_n(&warmed, 1, __ATOMIC_RELEASE);
	return NULL;
}

void crash_report_install(void)
{
	struct sigaction sa;

	if (pthread_create(&warmer, NULL, warm_up, NULL) == 0)
		warming = 1;
	else
		warm_up(NULL);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fatal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESETHAND;
	for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
		sigaction(fatal_signals[i], &sa, NULL);
}

void crash_report_settle(void)
{
	if (warming)
		pthread_join(warmer, NULL);
	warming = 0;
}
#else
void crash_report_install(void)
{
}

void crash_report_settle(void)
{
}
#endif
