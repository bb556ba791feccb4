#!/usr/bin/env bash
# Side-by-side cost of a try_grow(8)+shrink(8) pair: DataFusion's memory pools
# (Rust, bench/datafusion) versus nativepool's Go pools, on this machine, in
# one run, with the two sides interleaved round by round (DataFusion, Go,
# DataFusion, Go, ...), each round short, so that load landing on the machine
# falls on both sides alike.
#
#   bash bench/compare_datafusion.sh        # from the repo root (or anywhere)
#
# Rows: greedy, fair (spillable consumers), TrackConsumers(greedy, 5); one
# and two threads; the measured consumers alone and among 1,000 registered
# consumers. Writes bench/out/datafusion.txt, bench/out/go.txt (raw
# Go-benchmark-format lines, every round) and bench/out/datafusion-table.md
# (median and minimum of each side, Go/DF of the medians, the CPU model, and
# the load average at the start and the end).
# Knobs (environment): ROUNDS (interleaved rounds, default 10), ITERS (pairs
# per DataFusion round, default 2000000), BENCHTIME (go -test.benchtime per
# Go round, default 200ms).
# Exits non-zero at the end if the Go benchmarks were missing or failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

OUT=bench/out
CRATE=bench/datafusion
ROUNDS="${ROUNDS:-10}"
ITERS="${ITERS:-2000000}"
BENCHTIME="${BENCHTIME:-200ms}"
COUNT="$ROUNDS"
mkdir -p "$OUT"

echo "== building $CRATE (release) and the Go benchmark binary =="
cargo build --release --locked --manifest-path "$CRATE/Cargo.toml"
go test -c -o "$OUT/pool.test" ./pool/
LOAD_START="$(cut -d' ' -f1-3 /proc/loadavg)"
: > "$OUT/datafusion.txt"
: > "$OUT/go.txt"
go_ok=1
for round in $(seq "$ROUNDS"); do
    echo "== round $round/$ROUNDS: DataFusion ($ITERS pairs per row), then Go ($BENCHTIME per row) =="
    "$CRATE/target/release/df-pool-bench" --rounds 1 --iters "$ITERS" >> "$OUT/datafusion.txt"
    if ! "$OUT/pool.test" -test.run '^$' -test.bench 'BenchmarkPairVsDataFusion' \
        -test.benchtime "$BENCHTIME" -test.count 1 >> "$OUT/go.txt"; then
        echo "!! go benchmark failed in round $round" >&2
        go_ok=0
    fi
done
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"
if ! grep -q '^BenchmarkPairVsDataFusion/' "$OUT/go.txt"; then
    echo "!! no BenchmarkPairVsDataFusion results in $OUT/go.txt: the Go side is missing" >&2
    go_ok=0
fi

# (c) benchstat + table ------------------------------------------------------
BENCHSTAT="$(command -v benchstat || true)"
if [[ -z "$BENCHSTAT" ]]; then
    BENCHSTAT="$(go env GOPATH)/bin/benchstat"
    if [[ ! -x "$BENCHSTAT" ]]; then
        echo "== installing benchstat =="
        go install golang.org/x/perf/cmd/benchstat@latest || echo "!! could not install benchstat" >&2
    fi
fi
if [[ -x "$BENCHSTAT" ]]; then
    # benchstat compares benchmarks of the same name, so write copies with a
    # common name (BenchmarkPair/...) and without the pkg line, then compare
    # the two labelled files.
    sed -e 's/^BenchmarkDataFusion\//BenchmarkPair\//' -e '/^pkg:/d' \
        "$OUT/datafusion.txt" > "$OUT/benchstat-datafusion.txt"
    sed -e 's/^BenchmarkPairVsDataFusion\//BenchmarkPair\//' -e '/^pkg:/d' \
        "$OUT/go.txt" > "$OUT/benchstat-go.txt"
    echo "== benchstat (DataFusion as baseline) =="
    if [[ "$go_ok" == 1 ]]; then
        "$BENCHSTAT" datafusion="$OUT/benchstat-datafusion.txt" go="$OUT/benchstat-go.txt" \
            || echo "!! benchstat failed" >&2
    else
        "$BENCHSTAT" "$OUT/datafusion.txt" || echo "!! benchstat failed" >&2
    fi
fi

DF_VERSION="$(awk '/^name = "datafusion-execution"$/ {getline; gsub(/[^0-9.]/, ""); print; exit}' "$CRATE/Cargo.lock")"
echo "== table (medians over the raw lines) -> $OUT/datafusion-table.md =="
python3 - "$OUT/go.txt" "$OUT/datafusion.txt" "$OUT/datafusion-table.md" \
    "$DF_VERSION" "$(go version)" "$COUNT" "$ROUNDS" "$ITERS" "$BENCHTIME" "$LOAD_START" "$LOAD_END" <<'PY'
import re
import statistics
import sys

go_path, df_path, md_path, df_version, go_version, count, rounds, iters, benchtime, load_start, load_end = sys.argv[1:]
LINE = re.compile(r"^Benchmark([^/\s]+)/(\S+?)(?:-\d+)?\s+(\d+)\s+([0-9.eE+-]+) ns/op")


def load(path, top):
    out = {}
    cpu = None
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("cpu: "):
                    cpu = line[5:].strip()
                m = LINE.match(line)
                if m and m.group(1) == top:
                    out.setdefault(m.group(2), []).append(float(m.group(4)))
    except FileNotFoundError:
        pass
    return out, cpu


go, go_cpu = load(go_path, "PairVsDataFusion")
df, df_cpu = load(df_path, "DataFusion")

order = [f"pool={p}/threads={t}/consumers={c}" for c in (1, 1000)
         for p in ("greedy", "fair", "track_consumers") for t in (1, 2)]
keys = order + sorted(k for k in set(go) | set(df) if k not in order)


def cell(v):
    return f"{v:.2f}" if v is not None else "—"


rows = []
for k in keys:
    g, d = go.get(k), df.get(k)
    if not g and not d:
        continue
    gm = statistics.median(g) if g else None
    dm = statistics.median(d) if d else None
    ratio = f"{gm / dm:.2f}" if gm is not None and dm else "—"
    rows.append([k, cell(gm), cell(dm), ratio,
                 cell(min(g)) if g else "—", cell(min(d)) if d else "—",
                 f"{len(g) if g else 0}/{len(d) if d else 0}"])

header = ["benchmark", "Go ns/op (median)", "DataFusion ns/op (median)", "Go/DF",
          "Go min", "DF min", "samples Go/DF"]
widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]


def fmt(r):
    return "| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths))) + " |"


table = [fmt(header),
         "|" + "|".join(("-" * (w + 1)) + (":" if i else "-") for i, w in enumerate(widths)) + "|"]
table += [fmt(r) for r in rows]

notes = [
    "# try_grow(8) + shrink(8): nativepool (Go) vs DataFusion (Rust)",
    "",
    "Generated by `bash bench/compare_datafusion.sh`; ns per try_grow+shrink pair, lower is better.",
    "Go/DF < 1 means the Go pool is faster. The sides ran interleaved: DataFusion, Go, DataFusion, Go, ...",
    "",
    f"- datafusion-execution {df_version} (bench/datafusion, release build), {rounds} rounds x {iters} pairs per row",
    f"- {go_version}, `pool.test -test.bench BenchmarkPairVsDataFusion -test.benchtime {benchtime}`, {rounds} rounds",
    f"- cpu: {go_cpu or df_cpu or 'unknown'}",
    f"- load average (1, 5, 15 min) at the start: {load_start}; at the end: {load_end}",
    "- threads=2: both threads share one pool, each with its own consumer and reservation;"
    " ns/op = wall time / total pairs (as in Go's b.RunParallel)",
]
if not go:
    notes.append("- **Go side missing**: no BenchmarkPairVsDataFusion results in bench/out/go.txt")
md = "\n".join(notes) + "\n\n" + "\n".join(table) + "\n"
with open(md_path, "w") as f:
    f.write(md)
print("\n".join(table))
PY

if [[ "$go_ok" != 1 ]]; then
    echo "!! Go side missing or failed: only the DataFusion numbers are in $OUT/datafusion-table.md" >&2
    exit 1
fi
echo "done: $OUT/datafusion-table.md"
