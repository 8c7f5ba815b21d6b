#!/bin/sh
# Random operations from three or four threads at once in one archive
# through the mount (tests/concurrent_model.py): writes, appends, truncates,
# renames of files and folders, deletes, folders made and removed, editor
# saves, with saves held open by EIFS_SAVE_DELAY_MS so that they overlap.
# Each run must end with no errno a race cannot explain (per operation),
# every kind of operation done at least once, no dead daemon, no
# failed save, every file a whole sequence of blocks ever written, each
# thread's own files exactly as it left them, a clean `eifs check` and the
# same tree after a new mount.
# CONCURRENT_SECONDS (default 15) per run; the seeds are fixed ones that
# found bugs before (a truncate during a save) and one new each time
# (CONCURRENT_SEED to repeat it).
. "$(dirname "$0")/lib.sh"
[ -e /dev/fuse ] && command -v fusermount3 >/dev/null || skip_all "no /dev/fuse or fusermount3 here"
command -v python3 >/dev/null || skip_all "no python3 here"
SECS=${CONCURRENT_SECONDS:-15}
D=$WORK/model
MOUNTS="$MOUNTS $D/run/mnt"
new_seed=${CONCURRENT_SEED:-$(( $(date +%s) % 100000 + 1000 ))}
for seed in 2 4 11 "$new_seed"; do
	EIFS=$EIFS python3 "$(dirname "$0")/concurrent_model.py" --dir "$D" --seed "$seed" --secs "$SECS" \
		> "$WORK/run.out" 2>&1
	rc=$?
	sed -n 's/^RESULT //p' "$WORK/run.out"
	check "concurrent operations, seed $seed: no bug (tests/concurrent_model.py --seed $seed)" [ $rc -eq 0 ]
	if [ $rc -ne 0 ]; then
		grep '^BUG' "$WORK/run.out" | head -n 20
		tail -n 20 "$WORK/run.out"
	fi
	check "... and no daemon left" no_daemon "$D/run/mnt"
done

# Folders made and removed, and an archive's folder emptied, removed and
# made again, while other threads open, list and stat them
# (tests/folder_race.py): a folder gone under a path walk is ENOENT.  It was
# ESTALE, which the kernel retries only once, and a second change meanwhile
# brought it to the program (a listing asks the folder's attributes first).
# Run again with the kernel's cache notices late, as on a busy machine: the
# archive's folder then vanished with its last file while the kernel still
# showed it, and the mkdir in it failed (a CI machine met that).
for delay in 0 50; do
	R=$WORK/race$delay
	mkdir -p "$R/src/e/f" "$R/game" "$R/mnt"
	printf 'y' > "$R/src/e/f/y.dat"
	printf 'k' > "$R/src/keep.dat"
	"$EIFS" pack "$R/src" "$R/game/a.res" >/dev/null
	if EIFS_NOTIFY_DELAY_MS=$delay do_mount "$R/game" "$R/mnt"; then
		secs=${FOLDER_RACE_SECONDS:-6}
		[ "$delay" = 0 ] || secs=$(( (secs + 1) / 2 ))
		python3 "$(dirname "$0")/folder_race.py" "$R/mnt/a.res" "$secs" > "$R/race.out" 2>&1
		rc=$?
		cat "$R/race.out"
		check "folders coming and going under listings (notices $delay ms late): the race ran" \
			eval '[ $rc -eq 0 ] && grep -q "\"cycles\": [1-9]" "$R/race.out" && grep -q "\"list\": [1-9]" "$R/race.out"'
		check "... every change succeeded (an emptied folder of the archive stays, as on a disk)" \
			not grep -q "churn" "$R/race.out"
		check "... no ESTALE reached a program (open, list, stat or the changes)" not grep -q ESTALE "$R/race.out"
		check "... the mount is still there" mounted "$R/mnt"
		do_umount "$R/mnt"
		check "... and no daemon left" no_daemon "$R/mnt"
		check "... the archive checks clean" "$EIFS" check "$R/game/a.res"
	else
		fail "folders coming and going: mount failed"
	fi
done
finish
