/* Contents written through the mount (src/edit.c): when a saved INI view
 * keeps showing its text as written ("sticky"). */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <glib.h>

#include "edit.h"
#include "helpers.h"

static const struct identity as_saved = { .size = 40, .offset = 7, .mtime = 100, .kind = 1, .epoch = 3 };

/* An edit whose text "a=1 ; note" was written and saved; the save left its
 * source with as_saved and these bytes. */
static struct edit *saved_edit(const char *reg_bytes, int armed)
{
	struct edit *e = edit_new(50);
	struct edit_snapshot s;
	struct edit_digest d;

	cr_assert_not_null(e);
	cr_assert_eq(edit_write(e, "a=1 ; note", 10, 0), 0);
	cr_assert_eq(edit_snapshot_begin(e, &s, EDIT_DATA_UNSAVED), 0, "a written version is to be saved");
	edit_digest_of(&d, reg_bytes, strlen(reg_bytes));
	edit_saved(e, &s, armed ? &as_saved : NULL, armed ? &d : NULL);
	edit_snapshot_end(e, &s);
	return e;
}

static struct edit_digest digest(const char *bytes)
{
	struct edit_digest d;

	edit_digest_of(&d, bytes, strlen(bytes));
	return d;
}

Test(edit, the_text_shows_while_the_source_keeps_its_identity)
{
	struct edit *e = saved_edit("REG", 1);
	struct identity moved = as_saved;

	cr_assert_eq(edit_shows(e, &as_saved), 1);
	cr_assert_not(edit_idle(e), "the text as written exists nowhere else");
	moved.epoch = 4;
	cr_assert_eq(edit_shows(e, &moved), EDIT_ASK, "a new identity: only the bytes can tell");
	cr_assert_eq(edit_shows(e, NULL), 0, "the source is gone");
	edit_unref(e);
}

Test(edit, the_same_bytes_under_a_new_identity_keep_the_text)
{
	struct edit *e = saved_edit("REG", 1);
	struct identity moved = as_saved;
	struct edit_digest same = digest("REG");
	struct stat st;

	moved.epoch = 9;
	moved.mtime = 200;
	cr_assert_eq(edit_shows_digest(e, &moved, &same), 1);
	cr_assert_eq(edit_shows(e, &moved), 1, "the text now stays for the new identity without asking");
	edit_stat(e, &st);
	cr_assert_eq(st.st_mtime, 200, "with the source's time");
	edit_unref(e);
}

Test(edit, other_bytes_or_none_end_the_text)
{
	struct edit *e = saved_edit("REG", 1);
	struct identity moved = as_saved;
	struct edit_digest other = digest("REG changed");

	moved.epoch = 9;
	cr_assert_eq(edit_shows_digest(e, &moved, &other), 0);
	cr_assert(edit_idle(e), "nothing is kept: the REG is what there is");
	cr_assert_eq(edit_shows(e, &as_saved), 0, "not even back under the old identity");
	edit_unref(e);

	e = saved_edit("REG", 1);
	cr_assert_eq(edit_shows_digest(e, &moved, NULL), 0, "unreadable source: the text goes");
	cr_assert(edit_idle(e));
	edit_unref(e);
}

/* A new write ends the earlier save's text; a save whose source did not
 * hold what it wrote shows none. */
Test(edit, a_later_save_that_does_not_arm_shows_no_text)
{
	struct edit *e = saved_edit("REG", 1);
	struct edit_snapshot s;

	cr_assert_eq(edit_write(e, "a=2", 3, 0), 0);
	cr_assert_eq(edit_snapshot_begin(e, &s, EDIT_DATA_UNSAVED), 0);
	edit_saved(e, &s, NULL, NULL); /* the source did not hold what this save wrote */
	edit_snapshot_end(e, &s);
	cr_assert_eq(edit_shows(e, &as_saved), 0, "the first save's text is not shown for the second");
	cr_assert(edit_idle(e));
	edit_unref(e);
}

Test(edit, a_save_without_a_source_keeps_no_text)
{
	struct edit *e = saved_edit("REG", 0);

	cr_assert_eq(edit_shows(e, &as_saved), 0);
	cr_assert(edit_idle(e));
	edit_unref(e);
}

/* Cuts e to nothing, writes "ab" at 4 past the new end, and checks that
 * the contents are those 6 bytes, the gap zeros. */
static void truncate_then_write_past_the_end(struct edit *e)
{
	struct stat st;
	char got[6];

	cr_assert_eq(edit_truncate(e, 0), 0);
	cr_assert_eq(edit_write(e, "ab", 2, 4), 0, "a write past the end of a truncated file");
	edit_stat(e, &st);
	cr_assert_eq(st.st_size, 6);
	cr_assert_eq(edit_readable(e, 0, 100), 6, "reads end at the contents, not at the memory file");
	cr_assert_eq(edit_readable(e, 6, 100), 0);
	cr_assert_eq(pread(edit_fd(e), got, 6, 0), 6);
	cr_assert_eq(memcmp(got, "\0\0\0\0ab", 6), 0, "the gap reads as zeros");
}

/* Grows e (those 6 bytes) to 10 by truncate: the new bytes read zeros. */
static void grow_by_truncate_reads_zeros(struct edit *e)
{
	char got[8];

	cr_assert_eq(edit_truncate(e, 10), 0);
	cr_assert_eq(pread(edit_fd(e), got, 8, 2), 8);
	cr_assert_eq(memcmp(got, "\0\0ab\0\0\0\0", 8), 0, "a file grown by truncate reads zeros");
}

/* A truncate while a save holds a snapshot: the snapshot's bytes stay
 * readable (its map would fault with SIGBUS past a shorter memory file),
 * and the contents are what the truncate and later writes left. */
Test(edit, a_truncate_during_a_save_keeps_the_snapshot_readable)
{
	struct edit *e = edit_new(50);
	struct edit_snapshot s;
	char big[65536];
	size_t same = 0;

	cr_assert_not_null(e);
	edit_set_snapshot_copy_max(e, 0, 0); /* a map, as of a file over 64 MiB */
	memset(big, 'N', sizeof big);
	cr_assert_eq(edit_write(e, big, sizeof big, 0), 0);
	cr_assert_eq(edit_snapshot_begin(e, &s, EDIT_DATA_UNSAVED), 0);
	cr_assert(s.mapped);
	truncate_then_write_past_the_end(e);
	for (size_t i = 0; i < s.len; i++)
		same += s.data[i] == 'N' || s.data[i] == 0 || s.data[i] == 'a' || s.data[i] == 'b';
	cr_assert_eq(same, s.len, "every byte of the snapshot is readable");
	edit_saved(e, &s, NULL, NULL);
	edit_snapshot_end(e, &s);
	cr_assert_eq(lseek(edit_fd(e), 0, SEEK_END), 6, "the memory file is cut once no save maps it");
	grow_by_truncate_reads_zeros(e);
	edit_unref(e);
}

/* A truncate while a save holds a snapshot: the snapshot keeps the
 * version it copied, and the contents are what the truncate and later
 * writes left. */
Test(edit, a_truncate_during_a_save_leaves_the_snapshot_whole)
{
	struct edit *e = edit_new(50);
	struct edit_snapshot s;
	char big[65536];
	size_t same = 0;

	cr_assert_not_null(e);
	memset(big, 'N', sizeof big);
	cr_assert_eq(edit_write(e, big, sizeof big, 0), 0);
	cr_assert_eq(edit_snapshot_begin(e, &s, EDIT_DATA_UNSAVED), 0);
	truncate_then_write_past_the_end(e);
	cr_assert_eq(s.len, sizeof big);
	for (size_t i = 0; i < s.len; i++)
		same += s.data[i] == 'N';
	cr_assert_eq(same, s.len, "the snapshot is the version before the truncate");
	edit_saved(e, &s, NULL, NULL);
	edit_snapshot_end(e, &s);
	cr_assert_eq(lseek(edit_fd(e), 0, SEEK_END), 6);
	grow_by_truncate_reads_zeros(e);
	edit_unref(e);
}

/* A version saved already has data only when asked for (a temporary
 * renamed to a real name saves it); else the save lock is all it takes. */
Test(edit, a_saved_version_is_copied_only_when_asked)
{
	struct edit *e = saved_edit("REG", 0);
	struct edit_snapshot s;

	cr_assert_eq(edit_snapshot_begin(e, &s, EDIT_DATA_UNSAVED), 1);
	cr_assert_eq(s.len, 0, "no copy of a saved version for a save that stores nothing");
	edit_snapshot_end(e, &s);
	cr_assert_eq(edit_snapshot_begin(e, &s, EDIT_DATA_ALWAYS), 1);
	cr_assert_eq(s.len, 10);
	cr_assert_eq(memcmp(s.data, "a=1 ; note", 10), 0);
	edit_snapshot_end(e, &s);
	edit_unref(e);
}

/* A truncate that comes while a write is under way waits for it: it cut
 * the bytes the write had put (its size came after), and a save then read
 * short, or faulted past the end of a map. */
struct truncater {
	struct edit *e;
	int stop;
};

static void *write_over_and_over(void *p)
{
	struct truncater *t = p;
	static char block[65536];

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		cr_assert_eq(edit_write(t->e, block, sizeof block, 0), 0);
		sched_yield();
	}
	return NULL;
}

static void *truncate_over_and_over(void *p)
{
	struct truncater *t = p;

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		cr_assert_eq(edit_truncate(t->e, 0), 0);
		sched_yield();
	}
	return NULL;
}

Test(edit, a_truncate_waits_for_a_write_under_way)
{
	struct truncater t = { .e = edit_new(50) };
	pthread_t w, c;
	unsigned short_files = 0, snapshots = 0;
	gint64 end = g_get_monotonic_time() + 2 * G_USEC_PER_SEC;

	cr_assert_not_null(t.e);
	cr_assert_eq(pthread_create(&w, NULL, write_over_and_over, &t), 0);
	cr_assert_eq(pthread_create(&c, NULL, truncate_over_and_over, &t), 0);
	/* snapshots with bytes to copy, for 2 s at most */
	while (snapshots < 50000 && g_get_monotonic_time() < end) {
		struct edit_snapshot s;
		int rc = edit_snapshot_begin(t.e, &s, EDIT_DATA_UNSAVED);

		/* the copy reads short only when the memory file is */
		short_files += rc == -EIO || s.mapped;
		cr_assert(rc >= 0 || rc == -EIO, "%d", rc);
		snapshots += s.len > 0;
		if (rc == 0)
			edit_saved(t.e, &s, NULL, NULL);
		edit_snapshot_end(t.e, &s);
	}
	__atomic_store_n(&t.stop, 1, __ATOMIC_RELEASE);
	pthread_join(w, NULL);
	pthread_join(c, NULL);
	cr_assert_eq(short_files, 0, "%u of %u snapshots found the memory file shorter than the contents",
		     short_files, snapshots);
	cr_assert_gt(snapshots, 0, "no snapshot had bytes to copy");
	cr_log_info("%u snapshots with bytes", snapshots);
	edit_unref(t.e);
}

/* Over the copy limit (a test's here; else 64 MiB and twice the size
 * available), a snapshot maps the file: the data is all there. */
Test(edit, a_snapshot_over_the_copy_limit_maps_the_file)
{
	struct edit *e = edit_new(50);
	struct edit_snapshot s;

	cr_assert_not_null(e);
	cr_assert_eq(edit_write(e, "contents", 8, 0), 0);
	edit_set_snapshot_copy_max(e, 7, 0);
	cr_assert_eq(edit_snapshot_begin(e, &s, EDIT_DATA_UNSAVED), 0);
	cr_assert(s.mapped);
	cr_assert_eq(s.len, 8);
	cr_assert_eq(memcmp(s.data, "contents", 8), 0);
	edit_saved(e, &s, NULL, NULL);
	edit_snapshot_end(e, &s);
	edit_set_snapshot_copy_max(e, SIZE_MAX, 0);
	cr_assert_eq(edit_write(e, "C", 1, 0), 0);
	cr_assert_eq(edit_snapshot_begin(e, &s, EDIT_DATA_UNSAVED), 0);
	cr_assert_not(s.mapped, "a copy within the limit");
	cr_assert_eq(memcmp(s.data, "Contents", 8), 0);
	edit_saved(e, &s, NULL, NULL);
	edit_snapshot_end(e, &s);
	edit_unref(e);
}

/* A writer that rewrites the whole file, over and over, with one letter
 * then the next: every version is one letter throughout. */
struct rewriter {
	struct edit *e;
	size_t len;
	int stop;
	unsigned rounds;
};

static void *rewrite(void *p)
{
	struct rewriter *r = p;
	char *buf = g_malloc(r->len);

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		memset(buf, 'A' + (int)(__atomic_fetch_add(&r->rounds, 1, __ATOMIC_RELAXED) % 26), r->len);
		cr_assert_eq(edit_write(r->e, buf, r->len, 0), 0);
	}
	g_free(buf);
	return NULL;
}

static size_t other_letters(const struct edit_snapshot *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->len; i++)
		n += s->data[i] != s->data[0];
	return n;
}

/* Snapshots of a file being rewritten, each looked at twice, a while
 * apart: how many looks saw another version than the snapshot's. */
static void snapshot_while_rewritten(size_t len, unsigned snapshots_min, unsigned rounds_min)
{
	struct rewriter r = { .e = edit_new(50), .len = len };
	char *first = g_malloc(len);
	pthread_t t;
	unsigned mixed = 0, snapshots = 0;

	cr_assert_not_null(r.e);
	/* memory enough to copy, whatever this machine has */
	edit_set_snapshot_copy_max(r.e, SIZE_MAX, (uint64_t)len * 2);
	memset(first, 'Z', len);
	cr_assert_eq(edit_write(r.e, first, len, 0), 0);
	g_free(first);
	cr_assert_eq(pthread_create(&t, NULL, rewrite, &r), 0);
	/* counted: snapshots of a version to save, with bytes to look at */
	while (snapshots < snapshots_min || __atomic_load_n(&r.rounds, __ATOMIC_RELAXED) < rounds_min) {
		struct edit_snapshot s;
		int rc = edit_snapshot_begin(r.e, &s, EDIT_DATA_UNSAVED);

		cr_assert_geq(rc, 0);
		if (rc == 0) {
			unsigned char letter = s.data[0];

			snapshots++;
			cr_assert_eq(s.len, len);
			cr_assert_not(s.mapped, "a copy, as there is memory for it");
			mixed += other_letters(&s) != 0;
			usleep(200); /* while the writer goes on */
			mixed += other_letters(&s) != 0 || s.data[0] != letter;
			edit_saved(r.e, &s, NULL, NULL);
		}
		edit_snapshot_end(r.e, &s);
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	cr_assert_eq(mixed, 0, "%u looks of %u snapshots of %zu bytes saw another version (%u rewrites)", mixed,
		     snapshots, len, r.rounds);
	edit_unref(r.e);
}

/* With the memory file mapped, a save during such writes read letters of
 * two versions (the mix it could store until the next save), or saw its
 * letter change under it: 286 looks of 200 snapshots of 1 MiB. */
Test(edit, a_snapshot_is_one_version_while_writes_go_on)
{
	snapshot_while_rewritten(1 << 20, 200, 20);
}

/* Contents over 64 MiB are copied too, while the host has twice their
 * size available (said so here; mapped is asserted not set). */
Test(edit, a_snapshot_of_over_64_mib_is_one_version_too, .timeout = 120)
{
	snapshot_while_rewritten((64 << 20) + 4096, 4, 3);
}

/* Over 64 MiB, the host's memory decides: twice the size available, a
 * copy; less, a map of the live file. */
Test(edit, over_64_mib_a_copy_needs_twice_the_size_available)
{
	struct edit *e = edit_new(50);
	size_t len = (64 << 20) + 4096;
	char *contents = g_malloc0(len);
	struct edit_snapshot s;

	cr_assert_not_null(e);
	contents[len - 1] = 'z';
	cr_assert_eq(edit_write(e, contents, len, 0), 0);
	edit_set_snapshot_copy_max(e, SIZE_MAX, (uint64_t)len * 2 - 1);
	cr_assert_eq(edit_snapshot_begin(e, &s, EDIT_DATA_UNSAVED), 0);
	cr_assert(s.mapped, "a byte short of twice the size: mapped");
	cr_assert_eq(s.len, len);
	cr_assert_eq(s.data[len - 1], 'z');
	edit_snapshot_end(e, &s);
	edit_set_snapshot_copy_max(e, SIZE_MAX, (uint64_t)len * 2);
	cr_assert_eq(edit_snapshot_begin(e, &s, EDIT_DATA_UNSAVED), 0);
	cr_assert_not(s.mapped, "twice the size: a copy");
	cr_assert_eq(s.len, len);
	cr_assert_eq(memcmp(s.data, contents, len), 0);
	edit_snapshot_end(e, &s);
	g_free(contents);
	edit_unref(e);
}

/* A write that fails partway (here past the file size limit) leaves
 * bytes in the memory file past the contents' end: a truncate that grows
 * the file showed them, where it must show zeros. */
Test(edit, a_write_that_fails_partway_leaves_zeros_past_the_end)
{
	struct edit *e = edit_new(50);
	enum { LIMIT = 100000, LEN = 200000 };
	char *buf = g_malloc(LEN), *got = g_malloc(LEN);
	struct rlimit was, lim;
	struct stat st;
	size_t nonzero = 0;

	cr_assert_not_null(e);
	memset(buf, 'x', LEN);
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
	lim = was;
	lim.rlim_cur = LIMIT;
	signal(SIGXFSZ, SIG_IGN);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	cr_assert_eq(edit_write(e, buf, LEN, 0), -EFBIG);
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
	edit_stat(e, &st);
	cr_assert_eq(st.st_size, 0, "a failed write sets no size");
	cr_assert_eq(edit_truncate(e, LEN), 0);
	cr_assert_eq(pread(edit_fd(e), got, LEN, 0), LEN);
	for (size_t i = 0; i < LEN; i++)
		nonzero += got[i] != 0;
	cr_assert_eq(nonzero, 0, "%zu bytes of the failed write show", nonzero);
	g_free(buf);
	g_free(got);
	edit_unref(e);
}

/* A file of a test's tree of proc/ and sys/fs/cgroup/, its folders made. */
static void put(const char *root, const char *path, const char *text)
{
	char *file = g_build_filename(root, path, NULL), *dir = g_path_get_dirname(file);

	cr_assert_eq(g_mkdir_with_parents(dir, 0755), 0);
	cr_assert(g_file_set_contents(file, text, -1, NULL), "%s", file);
	g_free(dir);
	g_free(file);
}

/* What a copy may take: the host's MemAvailable, or less where a cgroup
 * (v2 or v1, its own or one above, the top one of a container too)
 * leaves less room under its memory limit. */
Test(edit, memory_available_is_the_least_of_the_host_and_its_cgroups)
{
	char *root = h_tmpdir();

	cr_assert_eq(edit_memory_available(root), 0, "nothing known: 0");
	put(root, "proc/meminfo", "MemTotal: 16000000 kB\nMemAvailable: 8388608 kB\n");
	cr_assert_eq(edit_memory_available(root), 8ULL << 30, "the host alone");

	/* v2: the process's cgroup has 1 GiB with 200 MiB used; the one
	 * above has no limit */
	put(root, "proc/self/cgroup", "0::/user.slice/game.scope\n");
	put(root, "sys/fs/cgroup/user.slice/memory.max", "max\n");
	put(root, "sys/fs/cgroup/user.slice/memory.current", "900000000\n");
	put(root, "sys/fs/cgroup/user.slice/game.scope/memory.max", "1073741824\n");
	put(root, "sys/fs/cgroup/user.slice/game.scope/memory.current", "209715200\n");
	cr_assert_eq(edit_memory_available(root), (1ULL << 30) - (200ULL << 20), "under the cgroup's limit");
	/* of the usage, inactive page cache is room */
	put(root, "sys/fs/cgroup/user.slice/game.scope/memory.stat", "anon 100\nactive_file 5\ninactive_file 104857600\n");
	cr_assert_eq(edit_memory_available(root), (1ULL << 30) - (100ULL << 20), "inactive page cache counts as room");
	/* the one above is closer to its limit */
	put(root, "sys/fs/cgroup/user.slice/memory.max", "1000000000\n");
	cr_assert_eq(edit_memory_available(root), 100000000, "under the parent's limit");
	/* a container's own top (a cgroup namespace): over its limit */
	put(root, "sys/fs/cgroup/memory.max", "500\n");
	put(root, "sys/fs/cgroup/memory.current", "600\n");
	cr_assert_eq(edit_memory_available(root), 0, "no room at the top");

	/* v1's memory controller, beside other controllers */
	put(root, "proc/self/cgroup", "4:memory:/box\n3:cpu,cpuacct:/box\n0::/\n");
	put(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	put(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "5000000000\n");
	put(root, "sys/fs/cgroup/memory/box/memory.limit_in_bytes", "3000000000\n");
	put(root, "sys/fs/cgroup/memory/box/memory.usage_in_bytes", "1300000000\n");
	put(root, "sys/fs/cgroup/memory/box/memory.stat", "inactive_file 1\ntotal_inactive_file 300000000\n");
	cr_assert_eq(edit_memory_available(root), 0, "v2's top (500 of 500) still counts: 0");
	put(root, "sys/fs/cgroup/memory.max", "max\n");
	cr_assert_eq(edit_memory_available(root), 2000000000, "v1: 2 GB left in box");

	cr_assert_gt(edit_memory_available("/"), 0, "this host says");
	h_tmpdir_remove(root);
}

/* Two large saves at once: the second copy must leave twice its size
 * besides the first, which it would otherwise count as available. */
Test(edit, a_copy_counts_the_copies_other_saves_hold)
{
	size_t len = (64 << 20) + 4096;
	struct edit *a = edit_new(50), *b = edit_new(51);
	char *contents = g_malloc0(len);
	struct edit_snapshot sa, sb;

	cr_assert(a && b);
	cr_assert_eq(edit_write(a, contents, len, 0), 0);
	cr_assert_eq(edit_write(b, contents, len, 0), 0);
	/* room for the first and twice the second, less a byte */
	edit_set_snapshot_copy_max(a, SIZE_MAX, (uint64_t)len * 3 - 1);
	edit_set_snapshot_copy_max(b, SIZE_MAX, (uint64_t)len * 3 - 1);
	cr_assert_eq(edit_snapshot_begin(a, &sa, EDIT_DATA_UNSAVED), 0);
	cr_assert_not(sa.mapped, "the first: a copy");
	cr_assert_eq(edit_snapshot_begin(b, &sb, EDIT_DATA_UNSAVED), 0);
	cr_assert(sb.mapped, "the second, while the first's copy is held: mapped");
	edit_snapshot_end(b, &sb);
	edit_snapshot_end(a, &sa);
	cr_assert_eq(edit_snapshot_begin(b, &sb, EDIT_DATA_UNSAVED), 0);
	cr_assert_not(sb.mapped, "once the first's copy went: a copy");
	cr_assert_eq(sb.len, len);
	edit_snapshot_end(b, &sb);
	g_free(contents);
	edit_unref(a);
	edit_unref(b);
}
