//! `cargo xtask hotpath`: the study's hot-path experiments (the `hotpath` binary) and PGO
//! (built here: it needs three builds of the same code), into one report.
use std::path::PathBuf;
use std::sync::{Arc, atomic::AtomicBool};

use anyhow::Context as _;

use crate::{
    session::new_results_dir,
    util::{cargo, exec, exec_until, target_dir, workspace_root},
};

/// What to run.
#[derive(Debug, clap::Args)]
pub(crate) struct Options {
    /// Comma-separated experiment ids (`pgo` and those `cargo run --release -p hotpath -- list`
    /// lists); all when absent.
    #[arg(long, value_delimiter = ',')]
    pub(crate) only: Vec<String>,
    /// small: seconds per experiment (CI keeps them working with it); default: the measured run.
    #[arg(long, default_value = "default", value_parser = ["small", "default"])]
    pub(crate) size: String,
    /// The CPU measured threads are pinned to.
    #[arg(long, default_value_t = 1)]
    pub(crate) cpu: usize,
    /// The other CPU (second thread, load generator).
    #[arg(long, default_value_t = 0)]
    pub(crate) other_cpu: usize,
    /// Results folder (default: target/hotpath/<UTC time>/).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
    /// Don't install missing packages (cyclictest, llvm-profdata) first.
    #[arg(long)]
    pub(crate) no_setup: bool,
    /// Skip PGO (its three builds of the workload take minutes on a fresh clone).
    #[arg(long, conflicts_with = "only")]
    pub(crate) no_pgo: bool,
}

pub(crate) fn run(o: Options) -> anyhow::Result<()> {
    if !o.no_setup {
        crate::setup::ensure()?;
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing the Ctrl-C handler")?;
    }
    let pgo = !o.no_pgo && (o.only.is_empty() || o.only.iter().any(|i| i == "pgo"));
    let others: Vec<String> = o.only.iter().filter(|i| *i != "pgo").cloned().collect();
    let out = match &o.out {
        Some(p) => {
            std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
            p.clone()
        }
        None => new_results_dir(&workspace_root().join("target").join("hotpath"))?,
    };
    exec(cargo().args(["build", "--release", "-p", "hotpath", "--bin", "hotpath"]))?;
    let doctor = out.join("doctor.txt");
    std::fs::write(&doctor, crate::doctor::summary(o.cpu).join("\n"))
        .with_context(|| format!("writing {}", doctor.display()))?;
    let bin = target_dir().join("release").join("hotpath");
    let mut cmd = std::process::Command::new(&bin);
    cmd.args(["run", "--size", &o.size, "--out"])
        .arg(&out)
        .args([
            "--cpu",
            &o.cpu.to_string(),
            "--other-cpu",
            &o.other_cpu.to_string(),
        ])
        .arg("--doctor-file")
        .arg(&doctor)
        .args(["--machine", &crate::doctor::machine()]);
    if !others.is_empty() {
        cmd.arg("--only").arg(others.join(","));
    }
    let only_pgo = !o.only.is_empty() && others.is_empty();
    if !only_pgo {
        // The suite restores what it changes itself; this puts it back even if it was killed.
        let settings = Settings::read();
        let status = exec_until(&mut cmd, &stop);
        settings.restore();
        let status = status?;
        if !status.success() {
            anyhow::bail!(
                "the hotpath suite failed ({status}); what it measured is in {}",
                out.display()
            );
        }
    }
    if pgo && !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let plan = crate::pgo::Plan {
            size: o.size.clone(),
            cpu: o.cpu,
            other_cpu: o.other_cpu,
        };
        crate::pgo::run(&out, &plan, only_pgo)?;
    }
    // The summary tables on the terminal; each experiment's distributions stay in the file.
    let md = std::fs::read_to_string(out.join("report.md"))
        .with_context(|| format!("reading {}", out.join("report.md").display()))?;
    print!("{}", md.split("## Each experiment").next().unwrap_or(&md));
    println!("report: {}", out.join("report.md").display());
    Ok(())
}

/// The machine settings the suite changes (and restores itself): read before it runs, so they
/// go back even if it was killed mid-experiment.
#[derive(Debug)]
struct Settings(Vec<(&'static str, String)>);

impl Settings {
    const FILES: [&'static str; 3] = [
        "/proc/sys/vm/nr_hugepages",
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/sys/kernel/mm/transparent_hugepage/defrag",
    ];

    fn read() -> Settings {
        Settings(
            Self::FILES
                .iter()
                .filter_map(|f| Some((*f, selected(&std::fs::read_to_string(f).ok()?))))
                .collect(),
        )
    }

    fn restore(&self) {
        for (file, value) in &self.0 {
            let now = std::fs::read_to_string(file).map(|s| selected(&s));
            if now.as_deref().is_ok_and(|n| n != value) {
                match std::fs::write(file, value) {
                    Ok(()) => eprintln!("put {file} back to {value} (the suite did not)"),
                    Err(e) => eprintln!("warning: could not put {file} back to {value}: {e}"),
                }
            }
        }
    }
}

/// A setting's value as written back: the bracketed choice of a multiple-choice file
/// (`always [madvise] never`), else the trimmed text.
fn selected(text: &str) -> String {
    tuning::doctor::bracketed(text)
        .unwrap_or(text.trim())
        .trim()
        .to_string()
}
