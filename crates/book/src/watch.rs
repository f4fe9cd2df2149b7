//! The books of a few symbols out of a full-depth feed: what a trader keeps.
//!
//! A [`Watch`] is named by ticker symbols. It learns each one's stock locate from the feed's
//! Stock Directory (`'R'`) messages, and from then on takes only the messages of those locates
//! into its [`Book`]: a feed of 9,000 symbols costs it a two-byte read and a bit test per
//! message of the others ([`Watch::wants`]). The set of locates is a 65,536-bit map, the shape
//! an XDP program's filter reads too ([`Watch::locates`]).
//!
//! A symbol whose directory message never came (a feed joined after it, or a symbol the day
//! doesn't list) stays unresolved: nothing of it is booked or printed, and
//! [`Watch::unresolved`] says so.

use wire::itch::{Message, Stock};

use crate::{Book, Config, Event};

/// The most symbols a watch follows.
pub const MAX_SYMBOLS: usize = 64;

/// Words of the locate map: one bit per stock locate.
pub const LOCATE_WORDS: usize = (u16::MAX as usize + 1) / 64;

/// The books of the symbols it was named for (see the [module](self)).
#[derive(Debug)]
pub struct Watch {
    /// The symbols, and each one's locate once the directory named it.
    symbols: Vec<(Stock, Option<u16>)>,
    /// Symbols still without a locate.
    unresolved: usize,
    /// One bit per stock locate: set for the watched ones.
    locates: Box<[u64; LOCATE_WORDS]>,
    book: Book,
}

/// Why a watch can't be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchError {
    /// No symbol named.
    NoSymbols,
    /// More than [`MAX_SYMBOLS`].
    TooMany(usize),
}

impl std::fmt::Display for WatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WatchError::NoSymbols => write!(f, "no symbol to watch"),
            WatchError::TooMany(n) => {
                write!(f, "{n} symbols: a watch follows at most {MAX_SYMBOLS}")
            }
        }
    }
}

impl std::error::Error for WatchError {}

impl Watch {
    /// A watch of `symbols` (duplicates count once), its book sized for `live_orders` resting
    /// orders of them at once before it grows.
    ///
    /// # Errors
    /// None named, or more than [`MAX_SYMBOLS`].
    pub fn new(symbols: &[Stock], live_orders: usize) -> Result<Watch, WatchError> {
        let mut list: Vec<(Stock, Option<u16>)> = Vec::with_capacity(symbols.len());
        for &s in symbols {
            if !list.iter().any(|&(t, _)| t == s) {
                list.push((s, None));
            }
        }
        if list.is_empty() {
            return Err(WatchError::NoSymbols);
        }
        if list.len() > MAX_SYMBOLS {
            return Err(WatchError::TooMany(list.len()));
        }
        Ok(Watch {
            unresolved: list.len(),
            symbols: list,
            locates: Box::new([0; LOCATE_WORDS]),
            book: Book::new(Config {
                live_orders,
                locates: 0,
                levels: 64,
            }),
        })
    }

    /// Whether `message` (one ITCH message's bytes) is for this watch: a message of a watched
    /// locate, or a Stock Directory while a symbol is unresolved. Reads the type and the
    /// locate, nothing more.
    #[inline]
    pub fn wants(&self, message: &[u8]) -> bool {
        let Some(&[kind, hi, lo]) = message.first_chunk::<3>() else {
            return false;
        };
        (kind == b'R' && self.unresolved > 0) || self.watches(u16::from_be_bytes([hi, lo]))
    }

    /// Whether `locate` is a watched symbol's.
    #[inline]
    pub fn watches(&self, locate: u16) -> bool {
        let i = usize::from(locate);
        self.locates[i / 64] & (1 << (i % 64)) != 0
    }

    /// Applies a message [`Watch::wants`]: a Stock Directory naming a watched symbol resolves
    /// it (its locate is watched from the next message on); one naming another symbol is
    /// [`Event::Other`] and changes nothing; anything else goes to the book.
    #[inline]
    pub fn apply(&mut self, msg: &Message) -> Event {
        if let Message::StockDirectory(d) = msg {
            let Some(slot) = self.symbols.iter_mut().find(|(s, _)| *s == d.stock) else {
                return Event::Other;
            };
            let locate = d.stock_locate;
            if slot.1.is_none() {
                self.unresolved -= 1;
            }
            if let Some(old) = slot.1.replace(locate)
                && old != locate
            {
                // Named again with another locate (a corrected directory): the old one is not
                // this symbol's any more.
                let i = usize::from(old);
                self.locates[i / 64] &= !(1 << (i % 64));
            }
            let i = usize::from(locate);
            self.locates[i / 64] |= 1 << (i % 64);
            return self.book.apply(msg);
        }
        if !self.watches(msg.stock_locate()) {
            return Event::Other;
        }
        self.book.apply(msg)
    }

    /// `stock`'s locate, once the directory named it.
    pub fn locate(&self, stock: Stock) -> Option<u16> {
        self.symbols
            .iter()
            .find(|(s, _)| *s == stock)
            .and_then(|&(_, l)| l)
    }

    /// The symbols, each with its locate once resolved.
    pub fn symbols(&self) -> &[(Stock, Option<u16>)] {
        &self.symbols
    }

    /// Symbols whose directory message has not come.
    pub fn unresolved(&self) -> usize {
        self.unresolved
    }

    /// The watched locates, one bit each (bit `l % 64` of word `l / 64`).
    pub fn locates(&self) -> &[u64; LOCATE_WORDS] {
        &self.locates
    }

    /// The book of the watched symbols.
    pub fn book(&self) -> &Book {
        &self.book
    }
}

#[cfg(test)]
mod tests {
    use wire::itch::{
        AddOrderRepr, OrderExecutedRepr, Price4, Side, StockDirectoryRepr, Timestamp,
    };

    use super::*;
    use crate::{Print, PrintKind};

    fn stock(s: &str) -> Stock {
        Stock::new(s).unwrap()
    }

    fn emit(m: &Message) -> Vec<u8> {
        let mut b = [0u8; 64];
        let n = m.emit_into(&mut b).unwrap();
        b[..n].to_vec()
    }

    fn directory(locate: u16, s: &str) -> Message {
        Message::StockDirectory(StockDirectoryRepr {
            stock_locate: locate,
            tracking_number: 0,
            timestamp: Timestamp::from_nanos(0).unwrap(),
            stock: stock(s),
            market_category: b'Q',
            financial_status: b'N',
            round_lot_size: 100,
            round_lots_only: b'N',
            issue_classification: b'C',
            issue_subtype: *b"Z ",
            authenticity: b'P',
            short_sale_threshold: b'N',
            ipo_flag: b' ',
            luld_reference_price_tier: b'1',
            etp_flag: b'N',
            etp_leverage_factor: 0,
            inverse_indicator: b'N',
        })
    }

    fn add(locate: u16, order_ref: u64, price: u32) -> Message {
        Message::AddOrder(AddOrderRepr {
            stock_locate: locate,
            tracking_number: 0,
            timestamp: Timestamp::from_nanos(1).unwrap(),
            order_ref,
            side: Side::Sell,
            shares: 100,
            stock: stock("X"),
            price: Price4(price),
        })
    }

    fn exec(locate: u16, order_ref: u64) -> Message {
        Message::OrderExecuted(OrderExecutedRepr {
            stock_locate: locate,
            tracking_number: 0,
            timestamp: Timestamp::from_nanos(2).unwrap(),
            order_ref,
            executed_shares: 100,
            match_number: order_ref,
        })
    }

    /// Feeds `msgs` as a trader would: only what the watch wants is parsed and applied.
    fn feed(w: &mut Watch, msgs: &[Message]) -> Vec<Event> {
        let mut out = Vec::new();
        for m in msgs {
            if w.wants(&emit(m)) {
                out.push(w.apply(m));
            }
        }
        out
    }

    #[test]
    fn only_the_watched_symbols_reach_the_book_once_the_directory_named_them() {
        let mut w = Watch::new(&[stock("SYNTH"), stock("SYNTH")], 1024).unwrap();
        assert_eq!(
            (w.symbols().len(), w.unresolved()),
            (1, 1),
            "a duplicate counts once"
        );
        // Before its directory: SYNTH's messages are not wanted (its locate is unknown).
        assert!(!w.wants(&emit(&add(7, 1, 10_000))));
        let events = feed(
            &mut w,
            &[
                directory(3, "OTHER"),
                directory(7, "SYNTH"),
                add(3, 2, 50_000),
                add(7, 3, 12_300),
                exec(3, 2),
                exec(7, 3),
            ],
        );
        assert_eq!(w.unresolved(), 0);
        assert_eq!(w.locate(stock("SYNTH")), Some(7));
        assert!(w.watches(7) && !w.watches(3));
        assert_eq!(w.locates()[0], 1 << 7);
        // OTHER's directory was wanted (SYNTH unresolved then) and changed nothing; OTHER's
        // add and execution never reached the book.
        assert_eq!(
            events,
            vec![
                Event::Other,
                Event::Directory { locate: 7 },
                Event::Changed { locate: 7 },
                Event::Print(Print {
                    locate: 7,
                    price: Price4(12_300),
                    shares: 100,
                    side: Side::Sell,
                    kind: PrintKind::Executed,
                }),
            ]
        );
        assert_eq!(w.book().live_orders(), 0);
        // Resolved: another directory is not even read.
        assert!(!w.wants(&emit(&directory(9, "LATE"))));
    }

    #[test]
    fn a_symbol_named_again_moves_to_its_new_locate() {
        let mut w = Watch::new(&[stock("SYNTH")], 16).unwrap();
        feed(&mut w, &[directory(7, "SYNTH")]);
        w.apply(&directory(8, "SYNTH"));
        assert_eq!(w.locate(stock("SYNTH")), Some(8));
        assert!(w.watches(8) && !w.watches(7));
    }

    #[test]
    fn no_symbols_or_too_many_are_refused() {
        assert_eq!(Watch::new(&[], 16).unwrap_err(), WatchError::NoSymbols);
        let many: Vec<Stock> = (0..=MAX_SYMBOLS).map(|i| stock(&format!("S{i}"))).collect();
        assert_eq!(
            Watch::new(&many, 16).unwrap_err(),
            WatchError::TooMany(MAX_SYMBOLS + 1)
        );
        assert!(
            !Watch::new(&many[..1], 16).unwrap().wants(b"R"),
            "a cut message"
        );
    }
}
