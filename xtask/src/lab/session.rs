//! What every lab benchmark (`bench`, `matrix`, `zero-loss`) shares: a session (root, the
//! binaries, a results folder, the lab, a stop flag) and one run in it (a trader and a replay
//! against it, each writing its report).
use std::{
    io::{BufRead as _, BufReader},
    net::SocketAddrV4,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use anyhow::{Context as _, bail};
use clap::Parser as _;
use inject::LieKind;
use netns::{ChildGuard, Found, Lab, LabConfig, lab};
use paths::{ExchangeIo, Source};
use results::{ReplayReport, TraderReport};

use super::{Ends, LieStream, Options};
use crate::util::{cargo, exec, exec_until, require_root, shown, target_dir, workspace_root};

/// How long the trader may take to attach XDP and bind its socket before it says `ready`.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the trader may take to write its report after the end-of-session packet.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a trader that is told to stop (SIGTERM) may take before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(3);
/// The trader's `--idle-exit`, seconds: a trader whose replay died doesn't spin forever.
const TRADER_IDLE_EXIT_S: u64 = 60;

/// What every lab benchmark needs: root, dependencies, a stop flag, the binaries, a results
/// folder and the lab.
#[derive(Debug)]
pub(crate) struct Session {
    /// Set on SIGINT/SIGTERM.
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) bins: Binaries,
    /// The results folder.
    pub(crate) out: PathBuf,
    pub(crate) lab: LabHold,
}

/// The lab of a session: kept (it was up before, or --keep-lab) from the start, so no error
/// path can remove a lab the user brought up; or owned, removed when the session drops.
#[derive(Debug)]
pub(crate) enum LabHold {
    Kept(LabConfig),
    Owned(Lab),
}

impl LabHold {
    pub(crate) fn config(&self) -> &LabConfig {
        match self {
            LabHold::Kept(c) => c,
            LabHold::Owned(l) => l.config(),
        }
    }
}

impl Session {
    /// Checks `o` with the binaries themselves (as a run on `first` would use them), then
    /// brings up the lab and a results folder under `target/<kind>/` (or `o.out`).
    pub(crate) fn start(o: &Options, kind: &str, first: Ends) -> anyhow::Result<Session> {
        require_root("the benchmark (network namespaces, XDP, AF_XDP)")?;
        if !o.no_setup {
            crate::setup::ensure()?;
        }
        // A run killed while it had a CPU isolated left the machine changed: put it back.
        if let Some(note) = tuning::isolate::restore_leftover(&tuning::isolate::Paths::live())? {
            eprintln!("{note}");
        }
        if let Some(note) = tuning::idle::restore_leftover(&tuning::idle::Paths::live())? {
            eprintln!("{note}");
        }
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(&stop))
                .context("installing the Ctrl-C handler")?;
        }
        let bins = build_binaries()?;
        let config = LabConfig::new(&o.lab)?;
        preflight(o, &bins, &config, first)?;
        let out = match &o.out {
            Some(out) => {
                std::fs::create_dir_all(out)
                    .with_context(|| format!("creating {}", out.display()))?;
                out.clone()
            }
            None => new_results_dir(&workspace_root().join("target").join(kind))?,
        };
        let lab = Lab::up(config).context("failed to bring the lab up")?;
        // A benchmark killed with SIGKILL leaves its trader running, attached to XDP.
        let stale = netns::stop_lab_processes(lab.config(), TERM_GRACE);
        if stale > 0 {
            eprintln!("stopped {stale} process(es) a previous run left in the lab");
        }
        let lab = if o.keep_lab || lab.found() == Found::Intact {
            LabHold::Kept(lab.persist())
        } else {
            LabHold::Owned(lab)
        };
        Ok(Session {
            stop,
            bins,
            out,
            lab,
        })
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Ends the session: an owned lab is removed, a kept one stays.
    pub(crate) fn finish(self) {}

    /// Runs the trader on `ends.trader` and the replay against it once; the result files are
    /// named by `tag` in the results folder.
    pub(crate) fn run(&self, o: &Options, ends: Ends, tag: &str) -> anyhow::Result<Run> {
        let lab = self.lab.config();
        let run = Run::named(&self.out, tag);
        let trader = trader_command(in_ns(&lab.trader_ns(), &self.bins.trader), o, lab, ends);
        // Stopped (SIGTERM, then SIGKILL) when dropped, so no error path leaves a trader
        // attached to XDP.
        let mut trader = start_trader(trader, &run)?;
        // Stopped when dropped, after the replay (and on any error).
        let _stream = if o.malformed_stream {
            Some(self.malformed_stream(o, tag)?)
        } else {
            None
        };
        let _lies = match o.lie_stream {
            Some(who) => Some(self.lie_stream(o, who, tag)?),
            None => None,
        };
        let mut replay = replay_command(in_ns(&lab.exchange_ns(), &self.bins.replay), o, lab, ends);
        replay.args(["--label", tag]);
        run.replay_outputs(&mut replay);
        let status = exec_until(&mut replay, &self.stop)?;
        if self.stopped() {
            // The replay stops on the same Ctrl-C and writes what it measured: keep that.
            if run.replay_json.exists() {
                return Ok(run);
            }
            bail!("interrupted");
        }
        if !status.success() {
            bail!("the replay failed: {status}");
        }
        // It exits by itself on the end-of-session packet, after writing its report.
        trader.wait_timeout(EXIT_TIMEOUT)?;
        Ok(run)
    }
}

/// The frames of the matrix's malformed-stream runs: four kinds the XDP program counts as
/// malformed, one round of them every [`MALFORMED_ROUND_US`] (1,000 frames a second).
const MALFORMED_KINDS: [&str; 4] = [
    "truncated_ethernet",
    "truncated_ipv4",
    "truncated_udp",
    "ihl_below_5",
];
const MALFORMED_ROUND_US: u64 = 4_000;

/// The classes of lie each [`LieStream`] tells.
const STRANGER_KINDS: [LieKind; 6] = [
    LieKind::Ahead,
    LieKind::EndAhead,
    LieKind::AtNext,
    LieKind::JustPast,
    LieKind::EmptyBlock,
    LieKind::HeartbeatAhead,
];
const SPOOFED_KINDS: [LieKind; 3] = [LieKind::Ahead, LieKind::EmptyBlock, LieKind::HeartbeatAhead];

/// A run's length in seconds as its options give it (10 s when unpaced or unbounded).
fn run_secs(o: &Options) -> f64 {
    match (o.count, o.rate.per_sec()) {
        (Some(n), Some(r)) => n as f64 / r,
        _ => 10.0,
    }
}

impl Session {
    /// `inject frames` in the exchange namespace sending [`MALFORMED_KINDS`] at the trader for
    /// the run's length and two seconds more (bounded: it ends by itself, and is stopped with
    /// the run).
    fn malformed_stream(&self, o: &Options, tag: &str) -> anyhow::Result<ChildGuard> {
        let lab = self.lab.config();
        let secs = run_secs(o) + 2.0;
        let frames = inject::FramesOptions {
            iface: lab.exchange_if.clone(),
            dst_mac: lab.trader_mac,
            src_ip: lab.exchange_ip,
            dst_ip: lab.trader_ip,
            port: lab::MD_PORT,
            sink_port: 9,
            session: wire::moldudp64::Session::parse_arg(paths::market::SESSION)
                .map_err(anyhow::Error::msg)?,
            lie_seq: 0,
            rounds: (secs * 1e6 / MALFORMED_ROUND_US as f64).ceil() as u32,
            interval_us: MALFORMED_ROUND_US,
            kinds: MALFORMED_KINDS.map(str::to_owned).to_vec(),
            json_out: self.out.join(format!("{tag}-malformed.json")),
        };
        self.spawn_inject(inject::Cmd::Frames(frames), "the malformed stream")
    }

    /// `inject lies` in the exchange namespace, following the feed and sending
    /// [`crate::lab::LIES_PER_SECOND`] lies a second at the trader for the run's length (its JSON
    /// beside the run's reports).
    fn lie_stream(&self, o: &Options, who: LieStream, tag: &str) -> anyhow::Result<ChildGuard> {
        let lab = self.lab.config();
        let secs = run_secs(o);
        let kinds = match who {
            LieStream::Stranger => STRANGER_KINDS.to_vec(),
            LieStream::Spoofed => SPOOFED_KINDS.to_vec(),
        };
        // A round is one lie of each kind, two for a jump or an end.
        let doubles = kinds
            .iter()
            .filter(|k| matches!(k, LieKind::Ahead | LieKind::EndAhead))
            .count();
        let per_round = (kinds.len() + doubles) as f64;
        let rounds = (secs * crate::lab::LIES_PER_SECOND as f64 / per_round)
            .ceil()
            .max(1.0) as u32;
        let feed = feed_source(lab);
        let mut lies =
            inject::Options::try_parse_from(["inject", "lies", "--via", "udp", "--json-out", "-"])
                .map(|o| match o.command {
                    inject::Cmd::Lies(l) => l,
                    _ => unreachable!("parsed as lies"),
                })
                .context("inject's lies defaults")?;
        lies.iface = lab.exchange_if.clone();
        lies.kinds = kinds;
        lies.target = SocketAddrV4::new(lab.trader_ip, lab::MD_PORT);
        lies.feed_source = inject::FeedSource::exactly(feed);
        lies.rate = Some(crate::lab::LIES_PER_SECOND);
        lies.rounds = rounds;
        lies.max_seconds = secs.ceil() as u64 + 30;
        match who {
            LieStream::Stranger => lies.bind = Some(SocketAddrV4::new(lab.exchange_ip, 0)),
            LieStream::Spoofed => {
                lies.via = inject::Via::Raw;
                lies.spoof = Some(feed);
            }
        }
        lies.json_out = self.out.join(format!("{tag}-lies.json"));
        self.spawn_inject(inject::Cmd::Lies(lies), "the lie stream")
    }

    /// Starts `inject` in the exchange namespace with `command`.
    fn spawn_inject(&self, command: inject::Cmd, what: &str) -> anyhow::Result<ChildGuard> {
        let lab = self.lab.config();
        let mut c = in_ns(&lab.exchange_ns(), &self.bins.inject);
        c.args(inject::Options { command }.to_args());
        eprintln!("+ {}", shown(&c));
        let child = c
            .spawn()
            .with_context(|| format!("starting {what} (inject)"))?;
        Ok(ChildGuard::new(child).with_grace(TERM_GRACE))
    }
}

/// Paths of the release binaries.
#[derive(Debug)]
pub(crate) struct Binaries {
    pub(crate) trader: PathBuf,
    pub(crate) replay: PathBuf,
    pub(crate) floor: PathBuf,
    pub(crate) inject: PathBuf,
}

fn build_binaries() -> anyhow::Result<Binaries> {
    exec(
        cargo()
            .current_dir(workspace_root())
            .env("XDP_EBPF_REQUIRED", "1")
            .args(["build", "--release", "--quiet", "--bins"])
            .args([
                "-p", "trader", "-p", "exchange", "-p", "inject", "-p", "floor",
            ]),
    )
    .context("building the trader and the replay tool")?;
    let dir = target_dir().join("release");
    Ok(Binaries {
        trader: dir.join("trader"),
        replay: dir.join("replay"),
        floor: dir.join("floor"),
        inject: dir.join("inject"),
    })
}

/// One run's result files.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// The replay's report ([`ReplayReport`]).
    pub(crate) replay_json: PathBuf,
    /// The trader's report ([`TraderReport`]).
    pub(crate) trader_json: PathBuf,
    /// Tick-to-trade, as the replay measured it.
    pub(crate) hgrm: PathBuf,
    /// The trader's own RX→TX.
    pub(crate) trader_hgrm: PathBuf,
}

impl Run {
    fn named(out: &Path, tag: &str) -> Run {
        Run {
            replay_json: out.join(format!("{tag}.json")),
            trader_json: out.join(format!("{tag}-trader.json")),
            hgrm: out.join(format!("{tag}.hgrm")),
            trader_hgrm: out.join(format!("{tag}-trader-rx-tx.hgrm")),
        }
    }

    /// The replay's report; an error names the file and what is wrong with it.
    pub(crate) fn replay(&self) -> anyhow::Result<ReplayReport> {
        Ok(results::read(&self.replay_json)?)
    }

    /// The trader's report, as [`Run::replay`].
    pub(crate) fn trader(&self) -> anyhow::Result<TraderReport> {
        Ok(results::read(&self.trader_json)?)
    }

    fn trader_outputs(&self, c: &mut Command) {
        c.arg("--json-out")
            .arg(&self.trader_json)
            .arg("--hgrm-out")
            .arg(&self.trader_hgrm);
    }

    fn replay_outputs(&self, c: &mut Command) {
        c.arg("--json-out")
            .arg(&self.replay_json)
            .arg("--hgrm-out")
            .arg(&self.hgrm);
    }
}

/// Isolates `cpu` at runtime (`--isolate`, the matrix's `isolate` knob), keeping this process
/// (whose children, started later, are the measured ones) where it is. Restores on drop.
pub(crate) fn isolate(
    cpu: usize,
    scope: tuning::isolate::Scope,
) -> anyhow::Result<tuning::isolate::Isolation> {
    use tuning::isolate::{Isolation, Paths};
    let mut iso = Isolation::apply_scope(Paths::live(), cpu, &[std::process::id() as i32], scope)
        .with_context(|| format!("isolating CPU {cpu}"))?;
    // xtask polls its children from the other CPUs; they pin themselves where they belong.
    iso.confine_caller();
    eprintln!("{}", iso.applied.summary(cpu));
    for n in &iso.applied.notes {
        eprintln!("note: {n}");
    }
    Ok(iso)
}

/// A new folder under `parent` named by the UTC time; a second run within the same second
/// gets `-2`, `-3`, ... rather than writing into the first one's.
pub(crate) fn new_results_dir(parent: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let stamp = results::utc::now_for_file_names();
    for i in 1..1000 {
        let dir = if i == 1 {
            parent.join(&stamp)
        } else {
            parent.join(format!("{stamp}-{i}"))
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", dir.display())),
        }
    }
    bail!("no free results folder name under {}", parent.display())
}

/// Starts the trader with `run`'s result files and waits for its `ready` line (the XDP
/// program is attached and the socket is in the map).
fn start_trader(mut trader: Command, run: &Run) -> anyhow::Result<ChildGuard> {
    run.trader_outputs(&mut trader);
    trader.stdout(Stdio::piped());
    eprintln!("+ {}", shown(&trader));
    let mut child = trader.spawn().context("starting the trader")?;
    let stdout = child.stdout.take().context("the trader's stdout")?;
    let mut guard = ChildGuard::new(child).with_grace(TERM_GRACE);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let ready = lines
            .next()
            .and_then(Result::ok)
            .is_some_and(|l| l == "ready");
        let _ = tx.send(ready);
        for _ in lines {}
    });
    if rx.recv_timeout(READY_TIMEOUT) != Ok(true) {
        let status = guard
            .wait_timeout(Duration::ZERO)
            .ok()
            .flatten()
            .map_or_else(|| "still running".to_owned(), |s| s.to_string());
        bail!("the trader did not get ready ({status}); its error is above");
    }
    Ok(guard)
}

fn in_ns(ns: &str, bin: &Path) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(bin);
    c
}

/// The trader's command line for `ends`, on `base` (the binary, in its namespace or not),
/// without result files (a `--check` writes none).
fn trader_command(mut base: Command, o: &Options, lab: &LabConfig, ends: Ends) -> Command {
    let mut t = trader::Options::parse_from(["trader", "--path", ends.trader.as_str()]);
    t.iface = Some(lab.trader_if.clone());
    t.addr = lab.trader_ip;
    t.port = lab::MD_PORT;
    t.order_to = orders_at(lab);
    t.orders = ends.orders;
    // The feed's source named, as a trader is told it: nothing else is read.
    t.feed_source = Some(trader::FeedSource::exactly(feed_source(lab)));
    t.n = o.n;
    t.xdp_mode = o.xdp_mode;
    t.wait = ends.wait.unwrap_or(o.wait);
    t.idle_exit = TRADER_IDLE_EXIT_S;
    t.ready = true;
    let renumbered = o
        .replay_args
        .iter()
        .any(|a| a.starts_with("--session") || a.starts_with("--first-seq"));
    if !matches!(o.source, Source::Pcap(_)) && !renumbered {
        // The replay's own feed (unless --replay-arg renumbers it): the trader knows where it
        // starts, so its first packet is traded at once rather than held until the second
        // confirms it (which would put one packet interval into the first order's
        // tick-to-trade).
        t.session =
            Some(wire::moldudp64::Session::new(paths::market::SESSION).expect("the lab's session"));
        t.first_seq = Some(1);
    }
    t.xdp_stats = o.xdp_stats && ends.trader.spec().action.is_some();
    t.xdp_stages = o.xdp_stages.filter(|_| ends.trader.spec().action.is_some());
    if !o.no_pin {
        t.cpu = Some(o.trader_cpu);
    }
    for edit in &o.trader_edits {
        edit(&mut t);
    }
    // From the trader's own options type; what the user adds (--trader-arg) after it, as typed.
    base.args(t.to_args()).args(&o.trader_args);
    base
}

/// Where the exchange takes orders in `lab`: the trader's order gateway.
fn orders_at(lab: &LabConfig) -> SocketAddrV4 {
    SocketAddrV4::new(lab.exchange_ip, lab::ORDER_PORT)
}

/// Where the replay's feed leaves from in `lab`: the trader's feed source.
fn feed_source(lab: &LabConfig) -> SocketAddrV4 {
    SocketAddrV4::new(lab.exchange_ip, lab::FEED_SOURCE_PORT)
}

/// The replay's command line, as [`trader_command`]'s.
fn replay_command(mut base: Command, o: &Options, lab: &LabConfig, ends: Ends) -> Command {
    let mut r = exchange::replay::Options::parse_from(["replay"]);
    r.source = o.source.clone();
    // Always said: an itch: source is paced at its own timestamps unless a --rate is given, and
    // the bench's runs are at the bench's rate.
    r.rate = Some(o.rate);
    r.burst = o.burst;
    r.batch = o.batch;
    r.n = o.n;
    r.target = SocketAddrV4::new(lab.trader_ip, lab::MD_PORT);
    r.bind = orders_at(lab);
    r.feed_port = feed_source(lab).port();
    r.expect = ends.expect();
    r.io = ends.exchange;
    r.orders = ends.orders;
    r.progress = Some(true);
    if ends.exchange == ExchangeIo::Xdp {
        r.iface = lab.exchange_if.clone();
    }
    if ends.trader.xdp_tx() && ends.exchange == ExchangeIo::Udp {
        // XDP_TX from the trader's end (the reflector's answers, the trigger's orders) into a
        // veth needs an XDP program on this end too (the AF_XDP exchange has its own there).
        r.xdp_pass_on = Some(lab.exchange_if.clone());
    }
    r.count = o.count;
    if !o.no_pin {
        r.cpu = Some(o.replay_cpu);
    }
    // From the replay's own options type; what the user adds (--replay-arg) after it.
    base.args(r.to_args()).args(&o.replay_args);
    base
}

/// Runs the trader and the replay with `--check` before anything is built: a bad option or
/// data file is one error, before the lab, XDP or a results folder exist.
fn preflight(o: &Options, bins: &Binaries, lab: &LabConfig, ends: Ends) -> anyhow::Result<()> {
    let checks = [
        (
            "trader",
            trader_command(Command::new(&bins.trader), o, lab, ends),
        ),
        (
            "replay",
            replay_command(Command::new(&bins.replay), o, lab, ends),
        ),
    ];
    for (what, mut cmd) in checks {
        let out = cmd
            .arg("--check")
            .output()
            .with_context(|| format!("running the {what} ({})", cmd.get_program().display()))?;
        if !out.status.success() {
            // The child's own message, without clap's "try --help" (that help is the child's).
            let text = String::from_utf8_lossy(&out.stderr);
            let text: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("For more information"))
                .map(|l| {
                    l.trim_start_matches("Error: ")
                        .trim_start_matches("error: ")
                })
                .collect();
            bail!("the {what} rejects these options: {}", text.join("; "));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use paths::{TraderPath, Wait, XdpMode};

    use clap::Parser as _;

    use super::*;
    use report::fixtures;

    #[test]
    fn trader_paths_are_the_paths_with_a_trader() {
        #[derive(clap::Parser)]
        struct Cli {
            #[arg(long, value_delimiter = ',', value_parser = crate::lab::trader_paths())]
            paths: Vec<TraderPath>,
        }
        let parse = |a: &str| <Cli as clap::Parser>::try_parse_from(["x", "--paths", a]);
        assert_eq!(
            parse("udp,xdp").unwrap().paths,
            [TraderPath::Udp, TraderPath::Xdp]
        );
        assert!(parse("reflect").is_err());
        // A path added to the table (the tests' `dummy`) is one too.
        assert_eq!(parse("dummy").unwrap().paths, [TraderPath::Dummy]);
    }

    #[test]
    fn a_report_missing_a_field_or_a_file_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("xtask-session-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let run = Run::named(&dir, "xdp");
        let mut json = serde_json::to_value(fixtures::replay(10.0)).unwrap();
        json.as_object_mut().unwrap().remove("expect");
        std::fs::write(&run.replay_json, json.to_string()).unwrap();
        let msg = format!("{:#}", run.replay().unwrap_err());
        assert!(
            msg.contains(&run.replay_json.display().to_string())
                && msg.contains("ReplayReport")
                && msg.contains("missing field `expect`"),
            "{msg}"
        );
        let msg = format!("{:#}", run.trader().unwrap_err());
        assert!(
            msg.contains(&run.trader_json.display().to_string()) && msg.contains("read"),
            "{msg}"
        );
        std::fs::write(
            &run.trader_json,
            serde_json::to_string(&fixtures::trader(TraderPath::Xdp)).unwrap(),
        )
        .unwrap();
        assert_eq!(run.trader().unwrap(), fixtures::trader(TraderPath::Xdp));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn args(c: &Command) -> Vec<String> {
        c.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn value_of<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
        args.iter()
            .position(|a| a == flag)
            .map(|i| args[i + 1].as_str())
    }

    #[test]
    fn command_lines_come_from_the_lab_and_the_option_types() {
        let lab = LabConfig::default_lab();
        let o = Options::trial(1000, netns::PREFIX, None, true);
        let bypass = Ends {
            trader: TraderPath::Xdp,
            exchange: ExchangeIo::Xdp,
            wait: None,
            orders: paths::Orders::Udp,
        };
        // The trader's, read back through its own parser.
        let t = args(&trader_command(Command::new("trader"), &o, &lab, bypass));
        let t =
            trader::Options::try_parse_from(std::iter::once("trader".to_owned()).chain(t)).unwrap();
        assert_eq!(t.path, TraderPath::Xdp);
        assert_eq!(t.iface.as_deref(), Some(lab.trader_if.as_str()));
        assert_eq!((t.addr, t.port), (lab.trader_ip, 26400));
        assert_eq!(t.order_to.to_string(), "198.18.0.1:26401");
        assert_eq!(
            t.feed_source.map(|s| s.to_string()).as_deref(),
            Some("198.18.0.1:26404")
        );
        assert_eq!((t.xdp_mode, t.wait), (XdpMode::Native, Wait::Spin));
        assert_eq!((t.first_seq, t.cpu, t.ready), (Some(1), Some(1), true));
        // The replay's, read back through its own parser.
        let r = replay_of(&replay_command(Command::new("replay"), &o, &lab, bypass));
        assert_eq!(r.target.to_string(), "198.18.0.2:26400");
        assert_eq!(r.bind.to_string(), "198.18.0.1:26401");
        assert_eq!(r.feed_port, 26404);
        assert_eq!(r.source.to_string(), "gbm:42:150000");
        assert_eq!(r.rate.map(|r| r.to_string()).as_deref(), Some("20k"));
        assert_eq!((r.io, r.expect), (ExchangeIo::Xdp, paths::Expect::Signals));
        assert_eq!(r.iface, lab.exchange_if);
        assert_eq!(r.xdp_pass_on, None);
        assert_eq!(
            (r.cpu, r.progress, r.count),
            (Some(0), Some(true), Some(1000))
        );
        let reflect = Ends::kernel_exchange(TraderPath::Reflect);
        let r = replay_of(&replay_command(Command::new("replay"), &o, &lab, reflect));
        assert_eq!((r.io, r.expect), (ExchangeIo::Udp, paths::Expect::Every));
        assert_eq!(r.xdp_pass_on.as_deref(), Some(lab.exchange_if.as_str()));
        let reflect_bypass = Ends {
            trader: TraderPath::Reflect,
            exchange: ExchangeIo::Xdp,
            wait: None,
            orders: paths::Orders::Udp,
        };
        let r = replay_of(&replay_command(
            Command::new("replay"),
            &o,
            &lab,
            reflect_bypass,
        ));
        assert_eq!((r.io, r.expect), (ExchangeIo::Xdp, paths::Expect::Every));
        assert_eq!(r.iface, lab.exchange_if);
        assert_eq!(r.xdp_pass_on, None);
    }

    /// A replay command line, parsed by the replay's own options.
    fn replay_of(c: &Command) -> exchange::replay::Options {
        exchange::replay::Options::try_parse_from(
            std::iter::once("replay".to_owned()).chain(args(c)),
        )
        .unwrap()
    }

    /// The trigger's orders leave with XDP_TX like the reflector's (the exchange's end needs a
    /// program for them), and its blocking row blocks whatever the options say.
    #[test]
    fn the_trigger_rows_command_lines() {
        let lab = LabConfig::default_lab();
        let o = Options::trial(1000, netns::PREFIX, None, true);
        let block = Ends {
            wait: Some(Wait::Block),
            ..Ends::kernel_exchange(TraderPath::Trigger)
        };
        let t = args(&trader_command(Command::new("trader"), &o, &lab, block));
        assert_eq!(value_of(&t, "--path"), Some("trigger"));
        assert_eq!(value_of(&t, "--wait"), Some("block"));
        assert_eq!(value_of(&t, "--session"), Some(paths::market::SESSION));
        let r = replay_of(&replay_command(Command::new("replay"), &o, &lab, block));
        assert_eq!(r.expect, paths::Expect::Signals);
        assert_eq!(r.xdp_pass_on.as_deref(), Some(lab.exchange_if.as_str()));
    }
}
