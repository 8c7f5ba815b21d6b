#!/usr/bin/env bash
# Saving a small change into a big archive: eifs put (appends the change and
# a new table, then switches the header) and saving a 4 KiB INI view through
# a mount (the INI parsed, the REG committed the same way) against rewriting
# the whole archive, which is what saving through a temporary file and
# rename costs.
#
#   bench/commit.sh                    1 GiB archive (needs ~3.5 GiB free)
#   BENCH_MIB=64 bench/commit.sh       quick smoke test
#
# The archive holds one 1 GiB entry, one 4 KiB entry and a REG whose INI
# view is some 4 KiB; each run replaces the 4 KiB entry with new random
# bytes, or (mount) copies an INI with one value changed over the view with
# cp, timed until cp returns (the save happens at its close).  The whole-archive rewrite is timed
# two ways, both ending in fsync and rename as a safe rewrite must:
#   compact  eifs compact after the put: the archive rebuilt from itself into
#            a temporary file (copy_file_range), flushed, renamed over it;
#   pack     eifs pack of the extracted folder with the new 4 KiB file, the
#            way one rebuilds an archive with the game's tools.
# The ratio is taken against the faster of the two.  The page cache is warm
# for every command (nothing here drops it), which favours the rewrites: they
# read 1 GiB, the put reads nothing of it.
#
# Exits 0 when the run finished, whether or not the targets (put and the
# save through the mount <= 20 ms, >= 20x faster) were met; the last line
# says which.
# Environment: BENCH_DIR (work dir, default bench/out/commit), BENCH_RUNS
# (default 5), BENCH_MIB (size of the big entry, default 1024), EIFS (binary,
# default src/eifs), BENCH_KEEP=1 (keep the files afterwards).
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
top=$(dirname "$here")
EIFS=${EIFS:-$top/src/eifs}
MKASSET=${MKASSET:-$top/demo/mkasset}
RUNS=${BENCH_RUNS:-5}
MIB=${BENCH_MIB:-1024}
W=${BENCH_DIR:-$here/out/commit}
TARGET_MS=20
TARGET_RATIO=20

die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }
say() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
[[ -x $EIFS ]] || die "$EIFS is not built (run make first, or set EIFS=...)"
[[ -n ${EPOCHREALTIME:-} ]] || die "bash 5 or later is needed (EPOCHREALTIME)"
[[ $RUNS =~ ^[1-9][0-9]*$ && $MIB =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS and BENCH_MIB must be positive integers"

mkdir -p "$W"
W=$(cd "$W" && pwd -P)
cleanup() {
	mountpoint -q "$W/mnt" 2>/dev/null && fusermount3 -u "$W/mnt"
	[[ -n ${BENCH_KEEP:-} ]] || rm -rf "$W/src" "$W/game.res" "$W/packed.res" "$W"/*.eifs-* "$W"/*.ini
}
trap cleanup EXIT

now_us() { local t=${EPOCHREALTIME/./}; printf '%s' "$((10#$t))"; }

# timed CMD...: runs it and prints its wall time in microseconds
timed() {
	local t0 t1
	t0=$(now_us)
	"$@" >/dev/null
	t1=$(now_us)
	printf '%s' $((t1 - t0))
}

median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms() { awk -v us="$1" 'BEGIN { printf "%.1f", us / 1000 }'; }

# ---- the archive ------------------------------------------------------------
say "building a $MIB MiB archive in $W"
rm -rf "$W/src"
mkdir -p "$W/src"
dd if=/dev/urandom of="$W/src/big.bin" bs=1M count="$MIB" status=none
head -c 4096 /dev/urandom > "$W/src/small.txt"
# an INI of 205 keys, some 4 KiB, as its REG
ini_text() { # ini_text VALUE
	echo "[settings]"
	for k in $(seq 205); do printf 'key_number_%03d=%s\n' "$k" "$(( k == 64 ? $1 : k * 1000 ))"; done
}
ini_text 0 > "$W/settings.ini"
"$MKASSET" reg "$W/settings.ini" "$W/src/settings.reg"
"$EIFS" pack "$W/src" "$W/game.res"
"$EIFS" check "$W/game.res" >/dev/null || die "the packed archive does not check clean"
cat "$W/game.res" > /dev/null      # warm, as for every command below
size0=$(stat -c %s "$W/game.res")

new_small() { head -c 4096 /dev/urandom > "$W/src/small.txt"; }

# ---- put ----------------------------------------------------------------------
put_us=()
for ((i = 1; i <= RUNS; i++)); do
	new_small
	put_us+=("$(timed "$EIFS" put "$W/game.res/small.txt" "$W/src/small.txt")")
	"$EIFS" cat "$W/game.res/small.txt" | cmp -s - "$W/src/small.txt" || die "put run $i: wrong contents"
done
"$EIFS" check "$W/game.res" >/dev/null || die "the archive does not check clean after the puts"
grown=$(( $(stat -c %s "$W/game.res") - size0 ))

# ---- a 4 KiB INI saved through a mount --------------------------------------
mkdir -p "$W/mnt"
"$EIFS" mount "$W/game.res" "$W/mnt"
ini_us=()
for ((i = 1; i <= RUNS; i++)); do
	ini_text "$i" > "$W/run.ini"
	ini_us+=("$(timed cp "$W/run.ini" "$W/mnt/settings.ini")")
	"$EIFS" convert "$W/game.res/settings.reg" - > "$W/saved.ini"
	grep -qx "key_number_064=$i" "$W/saved.ini" || die "mount run $i: not saved"
done
fusermount3 -u "$W/mnt"
"$EIFS" check "$W/game.res" >/dev/null || die "the archive does not check clean after the saves"
ini_bytes=$(wc -c < "$W/run.ini")

# ---- whole-archive rewrites -----------------------------------------------
compact_us=()
for ((i = 1; i <= RUNS; i++)); do
	new_small
	"$EIFS" put "$W/game.res/small.txt" "$W/src/small.txt"
	compact_us+=("$(timed "$EIFS" compact "$W/game.res")")
done
"$EIFS" check "$W/game.res" >/dev/null || die "the archive does not check clean after compact"
pack_us=()
for ((i = 1; i <= RUNS; i++)); do
	new_small
	pack_us+=("$(timed "$EIFS" pack "$W/src" "$W/packed.res")")
done
"$EIFS" cat "$W/packed.res/small.txt" | cmp -s - "$W/src/small.txt" || die "pack: wrong contents"

put_med=$(median "${put_us[@]}")
compact_med=$(median "${compact_us[@]}")
pack_med=$(median "${pack_us[@]}")
rewrite_med=$(( compact_med < pack_med ? compact_med : pack_med ))
ratio=$(awk -v a="$rewrite_med" -v b="$put_med" 'BEGIN { printf "%.0f", a / b }')
ini_med=$(median "${ini_us[@]}")
ini_ratio=$(awk -v a="$rewrite_med" -v b="$ini_med" 'BEGIN { printf "%.0f", a / b }')

list() { local s=""; for v in "$@"; do s+="$(ms "$v") "; done; printf '%s' "${s% }"; }
fs=$(df -T "$W" | awk 'NR == 2 { print $2 }')
echo "Replacing a 4 KiB entry of a $MIB MiB archive ($fs, $(nproc) cores, warm cache, $RUNS runs, ms):"
printf '  %-32s median %8s   runs %s\n' "eifs put (in place)" "$(ms "$put_med")" "$(list "${put_us[@]}")"
printf '  %-32s median %8s   runs %s\n' "cp of a $ini_bytes-byte INI, mount" "$(ms "$ini_med")" "$(list "${ini_us[@]}")"
printf '  %-32s median %8s   runs %s\n' "rewrite: eifs compact" "$(ms "$compact_med")" "$(list "${compact_us[@]}")"
printf '  %-32s median %8s   runs %s\n' "rewrite: eifs pack of the folder" "$(ms "$pack_med")" "$(list "${pack_us[@]}")"
echo "  put is ${ratio}x, the save through the mount ${ini_ratio}x faster than the faster rewrite; the archive grew by $grown bytes over $RUNS puts (dead space until compact)"
ok=1
(( put_med <= TARGET_MS * 1000 )) || { echo "  MISSED: put median above $TARGET_MS ms"; ok=0; }
(( ini_med <= TARGET_MS * 1000 )) || { echo "  MISSED: mount save median above $TARGET_MS ms"; ok=0; }
(( ratio >= TARGET_RATIO && ini_ratio >= TARGET_RATIO )) || { echo "  MISSED: less than ${TARGET_RATIO}x faster"; ok=0; }
(( ok )) && echo "  targets met: put and the save through the mount <= $TARGET_MS ms and >= ${TARGET_RATIO}x faster"
exit 0 # the run finished; the line above says whether the targets were met
