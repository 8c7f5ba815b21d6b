#!/bin/sh
# Malformed archives, made here byte by byte, mounted for real: a folder of
# them mounts and shows each bad archive as a plain file (with one log line
# naming it and the offset) or lists its good entries; bad entries give EIO;
# a bad archive mounted alone is refused with a message.  The daemon stays
# up, answers, and stays small throughout.
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip_all "no /dev/fuse or fusermount3 here"
E=$EIFS
B=$WORK/bad
M=$WORK/mnt
mkdir -p "$B"

# raw OUT COUNT TABLE_OFFSET NAMES_LEN [ENTRY...] [-- DATA NAMES]: a header,
# then for each ENTRY "next,length,offset,name_len,name_off" a table row;
# DATA is put right after the header, NAMES after the table.
raw() {
	out=$1 count=$2 toff=$3 nlen=$4; shift 4
	{ printf '\074\342\234\001'; le32 "$count"; le32 "$toff"; le32 "$nlen"; } > "$out"
	data="" names=""
	rows=""
	while [ $# -gt 0 ]; do
		if [ "$1" = -- ]; then data=$2 names=$3; break; fi
		rows="$rows $1"; shift
	done
	printf '%s' "$data" >> "$out"
	for r in $rows; do
		IFS=, read -r nx ln of nl no <<EOF
$r
EOF
		{ le32 "$nx"; le32 "$ln"; le32 "$of"; le32 1000000000; le16 "$nl"; le32 "$no"; } >> "$out"
	done
	printf '%s' "$names" >> "$out"
}

# a good archive to compare with: two entries "a" -> "hello", "b" -> "world"
raw "$B/good.res" 2 26 2 '-1,5,16,1,0' '-1,5,21,1,1' -- helloworld ab
printf '\074\342\234\001\002\000' > "$B/short_header.res"
raw "$B/short_table.res" 3 26 2 '-1,5,16,1,0' -- helloworld ab
raw "$B/short_names.res" 2 26 20 '-1,5,16,1,0' '-1,5,21,1,1' -- helloworld ab
head -c 71 "$B/good.res" > "$B/cut_names.res"
raw "$B/past_end.res" 2 26 2 '-1,5,16,1,0' '-1,500,21,1,1' -- helloworld ab
raw "$B/offset_past_end.res" 2 26 2 '-1,5,16,1,0' '-1,5,4000000000,1,1' -- helloworld ab
raw "$B/overlap.res" 2 26 2 '-1,8,16,1,0' '-1,5,19,1,1' -- helloworld ab
raw "$B/next_range.res" 2 26 2 '7,5,16,1,0' '-1,5,21,1,1' -- helloworld ab
raw "$B/next_cycle.res" 2 26 2 '1,5,16,1,0' '0,5,21,1,1' -- helloworld ab
raw "$B/name_outside.res" 2 26 2 '-1,5,16,1,0' '-1,5,21,9,60000' -- helloworld ab
{ printf '\074\342\234\001'; le32 10000000; le32 16; le32 0; head -c 1000 /dev/zero; } > "$B/ten_million.res"
# a nested archive whose window starts at its parent's own header
{ printf '\074\342\234\001'; le32 1; le32 16; le32 8; le32 -1; le32 46; le32 0; le32 1000000000; le16 8; le32 0; printf 'self.mod'; } > "$B/self.res"
# 100 archives nested in one another
printf 'deepest' > "$WORK/leaf.txt"
cur=$WORK/leaf.txt name=leaf.txt
for i in $(seq 100); do
	rm -rf "$WORK/lvl" && mkdir "$WORK/lvl" && cp "$cur" "$WORK/lvl/$name"
	"$E" pack "$WORK/lvl" "$WORK/lvl$i.res" 2>/dev/null || break
	cur=$WORK/lvl$i.res name=d.res
done
cp "$cur" "$B/deep.res"
# ten levels of four copies of one archive sharing their bytes (pack
# --dedup): 350 000 directories if every copy were one, from 1.3 KB
cur=$WORK/leaf.txt name=leaf ext=txt
for i in $(seq 10); do
	rm -rf "$WORK/lvl" && mkdir "$WORK/lvl"
	for c in 0 1 2 3; do cp "$cur" "$WORK/lvl/$name$c.$ext"; done
	"$E" pack --dedup "$WORK/lvl" "$WORK/fan$i.res" 2>/dev/null || break
	cur=$WORK/fan$i.res name=x ext=res
done
cp "$cur" "$B/fanout.res"
# two nested archives whose bytes partly overlap: the first's window runs
# 8 bytes into the second
if command -v python3 >/dev/null; then
	python3 - "$WORK/fan1.res" "$B/partial.res" <<'EOF'
import struct, sys
x = open(sys.argv[1], 'rb').read()
data = x + x
names = b'a.modb.mod'
head = struct.pack('<IIII', 0x019CE23C, 2, 16 + len(data), len(names))
table = struct.pack('<iIIIHI', -1, len(x) + 8, 16, 1000000000, 5, 0) + \
	struct.pack('<iIIIHI', -1, len(x), 16 + len(x), 1000000000, 5, 5)
open(sys.argv[2], 'wb').write(head + data + table + names)
EOF
fi
rawres "$B/names.res" '..' 'dotdot' 'a/b' 'slash' '' 'empty' 'x\000y' 'nul' 'Same' 'first' 'SAME' 'second' 'bad\230byte' 'undef'
# 3000 entries whose names share one 60 000-byte run of the name block
# (180 MB of names from 1.5 MB of archive: over RES_NAME_MAX, left out),
# 3000 that share its first 1000 bytes (case duplicates of a name the
# kernel cannot take, over 255 bytes), one name of 300 bytes, and "a"
long=
if command -v python3 >/dev/null; then
	long=$B/long.res
	python3 - "$long" <<'EOF'
import struct, sys
names = b'A' * 60000 + b'L' * 300 + b'a'
rows = [(60000, 0)] * 3000 + [(1000, 0)] * 3000 + [(300, 60000), (1, 60300)]
data = b'hello'
head = struct.pack('<IIII', 0x019CE23C, len(rows), 16 + len(data), len(names))
table = b''.join(struct.pack('<iIIIHI', -1, 5, 16, 1000000000, nl, no) for nl, no in rows)
open(sys.argv[1], 'wb').write(head + data + table + names)
EOF
fi
# a folder or loose file changed within 2 s is looked at again on its
# next use (its stamp cannot be trusted yet), and the bad archives beside
# it logged again: these are left to age first, as a game folder's are
sleep 3

"$E" mount -f "$B" "$M" 2>"$WORK/daemon.log" &
daemon=$!
MOUNTS="$MOUNTS $M"
for i in $(seq 100); do mounted "$M" && break; sleep 0.05; done
check "a folder full of malformed archives mounts" mounted "$M"

check "a good archive beside them reads" eval '[ "$(cat "$M/good.res/a")" = hello ] && [ "$(cat "$M/good.res/b")" = world ]'
for f in short_header short_table short_names cut_names ten_million; do
	check "$f.res: shown as a plain file with its bytes" eval '[ -f "$M/$f.res" ] && cmp -s "$B/$f.res" "$M/$f.res"'
done
for f in short_table cut_names ten_million; do
	check "$f.res: one log line naming it and an offset" [ "$(grep -c "$f.res: offset [0-9]*:" "$WORK/daemon.log")" -eq 1 ]
done
check "data past the end: the good entry reads" [ "$(cat "$M/past_end.res/a")" = hello ]
cat "$M/past_end.res/b" > /dev/null 2>"$WORK/e1"
check "... the bad one gives EIO" grep -q 'Input/output error' "$WORK/e1"
check "... logged once with archive, entry and offset" [ "$(grep -c 'past_end.res/b: data at 21+500 is past the archive end' "$WORK/daemon.log")" -eq 1 ]
cat "$M/offset_past_end.res/b" > /dev/null 2>"$WORK/e2"
check "an offset of 4 GB: EIO" grep -q 'Input/output error' "$WORK/e2"
check "overlapping entries both read" eval '[ "$(cat "$M/overlap.res/a")" = hellowor ] && [ "$(cat "$M/overlap.res/b")" = lowor ]'
check "chain link out of range: entries still listed and read" [ "$(cat "$M/next_range.res/a")" = hello ]
check "cyclic chain: entries still listed and read" [ "$(cat "$M/next_cycle.res/b")" = world ]
check "eifs check reports the broken chains" eval 'not "$E" check "$B/next_range.res" >/dev/null 2>&1 && not "$E" check "$B/next_cycle.res" >/dev/null 2>&1'
check "a name outside the name block: the entry is left out, the rest shows" [ "$(ls "$M/name_outside.res" | grep -v '\.txt$')" = a ]
check "an archive that contains itself is a file inside itself" [ -f "$M/self.res/self.mod" ]
depth=$(cd "$M/deep.res" && find . -type d | awk -F/ '{ print NF - 1 }' | sort -n | tail -n1)
check "100 nested archives: directories stop at the depth limit (16)" [ "$depth" -eq 16 ]
check "... logged" grep -q 'nested deeper than 16 levels' "$WORK/daemon.log"
# in each archive that is no copy, its four are directories; in a copy,
# only the first (by name): with nine levels below fanout.res itself,
# 1 + sum over j = 1..9 of 4 + 3 (j - 1)
check "copies of one archive: directories, but not a copy's copies (145)" \
	[ "$(find "$M/fanout.res" -type d | wc -l)" -eq 145 ]
check "... and the rest files that read" eval '[ -f "$M/fanout.res/x1.res/x1.res" ] && cmp -s "$M/fanout.res/x1.res/x1.res" "$WORK/fan8.res"'
check "... logged" grep -q 'fanout.res/x1.res/x1.res: shares its bytes with an entry beside it, inside an archive that does too; shown as a file' "$WORK/daemon.log"
if [ -f "$B/partial.res" ]; then
	check "archives that partly overlap: both shown as files" eval '[ -f "$M/partial.res/a.mod" ] && [ -f "$M/partial.res/b.mod" ]'
	check "... logged" grep -q 'partial.res/b.mod: its bytes partly overlap another entry.s; shown as a file' "$WORK/daemon.log"
fi
check "odd names rewritten, none escapes" eval '[ -f "$M/names.res/%2E%2E" ] && [ -f "$M/names.res/a%2Fb" ] && [ -f "$M/names.res/x%00y" ] && [ -f "$M/names.res/SAME~0a5e7f3b" ]'
if [ -n "$long" ]; then
	ls "$M/long.res" | grep -v '\.txt$' > "$WORK/long.ls"
	check "names over 200 bytes: all 3002 listed, none longer than the kernel takes" \
		eval '[ "$(wc -l < "$WORK/long.ls")" -eq 3002 ] && awk "length(\$0) > 255 { bad = 1 } END { exit bad }" "$WORK/long.ls"'
	l300=$(grep '^LLLL' "$WORK/long.ls")
	check "... one of 300 shown as its first 190 bytes and a hash, and it reads" \
		eval '[ "${#l300}" -eq 199 ] && [ "$(cat "$M/long.res/$l300")" = hello ]'
	dups=$(grep -c '/long.res.*is taken (a case variant' "$WORK/daemon.log")
	check "... 3000 case duplicates logged in at most 64 lines" eval '[ "$dups" -ge 1 ] && [ "$dups" -le 64 ]'
	check "... and counted in one" grep -q 'long.res: [0-9]* more warnings' "$WORK/daemon.log"
	check "names over 1024 bytes: left out, logged in at most 64 lines" \
		[ "$(grep -c 'long.res: entry [0-9]*: name at 0+60000 is longer than 1024 bytes; skipped' "$WORK/daemon.log")" -eq 64 ]
	check "... and counted in one" grep -q 'long.res: 2936 more entries with a bad name not logged' "$WORK/daemon.log"
	check "eifs check reports them" eval 'not "$E" check "$long" > "$WORK/long.check" 2>&1 && [ "$(grep -c "name 0+60000 is longer than 1024 bytes" "$WORK/long.check")" -eq 3000 ]' 
fi
find "$M" -type f > "$WORK/all.files"; frc=$?
grep -v -e '/past_end\.res/b$' -e '/offset_past_end\.res/b$' "$WORK/all.files" | tr '\n' '\0' \
	| xargs -0 cat > /dev/null 2>"$WORK/cat.err"; crc=$?
check "the whole tree can be walked, and read but for the entries past their archive's end" \
	eval '[ $frc -eq 0 ] && [ $crc -eq 0 ] && [ "$(wc -l < "$WORK/all.files")" -gt 20 ] && kill -0 $daemon'
[ $crc -eq 0 ] || cat "$WORK/cat.err"
rss=$(awk '/VmRSS/ { print $2 }' "/proc/$daemon/status")
small=65536
if ldd "$E" 2>/dev/null | grep -qE 'lib(a|t)san'; then
	small=262144 # a sanitizer keeps freed memory aside and its shadow besides
	echo "a sanitizer build: small means under $small kB here"
fi
check "the daemon is still up and small ($rss kB)" eval 'kill -0 "$daemon" && [ "$rss" -lt "$small" ]'
kill -TERM "$daemon"; wait "$daemon"

# each bad archive mounted alone: refused with a message, or mounted
for f in short_table cut_names ten_million; do
	"$E" mount "$B/$f.res" "$M" 2>"$WORK/alone.err"; rc=$?
	check "$f.res alone: refused (66) naming the file and offset" eval '[ $rc -eq 66 ] && grep -q "$f.res: offset [0-9]*:" "$WORK/alone.err" && not mounted "$M"'
done
for f in past_end next_cycle self deep names; do
	"$E" mount "$B/$f.res" "$M" 2>/dev/null; rc=$?
	check "$f.res alone: mounts" eval '[ $rc -eq 0 ] && mounted "$M" && ls "$M" > /dev/null'
	fusermount3 -u "$M" 2>/dev/null
done
check "no daemon left" no_daemon "$M"
finish
