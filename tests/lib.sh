# Shared by the shell tests: assertions, mounts that are always cleaned up,
# and a raw archive writer for inputs eifs' own packer refuses to make.
set -u

: "${EIFS:?EIFS must point at the eifs binary (make check sets it)}"
: "${TESTTMP:=${TMPDIR:-/tmp}/eifs-tests}"
PASSED=0
FAILED=0
MOUNTS=""
WORK=$(mktemp -d "$TESTTMP.XXXXXX" 2>/dev/null || { mkdir -p "$TESTTMP" && mktemp -d "$TESTTMP/t.XXXXXX"; })

# Under a sanitizer (make check with ASAN_OPTIONS or UBSAN_OPTIONS set, as
# .ci/run does) every process of the test writes its reports to files here:
# a daemon in the background writes to /dev/null otherwise, and its leaks
# and errors went unseen (finish looks at them).
SANITIZER_LOGS=
if [ -n "${ASAN_OPTIONS:-}${UBSAN_OPTIONS:-}" ]; then
	SANITIZER_LOGS=$WORK/sanitizer
	mkdir -p "$SANITIZER_LOGS"
	export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}log_path=$SANITIZER_LOGS/asan"
	export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}${UBSAN_OPTIONS:+:}log_path=$SANITIZER_LOGS/ubsan"
fi

pass() { PASSED=$((PASSED + 1)); echo "ok: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
# check "description" COMMAND...: COMMAND alone is the check; a compound
# condition goes through eval ('A && B'), or the shell would run B after
# check and nothing would assert it.
check() {
	desc=$1; shift
	if "$@"; then pass "$desc"; else fail "$desc"; fi
}
not() { ! "$@"; }
soon() { # soon CMD...: CMD succeeds within 5 s (a release comes after close returns)
	for _ in $(seq 100); do "$@" && return 0; sleep 0.05; done
	return 1
}
skip_all() { echo "SKIP: $*"; exit 77; }

daemon_pids() { # the eifs daemons serving mount point $1
	pgrep -f -- "eifs.* $1( |\$)" || true
}

# no_daemon MNT: true once no daemon serves MNT.  A daemon leaves a moment
# after its unmount returns (the kernel tells it, then it cleans up), longer
# on a loaded machine: give it up to 10 s.
no_daemon() {
	for _ in $(seq 100); do
		[ -z "$(daemon_pids "$1")" ] && return 0
		sleep 0.1
	done
	return 1
}

# Unmounts everything this test mounted and kills what is left, however the
# test ends: no daemon may outlive a test.
cleanup() {
	for m in $MOUNTS; do
		fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
		for p in $(daemon_pids "$m"); do kill -9 "$p" 2>/dev/null || true; done
	done
	for m in ${LOOP_MOUNTS:-}; do umount -l "$m" 2>/dev/null || true; done
	[ -n "${KEEP_WORK:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mounted() { grep -q " $1 fuse" /proc/mounts; }

# fuse_fd_mode PID: "nonblocking" or "blocking", as the one daemon PID
# reads /dev/fuse (O_NONBLOCK is 04000 in fdinfo's octal flags); nothing
# when PID is not one process with such a descriptor
fuse_fd_mode() {
	case $1 in ''|*[!0-9]*) return 1 ;; esac
	for fd in /proc/"$1"/fd/*; do
		[ "$(readlink "$fd")" = /dev/fuse ] || continue
		flags=$(awk '$1 == "flags:" { print $2 }' /proc/"$1"/fdinfo/"${fd##*/}")
		[ -n "$flags" ] || return 1
		if [ $((0$flags & 04000)) -ne 0 ]; then echo nonblocking; else echo blocking; fi
		return 0
	done
	return 1
}

# cpu_ticks PID: user + system clock ticks the one process PID used so
# far, every thread's (fields 14 and 15 of /proc/PID/stat, after the
# name); nothing when PID is not one live process
cpu_ticks() {
	case $1 in ''|*[!0-9]*) return 1 ;; esac
	sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | awk '{ print $12 + $13 }'
}

# thread_switches PID: "TID SWITCHES" for each thread of PID, sorted by
# TID (for join): how often it went to sleep or was put aside so far
thread_switches() {
	local t
	for t in /proc/"$1"/task/*; do
		awk -v tid="${t##*/}" '/ctxt_switches/ { s += $2 } END { if (NR) print tid, s }' "$t/status" 2>/dev/null
	done | sort
}

# daemon_gone PID LOG: true when the daemon PID died on its own; then prints
# what it logged last but libfuse's request chatter (a crash's reason).
daemon_gone() {
	kill -0 "$1" 2>/dev/null && return 1
	echo "the daemon $1 died; its last lines:"
	grep -v -E '^(unique: |   |INIT: |flags=|max_|FUSE library|time_gran|congestion|max_background)' "$2" | tail -n 30 | sed 's/^/    /'
	return 0
}

# do_mount SRC MNT [ARGS...]: mounts with eifs and remembers MNT for cleanup.
do_mount() {
	src=$1 mnt=$2; shift 2
	MOUNTS="$MOUNTS $mnt"
	"$EIFS" mount "$src" "$mnt" "$@"
}

do_umount() {
	fusermount3 -u "$1"
}

# Fails the test for each sanitizer report a process of it wrote (not the
# notes of one run under strace, where LeakSanitizer cannot work), once
# every daemon of the test has exited: those still mounted are unmounted
# first (as cleanup would, after the reports were looked at).
sanitizer_reports() {
	[ -n "$SANITIZER_LOGS" ] || return 0
	for m in $(printf '%s\n' $MOUNTS | sort -u); do # a test mounts one point many times
		if mounted "$m"; then
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
		fi
		no_daemon "$m" || true
	done
	for f in "$SANITIZER_LOGS"/*; do
		[ -f "$f" ] || continue
		if grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer: detected)|runtime error:' "$f"; then
			fail "a sanitizer report from process ${f##*.}:"
			head -40 "$f"
		fi
	done
}

finish() {
	sanitizer_reports
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" -eq 0 ]
	exit $?
}

# ---- raw archives --------------------------------------------------------
# le32 N / le16 N: little-endian bytes on stdout.
le32() { printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)))"; }
le16() { printf "$(printf '\\%03o\\%03o' $(($1 & 255)) $((($1 >> 8) & 255)))"; }

# rawres OUT NAME DATA [NAME DATA]...: an archive with the given names (printf
# escapes allowed, e.g. 'a\\b' or 'x\000y') and contents, data packed from
# offset 16, every chain link -1.  Enough to feed the reader odd names.
rawres() {
	out=$1; shift
	: > "$out.data"; : > "$out.names"; : > "$out.table"
	n=0 off=16
	while [ $# -ge 2 ]; do
		printf "$1" > "$out.name1"; printf '%s' "$2" > "$out.body1"
		nlen=$(stat -c %s "$out.name1"); dlen=$(stat -c %s "$out.body1")
		noff=$(stat -c %s "$out.names")
		{ le32 -1; le32 "$dlen"; le32 "$off"; le32 1000000000; le16 "$nlen"; le32 "$noff"; } >> "$out.table"
		cat "$out.body1" >> "$out.data"; cat "$out.name1" >> "$out.names"
		off=$((off + dlen)); n=$((n + 1)); shift 2
	done
	{ printf '\074\342\234\001'; le32 "$n"; le32 "$off"; le32 "$(stat -c %s "$out.names")"
	  cat "$out.data" "$out.table" "$out.names"; } > "$out"
	rm -f "$out.data" "$out.names" "$out.table" "$out.name1" "$out.body1"
}
