//! Why a trader's loop ended.
use serde::{Deserialize, Serialize};

/// Why a trader's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The exchange sent MoldUDP64's end of session.
    EndOfSession,
    /// No market data for `--idle-exit` seconds.
    IdleTimeout,
    /// SIGINT or SIGTERM.
    Stopped,
}

impl std::fmt::Display for EndReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EndReason::EndOfSession => "end of session",
            EndReason::IdleTimeout => "idle timeout",
            EndReason::Stopped => "stopped by signal",
        })
    }
}
