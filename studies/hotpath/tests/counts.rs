//! The counts end to end: `hotpath count` under cachegrind, twice, subtracted. Instruction
//! counts are deterministic, so what they show can be asserted: a generic call runs fewer
//! instructions than a `&dyn` call to one of four types at random. Skips (with a line saying
//! so) where valgrind isn't installed.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {
    affinity as _, anyhow as _, bumpalo as _, clap as _, crossbeam_channel as _,
    crossbeam_queue as _, crossbeam_utils as _, hdrhistogram as _, libc as _, mimalloc as _,
    netns as _, nix as _, paths as _, pulp as _, results as _, rtrb as _, serde as _,
    signal_hook as _, slab as _, tikv_jemallocator as _, trader_core as _, tuning as _,
};

use std::path::Path;
use std::process::Command;

use hotpath::counts::{Cachegrind, Ran, per_element};

fn valgrind() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Runs dispatch's `variant` `ops` times under cachegrind: what it printed and the totals.
fn counted(dir: &Path, variant: &str, ops: u64) -> (Ran, [u64; 4]) {
    let file = dir.join(format!("{variant}-{ops}.cachegrind"));
    let out = Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=yes",
            "--branch-sim=yes",
            "-q",
        ])
        .arg(format!("--cachegrind-out-file={}", file.display()))
        .arg(env!("CARGO_BIN_EXE_hotpath"))
        .args(["count", "--experiment", "dispatch", "--variant", variant])
        .args(["--ops", &ops.to_string(), "--size", "small", "--cpu", "0"])
        .output()
        .expect("running valgrind");
    assert!(
        out.status.success(),
        "{variant}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ran: Ran = serde_json::from_str(stdout.lines().last().unwrap_or("")).expect(&stdout);
    let cg = Cachegrind::parse(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(
        cg.desc.iter().any(|d| d.starts_with("D1 cache")),
        "{:?}",
        cg.desc
    );
    (ran, cg.figures())
}

#[test]
fn a_generic_call_counts_fewer_instructions_than_a_four_type_dyn_call() {
    if !valgrind() {
        eprintln!("skipped: valgrind is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let n = 2_000;
    let per_op = |variant: &str| {
        let (one, a) = counted(dir.path(), variant, n);
        let (two, b) = counted(dir.path(), variant, 2 * n);
        assert_eq!((one.ops, two.ops), (n, 2 * n));
        assert_ne!(
            one.result, two.result,
            "the result depends on the work done"
        );
        per_element(a, b, n, one.elements)
    };
    let generic = per_op("generic");
    let dyn_4 = per_op("dyn-4");
    assert!(generic[0] > 0.0, "{generic:?}");
    assert!(
        generic[0] < dyn_4[0],
        "generic {} instructions per call, &dyn (4 types) {}",
        generic[0],
        dyn_4[0]
    );
    // Four targets at random: cachegrind's indirect-branch predictor (the last target) misses
    // about 3 calls in 4; the one-type call site, never once warm.
    assert!(dyn_4[3] > 0.5 && generic[3] < 0.05, "{dyn_4:?} {generic:?}");
}
