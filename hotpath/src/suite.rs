//! The experiments, in the order the suite runs them.

use crate::Ctx;
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
        id: "false-sharing",
        level: Level::Code,
        about: "two threads' counters in one cache line vs padded to 64 B and 128 B",
        run: crate::code2::false_sharing::run,
    },
    Spec {
        id: "aos-soa",
        level: Level::Code,
        about: "a risk loop over positions: array of structs vs struct of arrays",
        run: crate::code2::layout::run_aos_soa,
    },
    Spec {
        id: "simd",
        level: Level::Code,
        about: "the SoA risk loop scalar, SSE2 and through pulp's AVX2/AVX-512 dispatch",
        run: crate::code2::layout::run_simd,
    },
    Spec {
        id: "queues",
        level: Level::Code,
        about: "thread hand-off: SPSC ring, channels, ArrayQueue, Mutex<VecDeque>; the CPU floor",
        run: crate::code2::queues::run,
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
            "unknown experiment(s) {}; known: {}",
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
