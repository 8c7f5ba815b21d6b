#define _GNU_SOURCE
#include "crash.h"

#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "log.h"
#include "sanitizer.h"

#ifndef UNDER_SANITIZER
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

/* backtrace() can run in the handler: it unwinds through the libraries
 * too, where frame pointers end, but loads libgcc on first use, which
 * must not happen in a signal handler (the loader's or malloc's lock may
 * be held).  Loading it before the mount was ready cost every mount about
 * a millisecond, so it is loaded once the first requests are answered. */
static int warmed;

enum {
	MAX_FRAMES = 48,
	MAX_FRAME_BYTES = 1 << 20, /* a larger step between frames is not a frame */
	SCAN_BYTES = 16 << 10,     /* how far up the stack a search goes */
};

static void put(const char *s)
{
	ssize_t rc = write(STDERR_FILENO, s, strlen(s));

	(void)rc;
}

/* Set when the kernel refuses this process the reading of its own memory
 * (a seccomp filter): the report then says why it has no frames. */
static int reads_denied;

/* Reads len bytes of this process's memory, or fails where there are none:
 * a frame pointer may point anywhere once it left eifs' own code. */
static int read_bytes(uintptr_t addr, void *out, size_t len)
{
	struct iovec here = { out, len }, there = { (void *)addr, len };

	if (process_vm_readv(getpid(), &here, 1, &there, 1, 0) == (ssize_t)len)
		return 0;
	if (errno == ENOSYS || errno == EPERM)
		reads_denied = 1;
	return -1;
}

static int read_word(uintptr_t addr, uintptr_t *out)
{
	return read_bytes(addr, out, sizeof *out);
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

/* eifs' own code: from the start of the program to the marker linked
 * after it (code_end.c).  Past the marker lies the code of the libraries
 * linked statically, built without frame pointers: a fault there is a
 * fault in a library.  (The linker puts the cold and start-up parts of
 * every function first, so those of the libraries count as eifs'.) */
extern const char __executable_start[];

static int in_eifs(uintptr_t addr)
{
	return addr >= (uintptr_t)__executable_start && addr < (uintptr_t)&eifs_code_end;
}

/* The program's code, the libraries linked into it included (all of
 * them, the C library too, in a static build): an offset in it is what
 * addr2line takes. */
extern const char etext[];

static int in_executable(uintptr_t addr)
{
	return addr >= (uintptr_t)__executable_start && addr < (uintptr_t)etext;
}

/* A saved return address without what is not address in it (aarch64's
 * pointer authentication code). */
static uintptr_t code_address(uintptr_t a)
{
#if defined(__aarch64__)
	return a & ((UINTPTR_C(1) << 48) - 1);
#else
	return a;
#endif
}

/* Whether addr follows a call instruction of eifs: a return address, not
 * some other pointer into eifs' code that a register or a local held. */
static int returns_into_eifs(uintptr_t addr)
{
	unsigned char b[8];

	if (!in_eifs(addr) || addr - sizeof b < (uintptr_t)__executable_start
	    || read_bytes(addr - sizeof b, b, sizeof b) < 0)
		return 0;
#if defined(__x86_64__)
	if (b[3] == 0xE8)
		return 1; /* call rel32 */
	for (int k = 2; k <= 7; k++) /* call r/m64: FF /2 and its operand */
		if (b[8 - k] == 0xFF && ((b[9 - k] >> 3) & 7) == 2)
			return 1;
	return 0;
#elif defined(__aarch64__)
	uint32_t insn;

	memcpy(&insn, b + 4, sizeof insn);
	return (insn & 0xFC000000u) == 0x94000000u /* bl */ || (insn & 0xFFFFFC1Fu) == 0xD63F0000u /* blr */;
#else
	return 1;
#endif
}

/* A frame record at fp: the caller's frame pointer, further up the stack,
 * and a return address beside it. */
static int frame_at(uintptr_t fp, uintptr_t *next, uintptr_t *ret)
{
	if (fp % sizeof fp || read_word(fp, next) < 0 || read_word(fp + sizeof fp, ret) < 0)
		return 0;
	*ret = code_address(*ret);
	return *ret && *next > fp && *next - fp <= MAX_FRAME_BYTES;
}

/* Appends the return addresses up the chain of frame records from fp. */
static void follow_chain(uintptr_t fp, void **frames, int *n, int max)
{
	uintptr_t next, ret;

	while (*n < max && frame_at(fp, &next, &ret)) {
		frames[(*n)++] = (void *)ret;
		fp = next;
	}
}

/* The first stack slot from `from` up that holds a return address into
 * eifs (with the address in *ret), or 0. */
static uintptr_t find_return_into_eifs(uintptr_t from, uintptr_t *ret)
{
	for (uintptr_t at = from; at - from < SCAN_BYTES; at += sizeof at)
		if (read_word(at, ret) == 0 && returns_into_eifs(code_address(*ret))) {
			*ret = code_address(*ret);
			return at;
		}
	return 0;
}

/* The first frame record from `from` up whose return address is into
 * eifs, or 0. */
static uintptr_t find_frame_record(uintptr_t from)
{
	uintptr_t next, ret;

	for (uintptr_t at = from; at - from < SCAN_BYTES; at += sizeof at)
		if (frame_at(at, &next, &ret) && returns_into_eifs(ret))
			return at;
	return 0;
}

/* Until backtrace() is warmed up: the return addresses up the chain of
 * frame pointers (eifs is built with them), from the interrupted pc.  In
 * a library, which may use the frame pointer for other things, the report
 * goes on from the call into it that eifs made (the innermost return
 * address into eifs on the stack) and the first frame record above it. */
static int walk_frames(const void *context, void **frames, int max)
{
	uintptr_t pc, sp, fp, at, ret, next;
	int n = 0;

	if (interrupted_at(context, &pc, &sp, &fp) < 0)
		return 0;
	frames[n++] = (void *)pc;
	if (!in_eifs(pc)) {
		at = find_return_into_eifs(sp, &ret);
		if (!at)
			return n;
		frames[n++] = (void *)ret;
		/* a library function that keeps the register as it found it
		 * (memcpy, say) leaves it pointing at eifs' frame record */
		if (!(fp > at && fp - at <= MAX_FRAME_BYTES && frame_at(fp, &next, &ret)))
			fp = find_frame_record(at + sizeof at);
	} else if (fp < sp || fp - sp > MAX_FRAME_BYTES) {
		return n; /* not a pointer into this stack */
	}
	follow_chain(fp, frames, &n, max);
	return n;
}

static void put_hex(uintptr_t v)
{
	char b[2 + 2 * sizeof v + 1];
	size_t i = sizeof b - 1;

	b[i] = '\0';
	do
		b[--i] = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	b[--i] = 'x';
	b[--i] = '0';
	put(b + i);
}

/* The frames in the program as eifs(+OFFSET)[ADDRESS]; the others,
 * in shared libraries, by backtrace_symbols_fd() once it is warmed up
 * (it names them, but takes the loader's lock), else as [ADDRESS].  A
 * static program has no symbols backtrace_symbols_fd() could show. */
static void put_frames(void *const *frames, int n, int warm)
{
	for (int i = 0; i < n; i++) {
		uintptr_t a = (uintptr_t)frames[i];

		if (!in_executable(a) && warm) {
			backtrace_symbols_fd((void *const *)&frames[i], 1, STDERR_FILENO);
			continue;
		}
		if (in_executable(a)) {
			put("eifs(+");
			put_hex(a - (uintptr_t)__executable_start);
			put(")");
		}
		put("[");
		put_hex(a);
		put("]\n");
	}
	if (reads_denied)
		put("(no more frames: this process may not read its own stack, process_vm_readv)\n");
}

/* Only async-signal-safe calls (backtrace() once its library is loaded). */
static void on_fatal(int sig, siginfo_t *info, void *context)
{
	void *frames[MAX_FRAMES];
	const char *name = sigabbrev_np(sig);

	(void)info;
	/* first: a seccomp filter may kill the process at the reading of the
	 * stack */
	put("eifs: fatal signal SIG");
	put(name ? name : "?");
	put("; the mount is gone.  Backtrace (addr2line -e eifs OFFSET):\n");
	if (log_to_syslog_active()) { /* before the walk, which may fault */
		char line[64] = "fatal signal SIG";

		strncat(line, name ? name : "?", 16);
		strcat(line, "; the mount is gone");
		log_crash_line(line);
	}
	if (__atomic_load_n(&warmed, __ATOMIC_ACQUIRE))
		put_frames(frames, backtrace(frames, MAX_FRAMES), 1);
	else
		put_frames(frames, walk_frames(context, frames, MAX_FRAMES), 0);
	signal(sig, SIG_DFL);
	raise(sig);
}

void crash_report_warm_up(void)
{
	void *frame[1];

	/* glibc does not remember a failed load: the handler would try again */
	if (backtrace(frame, 1) > 0)
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
