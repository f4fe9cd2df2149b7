//! What every binary's `main` shares: errors for people ([`run_main`], the one wrapper the
//! lab's, xtask's and the studies' binaries use), options checked before a run.

/// Fails now, before a run, if a result can't be written where asked (rather than after it).
pub fn check_writable(what: &str, path: &std::path::Path) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "{what} {}: the folder {} does not exist",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        anyhow::bail!("{what} {} is a folder, not a file", path.display());
    }
    Ok(())
}

/// Runs a binary's `main` body and turns an error into `Error: ...` with its causes, one per
/// line, and exit status 1. Without a backtrace, even under RUST_BACKTRACE=1 (which still
/// gives panics theirs): an error here is a message for the user, not a bug.
pub fn run_main(main: impl FnOnce() -> anyhow::Result<()>) -> std::process::ExitCode {
    match main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("Error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            std::process::ExitCode::FAILURE
        }
    }
}
