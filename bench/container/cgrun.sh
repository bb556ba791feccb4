#!/usr/bin/env bash
# Runs one command inside a fresh cgroup-v1 memory cgroup with a hard limit, the way Kubernetes
# limits an executor pod, and reports what the kernel counted:
#
#   bench/container/cgrun.sh --limit BYTES [--timeout SECONDS] [--name NAME] [--env VAR] -- command args...
#
# The command itself (and everything it starts) runs in the cgroup: the script forks a shell that
# writes its own pid into cgroup.procs and then execs the command. Only that process tree is
# charged; build steps belong outside. With --env VAR the command runs outside instead, with VAR
# set to the cgroup's directory, and puts its own workload in (the demo's run.sh does so with
# DEMO_CGROUP: it builds outside and starts only the JVM inside). Over the limit, the kernel's OOM killer ends it with
# SIGKILL (exit 137), as in a pod. A run still going after --timeout is killed too and reported as
# a stall (exit 124).
#
# The last lines of stdout are machine-readable, one `key=value` each:
#   exit=<code>  limit=<bytes>  peak=<memory.max_usage_in_bytes>  peak_rss=<highest total_rss seen>
#   peak_dirty=<highest total_dirty + total_writeback seen>  cache_at_rss_peak=<total_cache then>
#   oom_kills=<memory.oom_control oom_kill>  failcnt=<memory.failcnt>  seconds=<wall time>
# peak is the kernel's own high-water mark (anon + page cache), never a sample; peak_rss samples
# memory.stat's total_rss every 20 ms, a lower bound kept for comparison. peak_dirty is the page
# cache that could not simply be dropped (spill files not yet written back), which a cgroup also
# charges: it tells an OOM kill by anonymous memory from one by dirty page cache.
#
# Needs root and a writable /sys/fs/cgroup/memory (cgroup v1). Exit status: the command's, or 3
# if no memory cgroup can be made (callers skip on 3). The cgroup is removed at the end.
set -euo pipefail

limit= timeout=0 name=nativepool-$$ envvar=
while [[ $# -gt 0 ]]; do
	case $1 in
	--limit) limit=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--name) name=$2; shift 2 ;;
	--env) envvar=$2; shift 2 ;;
	--) shift; break ;;
	*) echo "cgrun: unknown option $1" >&2; exit 2 ;;
	esac
done
[[ -n $limit && $# -gt 0 ]] || { echo "usage: cgrun.sh --limit BYTES [--timeout S] [--name N] -- cmd..." >&2; exit 2; }

root=/sys/fs/cgroup/memory
cg=$root/$name
if [[ ! -w $root ]] || ! mkdir "$cg" 2>/dev/null; then
	echo "cgrun: no writable cgroup-v1 memory controller at $root; skipped" >&2
	exit 3
fi
cleanup() {
	# Only processes this script started can be in the cgroup; kill any left, then remove it.
	if [[ -d $cg ]]; then
		while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$cg/cgroup.procs"
		for _ in $(seq 50); do [[ -s $cg/cgroup.procs ]] || break; sleep 0.1; done
		rmdir "$cg" 2>/dev/null || true
	fi
}
trap cleanup EXIT
echo "$limit" >"$cg/memory.limit_in_bytes"
# No swap: a pod has none, and swapping would hide the overshoot.
echo "$limit" >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null || true
echo 0 >"$cg/memory.swappiness" 2>/dev/null || true

start=$(date +%s.%N)
if [[ -n $envvar ]]; then
	env "$envvar=$cg" "$@" &
else
	bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg" "$@" &
fi
pid=$!
peak_rss=0 peak_dirty=0 cache_at_rss_peak=0 stalled=0
while kill -0 "$pid" 2>/dev/null; do
	read -r rss cache dirty < <(awk '$1=="total_rss"{r=$2} $1=="total_cache"{c=$2} $1=="total_dirty"||$1=="total_writeback"{d+=$2} END{print r+0, c+0, d+0}' "$cg/memory.stat" 2>/dev/null || echo 0 0 0)
	if ((rss > peak_rss)); then peak_rss=$rss; cache_at_rss_peak=$cache; fi
	((dirty > peak_dirty)) && peak_dirty=$dirty
	if ((timeout > 0)) && (($(date +%s) - ${start%.*} > timeout)); then
		stalled=1
		while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$cg/cgroup.procs"
		kill "$pid" 2>/dev/null || true
		break
	fi
	sleep 0.02
done
rc=0
wait "$pid" || rc=$?
((stalled)) && rc=124
end=$(date +%s.%N)
peak=$(cat "$cg/memory.max_usage_in_bytes")
oom=$(awk '$1=="oom_kill"{print $2}' "$cg/memory.oom_control")
failcnt=$(cat "$cg/memory.failcnt")
echo "exit=$rc"
echo "limit=$limit"
echo "peak=$peak"
echo "peak_rss=$peak_rss"
echo "peak_dirty=$peak_dirty"
echo "cache_at_rss_peak=$cache_at_rss_peak"
echo "oom_kills=${oom:-0}"
echo "failcnt=$failcnt"
echo "seconds=$(echo "$end - $start" | bc)"
exit $rc
