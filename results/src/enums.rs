//! The options the binaries and xtask share, one spelling each: clap parses them, serde writes
//! them into reports, [`as_str`](TraderPath::as_str) builds command lines from them.
use serde::{Deserialize, Serialize};

/// Defines a fieldless enum that clap parses (`ValueEnum`, doc comments as help), serde writes
/// in kebab case, and `as_str`/`Display` spell exactly as both do.
macro_rules! arg_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize, Deserialize)]
        pub enum $name {
            $(
                $(#[$vmeta])*
                #[value(name = $text)]
                #[serde(rename = $text)]
                $variant,
            )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value as clap parses it and serde writes it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

arg_enum! {
    /// How the trader takes market data in and sends orders out.
    pub enum TraderPath {
        /// AF_XDP: the XDP program redirects the feed into a UMEM the trader polls.
        Xdp = "xdp",
        /// The kernel's UDP stack.
        Udp = "udp",
        /// The lab's floor, no trader at all: the XDP program turns each tick into an
        /// order-shaped reply and sends it back with XDP_TX. (The exchange end needs an XDP
        /// program too for XDP_TX into a veth: `replay --xdp-pass-on ex0`.)
        Reflect = "reflect",
        /// AF_XDP with the decision in the driver: between ticks the trader arms the XDP
        /// program with the next tick's firing prices and order; the program sends that order
        /// itself (XDP_TX) when such a price arrives, and passes every other packet to the
        /// trader, which checks and re-arms.
        Trigger = "trigger",
    }
}

impl TraderPath {
    /// The XDP program sends from the trader's end with XDP_TX (the reflector's answers, the
    /// trigger's orders): on a veth the other end needs an XDP program for them to arrive.
    pub const fn xdp_tx(self) -> bool {
        matches!(self, TraderPath::Reflect | TraderPath::Trigger)
    }
}

arg_enum! {
    /// What a measured loop does while no data is there.
    pub enum Wait {
        /// Busy-poll the ring or socket on one core.
        Spin = "spin",
        /// Sleep in poll()/recv() until data arrives.
        Block = "block",
    }
}

arg_enum! {
    /// Where the XDP program runs.
    #[derive(Default)]
    pub enum XdpMode {
        /// In the driver (veth supports it): the fast path.
        #[default]
        #[value(alias = "driver", alias = "drv")]
        Native = "native",
        /// Generic XDP, after the kernel has built an skb: works on any interface, slower.
        #[value(alias = "generic")]
        Skb = "skb",
    }
}

arg_enum! {
    /// The exchange side's (the replay's) I/O.
    pub enum ExchangeIo {
        /// A kernel UDP socket.
        Udp = "udp",
        /// AF_XDP on the exchange's interface: the bypass harness, neither end on the kernel
        /// UDP stack.
        Xdp = "xdp",
    }
}

arg_enum! {
    /// What the replay expects the trader to answer.
    pub enum Expect {
        /// The strategy's orders; parity with the backtest is checked.
        Signals = "signals",
        /// One order per tick: the XDP reflector floor.
        Every = "every",
    }
}

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

#[cfg(test)]
mod tests {
    use clap::ValueEnum as _;

    use super::*;

    #[test]
    fn clap_serde_and_as_str_spell_alike() {
        for p in TraderPath::ALL {
            let clap_name = p.to_possible_value().unwrap().get_name().to_owned();
            assert_eq!(clap_name, p.as_str());
            assert_eq!(
                serde_json::to_string(p).unwrap(),
                format!("\"{clap_name}\"")
            );
        }
        assert_eq!(XdpMode::from_str("drv", false).unwrap(), XdpMode::Native);
        assert_eq!(XdpMode::from_str("generic", false).unwrap(), XdpMode::Skb);
        assert_eq!(
            serde_json::from_str::<ExchangeIo>("\"xdp\"").unwrap(),
            ExchangeIo::Xdp
        );
        assert!(serde_json::from_str::<Wait>("\"sleep\"").is_err());
    }
}
