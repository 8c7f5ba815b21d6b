/* Everything the game needs of an archive, checked: bounds, chain links,
 * and that the game's hash lookup reaches every entry (FORMATS 1.4). */
#ifndef EIFS_RES_CHECK_H
#define EIFS_RES_CHECK_H

#include "res.h"

/* Called once per problem; offset is from the start of the archive. */
typedef void (*res_check_report)(void *ctx, uint64_t offset, const char *problem);

/* For every entry, what the game's lookup of its name finds (res_lookup),
 * in O(n log n) however long the chains are; -1 for an entry whose name is
 * outside the name block or has a negative hash sum.  The array is
 * malloc'ed; NULL without memory. */
int64_t *res_lookup_all(const struct res_table *t);

/* Returns the number of problems found in a table read from an archive of
 * archive_len bytes. */
unsigned res_check(const struct res_table *t, uint64_t archive_len,
		   res_check_report report, void *ctx);

#endif
