//! The boundary study on this machine, with a native client: what the `boundary-bench` binary
//! (run by `cargo xtask bench-boundary`) parses [`Options`] for and [`run`]s.
//!
//! On the spec's workload (150,000 bars, 80 combos) it times, interleaved round by round so
//! that load from elsewhere falls on every mode alike: the in-process sweep; one batched call
//! over a Unix socket; one call per combo re-sending the series (chatty); one call per combo
//! against a preloaded series (stateful); the batched call over TCP loopback; a process spawned
//! per sweep. Every result of every call passes [`crate::check`] against the in-process
//! results before any time is kept. Then the echo round trip from 1 to 150,000 floats, and
//! encoding plus decoding the series as raw bytes and as JSON.
//!
//! Writes `results.json`, `report.md` and `echo.svg` to `--out`.
mod runtimes;

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::check;
use crate::client::{Client, spawn_sweep};
use anyhow::{Context as _, bail};
use clap::Parser;
use engine::{ComboResult, Params};
use results::plot::{self, Axis, Marker, Plot, Series};
use serde_json::json;

/// The study's published figures (Apple M2 Max, Python client), seconds or microseconds.
mod study {
    pub(crate) const IN_PROCESS_S: f64 = 2.010;
    pub(crate) const UDS_BATCHED_S: f64 = 2.276;
    pub(crate) const CHATTY_S: f64 = 2.383;
    pub(crate) const SPAWN_S: f64 = 2.300;
    pub(crate) const ECHO_8B_US: f64 = 14.0;
    pub(crate) const ECHO_1_2MB_US: f64 = 2_043.0;
    pub(crate) const RAW_ENCODE_US: f64 = 49.0;
    pub(crate) const JSON_ENCODE_US: f64 = 66_000.0;
}

/// Options of the boundary study.
#[derive(Debug, Parser)]
#[command(
    name = "boundary-bench",
    version,
    about = "The engine-boundary study on this machine"
)]
pub struct Options {
    /// Results folder (created).
    #[arg(long)]
    pub out: PathBuf,
    /// Timed calls of each sweep mode, after one checked warm-up call.
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Threads of one sweep, in process and in the server alike.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Bars of the seed-42 GBM series (the spec: 150,000).
    #[arg(long, default_value_t = 150_000)]
    pub bars: usize,
    /// Echo calls per payload size at the small end (fewer for big payloads, at least 200).
    #[arg(long, default_value_t = 5_000)]
    pub echo_calls: usize,
    /// The server binary (default: `boundary` beside this one).
    #[arg(long)]
    pub server: Option<PathBuf>,
    /// The `json-default` binary (studies/boundary/json-default: serde_json's default, inexact float
    /// parsing, built on its own); without it that row is left out.
    #[arg(long)]
    pub json_default: Option<PathBuf>,
}

/// A running `boundary serve`, stopped (socket removed) when dropped: closing its stdin
/// tells it to shut down.
struct ServerProcess {
    child: Child,
    uds: PathBuf,
    tcp: SocketAddr,
    dir: PathBuf,
}

impl ServerProcess {
    /// `workers`: tokio-multi's worker threads, given explicitly (a server started by a pinned
    /// bench would otherwise count only the one CPU it inherits).
    fn start(
        exe: &Path,
        runtime: &str,
        workers: usize,
        threads: usize,
        spin: Duration,
        cpu: Option<usize>,
    ) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!(
            "bnd-bench-{}-{runtime}-{}",
            std::process::id(),
            spin.as_micros()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("failed to create {}", dir.display()))?;
        let uds = dir.join("engine.sock");
        let mut child = Command::new(exe)
            .args([
                "serve",
                "--exit-on-stdin-eof",
                "--tcp",
                "127.0.0.1:0",
                "--threads",
            ])
            .arg(threads.to_string())
            .arg("--uds")
            .arg(&uds)
            .arg("--spin-us")
            .arg(spin.as_micros().to_string())
            .args(["--runtime", runtime])
            .args(
                (runtime == "tokio-multi")
                    .then(|| ["--workers".to_owned(), workers.to_string()])
                    .into_iter()
                    .flatten(),
            )
            .args(cpu.map(|c| format!("--cpu={c}")))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .with_context(|| format!("failed to start {}", exe.display()))?;
        let stdout = child.stdout.take().context("server stdout")?;
        let mut tcp = None;
        for line in BufReader::new(stdout).lines() {
            let line = line.context("failed to read the server's stdout")?;
            if let Some(a) = line.strip_prefix("tcp ") {
                tcp = Some(
                    a.parse()
                        .with_context(|| format!("bad address line {line:?}"))?,
                );
            }
            if line.starts_with("ready") {
                break;
            }
        }
        let Some(tcp) = tcp else {
            let _ = child.kill();
            bail!("{} did not report a TCP address", exe.display());
        };
        Ok(Self {
            child,
            uds,
            tcp,
            dir,
        })
    }
}

impl ServerProcess {
    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn median(xs: &[f64]) -> f64 {
    percentile(xs, 0.5)
}

/// Nearest-rank percentile of unsorted samples.
fn percentile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

fn read_trim(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// `text`, or "unknown" where the system didn't say (as `read_trim` does for a missing file).
fn or_unknown(text: String) -> String {
    if text.is_empty() {
        "unknown".to_owned()
    } else {
        text
    }
}

type Sweeper<'a> = Box<dyn FnMut() -> Result<Vec<ComboResult>, crate::Error> + 'a>;

struct Mode<'a> {
    name: &'static str,
    what: &'static str,
    calls: usize,
    run: Sweeper<'a>,
    secs: Vec<f64>,
}

fn per_combo(
    grid: &[Params],
    mut one: impl FnMut(&[Params]) -> Result<Vec<ComboResult>, crate::Error>,
) -> Result<Vec<ComboResult>, crate::Error> {
    let mut out = Vec::with_capacity(grid.len());
    for p in grid {
        out.extend(one(std::slice::from_ref(p))?);
    }
    Ok(out)
}

/// Log-spaced payload sizes from 1 to `max` floats, `k` of them before de-duplication.
fn echo_sizes(max: usize, k: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (0..k)
        .map(|i| (max as f64).powf(i as f64 / (k - 1) as f64).round() as usize)
        .collect();
    v.dedup();
    v
}

#[derive(Clone)]
struct EchoPoint {
    floats: usize,
    calls: usize,
    median_us: f64,
    p99_us: f64,
    min_us: f64,
}

fn echo_curve(
    c: &mut Client,
    close: &[f64],
    sizes: &[usize],
    calls_small: usize,
) -> anyhow::Result<Vec<EchoPoint>> {
    let mut back = Vec::with_capacity(close.len());
    let mut points = Vec::new();
    for &n in sizes {
        let payload = &close[..n];
        let calls = (calls_small * 1024 / n.max(1024)).max(200);
        for _ in 0..(calls / 10).max(20) {
            c.echo_into(payload, &mut back)?;
        }
        if back != payload {
            bail!("echo of {n} floats came back different");
        }
        let mut us = Vec::with_capacity(calls);
        for _ in 0..calls {
            let t = Instant::now();
            c.echo_into(payload, &mut back)?;
            us.push(t.elapsed().as_secs_f64() * 1e6);
        }
        if back != payload {
            bail!("echo of {n} floats came back different");
        }
        points.push(EchoPoint {
            floats: n,
            calls,
            median_us: median(&us),
            p99_us: percentile(&us, 0.99),
            min_us: us.iter().copied().fold(f64::INFINITY, f64::min),
        });
    }
    Ok(points)
}

/// Median seconds of `reps` calls of `f`.
fn time_median(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut s = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f();
        s.push(t.elapsed().as_secs_f64());
    }
    median(&s)
}

/// Runs the study as `o` says and writes its results.
pub fn run(o: Options) -> anyhow::Result<()> {
    let Options {
        out,
        reps,
        threads,
        bars,
        echo_calls,
        server,
        json_default,
    } = o;
    if reps == 0 || threads == 0 || bars == 0 {
        bail!("--reps, --threads and --bars must be at least 1");
    }
    let exe = match server {
        Some(p) => p,
        None => std::env::current_exe()
            .context("failed to find this executable")?
            .with_file_name("boundary"),
    };
    if !exe.is_file() {
        bail!(
            "no server binary at {} (build it: cargo build --release -p boundary)",
            exe.display()
        );
    }
    std::fs::create_dir_all(&out).with_context(|| format!("failed to create {}", out.display()))?;
    let started = Instant::now();
    // Before any pinning narrows what this thread may use.
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let load_before = read_trim("/proc/loadavg");

    let close = engine::data::gbm(42, bars);
    let grid = engine::grid_default();
    let expected = engine::sweep::sweep(&close, &grid, threads)?;
    if bars == 150_000 && expected[0].trades != 57_029 {
        bail!(
            "combo 0 made {} trades, the spec's fingerprint is 57,029",
            expected[0].trades
        );
    }
    eprintln!(
        "workload: {bars} bars x {} combos, {threads} sweep thread(s)",
        grid.len()
    );

    // One server per runtime, all started now (an idle one costs nothing).
    let servers = runtimes::RUNTIMES
        .iter()
        .map(|&rt| {
            Ok((
                rt,
                ServerProcess::start(&exe, rt, cores, threads, Duration::ZERO, None)?,
            ))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let by_name: Vec<(&'static str, &ServerProcess)> =
        servers.iter().map(|(rt, s)| (*rt, s)).collect();
    let srv = by_name[0].1;
    let (sweeps, load_s) = run_sweeps(&by_name, &exe, &close, &grid, threads, reps, &expected)?;

    // Echo curves: fresh connections, nothing else in flight.
    let sizes = echo_sizes(bars.min(150_000), 14);
    let mut c_uds = Client::connect_uds(&srv.uds)?;
    let echo_uds = echo_curve(&mut c_uds, &close, &sizes, echo_calls)?;
    let mut c_tcp = Client::connect_tcp(srv.tcp)?;
    let echo_tcp = echo_curve(&mut c_tcp, &close, &sizes, echo_calls)?;
    drop((c_uds, c_tcp));
    let mut rt_block = Vec::new();
    for &(rt, s) in &by_name[1..] {
        let mut c = Client::connect_uds(&s.uds)?;
        rt_block.push((rt, echo_curve(&mut c, &close, &sizes, echo_calls)?));
        eprintln!("{rt}: echo curve done");
    }
    let conc = runtimes::concurrency(&by_name, &CLIENTS, CONC_ROUNDS, CONC_SECS)?;
    let idle = runtimes::idle(&by_name, IDLE_CONNECTIONS)?;
    drop(by_name);
    drop(servers);
    // The same over a server and a client that spin before they block, each pinned to a
    // core of its own (server CPU 0, client the last CPU) when there are two.
    let (server_cpu, client_cpu) = if cores >= 2 {
        (Some(0), Some(cores - 1))
    } else {
        (None, None)
    };
    if let Some(cpu) = client_cpu {
        crate::pin_current_thread(cpu)?;
    }
    let srv = ServerProcess::start(&exe, "threads", cores, threads, SPIN, server_cpu)?;
    let mut c = Client::connect_uds(&srv.uds)?;
    c.set_spin(SPIN)?;
    let echo_uds_spin = echo_curve(&mut c, &close, &sizes, echo_calls)?;
    let mut c = Client::connect_tcp(srv.tcp)?;
    c.set_spin(SPIN)?;
    let echo_tcp_spin = echo_curve(&mut c, &close, &sizes, echo_calls)?;
    drop(c);
    drop(srv);
    let mut runtime_echo = vec![runtimes::RuntimeEcho {
        runtime: "threads",
        block: echo_uds.clone(),
        spin: echo_uds_spin.clone(),
    }];
    for (rt, block) in rt_block {
        let srv = ServerProcess::start(&exe, rt, cores, threads, SPIN, server_cpu)?;
        let mut c = Client::connect_uds(&srv.uds)?;
        c.set_spin(SPIN)?;
        let spin = echo_curve(&mut c, &close, &sizes, echo_calls)?;
        eprintln!("{rt}: spinning echo curve done");
        runtime_echo.push(runtimes::RuntimeEcho {
            runtime: rt,
            block,
            spin,
        });
    }

    let encoding = measure_encoding(&close, json_default.as_deref(), &out)?;

    report(&Report {
        out: &out,
        threads,
        cores,
        bars,
        combos: grid.len(),
        reps,
        load_before,
        load_after: read_trim("/proc/loadavg"),
        load_s,
        sweeps,
        echo_uds,
        echo_tcp,
        echo_uds_spin,
        echo_tcp_spin,
        runtime_echo,
        conc,
        idle,
        encoding,
        total: started.elapsed(),
        combo0: expected[0],
    })
}

/// The sweep modes, each checked against the in-process result in a warm-up call, then timed
/// in `reps` interleaved rounds; also the median time to LOAD the series once.
fn run_sweeps(
    servers: &[(&'static str, &ServerProcess)],
    exe: &Path,
    close: &[f64],
    grid: &[engine::Params],
    threads: usize,
    reps: usize,
    expected: &[engine::ComboResult],
) -> anyhow::Result<(Vec<ModeResult>, f64)> {
    let srv = servers.first().context("no server")?.1;
    let mut tcp = Client::connect_tcp(srv.tcp)?;
    let mut probe = Client::connect_uds(&srv.uds)?;
    let load_s = time_median(5, || {
        if let Ok(h) = probe.load(close) {
            let _ = probe.free(h);
        }
    });
    drop(probe);

    let (c, g) = (close, grid);
    let mut modes = vec![
        Mode {
            name: "in-process",
            what: "engine::sweep::sweep, 80 combos in one call",
            calls: 1,
            run: Box::new(move || Ok(engine::sweep::sweep(c, g, threads)?)),
            secs: Vec::new(),
        },
        Mode {
            name: "tcp-batched",
            what: "the same SWEEP over TCP loopback",
            calls: 1,
            run: Box::new(move || tcp.sweep(c, g)),
            secs: Vec::new(),
        },
        Mode {
            name: "spawn",
            what: "a process per sweep, request on stdin, reply on stdout",
            calls: 1,
            run: Box::new(|| spawn_sweep(exe, threads, c, g)),
            secs: Vec::new(),
        },
        Mode {
            name: "in-process-per-combo",
            what: "engine::sweep::sweep once per combo (no WMA sharing between combos)",
            calls: g.len(),
            run: Box::new(move || per_combo(g, |p| Ok(engine::sweep::sweep(c, p, threads)?))),
            secs: Vec::new(),
        },
    ];
    // The batched, chatty and stateful modes on every runtime's server.
    for &(rt, srv) in servers {
        let [batched, chatty_name, stateful_name] = runtimes::mode_names(rt);
        let mut uds = Client::connect_uds(&srv.uds)?;
        let mut chatty = Client::connect_uds(&srv.uds)?;
        let mut stateful = Client::connect_uds(&srv.uds)?;
        let handle = stateful.load(close)?;
        modes.push(Mode {
            name: batched,
            what: "one SWEEP over a Unix socket (1.2 MB up, 1.3 KB back)",
            calls: 1,
            run: Box::new(move || uds.sweep(c, g)),
            secs: Vec::new(),
        });
        modes.push(Mode {
            name: chatty_name,
            what: "one SWEEP per combo over a Unix socket, series re-sent each time",
            calls: g.len(),
            run: Box::new(move || per_combo(g, |p| chatty.sweep(c, p))),
            secs: Vec::new(),
        });
        modes.push(Mode {
            name: stateful_name,
            what: "one SWEEP_HANDLE per combo (65-byte request) against a preloaded series",
            calls: g.len(),
            run: Box::new(move || per_combo(g, |p| stateful.sweep_handle(handle, p))),
            secs: Vec::new(),
        });
    }

    // Warm-up call, checked, then rounds of one checked, timed call per mode.
    for m in &mut modes {
        let got = (m.run)().with_context(|| format!("{} failed", m.name))?;
        check::check(m.name, expected, &got)?;
        eprintln!(
            "{:<22} checked: {} combos equal in-process",
            m.name,
            got.len()
        );
    }
    for round in 0..reps {
        for m in &mut modes {
            let t = Instant::now();
            let got = (m.run)().with_context(|| format!("{} failed", m.name))?;
            let s = t.elapsed().as_secs_f64();
            check::check(m.name, expected, &got)?;
            m.secs.push(s);
        }
        eprintln!("round {}/{reps} done", round + 1);
    }
    let sweeps: Vec<ModeResult> = modes
        .into_iter()
        .map(|m| ModeResult {
            name: m.name,
            what: m.what,
            calls: m.calls,
            secs: m.secs,
        })
        .collect();
    Ok((sweeps, load_s))
}

/// serde_json's default float parsing on the same series, from its own build.
#[derive(serde::Deserialize)]
struct JsonDefault {
    json_bytes: usize,
    encode_s: f64,
    decode_s: f64,
    values_inexact: usize,
}

fn json_default(exe: &Path, close: &[f64], out: &Path) -> anyhow::Result<JsonDefault> {
    let series = out.join("series.bin");
    std::fs::write(&series, engine::data::to_le_bytes(close))
        .with_context(|| format!("failed to write {}", series.display()))?;
    let run = Command::new(exe)
        .arg(&series)
        .output()
        .with_context(|| format!("failed to run {}", exe.display()));
    let _ = std::fs::remove_file(&series);
    let run = run?;
    if !run.status.success() {
        bail!(
            "{} failed: {}",
            exe.display(),
            String::from_utf8_lossy(&run.stderr)
        );
    }
    serde_json::from_slice(&run.stdout)
        .with_context(|| format!("{} printed no report", exe.display()))
}

/// Encoding the series: raw little-endian bytes versus JSON, each way; JSON parsed exactly
/// (`float_roundtrip`) here and with serde_json's default by `json_default_exe`.
fn measure_encoding(
    close: &[f64],
    json_default_exe: Option<&Path>,
    out: &Path,
) -> anyhow::Result<Encoding> {
    let raw_encode_s = time_median(200, || {
        std::hint::black_box(engine::data::to_le_bytes(std::hint::black_box(close)));
    });
    let raw = engine::data::to_le_bytes(close);
    let decode_raw = |b: &[u8]| -> Vec<f64> {
        b.chunks_exact(8)
            .map(|c| {
                let mut w = [0; 8];
                w.copy_from_slice(c);
                f64::from_le_bytes(w)
            })
            .collect()
    };
    let raw_decode_s = time_median(200, || {
        std::hint::black_box(decode_raw(std::hint::black_box(&raw)));
    });
    let json = serde_json::to_vec(close)?;
    let json_encode_s = time_median(7, || {
        std::hint::black_box(serde_json::to_vec(std::hint::black_box(close)).ok());
    });
    let json_decode_s = time_median(7, || {
        std::hint::black_box(serde_json::from_slice::<Vec<f64>>(std::hint::black_box(&json)).ok());
    });
    let json_back: Vec<f64> = serde_json::from_slice(&json)?;
    let json_inexact = json_back
        .iter()
        .zip(close)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    let inexact = json_default_exe
        .map(|exe| json_default(exe, close, out))
        .transpose()?;
    Ok(Encoding {
        inexact,
        raw_encode_s,
        raw_decode_s,
        raw_exact: decode_raw(&raw) == close,
        raw_bytes: raw.len(),
        json_encode_s,
        json_decode_s,
        json_bytes: json.len(),
        json_inexact,
    })
}

/// Spin budget of the spinning echo runs, both ends: longer than a round trip, short enough
/// that an idle connection gives its core back quickly.
const SPIN: Duration = Duration::from_micros(200);

/// Concurrent clients of the many-clients runs, its rounds, and seconds per round.
const CLIENTS: [usize; 2] = [32, 128];
const CONC_ROUNDS: usize = 3;
const CONC_SECS: f64 = 1.0;
/// Idle connections opened to each server (under its 256-connection limit).
const IDLE_CONNECTIONS: usize = 200;

struct ModeResult {
    name: &'static str,
    what: &'static str,
    calls: usize,
    secs: Vec<f64>,
}

struct Encoding {
    /// serde_json's default parsing, if its binary was given.
    inexact: Option<JsonDefault>,
    raw_encode_s: f64,
    raw_decode_s: f64,
    raw_exact: bool,
    raw_bytes: usize,
    json_encode_s: f64,
    json_decode_s: f64,
    json_bytes: usize,
    json_inexact: usize,
}

struct Report<'a> {
    out: &'a Path,
    threads: usize,
    cores: usize,
    bars: usize,
    combos: usize,
    reps: usize,
    load_before: String,
    load_after: String,
    load_s: f64,
    sweeps: Vec<ModeResult>,
    echo_uds: Vec<EchoPoint>,
    echo_tcp: Vec<EchoPoint>,
    echo_uds_spin: Vec<EchoPoint>,
    echo_tcp_spin: Vec<EchoPoint>,
    runtime_echo: Vec<runtimes::RuntimeEcho>,
    conc: Vec<runtimes::Concurrency>,
    idle: Vec<runtimes::Idle>,
    encoding: Encoding,
    total: Duration,
    combo0: ComboResult,
}

/// The study's figure for a mode, if it published one.
fn study_secs(name: &str) -> Option<f64> {
    match name {
        "in-process" => Some(study::IN_PROCESS_S),
        "uds-batched" => Some(study::UDS_BATCHED_S),
        "uds-chatty" => Some(study::CHATTY_S),
        "spawn" => Some(study::SPAWN_S),
        _ => None,
    }
}

/// The compute a mode is compared with for its boundary share: the in-process call that does
/// the same engine work (per-combo calls lose the WMA sharing of a batched sweep).
fn baseline_of(name: &str) -> &'static str {
    match name {
        n if n == "in-process-per-combo" || n.ends_with("-chatty") || n.ends_with("-stateful") => {
            "in-process-per-combo"
        }
        _ => "in-process",
    }
}

fn echo_json(points: &[EchoPoint]) -> serde_json::Value {
    points
        .iter()
        .map(|p| {
            json!({
                "floats": p.floats, "bytes": p.floats * 8, "calls": p.calls,
                "median_us": p.median_us, "p99_us": p.p99_us, "min_us": p.min_us,
            })
        })
        .collect()
}

fn report(r: &Report<'_>) -> anyhow::Result<()> {
    let Report {
        out,
        threads,
        cores,
        bars,
        combos,
        reps,
        load_before,
        load_after,
        load_s,
        sweeps,
        echo_uds,
        echo_tcp,
        echo_uds_spin,
        encoding,
        total,
        combo0,
        ..
    } = r;
    // The CPU model and kernel as every result of this project reads them.
    let results::Machine { kernel, cpu, .. } = results::Machine::read();
    let (model, kernel) = (or_unknown(cpu), or_unknown(kernel));
    let clocksource = read_trim("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    let conditions = format!(
        "{model}, {cores} cores, Linux {kernel} (clocksource {clocksource}); {bars} bars x {combos} \
         combos, {threads} sweep thread(s) in process and in the server; median of {reps} \
         interleaved rounds after a checked warm-up; loadavg before {load_before}, after \
         {load_after}"
    );

    let mut md = String::new();
    writeln!(md, "# Boundary study, this machine\n\n{conditions}.\n")?;
    writeln!(
        md,
        "Every call of every mode returned all {combos} (PnL, trades) equal to the in-process \
         sweep (trades exactly, PnL within {:e}; combo 0: {:.2} PnL, {} trades).\n",
        check::PNL_TOLERANCE,
        combo0.pnl,
        combo0.trades
    )?;
    let rows = sweep_section(&mut md, sweeps)?;
    writeln!(
        md,
        "\nLOAD of the series (once, before the stateful calls): {:.1} us median of 5.\n",
        1e6 * load_s
    )?;
    echo_section(&mut md, r)?;
    let runtimes_json = runtimes::section(
        &mut md,
        sweeps,
        *combos,
        &r.runtime_echo,
        &r.conc,
        &r.idle,
        SPIN.as_micros(),
    )?;
    encoding_section(&mut md, *bars, encoding)?;
    let targets = targets(r);
    writeln!(md, "## Targets\n")?;
    for (what, met, how) in &targets {
        writeln!(
            md,
            "- {}: {what}: {how}",
            if *met { "MET" } else { "NOT MET" }
        )?;
    }
    writeln!(md, "\nTotal bench time {:.1} s.", total.as_secs_f64())?;

    let mut results = results_json(r, &rows, &targets, &model, &kernel, &clocksource);
    results["runtimes"] = runtimes_json;
    let write = |name: &str, body: &[u8]| -> anyhow::Result<()> {
        let p = out.join(name);
        std::fs::write(&p, body).with_context(|| format!("failed to write {}", p.display()))
    };
    write(
        "results.json",
        serde_json::to_string_pretty(&results)?.as_bytes(),
    )?;
    write("report.md", md.as_bytes())?;
    write(
        "echo.svg",
        echo_svg(
            &[
                (&echo_uds[..], "#1f77b4", "UDS"),
                (&echo_tcp[..], "#d62728", "TCP loopback"),
                (&echo_uds_spin[..], "#9467bd", "UDS, spinning"),
            ]
            .into_iter()
            .chain(
                r.runtime_echo
                    .iter()
                    .skip(1)
                    .zip(["#ff7f0e", "#8c564b"])
                    .map(|(e, color)| (&e.block[..], color, e.runtime)),
            )
            .collect::<Vec<_>>()[..],
            &conditions,
        )
        .as_bytes(),
    )?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(md.as_bytes())?;
    writeln!(
        stdout,
        "\nResults: {}/{{results.json,report.md,echo.svg}}",
        out.display()
    )?;
    Ok(())
}

/// The median time of the sweep mode `name` (NaN if it didn't run).
fn median_of(sweeps: &[ModeResult], name: &str) -> f64 {
    sweeps
        .iter()
        .find(|m| m.name == name)
        .map_or(f64::NAN, |m| median(&m.secs))
}

/// The sweep table; returns its rows for results.json.
fn sweep_section(md: &mut String, sweeps: &[ModeResult]) -> anyhow::Result<Vec<serde_json::Value>> {
    let med = |name: &str| median_of(sweeps, name);
    let in_process = med("in-process");
    writeln!(
        md,
        "| mode | calls | time (median) | min | ratio to in-process | per call | boundary share | study (M2 Max, Python) |"
    )?;
    writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|")?;
    let mut rows = Vec::new();
    for m in sweeps {
        let t = median(&m.secs);
        let min = m.secs.iter().copied().fold(f64::INFINITY, f64::min);
        let base_name = baseline_of(m.name);
        let base = med(base_name);
        let share = (t - base) / t;
        let study = study_secs(m.name).map_or_else(
            || "not measured".to_owned(),
            |s| format!("{s:.3} s ({:.2}x)", s / study::IN_PROCESS_S),
        );
        let share_s = if m.name == base_name {
            "(baseline)".to_owned()
        } else {
            format!("{:.2}% (vs {base_name})", 100.0 * share)
        };
        writeln!(
            md,
            "| {} | {} | {:.4} s | {:.4} s | {:.3}x | {:.1} us | {share_s} | {study} |",
            m.name,
            m.calls,
            t,
            min,
            t / in_process,
            1e6 * t / m.calls as f64,
        )?;
        rows.push(json!({
            "mode": m.name, "what": m.what, "calls": m.calls, "secs": m.secs,
            "median_s": t, "min_s": min, "ratio_to_in_process": t / in_process,
            "per_call_us": 1e6 * t / m.calls as f64, "baseline": base_name,
            "boundary_share": share, "study_s": study_secs(m.name),
        }));
    }
    Ok(rows)
}

/// The echo round-trip table.
fn echo_section(md: &mut String, r: &Report<'_>) -> anyhow::Result<()> {
    let Report {
        echo_uds,
        echo_tcp,
        echo_uds_spin,
        echo_tcp_spin,
        ..
    } = r;
    writeln!(md, "## Echo round trip (native client)\n")?;
    writeln!(
        md,
        "Blocking: both ends block in read, threads where the scheduler puts them. Spin: both \
         ends spin (yielding) up to {} us on an empty socket before blocking (`--spin-us`, \
         `Client::set_spin`), server thread pinned to CPU 0 and client to the last CPU \
         (`--cpu`, `pin_current_thread`). Median, p99 and min of `calls` round trips each (one \
         `Instant` pair per call).\n",
        SPIN.as_micros()
    )?;
    writeln!(
        md,
        "| floats | bytes | calls | UDS median | UDS p99 | UDS min | UDS spin median | UDS spin p99 | TCP median | TCP p99 | TCP spin median | TCP spin p99 |"
    )?;
    writeln!(
        md,
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )?;
    for (((u, t), us), ts) in echo_uds
        .iter()
        .zip(echo_tcp)
        .zip(echo_uds_spin)
        .zip(echo_tcp_spin)
    {
        writeln!(
            md,
            "| {} | {} | {} | {:.1} us | {:.1} us | {:.1} us | {:.1} us | {:.1} us | {:.1} us | {:.1} us | {:.1} us | {:.1} us |",
            u.floats,
            u.floats * 8,
            u.calls,
            u.median_us,
            u.p99_us,
            u.min_us,
            us.median_us,
            us.p99_us,
            t.median_us,
            t.p99_us,
            ts.median_us,
            ts.p99_us
        )?;
    }
    writeln!(
        md,
        "\nStudy (Python client): {} us at 8 bytes, {} us at 1.2 MB.\n",
        study::ECHO_8B_US,
        study::ECHO_1_2MB_US
    )?;
    Ok(())
}

/// The raw-vs-JSON encoding table.
fn encoding_section(md: &mut String, bars: usize, e: &Encoding) -> anyhow::Result<()> {
    writeln!(md, "## Encoding the {bars}-bar series\n")?;
    writeln!(
        md,
        "| format | bytes | encode | decode | round trip exact |"
    )?;
    writeln!(md, "|---|---:|---:|---:|---|")?;
    writeln!(
        md,
        "| raw little-endian f64 | {} | {:.1} us | {:.1} us | {} |",
        e.raw_bytes,
        1e6 * e.raw_encode_s,
        1e6 * e.raw_decode_s,
        if e.raw_exact { "yes" } else { "NO" }
    )?;
    let exact = |n: usize| {
        if n == 0 {
            "yes".to_owned()
        } else {
            format!("no: {n} values differ in the last bits")
        }
    };
    writeln!(
        md,
        "| JSON (serde_json, `float_roundtrip`: exact parsing) | {} | {:.1} ms | {:.1} ms | {} |",
        e.json_bytes,
        1e3 * e.json_encode_s,
        1e3 * e.json_decode_s,
        exact(e.json_inexact)
    )?;
    if let Some(d) = &e.inexact {
        writeln!(
            md,
            "| JSON (serde_json default parsing, its own build) | {} | {:.1} ms | {:.1} ms | {} |",
            d.json_bytes,
            1e3 * d.encode_s,
            1e3 * d.decode_s,
            exact(d.values_inexact)
        )?;
    }
    writeln!(
        md,
        "\nJSON (exact) / raw: {:.0}x to encode, {:.0}x to decode. Study: raw {} us vs JSON {} ms to encode ({:.0}x).",
        e.json_encode_s / e.raw_encode_s,
        e.json_decode_s / e.raw_decode_s,
        study::RAW_ENCODE_US,
        study::JSON_ENCODE_US / 1e3,
        study::JSON_ENCODE_US / study::RAW_ENCODE_US
    )?;
    if let Some(d) = &e.inexact {
        writeln!(
            md,
            "Exact parsing costs {:+.0}% decode time over the default ({:.1} vs {:.1} ms); the \
             default saves that and returns {} of the {} values different.",
            100.0 * (e.json_decode_s / d.decode_s - 1.0),
            1e3 * e.json_decode_s,
            1e3 * d.decode_s,
            d.values_inexact,
            raw_values(e.raw_bytes)
        )?;
    }
    writeln!(md)?;
    Ok(())
}

const fn raw_values(bytes: usize) -> usize {
    bytes / 8
}

/// The study's targets: (what, met, how it was measured).
fn targets(r: &Report<'_>) -> Vec<(&'static str, bool, String)> {
    let Report {
        combos,
        sweeps,
        echo_uds,
        echo_uds_spin,
        ..
    } = r;
    let med = |name: &str| median_of(sweeps, name);
    let in_process = med("in-process");
    let uds_over = med("uds-batched") / in_process - 1.0;
    let min_of = |name: &str| {
        sweeps
            .iter()
            .find(|m| m.name == name)
            .map_or(f64::NAN, |m| {
                m.secs.iter().copied().fold(f64::INFINITY, f64::min)
            })
    };
    let uds_min_over = min_of("uds-batched") / min_of("in-process") - 1.0;
    let big_echo_us = echo_uds.last().map_or(f64::NAN, |p| p.median_us);
    let echo_bound = 1e-6 * big_echo_us / in_process;
    let floor_us = echo_uds.first().map_or(f64::NAN, |p| p.median_us);
    let floor_spin_us = echo_uds_spin.first().map_or(f64::NAN, |p| p.median_us);
    let per_combo_compute_us = 1e6 * med("in-process-per-combo") / *combos as f64;
    let stateful_us = 1e6 * med("uds-stateful") / *combos as f64;
    let stateful_bound_us = 2.0 * (floor_us + per_combo_compute_us);
    vec![
        (
            "batched UDS within 1% of in-process",
            uds_over <= 0.01 && echo_bound <= 0.01,
            format!(
                "{:+.2}% median, {:+.2}% min-to-min{}; the boundary's own cost, bounded by the \
                 1.2 MB echo round trip ({:.0} us), is {:.2}% of the in-process sweep",
                100.0 * uds_over,
                100.0 * uds_min_over,
                if uds_over < 0.0 {
                    " (faster than in-process: run-to-run noise from the shared machine, \
                     larger than the effect)"
                } else {
                    ""
                },
                big_echo_us,
                100.0 * echo_bound
            ),
        ),
        (
            "echo floor of the native client under 5 us",
            floor_us < 5.0,
            format!("{floor_us:.1} us median at 8 bytes over UDS, blocking"),
        ),
        (
            "echo floor under 5 us, spinning client and server",
            floor_spin_us < 5.0,
            format!("{floor_spin_us:.1} us median at 8 bytes over UDS"),
        ),
        (
            "stateful per-combo call within 2x of (echo floor + its compute)",
            stateful_us <= stateful_bound_us,
            format!(
                "{stateful_us:.1} us per call vs bound 2 x ({floor_us:.1} + {per_combo_compute_us:.1}) = {stateful_bound_us:.1} us"
            ),
        ),
    ]
}

/// Everything the report says, for results.json.
fn results_json(
    r: &Report<'_>,
    rows: &[serde_json::Value],
    targets: &[(&'static str, bool, String)],
    model: &str,
    kernel: &str,
    clocksource: &str,
) -> serde_json::Value {
    let Report {
        threads,
        cores,
        bars,
        combos,
        reps,
        load_before,
        load_after,
        load_s,
        echo_uds,
        echo_tcp,
        echo_uds_spin,
        echo_tcp_spin,
        encoding: e,
        total,
        combo0,
        ..
    } = r;
    json!({
        "conditions": {
            "cpu": model, "cores": cores, "kernel": kernel, "clocksource": clocksource,
            "bars": bars, "combos": combos, "threads": threads, "reps": reps,
            "loadavg_before": load_before, "loadavg_after": load_after,
            "total_s": total.as_secs_f64(),
        },
        "fingerprint": { "combo0_pnl": combo0.pnl, "combo0_trades": combo0.trades },
        "sweeps": rows,
        "load_series_s": load_s,
        "echo": {
            "uds": echo_json(echo_uds), "tcp": echo_json(echo_tcp),
            "uds_spin": echo_json(echo_uds_spin), "tcp_spin": echo_json(echo_tcp_spin),
            "spin_us": SPIN.as_micros() as u64,
        },
        "encoding": {
            "raw_bytes": e.raw_bytes, "raw_encode_s": e.raw_encode_s, "raw_decode_s": e.raw_decode_s,
            "raw_exact": e.raw_exact, "json_bytes": e.json_bytes, "json_encode_s": e.json_encode_s,
            "json_decode_s": e.json_decode_s, "json_values_inexact": e.json_inexact,
            "json_parsing": "float_roundtrip",
            "json_default": e.inexact.as_ref().map(|d| json!({
                "json_bytes": d.json_bytes, "encode_s": d.encode_s, "decode_s": d.decode_s,
                "values_inexact": d.values_inexact,
            })),
        },
        "targets": targets.iter().map(|(what, met, how)| json!({"target": what, "met": met, "measured": how})).collect::<Vec<_>>(),
        "study": {
            "machine": "Apple M2 Max, Python client",
            "in_process_s": study::IN_PROCESS_S, "uds_batched_s": study::UDS_BATCHED_S,
            "chatty_s": study::CHATTY_S, "spawn_s": study::SPAWN_S,
            "echo_8b_us": study::ECHO_8B_US, "echo_1_2mb_us": study::ECHO_1_2MB_US,
            "raw_encode_us": study::RAW_ENCODE_US, "json_encode_us": study::JSON_ENCODE_US,
        },
    })
}

/// The echo curve on log-log axes: median (dots) and p99 (dashed) of each client, the study's
/// two points, and the conditions under the plot.
fn echo_svg(curves: &[(&[EchoPoint], &str, &str)], conditions: &str) -> String {
    let at = |pts: &[EchoPoint], y: fn(&EchoPoint) -> f64| -> Vec<(f64, f64)> {
        pts.iter().map(|p| ((p.floats * 8) as f64, y(p))).collect()
    };
    let mut p = Plot::new(
        "Echo round trip, native Rust client (log-log)",
        Axis::log10("payload (bytes of f64 closes, one way)")
            .range(1.0, 1e7)
            .format(|b| match b {
                b if b >= 1e6 => format!("{} MB", plot::num(b / 1e6)),
                b if b >= 1e3 => format!("{} KB", plot::num(b / 1e3)),
                b => format!("{} B", plot::num(b)),
            }),
        // From 1 µs at most, up to the data and the study's points.
        Axis::log10("round trip").include(1.0).format(plot::micros),
    );
    for &(pts, color, name) in curves {
        p = p
            .series(
                Series::line(format!("{name} median"), at(pts, |e| e.median_us))
                    .color(color)
                    .marker(Marker::Dot),
            )
            .series(
                Series::line(format!("{name} p99"), at(pts, |e| e.p99_us))
                    .color(color)
                    .dashed(),
            );
    }
    p.series(
        Series::points(
            "study: M2 Max, Python client",
            vec![(8.0, study::ECHO_8B_US), (1.2e6, study::ECHO_1_2MB_US)],
        )
        .color("#2ca02c"),
    )
    .note(conditions)
    .svg()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_echo_plot_has_both_clients_the_study_and_the_conditions() {
        let pts: Vec<EchoPoint> = [1, 1_000, 150_000]
            .into_iter()
            .map(|floats| EchoPoint {
                floats,
                calls: 200,
                median_us: 10.0 + floats as f64 / 100.0,
                p99_us: 30.0 + floats as f64 / 50.0,
                min_us: 5.0,
            })
            .collect();
        let svg = echo_svg(
            &[
                (&pts[..], "#1f77b4", "UDS"),
                (&[], "#d62728", "TCP loopback"),
            ],
            "conditions: 2 CPUs <shared> & busy",
        );
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        for want in [
            "UDS median",
            "UDS p99",
            "TCP loopback median (no points)",
            "study: M2 Max, Python client",
            "1 MB",
            "10 µs",
            "2 CPUs &lt;shared&gt; &amp; busy",
        ] {
            assert!(svg.contains(want), "{want} in\n{svg}");
        }
        // The p99 line and its legend entries are dashed (both clients'); the median has dots.
        assert_eq!(svg.matches("stroke-dasharray").count(), 3);
        assert_eq!(svg.matches("<circle").count(), 3 + 2);
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }
}
