#!/bin/sh
# What a program sees through the mount agrees with what is on disk and
# with what it sees again once the kernel has forgotten every inode
# (drop_caches), whatever the order of operations: loose files written
# through the mount, temporaries renamed over views, files removed while
# open, failed saves, folders renamed over folders.
. "$(dirname "$0")/lib.sh"
: "${DEMO:?DEMO must point at the built demo folder}"
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip_all "no /dev/fuse or fusermount3 here"
command -v python3 >/dev/null || skip_all "python3 (for the open-file checks) is missing"
E=$EIFS
G=$WORK/game
M=$WORK/mnt
Q=quests.res/z1q1.mq/z1q1
cp -r "$DEMO" "$G" && chmod -R u+w "$G"
cp "$G/config.reg" "$G/maps/sub.reg"
do_mount "$G" "$M" || { fail "mount"; finish; }

forget() { [ -w /proc/sys/vm/drop_caches ] && { sync; echo 2 > /proc/sys/vm/drop_caches; }; true; }
attrs() { stat -c '%i %Y %s' "$M/$1"; }
# same_after_forget PATH: its attributes do not change when the kernel asks anew
same_after_forget() { a=$(attrs "$1"); forget; [ "$(attrs "$1")" = "$a" ]; }
ini_key() { "$E" convert "$G/$1" - 2>/dev/null | sed -n "s/^$2=//p" | head -n1; }

# ---- loose files of the game folder -----------------------------------------------
echo hello > "$M/new.txt"
check "a loose file written through the mount has its size at once" [ "$(stat -c %s "$M/new.txt")" = 6 ]
check "... and reads whole" [ "$(cat "$M/new.txt")" = hello ]
printf 'more\n' >> "$G/new.txt"
sleep 1.2
check "a loose file changed by another program shows its new size within a second" \
	[ "$(stat -c %s "$M/new.txt")" = 11 ] && [ "$(cat "$M/new.txt" | wc -l)" = 2 ]
sed -i 's/^BackstabMult=.*/BackstabMult=0.5/' "$M/config.ini"
check "sed -i on the INI view of a loose REG saves it (not an empty REG)" [ "$(ini_key config.reg BackstabMult)" = 0.5 ]
check "... and the rest of it stays" [ "$(ini_key config.reg texts.res)" != "" ]
cp "$M/config.ini" "$M/moved.txt"
sed -i 's/^BackstabMult=.*/BackstabMult=0.75/' "$M/moved.txt"
mv "$M/moved.txt" "$M/maps/sub.ini"
check "a loose file renamed onto a view in another folder saves that REG" [ "$(ini_key maps/sub.reg BackstabMult)" = 0.75 ]
check "... and is gone from its folder, on disk and through the mount" \
	[ ! -e "$G/moved.txt" ] && not stat "$M/moved.txt" 2>/dev/null

# ---- temporaries renamed over views --------------------------------------------------
before=$(attrs "$Q/quest.ini")
cp "$M/$Q/quest.ini" "$M/$Q/q~" && touch "$M/$Q/q~" && mv "$M/$Q/q~" "$M/$Q/quest.ini"
check "a temporary with the same text renamed over a view: its attributes stay the view's" \
	[ "$(attrs "$Q/quest.ini")" = "$before" ]
check "... also once the kernel forgot it" same_after_forget "$Q/quest.ini"
cp "$M/$Q/quest.ini" "$M/texts.res/q~"
check "a temporary opens again for reading" grep -q '^\[quest\]' "$M/texts.res/q~"
sed -i 's/^exp=.*/exp=77/' "$M/texts.res/q~"
check "... and for sed -i" grep -qx 'exp=77' "$M/texts.res/q~"
mv "$M/texts.res/q~" "$M/$Q/quest.ini"
check "a temporary of another archive renamed over a view saves it" [ "$(ini_key "$Q/quest.reg" exp)" = 77 ]
check "... and the view's attributes are the same before and after the kernel forgets" same_after_forget "$Q/quest.ini"

# ---- another program saved meanwhile -----------------------------------------------------
# a file opened through the mount, changed by another program (a second
# mount here), then written back as it was: the last save is what stays
B=$WORK/mnt2
do_mount "$G" "$B" || fail "second mount"
cat > "$WORK/late.py" <<'EOF'
import subprocess, sys
a, b = sys.argv[1], sys.argv[2]
f = open(a, 'r+b')
text = f.read()
subprocess.run(['sed', '-i', 's/^exp=.*/exp=9999/', b], check=True)
f.seek(0); f.write(text); f.truncate(); f.close()
EOF
was=$(ini_key "$Q/quest.reg" exp)
python3 "$WORK/late.py" "$M/$Q/quest.ini" "$B/$Q/quest.ini"
check "a save of the old text after another program's save is not taken for 'unchanged'" [ "$(ini_key "$Q/quest.reg" exp)" = "$was" ]
do_umount "$B"

# ---- failed saves and temporaries outlive the kernel's memory ---------------------------
echo 'not an ini' > "$M/$Q/quest.ini" 2>/dev/null
forget
check "the text of a failed save stays when the kernel forgets the inode" [ "$(cat "$M/$Q/quest.ini")" = 'not an ini' ]
check "... and so does its line in the status file" grep -q 'quest.ini' "$M/.eifs-status"
rm "$M/$Q/quest.ini"
check "rm of the view drops it" grep -q '^\[quest\]' "$M/$Q/quest.ini" && [ ! -s "$M/.eifs-status" ]
cp "$M/$Q/quest.ini" "$M/$Q/quest.ini~"
forget
check "a temporary stays when the kernel forgets it" cmp -s "$M/$Q/quest.ini" "$M/$Q/quest.ini~"
rm "$M/$Q/quest.ini~"
python3 -c "import os; os.truncate('$M/$Q/quest.ini', 10)" 2>/dev/null
check "a truncate that cannot be saved changes nothing" [ "$(stat -c %s "$M/$Q/quest.ini")" = "$(cat "$M/$Q/quest.ini" | wc -c)" ] \
	&& grep -q '^\[quest\]' "$M/$Q/quest.ini" && [ "$(cat "$M/$Q/quest.ini" | wc -c)" -gt 10 ] && [ ! -s "$M/.eifs-status" ]

# ---- removed while open ------------------------------------------------------------------
cat > "$WORK/open.py" <<'EOF'
import os, sys
def use(fd):
    st = os.fstat(fd)
    os.ftruncate(fd, 3)
    return "%d %d %s" % (st.st_size, st.st_nlink, os.pread(fd, 100, 0).decode())
fd = os.open(sys.argv[1] + '/t~', os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b'hello temp')
os.unlink(sys.argv[1] + '/t~')
print(use(fd))
os.close(fd)
fd = os.open(sys.argv[1] + '/quest.ini', os.O_RDWR)
os.unlink(sys.argv[1] + '/quest.ini')
st = os.fstat(fd)
print(st.st_size > 10, os.pread(fd, 7, 0).decode())
os.close(fd)
EOF
out=$(python3 "$WORK/open.py" "$M/$Q" 2>&1)
check "a temporary removed while open: fstat, ftruncate and pread still work" [ "$(echo "$out" | head -n1)" = "10 0 hel" ]
check "a view removed while open: still readable through its descriptor" [ "$(echo "$out" | tail -n1)" = "True [quest]" ]

# ---- folders -----------------------------------------------------------------------------
printf a | "$E" put "$G/texts.res/d1/a" -
printf b | "$E" put "$G/texts.res/d2/b" -
ls "$M/texts.res" > /dev/null # another program changed it: seen when opened
mv -T "$M/texts.res/d1" "$M/texts.res/d2" 2> "$WORK/mv.err"
check "a folder is not renamed over a folder that has files (ENOTEMPTY)" grep -q 'not empty' "$WORK/mv.err"
check "... both keep their files" [ "$(cat "$M/texts.res/d1/a")" = a ] && [ "$(cat "$M/texts.res/d2/b")" = b ]
mv -T "$M/texts.res" "$M/quests.res" 2> "$WORK/mv.err"
check "an archive is not renamed over another one" grep -q 'not empty' "$WORK/mv.err"
check "... both stay" [ -f "$G/texts.res" ] && [ -f "$M/texts.res/map.txt" ] && [ -f "$M/$Q/quest.ini" ]

# ---- remove and make again -----------------------------------------------------------------
for i in 1 2 3 4 5; do
	rm "$M/texts.res/say s2" && printf "again $i" > "$M/texts.res/say s2" || break
done
check "an entry removed and made again at once reads the new text" [ "$(cat "$M/texts.res/say s2")" = 'again 5' ]
check "... also once the kernel forgot it" same_after_forget "texts.res/say s2"

for a in texts.res quests.res; do
	check "$a checks clean" "$E" check "$G/$a" > /dev/null
done
do_umount "$M"
finish
