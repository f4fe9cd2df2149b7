//! Counts where the PMU is missing: instructions, cache misses and mispredicted branches per
//! operation from cachegrind, and llvm-mca's cycle estimate for a kernel's inner loop, beside
//! the experiments' times.
//!
//! This guest exposes no hardware PMU (`perf stat -e instructions` is "not supported"), so the
//! report's times would otherwise stand alone. cachegrind runs the program on a simulated CPU:
//! it counts every instruction executed (exact and deterministic), and it simulates a two-level
//! cache (L1 and a last level, LRU, no prefetcher) and simple branch predictors. Its misses are
//! those of that model, not of this CPU: the model has no prefetcher, so a streaming scan misses
//! once per line where the hardware would have fetched ahead. llvm-mca estimates the cycles one
//! iteration of a straight-line loop takes on a named core's pipeline model, every load an L1
//! hit.
//!
//! How one operation is counted: `hotpath count --experiment E --variant V --ops N` runs exactly
//! that variant's operation N times, untimed, and prints what it computed. `cargo xtask hotpath`
//! runs it under cachegrind with N and with 2N operations and subtracts: start-up, setup and
//! the warm-up pass are the same in both runs and cancel, leaving N operations in steady state.
//!
//! This part (the table of workloads, the parsers, the subtraction, the merge into the report)
//! builds without the experiments, for xtask; [`work`] is the workloads themselves.

use serde::{Deserialize, Serialize};

// `Count` and `figure` are the report's (what it shows, and how); named here too, where xtask
// finds the rest of the counting.
use crate::report::{Comparison, Report};
pub use crate::report::{Count, figure};

/// One counted workload: an experiment's variant.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub experiment: &'static str,
    /// The id `--variant` takes.
    pub variant: &'static str,
    /// Variants of one group compute the same thing, so at the same op count they must print
    /// the same result (xtask checks); empty for none.
    pub group: &'static str,
    /// The smaller op count (size small, size default); the runs take it and twice it.
    pub ops: (u64, u64),
}

const CALLS: (u64, u64) = (20_000, 1_000_000);
/// Passes over a book: two, so the counted pass follows one that warmed what fits.
const PASSES: (u64, u64) = (2, 2);

/// Every counted workload, in the report's order.
pub static WORKLOADS: &[Workload] = &[
    w("dispatch", "generic", "dispatch-one", CALLS),
    w("dispatch", "enum", "dispatch-one", CALLS),
    w("dispatch", "dyn", "dispatch-one", CALLS),
    w("dispatch", "box-fn", "dispatch-one", CALLS),
    w("dispatch", "enum-4", "dispatch-four", CALLS),
    w("dispatch", "dyn-4", "dispatch-four", CALLS),
    w("typetest", "downcast", "typetest", CALLS),
    w("typetest", "enum-boxed", "typetest", CALLS),
    w("typetest", "enum", "typetest", CALLS),
    w("typetest", "tag", "typetest", CALLS),
    w("memory", "sequential-l1", "", CALLS),
    w("memory", "random-l1", "", CALLS),
    w("memory", "sequential-far", "", CALLS),
    w("memory", "random-far", "", CALLS),
    w("hotcold", "full", "hotcold", PASSES),
    w("hotcold", "split", "hotcold", PASSES),
    w("aos-soa", "aos", "aos-soa", PASSES),
    w("aos-soa", "packed", "aos-soa", PASSES),
    w("aos-soa", "soa", "aos-soa", PASSES),
    w("simd", "scalar", "", PASSES),
    w("simd", "sse2", "simd-lanes", PASSES),
    w("simd", "pulp", "simd-lanes", PASSES),
];

const fn w(
    experiment: &'static str,
    variant: &'static str,
    group: &'static str,
    ops: (u64, u64),
) -> Workload {
    Workload {
        experiment,
        variant,
        group,
        ops,
    }
}

/// The workload `experiment`/`variant`, or an error naming the known ones.
pub fn workload(experiment: &str, variant: &str) -> anyhow::Result<&'static Workload> {
    WORKLOADS
        .iter()
        .find(|w| w.experiment == experiment && w.variant == variant)
        .ok_or_else(|| {
            let known: Vec<String> = WORKLOADS
                .iter()
                .map(|w| format!("{}/{}", w.experiment, w.variant))
                .collect();
            anyhow::anyhow!(
                "no counted workload {experiment}/{variant}; known: {}",
                known.join(", ")
            )
        })
}

/// What one `hotpath count` run prints, as one JSON line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ran {
    pub experiment: String,
    pub variant: String,
    /// The variant in the report's words, with its working set.
    pub label: String,
    /// What one element is ("call", "order", "step").
    pub unit: String,
    pub ops: u64,
    /// Elements per operation (a pass over a book of 8192 positions: 8192); the counts are
    /// reported per element.
    pub elements: u64,
    /// What the run computed (a checksum, a tally, where a walk ended).
    pub result: String,
    /// Anything the run chose at run time (the instruction set pulp's dispatch took).
    pub detail: String,
    /// Distinct cache lines one element's reads touch, from the layout's arithmetic (the
    /// line-count model), for the scans and walks; none where it doesn't apply.
    pub lines_model: Option<f64>,
    /// Functions, by path, whose inner loop llvm-mca may read: the first found in the binary
    /// with a straight-line loop is used.
    pub kernels: Vec<String>,
    /// When set, the loop is in the function the kernel calls whose path contains this (pulp's
    /// dispatch calls a function compiled for the instruction set).
    pub via: Option<String>,
}

/// Distinct 64-byte lines touched per element when a scan reads `bytes` from offset `start` of
/// every `stride`-byte element, averaged over the 8 start offsets an 8-byte-aligned array can
/// have. Lines two neighbouring elements share count once. A struct of arrays reads one such
/// stream per column: add them.
pub fn lines_touched(stride: usize, start: usize, bytes: usize) -> f64 {
    const LINE: usize = 64;
    const ELEMENTS: usize = 4096;
    let mut total = 0usize;
    for base in (0..LINE).step_by(8) {
        let mut last: Option<usize> = None;
        for i in 0..ELEMENTS {
            let first = (base + i * stride + start) / LINE;
            let end = (base + i * stride + start + bytes - 1) / LINE;
            let from = match last {
                Some(l) if l >= first => l + 1,
                _ => first,
            };
            total += (end + 1).saturating_sub(from);
            last = Some(last.map_or(end, |l| l.max(end)));
        }
    }
    total as f64 / (ELEMENTS * LINE / 8) as f64
}

/// cachegrind's output file: its `desc:` lines and the `summary:` totals named by `events:`.
#[derive(Debug, Clone, PartialEq)]
pub struct Cachegrind {
    /// The simulated caches, as cachegrind describes them ("D1 cache: 32768 B, 64 B, 8-way
    /// associative").
    pub desc: Vec<String>,
    pub totals: Vec<(String, u64)>,
}

impl Cachegrind {
    /// Reads the file's `events:` and `summary:` lines (not cg_annotate's text, whose layout
    /// changes between versions).
    pub fn parse(text: &str) -> anyhow::Result<Cachegrind> {
        let field = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .map(str::trim)
                .ok_or_else(|| anyhow::anyhow!("no `{key}` line in cachegrind's output"))
        };
        let events: Vec<&str> = field("events:")?.split_whitespace().collect();
        let summary = field("summary:")?
            .split_whitespace()
            .map(str::parse::<u64>)
            .collect::<Result<Vec<u64>, _>>()
            .map_err(|e| anyhow::anyhow!("cachegrind's summary line: {e}"))?;
        if summary.len() != events.len() {
            anyhow::bail!(
                "cachegrind's summary has {} figures for {} events",
                summary.len(),
                events.len()
            );
        }
        Ok(Cachegrind {
            desc: text
                .lines()
                .filter_map(|l| l.strip_prefix("desc:"))
                .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect(),
            totals: events
                .into_iter()
                .map(str::to_string)
                .zip(summary)
                .collect(),
        })
    }

    /// An event's total; 0 for one this run didn't collect.
    pub fn get(&self, event: &str) -> u64 {
        self.totals
            .iter()
            .find(|(e, _)| e == event)
            .map_or(0, |(_, v)| *v)
    }

    /// The four figures the report shows: instructions, L1 data misses (reads and writes),
    /// last-level data misses, mispredicted branches (conditional and indirect).
    pub fn figures(&self) -> [u64; 4] {
        [
            self.get("Ir"),
            self.get("D1mr") + self.get("D1mw"),
            self.get("DLmr") + self.get("DLmw"),
            self.get("Bcm") + self.get("Bim"),
        ]
    }
}

/// Per element: the run of `2n` operations less the run of `n`, divided by the `n × elements`
/// elements between them. Start-up and setup are in both runs and cancel. A figure that came
/// out below zero (a few misses' worth of allocator or page-table chance) is 0.
pub fn per_element(one: [u64; 4], two: [u64; 4], n: u64, elements: u64) -> [f64; 4] {
    let d = (n * elements.max(1)) as f64;
    let mut out = [0.0; 4];
    for k in 0..4 {
        out[k] = (two[k] as f64 - one[k] as f64).max(0.0) / d;
    }
    out
}

/// llvm-mca's summary of one loop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mca {
    pub iterations: f64,
    pub instructions: f64,
    pub total_cycles: f64,
    pub block_rthroughput: f64,
}

impl Mca {
    /// Reads `Iterations:`, `Instructions:`, `Total Cycles:` and `Block RThroughput:`.
    pub fn parse(text: &str) -> Option<Mca> {
        let get = |key: &str| {
            text.lines()
                .find_map(|l| l.trim().strip_prefix(key))
                .and_then(|v| v.trim().parse::<f64>().ok())
        };
        Some(Mca {
            iterations: get("Iterations:")?,
            instructions: get("Instructions:")?,
            total_cycles: get("Total Cycles:")?,
            block_rthroughput: get("Block RThroughput:")?,
        })
    }

    /// Cycles per element: cycles per iteration scaled by how many iterations an element
    /// takes, which is its instructions per element (cachegrind's Ir) over the loop's
    /// instructions per iteration. That is how an unrolled loop's iteration (4 or 8 elements)
    /// becomes per element without reading the unroll factor from the code.
    pub fn per_element(&self, ir_per_element: f64) -> Option<f64> {
        let per_iter = self.instructions / self.iterations;
        (per_iter > 0.0 && ir_per_element > 0.0)
            .then(|| self.total_cycles / self.iterations * ir_per_element / per_iter)
    }
}

/// A loop found in a function's disassembly (`llvm-objdump -d --no-show-raw-insn`): the
/// instructions from a backward branch's target to the branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Loop {
    /// The instructions, as llvm-mc reads them (addresses and symbol comments gone, branch
    /// targets a label `L`).
    pub body: Vec<String>,
    /// Branch targets strictly inside: a loop with any is several blocks (a `match`, an if
    /// chain), which llvm-mca would read as one straight path through all of them.
    pub targets_inside: usize,
    /// Calls inside: llvm-mca doesn't follow them.
    pub calls: usize,
}

/// `(address, instruction)` of every instruction line.
fn instructions(disasm: &str) -> Vec<(u64, String)> {
    disasm
        .lines()
        .filter_map(|l| {
            let (addr, rest) = l.trim_start().split_once(':')?;
            let addr = u64::from_str_radix(addr.trim(), 16).ok()?;
            let insn = rest.trim();
            (!insn.is_empty()).then(|| (addr, insn.to_string()))
        })
        .collect()
}

/// A branch's target address (`jne 0x1257d0 <f+0x90>`), for direct jumps.
fn jump_target(insn: &str) -> Option<u64> {
    let mut parts = insn.split_whitespace();
    let op = parts.next()?;
    if !op.starts_with('j') {
        return None;
    }
    let target = parts.next()?;
    u64::from_str_radix(target.strip_prefix("0x")?, 16).ok()
}

/// An instruction as llvm-mc reads it: no trailing comment or symbol, a branch's target `L`.
fn clean(insn: &str) -> String {
    let insn = insn.split(" #").next().unwrap_or(insn);
    let insn = insn.split(" <").next().unwrap_or(insn).trim();
    match jump_target(insn) {
        Some(_) => {
            let op = insn.split_whitespace().next().unwrap_or(insn);
            format!("{op}\tL")
        }
        None => insn.to_string(),
    }
}

/// Every loop closed by a backward branch, innermost or not.
pub fn loops(disasm: &str) -> Vec<Loop> {
    let insns = instructions(disasm);
    let targets: Vec<u64> = insns.iter().filter_map(|(_, i)| jump_target(i)).collect();
    let mut out = Vec::new();
    for (end, (addr, insn)) in insns.iter().enumerate() {
        let Some(t) = jump_target(insn).filter(|t| t <= addr) else {
            continue;
        };
        let Some(start) = insns.iter().position(|(a, _)| *a == t) else {
            continue;
        };
        let range = &insns[start..=end];
        out.push(Loop {
            body: range.iter().map(|(_, i)| clean(i)).collect(),
            targets_inside: targets.iter().filter(|&&x| x > t && x <= *addr).count(),
            calls: range.iter().filter(|(_, i)| i.starts_with("call")).count(),
        });
    }
    out
}

/// The loop llvm-mca can model: among the straight-line loops without calls, the longest (an
/// unrolled main loop rather than its remainder loop); else why there is none.
pub fn straight_loop(disasm: &str) -> Result<Loop, String> {
    let all = loops(disasm);
    if all.is_empty() {
        return Err("no loop in the function".to_string());
    }
    let n = all.len();
    let branching = all.iter().filter(|l| l.targets_inside > 0).count();
    let calling = all.iter().filter(|l| l.calls > 0).count();
    all.into_iter()
        .filter(|l| l.targets_inside == 0 && l.calls == 0)
        .max_by_key(|l| l.body.len())
        .ok_or_else(|| {
            let mut parts = Vec::new();
            if branching > 0 {
                parts.push(format!("{branching} branch inside"));
            }
            if calling > 0 {
                parts.push(format!("{calling} call out"));
            }
            format!("of its {n} loop(s), {}", parts.join(" and "))
        })
}

/// The input llvm-mca reads for `l`.
pub fn mca_input(l: &Loop) -> String {
    let mut s = String::from("L:\n");
    for i in &l.body {
        s.push('\t');
        s.push_str(i);
        s.push('\n');
    }
    s
}

/// The legacy-mangled prefix of a Rust function's symbol (`a::b` is `_ZN1a1b17h`), which `nm`
/// lists with the hash after it.
pub fn mangled_prefix(path: &str) -> String {
    format!("_ZN{}17h", mangled_segments(path))
}

/// `a::b` as `1a1b`: what a mangled name that contains the path contains.
pub fn mangled_segments(path: &str) -> String {
    path.split("::")
        .map(|s| format!("{}{s}", s.len()))
        .collect()
}

/// Made here, from what the counting runs read ([`Ran`], cachegrind's figures).
impl Count {
    /// A count from a run's line and cachegrind's figures per element.
    pub fn new(ran: &Ran, figures: [f64; 4]) -> Count {
        let [ir, d1_misses, ll_misses, mispredicts] = figures;
        Count {
            id: ran.variant.clone(),
            variant: ran.label.clone(),
            unit: ran.unit.clone(),
            ops: ran.ops,
            elements: ran.elements,
            ir,
            d1_misses,
            ll_misses,
            mispredicts,
            lines_model: ran.lines_model,
            mca_cycles: None,
            mca: String::new(),
            detail: ran.detail.clone(),
        }
    }
}

/// The study's dynamic_cast: 7.6× the instructions of explicit tagging.
pub const STUDY_CAST_INSTRUCTIONS: f64 = 7.6;
/// The study's hot/cold cache misses: 7.8×10⁷ with the full structs, 3.5×10⁷ split.
pub const STUDY_HOTCOLD_MISSES: (f64, f64) = (7.8e7, 3.5e7);

fn find<'a>(counts: &'a [Count], id: &str) -> Option<&'a Count> {
    counts.iter().find(|c| c.id == id)
}

/// Kinds a downcast chain tries per message on typetest's mix (45 % add, 40 % delete, 7 %
/// executed, 6 % cancel, 2 % trade, tried in that order).
pub const KINDS_TRIED: f64 = 0.45 + 0.40 * 2.0 + 0.07 * 3.0 + 0.06 * 4.0 + 0.02 * 5.0;

/// typetest: downcast_ref's instructions over the tag compare's, beside dynamic_cast's 7.6×.
pub fn typetest_row(downcast_ir: f64, tag_ir: f64) -> Comparison {
    let r = downcast_ir / tag_ir;
    let per_test = (downcast_ir - tag_ir) / KINDS_TRIED;
    let s = crate::verdict::standing(r, Some(STUDY_CAST_INSTRUCTIONS));
    let why = match s {
        crate::verdict::Standing::SmallerHere | crate::verdict::Standing::NoDifference => {
            "Rust's downcast is a virtual type_id call and a 128-bit compare per kind tried, \
             where C++'s dynamic_cast calls into the runtime to walk the class's RTTI"
        }
        crate::verdict::Standing::LargerHere => {
            "more than the study's: unexplained by these counts (the tag compare may be \
             cheaper here than the study's tagging code)"
        }
        _ => "",
    };
    let reason = format!(
        "{} more instructions per message, {} per kind tried ({KINDS_TRIED:.2} kinds tried \
         per message on this mix){}{why}",
        figure(downcast_ir - tag_ir),
        figure(per_test),
        if why.is_empty() { "" } else { "; " }
    );
    Comparison::judged(
        "instructions per message, downcast_ref (Box<dyn Any>) vs tag byte (cachegrind Ir)",
        format!("{} vs {}", figure(downcast_ir), figure(tag_ir)),
        r,
        "dynamic_cast 7.6× the instructions of explicit tagging",
        Some(STUDY_CAST_INSTRUCTIONS),
        &reason,
    )
}

/// hot/cold: lines brought into the model's L1 per order, full structs vs the hot array,
/// beside the study's cache misses; the line-count model says what the layouts predict.
pub fn hotcold_l1_row(full: &Count, split: &Count) -> Comparison {
    let (a, b) = (full.d1_misses, split.d1_misses);
    let study = STUDY_HOTCOLD_MISSES.0 / STUDY_HOTCOLD_MISSES.1;
    let model = match (full.lines_model, split.lines_model) {
        (Some(x), Some(y)) => {
            let how = match crate::verdict::standing(a / b, Some(x / y)) {
                crate::verdict::Standing::Agrees => "which the misses match",
                crate::verdict::Standing::LargerHere => "which the misses exceed",
                crate::verdict::Standing::SmallerHere | crate::verdict::Standing::NoDifference => {
                    "which the misses fall short of"
                }
                _ => "which the misses can't be set against",
            };
            format!(
                "; the line-count model predicts {} and {} lines per order ({:.2}×), {how}",
                figure(x),
                figure(y),
                x / y
            )
        }
        _ => "; no line-count model for these layouts".to_string(),
    };
    let reason = format!(
        "the scan misses the model's L1 {} times per order over full structs, {} over the hot \
         array{model}; the study gives no struct sizes",
        figure(a),
        figure(b)
    );
    Comparison::judged(
        "L1 misses per order, full structs vs split (cachegrind, simulated)",
        format!("{} vs {}", figure(a), figure(b)),
        a / b,
        "cache misses 7.8×10⁷ → 3.5×10⁷",
        Some(study),
        &reason,
    )
}

/// hot/cold at the last level: judged when both layouts miss there; a finding when one fits.
pub fn hotcold_ll_row(full: &Count, split: &Count, ll_bytes: Option<u64>) -> Comparison {
    let (a, b) = (full.ll_misses, split.ll_misses);
    let what = "last-level misses per order, full structs vs split (cachegrind, simulated)";
    let ours = format!("{} vs {}", figure(a), figure(b));
    let study = "cache misses 7.8×10⁷ → 3.5×10⁷";
    if a > 0.0 && b > 0.0 {
        let reason = format!(
            "both layouts miss the model's last level in the counted pass ({} elements)",
            full.elements
        );
        return Comparison::judged(
            what,
            ours,
            a / b,
            study,
            Some(STUDY_HOTCOLD_MISSES.0 / STUDY_HOTCOLD_MISSES.1),
            &reason,
        );
    }
    let ll = ll_bytes.map_or("the model's last level".to_string(), |b| {
        format!("the model's {} MiB last level", b >> 20)
    });
    let finding = match (a > 0.0, b > 0.0) {
        (true, false) => format!(
            "no ratio: the hot array's lines fit {ll}, so the counted pass finds them there, \
             while the full structs' don't ({} misses per order)",
            figure(a)
        ),
        (false, true) => format!(
            "no ratio: the full structs' lines fit {ll} but the hot array's miss ({} per \
             order): unexplained",
            figure(b)
        ),
        _ => format!(
            "no ratio: both layouts' lines fit {ll} at this book size ({} orders), so the \
             counted pass misses only in L1",
            full.elements
        ),
    };
    Comparison::finding(what, ours, study, finding)
}

/// memory: misses per step of the sequential and the random walk beyond the caches. The study
/// gives cycles, not counts: a finding on what the counts say about its 70× gap.
pub fn memory_row(sequential: &Count, random: &Count) -> Comparison {
    let (s, r) = (sequential.ll_misses, random.ll_misses);
    let finding = if s > 0.0
        && crate::verdict::standing(r / s, None) == crate::verdict::Standing::NoDifference
    {
        format!(
            "the model cache, which has no prefetcher, misses its last level on {} of the \
             sequential walk's steps and {} of the random walk's: a miss count can't tell them \
             apart, so the time gap the study and we measure is the prefetcher's work and \
             overlapped misses, not fewer misses",
            figure(s),
            figure(r)
        )
    } else if s > 0.0 {
        format!(
            "the random walk misses the model's last level {:.2}× as often as the sequential \
             one ({} vs {} per step)",
            r / s,
            figure(r),
            figure(s)
        )
    } else {
        format!(
            "the sequential walk never misses the model's last level here and the random walk \
             misses {} per step: this working set fits the model",
            figure(r)
        )
    };
    Comparison::finding(
        format!(
            "last-level misses per step, sequential vs random ({})",
            random.variant
        ),
        format!("{} vs {}", figure(s), figure(r)),
        "sequential ≈ 5.35 cycles/access vs random ≈ 378 (no counts)",
        finding,
    )
}

/// The comparisons with the study's counts that `experiment`'s counts allow.
pub fn study_rows(experiment: &str, counts: &[Count], ll_bytes: Option<u64>) -> Vec<Comparison> {
    match experiment {
        "typetest" => match (find(counts, "downcast"), find(counts, "tag")) {
            (Some(a), Some(t)) => vec![typetest_row(a.ir, t.ir)],
            _ => Vec::new(),
        },
        "hotcold" => match (find(counts, "full"), find(counts, "split")) {
            (Some(f), Some(s)) => vec![hotcold_l1_row(f, s), hotcold_ll_row(f, s, ll_bytes)],
            _ => Vec::new(),
        },
        "memory" => match (find(counts, "sequential-far"), find(counts, "random-far")) {
            (Some(s), Some(r)) => vec![memory_row(s, r)],
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Puts `counts` beside `experiment`'s times: the outcome's counts table, a note saying what
/// was counted on which model (`model`), and the rows comparing them with the study's counts.
/// A row that only said the PMU is missing gives way to them. False when the report has no
/// such outcome (the experiment didn't run).
pub fn merge(
    report: &mut Report,
    experiment: &str,
    counts: Vec<Count>,
    model: &str,
    ll_bytes: Option<u64>,
) -> bool {
    let Some(o) = report.outcomes.iter_mut().find(|o| o.id == experiment) else {
        return false;
    };
    o.comparisons
        .retain(|c| !(c.our_ratio.is_none() && c.ours.contains("no hardware PMU")));
    o.comparisons
        .extend(study_rows(experiment, &counts, ll_bytes));
    o.notes.push(model.to_string());
    for c in counts.iter().filter(|c| !c.detail.is_empty()) {
        o.notes.push(format!(
            "{}, under cachegrind: {} (valgrind's virtual CPU may lack instruction sets this CPU \
             has, so the choice can differ from the timed run's)",
            c.variant, c.detail
        ));
    }
    if let Some(n) = mca_gaps(&counts) {
        o.notes.push(n);
    }
    o.counts = counts;
    true
}

/// One note on the variants llvm-mca gives no figure for, each with why; none when it gave
/// every one.
pub fn mca_gaps(counts: &[Count]) -> Option<String> {
    let gaps: Vec<String> = counts
        .iter()
        .filter(|c| c.mca_cycles.is_none())
        .map(|c| format!("{} ({})", c.variant, c.mca))
        .collect();
    (!gaps.is_empty()).then(|| {
        format!(
            "No llvm-mca figure where a kernel's loop branches inside (a match, an if chain, a \
             load skipped) or calls out, since llvm-mca models one straight path and doesn't \
             follow calls, or where a tool is missing: {}.",
            gaps.join("; ")
        )
    })
}

#[cfg(feature = "experiments")]
pub mod work;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::Standing;

    /// A cachegrind.out as cachegrind 3.19 writes it (`--cache-sim=yes --branch-sim=yes`).
    const CG: &str = "desc: I1 cache:         32768 B, 64 B, 8-way associative\n\
        desc: D1 cache:         32768 B, 64 B, 8-way associative\n\
        desc: LL cache:         33554432 B, 64 B, 16-way associative\n\
        cmd: target/release/hotpath count --experiment dispatch --variant generic --ops 10\n\
        events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim\n\
        fl=./csu/../csu/libc-start.c\n\
        fn=__libc_start_main@@GLIBC_2.34\n\
        128 2 1 1 2 0 0 0 0 0 0 0 0 0\n\
        summary: 127757 1091 1072 29395 1226 1017 10266 344 312 25344 3163 279 150\n";

    #[test]
    fn the_summary_is_read_against_the_events_line() {
        let cg = Cachegrind::parse(CG).unwrap();
        assert_eq!(cg.get("Ir"), 127_757);
        assert_eq!(cg.get("Bim"), 150);
        assert_eq!(cg.get("nope"), 0);
        assert_eq!(cg.figures(), [127_757, 1226 + 344, 1017 + 312, 3163 + 150]);
        assert_eq!(cg.desc.len(), 3);
        assert_eq!(cg.desc[2], "LL cache: 33554432 B, 64 B, 16-way associative");
        // Events in another order read the same.
        let swapped = "events: D1mr Ir\nsummary: 5 7\n";
        let cg = Cachegrind::parse(swapped).unwrap();
        assert_eq!((cg.get("Ir"), cg.get("D1mr")), (7, 5));
        assert!(Cachegrind::parse("events: Ir D1mr\nsummary: 1\n").is_err());
        assert!(Cachegrind::parse("summary: 1\n").is_err());
    }

    #[test]
    fn two_runs_subtracted_give_figures_per_element() {
        // 1000 ops cost 5000 instructions on top of 80,000 of start-up; 2000 ops, 10,000.
        let one = [85_000, 300, 20, 50];
        let two = [90_000, 400, 20, 45];
        let per = per_element(one, two, 1000, 1);
        assert_eq!(per, [5.0, 0.1, 0.0, 0.0]);
        // Ops of 10 elements each: per element.
        let per = per_element(one, two, 1000, 10);
        assert_eq!(per[0], 0.5);
    }

    #[test]
    fn the_line_count_model_counts_shared_lines_once() {
        // A 64-byte element read whole: one line each, whatever the offset.
        // (The scan's last line adds 1 in 4096 elements: hence the tolerance.)
        let near = |a: f64, b: f64| (a - b).abs() < 1e-3;
        assert!(near(lines_touched(64, 0, 32), 1.0));
        // A column of f64: 8 per line.
        assert!(near(lines_touched(8, 0, 8), 0.125));
        // hot/cold: 24 hot bytes at a 248-byte stride cross a line in 2 of 8 offsets; the
        // scan's 14 bytes from offset 8 in 1 of 8.
        assert!(near(lines_touched(248, 0, 24), 1.25));
        assert!(near(lines_touched(248, 8, 14), 1.125));
        // Contiguous 24-byte elements: every line holds some element's fields.
        assert!(near(lines_touched(24, 8, 14), 0.375));
    }

    const DISASM: &str = "
0000000000125740 <_ZN7hotpath4code6layout13risk_soa_sse217he1249b130467d28eE>:
  125740:      \tpushq\t%rax
  125790:      \tje\t0x1257e0 <f+0x50>
  1257a1:      \tmovapd\t-0xf24ea(%rip), %xmm8   # 0x332c0 <writev+0x332c0>
  1257d0:      \tmovupd\t(%rcx,%r10), %xmm9
  1257d6:      \tmulpd\t%xmm9, %xmm13
  1257da:      \taddq\t$0x40, %r10
  1257de:      \tjne\t0x1257d0 <f+0x90>
  1257e0:      \tmovsd\t(%rcx,%r9,8), %xmm2
  1257e6:      \tja\t0x1257ea <f+0xaa>
  1257e8:      \tcallq\t*%rax
  1257ea:      \tjb\t0x1257e0 <f+0xa0>
  1257f0:      \tretq
";

    #[test]
    fn the_straight_loop_is_found_and_cleaned_for_llvm_mc() {
        let all = loops(DISASM);
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].targets_inside, 1);
        assert_eq!(all[1].calls, 1);
        let l = straight_loop(DISASM).unwrap();
        assert_eq!(
            l.body,
            [
                "movupd\t(%rcx,%r10), %xmm9",
                "mulpd\t%xmm9, %xmm13",
                "addq\t$0x40, %r10",
                "jne\tL"
            ]
        );
        assert!(mca_input(&l).starts_with("L:\n\tmovupd"));
        assert_eq!(
            clean("movapd\t-0xf24ea(%rip), %xmm8   # 0x332c0 <w>"),
            "movapd\t-0xf24ea(%rip), %xmm8"
        );
        // Only the branching loop: no figure, and the reason says why.
        let branchy: String = DISASM
            .lines()
            .filter(|l| !l.contains("jne"))
            .collect::<Vec<_>>()
            .join("\n");
        let e = straight_loop(&branchy).unwrap_err();
        assert!(
            e.contains("of its 1 loop(s), 1 branch inside") && e.contains("1 call out"),
            "{e}"
        );
        assert_eq!(straight_loop("").unwrap_err(), "no loop in the function");
    }

    #[test]
    fn mca_cycles_per_element_follow_the_unrolling() {
        let text = "Iterations:        100\nInstructions:      6300\nTotal Cycles:      1440\n\
                    Total uOps:        6300\n\nDispatch Width:    6\nBlock RThroughput: 10.5\n";
        let m = Mca::parse(text).unwrap();
        assert_eq!(m.block_rthroughput, 10.5);
        // 63 instructions and 14.4 cycles per iteration; 7.875 instructions per element means
        // 8 elements per iteration: 1.8 cycles each.
        assert!((m.per_element(7.875).unwrap() - 1.8).abs() < 1e-12);
        assert_eq!(m.per_element(0.0), None);
        assert_eq!(Mca::parse("Iterations: 100\n"), None);
    }

    #[test]
    fn symbols_are_found_by_their_mangled_path() {
        assert_eq!(
            mangled_prefix("hotpath::code::layout::risk_soa_sse2"),
            "_ZN7hotpath4code6layout13risk_soa_sse217h"
        );
        assert_eq!(
            mangled_segments("pulp::x86::v4::V4::vectorize"),
            "4pulp3x862v42V49vectorize"
        );
    }

    fn count(id: &str, ir: f64, d1: f64, ll: f64, model: Option<f64>) -> Count {
        Count {
            id: id.into(),
            variant: id.into(),
            unit: "order".into(),
            ops: 2,
            elements: 1000,
            ir,
            d1_misses: d1,
            ll_misses: ll,
            mispredicts: 0.0,
            lines_model: model,
            mca_cycles: None,
            mca: String::new(),
            detail: String::new(),
        }
    }

    #[test]
    fn the_typetest_row_flips_with_the_instruction_counts() {
        let small = typetest_row(20.0, 10.0);
        assert_eq!(small.standing, Some(Standing::SmallerHere));
        assert!(small.verdict.contains("RTTI"), "{}", small.verdict);
        let agrees = typetest_row(70.0, 10.0);
        assert_eq!(agrees.standing, Some(Standing::Agrees));
        assert!(
            agrees.verdict.contains("60.0 more instructions"),
            "{}",
            agrees.verdict
        );
        assert_ne!(small.verdict, agrees.verdict);
    }

    #[test]
    fn the_hotcold_rows_flip_with_the_miss_counts() {
        let full = count("full", 5.0, 1.25, 1.25, Some(1.25));
        let split = count("split", 5.0, 0.375, 0.375, Some(0.375));
        let r = hotcold_l1_row(&full, &split);
        assert_eq!(r.standing, Some(Standing::Agrees));
        assert!(
            r.verdict.contains("predicts 1.25 and 0.375"),
            "{}",
            r.verdict
        );
        assert!(
            r.verdict.contains("which the misses match"),
            "{}",
            r.verdict
        );
        let far = hotcold_l1_row(&full, &count("split", 5.0, 0.1, 0.0, None));
        assert_eq!(far.standing, Some(Standing::LargerHere));
        assert!(
            far.verdict.contains("no line-count model"),
            "{}",
            far.verdict
        );
        let short = hotcold_l1_row(&count("full", 5.0, 0.5, 0.5, Some(1.25)), &split);
        assert!(
            short.verdict.contains("which the misses fall short of"),
            "{}",
            short.verdict
        );
        // Last level: judged when both miss; a finding naming the fit when one doesn't.
        assert_eq!(
            hotcold_ll_row(&full, &split, None).standing,
            Some(Standing::Agrees)
        );
        let fits = hotcold_ll_row(
            &full,
            &count("split", 5.0, 0.375, 0.0, None),
            Some(32 << 20),
        );
        assert_eq!(fits.standing, None);
        assert!(
            fits.verdict
                .contains("hot array's lines fit the model's 32 MiB"),
            "{}",
            fits.verdict
        );
        let both = hotcold_ll_row(
            &count("full", 5.0, 1.0, 0.0, None),
            &count("split", 5.0, 0.4, 0.0, None),
            None,
        );
        assert!(
            both.verdict.contains("both layouts' lines fit"),
            "{}",
            both.verdict
        );
    }

    #[test]
    fn the_memory_finding_says_what_the_counts_show() {
        let seq = count("sequential-far", 3.0, 1.0, 1.0, Some(1.0));
        let same = memory_row(&seq, &count("random-far", 3.0, 1.0, 1.0, Some(1.0)));
        assert!(
            same.verdict.contains("can't tell them apart"),
            "{}",
            same.verdict
        );
        let more = memory_row(
            &count("s", 3.0, 1.0, 0.25, None),
            &count("r", 3.0, 1.0, 1.0, None),
        );
        assert!(more.verdict.contains("4.00× as often"), "{}", more.verdict);
        let fits = memory_row(
            &count("s", 3.0, 1.0, 0.0, None),
            &count("r", 3.0, 1.0, 0.0, None),
        );
        assert!(fits.verdict.contains("never misses"), "{}", fits.verdict);
    }

    #[test]
    fn the_mca_note_names_each_variant_without_a_figure() {
        let mut a = count("generic", 20.0, 0.0, 0.0, None);
        a.mca_cycles = Some(3.5);
        let mut b = count("dyn", 26.0, 0.0, 0.0, None);
        b.mca = "f: of its 1 loop(s), 1 call out".into();
        assert_eq!(mca_gaps(std::slice::from_ref(&a)), None);
        let n = mca_gaps(&[a, b]).unwrap();
        assert!(n.ends_with("dyn (f: of its 1 loop(s), 1 call out)."), "{n}");
        assert!(!n.contains("generic"), "{n}");
    }

    #[test]
    fn every_workload_is_known_once() {
        for w in WORKLOADS {
            assert!(std::ptr::eq(workload(w.experiment, w.variant).unwrap(), w));
        }
        let e = workload("dispatch", "nope").unwrap_err().to_string();
        assert!(e.contains("dispatch/generic"), "{e}");
    }
}
