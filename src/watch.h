/* Changes to source files, told by the kernel (inotify) instead of looked
 * for with a stat(2) at every open.
 *
 * An event is queued in the changing program's own system call, and raised
 * as a signal (SIGIO) to this process; only the thread that reads FUSE requests
 * takes that signal, so its handler has run before that thread reads a
 * request made after the change.  A check then trusts a file's stamp until
 * the generation moves, or a second at most (writes through a shared map
 * raise no event): no system call per open while nothing changed. */
#ifndef EIFS_WATCH_H
#define EIFS_WATCH_H

#include <signal.h>
#include <stdint.h>

/* Makes watching possible in this process (a mount): blocks its signals in
 * the calling thread, which every thread it starts inherits.  Without it
 * watch_file fails and every check looks at the file. */
void watch_start(void);

/* 0 while nothing is watched; then a count that every event raises. */
uint64_t watch_generation(void);

/* Whether watch_start was called. */
int watch_is_started(void);

/* Waits until the generation is other than seen, or watch_wake, or an
 * event counted already (it may return seen then); returns the generation.
 * For one thread at a time, after watch_start. */
uint64_t watch_wait(uint64_t seen);
void watch_wake(void);

/* Watches a file, the names in its folder and the folders above it.  The
 * file's watch descriptor (>= 0) when armed, to give to watch_forget;
 * -errno when not: no watch_start, no inotify, a symbolic link on the way,
 * or a file system whose changes may come from elsewhere (a network
 * share): there only a stat sees them. */
int watch_file(const char *path);

/* Ends one watch_file of the file wd: when it was the last, the kernel
 * stops watching it and lets its inode go (a file renamed away). */
void watch_forget(int wd);

/* The reader of requests takes the signals (watch_reader), and gives them
 * up before it hands the reading on (watch_not_reader). */
void watch_reader(void);
void watch_not_reader(void);

/* Adds the signals to set: for threads started blocking them. */
void watch_signals(sigset_t *set);

#endif
