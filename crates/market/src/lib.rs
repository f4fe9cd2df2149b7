//! A full-depth NASDAQ TotalView-ITCH 5.0 feed, generated: the market as NASDAQ sends it, from a
//! seed.
//!
//! [`Generator`] yields a day of ITCH 5.0 messages in time order:
//!
//! - **The start of the day**: System Event `'O'` (start of messages), a Stock Directory
//!   (`'R'`), a Stock Trading Action (`'H'`) and a Reg SHO indicator (`'Y'`) for every symbol, a
//!   few Market Participant Positions (`'L'`), the MWCB decline levels (`'V'`), then `'S'` (start
//!   of system hours) at 04:00.
//! - **Thousands of symbols with skewed activity**: each symbol's share of the flow follows a
//!   Zipf law over a random ranking ([`Config::zipf`]), so a few symbols carry most messages.
//!   Symbols are named at random and given their stock locates in alphabetical order, as NASDAQ
//!   assigns them.
//! - **The order flow**: adds (`'A'`, a few `'F'`), deletes, replaces, cancels, executions
//!   (`'E'`, a few `'C'`), non-displayed trades (`'P'`) in the proportions of [`MIX`], each
//!   drawn against the generator's own book of the symbol, so every message is valid against a
//!   book: no execution, cancel, delete or replace names an order that isn't resting with the
//!   shares it takes. New orders rest at or behind the touch; an execution takes the best order
//!   on its side (price, then time priority), and when it empties the level next to the touch
//!   the touch moves. Cancels, deletes and replaces mostly hit one of their symbol's most
//!   recent orders ([`RECENT_MEAN`]), so how old an order is when it goes depends on how busy
//!   its symbol is: fitted so the ages span what the SEC's MIDAS reported for 2013 (at most a
//!   quarter of cancels within 50 ms, under 8 % within 500 µs, most after half a second).
//! - **Clustered arrivals and an opening burst**: messages come in bursts (mean
//!   [`BURST_MEAN`] messages, mostly on one symbol, microseconds apart), the bursts at an
//!   intraday intensity ([`profile::intensity`]): quiet pre-market, the pre-open's imbalance
//!   messages (`'I'`), 20× the midday trough in the first ten seconds after 09:30, a U over the session.
//!   The opening and closing crosses print a Cross Trade (`'Q'`) per symbol at 09:30 and 16:00.
//! - **The lab symbol, `SYNTH`**: its prints are exactly the engine's `gbm:SEED:BARS` series,
//!   one print per tick, the same `Price4` as the ticker feed, spread evenly over the regular
//!   session. As [`SynthPrints::Executions`] (the default) each is the Order Executed of an
//!   order resting at the tick's price since the print before (the first print's added just
//!   before it), so a reader learns the price only from the book, and a book-driven trigger
//!   has the order in its firing set a print ahead; as [`SynthPrints::Trades`] each is the ticker's Trade (`'P'`)
//!   message, for a trader that reads no book.
//! - **The end of the day**: `'M'` at 16:00, `'E'` at 20:00, `'C'` after it.
//!
//! Timestamps are nanoseconds since midnight and never decrease. The same seed and
//! [`Config`] give the same messages, byte for byte, on every machine.
//!
//! What it does not model (docs/market.md has the list, and the figures it was fitted to): the
//! auctions' order books (the crosses print at the touch), halts, IPOs and LULD collars (`'K'`,
//! `'J'`, `'h'`, `'W'`, `'O'` are never sent), retail price improvement (`'N'`), sub-penny
//! prices, correlated moves across symbols, and hidden orders other than the `'P'` prints.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
#[cfg(test)]
use criterion as _;

mod profile;
mod rng;

use std::collections::VecDeque;

use hdrhistogram::Histogram;
use rng::Rng;
use wire::itch::{
    AddOrderMpidRepr, AddOrderRepr, BrokenTradeRepr, CrossTradeRepr, MarketParticipantPositionRepr,
    Message, MwcbDeclineLevelRepr, NoiiRepr, OrderCancelRepr, OrderDeleteRepr, OrderExecutedRepr,
    OrderExecutedWithPriceRepr, OrderReplaceRepr, Price4, RegShoRepr, Side, Stock,
    StockDirectoryRepr, StockTradingActionRepr, SystemEventRepr, Timestamp, TradeRepr,
};

pub use profile::{CLOSE_S, OPEN_S, intensity};

/// The lab symbol, whose prints are the GBM series.
pub const SYNTH: &str = "SYNTH";

/// How the lab symbol prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SynthPrints {
    /// An Add Order and the Order Executed (`'E'`) that takes it: priced only by the book.
    #[default]
    Executions,
    /// A Trade (`'P'`) message, as the ticker feed sends it.
    Trades,
}

/// What to generate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// The seed: of the GBM series (`engine::data::gbm`) and of everything else.
    pub seed: u64,
    /// Ticks of the lab symbol: the GBM series' length.
    pub bars: usize,
    /// Other symbols' messages per lab tick, on average (the day's size is about
    /// `bars × (per_print + 2)`).
    pub per_print: u32,
    /// Symbols besides the lab's.
    pub symbols: u16,
    /// The Zipf exponent of the symbols' activity.
    pub zipf: f64,
    /// How the lab symbol prints.
    pub synth: SynthPrints,
}

impl Config {
    /// Other symbols' messages per lab tick by default.
    pub const PER_PRINT: u32 = 64;
    /// Symbols besides the lab's by default.
    pub const SYMBOLS: u16 = 8_000;
    /// The Zipf exponent by default: 0.55 puts the busiest symbol at 0.8 % of the day over
    /// 8,000 symbols and the next two at 0.6 % and 0.5 %, as SPY, AAPL and MSFT were on
    /// NASDAQ's 2019-12-30 (2.19 M, 1.58 M, 1.25 M book events of 268.7 M messages, itch-book's
    /// README): the only published per-symbol figures found.
    pub const ZIPF: f64 = 0.55;

    /// What a `market:...` source asks for, the rest the defaults.
    pub fn from_spec(spec: &paths::MarketSpec) -> Config {
        let paths::MarketSpec {
            seed,
            bars,
            per_print,
            symbols,
            synth_trades,
        } = *spec;
        Config {
            per_print: per_print.unwrap_or(Self::PER_PRINT),
            symbols: symbols.unwrap_or(Self::SYMBOLS),
            synth: if synth_trades {
                SynthPrints::Trades
            } else {
                SynthPrints::Executions
            },
            ..Config::new(seed, bars)
        }
    }

    /// The defaults for a seed and a length.
    pub fn new(seed: u64, bars: usize) -> Config {
        Config {
            seed,
            bars,
            per_print: Self::PER_PRINT,
            symbols: Self::SYMBOLS,
            zipf: Self::ZIPF,
            synth: SynthPrints::default(),
        }
    }
}

/// What the generator sends besides admin messages, crosses and imbalances, as shares of the
/// flow: NASDAQ TotalView-ITCH 5.0 of 2019-10-30 (293,989,079 messages; counts by type in the
/// parse notebook of Jansen's "Machine Learning for Algorithmic Trading", ch. 2; docs/market.md
/// has the table).
pub const MIX: [(Kind, f64); 9] = [
    (Kind::Add, 0.4327),
    (Kind::AddMpid, 0.004_84),
    (Kind::Delete, 0.4194),
    (Kind::Replace, 0.0868),
    // 'E' 2.49 % and 'C' 0.044 %: WITH_PRICE splits them.
    (Kind::Execute, 0.025_33),
    (Kind::Cancel, 0.0121),
    (Kind::Trade, 0.005_19),
    (Kind::Position, 0.000_73),
    // One Broken Trade on the day.
    (Kind::Broken, 0.000_000_003_4),
];

/// A background event's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `'A'`.
    Add,
    /// `'F'`.
    AddMpid,
    /// `'D'`.
    Delete,
    /// `'U'`.
    Replace,
    /// `'E'` (a few `'C'`).
    Execute,
    /// `'X'`.
    Cancel,
    /// `'P'`.
    Trade,
    /// `'L'`.
    Position,
    /// `'B'`.
    Broken,
}

/// Mean messages in a burst.
pub const BURST_MEAN: f64 = 4.0;
/// Chance that the next message of a burst is on the burst's symbol.
const BURST_SAME_SYMBOL: f64 = 0.5;
/// Chance that a burst is on one of the last [`RECENT_SYMS`] fresh bursts' symbols.
const REVISIT: f64 = 0.5;
/// See [`REVISIT`].
const RECENT_SYMS: usize = 8;
/// Mean gap between the messages of a burst, ns.
const BURST_GAP_NS: f64 = 2_000.0;
/// A cancel, delete or replace picks the k-th most recent resting order of its symbol, k
/// geometric with this mean, [`RECENT_SHARE`] of the time; otherwise any resting order.
pub const RECENT_MEAN: f64 = 3.0;
/// See [`RECENT_MEAN`].
pub const RECENT_SHARE: f64 = 0.85;
/// Resting orders a symbol holds at most (an add beyond it becomes a delete).
const MAX_LIVE: usize = 256;
/// Share of executions sent as `'C'` (Order Executed With Price), and of those non-printable.
const WITH_PRICE: f64 = 0.0174;
const NON_PRINTABLE: f64 = 0.1;
/// Chance that a background message in the imbalance windows is an NOII (`'I'`).
const NOII_IN_WINDOW: f64 = 0.165;
/// Shares of the lab symbol's ticks (the ticker's lot).
const SYNTH_SHARES: u32 = 100;
/// The price tick of every generated symbol: $0.01.
const TICK: u32 = 100;

#[derive(Debug, Clone, Copy)]
struct Live {
    order_ref: u64,
    /// In ticks.
    price: u32,
    shares: u32,
    side: Side,
    born_ns: u64,
    /// The generator's message count when it was added.
    born_msg: u64,
}

#[derive(Debug, Clone)]
struct Sym {
    locate: u16,
    stock: Stock,
    /// The touch: bids rest at or below it, asks above it (in ticks).
    anchor: u32,
    /// Resting orders, oldest first.
    live: Vec<Live>,
}

/// What the generator sent, and how old the orders were that its cancels, deletes, replaces
/// and executions named.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Messages by type byte.
    pub by_kind: [u64; 128],
    /// Ages of the orders named, ns of the day's timestamps (3 significant digits).
    pub age_ns: Histogram<u64>,
    /// The same ages in messages of the whole feed sent between the order's add and the
    /// message that named it: what a book's cache sees.
    pub age_msgs: Histogram<u64>,
}

impl Default for Stats {
    fn default() -> Self {
        let h = || Histogram::new_with_bounds(1, u64::MAX / 4, 3).expect("valid bounds");
        Stats {
            by_kind: [0; 128],
            age_ns: h(),
            age_msgs: h(),
        }
    }
}

impl Stats {
    /// Messages sent.
    pub fn messages(&self) -> u64 {
        self.by_kind.iter().sum()
    }

    /// The age (ns) below which a share `q` of the named orders were.
    pub fn age_quantile_ns(&self, q: f64) -> Option<u64> {
        (!self.age_ns.is_empty()).then(|| self.age_ns.value_at_quantile(q).saturating_sub(1))
    }

    /// The share of named orders younger than `ns`.
    pub fn age_share_below(&self, ns: u64) -> f64 {
        share_below(&self.age_ns, ns)
    }

    /// [`Stats::age_quantile_ns`] in messages.
    pub fn age_quantile_msgs(&self, q: f64) -> Option<u64> {
        (!self.age_msgs.is_empty()).then(|| self.age_msgs.value_at_quantile(q).saturating_sub(1))
    }

    /// [`Stats::age_share_below`] in messages.
    pub fn age_share_below_msgs(&self, msgs: u64) -> f64 {
        share_below(&self.age_msgs, msgs)
    }
}

fn share_below(h: &Histogram<u64>, x: u64) -> f64 {
    if h.is_empty() || x == 0 {
        return 0.0;
    }
    // Ages are recorded as age + 1 (the histogram starts at 1).
    h.count_between(1, x) as f64 / h.len() as f64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Admin {
    /// A System Event with this code.
    System(u8),
    /// A Cross Trade per symbol, of this cross type.
    Cross(u8),
}

/// The generator.
#[derive(Debug)]
pub struct Generator {
    config: Config,
    rng: Rng,
    profile: profile::Profile,
    syms: Vec<Sym>,
    /// The Zipf draw over `syms`: Vose's alias table (probability of keeping the column, in
    /// 2^-64 units, and the alias).
    alias: Vec<(u64, u32)>,
    /// [`MIX`] as cumulative thresholds of a 64-bit draw.
    mix: [u64; MIX.len()],
    synth: Sym,
    closes: Vec<Price4>,
    next_tick: usize,
    pending: VecDeque<Message>,
    /// Admin events by time, in order; the next one's index.
    admin: Vec<(u64, Admin)>,
    next_admin: usize,
    started: bool,
    /// The background's uniform clock, and its messages left.
    u: f64,
    bg_left: u64,
    burst_left: u64,
    burst_sym: usize,
    /// The last fresh bursts' symbols, and where the next goes.
    recent_syms: [usize; RECENT_SYMS],
    recent_at: usize,
    bg_ns: u64,
    bg_next: Option<u64>,
    next_ref: u64,
    /// The SYNTH order the next print executes, resting since the print before.
    synth_resting: Option<u64>,
    next_match: u64,
    /// Messages generated so far.
    sent: u64,
    stats: Stats,
}

/// Random symbol names, unique, `SYNTH` not among them.
fn names(rng: &mut Rng, n: usize) -> Vec<Stock> {
    let mut set = std::collections::BTreeSet::new();
    while set.len() < n {
        // Mostly 3- and 4-letter symbols, as on NASDAQ; a few of 1, 2 and 5.
        let len = match rng.below(100) {
            0..=1 => 1,
            2..=9 => 2,
            10..=39 => 3,
            40..=94 => 4,
            _ => 5,
        };
        let name: String = (0..len)
            .map(|_| char::from(b'A' + rng.below(26) as u8))
            .collect();
        if name != SYNTH {
            set.insert(name);
        }
    }
    set.into_iter()
        .map(|s| Stock::new(&s).expect("letters fit a symbol"))
        .collect()
}

fn mix_thresholds() -> [u64; MIX.len()] {
    let total: f64 = MIX.iter().map(|m| m.1).sum();
    let mut out = [u64::MAX; MIX.len()];
    let mut acc = 0.0;
    for (i, &(_, w)) in MIX.iter().enumerate() {
        acc += w / total;
        out[i] = if i + 1 == MIX.len() {
            u64::MAX
        } else {
            (acc * 2f64.powi(64)) as u64
        };
    }
    out
}

/// Vose's alias method: for each column, the chance (in 2^-64 units) of keeping it, and the
/// column to take otherwise; one draw is two random numbers, whatever the number of symbols.
fn alias_table(weights: &[f64]) -> Vec<(u64, u32)> {
    let n = weights.len();
    let total: f64 = weights.iter().sum();
    let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
    let mut table = vec![(u64::MAX, 0u32); n];
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| scaled[i] < 1.0);
    while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
        table[s] = ((scaled[s] * 2f64.powi(64)) as u64, l as u32);
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // What is left keeps its column (rounding): probability one.
    for i in small.into_iter().chain(large) {
        table[i] = (u64::MAX, i as u32);
    }
    table
}

fn ts(ns: u64) -> Timestamp {
    Timestamp::from_nanos(ns.min(Timestamp::MAX.nanos())).unwrap_or(Timestamp::MAX)
}

impl Generator {
    /// A generator for `config`.
    ///
    /// Errors: a lab tick whose GBM close is no `Price4` (negative or too large: the series is
    /// the engine's, so this would be a bug there), or more symbols than stock locates.
    pub fn new(config: Config) -> Result<Generator, String> {
        let closes = engine::data::gbm(config.seed, config.bars)
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                Price4::from_f64_quantised(c).map_err(|e| format!("close {i} ({c}): {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut rng = Rng::new(config.seed ^ 0x6d61_726b_6574); // "market"
        let n = usize::from(config.symbols);
        if n == 0 {
            return Err("a market needs at least one symbol besides SYNTH".into());
        }
        let mut stocks = names(&mut rng, n);
        let synth = Stock::new(SYNTH).expect("SYNTH is a symbol");
        stocks.push(synth);
        stocks.sort();
        let mut syms = Vec::with_capacity(n);
        let mut synth_sym = None;
        for (i, stock) in stocks.into_iter().enumerate() {
            let locate = u16::try_from(i + 1).map_err(|_| "more symbols than stock locates")?;
            // Touch prices log-uniform from $2 to $400.
            let dollars = (2f64.ln() + rng.unit() * (400f64.ln() - 2f64.ln())).exp();
            let sym = Sym {
                locate,
                stock,
                anchor: (dollars * 100.0) as u32,
                live: Vec::with_capacity(MAX_LIVE),
            };
            if stock == synth {
                synth_sym = Some(sym);
            } else {
                syms.push(sym);
            }
        }
        // Activity ranks at random, Zipf weights by rank.
        let mut ranks: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            ranks.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let weights: Vec<f64> = ranks
            .iter()
            .map(|&r| 1.0 / ((r + 1) as f64).powf(config.zipf))
            .collect();
        let alias = alias_table(&weights);
        let ns = |s: u64| s * profile::NS;
        let admin = vec![
            (ns(profile::OPEN_S), Admin::System(b'Q')),
            (ns(profile::OPEN_S), Admin::Cross(b'O')),
            (ns(profile::CLOSE_S), Admin::Cross(b'C')),
            (ns(profile::CLOSE_S), Admin::System(b'M')),
            (ns(profile::END_S), Admin::System(b'E')),
            (ns(profile::END_S) + ns(300), Admin::System(b'C')),
        ];
        let bg_left = config.bars as u64 * u64::from(config.per_print);
        Ok(Generator {
            config,
            rng,
            profile: profile::Profile::new(),
            syms,
            alias,
            mix: mix_thresholds(),
            synth: synth_sym.expect("SYNTH was added"),
            closes,
            next_tick: 0,
            pending: VecDeque::with_capacity(1024),
            admin,
            next_admin: 0,
            started: false,
            u: 0.0,
            bg_left,
            burst_left: 0,
            burst_sym: 0,
            recent_syms: [0; RECENT_SYMS],
            recent_at: 0,
            bg_ns: profile::START_S * profile::NS,
            bg_next: None,
            next_ref: 0,
            synth_resting: None,
            next_match: 0,
            sent: 0,
            stats: Stats::default(),
        })
    }

    /// The lab symbol's stock locate.
    pub fn synth_locate(&self) -> u16 {
        self.synth.locate
    }

    /// The lab symbol's ticks, in order: the GBM series quantised.
    pub fn ticks(&self) -> &[Price4] {
        &self.closes
    }

    /// What it sent so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    fn push(&mut self, m: Message) {
        self.stats.by_kind[usize::from(m.kind() & 0x7f)] += 1;
        self.sent += 1;
        self.pending.push_back(m);
    }

    fn system(&mut self, t: u64, code: u8) {
        self.push(Message::SystemEvent(SystemEventRepr {
            stock_locate: 0,
            tracking_number: 0,
            timestamp: ts(t),
            event_code: code,
        }));
    }

    fn start(&mut self) {
        let t0 = 3 * 3600 * profile::NS;
        self.system(t0, b'O');
        let mut all: Vec<(u16, Stock)> = self.syms.iter().map(|s| (s.locate, s.stock)).collect();
        all.push((self.synth.locate, self.synth.stock));
        all.sort();
        for (k, &(locate, stock)) in all.iter().enumerate() {
            let t = t0 + 1_000_000 + k as u64 * 1_000;
            self.push(Message::StockDirectory(StockDirectoryRepr {
                stock_locate: locate,
                tracking_number: 0,
                timestamp: ts(t),
                stock,
                market_category: b"QGS"[usize::from(locate) % 3],
                financial_status: b'N',
                round_lot_size: 100,
                round_lots_only: b'N',
                issue_classification: b'C',
                issue_subtype: *b"Z ",
                authenticity: b'P',
                short_sale_threshold: b'N',
                ipo_flag: b' ',
                luld_reference_price_tier: b'1',
                etp_flag: b'N',
                etp_leverage_factor: 0,
                inverse_indicator: b'N',
            }));
            self.push(Message::StockTradingAction(StockTradingActionRepr {
                stock_locate: locate,
                tracking_number: 0,
                timestamp: ts(t + 100),
                stock,
                trading_state: b'T',
                reserved: b' ',
                reason: *b"    ",
            }));
            self.push(Message::RegSho(RegShoRepr {
                stock_locate: locate,
                tracking_number: 0,
                timestamp: ts(t + 200),
                stock,
                action: b'0',
            }));
        }
        let t1 = t0 + 2 * 1_000_000 + all.len() as u64 * 1_000;
        self.push(Message::MwcbDeclineLevel(MwcbDeclineLevelRepr {
            stock_locate: 0,
            tracking_number: 0,
            timestamp: ts(t1),
            level1: 5_000_000_000_000, // $50,000.00000000 in Price(8)
            level2: 4_600_000_000_000,
            level3: 4_000_000_000_000,
        }));
        self.system(profile::START_S * profile::NS, b'S');
    }

    /// Moves the background's clock to its next message: the next in this burst, or the start
    /// of the next burst.
    fn advance_background(&mut self) {
        if self.bg_left == 0 {
            self.bg_next = None;
            return;
        }
        if self.burst_left == 0 {
            // The step's mean is the clock left over the bursts left, so the day's flow ends
            // before its end of system hours whatever the draws (a fixed mean of 1 / bursts
            // overran the day in about half the seeds).
            let bursts_left = (self.bg_left as f64 / BURST_MEAN).max(1.0);
            let step = self.rng.exponential((1.0 - self.u) / (bursts_left + 1.0));
            self.u = (self.u + step).min(1.0 - 1e-9);
            let start = self.profile.time_ns(self.u);
            self.bg_ns = self.bg_ns.max(start);
            self.burst_left = 1 + self.rng.geometric(BURST_MEAN - 1.0);
            // Activity clusters beyond a burst: a burst is often on a symbol one of the last
            // few bursts were on (a symbol in play), else a fresh draw.
            self.burst_sym = if self.rng.chance(REVISIT) {
                self.recent_syms[self.rng.below(RECENT_SYMS as u64) as usize]
            } else {
                let s = self.zipf();
                self.recent_syms[self.recent_at % RECENT_SYMS] = s;
                self.recent_at += 1;
                s
            };
        } else {
            self.bg_ns += self.rng.exponential(BURST_GAP_NS) as u64;
        }
        self.bg_next = Some(self.bg_ns);
    }

    #[inline]
    fn zipf(&mut self) -> usize {
        let column = self.rng.below(self.alias.len() as u64) as usize;
        let (keep, alias) = self.alias[column];
        if self.rng.next_u64() < keep {
            column
        } else {
            alias as usize
        }
    }

    fn synth_time(&self, i: usize) -> u64 {
        let span = (profile::CLOSE_S - profile::OPEN_S) * profile::NS;
        profile::OPEN_S * profile::NS
            + ((i as f64 + 0.5) * span as f64 / self.closes.len() as f64) as u64
    }

    /// Generates the next event(s) into `pending`; false when the day is over.
    fn step(&mut self) -> bool {
        if !self.started {
            self.started = true;
            self.start();
            self.advance_background();
            return true;
        }
        let admin_t = self.admin.get(self.next_admin).map(|a| a.0);
        let tick_t = (self.next_tick < self.closes.len()).then(|| self.synth_time(self.next_tick));
        let bg_t = self.bg_next;
        let Some(t) = [admin_t, tick_t, bg_t].into_iter().flatten().min() else {
            return false;
        };
        if admin_t == Some(t) {
            let (_, a) = self.admin[self.next_admin];
            self.next_admin += 1;
            match a {
                Admin::System(code) => self.system(t, code),
                Admin::Cross(kind) => self.crosses(t, kind),
            }
        } else if tick_t == Some(t) {
            self.tick(t);
        } else {
            self.background(t);
            self.bg_left -= 1;
            self.burst_left = self.burst_left.saturating_sub(1);
            self.advance_background();
        }
        true
    }

    fn tick(&mut self, t: u64) {
        let price = self.closes[self.next_tick];
        self.next_tick += 1;
        let locate = self.synth.locate;
        let stock = self.synth.stock;
        self.next_match += 1;
        match self.config.synth {
            SynthPrints::Trades => self.push(Message::Trade(TradeRepr {
                stock_locate: locate,
                tracking_number: 0,
                timestamp: ts(t),
                order_ref: 0,
                side: Side::Buy,
                shares: SYNTH_SHARES,
                stock,
                price,
                match_number: self.next_match,
            })),
            SynthPrints::Executions => {
                // The order this print executes rests since the print before (the first
                // print's is added just before it): a book-driven trigger has it in its firing
                // set a tick ahead, as it would a resting order on a real book.
                let order_ref = match self.synth_resting.take() {
                    Some(r) => r,
                    None => self.rest_synth(t, price),
                };
                self.push(Message::OrderExecuted(OrderExecutedRepr {
                    stock_locate: locate,
                    tracking_number: 0,
                    timestamp: ts(t),
                    order_ref,
                    executed_shares: SYNTH_SHARES,
                    match_number: self.next_match,
                }));
                if let Some(&next) = self.closes.get(self.next_tick) {
                    self.synth_resting = Some(self.rest_synth(t, next));
                }
            }
        }
    }

    /// Rests a SYNTH sell order of the print's size at `price`, at `t`: its reference.
    fn rest_synth(&mut self, t: u64, price: Price4) -> u64 {
        self.next_ref += 1;
        let order_ref = self.next_ref;
        self.push(Message::AddOrder(AddOrderRepr {
            stock_locate: self.synth.locate,
            tracking_number: 0,
            timestamp: ts(t),
            order_ref,
            side: Side::Sell,
            shares: SYNTH_SHARES,
            stock: self.synth.stock,
            price,
        }));
        order_ref
    }

    fn crosses(&mut self, t: u64, cross_type: u8) {
        for i in 0..self.syms.len() {
            let s = &self.syms[i];
            let (locate, stock, anchor) = (s.locate, s.stock, s.anchor);
            self.next_match += 1;
            let shares = 100 * (1 + self.rng.geometric(20.0));
            self.push(Message::CrossTrade(CrossTradeRepr {
                stock_locate: locate,
                tracking_number: 0,
                timestamp: ts(t),
                shares,
                stock,
                cross_price: Price4(anchor * TICK),
                match_number: self.next_match,
                cross_type,
            }));
        }
    }

    #[inline]
    fn kind(&mut self) -> Kind {
        let x = self.rng.next_u64();
        for (i, &t) in self.mix.iter().enumerate() {
            if x < t {
                return MIX[i].0;
            }
        }
        MIX[MIX.len() - 1].0
    }

    /// A resting order of symbol `s` to cancel, delete or replace: mostly a recent one.
    fn pick(&mut self, s: usize) -> usize {
        let n = self.syms[s].live.len();
        if self.rng.chance(RECENT_SHARE) {
            n - 1 - (self.rng.geometric(RECENT_MEAN) as usize).min(n - 1)
        } else {
            self.rng.below(n as u64) as usize
        }
    }

    fn age(&mut self, t: u64, o: &Live) {
        // Recorded as age + 1: the histogram's range starts at 1.
        self.stats
            .age_ns
            .saturating_record(t.saturating_sub(o.born_ns) + 1);
        self.stats
            .age_msgs
            .saturating_record(self.sent.saturating_sub(o.born_msg) + 1);
    }

    fn in_imbalance_window(t: u64) -> bool {
        let s = t / profile::NS;
        (profile::OPEN_S - 300..profile::OPEN_S).contains(&s)
            || (profile::CLOSE_S - 600..profile::CLOSE_S).contains(&s)
    }

    fn background(&mut self, t: u64) {
        let s = if self.rng.chance(BURST_SAME_SYMBOL) {
            self.burst_sym
        } else {
            self.zipf()
        };
        if Self::in_imbalance_window(t) && self.rng.chance(NOII_IN_WINDOW) {
            return self.noii(t, s);
        }
        let mut kind = self.kind();
        let n = self.syms[s].live.len();
        match kind {
            Kind::Add | Kind::AddMpid if n >= MAX_LIVE => kind = Kind::Delete,
            Kind::Delete | Kind::Replace | Kind::Execute | Kind::Cancel if n == 0 => {
                kind = Kind::Add
            }
            _ => {}
        }
        match kind {
            Kind::Add | Kind::AddMpid => self.add(t, s, kind == Kind::AddMpid),
            Kind::Delete => {
                let i = self.pick(s);
                let o = self.syms[s].live.remove(i);
                self.age(t, &o);
                let locate = self.syms[s].locate;
                self.push(Message::OrderDelete(OrderDeleteRepr {
                    stock_locate: locate,
                    tracking_number: 0,
                    timestamp: ts(t),
                    order_ref: o.order_ref,
                }));
            }
            Kind::Cancel => {
                let i = self.pick(s);
                let o = self.syms[s].live[i];
                self.age(t, &o);
                let locate = self.syms[s].locate;
                if o.shares <= 1 {
                    self.syms[s].live.remove(i);
                    return self.push(Message::OrderDelete(OrderDeleteRepr {
                        stock_locate: locate,
                        tracking_number: 0,
                        timestamp: ts(t),
                        order_ref: o.order_ref,
                    }));
                }
                let cancelled = 1 + self.rng.below(u64::from(o.shares - 1)) as u32;
                self.syms[s].live[i].shares -= cancelled;
                self.push(Message::OrderCancel(OrderCancelRepr {
                    stock_locate: locate,
                    tracking_number: 0,
                    timestamp: ts(t),
                    order_ref: o.order_ref,
                    cancelled_shares: cancelled,
                }));
            }
            Kind::Replace => {
                let i = self.pick(s);
                let o = self.syms[s].live.remove(i);
                self.age(t, &o);
                let price = self.price(s, o.side);
                let shares = self.shares();
                self.next_ref += 1;
                let new = Live {
                    order_ref: self.next_ref,
                    price,
                    shares,
                    side: o.side,
                    born_ns: t,
                    born_msg: self.sent,
                };
                let sym = &mut self.syms[s];
                sym.live.push(new);
                let locate = sym.locate;
                self.push(Message::OrderReplace(OrderReplaceRepr {
                    stock_locate: locate,
                    tracking_number: 0,
                    timestamp: ts(t),
                    original_ref: o.order_ref,
                    new_ref: new.order_ref,
                    shares,
                    price: Price4(price * TICK),
                }));
            }
            Kind::Execute => self.execute(t, s),
            Kind::Trade => {
                let sym = &self.syms[s];
                let (locate, stock, anchor) = (sym.locate, sym.stock, sym.anchor);
                let side = if self.rng.chance(0.5) {
                    Side::Buy
                } else {
                    Side::Sell
                };
                let shares = self.shares();
                self.next_match += 1;
                self.push(Message::Trade(TradeRepr {
                    stock_locate: locate,
                    tracking_number: 0,
                    timestamp: ts(t),
                    order_ref: 0,
                    side,
                    shares,
                    stock,
                    // Non-displayed liquidity inside the spread: at the bid's side of it or the
                    // ask's.
                    price: Price4((anchor + u32::from(side == Side::Sell)) * TICK),
                    match_number: self.next_match,
                }));
            }
            Kind::Position => {
                let sym = &self.syms[s];
                let (locate, stock) = (sym.locate, sym.stock);
                let mpid = [b"GSCO", b"MSCO", b"NITE", b"UBSS"][self.rng.below(4) as usize];
                self.push(Message::MarketParticipantPosition(
                    MarketParticipantPositionRepr {
                        stock_locate: locate,
                        tracking_number: 0,
                        timestamp: ts(t),
                        mpid: *mpid,
                        stock,
                        primary_market_maker: b'N',
                        market_maker_mode: b'N',
                        market_participant_state: b'A',
                    },
                ));
            }
            Kind::Broken => {
                let locate = self.syms[s].locate;
                let back = self.rng.below(self.next_match.max(1));
                self.push(Message::BrokenTrade(BrokenTradeRepr {
                    stock_locate: locate,
                    tracking_number: 0,
                    timestamp: ts(t),
                    match_number: self.next_match - back.min(self.next_match),
                }));
            }
        }
    }

    /// A new order's price on `side` of symbol `s`, in ticks: at or behind the touch.
    fn price(&mut self, s: usize, side: Side) -> u32 {
        let a = self.syms[s].anchor;
        let k = self.rng.geometric(1.5) as u32;
        match side {
            Side::Buy => a.saturating_sub(k).max(1),
            Side::Sell => a + 1 + k,
        }
    }

    fn shares(&mut self) -> u32 {
        if self.rng.chance(0.9) {
            100 * (1 + self.rng.geometric(1.0) as u32)
        } else {
            1 + self.rng.below(99) as u32
        }
    }

    fn add(&mut self, t: u64, s: usize, mpid: bool) {
        let side = if self.rng.chance(0.5) {
            Side::Buy
        } else {
            Side::Sell
        };
        let price = self.price(s, side);
        let shares = self.shares();
        self.next_ref += 1;
        let order_ref = self.next_ref;
        let sym = &mut self.syms[s];
        sym.live.push(Live {
            order_ref,
            price,
            shares,
            side,
            born_ns: t,
            born_msg: self.sent,
        });
        let (locate, stock) = (sym.locate, sym.stock);
        let common = (
            locate,
            ts(t),
            order_ref,
            side,
            shares,
            stock,
            Price4(price * TICK),
        );
        let (stock_locate, timestamp, order_ref, side, shares, stock, price) = common;
        self.push(if mpid {
            Message::AddOrderMpid(AddOrderMpidRepr {
                stock_locate,
                tracking_number: 0,
                timestamp,
                order_ref,
                side,
                shares,
                stock,
                price,
                attribution: *b"NITE",
            })
        } else {
            Message::AddOrder(AddOrderRepr {
                stock_locate,
                tracking_number: 0,
                timestamp,
                order_ref,
                side,
                shares,
                stock,
                price,
            })
        });
    }

    /// An execution of the best order on a side (price, then time priority); when it empties
    /// the level next to the touch, the touch moves toward it.
    fn execute(&mut self, t: u64, s: usize) {
        let side = if self.rng.chance(0.5) {
            Side::Buy
        } else {
            Side::Sell
        };
        let live = &self.syms[s].live;
        // The first (oldest) order at the best price of the side, or of the other side if this
        // one is empty.
        let best = |side: Side| {
            let mut best: Option<usize> = None;
            for (i, o) in live.iter().enumerate() {
                if o.side != side {
                    continue;
                }
                let better = match best {
                    None => true,
                    Some(b) => match side {
                        Side::Buy => o.price > live[b].price,
                        Side::Sell => o.price < live[b].price,
                    },
                };
                if better {
                    best = Some(i);
                }
            }
            best
        };
        let Some(i) = best(side).or_else(|| best(side.opposite())) else {
            return self.add(t, s, false);
        };
        let o = live[i];
        self.age(t, &o);
        let full = o.shares <= 1 || self.rng.chance(0.7);
        let executed = if full {
            o.shares
        } else {
            1 + self.rng.below(u64::from(o.shares - 1)) as u32
        };
        let sym = &mut self.syms[s];
        if full {
            sym.live.remove(i);
        } else {
            sym.live[i].shares -= executed;
        }
        let locate = sym.locate;
        // The touch moves when the level beside it is gone.
        let a = sym.anchor;
        match o.side {
            Side::Sell
                if !sym
                    .live
                    .iter()
                    .any(|l| l.side == Side::Sell && l.price == a + 1) =>
            {
                sym.anchor = a + 1;
            }
            Side::Buy if a > 1 && !sym.live.iter().any(|l| l.side == Side::Buy && l.price == a) => {
                sym.anchor = a - 1;
            }
            _ => {}
        }
        self.next_match += 1;
        if self.rng.chance(WITH_PRICE) {
            let printable = !self.rng.chance(NON_PRINTABLE);
            self.push(Message::OrderExecutedWithPrice(
                OrderExecutedWithPriceRepr {
                    stock_locate: locate,
                    tracking_number: 0,
                    timestamp: ts(t),
                    order_ref: o.order_ref,
                    executed_shares: executed,
                    match_number: self.next_match,
                    printable,
                    price: Price4(o.price * TICK),
                },
            ));
        } else {
            self.push(Message::OrderExecuted(OrderExecutedRepr {
                stock_locate: locate,
                tracking_number: 0,
                timestamp: ts(t),
                order_ref: o.order_ref,
                executed_shares: executed,
                match_number: self.next_match,
            }));
        }
    }

    fn noii(&mut self, t: u64, s: usize) {
        let sym = &self.syms[s];
        let (locate, stock, anchor) = (sym.locate, sym.stock, sym.anchor);
        let paired = 100 * self.rng.geometric(50.0);
        let imbalance = 100 * self.rng.geometric(10.0);
        let direction = [b'B', b'S', b'N'][self.rng.below(3) as usize];
        let cross = if t / profile::NS < profile::OPEN_S {
            b'O'
        } else {
            b'C'
        };
        let p = Price4(anchor * TICK);
        self.push(Message::Noii(NoiiRepr {
            stock_locate: locate,
            tracking_number: 0,
            timestamp: ts(t),
            paired_shares: paired,
            imbalance_shares: imbalance,
            imbalance_direction: direction,
            stock,
            far_price: p,
            near_price: p,
            current_reference_price: p,
            cross_type: cross,
            price_variation_indicator: b' ',
        }));
    }
}

impl Iterator for Generator {
    type Item = Message;

    fn next(&mut self) -> Option<Message> {
        loop {
            if let Some(m) = self.pending.pop_front() {
                return Some(m);
            }
            if !self.step() {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests;
