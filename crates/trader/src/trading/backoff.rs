//! When the order session connects again, on both transports: as a venue expects of a
//! client, not as fast as the loop can. The first try after a connection is lost comes after
//! [`FIRST_NS`]; each try that doesn't log in doubles the wait, up to [`MAX_NS`]; each wait is
//! jittered (half of it fixed, the other half drawn), so many clients cut off together don't
//! come back in step; a login that holds for [`STABLE_NS`] starts the count again (one that
//! drops at once, a gateway that takes logins and then closes, keeps it growing). A gateway that is down for two seconds
//! sees about a dozen SYNs, not the thousands a 1 ms retry would send.

/// The wait before the first try after a loss (ns).
pub const FIRST_NS: u64 = 1_000_000;
/// The longest wait between two tries (ns).
pub const MAX_NS: u64 = 1_000_000_000;
/// How long a login must hold before the waits start over (ns).
pub const STABLE_NS: u64 = 1_000_000_000;

/// The tries since the last login, and the jitter's generator.
#[derive(Debug, Clone)]
pub struct Backoff {
    tries: u32,
    /// Since when the session has been logged in (`None`: it isn't).
    up_since: Option<u64>,
    /// xorshift64* state (never 0).
    state: u64,
}

impl Backoff {
    /// A backoff whose jitter is drawn from `seed` (any value; the clock at start will do).
    pub fn new(seed: u64) -> Backoff {
        Backoff {
            tries: 0,
            up_since: None,
            state: seed | 1,
        }
    }

    /// The wait before the next try (ns), counting it: [`FIRST_NS`] doubled once per try
    /// since the last login, at most [`MAX_NS`], its second half drawn at random.
    pub fn next_wait(&mut self) -> u64 {
        let base = FIRST_NS
            .checked_shl(self.tries)
            .filter(|&b| b <= MAX_NS)
            .unwrap_or(MAX_NS);
        self.tries = self.tries.saturating_add(1);
        let half = base / 2;
        half + self.draw() % (half + 1)
    }

    /// The session is logged in at `now` (called by each service while it is): once it has
    /// held for [`STABLE_NS`], the next loss starts from [`FIRST_NS`] again.
    pub fn up(&mut self, now: u64) {
        let since = *self.up_since.get_or_insert(now);
        if now.saturating_sub(since) >= STABLE_NS {
            self.tries = 0;
        }
    }

    /// The session is gone.
    pub fn down(&mut self) {
        self.up_since = None;
    }

    /// A login that held (a test's shortcut for [`Backoff::up`] over [`STABLE_NS`]).
    #[cfg(test)]
    fn logged_in(&mut self) {
        self.tries = 0;
    }

    /// Tries since the last login.
    pub fn tries(&self) -> u32 {
        self.tries
    }

    /// A draw of the generator (for what else a connection wants at random: its local port).
    pub fn random(&mut self) -> u64 {
        self.draw()
    }

    fn draw(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_from_the_first_to_the_cap_each_jittered_within_its_upper_half() {
        let mut b = Backoff::new(7);
        let mut base = FIRST_NS;
        for _ in 0..20 {
            let w = b.next_wait();
            assert!((base / 2..=base).contains(&w), "{w} for base {base}");
            base = (base * 2).min(MAX_NS);
        }
        assert_eq!(b.tries(), 20);
        b.logged_in();
        let w = b.next_wait();
        assert!((FIRST_NS / 2..=FIRST_NS).contains(&w), "{w}");
    }

    /// A gateway down for two seconds gets about a dozen tries, where a fixed 1 ms retry
    /// made ~2,000 (1,726 SYNs counted in a capture before this).
    #[test]
    fn two_seconds_down_is_a_dozen_tries() {
        let mut b = Backoff::new(1);
        let (mut t, mut tries) = (0, 0);
        while t < 2_000_000_000 {
            t += b.next_wait();
            tries += 1;
        }
        assert!((10..=14).contains(&tries), "{tries}");
    }

    /// A login that drops at once (a gateway that takes logins, then closes) keeps the waits
    /// growing; one that holds a second starts them over.
    #[test]
    fn only_a_login_that_holds_starts_the_waits_over() {
        let mut b = Backoff::new(3);
        for _ in 0..5 {
            b.next_wait();
        }
        b.up(0);
        b.up(STABLE_NS - 1);
        b.down();
        assert_eq!(b.tries(), 5, "a login of under a second");
        b.up(10);
        b.up(10 + STABLE_NS);
        assert_eq!(b.tries(), 0);
    }

    /// Two clients seeded apart don't retry in step.
    #[test]
    fn jitter_draws_differ_between_seeds() {
        let (mut a, mut b) = (Backoff::new(1), Backoff::new(2));
        let (wa, wb): (Vec<u64>, Vec<u64>) = (0..8).map(|_| (a.next_wait(), b.next_wait())).unzip();
        assert_ne!(wa, wb);
    }
}
