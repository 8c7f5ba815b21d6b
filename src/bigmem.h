/* Memory for the large arrays of an archive's table.  A table of 100 000
 * entries is megabytes that the mount fills before it serves anything;
 * backed by huge pages where the kernel has them, that is a few page
 * faults instead of a thousand (which in a virtual machine are most of
 * the time the mount takes).  No globals. */
#ifndef EIFS_BIGMEM_H
#define EIFS_BIGMEM_H

#include <stddef.h>

/* Zeroed memory of n bytes, or NULL.  Free with bigmem_free only. */
void *bigmem_alloc(size_t n);
void bigmem_free(void *p);

#endif
