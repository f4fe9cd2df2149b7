//! `cargo xtask market --source market:SEED[:BARS] --out FILE`: the feed generator's day as a
//! raw ITCH 5.0 file, sending nothing. Builds and runs `market-gen` (the `market-tools` crate).
use std::{path::PathBuf, process::Command};

use paths::Source;

use crate::util::{cargo, exec, target_dir, workspace_root};

/// Options of `cargo xtask market` (passed to `market-gen`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Options {
    /// market[:SEED[:BARS]][:per-print=N][:symbols=N][:synth=E|P]: the lab symbol SYNTH prints
    /// the gbm:SEED:BARS series; about BARS × (per-print + 2) messages in all (per-print 64 by
    /// default, 8,000 other symbols).
    #[arg(long, default_value = "market:42:150000")]
    pub(crate) source: Source,
    /// The raw ITCH 5.0 file to write.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Also write what was generated (counts by type, ages of the orders its cancels and
    /// executions named) as JSON.
    #[arg(long)]
    pub(crate) json_out: Option<PathBuf>,
}

/// Builds `market-gen` and runs it.
pub(crate) fn run(opts: Options) -> anyhow::Result<()> {
    let Options {
        source,
        out,
        json_out,
    } = opts;
    if !matches!(source, Source::Market(_)) {
        anyhow::bail!("--source {source}: only a market:... source is generated");
    }
    build()?;
    let mut cmd = Command::new(target_dir().join("release/market-gen"));
    cmd.arg("--source")
        .arg(source.to_string())
        .arg("--out")
        .arg(out);
    if let Some(j) = json_out {
        cmd.arg("--json-out").arg(j);
    }
    exec(&mut cmd)
}

/// Builds the market side's tools in release.
pub(crate) fn build() -> anyhow::Result<()> {
    exec(cargo().current_dir(workspace_root()).args([
        "build",
        "--release",
        "--quiet",
        "-p",
        "market-tools",
        "--bins",
    ]))
}
