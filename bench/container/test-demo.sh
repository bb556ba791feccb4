#!/usr/bin/env bash
# The demo must survive a pod-sized memory limit (`make test` runs this as test-container): the
# demo, at a size that takes about a minute, inside a memory cgroup sized like a Kubernetes
# executor pod,
#
#   limit = heap (1 GiB) + off-heap (--budget, 64 MiB) + overhead,
#   overhead = the idle-JVM baseline + a stated margin (both below, in MiB),
#
# must exit 0 with a correct result (SortDemo checks the sorted output's fingerprint and exits 1
# on a wrong result). Over the limit the kernel kills it (exit 137) and the test fails. Without a
# writable cgroup-v1 memory controller (not root, cgroup v2 only) it is skipped with a message.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"

rows=${TEST_CONTAINER_ROWS:-8000000}
budget_mib=64
heap_mib=1024
# The idle-JVM baseline: what the demo's JVM needs beyond its heap when idle, i.e. the smallest
# overhead under which it survives a 2-row job (208 MiB, bench/container/run.sh nativepool:idle:…,
# bench/RESULTS.md "Container") plus the 64 MiB of off-heap that job leaves unused (272 MiB),
# rounded up a step. The margin covers the run-to-run spread of that figure; the native side
# itself may use nothing beyond what it reserved.
baseline_mib=${TEST_CONTAINER_BASELINE_MIB:-288}
margin_mib=${TEST_CONTAINER_MARGIN_MIB:-64}
limit=$(((heap_mib + budget_mib + baseline_mib + margin_mib) << 20))

if [[ ! -w /sys/fs/cgroup/memory ]]; then
	echo "test-container: SKIPPED: no writable cgroup-v1 memory controller at /sys/fs/cgroup/memory (needs root)"
	exit 0
fi
echo "test-container: demo --rows $rows --budget ${budget_mib}m in a cgroup of $((limit >> 20)) MiB" \
	"(heap $heap_mib + off-heap $budget_mib + baseline $baseline_mib + margin $margin_mib MiB)"
rc=0
# run.sh builds outside the cgroup and starts only the demo JVM inside it (DEMO_CGROUP), without
# Native Memory Tracking (DEMO_NMT=off), as the margins below were measured.
out=$(bash bench/container/cgrun.sh --name "nativepool-test-$$" --limit "$limit" --timeout 900 --env DEMO_CGROUP -- \
	env DEMO_HEAP=${heap_mib}m DEMO_NMT=off bash examples/spark/run.sh --rows "$rows" --budget "${budget_mib}m" 2>&1) || rc=$?
if [[ $rc -eq 3 ]]; then
	echo "test-container: SKIPPED: $(tail -1 <<<"$out")"
	exit 0
fi
grep -E '^(exit|limit|peak|peak_rss|oom_kills|seconds)=' <<<"$out" | tr '\n' ' '
echo
if [[ $rc -ne 0 ]]; then
	echo "$out" | tail -40
	echo "test-container: FAILED: exit $rc (137: killed over the limit; 124: stalled; 1: wrong result)"
	exit 1
fi
echo "test-container: ok"
