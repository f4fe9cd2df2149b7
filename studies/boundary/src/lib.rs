//! The backtest engine behind a process boundary: the boundary study of
//! `shared/ENGINE-SPEC.md`, rebuilt so it can be measured here with a native client.
//!
//! - [`proto`]: the study's length-prefixed little-endian frames (opcode 0 sweep, opcode 1
//!   echo) plus a stateful extension (`LOAD` a series once, `SWEEP_HANDLE` 48-byte parameter
//!   frames against it, `FREE`) and documented error replies. Checked decoding: nothing is
//!   allocated for a frame before its length and counts have been checked.
//! - [`server`]: serves the protocol over a Unix socket (mode 0600) and TCP (loopback unless
//!   told otherwise), a thread per connection; and one request on stdin, one reply on stdout
//!   ([`server::serve_stdio`], the spawn-per-call mode); or the same on a tokio runtime, a
//!   task per connection ([`server::Runtime`]).
//! - [`client`]: the Rust client for all three.
//! - [`check`]: the gate every measured mode passes before its time is reported.
#![forbid(unsafe_code)]

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {paths as _, signal_hook as _};

pub mod bench;
pub mod check;
pub mod client;
pub mod proto;
pub mod server;
mod session;
mod spin;
mod stream;
mod tokio_server;

pub use affinity::pin_current_thread;

use std::io;
use std::path::PathBuf;

/// Everything the client, the server and the check can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A socket, pipe or file operation failed.
    #[error("failed to {op}")]
    Io {
        /// What was being done ("connect to /tmp/x.sock", "read a reply").
        op: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The Unix socket path is taken by something that is not a stale socket.
    #[error(
        "{path} exists and is not a stale socket (another server is listening, or it is not a socket)"
    )]
    PathInUse {
        /// The socket path.
        path: PathBuf,
    },
    /// A frame in either direction broke the protocol.
    #[error("bad frame: {0}")]
    Frame(#[from] proto::FrameError),
    /// The server answered with an error reply.
    #[error("server error {code} ({name}): {message}")]
    Remote {
        /// The reply's code.
        code: u16,
        /// The code's name, or "unknown".
        name: &'static str,
        /// The reply's message.
        message: String,
    },
    /// A success reply does not have the shape its request implies.
    #[error("bad reply: {0}")]
    BadReply(String),
    /// The spawned engine exited unsuccessfully.
    #[error("spawned `{program}` failed ({status}): {stderr}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// What it wrote on stderr.
        stderr: String,
    },
    /// A mode's results differ from the in-process results.
    #[error(transparent)]
    Mismatch(#[from] check::Mismatch),
    /// The engine refused the work.
    #[error(transparent)]
    Engine(#[from] engine::Error),
}

impl Error {
    pub(crate) fn io(op: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let op = op.into();
        move |source| Self::Io { op, source }
    }

    /// The [`proto::ErrorCode`] of a server error reply, if this is one.
    #[must_use]
    pub fn remote_code(&self) -> Option<proto::ErrorCode> {
        match self {
            Self::Remote { code, .. } => proto::ErrorCode::from_u16(*code),
            _ => None,
        }
    }
}
