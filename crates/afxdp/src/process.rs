//! Setting up a measured process: CPU pinning, memory locking, real-time scheduling, stop
//! signals.
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use anyhow::Context as _;

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> anyhow::Result<()> {
    affinity::pin_current_thread(cpu).with_context(|| format!("failed to pin to CPU {cpu}"))
}

/// Locks current and future pages in memory: no page faults on the measured path.
pub fn lock_memory() -> anyhow::Result<()> {
    use nix::sys::mman::{MlockAllFlags, mlockall};
    mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE)
        .context("mlockall failed (needs CAP_IPC_LOCK or a large enough RLIMIT_MEMLOCK)")
}

/// Runs the calling thread under SCHED_FIFO at `priority` (1-99): the scheduler never
/// preempts it for normal tasks. Needs CAP_SYS_NICE; with a spinning loop, keep it off the CPU
/// that runs the kernel's own work or the machine stalls (RT throttling allows 95 %).
pub fn set_fifo(priority: i32) -> anyhow::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid, initialised sched_param that outlives the call; pid 0 is the
    // calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("SCHED_FIFO priority {priority} (needs CAP_SYS_NICE)"));
    }
    Ok(())
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
