/* A daemon that dies of a fatal signal says so where its log goes, with
 * the addresses it died at: a crash in the background would otherwise
 * leave only "Transport endpoint is not connected" behind. */
#ifndef EIFS_CRASH_H
#define EIFS_CRASH_H

/* Installs the handlers (not under a sanitizer, which reports better).
 * Until crash_report_warm_up, a report follows eifs' frame pointers only. */
void crash_report_install(void);

/* Makes later reports unwind through the libraries too (loads libgcc):
 * a millisecond or two, best spent once the mount serves. */
void crash_report_warm_up(void);

/* Marks the end of eifs' own code (src/code_end.c); never called. */
void eifs_code_end(void);

#endif
