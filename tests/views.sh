#!/bin/sh
# Converted views through real mounts: the demo folder and the game samples.
. "$(dirname "$0")/lib.sh"
: "${DEMO:?DEMO must point at the built demo folder}"
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip_all "no /dev/fuse or fusermount3 here"
E=$EIFS
M=$WORK/mnt

# every view: stat size before the first read == bytes read == eifs convert
same_sizes() { # DIR: prints the views whose sizes disagree
	find "$1" -type f \( -name '*.png' -o -name '*.ini' -o -name '*.jsonl' -o -name '*.txt' \) | while IFS= read -r f; do
		s=$(stat -c %s "$f"); n=$(wc -c < "$f")
		[ "$s" = "$n" ] || echo "size $s read $n: $f"
	done
}

do_mount "$DEMO" "$M"
check "PNG views beside every texture" eval '[ -f "$M/textures.res/ground_grass.png" ] && [ -f "$M/textures.res/unmotr_skin.png" ]'
check "the raw texture stays" [ -f "$M/textures.res/ground_grass.mmp" ]
check "INI view beside a loose REG of the folder" [ -f "$M/config.ini" ]
check "INI view beside a REG in a backslash directory of a nested archive" [ -f "$M/quests.res/z1q1.mq/z1q1/quest.ini" ]
(cd "$M" && find . -type f -name '*.png' | sort) > "$WORK/pngs"
check "seven PNG views in the demo" [ "$(wc -l < "$WORK/pngs")" -eq 7 ]
same_sizes "$M" > "$WORK/sizes"
check "stat size of every view equals the bytes read" [ ! -s "$WORK/sizes" ]
for f in $(cat "$WORK/pngs"); do
	"$E" convert "$DEMO/$f" "$WORK/conv.png" 2>/dev/null || "$E" convert "$DEMO/${f%.png}.mmp" "$WORK/conv.png"
	cmp -s "$WORK/conv.png" "$M/$f" || echo "differs: $f"
done > "$WORK/conv.diff"
check "PNG views equal eifs convert" [ ! -s "$WORK/conv.diff" ]
check "PNG views are PNG images" sh -c "file -b '$M/textures.res/ground_grass.png' | grep -q 'PNG image data, 64 x 64, 8-bit/color RGBA'"
check "the INI view holds the demo's values" grep -qx 'name=Найти Гипат' "$M/quests.res/z1q1.mq/z1q1/quest.ini"
check "INI floats keep a decimal point" grep -qx 'rate=1.0' "$M/quests.res/z1q1.mq/z1q1/quest.ini"
check "arrays are repeated keys" [ "$(grep -c '^questplaces=' "$M/quests.res/z1q1.mq/z1q1/quest.ini")" -eq 2 ]
mkdir "$WORK/copy"
check "cp -r of a directory of views" cp -r "$M/textures.res" "$WORK/copy/"
check "copied views keep their sizes" sh -c "cd '$M/textures.res' && for f in *; do cmp -s \"\$f\" '$WORK/copy/textures.res/'\"\$f\" || exit 1; done"
check "grep -r finds text in the views" sh -c "grep -rl 'questplaces=zone2' '$M' | grep -q quest.ini"
T="$M/texts.res/Gipat Medium (тип материала - кожа)"
check "a UTF-8 view beside a cp1251 text of texts.res" grep -q 'Гипат, средний доспех' "$T.txt"
check "... and beside a briefing of a quest" grep -q 'Брифинг первого задания' "$M/quests.res/z1q1.mq/briefing z1q1_1.txt"
check "the view is the text in UTF-8, line ends kept" sh -c "iconv -f cp1251 -t utf-8 '$T' | cmp -s - '$T.txt'"
check "grep -r finds a Russian word of the texts" sh -c "grep -rl 'средний доспех' '$M' | grep -qxF '$T.txt'"
check "no text view for names with an extension, nor for model parts" \
	eval '[ ! -e "$M/texts.res/map.txt.txt" ] && [ -e "$M/figures.res/unmotr.mod/hd" ] && [ ! -e "$M/figures.res/unmotr.mod/hd.txt" ] &&
	      [ -e "$M/figures.res/unmotr.anm/cidle/hd" ] && [ ! -e "$M/figures.res/unmotr.anm/cidle/hd.txt" ] && [ -e "$M/figures.res/unmotr.bon/hd" ] && [ ! -e "$M/figures.res/unmotr.bon/hd.txt" ]'
if command -v gdk-pixbuf-thumbnailer >/dev/null; then
	gdk-pixbuf-thumbnailer -s 32 "$M/textures.res/spell_rune.png" "$WORK/thumb.png" 2>/dev/null
	check "a desktop thumbnailer makes a thumbnail of a PNG view" sh -c "file -b '$WORK/thumb.png' | grep -q 'PNG image data'"
else
	echo "skip: no gdk-pixbuf-thumbnailer (contrib/install-deps installs libgdk-pixbuf2.0-bin)"
fi
do_umount "$M"

# each view is converted once however many read it at the same time
"$E" mount -d "$DEMO" "$M" 2>"$WORK/debug.log" &
fg=$!
MOUNTS="$MOUNTS $M"
for i in $(seq 50); do mounted "$M" && break; sleep 0.1; done
pids=""
for i in 1 2 3 4 5 6 7 8; do cat "$M/textures.res/logo_nival.png" > "$WORK/par$i" & pids="$pids $!"; done
for p in $pids; do wait "$p"; done
check "8 parallel readers of one view: one conversion" [ "$(grep -c 'logo_nival.png: PNG view made' "$WORK/debug.log")" -eq 1 ]
check "and they all read the same bytes" sh -c "for i in 2 3 4 5 6 7 8; do cmp -s '$WORK/par1' '$WORK/par'\$i || exit 1; done"
check "the daemon is still up" not daemon_gone $fg "$WORK/debug.log"
kill -TERM $fg; wait $fg

# the byte bound of the cache holds: with 1 KiB, views are made again
"$E" mount -d -o cache_size=1K "$DEMO" "$M" 2>"$WORK/debug.log" &
fg=$!
for i in $(seq 50); do mounted "$M" && break; sleep 0.1; done
cat "$M/textures.res/logo_nival.png" > /dev/null
cat "$M"/textures.res/*.png > /dev/null
# the kernel keeps the pages it read: drop them so the next read asks eifs
[ -w /proc/sys/vm/drop_caches ] && { sync; echo 3 > /proc/sys/vm/drop_caches; }
cat "$M/textures.res/logo_nival.png" > "$WORK/again"
check "a 1 KiB cache drops views and makes them again" [ "$(grep -c 'logo_nival.png: PNG view made' "$WORK/debug.log")" -ge 2 ]
check "a view made again is the same" cmp -s "$WORK/par1" "$WORK/again"
check "the daemon with a 1 KiB cache is still up" not daemon_gone $fg "$WORK/debug.log"
kill -TERM $fg; wait $fg

# a real entry wins over a view of the same name; a texture that does not
# convert gives EIO and one log line, the rest stays readable
mkdir -p "$WORK/a"
printf 'real png' > "$WORK/a/x.png"
printf 'MMP\000garbage' > "$WORK/a/x.mmp"
printf 'bin\000ary' > "$WORK/a/blob"
printf 'Привет\r\n' | iconv -f utf-8 -t cp1251 > "$WORK/a/note"
printf 'MMP\000\100\000\000\000\100\000\000\000\001\000\000\000DXT1' > "$WORK/a/bad.mmp"
# a header asking for a 16384 x 16384 image (a 1 GiB PNG) in 80 bytes
{ printf 'MMP\000\000\100\000\000\000\100\000\000\001\000\000\000DXT1\004\000\000\000'; head -c 56 /dev/zero; } > "$WORK/a/huge.mmp"
"$E" pack "$WORK/a" "$WORK/a.res"
"$E" mount -f "$WORK/a.res" "$M" 2>"$WORK/bad.log" &
fg=$!
MOUNTS="$MOUNTS $M"
for i in $(seq 50); do mounted "$M" && break; sleep 0.1; done
check "a real entry wins over a view of the same name" [ "$(cat "$M/x.png")" = "real png" ]
check "an extensionless text of a .res has a UTF-8 view" [ "$(cat "$M/note.txt")" = "$(printf 'Привет\r')" ]
check "binary data without extension (a NUL in it) has none" eval '[ -e "$M/blob" ] && [ ! -e "$M/blob.txt" ]'
cat "$M/bad.png" > /dev/null 2>"$WORK/bad.err"
check "a texture that does not convert reads EIO" grep -q 'Input/output error' "$WORK/bad.err"
check "one log line names archive, entry and reason" [ "$(grep -c 'a.res/bad.png: cannot make the PNG view' "$WORK/bad.log")" -eq 1 ]
check "its raw file stays readable" cmp -s "$M/bad.mmp" "$WORK/a/bad.mmp"
cat "$M/huge.png" > /dev/null 2>"$WORK/huge.err"
check "a texture asking for a 1 GiB image reads EIO, nothing allocated" grep -q 'Input/output error' "$WORK/huge.err"
check "and the daemon stays small" [ "$(awk '/VmHWM/ { print $2 }' /proc/$fg/status)" -lt 200000 ]
check "the mount stays up" [ "$(cat "$M/x.png")" = "real png" ]
kill -TERM $fg; wait $fg

# ---- while views convert, the mount answers the rest ----------------------------
# EIFS_CONVERT_DELAY_MS (a test hook) makes each conversion 4 s longer.  The
# threads converting must leave the reading of requests to others.
S=$WORK/slow
EIFS_CONVERT_DELAY_MS=4000 "$E" mount "$DEMO" "$S"; MOUNTS="$MOUNTS $S"
cat "$S/textures.res/cursor.png" > "$WORK/slow1.png" & c1=$!
cat "$S/textures.res/spell_rune.png" > "$WORK/slow2.png" & c2=$!
sleep 0.5
cat "$S"/textures.res/*.mmp "$S/readme.txt" > "$WORK/quick"; rc=$?
check "raw files read while two conversions are under way" eval '[ $rc -eq 0 ] && kill -0 $c1 && kill -0 $c2'
for f in "$S"/textures.res/*.mmp; do "$E" cat "$DEMO/textures.res/${f##*/}"; done > "$WORK/quick.want"
cat "$DEMO/readme.txt" >> "$WORK/quick.want"
check "and they read right ($(wc -c < "$WORK/quick") bytes)" eval '[ -s "$WORK/quick" ] && cmp -s "$WORK/quick" "$WORK/quick.want"'

wait $c1; r1=$?; wait $c2; r2=$?
"$E" convert "$DEMO/textures.res/cursor.mmp" "$WORK/want1.png"
"$E" convert "$DEMO/textures.res/spell_rune.mmp" "$WORK/want2.png"
check "the slow conversions finish with the right bytes" \
	eval '[ $r1 -eq 0 ] && [ $r2 -eq 0 ] && cmp -s "$WORK/slow1.png" "$WORK/want1.png" && cmp -s "$WORK/slow2.png" "$WORK/want2.png"'
do_umount "$S"
check "the daemon exits" no_daemon "$S"

# the game samples
if [ -d "${SAMPLES:-}" ]; then
	do_mount "$SAMPLES" "$M"
	check "views of the samples: INI, DB, ADB, MP, SEC, models" sh -c "cd '$M' && [ -f config.ini ] && [ -f items.idb.jsonl ] && [ -f unhufe.adb.txt ] && [ -f zonemainmenunew.mpr/ZoneMainMenuNew.MP.txt ] && [ -f zonemainmenunew.mpr/ZoneMainMenuNew000000.SEC.txt ] && [ -f auxData.res/default.mod/default.lnk.txt ]"
	same_sizes "$M" > "$WORK/sizes2"
	check "stat size equals bytes read for every view of the samples" [ ! -s "$WORK/sizes2" ]
	check "grep -r over the database views shows table and record" sh -c "grep -rh '\"table\"' '$M'/*.jsonl | grep -q '\"Weapons\"'"
	# texts_ru.res: every extensionless text, all at once, against iconv
	(cd "$M/texts_ru.res" && for f in *; do case $f in *.*) ;; *) printf '%s\0' "$f" ;; esac; done) > "$WORK/texts"
	(cd "$M/texts_ru.res" && xargs -0 cat < "$WORK/texts") | iconv -f cp1251 -t utf-8 > "$WORK/texts.want"
	(cd "$M/texts_ru.res" && tr '\0' '\n' < "$WORK/texts" | sed 's/$/.txt/' | tr '\n' '\0' | xargs -0 cat) > "$WORK/texts.got"
	check "UTF-8 views of the $(tr -cd '\0' < "$WORK/texts" | wc -c) texts of texts_ru.res equal iconv's" \
		eval '[ -s "$WORK/texts.got" ] && cmp -s "$WORK/texts.want" "$WORK/texts.got"'
	n=$(cd "$M" && find . -name '*.png' | wc -l)
	check "every texture of auxData.res and redress_100.res has a PNG view ($n)" [ "$n" -ge 50 ]
	bad=0
	for f in $(cd "$M" && find . -name '*.png'); do file -b "$M/$f" | grep -q 'PNG image data' || bad=$((bad + 1)); done
	check "and each is a PNG image" [ "$bad" -eq 0 ]
	do_umount "$M"
fi
finish
