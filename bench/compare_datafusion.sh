#!/usr/bin/env bash
# Side-by-side cost of a try_grow(8)+shrink(8) pair: DataFusion's memory pools
# (Rust, bench/datafusion) versus nativepool's Go pools, on this machine, in
# one run.
#
#   bash bench/compare_datafusion.sh        # from the repo root (or anywhere)
#
# Writes bench/out/datafusion.txt, bench/out/go.txt (raw Go-benchmark-format
# lines) and bench/out/datafusion-table.md (medians and the Go/DF ratio).
# Knobs (environment): ROUNDS (DataFusion rounds, default 10), ITERS (pairs per
# DataFusion round, default 10000000), COUNT (go test -count, default 10),
# BENCHTIME (go test -benchtime, default Go's 1s).
# Exits non-zero at the end if the Go benchmarks were missing or failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

OUT=bench/out
CRATE=bench/datafusion
ROUNDS="${ROUNDS:-10}"
ITERS="${ITERS:-10000000}"
COUNT="${COUNT:-10}"
BENCHTIME="${BENCHTIME:-}"
mkdir -p "$OUT"

# (a) DataFusion side --------------------------------------------------------
echo "== building $CRATE (release) =="
cargo build --release --locked --manifest-path "$CRATE/Cargo.toml"
echo "== running DataFusion pools: $ROUNDS rounds x $ITERS pairs =="
"$CRATE/target/release/df-pool-bench" --rounds "$ROUNDS" --iters "$ITERS" \
    | tee "$OUT/datafusion.txt"

# (b) Go side ----------------------------------------------------------------
echo "== running Go pools: go test -bench BenchmarkPairVsDataFusion -count $COUNT ./pool/ =="
go_ok=1
go_args=(test -run '^$' -bench 'BenchmarkPairVsDataFusion' -count "$COUNT")
if [[ -n "$BENCHTIME" ]]; then
    go_args+=(-benchtime "$BENCHTIME")
fi
if ! go "${go_args[@]}" ./pool/ | tee "$OUT/go.txt"; then
    echo "!! go test failed (see above)" >&2
    go_ok=0
fi
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
    "$DF_VERSION" "$(go version)" "$COUNT" "$ROUNDS" "$ITERS" <<'PY'
import re
import statistics
import sys

go_path, df_path, md_path, df_version, go_version, count, rounds, iters = sys.argv[1:]
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

order = [f"pool={p}/threads={t}" for p in ("greedy", "fair", "track_consumers") for t in (1, 2)]
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
    "Go/DF < 1 means the Go pool is faster.",
    "",
    f"- datafusion-execution {df_version} (bench/datafusion, release build), {rounds} rounds x {iters} pairs",
    f"- {go_version}, `go test -bench BenchmarkPairVsDataFusion -count {count} ./pool/`",
    f"- cpu: {go_cpu or df_cpu or 'unknown'}",
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
