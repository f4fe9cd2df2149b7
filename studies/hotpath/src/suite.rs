//! The experiments, in the order the suite runs them.

use crate::Ctx;
use crate::code;
use crate::report::{Level, Outcome};

/// One experiment: its id (for `--only`), level and entry point.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub id: &'static str,
    pub level: Level,
    /// One line for `--list` and the progress line.
    pub about: &'static str,
    pub run: fn(&Ctx) -> anyhow::Result<Outcome>,
}

/// Every experiment. `hotpath run --only a,b` picks by id.
pub static SUITE: &[Spec] = &[
    Spec {
        id: "wakeup",
        level: Level::System,
        about: "wake-up latency: CFS vs SCHED_FIFO vs spinning, idle and loaded; cyclictest beside",
        run: crate::system::wakeup::run,
    },
    Spec {
        id: "faults",
        level: Level::System,
        about: "page faults: first touch vs MAP_POPULATE, MADV_POPULATE_WRITE, mlock",
        run: crate::system::faults::run,
    },
    Spec {
        id: "hugepages",
        level: Level::System,
        about: "random chase on 4 KiB vs THP vs HugeTLB pages; THP's allocation tail",
        run: crate::system::hugepages::run,
    },
    Spec {
        id: "cstates",
        level: Level::System,
        about: "a blocked wake-up with the guest's idle halting at once, polling first, or never halting",
        run: crate::system::cstates::run,
    },
    Spec {
        id: "memory",
        level: Level::Code,
        about: "memory latency curve: sequential vs random chase, 4 KiB to 1 GiB",
        run: crate::memory::run,
    },
    Spec {
        id: "dispatch",
        level: Level::Code,
        about: "generic vs enum vs &dyn vs Box<dyn FnMut> vs fn pointer, one type and four at random",
        run: code::dispatch::run,
    },
    Spec {
        id: "typetest",
        level: Level::Code,
        about: "Any::downcast_ref vs enum match vs a tag byte, on a mixed ITCH-like stream",
        run: code::typetest::run,
    },
    Spec {
        id: "bounds",
        level: Level::Code,
        about: "the feed parse with checked indexing, split/fixed-size arrays, get_unchecked",
        run: code::bounds::run,
    },
    Spec {
        id: "panics",
        level: Level::Code,
        about: "validating a message: Result vs assert!/panic! vs Option, none and 1 % bad",
        run: code::panics::run,
    },
    Spec {
        id: "alloc",
        level: Level::Code,
        about: "an order allocated per op: glibc, mimalloc, jemalloc, slab pool, bumpalo arena",
        run: code::alloc::run,
    },
    Spec {
        id: "hotcold",
        level: Level::Code,
        about: "scanning orders' hot fields: full structs vs a split hot array",
        run: code::hotcold::run,
    },
    Spec {
        id: "moves",
        level: Level::Code,
        about: "Vec growth: moving handles vs copying elements (C++ without noexcept moves)",
        run: code::moves::run,
    },
    Spec {
        id: "false-sharing",
        level: Level::Code,
        about: "two threads' counters in one cache line vs padded to 64 B and 128 B",
        run: code::false_sharing::run,
    },
    Spec {
        id: "aos-soa",
        level: Level::Code,
        about: "a risk loop over positions: array of structs vs struct of arrays",
        run: code::layout::run_aos_soa,
    },
    Spec {
        id: "simd",
        level: Level::Code,
        about: "the SoA risk loop scalar, SSE2 and through pulp's AVX2/AVX-512 dispatch",
        run: code::layout::run_simd,
    },
    Spec {
        id: "queues",
        level: Level::Code,
        about: "thread hand-off: SPSC ring, channels, ArrayQueue, Mutex<VecDeque>; the CPU floor",
        run: code::queues::run,
    },
];

/// The specs named by `only` (all when empty), or an error naming the unknown ids and the
/// known ones.
pub fn select(only: &[String]) -> anyhow::Result<Vec<Spec>> {
    if only.is_empty() {
        return Ok(SUITE.to_vec());
    }
    let unknown: Vec<&str> = only
        .iter()
        .map(String::as_str)
        .filter(|id| !SUITE.iter().any(|s| s.id == *id))
        .collect();
    if !unknown.is_empty() {
        let known: Vec<&str> = SUITE.iter().map(|s| s.id).collect();
        anyhow::bail!(
            "unknown experiment(s) {}; known: {} (and pgo, which `cargo xtask hotpath` runs)",
            unknown.join(", "),
            known.join(", ")
        );
    }
    Ok(SUITE
        .iter()
        .filter(|s| only.iter().any(|o| o == s.id))
        .copied()
        .collect())
}

/// Runs `specs` one after the other into `report`, each failure recorded, until `stop`.
pub fn run_each(
    specs: &[Spec],
    ctx: &Ctx,
    stop: &std::sync::atomic::AtomicBool,
    report: &mut crate::report::Report,
) -> anyhow::Result<()> {
    let n = specs.len();
    for (i, s) in specs.iter().enumerate() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!(
                "interrupted: the experiments before {} are in the report",
                s.id
            );
            report
                .skipped
                .push((s.id.to_string(), "interrupted".into()));
            continue;
        }
        eprintln!("[{}/{n}] {}: {}", i + 1, s.id, s.about);
        let t = std::time::Instant::now();
        match (s.run)(ctx) {
            Ok(out) => {
                eprintln!("    done in {:.1} s", t.elapsed().as_secs_f64());
                report.outcomes.push(out);
            }
            Err(e) => {
                eprintln!("    failed: {e:#}");
                report.skipped.push((s.id.to_string(), format!("{e:#}")));
            }
        }
        // Each experiment leaves the thread as it found it: pinned to the measured CPU.
        ctx.pin()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_selectable() {
        let mut ids: Vec<&str> = SUITE.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), SUITE.len());
        let e = select(&["nope".to_string()]).unwrap_err().to_string();
        assert!(e.contains("unknown experiment(s) nope"), "{e}");
    }
}
