#!/bin/sh
# Who may use a mount, and what the daemon writes: private to the mounting
# user unless allow_other; modes enforced for other users; a save writes
# the archive it changes and nothing else; -o ro writes nothing at all.
. "$(dirname "$0")/lib.sh"
: "${DEMO:?DEMO must point at the built demo folder}"
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip_all "no /dev/fuse or fusermount3 here"
[ "$(id -u)" -eq 0 ] && command -v runuser >/dev/null || skip_all "needs root and runuser to act as another user"
E=$EIFS
G=$WORK/game
# the mount point where another user can reach it, wherever the tests run
MDIR=$(mktemp -d /tmp/eifs-security.XXXXXX) && chmod 755 "$MDIR"
M=$MDIR/mnt
cp -r "$DEMO" "$G" && chmod -R u+w,go-w "$G"
other() { runuser -u nobody -- "$@"; }

do_mount "$G" "$M"
check "without allow_other another user cannot enter the mount" not other ls "$M" 2>/dev/null
check "... nor read a file in it" not other cat "$M/texts.res/map.txt" 2>/dev/null
do_umount "$M"

do_mount "$G" "$M" -o allow_other
check "with allow_other another user reads" other cat "$M/texts.res/map.txt" > /dev/null
before=$("$E" cat "$G/texts.res/map.txt" | md5sum)
( other sh -c "printf x > '$M/texts.res/map.txt'" ) 2>/dev/null
check "... but cannot write an entry of an archive that is not theirs (mode rw-r--r--)" \
	[ "$("$E" cat "$G/texts.res/map.txt" | md5sum)" = "$before" ]
( other sh -c "printf '[x]\n' > '$M/config.ini'" ) 2>/dev/null
check "... nor an INI view" sh -c "'$E' convert '$G/config.reg' - | grep -q '^\\[RES\\]'"
( other touch "$M/texts.res/new-by-nobody" ) 2>/dev/null
check "... nor create an entry" not "$E" cat "$G/texts.res/new-by-nobody" 2>/dev/null
do_umount "$M"

# a save writes the archive it changes, and nothing else anywhere
do_mount "$G" "$M"
touch "$WORK/marker"
sleep 0.01
printf 'changed' > "$M/texts.res/map.txt"
sed -i 's/^exp=.*/exp=1/' "$M/quests.res/z1q1.mq/z1q1/quest.ini"
printf '[RES]\n' > "$M/config.ini"
find "$WORK" -newer "$WORK/marker" -type f ! -name written | sed "s|^$WORK/||" | sort > "$WORK/written"
printf 'game/config.reg\ngame/quests.res\ngame/texts.res\n' > "$WORK/want"
check "saves wrote exactly the three files they changed" cmp -s "$WORK/written" "$WORK/want"
check "no temporary or cache file left beside them" [ "$(ls -A "$G" | wc -l)" -eq "$(ls -A "$DEMO" | wc -l)" ]
pid=$(daemon_pids "$M" | head -n1)
check "the daemon runs from / (it holds no folder busy)" [ "$(readlink "/proc/$pid/cwd")" = / ]
do_umount "$M"

# -o ro writes nothing, whatever is tried
sums=$(cd "$G" && find . -type f -exec md5sum {} + | sort)
do_mount "$G" "$M" -o ro
( printf x > "$M/texts.res/map.txt"; printf '[x]\n' > "$M/config.ini"; rm -f "$M/texts.res/UNIT guard"; \
  mv "$M/texts.res/say s2" "$M/texts.res/s3"; touch "$M/texts.res/new"; mkdir "$M/d" ) 2>/dev/null
check "-o ro: every write fails, every file is as it was" \
	[ "$(cd "$G" && find . -type f -exec md5sum {} + | sort)" = "$sums" ]
do_umount "$M"
rmdir "$M" "$MDIR"
finish
