//! Userspace of the lab: the XDP loader, the AF_XDP socket, frame building and parsing, the
//! tick-to-trade core both I/O paths share, the replay tool's feeds, and the measurement
//! plumbing. The binaries `trader` and `replay` are thin drivers over these modules.
pub mod cli;
pub mod clock;
pub mod exchange;
pub mod exchange_io;
pub mod feed;
pub mod frame;
pub mod host;
pub mod process;
pub mod sockopt;
pub mod stats;
pub mod t2t;
pub mod trading;
pub mod xdp;
pub mod xsk;
