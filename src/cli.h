/* The eifs commands; each takes the arguments after its own name and
 * returns the process exit status. */
#ifndef EIFS_CLI_H
#define EIFS_CLI_H

#include "tree.h"

enum exit_status {
	EXIT_OK = 0,
	EXIT_PROBLEMS = 1,  /* a command ran and found or hit problems */
	EXIT_USAGE = 64,    /* bad command line (sysexits' EX_USAGE) */
	EXIT_NO_SOURCE = 66,/* SRC could not be opened or parsed (EX_NOINPUT) */
	EXIT_MOUNT = 71,    /* the mount itself failed (EX_OSERR) */
};

int cmd_mount(int argc, char **argv, int helper_form);
int cmd_umount(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_extract(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_put(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_compact(int argc, char **argv);

/* Opens ARCHIVE[/PATH] (or FOLDER[/PATH]): the longest prefix that exists
 * on disk is opened, the rest is looked up inside.  Returns NULL after
 * printing why. */
struct tree_node *cli_open_path(const char *arg, struct tree **tree);

/* Whether the file at path starts with the RES magic. */
int cli_has_res_magic(const char *path);

void cli_usage(FILE *to);

/* Raises the soft limit on open files to the hard one: a tree holds every
 * archive of a folder open (and plain files once read), and a game folder
 * may have more than the usual soft limit of 1024. */
void cli_raise_fd_limit(void);

/* A write to standard output failed with err: the command's status
 * becomes 1 and the reason is told once, after the command (main.c also
 * finds a failure of the last flush by itself). */
void cli_stdout_failed(int err);

#endif
