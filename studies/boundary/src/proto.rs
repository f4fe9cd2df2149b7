//! The boundary study's wire protocol, with a stateful extension and error replies.
//!
//! Every frame, in both directions, is `[u32 len][len bytes]`, little-endian throughout.
//!
//! Requests (the first body byte is the opcode):
//!
//! | opcode | name           | body after the opcode                                          |
//! |--------|----------------|----------------------------------------------------------------|
//! | 0      | `SWEEP`        | `[u32 n_bars][u32 n_combos][n_bars x f64][n_combos x 6 x i64]` |
//! | 1      | `ECHO`         | the same layout as `SWEEP` (the combos are ignored)            |
//! | 2      | `LOAD`         | the same layout, `n_combos` must be 0                          |
//! | 3      | `SWEEP_HANDLE` | `[u64 handle][u32 n_combos][n_combos x 6 x i64]`               |
//! | 4      | `FREE`         | `[u64 handle]`                                                 |
//!
//! Replies (`len` without the error flag):
//!
//! - `SWEEP`, `SWEEP_HANDLE`: `[n_combos x f64 pnl][n_combos x i64 trades]` (the study's).
//! - `ECHO`: the `n_bars x f64` close array, verbatim.
//! - `LOAD`: `[u64 handle]`. `FREE`: empty (`len == 0`).
//! - Error: the length word has [`ERROR_FLAG`] (bit 31) set; the body is
//!   `[u16 code][UTF-8 message]` ([`ErrorCode`]). No success reply can have bit 31 set: frames are
//!   capped far below 2 GiB.
//!
//! The study's two opcodes are byte-for-byte the study's frames; a client that only speaks
//! opcodes 0 and 1 and never sends a bad frame never sees anything else.
//!
//! Decoding is checked in the order a server reads: the length word against the cap (nothing is
//! allocated for a frame over it), then the opcode, then the header's counts against the length
//! (a frame that disagrees is drained through a fixed buffer, never stored). Only then is the
//! body read, into a buffer that grows with the bytes actually received.
use std::io::{self, BufRead, Read};
use std::ops::Range;

use engine::{ComboResult, Params};

/// Bytes of the length word in front of every frame.
pub const LEN_BYTES: usize = 4;
/// Bytes of one combo's parameters on the wire: six i64 windows `[n, half, sq, p, p3, p2]`.
pub const PARAMS_BYTES: usize = 48;
/// Bytes of one combo's result in a sweep reply: one f64 PnL and one i64 trade count.
pub const RESULT_BYTES: usize = 16;
/// Default cap on a frame's length word: 256 MiB (32 Mi bars), the figure.
pub const DEFAULT_MAX_FRAME: u32 = 256 << 20;
/// Set in a reply's length word when the body is an error (`[u16 code][message]`).
pub const ERROR_FLAG: u32 = 1 << 31;
/// Cap on an error reply's body, so a client never allocates much for one.
pub const MAX_ERROR_BODY: u32 = 64 << 10;
/// Largest window accepted from the wire. The engine's WMA divisor is `w(w+1)/2` in `usize`;
/// this keeps it exact, and no series under the frame cap comes close to this many bars.
pub const MAX_WINDOW: i64 = i32::MAX as i64;

/// Byte ranges of a request body (smoltcp's `field` module).
pub mod field {
    /// A range of bytes inside a body.
    pub type Field = core::ops::Range<usize>;
    /// The opcode byte.
    pub const OPCODE: usize = 0;
    /// Series bodies (`SWEEP`, `ECHO`, `LOAD`): bar count.
    pub const N_BARS: Field = 1..5;
    /// Series bodies: combo count.
    pub const N_COMBOS: Field = 5..9;
    /// Series bodies: where the closes start.
    pub const SERIES_PAYLOAD: usize = 9;
    /// `SWEEP_HANDLE` and `FREE`: the handle.
    pub const HANDLE: Field = 1..9;
    /// `SWEEP_HANDLE`: combo count.
    pub const HANDLE_N_COMBOS: Field = 9..13;
    /// `SWEEP_HANDLE`: where the parameters start.
    pub const HANDLE_PAYLOAD: usize = 13;
    /// `FREE`: the whole body.
    pub const FREE_LEN: usize = 9;
}

/// A request's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// Sweep the given combos over the given series (the study's opcode 0).
    Sweep = 0,
    /// Send the series back (the study's opcode 1).
    Echo = 1,
    /// Keep the series on the server, reply with a handle.
    Load = 2,
    /// Sweep the given combos over a loaded series.
    SweepHandle = 3,
    /// Forget a loaded series.
    Free = 4,
}

impl Opcode {
    /// The opcode for a byte, if it is one.
    #[must_use]
    pub const fn from_u8(b: u8) -> Option<Self> {
        Some(match b {
            0 => Self::Sweep,
            1 => Self::Echo,
            2 => Self::Load,
            3 => Self::SweepHandle,
            4 => Self::Free,
            _ => return None,
        })
    }

    /// Bytes of the fixed header, opcode included, that fix the body's length.
    #[must_use]
    pub const fn header_len(self) -> usize {
        match self {
            Self::Sweep | Self::Echo | Self::Load => field::SERIES_PAYLOAD,
            Self::SweepHandle => field::HANDLE_PAYLOAD,
            Self::Free => field::FREE_LEN,
        }
    }

    /// The body length a header implies (`header` is [`Opcode::header_len`] bytes, opcode
    /// first). Computed in u64, so no count can overflow it.
    #[must_use]
    pub fn implied_len(self, header: &[u8]) -> u64 {
        let (pb, pc) = (PARAMS_BYTES as u64, 8_u64);
        match self {
            Self::Sweep | Self::Echo | Self::Load => {
                field::SERIES_PAYLOAD as u64
                    + pc * u64::from(u32_at(header, field::N_BARS))
                    + pb * u64::from(u32_at(header, field::N_COMBOS))
            }
            Self::SweepHandle => {
                field::HANDLE_PAYLOAD as u64
                    + pb * u64::from(u32_at(header, field::HANDLE_N_COMBOS))
            }
            Self::Free => field::FREE_LEN as u64,
        }
    }
}

/// An error reply's code: the `u16` in front of its message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum ErrorCode {
    /// The length word is over the server's cap. The server closes the connection (it did
    /// not read the body, so it cannot find the next frame).
    FrameTooLarge = 1,
    /// The stream ended inside a frame. The server closes the connection.
    Truncated = 2,
    /// The length word disagrees with the header's counts (or is shorter than the header).
    /// The frame is skipped; the connection stays open.
    BadLength = 3,
    /// The opcode byte is not one of 0..=4. Skipped; the connection stays open.
    UnknownOpcode = 4,
    /// No series with that handle on this connection. The connection stays open.
    UnknownHandle = 5,
    /// A combo's windows are invalid (below 1, over [`MAX_WINDOW`]), or `LOAD` carried combos.
    InvalidParams = 6,
    /// This connection holds too many series, or too many bytes of them.
    TooManyHandles = 7,
    /// The server has as many connections as it serves; it closes this one.
    Busy = 8,
    /// The engine failed or panicked on this request (a bug). The connection stays open.
    Internal = 9,
}

impl ErrorCode {
    /// The code for a `u16`, if it is one.
    #[must_use]
    pub const fn from_u16(v: u16) -> Option<Self> {
        Some(match v {
            1 => Self::FrameTooLarge,
            2 => Self::Truncated,
            3 => Self::BadLength,
            4 => Self::UnknownOpcode,
            5 => Self::UnknownHandle,
            6 => Self::InvalidParams,
            7 => Self::TooManyHandles,
            8 => Self::Busy,
            9 => Self::Internal,
            _ => return None,
        })
    }
}

/// What is wrong with a frame, found while reading or parsing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// The length word is over the cap; nothing was allocated for the body.
    #[error("frame of {len} bytes is over the {max}-byte cap")]
    TooLarge {
        /// The claimed length.
        len: u64,
        /// The cap.
        max: u32,
    },
    /// The stream ended inside a frame.
    #[error("stream ended after {got} of {expected} bytes of a frame")]
    Truncated {
        /// Bytes the frame said it had (length word included).
        expected: u64,
        /// Bytes that arrived.
        got: u64,
    },
    /// The length word disagrees with the header.
    #[error("opcode {opcode}: body of {len} bytes, but its header implies {implied}")]
    BadLength {
        /// The opcode byte (0 when the body was empty).
        opcode: u8,
        /// The length word.
        len: u64,
        /// What the header's counts imply (the header's own size when the body is shorter).
        implied: u64,
    },
    /// Not an opcode.
    #[error("unknown opcode {opcode}")]
    UnknownOpcode {
        /// The byte.
        opcode: u8,
    },
}

impl FrameError {
    /// The error reply's code.
    #[must_use]
    pub const fn code(&self) -> ErrorCode {
        match self {
            Self::TooLarge { .. } => ErrorCode::FrameTooLarge,
            Self::Truncated { .. } => ErrorCode::Truncated,
            Self::BadLength { .. } => ErrorCode::BadLength,
            Self::UnknownOpcode { .. } => ErrorCode::UnknownOpcode,
        }
    }

    /// True when the stream cannot go on after it (the next frame's start is unknown).
    #[must_use]
    pub const fn is_fatal(&self) -> bool {
        matches!(self, Self::TooLarge { .. } | Self::Truncated { .. })
    }
}

fn u32_at(b: &[u8], f: Range<usize>) -> u32 {
    let mut w = [0; 4];
    w.copy_from_slice(&b[f]);
    u32::from_le_bytes(w)
}

fn u64_at(b: &[u8], f: Range<usize>) -> u64 {
    let mut w = [0; 8];
    w.copy_from_slice(&b[f]);
    u64::from_le_bytes(w)
}

/// A view of little-endian f64 values in a body; `len()` values, read on demand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct F64s<'a>(&'a [u8]);

impl<'a> F64s<'a> {
    /// Values in the view.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.0.len() / 8
    }
    /// True when there are none.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The raw bytes, as they came.
    #[must_use]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
    /// The values, decoded into `out` (cleared first).
    pub fn decode_into(&self, out: &mut Vec<f64>) {
        out.clear();
        out.extend(self.0.chunks_exact(8).map(|c| {
            let mut w = [0; 8];
            w.copy_from_slice(c);
            f64::from_le_bytes(w)
        }));
    }
    /// The values as a new vector.
    #[must_use]
    pub fn to_vec(&self) -> Vec<f64> {
        let mut v = Vec::with_capacity(self.len());
        self.decode_into(&mut v);
        v
    }
}

/// A view of combos' parameters in a body, 48 bytes each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamsBytes<'a>(&'a [u8]);

impl ParamsBytes<'_> {
    /// Combos in the view.
    #[must_use]
    pub const fn len(&self) -> usize {
        self.0.len() / PARAMS_BYTES
    }
    /// True when there are none.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// The six raw windows of each combo, in wire order.
    pub fn iter(&self) -> impl Iterator<Item = [i64; 6]> + '_ {
        self.0.chunks_exact(PARAMS_BYTES).map(|c| {
            let mut p = [0_i64; 6];
            for (v, b) in p.iter_mut().zip(c.chunks_exact(8)) {
                let mut w = [0; 8];
                w.copy_from_slice(b);
                *v = i64::from_le_bytes(w);
            }
            p
        })
    }
    /// Validated [`Params`] into `out` (cleared first).
    ///
    /// # Errors
    /// The index of the first invalid combo and why it is invalid.
    pub fn decode_into(&self, out: &mut Vec<Params>) -> Result<(), (usize, String)> {
        out.clear();
        for (i, w) in self.iter().enumerate() {
            if let Some(&big) = w.iter().find(|&&v| v > MAX_WINDOW) {
                return Err((i, format!("window {big} is over the maximum {MAX_WINDOW}")));
            }
            out.push(Params::from_wire(w).map_err(|e| (i, e.to_string()))?);
        }
        Ok(())
    }
}

/// A parsed request: views into the body it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request<'a> {
    /// Opcode 0.
    Sweep {
        /// The series.
        close: F64s<'a>,
        /// The combos.
        params: ParamsBytes<'a>,
    },
    /// Opcode 1.
    Echo {
        /// The series, to send back.
        close: F64s<'a>,
        /// Combos, ignored.
        params: ParamsBytes<'a>,
    },
    /// Opcode 2.
    Load {
        /// The series to keep.
        close: F64s<'a>,
        /// Combos; must be none.
        params: ParamsBytes<'a>,
    },
    /// Opcode 3.
    SweepHandle {
        /// A handle from `LOAD` on this connection.
        handle: u64,
        /// The combos.
        params: ParamsBytes<'a>,
    },
    /// Opcode 4.
    Free {
        /// A handle from `LOAD` on this connection.
        handle: u64,
    },
}

impl<'a> Request<'a> {
    /// Parses a whole body (without its length word), checking every length, never panicking.
    ///
    /// # Errors
    /// [`FrameError::BadLength`] or [`FrameError::UnknownOpcode`].
    pub fn parse(body: &'a [u8]) -> Result<Self, FrameError> {
        let len = body.len() as u64;
        let Some(&byte) = body.get(field::OPCODE) else {
            return Err(FrameError::BadLength {
                opcode: 0,
                len,
                implied: 1,
            });
        };
        let op = Opcode::from_u8(byte).ok_or(FrameError::UnknownOpcode { opcode: byte })?;
        let header = op.header_len();
        if body.len() < header {
            return Err(FrameError::BadLength {
                opcode: byte,
                len,
                implied: header as u64,
            });
        }
        let implied = op.implied_len(&body[..header]);
        if implied != len {
            return Err(FrameError::BadLength {
                opcode: byte,
                len,
                implied,
            });
        }
        let series = || {
            // The length check above makes both ranges exact.
            let n_bars = u32_at(body, field::N_BARS) as usize;
            let split = field::SERIES_PAYLOAD + 8 * n_bars;
            (
                F64s(&body[field::SERIES_PAYLOAD..split]),
                ParamsBytes(&body[split..]),
            )
        };
        Ok(match op {
            Opcode::Sweep => {
                let (close, params) = series();
                Self::Sweep { close, params }
            }
            Opcode::Echo => {
                let (close, params) = series();
                Self::Echo { close, params }
            }
            Opcode::Load => {
                let (close, params) = series();
                Self::Load { close, params }
            }
            Opcode::SweepHandle => Self::SweepHandle {
                handle: u64_at(body, field::HANDLE),
                params: ParamsBytes(&body[field::HANDLE_PAYLOAD..]),
            },
            Opcode::Free => Self::Free {
                handle: u64_at(body, field::HANDLE),
            },
        })
    }

    /// The opcode.
    #[must_use]
    pub const fn opcode(&self) -> Opcode {
        match self {
            Self::Sweep { .. } => Opcode::Sweep,
            Self::Echo { .. } => Opcode::Echo,
            Self::Load { .. } => Opcode::Load,
            Self::SweepHandle { .. } => Opcode::SweepHandle,
            Self::Free { .. } => Opcode::Free,
        }
    }
}

// ---- Encoding (whole frames, length word included, appended to `out`) ----

fn count_u32(n: usize, what: &'static str) -> u32 {
    u32::try_from(n).unwrap_or_else(|_| panic!("{what} {n} does not fit the protocol's u32"))
}

fn push_f64s(out: &mut Vec<u8>, xs: &[f64]) {
    out.reserve(xs.len() * 8);
    for x in xs {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn push_params(out: &mut Vec<u8>, grid: &[Params]) {
    out.reserve(grid.len() * PARAMS_BYTES);
    for p in grid {
        for w in p.to_wire() {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
}

/// Starts a frame: a placeholder length word. [`finish_frame`] fills it in.
fn start_frame(out: &mut Vec<u8>) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; LEN_BYTES]);
    at
}

fn finish_frame(out: &mut [u8], at: usize, flag: u32) {
    let len = count_u32(out.len() - at - LEN_BYTES, "frame length");
    assert!(len & ERROR_FLAG == 0, "frame of {len} bytes is too long");
    out[at..at + LEN_BYTES].copy_from_slice(&(len | flag).to_le_bytes());
}

/// A series request (`SWEEP`, `ECHO` or `LOAD`): the study's body layout.
///
/// # Panics
/// When `close` or `grid` has more than `u32::MAX` entries, or the frame is 2 GiB or more:
/// the protocol cannot say it.
pub fn encode_series(out: &mut Vec<u8>, op: Opcode, close: &[f64], grid: &[Params]) {
    assert!(
        matches!(op, Opcode::Sweep | Opcode::Echo | Opcode::Load),
        "{op:?} has no series body"
    );
    let at = start_frame(out);
    out.push(op as u8);
    out.extend_from_slice(&count_u32(close.len(), "n_bars").to_le_bytes());
    out.extend_from_slice(&count_u32(grid.len(), "n_combos").to_le_bytes());
    push_f64s(out, close);
    push_params(out, grid);
    finish_frame(out, at, 0);
}

/// A `SWEEP_HANDLE` request: 17 bytes plus 48 per combo.
///
/// # Panics
/// When `grid` has more than `u32::MAX` combos.
pub fn encode_sweep_handle(out: &mut Vec<u8>, handle: u64, grid: &[Params]) {
    let at = start_frame(out);
    out.push(Opcode::SweepHandle as u8);
    out.extend_from_slice(&handle.to_le_bytes());
    out.extend_from_slice(&count_u32(grid.len(), "n_combos").to_le_bytes());
    push_params(out, grid);
    finish_frame(out, at, 0);
}

/// A `FREE` request.
pub fn encode_free(out: &mut Vec<u8>, handle: u64) {
    let at = start_frame(out);
    out.push(Opcode::Free as u8);
    out.extend_from_slice(&handle.to_le_bytes());
    finish_frame(out, at, 0);
}

/// A sweep reply: all PnLs, then all trade counts (as i64, the study's type).
pub fn encode_sweep_reply(out: &mut Vec<u8>, results: &[ComboResult]) {
    let at = start_frame(out);
    out.reserve(results.len() * RESULT_BYTES);
    for r in results {
        out.extend_from_slice(&r.pnl.to_le_bytes());
    }
    for r in results {
        // A trade count over i64::MAX cannot happen (it would need that many bars).
        let t = i64::try_from(r.trades).unwrap_or(i64::MAX);
        out.extend_from_slice(&t.to_le_bytes());
    }
    finish_frame(out, at, 0);
}

/// A reply of raw bytes: `ECHO`'s closes, verbatim.
pub fn encode_bytes_reply(out: &mut Vec<u8>, bytes: &[u8]) {
    let at = start_frame(out);
    out.extend_from_slice(bytes);
    finish_frame(out, at, 0);
}

/// `LOAD`'s reply.
pub fn encode_handle_reply(out: &mut Vec<u8>, handle: u64) {
    encode_bytes_reply(out, &handle.to_le_bytes());
}

/// An error reply: flagged length, `[u16 code][message]` (the message cut to fit
/// [`MAX_ERROR_BODY`] on a character boundary).
pub fn encode_error(out: &mut Vec<u8>, code: ErrorCode, message: &str) {
    let mut end = message.len().min(MAX_ERROR_BODY as usize - 2);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let at = start_frame(out);
    out.extend_from_slice(&(code as u16).to_le_bytes());
    out.extend_from_slice(&message.as_bytes()[..end]);
    finish_frame(out, at, ERROR_FLAG);
}

// ---- Decoding replies ----

/// A reply's body, decoded as far as the frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// A success body, to be read as the request's reply type.
    Ok(&'a [u8]),
    /// An error reply.
    Err {
        /// The raw code (an [`ErrorCode`] if the server is this one).
        code: u16,
        /// The message, as bytes (UTF-8 from this server).
        message: &'a [u8],
    },
}

/// Decodes a sweep reply's body into results, checking it holds `n` combos.
///
/// # Errors
/// A description of what is wrong with it.
pub fn decode_sweep_reply(body: &[u8], n: usize) -> Result<Vec<ComboResult>, String> {
    if body.len() != n * RESULT_BYTES {
        return Err(format!(
            "sweep reply of {} bytes for {n} combos (expected {})",
            body.len(),
            n * RESULT_BYTES
        ));
    }
    let (pnl, trades) = body.split_at(n * 8);
    pnl.chunks_exact(8)
        .zip(trades.chunks_exact(8))
        .enumerate()
        .map(|(i, (p, t))| {
            let mut w = [0; 8];
            w.copy_from_slice(p);
            let pnl = f64::from_le_bytes(w);
            w.copy_from_slice(t);
            let trades = u64::try_from(i64::from_le_bytes(w))
                .map_err(|_| format!("combo {i}: negative trade count"))?;
            Ok(ComboResult { pnl, trades })
        })
        .collect()
}

// ---- Framing a request: the checks, without I/O ----

/// What the first bytes of a request frame say, for a reader that has `buf` of it so far
/// (length word first). The blocking reader ([`read_request`]) and the async server ask this
/// at each step, so both apply the same checks in the same order and reply alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Nothing can be decided before this many bytes of the frame (length word included).
    Need(usize),
    /// A whole, checked request: its body is `buf[LEN_BYTES..LEN_BYTES + len]`.
    Request {
        /// The body's length.
        len: usize,
    },
    /// A bad frame. Unless [`FrameError::is_fatal`], the stream goes on after `skip` bytes
    /// from the frame's start (which may be more than have arrived: drain the rest).
    Bad {
        /// What is wrong.
        error: FrameError,
        /// The whole frame's length, length word included.
        skip: u64,
    },
}

/// Checks, in order, as far as `buf` (a frame's first bytes) allows: the length word against
/// `max`, the opcode, the header's counts against the length. Nothing past the header is
/// looked at, so a reader need not hold a body before it knows the body is wanted.
#[must_use]
pub fn frame_request(buf: &[u8], max: u32) -> Framing {
    let Some(word) = buf.first_chunk::<LEN_BYTES>() else {
        return Framing::Need(LEN_BYTES);
    };
    let len = u32::from_le_bytes(*word);
    let len64 = u64::from(len);
    let skip = LEN_BYTES as u64 + len64;
    if len > max {
        let error = FrameError::TooLarge { len: len64, max };
        return Framing::Bad { error, skip };
    }
    if len == 0 {
        let error = FrameError::BadLength {
            opcode: 0,
            len: 0,
            implied: 1,
        };
        return Framing::Bad { error, skip };
    }
    let Some(&opcode) = buf.get(LEN_BYTES) else {
        return Framing::Need(LEN_BYTES + 1);
    };
    let Some(op) = Opcode::from_u8(opcode) else {
        let error = FrameError::UnknownOpcode { opcode };
        return Framing::Bad { error, skip };
    };
    let hlen = op.header_len();
    if (len as usize) < hlen {
        let error = FrameError::BadLength {
            opcode,
            len: len64,
            implied: hlen as u64,
        };
        return Framing::Bad { error, skip };
    }
    let Some(header) = buf.get(LEN_BYTES..LEN_BYTES + hlen) else {
        return Framing::Need(LEN_BYTES + hlen);
    };
    let implied = op.implied_len(header);
    if implied != len64 {
        let error = FrameError::BadLength {
            opcode,
            len: len64,
            implied,
        };
        return Framing::Bad { error, skip };
    }
    if buf.len() < LEN_BYTES + len as usize {
        return Framing::Need(LEN_BYTES + len as usize);
    }
    Framing::Request { len: len as usize }
}

// ---- Reading frames from a stream ----

/// Why reading a frame stopped.
#[derive(Debug)]
pub enum ReadError {
    /// The frame is bad; see [`FrameError::is_fatal`] for whether the stream can go on.
    Frame(FrameError),
    /// The stream failed.
    Io(io::Error),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Reads exactly `buf.len()` bytes, or says how many arrived before the end of the stream.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Reads and throws away `n` bytes through a fixed stack buffer; returns how many arrived.
fn drain(r: &mut impl Read, n: u64) -> io::Result<u64> {
    io::copy(&mut r.by_ref().take(n), &mut io::sink())
}

/// First growth step of a body buffer, and its least growth after that.
const GROW_STEP: usize = 64 << 10;

/// Reads `len` bytes into `buf[at..at + len]`, growing `buf` only as bytes arrive (each step
/// at most doubles what has arrived), so a peer that claims a large frame and sends little
/// makes the buffer no larger than twice what it sent plus [`GROW_STEP`]. `buf` keeps its
/// length between frames, so a reused buffer is not zeroed again. Returns the bytes read.
fn read_growing(r: &mut impl Read, buf: &mut Vec<u8>, at: usize, len: usize) -> io::Result<usize> {
    let mut got = 0;
    while got < len {
        let step = (len - got).min((at + got).max(GROW_STEP));
        let end = at + got + step;
        if buf.len() < end {
            buf.resize(end, 0);
        }
        let n = read_full(r, &mut buf[at + got..end])?;
        got += n;
        if n < step {
            break;
        }
    }
    Ok(got)
}

/// Reads one request frame into `body` (which it reuses: on `Ok(Some(len))` the body is
/// `body[..len]`). `Ok(None)`: the stream ended cleanly between frames.
///
/// The checks are [`frame_request`]'s, made before anything is stored. A frame that fails a
/// non-fatal check has been drained from the stream, so the next frame can be read.
///
/// # Errors
/// [`ReadError::Frame`] for a bad frame, [`ReadError::Io`] when the stream fails.
pub fn read_request(
    r: &mut impl BufRead,
    max: u32,
    body: &mut Vec<u8>,
) -> Result<Option<usize>, ReadError> {
    if r.fill_buf()?.is_empty() {
        return Ok(None);
    }
    // The length word and the longest header, read step by step as the checks ask for them.
    let mut head = [0_u8; LEN_BYTES + field::HANDLE_PAYLOAD];
    let mut have = 0;
    loop {
        match frame_request(&head[..have], max) {
            Framing::Need(n) if n <= head.len() => {
                let got = read_full(r, &mut head[have..n])?;
                have += got;
                if have < n {
                    return Err(truncated(&head[..have]));
                }
            }
            Framing::Need(n) => {
                // The header is checked; what is left is the body.
                let hlen = have - LEN_BYTES;
                if body.len() < hlen {
                    body.resize(hlen, 0);
                }
                body[..hlen].copy_from_slice(&head[LEN_BYTES..have]);
                let rest = n - have;
                let got = read_growing(r, body, hlen, rest)?;
                if got < rest {
                    return Err(truncated_at(&head[..have], have + got));
                }
                return Ok(Some(n - LEN_BYTES));
            }
            Framing::Request { len } => {
                // A frame that is all header (FREE, or no bars and no combos).
                if body.len() < len {
                    body.resize(len, 0);
                }
                body[..len].copy_from_slice(&head[LEN_BYTES..LEN_BYTES + len]);
                return Ok(Some(len));
            }
            Framing::Bad { error, .. } if error.is_fatal() => {
                return Err(ReadError::Frame(error));
            }
            Framing::Bad { error, skip } => {
                let rest = skip - have as u64;
                return match drain(r, rest) {
                    Ok(n) if n == rest => Err(ReadError::Frame(error)),
                    Ok(n) => Err(truncated_at(&head[..have], have + n as usize)),
                    Err(io) => Err(ReadError::Io(io)),
                };
            }
        }
    }
}

/// The error for a stream that ended inside a frame after `got` bytes, `head` being its start.
#[must_use]
pub fn frame_truncated(head: &[u8], got: u64) -> FrameError {
    let expected = head
        .first_chunk::<LEN_BYTES>()
        .map_or(LEN_BYTES as u64, |w| {
            LEN_BYTES as u64 + u64::from(u32::from_le_bytes(*w))
        });
    FrameError::Truncated { expected, got }
}

fn truncated(head: &[u8]) -> ReadError {
    truncated_at(head, head.len())
}

fn truncated_at(head: &[u8], got: usize) -> ReadError {
    ReadError::Frame(frame_truncated(head, got as u64))
}

/// Reads one reply frame into `buf` (reused like [`read_request`]'s body).
///
/// # Errors
/// [`ReadError::Frame`] with [`FrameError::TooLarge`] when a success body is over `max` (or an
/// error body over [`MAX_ERROR_BODY`]), [`FrameError::Truncated`] when the stream ends inside
/// the frame (or before it), [`ReadError::Io`] when the stream fails.
pub fn read_reply<'b>(
    r: &mut impl Read,
    max: u32,
    buf: &'b mut Vec<u8>,
) -> Result<Reply<'b>, ReadError> {
    let mut word = [0; LEN_BYTES];
    let got = read_full(r, &mut word)?;
    if got < LEN_BYTES {
        return Err(ReadError::Frame(FrameError::Truncated {
            expected: LEN_BYTES as u64,
            got: got as u64,
        }));
    }
    let raw = u32::from_le_bytes(word);
    let is_err = raw & ERROR_FLAG != 0;
    let len = raw & !ERROR_FLAG;
    let cap = if is_err { MAX_ERROR_BODY } else { max };
    if len > cap || (is_err && len < 2) {
        return Err(ReadError::Frame(FrameError::TooLarge {
            len: u64::from(len),
            max: cap,
        }));
    }
    let len = len as usize;
    let got = read_growing(r, buf, 0, len)?;
    if got < len {
        return Err(ReadError::Frame(FrameError::Truncated {
            expected: (LEN_BYTES + len) as u64,
            got: (LEN_BYTES + got) as u64,
        }));
    }
    let body = &buf[..len];
    Ok(if is_err {
        Reply::Err {
            code: u16::from_le_bytes([body[0], body[1]]),
            message: &body[2..],
        }
    } else {
        Reply::Ok(body)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p6() -> Params {
        Params::from_n(6).expect("n = 6 is valid")
    }

    /// The study's opcode 0 frame for two bars and one combo, byte by byte.
    const SWEEP_FIXTURE: [u8; 4 + 9 + 16 + 48] = {
        let mut b = [0_u8; 77];
        b[0] = 73; // body_len = 9 + 16 + 48
        // opcode 0 at b[4]
        b[5] = 2; // n_bars
        b[9] = 1; // n_combos
        // 1.0 = 0x3FF0_0000_0000_0000, 2.0 = 0x4000_0000_0000_0000
        b[13 + 6] = 0xF0;
        b[13 + 7] = 0x3F;
        b[21 + 7] = 0x40;
        // windows 6, 3, 2, 3, 1, 2
        let w = [6_u8, 3, 2, 3, 1, 2];
        let mut i = 0;
        while i < 6 {
            b[29 + 8 * i] = w[i];
            i += 1;
        }
        b
    };

    #[test]
    fn sweep_frame_matches_fixture() {
        let mut out = Vec::new();
        encode_series(&mut out, Opcode::Sweep, &[1.0, 2.0], &[p6()]);
        assert_eq!(out, SWEEP_FIXTURE);
        let req = Request::parse(&out[4..]).expect("fixture parses");
        let Request::Sweep { close, params } = req else {
            panic!("not a sweep: {req:?}")
        };
        assert_eq!(close.to_vec(), [1.0, 2.0]);
        assert_eq!(params.iter().collect::<Vec<_>>(), [[6, 3, 2, 3, 1, 2]]);
    }

    #[test]
    fn every_opcode_round_trips() {
        let close = [100.0, 101.5, f64::MIN_POSITIVE, -0.0];
        let grid = [p6(), Params::from_n(200).expect("valid")];
        let mut out = Vec::new();
        for op in [Opcode::Sweep, Opcode::Echo, Opcode::Load] {
            out.clear();
            let g: &[Params] = if op == Opcode::Load { &[] } else { &grid };
            encode_series(&mut out, op, &close, g);
            let req = Request::parse(&out[4..]).expect("parses");
            assert_eq!(req.opcode(), op);
            let (Request::Sweep { close: c, params }
            | Request::Echo { close: c, params }
            | Request::Load { close: c, params }) = req
            else {
                panic!("{req:?}")
            };
            assert_eq!(c.to_vec(), close);
            assert_eq!(c.as_bytes(), engine::data::to_le_bytes(&close));
            let mut ps = Vec::new();
            params.decode_into(&mut ps).expect("valid params");
            assert_eq!(ps, g);
        }
        out.clear();
        encode_sweep_handle(&mut out, 0xDEAD_BEEF_0000_0001, &grid);
        assert_eq!(out.len(), 4 + 13 + 96);
        let Ok(Request::SweepHandle { handle, params }) = Request::parse(&out[4..]) else {
            panic!("not a sweep_handle")
        };
        assert_eq!(handle, 0xDEAD_BEEF_0000_0001);
        assert_eq!(params.len(), 2);
        out.clear();
        encode_free(&mut out, 7);
        assert_eq!(out, [9, 0, 0, 0, 4, 7, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Request::parse(&out[4..]), Ok(Request::Free { handle: 7 }));
    }

    #[test]
    fn replies_round_trip() {
        let results = [
            ComboResult {
                pnl: -5165.58,
                trades: 57_029,
            },
            ComboResult {
                pnl: 1.5,
                trades: 0,
            },
        ];
        let mut out = Vec::new();
        encode_sweep_reply(&mut out, &results);
        assert_eq!(&out[..4], &32_u32.to_le_bytes());
        let mut buf = Vec::new();
        let Ok(Reply::Ok(body)) = read_reply(&mut &out[..], DEFAULT_MAX_FRAME, &mut buf) else {
            panic!("reply")
        };
        assert_eq!(decode_sweep_reply(body, 2).as_deref(), Ok(&results[..]));
        assert!(decode_sweep_reply(body, 3).is_err());

        out.clear();
        encode_handle_reply(&mut out, 42);
        assert_eq!(out, [8, 0, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0]);

        out.clear();
        encode_error(&mut out, ErrorCode::UnknownHandle, "no handle 9");
        assert_eq!(&out[..6], &[13, 0, 0, 0x80, 5, 0]);
        let r = read_reply(&mut &out[..], DEFAULT_MAX_FRAME, &mut buf).expect("error frame");
        assert_eq!(
            r,
            Reply::Err {
                code: 5,
                message: b"no handle 9"
            }
        );
    }

    fn read(bytes: &[u8], max: u32, body: &mut Vec<u8>) -> Result<Option<usize>, ReadError> {
        read_request(&mut io::BufReader::new(bytes), max, body)
    }

    fn frame_err(r: Result<Option<usize>, ReadError>) -> FrameError {
        match r {
            Err(ReadError::Frame(e)) => e,
            other => panic!("expected a frame error, got {other:?}"),
        }
    }

    #[test]
    fn over_cap_is_refused_before_allocating() {
        let mut body = Vec::new();
        let e = frame_err(read(&u32::MAX.to_le_bytes(), DEFAULT_MAX_FRAME, &mut body));
        assert!(matches!(e, FrameError::TooLarge { .. }) && e.is_fatal());
        assert_eq!(body.capacity(), 0);
        // Just over a small cap, with the whole body present: still refused, still nothing.
        let mut out = Vec::new();
        encode_series(&mut out, Opcode::Echo, &[1.0; 100], &[]);
        let e = frame_err(read(&out, 808, &mut body));
        assert_eq!(e, FrameError::TooLarge { len: 809, max: 808 });
        assert_eq!(body.capacity(), 0);
    }

    #[test]
    fn truncated_body_allocates_what_arrived_not_what_was_claimed() {
        // Claims 200 MiB of closes, sends 1,000 bytes of them, then the stream ends.
        let n_bars: u32 = 25 << 20;
        let len = 9 + 8 * n_bars;
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&len.to_le_bytes());
        bytes.push(0);
        bytes.extend_from_slice(&n_bars.to_le_bytes());
        bytes.extend_from_slice(&0_u32.to_le_bytes());
        bytes.extend_from_slice(&[0x11; 1000]);
        let mut body = Vec::new();
        let e = frame_err(read(&bytes, DEFAULT_MAX_FRAME, &mut body));
        assert_eq!(
            e,
            FrameError::Truncated {
                expected: 4 + u64::from(len),
                got: 4 + 9 + 1000
            }
        );
        assert!(body.capacity() <= 2 * GROW_STEP, "{}", body.capacity());
    }

    #[test]
    fn counts_that_disagree_with_the_length_are_skipped() {
        // A sweep frame claiming 3 bars but carrying 2, followed by a good echo frame.
        let mut bytes = Vec::new();
        encode_series(&mut bytes, Opcode::Sweep, &[1.0, 2.0], &[p6()]);
        bytes[5] = 3;
        encode_series(&mut bytes, Opcode::Echo, &[4.0], &[]);
        let mut r = io::BufReader::new(&bytes[..]);
        let mut body = Vec::new();
        let e = match read_request(&mut r, DEFAULT_MAX_FRAME, &mut body) {
            Err(ReadError::Frame(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            e,
            FrameError::BadLength {
                opcode: 0,
                len: 73,
                implied: 81
            }
        );
        assert!(!e.is_fatal());
        assert_eq!(body.capacity(), 0, "a bad frame is drained, not stored");
        let len = read_request(&mut r, DEFAULT_MAX_FRAME, &mut body)
            .expect("next frame")
            .expect("not eof");
        assert_eq!(
            Request::parse(&body[..len]).map(|r| r.opcode()),
            Ok(Opcode::Echo)
        );
        assert!(matches!(
            read_request(&mut r, DEFAULT_MAX_FRAME, &mut body),
            Ok(None)
        ));
    }

    #[test]
    fn huge_counts_do_not_overflow() {
        // n_bars = n_combos = u32::MAX: the implied length is computed in u64.
        let mut bytes = vec![9, 0, 0, 0, 0];
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        let mut body = Vec::new();
        let e = frame_err(read(&bytes, DEFAULT_MAX_FRAME, &mut body));
        assert!(
            matches!(e, FrameError::BadLength { implied, .. } if implied > u64::from(u32::MAX))
        );
        assert_eq!(
            Request::parse(&bytes[4..]).map_err(|e| e.code()),
            Err(ErrorCode::BadLength)
        );
    }

    #[test]
    fn unknown_opcode_and_empty_body() {
        let mut body = Vec::new();
        let e = frame_err(read(&[3, 0, 0, 0, 9, 1, 2], DEFAULT_MAX_FRAME, &mut body));
        assert_eq!(e, FrameError::UnknownOpcode { opcode: 9 });
        let e = frame_err(read(&[0, 0, 0, 0], DEFAULT_MAX_FRAME, &mut body));
        assert_eq!(e.code(), ErrorCode::BadLength);
        // A frame shorter than its opcode's header.
        let e = frame_err(read(&[2, 0, 0, 0, 4, 1], DEFAULT_MAX_FRAME, &mut body));
        assert_eq!(
            e,
            FrameError::BadLength {
                opcode: 4,
                len: 2,
                implied: 9
            }
        );
        assert_eq!(
            Request::parse(&[]),
            Err(FrameError::BadLength {
                opcode: 0,
                len: 0,
                implied: 1
            })
        );
    }

    #[test]
    fn truncated_length_word_and_clean_eof() {
        let mut body = Vec::new();
        assert!(matches!(read(&[], DEFAULT_MAX_FRAME, &mut body), Ok(None)));
        let e = frame_err(read(&[1, 0], DEFAULT_MAX_FRAME, &mut body));
        assert_eq!(
            e,
            FrameError::Truncated {
                expected: 4,
                got: 2
            }
        );
    }

    #[test]
    fn invalid_and_oversized_windows_are_refused() {
        let mut ps = Vec::new();
        let mut raw = Vec::new();
        for w in [0_i64, 3, 2, 3, 1, 2] {
            raw.extend_from_slice(&w.to_le_bytes());
        }
        assert_eq!(
            ParamsBytes(&raw).decode_into(&mut ps).map_err(|e| e.0),
            Err(0)
        );
        raw[..8].copy_from_slice(&(MAX_WINDOW + 1).to_le_bytes());
        assert!(ParamsBytes(&raw).decode_into(&mut ps).is_err());
    }

    proptest::proptest! {
        /// No byte string makes the reader or the parser panic, and the reader never holds
        /// more than twice the bytes it was given plus one growth step.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let mut r = io::BufReader::new(&bytes[..]);
            let mut body = Vec::new();
            for _ in 0..64 {
                match read_request(&mut r, DEFAULT_MAX_FRAME, &mut body) {
                    Ok(Some(len)) => { let _ = Request::parse(&body[..len]); }
                    Ok(None) => break,
                    Err(ReadError::Frame(e)) if !e.is_fatal() => {}
                    Err(_) => break,
                }
            }
            proptest::prop_assert!(body.capacity() <= 2 * bytes.len() + GROW_STEP);
            let _ = Request::parse(&bytes);
            let mut buf = Vec::new();
            let _ = read_reply(&mut &bytes[..], DEFAULT_MAX_FRAME, &mut buf);
        }
    }
}
