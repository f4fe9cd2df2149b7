//! OUCH 5.0 (Nasdaq, "OUCH 5.0"), the order entry protocol, carried in SoupBinTCP's data
//! packets: each message starts with its type byte. Integers are big-endian binary; Alpha
//! fields are left-justified and padded on the right with spaces; a Price is 8 bytes, a signed
//! integer with 4 implied decimals; a Timestamp is 8 bytes, nanoseconds since midnight.
//!
//! Enter Order, Order Accepted and Order Executed end in an appendage: a 2-byte length
//! (`APPENDAGE_LEN`), then that many bytes of optional fields (`APPENDAGE`). A message's `LEN`
//! is its fixed part, up to and including the appendage length.
//!
//! The one-byte codes of the enumerated fields are in the modules after the messages
//! ([`side`](crate::layout::ouch::side), [`time_in_force`](crate::layout::ouch::time_in_force),
//! ...).

/// Enter Order, type `'O'` (client to exchange).
pub mod enter_order {
    /// Byte ranges of the message.
    pub mod field {
        use crate::layout::{Field, Rest};

        /// Message type, `'O'`.
        pub const KIND: usize = 0;
        /// The client's order reference number, u32, unique and increasing within the session.
        pub const USER_REF_NUM: Field = 1..5;
        /// Side ([`super::super::side`]).
        pub const SIDE: usize = 5;
        /// Shares, u32.
        pub const QUANTITY: Field = 6..10;
        /// Stock symbol, alpha 8.
        pub const SYMBOL: Field = 10..18;
        /// Limit price, 8-byte signed Price(4).
        pub const PRICE: Field = 18..26;
        /// Time in force ([`super::super::time_in_force`]).
        pub const TIME_IN_FORCE: usize = 26;
        /// Display ([`super::super::display`]).
        pub const DISPLAY: usize = 27;
        /// Capacity ([`super::super::capacity`]).
        pub const CAPACITY: usize = 28;
        /// Intermarket sweep eligibility ([`super::super::intermarket_sweep`]).
        pub const INTERMARKET_SWEEP: usize = 29;
        /// Cross type ([`super::super::cross_type`]).
        pub const CROSS_TYPE: usize = 30;
        /// The client's order ID, alpha 14.
        pub const CL_ORD_ID: Field = 31..45;
        /// Length of the optional appendage, u16.
        pub const APPENDAGE_LEN: Field = 45..47;
        /// The optional appendage.
        pub const APPENDAGE: Rest = 47..;
    }

    /// The message's type byte.
    pub const KIND: u8 = b'O';
    /// Length of the fixed part (without the appendage).
    pub const LEN: usize = field::APPENDAGE_LEN.end;
}

/// Cancel Order, type `'X'` (client to exchange).
pub mod cancel_order {
    /// Byte ranges of the message.
    pub mod field {
        use crate::layout::Field;

        /// Message type, `'X'`.
        pub const KIND: usize = 0;
        /// The order's user reference number, u32.
        pub const USER_REF_NUM: Field = 1..5;
        /// The new intended quantity, u32; 0 cancels the order.
        pub const QUANTITY: Field = 5..9;
    }

    /// The message's type byte.
    pub const KIND: u8 = b'X';
    /// The message's length.
    pub const LEN: usize = field::QUANTITY.end;
}

/// Order Accepted, type `'A'` (exchange to client).
pub mod order_accepted {
    /// Byte ranges of the message.
    pub mod field {
        use crate::layout::{Field, Rest};

        /// Message type, `'A'`.
        pub const KIND: usize = 0;
        /// Nanoseconds since midnight, u64.
        pub const TIMESTAMP: Field = 1..9;
        /// The order's user reference number, u32.
        pub const USER_REF_NUM: Field = 9..13;
        /// Side ([`super::super::side`]).
        pub const SIDE: usize = 13;
        /// Shares, u32.
        pub const QUANTITY: Field = 14..18;
        /// Stock symbol, alpha 8.
        pub const SYMBOL: Field = 18..26;
        /// Price, 8-byte signed Price(4).
        pub const PRICE: Field = 26..34;
        /// Time in force ([`super::super::time_in_force`]).
        pub const TIME_IN_FORCE: usize = 34;
        /// Display ([`super::super::display`]).
        pub const DISPLAY: usize = 35;
        /// The exchange's order reference number, u64.
        pub const ORDER_REFERENCE_NUMBER: Field = 36..44;
        /// Capacity ([`super::super::capacity`]).
        pub const CAPACITY: usize = 44;
        /// Intermarket sweep eligibility ([`super::super::intermarket_sweep`]).
        pub const INTERMARKET_SWEEP: usize = 45;
        /// Cross type ([`super::super::cross_type`]).
        pub const CROSS_TYPE: usize = 46;
        /// Order state ([`super::super::order_state`]).
        pub const ORDER_STATE: usize = 47;
        /// The client's order ID, alpha 14.
        pub const CL_ORD_ID: Field = 48..62;
        /// Length of the optional appendage, u16.
        pub const APPENDAGE_LEN: Field = 62..64;
        /// The optional appendage.
        pub const APPENDAGE: Rest = 64..;
    }

    /// The message's type byte.
    pub const KIND: u8 = b'A';
    /// Length of the fixed part (without the appendage).
    pub const LEN: usize = field::APPENDAGE_LEN.end;
}

/// Order Executed, type `'E'` (exchange to client).
pub mod order_executed {
    /// Byte ranges of the message.
    pub mod field {
        use crate::layout::{Field, Rest};

        /// Message type, `'E'`.
        pub const KIND: usize = 0;
        /// Nanoseconds since midnight, u64.
        pub const TIMESTAMP: Field = 1..9;
        /// The order's user reference number, u32.
        pub const USER_REF_NUM: Field = 9..13;
        /// Shares executed, u32.
        pub const QUANTITY: Field = 13..17;
        /// Execution price, 8-byte signed Price(4).
        pub const PRICE: Field = 17..25;
        /// Liquidity flag (added, removed, ...), one byte.
        pub const LIQUIDITY_FLAG: usize = 25;
        /// The execution's match number, u64.
        pub const MATCH_NUMBER: Field = 26..34;
        /// Length of the optional appendage, u16.
        pub const APPENDAGE_LEN: Field = 34..36;
        /// The optional appendage.
        pub const APPENDAGE: Rest = 36..;
    }

    /// The message's type byte.
    pub const KIND: u8 = b'E';
    /// Length of the fixed part (without the appendage).
    pub const LEN: usize = field::APPENDAGE_LEN.end;
}

/// Order Canceled, type `'C'` (exchange to client).
pub mod order_canceled {
    /// Byte ranges of the message.
    pub mod field {
        use crate::layout::Field;

        /// Message type, `'C'`.
        pub const KIND: usize = 0;
        /// Nanoseconds since midnight, u64.
        pub const TIMESTAMP: Field = 1..9;
        /// The order's user reference number, u32.
        pub const USER_REF_NUM: Field = 9..13;
        /// Shares taken off the order, u32.
        pub const QUANTITY: Field = 13..17;
        /// Why ([`super::super::cancel_reason`]).
        pub const REASON: usize = 17;
    }

    /// The message's type byte.
    pub const KIND: u8 = b'C';
    /// The message's length.
    pub const LEN: usize = field::REASON + 1;
}

/// Order Rejected, type `'J'` (exchange to client).
pub mod order_rejected {
    /// Byte ranges of the message.
    pub mod field {
        use crate::layout::Field;

        /// Message type, `'J'`.
        pub const KIND: usize = 0;
        /// Nanoseconds since midnight, u64.
        pub const TIMESTAMP: Field = 1..9;
        /// The rejected order's user reference number, u32.
        pub const USER_REF_NUM: Field = 9..13;
        /// Reject reason code, u16.
        pub const REASON: Field = 13..15;
        /// The rejected order's client order ID, alpha 14.
        pub const CL_ORD_ID: Field = 15..29;
    }

    /// The message's type byte.
    pub const KIND: u8 = b'J';
    /// The message's length.
    pub const LEN: usize = field::CL_ORD_ID.end;
}

/// System Event, type `'S'` (exchange to client).
pub mod system_event {
    /// Byte ranges of the message.
    pub mod field {
        use crate::layout::Field;

        /// Message type, `'S'`.
        pub const KIND: usize = 0;
        /// Nanoseconds since midnight, u64.
        pub const TIMESTAMP: Field = 1..9;
        /// Event code ([`super::super::event_code`]).
        pub const EVENT_CODE: usize = 9;
    }

    /// The message's type byte.
    pub const KIND: u8 = b'S';
    /// The message's length.
    pub const LEN: usize = field::EVENT_CODE + 1;
}

/// Side codes (Enter Order, Order Accepted).
pub mod side {
    /// Buy.
    pub const BUY: u8 = b'B';
    /// Sell.
    pub const SELL: u8 = b'S';
    /// Sell short.
    pub const SELL_SHORT: u8 = b'T';
    /// Sell short exempt.
    pub const SELL_SHORT_EXEMPT: u8 = b'E';
    /// Every code OUCH 5.0 defines.
    pub const ALL: [u8; 4] = [BUY, SELL, SELL_SHORT, SELL_SHORT_EXEMPT];
}

/// Time in force codes.
pub mod time_in_force {
    /// Day: lives until the end of the regular session.
    pub const DAY: u8 = b'0';
    /// Immediate or cancel.
    pub const IOC: u8 = b'3';
    /// Good till extended hours (GTX).
    pub const GTX: u8 = b'5';
    /// Good till time (GTT, the expiry in the appendage).
    pub const GTT: u8 = b'6';
    /// After hours.
    pub const AFTER_HOURS: u8 = b'E';
    /// Every code OUCH 5.0 defines.
    pub const ALL: [u8; 5] = [DAY, IOC, GTX, GTT, AFTER_HOURS];
}

/// Display codes.
pub mod display {
    /// Visible.
    pub const VISIBLE: u8 = b'Y';
    /// Hidden.
    pub const HIDDEN: u8 = b'N';
    /// Attributable (visible, with the firm's MPID).
    pub const ATTRIBUTABLE: u8 = b'A';
    /// Every code OUCH 5.0 defines.
    pub const ALL: [u8; 3] = [VISIBLE, HIDDEN, ATTRIBUTABLE];
}

/// Capacity codes.
pub mod capacity {
    /// Agency.
    pub const AGENCY: u8 = b'A';
    /// Principal.
    pub const PRINCIPAL: u8 = b'P';
    /// Riskless principal.
    pub const RISKLESS: u8 = b'R';
    /// Other.
    pub const OTHER: u8 = b'O';
    /// Every code OUCH 5.0 defines.
    pub const ALL: [u8; 4] = [AGENCY, PRINCIPAL, RISKLESS, OTHER];
}

/// Intermarket sweep eligibility codes.
pub mod intermarket_sweep {
    /// Eligible.
    pub const YES: u8 = b'Y';
    /// Not eligible.
    pub const NO: u8 = b'N';
    /// Every code OUCH 5.0 defines.
    pub const ALL: [u8; 2] = [YES, NO];
}

/// Cross type codes.
pub mod cross_type {
    /// Continuous market (no cross).
    pub const CONTINUOUS: u8 = b'N';
    /// Opening cross.
    pub const OPENING: u8 = b'O';
    /// Closing cross.
    pub const CLOSING: u8 = b'C';
    /// Halt/IPO cross.
    pub const HALT_IPO: u8 = b'H';
    /// Supplemental order.
    pub const SUPPLEMENTAL: u8 = b'S';
    /// Retail.
    pub const RETAIL: u8 = b'R';
    /// Extended life.
    pub const EXTENDED_LIFE: u8 = b'E';
    /// After hours close.
    pub const AFTER_HOURS_CLOSE: u8 = b'A';
    /// Every code OUCH 5.0 defines.
    pub const ALL: [u8; 8] = [
        CONTINUOUS,
        OPENING,
        CLOSING,
        HALT_IPO,
        SUPPLEMENTAL,
        RETAIL,
        EXTENDED_LIFE,
        AFTER_HOURS_CLOSE,
    ];
}

/// Order state codes (Order Accepted).
pub mod order_state {
    /// Live: on the book.
    pub const LIVE: u8 = b'L';
    /// Dead: accepted but already done (an IOC that found nothing to match).
    pub const DEAD: u8 = b'D';
    /// Every code OUCH 5.0 defines.
    pub const ALL: [u8; 2] = [LIVE, DEAD];
}

/// Order Canceled reason codes.
pub mod cancel_reason {
    /// The user asked (Cancel Order).
    pub const USER_REQUESTED: u8 = b'U';
    /// Immediate or cancel: the unexecuted rest of an IOC order.
    pub const IMMEDIATE_OR_CANCEL: u8 = b'I';
    /// Timeout: the order's time in force ran out.
    pub const TIMEOUT: u8 = b'T';
    /// Supervisory: canceled by the exchange's staff.
    pub const SUPERVISORY: u8 = b'S';
    /// Regulatory restriction.
    pub const REGULATORY: u8 = b'D';
    /// Self-match prevention.
    pub const SELF_MATCH_PREVENTION: u8 = b'Q';
    /// System cancel.
    pub const SYSTEM: u8 = b'Z';
    /// Every code the lab knows (OUCH 5.0's list as the lab was written against it).
    pub const ALL: [u8; 7] = [
        USER_REQUESTED,
        IMMEDIATE_OR_CANCEL,
        TIMEOUT,
        SUPERVISORY,
        REGULATORY,
        SELF_MATCH_PREVENTION,
        SYSTEM,
    ];
}

/// System Event codes.
pub mod event_code {
    /// Start of day: the first message of the session.
    pub const START_OF_DAY: u8 = b'S';
    /// End of day: the last message of the session.
    pub const END_OF_DAY: u8 = b'E';
    /// Every code OUCH 5.0 defines.
    pub const ALL: [u8; 2] = [START_OF_DAY, END_OF_DAY];
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Field;

    /// `fields` cover `0..len` in order, with no gap and no overlap.
    fn tiles(fields: &[Field], len: usize) {
        let mut at = 0;
        for f in fields {
            assert_eq!(f.start, at, "{f:?}");
            assert!(f.end > f.start, "{f:?}");
            at = f.end;
        }
        assert_eq!(at, len);
    }

    fn one(i: usize) -> Field {
        i..i + 1
    }

    /// Each message's fields tile its fixed part (a mistyped offset shows up here), and the
    /// appendage starts right after it.
    #[test]
    fn fields_tile_each_message() {
        {
            use enter_order::field::*;
            tiles(
                &[
                    one(KIND),
                    USER_REF_NUM,
                    one(SIDE),
                    QUANTITY,
                    SYMBOL,
                    PRICE,
                    one(TIME_IN_FORCE),
                    one(DISPLAY),
                    one(CAPACITY),
                    one(INTERMARKET_SWEEP),
                    one(CROSS_TYPE),
                    CL_ORD_ID,
                    APPENDAGE_LEN,
                ],
                enter_order::LEN,
            );
            assert_eq!(APPENDAGE.start, enter_order::LEN);
            assert_eq!(enter_order::LEN, 47);
        }
        {
            use cancel_order::field::*;
            tiles(&[one(KIND), USER_REF_NUM, QUANTITY], cancel_order::LEN);
            assert_eq!(cancel_order::LEN, 9);
        }
        {
            use order_accepted::field::*;
            tiles(
                &[
                    one(KIND),
                    TIMESTAMP,
                    USER_REF_NUM,
                    one(SIDE),
                    QUANTITY,
                    SYMBOL,
                    PRICE,
                    one(TIME_IN_FORCE),
                    one(DISPLAY),
                    ORDER_REFERENCE_NUMBER,
                    one(CAPACITY),
                    one(INTERMARKET_SWEEP),
                    one(CROSS_TYPE),
                    one(ORDER_STATE),
                    CL_ORD_ID,
                    APPENDAGE_LEN,
                ],
                order_accepted::LEN,
            );
            assert_eq!(APPENDAGE.start, order_accepted::LEN);
            assert_eq!(order_accepted::LEN, 64);
        }
        {
            use order_executed::field::*;
            tiles(
                &[
                    one(KIND),
                    TIMESTAMP,
                    USER_REF_NUM,
                    QUANTITY,
                    PRICE,
                    one(LIQUIDITY_FLAG),
                    MATCH_NUMBER,
                    APPENDAGE_LEN,
                ],
                order_executed::LEN,
            );
            assert_eq!(APPENDAGE.start, order_executed::LEN);
            assert_eq!(order_executed::LEN, 36);
        }
        {
            use order_canceled::field::*;
            tiles(
                &[one(KIND), TIMESTAMP, USER_REF_NUM, QUANTITY, one(REASON)],
                order_canceled::LEN,
            );
            assert_eq!(order_canceled::LEN, 18);
        }
        {
            use order_rejected::field::*;
            tiles(
                &[one(KIND), TIMESTAMP, USER_REF_NUM, REASON, CL_ORD_ID],
                order_rejected::LEN,
            );
            assert_eq!(order_rejected::LEN, 29);
        }
        {
            use system_event::field::*;
            tiles(&[one(KIND), TIMESTAMP, one(EVENT_CODE)], system_event::LEN);
            assert_eq!(system_event::LEN, 10);
        }
    }

    /// Each direction's type bytes are distinct, so one byte picks the message.
    #[test]
    fn type_bytes_are_distinct_per_direction() {
        assert_ne!(enter_order::KIND, cancel_order::KIND);
        let outbound = [
            order_accepted::KIND,
            order_executed::KIND,
            order_canceled::KIND,
            order_rejected::KIND,
            system_event::KIND,
        ];
        for (i, a) in outbound.iter().enumerate() {
            assert!(!outbound[i + 1..].contains(a), "{}", char::from(*a));
        }
    }
}
