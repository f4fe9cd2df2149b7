//! Page faults: what demand paging costs the first write to each page of a fresh anonymous
//! mapping, and what pre-faulting (`MAP_POPULATE`, `MADV_POPULATE_WRITE`, `mlock`) costs up
//! front and saves afterwards.
//!
//! Every variant maps a fresh region each round (the study's 512 MiB at size default), so
//! every round pays its faults again; variants take turns round by round. A first-touch
//! sample is one page's first write between two counter reads (the trap, the kernel's page
//! allocation and zeroing, the return); a populated mapping's sample is the same write to a
//! page whose table entry is already there (a TLB miss and a cache miss, no trap). Minor faults
//! come from `getrusage(RUSAGE_THREAD)` around each pass.

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::Ctx;
use crate::harness::{Dist, Recorder, Variant, interleave, tsc};
use crate::report::{self, Comparison, Level, Outcome};
use crate::system::{MapOptions, Mapping, PAGE};
use crate::verdict::{self, Spread, Standing};

/// Minor faults the calling thread has taken so far (`getrusage(RUSAGE_THREAD).ru_minflt`):
/// the difference across a stretch of code is how many pages it faulted in without I/O.
pub fn minor_faults_self_thread() -> u64 {
    #[expect(unsafe_code, reason = "getrusage writes only the rusage it is given")]
    // SAFETY: an all-zero rusage is a valid value of a plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    #[expect(unsafe_code, reason = "getrusage writes only the rusage it is given")]
    // SAFETY: `ru` is a valid, writable rusage for the duration of the call.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return 0;
    }
    ru.ru_minflt as u64
}

/// How a variant's mapping gets its pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Nothing up front: every page faults on its first write (demand paging).
    FirstTouch,
    /// `mmap(MAP_POPULATE)`: the kernel faults every page in inside the `mmap` call.
    MapPopulate,
    /// `madvise(MADV_POPULATE_WRITE)` (Linux 5.14+): the same, on a mapping that exists.
    MadvPopulateWrite,
    /// `mlock`: faults every page in and keeps it resident (needs CAP_IPC_LOCK or a large
    /// enough RLIMIT_MEMLOCK).
    Mlock,
}

impl Method {
    pub const ALL: [Method; 4] = [
        Method::FirstTouch,
        Method::MapPopulate,
        Method::MadvPopulateWrite,
        Method::Mlock,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::FirstTouch => "first touch (demand paging)",
            Method::MapPopulate => "MAP_POPULATE",
            Method::MadvPopulateWrite => "MADV_POPULATE_WRITE",
            Method::Mlock => "mlock",
        }
    }
}

/// A prepared mapping: what populating it cost (0 for demand paging).
#[derive(Debug)]
pub struct Prepared {
    pub map: Mapping,
    /// Counter ticks the populating call took.
    pub populate_ticks: u64,
    /// Minor faults the populating call was charged.
    pub populate_faults: u64,
}

/// Maps `len` bytes of 4 KiB pages and populates them as `method` says, timing it.
pub fn prepare(method: Method, len: usize) -> std::io::Result<Prepared> {
    // The study measures 4 KiB demand paging: keep THP out of it (with THP `always` a first
    // touch would fault a whole 2 MiB page instead).
    let no_thp = |m: &Mapping| m.advise(libc::MADV_NOHUGEPAGE);
    let f0 = minor_faults_self_thread();
    let (map, ticks) = match method {
        Method::FirstTouch => {
            let m = Mapping::anon(len, MapOptions::default())?;
            no_thp(&m)?;
            (m, 0)
        }
        Method::MapPopulate => {
            let t0 = tsc();
            let m = Mapping::anon(
                len,
                MapOptions {
                    populate: true,
                    ..MapOptions::default()
                },
            )?;
            (m, tsc() - t0)
        }
        Method::MadvPopulateWrite | Method::Mlock => {
            let m = Mapping::anon(len, MapOptions::default())?;
            no_thp(&m)?;
            let t0 = tsc();
            if method == Method::Mlock {
                m.lock()?;
            } else {
                m.advise(libc::MADV_POPULATE_WRITE)?;
            }
            (m, tsc() - t0)
        }
    };
    let populate_faults = minor_faults_self_thread() - f0;
    Ok(Prepared {
        map,
        populate_ticks: ticks,
        populate_faults,
    })
}

/// Adds `add` to the first byte of every page with a locked read-modify-write, timing each
/// into `rec` (when given); returns the minor faults the pass took. The locked instruction is
/// a write access (a fresh page takes one write fault, not a read fault then a copy-on-write
/// one) and completes before the next fenced counter read, so a sample is the whole access:
/// a plain store would retire into the store buffer and time as nothing.
pub fn touch_pages(map: &Mapping, add: u8, mut rec: Option<&mut Recorder>) -> u64 {
    let bytes = map.atomic_bytes();
    let f0 = minor_faults_self_thread();
    for off in (0..bytes.len()).step_by(PAGE) {
        let t0 = tsc();
        black_box(bytes[off].fetch_add(add, Ordering::Relaxed));
        let t1 = tsc();
        if let Some(r) = rec.as_deref_mut() {
            r.record_ticks(t1 - t0, 1);
        }
    }
    minor_faults_self_thread() - f0
}

/// Pages whose first byte is `value`: every variant must have written every page.
pub fn pages_holding(map: &mut Mapping, value: u8) -> usize {
    map.bytes()
        .iter()
        .step_by(PAGE)
        .filter(|&&b| b == value)
        .count()
}

/// The distribution of demand paging's second write to each page.
const SECOND_WRITE: &str = "first touch: second write per page (no fault)";

/// One variant's bookkeeping beyond its per-page samples.
#[derive(Debug)]
struct Tally {
    populate: Recorder,
    /// Each round's populating call ÷ its pages, ns.
    populate_per_page: Vec<f64>,
    populate_faults: Vec<u64>,
    touch_faults: Vec<u64>,
    /// Demand paging only: the second write to each page, once faulted.
    second: Option<Recorder>,
    pages_written: Vec<usize>,
    error: Option<String>,
}

impl Tally {
    fn new(ctx: &Ctx, m: Method) -> Tally {
        Tally {
            populate: Recorder::new(ctx.tsc),
            populate_per_page: Vec::new(),
            populate_faults: Vec::new(),
            touch_faults: Vec::new(),
            second: (m == Method::FirstTouch).then(|| Recorder::new(ctx.tsc)),
            pages_written: Vec::new(),
            error: None,
        }
    }

    /// One round of variant `m`: a fresh mapping of `len` bytes (an eighth of it, rounded up
    /// to a page, while `warm`), populated as `m` says, every page's first write timed into
    /// `rec`. Outside the warm-up it also tallies the populate cost and the faults, and for
    /// demand paging times a second write to every page; `pages` is what `len` holds.
    fn round(&mut self, m: Method, len: usize, pages: usize, warm: bool, rec: &mut Recorder) {
        // The warm-up needs page tables and free lists, not the whole size.
        let len = if warm {
            (len / 8).next_multiple_of(PAGE)
        } else {
            len
        };
        let mut p = match prepare(m, len) {
            Ok(p) => p,
            Err(e) => {
                self.error = Some(format!("{}: {e}", m.name()));
                return;
            }
        };
        let faults = touch_pages(&p.map, 1, Some(rec));
        if warm {
            return;
        }
        if m != Method::FirstTouch {
            self.populate.record_ticks(p.populate_ticks, pages as u32);
            let t = self.populate.tsc();
            self.populate_per_page
                .push(t.ns(p.populate_ticks.saturating_sub(t.overhead_ticks)) / pages as f64);
            self.populate_faults.push(p.populate_faults);
        }
        self.touch_faults.push(faults);
        if let Some(second) = self.second.as_mut() {
            touch_pages(&p.map, 1, Some(second));
            let n = pages_holding(&mut p.map, 2);
            self.pages_written.push(n);
        } else {
            let n = pages_holding(&mut p.map, 1);
            self.pages_written.push(n);
        }
    }
}

/// What the recorded rounds left: the variants that ran, each one's first-write distribution
/// and its tally, in the same order.
#[derive(Debug)]
struct Measured {
    methods: Vec<Method>,
    dists: Vec<Dist>,
    tallies: Vec<Tally>,
    /// Why mlock did not run, if it did not.
    mlock_error: Option<String>,
}

impl Measured {
    /// The faults `m` took while accessing and while populating, per round, if it ran.
    fn faults_of(&self, m: Method) -> Option<(Vec<u64>, Vec<u64>)> {
        self.methods
            .iter()
            .position(|&x| x == m)
            .map(|i| &self.tallies[i])
            .map(|t| (t.touch_faults.clone(), t.populate_faults.clone()))
    }

    /// Each round's populating cost per page (ns), if `m` ran.
    fn populate_per_page(&self, m: Method) -> Option<Vec<f64>> {
        self.methods
            .iter()
            .position(|&x| x == m)
            .map(|i| self.tallies[i].populate_per_page.clone())
    }
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    let len = ctx.pick(32usize << 20, 512 << 20);
    let rounds = ctx.pick(4, 3);
    run_with(ctx, len, rounds)
}

/// The experiment at `len` bytes per mapping and `rounds` recorded rounds (plus one warm-up).
pub fn run_with(ctx: &Ctx, len: usize, rounds: usize) -> anyhow::Result<Outcome> {
    let mut out = Outcome::new(
        "faults",
        "Page faults: demand paging vs pre-faulting",
        Level::System,
    );
    let (methods, mlock_error) = methods_that_run(len, &mut out);
    let reported_before = reported_kib();
    let mut measured = measure(ctx, methods, len, rounds)?;
    let reported_after = reported_kib();
    measured.mlock_error = mlock_error;
    push_dists(&mut out, &measured);
    compare(&mut out, &measured, len);
    push_notes(&mut out, &measured, len);
    out.notes
        .push(page_reporting_note(reported_before, reported_after, len));
    out.trader = "The trader pre-faults what its loop touches: the UMEM is mapped by xsk-rs with \
                  MAP_ANONYMOUS | MAP_SHARED | MAP_POPULATE (xsk-rs src/umem/mem/mmap.rs) and pinned \
                  by XDP_UMEM_REG (created in crates/afxdp/src/xsk.rs, Xsk::new → Umem::new); \
                  `trader --mlock` adds mlockall(MCL_CURRENT | MCL_FUTURE) \
                  (crates/afxdp/src/process.rs lock_memory, called in crates/trader/src/program/io.rs \
                  before the loop), off by default. The tick-to-trade core allocates nothing per \
                  tick (crates/trader-core/src/sequencer.rs and desk.rs: its `seen` window and pending arrays are made once \
                  in Trader::new), so after the first packets its pages stay mapped."
        .into();
    Ok(out)
}

/// Every method, less mlock when an mlock of `len` bytes fails here (it needs CAP_IPC_LOCK or
/// a big enough RLIMIT_MEMLOCK: probed at the real size), which a note then says; and why
/// mlock failed, if it did.
fn methods_that_run(len: usize, out: &mut Outcome) -> (Vec<Method>, Option<String>) {
    let mlock_ok = match prepare(Method::Mlock, len) {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    };
    let methods: Vec<Method> = Method::ALL
        .into_iter()
        .filter(|&m| m != Method::Mlock || mlock_ok.is_none())
        .collect();
    if let Some(e) = &mlock_ok {
        out.notes.push(format!(
            "mlock skipped: mlock of {} MiB failed ({e}); it needs CAP_IPC_LOCK or RLIMIT_MEMLOCK ≥ the mapping",
            len >> 20
        ));
    }
    (methods, mlock_ok)
}

/// Runs `methods` round by round, one warm-up round and `rounds` recorded ones, and checks
/// that every mapping was prepared and every page of it written each round.
fn measure(ctx: &Ctx, methods: Vec<Method>, len: usize, rounds: usize) -> anyhow::Result<Measured> {
    let pages = len / PAGE;
    let tallies: Vec<RefCell<Tally>> = methods
        .iter()
        .map(|&m| RefCell::new(Tally::new(ctx, m)))
        .collect();
    let warm = std::cell::Cell::new(true);
    let mut variants: Vec<Variant<'_>> = methods
        .iter()
        .zip(tallies.iter())
        .map(|(&m, tally)| {
            let warm = &warm;
            Variant::new(m.name(), move |rec: &mut Recorder| {
                tally.borrow_mut().round(m, len, pages, warm.get(), rec);
            })
        })
        .collect();
    // One unrecorded round of each at an eighth of the size (page-table pages, the
    // allocator's free lists), then the recorded rounds; `warm` keeps the warm-up's tallies out.
    let started = Instant::now();
    let _ = interleave(ctx.tsc, 1, 0, &mut variants);
    warm.set(false);
    let dists = interleave(ctx.tsc, 0, rounds, &mut variants);
    drop(variants);
    ctx.progress(&format!(
        "{} rounds of {} MiB in {:.1} s",
        rounds,
        len >> 20,
        started.elapsed().as_secs_f64()
    ));

    let tallies: Vec<Tally> = tallies.into_iter().map(RefCell::into_inner).collect();
    if let Some(e) = tallies.iter().find_map(|t| t.error.clone()) {
        anyhow::bail!("preparing a mapping failed: {e}");
    }
    for (m, t) in methods.iter().zip(&tallies) {
        if t.pages_written.iter().any(|&n| n != pages) {
            anyhow::bail!(
                "{}: pages written {:?}, expected {pages} each round",
                m.name(),
                t.pages_written
            );
        }
    }
    Ok(Measured {
        methods,
        dists,
        tallies,
        mlock_error: None,
    })
}

/// The distributions, named for the report: each variant's first write per page (first touch
/// first, with its second write after it), then every populating call's cost per page.
fn push_dists(out: &mut Outcome, measured: &Measured) {
    let mut populate_dists = Vec::new();
    for (i, (m, d)) in measured
        .methods
        .iter()
        .zip(measured.dists.iter().cloned())
        .enumerate()
    {
        let name = if *m == Method::FirstTouch {
            "first touch: first write per page (fault)".to_string()
        } else {
            format!("{}: first write per page after populating", m.name())
        };
        out.dists.push(crate::harness::Dist { name, ..d });
        let t = &measured.tallies[i];
        if let Some(second) = &t.second {
            out.dists.push(second.finish(SECOND_WRITE));
        }
        if *m != Method::FirstTouch {
            populate_dists.push(t.populate.finish(&format!(
                "{}: populating, per page (whole call ÷ pages)",
                m.name()
            )));
        }
    }
    out.dists.extend(populate_dists);
}

/// The study's figures: ≈ 2 µs per first touch, ≈ 20 ns per access once populated (ns).
const STUDY_FIRST_TOUCH: f64 = 2_000.0;
const STUDY_POPULATED: f64 = 20.0;

/// A percentile as the rows print it: `–` where the samples don't reach it.
fn shown(d: &Dist, q: f64) -> String {
    d.at(q).map_or_else(|| "–".to_string(), report::ns)
}

/// A percentile for a ratio: NaN (undecided by the rule) where the samples don't reach it.
fn at(d: &Dist, q: f64) -> f64 {
    d.at(q).unwrap_or(f64::NAN)
}

/// The comparisons with the study: first touch's faults and cost, then each pre-faulting
/// method's steady-state access and populating cost against first touch.
fn compare(out: &mut Outcome, measured: &Measured, len: usize) {
    let pages = len / PAGE;
    let first = out.dists[0].clone();
    let second = out
        .dists
        .iter()
        .find(|d| d.name == SECOND_WRITE)
        .cloned()
        .expect("first touch times a second write");
    let (ft_faults, _) = measured
        .faults_of(Method::FirstTouch)
        .expect("first touch always runs");
    let mib = len >> 20;
    out.comparisons.push(Comparison::finding(
        format!("minor faults, first touch of a {mib} MiB mapping ({pages} pages of 4 KiB)"),
        format!("{ft_faults:?} per round"),
        "~131,000 for 512 MB",
        fault_count_finding(&ft_faults, pages as u64),
    ));
    out.comparisons.push(Comparison::finding(
        "first touch per page, p50 (p99.9, max)",
        format!(
            "{} ({}, {})",
            shown(&first, 0.5),
            shown(&first, 0.999),
            report::ns(first.max_ns)
        ),
        "≈ 2 µs per page",
        first_touch_finding(at(&first, 0.5), at(&second, 0.5)),
    ));
    for m in [
        Method::MapPopulate,
        Method::MadvPopulateWrite,
        Method::Mlock,
    ] {
        compare_populated(out, measured, m, &first, len);
    }
}

/// The fault-count row's finding: one fault per 4 KiB page (and how many beyond), or how
/// many pages came without one.
pub fn fault_count_finding(faults: &[u64], pages: u64) -> String {
    let (Some(&lo), Some(&hi)) = (faults.iter().min(), faults.iter().max()) else {
        return "undecided: no recorded rounds".into();
    };
    if lo >= pages {
        format!(
            "one fault per 4 KiB page, as in the study: {lo}-{hi} per round for {pages} pages, \
             {}-{} beyond them (page-table pages, the stack)",
            lo - pages,
            hi - pages
        )
    } else {
        let short = faults.iter().filter(|&&f| f < pages).count();
        format!(
            "fewer faults than pages in {short} of {} rounds (as few as {lo} for {pages}): {} \
             pages came without a trap (THP or fault-around), unlike the study's one per page",
            faults.len(),
            pages - lo
        )
    }
}

/// The first-touch row's finding: our p50 against the study's ≈ 2 µs, and the second write
/// to the same pages, whose difference is the fault.
pub fn first_touch_finding(first: f64, second: f64) -> String {
    if !(first.is_finite() && second.is_finite()) {
        return "undecided: a p50 is missing (it needs 20 samples)".into();
    }
    format!(
        "{} per page, {:.2}× the study's ≈ 2 µs; a second write to the same page costs {} \
         ({:.0}× less), so the trap, the page allocation and the 4 KiB of zeroing are {} of it",
        report::ns(first),
        first / STUDY_FIRST_TOUCH,
        report::ns(second),
        first / second,
        report::ns(first - second)
    )
}

/// The steady-state row's reason: whether faults were left after populating, and how far our
/// two figures are from the study's (the ratio's gap to its 100× is their quotient).
pub fn populated_reason(first: f64, after: f64, faults: &[u64], vs_study: bool) -> String {
    if !(first.is_finite() && after.is_finite()) {
        return "a p50 is missing (it needs 20 samples)".into();
    }
    let left = if faults.iter().all(|&f| f == 0) {
        format!(
            "no faults left once populated (0 in each of {} rounds)",
            faults.len()
        )
    } else {
        format!(
            "faults remained after populating ({faults:?} per round): pages were reclaimed \
             in between"
        )
    };
    if vs_study {
        format!(
            "{left}; first touch is {:.2}× the study's 2 µs and the populated access {:.1}× its \
             20 ns (a locked add that waits out its TLB and cache miss: see notes)",
            first / STUDY_FIRST_TOUCH,
            after / STUDY_POPULATED
        )
    } else {
        format!(
            "{left}; the populated access pays a TLB and cache miss ({}) where first touch \
             pays the fault ({})",
            report::ns(after),
            report::ns(first)
        )
    }
}

/// The populate row's reason, by the rule's standing of first-touch p50 ÷ populate per page:
/// what bulk population saves or costs per page, and the faults charged to its calls.
pub fn populate_reason(first: f64, per_page: f64, faults: &[u64], pages: usize) -> String {
    let (f, p) = (report::ns(first), report::ns(per_page));
    let what = match verdict::standing(first / per_page, None) {
        Standing::Undecided => return "a figure is missing".into(),
        Standing::NoDifference => format!(
            "the same kernel work either way: {p} per page in bulk against {f} per fault, so \
             the allocation and zeroing dominate, not the trap"
        ),
        Standing::Reversed => format!(
            "dearer per page in bulk ({p}) than per fault ({f}): unexplained by this run's counts"
        ),
        _ => format!(
            "the same kernel work paid up front without a trap per page: {p} per page in bulk \
             against {f} per fault, {} less",
            report::ns(first - per_page)
        ),
    };
    format!("{what} ({faults:?} faults charged to the call for {pages} pages)")
}

/// Pre-faulting method `m`'s two rows: its steady-state first access against first touch
/// (`first`), and its populating cost; one undecided row when it did not run.
fn compare_populated(out: &mut Outcome, measured: &Measured, m: Method, first: &Dist, len: usize) {
    let (pages, mib) = (len / PAGE, len >> 20);
    if !measured.methods.contains(&m) {
        out.comparisons.push(Comparison::finding(
            format!(
                "{}: steady-state first access vs first touch, p50",
                m.name()
            ),
            "not measurable here",
            "≈ 20 ns vs ≈ 2 µs (MAP_POPULATE)",
            format!(
                "undecided: {} failed here ({})",
                m.name(),
                measured.mlock_error.as_deref().unwrap_or("see notes")
            ),
        ));
        return;
    }
    let after = out
        .dists
        .iter()
        .find(|d| d.name.starts_with(m.name()) && d.name.contains("after populating"))
        .expect("the variant's distribution")
        .clone();
    let (touch, popf) = measured.faults_of(m).expect("ran");
    let vs_study = m == Method::MapPopulate;
    out.comparisons.push(Comparison::judged(
        format!(
            "{}: steady-state first access vs first touch, p50 (faults while accessing)",
            m.name()
        ),
        format!(
            "{} vs {} ({:?} faults)",
            shown(&after, 0.5),
            shown(first, 0.5),
            touch
        ),
        at(first, 0.5) / at(&after, 0.5),
        if vs_study {
            "≈ 20 ns vs ≈ 2 µs"
        } else {
            "(the study measured MAP_POPULATE)"
        },
        vs_study.then_some(STUDY_FIRST_TOUCH / STUDY_POPULATED),
        &populated_reason(at(first, 0.5), at(&after, 0.5), &touch, vs_study),
    ));
    let per_page = measured.populate_per_page(m).expect("ran");
    let Some(pop) = Spread::of(&per_page) else {
        return;
    };
    out.comparisons.push(Comparison::judged(
        format!(
            "{}: populating cost per page (whole call ÷ pages) vs a first-touch fault, median \
             over rounds",
            m.name()
        ),
        format!(
            "{} per page ({}-{}, {} rounds), {} for {mib} MiB",
            report::ns(pop.median),
            report::ns(pop.min),
            report::ns(pop.max),
            pop.n,
            report::ns(pop.median * pages as f64),
        ),
        at(first, 0.5) / pop.median,
        "not stated",
        None,
        &populate_reason(at(first, 0.5), pop.median, &popf, pages),
    ));
}

/// The notes on method and on what the samples are: the round's shape and page sizes, what a
/// first-touch sample and a steady-state sample pay (with this run's outliers), and where the
/// fault counts come from.
const REPORTED_KIB: &str = "/sys/module/page_reporting/parameters/reported_kib";

/// KiB the guest's free page reporting has handed back to the host since boot, if it reports.
fn reported_kib() -> Option<u64> {
    std::fs::read_to_string(REPORTED_KIB)
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether free page reporting (virtio-balloon) gave freed memory back to the host while the
/// experiment ran: a page the host took back faults in the host too when the guest touches it
/// again, so first-touch figures may then hold a host fault beside the guest's.
pub fn page_reporting_note(before: Option<u64>, after: Option<u64>, len: usize) -> String {
    match (before, after) {
        (Some(b), Some(a)) if a > b => format!(
            "Free page reporting handed {} MiB of freed guest memory back to the host during \
             this experiment ({:.1}× one {} MiB mapping): a page touched again after that \
             faults in the host as well, so some first touches here include a host fault the \
             study's bare metal never paid.",
            (a - b) >> 10,
            (a - b) as f64 * 1024.0 / len as f64,
            len >> 20
        ),
        (Some(_), Some(_)) => "Free page reporting is on but handed nothing back to the host \
                               during this experiment: the first touches are the guest's \
                               faults alone."
            .into(),
        _ => "No free page reporting here (no page_reporting module): freed memory stays the \
              guest's."
            .into(),
    }
}

fn push_notes(out: &mut Outcome, measured: &Measured, len: usize) {
    let (pages, mib) = (len / PAGE, len >> 20);
    let first = out.dists[0].clone();
    let pop_faults = measured.faults_of(Method::MapPopulate).map(|(_, p)| p);
    let thp = crate::system::current_setting(&crate::system::read_trimmed(
        "/sys/kernel/mm/transparent_hugepage/enabled",
    ));
    out.notes.push(format!(
        "Each round maps a fresh {mib} MiB region ({pages} pages), writes the first byte of every \
         page and unmaps; variants take turns round by round, one warm-up round each. Per-page \
         samples are single writes between two fenced TSC reads, the timer's cost subtracted. \
         First touch, MADV_POPULATE_WRITE and mlock advise MADV_NOHUGEPAGE before any page \
         exists, so they get 4 KiB pages as in the study. {}",
        map_populate_pages_note(&thp, pop_faults.as_deref(), pages as u64)
    ));
    out.notes.push(format!(
        "A first-touch sample is dominated by the kernel: the trap, allocating a page and zeroing \
         4 KiB; in a KVM guest possibly also the host's own (EPT) fault the first time the guest \
         touches memory the host hasn't backed yet. {} After populating, the first write costs a \
         TLB miss (a page walk) and a cache miss and no trap.",
        first_touch_outlier_note(first.max_ns)
    ));
    let steady_max = out
        .dists
        .iter()
        .filter(|d| d.name.contains("after populating") || d.name.contains("no fault"))
        .map(|d| d.max_ns)
        .fold(0.0, f64::max);
    out.notes.push(format!(
        "The steady-state sample is a locked add to the page's first byte, so the counter read \
         waits for the write to complete: a TLB miss and a cache miss to DRAM (a few hundred ns \
         in this guest, like the random chase in `memory`). A plain store would retire into the \
         store buffer and time as ~1 ns; the study's ≈ 20 ns lies between the two, so compare \
         the no-fault vs fault gap, not the absolute figure. {}",
        steady_outlier_note(steady_max, kernel_hz())
    ));
    out.notes.push(
        "Minor faults are getrusage(RUSAGE_THREAD).ru_minflt around each pass. Faults the \
         populating calls take (get_user_pages inside the kernel) are charged to the thread as \
         the 'faults charged to the call' show; none of them reach user space as traps."
            .into(),
    );
}

/// What decides MAP_POPULATE's page size, and what the faults charged to its calls show.
/// `faults`: minor faults charged to each MAP_POPULATE call; `pages`: 4 KiB pages per mapping.
pub fn map_populate_pages_note(thp: &str, faults: Option<&[u64]>, pages: u64) -> String {
    let rule = format!(
        "MAP_POPULATE can't be advised before it populates, so its page size follows THP \
         (`{thp}` here): with `always` the kernel may back aligned 2 MiB stretches with huge \
         pages, with `madvise` or `never` it uses 4 KiB pages."
    );
    let seen = match faults {
        Some(f) if !f.is_empty() && f.iter().all(|&n| n >= pages) => format!(
            " Its calls were charged {f:?} faults for {pages} pages: one per 4 KiB page, so \
             4 KiB pages in this run."
        ),
        Some(f) if !f.is_empty() => format!(
            " Its calls were charged {f:?} faults for {pages} pages: fewer than one per 4 KiB \
             page, so some of it was likely backed by huge pages and its rows are not 4 KiB \
             demand paging."
        ),
        _ => String::new(),
    };
    rule + &seen
}

/// A claim about millisecond first-touch outliers only when the run had one.
pub fn first_touch_outlier_note(max_ns: f64) -> String {
    if max_ns >= 1e6 {
        format!(
            "This run's largest first-touch sample was {}: a millisecond outlier, which a \
             host-side fault or a descheduled vCPU could explain; this run can't tell which.",
            report::ns(max_ns)
        )
    } else {
        format!(
            "This run's largest first-touch sample was {}: no millisecond outliers.",
            report::ns(max_ns)
        )
    }
}

/// A claim about the steady-state max: tick-sized only when the kernel's HZ was read and the
/// max is within half a tick of one tick.
pub fn steady_outlier_note(max_ns: f64, hz: Option<u32>) -> String {
    let max = report::ns(max_ns);
    if max_ns < 1e6 {
        return format!("The largest steady-state sample was {max}: no millisecond outliers.");
    }
    match hz {
        Some(hz) if hz > 0 => {
            let tick = 1e9 / f64::from(hz);
            if (0.5 * tick..=1.5 * tick).contains(&max_ns) {
                format!(
                    "The largest steady-state sample was {max}, about one scheduler tick \
                     (CONFIG_HZ={hz}, {}): consistent with another runnable task taking a \
                     slice on the CPU.",
                    report::ns(tick)
                )
            } else {
                format!(
                    "The largest steady-state sample was {max}, not one scheduler tick \
                     (CONFIG_HZ={hz}, {}): a stall this run can't attribute.",
                    report::ns(tick)
                )
            }
        }
        _ => format!(
            "The largest steady-state sample was {max}: a millisecond stall (the kernel's \
             CONFIG_HZ could not be read, so whether it is a scheduler tick is not known)."
        ),
    }
}

/// CONFIG_HZ from the running kernel's config (`/boot/config-<release>`, else
/// `/proc/config.gz` through `gzip -dc`), if either is readable.
pub fn kernel_hz() -> Option<u32> {
    let release = crate::system::read_trimmed("/proc/sys/kernel/osrelease");
    let text = std::fs::read_to_string(format!("/boot/config-{release}"))
        .ok()
        .or_else(|| {
            let out = std::process::Command::new("gzip")
                .args(["-dc", "/proc/config.gz"])
                .stdin(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })?;
    parse_config_hz(&text)
}

/// `CONFIG_HZ=N` in a kernel config.
pub fn parse_config_hz(config: &str) -> Option<u32> {
    config
        .lines()
        .find_map(|l| l.strip_prefix("CONFIG_HZ="))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_reporting_note_follows_the_counter() {
        let mib = 32usize << 20;
        let n = page_reporting_note(Some(1_000), Some(1_000 + 65_536), mib);
        assert!(n.contains("handed 64 MiB") && n.contains("2.0×"), "{n}");
        assert!(page_reporting_note(Some(5), Some(5), mib).contains("handed nothing"));
        assert!(page_reporting_note(None, None, mib).starts_with("No free page reporting"));
    }
    use std::time::Duration;

    #[test]
    fn the_populate_verdict_follows_the_costs() {
        let v = |first: f64, per_page: f64| {
            verdict::verdict(
                first / per_page,
                None,
                &populate_reason(first, per_page, &[512], 512),
            )
        };
        let s = v(2_000.0, 500.0);
        assert!(s.starts_with("measurable here (4.00×)"), "{s}");
        assert!(
            s.contains("1.50 µs less") && s.contains("[512] faults"),
            "{s}"
        );
        let s = v(2_000.0, 1_900.0);
        assert!(s.starts_with("no measurable difference here"), "{s}");
        assert!(s.contains("allocation and zeroing dominate"), "{s}");
        let s = v(2_000.0, 3_000.0);
        assert!(
            s.starts_with("reversed here") && s.contains("unexplained"),
            "{s}"
        );
    }

    #[test]
    fn the_populated_access_verdict_follows_faults_and_figures() {
        let v = |first: f64, after: f64, faults: &[u64]| {
            verdict::verdict(
                first / after,
                Some(STUDY_FIRST_TOUCH / STUDY_POPULATED),
                &populated_reason(first, after, faults, true),
            )
        };
        // The study's own figures: agrees.
        let s = v(2_000.0, 20.0, &[0, 0]);
        assert!(s.starts_with("agrees (100.00×"), "{s}");
        assert!(s.contains("0 in each of 2 rounds"), "{s}");
        // A locked add that waits for DRAM: smaller here, and the reason says by how much.
        let s = v(1_500.0, 300.0, &[0, 0, 0]);
        assert!(s.starts_with("smaller here (5.00×"), "{s}");
        assert!(s.contains("populated access 15.0× its 20 ns"), "{s}");
        let s = v(1_500.0, 300.0, &[0, 12]);
        assert!(
            s.contains("faults remained after populating ([0, 12]"),
            "{s}"
        );
        assert!(populated_reason(f64::NAN, 1.0, &[], true).contains("missing"));
    }

    #[test]
    fn the_fault_findings_follow_the_counts() {
        let f = fault_count_finding(&[512, 514], 512);
        assert!(
            f.starts_with("one fault per 4 KiB page") && f.contains("0-2 beyond"),
            "{f}"
        );
        let f = fault_count_finding(&[512, 300], 512);
        assert!(
            f.starts_with("fewer faults than pages in 1 of 2 rounds"),
            "{f}"
        );
        assert!(f.contains("212 pages came without a trap"), "{f}");
        assert!(fault_count_finding(&[], 512).starts_with("undecided"));
        let f = first_touch_finding(1_000.0, 250.0);
        assert!(
            f.contains("0.50× the study's") && f.contains("4× less"),
            "{f}"
        );
        assert!(f.contains("750.0 ns of it"), "{f}");
        let f = first_touch_finding(4_000.0, 100.0);
        assert!(
            f.contains("2.00× the study's") && f.contains("40× less"),
            "{f}"
        );
    }

    #[test]
    fn map_populate_note_says_what_the_faults_show() {
        let n = map_populate_pages_note("always", Some(&[512, 513]), 512);
        assert!(
            n.contains("`always` here") && n.contains("4 KiB pages in this run"),
            "{n}"
        );
        let n = map_populate_pages_note("always", Some(&[2]), 512);
        assert!(n.contains("huge pages and its rows"), "{n}");
        let n = map_populate_pages_note("madvise", None, 512);
        assert!(!n.contains("charged"), "{n}");
    }

    #[test]
    fn outlier_notes_follow_the_measured_max() {
        assert!(first_touch_outlier_note(40_000.0).contains("no millisecond outliers"));
        assert!(first_touch_outlier_note(2.5e6).contains("a millisecond outlier"));
        assert!(steady_outlier_note(900.0, Some(250)).contains("no millisecond outliers"));
        let n = steady_outlier_note(4.1e6, Some(250));
        assert!(n.contains("about one scheduler tick (CONFIG_HZ=250"), "{n}");
        let n = steady_outlier_note(4.1e6, Some(1000));
        assert!(n.contains("not one scheduler tick"), "{n}");
        let n = steady_outlier_note(4.1e6, None);
        assert!(
            n.contains("could not be read") && !n.contains("CONFIG_HZ="),
            "{n}"
        );
        assert_eq!(
            parse_config_hz("# x\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n"),
            Some(250)
        );
        assert_eq!(parse_config_hz("CONFIG_HZ_PERIODIC=y\n"), None);
    }

    #[test]
    fn first_touch_faults_every_page_and_populated_mappings_fault_none() {
        let len = 4 << 20;
        let pages = (len / PAGE) as u64;
        let mut p = prepare(Method::FirstTouch, len).expect("map");
        let f = touch_pages(&p.map, 1, None);
        assert!(f >= pages, "first touch took {f} faults for {pages} pages");
        assert_eq!(touch_pages(&p.map, 1, None), 0, "second touch faults");
        assert_eq!(pages_holding(&mut p.map, 2), pages as usize);
        for m in [
            Method::MapPopulate,
            Method::MadvPopulateWrite,
            Method::Mlock,
        ] {
            let mut p = match prepare(m, len) {
                Ok(p) => p,
                // mlock without CAP_IPC_LOCK and a small RLIMIT_MEMLOCK: nothing to check.
                Err(e) if m == Method::Mlock => {
                    eprintln!("mlock: {e}");
                    continue;
                }
                Err(e) => panic!("{}: {e}", m.name()),
            };
            assert_eq!(touch_pages(&p.map, 1, None), 0, "{} left faults", m.name());
            assert_eq!(pages_holding(&mut p.map, 1), pages as usize, "{}", m.name());
        }
    }

    #[test]
    fn the_experiment_runs_small_and_every_variant_writes_every_page() {
        let ctx = Ctx {
            size: crate::Size::Small,
            tsc: crate::harness::Tsc::calibrate(Duration::from_millis(5)),
            cpu: 0,
            other_cpu: 1,
            root: false,
        };
        let out = run_with(&ctx, 2 << 20, 2).expect("runs");
        let ft = out.dist("first touch: first write per page (fault)");
        assert_eq!(ft.count, 2 * 512);
        assert_eq!(
            out.dist("MAP_POPULATE: first write per page after populating")
                .count,
            2 * 512
        );
        assert_eq!(
            out.dist("MAP_POPULATE: populating, per page (whole call ÷ pages)")
                .count,
            2
        );
        assert!(out.comparisons.len() >= 6, "{:?}", out.comparisons);
        assert!(
            out.comparisons[0]
                .verdict
                .starts_with("one fault per 4 KiB page"),
            "{}",
            out.comparisons[0].verdict
        );
        // No stop-gap rows: every row is judged by the rule or states a computed finding.
        assert!(out.comparisons.iter().all(|c| c.verdict != "–"));
        assert!(!out.trader.is_empty());
    }
}
