//! What the replay sends and how fast: the market-data source and the send rate, parsed and
//! printed one way for the replay's command line, xtask's options and the reports.
use std::{fmt, path::PathBuf, str::FromStr};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Where the replay's market data comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The engine's synthetic GBM series (NumPy-identical for a seed).
    Gbm {
        /// Generator seed.
        seed: u64,
        /// Number of closes.
        bars: usize,
    },
    /// A file of closes: raw little-endian f64 (`.f64`/`.bin`) or CSV with a `close` column.
    Closes(PathBuf),
    /// A raw ITCH 5.0 file (2-byte big-endian length before each message), replayed as is.
    Itch(PathBuf),
    /// A pcap file whose UDP payloads (MoldUDP64 packets) are replayed as they are.
    Pcap(PathBuf),
}

impl Source {
    /// `gbm`'s seed when none is given.
    pub const GBM_SEED: u64 = 42;
    /// `gbm`'s length when none is given: the spec's 150k-bar workload.
    pub const GBM_BARS: usize = 150_000;
    /// The replay's and the bench's default: the spec's 150k-bar GBM series.
    pub const DEFAULT: Source = Source::Gbm {
        seed: Source::GBM_SEED,
        bars: Source::GBM_BARS,
    };
}

impl FromStr for Source {
    type Err = String;
    /// `gbm`, `gbm:SEED`, `gbm:SEED:BARS`, `closes:PATH`, `itch:PATH`, `pcap:PATH`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        match kind {
            "gbm" => {
                let mut parts = rest.split(':').filter(|p| !p.is_empty());
                let seed = parts
                    .next()
                    .map(|p| p.parse().map_err(|e| format!("bad gbm seed {p:?}: {e}")))
                    .transpose()?
                    .unwrap_or(Source::GBM_SEED);
                let bars = parts
                    .next()
                    .map(|p| p.parse().map_err(|e| format!("bad gbm length {p:?}: {e}")))
                    .transpose()?
                    .unwrap_or(Source::GBM_BARS);
                Ok(Source::Gbm { seed, bars })
            }
            "closes" if !rest.is_empty() => Ok(Source::Closes(rest.into())),
            "itch" if !rest.is_empty() => Ok(Source::Itch(rest.into())),
            "pcap" if !rest.is_empty() => Ok(Source::Pcap(rest.into())),
            _ => Err(format!(
                "unknown source {s:?}: use gbm[:SEED[:BARS]], closes:PATH, itch:PATH or pcap:PATH"
            )),
        }
    }
}

/// As [`FromStr`] reads it, defaults spelled out (`gbm:42:150000`).
impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Gbm { seed, bars } => write!(f, "gbm:{seed}:{bars}"),
            Source::Closes(p) => write!(f, "closes:{}", p.display()),
            Source::Itch(p) => write!(f, "itch:{}", p.display()),
            Source::Pcap(p) => write!(f, "pcap:{}", p.display()),
        }
    }
}

/// Ticks per second: a number with an optional k/M suffix (`50k`, `1.5M`), or `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// Paced (open loop), messages per second, from [`Rate::MIN`] to [`Rate::MAX`].
    PerSec(f64),
    /// As fast as the sender goes (closed loop).
    Max,
}

impl Rate {
    /// The slowest paced rate: one message a second (slower is a debugger's job, not a
    /// replay's).
    pub const MIN: f64 = 1.0;
    /// The fastest paced rate; above it the pacing is meaningless on any one core (use `max`).
    pub const MAX: f64 = 100e6;
    /// The replay's and the bench's default, messages/s: well below every path's zero-loss
    /// rate.
    pub const DEFAULT: Rate = Rate::PerSec(20_000.0);

    /// The paced rate, `None` for `max`.
    pub fn per_sec(self) -> Option<f64> {
        match self {
            Rate::PerSec(r) => Some(r),
            Rate::Max => None,
        }
    }
}

impl FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "max" {
            return Ok(Rate::Max);
        }
        let (num, mult) = match s.as_bytes().last() {
            Some(b'k' | b'K') => (&s[..s.len() - 1], 1e3),
            Some(b'M' | b'm') => (&s[..s.len() - 1], 1e6),
            _ => (s, 1.0),
        };
        let v: f64 = num
            .parse()
            .map_err(|_| format!("bad rate {s:?}: use e.g. 50000, 50k, 1.5M or max"))?;
        let rate = v * mult;
        if !(Rate::MIN..=Rate::MAX).contains(&rate) {
            return Err(format!(
                "rate {s:?} is out of range: {} to {:e} messages/s, or `max` for as fast as the \
                 sender goes",
                Rate::MIN,
                Rate::MAX
            ));
        }
        Ok(Rate::PerSec(rate))
    }
}

/// `max`, or the rate with a k/M suffix where that is exact (`20k`, `1500k`, `12345`): what
/// [`FromStr`] reads back to the same value.
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Rate::Max => f.write_str("max"),
            Rate::PerSec(r) if r >= 1e6 && r % 1e6 == 0.0 => write!(f, "{}M", r / 1e6),
            Rate::PerSec(r) if r >= 1e3 && r % 1e3 == 0.0 => write!(f, "{}k", r / 1e3),
            Rate::PerSec(r) => write!(f, "{r}"),
        }
    }
}

/// Both serialize as their command-line text, so a report shows what a user would type.
macro_rules! serde_as_text {
    ($($t:ty),+) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    )+};
}

serde_as_text!(Source, Rate);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse_and_print_back() {
        assert_eq!(
            "gbm".parse::<Source>().unwrap(),
            Source::Gbm {
                seed: 42,
                bars: 150_000
            }
        );
        assert_eq!(
            "gbm:7:1000".parse::<Source>().unwrap().to_string(),
            "gbm:7:1000"
        );
        for s in [
            "gbm:42:150000",
            "closes:a/b.csv",
            "itch:x:y.itch",
            "pcap:f.pcap",
        ] {
            assert_eq!(s.parse::<Source>().unwrap().to_string(), s);
        }
        for bad in ["", "closes:", "gbm:x", "csv:f"] {
            assert!(bad.parse::<Source>().is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_parse_and_print_back_exactly() {
        assert_eq!("20k".parse::<Rate>().unwrap(), Rate::PerSec(20_000.0));
        assert_eq!("1.5M".parse::<Rate>().unwrap(), Rate::PerSec(1_500_000.0));
        assert_eq!("max".parse::<Rate>().unwrap(), Rate::Max);
        for (given, shown) in [
            ("20k", "20k"),
            ("1M", "1M"),
            ("1.5M", "1500k"),
            ("12345", "12345"),
            ("2.5", "2.5"),
            ("max", "max"),
        ] {
            let r: Rate = given.parse().unwrap();
            assert_eq!(r.to_string(), shown);
            assert_eq!(shown.parse::<Rate>().unwrap(), r);
        }
        for bad in ["0", "fast", "1e9", "-5k", ""] {
            assert!(bad.parse::<Rate>().is_err(), "{bad}");
        }
    }

    #[test]
    fn both_serialize_as_their_text() {
        assert_eq!(
            serde_json::to_string(&Rate::PerSec(20_000.0)).unwrap(),
            r#""20k""#
        );
        let s: Source = serde_json::from_str(r#""itch:f.itch""#).unwrap();
        assert_eq!(s, Source::Itch("f.itch".into()));
        assert!(serde_json::from_str::<Rate>(r#""0""#).is_err());
    }
}
