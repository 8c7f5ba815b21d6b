/* The allocator of large tables (src/bigmem.c) and the lazily started
 * worker thread (src/worker.c). */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <glib.h>

#include "bigmem.h"
#include "worker.h"

Test(bigmem, blocks_of_every_size_are_zeroed_aligned_and_whole)
{
	static const size_t sizes[] = { 0, 1, 4095, (32 << 10) - 1, 32 << 10, (100 << 10) + 7, 256 << 10, (256 << 10) + 1, (1 << 20) + 5, 2 << 20,
					(2 << 20) + (300 << 10), (5 << 20) + 3, 3 << 20 };

	for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
		size_t n = sizes[i];
		unsigned char *p = i % 2 ? bigmem_alloc(n, 1) : bigmem_alloc_brief(n, 1);

		cr_assert_not_null(p, "%zu bytes", n);
		cr_assert_eq((uintptr_t)p % 16, 0, "%zu bytes: aligned for any type", n);
		if (n == 0) {
			bigmem_free(p);
			continue;
		}
		for (size_t k = 0; k < n; k += 4093)
			cr_assert_eq(p[k], 0, "%zu bytes: byte %zu zeroed", n, k);
		cr_assert_eq(p[n - 1], 0);
		memset(p, 0xA5, n); /* every byte is the caller's */
		bigmem_free(p);
	}
	bigmem_free(NULL);
}

Test(bigmem, arrays_of_items)
{
	uint64_t *a = bigmem_alloc(300000, sizeof *a), *b = bigmem_alloc_brief(300000, sizeof *b);

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	for (size_t i = 0; i < 300000; i++)
		a[i] = b[i] = i;
	cr_assert_eq(a[299999] + b[299999], 2 * 299999);
	bigmem_free(a);
	bigmem_free(b);
}

/* Growing and shrinking across the sizes that come from malloc, from
 * small pages and from huge ones keeps the items and zeroes new room. */
Test(bigmem, realloc_keeps_the_items_and_zeroes_the_rest)
{
	static const size_t counts[] = { 1, 1000, 5000, 40000, 300000, 700, 3 };
	uint32_t *a = NULL;
	size_t have = 0;

	for (size_t i = 0; i < G_N_ELEMENTS(counts); i++) {
		size_t n = counts[i], kept = have < n ? have : n;

		a = bigmem_realloc(a, have, n, sizeof *a);
		cr_assert_not_null(a, "%zu items", n);
		for (size_t k = 0; k < kept; k++)
			cr_assert_eq(a[k], k * 7 + 1, "%zu -> %zu items: item %zu kept", have, n, k);
		for (size_t k = kept; k < n; k++)
			cr_assert_eq(a[k], 0, "%zu -> %zu items: item %zu zeroed", have, n, k);
		for (size_t k = 0; k < n; k++)
			a[k] = (uint32_t)(k * 7 + 1);
		have = n;
	}
	bigmem_free(a);
}

Test(bigmem, sizes_that_overflow_fail)
{
	cr_assert_null(bigmem_alloc(SIZE_MAX, 1));
	cr_assert_null(bigmem_alloc(SIZE_MAX - 100, 1));
	cr_assert_null(bigmem_alloc(SIZE_MAX / 8 + 1, 16), "the product wraps");
	cr_assert_null(bigmem_alloc_brief((SIZE_MAX >> 4) + 1, 24), "the product wraps");
	cr_assert_null(bigmem_alloc_brief(SIZE_MAX, SIZE_MAX));
	cr_assert_null(bigmem_realloc(NULL, 0, SIZE_MAX / 8 + 1, 16), "the product wraps");
}

static void add(void *item, void *ctx)
{
	*(int *)ctx += GPOINTER_TO_INT(item);
}

Test(worker, does_every_item_whether_or_not_it_ever_started)
{
	int sum = 0;
	struct worker *w = worker_new("test", add, &sum);

	cr_assert_eq(worker_wait(w, 10), 0, "nothing pushed: nothing to wait for");
	worker_free(w); /* never started */
	cr_assert_eq(sum, 0);

	w = worker_new("test", add, &sum);
	for (int i = 1; i <= 100; i++)
		worker_push(w, GINT_TO_POINTER(i));
	cr_assert_eq(worker_wait(w, 10000), 0);
	cr_assert_eq(sum, 5050);
	worker_push(w, GINT_TO_POINTER(1000));
	worker_free(w); /* does what is queued */
	cr_assert_eq(sum, 6050);
}

/* An item that blocks until the test lets it go (a notice the kernel
 * holds), and counts what was done and what was dropped. */
struct gate {
	GMutex lock;
	GCond open_cond;
	int open, started, done, dropped;
};

static struct gate *the_gate;

static void blocking(void *item, void *ctx)
{
	struct gate *g = ctx;

	(void)item;
	g_mutex_lock(&g->lock);
	g->started++;
	while (!g->open)
		g_cond_wait(&g->open_cond, &g->lock);
	g->done++;
	g_mutex_unlock(&g->lock);
}

static void dropped(void *item)
{
	(void)item;
	g_mutex_lock(&the_gate->lock);
	the_gate->dropped++;
	g_mutex_unlock(&the_gate->lock);
}

static void wait_started(struct gate *g)
{
	for (int i = 0; i < 5000; i++) {
		g_mutex_lock(&g->lock);
		int started = g->started;
		g_mutex_unlock(&g->lock);
		if (started)
			return;
		g_usleep(1000);
	}
	cr_assert_fail("the first item never started");
}

static void open_gate(struct gate *g)
{
	g_mutex_lock(&g->lock);
	g->open = 1;
	g_cond_broadcast(&g->open_cond);
	g_mutex_unlock(&g->lock);
}

Test(worker, discard_drops_what_is_queued_and_the_item_under_way_goes_on)
{
	static struct gate g;
	struct worker *w = worker_new("test", blocking, &g);

	the_gate = &g;
	for (int i = 0; i < 5; i++)
		worker_push(w, GINT_TO_POINTER(i));
	wait_started(&g);
	worker_discard(w, dropped);
	cr_assert_eq(g.dropped, 4, "the four not started are dropped");
	cr_assert_eq(worker_wait(w, 50), -ETIMEDOUT, "the one under way is still waited for");
	open_gate(&g);
	cr_assert_eq(worker_wait(w, 5000), 0, "done once it ends");
	worker_free(w);
	cr_assert_eq(g.done, 1, "only the item under way was done");
	cr_assert_eq(g.started, 1);
}

Test(worker, abandon_returns_at_once_and_the_thread_frees_the_worker_when_it_ends)
{
	static struct gate g;
	struct worker *w = worker_new("test", blocking, &g);

	the_gate = &g;
	worker_push(w, NULL);
	worker_push(w, NULL);
	wait_started(&g);
	worker_abandon(w, dropped); /* returns although the item is stuck */
	cr_assert_eq(g.dropped, 1, "the one not started is dropped");
	open_gate(&g);
	for (int i = 0; i < 5000; i++) { /* the thread ends by itself; LeakSanitizer sees w freed */
		g_mutex_lock(&g.lock);
		int done = g.done;
		g_mutex_unlock(&g.lock);
		if (done)
			break;
		g_usleep(1000);
	}
	cr_assert_eq(g.done, 1);
	g_usleep(50000); /* the thread's free after the item */
	cr_assert_eq(g.started, 1, "nothing after the abandon was started");

	w = worker_new("test", blocking, &g); /* never started: freed at once */
	worker_abandon(w, dropped);
}

/* Blocks of 32 to 256 KiB are cut from shared huge pages (the pool): many
 * of them, past several chunks and past the pool's limit, never overlap,
 * come zeroed, and are given back in any order; those taken after are
 * whole and zeroed too. */
Test(bigmem, mid_size_blocks_are_disjoint_zeroed_and_freed_in_any_order)
{
	enum { N = 200 };
	unsigned char *b[N];
	size_t len[N];

	bigmem_prepare();
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < N; i++) {
			len[i] = (32 << 10) + (size_t)(i * 977 % (200 << 10));
			b[i] = i % 3 ? bigmem_alloc(len[i], 1) : bigmem_alloc_brief(len[i], 1);
			cr_assert_not_null(b[i]);
			cr_assert_eq((uintptr_t)b[i] % 16, 0);
			for (size_t k = 0; k < len[i]; k += 4093)
				cr_assert_eq(b[i][k], 0, "round %d block %d byte %zu zeroed", round, i, k);
			cr_assert_eq(b[i][len[i] - 1], 0);
			memset(b[i], i + 1, len[i]);
		}
		for (int i = 0; i < N; i++) {
			cr_assert_eq(b[i][0], (unsigned char)(i + 1), "round %d block %d kept its bytes", round, i);
			cr_assert_eq(b[i][len[i] - 1], (unsigned char)(i + 1));
		}
		/* every other one first, then the rest backwards */
		for (int i = 0; i < N; i += 2)
			bigmem_free(b[i]);
		for (int i = N - 1; i > 0; i -= 2)
			bigmem_free(b[i]);
	}
}
