//! One side of one stock's book (L2): its price levels with their aggregate shares and order
//! counts, best last.
//!
//! # Why a sorted array, best last
//! Nearly all of a day's adds, cancels and executions land at or near the best price. Keeping the
//! levels sorted so the best is the array's *last* element makes the common cases an append,
//! a pop or an update a few elements from the end, found by a short scan backwards from the
//! best; an insertion far from the best moves the levels in front of it, a few dozen bytes on a
//! typical book. Both sides use one ordering through a key: a bid's key is its price, an ask's
//! the price's complement, so the best of either side is the largest key.

use wire::itch::Side;

/// A price level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    /// The price, `Price(4)` units.
    pub price: u32,
    /// Orders resting at it.
    pub orders: u32,
    /// Their open shares.
    pub shares: u64,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u32,
    orders: u32,
    shares: u64,
}

/// Scans longer than this from the best switch to a binary search.
const SCAN: usize = 8;

/// One side of a book.
#[derive(Debug, Clone, Default)]
pub struct Levels {
    entries: Vec<Entry>,
    grown: u64,
}

impl Levels {
    /// A side with room for `levels` price levels before it allocates again.
    pub fn with_capacity(levels: usize) -> Levels {
        Levels {
            entries: Vec::with_capacity(levels),
            grown: 0,
        }
    }

    #[inline]
    fn key(side: Side, price: u32) -> u32 {
        match side {
            Side::Buy => price,
            Side::Sell => !price,
        }
    }

    #[inline]
    fn price(side: Side, key: u32) -> u32 {
        // The complement is its own inverse.
        Self::key(side, key)
    }

    /// Where `key` is, or where it would go: `Ok(i)` if entry `i` has it, `Err(i)` for the
    /// insertion point.
    #[inline]
    fn position(&self, key: u32) -> Result<usize, usize> {
        let e = &self.entries;
        let mut i = e.len();
        let stop = i.saturating_sub(SCAN);
        while i > stop {
            let k = e[i - 1].key;
            if k == key {
                return Ok(i - 1);
            }
            if k < key {
                return Err(i);
            }
            i -= 1;
        }
        if i == 0 {
            return Err(0);
        }
        e[..i].binary_search_by(|x| x.key.cmp(&key))
    }

    /// Adds `shares` of one new order at `price`.
    #[inline]
    pub fn add(&mut self, side: Side, price: u32, shares: u32) {
        let key = Self::key(side, price);
        match self.position(key) {
            Ok(i) => {
                let l = &mut self.entries[i];
                l.orders += 1;
                l.shares += u64::from(shares);
            }
            Err(i) => {
                if self.entries.len() == self.entries.capacity() {
                    self.grown += 1;
                }
                self.entries.insert(
                    i,
                    Entry {
                        key,
                        orders: 1,
                        shares: u64::from(shares),
                    },
                );
            }
        }
    }

    /// Takes `shares` off the level at `price`, and one order from it when `order_gone`;
    /// removes the level when no order is left. Returns `false` (and changes nothing) if there
    /// is no level at `price`: the book and its levels disagree, which the book counts.
    #[inline]
    pub fn reduce(&mut self, side: Side, price: u32, shares: u32, order_gone: bool) -> bool {
        let key = Self::key(side, price);
        let Ok(i) = self.position(key) else {
            return false;
        };
        let l = &mut self.entries[i];
        l.shares = l.shares.saturating_sub(u64::from(shares));
        if order_gone {
            l.orders -= 1;
            if l.orders == 0 {
                self.entries.remove(i);
            }
        }
        true
    }

    /// Starts loading the best level's line (a hint).
    #[inline]
    pub fn prefetch_best(&self) {
        if let Some(e) = self.entries.last() {
            crate::orders::prefetch(e);
        }
    }

    /// The best level.
    #[inline]
    pub fn best(&self, side: Side) -> Option<Level> {
        self.entries.last().map(|e| Self::level(side, e))
    }

    fn level(side: Side, e: &Entry) -> Level {
        Level {
            price: Self::price(side, e.key),
            orders: e.orders,
            shares: e.shares,
        }
    }

    /// The levels, best first.
    pub fn iter(&self, side: Side) -> impl Iterator<Item = Level> + '_ {
        self.entries.iter().rev().map(move |e| Self::level(side, e))
    }

    /// Levels on this side.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No level on this side.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Times this side outgrew the room it was given (each an allocation).
    pub fn grown(&self) -> u64 {
        self.grown
    }

    /// Bytes reserved for its levels.
    pub fn bytes(&self) -> usize {
        self.entries.capacity() * core::mem::size_of::<Entry>()
    }

    /// Makes room for at least `levels` levels (at start: a Stock Directory message).
    pub fn reserve(&mut self, levels: usize) {
        let before = self.entries.capacity();
        self.entries
            .reserve(levels.saturating_sub(self.entries.len()));
        // Room made after start (a locate above the Config's) is an allocation too.
        if self.entries.capacity() != before {
            self.grown += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prices(l: &Levels, side: Side) -> Vec<(u32, u32, u64)> {
        l.iter(side)
            .map(|l| (l.price, l.orders, l.shares))
            .collect()
    }

    #[test]
    fn bids_best_is_highest_asks_lowest() {
        let mut b = Levels::with_capacity(4);
        let mut a = Levels::with_capacity(4);
        for p in [100, 102, 101, 102, 99] {
            b.add(Side::Buy, p, 10);
            a.add(Side::Sell, p, 10);
        }
        assert_eq!(
            prices(&b, Side::Buy),
            [(102, 2, 20), (101, 1, 10), (100, 1, 10), (99, 1, 10)]
        );
        assert_eq!(
            prices(&a, Side::Sell),
            [(99, 1, 10), (100, 1, 10), (101, 1, 10), (102, 2, 20)]
        );
        assert_eq!(b.best(Side::Buy).map(|l| l.price), Some(102));
        assert_eq!(a.best(Side::Sell).map(|l| l.price), Some(99));
        assert!(b.reduce(Side::Buy, 102, 10, true));
        assert!(b.reduce(Side::Buy, 102, 4, false));
        assert_eq!(
            b.best(Side::Buy),
            Some(Level {
                price: 102,
                orders: 1,
                shares: 6
            })
        );
        assert!(b.reduce(Side::Buy, 102, 6, true));
        assert_eq!(b.best(Side::Buy).map(|l| l.price), Some(101));
        assert!(!b.reduce(Side::Buy, 500, 1, true));
        assert_eq!(b.len(), 3);
    }

    #[test]
    fn deep_book_uses_the_binary_search() {
        let mut b = Levels::with_capacity(4);
        for p in (0..200u32).map(|i| (i * 37) % 200) {
            b.add(Side::Buy, 1000 + p, 1);
        }
        assert_eq!(b.len(), 200);
        assert!(b.grown() > 0);
        let got: Vec<u32> = b.iter(Side::Buy).map(|l| l.price).collect();
        let want: Vec<u32> = (0..200u32).rev().map(|p| 1000 + p).collect();
        assert_eq!(got, want);
        for p in (0..200u32).step_by(3) {
            assert!(b.reduce(Side::Buy, 1000 + p, 1, true), "{p}");
        }
        assert!(b.iter(Side::Buy).all(|l| (l.price - 1000) % 3 != 0));
    }
}
