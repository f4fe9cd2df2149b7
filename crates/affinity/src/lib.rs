//! Pinning the calling thread to one CPU, for every measured loop of the lab (trader, replay,
//! floor, the boundary study's server and client).
#![forbid(unsafe_code)]

use std::io;

/// Pins the calling thread to `cpu` (`sched_setaffinity` on thread id 0). Fails with
/// `EINVAL` when `cpu` is out of range or not in this process's allowed set (a cpuset, a
/// `taskset`), which the error message says.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).map_err(|_| out_of_range(cpu))?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(|e| {
        if e == nix::errno::Errno::EINVAL {
            out_of_range(cpu)
        } else {
            io::Error::from(e)
        }
    })
}

/// The CPUs the calling thread may run on now, in order.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))?;
    Ok((0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect())
}

/// Moves the calling thread off the CPUs it may run on now, onto the rest of `allowed` (the
/// process's CPUs before anything was pinned, from [`allowed_cpus`]): for a housekeeping
/// thread spawned by a pinned thread, which inherits its pinning, so it never shares the
/// pinned thread's core and never leaves the user's `taskset` or cpuset. Returns `false`,
/// changing nothing, when no CPU of `allowed` is left over, or the kernel allows none of them
/// here.
pub fn move_off_current_cpus(allowed: &[usize]) -> io::Result<bool> {
    let me = nix::unistd::Pid::from_raw(0);
    let now = nix::sched::sched_getaffinity(me)?;
    let mut other = nix::sched::CpuSet::new();
    let mut any = false;
    for &cpu in allowed {
        if cpu < nix::sched::CpuSet::count() && !now.is_set(cpu).unwrap_or(true) {
            other.set(cpu).map_err(io::Error::from)?;
            any = true;
        }
    }
    if !any {
        return Ok(false);
    }
    match nix::sched::sched_setaffinity(me, &other) {
        Ok(()) => Ok(true),
        // None of them is in this task's cpuset.
        Err(nix::errno::Errno::EINVAL) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn out_of_range(cpu: usize) -> io::Error {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "CPU {cpu} does not exist or is not allowed here (this process may use {cpus}; see nproc)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_that_does_not_exist_is_refused_with_a_reason() {
        let e = pin_current_thread(100_000).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("CPU 100000"), "{e}");
    }

    #[test]
    fn a_thread_moved_off_its_cpu_runs_on_the_rest_of_the_allowed_ones() {
        let allowed = allowed_cpus().expect("allowed");
        let first = *allowed.first().expect("an allowed CPU");
        std::thread::spawn(move || {
            pin_current_thread(first).expect("pin");
            let moved = move_off_current_cpus(&allowed).expect("move");
            let now = allowed_cpus().expect("allowed now");
            if moved {
                assert_eq!(now, allowed[1..], "every allowed CPU but the first");
            } else {
                assert_eq!(allowed.len(), 1, "only one CPU allowed, so it stays");
                assert_eq!(now, [first]);
            }
            // Nothing left over: it stays where it is.
            pin_current_thread(first).expect("pin");
            assert!(!move_off_current_cpus(&[first]).expect("move"));
            assert_eq!(allowed_cpus().expect("allowed now"), [first]);
        })
        .join()
        .expect("the thread");
    }

    #[test]
    fn pinning_to_an_allowed_cpu_works() {
        // On a thread of its own, so the test runner's threads keep their affinity.
        let cpu = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
            .ok()
            .and_then(|set| {
                (0..nix::sched::CpuSet::count()).find(|&c| set.is_set(c).unwrap_or(false))
            })
            .expect("some CPU is allowed");
        std::thread::spawn(move || pin_current_thread(cpu))
            .join()
            .unwrap()
            .unwrap();
    }
}
