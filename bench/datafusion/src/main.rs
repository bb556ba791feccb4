//! df-pool-bench: time a `try_grow(8)` + `shrink(8)` pair on one
//! `MemoryReservation` for DataFusion's memory pools, and an operator's
//! pattern on one reservation: one `try_grow` per batch of varying size,
//! everything freed at the end of every `OPERATOR_BATCHES` batches. Both
//! run on two DataFusion releases side by side (`DataFusion55`, the newest
//! crates.io serves, and `DataFusion54`).
//!
//! Output (stdout) is in Go benchmark format, one line per round, so that the
//! same tools (benchstat, bench/compare_datafusion.sh) can read it next to
//! `go test -bench` output. A min/median summary goes to stderr.
//!
//! Harness: per benchmark, one discarded warm-up round, then `--rounds` timed
//! rounds of `--iters` ops (pairs, or an operator's batches) each. With
//! `threads=T` the `--iters` ops of a round are split between T threads that
//! share one pool, each thread with its own consumer and reservation; ns/op =
//! (last thread's end - first thread's start) / total ops, like Go's
//! `b.RunParallel`.

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// "Huge" pool size: never the limit in this benchmark.
const POOL_SIZE: usize = 1 << 62;
/// Bytes per try_grow / shrink.
const GROW: usize = 8;
/// `top` for TrackConsumersPool.
const TRACK_TOP: usize = 5;

const DEFAULT_ROUNDS: u32 = 10;
const DEFAULT_ITERS: u64 = 10_000_000;
const THREADS: [usize; 2] = [1, 2];
/// Registered consumers: the measured ones alone, or among others holding
/// 8 bytes each (999 of them for 1,000).
const CONSUMERS: [usize; 2] = [1, 1000];

#[derive(Clone, Copy, Debug)]
enum PoolKind {
    Greedy,
    Fair,
    TrackConsumers,
}

const POOLS: [PoolKind; 3] = [PoolKind::Greedy, PoolKind::Fair, PoolKind::TrackConsumers];

impl PoolKind {
    fn name(self) -> &'static str {
        match self {
            PoolKind::Greedy => "greedy",
            PoolKind::Fair => "fair",
            PoolKind::TrackConsumers => "track_consumers",
        }
    }

    /// FairSpillPool is measured on its spillable path (every consumer is
    /// spillable); for the other pools can_spill makes no difference and the
    /// consumers keep the default (false).
    fn can_spill(self) -> bool {
        matches!(self, PoolKind::Fair)
    }
}

/// What a round measures.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Pattern {
    /// try_grow(8) + shrink(8) on one reservation; one op = one pair.
    Pair,
    /// An operator: try_grow(size of the batch) per batch, sizes from
    /// `batch_size`, and free() after every `OPERATOR_BATCHES` batches; one
    /// op = one batch (the free is part of the batches' cost).
    Operator,
}

/// Batches an operator grows by before it frees everything.
const OPERATOR_BATCHES: u64 = 64;

/// The size of the operator's batch number `i`: 1 KiB to 64 KiB, from a
/// 64-bit LCG (Knuth's MMIX constants) seeded by the batch number, so both
/// sides (this crate and the Go benchmark) grow by the same sequence.
#[inline(always)]
fn batch_size(i: u64) -> usize {
    let x = i
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    1024 + ((x >> 33) % 64512) as usize
}

/// One DataFusion release's harness: the same code, compiled against the
/// crate renamed `$krate` in Cargo.toml.
macro_rules! df_harness {
    ($module:ident, $krate:ident) => {
        mod $module {
            use super::*;
            use $krate::memory_pool::{
                FairSpillPool, GreedyMemoryPool, MemoryConsumer, MemoryPool, MemoryReservation,
                TrackConsumersPool,
            };

            fn make(kind: PoolKind) -> Arc<dyn MemoryPool> {
                match kind {
                    PoolKind::Greedy => Arc::new(GreedyMemoryPool::new(POOL_SIZE)),
                    PoolKind::Fair => Arc::new(FairSpillPool::new(POOL_SIZE)),
                    PoolKind::TrackConsumers => Arc::new(TrackConsumersPool::new(
                        GreedyMemoryPool::new(POOL_SIZE),
                        NonZeroUsize::new(TRACK_TOP).unwrap(),
                    )),
                }
            }

            fn register(
                kind: PoolKind,
                pool: &Arc<dyn MemoryPool>,
                thread: usize,
            ) -> MemoryReservation {
                MemoryConsumer::new(format!("bench-{}-{thread}", kind.name()))
                    .with_can_spill(kind.can_spill())
                    .register(pool)
            }

            /// The measured operation: `n` ops of `pattern`.
            #[inline(never)]
            fn op_loop(r: &MemoryReservation, pattern: Pattern, n: u64) {
                match pattern {
                    Pattern::Pair => {
                        for _ in 0..n {
                            if r.try_grow(black_box(GROW)).is_err() {
                                panic!("try_grow({GROW}) failed on a pool of {POOL_SIZE} bytes");
                            }
                            r.shrink(black_box(GROW));
                        }
                    }
                    Pattern::Operator => {
                        for i in 0..n {
                            let size = batch_size(i);
                            if r.try_grow(black_box(size)).is_err() {
                                panic!("try_grow({size}) failed on a pool of {POOL_SIZE} bytes");
                            }
                            if (i + 1) % OPERATOR_BATCHES == 0 {
                                black_box(r.free());
                            }
                        }
                        r.free();
                    }
                }
            }

            /// `n` more consumers on `pool`, each holding 8 bytes, registered
            /// outside the timed part so that the measured ops run among them.
            fn others(
                kind: PoolKind,
                pool: &Arc<dyn MemoryPool>,
                n: usize,
            ) -> Vec<MemoryReservation> {
                (0..n)
                    .map(|i| {
                        let r = MemoryConsumer::new(format!("other-{i}"))
                            .with_can_spill(kind.can_spill())
                            .register(pool);
                        r.try_grow(GROW).expect("an idle consumer's 8 bytes");
                        r
                    })
                    .collect()
            }

            /// One round: `iters` ops in total, split over `threads` threads
            /// sharing a fresh pool on which `consumers - 1` idle consumers are
            /// registered too. Returns the wall time of the timed part.
            pub fn run_round(
                kind: PoolKind,
                pattern: Pattern,
                threads: usize,
                consumers: usize,
                iters: u64,
            ) -> Duration {
                let pool = make(kind);
                let idle = others(kind, &pool, consumers - 1);
                if threads == 1 {
                    let r = register(kind, &pool, 0);
                    let start = Instant::now();
                    op_loop(&r, pattern, iters);
                    let elapsed = start.elapsed();
                    assert_eq!(r.size(), 0);
                    drop(r);
                    drop(idle);
                    assert_eq!(pool.reserved(), 0);
                    return elapsed;
                }

                let barrier = Barrier::new(threads);
                let t = threads as u64;
                let spans: Vec<(Instant, Instant, MemoryReservation)> =
                    std::thread::scope(|s| {
                        let handles: Vec<_> = (0..threads)
                            .map(|i| {
                                let share = iters / t + u64::from((i as u64) < iters % t);
                                let pool = &pool;
                                let barrier = &barrier;
                                s.spawn(move || {
                                    // Registration is outside the timed part.
                                    let r = register(kind, pool, i);
                                    barrier.wait();
                                    let start = Instant::now();
                                    op_loop(&r, pattern, share);
                                    let end = Instant::now();
                                    // Hand the reservation back so its Drop is not timed.
                                    (start, end, r)
                                })
                            })
                            .collect();
                        handles.into_iter().map(|h| h.join().unwrap()).collect()
                    });
                let first_start = spans.iter().map(|s| s.0).min().unwrap();
                let last_end = spans.iter().map(|s| s.1).max().unwrap();
                for (_, _, r) in &spans {
                    assert_eq!(r.size(), 0);
                }
                drop(spans);
                drop(idle);
                assert_eq!(pool.reserved(), 0);
                last_end - first_start
            }
        }
    };
}

df_harness!(df55_harness, df55);
df_harness!(df54_harness, df54);

/// The releases measured: benchmark name prefix, and the harness's round.
type RoundFn = fn(PoolKind, Pattern, usize, usize, u64) -> Duration;
const RELEASES: [(&str, RoundFn); 2] = [
    ("DataFusion55", df55_harness::run_round),
    ("DataFusion54", df54_harness::run_round),
];

struct Args {
    rounds: u32,
    iters: u64,
    filter: Option<String>,
}

const USAGE: &str = "usage: df-pool-bench [--rounds N] [--iters M] [--filter SUBSTR]
  --rounds N       timed rounds per benchmark (default 10); one output line each
  --iters M        ops per round (pairs, or an operator's batches), split over the threads
                   (default 10000000)
  --filter SUBSTR  only run benchmarks whose name contains SUBSTR";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        rounds: DEFAULT_ROUNDS,
        iters: DEFAULT_ITERS,
        filter: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            return Err(String::new());
        }
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--rounds" => {
                let v = value()?;
                args.rounds = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--rounds: not a positive integer: {v:?}"))?;
            }
            "--iters" => {
                let v = value()?;
                args.iters = v
                    .replace('_', "")
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| format!("--iters: not a positive integer: {v:?}"))?;
            }
            "--filter" => args.filter = Some(value()?),
            _ => return Err(format!("unknown argument: {arg}")),
        }
    }
    Ok(args)
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(msg) => {
            if msg.is_empty() {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            eprintln!("df-pool-bench: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };

    // Like Go, suffix benchmark names with the number of usable CPUs.
    let procs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let suffix = if procs > 1 {
        format!("-{procs}")
    } else {
        String::new()
    };

    println!("goos: {}", std::env::consts::OS);
    println!(
        "goarch: {}",
        if std::env::consts::ARCH == "x86_64" {
            "amd64"
        } else {
            std::env::consts::ARCH
        }
    );
    if let Some(cpu) = cpu_model() {
        println!("cpu: {cpu}");
    }

    // The cases: every pair row, then the operator rows (one consumer).
    let mut cases: Vec<(Pattern, PoolKind, usize, usize)> = Vec::new();
    for consumers in CONSUMERS {
        for kind in POOLS {
            for threads in THREADS {
                cases.push((Pattern::Pair, kind, threads, consumers));
            }
        }
    }
    for kind in POOLS {
        for threads in THREADS {
            cases.push((Pattern::Operator, kind, threads, 1));
        }
    }

    let mut ran = 0;
    for (release, run_round) in RELEASES {
        for &(pattern, kind, threads, consumers) in &cases {
            let prefix = if pattern == Pattern::Operator {
                "operator/"
            } else {
                ""
            };
            let sub = format!(
                "{prefix}pool={}/threads={threads}/consumers={consumers}",
                kind.name()
            );
            let name = format!("Benchmark{release}/{sub}{suffix}");
            if let Some(f) = &args.filter {
                if !name.contains(f.as_str()) {
                    continue;
                }
            }
            ran += 1;
            // Warm-up round, discarded.
            black_box(run_round(kind, pattern, threads, consumers, args.iters));
            let mut samples = Vec::with_capacity(args.rounds as usize);
            for _ in 0..args.rounds {
                let d = run_round(kind, pattern, threads, consumers, args.iters);
                let ns = d.as_nanos() as f64 / args.iters as f64;
                samples.push(ns);
                println!("{name}\t{:>10}\t{:>12.2} ns/op", args.iters, ns);
            }
            samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
            eprintln!(
                "# {release}/{sub}: min {:.2} ns/op, median {:.2} ns/op ({} rounds x {} ops)",
                samples[0],
                median(&samples),
                args.rounds,
                args.iters
            );
        }
    }
    if ran == 0 {
        eprintln!("df-pool-bench: no benchmark matches the filter");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
