#!/bin/sh
# Crashes of the daemon while it saves through the mount: killed before each
# step of a commit (EIFS_FAULT_STEP), and killed with SIGKILL at random
# moments of saves going on in a loop.  After each, the archive opens,
# eifs check passes, every other entry is untouched, and the saved entry
# holds the old or the new version, never less than what close returned.
. "$(dirname "$0")/lib.sh"
: "${DEMO:?DEMO must point at the built demo folder}"
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip_all "no /dev/fuse or fusermount3 here"
E=$EIFS
G=$WORK/game
M=$WORK/mnt
ROUNDS=${CRASH_ROUNDS:-200}
cp -r "$DEMO" "$G" && chmod -R u+w "$G"
A=$G/texts.res

start() { # start [ENV=...]: a foreground daemon in the background, mounted
	env "$@" "$E" mount -f "$G" "$M" 2>>"$WORK/daemon.log" &
	DAEMON=$!
	MOUNTS="$MOUNTS $M"
	for i in $(seq 100); do mounted "$M" && return 0; sleep 0.02; done
	return 1
}

gone() { # waits for the daemon to end, then drops the dead mount
	wait "$DAEMON" 2>/dev/null
	fusermount3 -uz "$M" 2>/dev/null
	mounted "$M" && return 1
	return 0
}

others() { "$E" ls -R "$A" | grep -v '^crash.txt$' | while IFS= read -r p; do
	printf '%s ' "$p"; "$E" cat "$A/$p" | md5sum; done; }
others > "$WORK/others.0"

# ---- killed before each step of a commit ------------------------------------------
printf 'old version' | "$E" put "$A/crash.txt" -
for step in 1 2 3 4 5; do
	start EIFS_FAULT_STEP=$step || { fail "mount for step $step"; continue; }
	printf 'new version %s' $step > "$M/texts.res/crash.txt" 2>/dev/null
	gone
	got=$("$E" cat "$A/crash.txt" 2>/dev/null)
	if [ $step -le 4 ]; then want='old version'; else want="new version $step"; fi
	check "killed before commit step $step: archive checks clean, entry is '$want'" eval 'sh -c "'\''$E'\'' check '\''$A'\'' >/dev/null 2>&1" && [ "$got" = "$want" ]'
	[ $step -eq 5 ] && printf 'old version' | "$E" put "$A/crash.txt" -
done
others > "$WORK/others.1"
check "other entries untouched by the crashes" cmp -s "$WORK/others.0" "$WORK/others.1"

# ---- SIGKILL at random moments ---------------------------------------------------------
# A writer saves versions in a loop; "done N" is logged once close(N)
# returned.  After the kill the entry must hold version N or a later one
# the writer had started, whole.
bad=0 commits=0 kills=0 checked=0 prev=
for round in $(seq "$ROUNDS"); do
	start || { bad=$((bad + 1)); echo "round $round: no mount"; continue; }
	: > "$WORK/writer.log"
	(
		i=0
		while :; do
			i=$((i + 1))
			echo "start $round.$i" >> "$WORK/writer.log"
			# sizes from a few bytes to 200 KiB: data appended, then the
			# table; written by one process, so saved by one close
			{ printf 'version %s.%s ' $round $i; head -c $(( (i * 7919) % 200000 )) /dev/zero | tr '\0' x; } \
				> "$WORK/version"
			{ cat "$WORK/version" > "$M/texts.res/crash.txt"; } 2>/dev/null || exit 0
			echo "done $round.$i" >> "$WORK/writer.log"
		done
	) &
	writer=$!
	# odd rounds: the kill comes after a first save of the round, whatever
	# the machine's load (even rounds may kill before any)
	if [ $((round % 2)) -eq 1 ]; then
		for _ in $(seq 1000); do grep -q '^done' "$WORK/writer.log" && break; sleep 0.01; done
	fi
	sleep "0.0$(( (round * 37) % 90 + 10 ))"
	kill -9 "$DAEMON"
	kills=$((kills + 1))
	gone
	wait "$writer" 2>/dev/null
	commits=$((commits + $(grep -c '^done' "$WORK/writer.log")))
	last_done=$(grep '^done' "$WORK/writer.log" | tail -n1 | cut -d' ' -f2)
	if ! "$E" check "$A" > "$WORK/check.out" 2>&1; then
		bad=$((bad + 1)); echo "round $round: check failed:"; cat "$WORK/check.out"; continue
	fi
	have=$("$E" cat "$A/crash.txt" | head -c 40 | sed -n 's/^version \([0-9.]*\) .*/\1/p')
	size=$("$E" cat "$A/crash.txt" | wc -c)
	n=${have#*.}
	if [ -z "$have" ] && [ -z "$prev" ]; then
		[ -z "$last_done" ] || { bad=$((bad + 1)); echo "round $round: $last_done was saved, the entry is not"; }
	elif [ -z "$have" ] || [ "$size" -ne $(( ${#have} + 9 + (n * 7919) % 200000 )) ]; then
		bad=$((bad + 1)); echo "round $round: '$have' torn or unknown ($size bytes)"
	elif [ "${have%.*}" = "$round" ]; then
		# this round's version: not older than the last one close returned
		if [ -n "$last_done" ] && [ "$n" -lt "${last_done#*.}" ]; then
			bad=$((bad + 1)); echo "round $round: has $have but $last_done was saved"
		fi
	elif [ "$have" != "$prev" ] || [ -n "$last_done" ]; then
		bad=$((bad + 1)); echo "round $round: has $have (before: $prev, saved: $last_done)"
	fi
	prev=$have
	checked=$((checked + 1))
done
others > "$WORK/others.2"
echo "$kills kills, $commits saves completed around them"
check "$kills random SIGKILLs over $commits saves: every archive clean, every entry old or new" eval '[ "$bad" -eq 0 ] && [ "$checked" -eq "$ROUNDS" ] && [ "$commits" -ge $((ROUNDS / 2)) ]'
check "other entries untouched after all the kills" cmp -s "$WORK/others.0" "$WORK/others.2"
check "the archive compacts and still checks clean" sh -c "'$E' compact '$A' && '$E' check '$A' >/dev/null"
finish
