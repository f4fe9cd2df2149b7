//! The isolation on the real machine: everything it changes is back byte for byte after a
//! normal end and after the isolating process is killed with SIGKILL (the next run restores
//! from the state file). Privileged: skipped, with a line saying so, without root.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {
    affinity as _, anyhow as _, bumpalo as _, clap as _, crossbeam_channel as _,
    crossbeam_queue as _, crossbeam_utils as _, hdrhistogram as _, hotpath as _, libc as _,
    mimalloc as _, paths as _, pulp as _, results as _, rtrb as _, serde as _, serde_json as _,
    signal_hook as _, slab as _, tempfile as _, tikv_jemallocator as _, trader_core as _,
};

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use tuning::isolate::{HOUSEKEEPING, Paths, restore_leftover, snapshot};

/// What must come back exactly: the workqueue mask, every IRQ's affinity mask (where the kernel
/// routes an IRQ whose mask spans several CPUs is its own choice when the mask is written: the
/// restore routes it back first where it can, see `isolate::restore`), the cpuset
/// hierarchy's top level (no cpuset of ours left), the root cpuset's CPUs, and the affinity of
/// the threads that had a narrow one before and still exist.
#[derive(Debug, PartialEq, Eq)]
struct State {
    workqueue_mask: Option<String>,
    irqs: Vec<(String, String)>,
    cpuset_dirs: Vec<String>,
    root_cpus: String,
}

fn state(p: &Paths) -> State {
    let s = snapshot(p, 1);
    let mut dirs: Vec<String> = std::fs::read_dir(&p.cpuset)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    let cpus = std::fs::read_to_string(p.cpuset.join("cpuset.cpus")).unwrap_or_default();
    State {
        workqueue_mask: s.workqueue_mask,
        irqs: s.irqs.into_iter().collect(),
        cpuset_dirs: dirs,
        root_cpus: cpus,
    }
}

fn wait_for(path: &Path) {
    let t = Instant::now();
    while !path.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn isolation_is_undone_exactly_also_after_sigkill() {
    if !netns::require_privileges_or_skip() {
        return;
    }
    let p = Paths::live();
    if !p.cpuset.join("cgroup.procs").exists() {
        eprintln!("skipped: no cgroup v1 cpuset at {}", p.cpuset.display());
        return;
    }
    // A leftover from an earlier crash would make "before" the isolated state.
    restore_leftover(&p).unwrap();
    let before = state(&p);
    let narrow_before = snapshot(&p, 1).narrow_affinity;

    // 1. A normal run: isolate around a command that checks it is isolated, then restore.
    let out = Command::new(env!("CARGO_BIN_EXE_hotpath"))
        .args(["isolate", "--cpu", "1", "--", "sh", "-c"])
        .arg(format!("test -d /sys/fs/cgroup/cpuset/{HOUSEKEEPING} && cat /sys/devices/virtual/workqueue/cpumask"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The command saw the mask without CPU 1 (this 2-CPU machine's "3" becomes "1").
    let seen = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_ne!(
        Some(seen),
        before.workqueue_mask,
        "the isolation changed nothing"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("processes moved") && stderr.contains("restored"),
        "{stderr}"
    );
    assert_eq!(state(&p), before, "after a normal run");

    // 2. SIGKILL while isolated: the state file stays, the next restore puts everything back.
    let mut child = Command::new(env!("CARGO_BIN_EXE_hotpath"))
        .args(["isolate", "--cpu", "1", "--", "sleep", "30"])
        .spawn()
        .unwrap();
    wait_for(&p.cpuset.join(HOUSEKEEPING));
    wait_for(&p.state);
    // Let it finish applying (the IRQs come last), then kill it and its own sleep (only that
    // one: its child, read from /proc before the kill).
    std::thread::sleep(Duration::from_millis(300));
    let kids = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id()))
        .unwrap_or_default();
    child.kill().unwrap();
    child.wait().unwrap();
    for kid in kids.split_whitespace() {
        let _ = Command::new("kill").args(["-KILL", kid]).status();
    }
    assert!(p.state.exists(), "a killed run leaves its state file");
    assert_ne!(state(&p), before, "the killed run left the CPU isolated");
    let note = restore_leftover(&p).unwrap().expect("something to restore");
    assert!(note.contains("CPU 1"), "{note}");
    assert_eq!(state(&p), before, "after SIGKILL and restore");
    assert!(!p.state.exists());
    // Threads that had their own narrow affinity and still exist have it again.
    for (tid, cpus) in narrow_before {
        if let Ok(set) = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(tid)) {
            let now: Vec<usize> = (0..nix::sched::CpuSet::count())
                .filter(|&c| set.is_set(c).unwrap_or(false))
                .collect();
            assert_eq!(now, cpus, "thread {tid}");
        }
    }
}
