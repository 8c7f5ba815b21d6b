#!/bin/sh
# Builds the demo game folder from demo/src with eifs' own writer.
# A folder whose name ends in an archive extension (.res .mod .anm .bon
# .mpr .mq) becomes that archive; a folder whose name ends in '@' becomes
# an archive named without the '@' (the extensionless clips of .anm files).
# Innermost archives are packed first, so nesting works at any depth.
# Game files are made from their sources first, by eifs' own writers
# (demo/mkasset): NAME.FORMAT.LEVELS.png -> NAME.mmp, NAME.reg.ini -> NAME.reg,
# NAME.gen -> NAME made by the generator its words name (models, maps).
# Every entry gets the same timestamp, so the output is reproducible.
# The texts (texts.res entries, a quest's briefing) are cp1251 in demo/src,
# as in the game; eifs shows them as UTF-8 beside (NAME.txt).
set -eu
src=$1 out=$2 eifs=$3 mkasset=$4
stamp=1000000000   # 2001-09-09, the game's era

rm -rf "$out.tmp"
mkdir -p "$(dirname "$out")"
cp -R "$src" "$out.tmp"
find "$out.tmp" -name .gitkeep -delete
find "$out.tmp" -name '*.png' | while IFS= read -r png; do
	base=${png%.png}; levels=${base##*.}; base=${base%.*}; format=${base##*.}; name=${base%.*}
	"$mkasset" mmp "$format" "$levels" "$png" "$name.mmp"
	rm "$png"
done
find "$out.tmp" -name '*.gen' | while IFS= read -r gen; do
	# shellcheck disable=SC2046 # the words of the file are the arguments
	"$mkasset" gen "${gen%.gen}" $(cat "$gen")
	rm "$gen"
done
find "$out.tmp" -name '*.reg.ini' | while IFS= read -r ini; do
	"$mkasset" reg "$ini" "${ini%.ini}"
	rm "$ini"
done
# deepest first: sort by depth, longest path first
find "$out.tmp" -mindepth 1 -type d | awk '{ print gsub("/", "/"), $0 }' | sort -rn | cut -d' ' -f2- |
while IFS= read -r dir; do
	case "$dir" in
	*.res|*.RES|*.mod|*.anm|*.bon|*.mpr|*.mq|*@) ;;
	*) continue ;;
	esac
	target=${dir%@}
	"$eifs" pack --dedup --time "$stamp" "$dir" "$dir.packed"
	rm -rf "$dir"
	mv "$dir.packed" "$target"
	touch -d "@$stamp" "$target"
done
rm -rf "$out"
mv "$out.tmp" "$out"
touch "$out.stamp"
