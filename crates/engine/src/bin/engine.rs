//! `engine`: run the backtest sweep from the command line.
//!
//! ```text
//! engine sweep --data gbm --grid default --kernel fast --threads 2 --out results.csv
//! engine fingerprint
//! ```

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(test)]
use {criterion as _, proptest as _};
use {pulp as _, thiserror as _};

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use engine::{ComboResult, Params, data, grid_default, reference, sweep};
use sha2::{Digest, Sha256};

#[derive(Debug, Parser)]
#[command(
    version,
    about = "HMA/HMA3 stop-and-reverse backtest engine (the workload: crates/engine/src/reference.rs)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Backtest every combo of a grid; print (n, pnl, trades) per combo and the time taken.
    Sweep(SweepOptions),
    /// Print the spec series' sha256 and combo 0's result, to compare with the published
    /// fingerprint (57,029 trades, PnL -5165.58).
    Fingerprint(DataOptions),
}

#[derive(Debug, clap::Args)]
struct DataOptions {
    /// `gbm` for the spec's NumPy-identical GBM series, or a file: `*.csv` (header line, one
    /// column read, see --csv-column), anything else raw little-endian f64.
    #[arg(long, default_value = "gbm")]
    data: String,
    /// Seed of the GBM series (NumPy's `default_rng(seed)`); only with `--data gbm`.
    #[arg(long, default_value_t = data::SPEC_SEED)]
    seed: u64,
    /// Length of the GBM series; only with `--data gbm`.
    #[arg(long, default_value_t = data::SPEC_BARS)]
    bars: usize,
    /// Column of a CSV file to read as the closes.
    #[arg(long, default_value = data::DEFAULT_CSV_COLUMN)]
    csv_column: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Kernel {
    /// The clear, one-combo-at-a-time reference kernel (single thread).
    Reference,
    /// The fast sweep: shared WMAs, vectorised, threaded; bit-identical to the reference.
    Fast,
}

#[derive(Debug, clap::Args)]
struct SweepOptions {
    #[command(flatten)]
    data: DataOptions,
    /// Combos: `default` (the spec's 80: round(linspace(6, 200, 80))), a list `6,8,11`,
    /// or a range `A:B:STEP` (from A up to and including B).
    #[arg(long, default_value = "default")]
    grid: String,
    /// Which kernel runs the sweep.
    #[arg(long, value_enum, default_value_t = Kernel::Fast)]
    kernel: Kernel,
    /// Threads for the fast kernel (the reference always uses one).
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Also write the table to this file: `.json` gives JSON, anything else CSV.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn load(opts: &DataOptions) -> Result<(String, Vec<f64>)> {
    let DataOptions {
        data: source,
        seed,
        bars,
        csv_column,
    } = opts;
    if source == "gbm" {
        if *bars == 0 {
            bail!("--bars 0: the series would be empty, nothing to backtest");
        }
        return Ok((
            format!("gbm(seed {seed}, {bars} bars)"),
            data::gbm(*seed, *bars),
        ));
    }
    let path = Path::new(source);
    let is_csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let close = if is_csv {
        data::load_csv(path, Some(csv_column))
    } else {
        data::load_raw_f64(path)
    }
    .with_context(|| {
        format!("failed to load --data {source} (use `gbm`, a .csv file or a raw f64 file)")
    })?;
    Ok((source.clone(), close))
}

fn parse_grid(spec: &str) -> Result<Vec<Params>> {
    if spec == "default" {
        return Ok(grid_default());
    }
    let ns: Vec<i64> = if let Some((a, rest)) = spec.split_once(':') {
        let (b, step) = rest.split_once(':').unwrap_or((rest, "1"));
        let num = |s: &str| {
            s.trim()
                .parse::<i64>()
                .with_context(|| format!("bad number {s:?} in --grid {spec}"))
        };
        let (a, b, step) = (num(a)?, num(b)?, num(step)?);
        if step < 1 {
            bail!("--grid {spec}: STEP must be at least 1");
        }
        (a..=b).step_by(usize::try_from(step)?).collect()
    } else {
        spec.split(',')
            .map(|s| {
                s.trim()
                    .parse::<i64>()
                    .with_context(|| format!("bad number {s:?} in --grid {spec}"))
            })
            .collect::<Result<_>>()?
    };
    if ns.is_empty() {
        bail!("--grid {spec} has no combos");
    }
    ns.into_iter()
        .map(|n| Params::from_n(n).with_context(|| format!("--grid {spec}: n = {n}")))
        .collect()
}

fn table_csv(grid: &[Params], results: &[ComboResult]) -> String {
    let mut s = String::from("n,half,sq,p,p3,p2,pnl,trades\n");
    for (p, r) in grid.iter().zip(results) {
        let [n, half, sq, pp, p3, p2] = p.to_wire();
        // `{:?}` prints the shortest string that reads back as the same f64.
        let _ = writeln!(s, "{n},{half},{sq},{pp},{p3},{p2},{:?},{}", r.pnl, r.trades);
    }
    s
}

fn run_sweep(opts: SweepOptions) -> Result<()> {
    let SweepOptions {
        data,
        grid,
        kernel,
        threads,
        out,
    } = opts;
    let (source, close) = load(&data)?;
    let grid = parse_grid(&grid)?;
    let start = Instant::now();
    let results = match kernel {
        Kernel::Reference => reference::sweep(&close, &grid),
        Kernel::Fast => sweep::sweep(&close, &grid, threads),
    }
    .context("sweep failed")?;
    let secs = start.elapsed().as_secs_f64();

    println!("{:>6} {:>14} {:>8}", "n", "pnl", "trades");
    for (p, r) in grid.iter().zip(&results) {
        println!("{:>6} {:>14.4} {:>8}", p.n(), r.pnl, r.trades);
    }
    let threads_used = if matches!(kernel, Kernel::Reference) {
        1
    } else {
        threads
    };
    println!(
        "# {} combos over {} bars of {source}, kernel {kernel:?}, {threads_used} thread(s): {secs:.3} s",
        grid.len(),
        close.len()
    );

    if let Some(path) = out {
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let body = if is_json {
            let combos: Vec<_> = grid
                .iter()
                .zip(&results)
                .map(|(p, r)| serde_json::json!({ "params": p.to_wire(), "n": p.n(), "pnl": r.pnl, "trades": r.trades }))
                .collect();
            let doc = serde_json::json!({
                "data": source, "bars": close.len(), "kernel": format!("{kernel:?}").to_lowercase(),
                "threads": threads_used, "seconds": secs, "combos": combos,
            });
            serde_json::to_string_pretty(&doc)? + "\n"
        } else {
            table_csv(&grid, &results)
        };
        std::fs::write(&path, body)
            .with_context(|| format!("failed to write --out {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn run_fingerprint(opts: DataOptions) -> Result<()> {
    let (source, close) = load(&opts)?;
    let digest: String = Sha256::digest(data::to_le_bytes(&close))
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!("data    {source}: {} bars, sha256 {digest}", close.len());
    if opts.data == "gbm" && opts.seed == data::SPEC_SEED && opts.bars == data::SPEC_BARS {
        let verdict = if digest == data::SPEC_SHA256 {
            "matches the spec"
        } else {
            "DIFFERS from the spec"
        };
        println!("        {verdict} ({})", data::SPEC_SHA256);
    }
    let p = Params::from_n(6)?;
    let start = Instant::now();
    let r = reference::backtest(&close, &p)?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "combo 0 {:?}: pnl {:.2} ({:?}), {} trades  [spec: -5165.58, 57029]  {:.1} ms",
        p.to_wire(),
        r.pnl,
        r.pnl,
        r.trades,
        secs * 1e3
    );
    Ok(())
}

/// An error is a message for the user: printed with its causes on one line, no backtrace.
fn main() -> std::process::ExitCode {
    let result = match Cli::parse().command {
        Command::Sweep(opts) => run_sweep(opts),
        Command::Fingerprint(opts) => run_fingerprint(opts),
    };
    if let Err(e) = result {
        eprintln!("Error: {e:#}");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
