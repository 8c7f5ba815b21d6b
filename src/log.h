/* One log line per event: to stderr in the foreground, to syslog when the
 * daemon runs in the background. */
#ifndef EIFS_LOG_H
#define EIFS_LOG_H

#include <syslog.h>

void log_to_syslog(void);
int log_to_syslog_active(void);
void log_set_debug(int on);
/* Leaves out warnings (and notices): a second look at what was reported. */
void log_set_quiet(int on);
int log_debugging(void);
void log_msg(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
