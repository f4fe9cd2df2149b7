//! Running commands: print each one, fail with it in the message.
use std::{
    path::PathBuf,
    process::{Command, ExitStatus},
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use anyhow::{Context as _, bail};

/// Renders a command line as a user could paste it.
pub(crate) fn shown(cmd: &Command) -> String {
    let mut s = String::new();
    for (k, v) in cmd.get_envs() {
        if let Some(v) = v {
            s.push_str(&format!("{}={} ", k.to_string_lossy(), v.to_string_lossy()));
        }
    }
    s.push_str(&cmd.get_program().to_string_lossy());
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        if a.contains(' ') || a.is_empty() {
            s.push_str(&format!(" '{a}'"));
        } else {
            s.push(' ');
            s.push_str(&a);
        }
    }
    s
}

/// Prints and runs `cmd`, failing unless it exits 0.
pub(crate) fn exec(cmd: &mut Command) -> anyhow::Result<()> {
    eprintln!("+ {}", shown(cmd));
    let status = cmd
        .status()
        .with_context(|| format!("failed to run `{}`", shown(cmd)))?;
    succeeded(cmd, status)
}

/// Fails with the command line unless `status` is success.
pub(crate) fn succeeded(cmd: &Command, status: ExitStatus) -> anyhow::Result<()> {
    if !status.success() {
        bail!("`{}` failed: {status}", shown(cmd));
    }
    Ok(())
}

/// Prints and runs `cmd` until it exits; once `stop` is set (our SIGINT/SIGTERM), passes a
/// SIGTERM on to it, so a signal sent to xtask alone (a supervisor, a CI timeout) stops the
/// measurement too, not only a terminal's Ctrl-C that reaches the whole process group. A child
/// that hasn't exited [`netns::ChildGuard::DEFAULT_GRACE`] later is killed.
pub(crate) fn exec_until(cmd: &mut Command, stop: &AtomicBool) -> anyhow::Result<ExitStatus> {
    eprintln!("+ {}", shown(cmd));
    let child = cmd
        .spawn()
        .with_context(|| format!("failed to run `{}`", shown(cmd)))?;
    let mut child = netns::ChildGuard::new(child);
    loop {
        if let Some(status) = child.wait_timeout(Duration::from_millis(20))? {
            return Ok(status);
        }
        if stop.load(Ordering::Relaxed) {
            // SIGTERM, the grace period, SIGKILL: the child writes what it measured first.
            return Ok(child.stop()?);
        }
    }
}

/// `cargo`, as the one that runs us (the `CARGO` env var), so toolchain overrides hold.
pub(crate) fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The workspace root (xtask lives one level below it).
pub(crate) fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is inside the workspace")
        .to_path_buf()
}

/// Where cargo puts what it builds: `CARGO_TARGET_DIR` if set (as cargo honours it), else the
/// workspace's `target/`.
pub(crate) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace_root().join("target"), PathBuf::from)
}

/// True when `tool` is on PATH.
pub(crate) fn which(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()))
}

/// Root, or fail saying what needs it.
pub(crate) fn require_root(what: &str) -> anyhow::Result<()> {
    if netns::check_capabilities(&[netns::Capability::NetAdmin, netns::Capability::SysAdmin])
        .is_err()
    {
        bail!(
            "{what} needs root (missing CAP_NET_ADMIN/CAP_SYS_ADMIN): run it as root, e.g. \
             `sudo -E cargo xtask ...`"
        );
    }
    Ok(())
}
