//! Process setup for measured loops: CPU pinning, memory locking, stop signals, the clock.
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use anyhow::Context as _;

/// Nanoseconds on CLOCK_MONOTONIC (vDSO, ~20 ns). Every process of the lab reads the same
/// clock, so the replay's send schedule and the orders' arrival are on one time base.
#[inline]
pub fn now_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always available");
    ts.tv_sec() as u64 * 1_000_000_000 + ts.tv_nsec() as u64
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> anyhow::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu)
        .with_context(|| format!("CPU {cpu} is out of range"))?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .with_context(|| format!("failed to pin to CPU {cpu} (does it exist? see nproc)"))?;
    Ok(())
}

/// Locks current and future pages in memory: no page faults on the measured path.
pub fn lock_memory() -> anyhow::Result<()> {
    use nix::sys::mman::{MlockAllFlags, mlockall};
    mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE)
        .context("mlockall failed (needs CAP_IPC_LOCK or a large enough RLIMIT_MEMLOCK)")
}

/// A flag that SIGINT and SIGTERM set; measured loops poll it (one relaxed load per turn)
/// and then finish cleanly: detach XDP, write results.
pub fn stop_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&flag))
            .context("failed to install the signal handler")?;
    }
    Ok(flag)
}

/// True once a stop signal arrived.
#[inline]
pub fn stopped(flag: &AtomicBool) -> bool {
    flag.load(Ordering::Relaxed)
}

/// `uname -r`, and the CPU model, for reports.
pub fn machine() -> (String, String) {
    let kernel = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_default();
    (kernel, cpu)
}
