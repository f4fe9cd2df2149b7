//! The live orders (L3): an open-addressing table keyed by order reference number, the orders
//! stored in it, sized once at start.
//!
//! # Why this shape
//! NASDAQ assigns order reference numbers in increasing order through the day, so the orders
//! added close together in time have close references. The table's home slot is the reference
//! itself masked to the table's size (no mixing hash): orders that arrive together sit in the
//! same few cache lines, and the cancels and executions that follow soon after an order's add
//! (most of them, on a real day) find their slot already in cache. Linear probing with
//! backward-shift deletion keeps every probe sequence short without tombstones. Each slot holds
//! the whole order (32 bytes, two a cache line), so a lookup is one memory access.
//!
//! The table never grows on its own inside a day: [`Orders::insert`] grows it only when it is
//! more than [`MAX_LOAD_NUM`]/[`MAX_LOAD_DEN`] full, and counts it ([`Orders::growths`]), so a
//! book sized for its day allocates nothing after start, and one that was not says so.

use wire::itch::Side;

/// An order resting in the book.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// The order's reference number.
    pub order_ref: u64,
    /// When it took its place in the queue: the book's count of orders added before it. An
    /// Order Replace gives the new order a new, later place (it loses its priority).
    pub arrival: u64,
    /// Its limit price, `Price(4)` units.
    pub price: u32,
    /// Shares still open.
    pub shares: u32,
    /// The stock locate it was added for.
    pub locate: u16,
    /// Buy or sell.
    pub side: Side,
}

/// A prefetch of the line holding `x` into every cache level (`prefetcht0`).
#[inline(always)]
pub(crate) fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    #[expect(
        unsafe_code,
        reason = "a prefetch hint: it reads nothing into the program and cannot fault"
    )]
    // SAFETY: `x` is a live reference, so the address is valid; a prefetch has no effect on
    // memory or registers the program can see, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            (x as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// A table of `size` empty slots, its pages faulted in now. A table of 2 MiB or more is
/// allocated zeroed (an empty slot is all zeros) and advised onto transparent huge pages before
/// its first write: a lookup anywhere in a table of hundreds of MiB then costs a cache miss,
/// not a cache miss and a page walk (where THP is `never`, the advice does nothing).
fn table(size: usize) -> Box<[Slot]> {
    const HUGE: usize = 2 << 20;
    let bytes = size * core::mem::size_of::<Slot>();
    if bytes < HUGE {
        return vec![EMPTY_SLOT; size].into_boxed_slice();
    }
    // The slice's own layout (what Box frees with): a large zeroed allocation of it is a fresh
    // mapping of untouched zero pages, so the advice comes before any page exists.
    let layout = std::alloc::Layout::array::<Slot>(size).expect("a valid table layout");
    #[expect(
        unsafe_code,
        reason = "a zeroed allocation of plain-data slots, and madvise on it"
    )]
    // SAFETY: the layout is non-zero-sized; an all-zero `Slot` is a valid (empty) slot, so the
    // zeroed memory holds `size` valid slots, owned by the Box (allocated with the global
    // allocator with `[Slot]`'s own layout, as Box's deallocation expects). madvise only advises
    // the kernel on memory this allocation owns.
    let slots = unsafe {
        let p = std::alloc::alloc_zeroed(layout);
        if p.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // madvise wants a page-aligned start (the allocator's header sits before `p`): advise
        // the table's whole 2 MiB spans, the only ones a huge page can back.
        let start = (p as usize).next_multiple_of(HUGE);
        let end = (p as usize + bytes) / HUGE * HUGE;
        if end > start {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
        Box::from_raw(core::ptr::slice_from_raw_parts_mut(p.cast::<Slot>(), size))
    };
    let mut slots = slots;
    // Fault every page in at start, not on the day's first orders.
    for s in slots
        .iter_mut()
        .step_by(4096 / core::mem::size_of::<Slot>())
    {
        *s = EMPTY_SLOT;
    }
    slots
}

/// One slot: an order, or empty. 32 bytes.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct Slot {
    order_ref: u64,
    arrival: u64,
    price: u32,
    shares: u32,
    locate: u16,
    /// 0: empty, 1: a buy, 2: a sell.
    state: u8,
    _pad: [u8; 5],
}

const EMPTY: u8 = 0;
const BUY: u8 = 1;
const SELL: u8 = 2;

const EMPTY_SLOT: Slot = Slot {
    order_ref: 0,
    arrival: 0,
    price: 0,
    shares: 0,
    locate: 0,
    state: EMPTY,
    _pad: [0; 5],
};

const _: () = assert!(core::mem::size_of::<Slot>() == 32);

/// The table grows when an insert would make it fuller than this fraction (numerator).
pub const MAX_LOAD_NUM: usize = 1;
/// The table grows when an insert would make it fuller than this fraction (denominator).
pub const MAX_LOAD_DEN: usize = 2;

impl Slot {
    fn side(&self) -> Side {
        if self.state == BUY {
            Side::Buy
        } else {
            Side::Sell
        }
    }

    fn to_order(self) -> Order {
        Order {
            order_ref: self.order_ref,
            arrival: self.arrival,
            price: self.price,
            shares: self.shares,
            locate: self.locate,
            side: self.side(),
        }
    }

    fn from_order(o: &Order) -> Slot {
        Slot {
            order_ref: o.order_ref,
            arrival: o.arrival,
            price: o.price,
            shares: o.shares,
            locate: o.locate,
            state: match o.side {
                Side::Buy => BUY,
                Side::Sell => SELL,
            },
            _pad: [0; 5],
        }
    }
}

/// The live orders, by reference number.
#[derive(Debug, Clone)]
pub struct Orders {
    slots: Box<[Slot]>,
    mask: usize,
    len: usize,
    growths: u64,
}

/// Why an insert was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertError {
    /// An order with this reference is already live.
    Duplicate,
}

impl Orders {
    /// A table that holds `live` orders without growing (its slot count is the power of two at
    /// or above `live` divided by the maximum load). Every slot is written once here, so its
    /// pages are faulted in at start, not on the first orders of the day.
    pub fn with_capacity(live: usize) -> Orders {
        let want = live.max(8).saturating_mul(MAX_LOAD_DEN) / MAX_LOAD_NUM;
        let size = want.next_power_of_two();
        Orders {
            slots: table(size),
            mask: size - 1,
            len: 0,
            growths: 0,
        }
    }

    /// Live orders.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No live order.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The orders it holds without growing.
    pub fn capacity(&self) -> usize {
        self.slots.len() / MAX_LOAD_DEN * MAX_LOAD_NUM
    }

    /// Bytes of the table.
    pub fn bytes(&self) -> usize {
        core::mem::size_of_val(&*self.slots)
    }

    /// How many times the table grew because more orders were live than it was sized for (each
    /// an allocation and a rehash inside the day).
    pub fn growths(&self) -> u64 {
        self.growths
    }

    #[inline]
    fn home(&self, order_ref: u64) -> usize {
        // Truncation intended: the low bits are the home slot.
        (order_ref as usize) & self.mask
    }

    #[inline]
    fn find(&self, order_ref: u64) -> Option<usize> {
        let mut i = self.home(order_ref);
        loop {
            let s = &self.slots[i];
            if s.state == EMPTY {
                return None;
            }
            if s.order_ref == order_ref {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Starts loading the cache line of this reference's home slot, so that a lookup of it a
    /// message later finds it in cache (a hint: it changes nothing, and it never faults).
    #[inline]
    pub fn prefetch(&self, order_ref: u64) {
        prefetch(&self.slots[self.home(order_ref)]);
    }

    /// The live order with this reference.
    #[inline]
    pub fn get(&self, order_ref: u64) -> Option<Order> {
        self.find(order_ref).map(|i| self.slots[i].to_order())
    }

    /// Adds an order; a live order with the same reference is [`InsertError::Duplicate`] and
    /// stays as it was.
    #[inline]
    pub fn insert(&mut self, order: &Order) -> Result<(), InsertError> {
        if (self.len + 1) * MAX_LOAD_DEN > self.slots.len() * MAX_LOAD_NUM {
            // A refused add must not cost a growth.
            if self.find(order.order_ref).is_some() {
                return Err(InsertError::Duplicate);
            }
            self.grow();
        }
        let mut i = self.home(order.order_ref);
        loop {
            let s = &mut self.slots[i];
            if s.state == EMPTY {
                *s = Slot::from_order(order);
                self.len += 1;
                return Ok(());
            }
            if s.order_ref == order.order_ref {
                return Err(InsertError::Duplicate);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Takes `shares` off a live order, up to all it has: returns the order as it was before
    /// and the shares taken, and removes it when none are left.
    #[inline]
    pub fn reduce(&mut self, order_ref: u64, shares: u32) -> Option<(Order, u32)> {
        let i = self.find(order_ref)?;
        let before = self.slots[i].to_order();
        let taken = shares.min(before.shares);
        if taken == before.shares {
            self.remove_at(i);
        } else {
            self.slots[i].shares -= taken;
        }
        Some((before, taken))
    }

    /// Removes a live order and returns it.
    #[inline]
    pub fn remove(&mut self, order_ref: u64) -> Option<Order> {
        let i = self.find(order_ref)?;
        let order = self.slots[i].to_order();
        self.remove_at(i);
        Some(order)
    }

    /// Backward-shift deletion: every order after the hole in its probe run that could sit in
    /// the hole moves into it, so no lookup ever needs a tombstone.
    fn remove_at(&mut self, mut hole: usize) {
        let mut j = hole;
        loop {
            j = (j + 1) & self.mask;
            let s = self.slots[j];
            if s.state == EMPTY {
                break;
            }
            let home = self.home(s.order_ref);
            // Distance from home to j, and from home to the hole, around the ring: the order at
            // j may move back into the hole only if the hole lies on its probe path.
            let to_j = j.wrapping_sub(home) & self.mask;
            let to_hole = hole.wrapping_sub(home) & self.mask;
            if to_hole < to_j {
                self.slots[hole] = s;
                hole = j;
            }
        }
        self.slots[hole] = EMPTY_SLOT;
        self.len -= 1;
    }

    #[cold]
    fn grow(&mut self) {
        let bigger = table(self.slots.len() * 2);
        let old = core::mem::replace(&mut self.slots, bigger);
        self.mask = self.slots.len() - 1;
        self.len = 0;
        self.growths += 1;
        for s in old.iter().filter(|s| s.state != EMPTY) {
            let _ = self.insert(&s.to_order());
        }
    }

    /// Every live order, in table order (not priority order).
    pub fn iter(&self) -> impl Iterator<Item = Order> + '_ {
        self.slots
            .iter()
            .filter(|s| s.state != EMPTY)
            .map(|s| s.to_order())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn order(order_ref: u64, shares: u32) -> Order {
        Order {
            order_ref,
            arrival: order_ref,
            price: 100,
            shares,
            locate: 1,
            side: Side::Sell,
        }
    }

    #[test]
    fn insert_get_reduce_remove() {
        let mut t = Orders::with_capacity(4);
        assert!(t.insert(&order(7, 100)).is_ok());
        assert_eq!(t.insert(&order(7, 5)), Err(InsertError::Duplicate));
        assert_eq!(t.get(7).map(|o| o.shares), Some(100));
        assert_eq!(t.reduce(7, 30).map(|(o, n)| (o.shares, n)), Some((100, 30)));
        assert_eq!(t.get(7).map(|o| o.shares), Some(70));
        assert_eq!(t.reduce(7, 500).map(|(o, n)| (o.shares, n)), Some((70, 70)));
        assert_eq!(t.get(7), None);
        assert_eq!(t.len(), 0);
        assert_eq!(t.remove(7), None);
        assert_eq!(t.growths(), 0);
    }

    #[test]
    fn colliding_refs_survive_removal_in_any_order() {
        // Refs that share a home slot, and runs that wrap around the table's end.
        let mut t = Orders::with_capacity(8);
        let size = t.slots.len() as u64;
        let refs: Vec<u64> = (0..6)
            .map(|k| 3 + k * size)
            .chain([size - 1, 2 * size - 1, 0])
            .collect();
        for &r in &refs {
            t.insert(&order(r, 1)).unwrap();
        }
        for (n, &r) in refs.iter().enumerate().rev().step_by(2) {
            assert!(t.remove(r).is_some(), "{r} (#{n})");
        }
        for (n, &r) in refs.iter().enumerate() {
            let removed = (refs.len() - 1 - n).is_multiple_of(2);
            assert_eq!(t.get(r).is_none(), removed, "{r}");
        }
    }

    #[test]
    fn a_duplicate_at_the_load_limit_does_not_grow_the_table() {
        let mut t = Orders::with_capacity(8);
        let cap = t.capacity() as u64;
        for r in 0..cap {
            t.insert(&order(r, 1)).unwrap();
        }
        assert_eq!(t.insert(&order(0, 1)), Err(InsertError::Duplicate));
        assert_eq!(t.growths(), 0);
        t.insert(&order(cap, 1)).unwrap();
        assert_eq!(t.growths(), 1);
    }

    #[test]
    fn growth_is_counted_and_keeps_every_order() {
        let mut t = Orders::with_capacity(8);
        for r in 0..1000u64 {
            t.insert(&order(r * 7919, 1)).unwrap();
        }
        assert!(t.growths() > 0);
        assert_eq!(t.len(), 1000);
        assert!((0..1000u64).all(|r| t.get(r * 7919).is_some()));
    }

    proptest::proptest! {
        #[test]
        fn matches_a_hash_map(ops in proptest::collection::vec((0u8..3, 0u64..64, 1u32..5), 1..400)) {
            let mut t = Orders::with_capacity(16);
            let mut m: HashMap<u64, u32> = HashMap::new();
            for (op, r, n) in ops {
                // Spread refs over few home slots so probe runs collide and wrap.
                let r = r * 13;
                match op {
                    0 => {
                        let dup = m.contains_key(&r);
                        proptest::prop_assert_eq!(t.insert(&order(r, n)).is_err(), dup);
                        m.entry(r).or_insert(n);
                    }
                    1 => {
                        let want = m.get(&r).copied().map(|s| (s, n.min(s)));
                        let got = t.reduce(r, n).map(|(o, k)| (o.shares, k));
                        proptest::prop_assert_eq!(got, want);
                        if let Some(s) = m.get_mut(&r) {
                            *s -= n.min(*s);
                            if *s == 0 { m.remove(&r); }
                        }
                    }
                    _ => {
                        proptest::prop_assert_eq!(t.remove(r).map(|o| o.shares), m.remove(&r));
                    }
                }
                proptest::prop_assert_eq!(t.len(), m.len());
                for (&k, &s) in &m {
                    proptest::prop_assert_eq!(t.get(k).map(|o| o.shares), Some(s));
                }
            }
        }
    }
}
