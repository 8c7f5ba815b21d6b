#!/usr/bin/env bash
# eifs against squashfuse_ll on the same trees; see bench/README.md.
#
#   sudo bench/run.sh                  full size (needs ~3.5 GiB free, root)
#   BENCH_SCALE=small bench/run.sh     quick smoke test
#
# Environment: BENCH_DIR (work dir, default bench/out), BENCH_RUNS (default 5),
# BENCH_MOUNT_REPS (mounts per run on the warm mount line, default 5),
# BENCH_FILL_REPS (cache fills per run on the warm dd line, default 3),
# BENCH_SCALE (full|small), BENCH_REBUILD=1 (regenerate everything),
# EIFS (binary, default src/eifs), EIFS_MOUNT_OPTS, SQFS_MOUNT_OPTS (extra
# arguments for the two mount commands, empty by default).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=$(dirname "$here")
EIFS=${EIFS:-$top/src/eifs}
RUNS=${BENCH_RUNS:-5}
MOUNT_REPS=${BENCH_MOUNT_REPS:-5}
FILL_REPS=${BENCH_FILL_REPS:-3}
SCALE=${BENCH_SCALE:-full}
REBUILD=${BENCH_REBUILD:-0}
read -r -a eifs_opts <<<"${EIFS_MOUNT_OPTS:-}"
read -r -a sqfs_opts <<<"${SQFS_MOUNT_OPTS:-}"

STAMP_TIME=1000000000      # 2001-09-09: every entry gets this time (both formats)
SEED=20240601              # generator seed; change it and the trees are regenerated
GEN_VERSION=1              # bump when the generator below changes
READY_TIMEOUT=30           # seconds a mount may take before we give up

say()  { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
die()  { printf 'bench: error: %s\n' "$*" >&2; exit 1; }
skip() { printf 'bench: SKIPPED: %s\n' "$*" >&2; exit 77; }

# ---------------------------------------------------------------- settings
case $SCALE in
full)  N_SMALL=10000; BIG_MIB=1024; N_MANY=100000 ;;
small) N_SMALL=1000;  BIG_MIB=64;   N_MANY=10000 ;;
*) die "BENCH_SCALE must be 'full' or 'small', not '$SCALE'" ;;
esac
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer"
[[ $MOUNT_REPS =~ ^[1-9][0-9]*$ ]] || die "BENCH_MOUNT_REPS must be a positive integer"
[[ $FILL_REPS =~ ^[1-9][0-9]*$ ]] || die "BENCH_FILL_REPS must be a positive integer"
SMALL_DIRS=10                          # small files spread over 10 sub-directories
MANY_PER_DIR=1000                      # many: 1000 tiny files per sub-directory
MANY_DIRS=$(( N_MANY / MANY_PER_DIR ))
BIG_BYTES=$(( BIG_MIB * 1048576 ))
MOUNT_TARGET_MS=50                     # absolute targets, checked at full scale only
RSS_TARGET_MB=32

# ---------------------------------------------------------------- prerequisites
(( EUID == 0 )) || skip "must run as root: cold runs write /proc/sys/vm/drop_caches (try: sudo $0)"
for t in squashfuse_ll mksquashfs fusermount3; do
	command -v "$t" >/dev/null || skip "$t not found (apt-get install squashfuse squashfs-tools fuse3)"
done
for t in perl find xargs cmp dd df awk sort pgrep; do
	command -v "$t" >/dev/null || skip "$t not found"
done
[[ -x $EIFS ]] || die "$EIFS is not built (run make first, or set EIFS=...)"
[[ -c /dev/fuse ]] || skip "/dev/fuse is missing"
[[ -w /proc/sys/vm/drop_caches ]] || skip "/proc/sys/vm/drop_caches is not writable (container without it?)"
[[ -n ${EPOCHREALTIME:-} ]] || die "bash 5 or later is needed (EPOCHREALTIME)"

BENCH_DIR=${BENCH_DIR:-$here/out}
mkdir -p "$BENCH_DIR"
BENCH_DIR=$(cd "$BENCH_DIR" && pwd -P)
[[ $BENCH_DIR != *[[:space:]]* ]] || die "BENCH_DIR must not contain white space: $BENCH_DIR"
W=$BENCH_DIR/$SCALE                    # one work dir per scale, so both can coexist
mkdir -p "$W/mnt"
if [[ $SCALE == full ]]; then RESULTS=$BENCH_DIR/results.md; else RESULTS=$BENCH_DIR/results-$SCALE.md; fi

# ---------------------------------------------------------------- mounts and cleanup
# The issue this benchmark answers (#2) is about the read-only mount, as
# squashfuse_ll is read-only: "eifs" is `eifs mount -o ro`, and its lines
# carry the targets.  The writable mount, the default since write-back,
# runs beside it in the same runs (eirw): its lines are information.  It
# must see every open and close (a write may follow, another program may
# change the archive), so a file read again costs it an open and a
# release (squashfuse_ll: a getattr as well), where -o ro gets none.  eifs -o spin=0 (writable, its
# reader sleeps at once after each answer): one more line, on "small".
KINDS=(eifs eirw sqfs)
SPIN0_KINDS=(ei0 sqfs)
declare -A KIND_NAME=([eifs]="eifs -o ro" [eirw]="eifs (writable)" [sqfs]=squashfuse_ll [ei0]="eifs -o spin=0")
TREES=(small big many)
ALL_MNTS=("$W/mnt/ei0-small")
for k in "${KINDS[@]}"; do for t in "${TREES[@]}"; do ALL_MNTS+=("$W/mnt/$k-$t"); done; done

is_mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts; }

proc_state() { # PID -> one-letter state, empty when gone
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	s=${s##*) }
	printf '%s' "${s%% *}"
}

# PIDs of the live daemon of KIND serving MNT: the process is named eifs /
# squashfuse_ll and has MNT as one of its arguments (it keeps its argv).
daemon_pids() { # KIND MNT
	local kind=$1 mnt=$2 comm p a hit
	local -a argv
	if [[ $kind == ei* ]]; then comm=$(basename "$EIFS"); else comm=squashfuse_ll; fi
	for p in $(pgrep -x -- "${comm:0:15}" || true); do
		mapfile -d '' -t argv 2>/dev/null <"/proc/$p/cmdline" || continue
		(( ${#argv[@]} >= 3 )) || continue
		[[ $kind != ei* || ${argv[1]} == mount ]] || continue
		hit=0
		for a in "${argv[@]:1}"; do [[ $a == "$mnt" ]] && hit=1; done
		(( hit )) || continue
		[[ $(proc_state "$p") != [ZX] ]] || continue
		echo "$p"
	done
}

daemon_pid() { # KIND MNT -> exactly one PID, or fail
	local -a pids
	mapfile -t pids < <(daemon_pids "$1" "$2")
	(( ${#pids[@]} == 1 )) || die "expected one ${KIND_NAME[$1]} daemon for $2, found ${#pids[@]} (${pids[*]:-none})"
	echo "${pids[0]}"
}

wait_gone() { # PID SECONDS -> 0 once the process has exited
	local pid=$1 end=$(( ${EPOCHREALTIME/./} + $2 * 1000000 ))
	while [[ -n $(proc_state "$pid") && $(proc_state "$pid") != [ZX] ]]; do
		(( ${EPOCHREALTIME/./} < end )) || return 1
		sleep 0.01
	done
}

mount_prep() { # MNT: outside the timed part of mounting
	mkdir -p "$1"
	if is_mounted "$1"; then die "$1 is already mounted"; fi
}

do_mount() { # KIND IMAGE MNT (mount_prep first)
	case $1 in
	eifs) "$EIFS" mount "$2" "$3" "${eifs_opts[@]}" -o ro ;;
	eirw) "$EIFS" mount "$2" "$3" "${eifs_opts[@]}" ;;
	ei0) "$EIFS" mount "$2" "$3" "${eifs_opts[@]}" -o spin=0 ;;
	sqfs) squashfuse_ll "${sqfs_opts[@]}" "$2" "$3" ;;
	esac || die "${KIND_NAME[$1]} failed to mount $2 on $3 (exit $?)"
}

# Unmounts and waits until the daemon has exited, so that it neither uses CPU
# during the next measurement nor gets mistaken for the next mount's daemon.
do_umount() { # KIND MNT
	local kind=$1 mnt=$2 pid i
	pid=$(daemon_pids "$kind" "$mnt" | head -n1)
	for i in {1..50}; do
		is_mounted "$mnt" || break
		fusermount3 -u "$mnt" 2>/dev/null && break
		sleep 0.1
	done
	is_mounted "$mnt" && die "cannot unmount $mnt (busy?)"
	if [[ -n $pid ]] && ! wait_gone "$pid" 10; then
		say "warning: ${KIND_NAME[$kind]} daemon $pid still alive 10 s after unmount; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
}

cleanup() {
	local rc=$? m k p
	trap - EXIT INT TERM HUP
	for m in "${ALL_MNTS[@]}"; do
		for k in "${KINDS[@]}"; do
			is_mounted "$m" && fusermount3 -u "$m" 2>/dev/null
			for p in $(daemon_pids "$k" "$m"); do
				wait_gone "$p" 2 && continue
				say "cleanup: stopping ${KIND_NAME[$k]} daemon $p ($m)"
				kill -TERM "$p" 2>/dev/null || true
				wait_gone "$p" 3 || kill -KILL "$p" 2>/dev/null || true
			done
			is_mounted "$m" && { fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true; }
		done
	done
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

for m in "${ALL_MNTS[@]}"; do
	is_mounted "$m" && die "$m is mounted already (an earlier run still alive?); unmount it first"
done

# ---------------------------------------------------------------- data
# One generator for the three trees: xorshift32 from a fixed seed fills a
# 1 MiB pool; files are slices of the pool, so contents are pseudo-random,
# never sparse, and identical from run to run.
# shellcheck disable=SC2016
GEN_PL='
use strict; use warnings;
my ($mode, $dir, $seed, @p) = @ARGV;
my $s = $seed & 0xffffffff || 1;
sub rnd { $s ^= ($s << 13) & 0xffffffff; $s ^= $s >> 17; $s ^= ($s << 5) & 0xffffffff; $s }
my $pool = pack("V*", map { rnd() } 1 .. 262144);
my $POOL = length $pool;
sub put { my ($path, $data) = @_;
	open(my $f, ">:raw", $path) or die "$path: $!"; print $f $data or die "$path: $!"; close $f or die "$path: $!"; }
if ($mode eq "small" || $mode eq "many") {
	my ($n, $ndirs, $min, $max) = @p;
	my $per = int(($n + $ndirs - 1) / $ndirs);
	my $fmt = $mode eq "small" ? "d%02d/f%05d.dat" : "d%03d/f%06d.dat";
	for my $i (0 .. $n - 1) {
		my $path = sprintf($fmt, int($i / $per), $i);
		if ($i % $per == 0) { (my $d = "$dir/$path") =~ s{/[^/]*$}{}; mkdir $d or die "$d: $!"; }
		my $size = $min + rnd() % ($max - $min + 1);
		put("$dir/$path", substr($pool, rnd() % ($POOL - $size), $size));
	}
} elsif ($mode eq "big") {
	my ($mib) = @p;
	open(my $f, ">:raw", "$dir/big.bin") or die "$!";
	for my $i (0 .. $mib - 1) {   # each MiB differs: its index, then the pool
		my $chunk = pack("Q<", $i + 1) . substr($pool, 8);
		syswrite($f, $chunk) == length $chunk or die "write: $!";
	}
	close $f or die "$!";
} else { die "mode $mode?" }
'

declare -A TREE_DESC=(
	[small]="v$GEN_VERSION seed=$SEED small n=$N_SMALL dirs=$SMALL_DIRS size=512..8192"
	[big]="v$GEN_VERSION seed=$SEED big mib=$BIG_MIB"
	[many]="v$GEN_VERSION seed=$SEED many n=$N_MANY dirs=$MANY_DIRS size=16..127"
)
tree_ok() { [[ $REBUILD != 1 && -d $W/src-$1 && $(cat "$W/src-$1.stamp" 2>/dev/null) == "${TREE_DESC[$1]}" ]]; }
res_ok()  { [[ -f $W/$1.res && $W/$1.res -nt $W/src-$1.stamp && ! $EIFS -nt $W/$1.res ]]; }
sqfs_ok() { [[ -f $W/$1.sqfs && $W/$1.sqfs -nt $W/src-$1.stamp ]]; }

# rough on-disk needs (bytes) of what still has to be built
need=0
for t in "${TREES[@]}"; do
	case $t in
	small) src=$(( N_SMALL * 9000 )); img=$(( N_SMALL * 5000 + 4194304 )) ;;
	big)   src=$BIG_BYTES;            img=$(( BIG_BYTES + 4194304 )) ;;
	many)  src=$(( N_MANY * 4600 ));  img=$(( N_MANY * 200 + 4194304 )) ;;
	esac
	tree_ok "$t" || need=$(( need + src ))
	{ tree_ok "$t" && res_ok "$t"; } || need=$(( need + img ))
	{ tree_ok "$t" && sqfs_ok "$t"; } || need=$(( need + img ))
done
if (( need > 0 )); then
	need=$(( need + 268435456 ))   # 256 MiB to spare
	avail=$(df -B1 --output=avail "$BENCH_DIR" | tail -n1 | tr -d ' ')
	ifree=$(df --output=iavail "$BENCH_DIR" | tail -n1 | tr -d ' ')
	say "disk: need about $(( need >> 20 )) MiB in $BENCH_DIR, $(( avail >> 20 )) MiB free"
	(( avail >= need )) || die "not enough space in $BENCH_DIR: need about $(( need >> 20 )) MiB, have $(( avail >> 20 )) MiB (set BENCH_DIR elsewhere)"
	[[ $ifree == - ]] || (( ifree > N_SMALL + N_MANY + 1000 )) || die "not enough free inodes in $BENCH_DIR ($ifree)"
fi

build_tree() { # TREE
	local t=$1 d=$W/src-$1
	tree_ok "$t" && return 0
	say "generating $t tree (${TREE_DESC[$t]})"
	rm -rf "$d" "$d.tmp" "$d.stamp" "$W/$t.res" "$W/$t.sqfs"
	mkdir -p "$d.tmp"
	case $t in
	small) perl -e "$GEN_PL" small "$d.tmp" "$SEED" "$N_SMALL" "$SMALL_DIRS" 512 8192 ;;
	big)   perl -e "$GEN_PL" big "$d.tmp" "$(( SEED + 1 ))" "$BIG_MIB" ;;
	many)  perl -e "$GEN_PL" many "$d.tmp" "$(( SEED + 2 ))" "$N_MANY" "$MANY_DIRS" 16 127 ;;
	esac
	find "$d.tmp" -exec touch -h -d "@$STAMP_TIME" {} +
	mv "$d.tmp" "$d"
	printf '%s\n' "${TREE_DESC[$t]}" >"$d.stamp"
}

build_images() { # TREE
	local t=$1 s0
	if ! res_ok "$t"; then
		say "eifs pack $t"
		rm -f "$W/$t.res.tmp"
		s0=$EPOCHREALTIME
		"$EIFS" pack --time "$STAMP_TIME" "$W/src-$t" "$W/$t.res.tmp" || die "eifs pack failed on $W/src-$t"
		mv "$W/$t.res.tmp" "$W/$t.res"
		say "  took $(( (${EPOCHREALTIME/./} - ${s0/./}) / 1000 )) ms"
	fi
	if ! sqfs_ok "$t"; then
		say "mksquashfs $t"
		rm -f "$W/$t.sqfs.tmp"
		s0=$EPOCHREALTIME
		mksquashfs "$W/src-$t" "$W/$t.sqfs.tmp" -noappend -noI -noId -noD -noF -noX -no-xattrs \
			-all-root -mkfs-time "$STAMP_TIME" -all-time "$STAMP_TIME" \
			-quiet -no-progress -processors 2 >/dev/null || die "mksquashfs failed on $W/src-$t"
		mv "$W/$t.sqfs.tmp" "$W/$t.sqfs"
		say "  took $(( (${EPOCHREALTIME/./} - ${s0/./}) / 1000 )) ms"
	fi
}

for t in "${TREES[@]}"; do build_tree "$t"; build_images "$t"; done

# the small files in a fixed order, relative to the mount point, for read-all
if [[ ! -s $W/small.list || $W/small.list -ot $W/src-small.stamp ]]; then
	(cd "$W/src-small" && find . -type f -printf '%P\0' | sort -z) >"$W/small.list.tmp"
	mv "$W/small.list.tmp" "$W/small.list"
fi
SMALL_BYTES=$(cd "$W/src-small" && find . -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
KNOWN=$(printf 'd%03d/f%06d.dat' $(( MANY_DIRS - 1 )) $(( N_MANY - 1 )))   # last file of "many"
[[ -f $W/src-many/$KNOWN ]] || die "generator bug: $W/src-many/$KNOWN missing"

image() { if [[ $1 == ei* ]]; then echo "$W/$2.res"; else echo "$W/$2.sqfs"; fi; }
mnt()   { echo "$W/mnt/$1-$2"; }

# ---------------------------------------------------------------- measuring
declare -A VALS=()          # "LINE|KIND" -> space-separated values, run by run
add() { VALS["$1|$2"]+="$3 "; }
# The kinds in run I's order: reversed every other run, so that neither
# file system always goes first (after the other's run, or the drop).
in_turn() { # I KIND... -> the kinds, one per line
	local i=$1 j
	shift
	if (( i % 2 == 0 )); then printf '%s\n' "$@"
	else for (( j = $#; j >= 1; j-- )); do printf '%s\n' "${!j}"; done; fi
}

drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# Runs a command, output discarded; sets US to its wall time in microseconds.
timed() {
	local t0 t1
	t0=$EPOCHREALTIME
	"$@" >/dev/null || die "command failed: $*"
	t1=$EPOCHREALTIME
	US=$(( 10#${t1/./} - 10#${t0/./} ))
}

cmd_find()  { find "$1" -printf '%s %i\n'; }
cmd_read()  { (cd "$1" && xargs -0 cat -- <"$W/small.list"); }
cmd_dd()    { dd if="$1/big.bin" of=/dev/null bs=1M status=none; }
cmd_image() { dd if="$1" of=/dev/null bs=1M status=none; }

# bench LINE TREE CMD cold|warm|refilled [KIND...]: N interleaved runs on
# the mounts (already up) of the KINDs, by default KINDS.  refilled: each
# run drops the caches, fills them with one unmeasured run and times the
# next, FILL_REPS times a run.  A warm big read needs no request at all: it
# measures the page cache that one fill left, which stays as it is for
# every run after (the same file through either file system: 45 ms after
# one fill, 52 ms after another); a fill per sample gives each its own,
# and more fills a median nearer to what the file systems do, which is
# the same (the kernel's copy out of its cache).
bench() {
	local line=$1 tree=$2 cmd=$3 mode=$4 i k n=$RUNS
	local -a kinds=("${@:5}")
	(( ${#kinds[@]} )) || kinds=("${KINDS[@]}")
	[[ $mode == refilled ]] && n=$(( RUNS * FILL_REPS ))
	say "$line ($n runs)"
	if [[ $mode == warm ]]; then
		for k in "${kinds[@]}"; do "$cmd" "$(mnt "$k" "$tree")" >/dev/null || die "$cmd failed on ${KIND_NAME[$k]}"; done
	fi
	for (( i = 0; i < n; i++ )); do
		for k in $(in_turn "$i" "${kinds[@]}"); do
			[[ $mode == cold || $mode == refilled ]] && drop_caches
			if [[ $mode == refilled ]]; then
				"$cmd" "$(mnt "$k" "$tree")" >/dev/null || die "$cmd failed on ${KIND_NAME[$k]}"
			fi
			timed "$cmd" "$(mnt "$k" "$tree")"
			add "$line" "$k" "$US"
		done
	done
}

# time from starting the mount command until stat(MNT/KNOWN) succeeds
mount_ready() { # KIND
	local k=$1 m img end t0 t1
	m=$(mnt "$k" many)
	img=$(image "$k" many)
	mount_prep "$m"
	end=$(( ${EPOCHREALTIME/./} + READY_TIMEOUT * 1000000 ))
	t0=$EPOCHREALTIME
	do_mount "$k" "$img" "$m"
	until [[ -e $m/$KNOWN ]]; do
		(( ${EPOCHREALTIME/./} < end )) || die "${KIND_NAME[$k]}: $m/$KNOWN not visible ${READY_TIMEOUT}s after mounting"
	done
	t1=$EPOCHREALTIME
	US=$(( 10#${t1/./} - 10#${t0/./} ))
	do_umount "$k" "$m"
}

# Sanity: the mounts show the same trees as the sources (not timed).
check_small() { # KIND
	local k=$1 m n i
	local -a sample
	mapfile -d '' -t sample <"$W/small.list"
	m=$(mnt "$k" small)
	n=$(find "$m" -type f | wc -l) || die "${KIND_NAME[$k]}: find $m failed"
	(( n == N_SMALL )) || die "${KIND_NAME[$k]}: $m has $n files, expected $N_SMALL"
	n=$(cmd_read "$m" | wc -c) || die "${KIND_NAME[$k]}: reading all files of $m failed"
	(( n == SMALL_BYTES )) || die "${KIND_NAME[$k]}: reading all of $m gave $n bytes, expected $SMALL_BYTES"
	for (( i = 0; i < ${#sample[@]}; i += ${#sample[@]} / 16 + 1 )); do
		cmp -s "$W/src-small/${sample[i]}" "$m/${sample[i]}" || die "${KIND_NAME[$k]}: $m/${sample[i]} differs from the source"
	done
}

check_mounts() {
	local k m n want f
	for k in "${KINDS[@]}"; do
		check_small "$k"
		m=$(mnt "$k" big)
		n=$(stat -c %s "$m/big.bin") || die "${KIND_NAME[$k]}: cannot stat $m/big.bin"
		(( n == BIG_BYTES )) || die "${KIND_NAME[$k]}: $m/big.bin has $n bytes, expected $BIG_BYTES"
		cmp -s "$W/src-big/big.bin" "$m/big.bin" || die "${KIND_NAME[$k]}: $m/big.bin differs from the source"
		m=$(mnt "$k" many)
		n=$(cmd_find "$m" | wc -l) || die "${KIND_NAME[$k]}: find $m failed"
		want=$(( N_MANY + MANY_DIRS + 1 ))
		(( n == want )) || die "${KIND_NAME[$k]}: find $m lists $n entries, expected $want"
		for f in d000/f000000.dat "$KNOWN"; do
			cmp -s "$W/src-many/$f" "$m/$f" || die "${KIND_NAME[$k]}: $m/$f differs from the source"
		done
	done
}

# VmRSS, VmHWM and RssAnon (kB) of the daemon after find over a fresh mount
rss_after_find() { # KIND
	local k=$1 m pid key val unit
	m=$(mnt "$k" many)
	mount_prep "$m"
	do_mount "$k" "$(image "$k" many)" "$m"
	cmd_find "$m" >/dev/null || die "find failed on $m"
	pid=$(daemon_pid "$k" "$m")
	while read -r key val unit; do
		case $key in
		VmRSS:)   add rss "$k" "$val" ;;
		VmHWM:)   add hwm "$k" "$val" ;;
		RssAnon:) add anon "$k" "$val" ;;
		esac
	done <"/proc/$pid/status"
	do_umount "$k" "$m"
}

T_START=$EPOCHREALTIME
say "scale=$SCALE runs=$RUNS work dir $W"

say "mount until ready, cold ($RUNS runs)"
for (( i = 0; i < RUNS; i++ )); do
	for k in $(in_turn "$i" "${KINDS[@]}"); do drop_caches; mount_ready "$k"; add mount_cold "$k" "$US"; done
done
# A mount takes about 10 ms, and the machine's speed drifts by more than the
# two differ from one minute to the next: MOUNT_REPS interleaved rounds per
# run (each a mount of every kind) give the median many more samples, taken
# side by side, for a few seconds more.
say "mount until ready ($RUNS runs of $MOUNT_REPS rounds, after one warm-up)"
for k in "${KINDS[@]}"; do mount_ready "$k"; done
for (( i = 0; i < RUNS * MOUNT_REPS; i++ )); do
	for k in $(in_turn "$i" "${KINDS[@]}"); do mount_ready "$k"; add mount "$k" "$US"; done
done

say "mounting all trees; checking their contents"
for k in "${KINDS[@]}"; do for t in "${TREES[@]}"; do
	mount_prep "$(mnt "$k" "$t")"
	do_mount "$k" "$(image "$k" "$t")" "$(mnt "$k" "$t")"
done; done
check_mounts

bench find_cold many cmd_find cold
bench find_warm many cmd_find warm
bench read_cold small cmd_read cold
bench read_warm small cmd_read warm
bench dd_cold big cmd_dd cold
# The control of the line above: the two image files read straight from
# the disk.  They are different files, and what lies under a virtual
# machine's disk may serve one from a cache and the other not: a
# difference here is the storage's, not the file systems'.
say "the big images themselves, cold ($RUNS runs)"
for (( i = 0; i < RUNS; i++ )); do
	# one eifs kind: the two read the same file
	for k in $(in_turn "$i" eifs sqfs); do drop_caches; timed cmd_image "$(image "$k" big)"; add image_cold "$k" "$US"; done
done
bench dd_warm big cmd_dd refilled

mount_prep "$(mnt ei0 small)"
do_mount ei0 "$(image ei0 small)" "$(mnt ei0 small)"
check_small ei0
bench read_warm_spin0 small cmd_read warm "${SPIN0_KINDS[@]}"
do_umount ei0 "$(mnt ei0 small)"

for k in "${KINDS[@]}"; do for t in "${TREES[@]}"; do do_umount "$k" "$(mnt "$k" "$t")"; done; done

say "daemon RSS after find over a fresh mount ($RUNS runs)"
for (( i = 0; i < RUNS; i++ )); do
	for k in "${KINDS[@]}"; do rss_after_find "$k"; done
done

# ---------------------------------------------------------------- report
median() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{ a[NR] = $1 } END { printf "%.1f\n", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# In how many runs eifs took less than squashfuse_ll in the same run (the
# two ran one after the other): "7/11".  The ratio of medians alone cannot
# tell a lead from the noise between runs of the script.
runs_won() { # EIFS-VALUES SQFS-VALUES
	awk -v e="$1" -v s="$2" 'BEGIN { n = split(e, a, " "); split(s, b, " "); for (i = 1; i <= n; i++) w += a[i] < b[i]; printf "%d/%d", w, n }'
}

ms()    { awk -v u="$1" 'BEGIN { printf (u < 10000 ? "%.2f ms" : u < 100000 ? "%.1f ms" : "%.0f ms"), u / 1000 }'; }
mbs()   { awk -v u="$1" -v b="$BIG_BYTES" 'BEGIN { printf "%s (%.0f MB/s)", "", b / u }'; }
mb()    { awk -v k="$1" 'BEGIN { printf "%.1f MB", k * 1024 / 1e6 }'; }

if [[ $SCALE == full ]]; then full=1; else full=0; fi
fails=0
ROWS=()
row() { # LINE LABEL UNIT TARGET-KIND [EIFS-KIND]
	local line=$1 label=$2 unit=$3 tk=$4 ek=${5:-eifs} e s ratio cell_e cell_s target met ok won
	e=$(median "${VALS["$line|$ek"]}")
	s=$(median "${VALS["$line|sqfs"]}")
	ratio=$(awk -v e="$e" -v s="$s" 'BEGIN { if (s > 0) printf "%.2f", e / s; else print "n/a" }')
	won=—
	[[ $unit != mb ]] && won=$(runs_won "${VALS["$line|$ek"]}" "${VALS["$line|sqfs"]}")
	case $unit in
	ms) cell_e=$(ms "$e"); cell_s=$(ms "$s") ;;
	dd) cell_e="$(ms "$e")$(mbs "$e")"; cell_s="$(ms "$s")$(mbs "$s")" ;;
	mb) cell_e=$(mb "$e"); cell_s=$(mb "$s") ;;
	esac
	ok=1
	# the ratio targets are about speed; memory has its own absolute bound
	[[ $tk != rss && $ratio != n/a ]] && awk -v r="$ratio" 'BEGIN { exit !(r > 1.0) }' && ok=0
	case $tk in
	ratio) target="ratio ≤ 1.0" ;;
	mount) target="ratio ≤ 1.0, eifs ≤ $MOUNT_TARGET_MS ms"
		if (( full )); then awk -v u="$e" -v t="$MOUNT_TARGET_MS" 'BEGIN { exit !(u / 1000 > t) }' && ok=0
		else target+=" (full scale only)"; fi ;;
	rss) target="eifs ≤ $RSS_TARGET_MB MB"
		if (( full )); then awk -v k="$e" -v t="$RSS_TARGET_MB" 'BEGIN { exit !(k * 1024 / 1e6 > t) }' && ok=0
		else target+=" (full scale only)"; fi ;;
	info) target="(info)"; ok=2 ;;
	esac
	case $ok in 1) met=yes ;; 0) met='**NO**'; fails=$(( fails + 1 )) ;; 2) met=— ;; esac
	ROWS+=("| $label | $cell_e | $cell_s | $ratio | $won | $target | $met |")
}

if (( BIG_MIB % 1024 == 0 )); then big_label="$(( BIG_MIB / 1024 )) GiB"; else big_label="$BIG_MIB MiB"; fi
W_=", writable mount (the default)"
row mount      "mount until ready ($N_MANY entries)"                       ms mount
row mount      "mount until ready ($N_MANY entries)$W_"                    ms info eirw
row mount_cold "mount until ready, cold ($N_MANY entries)"                 ms info
row find_cold  "find -printf '%s %i', cold ($N_MANY entries)"              ms ratio
row find_cold  "find -printf '%s %i', cold ($N_MANY entries)$W_"           ms info eirw
row find_warm  "find -printf '%s %i', warm ($N_MANY entries)"              ms ratio
row find_warm  "find -printf '%s %i', warm ($N_MANY entries)$W_"           ms info eirw
row read_cold  "read all $N_SMALL small files, cold"                       ms ratio
row read_cold  "read all $N_SMALL small files, cold$W_"                    ms info eirw
row read_warm  "read all $N_SMALL small files, warm"                       ms ratio
row read_warm  "read all $N_SMALL small files, warm$W_"                    ms info eirw
row read_warm_spin0 "read all $N_SMALL small files, warm$W_, -o spin=0 (the reader sleeps at once)" ms info ei0
row dd_cold    "dd one $big_label entry, cold"                             dd ratio
row dd_cold    "dd one $big_label entry, cold$W_"                          dd info eirw
row image_cold "dd of the big image file itself, cold (the disk under the lines above)" dd info
row dd_warm    "dd one $big_label entry, warm"                             dd ratio
row dd_warm    "dd one $big_label entry, warm$W_"                          dd info eirw
row rss        "daemon RSS after find ($N_MANY entries)"                   mb rss
row rss        "daemon RSS after find ($N_MANY entries)$W_"                mb info eirw
row hwm        "daemon peak RSS (VmHWM) after find"                        mb info
row anon       "daemon anonymous RSS (RssAnon) after find"                 mb info

size_of() { stat -c %s "$1"; }
{
	echo "# eifs vs squashfuse_ll ($SCALE scale)"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -sr), $(nproc) CPUs;" \
		"$("$EIFS" --version 2>/dev/null | head -n1)$(git -C "$top" describe --always --dirty 2>/dev/null | sed 's/^/ (/; s/$/)/');" \
		"squashfuse $(dpkg-query -W -f '${Version}' squashfuse 2>/dev/null || echo '?')," \
		"$(mksquashfs -version 2>/dev/null | head -n1 | cut -d' ' -f1-3)."
	echo "eifs = \`eifs mount -o ro\` (the read-only mount of issue #2; squashfuse_ll is read-only too); the lines marked \"writable mount\" are the default mount, measured in the same runs.  Medians of $RUNS runs ($(( RUNS * MOUNT_REPS )) on the warm mount lines: $MOUNT_REPS rounds a run; $(( RUNS * FILL_REPS )) on the warm dd lines: $FILL_REPS cache fills a run), the three interleaved (the order reverses every other round); \"eifs faster in\": the runs in which that eifs mount took less than squashfuse_ll in the same run; cold = \`sync; echo 3 >/proc/sys/vm/drop_caches\` before each run, warm = after one unmeasured run (for dd: one per sample, after dropping the caches)."
	echo "Images: small $(size_of "$W/small.res") / $(size_of "$W/small.sqfs") bytes, big $(size_of "$W/big.res") / $(size_of "$W/big.sqfs"), many $(size_of "$W/many.res") / $(size_of "$W/many.sqfs") (RES / squashfs)."
	echo
	echo "| line | eifs median | squashfuse_ll median | ratio | eifs faster in | target | met |"
	echo "|---|---:|---:|---:|---:|---|---|"
	printf '%s\n' "${ROWS[@]}"
	echo
	if (( fails )); then echo "$fails target(s) missed."; else echo "All targets met."; fi
	(( full )) || echo "Small scale: absolute targets (mount ≤ $MOUNT_TARGET_MS ms, RSS ≤ $RSS_TARGET_MB MB) apply to the full run only."
} | tee "$RESULTS"
say "wrote $RESULTS (total $(( (${EPOCHREALTIME/./} - ${T_START/./}) / 1000000 )) s of measuring)"
