//! A KVM guest's idle settings, changed for a run and put back exactly: the `haltpoll`
//! driver's poll window (`guest_halt_poll_ns`: how long an idle vCPU polls before it halts, a
//! VM exit), and a PM QoS request for zero wake-up latency (`/dev/cpu_dma_latency` held open
//! with 0: every CPU idles in POLL and never halts, until the file is closed, which the kernel
//! does for a killed process too). Disabling the "haltpoll idle" state in sysfs does not do it
//! here: with its poll limit at 0 the haltpoll governor picks that state without reading the
//! switch (measured: 78 halt entries in 2 s on an idle CPU enabled, 79 disabled). The matrix's `block-halt-poll` and `block-no-halt` knobs run the blocking trader
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
    /// The PM QoS CPU latency request device.
    pub dma_latency: PathBuf,
}

impl Paths {
    pub fn live() -> Paths {
        Paths {
            sys: PathBuf::from("/sys"),
            state: PathBuf::from("/run/t2t-idle.json"),
            dma_latency: PathBuf::from("/dev/cpu_dma_latency"),
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
    /// Never halt: a PM QoS request for 0 µs wake-up latency, held for the run (all CPUs).
    NeverHalt,
}

/// The changed settings; dropping it (or [`IdleGuard::restore`]) writes the prior values back.
#[derive(Debug)]
pub struct IdleGuard {
    paths: Paths,
    saved: Vec<(PathBuf, String)>,
    /// The open PM QoS request: closing it ends the request.
    _qos: Option<std::fs::File>,
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

/// The CPU's idle state named "haltpoll idle" (its folder under `cpuidle/`).
pub fn halt_state(paths: &Paths, cpu: usize) -> anyhow::Result<PathBuf> {
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
        match idle {
            Idle::PollFirst(ns) => Self::poll_first(paths, ns),
            Idle::NeverHalt => {
                // The CPU must have the haltpoll states this setting is about.
                halt_state(&paths, cpu)?;
                let qos = hold_zero_latency(&paths.dma_latency)?;
                Ok(IdleGuard {
                    paths,
                    saved: Vec::new(),
                    _qos: Some(qos),
                })
            }
        }
    }

    fn poll_first(paths: Paths, ns: u64) -> anyhow::Result<IdleGuard> {
        let file = paths.poll_ns();
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
        let guard = IdleGuard {
            paths,
            saved,
            _qos: None,
        };
        std::fs::write(&file, ns.to_string())
            .with_context(|| format!("writing {ns} to {} (needs root)", file.display()))?;
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

/// Opens the PM QoS CPU latency device and asks for 0 µs (a native-endian i32): the request
/// holds until the returned file is closed.
pub fn hold_zero_latency(dev: &Path) -> anyhow::Result<std::fs::File> {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(dev)
        .with_context(|| format!("opening {} (needs root)", dev.display()))?;
    f.write_all(&0i32.to_ne_bytes())
        .with_context(|| format!("asking {} for 0 µs", dev.display()))?;
    Ok(f)
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
            dma_latency: d.path().join("cpu_dma_latency"),
        };
        let w = |rel: &str, v: &str| {
            let f = p.sys.join(rel);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, v).unwrap();
        };
        w("module/haltpoll/parameters/guest_halt_poll_ns", "0\n");
        w("devices/system/cpu/cpu1/cpuidle/state0/name", "POLL\n");
        w(
            "devices/system/cpu/cpu1/cpuidle/state1/name",
            "haltpoll idle\n",
        );
        std::fs::write(&p.dma_latency, "").unwrap();
        (d, p)
    }

    const POLL: &str = "module/haltpoll/parameters/guest_halt_poll_ns";

    fn value(p: &Paths, rel: &str) -> String {
        read(&p.sys.join(rel)).unwrap()
    }

    #[test]
    fn each_setting_is_applied_and_put_back() {
        let (_d, p) = fake();
        let g = IdleGuard::apply(p.clone(), 1, Idle::PollFirst(200_000)).unwrap();
        assert_eq!(value(&p, POLL), "200000");
        assert!(
            p.state.exists(),
            "the prior value is saved before the change"
        );
        g.restore().unwrap();
        assert_eq!(value(&p, POLL), "0");
        assert!(!p.state.exists());

        let g = IdleGuard::apply(p.clone(), 1, Idle::NeverHalt).unwrap();
        assert_eq!(std::fs::read(&p.dma_latency).unwrap(), 0i32.to_ne_bytes());
        assert!(
            !p.state.exists(),
            "a PM QoS request needs no state file: closing it ends it"
        );
        drop(g);
        assert_eq!(value(&p, POLL), "0");
    }

    #[test]
    fn a_killed_run_is_put_back_from_its_state_file() {
        let (_d, p) = fake();
        let g = IdleGuard::apply(p.clone(), 1, Idle::PollFirst(200_000)).unwrap();
        // SIGKILL: no drop runs.
        std::mem::forget(g);
        assert_eq!(value(&p, POLL), "200000");
        let note = restore_leftover(&p).unwrap().unwrap();
        assert!(note.contains("restored the idle settings"), "{note}");
        assert_eq!(value(&p, POLL), "0");
        assert_eq!(restore_leftover(&p).unwrap(), None);
    }

    #[test]
    fn a_machine_without_haltpoll_says_so() {
        let d = tempfile::tempdir().unwrap();
        let p = Paths {
            sys: d.path().to_path_buf(),
            state: d.path().join("idle.json"),
            dma_latency: d.path().join("cpu_dma_latency"),
        };
        let e = IdleGuard::apply(p.clone(), 1, Idle::NeverHalt).unwrap_err();
        assert!(format!("{e:#}").contains("haltpoll idle"), "{e:#}");
        let e = IdleGuard::apply(p, 1, Idle::PollFirst(1)).unwrap_err();
        assert!(format!("{e:#}").contains("no haltpoll driver"), "{e:#}");
    }
}
