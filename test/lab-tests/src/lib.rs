//! The privileged lab tests' harness: where the lab's programs are. The tests themselves
//! (`tests/`) build a lab of their own (`netns`), start the programs in it and read their
//! reports as the typed `results`; they skip with a line where the process may not build a
//! lab (not root).
//!
//! The programs belong to their crates (`trader`, `exchange`'s `replay`, `inject`, `floor`), so
//! cargo gives these tests no `CARGO_BIN_EXE_*` for them: [`bin`] builds them (once per test
//! process, a no-op when they are up to date) into the target folder these tests were built
//! into, so a test never runs a program older than its source; a user who can't write there
//! (CI's run as `nobody`) takes the programs built there.
#![forbid(unsafe_code)]
#![cfg_attr(
    test,
    allow(
        unused_crate_dependencies,
        reason = "the harness has no unit tests: its test build sees the tests' dev-dependencies"
    )
)]

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::OnceLock,
};

/// The lab's programs, each in its package.
pub const PROGRAMS: [(&str, &str); 4] = [
    ("trader", "trader"),
    ("replay", "exchange"),
    ("inject", "inject"),
    ("floor", "floor"),
];

/// The path of the lab's program `name` (one of [`PROGRAMS`]), built with the same profile as
/// the running test (`target/<profile>/`). The first call builds all four (`cargo build
/// --bins`, once per test process: up to date, it takes a second); a build that fails panics
/// with cargo's reason.
pub fn bin(name: &str) -> String {
    assert!(
        PROGRAMS.iter().any(|(p, _)| *p == name),
        "{name} is not one of the lab's programs {PROGRAMS:?}"
    );
    let dir = profile_dir();
    let path = dir.join(name);
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(e) = BUILT.get_or_init(|| build_or_take(&dir)) {
        panic!("{e}");
    }
    path.to_str()
        .expect("the target folder's path is UTF-8")
        .to_owned()
}

/// `target/<profile>/`: the test binary runs from its `deps/` folder.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's own path");
    let deps = exe.parent().expect("the test binary is in a folder");
    let dir = if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().expect("deps/ is in the profile's folder")
    } else {
        deps
    };
    dir.to_path_buf()
}

/// Builds the lab's programs into `dir`, or, where this user can't write there (CI runs the
/// same test binaries as `nobody` over root's target folder), takes the ones built there as
/// they are: an error only if one is missing.
fn build_or_take(dir: &Path) -> Result<(), String> {
    if writable(dir) {
        return build(dir);
    }
    match PROGRAMS.iter().find(|(p, _)| !dir.join(p).exists()) {
        Some((p, package)) => Err(format!(
            "{p} (package {package}) is not built in {} and this user can't build there: build \
             the lab's programs first (`cargo build --bins`) as the folder's owner",
            dir.display()
        )),
        None => Ok(()),
    }
}

/// Whether this process can create a file in `dir` (a probe file, removed at once).
fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".lab-tests-probe-{}", std::process::id()));
    let ok = std::fs::File::create(&probe).is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// Builds the lab's programs into `dir` (its parent the target folder, its name the profile).
fn build(dir: &Path) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target = dir.parent().ok_or("the profile folder has a parent")?;
    let mut c = Command::new(cargo);
    c.args(["build", "--quiet", "--bins"])
        .arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml"))
        .arg("--target-dir")
        .arg(target);
    for (_, package) in PROGRAMS {
        c.args(["-p", package]);
    }
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => {}
        Some("release") => {
            c.arg("--release");
        }
        Some(other) => {
            c.args(["--profile", other]);
        }
        None => return Err(format!("{} is not a profile's folder", dir.display())),
    }
    let status = c
        .status()
        .map_err(|e| format!("could not run cargo to build the lab's programs: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the lab's programs ({c:?}) failed ({status}); `cargo xtask test` builds \
             them with the eBPF toolchain `cargo xtask setup` installs"
        ));
    }
    Ok(())
}
