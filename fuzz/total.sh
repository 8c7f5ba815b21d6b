#!/bin/sh
# Sums what fuzz/run.sh appended to fuzz/stats.log: per target the runs,
# CPU seconds and executions over all runs, and a total line.
#   fuzz/total.sh [LOG]
log=${1:-$(dirname "$0")/stats.log}
[ -f "$log" ] || { echo "total: no $log (run fuzz/run.sh first)" >&2; exit 1; }
awk '
{
	t = $2
	for (i = 3; i <= NF; i++) {
		split($i, kv, "=")
		v[kv[1]] = kv[2]
	}
	runs[t]++; cpu[t] += v["cpu"]; execs[t] += v["execs"]; crashes[t] += v["crashes"]
}
END {
	printf "%-8s %5s %10s %14s %8s\n", "target", "runs", "cpu_s", "execs", "crashes"
	for (t in runs) {
		printf "%-8s %5d %10.0f %14.0f %8d\n", t, runs[t], cpu[t], execs[t], crashes[t] | "sort"
		R += runs[t]; C += cpu[t]; E += execs[t]; X += crashes[t]
	}
	close("sort")
	printf "%-8s %5d %10.0f %14.0f %8d\n", "total", R, C, E, X
}' "$log"
