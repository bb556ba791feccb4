#!/usr/bin/env bash
# Finds the smallest memoryOverhead under which a command survives in a memory cgroup sized like a
# Kubernetes executor pod: limit = heap + off-heap + overhead (bench/container/cgrun.sh runs it).
#
#   bench/container/bisect.sh --label NAME --base BYTES --start MiB [--step MiB] [--timeout S] [--env VAR] [--logs DIR] -- cmd...
#
# --base is heap + off-heap in bytes; --start the first overhead tried (near the expected answer,
# so a cell costs a few runs); --step the resolution (16 MiB); --env VAR is cgrun.sh's (the command
# puts its own JVM into the cgroup named by $VAR, and builds outside it). It first runs the command with no
# effective limit (64 GiB) to learn its unconstrained time and peak; a constrained run that is
# still going after 3× that time is killed and counts as failed (a stall at the limit). Then it
# gallops from --start (down while runs survive, up while they fail, doubling the stride) and
# bisects to --step, and prints the smallest surviving overhead. With --logs DIR each run's stderr
# (the job's log: the guard's episode lines, the ledger at a kill) is kept as
# DIR/LABEL-OVERHEAD.err. Every run's figures go to stdout as one line:
#   run label=… overhead_mib=… limit=… exit=… peak=… peak_rss=… peak_dirty=… oom_kills=… seconds=…
# and the answer as:
#   result label=… min_overhead_mib=… unconstrained_peak=… unconstrained_seconds=…
# Exit 3 (skipped) without a writable memory cgroup.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

label= base= start= step=16 timeout= envopt=() logs=
while [[ $# -gt 0 ]]; do
	case $1 in
	--label) label=$2; shift 2 ;;
	--base) base=$2; shift 2 ;;
	--start) start=$2; shift 2 ;;
	--step) step=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--env) envopt=(--env "$2"); shift 2 ;;
	--logs) logs=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "bisect: unknown option $1" >&2; exit 2 ;;
	esac
done
[[ -n $label && -n $base && -n $start && $# -gt 0 ]] || { echo "usage: bisect.sh --label N --base BYTES --start MiB [--step MiB] [--timeout S] -- cmd..." >&2; exit 2; }

# field KEY FILE: the value of the last KEY=… line of a cgrun output.
field() { grep "^$1=" "$2" | tail -1 | cut -d= -f2; }

log=$(mktemp)
trap 'rm -f "$log" "$log.err"' EXIT
[[ -z $logs ]] || mkdir -p "$logs"

# One run with overhead $1 MiB (or "none"); sets rc and prints its line.
attempt() {
	local ov=$1 lim
	shift
	if [[ $ov == none ]]; then lim=$((64 << 30)); else lim=$((base + (ov << 20))); fi
	rc=0
	"$here/cgrun.sh" --name "np-bisect-$label-$$" --limit "$lim" --timeout "${run_timeout:-0}" "${envopt[@]}" -- "$@" >"$log" 2>"$log.err" || rc=$?
	if [[ $rc -eq 3 ]]; then
		cat "$log.err" >&2
		exit 3
	fi
	[[ -z $logs ]] || cp "$log.err" "$logs/$label-$ov.err"
	echo "run label=$label overhead_mib=$ov limit=$lim exit=$rc peak=$(field peak "$log") peak_rss=$(field peak_rss "$log") peak_dirty=$(field peak_dirty "$log") oom_kills=$(field oom_kills "$log") seconds=$(field seconds "$log")"
	last_peak=$(field peak "$log")
	last_seconds=$(field seconds "$log")
}

run_timeout=0
attempt none "$@"
if [[ $rc -ne 0 ]]; then
	echo "bisect: $label fails even without a limit (exit $rc); stderr tail:" >&2
	tail -20 "$log.err" >&2
	echo "result label=$label min_overhead_mib=none unconstrained_exit=$rc"
	exit 1
fi
free_peak=$last_peak free_seconds=$last_seconds
run_timeout=${timeout:-$(printf '%.0f' "$(echo "3 * $free_seconds + 10" | bc)")}

# Gallop from --start (steps of 1, 2, 4… × --step) until one run survives and one fails, then
# bisect between them: a cell whose answer is within a step of --start costs two or three runs.
# lo: the highest overhead seen failing (0 counts as failing); hi: the lowest seen surviving.
lo=0 hi= ov=$start
attempt "$ov" "$@"
if [[ $rc -eq 0 ]]; then
	hi=$ov
	stride=$step
	while ((hi - stride > lo)); do
		ov=$((hi - stride))
		attempt "$ov" "$@"
		if [[ $rc -eq 0 ]]; then hi=$ov; stride=$((stride * 2)); else lo=$ov; break; fi
	done
else
	lo=$ov
	stride=$step
	while [[ -z $hi ]]; do
		ov=$((lo + stride))
		attempt "$ov" "$@"
		if [[ $rc -eq 0 ]]; then hi=$ov; else lo=$ov; stride=$((stride * 2)); fi
	done
fi
while ((hi - lo > step)); do
	ov=$(((lo + hi) / 2 / step * step))
	((ov > lo)) || ov=$((lo + step))
	attempt "$ov" "$@"
	if [[ $rc -eq 0 ]]; then hi=$ov; else lo=$ov; fi
done
best=$hi
echo "result label=$label min_overhead_mib=$best unconstrained_peak=$free_peak unconstrained_seconds=$free_seconds"
