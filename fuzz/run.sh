#!/bin/bash
# Builds the libFuzzer targets (clang, ASan + UBSan) into fuzz/build/,
# seeds fuzz/corpus/<target>/ from the demo game data and the samples,
# runs every target SECONDS (default 30) one after another under nice,
# and prints one line per target.  Crash inputs go to fuzz/crashes/<target>/,
# per-target stats are appended to fuzz/stats.log (fuzz/total.sh sums them).
# Exits non-zero if a target crashed (or the build failed).
#
#   fuzz/run.sh [SECONDS] [TARGET...]
#
# Environment: EIFS (the eifs binary, default src/eifs), DEMO (default
# demo/Res), SAMPLES (default ../shared/samples), CC (default clang),
# FUZZ_FLAGS (more libFuzzer flags), SEED=0 (reuse the corpus as it is: seeding
# unpacks every sample and takes minutes).  EIFS and DEMO come from `make`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
seconds=${1:-30}
shift || true
all_targets="res reg ini mmp png db jsonl adb mob models mpr tree"
targets=${*:-$all_targets}
EIFS=${EIFS:-$root/src/eifs}
DEMO=${DEMO:-$root/demo/Res}
SAMPLES=${SAMPLES:-$root/../shared/samples}
CC=${CC:-clang}
build=$here/build
corpus=$here/corpus
crashes=$here/crashes
# Larger inputs only slow a target down; archives hold whole files.
max_len_of() { case $1 in res | tree) echo 131072 ;; *) echo 32768 ;; esac; }

# The format library as Makefile.am lists it, in an archive: each target
# links what it uses, and a module that starts needing another finds it.
modules=$(sed -n '/^src_libeifs_a_SOURCES/,/^$/p' "$root/Makefile.am" | grep -o 'src/[a-z0-9_]*\.c' | sed 's#^src/##; s#\.c$##')
cflags="-std=gnu11 -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=all
	-Wall -Wextra -Wshadow -Wno-unused-parameter -Wmissing-prototypes -Werror
	-D_FILE_OFFSET_BITS=64 -I$root/src -I$here"

die() { echo "fuzz: $*" >&2; exit 1; }

# ---- build ----------------------------------------------------------------

# An object is rebuilt when its source or any header is newer.
compile() { # SRC OBJ SANITIZERS
	local src=$1 obj=$2 h
	if [ -f "$obj" ] && [ "$obj" -nt "$src" ]; then
		for h in "$root"/src/*.h "$here"/*.h; do
			[ "$h" -nt "$obj" ] && break
		done
		[ "$h" -nt "$obj" ] || return 0
	fi
	# shellcheck disable=SC2086
	"$CC" $cflags $pkg_cflags -fsanitize="$3" -c "$src" -o "$obj"
}

build_all() {
	command -v "$CC" >/dev/null || die "$CC not found (contrib/install-deps installs clang)"
	pkg_cflags=$(pkg-config --cflags glib-2.0 libpng zlib)
	pkg_libs=$(pkg-config --libs glib-2.0 libpng zlib)
	mkdir -p "$build/obj"
	local objs="" m t
	[ -n "$modules" ] || die "no src_libeifs_a_SOURCES in $root/Makefile.am"
	for m in $modules; do
		compile "$root/src/$m.c" "$build/obj/$m.o" fuzzer-no-link,address,undefined
		objs="$objs $build/obj/$m.o"
	done
	rm -f "$build/libeifs.a"
	# shellcheck disable=SC2086
	ar rcs "$build/libeifs.a" $objs
	compile "$here/fuzz_common.c" "$build/obj/fuzz_common.o" fuzzer-no-link,address,undefined
	for t in $targets; do
		[ -f "$here/fuzz_$t.c" ] || die "no target $t (have: $all_targets)"
		compile "$here/fuzz_$t.c" "$build/obj/fuzz_$t.o" fuzzer-no-link,address,undefined
		# shellcheck disable=SC2086
		"$CC" -fsanitize=fuzzer,address,undefined "$build/obj/fuzz_$t.o" \
			"$build/obj/fuzz_common.o" "$build/libeifs.a" $pkg_libs -lm -o "$build/fuzz_$t"
	done
	# shellcheck disable=SC2086
	"$CC" $cflags $pkg_cflags "$here/mkseeds.c" "$root/src/db.c" "$root/src/cp1251.c" \
		"$root/src/format_error.c" $pkg_libs -lm -o "$build/mkseeds"
}

# ---- seeds ----------------------------------------------------------------

# Copies a file into a corpus under its content hash (so seeding twice adds
# nothing); PREFIX is a byte written first (the db target's kind byte).
seed() { # TARGET FILE [PREFIX_OCTAL]
	local dir=$corpus/$1 tmp
	[ -s "$2" ] || return 0
	[ "$(stat -c %s "$2")" -lt "$(max_len_of "$1")" ] || return 0
	mkdir -p "$dir"
	if [ $# -ge 3 ]; then
		tmp=$build/seed.tmp
		{ printf "\\$3"; cat "$2"; } >"$tmp"
		cp "$tmp" "$dir/$(sha1sum <"$tmp" | cut -d' ' -f1)"
	else
		cp "$2" "$dir/$(sha1sum <"$2" | cut -d' ' -f1)"
	fi
}

magic() { od -An -tx1 -N4 "$1" 2>/dev/null | tr -d ' \n'; }

# Unpacks ARCHIVE into DIR and every archive inside it into DIR/<name>.x/.
unpack() { # ARCHIVE DIR DEPTH
	local f
	"$EIFS" extract "$1" "$2" >/dev/null 2>&1 || return 0
	[ "$3" -lt 4 ] || return 0
	find "$2" -type f >"$2.files"
	while read -r f; do
		[ "$(magic "$f")" = 3ce29c01 ] && unpack "$f" "$f.x" $(($3 + 1))
		true
	done <"$2.files"
	rm -f "$2.files"
}

# Files with no magic of their own are told apart by name: the part files
# of models (no extension inside .mod/.bon/.anm) and the databases.
db_kind() {
	case "${1,,}" in
	*.idb) echo 000 ;; *.udb) echo 001 ;; *.sdb) echo 002 ;; *.pdb) echo 003 ;;
	*.qdb) echo 004 ;; *.ldb) echo 005 ;; */prints.db) echo 006 ;; */acks.db) echo 007 ;;
	*) echo "" ;;
	esac
}

# A database, its view, and a small database of the first rows of each of
# its tables (the whole files are mostly too large to mutate fast).
seed_db() { # FILE KIND
	local out=$build/conv
	seed db "$1" "$2"
	seed db "$1" 010 # the same bytes without a schema
	"$EIFS" convert "$1" "$out.jsonl" >/dev/null 2>&1 || return 0
	seed jsonl "$out.jsonl"
	awk '{ t = $0; sub(/,"row":.*/, "", t); if (n[t]++ < 2) print }' "$out.jsonl" >"$out.few.jsonl"
	seed jsonl "$out.few.jsonl"
	"$build/mkseeds" --db "$out.few.jsonl" "$out.few" || return 0
	seed db "$out.few" "$2"
	seed db "$out.few" 010
}

classify() { # FILE
	local f=$1 k out=$build/conv
	case "$(magic "$f")" in
	3ce29c01) seed res "$f"; seed tree "$f" ;;
	fb3eab45) seed reg "$f"
		"$EIFS" convert "$f" "$out.ini" >/dev/null 2>&1 && seed ini "$out.ini" ;;
	4d4d5000) seed mmp "$f"
		"$EIFS" convert "$f" "$out.png" >/dev/null 2>&1 && seed png "$out.png" ;;
	41444200) seed adb "$f" ;;
	00a00000) seed mob "$f" ;;
	72f64ace | 74f74bcf) seed mpr "$f" ;;
	89504e47) seed png "$f" ;;
	*)
		k=$(db_kind "$f")
		[ -z "$k" ] || seed_db "$f" "$k"
		case "${f,,}" in
		*.ini) seed ini "$f" ;;
		*.lnk | *.bon | *.anm | *.fig | *.cam | *.mod.x/* | *.bon.x/* | *.anm.x/*) seed models "$f" ;;
		esac
		;;
	esac
}

seed_all() {
	local tmp=$build/unpacked f
	rm -rf "$tmp"
	mkdir -p "$tmp"
	"$build/mkseeds" "$tmp/gen" || die "mkseeds failed"
	if [ -d "$DEMO" ] && [ -x "$EIFS" ]; then
		cp -r "$DEMO" "$tmp/demo"
		cp -r "$root/demo/src" "$tmp/demo-src" # the INI and PNG sources of the demo
	else
		echo "fuzz: $DEMO or $EIFS missing (run make first): no demo seeds"
	fi
	if [ -d "$SAMPLES" ] && [ -x "$EIFS" ]; then
		cp -r "$SAMPLES" "$tmp/samples"
	else
		echo "fuzz: no samples at $SAMPLES: seeding from the demo data only"
	fi
	chmod -R u+w "$tmp"
	find "$tmp" -type f >"$build/files" # listed first: unpacking adds files
	while read -r f; do
		[ "$(magic "$f")" = 3ce29c01 ] && unpack "$f" "$f.x" 1
		true
	done <"$build/files"
	find "$tmp" -type f | while read -r f; do classify "$f"; done
	rm -rf "$tmp"
}

# ---- run --------------------------------------------------------------------

stat_of() { # NAME LOG
	sed -n "s/^stat::$1: *//p" "$2" | tail -1
}

run_one() { # TARGET
	local t=$1 log=$build/$t.log times rc before after execs
	mkdir -p "$corpus/$t" "$crashes/$t"
	before=$(find "$crashes/$t" -type f | wc -l)
	TIMEFORMAT='%R %U %S'
	# shellcheck disable=SC2086
	times=$( { time nice -n 19 "$build/fuzz_$t" -max_total_time="$seconds" \
		-print_final_stats=1 -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=20 \
		-max_len="$(max_len_of "$t")" -artifact_prefix="$crashes/$t/" ${FUZZ_FLAGS:-} \
		"$corpus/$t" >"$log" 2>&1; } 2>&1 ) && rc=0 || rc=$?
	after=$(find "$crashes/$t" -type f | wc -l)
	execs=$(stat_of number_of_executed_units "$log")
	set -- $times
	printf '%-8s %8.0f %12s %8d\n' "$t" "$1" "${execs:-?}" $((after - before))
	printf '%s %s wall=%s cpu=%s execs=%s crashes=%d rc=%d\n' "$(date -u +%FT%TZ)" "$t" \
		"$1" "$(awk "BEGIN { print $2 + $3 }")" "${execs:-0}" $((after - before)) "$rc" >>"$here/stats.log"
	if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*property failed|artifact_prefix|Test unit written)' "$log" \
			| head -5 | sed 's/^/    /'
		return 1
	fi
}

# GLib's slice allocator hides leaked GStrings and hash tables from
# LeakSanitizer (its slabs stay reachable); plain malloc shows them.
export G_SLICE=always-malloc

cd "$root"
echo "== building fuzz targets ($CC)"
build_all
if [ "${SEED:-1}" = 0 ] && [ -d "$corpus" ]; then
	echo "== reusing $corpus (SEED=0)"
else
	echo "== seeding $corpus"
	seed_all
fi
echo "== fuzzing, $seconds s per target (logs in $build)"
printf '%-8s %8s %12s %8s\n' target seconds execs crashes
failed=0
for t in $targets; do
	run_one "$t" || failed=1
done
[ $failed -eq 0 ] || echo "fuzz: crashes above; inputs are in $crashes"
exit $failed
