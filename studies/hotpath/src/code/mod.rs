//! The study's code-level experiments: how the program itself is written (dispatch, type tests,
//! allocation, data layout, moves), and how data and threads meet (false sharing, array of
//! structs vs struct of arrays and SIMD, the hand-off between two threads), each measured
//! beside the study's C++ figure.
//!
//! The two-thread experiments pin one thread to [`Ctx::cpu`] (the calling thread, which
//! measures) and one to [`Ctx::other_cpu`], started together through [`Start`].

pub mod alloc;
pub mod bounds;
pub mod dispatch;
pub mod false_sharing;
pub mod hotcold;
pub mod layout;
pub mod moves;
pub mod panics;
pub mod queues;
pub mod typetest;

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

/// SplitMix64: a small, seedable generator for the experiments' pre-generated random sequences
/// (call sites, message kinds, which order to free), so every variant sees the same sequence
/// and no generator runs inside a timed region.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n > 0`; the bias of a 64-bit multiply-shift is below 2⁻³²).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
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
    fn the_generator_is_deterministic_and_stays_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            let x = a.below(10);
            assert_eq!(x, b.below(10));
            assert!(x < 10);
        }
        let mut seen = [false; 4];
        let mut r = Rng::new(1);
        for _ in 0..100 {
            seen[r.below(4)] = true;
        }
        assert_eq!(seen, [true; 4]);
    }

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
}
