//! What a lab run puts at each end of the veth.
use paths::{ExchangeIo, Expect, Orders, TraderPath, Wait};

/// What a lab run puts at each end of the veth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ends {
    /// The trader's I/O path.
    pub(crate) trader: TraderPath,
    /// The exchange side's (the replay's) I/O.
    pub(crate) exchange: ExchangeIo,
    /// How the trader waits, if not as the options say (the trigger path's blocking row).
    pub(crate) wait: Option<Wait>,
    /// How orders travel (the replay serves a SoupBinTCP session for the TCP ones).
    pub(crate) orders: Orders,
}

impl Ends {
    /// A trader on `trader` against the replay on a kernel UDP socket.
    pub(crate) const fn kernel_exchange(trader: TraderPath) -> Ends {
        Ends {
            trader,
            exchange: ExchangeIo::Udp,
            wait: None,
            orders: Orders::Udp,
        }
    }

    /// What the replay expects back (the path table says): the reflector answers every tick,
    /// a trader its signals.
    pub(crate) fn expect(self) -> Expect {
        self.trader.spec().expect
    }
}
