/* One log line per event: to stderr in the foreground, to syslog when the
 * daemon runs in the background. */
#ifndef EIFS_LOG_H
#define EIFS_LOG_H

#include <syslog.h>

void log_to_syslog(void);
int log_to_syslog_active(void);
/* For a fatal signal's handler, with async-signal-safe calls only: text
 * as one critical syslog line, when the log goes to syslog. */
void log_crash_line(const char *text);
void log_set_debug(int on);
/* Leaves out warnings (and notices): a second look at what was reported. */
void log_set_quiet(int on);
int log_debugging(void);
void log_msg(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* How many errors (LOG_ERR and worse) were logged so far: a caller that
 * would report a failure sees whether the code below already told why. */
unsigned log_errors_logged(void);

#endif
