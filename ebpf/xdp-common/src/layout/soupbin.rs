//! SoupBinTCP 3.00 (Nasdaq, "SoupBinTCP 3.00", the session protocol under OUCH and
//! TotalView-ITCH over TCP). Every packet is a 2-byte big-endian length (of what follows it: the
//! type byte and the payload), a type byte and a payload. Alpha fields are left-justified and
//! padded on the right with spaces; numeric fields are ASCII digits, right-justified and padded
//! on the left with spaces.

/// The packet header.
pub mod header {
    use crate::layout::Field;

    /// Length of the rest of the packet (type byte and payload), big-endian.
    pub const LEN: Field = 0..2;
    /// Packet type.
    pub const KIND: usize = 2;
    /// Header length: the payload starts here.
    pub const HEADER_LEN: usize = KIND + 1;
}

/// Packet types, as the spec names them.
pub mod kind {
    /// Debug (either direction): free text, to be ignored.
    pub const DEBUG: u8 = b'+';
    /// Server: Login Accepted.
    pub const LOGIN_ACCEPTED: u8 = b'A';
    /// Server: Login Rejected.
    pub const LOGIN_REJECTED: u8 = b'J';
    /// Server: Sequenced Data (one higher-level message, numbered by counting).
    pub const SEQUENCED_DATA: u8 = b'S';
    /// Server: Server Heartbeat.
    pub const SERVER_HEARTBEAT: u8 = b'H';
    /// Server: End of Session.
    pub const END_OF_SESSION: u8 = b'Z';
    /// Client: Login Request.
    pub const LOGIN_REQUEST: u8 = b'L';
    /// Client: Unsequenced Data (one higher-level message, not numbered).
    pub const UNSEQUENCED_DATA: u8 = b'U';
    /// Client: Client Heartbeat.
    pub const CLIENT_HEARTBEAT: u8 = b'R';
    /// Client: Logout Request.
    pub const LOGOUT_REQUEST: u8 = b'O';
}

/// Login Request's payload.
pub mod login_request {
    use crate::layout::Field;

    /// Username, alpha 6.
    pub const USERNAME: Field = 0..6;
    /// Password, alpha 10.
    pub const PASSWORD: Field = 6..16;
    /// Requested session, alpha 10 (all spaces: the server's current session).
    pub const SESSION: Field = 16..26;
    /// Requested sequence number, numeric 20: the next sequenced message the client wants (0:
    /// from the most recent, none of the past).
    pub const SEQUENCE: Field = 26..46;
    /// Payload length.
    pub const LEN: usize = SEQUENCE.end;
}

/// Login Accepted's payload.
pub mod login_accepted {
    use crate::layout::Field;

    /// The session now logged into, alpha 10.
    pub const SESSION: Field = 0..10;
    /// Sequence number of the next sequenced message the server will send, numeric 20.
    pub const SEQUENCE: Field = 10..30;
    /// Payload length.
    pub const LEN: usize = SEQUENCE.end;
}

/// Login Rejected's payload.
pub mod login_rejected {
    /// Reject reason code: `'A'` not authorized, `'S'` session not available.
    pub const REASON: usize = 0;
    /// Payload length.
    pub const LEN: usize = REASON + 1;
    /// Not authorized: a bad username or password.
    pub const NOT_AUTHORIZED: u8 = b'A';
    /// Session not available: the requested session is not this server's.
    pub const SESSION_NOT_AVAILABLE: u8 = b'S';
}
