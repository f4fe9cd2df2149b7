//! Huge pages: the same random accesses over a working set far beyond the TLB's reach, on
//! 4 KiB pages, on transparent huge pages and on explicit 2 MiB HugeTLB pages, two ways: a
//! dependent pointer chase (each address is the load before it, so every miss is paid in full)
//! and independent loads (addresses from a generator, so the CPU overlaps the misses, as the
//! study's 43 cycles per access, below any DRAM latency, say its loop did); a TLB-reach probe
//! (the chase over sets just below and above the dTLB's 4 KiB reach, 4 KiB against huge
//! pages); and what THP costs when it allocates (first touch per 2 MiB region with THP
//! `always` vs `never`).
//!
//! The buffers hold the same single-cycle random chain (one load per cache line,
//! [`crate::chase`]), and every variant walks the same number of steps, so they must end on
//! the same slot: the checksum; the independent loads read the same addresses from each buffer
//! and must sum the same. What differs is only how many page walks they need: with 4 KiB pages
//! nearly every access misses the TLB (a 512 MiB set is 131,072 pages; the second-level dTLB
//! holds a few thousand), with 2 MiB pages the set is 256 pages.

use std::cell::Cell;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Ctx;
use crate::chase;
use crate::harness::{Dist, Recorder, Variant, interleave, tsc};
use crate::report::{self, Comparison, Curve, Level, Outcome, Series};
use crate::system::{HUGE_PAGE, MapOptions, Mapping, PAGE, SettingGuard};
use crate::verdict::{self, Standing};

/// Where the kernel's HugeTLB pool size is set.
pub const NR_HUGEPAGES: &str = "/proc/sys/vm/nr_hugepages";
/// The THP mode (`always [madvise] never`).
pub const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";
/// The THP defrag mode: whether a fault may compact memory to find a huge page.
pub const THP_DEFRAG: &str = "/sys/kernel/mm/transparent_hugepage/defrag";
/// The chain's seed: every variant links the same permutation.
const SEED: u64 = 0x05EE_D0FC_4A5E;

/// A HugeTLB reservation: the pool grown by what we need, shrunk back exactly on drop.
#[derive(Debug)]
pub struct Reservation {
    guard: SettingGuard,
    /// 2 MiB pages we added to the pool and got.
    pub got: usize,
}

impl Reservation {
    /// Asks the pool at `path` (normally [`NR_HUGEPAGES`]) for `pages` more pages; `got` says
    /// how many the kernel found (fewer when memory is fragmented).
    pub fn grow(path: impl AsRef<Path>, pages: usize) -> io::Result<Reservation> {
        let guard = SettingGuard::save(path.as_ref())?;
        let old: usize = guard.old().parse().map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {:?} ({e})", path.as_ref().display(), guard.old()),
            )
        })?;
        guard.set(&(old + pages).to_string())?;
        let now: usize = guard.now()?.parse().unwrap_or(old);
        Ok(Reservation {
            got: now.saturating_sub(old),
            guard,
        })
    }

    /// The pool size it will restore.
    pub fn old(&self) -> &str {
        self.guard.old()
    }
}

/// `AnonHugePages` (kB) of the mapping in `/proc/self/smaps` that contains `addr`.
pub fn anon_huge_kb(addr: usize) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let mut inside = false;
    for line in text.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((a, b)) = first.split_once('-')
            && let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
        {
            inside = (a..b).contains(&addr);
            continue;
        }
        if inside && let Some(rest) = line.strip_prefix("AnonHugePages:") {
            return rest.split_whitespace().next()?.parse().ok();
        }
    }
    None
}

/// Which pages back a chase buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// 4 KiB pages (`MADV_NOHUGEPAGE`).
    Small,
    /// Transparent huge pages (`MADV_HUGEPAGE` on a 2 MiB-aligned range).
    Thp,
    /// Explicit 2 MiB pages from the HugeTLB pool (`MAP_HUGETLB`).
    HugeTlb,
}

impl Backing {
    pub fn name(self) -> &'static str {
        match self {
            Backing::Small => "4 KiB pages",
            Backing::Thp => "THP (MADV_HUGEPAGE)",
            Backing::HugeTlb => "HugeTLB 2 MiB",
        }
    }
}

/// A buffer of `len` bytes on `backing`, the random chain (`perm`) linked into it.
pub fn chase_buffer(backing: Backing, len: usize, perm: &[u32]) -> io::Result<Mapping> {
    let m = match backing {
        Backing::Small => {
            let m = Mapping::anon(len, MapOptions::default())?;
            m.advise(libc::MADV_NOHUGEPAGE)?;
            m
        }
        Backing::Thp => {
            let m = Mapping::anon(
                len,
                MapOptions {
                    align: HUGE_PAGE,
                    ..MapOptions::default()
                },
            )?;
            m.advise(libc::MADV_HUGEPAGE)?;
            m
        }
        Backing::HugeTlb => Mapping::anon(
            len,
            MapOptions {
                hugetlb: true,
                ..MapOptions::default()
            },
        )?,
    };
    let mut m = m;
    chase::link(m.words(), chase::RANDOM_LANE, perm);
    Ok(m)
}

/// The distribution name of the dependent chase on `b`.
pub fn dependent_name(b: Backing) -> String {
    format!("dependent chase, {}", b.name())
}

/// The distribution name of the independent loads on `b`.
pub fn independent_name(b: Backing) -> String {
    format!("independent loads, {}", b.name())
}

/// The distribution name of the TLB-reach probe's chase over `size` bytes on `b`.
pub fn probe_name(b: Backing, size: usize) -> String {
    format!("TLB reach, {}, {}", size_text(size), b.name())
}

/// A working-set size as the rows print it (KiB below 1 MiB, else MiB).
fn size_text(size: usize) -> String {
    if size < 1 << 20 {
        format!("{} KiB", size >> 10)
    } else if size.is_multiple_of(1 << 20) {
        format!("{} MiB", size >> 20)
    } else {
        format!("{:.1} MiB", size as f64 / f64::from(1 << 20))
    }
}

/// `steps` loads from random lines of `words` (the word in [`chase::RANDOM_LANE`] of each),
/// every address from a generator rather than from the previous load, so no load waits for
/// another and the CPU overlaps their misses, as a loop over independent records does. Returns
/// the sum of the loaded words (a checksum: every buffer holds the same chain, so the same
/// addresses load the same words) and the generator's state for the next call. Not inlined, so
/// every buffer times the same loop.
#[inline(never)]
pub fn gather(words: &[u64], state: u64, steps: usize) -> (u64, u64) {
    let lines = (words.len() / chase::WORDS_PER_LINE) as u64;
    debug_assert!(lines <= u64::from(u32::MAX));
    let (mut x, mut sum) = (state, 0u64);
    for _ in 0..steps {
        // Knuth's MMIX LCG; its high 32 bits pick the line (Lemire's multiply-shift).
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let line = ((x >> 32) * lines) >> 32;
        sum = sum.wrapping_add(words[line as usize * chase::WORDS_PER_LINE + chase::RANDOM_LANE]);
    }
    (sum, x)
}

/// The dTLB's entries for 4 KiB pages, first and second level, and where the figures came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dtlb {
    pub l1: usize,
    pub l2: usize,
    /// `cpuid` (AMD's leaves 0x8000_0005 and 0x8000_0006), or assumed.
    pub source: &'static str,
}

impl Dtlb {
    /// What a CPU without readable sizes is assumed to have: 64 and 2,048 entries (Skylake's
    /// L1 dTLB and Zen 2-3's L2; Skylake's STLB has 1,536).
    pub const ASSUMED: Dtlb = Dtlb {
        l1: 64,
        l2: 2048,
        source: "assumed (cpuid gives them only on AMD)",
    };

    /// This CPU's, from cpuid where it says them (AMD), else [`Dtlb::ASSUMED`].
    pub fn read() -> Dtlb {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::__cpuid;
            let v = __cpuid(0);
            let vendor: Vec<u8> = [v.ebx, v.edx, v.ecx]
                .iter()
                .flat_map(|r| r.to_le_bytes())
                .collect();
            if vendor == b"AuthenticAMD" && __cpuid(0x8000_0000).eax >= 0x8000_0006 {
                let l1 = ((__cpuid(0x8000_0005).ebx >> 16) & 0xff) as usize;
                let l2 = ((__cpuid(0x8000_0006).ebx >> 16) & 0xfff) as usize;
                if l1 > 0 && l2 > 0 {
                    return Dtlb {
                        l1,
                        l2,
                        source: "cpuid",
                    };
                }
            }
        }
        Dtlb::ASSUMED
    }

    /// Bytes the first and second level reach with 4 KiB pages.
    pub fn reach(&self) -> (usize, usize) {
        (self.l1 * PAGE, self.l2 * PAGE)
    }
}

/// The probe's working sets: half and twice each level's 4 KiB reach, and four times the
/// second's; those that fit `len`, at least a page, each a whole number of pages.
pub fn probe_sizes(tlb: Dtlb, len: usize) -> Vec<usize> {
    let (r1, r2) = tlb.reach();
    let mut v: Vec<usize> = [r1 / 2, 2 * r1, r2 / 2, 2 * r2, 4 * r2]
        .into_iter()
        .map(|s| s.next_multiple_of(PAGE).max(PAGE))
        .filter(|&s| s <= len)
        .collect();
    v.dedup();
    v
}

/// One probe working set: its size, the lane its chain lives in, the chain's order.
#[derive(Debug)]
struct Probe {
    size: usize,
    lane: usize,
    perm: Vec<u32>,
}

impl Probe {
    /// One chain per size, each in its own lane (1, 2, ...: lane 0 is the big chase's) over the
    /// first `size` bytes of every buffer.
    fn for_sizes(sizes: &[usize]) -> Vec<Probe> {
        assert!(sizes.len() < chase::WORDS_PER_LINE, "one lane per probe");
        sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| Probe {
                size,
                lane: i + 1,
                perm: chase::random_cycle(size / chase::LINE, SEED ^ (i as u64 + 1)),
            })
            .collect()
    }
}

/// Links every probe's chain into the first `size` bytes of every buffer.
fn link_probes(bufs: &mut [(Backing, Mapping)], probes: &[Probe]) {
    for (_, m) in bufs.iter_mut() {
        for p in probes {
            chase::link(&mut m.words()[..p.size / 8], p.lane, &p.perm);
        }
    }
}

/// The probe's result at one size: the chase on 4 KiB pages and on huge pages.
#[derive(Debug, Clone)]
pub struct ProbePoint {
    pub size: usize,
    pub small: Dist,
    pub huge: Dist,
}

/// The huge-page buffer the comparisons use: HugeTLB where it ran, else THP.
fn huge_backing(have: impl Fn(Backing) -> bool) -> Backing {
    if have(Backing::HugeTlb) {
        Backing::HugeTlb
    } else {
        Backing::Thp
    }
}

/// One warm-up round and `rounds` recorded rounds of the probe's chases on 4 KiB pages and on
/// the huge-page buffer, every size, interleaved; fails unless both ended on the same slot at
/// every size.
fn time_probes(
    ctx: &Ctx,
    bufs: &[(Backing, Mapping)],
    probes: &[Probe],
    rounds: usize,
    steps: usize,
) -> anyhow::Result<Vec<ProbePoint>> {
    let huge = huge_backing(|b| bufs.iter().any(|(x, _)| *x == b));
    let pair: Vec<&(Backing, Mapping)> = bufs
        .iter()
        .filter(|(b, _)| *b == Backing::Small || *b == huge)
        .collect();
    let cases: Vec<(usize, Backing, &[u64], Cell<usize>)> = probes
        .iter()
        .flat_map(|p| {
            pair.iter()
                .map(move |(b, m)| (p.size, *b, m.words_shared(), Cell::new(p.lane)))
        })
        .collect();
    let mut variants: Vec<Variant<'_>> = cases
        .iter()
        .map(|(size, b, words, end)| {
            Variant::new(probe_name(*b, *size), move |r: &mut Recorder| {
                let t0 = tsc();
                let e = chase::walk(words, end.get(), steps);
                let t1 = tsc();
                end.set(e);
                r.record_ticks(t1 - t0, steps as u32);
            })
        })
        .collect();
    let dists = interleave(ctx.tsc, 1, rounds, &mut variants);
    drop(variants);
    let mut points = Vec::new();
    for p in probes {
        let at = |b: Backing| {
            cases
                .iter()
                .position(|(s, x, _, _)| *s == p.size && *x == b)
                .expect("every size on both buffers")
        };
        let (s, h) = (at(Backing::Small), at(huge));
        if cases[s].3.get() != cases[h].3.get() {
            anyhow::bail!(
                "the {} probe chases ended on different slots",
                size_text(p.size)
            );
        }
        points.push(ProbePoint {
            size: p.size,
            small: dists[s].clone(),
            huge: dists[h].clone(),
        });
    }
    Ok(points)
}

/// The independent loads' reason, 4 KiB against huge pages (p50 ns per access), beside the
/// dependent chase's step on huge pages (`dependent_huge`).
pub fn independent_reason(small: f64, huge: f64, dependent_huge: f64) -> String {
    if !(small.is_finite() && huge.is_finite()) {
        return "a p50 is missing (it needs 20 samples)".into();
    }
    let (lo, hi) = study_ns(STUDY_HUGE_CYCLES);
    let overlap = if dependent_huge.is_finite() {
        format!(
            ", {:.1}× less than a dependent step ({})",
            dependent_huge / huge,
            report::ns(dependent_huge)
        )
    } else {
        String::new()
    };
    format!(
        "the loads overlap their misses: {} per access on huge pages{overlap}, against the \
         study's {lo:.0}-{hi:.0} ns; on 4 KiB pages the page walk adds {} per access, {:.0} % \
         of it",
        report::ns(huge),
        report::ns(small - huge),
        100.0 * (small - huge) / small
    )
}

/// Which of our two loops the study's figures resemble, by the time per access on huge pages
/// (ns, the nearer to the study's 12-13 ns by their logarithm: a dependent step can't be
/// faster than memory's latency, an overlapped one can); then whether that loop's 4 KiB ÷
/// huge ratio stands with the study's 6.73× by the rule, and if not, how far our 4 KiB figure
/// is from the study's 290 cycles. `dependent`, `independent`: (4 KiB, huge) p50s.
pub fn resemblance_finding(dependent: (f64, f64), independent: (f64, f64)) -> String {
    let ok = |(a, b): (f64, f64)| a.is_finite() && b.is_finite() && a > 0.0 && b > 0.0;
    if !(ok(dependent) && ok(independent)) {
        return "undecided: a p50 is missing (it needs 20 samples)".into();
    }
    let (lo, hi) = study_ns(STUDY_HUGE_CYCLES);
    let (slo, shi) = study_ns(STUDY_SMALL_CYCLES);
    let mid = (lo * hi).sqrt();
    let study_ratio = STUDY_SMALL_CYCLES / STUDY_HUGE_CYCLES;
    let far = |x: f64| (x / mid).ln().abs();
    let ind = far(independent.1) < far(dependent.1);
    let (name, other, (small, huge)) = if ind {
        ("independent loop", "dependent chase", independent)
    } else {
        ("dependent chase", "independent loop", dependent)
    };
    let other_huge = if ind { dependent.1 } else { independent.1 };
    let time = format!(
        "the {name} by its time per access: on huge pages it takes {} ({:.1}× the study's \
         {lo:.0}-{hi:.0} ns), the {other} {} ({:.1}×)",
        report::ns(huge),
        huge / mid,
        report::ns(other_huge),
        other_huge / mid
    );
    let r = small / huge;
    match verdict::standing(r, Some(study_ratio)) {
        Standing::Agrees => format!(
            "{time}; its 4 KiB ÷ huge ratio agrees with the study's too ({r:.2}× vs \
             {study_ratio:.2}×)"
        ),
        st => format!(
            "{time}; but its 4 KiB ÷ huge ratio is {r:.2}× against the study's \
             {study_ratio:.2}× ({st} by the rule): the study's 4 KiB figure, 290 cycles \
             ({slo:.0}-{shi:.0} ns), is {:.1}× this loop's {} on 4 KiB pages, which this run \
             leaves unexplained (how many page walks a CPU runs at once is one candidate it \
             can't count)",
            (slo * shi).sqrt() / small,
            report::ns(small)
        ),
    }
}

/// A probe row's reason: whether `pages` 4 KiB pages fit the second-level dTLB's `entries`,
/// and what 4 KiB pages cost per step over huge ones (`small`, `huge`: p50 ns), by the rule's
/// standing of their ratio.
pub fn reach_reason(pages: usize, entries: usize, small: f64, huge: f64) -> String {
    let fits = pages <= entries;
    let set = if fits {
        format!("{pages} pages fit its {entries} entries")
    } else {
        format!("{pages} pages overflow its {entries} entries")
    };
    let (s, h) = (report::ns(small), report::ns(huge));
    match verdict::standing(small / huge, None) {
        Standing::Undecided => format!("{set}; a p50 is missing (it needs 20 samples)"),
        Standing::NoDifference if fits => format!("{set}: no walk to pay ({s} vs {h} per step)"),
        Standing::NoDifference => {
            format!("{set}, yet no measurable walk cost ({s} vs {h} per step)")
        }
        Standing::Reversed => {
            format!("{set}; 4 KiB pages are the cheaper ({s} vs {h}): unexplained")
        }
        _ if fits => format!(
            "{set}, yet 4 KiB pages cost {} more per step ({s} vs {h}): unexplained by the \
             entry count",
            report::ns(small - huge)
        ),
        _ => format!(
            "{set}: the walk adds {} per step ({s} vs {h})",
            report::ns(small - huge)
        ),
    }
}

/// What the nested page walk of a KVM guest predicts (a larger 4 KiB ÷ huge ratio than on
/// bare metal, for the same loop), against this run's independent loop (`independent`, its
/// ratio), the one like the study's; the dependent chase's ratio (`dependent`) beside.
pub fn nested_walk_note(independent: f64, dependent: f64) -> String {
    let study = STUDY_SMALL_CYCLES / STUDY_HUGE_CYCLES;
    let prediction = "In a KVM guest a TLB miss walks the guest's page table and, for each of \
                      its entries, the host's (EPT/NPT): up to 24 memory references instead of \
                      4, which predicts a larger 4 KiB ÷ huge ratio here than the study's bare \
                      metal for the same loop.";
    let seen = match verdict::standing(independent, Some(study)) {
        Standing::Undecided => "This run can't test it: a p50 is missing.".to_string(),
        Standing::LargerHere => format!(
            "This run's independent loop is consistent with it: {independent:.2}× against the \
             study's {study:.2}×."
        ),
        Standing::Agrees => format!(
            "This run can't tell: the independent loop's {independent:.2}× is within the rule's \
             {}× of the study's {study:.2}×.",
            verdict::AGREE
        ),
        _ => format!(
            "This run contradicts it: the independent loop's {independent:.2}× is below the \
             study's {study:.2}×. A host that backs this guest with 2 MiB pages shortens the \
             host's half of every walk, and the guest can't see how it is backed; the walk \
             caches may also hold more of the two tables here."
        ),
    };
    format!(
        "{prediction} {seen} The dependent chase's {dependent:.2}× is no test of it: each of \
         its steps waits for DRAM on either page size, which hides most of a walk."
    )
}

/// [`perf_tlb_probe`]'s error when there is no `perf` to run.
pub const PERF_NOT_INSTALLED: &str = "perf is not installed";

/// The TLB row's figure when perf can't count: no perf, a PMU that doesn't support the events
/// (`<not supported>`), or some other failure, each said as what it is.
pub fn perf_unavailable(why: &str) -> String {
    if why == PERF_NOT_INSTALLED {
        "not measurable here: perf is not installed".into()
    } else if why.contains("<not supported>") {
        format!(
            "not measurable here: the dTLB events are <not supported> (no hardware PMU exposed \
             to this machine) ({why})"
        )
    } else {
        format!("not measurable here: perf could not count the dTLB events ({why})")
    }
}

/// What `perf` can count here: `Ok` when dTLB loads and misses are both supported.
pub fn perf_tlb_probe() -> Result<(), String> {
    let out = Command::new("perf")
        .args([
            "stat",
            "-x",
            ",",
            "-e",
            "dTLB-load-misses,dTLB-loads",
            "--",
            "true",
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                PERF_NOT_INSTALLED.to_string()
            } else {
                format!("perf can't run ({e})")
            }
        })?;
    let text = String::from_utf8_lossy(&out.stderr);
    let counted = text
        .lines()
        .filter(|l| l.contains("dTLB-load"))
        .filter(|l| {
            l.split(',')
                .next()
                .is_some_and(|v| v.trim().parse::<u64>().is_ok())
        })
        .count();
    if out.status.success() && counted == 2 {
        Ok(())
    } else {
        let why: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("dTLB") || l.contains("rror"))
            .collect();
        Err(format!("perf stat: {}", why.join("; ")))
    }
}

/// dTLB loads and misses of this thread while `f` runs, from `perf stat -t`.
fn perf_tlb_during(f: impl FnOnce()) -> Option<(u64, u64)> {
    #[expect(unsafe_code, reason = "gettid has no safe wrapper in libc")]
    // SAFETY: gettid takes nothing and can't fail.
    let tid = unsafe { libc::gettid() };
    let child = Command::new("perf")
        .args(["stat", "-x", ",", "-e", "dTLB-load-misses,dTLB-loads", "-t"])
        .arg(tid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    // perf needs a moment to attach; the thread sleeps meanwhile, so it counts ~nothing.
    std::thread::sleep(Duration::from_millis(300));
    f();
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let out = child.wait_with_output().ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    let count = |event: &str| {
        text.lines()
            .find(|l| l.split(',').nth(2) == Some(event))
            .and_then(|l| l.split(',').next()?.trim().parse::<u64>().ok())
    };
    Some((count("dTLB-load-misses")?, count("dTLB-loads")?))
}

/// Sizes and the settings' paths (tests point these at temporary files).
#[derive(Debug, Clone)]
pub struct Params {
    /// The chase's working set, bytes.
    pub len: usize,
    pub rounds: usize,
    /// Loads per sample (dependent or independent).
    pub steps: usize,
    /// Recorded rounds of the TLB-reach probe.
    pub probe_rounds: usize,
    /// Bytes mapped per round of the THP allocation-tail part.
    pub thp_len: usize,
    pub thp_rounds: usize,
    pub nr_hugepages: String,
    pub thp_enabled: String,
}

impl Params {
    pub fn for_ctx(ctx: &Ctx) -> Params {
        Params {
            len: ctx.pick(64 << 20, 512 << 20),
            rounds: ctx.pick(40, 200),
            steps: ctx.pick(5_000, 20_000),
            probe_rounds: ctx.pick(20, 100),
            thp_len: ctx.pick(16 << 20, 64 << 20),
            // 32 rounds × 32 regions: 1,024 per mode, enough for a p99 at size default.
            thp_rounds: ctx.pick(4, 32),
            nr_hugepages: NR_HUGEPAGES.into(),
            thp_enabled: THP_ENABLED.into(),
        }
    }
}

pub fn run(ctx: &Ctx) -> anyhow::Result<Outcome> {
    ctx.pin()?;
    run_with(ctx, &Params::for_ctx(ctx))
}

pub fn run_with(ctx: &Ctx, p: &Params) -> anyhow::Result<Outcome> {
    let mut out = Outcome::new(
        "hugepages",
        "Huge pages: dependent and independent random loads beyond the TLB's reach, the TLB's \
         reach, and THP's allocation tail",
        Level::System,
    );
    chase_part(ctx, p, &mut out)?;
    thp_fault_part(ctx, p, &mut out)?;
    out.trader = "The UMEM can sit on explicit 2 MiB HugeTLB pages: `trader --huge-pages` \
                  (crates/trader/src/program) sets XskConfig::huge_pages, which Xsk::new \
                  (crates/afxdp/src/xsk.rs) passes to xsk-rs's Umem::new, which adds MAP_HUGETLB to \
                  its MAP_POPULATE mapping (xsk-rs src/umem/mem/mmap.rs); it is off by default \
                  and needs /proc/sys/vm/nr_hugepages reserved (`cargo xtask matrix` runs it as \
                  the huge-pages knob only when enough are). The default UMEM is 4096 frames × \
                  2048 B = 8 MiB on 4 KiB pages; the tick-to-trade state (crates/trader-core/src/sequencer.rs: \
                  an 8 KiB `seen` window, the engine's rings) is small enough that TLB reach \
                  matters far less to it than to this chase. THP is never asked for (no \
                  MADV_HUGEPAGE anywhere in userspace/src)."
        .into();
    Ok(out)
}

/// The chase and the independent loads on every backing that can be had here, the TLB-reach
/// probe, TLB misses where perf counts them, and the comparisons with the study.
fn chase_part(ctx: &Ctx, p: &Params, out: &mut Outcome) -> anyhow::Result<()> {
    let (rounds, steps) = (p.rounds, p.steps);
    let (reservation, len) = reserve_hugetlb(ctx, p, out);
    let hugetlb = reservation
        .as_ref()
        .is_some_and(|r| r.got * HUGE_PAGE >= len);
    let tlb = Dtlb::read();
    let probes = Probe::for_sizes(&probe_sizes(tlb, len));
    let mut bufs = chase_buffers(ctx, len, hugetlb, out)?;
    link_probes(&mut bufs, &probes);
    let thp_huge_kb = bufs
        .iter()
        .find(|(b, _)| *b == Backing::Thp)
        .and_then(|(_, m)| anon_huge_kb(m.addr()));
    let dists = time_chases(ctx, &bufs, rounds, steps)?;
    let points = time_probes(ctx, &bufs, &probes, p.probe_rounds, steps)?;

    // TLB misses, where perf can count them.
    let perf = perf_tlb_probe();
    let tlb_counted = if perf.is_ok() {
        tlb_counts(&bufs)
    } else {
        Vec::new()
    };
    drop(bufs);
    if let Some(r) = reservation {
        out.notes.push(release_hugetlb(r, p));
    }

    compare_chases(ctx, out, &dists, len, thp_huge_kb);
    let (independent, dependent) = compare_loops(out, &dists, len);
    probe_rows(out, &points, tlb, p.probe_rounds, steps);
    out.comparisons.push(tlb_comparison(&perf, &tlb_counted));
    out.notes.push(format!(
        "The chase: {} MiB, one load per 64-byte line along one random cycle through all {} \
         lines (each step a random 4 KiB page and a random line of it), the same chain in \
         every buffer; each step's address is the load before it, so no two misses overlap. \
         The independent loads: as many loads from lines picked by a generator, not by the \
         previous load, so the CPU overlaps their misses (as a loop over independent records, \
         which the study's 43 cycles per access suggest, does). {rounds} rounds × {steps} \
         loads per variant, both loops on every buffer interleaved in an order rotated each \
         round; a sample is a round's mean per access, so the percentiles are of \
         {steps}-access means. Every chase ends on the same slot and every buffer's loads sum \
         the same (checked). Ticks are the TSC's (constant rate, {:.3} GHz here), not core \
         cycles: the study's 'cycles' are core cycles of a 3.2-3.6 GHz i5-6500.",
        len >> 20,
        len / chase::LINE,
        ctx.tsc.ticks_per_ns
    ));
    out.notes.push(format!(
        "What dominates: at {} MiB every step misses the caches and, on 4 KiB pages, the TLB \
         too, so a dependent step is a DRAM access plus a page walk whose own entries may miss \
         the caches; the independent loads pay the same misses but overlapped. {}",
        len >> 20,
        nested_walk_note(independent, dependent)
    ));
    Ok(())
}

/// HugeTLB: grows the pool by what the set needs (root only; restored exactly when the
/// reservation drops), noting a short or failed reservation. Returns the reservation and the
/// working set every variant uses: `p.len`, or what a short reservation holds if that is at
/// least 4 huge pages.
fn reserve_hugetlb(ctx: &Ctx, p: &Params, out: &mut Outcome) -> (Option<Reservation>, usize) {
    let want = p.len;
    let mut len = want;
    let reservation = if ctx.root {
        match Reservation::grow(&p.nr_hugepages, want / HUGE_PAGE) {
            Ok(r) => {
                if r.got < want / HUGE_PAGE {
                    out.notes.push(format!(
                        "HugeTLB reservation short: asked for {} pages of 2 MiB, got {}; every \
                         variant uses the {} MiB that fit",
                        want / HUGE_PAGE,
                        r.got,
                        r.got * 2
                    ));
                    len = r.got * HUGE_PAGE;
                }
                Some(r)
            }
            Err(e) => {
                out.notes.push(format!(
                    "HugeTLB skipped: growing {} failed ({e})",
                    p.nr_hugepages
                ));
                None
            }
        }
    } else {
        out.notes
            .push("HugeTLB skipped: reserving huge pages needs root".into());
        None
    };
    if len < 4 * HUGE_PAGE {
        // Too little for a fair comparison: run 4 KiB and THP at the size asked for.
        len = want;
    }
    (reservation, len)
}

/// The chain linked into a `len`-byte buffer on 4 KiB pages, on THP and (when `hugetlb`) on
/// HugeTLB pages; a HugeTLB mapping that fails is noted and left out, any other fails the run.
fn chase_buffers(
    ctx: &Ctx,
    len: usize,
    hugetlb: bool,
    out: &mut Outcome,
) -> anyhow::Result<Vec<(Backing, Mapping)>> {
    let mut backings = vec![Backing::Small, Backing::Thp];
    if hugetlb {
        backings.push(Backing::HugeTlb);
    }
    let started = Instant::now();
    let perm = chase::random_cycle(chase::slots(len / 8), SEED);
    let mut bufs = Vec::new();
    for &b in &backings {
        match chase_buffer(b, len, &perm) {
            Ok(m) => bufs.push((b, m)),
            Err(e) if b == Backing::HugeTlb => out.notes.push(format!(
                "HugeTLB skipped: MAP_HUGETLB of {len} B failed ({e})"
            )),
            Err(e) => return Err(anyhow::anyhow!("{}: mapping {len} B: {e}", b.name())),
        }
    }
    drop(perm);
    ctx.progress(&format!(
        "{} MiB chain linked into {} buffers in {:.1} s",
        len >> 20,
        bufs.len(),
        started.elapsed().as_secs_f64()
    ));
    Ok(bufs)
}

/// The big set's timed loops on every buffer: the dependent chase and the independent loads,
/// two warm-up rounds and `rounds` recorded rounds of `steps` loads each, all interleaved, a
/// sample being a round's mean per access. Returns the chases' distributions, then the loads';
/// fails unless every chase ended on the same slot and every buffer's loads summed the same.
fn time_chases(
    ctx: &Ctx,
    bufs: &[(Backing, Mapping)],
    rounds: usize,
    steps: usize,
) -> anyhow::Result<Vec<Dist>> {
    let ends: Vec<Cell<usize>> = bufs.iter().map(|_| Cell::new(0)).collect();
    // Each buffer's running sum and generator state: the same seed everywhere.
    let sums: Vec<Cell<(u64, u64)>> = bufs.iter().map(|_| Cell::new((0, SEED))).collect();
    let mut variants: Vec<Variant<'_>> = Vec::new();
    for ((b, m), end) in bufs.iter().zip(&ends) {
        let words = m.words_shared();
        variants.push(Variant::new(dependent_name(*b), move |r: &mut Recorder| {
            let t0 = tsc();
            let e = chase::walk(words, end.get(), steps);
            let t1 = tsc();
            end.set(e);
            r.record_ticks(t1 - t0, steps as u32);
        }));
    }
    for ((b, m), sum) in bufs.iter().zip(&sums) {
        let words = m.words_shared();
        variants.push(Variant::new(
            independent_name(*b),
            move |r: &mut Recorder| {
                let (acc, state) = sum.get();
                let t0 = tsc();
                let (s, next) = gather(words, state, steps);
                let t1 = tsc();
                sum.set((acc.wrapping_add(s), next));
                r.record_ticks(t1 - t0, steps as u32);
            },
        ));
    }
    let dists = interleave(ctx.tsc, 2, rounds, &mut variants);
    drop(variants);
    let checksums: Vec<usize> = ends.iter().map(Cell::get).collect();
    if checksums.windows(2).any(|w| w[0] != w[1]) {
        anyhow::bail!("the chases ended on different slots: {checksums:?}");
    }
    let totals: Vec<(u64, u64)> = sums.iter().map(Cell::get).collect();
    if totals.windows(2).any(|w| w[0] != w[1]) {
        anyhow::bail!("the independent loads summed differently: {totals:?}");
    }
    Ok(dists)
}

/// Each buffer's dTLB (misses, loads) from `perf stat -t` over half a second of chasing; `None`
/// where perf's output could not be read.
fn tlb_counts(bufs: &[(Backing, Mapping)]) -> Vec<(Backing, Option<(u64, u64)>)> {
    let mut tlb = Vec::new();
    for (b, m) in bufs {
        let words = m.words_shared();
        let r = perf_tlb_during(|| {
            let mut e = 0;
            let until = Instant::now() + Duration::from_millis(500);
            while Instant::now() < until {
                e = chase::walk(words, e, 100_000);
            }
            std::hint::black_box(e);
        });
        tlb.push((*b, r));
    }
    tlb
}

/// Drops the reservation (the pool shrinks back) and says whether the pool reads back as it was.
fn release_hugetlb(r: Reservation, p: &Params) -> String {
    let before = r.old().to_string();
    drop(r);
    let after = crate::system::current_setting(&crate::system::read_trimmed(&p.nr_hugepages));
    restore_note(
        &format!("HugeTLB pool ({})", p.nr_hugepages),
        &before,
        &after,
    )
}

/// The study's cycles per access, 4 KiB and HugeTLB pages, and the i5-6500's clock range
/// (3.2 GHz base, 3.6 GHz turbo) that turns them into ns.
const STUDY_SMALL_CYCLES: f64 = 290.0;
const STUDY_HUGE_CYCLES: f64 = 43.12;
const STUDY_GHZ: (f64, f64) = (3.2, 3.6);

/// The study's ns per access for `cycles`, at its clock's two ends (low, high).
fn study_ns(cycles: f64) -> (f64, f64) {
    (cycles / STUDY_GHZ.1, cycles / STUDY_GHZ.0)
}

/// The dependent chase's reason, 4 KiB against huge pages (p50 ns per access): what a step
/// waits for on huge pages against the study's, and what the page walk adds.
pub fn dependent_reason(small: f64, huge: f64) -> String {
    if !(small.is_finite() && huge.is_finite()) {
        return "a p50 is missing (it needs 20 samples)".into();
    }
    let (lo, hi) = study_ns(STUDY_HUGE_CYCLES);
    let walk = report::ns(small - huge);
    if huge > 2.0 * hi {
        format!(
            "each step of a dependent chase waits for memory: {} per step on huge pages, where \
             the study's 43 cycles are {lo:.0}-{hi:.0} ns ({:.0}× less), below any DRAM latency, \
             so its loop was not a dependent chase; the page walk adds {walk} per step on 4 KiB \
             pages",
            report::ns(huge),
            huge / hi,
        )
    } else {
        format!(
            "a dependent step on huge pages takes {} here, near the study's {lo:.0}-{hi:.0} ns: \
             the set is served from a cache, not memory; the page walk adds {walk} per step on \
             4 KiB pages",
            report::ns(huge),
        )
    }
}

/// The chases' distributions, and their rows against the study: 4 KiB vs HugeTLB (or why it is
/// not measurable) and 4 KiB vs THP. `thp_huge_kb` is how much of the THP buffer was on huge
/// pages, if read.
fn compare_chases(
    ctx: &Ctx,
    out: &mut Outcome,
    dists: &[Dist],
    len: usize,
    thp_huge_kb: Option<u64>,
) {
    let t = ctx.tsc;
    let get = |b: Backing| dists.iter().find(|d| d.name == dependent_name(b)).cloned();
    let small = get(Backing::Small).expect("4 KiB always runs");
    let p50 = |d: &Dist| d.at(0.5).unwrap_or(f64::NAN);
    let fmt = |d: &Dist| match d.at(0.5) {
        Some(v) => format!("{:.1} ticks ({})", v * t.ticks_per_ns, report::ns(v)),
        None => "–".to_string(),
    };
    out.dists.extend(dists.iter().cloned());
    let study = "290 vs 43.12 cycles/access";
    let study_ratio = Some(STUDY_SMALL_CYCLES / STUDY_HUGE_CYCLES);
    match get(Backing::HugeTlb) {
        Some(h) => out.comparisons.push(Comparison::judged(
            format!(
                "random chase over {} MiB, 4 KiB vs HugeTLB 2 MiB pages, per access (p50)",
                len >> 20
            ),
            format!("{} vs {}", fmt(&small), fmt(&h)),
            p50(&small) / p50(&h),
            study,
            study_ratio,
            &dependent_reason(p50(&small), p50(&h)),
        )),
        None => out.comparisons.push(Comparison::finding(
            "random chase, 4 KiB vs HugeTLB 2 MiB pages, per access",
            "not measurable here",
            study,
            "undecided: no HugeTLB pages here (see notes)".into(),
        )),
    }
    if let Some(thp) = get(Backing::Thp) {
        out.comparisons.push(Comparison::judged(
            format!(
                "random chase over {} MiB, 4 KiB vs THP, per access (p50)",
                len >> 20
            ),
            format!(
                "{} vs {} ({} of {} MiB on huge pages)",
                fmt(&small),
                fmt(&thp),
                thp_huge_kb.map_or("?".into(), |k| (k >> 10).to_string()),
                len >> 20
            ),
            p50(&small) / p50(&thp),
            "(THP not measured; HugeTLB 6.7×)",
            None,
            &thp_reason(
                p50(&small),
                p50(&thp),
                get(Backing::HugeTlb).map(|h| p50(&h)),
                thp_huge_kb.map(|k| (k as f64 * 1024.0 / len as f64).min(1.0)),
            ),
        ));
    }
}

/// The big set's rows beyond the dependent chase: the independent loads, 4 KiB against huge
/// pages (HugeTLB, else THP), and which of the two loops the study's figure resembles.
fn compare_loops(out: &mut Outcome, dists: &[Dist], len: usize) -> (f64, f64) {
    let get = |name: String| dists.iter().find(|d| d.name == name).cloned();
    let huge = huge_backing(|b| get(dependent_name(b)).is_some());
    let p50 = |d: &Option<Dist>| d.as_ref().and_then(|d| d.at(0.5)).unwrap_or(f64::NAN);
    let ds = p50(&get(dependent_name(Backing::Small)));
    let dh = p50(&get(dependent_name(huge)));
    let is = p50(&get(independent_name(Backing::Small)));
    let ih = p50(&get(independent_name(huge)));
    let ns = |v: f64| {
        if v.is_finite() {
            report::ns(v)
        } else {
            "–".into()
        }
    };
    out.comparisons.push(Comparison::judged(
        format!(
            "independent random loads over {} MiB, 4 KiB vs {}, per access (p50)",
            len >> 20,
            huge.name()
        ),
        format!("{} vs {}", ns(is), ns(ih)),
        is / ih,
        "290 vs 43.12 cycles/access",
        Some(STUDY_SMALL_CYCLES / STUDY_HUGE_CYCLES),
        &independent_reason(is, ih, dh),
    ));
    let (lo, hi) = study_ns(STUDY_HUGE_CYCLES);
    let (slo, shi) = study_ns(STUDY_SMALL_CYCLES);
    out.comparisons.push(Comparison::finding(
        "which of our loops the study's cycles per access resemble",
        format!(
            "dependent {} → {} ({:.2}×); independent {} → {} ({:.2}×)",
            ns(ds),
            ns(dh),
            ds / dh,
            ns(is),
            ns(ih),
            is / ih
        ),
        format!("290 → 43.12 cycles ({slo:.0}-{shi:.0} → {lo:.0}-{hi:.0} ns), 6.73×"),
        resemblance_finding((ds, dh), (is, ih)),
    ));
    (is / ih, ds / dh)
}

/// The TLB-reach probe's rows (just below and just above the second-level dTLB's 4 KiB reach),
/// its curve, and a note with every size's ratio.
fn probe_rows(out: &mut Outcome, points: &[ProbePoint], tlb: Dtlb, rounds: usize, steps: usize) {
    let Some(first) = points.first() else {
        return;
    };
    let huge = first
        .huge
        .name
        .rsplit(", ")
        .next()
        .unwrap_or("huge pages")
        .to_string();
    let p50 = |d: &Dist| d.at(0.5).unwrap_or(f64::NAN);
    let (r1, r2) = tlb.reach();
    for p in points
        .iter()
        .filter(|p| p.size == (r2 / 2).next_multiple_of(PAGE) || p.size == 2 * r2)
    {
        let pages = p.size / PAGE;
        let side = if pages <= tlb.l2 { "below" } else { "above" };
        out.comparisons.push(Comparison::judged(
            format!(
                "TLB reach: random chase over {} ({pages} pages of 4 KiB, {side} the L2 dTLB's \
                 {} entries), 4 KiB vs {huge}, per step (p50)",
                size_text(p.size),
                tlb.l2
            ),
            format!(
                "{} vs {}",
                report::ns(p50(&p.small)),
                report::ns(p50(&p.huge))
            ),
            p50(&p.small) / p50(&p.huge),
            "not measured (its one set is far beyond any TLB's reach)",
            None,
            &reach_reason(pages, tlb.l2, p50(&p.small), p50(&p.huge)),
        ));
    }
    let each: Vec<String> = points
        .iter()
        .map(|p| {
            format!(
                "{} {:.2}× ({} vs {})",
                size_text(p.size),
                p50(&p.small) / p50(&p.huge),
                report::ns(p50(&p.small)),
                report::ns(p50(&p.huge))
            )
        })
        .collect();
    out.notes.push(format!(
        "TLB-reach probe: the dTLB holds {} entries for 4 KiB pages at its first level and {} at \
         its second ({}), so 4 KiB pages reach {} and {}; the same random chase (its own chain, \
         one load per line) over sets at half and twice each reach and four times the second, on \
         4 KiB pages and on {huge}, {rounds} rounds × {steps} steps, interleaved. 4 KiB ÷ huge \
         per step: {}. Below a reach both page sizes hit the TLB; beyond the second every 4 KiB \
         step walks, while the data misses the caches alike on both, so the difference there is \
         the walk.",
        tlb.l1,
        tlb.l2,
        tlb.source,
        size_text(r1),
        size_text(r2),
        each.join(", ")
    ));
    out.notes.push(umem_reach_note(tlb));
    out.curves.push(Curve {
        id: "hugepages-tlb-reach".into(),
        title: "Random chase per step over working-set size: 4 KiB vs huge pages".into(),
        x_label: "working set (bytes)".into(),
        y_label: "ns per step (p50)".into(),
        log_x: true,
        log_y: false,
        series: [("4 KiB pages", false), (huge.as_str(), true)]
            .into_iter()
            .map(|(name, is_huge)| Series {
                name: name.into(),
                points: points
                    .iter()
                    .map(|p| {
                        let d = if is_huge { &p.huge } else { &p.small };
                        (p.size as f64, p50(d))
                    })
                    .filter(|(_, y)| y.is_finite())
                    .collect(),
            })
            .collect(),
    });
    for p in points {
        out.dists.push(p.small.clone());
        out.dists.push(p.huge.clone());
    }
}

/// The trader's default UMEM: 4096 frames of 2048 B (`XskConfig::default`, crates/afxdp/src/xsk.rs).
const UMEM_BYTES: usize = 4096 * 2048;

/// Whether the trader's default UMEM on 4 KiB pages fits this CPU's second-level dTLB.
pub fn umem_reach_note(tlb: Dtlb) -> String {
    let pages = UMEM_BYTES / PAGE;
    let (_, r2) = tlb.reach();
    let fits = if pages <= tlb.l2 {
        format!(
            "fits its {} entries ({}), so on this CPU `--huge-pages` saves the UMEM no walks \
             once its pages are in the TLB, though the trader's other pages share those entries",
            tlb.l2,
            size_text(r2)
        )
    } else {
        format!(
            "overflows its {} entries ({}), so frames spread over the whole UMEM walk on \
             4 KiB pages, which `--huge-pages` (4 pages of 2 MiB) removes",
            tlb.l2,
            size_text(r2)
        )
    };
    format!(
        "The trader's default UMEM is 4096 frames × 2048 B = {} (XskConfig::default, \
         crates/afxdp/src/xsk.rs): {pages} pages of 4 KiB, which {fits}.",
        size_text(UMEM_BYTES)
    )
}

/// The dTLB miss-share row: 4 KiB against huge pages (HugeTLB, else THP) from `tlb`, or why
/// perf could not count (`perf`'s error).
fn tlb_comparison(perf: &Result<(), String>, tlb: &[(Backing, Option<(u64, u64)>)]) -> Comparison {
    let what = "dTLB-load miss share, 4 KiB → huge pages";
    let study = "1.33 % → 0.09 %";
    let why = match perf {
        Ok(()) => {
            let share = |b: Backing| {
                tlb.iter()
                    .find(|(x, _)| *x == b)
                    .and_then(|(_, r)| *r)
                    .map(|(miss, loads)| 100.0 * miss as f64 / loads.max(1) as f64)
            };
            let s = share(Backing::Small);
            let h = share(Backing::HugeTlb).or(share(Backing::Thp));
            let pct = |v: Option<f64>| v.map_or("?".into(), |v| format!("{v:.2} %"));
            return Comparison::judged(
                what,
                format!("{} → {}", pct(s), pct(h)),
                s.zip(h).map_or(f64::NAN, |(s, h)| s / h),
                study,
                Some(1.33 / 0.09),
                &match (s, h) {
                    (Some(s), Some(h)) => format!(
                        "perf stat -t counted {s:.2} % of dTLB loads missing on 4 KiB pages and \
                         {h:.2} % on huge pages while each chase ran"
                    ),
                    _ => "perf ran but its counts could not be read".into(),
                },
            );
        }
        Err(why) => perf_unavailable(why),
    };
    Comparison::finding(
        what,
        why,
        study,
        "undecided: no dTLB counts here; the time per access is the only evidence".into(),
    )
}

/// Whether a setting read back after its guard dropped is what was saved before the run.
pub fn restore_note(what: &str, before: &str, after: &str) -> String {
    if before == after {
        format!("{what} read back after the run as `{after}`, what it was before: restored.")
    } else {
        format!(
            "{what} read back after the run as `{after}`, but it was `{before}` before: NOT \
             restored (something else changed it, or the write failed; see stderr)."
        )
    }
}

/// The THP row's reason from the p50s per access: THP against HugeTLB where that ran (by the
/// rule's standing of their ratio), and the fraction of the THP buffer the kernel backed with
/// huge pages (`huge_share`), if read.
pub fn thp_reason(small: f64, thp: f64, hugetlb: Option<f64>, huge_share: Option<f64>) -> String {
    let gap = format!(
        "4 KiB pages cost {} more per access than THP ({} vs {}); ",
        report::ns(small - thp),
        report::ns(small),
        report::ns(thp)
    );
    let vs = match hugetlb {
        Some(h) => {
            let r = thp / h;
            match verdict::standing(r, None) {
                Standing::NoDifference => format!(
                    "THP matches HugeTLB within noise ({} vs {} per access)",
                    report::ns(thp),
                    report::ns(h)
                ),
                Standing::Measurable => format!("THP is {r:.2}× slower per access than HugeTLB"),
                Standing::Reversed => {
                    format!("THP is {:.2}× faster per access than HugeTLB", 1.0 / r)
                }
                _ => "a p50 is missing".into(),
            }
        }
        None => "HugeTLB not measured".into(),
    };
    let share = match huge_share {
        Some(f) => format!(
            "; the kernel backed {:.0} % of the THP buffer with huge pages{}",
            100.0 * f,
            if f < 1.0 {
                " (THP is best-effort, HugeTLB is reserved)"
            } else {
                ""
            }
        ),
        None => "; how much of the THP buffer was on huge pages could not be read".to_string(),
    };
    gap + &vs + &share
}

/// The THP allocation rows' reason for the p50 per 2 MiB region, never ÷ always (`never`,
/// `always`, ns): what one 2 MiB fault costs against 512 small ones, and how many regions
/// got a huge page.
pub fn thp_alloc_reason(never: f64, always: f64, huge: usize, regions: usize) -> String {
    let got = format!("{huge} of {regions} regions got a huge page under `always`");
    if huge == 0 {
        return format!("{got}: both modes faulted 4 KiB pages, so the ratio compares nothing");
    }
    let (n, a) = (report::ns(never), report::ns(always));
    let what = match verdict::standing(never / always, None) {
        Standing::Undecided => return format!("a p50 is missing; {got}"),
        Standing::NoDifference => format!(
            "the same per region either way ({a} vs {n}): zeroing 2 MiB dominates, not the 512 \
             traps"
        ),
        Standing::Reversed => format!(
            "one 2 MiB fault ({a}) costs more than 512 small ones ({n}) per region: unexplained"
        ),
        _ => format!(
            "one fault allocates and zeroes 2 MiB: {a} per region against 512 faults of about \
             {} each",
            report::ns(never / 512.0)
        ),
    };
    format!("{what}; {got}")
}

/// The THP allocation tail's reason: p99 ÷ p50 under `always` against under `never` (each
/// mode's [`Dist`]), undecided with the count until p99 has its samples.
pub fn thp_tail_reason(always: &Dist, never: &Dist, defrag: &str) -> String {
    let depth = |d: &Dist| d.at(0.99).zip(d.at(0.5));
    match (depth(always), depth(never)) {
        (Some((a99, a50)), Some((n99, n50))) => {
            let r = (a99 / a50) / (n99 / n50);
            let what = match verdict::standing(r, None) {
                Standing::Measurable => "THP's tail is the deeper one relative to its median",
                Standing::Reversed => "4 KiB faults have the deeper tail relative to their median",
                _ => "no deeper tail under `always` relative to its median",
            };
            format!(
                "{what}: p99 {} over p50 {} under `always`, {} over {} under `never`; defrag is \
                 `{defrag}` (compaction spikes need fragmented memory and a defrag mode that \
                 compacts at the fault)",
                report::ns(a99),
                report::ns(a50),
                report::ns(n99),
                report::ns(n50)
            )
        }
        _ => format!(
            "p99 needs {} samples, each mode has {} regions (largest: {} under `always`, {} \
             under `never`, single samples)",
            verdict::samples_for(0.99),
            always.count.min(never.count),
            report::ns(always.max_ns),
            report::ns(never.max_ns)
        ),
    }
}

/// THP's allocation tail: the first write to every 4 KiB page of fresh 2 MiB regions, one
/// sample per region, with THP `always` (one fault allocates and zeroes 2 MiB) vs `never`
/// (512 faults of 4 KiB).
fn thp_fault_part(ctx: &Ctx, p: &Params, out: &mut Outcome) -> anyhow::Result<()> {
    let path = &p.thp_enabled;
    let guard = match SettingGuard::save(path) {
        Ok(g) => g,
        Err(e) => {
            out.notes
                .push(format!("THP allocation tail skipped: {path}: {e}"));
            return Ok(());
        }
    };
    if let Err(e) = guard.set(guard.old()) {
        out.notes.push(format!(
            "THP allocation tail skipped: {path} is not writable here ({e})"
        ));
        return Ok(());
    }
    let (len, rounds) = (p.thp_len, p.thp_rounds);
    let regions = len / HUGE_PAGE;
    let huge_regions = Cell::new(0usize);
    let failed: Cell<Option<String>> = Cell::new(None);
    let mut variants: Vec<Variant<'_>> = ["always", "never"]
        .into_iter()
        .map(|mode| {
            let guard = &guard;
            let huge_regions = &huge_regions;
            let failed = &failed;
            Variant::new(
                format!("THP {mode}: first touch per 2 MiB region"),
                move |r: &mut Recorder| {
                    if let Err(e) = guard.set(mode) {
                        failed.set(Some(format!("setting THP {mode}: {e}")));
                        return;
                    }
                    let mut m = match Mapping::anon(
                        len,
                        MapOptions {
                            align: HUGE_PAGE,
                            ..MapOptions::default()
                        },
                    ) {
                        Ok(m) => m,
                        Err(e) => {
                            failed.set(Some(format!("mapping {len} B: {e}")));
                            return;
                        }
                    };
                    let bytes = m.bytes();
                    for region in bytes.chunks_mut(HUGE_PAGE) {
                        let t0 = tsc();
                        for off in (0..region.len()).step_by(PAGE) {
                            region[off] = 1;
                        }
                        std::hint::black_box(&region[0]);
                        r.record_ticks(tsc() - t0, 1);
                    }
                    if mode == "always" {
                        let kb = anon_huge_kb(m.addr()).unwrap_or(0) as usize;
                        huge_regions.set(huge_regions.get() + kb * 1024 / HUGE_PAGE);
                    }
                },
            )
        })
        .collect();
    let dists = interleave(ctx.tsc, 1, rounds, &mut variants);
    drop(variants);
    let restored_to = guard.old().to_string();
    drop(guard);
    let now = crate::system::current_setting(&crate::system::read_trimmed(path));
    if let Some(e) = failed.take() {
        anyhow::bail!("THP allocation tail: {e}");
    }
    let (a, n) = (&dists[0], &dists[1]);
    let defrag = crate::system::current_setting(&crate::system::read_trimmed(THP_DEFRAG));
    let at = |d: &Dist, q: f64| d.at(q).unwrap_or(f64::NAN);
    let shown = |d: &Dist, q: f64| d.at(q).map_or_else(|| "–".to_string(), report::ns);
    let study = "THP can cause millisecond tail spikes (collapse, split, compaction)";
    out.comparisons.push(Comparison::judged(
        "first touch of a 2 MiB region, THP never vs always: p50",
        format!("never {} vs always {}", shown(n, 0.5), shown(a, 0.5)),
        at(n, 0.5) / at(a, 0.5),
        study,
        None,
        &thp_alloc_reason(
            at(n, 0.5),
            at(a, 0.5),
            huge_regions.get(),
            (rounds + 1) * regions,
        ),
    ));
    out.comparisons.push(Comparison::judged(
        "first touch of a 2 MiB region: p99 ÷ p50, THP always vs never",
        format!(
            "always p99 {} (max {}) vs never p99 {} (max {}); {} regions each",
            shown(a, 0.99),
            report::ns(a.max_ns),
            shown(n, 0.99),
            report::ns(n.max_ns),
            a.count
        ),
        (at(a, 0.99) / at(a, 0.5)) / (at(n, 0.99) / at(n, 0.5)),
        study,
        None,
        &thp_tail_reason(a, n, &defrag),
    ));
    out.dists.extend(dists);
    out.notes.push(format!(
        "THP allocation tail: {rounds} rounds × {regions} fresh 2 MiB-aligned regions per mode, \
         modes interleaved by writing {path} each round. {} defrag is `{}`, so with \
         `always` a fault on an un-advised range takes a huge page only if one is free \
         (no direct compaction): the compaction spikes the study warns of need defrag \
         `always` or `madvise` with MADV_HUGEPAGE under fragmented memory. khugepaged's \
         collapses happen in the background and are not timed here.",
        restore_note(&format!("THP ({path})"), &restored_to, &now),
        defrag
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, text: &str) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("hotpath-hp-{}-{name}", std::process::id()));
        std::fs::write(&p, text).expect("temp file");
        p
    }

    /// A distribution with the given count, p50 and p99 (the rest from them).
    fn dist(name: &str, count: u64, p50: f64, p99: f64) -> Dist {
        Dist {
            name: name.into(),
            count,
            ops_per_sample: 1,
            mean_ns: p50,
            p50_ns: p50,
            p90_ns: p99,
            p99_ns: p99,
            p999_ns: p99,
            p9999_ns: p99,
            max_ns: 2.0 * p99,
            saturated: 0,
            rounds: None,
            hgrm: String::new(),
        }
    }

    #[test]
    fn the_thp_verdict_follows_the_times() {
        let v = verdict::verdict(5.0, None, &thp_reason(100.0, 20.0, Some(19.5), Some(1.0)));
        assert!(
            v.contains("4 KiB pages cost 80.0 ns more per access than THP"),
            "{v}"
        );
        assert!(v.contains("THP matches HugeTLB within noise"), "{v}");
        assert!(v.contains("100 % of the THP buffer with huge pages"), "{v}");
        assert!(!v.contains("best-effort"), "{v}");
        let v = thp_reason(100.0, 60.0, Some(20.0), Some(0.2));
        assert!(
            v.contains("; THP is 3.00× slower per access than HugeTLB"),
            "{v}"
        );
        assert!(v.contains("20 %") && v.contains("best-effort"), "{v}");
        let v = thp_reason(100.0, 10.0, Some(20.0), None);
        assert!(v.contains("; THP is 2.00× faster"), "{v}");
        assert!(v.contains("could not be read"), "{v}");
    }

    #[test]
    fn the_dependent_chase_verdict_says_what_a_step_waits_for() {
        let ratio = STUDY_SMALL_CYCLES / STUDY_HUGE_CYCLES;
        // This guest's default run: 544 vs 350 ns.
        let v = verdict::verdict(544.3 / 350.2, Some(ratio), &dependent_reason(544.3, 350.2));
        assert!(
            v.starts_with("smaller here (1.55× vs the study's 6.73×)"),
            "{v}"
        );
        assert!(v.contains("350.2 ns per step on huge pages"), "{v}");
        assert!(v.contains("12-13 ns (26× less)"), "{v}");
        assert!(v.contains("adds 194.1 ns per step"), "{v}");
        // The study's own figures (at 3.4 GHz): agrees.
        let v = verdict::verdict(ratio, Some(ratio), &dependent_reason(85.3, 12.7));
        assert!(v.starts_with("agrees"), "{v}");
        assert!(v.contains("served from a cache") && !v.contains("not a dependent chase"));
        assert!(dependent_reason(f64::NAN, 1.0).contains("missing"));
    }

    #[test]
    fn the_thp_allocation_verdicts_follow_the_data() {
        let v = verdict::verdict(5.4, None, &thp_alloc_reason(1.937e6, 358.9e3, 672, 672));
        assert!(v.starts_with("measurable here (5.40×)"), "{v}");
        assert!(
            v.contains("faults of about 3.78 µs each") && v.contains("672 of 672"),
            "{v}"
        );
        let v = verdict::verdict(1.02, None, &thp_alloc_reason(366e3, 358.9e3, 672, 672));
        assert!(v.starts_with("no measurable difference"), "{v}");
        assert!(v.contains("zeroing 2 MiB dominates"), "{v}");
        let v = thp_alloc_reason(1.9e6, 1.9e6, 0, 40);
        assert!(
            v.starts_with("0 of 40 regions") && v.contains("compares nothing"),
            "{v}"
        );

        // The tail: undecided with the count until p99 has its 1,000 samples.
        let few = thp_tail_reason(
            &dist("a", 640, 360e3, 700e3),
            &dist("n", 640, 1.9e6, 5e6),
            "madvise",
        );
        assert!(
            few.starts_with("p99 needs 1000 samples, each mode has 640"),
            "{few}"
        );
        let a = dist("a", 1_024, 360e3, 3.6e6);
        let n = dist("n", 1_024, 1.9e6, 2.3e6);
        let v = verdict::verdict(
            (3.6e6 / 360e3) / (2.3e6 / 1.9e6),
            None,
            &thp_tail_reason(&a, &n, "madvise"),
        );
        assert!(v.starts_with("measurable here"), "{v}");
        assert!(
            v.contains("THP's tail is the deeper one") && v.contains("`madvise`"),
            "{v}"
        );
        let a = dist("a", 1_024, 360e3, 400e3);
        let v = thp_tail_reason(&a, &n, "never");
        assert!(v.starts_with("no deeper tail under `always`"), "{v}");
    }

    #[test]
    fn the_independent_verdict_and_the_resemblance_follow_the_data() {
        let ratio = STUDY_SMALL_CYCLES / STUDY_HUGE_CYCLES;
        // Overlapped misses near the study's time per access, walks that overlap less.
        let v = verdict::verdict(
            80.0 / 14.0,
            Some(ratio),
            &independent_reason(80.0, 14.0, 350.0),
        );
        assert!(v.starts_with("agrees (5.71×"), "{v}");
        assert!(
            v.contains("14.0 ns per access on huge pages, 25.0× less than a dependent step"),
            "{v}"
        );
        assert!(v.contains("adds 66.0 ns per access, 82 %"), "{v}");
        let v = verdict::verdict(
            60.0 / 40.0,
            Some(ratio),
            &independent_reason(60.0, 40.0, 350.0),
        );
        assert!(v.starts_with("smaller here (1.50×"), "{v}");
        assert!(v.contains("adds 20.0 ns per access, 33 %"), "{v}");

        // Overlapped loads near the study's time, and its ratio: agrees on both.
        let f = resemblance_finding((544.0, 350.0), (80.0, 14.0));
        assert!(
            f.starts_with("the independent loop by its time per access"),
            "{f}"
        );
        assert!(f.contains("agrees with the study's too (5.71×"), "{f}");
        // This guest's small run: the time matches, the ratio doesn't.
        let f = resemblance_finding((167.2, 143.7), (13.5, 10.9));
        assert!(
            f.starts_with("the independent loop by its time per access"),
            "{f}"
        );
        assert!(
            f.contains("1.24× against the study's 6.73× (smaller here"),
            "{f}"
        );
        assert!(f.contains("6.3× this loop's 13.5 ns"), "{f}");
        // A dependent chase as fast as the study's figure: the dependent one.
        let f = resemblance_finding((95.0, 13.0), (60.0, 40.0));
        assert!(
            f.starts_with("the dependent chase by its time per access"),
            "{f}"
        );
        assert!(resemblance_finding((f64::NAN, 1.0), (1.0, 1.0)).starts_with("undecided"));
    }

    #[test]
    fn the_reach_verdict_says_whether_the_set_fits_the_tlb() {
        let v = verdict::verdict(1.02, None, &reach_reason(1536, 3072, 102.0, 100.0));
        assert!(v.starts_with("no measurable difference here"), "{v}");
        assert!(
            v.contains("1536 pages fit its 3072 entries: no walk"),
            "{v}"
        );
        let v = verdict::verdict(1.4, None, &reach_reason(6144, 3072, 140.0, 100.0));
        assert!(v.starts_with("measurable here"), "{v}");
        assert!(
            v.contains("6144 pages overflow its 3072 entries: the walk adds 40.0 ns"),
            "{v}"
        );
        let v = reach_reason(6144, 3072, 101.0, 100.0);
        assert!(v.contains("yet no measurable walk cost"), "{v}");
        let v = reach_reason(1536, 3072, 140.0, 100.0);
        assert!(v.contains("unexplained by the entry count"), "{v}");
    }

    #[test]
    fn the_nested_walk_note_follows_the_independent_ratio() {
        let n = nested_walk_note(15.0, 1.55);
        assert!(n.contains("consistent with it: 15.00×"), "{n}");
        let n = nested_walk_note(6.0, 1.55);
        assert!(n.contains("can't tell"), "{n}");
        let n = nested_walk_note(2.0, 1.55);
        assert!(
            n.contains("contradicts it: the independent loop's 2.00×"),
            "{n}"
        );
        assert!(n.contains("dependent chase's 1.55× is no test"), "{n}");
    }

    #[test]
    fn the_umem_note_follows_the_tlb_size() {
        let n = umem_reach_note(Dtlb {
            l1: 72,
            l2: 3072,
            source: "cpuid",
        });
        assert!(
            n.contains("2048 pages of 4 KiB, which fits its 3072 entries (12 MiB)"),
            "{n}"
        );
        let n = umem_reach_note(Dtlb {
            l1: 64,
            l2: 1536,
            source: "cpuid",
        });
        assert!(n.contains("overflows its 1536 entries (6 MiB)"), "{n}");
    }

    #[test]
    fn probe_sizes_straddle_each_reach_and_fit_the_set() {
        let zen4 = Dtlb {
            l1: 72,
            l2: 3072,
            source: "cpuid",
        };
        assert_eq!(
            probe_sizes(zen4, 64 << 20),
            [144 << 10, 576 << 10, 6 << 20, 24 << 20, 48 << 20]
        );
        assert_eq!(probe_sizes(zen4, 16 << 20), [144 << 10, 576 << 10, 6 << 20]);
        assert_eq!(
            probe_sizes(Dtlb::ASSUMED, 512 << 20),
            [128 << 10, 512 << 10, 4 << 20, 16 << 20, 32 << 20]
        );
        let here = Dtlb::read();
        assert!(here.l1 > 0 && here.l2 >= here.l1, "{here:?}");
    }

    #[test]
    fn independent_loads_read_the_same_words_from_every_buffer() {
        let len = 4 << 20;
        let perm = chase::random_cycle(chase::slots(len / 8), SEED);
        let a = chase_buffer(Backing::Small, len, &perm).expect("4 KiB");
        let b = chase_buffer(Backing::Thp, len, &perm).expect("THP");
        let (sa, xa) = gather(a.words_shared(), SEED, 10_000);
        let (sb, xb) = gather(b.words_shared(), SEED, 10_000);
        assert_eq!((sa, xa), (sb, xb));
        assert_ne!(sa, 0);
        // Another start reads other lines: the sum is a checksum of the addresses.
        assert_ne!(gather(a.words_shared(), SEED + 1, 10_000).0, sa);
        // A second call continues from the state, as the rounds do.
        let (s2, _) = gather(a.words_shared(), xa, 10_000);
        assert_ne!(s2, sa);
    }

    #[test]
    fn the_tlb_row_is_judged_only_with_counts() {
        let counted = [
            (Backing::Small, Some((133, 10_000))),
            (Backing::HugeTlb, Some((9, 10_000))),
        ];
        let c = tlb_comparison(&Ok(()), &counted);
        assert!(c.verdict.starts_with("agrees"), "{}", c.verdict);
        assert!(c.verdict.contains("1.33 % of dTLB loads"), "{}", c.verdict);
        let c = tlb_comparison(&Err("perf stat: <not supported>".into()), &[]);
        assert!(c.verdict.starts_with("undecided"), "{}", c.verdict);
        assert!(c.ours.contains("no hardware PMU"), "{}", c.ours);
    }

    #[test]
    fn restore_and_perf_notes_say_what_happened() {
        assert!(restore_note("pool", "0", "0").contains("restored."));
        assert!(restore_note("pool", "0", "16").contains("NOT restored"));
        assert!(perf_unavailable(PERF_NOT_INSTALLED).contains("perf is not installed"));
        let w = perf_unavailable("perf stat: <not supported>,,dTLB-loads,,");
        assert!(w.contains("no hardware PMU"), "{w}");
        let w = perf_unavailable("perf stat: Permission denied");
        assert!(w.contains("could not count") && !w.contains("PMU"), "{w}");
    }

    #[test]
    fn a_reservation_restores_the_pool_exactly() {
        let p = temp("nr", "3\n");
        {
            let r = Reservation::grow(&p, 16).expect("grow");
            // A plain file takes any value: "got" is what reads back.
            assert_eq!(r.got, 16);
            assert_eq!(r.old(), "3");
            assert_eq!(std::fs::read_to_string(&p).expect("read"), "19");
        }
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "3");
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn every_backing_chases_the_same_cycle_to_the_same_slot() {
        let len = 8 << 20;
        let n = chase::slots(len / 8);
        let perm = chase::random_cycle(n, SEED);
        let mut ends = Vec::new();
        for b in [Backing::Small, Backing::Thp, Backing::HugeTlb] {
            let m = match chase_buffer(b, len, &perm) {
                Ok(m) => m,
                // No reserved HugeTLB pages on this machine: the other two still must agree.
                Err(e) if b == Backing::HugeTlb => {
                    eprintln!("HugeTLB: {e}");
                    continue;
                }
                Err(e) => panic!("{}: {e}", b.name()),
            };
            let w = m.words_shared();
            assert_eq!(chase::cycle_length(w, chase::RANDOM_LANE), Some(n));
            ends.push(chase::walk(w, 0, 3 * n / 2 + 7));
        }
        assert!(ends.len() >= 2);
        assert!(ends.windows(2).all(|w| w[0] == w[1]), "{ends:?}");
    }

    #[test]
    fn the_experiment_runs_tiny_against_temporary_settings() {
        let nr = temp("run-nr", "0\n");
        let thp = temp("run-thp", "always [madvise] never\n");
        let ctx = Ctx {
            size: crate::Size::Small,
            tsc: crate::harness::Tsc::calibrate(Duration::from_millis(5)),
            cpu: 0,
            other_cpu: 1,
            root: true,
        };
        let p = Params {
            len: 16 << 20,
            rounds: 3,
            steps: 1000,
            probe_rounds: 2,
            thp_len: 4 << 20,
            thp_rounds: 2,
            nr_hugepages: nr.display().to_string(),
            thp_enabled: thp.display().to_string(),
        };
        let out = run_with(&ctx, &p).expect("runs");
        for b in [Backing::Small, Backing::Thp] {
            assert_eq!(out.dist(&dependent_name(b)).count, 3);
            assert_eq!(out.dist(&independent_name(b)).count, 3);
        }
        // The probe: every size that fits 16 MiB, on 4 KiB pages and THP (no HugeTLB here).
        let sizes = probe_sizes(Dtlb::read(), 16 << 20);
        assert!(!sizes.is_empty());
        for &size in &sizes {
            assert_eq!(out.dist(&probe_name(Backing::Small, size)).count, 2);
            assert_eq!(out.dist(&probe_name(Backing::Thp, size)).count, 2);
        }
        assert_eq!(out.curves.len(), 1);
        assert!(
            out.comparisons
                .iter()
                .any(|c| c.what.starts_with("independent random loads"))
        );
        assert_eq!(
            out.dist("THP always: first touch per 2 MiB region").count,
            4
        );
        assert_eq!(out.dist("THP never: first touch per 2 MiB region").count, 4);
        assert!(out.comparisons.len() >= 4, "{:?}", out.comparisons);
        // No stop-gap rows: every row is judged by the rule or states a computed finding.
        assert!(out.comparisons.iter().all(|c| c.verdict != "–"));
        // Both settings are back exactly as they were.
        assert_eq!(std::fs::read_to_string(&nr).expect("read"), "0");
        assert_eq!(std::fs::read_to_string(&thp).expect("read"), "madvise");
        let _ = std::fs::remove_file(nr);
        let _ = std::fs::remove_file(thp);
    }

    #[test]
    fn smaps_finds_a_mapping() {
        let m = Mapping::anon(
            4 * HUGE_PAGE,
            MapOptions {
                align: HUGE_PAGE,
                ..MapOptions::default()
            },
        )
        .expect("map");
        assert!(anon_huge_kb(m.addr()).is_some());
    }
}
