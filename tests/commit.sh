#!/bin/sh
# eifs put / rm / compact on copies of the demo archives, through nested
# archives, with simulated crashes at every step of a commit and with
# real ones: puts killed at random moments.
. "$(dirname "$0")/lib.sh"
: "${DEMO:?DEMO must point at the built demo folder}"
SRCDEMO=$(dirname "$0")/../demo/src
E=$EIFS

fresh() { # fresh NAME: a writable copy of a demo archive in $WORK
	cp "$DEMO/$1" "$WORK/$1" && chmod u+w "$WORK/$1"
}

same() { # same ARCHIVE/PATH FILE: the entry holds exactly FILE's bytes
	"$E" cat "$1" > "$WORK/same.out" 2>/dev/null && cmp -s "$WORK/same.out" "$2"
}

checked() { "$E" check "$1" > "$WORK/check.out" 2>&1; }

stamp() { stat -c '%s %y' "$1"; }

# ---- put, rm, compact on a top-level archive ------------------------------
fresh texts.res
A=$WORK/texts.res
printf 'a new map\r\n' > "$WORK/map.new"
"$E" put "$A/map.txt" "$WORK/map.new"
check "put replaces an entry" same "$A/map.txt" "$WORK/map.new"
check "the archive checks clean after put" checked "$A"
check "other entries are untouched" same "$A/Gipat Medium (тип материала - кожа)" \
	"$SRCDEMO/texts.res/Gipat Medium (тип материала - кожа)"

printf 'from standard input' | "$E" put "$A/new\\sub/Файл.txt" -
check "put from stdin creates an entry in new backslash folders" \
	sh -c "'$E' cat '$A/new/sub/Файл.txt' | grep -qx 'from standard input'"
check "the new entry is listed" sh -c "'$E' ls -R '$A' | grep -qxF 'new/sub/Файл.txt'"
check "the archive checks clean after a new entry" checked "$A"

before=$(stamp "$A"); sleep 0.02
"$E" put "$A/map.txt" "$WORK/map.new"; rc=$?
check "putting the same bytes again succeeds" [ $rc -eq 0 ]
check "... and writes nothing" [ "$(stamp "$A")" = "$before" ]

"$E" put --time 1234567890 "$A/map.txt" "$WORK/map.new"
check "put --time sets the entry's timestamp" sh -c "'$E' ls -l '$A/map.txt' | grep -q '2009-02-1[34]'"

"$E" put "$A/中" "$WORK/map.new" 2>"$WORK/err"; rc=$?
check "a name without a cp1251 form is refused" eval '[ $rc -eq 1 ] && grep -q '\''cp1251'\'' "$WORK/err"'
"$E" rm "$A/new/sub/Файл.txt"
check "rm deletes an entry" not "$E" cat "$A/new/sub/Файл.txt" 2>/dev/null
check "the archive checks clean after rm" checked "$A"
"$E" rm "$A/no such entry" 2>/dev/null; rc=$?
check "rm of a missing entry fails" [ $rc -eq 1 ]
"$E" put "$WORK/not-an-archive/x" "$WORK/map.new" 2>/dev/null; rc=$?
check "put outside any archive fails with 66" [ $rc -eq 66 ]
"$E" put "$A" "$WORK/map.new" 2>/dev/null; rc=$?
check "put onto the archive itself fails" [ $rc -eq 1 ]

# FILE is read whole before the archive is touched: truncated by another
# program during the put (strace holds put's first write to the archive),
# the entry still gets what FILE held (put mapped FILE before, and failed).
# LeakSanitizer cannot work under ptrace: off for the traced put.
if command -v strace > /dev/null && strace -o /dev/null -e inject=pwrite64:delay_enter=1:when=1 true 2>/dev/null; then
	head -c 4000000 /dev/urandom > "$WORK/shrinks"
	cp "$WORK/shrinks" "$WORK/shrinks.was"
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -qq -o /dev/null -e trace=pwrite64 -e inject=pwrite64:delay_enter=3000000:when=1 \
		"$E" put "$A/shrinks.bin" "$WORK/shrinks" 2>"$WORK/shrinks.err" & putter=$!
	# truncated once put waits in that write (system call 18 on x86-64,
	# 67 on arm64), whatever the machine's speed
	held=0
	for i in $(seq 100); do
		p=$(pgrep -P $putter | head -n1)
		case $(cat "/proc/$p/syscall" 2>/dev/null) in 18\ *|67\ *) held=1; break ;; esac
		sleep 0.05
	done
	: > "$WORK/shrinks"
	wait $putter; rc=$?
	check "a FILE truncated while put runs: put succeeds with what FILE held (held: $held, exit $rc)" \
		eval '[ $held -eq 1 ] && [ $rc -eq 0 ] && same "$A/shrinks.bin" "$WORK/shrinks.was"'
	"$E" rm "$A/shrinks.bin"
fi
"$E" put "$A/missing.bin" "$WORK/no such file" 2>"$WORK/nofile.err"; rc=$?
check "put of a missing FILE: exit 1, one line naming it" \
	eval '[ $rc -eq 1 ] && [ "$(cat "$WORK/nofile.err")" = "eifs: put: $WORK/no such file: No such file or directory" ]'
"$E" put "$A/dir.bin" "$WORK" 2>"$WORK/dir.err"; rc=$?
check "put of a folder as FILE: exit 1, Is a directory" eval '[ $rc -eq 1 ] && grep -q "Is a directory" "$WORK/dir.err"'

head -c 100000 /dev/urandom > "$WORK/big"
for i in 1 2 3 4 5; do "$E" put "$A/map.txt" "$WORK/big"; "$E" put "$A/map.txt" "$WORK/map.new"; done
chmod 640 "$A"
big=$(stat -c %s "$A")
"$E" compact "$A"
small=$(stat -c %s "$A")
check "compact reclaims dead space ($big -> $small bytes)" [ "$small" -lt $((big / 10)) ]
check "compact keeps the contents" same "$A/map.txt" "$WORK/map.new"
check "compact keeps the mode" [ "$(stat -c %a "$A")" = 640 ]
check "the archive checks clean after compact" checked "$A"
check "compact leaves no temporary file" sh -c "! ls -A '$WORK' | grep -q '\.eifs-'"

# ---- nested archives ------------------------------------------------------
fresh quests.res
Q=$WORK/quests.res
printf '#zone z1q1\r\nchanged inside two archives\r\n' > "$WORK/inner.new"
"$E" put "$Q/z1q1.mq/z1q1/map.txt" "$WORK/inner.new"
check "put into a nested archive" same "$Q/z1q1.mq/z1q1/map.txt" "$WORK/inner.new"
check "the nested archive's other entries are untouched" \
	same "$Q/z1q1.mq/quest z1q1" "$SRCDEMO/quests.res/z1q1.mq/quest z1q1"
check "both levels check clean" checked "$Q"
"$E" put "$Q/z1q1.mq/z1q1/extra.txt" "$WORK/map.new"
"$E" rm "$Q/z1q1.mq/briefing z1q1_1"
check "rm inside a nested archive" not "$E" cat "$Q/z1q1.mq/briefing z1q1_1" 2>/dev/null
check "new entry inside a nested archive" same "$Q/z1q1.mq/z1q1/extra.txt" "$WORK/map.new"
check "both levels check clean after rm" checked "$Q"
fresh figures.res
"$E" put "$WORK/figures.res/unmotr.anm/cidle/hd" "$WORK/map.new"
check "put three archives deep" same "$WORK/figures.res/unmotr.anm/cidle/hd" "$WORK/map.new"
check "three levels check clean" checked "$WORK/figures.res"

# ---- put through a view: the text is saved to its source, as through a mount
fresh quests.res
V=$WORK/quests.res/z1q1.mq/z1q1
"$E" cat "$V/quest.ini" > "$WORK/quest.ini"
"$E" cat "$V/quest.reg" > "$WORK/quest.reg.old"
before=$(stamp "$WORK/quests.res"); sleep 0.02
"$E" put "$V/quest.ini" "$WORK/quest.ini"; rc=$?
check "put of an unchanged INI view succeeds and writes nothing" \
	eval '[ $rc -eq 0 ] && [ "$(stamp "$WORK/quests.res")" = "$before" ]'
sed -i 's/^exp=.*/exp=9999/' "$WORK/quest.ini"
grep -q '^exp=9999' "$WORK/quest.ini" || fail "the demo quest.ini has an exp= line"
"$E" put "$V/quest.ini" < "$WORK/quest.ini"; rc=$?
check "put of an INI view from standard input succeeds" [ $rc -eq 0 ]
check "... its REG now reads back as that text" same "$V/quest.ini" "$WORK/quest.ini"
sum=$(md5sum < "$WORK/quests.res")
printf '; nothing left\n' | "$E" put "$V/quest.ini" - 2>"$WORK/err"; rc=$?
check "put of an INI view that holds no section, over a REG that holds some, is refused" \
	eval '[ $rc -eq 1 ] && grep -q "holds nothing" "$WORK/err" && [ "$(md5sum < "$WORK/quests.res")" = "$sum" ]'
check "... quest.reg changed" not same "$V/quest.reg" "$WORK/quest.reg.old"
# rm finds entries only: it would remove a real entry named quest.ini
check "... and no entry named quest.ini was made" not "$E" rm "$V/quest.ini" 2>/dev/null
check "... the archive checks clean" checked "$WORK/quests.res"
"$E" put --time 1234567890 "$V/QUEST.INI" "$WORK/quest.ini"
check "put --time of a view (in the other case) stamps its source" \
	sh -c "'$E' ls -l '$V/quest.reg' | grep -q '2009-02-1[34]'"
printf '[quest]\r\nexp=1\r\n[broken\r\n' > "$WORK/bad.ini"
sum=$(md5sum < "$WORK/quests.res")
"$E" put "$V/quest.ini" "$WORK/bad.ini" 2> "$WORK/err"; rc=$?
check "an INI that does not parse is refused, naming the line" eval '[ $rc -eq 1 ] && grep -q "quest.ini: line 3" "$WORK/err"'
check "... and the archive is untouched" [ "$(md5sum < "$WORK/quests.res")" = "$sum" ]
printf 'Кто там?\r\n' | "$E" put "$WORK/quests.res/z1q1.mq/quest z1q1.txt" -; rc=$?
check "put of a game text's view writes it in cp1251" eval '[ $rc -eq 0 ] &&
	"$E" cat "$WORK/quests.res/z1q1.mq/quest z1q1" | iconv -f CP1251 -t UTF-8 | grep -qx "Кто там?."'
check "... the archive checks clean" checked "$WORK/quests.res"
sum=$(md5sum < "$WORK/quests.res")
printf '中\r\n' | "$E" put "$WORK/quests.res/z1q1.mq/quest z1q1.txt" - 2> "$WORK/err"; rc=$?
check "a text with a character cp1251 lacks is refused" eval '[ $rc -eq 1 ] && grep -q "cp1251" "$WORK/err"'
check "... and the archive is untouched" [ "$(md5sum < "$WORK/quests.res")" = "$sum" ]
fresh textures.res
sum=$(md5sum < "$WORK/textures.res")
"$E" put "$WORK/textures.res/cursor.png" "$WORK/quest.ini" 2> "$WORK/err"; rc=$?
check "put of a view made one way only (PNG) is refused" eval '[ $rc -eq 1 ] && grep -q "view (PNG)" "$WORK/err"'
check "... and the archive is untouched" [ "$(md5sum < "$WORK/textures.res")" = "$sum" ]

# ---- a crash before each step of the commit -------------------------------
# Steps 1-4 come before the header switch: the old archive; step 5 only
# misses the final flush: the new one.
for target in texts.res/map.txt quests.res/z1q1.mq/z1q1/map.txt; do
	archive=${target%%/*}
	"$E" cat "$DEMO/$target" > "$WORK/old"
	head -c 5000 /dev/urandom > "$WORK/new"
	for step in 1 2 3 4 5; do
		fresh "$archive"
		EIFS_FAULT_STEP=$step "$E" put "$WORK/$target" "$WORK/new" 2>/dev/null; rc=$?
		if [ $step -lt 5 ]; then want=$WORK/old; else want=$WORK/new; fi
		check "crash before step $step of $target: stopped" [ $rc -ne 0 ]
		check "crash before step $step of $target: the archive checks clean" checked "$WORK/$archive"
		check "crash before step $step of $target: $(basename "$want") contents" same "$WORK/$target" "$want"
		"$E" put "$WORK/$target" "$WORK/new"
		check "crash before step $step of $target: the next put works" same "$WORK/$target" "$WORK/new"
	done
done

# ---- concurrent writers -----------------------------------------------------
# flock serialises them; a compaction renames a new file over the archive,
# and a put that waited for the old one starts again on the new file.
fresh texts.res
pids=""
for i in 1 2 3 4 5 6 7 8 9 10; do
	printf 'writer %s' "$i" > "$WORK/w$i"
	"$E" put "$A/w$i.txt" "$WORK/w$i" & pids="$pids $!"
	[ $((i % 3)) -eq 0 ] && { "$E" compact "$A" & pids="$pids $!"; }
done
wait $pids
lost=0
for i in 1 2 3 4 5 6 7 8 9 10; do same "$A/w$i.txt" "$WORK/w$i" || lost=$((lost + 1)); done
check "10 concurrent puts and 3 compactions lose nothing ($lost lost)" [ $lost -eq 0 ]
check "the archive checks clean after concurrent writers" checked "$A"

# ---- the file replaced or rewritten by others, odd archives ----------------------
mkdir -p "$WORK/odd/shared" "$WORK/odd/game"
O=$WORK/odd
printf 'NEW\n' > "$O/new.txt"
if command -v strace >/dev/null && strace -o /dev/null -e inject=flock:delay_enter=1:when=1 true 2>/dev/null; then
	# a put held back before its lock while a compaction replaces the file;
	# a hard link keeps the old file alive (so its link count says nothing)
	cp "$DEMO/texts.res" "$O/game.res" && chmod u+w "$O/game.res" && ln "$O/game.res" "$O/backup.res"
	strace -o /dev/null -e trace=flock -e inject=flock:delay_enter=1500000:when=1 \
		"$E" put "$O/game.res/added.txt" "$O/new.txt" &
	sleep 0.5; "$E" compact "$O/game.res"; wait $!
	check "a put that waited for the lock while a compaction replaced the file goes to the new file" \
		sh -c "'$E' ls '$O/game.res' | grep -qx added.txt && ! '$E' ls '$O/backup.res' | grep -q added"
	# another program (no lock) rewrites the file while a put flushes
	cp "$DEMO/texts.res" "$O/g3.res" && chmod u+w "$O/g3.res"
	strace -o /dev/null -e trace=fdatasync -e inject=fdatasync:delay_enter=1500000:when=1 \
		"$E" put "$O/g3.res/added.txt" "$O/new.txt" 2>"$O/g3.err" &
	sleep 0.5; cp "$DEMO/quests.res" "$O/g3.res"; wait $!
	check "a file rewritten by another program during a commit gets no header of it: the put starts again on what is there" \
		sh -c "'$E' check '$O/g3.res' >/dev/null && '$E' ls '$O/g3.res' | grep -qx added.txt && '$E' ls '$O/g3.res' | grep -q z1q1.mq"
	# a commit that fails (EIO) while another program rewrites the file:
	# what it appended is cut back only from a file that is still ours
	cp "$DEMO/texts.res" "$O/g4.res" && chmod u+w "$O/g4.res"
	strace -o /dev/null -e trace=fdatasync -e inject=fdatasync:error=EIO:delay_enter=1500000:when=1 \
		"$E" put "$O/g4.res/added.txt" "$O/new.txt" 2>"$O/g4.err" &
	sleep 0.5; cp "$DEMO/textures.res" "$O/g4.res"; wait $!; rc=$?
	check "a failed put leaves a file another program wrote meanwhile as it wrote it" \
		eval '[ $rc -ne 0 ] && cmp -s "$O/g4.res" "$DEMO/textures.res"'
	# a compaction while another program renames its file over the name, or
	# writes the archive in place: the other program's file stays
	for how in renamed written; do
		cp "$DEMO/texts.res" "$O/c-$how.res" && chmod u+w "$O/c-$how.res"
		printf x | "$E" put "$O/c-$how.res/dead space.txt" - && "$E" rm "$O/c-$how.res/dead space.txt"
		strace -f -o /dev/null -e trace=fsync -e inject=fsync:delay_enter=1500000:when=1 \
			"$E" compact "$O/c-$how.res" 2>"$O/c-$how.err" &
		sleep 0.5
		if [ $how = renamed ]; then
			cp "$DEMO/textures.res" "$O/c-new.res" && mv "$O/c-new.res" "$O/c-$how.res"
		else
			cp "$DEMO/textures.res" "$O/c-$how.res"
		fi
		wait $!; rc=$?
		what="wrote the archive in place"; [ $how = renamed ] && what="renamed another file over it"
		check "a compaction refuses to switch when another program $what meanwhile" \
			eval '[ $rc -ne 0 ] && cmp -s "$O/c-$how.res" "$DEMO/textures.res" && grep -q "nothing was switched" "$O/c-$how.err"'
	done
	check "... and leaves no temporary behind" sh -c "! ls -a '$O' | grep -q eifs-"
	# a compaction killed at its rename leaves its temporary (a whole
	# copy); the next replacement of that file removes it, but not one in
	# use (locked by its maker)
	cp "$DEMO/texts.res" "$O/k.res" && chmod u+w "$O/k.res"
	printf x | "$E" put "$O/k.res/dead space.txt" - && "$E" rm "$O/k.res/dead space.txt"
	strace -f -o /dev/null -e trace=rename -e inject=rename:signal=SIGKILL "$E" compact "$O/k.res" 2>/dev/null
	left=$(ls -A "$O" | grep -c '^\.k\.res\.eifs-')
	: > "$O/.k.res.eifs-a1b2c3d4"
	flock "$O/.k.res.eifs-a1b2c3d4" sleep 3 & holder=$!
	sleep 0.3
	printf x | "$E" put "$O/k.res/dead space.txt" - && "$E" rm "$O/k.res/dead space.txt" && "$E" compact "$O/k.res"
	check "a temporary a killed compaction left is removed by the next one, one in use is not" \
		eval '[ "$left" -eq 1 ] && [ "$(ls -A "$O" | grep "^\.k\.res\.eifs-")" = .k.res.eifs-a1b2c3d4 ] && checked "$O/k.res"'
	wait $holder
	rm -f "$O/.k.res.eifs-a1b2c3d4"
	# pack: a file that grows while it is packed is not stored cut short
	mkdir -p "$O/packsrc" && printf 'first' > "$O/packsrc/a.txt" && printf 'second' > "$O/packsrc/b.txt"
	# (held back at its first copy: a sanitizer's run-time reads files
	# with pread64 before main, copy_file_range only the pack does)
	strace -o /dev/null -e trace=copy_file_range -e inject=copy_file_range:delay_enter=1500000:when=1 \
		"$E" pack "$O/packsrc" "$O/packed.res" 2>"$O/pack.err" &
	sleep 0.5; printf ' and more' >> "$O/packsrc/a.txt"; wait $!; rc=$?
	check "pack fails when a file changes while it is read, and leaves no archive" \
		eval '[ $rc -ne 0 ] && grep -q "changed while it was packed" "$O/pack.err" && [ ! -e "$O/packed.res" ]'
else
	echo "SKIP: strace with fault injection is not here: races with compactions and other writers not staged"
fi
# root too leaves an archive without write permission bits alone
cp "$DEMO/texts.res" "$O/ro.res" && chmod 444 "$O/ro.res"
sum=$(md5sum < "$O/ro.res")
printf x | "$E" put "$O/ro.res/new.txt" - 2>"$O/ro.err"; rc1=$?
"$E" rm "$O/ro.res/map.txt" 2>>"$O/ro.err"; rc2=$?
check "put and rm leave an archive without write permission as it is (EACCES)" \
	eval '[ $rc1 -eq 1 ] && [ $rc2 -eq 1 ] && [ "$(md5sum < "$O/ro.res")" = "$sum" ] && grep -q "ermission" "$O/ro.err"'
# a compaction by a user who may write the archive (its group) but cannot
# give the new file its owner: refused, not made the caller's
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	own=$(mktemp -d /tmp/eifs-owner.XXXXXX) && chmod 0775 "$own" && chgrp 2000 "$own"
	fresh texts.res && cp "$WORK/texts.res" "$own/o.res"
	printf x | "$E" put "$own/o.res/dead space.txt" - && "$E" rm "$own/o.res/dead space.txt"
	chown 1000:2000 "$own/o.res" && chmod 0660 "$own/o.res"
	sum=$(md5sum < "$own/o.res")
	setpriv --reuid=1001 --regid=2000 --clear-groups "$E" compact "$own/o.res" 2>"$O/owner.err"; rc=$?
	check "a compaction that cannot keep the archive's owner is refused (EPERM) and changes nothing" \
		eval '[ $rc -ne 0 ] && grep -q "belongs to user 1000" "$O/owner.err" && [ "$(stat -c %u:%g "$own/o.res")" = 1000:2000 ] && [ "$(md5sum < "$own/o.res")" = "$sum" ] && [ "$(ls -A "$own")" = o.res ]'
	rm -rf "$own"
fi
# case duplicates: the name the tree shows (NAME~TAG) is the entry changed
rawres "$O/dup.res" 'Q.TXT' upper 'q.txt' lower
"$E" put "$O/dup.res/Q.TXT~780dbd4a" "$O/new.txt" 2>/dev/null
"$E" ls "$O/dup.res" 2>/dev/null > "$O/dup.ls"
for f in $(cat "$O/dup.ls"); do "$E" cat "$O/dup.res/$f" 2>/dev/null; echo; done > "$O/dup.cat"
check "a put to a case duplicate's shown name changes that entry and adds none" eval '[ "$(wc -l < "$O/dup.ls")" -eq 2 ] && grep -qx NEW "$O/dup.cat" && grep -qx lower "$O/dup.cat"'
printf x | "$E" put "$O/dup.res/a new entry before both" -
check "... and its shown name stays through saves that rebuild the table" \
	eval '"$E" ls "$O/dup.res" 2>/dev/null | grep -qx "Q.TXT~780dbd4a" && [ "$("$E" cat "$O/dup.res/Q.TXT~780dbd4a" 2>/dev/null)" = NEW ]'
# the plain name goes to the variant the game finds (here the last in the
# table, at its hash slot), not the first: saves put that one in front, and
# names that followed the table order swapped at the first save
rawres "$O/flip.res" 'Foo.txt' mixed 'z.txt' zz 'FOO.txt' upper
shown() { for f in $("$E" ls "$1" 2>/dev/null); do printf '%s=%s\n' "$f" "$("$E" cat "$1/$f" 2>/dev/null)"; done; }
shown "$O/flip.res" > "$O/flip.before"
printf x | "$E" put "$O/flip.res/new.txt" -
shown "$O/flip.res" | grep -v '^new.txt=' > "$O/flip.after"
check "the plain name of case variants is the one the game finds" grep -qx 'FOO.txt=upper' "$O/flip.before"
check "... and every name shows the same entry after a save that rebuilt the table" cmp -s "$O/flip.before" "$O/flip.after"
# two entries of one exact name: a change could hit either, so none is made
rawres "$O/same.res" 'dup' first 'dup' second 'other' third
sum=$(md5sum < "$O/same.res")
"$E" put "$O/same.res/dup~d330f226" "$O/new.txt" 2>"$O/same1.err"; rc1=$?
"$E" rm "$O/same.res/dup" 2>"$O/same2.err"; rc2=$?
check "a put or rm of one of two entries of the same name: refused, saying why, the archive untouched" \
	eval '[ $rc1 -ne 0 ] && [ $rc2 -ne 0 ] && grep -q "two entries of that name" "$O/same1.err" && grep -q "two entries of that name" "$O/same2.err" && [ "$(md5sum < "$O/same.res")" = "$sum" ]'
# compaction through a symbolic link compacts the file it names
cp "$DEMO/texts.res" "$O/shared/texts.res" && chmod u+w "$O/shared/texts.res"
ln -s ../shared/texts.res "$O/game/texts.res"
printf a | "$E" put "$O/game/texts.res/a.txt" -
"$E" compact "$O/game/texts.res"
check "compact through a symbolic link keeps the link and compacts its file" eval '[ -L "$O/game/texts.res" ] && "$E" ls "$O/shared/texts.res" | grep -qx a.txt'
# an entry over the header would change with it: refused until compacted
{ printf '\074\342\234\001'; le32 1; le32 16; le32 8; le32 -1; le32 46; le32 0; le32 1000000000; le16 8; le32 0; printf 'self.res'; } > "$O/self.res"
sum=$(md5sum < "$O/self.res")
check "an archive with an entry over its header is not committed to" not "$E" put "$O/self.res/x.txt" "$O/new.txt" 2>/dev/null
check "... and stays as it was" [ "$(md5sum < "$O/self.res")" = "$sum" ]
"$E" compact "$O/self.res"
check "... until compacted" "$E" put "$O/self.res/x.txt" "$O/new.txt"

# ---- real crashes: puts killed at random moments -----------------------------
# Each put writes a file of random size (up to 1 MiB) into the top-level
# archive or into the nested one, and is killed with SIGKILL after a random
# delay (unless it finished first).  Afterwards the archive must check clean, the entry must hold
# exactly its old or its new contents, and the other entry its last ones.
fresh quests.res
T1=quests.res/crash.bin T2=quests.res/z1q1.mq/z1q1/map.txt
: > "$WORK/rec1"; "$E" put "$WORK/$T1" "$WORK/rec1"
"$E" cat "$WORK/$T2" > "$WORK/rec2"
# The kills are spread from 0.3 ms to 1.5 times the longest of three
# unhindered puts of 1 MiB here (sanitizer builds are several times slower).
fresh texts.res
head -c 1048576 /dev/urandom > "$WORK/next"
span=2000
for k in 1 2 3; do
	t0=$(date +%s%N); "$E" put "$WORK/texts.res/timing$k" "$WORK/next"; t1=$(date +%s%N)
	us=$(( (t1 - t0) * 3 / 2000 ))
	[ "$us" -gt "$span" ] && span=$us
done
iterations=${CRASH_ITERATIONS:-200}
olds=0 news=0 torn=0 bad=0 start=$(date +%s)
i=0
while [ $i -lt "$iterations" ]; do
	i=$((i + 1))
	if [ $((i % 2)) -eq 0 ]; then t=$T1 rec=rec1 other=$T2 orec=rec2; else t=$T2 rec=rec2 other=$T1 orec=rec1; fi
	size=$(shuf -i 0-1048576 -n 1)
	head -c "$size" /dev/urandom > "$WORK/next"
	delay=$(awk -v us="$(shuf -i 300-"$span" -n 1)" 'BEGIN { printf "%.6f", us / 1e6 }')
	size_before=$(stat -c %s "$WORK/quests.res")
	timeout --foreground -s KILL "$delay" "$E" put "$WORK/$t" "$WORK/next" 2>/dev/null
	if ! checked "$WORK/quests.res"; then
		bad=$((bad + 1)); echo "iteration $i: check failed:"; cat "$WORK/check.out"
	elif same "$WORK/$t" "$WORK/$rec"; then
		olds=$((olds + 1))
		# killed while appending: dead bytes, the old header
		[ "$(stat -c %s "$WORK/quests.res")" -gt "$size_before" ] && torn=$((torn + 1))
	elif same "$WORK/$t" "$WORK/next"; then
		news=$((news + 1)); mv "$WORK/next" "$WORK/$rec"
	else
		bad=$((bad + 1)); echo "iteration $i: $t holds neither version"
	fi
	same "$WORK/$other" "$WORK/$orec" || { bad=$((bad + 1)); echo "iteration $i: $other changed"; }
	# dead space adds up: compact now and then
	[ $((i % 25)) -eq 0 ] && "$E" compact "$WORK/quests.res"
done
echo "crash loop: $iterations puts killed after 0.3-$((span / 1000)) ms: $olds left the old version ($torn of them after appending), $news the new; $(($(date +%s) - start)) s"
check "$iterations killed puts: every state checks clean and is the old or the new version" [ $bad -eq 0 ]
check "the kills hit before and after the switch" eval '[ $olds -gt 0 ] && [ $news -gt 0 ]'

# a name the game cannot find (a negative signed-char hash sum: Cyrillic
# letters are negative bytes) is refused, named in UTF-8 as the mount shows it
cp "$DEMO/texts.res" "$WORK/neg.res"
echo hi | "$E" put "$WORK/neg.res/Тест" - 2> "$WORK/neg.err"; rc=$?
check "put of a name with a negative hash sum fails, naming it as shown" \
	eval '[ $rc -eq 1 ] && grep -q "\"Тест\": negative signed-char hash sum" "$WORK/neg.err" && cmp -s "$DEMO/texts.res" "$WORK/neg.res"'

finish
