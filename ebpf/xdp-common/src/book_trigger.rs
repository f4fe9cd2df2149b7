//! The trigger on a full-depth feed (`trader --path trigger --symbols ...`, docs/trigger.md):
//! an Order Executed carries no price, so the program fires on it through the firing set, the
//! traded stock's resting orders by reference with their prices ([`MAP_FIRING`]), which the
//! trader keeps in step with its book; the arm's price rule then picks the orders at or
//! through the firing price. A printable Order Executed With Price and a Trade carry their
//! price, and the rule applies to it as on the ticker.
//!
//! The arm names the first number the trader has not taken: it fires only on the packet that
//! starts there (the trader has taken every packet before it, so the fired packet, which it
//! takes from the program's copy, comes to it in order), on that packet's print of the traded
//! stock. The program keeps, in `TRIGGER_NEXT`, the number after the last packet in which it
//! saw a message of the stock, fired or not: an arm below that is stale (the trader decides
//! again after such a packet, its firing set brought in step) and never fires. It fires only
//! when the print is the packet's first message of the stock and no other print of it follows
//! (a book change before it may be the order it executes, which the firing set may not have
//! yet; a second print is the trader's next decision). Every other packet goes to the trader,
//! which trades it itself: an arm late, never a wrong order.
//!
//! A fired packet is also the trader's market data: its other messages (the stock's book
//! changes after the print, other stocks') are copied into [`MAP_FIRED_PACKET`] before the
//! frame becomes the order, and the trader takes the copy as the packet it was.

/// The load-time global that selects the book trigger for [`crate::Action::Trigger`].
pub const GLOBAL_TRIGGER_BOOK: &str = "TRIGGER_BOOK";
/// The firing set: resting order reference (u64) → its price, Price(4), and open shares
/// ([`firing_value`]), for the traded stock only. A hash map the trader updates as its book
/// changes: the program fires on an execution only of an order the trader's book holds, for no
/// more than its open shares (what the book would refuse never fires).
pub const MAP_FIRING: &str = "FIRING";
/// Entries of [`MAP_FIRING`]: resting orders of the one stock, with room to spare.
pub const FIRING_ENTRIES: u32 = 1 << 16;
/// The traded stock's locate, plus one (0: not resolved yet, nothing fires): a one-entry array
/// the trader writes once the Stock Directory named it.
pub const MAP_FIRING_STOCK: &str = "FIRING_STOCK";
/// The copy of the last fired packet's UDP datagram ([`FiredPacket`], `BPF_F_MMAPABLE`).
pub const MAP_FIRED_PACKET: &str = "FIRED_PACKET";
/// The largest UDP datagram copied (an Ethernet MTU's).
pub const FIRED_PACKET_MAX: usize = 1480;
/// The copy's buffer: 2 KiB, so that every piece the program copies or sums at an offset it
/// masks to 11 bits lies inside it (the verifier's bound).
pub const FIRED_PACKET_BUF: usize = 2048;
/// The most messages a packet may carry for the program to look for the print in it.
pub const BOOK_TRIGGER_CAP: u16 = 64;

/// [`MAP_FIRED_PACKET`]'s one value: the fired packet's UDP datagram (header and payload),
/// written by the program before it writes the fire's record; the trader reads it when the
/// record names `generation`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FiredPacket {
    /// The arm generation of the fire it was copied for.
    pub generation: u32,
    /// The datagram's length, bytes.
    pub len: u32,
    /// The datagram.
    pub bytes: [u8; FIRED_PACKET_BUF],
}

/// A firing-set value: the price in the low word, the open shares in the high one.
#[inline]
pub const fn firing_value(price: u32, shares: u32) -> u64 {
    price as u64 | (shares as u64) << 32
}

/// Whether an execution of `executed` shares against an order of firing-set value `v` is one
/// the book takes (not zero shares, not more than are open), and the order's price if so.
#[inline]
pub const fn executes(v: u64, executed: u32) -> Option<u32> {
    let open = (v >> 32) as u32;
    if executed == 0 || executed > open {
        None
    } else {
        Some(v as u32)
    }
}

/// ITCH messages the book trigger reads, by their type byte.
pub mod kind {
    /// Order Executed: at the resting order's price.
    pub const EXECUTED: u8 = b'E';
    /// Order Executed With Price: at its own, when printable.
    pub const EXECUTED_WITH_PRICE: u8 = b'C';
    /// Trade (non-cross).
    pub const TRADE: u8 = b'P';
}

/// Where the fields the program reads lie in each message (from its type byte).
pub mod at {
    /// Order Executed's and Order Executed With Price's order reference.
    pub const ORDER_REF: usize = 11;
    /// Their executed shares.
    pub const EXECUTED_SHARES: usize = 19;
    /// Trade's Buy/Sell indicator.
    pub const P_SIDE: usize = 19;
    /// Order Executed With Price's printable flag (`b'Y'`) and price.
    pub const C_PRINTABLE: usize = 31;
    /// See [`C_PRINTABLE`].
    pub const C_PRICE: usize = 32;
    /// Trade's price.
    pub const P_PRICE: usize = 32;
    /// Lengths: Order Executed, Order Executed With Price, Trade.
    pub const E_LEN: usize = 31;
    /// See [`E_LEN`].
    pub const C_LEN: usize = 36;
    /// See [`E_LEN`].
    pub const P_LEN: usize = 44;
}

/// Whether a message of the traded stock, by its type byte and length, is a print the book
/// trigger may fire on (its printable flag is checked apart, for `'C'`).
#[inline]
pub const fn print_shape(kind: u8, len: usize) -> bool {
    matches!(
        (kind, len),
        (kind::EXECUTED, at::E_LEN)
            | (kind::EXECUTED_WITH_PRICE, at::C_LEN)
            | (kind::TRADE, at::P_LEN)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layouts, pinned against the ITCH 5.0 spec's (the wire crate's views hold the same).
    #[test]
    fn the_print_shapes_are_the_specs() {
        assert!(print_shape(b'E', 31) && print_shape(b'C', 36) && print_shape(b'P', 44));
        assert!(!print_shape(b'E', 36) && !print_shape(b'A', 36) && !print_shape(b'U', 35));
        // Zero shares, an overfill: what the book refuses never fires.
        let v = firing_value(1_234_500, 100);
        assert_eq!(executes(v, 100), Some(1_234_500));
        assert_eq!(executes(v, 1), Some(1_234_500));
        assert_eq!((executes(v, 0), executes(v, 101)), (None, None));
        // A frame of the copy fits an Ethernet MTU's datagram.
        const { assert!(FIRED_PACKET_MAX >= 1500 - 20 && FIRED_PACKET_MAX <= FIRED_PACKET_BUF) };
    }
}
