//! Code-level experiments about data and threads: false sharing ([`false_sharing`]), array of
//! structs vs struct of arrays and SIMD ([`layout`]), and the hand-off between two threads
//! ([`queues`]).
//!
//! The two-thread experiments pin one thread to [`Ctx::cpu`] (the calling thread, which
//! measures) and one to [`Ctx::other_cpu`], started together through [`Start`].

pub mod false_sharing;
pub mod layout;
pub mod queues;

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crossbeam_utils::CachePadded;

use crate::Ctx;

/// A second thread's start: it pins itself to the other CPU and says whether that worked
/// before the measuring thread lets it go, so no one spins forever waiting for a thread that
/// could not start, and both begin their timed work at the same moment.
#[derive(Debug, Default)]
pub struct Start {
    /// 0: not yet; 1: pinned and waiting for `go`; 2: could not pin (it returns at once).
    state: CachePadded<AtomicU8>,
    go: CachePadded<AtomicBool>,
}

const PINNED: u8 = 1;
const FAILED: u8 = 2;

impl Start {
    /// The second thread: pins to `ctx.other_cpu`, says so, waits for [`Start::go`].
    pub fn worker(&self, ctx: &Ctx) -> anyhow::Result<()> {
        if let Err(e) = ctx.pin_other() {
            self.state.store(FAILED, Ordering::Release);
            return Err(e);
        }
        self.state.store(PINNED, Ordering::Release);
        while !self.go.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
        Ok(())
    }

    /// The measuring thread: waits until the worker is pinned; false when it could not pin
    /// (join it for the error).
    pub fn ready(&self) -> bool {
        loop {
            match self.state.load(Ordering::Acquire) {
                PINNED => return true,
                FAILED => return false,
                _ => std::hint::spin_loop(),
            }
        }
    }

    /// Lets the worker go.
    pub fn go(&self) {
        self.go.store(true, Ordering::Release);
    }
}

/// Joins a scoped worker, turning a panic into an error.
pub(crate) fn join<T>(
    h: std::thread::ScopedJoinHandle<'_, anyhow::Result<T>>,
) -> anyhow::Result<T> {
    h.join()
        .map_err(|_| anyhow::anyhow!("the thread on the other CPU panicked"))?
}

/// A small deterministic generator (xorshift64*): test data and pacing jitter, the same every
/// run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The 10th percentile of `v` (nearest rank): a "quiet" run. On a shared host, noise only
/// ever adds time (a neighbour's memory traffic, a preemption), and here it comes and goes
/// from one run to the next, so a low percentile is the code's own time where a median lands
/// on whichever mode the host happened to be in more often. NaN when empty.
pub fn quiet(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 10]
}

/// Both CPUs' view of how the guest places them: what the hypervisor shows, which need not be
/// the host's truth.
pub fn topology(ctx: &Ctx) -> String {
    let read = |cpu: usize, f: &str| {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{f}"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "?".to_string())
    };
    let one = |cpu: usize| {
        format!(
            "CPU {cpu}: package {}, core {}, SMT siblings {}",
            read(cpu, "physical_package_id"),
            read(cpu, "core_id"),
            read(cpu, "thread_siblings_list")
        )
    };
    format!("{}; {}", one(ctx.cpu), one(ctx.other_cpu))
}

#[cfg(test)]
pub(crate) fn test_ctx() -> Ctx {
    Ctx {
        size: crate::Size::Small,
        tsc: crate::harness::Tsc::calibrate(std::time::Duration::from_millis(5)),
        cpu: 0,
        other_cpu: 1,
        root: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_that_cannot_pin_is_reported_not_waited_for() {
        let mut ctx = test_ctx();
        ctx.other_cpu = 100_000;
        let start = Start::default();
        std::thread::scope(|s| {
            let h = s.spawn(|| start.worker(&ctx));
            assert!(!start.ready());
            assert!(join(h).is_err());
        });
    }

    #[test]
    fn quiet_is_the_tenth_percentile() {
        let v: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        assert_eq!(quiet(&v), 2.0);
        assert_eq!(quiet(&[5.0]), 5.0);
        assert!(quiet(&[]).is_nan());
    }

    #[test]
    fn the_generator_is_deterministic_and_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            let u = a.unit();
            assert!((0.0..1.0).contains(&u));
            assert_eq!(u.to_bits(), b.unit().to_bits());
        }
    }
}
