//! Nasdaq OUCH 5.0, the order entry protocol: each message is the payload of one SoupBinTCP
//! data packet ([`crate::soupbin`]), its first byte the message type.
//!
//! | Type  | Message        | Direction         | Fixed length | Appendage |
//! |-------|----------------|-------------------|-------------:|-----------|
//! | `'O'` | Enter Order    | client → exchange | 47           | yes       |
//! | `'X'` | Cancel Order   | client → exchange | 9            | no        |
//! | `'A'` | Order Accepted | exchange → client | 64           | yes       |
//! | `'E'` | Order Executed | exchange → client | 36           | yes       |
//! | `'C'` | Order Canceled | exchange → client | 18           | no        |
//! | `'J'` | Order Rejected | exchange → client | 29           | no        |
//! | `'S'` | System Event   | exchange → client | 10           | no        |
//!
//! Each message has a submodule with its `Packet` view, its byte ranges (`field`, `KIND`, `LEN`,
//! shared with the XDP program through [`xdp_common::layout::ouch`]) and its `Repr`;
//! [`Inbound`] and [`Outbound`] parse and emit whatever message of their direction a buffer
//! holds. Integers are big-endian; a Price is 8 bytes, signed, 4 implied decimals, decoded to
//! [`Price4`] (a negative price or one above `u32::MAX` is [`Error::BadPrice`]); a timestamp is
//! a u64 of nanoseconds since midnight.
//!
//! # Length
//! A message must be exactly its fixed part plus the appendage its appendage length announces:
//! shorter is [`Error::Truncated`], longer [`Error::TrailingBytes`]. Parsing accepts an
//! appendage of any length and leaves its optional fields undecoded (the views'
//! `appendage()`, [`Inbound::parse_with_appendage`]); emitting writes an appendage length of 0.
//!
//! # Checked codes
//! The lab's side is [`Side`], buy or sell: a sell short (`'T'`) or sell short exempt (`'E'`)
//! side is [`Error::BadSide`]. Time in force, display, capacity, intermarket sweep eligibility,
//! cross type, order state, cancel reason and event code must be one of the codes of
//! [`xdp_common::layout::ouch`] ([`Error::BadField`] otherwise, on parse and on `emit_into`);
//! the liquidity flag and the reject reason are passed through as they are.
//!
//! # The lab's ClOrdID
//! The trader's orders carry the triggering tick's MoldUDP64 sequence number and whether the
//! order reverses an open position in the 14-byte ClOrdID: 13 decimal digits, zero-padded on the
//! left, then `'O'` (opens) or `'R'` (reverses) ([`lab_cl_ord_id`], [`parse_lab_cl_ord_id`]).
//! [`EnterOrder::from_order`] and [`EnterOrder::to_order`] convert to and from the lab's
//! [`OrderRepr`].

pub use crate::itch::{Price4, Side, Stock};
use crate::order::OrderRepr;
use crate::{Error, Result};
/// The one-byte codes of OUCH's enumerated fields.
pub use xdp_common::layout::ouch::{
    cancel_reason, capacity, cross_type, display, event_code, intermarket_sweep, order_state, side,
    time_in_force,
};

pub use cancel_order::CancelOrder;
pub use enter_order::EnterOrder;
pub use order_accepted::OrderAccepted;
pub use order_canceled::OrderCanceled;
pub use order_executed::OrderExecuted;
pub use order_rejected::OrderRejected;
pub use system_event::SystemEvent;

/// Digits of the tick sequence number in the lab's ClOrdID.
pub const LAB_CL_ORD_ID_DIGITS: usize = 13;
/// The lab's ClOrdID's last byte for an order that opens a position.
pub const LAB_CL_ORD_ID_OPENS: u8 = b'O';
/// The lab's ClOrdID's last byte for an order that reverses an open position.
pub const LAB_CL_ORD_ID_REVERSES: u8 = b'R';
/// The first tick sequence number the lab's ClOrdID cannot hold: 10^13.
pub const LAB_CL_ORD_ID_SEQ_LIMIT: u64 = 10u64.pow(LAB_CL_ORD_ID_DIGITS as u32);

/// The lab's ClOrdID for an order triggered by the tick with MoldUDP64 sequence number
/// `tick_seq`: 13 decimal digits, zero-padded on the left, then `'R'` if the order reverses an
/// open position, `'O'` if it opens one. A `tick_seq` of 10^13 or more is
/// [`Error::BadClOrdId`].
pub fn lab_cl_ord_id(tick_seq: u64, reverse: bool) -> Result<[u8; 14]> {
    if tick_seq >= LAB_CL_ORD_ID_SEQ_LIMIT {
        return Err(Error::BadClOrdId);
    }
    let mut id = [b'0'; 14];
    let mut rest = tick_seq;
    for digit in id[..LAB_CL_ORD_ID_DIGITS].iter_mut().rev() {
        // A remainder below 10: the cast is exact.
        *digit = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    id[LAB_CL_ORD_ID_DIGITS] = if reverse {
        LAB_CL_ORD_ID_REVERSES
    } else {
        LAB_CL_ORD_ID_OPENS
    };
    Ok(id)
}

/// Reads the lab's ClOrdID back: the tick sequence number and whether the order reverses.
/// Strict: exactly 13 ASCII digits, then `'O'` or `'R'`; anything else (spaces, signs, a lower
/// case flag) is [`Error::BadClOrdId`].
pub fn parse_lab_cl_ord_id(id: &[u8; 14]) -> Result<(u64, bool)> {
    let [digits @ .., flag] = id;
    let reverse = match *flag {
        LAB_CL_ORD_ID_OPENS => false,
        LAB_CL_ORD_ID_REVERSES => true,
        _ => return Err(Error::BadClOrdId),
    };
    let mut tick_seq = 0u64;
    for &d in digits {
        if !d.is_ascii_digit() {
            return Err(Error::BadClOrdId);
        }
        // 13 digits stay below 10^13: no overflow.
        tick_seq = tick_seq * 10 + u64::from(d - b'0');
    }
    Ok((tick_seq, reverse))
}

/// A one-byte code field: its spec name (for [`Error::BadField`]) and the codes it takes.
struct Code {
    name: &'static str,
    codes: &'static [u8],
}

impl Code {
    /// `byte` if it is one of the field's codes.
    fn check(&self, byte: u8) -> Result<u8> {
        if self.codes.contains(&byte) {
            Ok(byte)
        } else {
            Err(Error::BadField {
                field: self.name,
                byte,
            })
        }
    }
}

const TIME_IN_FORCE: Code = Code {
    name: "TimeInForce",
    codes: &time_in_force::ALL,
};
const DISPLAY: Code = Code {
    name: "Display",
    codes: &display::ALL,
};
const CAPACITY: Code = Code {
    name: "Capacity",
    codes: &capacity::ALL,
};
const INTERMARKET_SWEEP: Code = Code {
    name: "InterMarketSweepEligibility",
    codes: &intermarket_sweep::ALL,
};
const CROSS_TYPE: Code = Code {
    name: "CrossType",
    codes: &cross_type::ALL,
};
const ORDER_STATE: Code = Code {
    name: "OrderState",
    codes: &order_state::ALL,
};
const CANCEL_REASON: Code = Code {
    name: "Reason",
    codes: &cancel_reason::ALL,
};
const EVENT_CODE: Code = Code {
    name: "EventCode",
    codes: &event_code::ALL,
};

/// An 8-byte signed Price(4) as the lab's [`Price4`]: negative or above `u32::MAX` is
/// [`Error::BadPrice`].
fn price4(raw: i64) -> Result<Price4> {
    u32::try_from(raw).map(Price4).map_err(|_| Error::BadPrice)
}

/// [`Error::WrongType`] unless `got` is `expected`.
fn expect_kind(got: u8, expected: u8) -> Result<()> {
    if got != expected {
        return Err(Error::WrongType { expected, got });
    }
    Ok(())
}

/// [`Error::TrailingBytes`] if a buffer of `have` bytes (already known to hold `need`) holds
/// more than the `need` bytes of its message.
fn no_trailing(have: usize, need: usize) -> Result<()> {
    if have > need {
        return Err(Error::TrailingBytes {
            offset: need,
            len: have - need,
        });
    }
    Ok(())
}

/// The front `len` bytes of `buf` for `emit_into`, or [`Error::NoSpace`].
fn front(buf: &mut [u8], len: usize) -> Result<&mut [u8]> {
    let have = buf.len();
    buf.get_mut(..len).ok_or(Error::NoSpace { need: len, have })
}

/// The view's struct, constructors, length check and type byte; `appended` adds the
/// appendage's length and bytes. Expanded in each message's module, where `field`, `LEN`,
/// `Error`, `Result` and `be` are in scope.
macro_rules! packet {
    (fixed) => {
        packet!(@common);

        impl<T: AsRef<[u8]>> Packet<T> {
            /// Checks that the buffer holds at least [`LEN`] bytes. (An exact length is the
            /// `Repr`'s business: a view may sit at the front of a larger buffer.)
            pub fn check_len(&self) -> Result<()> {
                let have = self.buffer.as_ref().len();
                if have < LEN {
                    return Err(Error::Truncated { need: LEN, have });
                }
                Ok(())
            }

            /// The message's length: [`LEN`].
            pub fn total_len(&self) -> usize {
                LEN
            }
        }
    };
    (appended) => {
        packet!(@common);

        impl<T: AsRef<[u8]>> Packet<T> {
            /// Checks that the buffer holds the fixed [`LEN`] bytes and the appendage their
            /// appendage length announces. (An exact length is the `Repr`'s business: a view
            /// may sit at the front of a larger buffer.)
            pub fn check_len(&self) -> Result<()> {
                let have = self.buffer.as_ref().len();
                if have < LEN {
                    return Err(Error::Truncated { need: LEN, have });
                }
                let need = self.total_len();
                if have < need {
                    return Err(Error::Truncated { need, have });
                }
                Ok(())
            }

            /// Length of the optional appendage.
            pub fn appendage_len(&self) -> u16 {
                be::u16(self.buffer.as_ref(), field::APPENDAGE_LEN)
            }

            /// The message's length: [`LEN`] and the appendage.
            pub fn total_len(&self) -> usize {
                LEN + usize::from(self.appendage_len())
            }

            /// The optional appendage's bytes, undecoded.
            pub fn appendage(&self) -> &[u8] {
                &self.buffer.as_ref()[field::APPENDAGE.start..self.total_len()]
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            /// Sets the appendage length (the appendage's bytes are the caller's to write).
            pub fn set_appendage_len(&mut self, value: u16) {
                be::set_u16(self.buffer.as_mut(), field::APPENDAGE_LEN, value);
            }
        }
    };
    (@common) => {
        /// A read/write view of the message.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct Packet<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> Packet<T> {
            /// Wraps a buffer without checking its length; accessors panic if it is shorter
            /// than the message.
            pub const fn new_unchecked(buffer: T) -> Packet<T> {
                Packet { buffer }
            }

            /// Wraps a buffer after [`Packet::check_len`], so that no accessor can panic.
            pub fn new_checked(buffer: T) -> Result<Packet<T>> {
                let packet = Self::new_unchecked(buffer);
                packet.check_len()?;
                Ok(packet)
            }

            /// Returns the underlying buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            /// The message type byte.
            pub fn kind(&self) -> u8 {
                self.buffer.as_ref()[field::KIND]
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            /// Sets the message type byte.
            pub fn set_kind(&mut self, value: u8) {
                self.buffer.as_mut()[field::KIND] = value;
            }
        }

        impl<T: AsRef<[u8]>> AsRef<[u8]> for Packet<T> {
            fn as_ref(&self) -> &[u8] {
                self.buffer.as_ref()
            }
        }
    };
}

/// A getter and a setter per field: `getter, setter: kind = FIELD, "what it is";`. The getters
/// return the wire's value unchecked (a side or code byte as it is, the price as the raw signed
/// integer); the setters take the lab's types.
macro_rules! accessors {
    ($($get:ident, $set:ident: $kind:tt = $field:ident, $what:literal;)*) => {
        impl<T: AsRef<[u8]>> Packet<T> {
            $(accessors!(@get $get $kind $field $what);)*
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
            $(accessors!(@set $set $kind $field $what);)*
        }
    };
    (@get $get:ident code $field:ident $what:literal) => {
        #[doc = concat!("The ", $what, " byte, unchecked.")]
        pub fn $get(&self) -> u8 {
            self.buffer.as_ref()[field::$field]
        }
    };
    (@set $set:ident code $field:ident $what:literal) => {
        #[doc = concat!("Sets the ", $what, " byte.")]
        pub fn $set(&mut self, value: u8) {
            self.buffer.as_mut()[field::$field] = value;
        }
    };
    (@get $get:ident side $field:ident $what:literal) => {
        accessors!(@get $get code $field $what);
    };
    (@set $set:ident side $field:ident $what:literal) => {
        #[doc = concat!("Sets the ", $what, ".")]
        pub fn $set(&mut self, value: Side) {
            self.buffer.as_mut()[field::$field] = value.to_byte();
        }
    };
    (@get $get:ident u16 $field:ident $what:literal) => {
        #[doc = concat!("The ", $what, ".")]
        pub fn $get(&self) -> u16 {
            be::u16(self.buffer.as_ref(), field::$field)
        }
    };
    (@set $set:ident u16 $field:ident $what:literal) => {
        #[doc = concat!("Sets the ", $what, ".")]
        pub fn $set(&mut self, value: u16) {
            be::set_u16(self.buffer.as_mut(), field::$field, value);
        }
    };
    (@get $get:ident u32 $field:ident $what:literal) => {
        #[doc = concat!("The ", $what, ".")]
        pub fn $get(&self) -> u32 {
            be::u32(self.buffer.as_ref(), field::$field)
        }
    };
    (@set $set:ident u32 $field:ident $what:literal) => {
        #[doc = concat!("Sets the ", $what, ".")]
        pub fn $set(&mut self, value: u32) {
            be::set_u32(self.buffer.as_mut(), field::$field, value);
        }
    };
    (@get $get:ident u64 $field:ident $what:literal) => {
        #[doc = concat!("The ", $what, ".")]
        pub fn $get(&self) -> u64 {
            be::u64(self.buffer.as_ref(), field::$field)
        }
    };
    (@set $set:ident u64 $field:ident $what:literal) => {
        #[doc = concat!("Sets the ", $what, ".")]
        pub fn $set(&mut self, value: u64) {
            be::set_u64(self.buffer.as_mut(), field::$field, value);
        }
    };
    (@get $get:ident price $field:ident $what:literal) => {
        #[doc = concat!("The ", $what, ": the raw signed Price(4), unchecked.")]
        pub fn $get(&self) -> i64 {
            i64::from_be_bytes(be::bytes(self.buffer.as_ref(), field::$field))
        }
    };
    (@set $set:ident price $field:ident $what:literal) => {
        #[doc = concat!("Sets the ", $what, " (a `Price4` widens exactly).")]
        pub fn $set(&mut self, value: Price4) {
            be::set_u64(self.buffer.as_mut(), field::$field, u64::from(value.0));
        }
    };
    (@get $get:ident stock $field:ident $what:literal) => {
        #[doc = concat!("The ", $what, ".")]
        pub fn $get(&self) -> Stock {
            Stock(be::bytes(self.buffer.as_ref(), field::$field))
        }
    };
    (@set $set:ident stock $field:ident $what:literal) => {
        #[doc = concat!("Sets the ", $what, ".")]
        pub fn $set(&mut self, value: Stock) {
            be::set_bytes(self.buffer.as_mut(), field::$field, &value.0);
        }
    };
    (@get $get:ident id $field:ident $what:literal) => {
        #[doc = concat!("The ", $what, ".")]
        pub fn $get(&self) -> [u8; 14] {
            be::bytes(self.buffer.as_ref(), field::$field)
        }
    };
    (@set $set:ident id $field:ident $what:literal) => {
        #[doc = concat!("Sets the ", $what, ".")]
        pub fn $set(&mut self, value: [u8; 14]) {
            be::set_bytes(self.buffer.as_mut(), field::$field, &value);
        }
    };
}

/// Enter Order, type `'O'`, 47 bytes and an appendage (client to exchange).
pub mod enter_order {
    use super::{
        CAPACITY, CROSS_TYPE, DISPLAY, INTERMARKET_SWEEP, OrderAccepted, OrderRepr, Price4, Side,
        Stock, TIME_IN_FORCE, capacity, cross_type, display, expect_kind, front, intermarket_sweep,
        lab_cl_ord_id, no_trailing, parse_lab_cl_ord_id, price4, time_in_force,
    };
    use crate::{Error, Result, be};

    /// Byte ranges of the message, its type byte and fixed length (shared with the XDP
    /// program).
    pub use xdp_common::layout::ouch::enter_order::{KIND, LEN, field};

    packet!(appended);
    accessors! {
        user_ref_num, set_user_ref_num: u32 = USER_REF_NUM, "user reference number";
        side, set_side: side = SIDE, "side";
        quantity, set_quantity: u32 = QUANTITY, "quantity";
        symbol, set_symbol: stock = SYMBOL, "symbol";
        price, set_price: price = PRICE, "limit price";
        time_in_force, set_time_in_force: code = TIME_IN_FORCE, "time in force";
        display, set_display: code = DISPLAY, "display";
        capacity, set_capacity: code = CAPACITY, "capacity";
        intermarket_sweep, set_intermarket_sweep: code = INTERMARKET_SWEEP,
            "intermarket sweep eligibility";
        cross_type, set_cross_type: code = CROSS_TYPE, "cross type";
        cl_ord_id, set_cl_ord_id: id = CL_ORD_ID, "client order ID";
    }

    /// A decoded Enter Order (its appendage, if any, left aside).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct EnterOrder {
        /// The client's order reference number, unique and increasing within the session.
        pub user_ref_num: u32,
        /// Buy or sell.
        pub side: Side,
        /// Shares.
        pub quantity: u32,
        /// Stock symbol.
        pub symbol: Stock,
        /// Limit price.
        pub price: Price4,
        /// Time in force ([`time_in_force`]).
        pub time_in_force: u8,
        /// Display ([`display`]).
        pub display: u8,
        /// Capacity ([`capacity`]).
        pub capacity: u8,
        /// Intermarket sweep eligibility ([`intermarket_sweep`]).
        pub intermarket_sweep: u8,
        /// Cross type ([`cross_type`]).
        pub cross_type: u8,
        /// The client's order ID (the lab's: [`lab_cl_ord_id`]).
        pub cl_ord_id: [u8; 14],
    }

    /// smoltcp's name for it.
    pub type Repr = EnterOrder;

    impl EnterOrder {
        /// Decodes an Enter Order: [`Error::Truncated`] if shorter than [`LEN`] and the
        /// appendage, [`Error::TrailingBytes`] if longer, [`Error::WrongType`] for another type
        /// byte, [`Error::BadSide`] for a side other than buy or sell, [`Error::BadPrice`] for
        /// a price outside [`Price4`], [`Error::BadField`] for an undefined code.
        pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<EnterOrder> {
            packet.check_len()?;
            expect_kind(packet.kind(), KIND)?;
            no_trailing(packet.as_ref().len(), packet.total_len())?;
            Ok(EnterOrder {
                user_ref_num: packet.user_ref_num(),
                side: Side::from_byte(packet.side())?,
                quantity: packet.quantity(),
                symbol: packet.symbol(),
                price: price4(packet.price())?,
                time_in_force: TIME_IN_FORCE.check(packet.time_in_force())?,
                display: DISPLAY.check(packet.display())?,
                capacity: CAPACITY.check(packet.capacity())?,
                intermarket_sweep: INTERMARKET_SWEEP.check(packet.intermarket_sweep())?,
                cross_type: CROSS_TYPE.check(packet.cross_type())?,
                cl_ord_id: packet.cl_ord_id(),
            })
        }

        /// The emitted length, [`LEN`] (no appendage).
        pub const fn buffer_len(&self) -> usize {
            LEN
        }

        /// Writes the order, with an appendage length of 0, into a view of at least [`LEN`]
        /// bytes; the codes are written unchecked ([`EnterOrder::emit_into`] checks them).
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
            let EnterOrder {
                user_ref_num,
                side,
                quantity,
                symbol,
                price,
                time_in_force,
                display,
                capacity,
                intermarket_sweep,
                cross_type,
                cl_ord_id,
            } = *self;
            packet.set_kind(KIND);
            packet.set_user_ref_num(user_ref_num);
            packet.set_side(side);
            packet.set_quantity(quantity);
            packet.set_symbol(symbol);
            packet.set_price(price);
            packet.set_time_in_force(time_in_force);
            packet.set_display(display);
            packet.set_capacity(capacity);
            packet.set_intermarket_sweep(intermarket_sweep);
            packet.set_cross_type(cross_type);
            packet.set_cl_ord_id(cl_ord_id);
            packet.set_appendage_len(0);
        }

        /// Checks the codes ([`Error::BadField`]) and the space ([`Error::NoSpace`]), writes
        /// the order at the front of `buf`; returns [`LEN`].
        pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
            TIME_IN_FORCE.check(self.time_in_force)?;
            DISPLAY.check(self.display)?;
            CAPACITY.check(self.capacity)?;
            INTERMARKET_SWEEP.check(self.intermarket_sweep)?;
            CROSS_TYPE.check(self.cross_type)?;
            self.emit(&mut Packet::new_unchecked(front(buf, LEN)?));
            Ok(LEN)
        }

        /// The lab's order as an Enter Order: the token becomes the user reference number
        /// ([`Error::BadToken`] if it does not fit 32 bits), the tick sequence number and
        /// the reversal go into the ClOrdID ([`lab_cl_ord_id`]; [`Error::BadClOrdId`] from
        /// 10^13), and the order is an immediate-or-cancel, visible, principal order for the
        /// continuous market, not an intermarket sweep.
        pub fn from_order(order: &OrderRepr) -> Result<EnterOrder> {
            let OrderRepr {
                side,
                reverse,
                shares,
                token,
                tick_seq,
                price,
                stock,
            } = *order;
            Ok(EnterOrder {
                user_ref_num: u32::try_from(token).map_err(|_| Error::BadToken(token))?,
                side,
                quantity: shares,
                symbol: stock,
                price,
                time_in_force: time_in_force::IOC,
                display: display::VISIBLE,
                capacity: capacity::PRINCIPAL,
                intermarket_sweep: intermarket_sweep::NO,
                cross_type: cross_type::CONTINUOUS,
                cl_ord_id: lab_cl_ord_id(tick_seq, reverse)?,
            })
        }

        /// The lab's order this Enter Order carries: the inverse of
        /// [`EnterOrder::from_order`]. The ClOrdID must be the lab's ([`Error::BadClOrdId`]);
        /// the time in force, display, capacity, sweep eligibility and cross type, which the
        /// lab's order does not carry, are not looked at.
        pub fn to_order(&self) -> Result<OrderRepr> {
            let (tick_seq, reverse) = parse_lab_cl_ord_id(&self.cl_ord_id)?;
            Ok(OrderRepr {
                side: self.side,
                reverse,
                shares: self.quantity,
                token: u64::from(self.user_ref_num),
                tick_seq,
                price: self.price,
                stock: self.symbol,
            })
        }

        /// The Order Accepted that acknowledges this order: its fields echoed, with the
        /// exchange's `timestamp`, `order_reference_number` and `order_state`.
        pub const fn accepted(
            &self,
            timestamp: u64,
            order_reference_number: u64,
            order_state: u8,
        ) -> OrderAccepted {
            OrderAccepted {
                timestamp,
                user_ref_num: self.user_ref_num,
                side: self.side,
                quantity: self.quantity,
                symbol: self.symbol,
                price: self.price,
                time_in_force: self.time_in_force,
                display: self.display,
                order_reference_number,
                capacity: self.capacity,
                intermarket_sweep: self.intermarket_sweep,
                cross_type: self.cross_type,
                order_state,
                cl_ord_id: self.cl_ord_id,
            }
        }
    }
}

/// Cancel Order, type `'X'`, 9 bytes (client to exchange).
pub mod cancel_order {
    use super::{expect_kind, front, no_trailing};
    use crate::{Error, Result, be};

    /// Byte ranges of the message, its type byte and length (shared with the XDP program).
    pub use xdp_common::layout::ouch::cancel_order::{KIND, LEN, field};

    packet!(fixed);
    accessors! {
        user_ref_num, set_user_ref_num: u32 = USER_REF_NUM, "user reference number";
        quantity, set_quantity: u32 = QUANTITY, "new intended quantity";
    }

    /// A decoded Cancel Order.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct CancelOrder {
        /// The order's user reference number.
        pub user_ref_num: u32,
        /// The quantity the order should be left with: 0 cancels it.
        pub quantity: u32,
    }

    /// smoltcp's name for it.
    pub type Repr = CancelOrder;

    impl CancelOrder {
        /// Decodes a Cancel Order: [`Error::Truncated`] if shorter than [`LEN`],
        /// [`Error::TrailingBytes`] if longer, [`Error::WrongType`] for another type byte.
        pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<CancelOrder> {
            packet.check_len()?;
            expect_kind(packet.kind(), KIND)?;
            no_trailing(packet.as_ref().len(), LEN)?;
            Ok(CancelOrder {
                user_ref_num: packet.user_ref_num(),
                quantity: packet.quantity(),
            })
        }

        /// The message length, [`LEN`].
        pub const fn buffer_len(&self) -> usize {
            LEN
        }

        /// Writes the message into a view of at least [`LEN`] bytes.
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
            packet.set_kind(KIND);
            packet.set_user_ref_num(self.user_ref_num);
            packet.set_quantity(self.quantity);
        }

        /// Writes the message at the front of `buf` ([`Error::NoSpace`] if it is too short);
        /// returns [`LEN`].
        pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
            self.emit(&mut Packet::new_unchecked(front(buf, LEN)?));
            Ok(LEN)
        }
    }
}

/// Order Accepted, type `'A'`, 64 bytes and an appendage (exchange to client).
pub mod order_accepted {
    use super::{
        CAPACITY, CROSS_TYPE, DISPLAY, INTERMARKET_SWEEP, ORDER_STATE, Price4, Side, Stock,
        TIME_IN_FORCE, expect_kind, front, no_trailing, price4,
    };
    use crate::{Error, Result, be};

    /// Byte ranges of the message, its type byte and fixed length (shared with the XDP
    /// program).
    pub use xdp_common::layout::ouch::order_accepted::{KIND, LEN, field};

    packet!(appended);
    accessors! {
        timestamp, set_timestamp: u64 = TIMESTAMP, "timestamp, nanoseconds since midnight";
        user_ref_num, set_user_ref_num: u32 = USER_REF_NUM, "user reference number";
        side, set_side: side = SIDE, "side";
        quantity, set_quantity: u32 = QUANTITY, "quantity";
        symbol, set_symbol: stock = SYMBOL, "symbol";
        price, set_price: price = PRICE, "price";
        time_in_force, set_time_in_force: code = TIME_IN_FORCE, "time in force";
        display, set_display: code = DISPLAY, "display";
        order_reference_number, set_order_reference_number: u64 = ORDER_REFERENCE_NUMBER,
            "exchange's order reference number";
        capacity, set_capacity: code = CAPACITY, "capacity";
        intermarket_sweep, set_intermarket_sweep: code = INTERMARKET_SWEEP,
            "intermarket sweep eligibility";
        cross_type, set_cross_type: code = CROSS_TYPE, "cross type";
        order_state, set_order_state: code = ORDER_STATE, "order state";
        cl_ord_id, set_cl_ord_id: id = CL_ORD_ID, "client order ID";
    }

    /// A decoded Order Accepted (its appendage, if any, left aside).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct OrderAccepted {
        /// Nanoseconds since midnight.
        pub timestamp: u64,
        /// The order's user reference number.
        pub user_ref_num: u32,
        /// Buy or sell.
        pub side: Side,
        /// Shares.
        pub quantity: u32,
        /// Stock symbol.
        pub symbol: Stock,
        /// Price.
        pub price: Price4,
        /// Time in force ([`time_in_force`](super::time_in_force)).
        pub time_in_force: u8,
        /// Display ([`display`](super::display)).
        pub display: u8,
        /// The exchange's reference number for the order.
        pub order_reference_number: u64,
        /// Capacity ([`capacity`](super::capacity)).
        pub capacity: u8,
        /// Intermarket sweep eligibility ([`intermarket_sweep`](super::intermarket_sweep)).
        pub intermarket_sweep: u8,
        /// Cross type ([`cross_type`](super::cross_type)).
        pub cross_type: u8,
        /// Live or dead ([`order_state`](super::order_state)).
        pub order_state: u8,
        /// The client's order ID.
        pub cl_ord_id: [u8; 14],
    }

    /// smoltcp's name for it.
    pub type Repr = OrderAccepted;

    impl OrderAccepted {
        /// Decodes an Order Accepted: [`Error::Truncated`] if shorter than [`LEN`] and the
        /// appendage, [`Error::TrailingBytes`] if longer, [`Error::WrongType`] for another type
        /// byte, [`Error::BadSide`] for a side other than buy or sell, [`Error::BadPrice`] for
        /// a price outside [`Price4`], [`Error::BadField`] for an undefined code.
        pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<OrderAccepted> {
            packet.check_len()?;
            expect_kind(packet.kind(), KIND)?;
            no_trailing(packet.as_ref().len(), packet.total_len())?;
            Ok(OrderAccepted {
                timestamp: packet.timestamp(),
                user_ref_num: packet.user_ref_num(),
                side: Side::from_byte(packet.side())?,
                quantity: packet.quantity(),
                symbol: packet.symbol(),
                price: price4(packet.price())?,
                time_in_force: TIME_IN_FORCE.check(packet.time_in_force())?,
                display: DISPLAY.check(packet.display())?,
                order_reference_number: packet.order_reference_number(),
                capacity: CAPACITY.check(packet.capacity())?,
                intermarket_sweep: INTERMARKET_SWEEP.check(packet.intermarket_sweep())?,
                cross_type: CROSS_TYPE.check(packet.cross_type())?,
                order_state: ORDER_STATE.check(packet.order_state())?,
                cl_ord_id: packet.cl_ord_id(),
            })
        }

        /// The emitted length, [`LEN`] (no appendage).
        pub const fn buffer_len(&self) -> usize {
            LEN
        }

        /// Writes the message, with an appendage length of 0, into a view of at least [`LEN`]
        /// bytes; the codes are written unchecked ([`OrderAccepted::emit_into`] checks them).
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
            let OrderAccepted {
                timestamp,
                user_ref_num,
                side,
                quantity,
                symbol,
                price,
                time_in_force,
                display,
                order_reference_number,
                capacity,
                intermarket_sweep,
                cross_type,
                order_state,
                cl_ord_id,
            } = *self;
            packet.set_kind(KIND);
            packet.set_timestamp(timestamp);
            packet.set_user_ref_num(user_ref_num);
            packet.set_side(side);
            packet.set_quantity(quantity);
            packet.set_symbol(symbol);
            packet.set_price(price);
            packet.set_time_in_force(time_in_force);
            packet.set_display(display);
            packet.set_order_reference_number(order_reference_number);
            packet.set_capacity(capacity);
            packet.set_intermarket_sweep(intermarket_sweep);
            packet.set_cross_type(cross_type);
            packet.set_order_state(order_state);
            packet.set_cl_ord_id(cl_ord_id);
            packet.set_appendage_len(0);
        }

        /// Checks the codes ([`Error::BadField`]) and the space ([`Error::NoSpace`]), writes
        /// the message at the front of `buf`; returns [`LEN`].
        pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
            TIME_IN_FORCE.check(self.time_in_force)?;
            DISPLAY.check(self.display)?;
            CAPACITY.check(self.capacity)?;
            INTERMARKET_SWEEP.check(self.intermarket_sweep)?;
            CROSS_TYPE.check(self.cross_type)?;
            ORDER_STATE.check(self.order_state)?;
            self.emit(&mut Packet::new_unchecked(front(buf, LEN)?));
            Ok(LEN)
        }
    }
}

/// Order Executed, type `'E'`, 36 bytes and an appendage (exchange to client).
pub mod order_executed {
    use super::{Price4, expect_kind, front, no_trailing, price4};
    use crate::{Error, Result, be};

    /// Byte ranges of the message, its type byte and fixed length (shared with the XDP
    /// program).
    pub use xdp_common::layout::ouch::order_executed::{KIND, LEN, field};

    packet!(appended);
    accessors! {
        timestamp, set_timestamp: u64 = TIMESTAMP, "timestamp, nanoseconds since midnight";
        user_ref_num, set_user_ref_num: u32 = USER_REF_NUM, "user reference number";
        quantity, set_quantity: u32 = QUANTITY, "shares executed";
        price, set_price: price = PRICE, "execution price";
        liquidity_flag, set_liquidity_flag: code = LIQUIDITY_FLAG, "liquidity flag";
        match_number, set_match_number: u64 = MATCH_NUMBER, "match number";
    }

    /// A decoded Order Executed (its appendage, if any, left aside).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct OrderExecuted {
        /// Nanoseconds since midnight.
        pub timestamp: u64,
        /// The order's user reference number.
        pub user_ref_num: u32,
        /// Shares executed.
        pub quantity: u32,
        /// Execution price.
        pub price: Price4,
        /// Liquidity flag (added, removed, ...), passed through unchecked.
        pub liquidity_flag: u8,
        /// The execution's match number.
        pub match_number: u64,
    }

    /// smoltcp's name for it.
    pub type Repr = OrderExecuted;

    impl OrderExecuted {
        /// Decodes an Order Executed: [`Error::Truncated`] if shorter than [`LEN`] and the
        /// appendage, [`Error::TrailingBytes`] if longer, [`Error::WrongType`] for another type
        /// byte, [`Error::BadPrice`] for a price outside [`Price4`].
        pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<OrderExecuted> {
            packet.check_len()?;
            expect_kind(packet.kind(), KIND)?;
            no_trailing(packet.as_ref().len(), packet.total_len())?;
            Ok(OrderExecuted {
                timestamp: packet.timestamp(),
                user_ref_num: packet.user_ref_num(),
                quantity: packet.quantity(),
                price: price4(packet.price())?,
                liquidity_flag: packet.liquidity_flag(),
                match_number: packet.match_number(),
            })
        }

        /// The emitted length, [`LEN`] (no appendage).
        pub const fn buffer_len(&self) -> usize {
            LEN
        }

        /// Writes the message, with an appendage length of 0, into a view of at least [`LEN`]
        /// bytes.
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
            packet.set_kind(KIND);
            packet.set_timestamp(self.timestamp);
            packet.set_user_ref_num(self.user_ref_num);
            packet.set_quantity(self.quantity);
            packet.set_price(self.price);
            packet.set_liquidity_flag(self.liquidity_flag);
            packet.set_match_number(self.match_number);
            packet.set_appendage_len(0);
        }

        /// Writes the message at the front of `buf` ([`Error::NoSpace`] if it is too short);
        /// returns [`LEN`].
        pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
            self.emit(&mut Packet::new_unchecked(front(buf, LEN)?));
            Ok(LEN)
        }
    }
}

/// Order Canceled, type `'C'`, 18 bytes (exchange to client).
pub mod order_canceled {
    use super::{CANCEL_REASON, expect_kind, front, no_trailing};
    use crate::{Error, Result, be};

    /// Byte ranges of the message, its type byte and length (shared with the XDP program).
    pub use xdp_common::layout::ouch::order_canceled::{KIND, LEN, field};

    packet!(fixed);
    accessors! {
        timestamp, set_timestamp: u64 = TIMESTAMP, "timestamp, nanoseconds since midnight";
        user_ref_num, set_user_ref_num: u32 = USER_REF_NUM, "user reference number";
        quantity, set_quantity: u32 = QUANTITY, "shares taken off the order";
        reason, set_reason: code = REASON, "cancel reason";
    }

    /// A decoded Order Canceled.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct OrderCanceled {
        /// Nanoseconds since midnight.
        pub timestamp: u64,
        /// The order's user reference number.
        pub user_ref_num: u32,
        /// Shares taken off the order.
        pub quantity: u32,
        /// Why ([`cancel_reason`](super::cancel_reason)).
        pub reason: u8,
    }

    /// smoltcp's name for it.
    pub type Repr = OrderCanceled;

    impl OrderCanceled {
        /// Decodes an Order Canceled: [`Error::Truncated`] if shorter than [`LEN`],
        /// [`Error::TrailingBytes`] if longer, [`Error::WrongType`] for another type byte,
        /// [`Error::BadField`] for an undefined reason.
        pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<OrderCanceled> {
            packet.check_len()?;
            expect_kind(packet.kind(), KIND)?;
            no_trailing(packet.as_ref().len(), LEN)?;
            Ok(OrderCanceled {
                timestamp: packet.timestamp(),
                user_ref_num: packet.user_ref_num(),
                quantity: packet.quantity(),
                reason: CANCEL_REASON.check(packet.reason())?,
            })
        }

        /// The message length, [`LEN`].
        pub const fn buffer_len(&self) -> usize {
            LEN
        }

        /// Writes the message into a view of at least [`LEN`] bytes; the reason is written
        /// unchecked ([`OrderCanceled::emit_into`] checks it).
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
            packet.set_kind(KIND);
            packet.set_timestamp(self.timestamp);
            packet.set_user_ref_num(self.user_ref_num);
            packet.set_quantity(self.quantity);
            packet.set_reason(self.reason);
        }

        /// Checks the reason ([`Error::BadField`]) and the space ([`Error::NoSpace`]), writes
        /// the message at the front of `buf`; returns [`LEN`].
        pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
            CANCEL_REASON.check(self.reason)?;
            self.emit(&mut Packet::new_unchecked(front(buf, LEN)?));
            Ok(LEN)
        }
    }
}

/// Order Rejected, type `'J'`, 29 bytes (exchange to client).
pub mod order_rejected {
    use super::{expect_kind, front, no_trailing};
    use crate::{Error, Result, be};

    /// Byte ranges of the message, its type byte and length (shared with the XDP program).
    pub use xdp_common::layout::ouch::order_rejected::{KIND, LEN, field};

    packet!(fixed);
    accessors! {
        timestamp, set_timestamp: u64 = TIMESTAMP, "timestamp, nanoseconds since midnight";
        user_ref_num, set_user_ref_num: u32 = USER_REF_NUM, "user reference number";
        reason, set_reason: u16 = REASON, "reject reason code";
        cl_ord_id, set_cl_ord_id: id = CL_ORD_ID, "client order ID";
    }

    /// A decoded Order Rejected.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct OrderRejected {
        /// Nanoseconds since midnight.
        pub timestamp: u64,
        /// The rejected order's user reference number.
        pub user_ref_num: u32,
        /// Reject reason code, passed through unchecked.
        pub reason: u16,
        /// The rejected order's client order ID.
        pub cl_ord_id: [u8; 14],
    }

    /// smoltcp's name for it.
    pub type Repr = OrderRejected;

    impl OrderRejected {
        /// Decodes an Order Rejected: [`Error::Truncated`] if shorter than [`LEN`],
        /// [`Error::TrailingBytes`] if longer, [`Error::WrongType`] for another type byte.
        pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<OrderRejected> {
            packet.check_len()?;
            expect_kind(packet.kind(), KIND)?;
            no_trailing(packet.as_ref().len(), LEN)?;
            Ok(OrderRejected {
                timestamp: packet.timestamp(),
                user_ref_num: packet.user_ref_num(),
                reason: packet.reason(),
                cl_ord_id: packet.cl_ord_id(),
            })
        }

        /// The message length, [`LEN`].
        pub const fn buffer_len(&self) -> usize {
            LEN
        }

        /// Writes the message into a view of at least [`LEN`] bytes.
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
            packet.set_kind(KIND);
            packet.set_timestamp(self.timestamp);
            packet.set_user_ref_num(self.user_ref_num);
            packet.set_reason(self.reason);
            packet.set_cl_ord_id(self.cl_ord_id);
        }

        /// Writes the message at the front of `buf` ([`Error::NoSpace`] if it is too short);
        /// returns [`LEN`].
        pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
            self.emit(&mut Packet::new_unchecked(front(buf, LEN)?));
            Ok(LEN)
        }
    }
}

/// System Event, type `'S'`, 10 bytes (exchange to client).
pub mod system_event {
    use super::{EVENT_CODE, expect_kind, front, no_trailing};
    use crate::{Error, Result, be};

    /// Byte ranges of the message, its type byte and length (shared with the XDP program).
    pub use xdp_common::layout::ouch::system_event::{KIND, LEN, field};

    packet!(fixed);
    accessors! {
        timestamp, set_timestamp: u64 = TIMESTAMP, "timestamp, nanoseconds since midnight";
        event_code, set_event_code: code = EVENT_CODE, "event code";
    }

    /// A decoded System Event.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct SystemEvent {
        /// Nanoseconds since midnight.
        pub timestamp: u64,
        /// Start or end of day ([`event_code`](super::event_code)).
        pub event_code: u8,
    }

    /// smoltcp's name for it.
    pub type Repr = SystemEvent;

    impl SystemEvent {
        /// Decodes a System Event: [`Error::Truncated`] if shorter than [`LEN`],
        /// [`Error::TrailingBytes`] if longer, [`Error::WrongType`] for another type byte,
        /// [`Error::BadField`] for an undefined event code.
        pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<SystemEvent> {
            packet.check_len()?;
            expect_kind(packet.kind(), KIND)?;
            no_trailing(packet.as_ref().len(), LEN)?;
            Ok(SystemEvent {
                timestamp: packet.timestamp(),
                event_code: EVENT_CODE.check(packet.event_code())?,
            })
        }

        /// The message length, [`LEN`].
        pub const fn buffer_len(&self) -> usize {
            LEN
        }

        /// Writes the message into a view of at least [`LEN`] bytes; the event code is
        /// written unchecked ([`SystemEvent::emit_into`] checks it).
        pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
            packet.set_kind(KIND);
            packet.set_timestamp(self.timestamp);
            packet.set_event_code(self.event_code);
        }

        /// Checks the event code ([`Error::BadField`]) and the space ([`Error::NoSpace`]),
        /// writes the message at the front of `buf`; returns [`LEN`].
        pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
            EVENT_CODE.check(self.event_code)?;
            self.emit(&mut Packet::new_unchecked(front(buf, LEN)?));
            Ok(LEN)
        }
    }
}

/// The appendage of a message that parsed: the bytes past its fixed part (`msg` holds exactly
/// the message then, so this is the appendage and nothing else).
fn appendage_of(msg: &[u8], fixed_len: usize) -> &[u8] {
    msg.get(fixed_len..).unwrap_or_default()
}

/// [`Error::Truncated`] for an empty message, which has no type byte to dispatch on.
const EMPTY: Error = Error::Truncated { need: 1, have: 0 };

/// A message from client to exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inbound {
    /// Enter Order, `'O'`.
    EnterOrder(EnterOrder),
    /// Cancel Order, `'X'`.
    CancelOrder(CancelOrder),
}

impl Inbound {
    /// Decodes the client message `msg` (a whole SoupBinTCP payload), dispatching on its type
    /// byte: [`Error::UnknownType`] for a type that is not a client's, otherwise whatever the
    /// message's `Repr::parse` reports; an empty `msg` is [`Error::Truncated`].
    pub fn parse(msg: &[u8]) -> Result<Inbound> {
        Self::parse_with_appendage(msg).map(|(message, _)| message)
    }

    /// [`Inbound::parse`], also returning the message's optional appendage, undecoded (empty
    /// for a message without one).
    pub fn parse_with_appendage(msg: &[u8]) -> Result<(Inbound, &[u8])> {
        let kind = *msg.first().ok_or(EMPTY)?;
        let message = match kind {
            enter_order::KIND => {
                Inbound::EnterOrder(EnterOrder::parse(&enter_order::Packet::new_checked(msg)?)?)
            }
            cancel_order::KIND => Inbound::CancelOrder(CancelOrder::parse(
                &cancel_order::Packet::new_checked(msg)?,
            )?),
            other => return Err(Error::UnknownType(other)),
        };
        Ok((message, appendage_of(msg, message.buffer_len())))
    }

    /// The message's type byte.
    pub const fn kind(&self) -> u8 {
        match self {
            Inbound::EnterOrder(_) => enter_order::KIND,
            Inbound::CancelOrder(_) => cancel_order::KIND,
        }
    }

    /// The emitted length.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Inbound::EnterOrder(m) => m.buffer_len(),
            Inbound::CancelOrder(m) => m.buffer_len(),
        }
    }

    /// Writes the message at the front of `buf`; returns its length (see each message's
    /// `emit_into` for what it checks).
    pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
        match self {
            Inbound::EnterOrder(m) => m.emit_into(buf),
            Inbound::CancelOrder(m) => m.emit_into(buf),
        }
    }
}

impl From<EnterOrder> for Inbound {
    fn from(m: EnterOrder) -> Self {
        Inbound::EnterOrder(m)
    }
}

impl From<CancelOrder> for Inbound {
    fn from(m: CancelOrder) -> Self {
        Inbound::CancelOrder(m)
    }
}

/// A message from exchange to client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outbound {
    /// Order Accepted, `'A'`.
    Accepted(OrderAccepted),
    /// Order Executed, `'E'`.
    Executed(OrderExecuted),
    /// Order Canceled, `'C'`.
    Canceled(OrderCanceled),
    /// Order Rejected, `'J'`.
    Rejected(OrderRejected),
    /// System Event, `'S'`.
    SystemEvent(SystemEvent),
}

impl Outbound {
    /// Decodes the exchange message `msg` (a whole SoupBinTCP payload), dispatching on its
    /// type byte: [`Error::UnknownType`] for a type that is not an exchange's, otherwise
    /// whatever the message's `Repr::parse` reports; an empty `msg` is [`Error::Truncated`].
    pub fn parse(msg: &[u8]) -> Result<Outbound> {
        Self::parse_with_appendage(msg).map(|(message, _)| message)
    }

    /// [`Outbound::parse`], also returning the message's optional appendage, undecoded
    /// (empty for a message without one).
    pub fn parse_with_appendage(msg: &[u8]) -> Result<(Outbound, &[u8])> {
        let kind = *msg.first().ok_or(EMPTY)?;
        let message = match kind {
            order_accepted::KIND => Outbound::Accepted(OrderAccepted::parse(
                &order_accepted::Packet::new_checked(msg)?,
            )?),
            order_executed::KIND => Outbound::Executed(OrderExecuted::parse(
                &order_executed::Packet::new_checked(msg)?,
            )?),
            order_canceled::KIND => Outbound::Canceled(OrderCanceled::parse(
                &order_canceled::Packet::new_checked(msg)?,
            )?),
            order_rejected::KIND => Outbound::Rejected(OrderRejected::parse(
                &order_rejected::Packet::new_checked(msg)?,
            )?),
            system_event::KIND => Outbound::SystemEvent(SystemEvent::parse(
                &system_event::Packet::new_checked(msg)?,
            )?),
            other => return Err(Error::UnknownType(other)),
        };
        Ok((message, appendage_of(msg, message.buffer_len())))
    }

    /// The message's type byte.
    pub const fn kind(&self) -> u8 {
        match self {
            Outbound::Accepted(_) => order_accepted::KIND,
            Outbound::Executed(_) => order_executed::KIND,
            Outbound::Canceled(_) => order_canceled::KIND,
            Outbound::Rejected(_) => order_rejected::KIND,
            Outbound::SystemEvent(_) => system_event::KIND,
        }
    }

    /// The emitted length.
    pub const fn buffer_len(&self) -> usize {
        match self {
            Outbound::Accepted(m) => m.buffer_len(),
            Outbound::Executed(m) => m.buffer_len(),
            Outbound::Canceled(m) => m.buffer_len(),
            Outbound::Rejected(m) => m.buffer_len(),
            Outbound::SystemEvent(m) => m.buffer_len(),
        }
    }

    /// Writes the message at the front of `buf`; returns its length (see each message's
    /// `emit_into` for what it checks).
    pub fn emit_into(&self, buf: &mut [u8]) -> Result<usize> {
        match self {
            Outbound::Accepted(m) => m.emit_into(buf),
            Outbound::Executed(m) => m.emit_into(buf),
            Outbound::Canceled(m) => m.emit_into(buf),
            Outbound::Rejected(m) => m.emit_into(buf),
            Outbound::SystemEvent(m) => m.emit_into(buf),
        }
    }
}

impl From<OrderAccepted> for Outbound {
    fn from(m: OrderAccepted) -> Self {
        Outbound::Accepted(m)
    }
}

impl From<OrderExecuted> for Outbound {
    fn from(m: OrderExecuted) -> Self {
        Outbound::Executed(m)
    }
}

impl From<OrderCanceled> for Outbound {
    fn from(m: OrderCanceled) -> Self {
        Outbound::Canceled(m)
    }
}

impl From<OrderRejected> for Outbound {
    fn from(m: OrderRejected) -> Self {
        Outbound::Rejected(m)
    }
}

impl From<SystemEvent> for Outbound {
    fn from(m: SystemEvent) -> Self {
        Outbound::SystemEvent(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Token 7 buys 100 AAPL at $123.4567, IOC, reversing, triggered by tick 1_000_001: the
    // lab's order (`order::tests`' example) as OUCH.
    static ENTER_ORDER_BYTES: [u8; 47] = [
        b'O', // type
        0x00, 0x00, 0x00, 0x07, // user ref num 7
        b'B', // side
        0x00, 0x00, 0x00, 0x64, // quantity 100
        b'A', b'A', b'P', b'L', b' ', b' ', b' ', b' ', // symbol
        0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0xd6, 0x87, // price 1_234_567
        b'3', // time in force: IOC
        b'Y', // display: visible
        b'P', // capacity: principal
        b'N', // intermarket sweep: no
        b'N', // cross type: continuous
        b'0', b'0', b'0', b'0', b'0', b'0', b'1', b'0', b'0', b'0', b'0', b'0', b'1',
        b'R', // ClOrdID: tick 1_000_001, reverses
        0x00, 0x00, // appendage length 0
    ];

    fn enter_order() -> EnterOrder {
        EnterOrder {
            user_ref_num: 7,
            side: Side::Buy,
            quantity: 100,
            symbol: Stock(*b"AAPL    "),
            price: Price4(1_234_567),
            time_in_force: b'3',
            display: b'Y',
            capacity: b'P',
            intermarket_sweep: b'N',
            cross_type: b'N',
            cl_ord_id: *b"0000001000001R",
        }
    }

    // Cancel what is left of order 7.
    static CANCEL_ORDER_BYTES: [u8; 9] = [
        b'X', // type
        0x00, 0x00, 0x00, 0x07, // user ref num 7
        0x00, 0x00, 0x00, 0x00, // quantity 0
    ];

    fn cancel_order() -> CancelOrder {
        CancelOrder {
            user_ref_num: 7,
            quantity: 0,
        }
    }

    // Order 7 (sell 200 MSFT at $402.15, day, hidden, agency) accepted, live, as exchange
    // order 42_000_001 at 09:30:00.000000123.
    static ORDER_ACCEPTED_BYTES: [u8; 64] = [
        b'A', // type
        0x00, 0x00, 0x1f, 0x1a, 0xce, 0xd9, 0xf0, 0x7b, // timestamp 34_200_000_000_123
        0x00, 0x00, 0x00, 0x07, // user ref num 7
        b'S', // side
        0x00, 0x00, 0x00, 0xc8, // quantity 200
        b'M', b'S', b'F', b'T', b' ', b' ', b' ', b' ', // symbol
        0x00, 0x00, 0x00, 0x00, 0x00, 0x3d, 0x5c, 0xfc, // price 4_021_500
        b'0', // time in force: day
        b'N', // display: hidden
        0x00, 0x00, 0x00, 0x00, 0x02, 0x80, 0xde, 0x81, // order reference number 42_000_001
        b'A', // capacity: agency
        b'N', // intermarket sweep: no
        b'N', // cross type: continuous
        b'L', // order state: live
        b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'0', b'4', b'2',
        b'O', // ClOrdID: tick 42, opens
        0x00, 0x00, // appendage length 0
    ];

    fn order_accepted() -> OrderAccepted {
        OrderAccepted {
            timestamp: 34_200_000_000_123,
            user_ref_num: 7,
            side: Side::Sell,
            quantity: 200,
            symbol: Stock(*b"MSFT    "),
            price: Price4(4_021_500),
            time_in_force: b'0',
            display: b'N',
            order_reference_number: 42_000_001,
            capacity: b'A',
            intermarket_sweep: b'N',
            cross_type: b'N',
            order_state: b'L',
            cl_ord_id: *b"0000000000042O",
        }
    }

    // 60 shares of order 7 executed at $123.4567, removing liquidity, match 987_654_321.
    static ORDER_EXECUTED_BYTES: [u8; 36] = [
        b'E', // type
        0x00, 0x00, 0x1f, 0x1a, 0xce, 0xe1, 0x91, 0x20, // timestamp 34_200_000_500_000
        0x00, 0x00, 0x00, 0x07, // user ref num 7
        0x00, 0x00, 0x00, 0x3c, // quantity 60
        0x00, 0x00, 0x00, 0x00, 0x00, 0x12, 0xd6, 0x87, // price 1_234_567
        b'R', // liquidity flag
        0x00, 0x00, 0x00, 0x00, 0x3a, 0xde, 0x68, 0xb1, // match number 987_654_321
        0x00, 0x00, // appendage length 0
    ];

    fn order_executed() -> OrderExecuted {
        OrderExecuted {
            timestamp: 34_200_000_500_000,
            user_ref_num: 7,
            quantity: 60,
            price: Price4(1_234_567),
            liquidity_flag: b'R',
            match_number: 987_654_321,
        }
    }

    // The IOC order 7's other 40 shares canceled.
    static ORDER_CANCELED_BYTES: [u8; 18] = [
        b'C', // type
        0x00, 0x00, 0x1f, 0x1a, 0xce, 0xe9, 0x32, 0x40, // timestamp 34_200_001_000_000
        0x00, 0x00, 0x00, 0x07, // user ref num 7
        0x00, 0x00, 0x00, 0x28, // quantity 40
        b'I', // reason: immediate or cancel
    ];

    fn order_canceled() -> OrderCanceled {
        OrderCanceled {
            timestamp: 34_200_001_000_000,
            user_ref_num: 7,
            quantity: 40,
            reason: b'I',
        }
    }

    // Order 8 rejected with reason 0x0102.
    static ORDER_REJECTED_BYTES: [u8; 29] = [
        b'J', // type
        0x00, 0x00, 0x1f, 0x1a, 0xce, 0xf8, 0x74, 0x80, // timestamp 34_200_002_000_000
        0x00, 0x00, 0x00, 0x08, // user ref num 8
        0x01, 0x02, // reason 258
        b'0', b'0', b'0', b'0', b'0', b'0', b'1', b'0', b'0', b'0', b'0', b'0', b'2',
        b'O', // ClOrdID: tick 1_000_002, opens
    ];

    fn order_rejected() -> OrderRejected {
        OrderRejected {
            timestamp: 34_200_002_000_000,
            user_ref_num: 8,
            reason: 0x0102,
            cl_ord_id: *b"0000001000002O",
        }
    }

    // Start of day at 04:00.
    static SYSTEM_EVENT_BYTES: [u8; 10] = [
        b'S', // type
        0x00, 0x00, 0x0d, 0x18, 0xc2, 0xe2, 0x80, 0x00, // timestamp 14_400_000_000_000
        b'S', // event code: start of day
    ];

    fn system_event() -> SystemEvent {
        SystemEvent {
            timestamp: 14_400_000_000_000,
            event_code: b'S',
        }
    }

    /// Every message: its hand-made bytes, its `Repr`, and whether it is inbound.
    fn all() -> [(&'static [u8], Result<Inbound, Outbound>); 7] {
        [
            (&ENTER_ORDER_BYTES, Ok(enter_order().into())),
            (&CANCEL_ORDER_BYTES, Ok(cancel_order().into())),
            (&ORDER_ACCEPTED_BYTES, Err(order_accepted().into())),
            (&ORDER_EXECUTED_BYTES, Err(order_executed().into())),
            (&ORDER_CANCELED_BYTES, Err(order_canceled().into())),
            (&ORDER_REJECTED_BYTES, Err(order_rejected().into())),
            (&SYSTEM_EVENT_BYTES, Err(system_event().into())),
        ]
    }

    /// `bytes` parses as `repr`, and `repr` emits exactly `bytes`, into any buffer that has the
    /// room (over stale bytes) and not into one that is a byte short.
    #[test]
    fn every_message_parses_from_and_emits_its_hand_made_bytes() {
        for (bytes, repr) in all() {
            let len = bytes.len();
            let mut out = [0xa5u8; 80];
            match repr {
                Ok(inbound) => {
                    assert_eq!(Inbound::parse(bytes), Ok(inbound));
                    assert_eq!(Inbound::parse_with_appendage(bytes), Ok((inbound, &[][..])));
                    assert_eq!(inbound.kind(), bytes[0]);
                    assert_eq!(inbound.buffer_len(), len);
                    assert_eq!(inbound.emit_into(&mut out), Ok(len));
                    assert_eq!(
                        inbound.emit_into(&mut out[..len - 1]),
                        Err(Error::NoSpace {
                            need: len,
                            have: len - 1
                        })
                    );
                    assert_eq!(Outbound::parse(bytes), Err(Error::UnknownType(bytes[0])));
                }
                Err(outbound) => {
                    assert_eq!(Outbound::parse(bytes), Ok(outbound));
                    assert_eq!(
                        Outbound::parse_with_appendage(bytes),
                        Ok((outbound, &[][..]))
                    );
                    assert_eq!(outbound.kind(), bytes[0]);
                    assert_eq!(outbound.buffer_len(), len);
                    assert_eq!(outbound.emit_into(&mut out), Ok(len));
                    assert_eq!(
                        outbound.emit_into(&mut out[..len - 1]),
                        Err(Error::NoSpace {
                            need: len,
                            have: len - 1
                        })
                    );
                    assert_eq!(Inbound::parse(bytes), Err(Error::UnknownType(bytes[0])));
                }
            }
            assert_eq!(&out[..len], bytes, "{}", char::from(bytes[0]));
            assert!(
                out[len..].iter().all(|&b| b == 0xa5),
                "wrote past the message"
            );
        }
    }

    /// The views read each field where the layout puts it, and their setters write them there.
    #[test]
    fn views_read_and_write_the_fields_in_place() {
        let p = enter_order::Packet::new_checked(&ENTER_ORDER_BYTES[..]).unwrap();
        assert_eq!(p.kind(), b'O');
        assert_eq!(p.user_ref_num(), 7);
        assert_eq!(p.side(), b'B');
        assert_eq!(p.quantity(), 100);
        assert_eq!(p.symbol(), Stock(*b"AAPL    "));
        assert_eq!(p.price(), 1_234_567);
        assert_eq!(
            [
                p.time_in_force(),
                p.display(),
                p.capacity(),
                p.intermarket_sweep(),
                p.cross_type()
            ],
            *b"3YPNN"
        );
        assert_eq!(&p.cl_ord_id(), b"0000001000001R");
        assert_eq!((p.appendage_len(), p.appendage()), (0, &[][..]));
        assert_eq!(p.total_len(), 47);

        let mut bytes = [0u8; 47];
        let mut p = enter_order::Packet::new_unchecked(&mut bytes[..]);
        p.set_kind(b'O');
        p.set_user_ref_num(7);
        p.set_side(Side::Buy);
        p.set_quantity(100);
        p.set_symbol(Stock::new("AAPL").unwrap());
        p.set_price(Price4(1_234_567));
        p.set_time_in_force(time_in_force::IOC);
        p.set_display(display::VISIBLE);
        p.set_capacity(capacity::PRINCIPAL);
        p.set_intermarket_sweep(intermarket_sweep::NO);
        p.set_cross_type(cross_type::CONTINUOUS);
        p.set_cl_ord_id(*b"0000001000001R");
        p.set_appendage_len(0);
        assert_eq!(bytes, ENTER_ORDER_BYTES);

        let p = order_accepted::Packet::new_checked(&ORDER_ACCEPTED_BYTES[..]).unwrap();
        assert_eq!(p.timestamp(), 34_200_000_000_123);
        assert_eq!(p.order_reference_number(), 42_000_001);
        assert_eq!(p.order_state(), b'L');
        assert_eq!(p.price(), 4_021_500);
        let p = order_executed::Packet::new_checked(&ORDER_EXECUTED_BYTES[..]).unwrap();
        assert_eq!((p.liquidity_flag(), p.match_number()), (b'R', 987_654_321));
        let p = order_rejected::Packet::new_checked(&ORDER_REJECTED_BYTES[..]).unwrap();
        assert_eq!(p.reason(), 0x0102);
        let p = order_canceled::Packet::new_checked(&ORDER_CANCELED_BYTES[..]).unwrap();
        assert_eq!((p.quantity(), p.reason()), (40, b'I'));
        let p = system_event::Packet::new_checked(&SYSTEM_EVENT_BYTES[..]).unwrap();
        assert_eq!(p.event_code(), b'S');
        let p = cancel_order::Packet::new_checked(&CANCEL_ORDER_BYTES[..]).unwrap();
        assert_eq!((p.user_ref_num(), p.quantity(), p.total_len()), (7, 0, 9));
    }

    /// Every prefix shorter than the fixed part is `Truncated`, through the view, the `Repr`
    /// and the dispatcher; the empty message too.
    #[test]
    fn truncated_at_every_length() {
        macro_rules! check {
            ($bytes:expr, $module:ident, $repr:ident, $dispatch:ident) => {
                for len in 1..$bytes.len() {
                    let msg = &$bytes[..len];
                    let want = Error::Truncated {
                        need: $bytes.len(),
                        have: len,
                    };
                    assert_eq!($module::Packet::new_checked(msg).err(), Some(want));
                    let unchecked = $module::Packet::new_unchecked(msg);
                    assert_eq!($repr::parse(&unchecked), Err(want));
                    assert_eq!($dispatch::parse(msg).map(drop), Err(want));
                }
            };
        }
        check!(ENTER_ORDER_BYTES, enter_order, EnterOrder, Inbound);
        check!(CANCEL_ORDER_BYTES, cancel_order, CancelOrder, Inbound);
        check!(
            ORDER_ACCEPTED_BYTES,
            order_accepted,
            OrderAccepted,
            Outbound
        );
        check!(
            ORDER_EXECUTED_BYTES,
            order_executed,
            OrderExecuted,
            Outbound
        );
        check!(
            ORDER_CANCELED_BYTES,
            order_canceled,
            OrderCanceled,
            Outbound
        );
        check!(
            ORDER_REJECTED_BYTES,
            order_rejected,
            OrderRejected,
            Outbound
        );
        check!(SYSTEM_EVENT_BYTES, system_event, SystemEvent, Outbound);
        let empty = Error::Truncated { need: 1, have: 0 };
        assert_eq!(Inbound::parse(&[]), Err(empty));
        assert_eq!(Outbound::parse(&[]), Err(empty));
    }

    /// A message longer than its fixed part and appendage is refused, naming the extra bytes.
    #[test]
    fn trailing_bytes_are_refused() {
        for (bytes, repr) in all() {
            let mut long = [0u8; 80];
            long[..bytes.len()].copy_from_slice(bytes);
            for extra in [1, 2, 16] {
                let msg = &long[..bytes.len() + extra];
                let want = Err(Error::TrailingBytes {
                    offset: bytes.len(),
                    len: extra,
                });
                match repr {
                    Ok(_) => assert_eq!(Inbound::parse(msg).map(drop), want),
                    Err(_) => assert_eq!(Outbound::parse(msg).map(drop), want),
                }
            }
        }
    }

    /// An appendage of any length is accepted when the message holds it exactly, handed back
    /// undecoded, and its absence (or excess) is reported.
    #[test]
    fn appendage_is_honoured_on_parse() {
        fn with_appendage<const N: usize>(fixed: &[u8; N], at: usize, tail: &[u8]) -> Vec<u8> {
            let mut msg = fixed.to_vec();
            msg[at..at + 2].copy_from_slice(&u16::try_from(tail.len()).unwrap().to_be_bytes());
            msg.extend_from_slice(tail);
            msg
        }
        let tail = [0x01, 0x02, 0x03];

        let msg = with_appendage(&ENTER_ORDER_BYTES, 45, &tail);
        assert_eq!(
            Inbound::parse_with_appendage(&msg),
            Ok((Inbound::EnterOrder(enter_order()), &tail[..]))
        );
        let p = enter_order::Packet::new_checked(&msg[..]).unwrap();
        assert_eq!(
            (p.appendage_len(), p.appendage(), p.total_len()),
            (3, &tail[..], 50)
        );
        assert_eq!(
            Inbound::parse(&msg[..49]),
            Err(Error::Truncated { need: 50, have: 49 })
        );
        assert_eq!(
            enter_order::Packet::new_checked(&msg[..47]).err(),
            Some(Error::Truncated { need: 50, have: 47 })
        );
        let mut longer = msg.clone();
        longer.push(0);
        assert_eq!(
            Inbound::parse(&longer),
            Err(Error::TrailingBytes { offset: 50, len: 1 })
        );

        let msg = with_appendage(&ORDER_ACCEPTED_BYTES, 62, &tail);
        assert_eq!(
            Outbound::parse_with_appendage(&msg),
            Ok((Outbound::Accepted(order_accepted()), &tail[..]))
        );
        assert_eq!(
            Outbound::parse(&msg[..66]),
            Err(Error::Truncated { need: 67, have: 66 })
        );

        let msg = with_appendage(&ORDER_EXECUTED_BYTES, 34, &tail);
        assert_eq!(
            Outbound::parse_with_appendage(&msg),
            Ok((Outbound::Executed(order_executed()), &tail[..]))
        );
        assert_eq!(
            Outbound::parse(&msg[..38]),
            Err(Error::Truncated { need: 39, have: 38 })
        );

        // The largest appendage length, 65535, announced but absent.
        let mut msg = ENTER_ORDER_BYTES;
        msg[45..47].copy_from_slice(&[0xff, 0xff]);
        assert_eq!(
            Inbound::parse(&msg),
            Err(Error::Truncated {
                need: 47 + 65_535,
                have: 47
            })
        );

        // Emit writes no appendage, whatever the buffer held.
        let mut out = [0xffu8; 60];
        assert_eq!(enter_order().emit_into(&mut out), Ok(47));
        assert_eq!(&out[45..47], &[0, 0]);
    }

    #[test]
    fn unknown_and_wrong_types() {
        let mut msg = ENTER_ORDER_BYTES;
        msg[0] = b'Q';
        assert_eq!(Inbound::parse(&msg), Err(Error::UnknownType(b'Q')));
        assert_eq!(Outbound::parse(&msg), Err(Error::UnknownType(b'Q')));
        assert_eq!(
            EnterOrder::parse(&enter_order::Packet::new_unchecked(&msg[..])),
            Err(Error::WrongType {
                expected: b'O',
                got: b'Q'
            })
        );
        // A client's message on the exchange's direction and the reverse.
        assert_eq!(
            Outbound::parse(&CANCEL_ORDER_BYTES),
            Err(Error::UnknownType(b'X'))
        );
        assert_eq!(
            Inbound::parse(&SYSTEM_EVENT_BYTES),
            Err(Error::UnknownType(b'S'))
        );
        assert_eq!(
            SystemEvent::parse(&system_event::Packet::new_unchecked(
                &ORDER_CANCELED_BYTES[..]
            )),
            Err(Error::WrongType {
                expected: b'S',
                got: b'C'
            })
        );
    }

    /// The lab's side is buy or sell: OUCH's sell short and sell short exempt are refused.
    #[test]
    fn bad_side() {
        for side in [b'T', b'E', 0, b'b'] {
            let mut msg = ENTER_ORDER_BYTES;
            msg[5] = side;
            assert_eq!(Inbound::parse(&msg), Err(Error::BadSide(side)));
            let mut msg = ORDER_ACCEPTED_BYTES;
            msg[13] = side;
            assert_eq!(Outbound::parse(&msg), Err(Error::BadSide(side)));
        }
        let mut msg = ENTER_ORDER_BYTES;
        msg[5] = b'S';
        assert_eq!(
            Inbound::parse(&msg),
            Ok(Inbound::EnterOrder(EnterOrder {
                side: Side::Sell,
                ..enter_order()
            }))
        );
    }

    /// A price outside `Price4` (negative, or above `u32::MAX` units) is refused; the edges of
    /// the range are not.
    #[test]
    fn price_out_of_range() {
        let bad: [[u8; 8]; 4] = [
            [0xff; 8],                                        // -1
            [0x80, 0, 0, 0, 0, 0, 0, 0],                      // i64::MIN
            [0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00], // u32::MAX + 1
            [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], // i64::MAX
        ];
        for price in bad {
            let mut msg = ENTER_ORDER_BYTES;
            msg[18..26].copy_from_slice(&price);
            assert_eq!(Inbound::parse(&msg), Err(Error::BadPrice), "{price:02x?}");
            let mut msg = ORDER_ACCEPTED_BYTES;
            msg[26..34].copy_from_slice(&price);
            assert_eq!(Outbound::parse(&msg), Err(Error::BadPrice));
            let mut msg = ORDER_EXECUTED_BYTES;
            msg[17..25].copy_from_slice(&price);
            assert_eq!(Outbound::parse(&msg), Err(Error::BadPrice));
        }
        for (price, want) in [
            ([0u8; 8], Price4(0)),
            ([0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff], Price4::MAX),
        ] {
            let mut msg = ENTER_ORDER_BYTES;
            msg[18..26].copy_from_slice(&price);
            let parsed = EnterOrder {
                price: want,
                ..enter_order()
            };
            assert_eq!(Inbound::parse(&msg), Ok(Inbound::EnterOrder(parsed)));
            let mut out = [0u8; 47];
            parsed.emit_into(&mut out).unwrap();
            assert_eq!(out, msg);
        }
    }

    /// An undefined code is refused on parse and on emit, naming the field.
    #[test]
    fn bad_codes() {
        let field = |field, byte| Error::BadField { field, byte };
        for (at, name) in [
            (26, "TimeInForce"),
            (27, "Display"),
            (28, "Capacity"),
            (29, "InterMarketSweepEligibility"),
            (30, "CrossType"),
        ] {
            let mut msg = ENTER_ORDER_BYTES;
            msg[at] = b'?';
            assert_eq!(Inbound::parse(&msg).map(drop), Err(field(name, b'?')));
            // The same field of Order Accepted, which echoes it.
            let at = match at {
                26 => 34,
                27 => 35,
                other => other + 16,
            };
            let mut msg = ORDER_ACCEPTED_BYTES;
            msg[at] = b'?';
            assert_eq!(Outbound::parse(&msg).map(drop), Err(field(name, b'?')));
        }
        let mut msg = ORDER_ACCEPTED_BYTES;
        msg[47] = b'?';
        assert_eq!(
            Outbound::parse(&msg).map(drop),
            Err(field("OrderState", b'?'))
        );
        let mut msg = ORDER_CANCELED_BYTES;
        msg[17] = b'?';
        assert_eq!(Outbound::parse(&msg).map(drop), Err(field("Reason", b'?')));
        let mut msg = SYSTEM_EVENT_BYTES;
        msg[9] = b'?';
        assert_eq!(
            Outbound::parse(&msg).map(drop),
            Err(field("EventCode", b'?'))
        );

        // Every defined code parses.
        for tif in time_in_force::ALL {
            let mut msg = ENTER_ORDER_BYTES;
            msg[26] = tif;
            assert!(Inbound::parse(&msg).is_ok());
        }
        for reason in cancel_reason::ALL {
            let mut msg = ORDER_CANCELED_BYTES;
            msg[17] = reason;
            assert!(Outbound::parse(&msg).is_ok());
        }
        // Unchecked fields: any liquidity flag, any reject reason.
        let mut msg = ORDER_EXECUTED_BYTES;
        msg[25] = 0;
        assert!(Outbound::parse(&msg).is_ok());

        let mut out = [0u8; 80];
        let bad = EnterOrder {
            cross_type: b'?',
            ..enter_order()
        };
        assert_eq!(bad.emit_into(&mut out), Err(field("CrossType", b'?')));
        let bad = OrderAccepted {
            order_state: b'?',
            ..order_accepted()
        };
        assert_eq!(bad.emit_into(&mut out), Err(field("OrderState", b'?')));
        let bad = OrderCanceled {
            reason: b'?',
            ..order_canceled()
        };
        assert_eq!(bad.emit_into(&mut out), Err(field("Reason", b'?')));
        let bad = SystemEvent {
            event_code: b'?',
            ..system_event()
        };
        assert_eq!(bad.emit_into(&mut out), Err(field("EventCode", b'?')));
    }

    #[test]
    fn lab_cl_ord_id_is_13_digits_and_a_flag() {
        assert_eq!(lab_cl_ord_id(0, false), Ok(*b"0000000000000O"));
        assert_eq!(lab_cl_ord_id(1_000_001, true), Ok(*b"0000001000001R"));
        assert_eq!(
            lab_cl_ord_id(9_999_999_999_999, true),
            Ok(*b"9999999999999R")
        );
        assert_eq!(
            lab_cl_ord_id(10_000_000_000_000, false),
            Err(Error::BadClOrdId)
        );
        assert_eq!(lab_cl_ord_id(u64::MAX, false), Err(Error::BadClOrdId));
        for (seq, reverse) in [
            (0, false),
            (1, true),
            (42, false),
            (1_234_567_890_123, true),
            (9_999_999_999_999, false),
        ] {
            let id = lab_cl_ord_id(seq, reverse).unwrap();
            assert_eq!(parse_lab_cl_ord_id(&id), Ok((seq, reverse)));
        }
        for bad in [
            b"0000000000042o",
            b"0000000000042 ",
            b"           42O",
            b"+000000000042O",
            b"00000000000x2R",
            b"00000000000042",
            b"\0\0\0\0\0\0\0\0\0\0\0\0\0O",
        ] {
            assert_eq!(parse_lab_cl_ord_id(bad), Err(Error::BadClOrdId), "{bad:?}");
        }
    }

    /// The lab's order converts to the Enter Order above and back.
    #[test]
    fn lab_order_round_trip() {
        let order = OrderRepr {
            side: Side::Buy,
            reverse: true,
            shares: 100,
            token: 7,
            tick_seq: 1_000_001,
            price: Price4(1_234_567),
            stock: Stock::new("AAPL").unwrap(),
        };
        let enter = EnterOrder::from_order(&order).unwrap();
        assert_eq!(enter, enter_order());
        assert_eq!(enter.to_order(), Ok(order));
        assert_eq!(
            Inbound::parse(&ENTER_ORDER_BYTES),
            Ok(Inbound::EnterOrder(enter))
        );
        for order in [
            OrderRepr {
                side: Side::Sell,
                reverse: false,
                token: u64::from(u32::MAX),
                tick_seq: 0,
                ..order
            },
            OrderRepr {
                tick_seq: 9_999_999_999_999,
                token: 0,
                ..order
            },
        ] {
            let enter = EnterOrder::from_order(&order).unwrap();
            let mut out = [0u8; 47];
            enter.emit_into(&mut out).unwrap();
            let Ok(Inbound::EnterOrder(parsed)) = Inbound::parse(&out) else {
                panic!("{out:?}");
            };
            assert_eq!(parsed.to_order(), Ok(order));
        }
        let too_big = 1u64 << 32;
        assert_eq!(
            EnterOrder::from_order(&OrderRepr {
                token: too_big,
                ..order
            }),
            Err(Error::BadToken(too_big))
        );
        assert_eq!(
            EnterOrder::from_order(&OrderRepr {
                tick_seq: 10_000_000_000_000,
                ..order
            }),
            Err(Error::BadClOrdId)
        );
        let foreign = EnterOrder {
            cl_ord_id: *b"CLIENT-ID-0001",
            ..enter_order()
        };
        assert_eq!(foreign.to_order(), Err(Error::BadClOrdId));
    }

    #[test]
    fn accepted_echoes_the_order() {
        let enter = EnterOrder {
            side: Side::Sell,
            quantity: 200,
            symbol: Stock(*b"MSFT    "),
            price: Price4(4_021_500),
            time_in_force: time_in_force::DAY,
            display: display::HIDDEN,
            capacity: capacity::AGENCY,
            cl_ord_id: *b"0000000000042O",
            ..enter_order()
        };
        assert_eq!(
            enter.accepted(34_200_000_000_123, 42_000_001, order_state::LIVE),
            order_accepted()
        );
    }

    /// Every prefix of pseudo-random buffers (each type byte, small and large appendage
    /// lengths) parses or fails without panicking; what parses re-emits to the same bytes.
    #[test]
    fn any_prefix_of_any_bytes_is_handled() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let kinds = [b'O', b'X', b'A', b'E', b'C', b'J', b'S', b'Q', 0];
        let mut ok = 0;
        for round in 0..400 {
            let mut buf = [0u8; 96];
            for b in buf.iter_mut() {
                *b = next() as u8;
            }
            buf[0] = kinds[round % kinds.len()];
            // Mostly small appendage lengths, so that some messages are complete.
            for at in [34, 45, 62] {
                if round % 3 != 0 {
                    buf[at] = 0;
                    buf[at + 1] = (next() % 8) as u8;
                }
            }
            // Sometimes a valid message's bytes, with a few random bytes changed.
            if round % 4 == 0 {
                let (bytes, _) = all()[round / 4 % 7];
                buf[..bytes.len()].copy_from_slice(bytes);
                buf[(next() % 64) as usize] = next() as u8;
            }
            for len in 0..=buf.len() {
                let msg = &buf[..len];
                if let Ok(m) = Inbound::parse(msg) {
                    ok += 1;
                    let mut out = [0u8; 96];
                    let n = m.emit_into(&mut out).unwrap();
                    assert_eq!(Inbound::parse(&out[..n]), Ok(m));
                }
                if let Ok((m, appendage)) = Outbound::parse_with_appendage(msg) {
                    ok += 1;
                    let mut out = [0u8; 96];
                    let n = m.emit_into(&mut out).unwrap();
                    assert_eq!(n + appendage.len(), len);
                    assert_eq!(Outbound::parse(&out[..n]), Ok(m));
                }
                // The views, checked, never panic in an accessor.
                if let Ok(p) = enter_order::Packet::new_checked(msg) {
                    let _ = (p.appendage(), p.price(), p.cl_ord_id());
                    let _ = EnterOrder::parse(&p);
                }
                if let Ok(p) = order_accepted::Packet::new_checked(msg) {
                    let _ = (p.appendage(), p.order_reference_number());
                    let _ = OrderAccepted::parse(&p);
                }
                if let Ok(p) = order_executed::Packet::new_checked(msg) {
                    let _ = (p.appendage(), p.match_number());
                    let _ = OrderExecuted::parse(&p);
                }
            }
        }
        assert!(
            ok > 50,
            "only {ok} buffers parsed: the test exercises too little"
        );
    }
}
