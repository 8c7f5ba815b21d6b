/* A file replaced as a whole: see replace.h. */
#define _GNU_SOURCE
#include "replace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/xattr.h>
#include <glib.h>

/* Attributes bound to the old inode and contents (IMA/EVM signatures):
 * wrong on the new file. */
static int bound_to_old(const char *name)
{
	return !strcmp(name, "security.ima") || !strcmp(name, "security.evm");
}

/* Every extended attribute of the file at path onto fd, where the caller
 * may set it and the file system hold it, as an owner is given: one that
 * cannot be (trusted.* for a user, a label the policy refuses) is left
 * out rather than fail the save.  A POSIX ACL is one
 * (system.posix_acl_access), so it goes after the mode, whose group bits
 * it sets. */
static void copy_xattrs(const char *path, int fd)
{
	ssize_t len = listxattr(path, NULL, 0);
	char *names, *value = NULL;

	if (len <= 0)
		return;
	names = g_malloc((size_t)len + 1);
	len = listxattr(path, names, (size_t)len); /* ERANGE: it grew meanwhile, left as is */
	for (char *name = names; len > 0 && name < names + len; name += strlen(name) + 1) {
		ssize_t n = bound_to_old(name) ? -1 : getxattr(path, name, NULL, 0);

		if (n >= 0) {
			value = g_realloc(value, (size_t)n + 1);
			n = getxattr(path, name, value, (size_t)n);
		}
		if (n >= 0)
			(void)fsetxattr(fd, name, value, (size_t)n, 0);
	}
	g_free(value);
	g_free(names);
}

/* The mode, owner and group of the file replaced, then its extended
 * attributes.  An owner the caller cannot give (not root, not the owner)
 * refuses the replacement: the owner, the game's user, could lose the
 * file.  A group it cannot give (not a member) stays the caller's. */
static int take_over(int fd, const char *path, const struct stat *old, mode_t mode, struct res_error *err)
{
	struct stat now;

	if (old && fchown(fd, old->st_uid, old->st_gid) < 0 && fchown(fd, (uid_t)-1, old->st_gid) < 0) {
		/* not in the group: the new file is the caller's group's */
	}
	if (old && (fstat(fd, &now) < 0 || now.st_uid != old->st_uid))
		return res_fail(err, EPERM, 0, "%s belongs to user %u, and a new file made by user %u cannot "
				"be given to it; left as it is (run eifs as that user, or as root)",
				path, (unsigned)old->st_uid, (unsigned)geteuid());
	if (fchmod(fd, old ? old->st_mode & 07777 : mode) < 0)
		return res_fail(err, errno, 0, "cannot set the mode of the new %s: %s", path, strerror(errno));
	if (old)
		copy_xattrs(path, fd);
	return 0;
}

/* Whether name is a temporary of a replacement of base: ".BASE.eifs-"
 * and the 6 (mkstemp's) or 8 (name_temporary's) letters or digits. */
static int is_temporary_of(const char *name, const char *base)
{
	size_t blen = strlen(base), tail;

	if (name[0] != '.' || strncmp(name + 1, base, blen) != 0 || strncmp(name + 1 + blen, ".eifs-", 6) != 0)
		return 0;
	name += 1 + blen + 6;
	tail = strlen(name);
	if (tail != 6 && tail != 8)
		return 0;
	for (; *name; name++)
		if (!g_ascii_isalnum(*name))
			return 0;
	return 1;
}

/* Removes the temporaries of earlier replacements of base that a crash
 * left in the folder (each a whole copy of the file).  One in use is
 * locked by its maker (open_temporary) and stays. */
static void remove_stale_temporaries(int dir_fd, const char *base)
{
	int fd = dup(dir_fd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat held, named;
		int t;

		if (!is_temporary_of(de->d_name, base))
			continue;
		t = openat(dir_fd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (t < 0)
			continue;
		/* the name must still lead to the file locked: unlink by name */
		if (flock(t, LOCK_EX | LOCK_NB) == 0 && fstat(t, &held) == 0 && S_ISREG(held.st_mode)
		    && fstatat(dir_fd, de->d_name, &named, AT_SYMLINK_NOFOLLOW) == 0
		    && held.st_dev == named.st_dev && held.st_ino == named.st_ino)
			unlinkat(dir_fd, de->d_name, 0);
		close(t);
	}
	closedir(d);
}

/* A temporary with no name, or a hidden one next to path's file, locked
 * while it is in use (remove_stale_temporaries). */
static int open_temporary(struct replacement *r)
{
	char *base = g_path_get_basename(r->path);

	/* naming it later goes through /proc (a chroot may lack it) */
	r->fd = access("/proc/self/fd", X_OK) == 0 ? openat(r->dir_fd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;
	r->unnamed = r->fd >= 0;
	if (r->fd < 0) { /* a file system without O_TMPFILE */
		char *dir = g_path_get_dirname(r->path);

		r->tmp = g_strdup_printf("%s/.%s.eifs-XXXXXX", dir, base);
		r->fd = g_mkstemp_full(r->tmp, O_RDWR | O_CLOEXEC, 0600);
		g_free(dir);
	}
	g_free(base);
	if (r->fd >= 0)
		while (flock(r->fd, LOCK_EX) < 0 && errno == EINTR)
			;
	return r->fd;
}

int replace_begin(struct replacement *r, const char *path, mode_t mode, struct res_error *err)
{
	char *real = realpath(path, NULL), *dir;
	struct stat old;
	int have_old;

	memset(r, 0, sizeof *r);
	r->fd = r->dir_fd = -1;
	/* a link leads to the file replaced; a name not there yet is itself */
	r->path = real ? g_strdup(real) : g_strdup(path);
	free(real);
	have_old = stat(r->path, &old) == 0;
	dir = g_path_get_dirname(r->path);
	r->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	g_free(dir);
	if (r->dir_fd >= 0) {
		char *base = g_path_get_basename(r->path);

		remove_stale_temporaries(r->dir_fd, base);
		g_free(base);
	}
	if (r->dir_fd < 0) {
		res_fail(err, errno, 0, "cannot open the folder of %s: %s", r->path, strerror(errno));
	} else if (open_temporary(r) < 0) {
		res_fail(err, errno, 0, "cannot make a temporary next to %s: %s", r->path, strerror(errno));
	} else if (take_over(r->fd, r->path, have_old ? &old : NULL, mode, err) < 0) {
		;
	} else {
		return 0;
	}
	replace_abort(r);
	return -1;
}

/* The unnamed temporary given a hidden name, to be renamed over the file
 * (linkat through /proc needs no privilege, unlike AT_EMPTY_PATH). */
static int name_temporary(struct replacement *r)
{
	char *dir = g_path_get_dirname(r->path), *base = g_path_get_basename(r->path), proc[64];
	int rc = -1;

	snprintf(proc, sizeof proc, "/proc/self/fd/%d", r->fd);
	for (int attempt = 0; attempt < 16 && rc < 0; attempt++) {
		g_free(r->tmp);
		r->tmp = g_strdup_printf("%s/.%s.eifs-%08x", dir, base, g_random_int());
		rc = linkat(AT_FDCWD, proc, AT_FDCWD, r->tmp, AT_SYMLINK_FOLLOW);
		if (rc < 0 && errno != EEXIST)
			break;
	}
	if (rc < 0) {
		int saved = errno;

		g_free(r->tmp);
		r->tmp = NULL;
		errno = saved;
	}
	g_free(dir);
	g_free(base);
	return rc;
}

int replace_commit_checked(struct replacement *r, replace_check_fn *check, void *ctx, struct res_error *err)
{
	int rc = 0;

	if (fsync(r->fd) < 0)
		rc = res_fail(err, errno, 0, "cannot write the new %s: %s", r->path, strerror(errno));
	if (rc == 0 && r->unnamed && name_temporary(r) < 0)
		rc = res_fail(err, errno, 0, "cannot name the new %s: %s", r->path, strerror(errno));
	if (rc == 0 && check)
		rc = check(ctx, err);
	if (rc == 0 && rename(r->tmp, r->path) < 0)
		rc = res_fail(err, errno, 0, "cannot rename the new %s over it: %s", r->path, strerror(errno));
	if (rc == 0) {
		g_free(r->tmp); /* in place now: nothing to take back */
		r->tmp = NULL;
	}
	if (rc == 0 && fsync(r->dir_fd) < 0)
		rc = res_fail(err, errno, 0, "the new %s is in place, but its folder cannot be flushed (%s): "
			      "a crash may bring the old one back", r->path, strerror(errno));
	replace_abort(r);
	return rc;
}

int replace_commit(struct replacement *r, struct res_error *err)
{
	return replace_commit_checked(r, NULL, NULL, err);
}

void replace_abort(struct replacement *r)
{
	if (r->tmp)
		unlink(r->tmp);
	if (r->fd >= 0)
		close(r->fd);
	if (r->dir_fd >= 0)
		close(r->dir_fd);
	g_free(r->tmp);
	g_free(r->path);
	memset(r, 0, sizeof *r);
	r->fd = r->dir_fd = -1;
}
