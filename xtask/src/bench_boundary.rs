//! `cargo xtask bench-boundary`: the engine-boundary study on this machine (see
//! `studies/boundary/README.md`). Builds the `boundary` crate's binaries in release and runs
//! `boundary-bench`, which starts its own server, checks every mode against the in-process
//! sweep before timing it, and writes its results to `target/bench-boundary/<UTC time>/`.
use std::path::PathBuf;
use std::process::Command;

use crate::util::{cargo, exec, target_dir, workspace_root};

/// Options of the boundary benchmark (passed through to `boundary-bench`).
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Options {
    /// Timed calls of each sweep mode, after one checked warm-up call each.
    #[arg(long, default_value_t = 7)]
    pub(crate) reps: usize,
    /// Threads of one sweep, in process and in the server alike.
    #[arg(long, default_value_t = 1)]
    pub(crate) threads: usize,
    /// Echo calls per payload size at the small end.
    #[arg(long, default_value_t = 5_000)]
    pub(crate) echo_calls: usize,
    /// Results folder (default: target/bench-boundary/<UTC time>).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

/// Builds and runs the benchmark.
pub(crate) fn run(opts: Options) -> anyhow::Result<()> {
    let Options {
        reps,
        threads,
        echo_calls,
        out,
    } = opts;
    let root = workspace_root();
    exec(
        cargo()
            .current_dir(&root)
            .args(["build", "--release", "-p", "boundary", "--bins"]),
    )?;
    // serde_json's default (inexact) float parsing needs a build of its own: the workspace
    // turns on `float_roundtrip`, and cargo unifies features within a build.
    let target = target_dir();
    let json_target = target.join("json-default");
    exec(
        cargo()
            .current_dir(&root)
            .args(["build", "--release", "--locked"])
            .args([
                "--manifest-path",
                "studies/boundary/json-default/Cargo.toml",
                "--target-dir",
            ])
            .arg(&json_target),
    )?;
    // Results stay under the workspace's target/ even where the build goes elsewhere.
    let out = out.unwrap_or_else(|| {
        root.join("target/bench-boundary")
            .join(results::utc::now_for_file_names())
    });
    exec(
        Command::new(target.join("release/boundary-bench"))
            .arg("--out")
            .arg(&out)
            .args(["--reps", &reps.to_string()])
            .args(["--threads", &threads.to_string()])
            .args(["--echo-calls", &echo_calls.to_string()])
            .arg("--json-default")
            .arg(json_target.join("release/json-default")),
    )
}
