/* Whole reads and writes of a file descriptor: the loops every caller of
 * pread(2) and write(2) needs (short counts, EINTR).  Each returns 0 or a
 * negative errno; a read that meets the end of the file, or a write that
 * moves nothing, is -EIO.  No FUSE, no globals. */
#ifndef EIFS_IO_H
#define EIFS_IO_H

#include <stddef.h>
#include <stdint.h>

int io_pread_all(int fd, void *buf, size_t len, uint64_t off);
/* io_pread_all for a large range read once (an archive's table): when the
 * page cache lacks part of it, that part is asked of the disk at once,
 * not in readahead's growing steps, each waited for. */
int io_pread_all_ahead(int fd, void *buf, size_t len, uint64_t off);
int io_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);
int io_write_all(int fd, const void *buf, size_t len);

#endif
