//! A Unix or TCP stream: what the client connects, the server accepts and [`crate::spin`]
//! spins on.
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;

/// A stream of either kind.
#[derive(Debug)]
pub(crate) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub(crate) fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Self::Unix(s) => s.set_nonblocking(on),
            Self::Tcp(s) => s.set_nonblocking(on),
        }
    }
    pub(crate) fn try_clone(&self) -> io::Result<Self> {
        Ok(match self {
            Self::Unix(s) => Self::Unix(s.try_clone()?),
            Self::Tcp(s) => Self::Tcp(s.try_clone()?),
        })
    }
    pub(crate) fn shutdown_write(&self) -> io::Result<()> {
        match self {
            Self::Unix(s) => s.shutdown(Shutdown::Write),
            Self::Tcp(s) => s.shutdown(Shutdown::Write),
        }
    }
    pub(crate) fn shutdown(&self) {
        // Shutting down a connection the peer already closed fails harmlessly.
        let _ = match self {
            Self::Unix(s) => s.shutdown(Shutdown::Both),
            Self::Tcp(s) => s.shutdown(Shutdown::Both),
        };
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.read(buf),
            Self::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Unix(s) => s.write(buf),
            Self::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
