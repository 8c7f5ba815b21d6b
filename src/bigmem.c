#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

enum {
	HEADER = 64,               /* keeps the caller's block aligned for any type */
};
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_FROM ((size_t)256 << 10) /* smaller blocks are not worth a huge page */

struct bigmem_header {
	size_t mapped;             /* bytes mapped; 0 when from calloc */
};

static void *from_calloc(size_t n)
{
	struct bigmem_header *h = calloc(1, HEADER + n);

	if (!h)
		return NULL;
	h->mapped = 0;
	return (char *)h + HEADER;
}

/* Maps whole huge pages at a huge-page boundary: only then can the kernel
 * back them with huge pages. */
static void *from_mmap(size_t n)
{
	size_t want = (HEADER + n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	char *raw = mmap(NULL, want + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *start;
	size_t before;
	struct bigmem_header *h;

	if (raw == MAP_FAILED)
		return NULL;
	start = (char *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	before = (size_t)(start - raw);
	if (before)
		munmap(raw, before);
	munmap(start + want, HUGE_PAGE - before);
	madvise(start, want, MADV_HUGEPAGE); /* a hint: without it the pages are small */
	h = (struct bigmem_header *)start;
	h->mapped = want;
	return start + HEADER;
}

void *bigmem_alloc(size_t n)
{
	if (n > SIZE_MAX - HEADER - 2 * HUGE_PAGE)
		return NULL;
	return n < HUGE_FROM ? from_calloc(n) : from_mmap(n);
}

void bigmem_free(void *p)
{
	struct bigmem_header *h;

	if (!p)
		return;
	h = (struct bigmem_header *)((char *)p - HEADER);
	if (h->mapped)
		munmap(h, h->mapped);
	else
		free(h);
}
