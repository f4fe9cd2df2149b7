//! `cargo xtask hotpath`: the study's hot-path experiments (the `hotpath` binary), the counts
//! beside their times (the binary's workloads under cachegrind, and llvm-mca on their loops:
//! this guest has no PMU) and PGO (built here: it needs three builds of the same code), into
//! one report.
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use anyhow::{Context as _, bail};
use hotpath::counts::{self, Cachegrind, Count, Ran, Workload};
use hotpath::report::Report;

use crate::{
    lab::session::new_results_dir,
    util::{cargo, exec, exec_until, shown, target_dir, which, workspace_root},
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
    /// Skip PGO (its builds of the workload, plain, instrumented, PGO, fat LTO and one codegen
    /// unit, take minutes on a fresh clone).
    #[arg(long, conflicts_with = "only")]
    pub(crate) no_pgo: bool,
    /// Skip the counts (instructions, simulated cache misses and mispredicts per operation
    /// from cachegrind, llvm-mca's cycles per loop iteration), which run each counted variant
    /// twice under valgrind after the suite.
    #[arg(long)]
    pub(crate) no_counts: bool,
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
            // Absolute: PGO's profile path goes to builds that run in other folders.
            std::fs::canonicalize(p).with_context(|| format!("resolving {}", p.display()))?
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
        if !o.no_counts && !stop.load(Ordering::Relaxed) {
            let plan = CountPlan {
                bin: bin.clone(),
                size: o.size.clone(),
                cpu: o.cpu,
            };
            run_counts(&out, &plan, &stop)?;
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
struct Settings(Vec<(String, String)>);

impl Settings {
    const FILES: [&'static str; 4] = [
        "/proc/sys/vm/nr_hugepages",
        "/sys/kernel/mm/transparent_hugepage/enabled",
        "/sys/kernel/mm/transparent_hugepage/defrag",
        // The cstates experiment's poll window (a KVM guest's haltpoll driver).
        "/sys/module/haltpoll/parameters/guest_halt_poll_ns",
    ];

    /// The fixed files, and every CPU's idle-state `disable` switches (the cstates experiment
    /// disables the halt state of the CPU it measures).
    fn files() -> Vec<String> {
        let mut files: Vec<String> = Self::FILES.iter().map(|f| f.to_string()).collect();
        let cpus = std::fs::read_dir("/sys/devices/system/cpu")
            .into_iter()
            .flatten();
        for cpu in cpus.flatten() {
            let name = cpu.file_name().to_string_lossy().into_owned();
            if name
                .strip_prefix("cpu")
                .is_none_or(|n| n.parse::<u32>().is_err())
            {
                continue;
            }
            let states = std::fs::read_dir(cpu.path().join("cpuidle"))
                .into_iter()
                .flatten();
            for state in states.flatten() {
                files.push(state.path().join("disable").to_string_lossy().into_owned());
            }
        }
        files
    }

    fn read() -> Settings {
        Settings(
            Self::files()
                .into_iter()
                .filter_map(|f| {
                    let v = selected(&std::fs::read_to_string(&f).ok()?);
                    Some((f, v))
                })
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

/// What the counts run: the release `hotpath` binary, the suite's size and measured CPU.
#[derive(Debug, Clone)]
struct CountPlan {
    bin: PathBuf,
    size: String,
    cpu: usize,
}

/// The cache cachegrind simulates: this machine's L1 and last level as sysfs gives them, as
/// cachegrind's `--I1/--D1/--LL` flags (its own detection gave a 256 MiB direct-mapped LL on
/// this guest); none when sysfs can't say or gives a geometry cachegrind can't model.
#[derive(Debug, Clone, Default)]
struct CacheModel {
    flags: Vec<String>,
    /// Where the geometry came from, in words.
    source: String,
}

impl CacheModel {
    fn read(cpu: usize) -> CacheModel {
        CacheModel::from_sysfs(Path::new(&format!(
            "/sys/devices/system/cpu/cpu{cpu}/cache"
        )))
    }

    /// From a sysfs cache folder (`index0/{level,type,size,ways_of_associativity,
    /// coherency_line_size}`, ...).
    fn from_sysfs(dir: &Path) -> CacheModel {
        let dir = dir.display();
        let mut caches = Vec::new();
        for i in 0..8 {
            let read = |f: &str| std::fs::read_to_string(format!("{dir}/index{i}/{f}")).ok();
            let num = |f: &str| read(f).and_then(|s| s.trim().parse::<u64>().ok());
            let size = read("size").and_then(|s| {
                let s = s.trim();
                s.strip_suffix('K')
                    .and_then(|k| k.parse::<u64>().ok())
                    .map(|k| k << 10)
            });
            if let (Some(level), Some(kind), Some(size), Some(ways), Some(line)) = (
                num("level"),
                read("type"),
                size,
                num("ways_of_associativity"),
                num("coherency_line_size"),
            ) {
                caches.push((level, kind.trim().to_string(), size, ways, line));
            }
        }
        let pick = |level: u64, kind: &str| {
            caches
                .iter()
                .find(|c| c.0 == level && c.1 == kind)
                .map(|c| (c.2, c.3, c.4))
        };
        let last = caches
            .iter()
            .filter(|c| c.1 != "Instruction")
            .max_by_key(|c| c.0);
        let (Some(i1), Some(d1), Some(ll)) = (
            pick(1, "Instruction"),
            pick(1, "Data"),
            last.map(|c| (c.2, c.3, c.4)),
        ) else {
            return CacheModel {
                flags: Vec::new(),
                source: format!("cachegrind's own detection ({dir} has no L1 and last level)"),
            };
        };
        // cachegrind needs a power-of-two number of sets.
        let fits = |(size, ways, line): (u64, u64, u64)| {
            ways > 0 && line > 0 && (size / (ways * line)).is_power_of_two()
        };
        if ![i1, d1, ll].into_iter().all(fits) {
            return CacheModel {
                flags: Vec::new(),
                source: "cachegrind's own detection (this machine's geometry has a set count \
                         that isn't a power of two, which cachegrind can't model)"
                    .to_string(),
            };
        }
        let flag = |name: &str, (size, ways, line): (u64, u64, u64)| {
            format!("--{name}={size},{ways},{line}")
        };
        CacheModel {
            flags: vec![flag("I1", i1), flag("D1", d1), flag("LL", ll)],
            source: format!(
                "this machine's L1 and L{} as sysfs gives them; cachegrind models two levels, so \
                 nothing between them",
                last.map_or(0, |c| c.0)
            ),
        }
    }
}

/// `llvm-mca` and `llvm-objdump` from Debian's llvm-22 (`cargo xtask setup` installs it), and
/// the host CPU as LLVM names it; or why not.
#[derive(Debug, Clone)]
struct McaTools {
    mca: PathBuf,
    objdump: PathBuf,
    cpu: String,
}

impl McaTools {
    fn find() -> Result<McaTools, String> {
        let tool = |name: &str| {
            [
                format!("/usr/bin/{name}-22"),
                format!("/usr/lib/llvm-22/bin/{name}"),
            ]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
            .or_else(|| which(name).then(|| PathBuf::from(name)))
        };
        let (Some(mca), Some(objdump)) = (tool("llvm-mca"), tool("llvm-objdump")) else {
            return Err(
                "llvm-mca-22 or llvm-objdump-22 is not installed (Debian's llvm-22; \
                        `cargo xtask setup` installs it)"
                    .to_string(),
            );
        };
        let version = Command::new(&mca)
            .arg("--version")
            .output()
            .map_err(|e| format!("running {}: {e}", mca.display()))?;
        let cpu = String::from_utf8_lossy(&version.stdout)
            .lines()
            .find_map(|l| {
                l.trim()
                    .strip_prefix("Host CPU:")
                    .map(|c| c.trim().to_string())
            })
            .filter(|c| !c.is_empty() && c != "generic")
            .ok_or_else(|| format!("{} --version names no host CPU", mca.display()))?;
        Ok(McaTools { mca, objdump, cpu })
    }

    fn disassemble(&self, bin: &Path, symbol: &str) -> anyhow::Result<String> {
        let mut cmd = Command::new(&self.objdump);
        cmd.args(["-d", "--no-show-raw-insn"])
            .arg(format!("--disassemble-symbols={symbol}"))
            .arg(bin);
        let out = cmd
            .output()
            .with_context(|| format!("running `{}`", shown(&cmd)))?;
        if !out.status.success() {
            bail!(
                "`{}` failed: {}",
                shown(&cmd),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// llvm-mca's reading of `ran`'s kernel loop: cycles per element (scaled by `ir`, the
    /// instructions per element) and what it read; or why there is no figure. The loop's
    /// input is kept as `<file>.s`.
    fn estimate(
        &self,
        bin: &Path,
        symbols: &[String],
        ran: &Ran,
        ir: f64,
        file: &Path,
    ) -> Result<(f64, String), String> {
        let found = ran.kernels.iter().find_map(|k| {
            let prefix = counts::mangled_prefix(k);
            symbols
                .iter()
                .find(|s| s.starts_with(&prefix))
                .map(|s| (k, s))
        });
        let Some((path, mut symbol)) = found.map(|(k, s)| (k.clone(), s.clone())) else {
            return Err(format!(
                "{} not found in the binary",
                ran.kernels.join(" or ")
            ));
        };
        let mut disasm = self
            .disassemble(bin, &symbol)
            .map_err(|e| format!("{e:#}"))?;
        let mut what = path.clone();
        if let Some(via) = &ran.via {
            let want = counts::mangled_segments(via);
            symbol = disasm
                .lines()
                .filter(|l| l.contains("call"))
                .find_map(|l| {
                    let s = l.split('<').nth(1)?.split('>').next()?;
                    s.contains(&want).then(|| s.to_string())
                })
                .ok_or_else(|| format!("{path} calls no {via}"))?;
            disasm = self
                .disassemble(bin, &symbol)
                .map_err(|e| format!("{e:#}"))?;
            what = format!("{via}, called by {path}");
        }
        let l = counts::straight_loop(&disasm).map_err(|e| format!("{what}: {e}"))?;
        let input = counts::mca_input(&l);
        let _ = std::fs::write(file, &input);
        let out = Command::new(&self.mca)
            .arg(format!("-mcpu={}", self.cpu))
            .arg(file)
            .output()
            .map_err(|e| format!("running {}: {e}", self.mca.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let m = counts::Mca::parse(&text).ok_or_else(|| {
            format!(
                "llvm-mca read no summary from {}: {}",
                file.display(),
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
            )
        })?;
        let cycles = m
            .per_element(ir)
            .ok_or_else(|| "no instructions per element to scale by".to_string())?;
        Ok((
            cycles,
            format!(
                "{what}: its {}-instruction loop, {:.2} cycles per iteration on {}",
                l.body.len(),
                m.total_cycles / m.iterations,
                self.cpu
            ),
        ))
    }
}

/// The binary's symbols (mangled), for finding the kernels.
fn symbols(bin: &Path) -> Vec<String> {
    Command::new("nm")
        .arg(bin)
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `w` `n` times under cachegrind: what it printed and cachegrind's totals (its file
/// kept in `dir`).
fn cachegrind(
    plan: &CountPlan,
    model: &CacheModel,
    w: &Workload,
    n: u64,
    dir: &Path,
) -> anyhow::Result<(Ran, Cachegrind)> {
    let file = dir.join(format!("{}-{}-{n}.cachegrind", w.experiment, w.variant));
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--tool=cachegrind",
        "--cache-sim=yes",
        "--branch-sim=yes",
        "-q",
    ])
    .args(&model.flags)
    .arg(format!("--cachegrind-out-file={}", file.display()))
    .arg(&plan.bin)
    .args([
        "count",
        "--experiment",
        w.experiment,
        "--variant",
        w.variant,
    ])
    .args(["--ops", &n.to_string(), "--size", &plan.size])
    .args(["--cpu", &plan.cpu.to_string()]);
    let out = cmd
        .output()
        .with_context(|| format!("running `{}`", shown(&cmd)))?;
    if !out.status.success() {
        bail!(
            "`{}` failed ({}): {}",
            shown(&cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ran: Ran = serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .with_context(|| format!("parsing what `{}` printed: {stdout}", shown(&cmd)))?;
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    Ok((ran, Cachegrind::parse(&text)?))
}

/// One workload counted: N and 2N operations under cachegrind, subtracted; llvm-mca on its
/// loop. The N run's result is returned for the group check.
fn count_one(
    plan: &CountPlan,
    model: &CacheModel,
    mca: &Result<(McaTools, Vec<String>), String>,
    w: &Workload,
    dir: &Path,
) -> anyhow::Result<(Count, Ran, Cachegrind)> {
    let n = if plan.size == "small" {
        w.ops.0
    } else {
        w.ops.1
    };
    let (one, cg1) = cachegrind(plan, model, w, n, dir)?;
    let (two, cg2) = cachegrind(plan, model, w, 2 * n, dir)?;
    if (one.label.as_str(), one.elements) != (two.label.as_str(), two.elements) {
        bail!(
            "{}/{}: the N and 2N runs counted different work: {one:?} vs {two:?}",
            w.experiment,
            w.variant
        );
    }
    let per = counts::per_element(cg1.figures(), cg2.figures(), n, one.elements);
    let mut c = Count::new(&one, per);
    let file = dir.join(format!("{}-{}.s", w.experiment, w.variant));
    match mca
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|(t, syms)| t.estimate(&plan.bin, syms, &one, c.ir, &file))
    {
        Ok((cycles, what)) => {
            c.mca_cycles = Some(cycles);
            c.mca = what;
        }
        Err(why) => c.mca = why,
    }
    eprintln!(
        "    {}/{}: {} instructions, {} L1 and {} LL misses, {} mispredicts per {}; llvm-mca {}",
        w.experiment,
        w.variant,
        counts::figure(c.ir),
        counts::figure(c.d1_misses),
        counts::figure(c.ll_misses),
        counts::figure(c.mispredicts),
        c.unit,
        c.mca_cycles
            .map_or_else(|| "–".to_string(), |v| format!("{v:.2} cycles")),
    );
    Ok((c, one, cg1))
}

/// The counts note for the report: what cachegrind simulated (from its own `desc:` lines) and
/// where the geometry came from; the last level's size, for the rows that ask whether a set
/// fits.
fn model_note(
    cg: &Cachegrind,
    model: &CacheModel,
    mca: &Result<(McaTools, Vec<String>), String>,
) -> (String, Option<u64>) {
    let ll = cg
        .desc
        .iter()
        .find_map(|d| d.strip_prefix("LL cache: "))
        .and_then(|d| d.split_whitespace().next()?.parse::<u64>().ok());
    let mca = match mca {
        Ok((t, _)) => format!(
            "llvm-mca's figures are its model of {} (this host, as LLVM names it), every load an \
             L1 hit, scaled from cycles per loop iteration to per element by cachegrind's \
             instructions per element",
            t.cpu
        ),
        Err(why) => format!("no llvm-mca figures: {why}"),
    };
    (
        format!(
            "Counts: cachegrind simulated {}, from {}. Its caches are LRU with no prefetcher, so \
             these are simulated counts of a model cache, not this CPU's. Per element from runs \
             of N and 2N operations, subtracted (the files are in counts/). {mca}.",
            cg.desc.join("; "),
            model.source
        ),
        ll,
    )
}

/// The counts after the suite: every counted workload of the experiments in the report,
/// merged into it (as PGO's outcome is). Without valgrind it says so and skips; without
/// llvm-mca the counts go in without its figures.
fn run_counts(out: &Path, plan: &CountPlan, stop: &AtomicBool) -> anyhow::Result<()> {
    if !which("valgrind") {
        eprintln!("[counts] skipped: valgrind is not installed; the report has times only");
        return Ok(());
    }
    let mut report = Report::read(out)?;
    let dir = out.join("counts");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let model = CacheModel::read(plan.cpu);
    let mca = McaTools::find().map(|t| (t, symbols(&plan.bin)));
    if let Err(why) = &mca {
        eprintln!("[counts] llvm-mca skipped: {why}");
    }
    let started = std::time::Instant::now();
    let mut experiments: Vec<&str> = counts::WORKLOADS.iter().map(|w| w.experiment).collect();
    experiments.dedup();
    experiments.retain(|e| report.outcomes.iter().any(|o| o.id == *e));
    eprintln!(
        "[counts] {}: each variant under cachegrind at N and 2N operations",
        experiments.join(", ")
    );
    for e in experiments {
        let mut got = Vec::new();
        let mut groups: Vec<(&str, &str, String)> = Vec::new();
        let mut last = None;
        for w in counts::WORKLOADS.iter().filter(|w| w.experiment == e) {
            if stop.load(Ordering::Relaxed) {
                return Ok(());
            }
            let (c, ran, cg) = count_one(plan, &model, &mca, w, &dir)?;
            check_group(&mut groups, w, &ran.result)?;
            got.push(c);
            last = Some(cg);
        }
        if let Some(cg) = last {
            let (note, ll) = model_note(&cg, &model, &mca);
            counts::merge(&mut report, e, got, &note, ll);
        }
    }
    report.write(out)?;
    eprintln!("[counts] done in {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// Variants of one group compute the same thing: at the same op count, the same result.
fn check_group<'a>(
    seen: &mut Vec<(&'a str, &'a str, String)>,
    w: &'a Workload,
    result: &str,
) -> anyhow::Result<()> {
    if w.group.is_empty() {
        return Ok(());
    }
    match seen.iter().find(|(g, _, _)| *g == w.group) {
        Some((_, v, r)) if r != result => bail!(
            "{}: {} computed {result} under cachegrind, {v} computed {r}",
            w.experiment,
            w.variant
        ),
        Some(_) => Ok(()),
        None => {
            seen.push((w.group, w.variant, result.to_string()));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sysfs(caches: &[(u32, &str, &str, u32)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "t2t-cache-model-{}-{}",
            std::process::id(),
            caches.len()
        ));
        for (i, (level, kind, size, ways)) in caches.iter().enumerate() {
            let d = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in [
                ("level", level.to_string()),
                ("type", kind.to_string()),
                ("size", size.to_string()),
                ("ways_of_associativity", ways.to_string()),
                ("coherency_line_size", "64".to_string()),
            ] {
                std::fs::write(d.join(f), format!("{v}\n")).unwrap();
            }
        }
        dir
    }

    #[test]
    fn the_model_cache_is_this_machines_l1_and_last_level() {
        let dir = sysfs(&[
            (1, "Data", "32K", 8),
            (1, "Instruction", "32K", 8),
            (2, "Unified", "1024K", 8),
            (3, "Unified", "32768K", 16),
        ]);
        let m = CacheModel::from_sysfs(&dir);
        assert_eq!(
            m.flags,
            ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=33554432,16,64"]
        );
        assert!(m.source.contains("L1 and L3"), "{}", m.source);
        // A last level of 12 ways: 40,960 sets, which cachegrind can't model.
        let dir2 = sysfs(&[
            (1, "Data", "32K", 8),
            (1, "Instruction", "32K", 8),
            (2, "Unified", "1024K", 8),
            (3, "Unified", "30720K", 12),
            (3, "Unified", "30720K", 12),
        ]);
        let m = CacheModel::from_sysfs(&dir2);
        assert!(m.flags.is_empty());
        assert!(m.source.contains("power of two"), "{}", m.source);
        assert!(
            CacheModel::from_sysfs(Path::new("/nonexistent"))
                .source
                .contains("own detection")
        );
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_dir_all(dir2);
    }

    #[test]
    fn a_group_must_compute_the_same() {
        let w = |variant| Workload {
            experiment: "dispatch",
            variant,
            group: "one",
            ops: (1, 1),
        };
        let (a, b) = (w("generic"), w("dyn"));
        let mut seen = Vec::new();
        check_group(&mut seen, &a, "0x1").unwrap();
        check_group(&mut seen, &b, "0x1").unwrap();
        let e = check_group(&mut seen, &b, "0x2").unwrap_err().to_string();
        assert!(
            e.contains("dyn computed 0x2") && e.contains("generic computed 0x1"),
            "{e}"
        );
    }
}
