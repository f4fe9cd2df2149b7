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
