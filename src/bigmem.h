/* Memory for the large arrays of an archive's table.  A table of 100 000
 * entries is megabytes that the mount fills before it serves anything;
 * backed by huge pages where the kernel has them, that is a few page
 * faults instead of a thousand (which in a virtual machine are most of
 * the time the mount takes).  Blocks of 32 to 256 KiB (a directory's
 * children) are cut from shared huge pages: its only global state, the
 * pool of them, is locked. */
#ifndef EIFS_BIGMEM_H
#define EIFS_BIGMEM_H

#include <stddef.h>

/* Zeroed room for nmemb items of size bytes, or NULL (also when the size
 * overflows).  A huge page is used only where at least half of it is the
 * caller's, or an eighth past whole huge ones: a block kept for long
 * wastes at most as much as it holds.
 * Small pages (of blocks from 32 KiB, and past the huge ones) are faulted
 * in at once, as the caller fills the block right away; smaller blocks
 * come from malloc. */
void *bigmem_alloc(size_t nmemb, size_t size);

/* The same for a block freed soon after (a directory build's scratch,
 * members waiting for their directories): rounded up to whole huge pages,
 * whatever that wastes. */
void *bigmem_alloc_brief(size_t nmemb, size_t size);

/* A block of bigmem_alloc (or NULL) with room for nmemb items instead of
 * old_nmemb: the first items kept, any new ones zeroed.  NULL when out of
 * memory, and p is then left as it was. */
void *bigmem_realloc(void *p, size_t old_nmemb, size_t nmemb, size_t size);

/* Frees a block of any of them; NULL is ignored. */
void bigmem_free(void *p);

/* Faults in the pool's first huge page now, on a thread with time to
 * spare (the mount's, while SRC is read): the first directories built
 * then find it there. */
void bigmem_prepare(void);

#endif
