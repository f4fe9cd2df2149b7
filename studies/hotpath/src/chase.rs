//! Pointer chasing: a chain of dependent loads through a buffer, one load per cache line.
//!
//! A buffer of `u64` words is cut into 64-byte slots (8 words). A chain lives in one word of
//! every slot (its "lane"): that word holds the index of the word to load next. Walking the
//! chain is `i = buf[i]` over and over, so every load waits for the one before it and the
//! time per step is the memory's latency at that working-set size, not its bandwidth. The
//! random chain is one cycle through every slot in a random order ([`random_cycle`]), so a walk of `n` steps
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

/// Lines per 4 KiB page.
pub const LINES_PER_PAGE: usize = 4096 / LINE;

/// Fisher-Yates.
fn shuffle<T>(v: &mut [T], rng: &mut SplitMix64) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
}

/// A random order in which to visit all `n` slots once: the chain links each slot to the next
/// in this order and the last back to the first, so it is one cycle through all of them.
///
/// Built in 64 laps: each lap visits every 4 KiB page once, in a fresh random page order, at
/// a line of that page not visited yet (each page's lines in their own random order). So
/// every step lands on a random page at a random line, as with a uniformly random cycle,
/// but building it shuffles only page-sized arrays (a uniform shuffle of 16 M slots for a
/// 1 GiB set is 16 M cache-missing swaps: seconds; this takes a fraction of that).
pub fn random_cycle(n: usize, seed: u64) -> Vec<u32> {
    assert!(
        u32::try_from(n).is_ok(),
        "{n} slots don't fit the u32 order"
    );
    let mut rng = SplitMix64::new(seed);
    let mut within: Vec<u8> = (0..n).map(|s| (s % LINES_PER_PAGE) as u8).collect();
    for page in within.chunks_mut(LINES_PER_PAGE) {
        shuffle(page, &mut rng);
    }
    let mut pages: Vec<u32> = (0..n.div_ceil(LINES_PER_PAGE) as u32).collect();
    let mut order = Vec::with_capacity(n);
    for lap in 0..LINES_PER_PAGE {
        shuffle(&mut pages, &mut rng);
        for &p in &pages {
            let first = p as usize * LINES_PER_PAGE;
            if lap < (n - first).min(LINES_PER_PAGE) {
                order.push((first + usize::from(within[first + lap])) as u32);
            }
        }
    }
    order
}

/// Slots in a buffer of `words` words.
pub fn slots(words: usize) -> usize {
    words / WORDS_PER_LINE
}

/// The word a walk in `lane` starts at (slot 0).
pub fn start(lane: usize) -> usize {
    lane
}

/// Writes the chain that visits the slots in `order` (a permutation of the slots) into
/// `lane` of `buf`: each slot links to the next in the order, the last to the first.
pub fn link(buf: &mut [u64], lane: usize, order: &[u32]) {
    assert!(lane < WORDS_PER_LINE);
    assert_eq!(order.len(), slots(buf.len()), "one order entry per slot");
    let Some(&first) = order.first() else {
        return;
    };
    for w in order.windows(2) {
        buf[w[0] as usize * WORDS_PER_LINE + lane] = (w[1] as usize * WORDS_PER_LINE + lane) as u64;
    }
    let last = *order.last().expect("not empty") as usize;
    buf[last * WORDS_PER_LINE + lane] = (first as usize * WORDS_PER_LINE + lane) as u64;
}

/// Writes a random single-cycle chain (seeded) into `lane` of `buf`.
pub fn link_random(buf: &mut [u64], lane: usize, seed: u64) {
    let order = random_cycle(slots(buf.len()), seed);
    link(buf, lane, &order);
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
    fn a_random_cycle_visits_every_slot_once() {
        for n in [1usize, 2, 3, 17, 64, 65, 1000, 4096, 100_000] {
            let order = random_cycle(n, 42 + n as u64);
            assert_eq!(order.len(), n);
            let mut seen = vec![false; n];
            for &s in &order {
                assert!(!seen[s as usize], "n={n}: slot {s} twice");
                seen[s as usize] = true;
            }
            let mut buf = vec![0u64; n * WORDS_PER_LINE];
            link(&mut buf, RANDOM_LANE, &order);
            assert_eq!(cycle_length(&buf, RANDOM_LANE), Some(n), "n={n}");
        }
    }

    #[test]
    fn consecutive_steps_change_page_when_there_are_pages_to_change_to() {
        let n = 64 * LINES_PER_PAGE;
        let order = random_cycle(n, 9);
        let same = order
            .windows(2)
            .filter(|w| w[0] as usize / LINES_PER_PAGE == w[1] as usize / LINES_PER_PAGE)
            .count();
        // Only a lap's boundary can repeat a page: at most one step in 64.
        assert!(same <= LINES_PER_PAGE, "{same} steps stayed on their page");
    }

    #[test]
    fn the_same_seed_gives_the_same_chain_and_another_seed_another() {
        assert_eq!(random_cycle(500, 7), random_cycle(500, 7));
        assert_ne!(random_cycle(500, 7), random_cycle(500, 8));
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
