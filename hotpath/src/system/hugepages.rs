//! Huge pages: the same random pointer chase over a working set far beyond the TLB's reach,
//! on 4 KiB pages, on transparent huge pages and on explicit 2 MiB HugeTLB pages; and what THP
//! costs when it allocates (first touch per 2 MiB region with THP `always` vs `never`).
//!
//! The three chase buffers hold the same single-cycle random chain (one load per cache line,
//! [`crate::chase`]), and every variant walks the same number of steps, so they must end on
//! the same slot: the checksum. What differs is only how many page walks the chase needs: with
//! 4 KiB pages nearly every step misses the TLB (a 512 MiB set is 131,072 pages; the STLB
//! holds a few thousand), with 2 MiB pages the set is 256 pages.

use std::cell::Cell;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Ctx;
use crate::chase;
use crate::harness::{Dist, Recorder, Variant, interleave, tsc};
use crate::report::{self, Comparison, Level, Outcome};
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
    /// Dependent loads per sample.
    pub steps: usize,
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
        "Huge pages: a random chase beyond the TLB's reach, and THP's allocation tail",
        Level::System,
    );
    chase_part(ctx, p, &mut out)?;
    thp_fault_part(ctx, p, &mut out)?;
    out.trader = "The UMEM can sit on explicit 2 MiB HugeTLB pages: `trader --huge-pages` \
                  (trader/src/program) sets XskConfig::huge_pages, which Xsk::new \
                  (afxdp/src/xsk.rs) passes to xsk-rs's Umem::new, which adds MAP_HUGETLB to \
                  its MAP_POPULATE mapping (xsk-rs src/umem/mem/mmap.rs); it is off by default \
                  and needs /proc/sys/vm/nr_hugepages reserved (`cargo xtask matrix` runs it as \
                  the huge-pages knob only when enough are). The default UMEM is 4096 frames × \
                  2048 B = 8 MiB on 4 KiB pages; the tick-to-trade state (trader-core/src/lib.rs: \
                  an 8 KiB `seen` window, the engine's rings) is small enough that TLB reach \
                  matters far less to it than to this chase. THP is never asked for (no \
                  MADV_HUGEPAGE anywhere in userspace/src)."
        .into();
    Ok(out)
}

/// The chase on every backing that can be had here, its TLB misses where perf counts them, and
/// the comparisons with the study.
fn chase_part(ctx: &Ctx, p: &Params, out: &mut Outcome) -> anyhow::Result<()> {
    let (rounds, steps) = (p.rounds, p.steps);
    let (reservation, len) = reserve_hugetlb(ctx, p, out);
    let hugetlb = reservation
        .as_ref()
        .is_some_and(|r| r.got * HUGE_PAGE >= len);
    let bufs = chase_buffers(ctx, len, hugetlb, out)?;
    let thp_huge_kb = bufs
        .iter()
        .find(|(b, _)| *b == Backing::Thp)
        .and_then(|(_, m)| anon_huge_kb(m.addr()));
    let dists = time_chases(ctx, &bufs, rounds, steps)?;

    // TLB misses, where perf can count them.
    let perf = perf_tlb_probe();
    let tlb = if perf.is_ok() {
        tlb_counts(&bufs)
    } else {
        Vec::new()
    };
    drop(bufs);
    if let Some(r) = reservation {
        out.notes.push(release_hugetlb(r, p));
    }

    compare_chases(ctx, out, &dists, len, thp_huge_kb);
    out.comparisons.push(tlb_comparison(&perf, &tlb));
    out.notes.push(format!(
        "The chase: {} MiB, one load per 64-byte line along one random cycle through all {} \
         lines (each step a random 4 KiB page and a random line of it), the same chain in \
         every buffer; {rounds} rounds × {steps} dependent \
         loads per variant, variants interleaved; a sample is a round's mean per access, so the \
         percentiles are of {steps}-access means. All variants end on the same slot (checked). \
         Ticks are the TSC's (constant rate, {:.3} GHz here), not core cycles: the study's \
         'cycles' are core cycles of a 3.2-3.6 GHz i5-6500.",
        len >> 20,
        len / chase::LINE,
        ctx.tsc.ticks_per_ns
    ));
    out.notes.push(
        "What dominates: at this size every step misses the caches (the set is far beyond the \
         L3) and, on 4 KiB pages, the TLB too, so a step is a DRAM access plus a page walk whose \
         own entries miss the caches. In a KVM guest a TLB miss walks two page tables (the \
         guest's and the host's EPT/NPT), so 4 KiB pages hurt more here than on bare metal, \
         unless the host backs guest memory with huge pages."
            .into(),
    );
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

/// Two warm-up rounds and `rounds` recorded rounds of `steps` dependent loads on every buffer,
/// interleaved, a sample being one round's mean per access; fails unless every chase ended on
/// the same slot.
fn time_chases(
    ctx: &Ctx,
    bufs: &[(Backing, Mapping)],
    rounds: usize,
    steps: usize,
) -> anyhow::Result<Vec<Dist>> {
    let ends: Vec<Cell<usize>> = bufs.iter().map(|_| Cell::new(0)).collect();
    let mut variants: Vec<Variant<'_>> = bufs
        .iter()
        .zip(&ends)
        .map(|((b, m), end)| {
            let words = m.words_shared();
            Variant::new(b.name(), move |r: &mut Recorder| {
                let t0 = tsc();
                let e = chase::walk(words, end.get(), steps);
                let t1 = tsc();
                end.set(e);
                r.record_ticks(t1 - t0, steps as u32);
            })
        })
        .collect();
    let dists = interleave(ctx.tsc, 2, rounds, &mut variants);
    drop(variants);
    let checksums: Vec<usize> = ends.iter().map(Cell::get).collect();
    if checksums.windows(2).any(|w| w[0] != w[1]) {
        anyhow::bail!("the chases ended on different slots: {checksums:?}");
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
    format!(
        "each step of a dependent chase waits for memory: {} per step on huge pages, where the \
         study's 43 cycles are {lo:.0}-{hi:.0} ns ({:.0}× less), below any DRAM latency, so its \
         loop was not a dependent chase; the page walk adds {} per step on 4 KiB pages",
        report::ns(huge),
        huge / hi,
        report::ns(small - huge)
    )
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
    let get = |b: Backing| dists.iter().find(|d| d.name == b.name()).cloned();
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
                p50(&thp),
                get(Backing::HugeTlb).map(|h| p50(&h)),
                thp_huge_kb.map(|k| (k as f64 * 1024.0 / len as f64).min(1.0)),
            ),
        ));
    }
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
pub fn thp_reason(thp: f64, hugetlb: Option<f64>, huge_share: Option<f64>) -> String {
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
    vs + &share
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
            hgrm: String::new(),
        }
    }

    #[test]
    fn the_thp_verdict_follows_the_times() {
        let v = verdict::verdict(5.0, None, &thp_reason(20.0, Some(19.5), Some(1.0)));
        assert!(v.contains("THP matches HugeTLB within noise"), "{v}");
        assert!(v.contains("100 % of the THP buffer with huge pages"), "{v}");
        assert!(!v.contains("best-effort"), "{v}");
        let v = thp_reason(60.0, Some(20.0), Some(0.2));
        assert!(
            v.starts_with("THP is 3.00× slower per access than HugeTLB"),
            "{v}"
        );
        assert!(v.contains("20 %") && v.contains("best-effort"), "{v}");
        let v = thp_reason(10.0, Some(20.0), None);
        assert!(v.starts_with("THP is 2.00× faster"), "{v}");
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
            thp_len: 4 << 20,
            thp_rounds: 2,
            nr_hugepages: nr.display().to_string(),
            thp_enabled: thp.display().to_string(),
        };
        let out = run_with(&ctx, &p).expect("runs");
        assert_eq!(out.dist("4 KiB pages").count, 3);
        assert_eq!(out.dist("THP (MADV_HUGEPAGE)").count, 3);
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
