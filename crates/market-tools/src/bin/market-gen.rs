//! `market-gen --source market:SEED[:BARS] --out FILE`: the feed generator's day as a raw ITCH
//! 5.0 file, sending nothing. See `--help`.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::path::PathBuf;
use {book as _, flate2 as _, hdrhistogram as _, hotpath as _, serde as _, wire as _};
#[cfg(test)]
use {engine as _, tempfile as _};

use anyhow::{Context as _, bail};
use clap::Parser;
use paths::Source;

/// Writes the full-depth feed generator's day (`market:SEED[:BARS]`: thousands of symbols'
/// adds, cancels, replaces, deletes and executions, the lab symbol SYNTH printing the
/// gbm:SEED:BARS series) as a raw ITCH 5.0 file, length-prefixed as NASDAQ's day files are.
#[derive(Debug, Parser)]
#[command(name = "market-gen", version)]
struct Args {
    /// market[:SEED[:BARS]][:per-print=N][:symbols=N][:synth=E|P].
    #[arg(long, default_value = "market:42:150000")]
    source: Source,
    /// The file to write.
    #[arg(long)]
    out: PathBuf,
    /// Write what was generated (counts by type, order ages) as JSON here.
    #[arg(long)]
    json_out: Option<PathBuf>,
    /// No progress lines on stderr.
    #[arg(long, short)]
    quiet: bool,
}

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| {
        let Args {
            source,
            out,
            json_out,
            quiet,
        } = Args::parse();
        let Source::Market(spec) = source else {
            bail!("--source {source}: market-gen writes only market:... sources");
        };
        paths::cli::check_writable("--out", &out)?;
        if let Some(j) = &json_out {
            paths::cli::check_writable("--json-out", j)?;
        }
        let g = market_tools::generate(market::Config::from_spec(&spec), &out, !quiet)?;
        println!(
            "{}: {} messages, {:.1} MiB in {:.2} s ({:.2} M msg/s); SYNTH is locate {}",
            out.display(),
            g.messages,
            g.bytes as f64 / f64::from(1 << 20),
            g.seconds,
            g.messages as f64 / g.seconds / 1e6,
            g.synth_locate
        );
        if let Some(j) = json_out {
            std::fs::write(&j, serde_json::to_string_pretty(&g)?)
                .with_context(|| format!("failed to write {}", j.display()))?;
        }
        Ok(())
    })
}
