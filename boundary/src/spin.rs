//! Spin-then-block I/O: the latency option of both ends.
//!
//! A blocking read that finds no data puts the thread to sleep, and the reply's arrival has to
//! wake it: on a virtual machine that wake-up is most of a small round trip. With a spin budget
//! the socket is non-blocking and a read that finds nothing is retried for up to the budget
//! (each retry a system call, no sleep), then falls back to one blocking read, so an idle
//! connection costs a core for at most the budget, not forever. Zero budget: plain blocking I/O.
use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use crate::server::Stream;

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
        loop {
            match op(&mut self.inner) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if start.elapsed() >= self.budget {
                        self.inner.set_nonblocking(false)?;
                        let r = op(&mut self.inner);
                        self.inner.set_nonblocking(true)?;
                        return r;
                    }
                    std::hint::spin_loop();
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
