#include "bigmem.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

enum {
	HEADER = 64,               /* keeps the caller's block aligned for any type */
};
#define PAGE ((size_t)4096)
#define HUGE_PAGE ((size_t)2 << 20)
#define HUGE_FROM ((size_t)256 << 10) /* smaller blocks share huge pages (the pool) */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EIFS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(EIFS_ASAN)
/* every block from malloc: AddressSanitizer then guards its ends and
 * reports it when leaked, which it cannot do for mapped pages */
#define PAGES_FROM SIZE_MAX
#define POOL_USED 0
#else
#define PAGES_FROM ((size_t)32 << 10)  /* smaller blocks come from malloc */
#define POOL_USED 1
#endif

struct bigmem_header {
	void *map;                 /* the mapping the block lies in; NULL when from calloc */
	size_t map_len;            /* 0: map is the pool chunk the block lies in */
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

/* ---- the pool: blocks of 32 to 256 KiB on shared huge pages -----------
 * A directory of a thousand files needs some 88 KiB for its children.  On
 * pages of their own, each first write to one of them costs 4-12 us in a
 * virtual machine (a shadow page-table fault, even when populated): a
 * third of the time its build takes.  Cut from a huge page faulted in
 * once, they cost nothing.  Blocks are cut one after the other and never
 * reused; a chunk goes back when its last block is freed.  A block kept
 * for long keeps its whole chunk mapped, so at most POOL_CHUNKS are
 * mapped at once (8 MiB); while they are, blocks have pages of their
 * own.  Process-wide (the only state of this module), under a lock:
 * blocks are taken a few times per directory build. */

struct pool_chunk {
	void *map;                 /* the mapping, with the slack aligning it */
	size_t map_len;
	size_t used;               /* bytes cut, from the chunk's start */
	size_t live;               /* blocks not yet freed */
};

enum { POOL_CHUNKS = 4 };
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool_chunk *pool_current; /* where the next block is cut */
static unsigned pool_chunks;            /* mapped, pool_current among them */

static struct pool_chunk *pool_chunk_new(void)
{
	char *raw = mmap(NULL, 2 * HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct pool_chunk *c;

	if (raw == MAP_FAILED)
		return NULL;
	pool_chunks++;
	c = (struct pool_chunk *)round_up((uintptr_t)raw, HUGE_PAGE);
	madvise(c, HUGE_PAGE, MADV_HUGEPAGE);
	c->map = raw;
	c->map_len = 2 * HUGE_PAGE;
	c->used = round_up(sizeof *c, HEADER);
	return c;
}

/* Under pool_lock. */
static void pool_chunk_put(struct pool_chunk *c)
{
	if (c->live == 0 && c != pool_current) {
		munmap(c->map, c->map_len);
		pool_chunks--;
	}
}

static void *from_pool(size_t n)
{
	size_t need = round_up(HEADER + n, HEADER);
	struct bigmem_header *h = NULL;

	pthread_mutex_lock(&pool_lock);
	if ((!pool_current || pool_current->used + need > HUGE_PAGE) && pool_chunks < POOL_CHUNKS) {
		struct pool_chunk *old = pool_current, *c = pool_chunk_new();

		if (c) {
			pool_current = c;
			if (old)
				pool_chunk_put(old);
		}
	}
	if (pool_current && pool_current->used + need <= HUGE_PAGE) {
		h = (struct bigmem_header *)((char *)pool_current + pool_current->used);
		pool_current->used += need;
		pool_current->live++;
		h->map = pool_current;
		h->map_len = 0;
	}
	pthread_mutex_unlock(&pool_lock);
	if (!h)
		return from_mmap(round_up(HEADER + n, PAGE), 0);
	/* where huge pages are off, the small ones of the block at once */
	populate((char *)h, need);
	return (char *)h + HEADER;
}

static void pool_free(struct pool_chunk *c)
{
	pthread_mutex_lock(&pool_lock);
	c->live--;
	pool_chunk_put(c);
	pthread_mutex_unlock(&pool_lock);
}

void bigmem_prepare(void)
{
	if (!POOL_USED)
		return;
	pthread_mutex_lock(&pool_lock);
	if (!pool_current && pool_chunks < POOL_CHUNKS)
		pool_current = pool_chunk_new();
	if (pool_current) /* the fault brings the huge page, or one small one */
		*(volatile char *)((char *)pool_current + pool_current->used) = 0;
	pthread_mutex_unlock(&pool_lock);
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
	if (n < HUGE_FROM)
		return from_pool(n);
	if (whole == 0)
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
		return from_pool(n);
	whole = round_up(HEADER + n, HUGE_PAGE);
	return from_mmap(whole, whole);
}

void bigmem_free(void *p)
{
	struct bigmem_header *h;

	if (!p)
		return;
	h = (struct bigmem_header *)((char *)p - HEADER);
	if (h->map && h->map_len == 0)
		pool_free(h->map);
	else if (h->map)
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
