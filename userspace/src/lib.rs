//! Userspace of the lab: the XDP loader, the AF_XDP socket, frame building and parsing, and
//! (in the binaries) the trader and the replay tool.
pub mod frame;
pub mod xdp;
pub mod xsk;
