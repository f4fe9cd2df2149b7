//! `boundary-bench` (run by `cargo xtask bench-boundary`): the boundary study on this machine,
//! with a native client. The study is the library's [`boundary::bench`]; this parses the
//! command line and runs it. Writes `results.json`, `report.md` and `echo.svg` to `--out`.
#![forbid(unsafe_code)]

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    paths::cli::run_main(|| boundary::bench::run(boundary::bench::Options::parse()))
}
