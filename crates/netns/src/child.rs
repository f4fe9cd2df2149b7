//! Stopping processes the lab started: the one policy (SIGTERM, a grace period, then SIGKILL)
//! for a child the caller owns ([`ChildGuard`]) and for whatever a killed run left inside a
//! lab's namespaces ([`crate::stop_lab_processes`]).
use std::{
    process::{Child, ExitStatus},
    time::{Duration, Instant},
};

use nix::{sys::signal::kill, unistd::Pid};

pub use nix::sys::signal::Signal;

use crate::Error;

/// How often a stop polls whether the processes are gone.
const POLL: Duration = Duration::from_millis(20);

/// Sends `signal` to process `pid`.
pub fn signal(pid: u32, signal: Signal) -> Result<(), Error> {
    let target = i32::try_from(pid).map_err(|_| Error::Io {
        op: format!("signalling pid {pid}"),
        source: std::io::Error::from(std::io::ErrorKind::InvalidInput),
    })?;
    kill(Pid::from_raw(target), signal).map_err(|e| Error::Io {
        op: format!("sending {signal} to pid {pid}"),
        source: e.into(),
    })
}

/// The stop policy's first half: SIGTERM to each of `pids` (one already gone is no error),
/// then up to `grace` for `running` to say they have all exited. Returns whether they did;
/// what is left is the caller's to SIGKILL.
pub(crate) fn terminate_within(
    pids: &[u32],
    grace: Duration,
    mut running: impl FnMut() -> bool,
) -> bool {
    for &pid in pids {
        let _ = signal(pid, Signal::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    while running() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(POLL);
    }
    true
}

/// A child process that cannot outlive its owner: dropping the guard stops it (SIGTERM, up to
/// [`ChildGuard::grace`] to exit cleanly and write its results, then SIGKILL) and reaps it,
/// also while a test panics. For the lab's tests and xtask's benchmarks alike.
#[derive(Debug)]
pub struct ChildGuard {
    child: Child,
    grace: Duration,
}

impl ChildGuard {
    /// The grace period a child gets between SIGTERM and SIGKILL unless told otherwise.
    pub const DEFAULT_GRACE: Duration = Duration::from_secs(3);

    /// Guards `child`, with [`ChildGuard::DEFAULT_GRACE`].
    pub fn new(child: Child) -> Self {
        ChildGuard {
            child,
            grace: Self::DEFAULT_GRACE,
        }
    }

    /// The same guard with another grace period.
    pub fn with_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// The child's pid.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The child, e.g. to take its piped stdout.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Sends the child a signal (SIGINT, SIGTERM, SIGKILL, ...).
    pub fn signal(&self, sig: Signal) -> Result<(), Error> {
        signal(self.child.id(), sig)
    }

    /// Waits up to `within` for the child to exit; `None` if it is still running.
    pub fn wait_timeout(&mut self, within: Duration) -> Result<Option<ExitStatus>, Error> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            std::thread::sleep(POLL);
        }
    }

    /// Stops the child now (SIGTERM, the grace period, SIGKILL) and returns how it exited.
    pub fn stop(&mut self) -> Result<ExitStatus, Error> {
        if let Some(status) = self.try_wait()? {
            return Ok(status);
        }
        let pid = self.child.id();
        let child = &mut self.child;
        let exited = terminate_within(&[pid], self.grace, || {
            child.try_wait().is_ok_and(|s| s.is_none())
        });
        if !exited {
            let _ = self.child.kill();
        }
        self.child.wait().map_err(|source| Error::Io {
            op: format!("waiting for pid {pid}"),
            source,
        })
    }

    fn try_wait(&mut self) -> Result<Option<ExitStatus>, Error> {
        let pid = self.child.id();
        self.child.try_wait().map_err(|source| Error::Io {
            op: format!("checking on pid {pid}"),
            source,
        })
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("warning: failed to stop pid {}: {e}", self.child.id());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn stop_sends_sigterm_first_and_a_dropped_guard_stops_its_child() {
        let spawn = || ChildGuard::new(Command::new("sleep").arg("60").spawn().unwrap());
        let mut guard = spawn();
        let status = guard.stop().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(Signal::SIGTERM as i32)
        );
        // Reaped once: stopping again reports the same exit.
        assert_eq!(guard.stop().unwrap(), status);
        let started = Instant::now();
        drop(spawn());
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "SIGTERM, not the grace"
        );
    }

    #[test]
    fn a_child_that_ignores_sigterm_is_killed_after_the_grace() {
        let child = Command::new("sh")
            .args(["-c", "trap '' TERM; echo ready; exec sleep 60"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut guard = ChildGuard::new(child).with_grace(Duration::from_millis(200));
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(guard.child_mut().stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(guard.wait_timeout(Duration::from_millis(50)).unwrap(), None);
        let status = guard.stop().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(Signal::SIGKILL as i32)
        );
    }

    #[test]
    fn a_child_that_exits_is_reported_as_it_exited() {
        let mut guard = ChildGuard::new(Command::new("true").spawn().unwrap());
        let status = guard.wait_timeout(Duration::from_secs(5)).unwrap();
        assert!(status.is_some_and(|s| s.success()));
        assert!(guard.stop().unwrap().success());
    }
}
