#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int use_syslog;
static int debug;
static int quiet;
static unsigned errors_logged;

/* The crash handler's own line to syslog: syslog(3) takes a lock and
 * allocates, which a handler must not (a fault inside malloc or syslog
 * would hang the dying daemon, holding its archives' locks).  A socket
 * connected ahead, and the line's start made ahead; send(2) is safe. */
static int crash_fd = -1;
static char crash_prefix[48];

void log_to_syslog(void)
{
	/* a test hook: the crash line to another socket than the system's */
	const char *where = getenv("EIFS_SYSLOG_SOCKET");
	struct sockaddr_un addr = { .sun_family = AF_UNIX };

	openlog("eifs", LOG_PID, LOG_DAEMON);
	use_syslog = 1;
	snprintf(addr.sun_path, sizeof addr.sun_path, "%s", where ? where : "/dev/log");
	crash_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (crash_fd >= 0 && connect(crash_fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
		close(crash_fd);
		crash_fd = -1;
	}
	snprintf(crash_prefix, sizeof crash_prefix, "<%d>eifs[%ld]: ", LOG_CRIT | LOG_DAEMON, (long)getpid());
}

void log_crash_line(const char *text)
{
	char line[256];
	size_t n = strlen(crash_prefix), len = strlen(text);

	if (crash_fd < 0)
		return;
	if (len > sizeof line - n)
		len = sizeof line - n;
	memcpy(line, crash_prefix, n);
	memcpy(line + n, text, len);
	(void)!send(crash_fd, line, n + len, MSG_DONTWAIT | MSG_NOSIGNAL);
}

int log_to_syslog_active(void)
{
	return use_syslog;
}

void log_set_debug(int on)
{
	debug = on;
}

void log_set_quiet(int on)
{
	quiet = on;
}

int log_debugging(void)
{
	return debug;
}

unsigned log_errors_logged(void)
{
	return __atomic_load_n(&errors_logged, __ATOMIC_RELAXED);
}

void log_msg(int priority, const char *fmt, ...)
{
	va_list ap;

	if ((priority == LOG_DEBUG && !debug) || (quiet && priority > LOG_ERR))
		return;
	if (priority <= LOG_ERR)
		__atomic_add_fetch(&errors_logged, 1, __ATOMIC_RELAXED);
	va_start(ap, fmt);
	if (use_syslog) {
		vsyslog(priority, fmt, ap);
	} else {
		/* one write per line so that lines of parallel threads do not mix */
		char line[1024];
		int n = vsnprintf(line, sizeof line - 1, fmt, ap);

		if (n > (int)sizeof line - 2)
			n = (int)sizeof line - 2;
		line[n] = '\n';
		fprintf(stderr, "eifs: %.*s", n + 1, line);
	}
	va_end(ap);
}
