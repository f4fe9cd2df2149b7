//! `hotpath`: the design-choices study's hot-path experiments, and the machine's latency
//! readiness. `cargo xtask hotpath` builds and runs it; it can also run on its own.
#![forbid(unsafe_code)]

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {
    bumpalo as _, crossbeam_channel as _, crossbeam_queue as _, crossbeam_utils as _,
    hdrhistogram as _, libc as _, mimalloc as _, pulp as _, rtrb as _, serde as _, slab as _,
    tikv_jemallocator as _, trader_core as _,
};
#[cfg(test)]
use {netns as _, nix as _, tempfile as _};

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use hotpath::harness::Tsc;
use hotpath::report::Report;
use hotpath::{Ctx, Size, suite};

#[derive(Debug, Parser)]
#[command(
    name = "hotpath",
    version,
    about = "The hot path beyond the network: system- and code-level design choices, measured",
    long_about = "Runs the design-choices study's hot-path experiments on this machine and writes \
                  report.md (our figure beside the study's, both ratios, a verdict), report.json, \
                  one .hgrm per latency distribution and SVG plots.\n\nSome experiments need \
                  root (SCHED_FIFO, HugeTLB reservations); without it they say what they \
                  skipped."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run experiments and write the report.
    Run(RunOptions),
    /// Run one variant's operation N times, untimed, and print what it computed (one JSON
    /// line): what `cargo xtask hotpath` runs under cachegrind to count instructions and
    /// misses where the PMU is missing.
    Count(CountOptions),
    /// List the experiments.
    List,
    /// Is this machine set up for low latency? Each finding: what was found, why it matters,
    /// what to set.
    Doctor {
        /// The latency-critical CPU (the trader's).
        #[arg(long, default_value_t = 1)]
        cpu: usize,
        /// JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run a command with CPU `--cpu` isolated at runtime (other tasks, unbound workqueues and
    /// IRQs moved off it), and restore everything exactly afterwards, also after Ctrl-C. A run
    /// killed with SIGKILL leaves a state file that the next run (or `--restore`) puts back.
    Isolate {
        /// The CPU to isolate (the command itself may run anywhere; pin it there yourself).
        #[arg(long, default_value_t = 1)]
        cpu: usize,
        /// Only restore what an earlier, killed run left.
        #[arg(long, conflicts_with = "command")]
        restore: bool,
        /// The command to run while isolated.
        #[arg(last = true, required_unless_present = "restore")]
        command: Vec<String>,
    },
}

#[derive(Debug, clap::Args)]
struct RunOptions {
    /// Comma-separated experiment ids (see `hotpath list`); all when absent.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// small: seconds per experiment, to keep them working; default: the measured run.
    #[arg(long, value_enum, default_value = "default")]
    size: Size,
    /// Where the report goes (created).
    #[arg(long)]
    out: PathBuf,
    /// The CPU measured threads are pinned to.
    #[arg(long, default_value_t = 1)]
    cpu: usize,
    /// The other CPU (second thread, load generator).
    #[arg(long, default_value_t = 0)]
    other_cpu: usize,
    /// Lines to embed as the machine's conditions (doctor's summary, from xtask).
    #[arg(long)]
    doctor_file: Option<PathBuf>,
    /// The machine's name for the report.
    #[arg(long, default_value = "")]
    machine: String,
}

#[derive(Debug, clap::Args)]
struct CountOptions {
    /// The experiment (dispatch, typetest, memory, hotcold, aos-soa, simd).
    #[arg(long)]
    experiment: String,
    /// The variant's id (`hotpath count --experiment dispatch --variant nope` lists them).
    #[arg(long)]
    variant: String,
    /// Operations (calls, messages, steps; passes over a book).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    ops: u64,
    /// small: the small working sets (CI's); default: the experiments' large ones.
    #[arg(long, value_enum, default_value = "default")]
    size: Size,
    /// The CPU to pin to.
    #[arg(long, default_value_t = 1)]
    cpu: usize,
}

fn main() -> std::process::ExitCode {
    paths::cli::run_main(run)
}

fn run() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::List => {
            for s in suite::SUITE {
                println!("{:<14} {:?}  {}", s.id, s.level, s.about);
            }
            Ok(())
        }
        Command::Run(o) => run_suite(o),
        Command::Count(o) => {
            affinity::pin_current_thread(o.cpu)
                .with_context(|| format!("pinning to CPU {}", o.cpu))?;
            let ran = hotpath::counts::work::run(&o.experiment, &o.variant, o.ops, o.size)?;
            println!("{}", serde_json::to_string(&ran)?);
            Ok(())
        }
        Command::Doctor { cpu, json } => {
            let f = tuning::doctor::check(&tuning::doctor::Machine::live(), cpu);
            if json {
                println!("{}", serde_json::to_string_pretty(&f)?);
            } else {
                print!("{}", tuning::doctor::render(&f));
            }
            Ok(())
        }
        Command::Isolate {
            cpu,
            restore,
            command,
        } => isolate(cpu, restore, &command),
    }
}

fn run_suite(o: RunOptions) -> anyhow::Result<()> {
    let specs = suite::select(&o.only)?;
    if o.cpu == o.other_cpu {
        anyhow::bail!("--cpu and --other-cpu must differ (both are {})", o.cpu);
    }
    // Pinned first, so the calibration runs where the measurements will.
    affinity::pin_current_thread(o.cpu).with_context(|| format!("pinning to CPU {}", o.cpu))?;
    let tsc = Tsc::calibrate(Duration::from_millis(50));
    let ctx = Ctx {
        size: o.size,
        tsc,
        cpu: o.cpu,
        other_cpu: o.other_cpu,
        root: hotpath::is_root(),
    };
    ctx.pin()?;
    let mut report = new_report(&o, tsc)?;
    // Ctrl-C (which reaches this process too) lets the running experiment finish, so every
    // setting it changed (huge pages, THP) is put back by its guard, then stops the suite.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&stop))
            .context("installing the signal handler")?;
    }
    suite::run_each(&specs, &ctx, &stop, &mut report)?;
    report.write(&o.out)?;
    eprintln!("report: {}", o.out.join("report.md").display());
    if stop.load(std::sync::atomic::Ordering::Relaxed) {
        anyhow::bail!(
            "interrupted; the experiments that ran are in {}",
            o.out.display()
        );
    }
    if !report.skipped.is_empty() {
        anyhow::bail!(
            "{} experiment(s) failed: {}",
            report.skipped.len(),
            report
                .skipped
                .iter()
                .map(|(id, _)| id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(())
}

fn isolate(cpu: usize, restore: bool, command: &[String]) -> anyhow::Result<()> {
    use tuning::isolate::{Isolation, Paths, restore_leftover};
    if !hotpath::is_root() {
        anyhow::bail!("isolating a CPU needs root (cpusets, /proc/irq, the workqueue mask)");
    }
    if restore {
        match restore_leftover(&Paths::live())? {
            Some(note) => eprintln!("{note}"),
            None => eprintln!("nothing to restore"),
        }
        return Ok(());
    }
    // Ctrl-C reaches the command (same process group); this process stays to restore.
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, std::sync::Arc::default())
            .context("installing the signal handler")?;
    }
    let iso = Isolation::apply(Paths::live(), cpu, &[std::process::id() as i32])?;
    eprintln!("{}", iso.applied.summary(cpu));
    for n in &iso.applied.notes {
        eprintln!("note: {n}");
    }
    let status = std::process::Command::new(&command[0])
        .args(&command[1..])
        .status()
        .with_context(|| format!("running {}", command[0]));
    iso.restore()?;
    eprintln!("restored");
    let status = status?;
    if !status.success() {
        anyhow::bail!("{} exited with {status}", command[0]);
    }
    Ok(())
}

/// The time now as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc_now() -> String {
    results::utc::now_iso()
}

/// The report's head: the machine, the TSC, the CPUs and `doctor`'s findings (from
/// `--doctor-file`), no outcomes yet.
fn new_report(o: &RunOptions, tsc: Tsc) -> anyhow::Result<Report> {
    let doctor = match &o.doctor_file {
        Some(p) => std::fs::read_to_string(p)
            .with_context(|| format!("reading {}", p.display()))?
            .lines()
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    };
    Ok(Report {
        started_utc: utc_now(),
        machine: o.machine.clone(),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string(),
        size: format!("{:?}", o.size).to_lowercase(),
        tsc,
        tsc_step_ns: tsc.step_ns(),
        cpus: (o.cpu, o.other_cpu),
        doctor,
        outcomes: Vec::new(),
        skipped: Vec::new(),
    })
}
