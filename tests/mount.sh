#!/bin/sh
# Real mounts of the demo folder and of hand-made archives.
. "$(dirname "$0")/lib.sh"
: "${DEMO:?DEMO must point at the built demo folder}"
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip_all "no /dev/fuse or fusermount3 here"
E=$EIFS
M=$WORK/mnt

# ---- mount the demo folder (read-only: saving is tests/writeback.sh's) ---------
# spinning fixed (EIFS_SPIN, a test hook): the reader's spinning is checked
# below, and the mount would otherwise choose it by measuring
EIFS_SPIN=always do_mount "$DEMO" "$M" -o ro; rc=$?
check "mount returns 0 and creates the mount point" eval '[ $rc -eq 0 ] && mounted "$M"'
check "the tree is ready when mount returns" [ -f "$M/figures.res/unmotr.anm/cidle/hd" ]
check "one daemon serves the mount" [ "$(daemon_pids "$M" | wc -l)" -eq 1 ]

# find through the mount == eifs ls -R, names and sizes
# (every entry here is extensionless in a .res: each has its UTF-8 text view)
(cd "$M" && find . -mindepth 1 -printf '%P %s %y\n' | sort) > "$WORK/find"
"$E" ls -lR "$DEMO" | awk '{ t = substr($1,1,1) == "d" ? "d" : "f"; s = $2; $1=$2=$3=$4=""; sub(/^ +/, ""); print $0, s, t }' | sort > "$WORK/ls"
check "find over the mount equals eifs ls -lR (names, sizes, types)" cmp -s "$WORK/find" "$WORK/ls"
check "all $(wc -l < "$WORK/find") paths listed" [ "$(wc -l < "$WORK/find")" -ge 40 ]

# every file's bytes
bad=0 n=0
(cd "$M" && find . -type f -printf '%P\n') > "$WORK/files"
while IFS= read -r f; do
	n=$((n + 1))
	"$E" cat "$DEMO/$f" | cmp -s - "$M/$f" || { bad=$((bad + 1)); echo "differs: $f"; }
	[ "$(stat -c %s "$M/$f")" -eq "$(wc -c < "$M/$f")" ] || { bad=$((bad + 1)); echo "size: $f"; }
done < "$WORK/files"
check "all $n files read through the mount equal eifs cat, sizes exact" eval '[ "$bad" -eq 0 ] && [ "$n" -gt 30 ]'

# nested archives, backslash directories, case-insensitive lookup
check "nested .anm clips are directories" [ -d "$M/figures.res/unmotr.anm/cidle" ]
check "backslash names are sub-directories" [ -f "$M/quests.res/z1q1.mq/z1q1/map.txt" ]
check "cp1251 names show as UTF-8" [ -f "$M/texts.res/Gipat Medium (тип материала - кожа)" ]
check "lookup in the other ASCII case" cmp -s "$M/TEXTS.RES/Map.Txt" "$M/texts.res/map.txt"
check "directories in the other ASCII case" [ -d "$M/Figures.Res/UNMOTR.ANM/CIDLE" ]
check "Cyrillic case is not folded (as in the game)" [ ! -e "$M/texts.res/Gipat Medium (ТИП материала - кожа)" ]
check "zero-length entries" eval '[ -f "$M/texts.res/zone gz9g" ] && [ ! -s "$M/texts.res/zone gz9g" ]'

# times, modes, inode numbers
check "entry mtime = table timestamp" [ "$(stat -c %Y "$M/texts.res/map.txt")" = 1000000000 ]
check "archive directory mtime = archive file mtime" [ "$(stat -c %Y "$M/texts.res")" = "$(stat -c %Y "$DEMO/texts.res")" ]
check "entries are read-only files" [ "$(stat -c %A "$M/texts.res/map.txt")" = "-r--r--r--" ]
(cd "$M" && find . -printf '%i %P\n' | sort) > "$WORK/ino1"
# listed by inode number (man: an order of its own, kept across reloads),
# views first: their numbers have the top bit set, the others' clear
ls -fi "$M/texts.res" | awk '{ print $1 }' > "$WORK/order"
by_number_views_first() {
	python3 - "$WORK/order" <<'PY'
import sys
inos = [int(l) for l in open(sys.argv[1])]
views = [i for i in inos if i >= 1 << 63]
sys.exit(not (len(inos) > 10 and views and len(views) < len(inos)
              and inos == sorted(inos, key=lambda i: (i < 1 << 63, i))))
PY
}
check "a directory lists its views, then the rest, each by inode number ($(wc -l < "$WORK/order") names)" by_number_views_first

# -o ro: writes fail with EROFS, the archive is untouched
sum=$(md5sum < "$DEMO/texts.res")
( echo x > "$M/texts.res/map.txt" ) 2>"$WORK/w.err"
check "writing an entry fails: read-only file system" grep -q 'Read-only file system' "$WORK/w.err"
( touch "$M/texts.res/new" ) 2>"$WORK/w2.err"
check "creating an entry fails: read-only file system" grep -q 'Read-only file system' "$WORK/w2.err"
check "the archive is untouched" [ "$(md5sum < "$DEMO/texts.res")" = "$sum" ]

# -o ro asks the daemon nothing to open, read and close a file it served
# before: no OPEN, no FLUSH, no RELEASE (the kernel keeps the pages)
if command -v strace > /dev/null; then
	cat "$M/texts.res/map.txt" "$M/texts.res/map.txt" > /dev/null
	pid=$(daemon_pids "$M" | head -n1)
	strace -f -qq -y -e trace=read -o "$WORK/ro.trace" -p "$pid" & tracer=$!
	# names never asked for (one LOOKUP each) until strace shows one:
	# it follows the daemon from then on.  A spinning reader's reads of an
	# empty queue (EAGAIN) are no requests.
	fuse_reads() { grep '^[0-9]* *read([0-9]*</dev/fuse>' "$WORK/ro.trace" | grep -vc EAGAIN; }
	for i in $(seq 50); do
		stat "$M/texts.res/no such entry $$.$i" > /dev/null 2>&1
		[ "$(fuse_reads)" -ge 1 ] && break
		sleep 0.1
	done
	before=$(fuse_reads)
	for _ in $(seq 50); do cat "$M/texts.res/map.txt" > /dev/null; done
	sleep 0.2
	kill $tracer; wait $tracer 2>/dev/null
	asked=$(( $(fuse_reads) - before ))
	if [ "$before" -lt 1 ]; then
		echo "skipped: strace could not follow the daemon (ptrace not allowed?)"
	else
		check "50 reads of a cached file ask a read-only mount nothing (requests read: $asked)" [ "$asked" -le 2 ]
		# after an answer a spinning reader finds the queue empty at least
		# twice before it sleeps (the second look is the first to check
		# the time); one that does not spin, once
		if [ "$(nproc)" -gt 1 ]; then
			check "the reader spins: an empty queue asked again after an answer" \
				awk '/<\/dev\/fuse>/ { run = /EAGAIN/ ? run + 1 : 0; if (run > most) most = run }
				     END { exit !(most >= 2) }' "$WORK/ro.trace"
		fi
	fi
fi

# parallel readers
pids=""
for i in 1 2 3 4 5 6 7 8; do
	( ok=0; while IFS= read -r f; do "$E" cat "$DEMO/$f" | cmp -s - "$M/$f" || ok=1; done < "$WORK/files"; exit $ok ) &
	pids="$pids $!"
done
pr=0; for j in $pids; do wait "$j" || pr=1; done
check "8 parallel readers" [ "$pr" -eq 0 ]

# unmount while a file is open fails cleanly; -z works
exec 3< "$M/texts.res/map.txt"
"$E" umount "$M" 2>"$WORK/busy.err"; rc=$?
check "umount with an open file fails (busy)" eval '[ $rc -ne 0 ] && mounted "$M" && grep -qi '\''busy'\'' "$WORK/busy.err"'
"$E" umount -z "$M"; rc=$?
check "umount -z detaches while busy" eval '[ $rc -eq 0 ] && ! mounted "$M"'
exec 3<&-
check "the daemon exits after the last file closes" no_daemon "$M"

# inode numbers are stable across remounts, and the same in a read-write mount
do_mount "$DEMO" "$M"
(cd "$M" && find . -printf '%i %P\n' | sort) > "$WORK/ino2"
check "inode numbers stable across remounts" cmp -s "$WORK/ino1" "$WORK/ino2"
do_umount "$M"
check "plain umount" not mounted "$M"

# ---- the other ways to mount ----------------------------------------------------
"$E" "$DEMO/texts.res" "$M"
MOUNTS="$MOUNTS $M"
check "eifs SRC MNT form mounts one archive" [ -f "$M/map.txt" ]
do_umount "$M"
if command -v mount.fuse3 >/dev/null; then
	# what mount(8) runs for an fstab line of type fuse.eifs
	PATH=$(dirname "$E"):$PATH mount.fuse3 "$DEMO" "$M" -t eifs -o timeout=5,nofail
	check "mount.fuse3 SRC MNT -t eifs (the fstab path)" [ -d "$M/texts.res" ]
	do_umount "$M"
fi
"$E" mount -f "$DEMO" "$M" 2>"$WORK/fg.err" &
fg=$!
# the kernel's mount is in place before SRC is read: a signal then ends
# the mount as not ready (exit 71, tested below), so wait for an answer
for i in $(seq 50); do mounted "$M" && [ -d "$M/texts.res" ] && break; sleep 0.1; done
check "-f serves in the foreground" eval 'mounted "$M" && [ -d "$M/texts.res" ] && kill -0 $fg'
kill -TERM $fg; wait $fg; rc=$?
check "SIGTERM unmounts a foreground mount cleanly" eval '[ $rc -eq 0 ] && ! mounted "$M"'

# a folder copied right before the mount is listed in the tick of its last
# change: listed again once its time can be trusted (a change in that tick
# would leave none), which the log tells only with -d; another program's
# change is logged as one
rm -rf "$WORK/fresh" && cp -r "$DEMO" "$WORK/fresh"
"$E" mount -d "$WORK/fresh" "$M" 2>"$WORK/fresh.err" &
fg=$!
for i in $(seq 50); do mounted "$M" && [ -d "$M/texts.res" ] && break; sleep 0.1; done
ls "$M" >/dev/null
sleep 3
ls "$M" >/dev/null
check "a folder listed in the tick of its copy is listed again once its time can be trusted (-d tells)" \
	grep -q '^eifs: /: read within seconds of its last change on disk; reading it again' "$WORK/fresh.err"
check "... which is not logged as a change on disk" not grep -q 'changed on disk' "$WORK/fresh.err"
sleep 2.5 # the folder's time, as the change below moves it, is then not racy either
printf 'new' > "$WORK/fresh/another-program.txt"
check "a file another program puts in the folder shows" soon [ -f "$M/another-program.txt" ]
check "... and the log says the folder changed on disk" grep -q '^eifs: /: changed on disk; reading it again' "$WORK/fresh.err"
kill -TERM $fg; wait $fg
# another program's change to an archive shows to stat and ls -l with
# nothing opened through the mount: the kernel's cached attributes are
# told stale as soon as inotify tells eifs of the change
rm -rf "$WORK/ext" && cp -r "$DEMO" "$WORK/ext" && chmod -R u+w "$WORK/ext"
do_mount "$WORK/ext" "$M"
stat -c %s "$M/textures.res/cursor.mmp" "$M/textures.res/cursor.png" "$M/texts.res/map.txt" > /dev/null # cached now
"$E" cat "$WORK/ext/textures.res/ground_grass.mmp" > "$WORK/gg.mmp"
"$E" put "$WORK/ext/textures.res/cursor.mmp" "$WORK/gg.mmp"
check "an entry another program rewrote shows its new size to stat, nothing opened through the mount" \
	soon eval '[ "$(stat -c %s "$M/textures.res/cursor.mmp")" = "$(stat -c %s "$WORK/gg.mmp")" ]'
check "... and so does its view" [ "$(stat -c %s "$M/textures.res/cursor.png")" = "$(stat -c %s "$M/textures.res/ground_grass.png")" ]
chmod a-w "$WORK/ext/textures.res"
check "an archive file another program made read-only shows so on its folder" soon eval '[ "$(stat -c %A "$M/textures.res")" = dr-xr-xr-x ]'
chmod u+w "$WORK/ext/textures.res"
check "... and writable again" soon eval '[ "$(stat -c %A "$M/textures.res")" = drwxr-xr-x ]'
cp "$WORK/ext/texts.res" "$WORK/texts.keep"
printf 'XXXX' | dd of="$WORK/ext/texts.res" conv=notrunc status=none
check "an archive another program spoils shows as a file" soon [ -f "$M/texts.res" ]
cp "$WORK/texts.keep" "$WORK/ext/.texts.new" && mv "$WORK/ext/.texts.new" "$WORK/ext/texts.res" # as a packer saves
check "... and as a folder again once a whole one is renamed over it, with no listing of its folder" soon [ -f "$M/texts.res/map.txt" ]
do_umount "$M"
# links that lead up the tree are not shown: find and cp -r end
mkdir -p "$WORK/loops/a" "$WORK/loops/b" && echo x > "$WORK/loops/a/x.txt" && cp "$DEMO/texts.res" "$WORK/loops/b/"
ln -s .. "$WORK/loops/a/up" && ln -s ../b "$WORK/loops/a/tob" && ln -s ../a "$WORK/loops/b/toa"
do_mount "$WORK/loops" "$M" -o ro
find "$M" > "$WORK/loops.find" 2> "$WORK/loops.err"; rc=$?
check "find of a mount whose links lead up the tree or into each other ends, with no error" \
	eval '[ $rc -eq 0 ] && [ ! -s "$WORK/loops.err" ] && [ "$(wc -l < "$WORK/loops.find")" -lt 100 ]'
check "... the links that lead elsewhere are followed, those up the tree not shown" \
	eval '[ -f "$M/a/tob/texts.res/map.txt" ] && [ -f "$M/b/toa/x.txt" ] && [ ! -e "$M/a/up" ] && [ ! -e "$M/a/tob/toa" ]'
do_umount "$M"
# started with no stdin, stdout or stderr (from a service, say): the pipe
# the daemon reports on must not take one of their numbers
"$E" mount "$DEMO" "$M" <&- >&- 2>&-; rc=$?
check "mounted with fds 0-2 closed: exit 0 and a working mount" eval '[ $rc -eq 0 ] && [ -d "$M/texts.res" ]'
do_umount "$M"
# a daemon runs from /: a mount point given relative to where mount ran
(cd "$WORK" && "$E" mount "$DEMO" mnt); MOUNTS="$MOUNTS $M"
bg=$(pgrep -f -- "eifs mount $DEMO mnt\$")
check "a relative mount point mounts" eval '[ -n "$bg" ] && [ -d "$M/texts.res" ]'
kill -TERM $bg
for i in $(seq 100); do kill -0 $bg 2>/dev/null || break; sleep 0.1; done
check "SIGTERM to the daemon of a relative mount point unmounts it" eval '! kill -0 $bg 2>/dev/null && ! mounted "$M"'

# a signal the mount was started with ignored stays ignored (nohup, a
# script's background job), as with libfuse's own handlers
( trap '' HUP; exec "$E" mount -f "$DEMO" "$M" ) 2>/dev/null & fg=$!
for i in $(seq 50); do mounted "$M" && break; sleep 0.1; done
ls "$M" > /dev/null
kill -HUP $fg
sleep 0.5
check "SIGHUP ignored when the mount started stays ignored" eval 'kill -0 $fg 2>/dev/null && mounted "$M" && [ -d "$M/texts.res" ]'
kill -TERM $fg; wait $fg; rc=$?
check "... and SIGTERM still ends it (exit 0, unmounted)" eval '[ $rc -eq 0 ] && ! mounted "$M"'

# ---- a daemon killed by a fault says so, with where it was ------------------------
if ldd "$E" 2>/dev/null | grep -qE 'lib(a|t)san'; then
	echo "crash report not checked: $E is a sanitizer build (the sanitizer reports instead)"
else
	"$E" mount -f "$DEMO" "$M" 2>"$WORK/crash.err" &
	fg=$!
	for i in $(seq 50); do mounted "$M" && break; sleep 0.1; done
	ls "$M/texts.res" >/dev/null
	sleep 1 # the backtrace's library is loaded 0.1 s after the mount serves
	kill -SEGV $fg; wait $fg; rc=$?
	check "a fault ends the daemon by its own signal (exit 139)" [ $rc -eq 139 ]
	check "the crash report names the signal" grep -q 'fatal signal SIGSEGV; the mount is gone' "$WORK/crash.err"
	check "the crash report has a backtrace of eifs' frames" \
		eval '[ "$(grep -c "eifs(.*)\[0x" "$WORK/crash.err")" -ge 2 ]'
	# a static eifs names every frame by its offset, which addr2line resolves
	{ cat "$WORK/crash.err"
	  sed -n 's/^eifs(+\(0x[0-9a-f]*\)).*/\1/p' "$WORK/crash.err" | addr2line -f -e "$E"
	} > "$WORK/crash.resolved" 2>&1
	check "once the mount serves, the backtrace goes through the libraries too" \
		grep -q '__libc_start_main' "$WORK/crash.resolved"
	check "the dead mount can be unmounted" do_umount "$M"
	# before that, while the top directory is built (held 3 s by the test
	# hook), the report follows eifs' frame pointers
	EIFS_LOAD_DELAY_MS=3000 "$E" mount -f "$DEMO/texts.res" "$M" 2>"$WORK/crash.err" &
	fg=$!
	for i in $(seq 50); do mounted "$M" && break; sleep 0.1; done
	sleep 0.5
	kill -SEGV $fg; wait $fg; rc=$?
	check "a fault while the table is read ends the daemon by its signal" [ $rc -eq 139 ]
	check "and its report has eifs' frames" \
		eval '[ "$(grep -c "eifs(.*)\[0x" "$WORK/crash.err")" -ge 2 ]'
	check "from the walk of frame pointers (no library names: the loader is not asked)" \
		eval '! grep -q "\.so" "$WORK/crash.err"'
	check "the dead mount can be unmounted" do_umount "$M"
	# in the background the report's line goes to syslog, sent by the
	# handler itself (syslog(3), which locks and allocates, could hang a
	# daemon that faulted in malloc); here to a socket of the test's
	python3 - "$WORK/log.sock" "$WORK/syslog.got" <<'PY' &
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
try:
    with open(sys.argv[2], "wb") as out:
        out.write(s.recv(4096))
except OSError:
    pass
PY
	listener=$!
	for i in $(seq 50); do [ -S "$WORK/log.sock" ] && break; sleep 0.1; done
	EIFS_SYSLOG_SOCKET=$WORK/log.sock "$E" mount "$DEMO" "$M"
	ls "$M/texts.res" >/dev/null
	bg=$(daemon_pids "$M")
	sleep 1
	kill -SEGV $bg
	wait $listener
	check "a fault in the background sends its line to syslog from the handler" \
		grep -qx "<26>eifs\[$bg\]: fatal signal SIGSEGV; the mount is gone" "$WORK/syslog.got"
	check "... and the dead mount can be unmounted" do_umount "$M"
fi

# the walk of frame pointers takes code below the marker src/code_end.c for
# eifs' own; the libraries linked statically (no frame pointers) lie above
LIBEIFS=$(dirname "$E")/libeifs.a
if ldd "$E" 2>/dev/null | grep -qE 'lib(a|t)san'; then
	echo "code-end marker not checked: $E is a sanitizer build (no crash report, no marker)"
elif command -v nm >/dev/null && [ -f "$LIBEIFS" ]; then
	nm "$E" > "$WORK/eifs.nm"
	code_end=$(awk '$3 == "eifs_code_end" { print $1 }' "$WORK/eifs.nm")
	nm --defined-only "$LIBEIFS" | awk '$2 == "T" { print $3 }' | sort -u > "$WORK/own.names"
	# the highest function of eifs' own and the lowest of GLib and libfuse, if linked in
	own_max=$(awk 'NR == FNR { own[$1] = 1; next } ($2 == "T" || $2 == "t") && own[$3] { print $1 }' \
		"$WORK/own.names" "$WORK/eifs.nm" | sort | tail -n1)
	lib_min=$(awk '$2 == "T" && ($3 ~ /^g_/ || $3 ~ /^fuse_/) { print $1 }' "$WORK/eifs.nm" | sort | head -n1)
	check "eifs' own functions lie below the code-end marker" \
		eval '[ -n "$code_end" ] && [ -n "$own_max" ] && [ "$((16#$own_max))" -lt "$((16#$code_end))" ]'
	check "the statically linked libraries' code lies above it" \
		eval '[ -z "$lib_min" ] || [ "$((16#$lib_min))" -gt "$((16#$code_end))" ]'
else
	echo "code-end marker not checked: nm or $LIBEIFS missing"
fi

# ---- while archives load, the mount answers the rest ------------------------------
# EIFS_LOAD_DELAY_MS (a test hook) makes each first read of a folder or an
# archive 4 s longer.  A thread loading one must leave the reading of
# requests to others.
S=$WORK/slowload
EIFS_LOAD_DELAY_MS=4000 "$E" mount "$DEMO" "$S"; MOUNTS="$MOUNTS $S"
ls "$S" > /dev/null # the top folder, once
ls "$S/texts.res" > "$WORK/slow.texts" & l1=$!
ls "$S/quests.res" > "$WORK/slow.quests" & l2=$!
# both wait for the mount's answer before the loose file is asked for
in_fuse_wait() { [ "$(cat "/proc/$1/wchan" 2>/dev/null)" = request_wait_answer ]; }
for i in $(seq 30); do in_fuse_wait $l1 && in_fuse_wait $l2 && break; sleep 0.1; done
check "two listings wait for their archives' loads" eval 'in_fuse_wait $l1 && in_fuse_wait $l2'
cat "$S/readme.txt" > "$WORK/slow.readme"; rc=$?
check "a loose file is read while two archives load" eval '[ $rc -eq 0 ] && kill -0 $l1 && kill -0 $l2'
check "and it reads right" cmp -s "$WORK/slow.readme" "$DEMO/readme.txt"
wait $l1; r1=$?; wait $l2; r2=$?
check "the slow listings finish, as the loaded archives list" \
	eval '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ -s "$WORK/slow.texts" ] && ls "$S/texts.res" | cmp -s - "$WORK/slow.texts" && ls "$S/quests.res" | cmp -s - "$WORK/slow.quests"'
do_umount "$S"
check "the daemon exits" no_daemon "$S"

# ---- sources that cannot be mounted -------------------------------------------------
"$E" mount "$WORK/missing" "$M" 2>"$WORK/e1"; rc=$?
check "missing source: exit 66, message on the terminal" eval '[ $rc -eq 66 ] && grep -q '\''missing'\'' "$WORK/e1" && ! mounted "$M"'
# the mount point is made while SRC is read: a failure takes it away again
"$E" mount "$WORK/missing" "$WORK/new/mnt" 2>"$WORK/e1b"; rc=$?
check "missing source: the mount point it made is gone again" \
	eval '[ $rc -eq 66 ] && grep -q '\''missing'\'' "$WORK/e1b" && [ ! -e "$WORK/new" ]'
printf 'not an archive' > "$WORK/plain.res"
"$E" mount "$WORK/plain.res" "$M" 2>"$WORK/e2"; rc=$?
check "not an archive: exit 66 naming the offset" eval '[ $rc -eq 66 ] && grep -q '\''offset 0'\'' "$WORK/e2"'
printf '\074\342\234\001\377\377\377\000\020\000\000\000\000\000\000\000' > "$WORK/huge.res"
"$E" mount "$WORK/huge.res" "$M" 2>"$WORK/e3"; rc=$?
check "16 million declared entries in 16 bytes: refused" eval '[ $rc -eq 66 ] && grep -q '\''past the archive end'\'' "$WORK/e3"'
# one failure, one line: the reason, with the file and the offset
check "each refused source is told in one line ($(wc -l < "$WORK/e1"), $(wc -l < "$WORK/e2"), $(wc -l < "$WORK/e3"))" \
	eval '[ "$(cat "$WORK/e1" "$WORK/e2" "$WORK/e3" | wc -l)" -eq 3 ] && grep -q "^eifs: $WORK/huge.res: offset 4: " "$WORK/e3"'
printf 'a file' > "$WORK/afile"
"$E" mount "$DEMO" "$WORK/afile" 2>"$WORK/e4"; rc=$?
check "a file as the mount point: exit 71, not a directory" \
	eval '[ $rc -eq 71 ] && grep -q '\''Not a directory'\'' "$WORK/e4" && ! mounted "$WORK/afile" && [ "$(cat "$WORK/afile")" = "a file" ]'
check "no daemon left after failed mounts" eval 'no_daemon "$M" && no_daemon "$WORK/afile"'

# ---- one thread (-s): the main thread serves, the loop's thread only mounted -------
do_mount "$DEMO" "$M" -s -o ro; rc=$?
check "-s: mount returns 0, the tree is ready" eval '[ $rc -eq 0 ] && [ -f "$M/figures.res/unmotr.anm/cidle/hd" ]'
check "-s: nested entries read right" sh -c "'$E' cat '$DEMO/texts.res/map.txt' | cmp -s - '$M/texts.res/map.txt'"
check "-s: one daemon with one thread" eval '[ "$(daemon_pids "$M" | wc -l)" -eq 1 ] && [ "$(ls /proc/$(daemon_pids "$M")/task | wc -l)" -eq 1 ]'
check "-s: the device is read blocking (no spinning)" [ "$(fuse_fd_mode "$(daemon_pids "$M")")" = blocking ]
do_umount "$M"
check "-s: the daemon exits" no_daemon "$M"

# ---- spinning for the next request (-o spin) ----------------------------------------
# The reader asks a non-blocking device again for a while after each answer,
# then sleeps in poll: an idle mount must use no CPU, and the files read
# during spinning must read right.
if [ "$(nproc)" -gt 1 ]; then
	EIFS_SPIN=always do_mount "$DEMO" "$M" -o ro; rc=$?
	pid=$(daemon_pids "$M")
	# the reader turns the device non-blocking at its next request after
	# the loop started: a name never asked for is one
	for i in $(seq 20); do
		stat "$M/not here $i" > /dev/null 2>&1
		[ "$(fuse_fd_mode "$pid")" = nonblocking ] && break
		sleep 0.05
	done
	check "spin: the default mount reads the device non-blocking" eval '[ $rc -eq 0 ] && [ "$(fuse_fd_mode "$pid")" = nonblocking ]'
	# a fresh mount: every name and read goes to the spinning reader
	( cd "$M" && find . -type f ) | sort > "$WORK/spin.files"
	bad=0 n=0
	while IFS= read -r f; do
		case $f in *.png|*.ini|*.txt|*.jsonl) continue ;; esac # views: views.sh
		n=$((n + 1))
		"$E" cat "$DEMO/$f" | cmp -s - "$M/$f" || { bad=$((bad + 1)); echo "differs: $f"; }
	done < "$WORK/spin.files"
	check "spin: every entry read file after file is right ($n compared)" eval '[ "$n" -gt 20 ] && [ "$bad" -eq 0 ]'
	sleep 0.2
	t0=$(cpu_ticks "$pid"); sleep 1; t1=$(cpu_ticks "$pid")
	# a reader that never slept would use a whole second (100 ticks)
	check "spin: an idle mount uses no CPU (${t0:-?} -> ${t1:-?} ticks in 1 s)" \
		eval '[ -n "$t0" ] && [ -n "$t1" ] && [ $((t1 - t0)) -le 3 ]'
	# once the threads beyond one waiting reader have left (2 s idle), no
	# thread wakes: no timer, no poll (a laptop's CPU may sleep)
	sleep 2.5
	thread_switches "$pid" > "$WORK/idle.before"; sleep 3; thread_switches "$pid" > "$WORK/idle.after"
	woke=$(join "$WORK/idle.before" "$WORK/idle.after" | awk '$3 != $2 { print $1 ": " $2 " -> " $3 }')
	check "an idle mount wakes no thread in 3 s (${woke:-none woke})" \
		eval '[ -s "$WORK/idle.before" ] && [ -z "$woke" ]'
	do_umount "$M"
	check "spin: the daemon exits" no_daemon "$M"
else
	echo "skip: spin checks need two CPUs (the mount does not spin on one)"
fi
# whether to spin is chosen by measuring both ways (spin.h; its choices are
# unit tests): the choice is made in a real mount, logged with -d, and the
# device then blocks when the reader sleeps
if [ "$(nproc)" -gt 1 ]; then
	"$E" mount -f -d "$DEMO" "$M" 2>"$WORK/choice.log" & fg=$!
	for i in $(seq 50); do mounted "$M" && [ -d "$M/texts.res" ] && break; sleep 0.1; done
	# every name of the tree looked at, its files read: hundreds of quick
	# requests (the first trials take 128 answers), until the choice
	chosen() { grep -E 'the reader (spins|sleeps) from now on' "$WORK/choice.log" | tail -n1; }
	for _ in $(seq 10); do
		find "$M" -type f -exec cat {} + > /dev/null 2>&1
		[ -n "$(chosen)" ] && break
	done
	# a few requests more: the device blocks when the reader sleeps (it
	# was non-blocking for the trials), and not when it spins
	ls -lR "$M" > /dev/null 2>&1
	case $(chosen) in *sleeps*) want=blocking ;; *) want=nonblocking ;; esac
	mode=$(fuse_fd_mode $fg)
	kill -TERM $fg; wait $fg
	check "spin: the reader chose by measuring both ways: $(chosen | sed 's/^eifs: //')" \
		grep -Eq 'the reader (spins|sleeps) from now on: the next request came [0-9]+ us after an answer when it spun, [0-9]+ us when it slept' "$WORK/choice.log"
	check "spin: the device is $want as the choice says (it is $mode)" [ "$mode" = "$want" ]
	EIFS_SPIN=never do_mount "$DEMO" "$M" -o ro; rc=$?
	ls -R "$M" > /dev/null
	check "spin: a reader that sleeps reads the device blocking" eval '[ $rc -eq 0 ] && [ "$(fuse_fd_mode "$(daemon_pids "$M")")" = blocking ]'
	do_umount "$M"
fi
# ---- a small entry's bytes come with its open ----------------------------
# The open of a small entry puts its bytes in the kernel's cache (fs.c,
# store_bytes): a first read asks no READ.  Requests seen in the -d log.
cp -R "$DEMO" "$WORK/store"
"$E" mount -f -d "$WORK/store" "$M" 2>"$WORK/store.log" & fg=$!
for i in $(seq 50); do mounted "$M" && [ -d "$M/texts.res" ] && break; sleep 0.1; done
mark=1
since() { # OPCODE: its requests logged since the mark (each is logged before its answer)
	tail -n +"$mark" "$WORK/store.log" | grep -ac "opcode: $1 ("
}
f=$M/texts.res/map.txt
mark=$(($(wc -l < "$WORK/store.log") + 1))
"$E" cat "$DEMO/texts.res/map.txt" | cmp -s - "$f"; rc=$?
check "store: a small entry's first read is right and asks no READ ($(since OPEN) OPEN, $(since READ) READ)" \
	eval '[ $rc -eq 0 ] && [ "$(since OPEN)" -ge 1 ] && [ "$(since READ)" -eq 0 ]'
v="texts.res/Gipat Medium (тип материала - кожа).txt" # a view, made at its open
mark=$(($(wc -l < "$WORK/store.log") + 1))
"$E" cat "$DEMO/$v" | cmp -s - "$M/$v"; rc=$?
check "store: a small view's first read is right and asks no READ ($(since OPEN) OPEN, $(since READ) READ)" \
	eval '[ $rc -eq 0 ] && [ "$(since OPEN)" -ge 1 ] && [ "$(since READ)" -eq 0 ]'
# pages the kernel dropped are asked for again: a stored inode is not
# taken for one whose pages the kernel still has
dd if="$f" iflag=nocache count=0 status=none
mark=$(($(wc -l < "$WORK/store.log") + 1))
"$E" cat "$DEMO/texts.res/map.txt" | cmp -s - "$f"; rc=$?
check "store: once the kernel dropped the pages, a read asks for them and is right ($(since READ) READ)" \
	eval '[ $rc -eq 0 ] && [ "$(since READ)" -ge 1 ]'
# another program changes entries while readers open them again and again:
# opens that store and opens beside other opens (which must not: their
# reads may hold the pages locked, waiting for the very thread storing).
# Every read is an entry's old bytes or one of its versions (maybe cut at
# the size the kernel had: a file open across a change), the mount
# answers all along (no read waits 20 s), and reads what the archive has
# at the end.
x="texts.res/Gipat Medium (тип материала - кожа)"
exec 4<"$M/$x" # held open across the changes
"$E" ls "$WORK/store/texts.res" | grep -v '\.txt$' | head -8 > "$WORK/storm.list"
k=0
while IFS= read -r e; do
	k=$((k + 1))
	"$E" cat "$WORK/store/texts.res/$e" > "$WORK/storm.orig.$k"
done < "$WORK/storm.list"
rm -f "$WORK/storm.stop" "$WORK/storm.bad" "$WORK/storm.reads"
storm_reader() {
	while [ ! -e "$WORK/storm.stop" ]; do
		k=0
		while IFS= read -r e; do
			k=$((k + 1))
			out=$(timeout -s KILL 20 cat "$M/texts.res/$e" 2>&1) || { echo "failed: $e: $out" >> "$WORK/storm.bad"; continue; }
			echo >> "$WORK/storm.reads"
			[ "$out" = "$(cat "$WORK/storm.orig.$k")" ] && continue
			n=${out#version }
			n=${n%%[!0-9]*}
			case "version $n of $e" in
			"$out"*) [ -n "$n" ] || echo "bad: $e: $out" >> "$WORK/storm.bad" ;;
			*) echo "bad: $e: $out" >> "$WORK/storm.bad" ;;
			esac
		done < "$WORK/storm.list"
	done
}
readers=
for _ in 1 2 3 4; do storm_reader & readers="$readers $!"; done
for i in $(seq 30); do
	e=$(sed -n "$((i % 8 + 1))p" "$WORK/storm.list")
	printf 'version %s of %s\n' "$i" "$e" | "$E" put "$WORK/store/texts.res/$e" - || break
done
touch "$WORK/storm.stop"
wait $readers
"$E" cat "$WORK/store/$x" | cmp -s - "$M/$x"; held=$?
exec 4<&-
bad=0
while IFS= read -r e; do
	"$E" cat "$WORK/store/texts.res/$e" | cmp -s - "$M/texts.res/$e" || { bad=$((bad + 1)); echo "differs: $e"; }
done < "$WORK/storm.list"
reads=$(wc -l < "$WORK/storm.reads")
[ -s "$WORK/storm.bad" ] && head -5 "$WORK/storm.bad"
check "store: $i changes by another program under 4 readers ($reads reads): every read whole or cut, none failed" \
	eval '[ "$i" -eq 30 ] && [ "$reads" -gt 50 ] && [ ! -s "$WORK/storm.bad" ]'
check "store: after the changes every entry reads as the archive has it" \
	eval '[ "$bad" -eq 0 ] && [ "$held" -eq 0 ] && timeout 5 ls "$M/texts.res" > /dev/null'
# an entry open for writing reads as written, not as the archive has it:
# written through a descriptor kept open (no close, so no flush has saved
# it), read through another
g=$M/texts.res/ARMOR\ Bone_Sword
python3 -c '
import os, sys
w = os.open(sys.argv[1], os.O_WRONLY | os.O_TRUNC)
os.write(w, b"held open\n")
r = os.open(sys.argv[1], os.O_RDONLY)
sys.stdout.buffer.write(os.read(r, 100))
os.close(r)
os.close(w)' "$g" > "$WORK/held"
check "store: a read while a writer holds the entry open shows what it wrote" sh -c "printf 'held open\\n' | cmp -s - '$WORK/held'"
check "store: and after it closed" sh -c "printf 'held open\\n' | cmp -s - '$g'"
printf 'written\n' > "$f"
check "store: an entry read before, then written, reads as written" sh -c "printf 'written\\n' | cmp -s - '$f'"
kill -TERM $fg; wait $fg
check "store: the archive holds what was written" sh -c "'$E' cat '$WORK/store/texts.res/map.txt' | grep -qx written"
do_mount "$DEMO" "$M" -o ro,spin=0; rc=$?
check "spin=0: the device is read blocking" eval '[ $rc -eq 0 ] && [ "$(fuse_fd_mode "$(daemon_pids "$M")")" = blocking ]'
check "spin=0: entries read right" sh -c "'$E' cat '$DEMO/texts.res/map.txt' | cmp -s - '$M/texts.res/map.txt'"
do_umount "$M"
for v in x -1 10001 ''; do
	"$E" mount "$DEMO" "$M" -o "spin=$v" 2>"$WORK/spin.err"; rc=$?
	check "spin='$v': refused with exit 64 and a reason" \
		eval '[ $rc -eq 64 ] && grep -q "bad option .spin=" "$WORK/spin.err" && ! mounted "$M"'
done
check "no daemon left after the spin checks" no_daemon "$M"
for v in -1 99999999999999999999999 12Q; do
	"$E" mount "$DEMO" "$M" -o "cache_size=$v" 2>"$WORK/cache.err"; rc=$?
	check "cache_size='$v': refused with exit 64 and a reason" \
		eval '[ $rc -eq 64 ] && grep -q "bad option .cache_size=" "$WORK/cache.err" && ! mounted "$M"'
done
do_mount "$DEMO" "$M" -o fsname=my-game; rc=$?
check "-o fsname= names the mount as given" eval '[ $rc -eq 0 ] && findmnt -n -o SOURCE "$M" | grep -qx my-game'
# another mount on top of a FUSE mount would be unmounted in its place
"$E" mount "$DEMO/texts.res" "$M" 2>"$WORK/stack.err"; rc=$?
# the refused command's daemon may still be exiting (slowly under ASan,
# whose leak check runs at exit): the count is of the daemons left
for _ in $(seq 100); do [ "$(daemon_pids "$M" | wc -l)" -le 1 ] && break; sleep 0.1; done
check "a mount on a mount point a FUSE file system holds: refused, exit 71, the first one kept" \
	eval '[ $rc -eq 71 ] && grep -q "mounted there already" "$WORK/stack.err" && [ -d "$M/texts.res" ] && [ "$(daemon_pids "$M" | wc -l)" -eq 1 ]'
do_umount "$M"
"$E" umount -z 2>"$WORK/umz.err"; rc=$?
check "umount -z without a mount point: a usage error (64)" eval '[ $rc -eq 64 ] && grep -q usage "$WORK/umz.err"'

# ---- where the serving threads run ---------------------------------------------------
# The first thread mounts on another CPU than the main thread's and stays
# off it until the top directory is built; then every thread may run on
# every CPU the daemon was given.  On one CPU nothing is placed.
cpus_of_threads() { # PID: the distinct Cpus_allowed_list of its threads
	cat /proc/"$1"/task/*/status 2>/dev/null | sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' | sort -u
}
if [ "$(nproc)" -gt 1 ]; then
	mask=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)
	do_mount "$DEMO" "$M" -o ro; rc=$?
	pid=$(daemon_pids "$M")
	for i in $(seq 20); do [ "$(fuse_fd_mode "$pid")" = nonblocking ] && break; sleep 0.05; done
	for f in texts.res/map.txt figures.res/unmotr.anm/cidle/hd quests.res/z1q1.mq/z1q1/map.txt; do
		cat "$M/$f" >/dev/null &
	done
	wait
	check "cpus: once ready, every thread may run on every CPU ($mask): $(cpus_of_threads "$pid" | tr '\n' ' ')" \
		eval '[ $rc -eq 0 ] && [ "$(cpus_of_threads "$pid")" = "$mask" ]'
	do_umount "$M"
fi
first=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status | cut -d, -f1 | cut -d- -f1)
taskset -c "$first" "$EIFS" mount "$DEMO" "$M" -o ro; rc=$?
MOUNTS="$MOUNTS $M"
check "cpus: a daemon given one CPU mounts and serves" \
	eval '[ $rc -eq 0 ] && "$E" cat "$DEMO/texts.res/map.txt" | cmp -s - "$M/texts.res/map.txt"'
check "cpus: ... and its threads stay on it" [ "$(cpus_of_threads "$(daemon_pids "$M")")" = "$first" ]
do_umount "$M"
check "cpus: no daemon left" no_daemon "$M"

# ---- threads left idle after a burst go away ---------------------------------------
# Large reads pass the reading to another thread, started when none waits:
# programs reading at once leave several.  Those that wait 2 s while
# another waits too end; one stays ready beside the reader.
serve_threads() { grep -lx eifs-serve /proc/"$1"/task/*/comm 2>/dev/null | wc -l; }
I=$WORK/idle
mkdir -p "$I/src"
for i in $(seq 32); do head -c 2000000 /dev/urandom > "$I/src/big$i.dat"; done
"$E" pack "$I/src" "$I/big.res" > /dev/null
next=1 # the next file no burst read yet (so that its reads reach the daemon)
# burst: eight files read at once, up to twice until more than two threads
# served them (a loaded machine may run the readers one after another);
# most threads seen in $peak, 1 when a file read wrong
burst() {
	peak=0
	for _ in 1 2; do
		first=$next; next=$((next + 8)); pids=""
		for i in $(seq "$first" $((next - 1))); do cat "$M/big$i.dat" > "$I/out$i" & pids="$pids $!"; done
		while kill -0 $pids 2>/dev/null; do
			c=$(serve_threads "$pid"); [ "$c" -gt "$peak" ] && peak=$c
			sleep 0.01
		done
		wait $pids
		c=$(serve_threads "$pid"); [ "$c" -gt "$peak" ] && peak=$c
		for i in $(seq "$first" $((next - 1))); do cmp -s "$I/src/big$i.dat" "$I/out$i" || return 1; done
		[ "$peak" -gt 2 ] && return 0
	done
}
settle() { # the serving threads once those that may leave have
	for _ in $(seq 50); do [ "$(serve_threads "$pid")" -le 2 ] && break; sleep 0.2; done
	serve_threads "$pid"
}
do_mount "$I/big.res" "$M" -o ro; rc=$?
pid=$(daemon_pids "$M")
burst; ok=$?
check "idle threads: large reads at once start several ($peak), and read right" \
	eval '[ $rc -eq 0 ] && [ $ok -eq 0 ] && [ "$peak" -gt 2 ]'
left=$(settle)
check "idle threads: within 10 s only the reader and one more are left ($left)" [ "$left" -eq 2 ]
burst; ok=$?
check "idle threads: a second burst starts threads again ($peak), and reads right" \
	eval '[ $ok -eq 0 ] && [ "$peak" -gt 2 ]'
left=$(settle)
check "idle threads: and they leave again ($left)" [ "$left" -eq 2 ]
do_umount "$M"
check "idle threads: the daemon exits" no_daemon "$M"

# ---- a signal before the mount is ready ---------------------------------------------
# The kernel's mount is in place while SRC is read (held 3 s by a test hook);
# SIGTERM to the daemon then ends it: the command says so and exits 71, and
# the mount and the mount point it made are gone.
SIG=$WORK/sig/mnt
EIFS_OPEN_DELAY_MS=3000 "$E" mount "$DEMO" "$SIG" 2>"$WORK/sig.err" & cmd=$!
MOUNTS="$MOUNTS $SIG"
for _ in $(seq 50); do mounted "$SIG" && break; sleep 0.1; done
daemon=$(daemon_pids "$SIG" | grep -vx "$cmd")
check "signal before ready: the kernel's mount is in place while SRC is read" \
	eval 'mounted "$SIG" && [ -n "$daemon" ] && kill -0 "$cmd"'
[ -n "$daemon" ] && kill -TERM $daemon
wait $cmd; rc=$?
check "signal before ready: the command exits 71 and says why (rc $rc)" \
	eval '[ $rc -eq 71 ] && grep -q "stopped by a signal before the mount was ready" "$WORK/sig.err"'
check "signal before ready: the mount and the folders it made for it are gone" \
	eval '! mounted "$SIG" && [ ! -e "$WORK/sig" ] && [ -d "$WORK" ]'
check "signal before ready: no daemon left" no_daemon "$SIG"

# the mount command ended (a script's kill of it) before the mount was
# ready: the script takes the mount for failed, so none is left
EIFS_OPEN_DELAY_MS=2000 "$E" mount "$DEMO" "$WORK/parent/mnt" 2>/dev/null & cmd=$!
MOUNTS="$MOUNTS $WORK/parent/mnt"
sleep 0.5
kill -TERM $cmd; wait $cmd
for _ in $(seq 60); do [ -z "$(daemon_pids "$WORK/parent/mnt")" ] && break; sleep 0.1; done
check "the mount command killed before the mount was ready: no mount, no daemon, no folder made for it left" \
	eval '! mounted "$WORK/parent/mnt" && no_daemon "$WORK/parent/mnt" && [ ! -e "$WORK/parent" ]'

# ---- the daemon forked (where the kernel cannot share memory with it) --------------
EIFS_FORK_DAEMON=1 do_mount "$DEMO" "$M" -o ro; rc=$?
check "forked daemon: mount returns 0, the tree is ready" eval '[ $rc -eq 0 ] && [ -f "$M/figures.res/unmotr.anm/cidle/hd" ]'
check "forked daemon: nested entries read right" sh -c "'$E' cat '$DEMO/texts.res/map.txt' | cmp -s - '$M/texts.res/map.txt'"
do_umount "$M"
check "forked daemon: it exits" no_daemon "$M"
EIFS_FORK_DAEMON=1 "$E" mount "$WORK/missing" "$M" 2>"$WORK/e1c"; rc=$?
check "forked daemon: a missing source still exits 66 on the terminal" eval '[ $rc -eq 66 ] && grep -q '\''missing'\'' "$WORK/e1c" && ! mounted "$M"'

# ---- a mount point inside the source folder, and a source inside the mount point ---
mkdir -p "$WORK/nest" && cp "$DEMO/texts.res" "$WORK/nest/"
timeout 20 "$EIFS" mount "$WORK/nest" "$WORK/nest/mnt"; rc=$?
MOUNTS="$MOUNTS $WORK/nest/mnt"
check "a mount point inside the source folder: mounted (read before the mount)" \
	eval '[ $rc -eq 0 ] && [ -d "$WORK/nest/mnt/texts.res" ] && "$E" cat "$WORK/nest/texts.res/map.txt" | cmp -s - "$WORK/nest/mnt/texts.res/map.txt"'
# the mount point is not shown in the mount (a look at it there, or a
# relisting of its folder after a change, would be a request to the mount
# itself, which would wait for itself)
timeout -s KILL 10 ls "$WORK/nest/mnt/mnt" >/dev/null 2>&1; rc=$?
touch "$WORK/nest/new.txt"
timeout -s KILL 10 ls "$WORK/nest/mnt" > "$WORK/nest.ls" 2>&1; rc2=$?
check "... the mount point is not in it, and a relisting after a change does not hang" \
	eval '[ $rc -ne 137 ] && [ $rc2 -eq 0 ] && grep -qx new.txt "$WORK/nest.ls" && ! grep -qx mnt "$WORK/nest.ls"'
do_umount "$WORK/nest/mnt"
# links in SRC that lead to the mount point or into it, also from a source
# the mount point is not in: not shown, never looked through
ln -s mnt "$WORK/nest/l" && ln -s ../nest/mnt/texts.res "$WORK/nest/l2"
mkdir -p "$WORK/apart/src" && ln -s "$WORK/apart/mnt" "$WORK/apart/src/tomnt" && cp "$DEMO/texts.res" "$WORK/apart/src/"
timeout 20 "$EIFS" mount "$WORK/nest" "$WORK/nest/mnt"
timeout 20 "$EIFS" mount "$WORK/apart/src" "$WORK/apart/mnt"
MOUNTS="$MOUNTS $WORK/apart/mnt"
touch "$WORK/nest/new2.txt" "$WORK/apart/src/new.txt"
timeout -s KILL 10 ls "$WORK/nest/mnt" > "$WORK/nest.ls" 2>&1; rc=$?
timeout -s KILL 10 ls "$WORK/apart/mnt" > "$WORK/apart.ls" 2>&1; rc2=$?
check "links to or into the mount point are not shown, and relisting does not hang" \
	eval '[ $rc -eq 0 ] && [ $rc2 -eq 0 ] && grep -qx new2.txt "$WORK/nest.ls" && grep -qx new.txt "$WORK/apart.ls" && ! grep -qx -e l -e l2 -e tomnt "$WORK/nest.ls" "$WORK/apart.ls"'
do_umount "$WORK/apart/mnt"
rm -f "$WORK/nest/l" "$WORK/nest/l2" "$WORK/nest/new2.txt"
do_umount "$WORK/nest/mnt"
check "and its daemon exits" no_daemon "$WORK/nest/mnt"
# a stop signal while SRC is read before the mount (a mount point inside
# it): the command exits 71 and the folders made for the mount go
EIFS_OPEN_DELAY_MS=3000 "$E" mount -f "$WORK/nest" "$WORK/nest/made/mnt" 2>"$WORK/nestsig.err" & fg=$!
sleep 1
kill -TERM $fg; wait $fg; rc=$?
check "a stop while SRC is read for a mount point inside it: exit 71, the folders made are gone" \
	eval '[ $rc -eq 71 ] && grep -q "stopped by a signal before the mount was ready" "$WORK/nestsig.err" && [ ! -e "$WORK/nest/made" ] && ! mounted "$WORK/nest/made/mnt"'
rm -f "$WORK/nest/new.txt"
for mnt in "$WORK/nest" "$WORK"; do
	timeout 20 "$EIFS" mount "$WORK/nest/texts.res" "$mnt" 2>"$WORK/e5"; rc=$?
	check "a source inside the mount point ($mnt): refused, exit 64" \
		eval '[ $rc -eq 64 ] && grep -q '\''hide it from eifs'\'' "$WORK/e5" && ! mounted "$mnt"'
done


# ---- names that must not escape or break paths ------------------------------------
rawres "$WORK/names.res" '..' 'dotdot' '.' 'dot' 'a/b' 'slash' '' 'empty' 'x\000y' 'nul' \
	'\\lead\\\\double\\' 'lead' 'Same' 'first' 'SAME' 'second' 'sub\\file' 'f1' 'SUB\\other' 'f2' \
	'bad\230byte' 'undef'
"$E" mount -f "$WORK/names.res" "$M" 2>"$WORK/names.log" &
fg=$!
MOUNTS="$MOUNTS $M"
for i in $(seq 50); do mounted "$M" && break; sleep 0.1; done
# (every entry here is extensionless in a .res: each has its UTF-8 text view)
(cd "$M" && find . -mindepth 1 \( -type d -printf '%P/\n' \) -o \( -printf '%P=' -exec cat {} \; -printf '\n' \) | sort) > "$WORK/names.find"
cat > "$WORK/names.want" <<'WANT'
%2E%2E=dotdot
%2E=dot
%EMPTY=empty
SAME~0a5e7f3b=second
Same=first
a%2Fb=slash
bad%98byte=undef
lead/double=lead
lead/
sub/file=f1
sub/other=f2
sub/
x%00y=nul
%2E%2E.txt=dotdot
%2E.txt=dot
%EMPTY.txt=empty
SAME~0a5e7f3b.txt=second
Same.txt=first
a%2Fb.txt=slash
bad%98byte.txt=undef
lead/double.txt=lead
sub/file.txt=f1
sub/other.txt=f2
x%00y.txt=nul
WANT
sort -o "$WORK/names.want" "$WORK/names.want"
check "odd names are rewritten, none escapes the mount" cmp "$WORK/names.find" "$WORK/names.want"
check "each rewrite logged with archive and entry" [ "$(grep -c 'names.res[^:]*: entry' "$WORK/names.log")" -ge 8 ]
kill -TERM $fg; wait $fg
# in the background the same lines go to syslog: a listener of our own on
# /dev/log, where no syslog daemon has one
if [ ! -e /dev/log ] && [ -w /dev ]; then
	python3 - "$WORK/syslog.out" <<'PY' & listener=$!
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
s.settimeout(15)
with open(sys.argv[1], "wb", buffering=0) as out:
    try:
        while True:
            out.write(s.recv(65536) + b"\n")
    except socket.timeout:
        pass
os.unlink("/dev/log")
PY
	for _ in $(seq 50); do [ -S /dev/log ] && break; sleep 0.1; done
	do_mount "$WORK/names.res" "$M"
	find "$M" > /dev/null
	do_umount "$M"
	sleep 0.5
	kill $listener 2>/dev/null; wait $listener 2>/dev/null
	rm -f /dev/log
	check "in the background the log goes to syslog (each rewrite, as eifs)" \
		eval '[ "$(grep -c "eifs.*names.res[^:]*: entry" "$WORK/syslog.out")" -ge 8 ]'
else
	echo "SKIP: /dev/log is there (a syslog daemon's): the background log not checked"
fi

# ---- bad entries: EIO and a log line, the rest stays readable ---------------------
rawres "$WORK/oob.res" 'good' 'hello' 'bad' 'world'
# make entry 1's length run past the end: table at 16+10, entry 1 length at +22+4
printf '\377\377\000\000' | dd of="$WORK/oob.res" bs=1 seek=$((16 + 10 + 22 + 4)) conv=notrunc 2>/dev/null
"$E" mount -f "$WORK/oob.res" "$M" 2>"$WORK/oob.log" &
fg=$!
for i in $(seq 50); do mounted "$M" && break; sleep 0.1; done
check "a good entry next to a bad one reads" [ "$(cat "$M/good")" = hello ]
cat "$M/bad" > /dev/null 2>"$WORK/oob.err"
check "the bad entry gives EIO" grep -q 'Input/output error' "$WORK/oob.err"
check "one log line names archive, entry and offset" grep -q 'oob.res/bad: data at 21+65535 is past the archive end' "$WORK/oob.log"
kill -TERM $fg; wait $fg

finish
