//! df-pool-bench: time a `try_grow(8)` + `shrink(8)` pair on one
//! `MemoryReservation` for DataFusion's memory pools.
//!
//! Output (stdout) is in Go benchmark format, one line per round, so that the
//! same tools (benchstat, bench/compare_datafusion.sh) can read it next to
//! `go test -bench` output. A min/median summary goes to stderr.
//!
//! Harness: per benchmark, one discarded warm-up round, then `--rounds` timed
//! rounds of `--iters` pairs each. With `threads=T` the `--iters` pairs of a
//! round are split between T threads that share one pool, each thread with its
//! own consumer and reservation; ns/op = (last thread's end - first thread's
//! start) / total pairs, like Go's `b.RunParallel`.

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use datafusion_execution::memory_pool::{
    FairSpillPool, GreedyMemoryPool, MemoryConsumer, MemoryPool, MemoryReservation,
    TrackConsumersPool,
};

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

    fn make(self) -> Arc<dyn MemoryPool> {
        match self {
            PoolKind::Greedy => Arc::new(GreedyMemoryPool::new(POOL_SIZE)),
            PoolKind::Fair => Arc::new(FairSpillPool::new(POOL_SIZE)),
            PoolKind::TrackConsumers => Arc::new(TrackConsumersPool::new(
                GreedyMemoryPool::new(POOL_SIZE),
                NonZeroUsize::new(TRACK_TOP).unwrap(),
            )),
        }
    }

    /// FairSpillPool is measured on its spillable path (every consumer is
    /// spillable); for the other pools can_spill makes no difference and the
    /// consumers keep the default (false).
    fn can_spill(self) -> bool {
        matches!(self, PoolKind::Fair)
    }

    fn register(self, pool: &Arc<dyn MemoryPool>, thread: usize) -> MemoryReservation {
        MemoryConsumer::new(format!("bench-{}-{thread}", self.name()))
            .with_can_spill(self.can_spill())
            .register(pool)
    }
}

/// The measured operation: `n` pairs of try_grow(8) + shrink(8).
#[inline(never)]
fn pair_loop(r: &MemoryReservation, n: u64) {
    for _ in 0..n {
        if r.try_grow(black_box(GROW)).is_err() {
            panic!("try_grow({GROW}) failed on a pool of {POOL_SIZE} bytes");
        }
        r.shrink(black_box(GROW));
    }
}

/// `n` more consumers on `pool`, each holding 8 bytes, registered outside the
/// timed part so that the measured pairs run among them.
fn others(kind: PoolKind, pool: &Arc<dyn MemoryPool>, n: usize) -> Vec<MemoryReservation> {
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

/// One round: `iters` pairs in total, split over `threads` threads sharing a
/// fresh pool on which `consumers - 1` idle consumers are registered too. Returns
/// the wall time of the timed part.
fn run_round(kind: PoolKind, threads: usize, consumers: usize, iters: u64) -> Duration {
    let pool = kind.make();
    let idle = others(kind, &pool, consumers - 1);
    if threads == 1 {
        let r = kind.register(&pool, 0);
        let start = Instant::now();
        pair_loop(&r, iters);
        let elapsed = start.elapsed();
        assert_eq!(r.size(), 0);
        drop(r);
        drop(idle);
        assert_eq!(pool.reserved(), 0);
        return elapsed;
    }

    let barrier = Barrier::new(threads);
    let t = threads as u64;
    let spans: Vec<(Instant, Instant, MemoryReservation)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let share = iters / t + u64::from((i as u64) < iters % t);
                let pool = &pool;
                let barrier = &barrier;
                s.spawn(move || {
                    // Registration is outside the timed part.
                    let r = kind.register(pool, i);
                    barrier.wait();
                    let start = Instant::now();
                    pair_loop(&r, share);
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

struct Args {
    rounds: u32,
    iters: u64,
    filter: Option<String>,
}

const USAGE: &str = "usage: df-pool-bench [--rounds N] [--iters M] [--filter SUBSTR]
  --rounds N       timed rounds per benchmark (default 10); one output line each
  --iters M        try_grow+shrink pairs per round, split over the threads (default 10000000)
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

    let mut ran = 0;
    for consumers in CONSUMERS {
        for kind in POOLS {
            for threads in THREADS {
                let sub = format!(
                    "pool={}/threads={threads}/consumers={consumers}",
                    kind.name()
                );
                let name = format!("BenchmarkDataFusion/{sub}{suffix}");
                if let Some(f) = &args.filter {
                    if !name.contains(f.as_str()) {
                        continue;
                    }
                }
                ran += 1;
                // Warm-up round, discarded.
                black_box(run_round(kind, threads, consumers, args.iters));
                let mut samples = Vec::with_capacity(args.rounds as usize);
                for _ in 0..args.rounds {
                    let d = run_round(kind, threads, consumers, args.iters);
                    let ns = d.as_nanos() as f64 / args.iters as f64;
                    samples.push(ns);
                    println!("{name}\t{:>10}\t{:>12.2} ns/op", args.iters, ns);
                }
                samples.sort_by(|a, b| a.partial_cmp(b).unwrap());
                eprintln!(
                    "# {sub}: min {:.2} ns/op, median {:.2} ns/op ({} rounds x {} pairs)",
                    samples[0],
                    median(&samples),
                    args.rounds,
                    args.iters
                );
            }
        }
    }
    if ran == 0 {
        eprintln!("df-pool-bench: no benchmark matches the filter");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
