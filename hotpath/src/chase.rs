//! Pointer chasing: a chain of dependent loads through a buffer, one load per cache line.
//!
//! A buffer of `u64` words is cut into 64-byte slots (8 words). A chain lives in one word of
//! every slot (its "lane"): that word holds the index of the word to load next. Walking the
//! chain is `i = buf[i]` over and over, so every load waits for the one before it and the
//! time per step is the memory's latency at that working-set size, not its bandwidth. The
//! random chain is one cycle through every slot (Sattolo's algorithm), so a walk of `n` steps
//! visits every slot exactly once and neither the caches nor the prefetcher get a shortcut;
//! the sequential chain visits the slots in address order, which the prefetcher follows.
//! Both the memory curve (`crate::memory`) and the huge-pages experiment
//! (`crate::system::hugepages`) walk these chains.

/// Bytes per slot: one cache line on every x86-64 and most arm64 cores.
pub const LINE: usize = 64;
/// `u64` words per slot.
pub const WORDS_PER_LINE: usize = LINE / 8;
/// The lane random chains use.
pub const RANDOM_LANE: usize = 0;
/// The lane sequential chains use (so one buffer can hold both chains over the same pages).
pub const SEQUENTIAL_LANE: usize = 1;

/// SplitMix64 (Steele, Lea and Flood 2014): a small, fast, seedable generator, good enough to
/// shuffle and the same on every run with the same seed.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (Lemire's multiply-shift; the bias is below 2⁻³² for the sizes here).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// A random cyclic permutation of `0..n`: following `i → p[i]` from any start visits all `n`
/// elements before it comes back (Sattolo 1986: Fisher-Yates with `j < i`, never `j = i`).
pub fn cyclic_permutation(n: usize, seed: u64) -> Vec<u32> {
    assert!(
        u32::try_from(n).is_ok(),
        "{n} slots don't fit the u32 permutation"
    );
    let mut p: Vec<u32> = (0..n as u32).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..n).rev() {
        let j = rng.below(i as u64) as usize;
        p.swap(i, j);
    }
    p
}

/// Slots in a buffer of `words` words.
pub fn slots(words: usize) -> usize {
    words / WORDS_PER_LINE
}

/// The word a walk in `lane` starts at (slot 0).
pub fn start(lane: usize) -> usize {
    lane
}

/// Writes the chain `slot i → slot perm[i]` into `lane` of `buf`.
pub fn link(buf: &mut [u64], lane: usize, perm: &[u32]) {
    assert!(lane < WORDS_PER_LINE);
    assert_eq!(
        perm.len(),
        slots(buf.len()),
        "one permutation entry per slot"
    );
    for (i, &next) in perm.iter().enumerate() {
        buf[i * WORDS_PER_LINE + lane] = (next as usize * WORDS_PER_LINE + lane) as u64;
    }
}

/// Writes a random single-cycle chain (seeded) into `lane` of `buf`.
pub fn link_random(buf: &mut [u64], lane: usize, seed: u64) {
    let perm = cyclic_permutation(slots(buf.len()), seed);
    link(buf, lane, &perm);
}

/// Writes the chain `slot i → slot i + 1` (the last back to 0) into `lane` of `buf`.
pub fn link_sequential(buf: &mut [u64], lane: usize) {
    assert!(lane < WORDS_PER_LINE);
    let n = slots(buf.len());
    for i in 0..n {
        buf[i * WORDS_PER_LINE + lane] = (((i + 1) % n) * WORDS_PER_LINE + lane) as u64;
    }
}

/// Takes `steps` dependent loads along the chain from word `from`; returns where it ended,
/// which is both the next walk's start and a checksum (a walk that skipped a load would end
/// elsewhere). Not inlined, so every caller times the same loop.
#[inline(never)]
pub fn walk(buf: &[u64], from: usize, steps: usize) -> usize {
    let mut i = from;
    for _ in 0..steps {
        i = buf[i] as usize;
    }
    i
}

/// Follows the chain in `lane` from slot 0 and returns how many slots it visits before it is
/// back (`None` if it never comes back within the slot count, or visits a slot twice first).
pub fn cycle_length(buf: &[u64], lane: usize) -> Option<usize> {
    let n = slots(buf.len());
    let mut seen = vec![false; n];
    let mut i = start(lane);
    for step in 1..=n {
        let slot = i / WORDS_PER_LINE;
        if seen[slot] {
            return None;
        }
        seen[slot] = true;
        i = buf[i] as usize;
        if i == start(lane) {
            return (step == n).then_some(step);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sattolo_gives_one_cycle_through_every_element() {
        for n in [1usize, 2, 3, 17, 1000, 4096] {
            let p = cyclic_permutation(n, 42 + n as u64);
            let mut seen = vec![false; n];
            let mut i = 0usize;
            for _ in 0..n {
                assert!(!seen[i], "n={n}: element {i} visited twice");
                seen[i] = true;
                i = p[i] as usize;
            }
            assert_eq!(i, 0, "n={n}: the walk is back at the start after n steps");
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_chain_and_another_seed_another() {
        assert_eq!(cyclic_permutation(500, 7), cyclic_permutation(500, 7));
        assert_ne!(cyclic_permutation(500, 7), cyclic_permutation(500, 8));
    }

    #[test]
    fn both_lanes_of_one_buffer_are_single_cycles_and_walks_come_back() {
        let n = 1024;
        let mut buf = vec![0u64; n * WORDS_PER_LINE];
        link_random(&mut buf, RANDOM_LANE, 3);
        link_sequential(&mut buf, SEQUENTIAL_LANE);
        assert_eq!(cycle_length(&buf, RANDOM_LANE), Some(n));
        assert_eq!(cycle_length(&buf, SEQUENTIAL_LANE), Some(n));
        // A whole cycle (and any multiple) ends where it started.
        assert_eq!(walk(&buf, start(RANDOM_LANE), 3 * n), start(RANDOM_LANE));
        assert_eq!(
            walk(&buf, start(SEQUENTIAL_LANE), 5),
            5 * WORDS_PER_LINE + 1
        );
        // Walks compose: a + b steps end where a then b steps end.
        let a = walk(&buf, 0, 100);
        assert_eq!(walk(&buf, a, 23), walk(&buf, 0, 123));
    }

    #[test]
    fn a_broken_chain_is_no_cycle() {
        let mut buf = vec![0u64; 4 * WORDS_PER_LINE];
        link_sequential(&mut buf, 0);
        buf[WORDS_PER_LINE] = 0; // slot 1 jumps back to 0: slots 2 and 3 are never reached
        assert_eq!(cycle_length(&buf, 0), None);
    }

    #[test]
    fn below_stays_below() {
        let mut r = SplitMix64::new(1);
        assert!((0..10_000).all(|_| r.below(7) < 7));
    }
}
