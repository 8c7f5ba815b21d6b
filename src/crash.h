/* A daemon that dies of a fatal signal says so where its log goes, with
 * the addresses it died at: a crash in the background would otherwise
 * leave only "Transport endpoint is not connected" behind. */
#ifndef EIFS_CRASH_H
#define EIFS_CRASH_H

/* Installs the handlers (not under a sanitizer, which reports better). */
void crash_report_install(void);

/* Waits until the backtrace's library is loaded (a thread started by
 * crash_report_install loads it): before a fork, whose child must not find
 * the loader half-way through. */
void crash_report_settle(void);

#endif
