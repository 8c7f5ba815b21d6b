#!/usr/bin/env bash
# Mount until ready, for several eifs binaries against each other and
# squashfuse_ll: the line of bench/run.sh that moves by a millisecond or
# two, measured with enough interleaved runs to see such a change.
#
#   bench/mount-ab.sh OLD=/tmp/eifs.old NEW=src/eifs     # BENCH_RUNS=41
#   BENCH_RUNS=101 bench/mount-ab.sh src/eifs
#
# Each argument is a binary, optionally named (NAME=PATH).  Every run
# mounts bench/out/full/many.res (100 000 entries, made by bench/run.sh)
# and times from starting the mount command until stat() of a file in the
# last folder succeeds, as bench/run.sh does; the binaries and
# squashfuse_ll take turns, so a machine that slows down slows all of them.
# Prints the median of each and its ratio to squashfuse_ll.
# Environment: BENCH_DIR (default bench/out), BENCH_RUNS (default 41),
# BENCH_EIFS_OPTS (options for the eifs mounts, e.g. "-o ro"),
# BENCH_RES (the archive the eifs binaries mount, default many.res; "floor":
# one the first binary packs of 100 folders with 10 files each and the file
# looked for, so that what is left is eifs' own start and the mount, with
# next to no table to read and build: the floor under the line).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
W=${BENCH_DIR:-$here/out}/full
RUNS=${BENCH_RUNS:-41}
KNOWN=d099/f099999.dat
READY_TIMEOUT_US=30000000

die() { printf 'mount-ab: error: %s\n' "$*" >&2; exit 1; }

(( $# > 0 )) || die "usage: bench/mount-ab.sh [NAME=]BINARY... (see the comment at its top)"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer"
[[ -f $W/many.res && -f $W/many.sqfs ]] || die "$W/many.res or many.sqfs is missing: run bench/run.sh once first"
command -v squashfuse_ll >/dev/null || die "squashfuse_ll not found (apt-get install squashfuse)"
[[ -n ${EPOCHREALTIME:-} ]] || die "bash 5 or later is needed (EPOCHREALTIME)"

names=() bins=()
for a in "$@"; do
	if [[ $a == *=* ]]; then name=${a%%=*} bin=${a#*=}; else name=$a bin=$a; fi
	[[ -x $bin ]] || die "$bin is not an executable"
	names+=("$name") bins+=("$(cd "$(dirname "$bin")" && pwd -P)/$(basename "$bin")")
done

mnt=$(mktemp -d "${TMPDIR:-/tmp}/eifs-mount-ab.XXXXXX")
floor=
is_mounted() { awk -v m="$mnt" '$2 == m { f = 1 } END { exit !f }' /proc/self/mounts; }
cleanup() {
	is_mounted && { fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -uz "$mnt" 2>/dev/null || true; }
	rmdir "$mnt" 2>/dev/null || true
	[[ -z $floor ]] || rm -rf "$floor"
}
trap cleanup EXIT

# options for every eifs mount: BENCH_EIFS_OPTS="-o ro" measures the
# read-only mount, as bench/run.sh's target lines do
read -r -a eifs_opts <<<"${BENCH_EIFS_OPTS:-}"
res=${BENCH_RES:-$W/many.res}
if [[ $res == floor ]]; then
	floor=$(mktemp -d "${TMPDIR:-/tmp}/eifs-mount-ab-floor.XXXXXX")
	for (( d = 0; d < 100; d++ )); do
		mkdir "$floor/src/$(printf 'd%03d' "$d")" -p
		for (( f = 0; f < 10; f++ )); do echo "$d $f" > "$floor/src/$(printf 'd%03d/f%d.dat' "$d" "$f")"; done
	done
	echo known > "$floor/src/$KNOWN"
	"${bins[0]}" pack "$floor/src" "$floor/floor.res" >/dev/null || die "${names[0]} pack failed"
	res=$floor/floor.res
fi
[[ -f $res ]] || die "$res is not a file"

# KIND (an index into bins, or sqfs) -> US, the microseconds until ready
one() {
	local t0 t1 end pid
	t0=$EPOCHREALTIME
	if [[ $1 == sqfs ]]; then
		squashfuse_ll "$W/many.sqfs" "$mnt" || die "squashfuse_ll failed to mount"
	else
		"${bins[$1]}" mount "$res" "$mnt" "${eifs_opts[@]}" || die "${names[$1]} failed to mount"
	fi
	end=$(( ${t0/./} + READY_TIMEOUT_US ))
	until [[ -e $mnt/$KNOWN ]]; do
		(( ${EPOCHREALTIME/./} < end )) || die "$mnt/$KNOWN not visible after 30 s"
	done
	t1=$EPOCHREALTIME
	US=$(( 10#${t1/./} - 10#${t0/./} ))
	pid=$(pgrep -f -- " $mnt\$" | head -n1 || true)
	fusermount3 -u "$mnt" || die "cannot unmount $mnt"
	# the daemon must be gone before the next run, or it takes CPU from it
	while [[ -n $pid && -d /proc/$pid ]] && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; do
		sleep 0.005
	done
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

kinds=("${!bins[@]}" sqfs)
declare -A times
for k in "${kinds[@]}"; do one "$k"; done # warm-up, not counted
for (( i = 0; i < RUNS; i++ )); do
	for k in "${kinds[@]}"; do
		one "$k"
		times[$k]+="$US "
	done
done
sq=$(tr ' ' '\n' <<<"${times[sqfs]}" | grep . | median)
printf '%-16s %10s %8s   (%d runs each, interleaved)\n' binary "median us" ratio "$RUNS"
for k in "${!bins[@]}"; do
	m=$(tr ' ' '\n' <<<"${times[$k]}" | grep . | median)
	printf '%-16s %10d %8s\n' "${names[$k]}" "$m" "$(awk -v a="$m" -v b="$sq" 'BEGIN { printf "%.2f", a / b }')"
done
printf '%-16s %10d %8s\n' squashfuse_ll "$sq" 1.00
