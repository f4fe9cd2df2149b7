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
    /// The full-depth feed generator (the `market` crate): thousands of symbols' order flow,
    /// the lab symbol printing the `gbm:SEED:BARS` series.
    Market(MarketSpec),
}

/// `market[:SEED[:BARS]][:per-print=N][:symbols=N][:synth=E|P]`: what the feed generator is
/// asked for. Unset knobs are the generator's defaults (the `market` crate says them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MarketSpec {
    /// The seed, of the GBM series and of the rest of the flow.
    pub seed: u64,
    /// The lab symbol's ticks.
    pub bars: usize,
    /// Other symbols' messages per lab tick, on average.
    pub per_print: Option<u32>,
    /// Symbols besides the lab's.
    pub symbols: Option<u16>,
    /// The lab symbol prints as Trade (`'P'`) messages (`synth=P`) instead of an Add Order and
    /// its Order Executed (`synth=E`, the default): for a trader that reads no book.
    pub synth_trades: bool,
}

impl MarketSpec {
    fn parse(rest: &str) -> Result<MarketSpec, String> {
        let mut spec = MarketSpec {
            seed: Source::GBM_SEED,
            bars: Source::GBM_BARS,
            per_print: None,
            symbols: None,
            synth_trades: false,
        };
        let mut positional = 0;
        for part in rest.split(':').filter(|p| !p.is_empty()) {
            let bad = |what: &str, e: &dyn fmt::Display| format!("bad market {what} {part:?}: {e}");
            match part.split_once('=') {
                None if positional == 0 => {
                    spec.seed = part.parse().map_err(|e| bad("seed", &e))?;
                    positional += 1;
                }
                None if positional == 1 => {
                    spec.bars = part.parse().map_err(|e| bad("length", &e))?;
                    positional += 1;
                }
                None => {
                    return Err(format!(
                        "market takes SEED and BARS, then KEY=VALUE: {part:?}"
                    ));
                }
                Some(("per-print", v)) => {
                    spec.per_print = Some(v.parse().map_err(|e| bad("per-print", &e))?)
                }
                Some(("symbols", v)) => {
                    let n: u16 = v.parse().map_err(|e| bad("symbols", &e))?;
                    if n == 0 {
                        return Err(format!(
                            "market {part:?}: at least one symbol besides SYNTH (1 to 65534)"
                        ));
                    }
                    spec.symbols = Some(n);
                }
                Some(("synth", "P")) => spec.synth_trades = true,
                Some(("synth", "E")) => spec.synth_trades = false,
                Some((k, _)) => {
                    return Err(format!(
                        "unknown market option {part:?} ({k}): use per-print=N, symbols=N, synth=E or synth=P"
                    ));
                }
            }
        }
        Ok(spec)
    }
}

impl fmt::Display for MarketSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "market:{}:{}", self.seed, self.bars)?;
        if let Some(n) = self.per_print {
            write!(f, ":per-print={n}")?;
        }
        if let Some(n) = self.symbols {
            write!(f, ":symbols={n}")?;
        }
        if self.synth_trades {
            write!(f, ":synth=P")?;
        }
        Ok(())
    }
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
    /// `gbm`, `gbm:SEED`, `gbm:SEED:BARS`, `closes:PATH`, `itch:PATH`, `pcap:PATH`,
    /// `market[:SEED[:BARS]][:KEY=VALUE...]`.
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
            "market" => MarketSpec::parse(rest).map(Source::Market),
            _ => Err(format!(
                "unknown source {s:?}: use gbm[:SEED[:BARS]], closes:PATH, itch:PATH, pcap:PATH \
                 or market[:SEED[:BARS]][:per-print=N][:symbols=N][:synth=E|P]"
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
            Source::Market(m) => write!(f, "{m}"),
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
            "market:42:150000",
            "market:7:1000:per-print=8:symbols=50:synth=P",
        ] {
            assert_eq!(s.parse::<Source>().unwrap().to_string(), s);
        }
        assert_eq!(
            "market".parse::<Source>().unwrap().to_string(),
            "market:42:150000"
        );
        assert_eq!(
            "market:1:2:synth=P".parse::<Source>().unwrap(),
            Source::Market(MarketSpec {
                seed: 1,
                bars: 2,
                per_print: None,
                symbols: None,
                synth_trades: true
            })
        );
        for bad in [
            "",
            "closes:",
            "gbm:x",
            "csv:f",
            "market:x",
            "market:1:2:3",
            "market:1:per-print=x",
            "market:1:synth=Q",
            "market:1:speed=2",
            "market:1:symbols=0",
        ] {
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
