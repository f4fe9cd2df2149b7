//! `boundary-bench` (run by `cargo xtask bench-boundary`): the boundary study on this machine,
//! with a native client. The study is the library's [`boundary::bench`]; this parses the
//! command line and runs it. Writes `results.json`, `report.md` and `echo.svg` to `--out`.
#![forbid(unsafe_code)]

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(test)]
use proptest as _;
use {
    affinity as _, anyhow as _, engine as _, hdrhistogram as _, results as _, serde as _,
    serde_json as _, signal_hook as _, thiserror as _, tokio as _,
};

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| boundary::bench::run(boundary::bench::Options::parse()))
}
