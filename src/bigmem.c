#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum {
	HEADER = 64,               /* keeps the caller's block aligned for any type */
};
#define PAGE ((size_t)4096)
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_FROM ((size_t)256 << 10) /* smaller blocks are not worth a huge page */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EIFS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(EIFS_ASAN)
/* every block from malloc: AddressSanitizer then guards its ends and
 * reports it when leaked, which it cannot do for mapped pages */
#define PAGES_FROM SIZE_MAX
#else
#define PAGES_FROM ((size_t)32 << 10)  /* smaller blocks come from malloc */
#endif

struct bigmem_header {
	void *map;                 /* the mapping the block lies in; NULL when from calloc */
	size_t map_len;
};

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

static void *from_calloc(size_t n)
{
	struct bigmem_header *h = calloc(1, HEADER + n);

	if (!h)
		return NULL;
	h->map = NULL;
	return (char *)h + HEADER;
}

/* Small pages (a block's, or those past its huge ones), faulted in by one
 * call rather than one fault each: the caller fills the block right away,
 * and in a virtual machine a fault costs 10-20 microseconds.  Kernels
 * before 5.14 lack the call: the faults come then. */
static void populate(char *start, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	madvise(start, len, MADV_POPULATE_WRITE);
#else
	(void)start;
	(void)len;
#endif
}

/* Maps want bytes, at a huge-page boundary when huge is not 0, and asks
 * for huge pages for the first huge bytes: the kernel backs only whole,
 * aligned huge pages.  The slack around an aligned block stays mapped:
 * never touched, it takes no memory, and unmapping it would take two
 * calls more (tens of microseconds each in a virtual machine). */
static void *from_mmap(size_t want, size_t huge)
{
	size_t slack = huge ? HUGE_PAGE : 0;
	char *raw = mmap(NULL, want + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *start;
	struct bigmem_header *h;

	if (raw == MAP_FAILED)
		return NULL;
	start = huge ? (char *)round_up((uintptr_t)raw, HUGE_PAGE) : raw;
	if (huge)
		madvise(start, huge, MADV_HUGEPAGE); /* a hint: without it the pages are small */
	if (want > huge)
		populate(start + huge, want - huge);
	h = (struct bigmem_header *)start;
	h->map = raw;
	h->map_len = want + slack;
	return start + HEADER;
}

static int size_of(size_t nmemb, size_t size, size_t *n)
{
	if (size && nmemb > (SIZE_MAX - HEADER - 2 * HUGE_PAGE) / size)
		return -1;
	*n = nmemb * size;
	return 0;
}

void *bigmem_alloc(size_t nmemb, size_t size)
{
	size_t n, whole, tail;

	if (size_of(nmemb, size, &n) < 0)
		return NULL;
	whole = (HEADER + n) & ~(HUGE_PAGE - 1);
	tail = HEADER + n - whole;
	/* worth its huge page: half used or more, or an eighth past whole
	 * huge ones (the rest of a 100 000-entry table), where faulting in
	 * the small pages takes longer than clearing a huge one */
	if (tail >= HUGE_PAGE / 2 || (whole && tail >= HUGE_PAGE / 8))
		whole += HUGE_PAGE;
	if (n < PAGES_FROM)
		return from_calloc(n);
	if (n < HUGE_FROM || whole == 0)
		return from_mmap(round_up(HEADER + n, PAGE), 0);
	return from_mmap(whole > HEADER + n ? whole : round_up(HEADER + n, PAGE), whole);
}

void *bigmem_alloc_brief(size_t nmemb, size_t size)
{
	size_t n, whole;

	if (size_of(nmemb, size, &n) < 0)
		return NULL;
	if (n < PAGES_FROM)
		return from_calloc(n);
	if (n < HUGE_FROM)
		return from_mmap(round_up(HEADER + n, PAGE), 0);
	whole = round_up(HEADER + n, HUGE_PAGE);
	return from_mmap(whole, whole);
}

void bigmem_free(void *p)
{
	struct bigmem_header *h;

	if (!p)
		return;
	h = (struct bigmem_header *)((char *)p - HEADER);
	if (h->map)
		munmap(h->map, h->map_len);
	else
		free(h);
}

void *bigmem_realloc(void *p, size_t old_nmemb, size_t nmemb, size_t size)
{
	void *q;

	if (!p)
		return bigmem_alloc(nmemb, size);
	q = bigmem_alloc(nmemb, size);
	if (!q)
		return NULL;
	memcpy(q, p, (old_nmemb < nmemb ? old_nmemb : nmemb) * size);
	bigmem_free(p);
	return q;
}
