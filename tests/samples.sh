#!/bin/sh
# The real game files in ../shared/samples: offline commands and a mount.
. "$(dirname "$0")/lib.sh"
: "${SAMPLES:=$(dirname "$0")/../../shared/samples}"
[ -d "$SAMPLES" ] || skip_all "no game samples at $SAMPLES (they are read from ../shared/samples, never copied)"
E=$EIFS

# the acceptance test of the packer: unpack the original Russian texts.res
# and pack it again -> table (slots, next_index), name block and data
# layout byte for byte; the whole file is identical since extract restores
# the timestamps
"$E" extract "$SAMPLES/texts_ru.res" "$WORK/texts" 2>"$WORK/x.err"
check "extract texts_ru.res: 3167 files" [ "$(find "$WORK/texts" -type f | wc -l)" -eq 3167 ]
"$E" pack --dedup "$WORK/texts" "$WORK/texts_ru.res"
off=$(od -An -tu4 -j8 -N4 "$SAMPLES/texts_ru.res" | tr -d ' ')
check "table and name block of texts_ru.res reproduced byte for byte" \
	cmp -s -i "$off:$off" "$SAMPLES/texts_ru.res" "$WORK/texts_ru.res"
check "texts_ru.res reproduced whole, byte for byte" cmp -s "$SAMPLES/texts_ru.res" "$WORK/texts_ru.res"
for a in z3q1.mq auxData.res; do
	"$E" extract "$SAMPLES/$a" "$WORK/x-$a" && "$E" pack --dedup "$WORK/x-$a" "$WORK/$a"
	check "$a reproduced byte for byte" cmp -s "$SAMPLES/$a" "$WORK/$a"
done
"$E" extract "$SAMPLES/redress_100.res" "$WORK/x-redress" && "$E" pack "$WORK/x-redress" "$WORK/redress.res"
check "redress_100.res (not de-duplicated by its packer) reproduced without --dedup" cmp -s "$SAMPLES/redress_100.res" "$WORK/redress.res"

# check: every original entry reachable, including the one cp1251 name
# that only the signed-char hash finds
for a in texts_ru.res z3q1.mq auxData.res redress_100.res zonemainmenunew.mpr; do
	check "check passes on $a" "$E" check "$SAMPLES/$a"
done
check "the cp1251 name is found" sh -c "'$E' cat '$SAMPLES/texts_ru.res/Gipat Medium (тип материала - кожа)' | grep -q ."

# mount the samples folder: find == eifs ls -R, every byte equal
[ -e /dev/fuse ] || { echo "no /dev/fuse: mount part skipped"; finish; }
M=$WORK/mnt
do_mount "$SAMPLES" "$M"
check "samples folder mounted" mounted "$M"
(cd "$M" && find . -mindepth 1 -printf '%P %s\n' | sort) > "$WORK/find"
"$E" ls -lR "$SAMPLES" | awk '{ s = $2; $1=$2=$3=$4=""; sub(/^ +/, ""); print $0, s }' | sort > "$WORK/ls"
check "find over the mount equals eifs ls -lR ($(wc -l < "$WORK/find") paths)" cmp -s "$WORK/find" "$WORK/ls"
bad=0 n=0
(cd "$M" && find . -type f -printf '%P\n') > "$WORK/files"
while IFS= read -r f; do
	n=$((n + 1))
	"$E" cat "$SAMPLES/$f" | cmp -s - "$M/$f" || { bad=$((bad + 1)); echo "differs: $f"; }
done < "$WORK/files"
check "all $n files read through the mount equal eifs cat" eval '[ "$bad" -eq 0 ] && [ "$n" -gt 3000 ]'
check "plain files pass through unchanged" cmp -s "$M/items.idb" "$SAMPLES/items.idb"
check "nested .mod in auxData.res is a directory" [ -d "$M/auxData.res/default.mod" ]
check "upper-case extensions of zonemainmenunew.mpr" [ -f "$M/zonemainmenunew.mpr/ZoneMainMenuNew.MP" ]
check "backslash directory of z3q1.mq" cmp -s "$M/z3q1.mq/z3q1/quest.reg" "$M/Z3Q1.MQ/Z3Q1/QUEST.REG"
do_umount "$M"
finish
