#!/usr/bin/env bash
# Converted views: what listing, reading and grepping them costs.  See
# bench/README.md.
#
#   sudo bench/views.sh            (BENCH_RUNS=5, BENCH_DIR=bench/out)
#
# 1. `ls -l` of an archive directory of 2000 MMP textures (4000 names with
#    their PNG views) on a fresh mount, against `ls -l` of an archive
#    directory of 4000 plain entries: target ratio <= 1.5.
# 2. Reading every PNG view of that directory, caches dropped: MB/s of PNG
#    output (target >= 150 MB/s), beside reading the raw MMPs.
# 3. `grep -r` over every database view of ../shared/samples on a fresh
#    mount (the conversion included): target < 1 s.
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=$(dirname "$here")
EIFS=${EIFS:-$top/src/eifs}
MKASSET=${MKASSET:-$top/demo/mkasset}
SAMPLES=${SAMPLES:-$top/../shared/samples}
RUNS=${BENCH_RUNS:-5}
N_TEX=2000
W=${BENCH_DIR:-$here/out}/views
M=$W/mnt

die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }
(( EUID == 0 )) || { echo "bench: SKIPPED: must run as root (drop_caches)" >&2; exit 77; }
[[ -x $EIFS && -x $MKASSET ]] || die "build first (make): $EIFS, $MKASSET"

cleanup() { fusermount3 -u "$M" 2>/dev/null || true; }
trap cleanup EXIT
mkdir -p "$W" "$M"

now() { local t=$EPOCHREALTIME; echo "${t/./}"; }       # microseconds
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }
mount_fresh() { cleanup; "$EIFS" mount "$1" "$M"; }

# ---- data, made once
if [[ ! -f $W/textures.res ]]; then
	rm -rf "$W/tex" && mkdir -p "$W/tex"
	"$MKASSET" synth "$W/tex" "$N_TEX" 20241122
	"$EIFS" pack --time 1000000000 "$W/tex" "$W/textures.res"
fi
if [[ ! -f $W/plain.res ]]; then
	rm -rf "$W/plain" && mkdir -p "$W/plain"
	for (( i = 0; i < 2 * N_TEX; i++ )); do printf 'entry %d\n' "$i" > "$W/plain/text$(printf %05d "$i")"; done
	"$EIFS" pack --time 1000000000 "$W/plain" "$W/plain.res"
fi

# ---- 1. ls -l on a fresh mount
ls_tex=() ls_plain=()
for (( r = 0; r < RUNS; r++ )); do
	mount_fresh "$W/textures.res"; t0=$(now); ls -l "$M" > /dev/null; t1=$(now); ls_tex+=($(( t1 - t0 )))
	mount_fresh "$W/plain.res"; t0=$(now); ls -l "$M" > /dev/null; t1=$(now); ls_plain+=($(( t1 - t0 )))
done
names=$(mount_fresh "$W/textures.res"; ls "$M" | wc -l)
lt=$(printf '%s\n' "${ls_tex[@]}" | median); lp=$(printf '%s\n' "${ls_plain[@]}" | median)

# ---- 2. every PNG view, cold (fresh mount: nothing converted yet)
png_us=() mmp_us=()
for (( r = 0; r < RUNS; r++ )); do
	mount_fresh "$W/textures.res"; drop_caches
	t0=$(now); cat "$M"/*.png > /dev/null; t1=$(now); png_us+=($(( t1 - t0 )))
	mount_fresh "$W/textures.res"; drop_caches
	t0=$(now); cat "$M"/*.mmp > /dev/null; t1=$(now); mmp_us+=($(( t1 - t0 )))
done
png_bytes=$(mount_fresh "$W/textures.res"; stat -c %s "$M"/*.png | awk '{ s += $1 } END { print s }')
mmp_bytes=$(stat -c %s "$W"/tex/*.mmp | awk '{ s += $1 } END { print s }')
pt=$(printf '%s\n' "${png_us[@]}" | median); mt=$(printf '%s\n' "${mmp_us[@]}" | median)

# ---- 3. grep -r over the database views of the samples
gt=n/a
if [[ -d $SAMPLES ]]; then
	g_us=()
	for (( r = 0; r < RUNS; r++ )); do
		mount_fresh "$SAMPLES"
		t0=$(now); grep -r --include='*.jsonl' -c '"table"' "$M" > /dev/null; t1=$(now); g_us+=($(( t1 - t0 )))
	done
	gt=$(printf '%s\n' "${g_us[@]}" | median)
fi
cleanup

ms() { awk -v u="$1" 'BEGIN { printf "%.1f ms", u / 1000 }'; }
{
	echo "# eifs views ($(date -u '+%Y-%m-%d %H:%M UTC'), medians of $RUNS, $(nproc) CPUs)"
	echo
	echo "| line | eifs | compared with | ratio / rate | target | met |"
	echo "|---|---:|---:|---:|---|---|"
	awk -v a="$lt" -v b="$lp" -v n="$names" 'BEGIN { r = a / b; printf "| ls -l, fresh mount: %d textures + PNG views (%d names) vs %d plain entries | %.1f ms | %.1f ms | %.2f | ratio <= 1.5 | %s |\n", n / 2, n, n, a / 1000, b / 1000, r, (r <= 1.5 ? "yes" : "**NO**") }'
	awk -v t="$pt" -v b="$png_bytes" -v m="$mt" -v mb="$mmp_bytes" 'BEGIN { r = b / t; printf "| read every PNG view, cold (%.0f MB of PNG) vs the raw MMPs (%.0f MB) | %.0f ms | %.0f ms | %.0f MB/s of PNG | >= 150 MB/s | %s |\n", b / 1e6, mb / 1e6, t / 1000, m / 1000, r, (r >= 150 ? "yes" : "**NO**") }'
	if [[ $gt != n/a ]]; then
		awk -v t="$gt" 'BEGIN { printf "| grep -r over every database view of the samples, fresh mount | %.0f ms | | | < 1 s | %s |\n", t / 1000, (t < 1e6 ? "yes" : "**NO**") }'
	fi
} | tee "$W/../views-results.md"
