/* The FUSE low-level glue: maps node ids to tree nodes, nothing else. */
#ifndef EIFS_FS_H
#define EIFS_FS_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "tree.h"
#include "view_cache.h"

struct fs {
	struct tree *tree;
	double timeout;  /* kernel cache time for entries and attributes, s */
	int no_open;     /* the kernel opens files and folders without asking */
	struct view_cache *views;
};

extern const struct fuse_lowlevel_ops fs_ops;

#endif
