//! MAC addresses: the one parser and formatter of the project.
use std::{fmt, str::FromStr};

/// An Ethernet MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// The six bytes, in wire order.
    pub const fn octets(self) -> [u8; 6] {
        self.0
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl fmt::Debug for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A string that is not `aa:bb:cc:dd:ee:ff`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad MAC address {0:?}: use six hex bytes separated by colons, e.g. 02:00:c6:12:00:02")]
pub struct BadMac(pub String);

impl FromStr for Mac {
    type Err = BadMac;

    fn from_str(s: &str) -> Result<Self, BadMac> {
        let mut mac = [0u8; 6];
        let mut parts = s.trim().split(':');
        for byte in &mut mac {
            let part = parts.next().ok_or_else(|| BadMac(s.to_owned()))?;
            if part.is_empty() || part.len() > 2 {
                return Err(BadMac(s.to_owned()));
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| BadMac(s.to_owned()))?;
        }
        if parts.next().is_some() {
            return Err(BadMac(s.to_owned()));
        }
        Ok(Mac(mac))
    }
}

impl From<[u8; 6]> for Mac {
    fn from(b: [u8; 6]) -> Self {
        Mac(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats() {
        let m: Mac = "02:00:c6:12:00:02".parse().unwrap();
        assert_eq!(m.octets(), [2, 0, 0xc6, 0x12, 0, 2]);
        assert_eq!(m.to_string(), "02:00:c6:12:00:02");
        assert_eq!("2:0:C6:12:0:2\n".parse::<Mac>().unwrap(), m);
    }

    #[test]
    fn refuses_what_is_not_a_mac() {
        for bad in [
            "",
            "02:00:c6:12:00",
            "02:00:c6:12:00:02:03",
            "02:00:c6:12:00:zz",
            "020:0:0:0:0:0",
            "02::c6:12:00:02",
        ] {
            assert!(bad.parse::<Mac>().is_err(), "{bad:?}");
        }
    }
}
