#!/usr/bin/env bash
# Side-by-side cost of a try_grow(8)+shrink(8) pair, and of an operator's
# per-batch grows, on DataFusion's memory pools (Rust, bench/datafusion: the
# newest release crates.io serves, 55.2, and 54.1) versus nativepool's Go
# pools, through a Reservation (safe for concurrent use) and through an
# operator's Account (one goroutine, local slack), on this machine, in one
# run, with the sides interleaved round by round (DataFusion, Go,
# DataFusion, Go, ...), each round short, so that load landing on the
# machine falls on both sides alike.
#
#   bash bench/compare_datafusion.sh        # from the repo root (or anywhere)
#
# Rows: the pair on greedy, fair (spillable consumers), TrackConsumers(greedy,
# 5); one and two threads; the measured consumers alone and among 1,000
# registered consumers. Then the operator pattern (operator/...): one
# try_grow per batch of 1-64 KiB, everything freed every 64 batches, ns per
# batch; DataFusion with its MemoryReservation, ours with a Reservation and
# with an Account. Writes bench/out/datafusion.txt, bench/out/go.txt (raw
# Go-benchmark-format lines, every round) and bench/out/datafusion-table.md
# (medians of each side, the ratios to DataFusion 55.2 and 54.1, the CPU
# model, and the load average at the start and the end).
# Knobs (environment): ROUNDS (interleaved rounds, default 10), ITERS (ops
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
    echo "== round $round/$ROUNDS: DataFusion ($ITERS ops per row), then Go ($BENCHTIME per row) =="
    "$CRATE/target/release/df-pool-bench" --rounds 1 --iters "$ITERS" >> "$OUT/datafusion.txt"
    if ! "$OUT/pool.test" -test.run '^$' -test.bench 'BenchmarkPairVsDataFusion|BenchmarkAccountVsDataFusion' \
        -test.benchtime "$BENCHTIME" -test.count 1 >> "$OUT/go.txt"; then
        echo "!! go benchmark failed in round $round" >&2
        go_ok=0
    fi
done
LOAD_END="$(cut -d' ' -f1-3 /proc/loadavg)"
for b in BenchmarkPairVsDataFusion BenchmarkAccountVsDataFusion; do
    if ! grep -q "^$b/" "$OUT/go.txt"; then
        echo "!! no $b results in $OUT/go.txt: the Go side is missing" >&2
        go_ok=0
    fi
done

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
    # the labelled files.
    grep -v '^pkg:' "$OUT/datafusion.txt" | grep -v '^BenchmarkDataFusion54/' \
        | sed -e 's/^BenchmarkDataFusion55\//BenchmarkPair\//' > "$OUT/benchstat-df55.txt"
    grep -v '^pkg:' "$OUT/datafusion.txt" | grep -v '^BenchmarkDataFusion55/' \
        | sed -e 's/^BenchmarkDataFusion54\//BenchmarkPair\//' > "$OUT/benchstat-df54.txt"
    grep -v '^pkg:' "$OUT/go.txt" | grep -v '^BenchmarkAccountVsDataFusion/' \
        | sed -e 's/^BenchmarkPairVsDataFusion\//BenchmarkPair\//' > "$OUT/benchstat-reservation.txt"
    grep -v '^pkg:' "$OUT/go.txt" | grep -v '^BenchmarkPairVsDataFusion/' \
        | sed -e 's/^BenchmarkAccountVsDataFusion\//BenchmarkPair\//' > "$OUT/benchstat-account.txt"
    echo "== benchstat (DataFusion 55 as baseline) =="
    if [[ "$go_ok" == 1 ]]; then
        "$BENCHSTAT" df55="$OUT/benchstat-df55.txt" df54="$OUT/benchstat-df54.txt" \
            reservation="$OUT/benchstat-reservation.txt" account="$OUT/benchstat-account.txt" \
            || echo "!! benchstat failed" >&2
    else
        "$BENCHSTAT" "$OUT/datafusion.txt" || echo "!! benchstat failed" >&2
    fi
fi

DF_VERSIONS="$(awk '/^name = "datafusion-execution"$/ {getline; gsub(/[^0-9.]/, ""); print}' "$CRATE/Cargo.lock" | sort -rV | paste -sd' ')"
echo "== table (medians over the raw lines) -> $OUT/datafusion-table.md =="
python3 - "$OUT/go.txt" "$OUT/datafusion.txt" "$OUT/datafusion-table.md" \
    "$DF_VERSIONS" "$(go version)" "$COUNT" "$ROUNDS" "$ITERS" "$BENCHTIME" "$LOAD_START" "$LOAD_END" <<'PY'
import re
import statistics
import sys

go_path, df_path, md_path, df_versions, go_version, count, rounds, iters, benchtime, load_start, load_end = sys.argv[1:]
LINE = re.compile(r"^Benchmark([^/\s]+)/(\S+?)(?:-\d+)?\s+(\d+)\s+([0-9.eE+-]+) ns/op")


def load(path):
    out = {}
    cpu = None
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("cpu: "):
                    cpu = line[5:].strip()
                m = LINE.match(line)
                if m:
                    out.setdefault(m.group(1), {}).setdefault(m.group(2), []).append(float(m.group(4)))
    except FileNotFoundError:
        pass
    return out, cpu


go, go_cpu = load(go_path)
df, df_cpu = load(df_path)
res, acct = go.get("PairVsDataFusion", {}), go.get("AccountVsDataFusion", {})
df55, df54 = df.get("DataFusion55", {}), df.get("DataFusion54", {})

order = [f"pool={p}/threads={t}/consumers={c}" for c in (1, 1000)
         for p in ("greedy", "fair", "track_consumers") for t in (1, 2)]
order += [f"operator/pool={p}/threads={t}/consumers=1"
          for p in ("greedy", "fair", "track_consumers") for t in (1, 2)]
seen = set(res) | set(acct) | set(df55) | set(df54)
keys = order + sorted(k for k in seen if k not in order)


def med(d, k):
    return statistics.median(d[k]) if d.get(k) else None


def cell(v):
    return f"{v:.2f}" if v is not None else "—"


def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "—"


rows = []
for k in keys:
    r, a, d5, d4 = med(res, k), med(acct, k), med(df55, k), med(df54, k)
    if r is None and a is None and d5 is None and d4 is None:
        continue
    rows.append([k, cell(r), cell(a), cell(d5), cell(d4), ratio(r, d5), ratio(a, d5), ratio(a, d4),
                 f"{len(res.get(k, []))}/{len(acct.get(k, []))}/{len(df55.get(k, []))}/{len(df54.get(k, []))}"])

header = ["benchmark", "Reservation ns/op", "Account ns/op", "DF 55 ns/op", "DF 54 ns/op",
          "Reservation/DF55", "Account/DF55", "Account/DF54", "samples R/A/55/54"]
widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]


def fmt(r):
    return "| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(r, widths))) + " |"


table = [fmt(header),
         "|" + "|".join(("-" * (w + 1)) + (":" if i else "-") for i, w in enumerate(widths)) + "|"]
table += [fmt(r) for r in rows]

notes = [
    "# nativepool (Go) vs DataFusion (Rust): the try_grow(8)+shrink(8) pair and an operator's grows",
    "",
    "Generated by `bash bench/compare_datafusion.sh`; medians in ns per op (a pair, or an operator's batch), lower is better.",
    "A ratio < 1 means ours is faster. The sides ran interleaved: DataFusion, Go, DataFusion, Go, ...",
    "",
    f"- datafusion-execution {df_versions} (bench/datafusion, release build), {rounds} rounds x {iters} ops per row",
    f"- {go_version}, `pool.test -test.bench 'BenchmarkPairVsDataFusion|BenchmarkAccountVsDataFusion' -test.benchtime {benchtime}`, {rounds} rounds",
    f"- cpu: {go_cpu or df_cpu or 'unknown'}",
    f"- load average (1, 5, 15 min) at the start: {load_start}; at the end: {load_end}",
    "- Reservation: pool.Reservation (safe for concurrent use); Account: pool.Account (one goroutine, default quantum 1 MiB)",
    "- operator/...: one try_grow per batch of 1-64 KiB (the same LCG sequence on both sides), everything freed every 64 batches",
    "- threads=2: both threads share one pool, each with its own consumer and reservation (or account);"
    " ns/op = wall time / total ops (as in Go's b.RunParallel)",
]
if not go:
    notes.append("- **Go side missing**: no results in bench/out/go.txt")
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
