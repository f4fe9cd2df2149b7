use std::io;
use std::path::PathBuf;

/// Everything the engine can refuse. Small and structured; the CLI adds context.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A combo's length `n` (or a window derived from it, e.g. from the wire) is below 1.
    #[error("invalid window {name} = {value}: every window must be at least 1")]
    InvalidWindow {
        /// Which of the six windows (`n`, `half`, `sq`, `p`, `p3`, `p2`).
        name: &'static str,
        /// The rejected value.
        value: i64,
    },
    /// A window does not fit in this machine's `usize`.
    #[error("window {value} is too large for this machine")]
    WindowTooLarge {
        /// The rejected value.
        value: i64,
    },
    /// Reading a data file failed.
    #[error("failed to {op} {path}")]
    Io {
        /// What was being done ("open", "read").
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A raw f64 file's length is not a multiple of 8 bytes.
    #[error("{path}: {len} bytes is not a whole number of little-endian f64 values")]
    RaggedRaw {
        /// The file.
        path: PathBuf,
        /// Its length in bytes.
        len: u64,
    },
    /// A CSV cell is not a number.
    #[error("{path}:{line}: bad number {value:?} in column {column:?}")]
    BadNumber {
        /// The file.
        path: PathBuf,
        /// 1-based line number (the header is line 1).
        line: usize,
        /// The column being read.
        column: String,
        /// The offending text.
        value: String,
    },
    /// A CSV row has fewer cells than the header says.
    #[error("{path}:{line}: missing column {column:?}")]
    ShortRow {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The column being read.
        column: String,
    },
    /// The CSV header does not name the requested column.
    #[error("{path}: no column {column:?} in header {header:?}")]
    NoSuchColumn {
        /// The file.
        path: PathBuf,
        /// The requested column.
        column: String,
        /// The header line as read.
        header: String,
    },
    /// A data file holds no values (or a CSV no header).
    #[error("{path}: no data")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A sweep was asked to run on zero threads.
    #[error("threads must be at least 1")]
    NoThreads,
}
