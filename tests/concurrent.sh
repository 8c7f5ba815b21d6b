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
finish
