//! `cargo xtask bench`: tick-to-trade through the lab, one path or both side by side.
use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use netns::{Found, Lab, LabConfig};

use crate::{
    report,
    util::{cargo, exec, require_root, shown, workspace_root},
};

/// The CPU floor's duration when the first run's is unknown, and the bounds on it: long enough
/// for a tail, short enough not to double a long soak's time.
const FLOOR_SECONDS_DEFAULT: f64 = 1.0;
const FLOOR_SECONDS_MIN: f64 = 0.5;
const FLOOR_SECONDS_MAX: f64 = 60.0;

/// Which I/O path(s) the trader uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PathChoice {
    /// AF_XDP (XDP redirect into a UMEM, busy-polled).
    Xdp,
    /// The kernel UDP stack.
    Udp,
    /// Both, one after the other in the same lab and run, reported side by side.
    Both,
}

/// Options of a tick-to-trade benchmark.
#[derive(Debug, Clone, clap::Args)]
pub struct Options {
    /// Trader I/O path.
    #[arg(long, value_enum, default_value_t = PathChoice::Both)]
    pub path: PathChoice,
    /// Market data: gbm[:SEED[:BARS]], closes:PATH, itch:PATH, pcap:PATH.
    #[arg(long, default_value = "gbm:42:150000")]
    pub source: String,
    /// Messages to send (default: the whole source).
    #[arg(long)]
    pub count: Option<u64>,
    /// Send rate in messages/s (50k, 1M, ...) or `max`.
    #[arg(long, default_value = "20k")]
    pub rate: String,
    /// ITCH messages per MoldUDP64 packet.
    #[arg(long, default_value_t = 1)]
    pub batch: u16,
    /// Strategy length n.
    #[arg(long, default_value_t = 6)]
    pub n: i64,
    /// XDP attach mode for the AF_XDP path.
    #[arg(long, default_value = "native", value_parser = ["native", "skb"])]
    pub xdp_mode: String,
    /// How the trader waits for data: `spin` (busy-poll a core) or `block` (poll()/recv()).
    #[arg(long, default_value = "spin", value_parser = ["spin", "block"])]
    pub wait: String,
    /// CPU for the trader.
    #[arg(long, default_value_t = 1)]
    pub trader_cpu: usize,
    /// Don't pin the trader and the replay to CPUs (let the scheduler place them).
    #[arg(long)]
    pub no_pin: bool,
    /// CPU for the replay (exchange side).
    #[arg(long, default_value_t = 0)]
    pub replay_cpu: usize,
    /// Results folder (default: target/bench/<UTC time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Lab name.
    #[arg(long, default_value = netns::PREFIX)]
    pub lab: String,
    /// Leave the lab up afterwards (a lab that was already up is always left up).
    #[arg(long)]
    pub keep_lab: bool,
    /// Extra trader flags, e.g. `--trader-arg=--mlock`.
    #[arg(long = "trader-arg", allow_hyphen_values = true)]
    pub trader_args: Vec<String>,
    /// Extra replay flags.
    #[arg(long = "replay-arg", allow_hyphen_values = true)]
    pub replay_args: Vec<String>,
    /// Also measure the floors in the same run: the XDP_TX reflector (the lab and harness
    /// without any userspace trader) and the CPU floor (two pinned threads ping-ponging a
    /// cache line).
    #[arg(long)]
    pub floors: bool,
    /// Seconds of sockperf ping-pong between the same namespaces, as the outside reference
    /// for the kernel-UDP path (0 to skip).
    #[arg(long, default_value_t = 5)]
    pub sockperf: u64,
    /// Fail unless every run delivered every expected order and (for strategy runs) parity
    /// held: for CI and soaks.
    #[arg(long)]
    pub strict: bool,
    /// Don't install missing dependencies first.
    #[arg(long)]
    pub no_setup: bool,
}

impl Options {
    /// The defaults of a single benchmark trial (the matrix's and the zero-loss search's):
    /// `count` messages of a GBM series long enough for them, n = 6, native XDP, spinning,
    /// trader on cpu1 and replay on cpu0, no sockperf.
    pub fn trial(count: u64, lab: &str, out: Option<PathBuf>, no_setup: bool) -> Options {
        Options {
            path: PathChoice::Both,
            source: format!("gbm:42:{}", count.max(150_000)),
            count: Some(count),
            rate: "20k".into(),
            batch: 1,
            n: 6,
            xdp_mode: "native".into(),
            wait: "spin".into(),
            trader_cpu: 1,
            no_pin: false,
            replay_cpu: 0,
            out,
            lab: lab.into(),
            keep_lab: false,
            trader_args: Vec::new(),
            replay_args: Vec::new(),
            floors: false,
            sockperf: 0,
            strict: false,
            no_setup,
        }
    }
}

const MD_PORT: u16 = 26400;
const ORDER_PORT: u16 = 26401;

/// What every lab benchmark needs: root, dependencies, a stop flag, the binaries, a results
/// folder and the lab.
pub struct Session {
    pub stop: Arc<AtomicBool>,
    pub bins: Binaries,
    pub out: PathBuf,
    pub lab: LabHold,
}

/// The lab of a session: kept (it was up before, or --keep-lab) from the start, so no error
/// path can remove a lab the user brought up; or owned, removed when the session drops.
#[derive(Debug)]
pub enum LabHold {
    Kept(LabConfig),
    Owned(Lab),
}

impl LabHold {
    pub fn config(&self) -> &LabConfig {
        match self {
            LabHold::Kept(c) => c,
            LabHold::Owned(l) => l.config(),
        }
    }
}

impl Session {
    pub fn start(o: &Options, kind: &str) -> anyhow::Result<Session> {
        require_root("the benchmark (network namespaces, XDP, AF_XDP)")?;
        if !o.no_setup {
            crate::setup::ensure()?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(&stop))
                .context("installing the Ctrl-C handler")?;
        }
        let bins = build_binaries()?;
        let config = LabConfig::new(&o.lab)?;
        preflight(o, &bins, &config)?;
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
        let stale = netns::stop_lab_processes(lab.config(), Duration::from_secs(3));
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

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Ends the session: an owned lab is removed, a kept one stays.
    pub fn finish(self) {}
}

pub fn run(o: Options) -> anyhow::Result<()> {
    let Session {
        stop,
        bins,
        out,
        lab,
    } = Session::start(&o, "bench")?;
    let paths: &[&str] = match o.path {
        PathChoice::Xdp => &["xdp"],
        PathChoice::Udp => &["udp"],
        PathChoice::Both => &["xdp", "udp"],
    };
    let mut runs = Vec::new();
    let mut failure = None;
    for p in paths {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match run_path(&o, &bins, lab.config(), p, p, &out, &stop) {
            Ok(r) => runs.push(r),
            Err(e) => {
                failure = Some(e.context(format!("the {p} run failed")));
                break;
            }
        }
    }
    if failure.is_none() && o.floors && !stop.load(Ordering::Relaxed) {
        let mut f = o.clone();
        f.replay_args.extend(
            [
                "--expect",
                "every",
                "--xdp-pass-on",
                &lab.config().exchange_if,
            ]
            .map(String::from),
        );
        match run_path(&f, &bins, lab.config(), "reflect", "reflect", &out, &stop) {
            Ok(r) => runs.push(r),
            Err(e) => failure = Some(e.context("the reflector run failed")),
        }
    }
    if failure.is_none() && o.floors && !stop.load(Ordering::Relaxed) {
        // The bypass harness: the exchange on AF_XDP too, so the figure is the trader's own.
        let mut f = o.clone();
        f.replay_args
            .extend(["--io", "xdp", "--iface", &lab.config().exchange_if].map(String::from));
        match run_path(&f, &bins, lab.config(), "xdp", "xdp-bypass", &out, &stop) {
            Ok(r) => runs.push(r),
            Err(e) => failure = Some(e.context("the bypass-harness run failed")),
        }
    }
    let mut cpu_floor = None;
    if failure.is_none() && o.floors && !stop.load(Ordering::Relaxed) {
        let json = out.join("cpu-floor.json");
        // As long as the first path's run (within bounds), so its tail is the machine's
        // jitter on the same time scale as the paths' tails.
        let seconds = runs
            .first()
            .and_then(|r| std::fs::read_to_string(&r.replay_json).ok())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["send_seconds"].as_f64())
            .unwrap_or(FLOOR_SECONDS_DEFAULT)
            .clamp(FLOOR_SECONDS_MIN, FLOOR_SECONDS_MAX);
        let mut floor = Command::new(&bins.floor);
        floor
            .args(["--cpus", &format!("{},{}", o.replay_cpu, o.trader_cpu)])
            .args(["--seconds", &format!("{seconds:.1}")])
            .arg("--json-out")
            .arg(&json)
            .arg("--hgrm-out")
            .arg(out.join("cpu-floor.hgrm"));
        match crate::util::exec_until(&mut floor, &stop)
            .and_then(|status| crate::util::succeeded(&floor, status))
        {
            Ok(()) => cpu_floor = Some(json),
            // Report what was measured; the failure is returned after the report.
            Err(e) => failure = Some(e.context("the CPU floor failed")),
        }
    }
    let mut reference = None;
    if failure.is_none() && o.sockperf > 0 && !stop.load(Ordering::Relaxed) {
        match crate::sockperf::ping_pong(lab.config(), o.sockperf, o.trader_cpu, o.replay_cpu) {
            Ok(v) => reference = Some(v),
            Err(e) => eprintln!("warning: no sockperf reference: {e:#}"),
        }
    }
    drop(lab);
    if !runs.is_empty() {
        report::write(&out, &o, &runs, reference.as_ref(), cpu_floor.as_deref())?;
    }
    if let Some(e) = failure {
        return Err(e);
    }
    if o.strict {
        let mut bad = Vec::new();
        for r in &runs {
            let text = std::fs::read_to_string(&r.replay_json)?;
            let v: serde_json::Value = serde_json::from_str(&text)?;
            let p = &v["parity"];
            let expected = p["expected_orders"].as_u64().unwrap_or(u64::MAX);
            let got = v["orders_received"].as_u64().unwrap_or(0);
            let parity_needed = r.path != "reflect";
            if got != expected || (parity_needed && p["ok"].as_bool() != Some(true)) {
                bad.push(format!(
                    "{}: {got} of {expected} orders, {}",
                    r.tag,
                    p["explanation"].as_str().unwrap_or("?")
                ));
            }
        }
        if !bad.is_empty() {
            bail!("strict: {}", bad.join("; "));
        }
    }
    if stop.load(Ordering::Relaxed) {
        bail!(
            "interrupted; partial results (if any) are in {}",
            out.display()
        );
    }
    Ok(())
}

/// Paths of the release binaries.
pub struct Binaries {
    pub trader: PathBuf,
    pub replay: PathBuf,
    pub floor: PathBuf,
}

pub fn build_binaries() -> anyhow::Result<Binaries> {
    exec(
        cargo()
            .current_dir(workspace_root())
            .env("XDP_EBPF_REQUIRED", "1")
            .args(["build", "--release", "--quiet", "-p", "userspace", "--bins"]),
    )
    .context("building the trader and the replay tool")?;
    let dir = workspace_root().join("target/release");
    Ok(Binaries {
        trader: dir.join("trader"),
        replay: dir.join("replay"),
        floor: dir.join("floor"),
    })
}

/// One path's run: file names of its results.
#[derive(Debug, Clone)]
pub struct Run {
    pub path: String,
    pub tag: String,
    pub replay_json: PathBuf,
    pub trader_json: PathBuf,
    pub hgrm: PathBuf,
    pub trader_hgrm: PathBuf,
}

fn in_ns(ns: &str, bin: &Path) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).arg(bin);
    c
}

/// A new folder under `parent` named by the UTC time; a second run within the same second
/// gets `-2`, `-3`, ... rather than writing into the first one's.
pub fn new_results_dir(parent: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let stamp = report::utc_stamp();
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

struct Reaper(Option<Child>);

impl Drop for Reaper {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take()
            && c.try_wait().ok().flatten().is_none()
        {
            crate::util::terminate(c.id());
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                if c.try_wait().ok().flatten().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs the trader on `path` and the replay against it once; result files are named `tag`.
pub fn run_path(
    o: &Options,
    bins: &Binaries,
    lab: &LabConfig,
    path: &str,
    tag: &str,
    out: &Path,
    stop: &AtomicBool,
) -> anyhow::Result<Run> {
    let run = Run {
        path: path.to_owned(),
        tag: tag.to_owned(),
        replay_json: out.join(format!("{tag}.json")),
        trader_json: out.join(format!("{tag}-trader.json")),
        hgrm: out.join(format!("{tag}.hgrm")),
        trader_hgrm: out.join(format!("{tag}-trader-rx-tx.hgrm")),
    };
    let mut trader = trader_command(
        in_ns(&lab.trader_ns(), &bins.trader),
        o,
        lab,
        path,
        Some(&run),
    );
    trader.stdout(Stdio::piped());
    eprintln!("+ {}", shown(&trader));
    let mut child = trader.spawn().context("starting the trader")?;
    let stdout = child.stdout.take().expect("piped");
    let mut reaper = Reaper(Some(child));
    // Wait for `ready` (the XDP program is attached and the socket is in the map).
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
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(true) => {}
        _ => {
            let status = reaper
                .0
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
                .map_or_else(|| "still running".to_owned(), |s| s.to_string());
            bail!("the trader did not get ready ({status}); its error is above");
        }
    }
    let mut replay = replay_command(
        in_ns(&lab.exchange_ns(), &bins.replay),
        o,
        lab,
        tag,
        Some(&run),
    );
    let status = crate::util::exec_until(&mut replay, stop)?;
    if stop.load(Ordering::Relaxed) {
        // The replay stops on the same Ctrl-C and writes what it measured: keep that.
        if run.replay_json.exists() {
            return Ok(run);
        }
        bail!("interrupted");
    }
    if !status.success() {
        bail!("the replay failed: {status}");
    }
    // The trader exits on the end-of-session packet; give it a moment to write its report.
    let deadline = Instant::now() + Duration::from_secs(10);
    if let Some(c) = reaper.0.as_mut() {
        while Instant::now() < deadline {
            if c.try_wait()?.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    drop(reaper);
    Ok(run)
}

/// The trader's command line for `path`, on `base` (the binary, in its namespace or not);
/// `run` names its result files (none for a `--check`).
fn trader_command(
    mut base: Command,
    o: &Options,
    lab: &LabConfig,
    path: &str,
    run: Option<&Run>,
) -> Command {
    base.args(["--path", path, "--iface", &lab.trader_if])
        .args(["--addr", &lab.trader_ip.to_string()])
        .args(["--port", &MD_PORT.to_string()])
        .args(["--order-port", &ORDER_PORT.to_string()])
        .args(["--n", &o.n.to_string()])
        .args(["--xdp-mode", &o.xdp_mode, "--wait", &o.wait])
        .args(["--idle-exit", "60", "--ready"]);
    if let Some(run) = run {
        base.arg("--stats-out")
            .arg(&run.trader_json)
            .arg("--hgrm-out")
            .arg(&run.trader_hgrm);
    }
    base.args(&o.trader_args);
    if !o.no_pin {
        base.args(["--cpu", &o.trader_cpu.to_string()]);
    }
    base
}

/// The replay's command line, as [`trader_command`]'s.
fn replay_command(
    mut base: Command,
    o: &Options,
    lab: &LabConfig,
    tag: &str,
    run: Option<&Run>,
) -> Command {
    base.args(["--source", &o.source, "--rate", &o.rate])
        .args(["--batch", &o.batch.to_string(), "--n", &o.n.to_string()])
        .args(["--target", &format!("{}:{MD_PORT}", lab.trader_ip)])
        .args(["--bind", &format!("{}:{ORDER_PORT}", lab.exchange_ip)])
        .args(["--label", tag, "--progress", "true"]);
    if let Some(run) = run {
        base.arg("--json-out")
            .arg(&run.replay_json)
            .arg("--hgrm-out")
            .arg(&run.hgrm);
    }
    if let Some(c) = o.count {
        base.args(["--count", &c.to_string()]);
    }
    if !o.no_pin {
        base.args(["--cpu", &o.replay_cpu.to_string()]);
    }
    base.args(&o.replay_args);
    base
}

/// Runs the trader and the replay with `--check` before anything is built: a bad option or
/// data file is one error, before the lab, XDP or a results folder exist.
fn preflight(o: &Options, bins: &Binaries, lab: &LabConfig) -> anyhow::Result<()> {
    let path = match o.path {
        PathChoice::Udp => "udp",
        PathChoice::Xdp | PathChoice::Both => "xdp",
    };
    let checks = [
        (
            "trader",
            trader_command(Command::new(&bins.trader), o, lab, path, None),
        ),
        (
            "replay",
            replay_command(Command::new(&bins.replay), o, lab, path, None),
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
