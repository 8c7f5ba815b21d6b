/* Whole reads and writes: see io.h. */
#define _GNU_SOURCE
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

int io_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

/* What of [off, off+len) the page cache holds from off on, copied without
 * waiting for the disk: 0 when nothing (or RWF_NOWAIT is not known). */
static size_t pread_cached(int fd, void *buf, size_t len, uint64_t off)
{
	struct iovec v = { buf, len };
	ssize_t n;

	do
		n = preadv2(fd, &v, 1, (off_t)off, RWF_NOWAIT);
	while (n < 0 && errno == EINTR);
	return n > 0 ? (size_t)n : 0;
}

int io_pread_all_ahead(int fd, void *buf, size_t len, uint64_t off)
{
	/* the usual case, cached: one call, and no walk of the cache that
	 * the advice would cost */
	size_t done = pread_cached(fd, buf, len, off);

	if (done < len)
		posix_fadvise(fd, (off_t)(off + done), (off_t)(len - done), POSIX_FADV_WILLNEED);
	return io_pread_all(fd, (char *)buf + done, len - done, off + done);
}

int io_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

int io_write_all(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}
