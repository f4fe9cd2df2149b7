//! `cargo xtask book FILE|market:...`: a raw ITCH 5.0 file (or `.gz`, or a day the generator
//! makes first) through the lab's order book (`book-replay`), and itch-book (PyPI, C++23 core)
//! beside it on the same file in the same run, alternating, pinned to the same CPU: ns/message
//! of each, their ratio, and every book's final best bid and offer checked between the two.
//! Results in target/book/<UTC time>/ (report.md, book-N.json, itch-book-N.json).
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use anyhow::{Context as _, bail};
use paths::Source;
use serde_json::Value;

use crate::util::{exec, shown, target_dir, which, workspace_root};

/// The itch-book release run beside the lab's book (pinned: its figures are the anchor).
const ITCH_BOOK: &str = "itch-book==0.2.1";

/// Options of `cargo xtask book`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Options {
    /// A raw ITCH 5.0 file (2-byte length before each message, as NASDAQ's day files), its
    /// .gz, or a market:SEED[:BARS]... source, generated first into the results folder.
    pub(crate) input: String,
    /// Only these symbols in the summary (comma-separated); with --prints-out, whose prints
    /// to write.
    #[arg(long, value_delimiter = ',')]
    pub(crate) symbols: Vec<String>,
    /// Also write the first round's summary as JSON here.
    #[arg(long)]
    pub(crate) json_out: Option<PathBuf>,
    /// One CSV of prints per --symbols symbol (`price,shares`) into this folder.
    #[arg(long, requires = "symbols")]
    pub(crate) prints_out: Option<PathBuf>,
    /// Rounds, alternating the lab's book and itch-book (each round's figures are reported;
    /// the ratio is of the two medians).
    #[arg(long, default_value_t = 3)]
    pub(crate) rounds: usize,
    /// The CPU both run on.
    #[arg(long, default_value_t = 1)]
    pub(crate) cpu: usize,
    /// Don't run itch-book (no Python venv is made).
    #[arg(long)]
    pub(crate) no_itch_book: bool,
    /// Install nothing: use the itch-book venv already in target/ (or skip it if there is none).
    #[arg(long)]
    pub(crate) no_setup: bool,
    /// Results folder (default: target/book/<UTC time>).
    #[arg(long)]
    pub(crate) out: Option<PathBuf>,
}

/// Runs both books and writes the report.
pub(crate) fn run(opts: Options) -> anyhow::Result<()> {
    let Options {
        input,
        symbols,
        json_out,
        prints_out,
        rounds,
        cpu,
        no_itch_book,
        no_setup,
        out,
    } = opts;
    if rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    let root = workspace_root();
    let out = out.unwrap_or_else(|| {
        root.join("target/book")
            .join(results::utc::now_for_file_names())
    });
    std::fs::create_dir_all(&out).with_context(|| format!("failed to create {}", out.display()))?;
    crate::market::build()?;
    let bin = target_dir().join("release");
    let file = match input.parse::<Source>() {
        Ok(source @ Source::Market(_)) => {
            let file = out.join("market.itch");
            exec(
                Command::new(bin.join("market-gen"))
                    .arg("--source")
                    .arg(source.to_string())
                    .arg("--out")
                    .arg(&file)
                    .arg("--json-out")
                    .arg(out.join("market.json")),
            )?;
            file
        }
        _ => {
            let p = PathBuf::from(&input);
            if !p.is_file() {
                bail!(
                    "{input}: no such file (give a raw ITCH 5.0 file, its .gz, or market:SEED[:BARS])"
                );
            }
            p
        }
    };
    let python = if no_itch_book {
        None
    } else {
        itch_book_python(no_setup)?
    };
    let pin = |cmd: Command| -> Command {
        if which("taskset") {
            let mut t = Command::new("taskset");
            t.arg("-c")
                .arg(cpu.to_string())
                .arg(cmd.get_program())
                .args(cmd.get_args());
            t
        } else {
            cmd
        }
    };

    let mut ours: Vec<Value> = Vec::new();
    let mut theirs: Vec<Value> = Vec::new();
    for round in 1..=rounds {
        // Each book goes first in every other round, so neither gets the warmer machine.
        let itch_first = round % 2 == 0;
        for turn in 0..2 {
            if (turn == 0) != itch_first {
                eprintln!("round {round} of {rounds}: the lab's book");
                let json = out.join(format!("book-{round}.json"));
                let mut cmd = Command::new(bin.join("book-replay"));
                cmd.arg(&file).arg("--json-out").arg(&json).arg("--quiet");
                if !symbols.is_empty() {
                    cmd.arg("--symbols").arg(symbols.join(","));
                }
                if round == 1 {
                    if let Some(p) = &prints_out {
                        cmd.arg("--prints-out").arg(p);
                    }
                } else {
                    // The per-message pass once is enough; later rounds time the whole run only.
                    cmd.arg("--no-per-message");
                }
                exec(&mut pin(cmd))?;
                ours.push(read_json(&json)?);
            } else if let Some(py) = &python {
                eprintln!("round {round} of {rounds}: itch-book");
                let mut cmd = Command::new(py);
                cmd.arg(root.join("crates/market-tools/scripts/itch_book_run.py"))
                    .arg(&file);
                if round > 1 {
                    cmd.arg("--no-bbo");
                }
                let j = out.join(format!("itch-book-{round}.json"));
                run_to_file(&mut pin(cmd), &j)?;
                theirs.push(read_json(&j)?);
            }
        }
    }
    if let Some(j) = json_out {
        std::fs::copy(out.join("book-1.json"), &j)
            .with_context(|| format!("failed to write {}", j.display()))?;
    }
    let report = render(&file, cpu, &ours, &theirs);
    std::fs::write(out.join("report.md"), &report)?;
    print!("{report}");
    eprintln!("results in {}", out.display());
    Ok(())
}

fn read_json(p: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(p).with_context(|| format!("failed to read {}", p.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", p.display()))
}

fn run_to_file(cmd: &mut Command, path: &Path) -> anyhow::Result<()> {
    eprintln!("+ {} > {}", shown(cmd), path.display());
    let file = std::fs::File::create(path)?;
    let status = cmd
        .stdout(Stdio::from(file))
        .status()
        .with_context(|| format!("failed to run `{}`", shown(cmd)))?;
    crate::util::succeeded(cmd, status)
}

/// The Python of a venv under target/ with itch-book in it, made (from PyPI) unless
/// `no_setup`; `None`, said why, where it can't be had.
fn itch_book_python(no_setup: bool) -> anyhow::Result<Option<PathBuf>> {
    let venv = target_dir().join("itch-book-venv");
    let py = venv.join("bin/python");
    let has = |py: &Path| {
        Command::new(py)
            .args(["-c", "import itch_book._core"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if py.is_file() && has(&py) {
        return Ok(Some(py));
    }
    if no_setup {
        eprintln!(
            "note: no itch-book venv at {} (--no-setup): itch-book is not run",
            venv.display()
        );
        return Ok(None);
    }
    if !which("python3") {
        eprintln!("note: no python3: itch-book is not run");
        return Ok(None);
    }
    eprintln!(
        "installing {ITCH_BOOK} from PyPI into {} (once)",
        venv.display()
    );
    exec(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    exec(Command::new(venv.join("bin/pip")).args(["install", "--quiet", ITCH_BOOK]))?;
    if !has(&py) {
        bail!(
            "{ITCH_BOOK} installed into {} but `import itch_book._core` fails",
            venv.display()
        );
    }
    Ok(Some(py))
}

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_f64()
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    Some(xs[xs.len() / 2])
}

/// Every book's final best bid and offer, lab against itch-book: (agree, differ, first
/// differences). itch-book writes 0 for an empty side.
fn compare_bbo(ours: &Value, theirs: &Value) -> Option<(usize, usize, Vec<String>)> {
    let bbo = theirs.get("bbo")?.as_object()?;
    let symbols = ours.get("symbols")?.as_object()?;
    let by_locate: BTreeMap<u64, (&String, &Value)> = symbols
        .iter()
        .filter_map(|(name, s)| Some((s.get("locate")?.as_u64()?, (name, s))))
        .collect();
    let (mut agree, mut differ, mut first) = (0, 0, Vec::new());
    for (locate, (name, s)) in &by_locate {
        let side = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
        let ours = (side(s.get("bid")), side(s.get("ask")));
        let theirs = bbo
            .get(&locate.to_string())
            .map_or((0, 0), |t| (side(t.get("bid")), side(t.get("ask"))));
        if ours == theirs {
            agree += 1;
        } else {
            differ += 1;
            if first.len() < 5 {
                first.push(format!(
                    "{name} (locate {locate}): lab {ours:?}, itch-book {theirs:?}"
                ));
            }
        }
    }
    Some((agree, differ, first))
}

fn render(file: &Path, cpu: usize, ours: &[Value], theirs: &[Value]) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let first = &ours[0];
    let messages = num(first, &["messages"]).unwrap_or(0.0);
    let m = results::Machine::read();
    let machine = format!("{}, {} CPUs, kernel {}", m.cpu, m.cores, m.kernel);
    let _ = writeln!(o, "# The order book on {}\n", file.display());
    let _ = writeln!(
        o,
        "{messages:.0} messages; both books pinned to cpu{cpu}, alternating (the lab's book first \
         in odd rounds, itch-book in even ones), input in memory for both (the lab's book reads 4 MiB chunks outside its timing); {machine}.\n"
    );
    let _ = writeln!(
        o,
        "| round | lab book ns/msg | lab M msg/s | itch-book ns/msg | itch-book M msg/s |"
    );
    let _ = writeln!(o, "|---:|---:|---:|---:|---:|");
    let f = |x: Option<f64>, d: usize| x.map_or("–".into(), |v| format!("{v:.d$}"));
    for (i, a) in ours.iter().enumerate() {
        let b = theirs.get(i);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            i + 1,
            f(num(a, &["ns_per_message", "mean"]), 1),
            f(num(a, &["msgs_per_sec"]).map(|v| v / 1e6), 2),
            f(b.and_then(|b| num(b, &["ns_per_message"])), 1),
            f(
                b.and_then(|b| num(b, &["ns_per_message"])).map(|v| 1e3 / v),
                2
            ),
        );
    }
    let ours_med = median(
        ours.iter()
            .filter_map(|a| num(a, &["ns_per_message", "mean"]))
            .collect(),
    );
    let theirs_med = median(
        theirs
            .iter()
            .filter_map(|b| num(b, &["ns_per_message"]))
            .collect(),
    );
    if let (Some(a), Some(b)) = (ours_med, theirs_med) {
        let _ = writeln!(
            o,
            "\nMedian of rounds: lab book {a:.1} ns/msg, itch-book {b:.1}: **the lab's book takes \
             {:.2}× itch-book's time per message** (the issue's target: 0.5× or less).",
            a / b
        );
    }
    if let Some(t) = theirs.first()
        && let Some(n) = num(t, &["messages"])
        && (n - messages).abs() > 0.5
    {
        let _ = writeln!(
            o,
            "\nnote: itch-book counted {n:.0} messages, the lab's book {messages:.0}."
        );
    }
    let _ = writeln!(
        o,
        "\nEach message timed alone (round 1, two fenced TSC reads, {} ns of timer overhead \
         subtracted; a percentile is shown from ≥ 10/(1−q) samples): p50 {} p99 {} p99.9 {} max {} ns.",
        f(num(first, &["ns_per_message", "timer_overhead_ns"]), 1),
        f(num(first, &["ns_per_message", "p50"]), 1),
        f(num(first, &["ns_per_message", "p99"]), 1),
        f(num(first, &["ns_per_message", "p99.9"]), 1),
        f(num(first, &["ns_per_message", "max"]), 1),
    );
    if let Some(types) = first.get("by_type").and_then(Value::as_object) {
        let _ = writeln!(
            o,
            "\nBy type (each row: its messages' share of the pipelined loop, their apply and the \
             next message's decode and prefetch):\n\n| type | messages | p50 ns | p99 ns | p99.9 ns |"
        );
        let _ = writeln!(o, "|---|---:|---:|---:|---:|");
        for (k, p) in types {
            let _ = writeln!(
                o,
                "| {k} | {} | {} | {} | {} |",
                f(num(p, &["samples"]), 0),
                f(num(p, &["p50"]), 1),
                f(num(p, &["p99"]), 1),
                f(num(p, &["p99.9"]), 1),
            );
        }
    }
    let mib = |v: Option<f64>| f(v.map(|b| b / f64::from(1 << 20)), 0);
    let _ = writeln!(
        o,
        "\nMemory: the lab's book {} MiB (its order table sized for {} live orders), peak RSS {} MiB; \
         {} orders live at the end; {} allocations after start; refused: {} unknown order, {} \
         duplicate, {} overfill, {} zero shares, {} wrong locate.",
        mib(num(first, &["memory", "book_bytes"])),
        f(num(first, &["book", "table_capacity"]), 0),
        mib(num(first, &["memory", "peak_rss_bytes"])),
        f(num(first, &["book", "live_orders"]), 0),
        f(num(first, &["book", "allocations_after_start"]), 0),
        f(num(first, &["book", "unknown_order"]), 0),
        f(num(first, &["book", "duplicate_order"]), 0),
        f(num(first, &["book", "overfill"]), 0),
        f(num(first, &["book", "zero_shares"]), 0),
        f(num(first, &["book", "locate_mismatch"]), 0),
    );
    if let Some(t) = theirs.first() {
        match compare_bbo(first, t) {
            Some((agree, 0, _)) => {
                let _ = writeln!(
                    o,
                    "\nFinal best bid and offer: the two books agree on all {agree} symbols."
                );
            }
            Some((agree, differ, firsts)) => {
                let _ = writeln!(
                    o,
                    "\nFinal best bid and offer: **{differ} symbols differ** ({agree} agree); first: {}",
                    firsts.join("; ")
                );
            }
            None => {}
        }
        if let Some(st) = t.get("stats") {
            let _ = writeln!(
                o,
                "itch-book's own counts: missing_ref {}, dup_ref {}, crossed_books {}.",
                st.get("missing_ref").unwrap_or(&Value::Null),
                st.get("dup_ref").unwrap_or(&Value::Null),
                st.get("crossed_books").unwrap_or(&Value::Null)
            );
        }
    }
    o
}
