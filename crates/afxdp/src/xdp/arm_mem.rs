//! The trigger's arm and the TCP trigger's segment, memory-mapped: the one place that touches
//! the program's memory directly.
#![expect(
    unsafe_code,
    reason = "mmap(2) of the arm and segment arrays, and writes through the mappings"
)]
use std::{
    io,
    os::fd::{AsFd as _, AsRawFd as _},
    ptr::NonNull,
    sync::atomic::{AtomicU32, AtomicU64, Ordering, fence},
};

use aya::maps::MapData;
use xdp_common::{
    Arm, ArmSlot,
    book_trigger::{FIRED_PACKET_MAX, FiredPacket},
    filter::{Claim, ClaimSlots, claim_slot, walk_claims},
    segment::{FRAME_LEN, SegmentSlot},
};

/// Maps the first value of `map` (an array made with `BPF_F_MMAPABLE`) as a `T`: the pointer
/// and the mapping's length.
fn map_value<T>(map: &MapData) -> io::Result<(NonNull<T>, usize)> {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .unwrap_or(4096)
        .max(1);
    let len = size_of::<T>().div_ceil(page) * page;
    let fd = map.fd().as_fd().as_raw_fd();
    // SAFETY: a fresh shared mapping of the map's fd, whose first value is the `T`; the kernel
    // checks the length against the array and the flag.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let v = NonNull::new(p.cast::<T>()).ok_or_else(|| io::Error::other("mmap at 0"))?;
    Ok((v, len))
}

/// The trigger's arm ([`super::XdpProgram::take_arm`]), mapped into this process.
pub struct ArmMap {
    /// The map, held open while it is mapped.
    _map: MapData,
    /// Its one value, the arm and the record of what fired, at the start of the mapping.
    arm: NonNull<ArmSlot>,
    len: usize,
    /// The generation of the last arm written (even).
    generation: u32,
    /// Push the arm's line out of this core after each write, and the record's after each
    /// read ([`demote`]).
    demote: bool,
}

impl std::fmt::Debug for ArmMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArmMap")
            .field("generation", &self.generation)
            .finish()
    }
}

impl ArmMap {
    /// Maps `map`'s values (an array of one `ArmSlot`, made with `BPF_F_MMAPABLE`).
    pub(super) fn map(map: MapData) -> io::Result<ArmMap> {
        let (arm, len) = map_value::<ArmSlot>(&map)?;
        // SAFETY: the mapping is at least one ArmSlot long and page-aligned.
        let generation =
            unsafe { std::ptr::read_volatile(&raw const (*arm.as_ptr()).arm.generation) } & !1;
        Ok(ArmMap {
            _map: map,
            arm,
            len,
            generation,
            demote: can_demote(),
        })
    }

    /// Whether to push the arm's line out of this core's caches after each write, and the
    /// record's line after each read (where the CPU can: [`can_demote`]). Once written, the
    /// arm's next reader is the program, on the CPU that takes the tick: demoted, its read
    /// finds the line in the shared cache instead of snooping this core for it; and the
    /// record's next writer is the program when it fires, whose store (which the order's
    /// transmit then waits for) finds it there too. Off, for measuring what that buys.
    pub fn set_demote(&mut self, on: bool) {
        self.demote = on && can_demote();
    }

    /// Whether each write ends with the arm's line demoted, and each read of the record with
    /// its line ([`ArmMap::set_demote`]).
    pub fn demotes(&self) -> bool {
        self.demote
    }

    /// Writes `arm` (its `generation` is ours): the program fires its order on the tick `arm.seq`
    /// if that tick's price is in its set (`armed = 0`: nothing fires). A sequence lock's
    /// write: the generation made odd, the arm, the generation made even; a program run
    /// reading meanwhile sees the generation odd or changed and doesn't fire.
    // This, `begin`, `end` and `FiredRing::next_fired` run per tick on the trigger path,
    // called from the trader crate: `#[inline]` lets them inline there.
    #[inline]
    pub fn set(&mut self, arm: &Arm) {
        self.begin(arm);
        self.end();
    }

    /// The first half of [`ArmMap::set`]: the arm written with its generation odd, as a
    /// program run in the middle of a write sees it. For the test that such an arm never
    /// fires; [`ArmMap::set`] is the whole write.
    #[doc(hidden)]
    #[inline]
    pub fn begin(&mut self, arm: &Arm) {
        let odd = self.generation.wrapping_add(1);
        let p = self.arm.as_ptr();
        // SAFETY: `p` points at the mapped arm, valid while `self` lives; volatile, as the
        // program reads it concurrently (single writer: this process, through `&mut self`).
        unsafe {
            std::ptr::write_volatile(&raw mut (*p).arm.generation, odd);
            // The odd generation before any of the arm's bytes.
            fence(Ordering::Release);
            // The arm only: the record after it is the program's.
            std::ptr::write_volatile(
                &raw mut (*p).arm,
                Arm {
                    generation: odd,
                    ..*arm
                },
            );
        }
        self.generation = odd;
    }

    /// The second half of [`ArmMap::set`]: the generation made even again.
    #[doc(hidden)]
    #[inline]
    pub fn end(&mut self) {
        let even = self.generation.wrapping_add(self.generation & 1);
        // The arm's bytes before the even generation.
        fence(Ordering::Release);
        // SAFETY: as in `begin`.
        unsafe { std::ptr::write_volatile(&raw mut (*self.arm.as_ptr()).arm.generation, even) };
        self.generation = even;
        if self.demote {
            // After the stores above, to the same line (CLDEMOTE is ordered with them); this
            // process doesn't touch the line again before its next write (the record it
            // reads is on the slot's second line).
            demote(self.arm.as_ptr().cast());
        }
    }

    /// The generation of the last arm written (even): what the program records when it
    /// fires that arm.
    #[inline]
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// What the program fired last: the generation of the arm, and the tick's price
    /// (`(0, _)`: nothing yet). One load of the line the program wrote; the generation read
    /// first, with acquire ordering, so the price read after it is the one written with it.
    #[inline]
    pub fn last_fired(&self) -> (u32, u32) {
        let p = self.arm.as_ptr();
        // SAFETY: `p` points at the mapped slot, valid while `self` lives; the program
        // writes these two aligned u32s, which are read here as atomics (an AtomicU32 has
        // the layout of a u32).
        unsafe {
            let generation =
                (*(&raw const (*p).fired_generation).cast::<AtomicU32>()).load(Ordering::Acquire);
            let price =
                (*(&raw const (*p).fired_price).cast::<AtomicU32>()).load(Ordering::Relaxed);
            if self.demote {
                // The program's next write of the line (when it fires) then takes it from the
                // shared cache, not by snooping this core.
                demote((&raw const (*p).fired_generation).cast());
            }
            (generation, price)
        }
    }

    /// The number of the message the program fired on last (the book trigger's print; on the
    /// ticker the arm's own): read after [`ArmMap::last_fired`] named a new generation (the
    /// program writes it before the generation).
    #[inline]
    pub fn last_fired_seq(&self) -> u64 {
        let p = self.arm.as_ptr();
        // SAFETY: as in `last_fired`: an aligned u64 of the mapped slot, read as an atomic.
        unsafe { (*(&raw const (*p).fired_seq).cast::<AtomicU64>()).load(Ordering::Relaxed) }
    }
}

/// Whether this CPU has `CLDEMOTE` (CPUID leaf 7, ECX bit 25).
pub(super) fn can_demote() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let leaf = std::arch::x86_64::__cpuid_count(7, 0);
        leaf.ecx & (1 << 25) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Hints the CPU to move the line holding `p` from this core's caches to the shared one
/// (`CLDEMOTE`): a hint, no architectural effect, a no-op without the instruction.
#[inline]
fn demote(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: CLDEMOTE only hints at where a line should live; it reads and writes no
    // architectural state and doesn't fault on a mapped address (`p` is in the mapped slot).
    // On a CPU without it the encoding is a NOP.
    unsafe {
        std::arch::asm!("cldemote byte ptr [{}]", in(reg) p, options(nostack, preserves_flags));
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl Drop for ArmMap {
    fn drop(&mut self) {
        // SAFETY: the mapping this made, unmapped once.
        unsafe { libc::munmap(self.arm.as_ptr().cast(), self.len) };
    }
}

/// The TCP trigger's segment ([`super::XdpProgram::take_segment`]), mapped into this process:
/// written by the trader's userspace TCP, sent by the program when the armed tick fires, under
/// the claim rule `xdp_common::segment` describes.
pub struct SegmentMap {
    /// The map, held open while it is mapped.
    _map: MapData,
    slot: NonNull<SegmentSlot>,
    len: usize,
}

impl std::fmt::Debug for SegmentMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SegmentMap")
    }
}

/// What became of a segment the stack withdrew.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Withdrawn {
    /// The program sent it before the withdrawal, at this price (Price(4)).
    Sent(u32),
    /// It never left, and never will.
    Unsent,
    /// A claim of the program's was still unsettled after the wait (never seen: a program run
    /// settles its claim within nanoseconds): whether it left is unknown.
    InDoubt,
}

/// How long [`SegmentMap::withdraw`] waits for the program to settle a claim at most.
const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_millis(10);

impl SegmentMap {
    pub(super) fn map(map: MapData) -> io::Result<SegmentMap> {
        let (slot, len) = map_value::<SegmentSlot>(&map)?;
        Ok(SegmentMap {
            _map: map,
            slot,
            len,
        })
    }

    /// Arms `frame` (its price bytes and TCP checksum zero; `partial`, its checksum's partial
    /// sum) for the arm of `generation`. The segment written before must have been
    /// [withdrawn](SegmentMap::withdraw) (or sent): the program no longer reads it. False, and
    /// nothing written, while a claim of the program's is unsettled (never seen: only after a
    /// withdrawal found one in doubt).
    #[inline]
    #[must_use]
    pub fn write(&mut self, generation: u32, frame: &[u8; FRAME_LEN], partial: u32) -> bool {
        let p = self.slot.as_ptr();
        // SAFETY: `p` points at the mapped slot, valid while `self` lives; the program reads
        // the frame only under a claim of the generation written last, which was withdrawn
        // and settled (or sent) before this (checked just below), so nothing reads these bytes
        // meanwhile. The program's words are read as the atomics they are written as.
        unsafe {
            let claims = (*(&raw const (*p).claims).cast::<AtomicU64>()).load(Ordering::Acquire);
            let resolved =
                (*(&raw const (*p).resolved).cast::<AtomicU64>()).load(Ordering::Acquire);
            if resolved < claims {
                return false;
            }
            std::ptr::write_volatile(&raw mut (*p).frame, *frame);
            std::ptr::write_volatile(&raw mut (*p).partial, partial);
            // The frame and its sum before the generation that names them.
            fence(Ordering::Release);
            std::ptr::write_volatile(&raw mut (*p).generation, generation);
        }
        true
    }

    /// Withdraws the segment of `generation`: from here the program won't send it. Whether it
    /// did before, after any claim of the program's has settled (`xdp_common::segment`'s rule:
    /// the withdrawal, a full fence, the claims read).
    pub fn withdraw(&mut self, generation: u32) -> Withdrawn {
        let p = self.slot.as_ptr();
        // SAFETY: as in `write`; the program's words are read as the atomics they are
        // written as (an AtomicU64/AtomicU32 has the layout of a u64/u32).
        unsafe {
            std::ptr::write_volatile(&raw mut (*p).withdrawn, generation);
            fence(Ordering::SeqCst);
            let claims = (*(&raw const (*p).claims).cast::<AtomicU64>()).load(Ordering::Acquire);
            let resolved = &*(&raw const (*p).resolved).cast::<AtomicU64>();
            let start = std::time::Instant::now();
            while resolved.load(Ordering::Acquire) < claims {
                if start.elapsed() > SETTLE_WAIT {
                    return Withdrawn::InDoubt;
                }
                std::hint::spin_loop();
            }
        }
        match self.sent() {
            (g, price) if g == generation => Withdrawn::Sent(price),
            _ => Withdrawn::Unsent,
        }
    }

    /// The segment the program sent last: its arm generation (0: none yet) and price. The
    /// generation read first (acquire), so the price is the one recorded with it.
    #[inline]
    pub fn sent(&self) -> (u32, u32) {
        let p = self.slot.as_ptr();
        // SAFETY: as in `withdraw`.
        unsafe {
            let generation =
                (*(&raw const (*p).sent_generation).cast::<AtomicU32>()).load(Ordering::Acquire);
            let price = (*(&raw const (*p).sent_price).cast::<AtomicU32>()).load(Ordering::Relaxed);
            (generation, price)
        }
    }
}

impl Drop for SegmentMap {
    fn drop(&mut self) {
        // SAFETY: the mapping this made, unmapped once.
        unsafe { libc::munmap(self.slot.as_ptr().cast(), self.len) };
    }
}

/// The driver filter's claims ([`super::XdpProgram::take_filter`]), mapped into this process:
/// read for each packet of line A.
pub struct ClaimsMap {
    /// The map, held open while it is mapped.
    _map: MapData,
    slots: NonNull<ClaimSlots>,
    len: usize,
    /// The ring's count at the next claim not yet taken or passed over.
    next: std::cell::Cell<u64>,
}

impl std::fmt::Debug for ClaimsMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClaimsMap")
    }
}

// SAFETY: the mapping is owned by this value and only read through it.
unsafe impl Send for ClaimsMap {}

impl ClaimsMap {
    /// Maps `map`'s value (an array of one `ClaimSlots`, made with `BPF_F_MMAPABLE`).
    pub(super) fn map(map: MapData) -> io::Result<ClaimsMap> {
        let (slots, len) = map_value::<ClaimSlots>(&map)?;
        Ok(ClaimsMap {
            _map: map,
            slots,
            len,
            next: std::cell::Cell::new(0),
        })
    }

    /// The claim the program filed for the packet numbered from `first`, if the ring still
    /// holds it. Claims are filed in the order their packets were passed, and packets are
    /// taken in that order, so the reader walks the ring from where it last took one: past
    /// claims of older packets (a passed packet that never reached the trader), up to the
    /// first of a later packet (this one has none). Each key is read before and after its
    /// claim (the program writes it invalid, then the claim, then the key), so a slot being
    /// rewritten is never read as a claim. A reader a whole ring behind starts over at the
    /// oldest claim still there: what was overwritten is a gap, re-requested.
    #[inline]
    pub fn claim(&self, first: u64) -> Option<Claim> {
        // SAFETY: every slot read lies inside the mapping (indices masked to CLAIM_SLOTS); the
        // program writes them concurrently, hence atomic loads of the keys and the head, and
        // a volatile read of the claim between two of its key.
        unsafe {
            let ring = self.slots.as_ptr();
            let head = (*(&raw const (*ring).head).cast::<AtomicU64>()).load(Ordering::Acquire);
            let key = |n: u64| {
                let slot = &raw const (*ring).slots[claim_slot(n)];
                (*(&raw const (*slot).key).cast::<AtomicU64>()).load(Ordering::Acquire)
            };
            let claim = |n: u64| {
                let c = std::ptr::read_volatile(&raw const (*ring).slots[claim_slot(n)].claim);
                fence(Ordering::Acquire);
                c
            };
            let (found, next) = walk_claims(self.next.get(), head, first, key, claim);
            self.next.set(next);
            found
        }
    }
}

impl Drop for ClaimsMap {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.slots.as_ptr().cast(), self.len) };
    }
}

/// The book trigger's copy of the last fired datagram
/// ([`super::XdpProgram::take_book_trigger`]), mapped into this process: read when a fire's
/// record names its generation.
pub struct FiredPacketMap {
    /// The map, held open while it is mapped.
    _map: MapData,
    slot: NonNull<FiredPacket>,
    len: usize,
}

impl std::fmt::Debug for FiredPacketMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FiredPacketMap")
    }
}

// SAFETY: the mapping is owned by this value and only read through it.
unsafe impl Send for FiredPacketMap {}

impl FiredPacketMap {
    /// Maps `map`'s value (an array of one `FiredPacket`, made with `BPF_F_MMAPABLE`).
    pub(super) fn map(map: MapData) -> io::Result<FiredPacketMap> {
        let (slot, len) = map_value::<FiredPacket>(&map)?;
        Ok(FiredPacketMap {
            _map: map,
            slot,
            len,
        })
    }

    /// The datagram copied for the fire of `generation`: its generation read first (acquire:
    /// the program writes the bytes, the length, then the generation, all before the fire's
    /// record the caller read), `None` if the copy is another fire's. The program copies again
    /// only on the next fire, which needs an arm the trader writes after this read.
    pub fn datagram(&self, generation: u32) -> Option<&[u8]> {
        let p = self.slot.as_ptr();
        // SAFETY: `p` points at the mapped value, valid while `self` lives; its words are read
        // as the atomics the program writes them as, and the bytes are not rewritten until the
        // trader arms again (see above).
        unsafe {
            let g = (*(&raw const (*p).generation).cast::<AtomicU32>()).load(Ordering::Acquire);
            if g != generation {
                return None;
            }
            let len = (*(&raw const (*p).len).cast::<AtomicU32>()).load(Ordering::Relaxed) as usize;
            let bytes = &(*p).bytes;
            bytes.get(..len.min(FIRED_PACKET_MAX))
        }
    }
}

impl Drop for FiredPacketMap {
    fn drop(&mut self) {
        // SAFETY: the mapping this made, unmapped once.
        unsafe { libc::munmap(self.slot.as_ptr().cast(), self.len) };
    }
}
