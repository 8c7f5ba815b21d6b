#!/bin/sh
# Eight readers (find, cat of every file, PNG and text views, reads at
# random offsets) against writers saving INI views and raw entries of the
# same archives, for STRESS_SECONDS (default 60).  Every read must succeed,
# every version read must be whole (the two numbers a writer puts in one
# save are equal), and the daemon's memory must stay flat after warm-up.
. "$(dirname "$0")/lib.sh"
: "${DEMO:?DEMO must point at the built demo folder}"
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip_all "no /dev/fuse or fusermount3 here"
E=$EIFS
G=$WORK/game
M=$WORK/mnt
SECONDS_RUN=${STRESS_SECONDS:-60}
Q=quests.res/z1q1.mq/z1q1
cp -r "$DEMO" "$G" && chmod -R u+w "$G"
do_mount "$G" "$M" || { fail "mount"; finish; }
pid=$(daemon_pids "$M" | head -n1)
END=$(( $(date +%s) + SECONDS_RUN ))
ERR=$WORK/errors
: > "$ERR"
running() { [ "$(date +%s)" -lt "$END" ]; }
err() { echo "$*" >> "$ERR"; }

# writers: one save holds the same number twice
ini_writer() {
	n=0
	while running; do
		n=$((n + 1))
		sed -i "s/^exp=.*/exp=$n/; s/^money=.*/money=$n/" "$M/$Q/quest.ini" || err "ini save $n failed"
	done
	echo "$n" > "$WORK/ini.saves"
}
raw_writer() {
	n=0
	while running; do
		n=$((n + 1))
		head -c $(( (n * 4099) % 60000 )) /dev/zero | tr '\0' . > "$WORK/pad"
		{ printf 'v%s ' $n; cat "$WORK/pad"; printf ' v%s\n' $n; } > "$WORK/raw.next"
		# saved whole, then renamed over: readers see one version or the other
		# (a rewrite in place is seen half-done on any file system)
		cat "$WORK/raw.next" > "$M/texts.res/stress.new" && mv "$M/texts.res/stress.new" "$M/texts.res/stress.txt" \
			|| err "raw save $n failed"
	done
	echo "$n" > "$WORK/raw.saves"
}

# readers
whole_ini() {
	while running; do
		cat "$M/$Q/quest.ini" > "$WORK/ini.$1" 2>>"$ERR" || { err "ini read failed"; continue; }
		e=$(sed -n 's/^exp=//p' "$WORK/ini.$1") m=$(sed -n 's/^money=//p' "$WORK/ini.$1")
		[ "$e" = "$m" ] || err "torn INI: exp=$e money=$m"
	done
}
whole_raw() {
	while running; do
		[ -e "$M/texts.res/stress.txt" ] || continue
		cat "$M/texts.res/stress.txt" > "$WORK/raw.$1" 2>>"$ERR" || { err "raw read failed"; continue; }
		[ -s "$WORK/raw.$1" ] || continue
		a=$(head -c 12 "$WORK/raw.$1" | sed 's/ .*//') b=$(tail -n1 "$WORK/raw.$1" | sed 's/.* //')
		[ "$a" = "$b" ] || err "torn entry: $a ... $b"
	done
}
finder() {
	while running; do
		# the writer's temporary comes and goes, as on any file system
		find "$M" -printf '%s %i\n' > /dev/null 2>"$WORK/find.err"
		grep -v "stress.new.: No such file" "$WORK/find.err" >> "$ERR"
	done
}
cat_all() {
	while running; do
		find "$M" -type f ! -name 'stress.*' ! -name 'quest.*' -exec cat {} + > /dev/null 2>>"$ERR" || err "cat failed"
	done
}
views() {
	while running; do
		cat "$M"/textures.res/*.png "$M"/maps/zone1.mpr/*.txt "$M"/figures.res/*.txt > /dev/null 2>>"$ERR" || err "view read failed"
	done
}
random_reads() {
	f=$M/textures.res/ground_grass.mmp
	size=$(stat -c %s "$f")
	i=0
	while running; do
		i=$((i + 1))
		off=$(( (i * 7919) % size ))
		dd if="$f" of=/dev/null bs=1 count=97 skip=$off 2>/dev/null || err "pread at $off failed"
	done
}

sed -i "s/^exp=.*/exp=0/; s/^money=.*/money=0/" "$M/$Q/quest.ini"
ini_writer & w1=$!
raw_writer & w2=$!
pids=""
whole_ini 1 & pids="$pids $!"
whole_ini 2 & pids="$pids $!"
whole_raw 1 & pids="$pids $!"
finder & pids="$pids $!"
cat_all & pids="$pids $!"
views & pids="$pids $!"
random_reads & pids="$pids $!"
whole_raw 2 & pids="$pids $!"
sleep $(( SECONDS_RUN / 4 + 1 ))
rss_warm=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")
wait $w1 $w2 $pids
rss_end=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")
echo "saves: $(cat "$WORK/ini.saves") INI, $(cat "$WORK/raw.saves") raw; RSS $rss_warm kB after warm-up, $rss_end kB at the end"
sort "$ERR" | uniq -c | head -20
check "$SECONDS_RUN s of 8 readers and 2 writers: no errors, no torn versions" [ ! -s "$ERR" ]
check "both writers saved many times" eval '[ "$(cat "$WORK/ini.saves")" -gt 5 ] && [ "$(cat "$WORK/raw.saves")" -gt 5 ]'
if ldd "$E" 2>/dev/null | grep -qE 'lib(a|t)san'; then
	# a sanitizer's own bookkeeping grows with every access it watches
	echo "RSS not judged: $E is a sanitizer build"
else
	check "the daemon's memory stays flat after warm-up" [ "$rss_end" -le $(( rss_warm * 3 / 2 + 8192 )) ]
fi
check "the archives check clean" sh -c "'$E' check '$G/quests.res' >/dev/null && '$E' check '$G/texts.res' >/dev/null"
do_umount "$M"
do_mount "$G" "$M"
check "after a remount the last saves are there" [ "$(sed -n 's/^exp=//p' "$M/$Q/quest.ini")" = "$(cat "$WORK/ini.saves")" ]
do_umount "$M"
finish
