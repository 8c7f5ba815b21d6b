#define _GNU_SOURCE
#include "crash.h"

#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>
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

/* backtrace() can run in the handler: it unwinds through the libraries
 * too, where frame pointers end, but loads libgcc on first use, which
 * must not happen in a signal handler (the loader's or malloc's lock may
 * be held).  Loading it before the mount was ready cost every mount about
 * a millisecond, so it is loaded once the mount serves. */
static int warmed;

enum {
	MAX_FRAMES = 48,
	MAX_FRAME_BYTES = 1 << 20, /* a larger step between frames is not a frame */
};

static void put(const char *s)
{
	ssize_t rc = write(STDERR_FILENO, s, strlen(s));

	(void)rc;
}

/* Reads a word of this process's memory, or fails where there is none: a
 * frame pointer may point anywhere once it left eifs' own code. */
static int read_word(uintptr_t addr, uintptr_t *out)
{
	struct iovec here = { out, sizeof *out }, there = { (void *)addr, sizeof *out };

	return process_vm_readv(getpid(), &here, 1, &there, 1, 0) == (ssize_t)sizeof *out ? 0 : -1;
}

/* The pc, stack pointer and frame pointer the signal interrupted, where
 * this machine's context is known. */
static int interrupted_at(const void *context, uintptr_t *pc, uintptr_t *sp, uintptr_t *fp)
{
	const ucontext_t *uc = context;

#if defined(__x86_64__)
	*pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	*sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	*fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	return 0;
#elif defined(__aarch64__)
	*pc = (uintptr_t)uc->uc_mcontext.pc;
	*sp = (uintptr_t)uc->uc_mcontext.sp;
	*fp = (uintptr_t)uc->uc_mcontext.regs[29];
	return 0;
#else
	(void)uc;
	(void)pc;
	(void)sp;
	(void)fp;
	return -1;
#endif
}

/* eifs' own code, from the linker */
extern const char __executable_start[], etext[];

static int in_eifs(uintptr_t addr)
{
	return addr >= (uintptr_t)__executable_start && addr < (uintptr_t)etext;
}

/* A frame record at fp: the caller's frame pointer, further up the stack,
 * and a return address beside it. */
static int frame_at(uintptr_t fp, uintptr_t *next, uintptr_t *ret)
{
	return fp % sizeof fp == 0 && read_word(fp, next) == 0 && read_word(fp + sizeof fp, ret) == 0
	       && *ret && *next > fp && *next - fp <= MAX_FRAME_BYTES;
}

/* Appends the return addresses up the chain of frame records from fp;
 * returns whether one of them lies in eifs. */
static int follow_chain(uintptr_t fp, void **frames, int *n, int max)
{
	uintptr_t next, ret;
	int reached = 0;

	while (*n < max && frame_at(fp, &next, &ret)) {
		frames[(*n)++] = (void *)ret;
		reached |= in_eifs(ret);
		fp = next;
	}
	return reached;
}

/* Where the stack holds a frame record that returns into eifs: a library
 * built without frame pointers (a wait in libc, say) may use the register
 * for other things, but it saved eifs' frame pointer on the stack. */
static uintptr_t find_eifs_frame(uintptr_t sp)
{
	enum { SCAN_BYTES = 16 << 10 };
	uintptr_t v, next, ret;

	for (uintptr_t at = sp; at < sp + SCAN_BYTES; at += sizeof at)
		if (read_word(at, &v) == 0 && v > at && v - at <= MAX_FRAME_BYTES && frame_at(v, &next, &ret)
		    && in_eifs(ret))
			return v;
	return 0;
}

/* Until backtrace() is warmed up: the return addresses up the chain of
 * frame pointers (eifs is built with them), from the interrupted pc.
 * Where the chain does not reach eifs' code, the stack is searched for a
 * frame record of eifs to go on from. */
static int walk_frames(const void *context, void **frames, int max)
{
	uintptr_t pc, sp, fp;
	int n = 0;

	if (interrupted_at(context, &pc, &sp, &fp) < 0)
		return 0;
	frames[n++] = (void *)pc;
	if (!follow_chain(fp, frames, &n, max) && !in_eifs(pc) && (fp = find_eifs_frame(sp)) != 0) {
		n = 1; /* what the broken chain gave is not to be trusted */
		follow_chain(fp, frames, &n, max);
	}
	return n;
}

/* Only async-signal-safe calls, but for the syslog line: the process is
 * going anyway, and a lost line is the worst that can happen. */
static void on_fatal(int sig, siginfo_t *info, void *context)
{
	void *frames[MAX_FRAMES];
	int n = __atomic_load_n(&warmed, __ATOMIC_ACQUIRE) ? backtrace(frames, MAX_FRAMES)
							     : walk_frames(context, frames, MAX_FRAMES);
	const char *name = sigabbrev_np(sig);

	(void)info;
	put("eifs: fatal signal SIG");
	put(name ? name : "?");
	put("; the mount is gone.  Backtrace (addr2line -e eifs OFFSET):\n");
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	if (log_to_syslog_active())
		syslog(LOG_CRIT, "fatal signal SIG%s; the mount is gone", name ? name : "?");
	signal(sig, SIG_DFL);
	raise(sig);
}

void crash_report_warm_up(void)
{
	void *frame[1];

	backtrace(frame, 1);
	__atomic_store_n(&warmed, 1, __ATOMIC_RELEASE);
}

void crash_report_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fatal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
	for (size_t i = 0; i < sizeof fatal_signals / sizeof fatal_signals[0]; i++)
		sigaction(fatal_signals[i], &sa, NULL);
}
#else
void crash_report_install(void)
{
}

void crash_report_warm_up(void)
{
}
#endif
