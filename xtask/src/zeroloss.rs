//! `cargo xtask zero-loss`: RFC 2544-style throughput per path (the highest offered tick rate
//! with no loss over a fixed count, by bisection), then latency at 10 %, 50 % and 90 % of it.
use anyhow::bail;
use paths::{ExchangeIo, Rate, TraderPath};
use report::zeroloss::{self, Search, Trial};

use crate::lab::{Ends, session::Session};

/// The loads, as shares of the zero-loss rate, at which latency is measured.
const LOADS: [f64; 3] = [0.1, 0.5, 0.9];

/// Options.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// Paths (comma-separated): each with a trader (on the trigger path, the decision in the
    /// driver).
    // `--paths`, the old spelling, still parses (a hidden alias), for one release.
    #[arg(long = "path", alias = "paths", value_delimiter = ',', default_value = "xdp,udp", value_parser = crate::lab::trader_paths())]
    pub(crate) paths: Vec<TraderPath>,
    /// Messages per trial, at least (a trial also lasts --seconds at its rate).
    #[arg(long, default_value_t = 100_000)]
    pub(crate) count: u64,
    /// Seconds per trial, at least: long enough to fill every queue between the sender and the
    /// trader (socket buffers, rings, the veth's) many times over, so a rate that passes is one
    /// the trader sustains, not one the buffers absorbed. A trial whose latency grows over its
    /// length fails as saturated even with nothing lost.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) seconds: f64,
    /// The feed: `gbm` (the ticker: one trade a message) or a full-depth day,
    /// `market[:SEED][:KEY=VALUE]` (its BARS are sized to each trial: every trial sends a
    /// whole day of at least --count messages). Give the trader its symbols with
    /// `--trader-arg=--symbols=SYNTH`.
    #[arg(long, default_value = "gbm", value_parser = zero_loss_source)]
    pub(crate) source: paths::Source,
    /// Extra trader flags, e.g. `--trader-arg=--symbols=SYNTH`.
    #[arg(long = "trader-arg", allow_hyphen_values = true)]
    pub(crate) trader_args: Vec<String>,
    /// ITCH messages per MoldUDP64 packet (the sender's own per-packet cost caps the rate).
    #[arg(long, default_value_t = 1)]
    pub(crate) batch: u16,
    /// Lowest offered rate tried, messages/s: the search starts there.
    // `--min-rate`, the old spelling, still parses (a hidden alias), for one release: the
    // trader's `--max-rate` is its feed gate's.
    #[arg(long, alias = "min-rate", default_value_t = 10_000.0)]
    pub(crate) lowest_rate: f64,
    /// Highest offered rate to try, messages/s: the search stops there if nothing failed.
    // `--max-rate`, the old spelling, still parses (a hidden alias), for one release.
    #[arg(long, alias = "max-rate", default_value_t = 4_000_000.0)]
    pub(crate) highest_rate: f64,
    /// Stop bisecting when the bounds are within this ratio.
    #[arg(long, default_value_t = 1.05)]
    pub(crate) resolution: f64,
    /// Trials that must pass again at the rate found before it is reported: a shared machine
    /// passes a rate once and fails it the next time. A confirmation that fails makes that
    /// rate the new failure and the search goes on below it (at most four rounds). 0: report
    /// the bisection's rate as it ends.
    #[arg(long, default_value_t = 1)]
    pub(crate) confirm: u32,
    /// Exchange-side I/O; with xdp (the bypass harness) the AF_XDP sender's per-packet cost is
    /// lower, so the trader rather than the sender is the limit.
    #[arg(long, value_enum, default_value_t = ExchangeIo::Udp)]
    pub(crate) exchange_io: ExchangeIo,
    /// Lab name.
    #[arg(long, default_value = netns::PREFIX)]
    pub(crate) lab: String,
    /// Results folder (default target/zero-loss/<time>).
    #[arg(long)]
    pub(crate) out: Option<std::path::PathBuf>,
    /// Don't install missing dependencies first.
    #[arg(long)]
    pub(crate) no_setup: bool,
    #[command(flatten)]
    pub(crate) cpus: crate::lab::Cpus,
}

pub(crate) fn run(o: Options) -> anyhow::Result<()> {
    if !(o.lowest_rate > 0.0 && o.highest_rate > o.lowest_rate && o.resolution > 1.0) {
        bail!("need 0 < --lowest-rate < --highest-rate and --resolution > 1");
    }
    if !(o.seconds > 0.0 && o.seconds <= 600.0) {
        bail!(
            "--seconds {}: a trial must last more than 0 and at most 600 seconds",
            o.seconds
        );
    }
    let Some(&first) = o.paths.first() else {
        bail!("no path to run");
    };
    crate::lab::check_cpus(o.cpus.trader, o.cpus.replay)?;
    let base = crate::lab::Options {
        batch: o.batch,
        trader_args: o.trader_args.clone(),
        trader_cpu: o.cpus.trader,
        replay_cpu: o.cpus.replay,
        ..crate::lab::Options::trial(o.count, &o.lab, o.out.clone(), o.no_setup)
    };
    let session = Session::start(
        &base,
        "zero-loss",
        Ends {
            trader: first,
            exchange: o.exchange_io,
            wait: None,
            orders: paths::Orders::Udp,
        },
    )?;
    let mut searcher = Searcher {
        o: &o,
        session: &session,
        base,
        trials: 0,
    };
    let mut report = Vec::new();
    for &path in &o.paths {
        if session.stopped() {
            break;
        }
        eprintln!("zero-loss search on {path}");
        report.push(searcher.search(path)?);
    }
    let out = session.out.clone();
    session.finish();

    let conditions = zeroloss::Conditions {
        source: match &o.source {
            // Its bars are each trial's: the spec without them.
            paths::Source::Market(m) => {
                let full = m.to_string();
                let keys = full.splitn(4, ':').nth(3).unwrap_or_default();
                let sep = if keys.is_empty() { "" } else { ":" };
                format!("market:{}{sep}{keys} (a day sized to each trial)", m.seed)
            }
            _ => "gbm (the ticker)".into(),
        },
        trader_args: o.trader_args.clone(),
        count: o.count,
        seconds: o.seconds,
        batch: o.batch,
        trader_cpu: o.cpus.trader,
        replay_cpu: o.cpus.replay,
        exchange_io: o.exchange_io,
        confirm: o.confirm,
    };
    let s = zeroloss::markdown(&conditions, &report);
    print!("{s}");
    std::fs::write(out.join("zero-loss.md"), &s)?;
    std::fs::write(
        out.join("zero-loss.json"),
        serde_json::to_string_pretty(&zeroloss::json(&report))?,
    )?;
    eprintln!("results in {}", out.display());
    Ok(())
}

/// Runs the trials of a session, numbering them for their file names.
struct Searcher<'a> {
    o: &'a Options,
    session: &'a Session,
    base: crate::lab::Options,
    trials: usize,
}

impl Searcher<'_> {
    /// Grows the rate from the bottom until a trial fails, bisects between the last pass and
    /// it, then measures latency at [`LOADS`] of the rate found.
    fn search(&mut self, path: TraderPath) -> anyhow::Result<Search> {
        let (o, session) = (self.o, self.session);
        let mut s = Search {
            path,
            lo: None,
            hi: None,
            trials: Vec::new(),
            curve: Vec::new(),
        };
        let params = SearchParams {
            min_rate: o.lowest_rate,
            max_rate: o.highest_rate,
            resolution: o.resolution,
            confirm: o.confirm,
        };
        find_rate(&params, &mut s, |rate| {
            if session.stopped() {
                return Ok(None);
            }
            self.trial(path, rate).map(Some)
        })?;
        if let Some(l) = s.lo {
            for frac in LOADS {
                if session.stopped() {
                    break;
                }
                s.curve.push((frac, self.trial(path, l * frac)?));
            }
        }
        Ok(s)
    }

    /// One trial at `rate` (rounded to whole messages/s for the replay), of --count messages
    /// or --seconds at that rate, whichever is more.
    fn trial(&mut self, path: TraderPath, rate: f64) -> anyhow::Result<Trial> {
        self.trials += 1;
        self.base.rate = Rate::PerSec(rate.round_ties_even());
        let count = trial_count(self.o.count, self.o.seconds, rate);
        (self.base.source, self.base.count) = trial_source(&self.o.source, count);
        let tag = format!("{path}-{:03}-{rate:.0}", self.trials);
        let ends = Ends {
            trader: path,
            exchange: self.o.exchange_io,
            wait: None,
            orders: paths::Orders::Udp,
        };
        let run = self.session.run(&self.base, ends, &tag)?;
        let (replay, trader) = (run.replay()?, run.trader()?);
        let trial = Trial::of(rate, count, &replay, &trader);
        eprintln!(
            "  {path} @ {rate:.0} msg/s, {count} messages: {}",
            trial.verdict
        );
        Ok(trial)
    }
}

/// What [`find_rate`] searches with.
struct SearchParams {
    min_rate: f64,
    max_rate: f64,
    resolution: f64,
    confirm: u32,
}

/// Rounds of confirmation at most: each failed one lowers the failure bound.
const CONFIRM_ROUNDS: usize = 4;

/// The search for the zero-loss rate, its trials from `trial` (`None`: stopped): grows the
/// rate from the bottom by doubling until a trial fails, bisects between the last pass and
/// it, then tries the rate found `confirm` times more; a failed confirmation makes that rate
/// the failure bound, the highest rate that passed below it the pass bound, and the bisection
/// goes on. Fills `s.lo`, `s.hi` and `s.trials`.
fn find_rate(
    p: &SearchParams,
    s: &mut Search,
    mut trial: impl FnMut(f64) -> anyhow::Result<Option<Trial>>,
) -> anyhow::Result<()> {
    let mut rate = p.min_rate;
    while s.hi.is_none() && rate <= p.max_rate {
        let Some(t) = trial(rate)? else {
            return Ok(());
        };
        if t.verdict.ok() {
            s.lo = Some(rate);
            rate *= 2.0;
        } else {
            s.hi = Some(rate);
        }
        s.trials.push(t);
    }
    for _ in 0..CONFIRM_ROUNDS {
        while let (Some(l), Some(h)) = (s.lo, s.hi) {
            if h / l <= p.resolution {
                break;
            }
            let mid = (l * h).sqrt();
            let Some(t) = trial(mid)? else {
                return Ok(());
            };
            if t.verdict.ok() {
                s.lo = Some(mid);
            } else {
                s.hi = Some(mid);
            }
            s.trials.push(t);
        }
        let Some(found) = s.lo else {
            return Ok(());
        };
        let mut confirmed = true;
        for _ in 0..p.confirm {
            let Some(t) = trial(found)? else {
                return Ok(());
            };
            let ok = t.verdict.ok();
            s.trials.push(t);
            if !ok {
                confirmed = false;
                break;
            }
        }
        if confirmed {
            return Ok(());
        }
        // Failed again where it passed: that rate is the failure now, and the pass bound the
        // highest rate below it that passed (none: nothing passed for sure).
        s.hi = Some(found);
        s.lo = s
            .trials
            .iter()
            .filter(|t| t.rate < found && t.verdict.ok())
            .map(|t| t.rate)
            .reduce(f64::max);
    }
    Ok(())
}

/// Messages in a trial: `count`, or `seconds` at `rate`, whichever is more.
fn trial_count(count: u64, seconds: f64, rate: f64) -> u64 {
    count.max((seconds * rate).ceil() as u64)
}

/// The feed of a trial of at least `count` messages, and the replay's `--count`: the ticker of
/// `count` ticks; or a market day (whose `--count` would be its bars) of enough bars for
/// `count` messages, sent whole.
fn trial_source(source: &paths::Source, count: u64) -> (paths::Source, Option<u64>) {
    match source {
        paths::Source::Market(m) => {
            // A bar brings per_print + 2 messages on average (SYNTH's two with the others'):
            // a tenth more bars than that needs, so a day never falls short of `count`.
            let per_bar = f64::from(m.per_print.unwrap_or(market::Config::PER_PRINT) + 2);
            let bars = (count as f64 / per_bar * 1.1).ceil() as usize;
            let spec = paths::MarketSpec {
                bars: bars.max(1),
                ..*m
            };
            (paths::Source::Market(spec), None)
        }
        _ => (crate::lab::gbm_for(count), Some(count)),
    }
}

/// `--source`: the ticker or a market day (a file's or a capture's rate is its own).
fn zero_loss_source(s: &str) -> Result<paths::Source, String> {
    match s.parse::<paths::Source>()? {
        src @ (paths::Source::Market(_) | paths::Source::Gbm { .. }) => Ok(src),
        other => Err(format!(
            "{other}: a zero-loss search sends a feed sized to each trial, gbm or market:..., \
             not a fixed file"
        )),
    }
}

#[cfg(test)]
mod tests {
    use report::zeroloss::TrialVerdict;

    use super::*;

    /// A market trial's day is big enough for its messages and sent whole (its `--count` would
    /// be bars); the ticker's is `count` ticks; a fixed file is refused with why.
    #[test]
    fn a_trial_is_fed_a_day_sized_to_it() {
        let m = zero_loss_source("market:7:per-print=100:symbols=2000").unwrap();
        let (day, count) = trial_source(&m, 1_000_000);
        let paths::Source::Market(spec) = day else {
            panic!("{day}")
        };
        assert_eq!(count, None);
        assert_eq!(
            (spec.seed, spec.per_print, spec.symbols),
            (7, Some(100), Some(2000))
        );
        // 1 M messages at 102 a bar, and a tenth more.
        assert_eq!(spec.bars, 10_785);
        let (ticker, count) = trial_source(&zero_loss_source("gbm").unwrap(), 300_000);
        assert_eq!(
            (ticker, count),
            (crate::lab::gbm_for(300_000), Some(300_000))
        );
        let e = zero_loss_source("itch:day.itch").unwrap_err();
        assert!(e.contains("sized to each trial"), "{e}");
    }

    /// One spelling across the lab: `--path` as the bench's, and the search's bounds not named
    /// like the trader's `--max-rate` (its feed gate's); the old spellings still parse alike.
    #[test]
    fn the_old_spellings_still_parse_to_the_same_options() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: Options,
        }
        let parse = |args: &[&str]| {
            let o = <Cli as clap::Parser>::try_parse_from(
                std::iter::once("x").chain(args.iter().copied()),
            )
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .o;
            (o.paths, o.lowest_rate, o.highest_rate)
        };
        let new = parse(&[
            "--path",
            "trigger",
            "--lowest-rate",
            "5000",
            "--highest-rate",
            "9e5",
        ]);
        let old = parse(&[
            "--paths",
            "trigger",
            "--min-rate",
            "5000",
            "--max-rate",
            "9e5",
        ]);
        assert_eq!(new, old);
        assert_eq!(new, (vec![TraderPath::Trigger], 5000.0, 9e5));
    }

    /// `--path`'s help lists the paths with a trader from the path table, nothing by hand.
    #[test]
    fn the_help_lists_every_path_with_a_trader() {
        use clap::CommandFactory as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: Options,
        }
        let help = Cli::command().render_long_help().to_string();
        let paths = help
            .split("--path ")
            .nth(1)
            .and_then(|h| h.split("--count").next())
            .unwrap_or_else(|| panic!("no --path in\n{help}"));
        for p in TraderPath::all() {
            let listed = paths.contains(&format!("- {p}:"));
            assert_eq!(listed, p.spec().io.trades(), "{p} in\n{help}");
        }
    }

    use report::fixtures::trial;

    /// A trial at `rate` that passed or lost a tick.
    fn fake_trial(rate: f64, ok: bool) -> Trial {
        let verdict = if ok {
            TrialVerdict::NoLoss
        } else {
            TrialVerdict::TicksLost(1)
        };
        trial(rate, verdict)
    }

    /// The tests' search: 10k to 4M msg/s to 5 %, nothing tried yet.
    fn fresh_search(confirm: u32) -> (SearchParams, Search) {
        let p = SearchParams {
            min_rate: 10_000.0,
            max_rate: 4e6,
            resolution: 1.05,
            confirm,
        };
        let s = Search {
            path: TraderPath::Xdp,
            lo: None,
            hi: None,
            trials: Vec::new(),
            curve: Vec::new(),
        };
        (p, s)
    }

    fn search_with(confirm: u32, mut passes: impl FnMut(f64) -> bool) -> Search {
        let (p, mut s) = fresh_search(confirm);
        find_rate(&p, &mut s, |rate| Ok(Some(fake_trial(rate, passes(rate))))).unwrap();
        s
    }

    /// On a steady machine the search brackets the limit within the resolution, and the rate
    /// it reports passed again (`confirm`); without confirmation it passed once.
    #[test]
    fn the_rate_found_is_bracketed_and_confirmed() {
        let s = search_with(1, |r| r <= 1_000_000.0);
        let (lo, hi) = (s.lo.unwrap(), s.hi.unwrap());
        assert!(
            lo <= 1_000_000.0 && hi > 1_000_000.0 && hi / lo <= 1.05,
            "{lo} {hi}"
        );
        let at_lo = s.trials.iter().filter(|t| t.rate == lo).count();
        assert_eq!(at_lo, 2, "the bisection's pass and one confirmation");
        let s = search_with(0, |r| r <= 1_000_000.0);
        assert_eq!(
            s.trials.iter().filter(|t| t.rate == s.lo.unwrap()).count(),
            1
        );
    }

    /// A rate that passed once and fails when tried again is not reported: the search goes on
    /// below it, and the rate it ends with passed its confirmation.
    #[test]
    fn a_rate_that_fails_its_confirmation_is_not_the_answer() {
        // The machine's limit drops from 1.2 M to 0.9 M after the first trial that passes
        // above 0.9 M: later ones at that rate fail.
        let mut limit = 1_200_000.0;
        let s = search_with(1, |r| {
            let ok = r <= limit;
            if r > 900_000.0 && ok {
                limit = 900_000.0;
            }
            ok
        });
        let lo = s.lo.unwrap();
        assert!(lo <= 900_000.0, "{lo}");
        let last_at_lo = s.trials.iter().rev().find(|t| t.rate == lo).unwrap();
        assert!(last_at_lo.verdict.ok());
        assert!(
            s.trials.iter().filter(|t| t.rate == lo).count() >= 2,
            "confirmed"
        );
        assert!(
            s.trials
                .iter()
                .any(|t| t.rate > 900_000.0 && t.verdict.ok()),
            "the first pass above the new limit happened, and was overruled"
        );
    }

    /// Stopped (Ctrl-C) mid-search: what was found so far stands, nothing more is tried.
    #[test]
    fn a_stopped_search_keeps_what_it_had() {
        let (p, mut s) = fresh_search(1);
        let mut n = 0;
        find_rate(&p, &mut s, |rate| {
            n += 1;
            Ok((n <= 3).then(|| fake_trial(rate, true)))
        })
        .unwrap();
        assert_eq!(s.trials.len(), 3);
        assert_eq!(s.lo, Some(40_000.0));
        assert_eq!(s.hi, None);
    }

    #[test]
    fn a_trial_lasts_its_count_or_its_seconds_whichever_is_more() {
        assert_eq!(trial_count(100_000, 2.0, 1_800_000.0), 3_600_000);
        assert_eq!(trial_count(100_000, 2.0, 10_000.0), 100_000);
    }
}
