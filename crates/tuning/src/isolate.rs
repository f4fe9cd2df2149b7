//! Runtime isolation of the trader's CPU, as far as a running machine allows without a reboot,
//! restored exactly afterwards.
//!
//! What [`Isolation::apply`] does for CPU `c`:
//! - every process in the root cpuset (cgroup v1) but the ones kept (the caller, whose children
//!   are the measured processes) moves to a new cpuset `t2t-housekeeping` holding the other
//!   CPUs; unbound kernel threads move too, per-CPU ones can't (the kernel refuses: counted);
//! - the unbound-workqueue cpumask drops `c`;
//! - every IRQ whose affinity includes `c` gets the others (where the kernel or hypervisor lets
//!   it: refusals are counted and reported, not fatal).
//!
//! Before changing anything it writes what it found to a state file; [`restore_leftover`] puts a
//! crashed run's changes back from that file (the next `--isolate` run and `netns-down` call
//! it), and dropping an [`Isolation`] restores at once. Restoring puts back the workqueue mask
//! and IRQ affinities byte for byte, moves every process back to the root cpuset, removes
//! `t2t-housekeeping`, and gives back each thread's own affinity where it had a narrower one
//! than all CPUs (cgroup v1 resets it on a move).
//!
//! Boot-time isolation (`isolcpus`, `nohz_full`, `rcu_nocbs`) can't be done at runtime: the
//! scheduler tick and RCU callbacks still run on `c`; `doctor` reports those.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// The name of the cpuset the other tasks move to.
pub const HOUSEKEEPING: &str = "t2t-housekeeping";

/// Where the knobs live: the machine's, or a fixture's in tests.
#[derive(Debug, Clone)]
pub struct Paths {
    /// The cgroup v1 cpuset hierarchy's root (`/sys/fs/cgroup/cpuset`).
    pub cpuset: PathBuf,
    /// `/sys/devices/virtual/workqueue/cpumask`.
    pub workqueue_mask: PathBuf,
    /// `/proc/irq`.
    pub irq: PathBuf,
    /// Where the prior state is saved before any change.
    pub state: PathBuf,
}

impl Paths {
    /// This machine's, with the state file in `/run` (tmpfs: a reboot resets both).
    pub fn live() -> Paths {
        Paths {
            cpuset: "/sys/fs/cgroup/cpuset".into(),
            workqueue_mask: "/sys/devices/virtual/workqueue/cpumask".into(),
            irq: "/proc/irq".into(),
            state: "/run/t2t-isolate.json".into(),
        }
    }
}

/// What the machine had before: written before the first change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    pub cpu: usize,
    /// The workqueue mask as read (None: no such file).
    pub workqueue_mask: Option<String>,
    /// IRQ -> `smp_affinity_list` as read, for every IRQ.
    pub irqs: BTreeMap<String, String>,
    /// IRQ -> `effective_affinity_list` as read: where it was really routed. The restore writes
    /// this first, then the mask, to route it back; but for a mask of several CPUs the x86
    /// vector allocator picks the CPU with the most free vectors when the mask is written, so
    /// the routing can still differ from before (the mask is always back byte for byte).
    #[serde(default)]
    pub irqs_effective: BTreeMap<String, String>,
    /// The process that applied this isolation and its start time (`/proc/<pid>/stat` field
    /// 22): a leftover is restored only once that process is gone, never under a live run.
    #[serde(default)]
    pub owner: Option<(i32, u64)>,
    /// Thread id -> its affinity list, for threads whose affinity was narrower than all CPUs.
    pub narrow_affinity: BTreeMap<i32, Vec<usize>>,
    /// The cpuset this run creates (None: no cpuset hierarchy here).
    pub cpuset: Option<String>,
}

/// What applying did, for the report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Applied {
    pub processes_moved: usize,
    pub processes_refused: usize,
    pub workqueue: String,
    pub irqs_moved: usize,
    pub irqs_refused: Vec<String>,
    pub notes: Vec<String>,
}

impl Applied {
    /// One line for a report.
    pub fn summary(&self, cpu: usize) -> String {
        format!(
            "CPU {cpu} isolated at runtime: {} processes moved to cpuset {HOUSEKEEPING} ({} refused by the kernel: per-CPU kernel threads can't move); unbound workqueues {}; {} IRQ masks changed, {} refused{}",
            self.processes_moved,
            self.processes_refused,
            self.workqueue,
            self.irqs_moved,
            self.irqs_refused.len(),
            if self.irqs_refused.is_empty() {
                String::new()
            } else {
                format!(" ({})", self.irqs_refused.join(", "))
            }
        )
    }
}

/// An applied isolation; restores on drop.
#[derive(Debug)]
pub struct Isolation {
    paths: Paths,
    saved: Saved,
    pub applied: Applied,
    restored: bool,
    /// The calling thread's affinity before it moved off the CPU (it stays in the root cpuset
    /// so the processes it starts can use the CPU, but it polls them from the other CPUs).
    own_affinity: Option<Vec<usize>>,
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

fn write(p: &Path, s: &str) -> std::io::Result<()> {
    // sysfs and procfs take one write of the whole value (and ignore the truncation, which
    // the test's plain files need).
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(p)?
        .write_all(s.as_bytes())
}

fn online_cpus() -> Vec<usize> {
    read(Path::new("/sys/devices/system/cpu/online"))
        .and_then(|s| crate::doctor::parse_cpu_list(&s))
        .unwrap_or_else(|| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
        })
}

fn list(cpus: &[usize]) -> String {
    cpus.iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The workqueue mask (hex, as the kernel writes it) without `cpu`; None if that leaves none,
/// or the mask or CPU is past the 128 bits this edits.
pub fn mask_without(mask: &str, cpu: usize) -> Option<String> {
    let m = u128::from_str_radix(&mask.trim().replace(',', ""), 16).ok()?;
    // A mask or CPU beyond 128 bits is not one this can edit: left as it is (None).
    let out = m & !1u128.checked_shl(u32::try_from(cpu).ok()?)?;
    (out != 0).then(|| format!("{out:x}"))
}

fn irq_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.parse::<u32>().is_ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_by_key(|n| n.parse::<u32>().unwrap_or(u32::MAX));
    v
}

fn pids(file: &Path) -> Vec<i32> {
    read(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn affinity_of(tid: i32) -> Option<Vec<usize>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(tid)).ok()?;
    Some(
        (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect(),
    )
}

fn set_affinity(tid: i32, cpus: &[usize]) -> nix::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    for &c in cpus {
        set.set(c)?;
    }
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(tid), &set)
}

/// Reads the state `apply` would save (used by tests to compare before and after).
pub fn snapshot(paths: &Paths, cpu: usize) -> Saved {
    let all = online_cpus();
    let narrow_affinity = pids(&paths.cpuset.join("tasks"))
        .into_iter()
        .filter_map(|t| affinity_of(t).map(|a| (t, a)))
        .filter(|(_, a)| a.len() < all.len())
        .collect();
    Saved {
        cpu,
        workqueue_mask: read(&paths.workqueue_mask).map(|s| s.trim().to_string()),
        irqs: irq_names(&paths.irq)
            .into_iter()
            .filter_map(|n| {
                read(&paths.irq.join(&n).join("smp_affinity_list"))
                    .map(|v| (n, v.trim().to_string()))
            })
            .collect(),
        irqs_effective: irq_names(&paths.irq)
            .into_iter()
            .filter_map(|n| {
                read(&paths.irq.join(&n).join("effective_affinity_list"))
                    .map(|v| (n, v.trim().to_string()))
            })
            .collect(),
        owner: None,
        narrow_affinity,
        cpuset: paths
            .cpuset
            .join("cgroup.procs")
            .exists()
            .then(|| HOUSEKEEPING.to_string()),
    }
}

/// A process's start time in clock ticks since boot (`/proc/<pid>/stat` field 22), `None` when
/// it is gone: with the pid, it names one process even after the pid is reused.
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = read(Path::new(&format!("/proc/{pid}/stat")))?;
    // The command name (field 2) may hold spaces and parentheses: count from its end.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// True while the process that applied `saved` still runs.
fn owner_alive(saved: &Saved) -> bool {
    saved
        .owner
        .is_some_and(|(pid, start)| start_time(pid) == Some(start))
}

fn save(paths: &Paths, saved: &Saved) -> anyhow::Result<()> {
    let tmp = paths.state.with_extension("tmp");
    let mut f =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    f.write_all(serde_json::to_string_pretty(saved)?.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, &paths.state)
        .with_context(|| format!("writing {}", paths.state.display()))
}

/// What an isolation moves off the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Tasks (to a housekeeping cpuset), unbound workqueues and IRQs.
    Everything,
    /// IRQs only (the study's "IRQ steering" on its own): tasks and workqueues stay.
    IrqsOnly,
}

impl Isolation {
    /// Isolates `cpu`, keeping `keep` (process ids: the caller) where they are. A leftover state
    /// file from a crashed run is restored first.
    pub fn apply(paths: Paths, cpu: usize, keep: &[i32]) -> anyhow::Result<Isolation> {
        Self::apply_scope(paths, cpu, keep, Scope::Everything)
    }

    /// As [`Isolation::apply`], moving only what `scope` names. The snapshot and the restore
    /// are the same whatever the scope (what was not changed is written back as it was).
    pub fn apply_scope(
        paths: Paths,
        cpu: usize,
        keep: &[i32],
        scope: Scope,
    ) -> anyhow::Result<Isolation> {
        if let Some(note) = restore_leftover(&paths)? {
            eprintln!("{note}");
        }
        let all = online_cpus();
        let others: Vec<usize> = all.iter().copied().filter(|&c| c != cpu).collect();
        anyhow::ensure!(
            all.contains(&cpu),
            "CPU {cpu} is not online (online: {})",
            list(&all)
        );
        anyhow::ensure!(
            !others.is_empty(),
            "CPU {cpu} is the only CPU: nothing to move the rest to"
        );
        let mut saved = snapshot(&paths, cpu);
        let me = std::process::id() as i32;
        saved.owner = start_time(me).map(|t| (me, t));
        save(&paths, &saved)?;
        let mut iso = Isolation {
            paths,
            saved,
            applied: Applied::default(),
            restored: false,
            own_affinity: None,
        };
        if scope == Scope::Everything {
            iso.move_processes(&others, keep);
            iso.move_workqueues(cpu);
        } else {
            iso.applied.workqueue = "not moved (IRQs only)".into();
        }
        iso.move_irqs(cpu, &others);
        Ok(iso)
    }

    fn move_processes(&mut self, others: &[usize], keep: &[i32]) {
        let root = &self.paths.cpuset;
        if self.saved.cpuset.is_none() {
            self.applied.notes.push(format!(
                "no cgroup v1 cpuset at {}: tasks not moved",
                root.display()
            ));
            return;
        }
        let hk = root.join(HOUSEKEEPING);
        let made = std::fs::create_dir_all(&hk)
            .and_then(|()| {
                write(
                    &hk.join("cpuset.mems"),
                    read(&root.join("cpuset.mems")).unwrap_or_default().trim(),
                )
            })
            .and_then(|()| write(&hk.join("cpuset.cpus"), &list(others)));
        if let Err(e) = made {
            self.applied
                .notes
                .push(format!("creating cpuset {}: {e}", hk.display()));
            return;
        }
        for pid in pids(&root.join("cgroup.procs")) {
            if keep.contains(&pid) {
                continue;
            }
            match write(&hk.join("cgroup.procs"), &pid.to_string()) {
                Ok(()) => self.applied.processes_moved += 1,
                // Per-CPU kernel threads (EINVAL) and processes that exited meanwhile (ESRCH).
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(_) => self.applied.processes_refused += 1,
            }
        }
    }

    fn move_workqueues(&mut self, cpu: usize) {
        let Some(mask) = &self.saved.workqueue_mask else {
            self.applied.workqueue = "not adjustable (no cpumask file)".into();
            return;
        };
        self.applied.workqueue = match mask_without(mask, cpu) {
            None => format!("left at {mask} (no other CPU in it, or past 128 CPUs)"),
            Some(new) if &new == mask => format!("already off CPU {cpu} ({mask})"),
            Some(new) => match write(&self.paths.workqueue_mask, &new) {
                Ok(()) => format!("moved {mask} -> {new}"),
                Err(e) => format!("not moved ({e})"),
            },
        };
    }

    fn move_irqs(&mut self, cpu: usize, others: &[usize]) {
        for (irq, aff) in &self.saved.irqs {
            let Some(cpus) = crate::doctor::parse_cpu_list(aff) else {
                continue;
            };
            if !cpus.contains(&cpu) {
                continue;
            }
            let kept: Vec<usize> = cpus.iter().copied().filter(|&c| c != cpu).collect();
            let target = if kept.is_empty() {
                others.to_vec()
            } else {
                kept
            };
            match write(
                &self.paths.irq.join(irq).join("smp_affinity_list"),
                &list(&target),
            ) {
                Ok(()) => self.applied.irqs_moved += 1,
                Err(e) => self.applied.irqs_refused.push(format!("{irq}: {e}")),
            }
        }
    }

    /// Moves the calling thread off the isolated CPU too, until the restore: for a caller that
    /// stays in the root cpuset only to start the measured processes, which pin themselves (a
    /// process it starts inherits the narrowed set).
    pub fn confine_caller(&mut self) {
        let others: Vec<usize> = online_cpus()
            .into_iter()
            .filter(|&c| c != self.saved.cpu)
            .collect();
        let before = affinity_of(0);
        match set_affinity(0, &others) {
            Ok(()) => self.own_affinity = before,
            Err(e) => self
                .applied
                .notes
                .push(format!("the calling thread stays where it was ({e})")),
        }
    }

    /// Restores now (drop does the same, quietly); returns what could not be restored.
    pub fn restore(mut self) -> anyhow::Result<()> {
        self.restored = true;
        self.restore_own_affinity();
        restore(&self.paths, &self.saved)
    }

    fn restore_own_affinity(&mut self) {
        if let Some(cpus) = self.own_affinity.take() {
            let _ = set_affinity(0, &cpus);
        }
    }
}

impl Drop for Isolation {
    fn drop(&mut self) {
        self.restore_own_affinity();
        if !self.restored
            && let Err(e) = restore(&self.paths, &self.saved)
        {
            eprintln!(
                "restoring the isolation: {e:#} (state kept in {})",
                self.paths.state.display()
            );
        }
    }
}

/// Puts everything in `saved` back; removes the state file only when all of it went back.
fn restore(paths: &Paths, saved: &Saved) -> anyhow::Result<()> {
    let mut failed = Vec::new();
    if let Some(name) = &saved.cpuset {
        let hk = paths.cpuset.join(name);
        if hk.exists() {
            // Processes may fork meanwhile: a few passes until the set is empty.
            for _ in 0..10 {
                let left = pids(&hk.join("cgroup.procs"));
                if left.is_empty() {
                    break;
                }
                for pid in left {
                    let _ = write(&paths.cpuset.join("cgroup.procs"), &pid.to_string());
                }
            }
            let mut removed = false;
            for _ in 0..50 {
                if std::fs::remove_dir(&hk).is_ok() {
                    removed = true;
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            if !removed {
                failed.push(format!("cpuset {} (still has tasks)", hk.display()));
            }
        }
    }
    for (tid, cpus) in &saved.narrow_affinity {
        // Threads that exited are gone; the rest get their own mask back.
        if let Err(e) = set_affinity(*tid, cpus)
            && e != nix::errno::Errno::ESRCH
            && e != nix::errno::Errno::EINVAL
        {
            failed.push(format!("affinity of thread {tid}: {e}"));
        }
    }
    if let Some(mask) = &saved.workqueue_mask {
        let now = read(&paths.workqueue_mask).map(|s| s.trim().to_string());
        if now.as_deref() != Some(mask.as_str())
            && let Err(e) = write(&paths.workqueue_mask, mask)
        {
            failed.push(format!("workqueue mask {mask}: {e}"));
        }
    }
    for (irq, aff) in &saved.irqs {
        let p = paths.irq.join(irq).join("smp_affinity_list");
        let now = read(&p).map(|s| s.trim().to_string());
        let eff_before = saved.irqs_effective.get(irq);
        let eff_now = read(&paths.irq.join(irq).join("effective_affinity_list"))
            .map(|s| s.trim().to_string());
        let mask_moved = now.is_some() && now.as_deref() != Some(aff.as_str());
        let route_moved =
            eff_before.is_some() && eff_now.is_some() && eff_now.as_ref() != eff_before;
        if !mask_moved && !route_moved {
            continue;
        }
        // Route it back where it fired first (a mask alone keeps it where it is now), then
        // give it its mask.
        if route_moved && let Some(eff) = eff_before {
            let _ = write(&p, eff);
        }
        if let Err(e) = write(&p, aff) {
            failed.push(format!("IRQ {irq} -> {aff}: {e}"));
        }
    }
    anyhow::ensure!(
        failed.is_empty(),
        "could not restore: {}",
        failed.join("; ")
    );
    match std::fs::remove_file(&paths.state) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("removing {}", paths.state.display())),
    }
}

/// Restores what a crashed or killed run left (its state file), if anything: returns a line
/// saying what was restored.
pub fn restore_leftover(paths: &Paths) -> anyhow::Result<Option<String>> {
    let Some(text) = read(&paths.state) else {
        return Ok(None);
    };
    let saved: Saved = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not an isolation state file; remove it by hand after checking",
            paths.state.display()
        )
    })?;
    if owner_alive(&saved) {
        let (pid, _) = saved.owner.unwrap_or_default();
        anyhow::bail!(
            "CPU {} is isolated by a run that is still going (pid {pid}); wait for it or stop \
             it (its end restores the machine)",
            saved.cpu
        );
    }
    restore(paths, &saved)?;
    Ok(Some(format!(
        "restored the isolation of CPU {} that an earlier run left ({})",
        saved.cpu,
        paths.state.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workqueue_mask_loses_only_the_cpu() {
        assert_eq!(mask_without("3", 1).as_deref(), Some("1"));
        assert_eq!(mask_without("ff", 0).as_deref(), Some("fe"));
        assert_eq!(mask_without("00000000,000000ff", 7).as_deref(), Some("7f"));
        assert_eq!(mask_without("2", 1), None);
        assert_eq!(
            mask_without("3", 200),
            None,
            "a CPU past 128 bits is not edited"
        );
    }

    /// A fake machine: workqueue mask and IRQ files in a folder, no cpuset.
    fn fake() -> (tempfile::TempDir, Paths) {
        let d = tempfile::tempdir().unwrap();
        let p = Paths {
            cpuset: d.path().join("cpuset"),
            workqueue_mask: d.path().join("cpumask"),
            irq: d.path().join("irq"),
            state: d.path().join("state.json"),
        };
        std::fs::write(&p.workqueue_mask, "3\n").unwrap();
        for (irq, aff) in [("24", "0-1"), ("36", "1"), ("39", "0")] {
            std::fs::create_dir_all(p.irq.join(irq)).unwrap();
            std::fs::write(
                p.irq.join(irq).join("smp_affinity_list"),
                format!("{aff}\n"),
            )
            .unwrap();
        }
        (d, p)
    }

    fn files(p: &Paths) -> Vec<(String, String)> {
        let mut v = vec![(
            "wq".to_string(),
            std::fs::read_to_string(&p.workqueue_mask).unwrap(),
        )];
        for irq in irq_names(&p.irq) {
            v.push((
                irq.clone(),
                std::fs::read_to_string(p.irq.join(&irq).join("smp_affinity_list")).unwrap(),
            ));
        }
        v
    }

    #[test]
    fn a_fake_machine_is_isolated_and_restored_byte_for_byte() {
        let (_d, p) = fake();
        let before = files(&p);
        let iso = Isolation::apply(p.clone(), 1, &[]).unwrap();
        assert!(p.state.exists(), "the state is saved before any change");
        assert_eq!(std::fs::read_to_string(&p.workqueue_mask).unwrap(), "1");
        assert_eq!(
            std::fs::read_to_string(p.irq.join("24/smp_affinity_list")).unwrap(),
            "0"
        );
        // An IRQ only on the isolated CPU goes to the others.
        assert_eq!(
            std::fs::read_to_string(p.irq.join("36/smp_affinity_list")).unwrap(),
            "0"
        );
        assert_eq!(iso.applied.irqs_moved, 2);
        iso.restore().unwrap();
        // The kernel writes a trailing newline; the restore writes the value as read.
        let after: Vec<(String, String)> = files(&p)
            .into_iter()
            .map(|(k, v)| (k, v.trim().to_string()))
            .collect();
        let before: Vec<(String, String)> = before
            .into_iter()
            .map(|(k, v)| (k, v.trim().to_string()))
            .collect();
        assert_eq!(after, before);
        assert!(!p.state.exists());
    }

    #[test]
    fn irq_steering_alone_leaves_the_workqueues_and_restores_the_irqs() {
        let (_d, p) = fake();
        let before = files(&p);
        let iso = Isolation::apply_scope(p.clone(), 1, &[], Scope::IrqsOnly).unwrap();
        assert_eq!(std::fs::read_to_string(&p.workqueue_mask).unwrap(), "3\n");
        assert_eq!(
            std::fs::read_to_string(p.irq.join("24/smp_affinity_list")).unwrap(),
            "0"
        );
        assert_eq!(iso.applied.irqs_moved, 2);
        assert_eq!(iso.applied.processes_moved, 0);
        iso.restore().unwrap();
        let trimmed = |v: Vec<(String, String)>| -> Vec<(String, String)> {
            v.into_iter()
                .map(|(k, v)| (k, v.trim().to_string()))
                .collect()
        };
        assert_eq!(trimmed(files(&p)), trimmed(before));
        assert!(!p.state.exists());
    }

    #[test]
    fn a_crashed_run_is_restored_from_its_state_file() {
        let (_d, p) = fake();
        let before = files(&p);
        let iso = Isolation::apply(p.clone(), 1, &[]).unwrap();
        // A crash: no drop, no restore; the state file stays, and its owner is gone (a start
        // time that is not this process's stands for a dead one).
        std::mem::forget(iso);
        assert_ne!(files(&p), before);
        let e = restore_leftover(&p).unwrap_err().to_string();
        assert!(
            e.contains("still going"),
            "a live owner's isolation is not torn down: {e}"
        );
        let mut saved: Saved =
            serde_json::from_str(&std::fs::read_to_string(&p.state).unwrap()).unwrap();
        let (pid, start) = saved.owner.unwrap();
        saved.owner = Some((pid, start + 1));
        std::fs::write(&p.state, serde_json::to_string(&saved).unwrap()).unwrap();
        let note = restore_leftover(&p).unwrap().unwrap();
        assert!(note.contains("CPU 1"), "{note}");
        let trim = |v: Vec<(String, String)>| {
            v.into_iter()
                .map(|(k, v)| (k, v.trim().to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(trim(files(&p)), trim(before));
        assert_eq!(
            restore_leftover(&p).unwrap(),
            None,
            "nothing left the second time"
        );
    }

    #[test]
    fn a_garbled_state_file_is_an_error_that_says_what_to_do() {
        let (_d, p) = fake();
        std::fs::write(&p.state, "not json").unwrap();
        let e = restore_leftover(&p).unwrap_err().to_string();
        assert!(e.contains("not an isolation state file"), "{e}");
    }
}
