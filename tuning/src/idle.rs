//! A KVM guest's idle settings, changed for a run and put back exactly: the `haltpoll`
//! driver's poll window (`guest_halt_poll_ns`: how long an idle vCPU polls before it halts, a
//! VM exit) and a CPU's "haltpoll idle" state (disabled: the CPU idles in POLL and never
//! halts). The matrix's `block-halt-poll` and `block-no-halt` knobs run the blocking trader
//! under each; the hot-path suite's `cstates` experiment measures the same settings against a
//! bare wake-up.
//!
//! The prior values are written to a state file before any change, so a run killed with
//! SIGKILL is put back by the next bench, matrix or `netns-down` ([`restore_leftover`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// Where the settings live (a parameter so tests can use a fake tree).
#[derive(Debug, Clone)]
pub struct Paths {
    /// `/sys` (or a test's folder).
    pub sys: PathBuf,
    /// The state file with the prior values.
    pub state: PathBuf,
}

impl Paths {
    pub fn live() -> Paths {
        Paths {
            sys: PathBuf::from("/sys"),
            state: PathBuf::from("/run/t2t-idle.json"),
        }
    }

    fn poll_ns(&self) -> PathBuf {
        self.sys
            .join("module/haltpoll/parameters/guest_halt_poll_ns")
    }

    fn cpuidle(&self, cpu: usize) -> PathBuf {
        self.sys
            .join(format!("devices/system/cpu/cpu{cpu}/cpuidle"))
    }
}

/// What to set on the run's CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// Poll up to this many ns before halting (the kernel's default is 200,000).
    PollFirst(u64),
    /// Never halt: the CPU's "haltpoll idle" state disabled.
    NeverHalt,
}

/// The changed settings; dropping it (or [`IdleGuard::restore`]) writes the prior values back.
#[derive(Debug)]
pub struct IdleGuard {
    paths: Paths,
    saved: Vec<(PathBuf, String)>,
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The CPU's idle state named "haltpoll idle".
fn halt_state(paths: &Paths, cpu: usize) -> anyhow::Result<PathBuf> {
    let dir = paths.cpuidle(cpu);
    (0..8)
        .map(|i| dir.join(format!("state{i}")))
        .find(|s| read(&s.join("name")).as_deref() == Some("haltpoll idle"))
        .with_context(|| {
            format!(
                "no \"haltpoll idle\" state under {}: these knobs are a KVM guest's (the \
                 haltpoll cpuidle driver)",
                dir.display()
            )
        })
}

impl IdleGuard {
    /// Sets `idle` for `cpu`, after saving what was there (and restoring what a killed run
    /// left). Errors say what is missing (no haltpoll driver, not root).
    pub fn apply(paths: Paths, cpu: usize, idle: Idle) -> anyhow::Result<IdleGuard> {
        if let Some(note) = restore_leftover(&paths)? {
            eprintln!("{note}");
        }
        let file = match idle {
            Idle::PollFirst(_) => paths.poll_ns(),
            Idle::NeverHalt => halt_state(&paths, cpu)?.join("disable"),
        };
        let Some(old) = read(&file) else {
            bail!(
                "{} is not there: no haltpoll driver on this machine",
                file.display()
            );
        };
        let saved = vec![(file.clone(), old)];
        std::fs::write(
            &paths.state,
            serde_json::to_string(&saved).context("the idle state")?,
        )
        .with_context(|| format!("writing {} (needs root)", paths.state.display()))?;
        let guard = IdleGuard { paths, saved };
        let value = match idle {
            Idle::PollFirst(ns) => ns.to_string(),
            Idle::NeverHalt => "1".to_string(),
        };
        std::fs::write(&file, &value)
            .with_context(|| format!("writing {value} to {} (needs root)", file.display()))?;
        Ok(guard)
    }

    /// Writes the prior values back; an error names what could not be.
    pub fn restore(mut self) -> anyhow::Result<()> {
        self.put_back()
    }

    fn put_back(&mut self) -> anyhow::Result<()> {
        let saved = std::mem::take(&mut self.saved);
        put_back(&self.paths, &saved)
    }
}

impl Drop for IdleGuard {
    fn drop(&mut self) {
        if let Err(e) = self.put_back() {
            eprintln!("warning: {e:#}");
        }
    }
}

fn put_back(paths: &Paths, saved: &[(PathBuf, String)]) -> anyhow::Result<()> {
    for (file, value) in saved {
        std::fs::write(file, value)
            .with_context(|| format!("putting {} back to {value}", file.display()))?;
    }
    if !saved.is_empty() {
        let _ = std::fs::remove_file(&paths.state);
    }
    Ok(())
}

/// Puts back what a killed run left (its state file), and says so; `None` when nothing was
/// left.
pub fn restore_leftover(paths: &Paths) -> anyhow::Result<Option<String>> {
    let Ok(text) = std::fs::read_to_string(&paths.state) else {
        return Ok(None);
    };
    let saved: Vec<(PathBuf, String)> = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not an idle-settings state file; remove it by hand after checking",
            paths.state.display()
        )
    })?;
    put_back(paths, &saved)?;
    Ok(Some(format!(
        "restored the idle settings an earlier run left ({})",
        paths.state.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake() -> (tempfile::TempDir, Paths) {
        let d = tempfile::tempdir().unwrap();
        let p = Paths {
            sys: d.path().join("sys"),
            state: d.path().join("idle.json"),
        };
        let w = |rel: &str, v: &str| {
            let f = p.sys.join(rel);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, v).unwrap();
        };
        w("module/haltpoll/parameters/guest_halt_poll_ns", "0\n");
        w("devices/system/cpu/cpu1/cpuidle/state0/name", "POLL\n");
        w("devices/system/cpu/cpu1/cpuidle/state0/disable", "0\n");
        w(
            "devices/system/cpu/cpu1/cpuidle/state1/name",
            "haltpoll idle\n",
        );
        w("devices/system/cpu/cpu1/cpuidle/state1/disable", "0\n");
        (d, p)
    }

    fn value(p: &Paths, rel: &str) -> String {
        read(&p.sys.join(rel)).unwrap()
    }

    #[test]
    fn each_setting_is_applied_and_put_back() {
        let (_d, p) = fake();
        let g = IdleGuard::apply(p.clone(), 1, Idle::PollFirst(200_000)).unwrap();
        assert_eq!(
            value(&p, "module/haltpoll/parameters/guest_halt_poll_ns"),
            "200000"
        );
        assert!(
            p.state.exists(),
            "the prior value is saved before the change"
        );
        g.restore().unwrap();
        assert_eq!(
            value(&p, "module/haltpoll/parameters/guest_halt_poll_ns"),
            "0"
        );
        assert!(!p.state.exists());

        let g = IdleGuard::apply(p.clone(), 1, Idle::NeverHalt).unwrap();
        assert_eq!(
            value(&p, "devices/system/cpu/cpu1/cpuidle/state1/disable"),
            "1"
        );
        assert_eq!(
            value(&p, "devices/system/cpu/cpu1/cpuidle/state0/disable"),
            "0"
        );
        drop(g);
        assert_eq!(
            value(&p, "devices/system/cpu/cpu1/cpuidle/state1/disable"),
            "0"
        );
    }

    #[test]
    fn a_killed_run_is_put_back_from_its_state_file() {
        let (_d, p) = fake();
        let g = IdleGuard::apply(p.clone(), 1, Idle::NeverHalt).unwrap();
        // SIGKILL: no drop runs.
        std::mem::forget(g);
        assert_eq!(
            value(&p, "devices/system/cpu/cpu1/cpuidle/state1/disable"),
            "1"
        );
        let note = restore_leftover(&p).unwrap().unwrap();
        assert!(note.contains("restored the idle settings"), "{note}");
        assert_eq!(
            value(&p, "devices/system/cpu/cpu1/cpuidle/state1/disable"),
            "0"
        );
        assert_eq!(restore_leftover(&p).unwrap(), None);
    }

    #[test]
    fn a_machine_without_haltpoll_says_so() {
        let d = tempfile::tempdir().unwrap();
        let p = Paths {
            sys: d.path().to_path_buf(),
            state: d.path().join("idle.json"),
        };
        let e = IdleGuard::apply(p.clone(), 1, Idle::NeverHalt).unwrap_err();
        assert!(format!("{e:#}").contains("haltpoll idle"), "{e:#}");
        let e = IdleGuard::apply(p, 1, Idle::PollFirst(1)).unwrap_err();
        assert!(format!("{e:#}").contains("no haltpoll driver"), "{e:#}");
    }
}
