#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int use_syslog;
static int debug;
static int quiet;

void log_to_syslog(void)
{
	openlog("eifs", LOG_PID, LOG_DAEMON);
	use_syslog = 1;
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

void log_msg(int priority, const char *fmt, ...)
{
	va_list ap;

	if ((priority == LOG_DEBUG && !debug) || (quiet && priority > LOG_ERR))
		return;
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
