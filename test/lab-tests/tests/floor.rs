//! The CPU floor binary: a count or a duration, a JSON summary, clear errors.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use std::process::Command;
use {
    afxdp as _, engine as _, inject as _, netns as _, paths as _, serde as _, soup as _,
    trader as _, trader_core as _, wire as _, xdp_common as _,
};

use results::FloorReport;

fn floor(args: &[&str]) -> std::process::Output {
    Command::new(lab_tests::bin("floor"))
        .args(args)
        .output()
        .expect("run floor")
}

/// The report the floor printed on stdout.
fn report(out: &std::process::Output) -> FloorReport {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not a FloorReport ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The floor pins to CPUs 0 and 1 by default: both must be ours to run on.
fn two_cpus() -> bool {
    nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0))
        .is_ok_and(|set| set.is_set(0).unwrap_or(false) && set.is_set(1).unwrap_or(false))
}

#[test]
fn a_count_measures_all_but_the_warmup_tenth() {
    if !two_cpus() {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let out = floor(&["--iterations", "10000"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&out);
    assert_eq!(r.round_trip.count, 9000);
    assert!(r.round_trip.min_us > 0.0);
}

#[test]
fn a_duration_stops_on_time_and_measures_after_the_warmup() {
    if !two_cpus() {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let out = floor(&["--seconds", "0.3"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = report(&out);
    assert!((0.3..5.0).contains(&r.seconds), "ran {} s", r.seconds);
    assert!(r.round_trip.count > 0);
}

#[test]
fn bad_arguments_say_what_is_wrong() {
    let out = floor(&["--seconds=0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a number of seconds"));
    let out = floor(&["--seconds", "1", "--iterations", "5"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
    let out = floor(&["--cpus", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("exactly two CPUs"));
    let out = floor(&["--cpus", "0,0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("two different CPUs"));
    let out = floor(&["--iterations", "0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--iterations"));
}

#[test]
fn a_cpu_it_cannot_have_is_an_error_not_a_hang() {
    // CPU 1023 fits a CPU set but no machine this runs on has it.
    for cpus in ["0,1023", "1023,0"] {
        let out = floor(&["--cpus", cpus, "--iterations", "1000"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "--cpus {cpus}: {stderr}");
        assert!(stderr.contains("CPU 1023"), "--cpus {cpus}: {stderr}");
    }
}
