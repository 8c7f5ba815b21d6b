#define _GNU_SOURCE
#include "fs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "log.h"
#include "views.h"

/* Nodes never move or die while mounted, so a node's address is its id. */
static struct tree_node *node_of(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fuse_req_userdata(req);

	return ino == FUSE_ROOT_ID ? tree_root(fs->tree) : (struct tree_node *)(uintptr_t)ino;
}

static fuse_ino_t id_of(struct fs *fs, struct tree_node *n)
{
	return n == tree_root(fs->tree) ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

/* A view's size is exact before its first read: from the source's header,
 * or by converting it now (small text views). */
static void settle_size(struct fs *fs, struct tree_node *n)
{
	if (n->kind == NODE_VIEW)
		view_cache_size(fs->views, fs->tree, n);
}

static void fill_entry(struct fs *fs, struct tree_node *n, struct fuse_entry_param *e)
{
	settle_size(fs, n);
	memset(e, 0, sizeof *e);
	e->ino = id_of(fs, n);
	e->generation = 1;
	e->attr_timeout = fs->timeout;
	e->entry_timeout = fs->timeout;
	tree_stat(fs->tree, n, &e->attr);
}

static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct fs *fs = userdata;

	/* The tree never changes: let the kernel skip open/opendir and keep
	 * page and directory caches (its defaults once open says ENOSYS). */
	if ((conn->capable & FUSE_CAP_NO_OPEN_SUPPORT) && (conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT)) {
		conn->want |= FUSE_CAP_NO_OPEN_SUPPORT | FUSE_CAP_NO_OPENDIR_SUPPORT;
		fs->no_open = 1;
	}
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO; /* always plus: saves a lookup per name */
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs *fs = fuse_req_userdata(req);
	struct fuse_entry_param e;
	int err = 0;
	struct tree_node *n = tree_lookup(fs->tree, node_of(req, parent), name, &err);

	if (!n) {
		if (err != ENOENT) {
			fuse_reply_err(req, err);
			return;
		}
		/* a negative entry: the kernel may remember that it is absent */
		memset(&e, 0, sizeof e);
		e.entry_timeout = fs->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	fill_entry(fs, n, &e);
	fuse_reply_entry(req, &e);
}

static void fs_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct tree_node *n = node_of(req, ino);
	struct stat st;

	settle_size(fs, n);
	tree_stat(fs->tree, n, &st);
	fuse_reply_attr(req, &st, fs->timeout);
}

static void fs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct tree_node *n = node_of(req, ino);

	if (fs->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (tree_is_dir(n)) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void fs_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);

	if (fs->no_open) {
		fuse_reply_err(req, ENOSYS);
		return;
	}
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static int view_known_cheaply(struct fs *fs, struct tree_node *n)
{
	return __atomic_load_n(&n->size, __ATOMIC_ACQUIRE) != TREE_SIZE_UNKNOWN
	       || view_size_from_header(fs->tree, n) == 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, int plus)
{
	struct fs *fs = fuse_req_userdata(req);
	const struct tree_dir *d;
	char *buf;
	size_t used = 0;
	int rc = tree_children(fs->tree, node_of(req, ino), &d);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (uint32_t i = (uint32_t)off; i < d->count; i++) {
		struct tree_node *n = &d->child[i];
		size_t len;

		if (plus && n->kind == NODE_VIEW && !view_known_cheaply(fs, n)) {
			/* no attributes: a listing must not convert; a stat will */
			struct fuse_entry_param e = { .attr = { .st_ino = n->ino, .st_mode = n->mode } };

			len = fuse_add_direntry_plus(req, buf + used, size - used, n->name, &e, i + 1);
		} else if (plus) {
			struct fuse_entry_param e;

			fill_entry(fs, n, &e);
			len = fuse_add_direntry_plus(req, buf + used, size - used, n->name, &e, i + 1);
		} else {
			struct stat st = { .st_ino = n->ino, .st_mode = n->mode };

			len = fuse_add_direntry(req, buf + used, size - used, n->name, &st, i + 1);
		}
		if (len > size - used)
			break;
		used += len;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void fs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, 0);
}

static void fs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			   struct fuse_file_info *fi)
{
	do_readdir(req, ino, size, off, 1);
}

static void read_view(fuse_req_t req, struct fs *fs, struct tree_node *n, size_t size, off_t off)
{
	int err = 0;
	GBytes *bytes = view_cache_get(fs->views, fs->tree, n, &err);
	gsize len;
	const char *data;

	if (!bytes) {
		fuse_reply_err(req, err ? err : EIO);
		return;
	}
	data = g_bytes_get_data(bytes, &len);
	if ((uint64_t)off >= len)
		size = 0;
	else if (size > len - (uint64_t)off)
		size = len - (size_t)off;
	fuse_reply_buf(req, size ? data + off : NULL, size);
	g_bytes_unref(bytes);
}

static void read_file(fuse_req_t req, struct fs *fs, struct tree_node *n, size_t size, off_t off)
{
	struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
	uint64_t pos;
	int fd, rc = tree_data(fs->tree, n, (uint64_t)off, &buf.buf[0].size, &fd, &pos);

	if (rc < 0) {
		fuse_reply_err(req, -rc);
		return;
	}
	/* straight from the archive file: spliced when the kernel allows */
	buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	buf.buf[0].fd = fd;
	buf.buf[0].pos = (off_t)pos;
	fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
}

static void fs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs *fs = fuse_req_userdata(req);
	struct tree_node *n = node_of(req, ino);

	if (n->kind == NODE_VIEW)
		read_view(req, fs, n, size, off);
	else
		read_file(req, fs, n, size, off);
}

static void fs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct fs *fs = fuse_req_userdata(req);
	struct statvfs sv = {
		.f_bsize = 4096,
		.f_frsize = 4096,
		.f_files = tree_node_count(fs->tree),
		.f_namemax = 255,
		.f_flag = ST_RDONLY,
	};

	fuse_reply_statfs(req, &sv);
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = fs_init,
	.lookup = fs_lookup,
	.getattr = fs_getattr,
	.open = fs_open,
	.opendir = fs_opendir,
	.readdir = fs_readdir,
	.readdirplus = fs_readdirplus,
	.read = fs_read,
	.statfs = fs_statfs,
};
