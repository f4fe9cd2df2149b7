//! Entering a network namespace from inside a process.
//!
//! `setns(CLONE_NEWNET)` changes the namespace of the calling *thread* only, so the lab's
//! tests and tools put each side on its own thread: sockets, interface lookups and XDP
//! attachment made on that thread see the namespace's interfaces.
use std::{fs::File, os::fd::AsFd};

use nix::sched::{CloneFlags, setns};

use crate::{Error, NETNS_RUN_DIR};

/// Restores the thread's previous network namespace when dropped.
#[derive(Debug)]
pub struct NetnsGuard {
    previous: File,
}

impl Drop for NetnsGuard {
    fn drop(&mut self) {
        if let Err(e) = setns(self.previous.as_fd(), CloneFlags::CLONE_NEWNET) {
            eprintln!("warning: failed to return to the previous network namespace: {e}");
        }
    }
}

/// Moves the calling thread into the named namespace (made by `ip netns add`).
pub fn enter(name: &str) -> Result<NetnsGuard, Error> {
    let previous = File::open("/proc/thread-self/ns/net").map_err(|source| Error::Io {
        op: "opening /proc/thread-self/ns/net".into(),
        source,
    })?;
    let path = format!("{NETNS_RUN_DIR}/{name}");
    let target = File::open(&path).map_err(|source| Error::Io {
        op: format!("opening namespace {path} (is the lab up?)"),
        source,
    })?;
    setns(target.as_fd(), CloneFlags::CLONE_NEWNET).map_err(|e| Error::Io {
        op: format!("setns into {name}"),
        source: e.into(),
    })?;
    Ok(NetnsGuard { previous })
}

/// Runs `f` on a new thread inside the named namespace and returns what it returns. A panic
/// in `f` is resumed on the caller's thread.
pub fn in_netns<T, F>(name: &str, f: F) -> Result<T, Error>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let name = name.to_owned();
    let handle = std::thread::Builder::new()
        .name(format!("netns-{name}"))
        .spawn(move || -> Result<T, Error> {
            let _guard = enter(&name)?;
            Ok(f())
        })
        .map_err(|source| Error::Io {
            op: "spawning a thread".into(),
            source,
        })?;
    match handle.join() {
        Ok(r) => r,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}
