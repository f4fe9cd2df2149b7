//! `cargo xtask test`: the project's one test command (the README's, and CI's).
use anyhow::bail;

use crate::util::{cargo, exec, require_root, workspace_root};

/// What to run.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// Don't install missing dependencies first.
    #[arg(long)]
    pub(crate) no_setup: bool,
    /// Extra arguments for the test binaries (e.g. a test name filter).
    #[arg(last = true)]
    pub(crate) args: Vec<String>,
}

pub(crate) fn run(Options { no_setup, args }: Options) -> anyhow::Result<()> {
    require_root("the test suite (network namespaces, XDP, AF_XDP)")?;
    if !no_setup {
        crate::setup::ensure()?;
    }
    let before = netns::project_namespaces();
    // One test at a time: the privileged tests measure "no loss" on a 2-core machine, and two
    // labs pushing packets at once starve each other.
    // The lab's programs first, so the lab tests find them (they would build them too, one
    // test binary's output interleaved with another's).
    exec(
        cargo()
            .current_dir(workspace_root())
            .env("XDP_EBPF_REQUIRED", "1")
            .args(["build", "--quiet", "--bins"])
            .args([
                "-p", "trader", "-p", "exchange", "-p", "inject", "-p", "floor",
            ]),
    )?;
    let result = exec(
        cargo()
            .current_dir(workspace_root())
            .env("XDP_EBPF_REQUIRED", "1")
            // Here every privileged test must run: one that finds no privilege fails rather
            // than skips, so the suite can't pass by skipping.
            .env(netns::REQUIRE_PRIVILEGED_TESTS_ENV, "require")
            .args(["test", "--workspace", "--exclude", "xdp-ebpf", "--"])
            .arg("--test-threads=1")
            .args(&args),
    );
    let left: Vec<String> = netns::project_namespaces()
        .into_iter()
        .filter(|n| !before.contains(n))
        .collect();
    if !left.is_empty() {
        bail!(
            "the tests left network namespaces behind: {} (a cleanup bug)",
            left.join(" ")
        );
    }
    result
}
