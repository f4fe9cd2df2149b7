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

/// Moves the calling thread off the CPUs it is allowed now, onto every other CPU: for a
/// housekeeping thread spawned by a pinned thread (which inherits its pinning), so it never
/// shares the pinned thread's core. Returns `false`, changing nothing, when the thread may
/// already run anywhere or there is no other CPU.
pub fn move_off_current_cpus() -> io::Result<bool> {
    let me = nix::unistd::Pid::from_raw(0);
    let now = nix::sched::sched_getaffinity(me)?;
    let mut other = nix::sched::CpuSet::new();
    let mut any = false;
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    for cpu in parse_cpu_list(online.trim()) {
        if cpu < nix::sched::CpuSet::count() && !now.is_set(cpu).unwrap_or(true) {
            other.set(cpu).map_err(io::Error::from)?;
            any = true;
        }
    }
    if !any {
        return Ok(false);
    }
    nix::sched::sched_setaffinity(me, &other)?;
    Ok(true)
}

/// A kernel CPU list (`0-3,8,10-11`) as CPU numbers; malformed parts are skipped.
fn parse_cpu_list(list: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        let mut ends = part.splitn(2, '-').map(|n| n.trim().parse::<usize>());
        match (ends.next(), ends.next()) {
            (Some(Ok(a)), None) => cpus.push(a),
            (Some(Ok(a)), Some(Ok(b))) if a <= b => cpus.extend(a..=b),
            _ => {}
        }
    }
    cpus
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
    fn cpu_lists_parse_as_the_kernel_writes_them() {
        assert_eq!(parse_cpu_list("0-3,8,10-11"), [0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(parse_cpu_list("0"), [0]);
        assert_eq!(parse_cpu_list(""), Vec::<usize>::new());
        assert_eq!(parse_cpu_list("3-1,x,5"), [5]);
    }

    #[test]
    fn a_thread_moved_off_its_cpu_runs_elsewhere_or_stays_when_it_must() {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("online");
        let cpus = parse_cpu_list(online.trim());
        let allowed = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).expect("get");
        let first = *cpus
            .iter()
            .find(|&&c| allowed.is_set(c).unwrap_or(false))
            .expect("an allowed CPU");
        let others = cpus
            .iter()
            .any(|&c| c != first && allowed.is_set(c).unwrap_or(false));
        std::thread::spawn(move || {
            pin_current_thread(first).expect("pin");
            let moved = move_off_current_cpus().expect("move");
            let now = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).expect("get");
            assert_eq!(moved, others);
            assert_eq!(now.is_set(first).expect("in range"), !others);
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
