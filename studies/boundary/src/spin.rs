//! Spin-then-block I/O: the latency option of both ends.
//!
//! A blocking read that finds no data puts the thread to sleep, and the reply's arrival has to
//! wake it: on a virtual machine that wake-up is most of a small round trip. With a spin budget
//! the socket is non-blocking and a read that finds nothing is retried for up to the budget
//! (each retry a system call, no sleep), then falls back to one blocking read, so an idle
//! connection costs a core for at most the budget, not forever. Zero budget: plain blocking I/O.
//! Every few retries the thread yields, so a peer scheduled on the same core still gets to run.
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use crate::stream::Stream;

/// Empty reads between two yields of the core.
const YIELD_EVERY: u32 = 16;

/// A stream that spins up to `budget` before it blocks.
#[derive(Debug)]
pub(crate) struct Spin {
    inner: Stream,
    budget: Duration,
    nonblocking: bool,
}

impl Spin {
    pub(crate) fn new(inner: Stream, budget: Duration) -> io::Result<Self> {
        let nonblocking = !budget.is_zero();
        inner.set_nonblocking(nonblocking)?;
        Ok(Self {
            inner,
            budget,
            nonblocking,
        })
    }

    pub(crate) fn set_budget(&mut self, budget: Duration) -> io::Result<()> {
        let nonblocking = !budget.is_zero();
        self.inner.set_nonblocking(nonblocking)?;
        self.budget = budget;
        self.nonblocking = nonblocking;
        Ok(())
    }

    pub(crate) const fn get_ref(&self) -> &Stream {
        &self.inner
    }

    /// Runs `op` until it does not say `WouldBlock`: spinning within the budget, then once
    /// more in blocking mode.
    fn retry<T>(&mut self, mut op: impl FnMut(&mut Stream) -> io::Result<T>) -> io::Result<T> {
        if !self.nonblocking {
            return op(&mut self.inner);
        }
        let start = Instant::now();
        let mut tries = 0_u32;
        loop {
            match op(&mut self.inner) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if start.elapsed() >= self.budget {
                        self.inner.set_nonblocking(false)?;
                        let r = op(&mut self.inner);
                        self.inner.set_nonblocking(true)?;
                        return r;
                    }
                    // Now and then a yield: when the peer's thread shares this core (the
                    // scheduler does that at first), a pure spin would hold the core the peer
                    // needs for the whole budget. Not every time: a yield is a system call,
                    // and on a core of its own the spin should notice the data at once.
                    tries += 1;
                    if tries.is_multiple_of(YIELD_EVERY) {
                        std::thread::yield_now();
                    } else {
                        std::hint::spin_loop();
                    }
                }
                r => return r,
            }
        }
    }
}

impl Read for Spin {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.retry(|s| s.read(buf))
    }
}

impl Write for Spin {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.retry(|s| s.write(buf))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
