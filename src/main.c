#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "cli.h"

void cli_usage(FILE *to)
{
	fputs("Usage:\n"
	      "  eifs mount SRC MNT [-o OPTS] [-f] [-d] [-s]   mount a game folder or one archive\n"
	      "  eifs SRC MNT [-o OPTS]                        the same (mount.fuse3 / fstab form)\n"
	      "  eifs umount [-z] MNT                          unmount (-z: lazily)\n"
	      "  eifs ls [-l] [-R] ARCHIVE[/PATH]              list, through nested archives\n"
	      "  eifs cat ARCHIVE/PATH...                      write entries to standard output\n"
	      "  eifs extract ARCHIVE [DIR]                    unpack the entries of one archive\n"
	      "  eifs check ARCHIVE                            validate bounds and hash chains\n"
	      "  eifs convert [--level N] FILE|ARCHIVE/PATH [OUT|-]\n"
	      "                                                write a converted view (x.png of x.mmp...)\n"
	      "  eifs pack [--dedup] [--no-align] [--time T] DIR OUT.res\n"
	      "                                                build an archive as the game's tools do\n"
	      "  eifs put [--time T] ARCHIVE/PATH [FILE|-]     create or replace an entry, in place\n"
	      "  eifs rm ARCHIVE/PATH                          delete an entry, in place\n"
	      "  eifs compact ARCHIVE                          reclaim the space replaced data left\n"
	      "  eifs --help | --version\n"
	      "See eifs(1).\n", to);
}

void cli_raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The first write error on standard output, told once at the end. */
static int stdout_errno;

void cli_stdout_failed(int err)
{
	if (!stdout_errno)
		stdout_errno = err ? err : EIO;
}

/* A listing cut short by a full disk or a closed pipe must not look
 * complete to a script: the status says it, and standard error why. */
static int finish_stdout(int status)
{
	errno = 0;
	if (fflush(stdout) != 0)
		cli_stdout_failed(errno);
	else if (ferror(stdout))
		cli_stdout_failed(EIO); /* the failed write's errno is gone */
	if (!stdout_errno)
		return status;
	fprintf(stderr, "eifs: standard output: %s\n", strerror(stdout_errno));
	return status == EXIT_OK ? EXIT_PROBLEMS : status;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(int, char **);
	} commands[] = {
		{ "umount", cmd_umount }, { "ls", cmd_ls }, { "cat", cmd_cat },
		{ "extract", cmd_extract }, { "check", cmd_check }, { "pack", cmd_pack },
		{ "convert", cmd_convert },
		{ "put", cmd_put }, { "rm", cmd_rm }, { "compact", cmd_compact },
	};

	if (argc < 2) {
		cli_usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		cli_usage(stdout);
		return finish_stdout(EXIT_OK);
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("eifs %s\n", PACKAGE_VERSION);
		return finish_stdout(EXIT_OK);
	}
	if (!strcmp(argv[1], "mount"))
		return cmd_mount(argc - 2, argv + 2, 0);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name)) {
			cli_raise_fd_limit(); /* the offline commands open trees too */
			return finish_stdout(commands[i].run(argc - 2, argv + 2));
		}
	if (argv[1][0] != '-' && argc >= 3)
		return cmd_mount(argc - 1, argv + 1, 1);
	fprintf(stderr, "eifs: unknown command '%s'\n", argv[1]);
	cli_usage(stderr);
	return EXIT_USAGE;
}
