//! The PGO experiment: `trader-core`'s `core-workload` (the trader core over the spec's feed,
//! and the engine's fast sweep) built plain, instrumented (`-Cprofile-generate`) and optimised
//! with the merged profile (`-Cprofile-use`), each in its own target folder; the plain and the
//! PGO binaries then run alternately, so the host's drift hits both alike. Criterion can't
//! interleave two builds, so the binary times itself (a pass over the feed, a sweep) and the
//! rounds alternate here. Both builds must print the same orders, order bytes and sweep PnL.
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use hotpath::harness::{Recorder, Tsc};
use hotpath::report::{Comparison, Level, Outcome, Report};

use crate::util::{cargo, exec, shown, target_dir};

/// Rounds, passes over the feed per run, packets, sweeps per run: (small, default).
const ROUNDS: (usize, usize) = (1, 6);
const PASSES: (usize, usize) = (2, 8);
const PACKETS: (usize, usize) = (20_000, 150_000);
const SWEEPS: (usize, usize) = (1, 2);

/// The study's PGO figure: 50 M orders, 1.791 s -> 1.766 s.
const STUDY: (f64, f64) = (1.791, 1.766);

/// `llvm-profdata` whose LLVM major matches rustc's (the profile format follows LLVM).
fn profdata() -> anyhow::Result<PathBuf> {
    let out = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
        .arg("-vV")
        .output()
        .context("running rustc -vV")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let major = text
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .and_then(|v| v.split('.').next())
        .context("rustc -vV names no LLVM version")?
        .to_string();
    let candidates = [
        PathBuf::from(format!("/usr/bin/llvm-profdata-{major}")),
        PathBuf::from(format!("/usr/lib/llvm-{major}/bin/llvm-profdata")),
    ];
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "no llvm-profdata for LLVM {major} (rustc's): install Debian's llvm-{major} \
             (`cargo xtask setup` does) or rustup's llvm-tools"
            )
        })
}

fn build(dir: &str, rustflags: Option<String>) -> anyhow::Result<PathBuf> {
    let target = target_dir().join("pgo").join(dir);
    let mut cmd = cargo();
    cmd.args([
        "build",
        "--release",
        "-p",
        "trader-core",
        "--bin",
        "core-workload",
    ])
    .env("CARGO_TARGET_DIR", &target);
    match rustflags {
        Some(f) => cmd.env("RUSTFLAGS", f),
        None => cmd.env_remove("RUSTFLAGS"),
    };
    exec(&mut cmd)?;
    Ok(target.join("release").join("core-workload"))
}

/// What one run of the workload printed.
#[derive(Debug, serde::Deserialize)]
struct Run {
    per_packet_ns: Vec<f64>,
    sweep_ms: Vec<f64>,
    orders: u64,
    order_checksum: u64,
    sweep_pnl_sum: f64,
}

fn run_workload(bin: &Path, args: &[String], env: Option<(&str, &Path)>) -> anyhow::Result<Run> {
    let mut cmd = Command::new(bin);
    cmd.args(args);
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .with_context(|| format!("running {}", shown(&cmd)))?;
    if !out.status.success() {
        bail!(
            "`{}` failed: {}",
            shown(&cmd),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout)
        .with_context(|| format!("parsing what `{}` printed", shown(&cmd)))
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Where and how long PGO measures: the suite's size (`small` or `default`) and its two CPUs.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) size: String,
    pub(crate) cpu: usize,
    pub(crate) other_cpu: usize,
}

/// Builds, profiles, measures, and adds the `pgo` outcome to the report in `out` (creating the
/// report when the suite ran nothing else).
pub(crate) fn run(out: &Path, o: &Plan, alone: bool) -> anyhow::Result<()> {
    let small = o.size == "small";
    let pick = |p: (usize, usize)| if small { p.0 } else { p.1 };
    eprintln!("[pgo] the trader core and the engine sweep, plain vs profile-guided");
    let outcome = match profdata() {
        Ok(tool) => measure(out, &tool, pick, o.cpu)?,
        Err(e) => {
            let mut oc = Outcome::new("pgo", "Profile-guided optimisation", Level::Code);
            oc.comparisons.push(Comparison {
                standing: None,
                what: "PGO".into(),
                ours: format!("not measurable here: {e:#}"),
                our_ratio: None,
                study: format!("{} s -> {} s", STUDY.0, STUDY.1),
                study_ratio: Some(STUDY.0 / STUDY.1),
                verdict: "not run".into(),
            });
            oc
        }
    };
    let mut report = if alone {
        let tsc = Tsc::calibrate(std::time::Duration::from_millis(50));
        Report {
            started_utc: results::utc::now_for_file_names(),
            machine: crate::doctor::machine(),
            kernel: results::Machine::read().kernel,
            size: o.size.clone(),
            tsc,
            tsc_step_ns: tsc.step_ns(),
            cpus: (o.cpu, o.other_cpu),
            doctor: crate::doctor::summary(o.cpu),
            outcomes: Vec::new(),
            skipped: Vec::new(),
        }
    } else {
        Report::read(out)?
    };
    report.outcomes.push(outcome);
    report.write(out)
}

/// The workload's arguments: passes over the packets, packets, engine sweeps.
fn workload_args(passes: usize, packets: usize, sweeps: usize) -> Vec<String> {
    vec![
        "--passes".to_string(),
        passes.to_string(),
        "--packets".into(),
        packets.to_string(),
        "--sweeps".into(),
        sweeps.to_string(),
    ]
}

/// Builds the workload plain, then instrumented, trains it (one pass, one sweep), merges the
/// profile with `tool` and builds it again with the profile: the plain and the PGO binaries.
fn build_plain_and_pgo(
    out: &Path,
    tool: &Path,
    pick: &impl Fn((usize, usize)) -> usize,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let base = build("base", None)?;
    let profiles = out.join("pgo-profiles");
    let _ = std::fs::remove_dir_all(&profiles);
    std::fs::create_dir_all(&profiles)
        .with_context(|| format!("creating {}", profiles.display()))?;
    let gen_bin = build(
        "generate",
        Some(format!("-Cprofile-generate={}", profiles.display())),
    )?;
    // The training run: the same workload, one pass and one sweep (the measured runs make
    // several of each).
    run_workload(
        &gen_bin,
        &workload_args(1, pick(PACKETS), 1),
        Some(("LLVM_PROFILE_FILE", &profiles.join("core-%p-%m.profraw"))),
    )?;
    let merged = out.join("pgo.profdata");
    let mut cmd = Command::new(tool);
    cmd.arg("merge").arg("-o").arg(&merged).arg(&profiles);
    exec(&mut cmd)?;
    // The profile's path is new for every run, so cargo rebuilds with this run's profile.
    let pgo = build("use", Some(format!("-Cprofile-use={}", merged.display())))?;
    Ok((base, pgo))
}

fn measure(
    out: &Path,
    tool: &Path,
    pick: impl Fn((usize, usize)) -> usize,
    o_cpu: usize,
) -> anyhow::Result<Outcome> {
    let (base, pgo) = build_plain_and_pgo(out, tool, &pick)?;
    let mut a = workload_args(pick(PASSES), pick(PACKETS), pick(SWEEPS));
    // Pinned like every measured loop: the suite's CPU.
    a.extend(["--cpu".to_string(), o_cpu.to_string()]);
    let unit = Tsc {
        ticks_per_ns: 1.0,
        overhead_ticks: 0,
    };
    let (mut pk_base, mut pk_pgo) = (Recorder::new(unit), Recorder::new(unit));
    let (mut sw_base, mut sw_pgo) = (Recorder::new(unit), Recorder::new(unit));
    let (mut med_base, mut med_pgo, mut msw_base, mut msw_pgo) = (vec![], vec![], vec![], vec![]);
    let rounds = pick(ROUNDS);
    for round in 0..rounds {
        // The order alternates, so whatever favours the first (or second) run of a pair hits
        // both builds alike.
        let (b, p) = if round % 2 == 0 {
            eprintln!("    round {}/{rounds}: plain, then PGO", round + 1);
            let b = run_workload(&base, &a, None)?;
            (b, run_workload(&pgo, &a, None)?)
        } else {
            eprintln!("    round {}/{rounds}: PGO, then plain", round + 1);
            let p = run_workload(&pgo, &a, None)?;
            (run_workload(&base, &a, None)?, p)
        };
        if (b.orders, b.order_checksum) != (p.orders, p.order_checksum)
            || b.sweep_pnl_sum.to_bits() != p.sweep_pnl_sum.to_bits()
        {
            bail!(
                "the PGO build computes something else: plain {} orders (checksum {}), sweep PnL \
                 {}; PGO {} orders (checksum {}), sweep PnL {}",
                b.orders,
                b.order_checksum,
                b.sweep_pnl_sum,
                p.orders,
                p.order_checksum,
                p.sweep_pnl_sum
            );
        }
        for x in &b.per_packet_ns {
            pk_base.record_ns(*x);
            med_base.push(*x);
        }
        for x in &p.per_packet_ns {
            pk_pgo.record_ns(*x);
            med_pgo.push(*x);
        }
        for x in &b.sweep_ms {
            sw_base.record_ns(x * 1e6);
            msw_base.push(*x);
        }
        for x in &p.sweep_ms {
            sw_pgo.record_ns(x * 1e6);
            msw_pgo.push(*x);
        }
    }
    let (pb, pp) = (median(&mut med_base), median(&mut med_pgo));
    let (sb, sp) = (median(&mut msw_base), median(&mut msw_pgo));
    let mut oc = Outcome::new(
        "pgo",
        "Profile-guided optimisation of the trader core and the engine sweep",
        Level::Code,
    );
    oc.dists = vec![
        pk_base.finish("trader core per packet, plain (pass mean)"),
        pk_pgo.finish("trader core per packet, PGO (pass mean)"),
        sw_base.finish("engine fast sweep 80 combos x 150k bars, plain"),
        sw_pgo.finish("engine fast sweep 80 combos x 150k bars, PGO"),
    ];
    // The suite's one threshold: a ratio within 1.1 either way is no difference on this host.
    let verdict = |r: f64| {
        if r >= 1.1 {
            "PGO pays here"
        } else if r <= 0.91 {
            "PGO costs here"
        } else {
            "within 10 %: as in the study, PGO is no lever for this code"
        }
    };
    oc.comparisons = vec![
        Comparison {
            standing: None,
            what: "trader core per packet, plain vs PGO (median pass)".into(),
            ours: format!("{pb:.1} ns -> {pp:.1} ns"),
            our_ratio: Some(pb / pp),
            study: format!("{} s -> {} s (50 M orders)", STUDY.0, STUDY.1),
            study_ratio: Some(STUDY.0 / STUDY.1),
            verdict: verdict(pb / pp).into(),
        },
        Comparison {
            standing: None,
            what: "engine fast sweep, plain vs PGO (median)".into(),
            ours: format!("{sb:.1} ms -> {sp:.1} ms"),
            our_ratio: Some(sb / sp),
            study: format!("{} s -> {} s", STUDY.0, STUDY.1),
            study_ratio: Some(STUDY.0 / STUDY.1),
            verdict: verdict(sb / sp).into(),
        },
    ];
    oc.notes = vec![
        format!(
            "Three builds of trader-core's core-workload (target/pgo/{{base,generate,use}}); the \
             profile from one training run ({} packets, one sweep), merged with {}; then {rounds} \
             rounds of plain and PGO alternately (the order alternating too), pinned to the suite's CPU, each {} passes over {} packets and {} sweeps. \
             Both builds printed the same orders, order bytes and sweep PnL (checked every round).",
            pick(PACKETS),
            tool.display(),
            pick(PASSES),
            pick(PACKETS),
            pick(SWEEPS)
        ),
        "A pass's per-packet figure is its mean (a packet is ~100 ns, below what one clock read \
         per packet could time without being the figure): the distribution is over passes."
            .into(),
    ];
    oc.trader = "built without PGO (plain `--release`, profile.release has debug = 1 and no LTO); \
                 trader-core/src/lib.rs is the code profiled here"
        .into();
    Ok(oc)
}
