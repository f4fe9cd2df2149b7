//! The study's system-level experiments (scheduler wake-ups, page faults, huge pages), and the
//! few operating-system calls they share: anonymous mappings, scheduling policy, and settings
//! in `/proc` and `/sys` that are changed for a measurement and put back exactly afterwards.

pub mod cstates;
pub mod faults;
pub mod hugepages;
pub mod wakeup;

use std::io;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;

/// The base page size of x86-64 and most arm64 kernels.
pub const PAGE: usize = 4096;
/// A PMD-sized huge page (x86-64, arm64 with 4 KiB base pages).
pub const HUGE_PAGE: usize = 2 << 20;

/// An anonymous private mapping, unmapped on drop. Its memory reads as zeros until written,
/// so handing it out as a slice is sound from the start.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

#[expect(unsafe_code, reason = "a Mapping owns its pages as a Box<[u8]> does")]
// SAFETY: a Mapping owns its memory exclusively, like a Box<[u8]>; the raw pointer is only
// what keeps the compiler from knowing that.
unsafe impl Send for Mapping {}
#[expect(unsafe_code, reason = "a Mapping owns its pages as a Box<[u8]> does")]
// SAFETY: shared access is only through `&self` views (read-only words, atomic bytes).
unsafe impl Sync for Mapping {}

/// How a [`Mapping`] is made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MapOptions {
    /// `MAP_POPULATE`: the kernel faults every page in before `mmap` returns.
    pub populate: bool,
    /// `MAP_HUGETLB`: explicit 2 MiB pages from the reserved pool (`len` must be a multiple).
    pub hugetlb: bool,
    /// Start address aligned to this (a power of two; 0 or less than a page: no alignment
    /// beyond the page). 2 MiB alignment lets THP back the whole range with huge pages.
    pub align: usize,
}

impl Mapping {
    /// Maps `len` bytes (a multiple of the page size) as `opts` says.
    pub fn anon(len: usize, opts: MapOptions) -> io::Result<Mapping> {
        let MapOptions {
            populate,
            hugetlb,
            align,
        } = opts;
        if len == 0 || !len.is_multiple_of(PAGE) || (hugetlb && !len.is_multiple_of(HUGE_PAGE)) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("mapping length {len} is not a multiple of its page size"),
            ));
        }
        let align = if align > PAGE {
            assert!(align.is_power_of_two(), "alignment {align}");
            align
        } else {
            PAGE
        };
        let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        if populate {
            flags |= libc::MAP_POPULATE;
        }
        if hugetlb {
            flags |= libc::MAP_HUGETLB;
        }
        // Over-map by the alignment, then trim both ends; an over-mapped range is populated
        // after the trim (MADV_POPULATE_WRITE, the same work) so the trimmed ends never are.
        let extra = if align > PAGE && !hugetlb { align } else { 0 };
        let first = if extra > 0 {
            flags & !libc::MAP_POPULATE
        } else {
            flags
        };
        let raw = mmap(len + extra, first)?;
        let start = raw.next_multiple_of(align);
        let (head, tail) = (start - raw, raw + len + extra - (start + len));
        if head > 0 {
            munmap(raw, head);
        }
        if tail > 0 {
            munmap(start + len, tail);
        }
        let m = Mapping {
            ptr: NonNull::new(start as *mut u8).expect("mmap returned a non-null address"),
            len,
        };
        if populate && extra > 0 {
            m.advise(libc::MADV_POPULATE_WRITE)?;
        }
        Ok(m)
    }

    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `madvise(advice)` over the whole mapping.
    pub fn advise(&self, advice: libc::c_int) -> io::Result<()> {
        #[expect(unsafe_code, reason = "madvise on memory this Mapping owns")]
        // SAFETY: the range is exactly this mapping; the advice values used here
        // (HUGEPAGE, NOHUGEPAGE, POPULATE_WRITE) don't change what the memory holds.
        let rc = unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, advice) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `mlock` the whole mapping: faults every page in and keeps it resident.
    pub fn lock(&self) -> io::Result<()> {
        #[expect(unsafe_code, reason = "mlock on memory this Mapping owns")]
        // SAFETY: the range is exactly this mapping; mlock doesn't change its contents.
        let rc = unsafe { libc::mlock(self.ptr.as_ptr().cast(), self.len) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The mapping as bytes.
    pub fn bytes(&mut self) -> &mut [u8] {
        #[expect(unsafe_code, reason = "the mapping's memory as a slice")]
        // SAFETY: `ptr..ptr+len` is one live, private, readable and writable mapping owned by
        // `self` (anonymous memory reads as zeros, so it is initialised); the `&mut self`
        // borrow makes this the only reference.
        unsafe {
            std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len)
        }
    }

    /// The mapping as atomic bytes: a locked read-modify-write through these is one write
    /// access (one fault on a fresh page, not a read fault and then a copy-on-write one) that
    /// the next fenced counter read waits for, where a plain store would sit in the store
    /// buffer unseen.
    pub fn atomic_bytes(&self) -> &[std::sync::atomic::AtomicU8] {
        #[expect(unsafe_code, reason = "the mapping's memory as a slice")]
        // SAFETY: AtomicU8 has u8's size and alignment; the memory is live and initialised
        // for the borrow of `self`, and every access through this view is atomic.
        unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().cast(), self.len)
        }
    }

    /// The mapping's words, read-only (a chase walks these while nothing writes).
    pub fn words_shared(&self) -> &[u64] {
        #[expect(unsafe_code, reason = "the mapping's memory as a slice")]
        // SAFETY: as in `words`; the `&self` borrow rules out any `&mut` view meanwhile.
        unsafe {
            std::slice::from_raw_parts(self.ptr.as_ptr().cast::<u64>(), self.len / 8)
        }
    }

    /// The mapping as `u64` words (pages are 8-byte aligned).
    pub fn words(&mut self) -> &mut [u64] {
        #[expect(unsafe_code, reason = "the mapping's memory as a slice")]
        // SAFETY: as in `bytes`; the start is page-aligned, so aligned for u64, and any bit
        // pattern is a valid u64.
        unsafe {
            std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast::<u64>(), self.len / 8)
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        munmap(self.addr(), self.len);
    }
}

fn mmap(len: usize, flags: libc::c_int) -> io::Result<usize> {
    #[expect(unsafe_code, reason = "mmap of fresh anonymous memory")]
    // SAFETY: a null hint and no MAP_FIXED: the kernel picks a range that overlaps nothing.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p as usize)
}

fn munmap(addr: usize, len: usize) {
    #[expect(unsafe_code, reason = "munmap of a range this module mapped")]
    // SAFETY: callers pass only ranges they mapped and no longer reference.
    let rc = unsafe { libc::munmap(addr as *mut libc::c_void, len) };
    debug_assert_eq!(rc, 0, "munmap({addr:#x}, {len}) failed");
}

/// A setting in a file (`/proc/sys/...`, `/sys/kernel/mm/...`) changed for a measurement and
/// written back exactly as it was when this guard drops, also when the measurement fails or
/// panics. The path is a parameter so tests can point it at a temporary file.
#[derive(Debug)]
pub struct SettingGuard {
    path: PathBuf,
    old: String,
}

impl SettingGuard {
    /// Reads and remembers the current value; [`SettingGuard::set`] changes it.
    pub fn save(path: impl Into<PathBuf>) -> io::Result<SettingGuard> {
        let path = path.into();
        let old = current_setting(&std::fs::read_to_string(&path)?);
        Ok(SettingGuard { path, old })
    }

    /// The value it will restore.
    pub fn old(&self) -> &str {
        &self.old
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `value`.
    pub fn set(&self, value: &str) -> io::Result<()> {
        std::fs::write(&self.path, value)
    }

    /// The value now, as [`current_setting`] reads it.
    pub fn now(&self) -> io::Result<String> {
        Ok(current_setting(&std::fs::read_to_string(&self.path)?))
    }
}

impl Drop for SettingGuard {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(&self.path, &self.old) {
            eprintln!(
                "    could not restore {} to {:?}: {e}",
                self.path.display(),
                self.old
            );
        }
    }
}

/// A setting's value as read: the bracketed choice of a sysfs list
/// (`always [madvise] never` → `madvise`), else the trimmed text.
pub fn current_setting(text: &str) -> String {
    if let (Some(a), Some(b)) = (text.find('['), text.find(']'))
        && a < b
    {
        return text[a + 1..b].to_string();
    }
    text.trim().to_string()
}

/// Scheduling policies the wake-up experiment compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_OTHER (CFS/EEVDF), nice 0.
    Other,
    /// SCHED_FIFO at a priority (1-99).
    Fifo(i32),
}

/// Sets the calling thread's policy.
pub fn set_policy(p: Policy) -> io::Result<()> {
    let (policy, prio) = match p {
        Policy::Other => (libc::SCHED_OTHER, 0),
        Policy::Fifo(prio) => (libc::SCHED_FIFO, prio),
    };
    let param = libc::sched_param {
        sched_priority: prio,
    };
    #[expect(unsafe_code, reason = "sched_setscheduler has no safe wrapper in libc")]
    // SAFETY: `param` is a valid sched_param that outlives the call; pid 0 is this thread.
    let rc = unsafe { libc::sched_setscheduler(0, policy, &param) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread under a policy until this drops, then SCHED_OTHER again.
#[derive(Debug)]
pub struct PolicyGuard(());

impl PolicyGuard {
    pub fn enter(p: Policy) -> io::Result<PolicyGuard> {
        set_policy(p)?;
        Ok(PolicyGuard(()))
    }
}

impl Drop for PolicyGuard {
    fn drop(&mut self) {
        let _ = set_policy(Policy::Other);
    }
}

/// A `/proc/meminfo` field in kB.
pub fn meminfo_kb(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// A file's trimmed text, or what went wrong, for notes.
pub fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|e| format!("unreadable ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, text: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("hotpath-{}-{name}", std::process::id()));
        std::fs::write(&p, text).expect("temp file");
        p
    }

    #[test]
    fn a_setting_is_restored_exactly_on_drop_and_on_panic() {
        let p = temp_file("thp", "always [madvise] never\n");
        {
            let g = SettingGuard::save(&p).expect("save");
            assert_eq!(g.old(), "madvise");
            g.set("never").expect("set");
            assert_eq!(std::fs::read_to_string(&p).expect("read"), "never");
        }
        assert_eq!(std::fs::read_to_string(&p).expect("read"), "madvise");

        let q = temp_file("nr", "0\n");
        let r = std::panic::catch_unwind(|| {
            let g = SettingGuard::save(&q).expect("save");
            g.set("256").expect("set");
            panic!("a measurement failed");
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read_to_string(&q).expect("read"), "0");
        let _ = std::fs::remove_file(p);
        let _ = std::fs::remove_file(q);
    }

    #[test]
    fn settings_read_as_the_kernel_shows_them() {
        assert_eq!(current_setting("always [madvise] never\n"), "madvise");
        assert_eq!(current_setting("950000\n"), "950000");
    }

    #[test]
    fn mappings_are_aligned_zeroed_and_writable() {
        let mut m = Mapping::anon(
            4 * HUGE_PAGE,
            MapOptions {
                align: HUGE_PAGE,
                ..MapOptions::default()
            },
        )
        .expect("mmap");
        assert_eq!(m.addr() % HUGE_PAGE, 0);
        assert!(m.words().iter().all(|&w| w == 0));
        m.words()[7] = 9;
        assert_eq!(m.bytes()[56], 9);
        assert!(Mapping::anon(100, MapOptions::default()).is_err());
    }
}
