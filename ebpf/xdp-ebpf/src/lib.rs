//! The lab's XDP program as a library: its maps, its load-time globals and its one entry,
//! [`md_redirect`], generic over how its runs are timed ([`Timing`]). Three objects are built
//! from it, each a binary whose entry is one line: `xdp-ebpf` (`main.rs`, [`Untimed`], the
//! program in every measurement but `--xdp-stages`), `xdp-ebpf-stages` (`stages.rs`,
//! [`EachStage`]: a clock read at each mark of a run, `trader --xdp-stages`) and `xdp-ebpf-run`
//! (`run.rs`, [`WholeRun`]: at the run's two ends only, `trader --xdp-stages=run`).
//!
//! Frames of the market-data flow (Ethernet II, IPv4 without options or fragmentation, UDP to
//! the configured destination port) go to the AF_XDP socket bound to the frame's RX queue;
//! everything else (ARP above all, or the kernel never resolves the trader's address) is passed
//! to the kernel untouched. Each decision is counted in a per-CPU array.
//!
//! Logging (aya-log): off unless userspace sets the `XDP_LOG` global at load time, and then
//! only for rare events a user debugging a feed wants to see: a failed redirect, a frame
//! counted as malformed (its reason and the header fields at fault), a failed reflection.
//! Never per healthy packet. Each CPU writes at most `LOG_BURST` records a second; the rest
//! are counted, not written. With the global off the verifier prunes the logging code.
//!
//! Timing is a type, not a load-time global: a global the verifier prunes still changes how
//! the compiler allocates registers around the calls it guards (the redirect program grew by
//! 149 instructions with one), while a type parameter's constants are folded before code is
//! generated, so the untimed object is the program without any timing code.
//!
//! One module a role: `classify` (each frame's verdict, the feed's source check), `redirect`
//! (into the AF_XDP socket, with the arrival stamp), `reflect` (the floor's XDP_TX order),
//! `trigger` (the armed order fired on its tick) and `segment` (the TCP trigger's armed
//! segment); beneath them `maps` (every map and load-time global), `packet` (bounds-checked
//! reads and writes), `log` and `timing`.
#![no_std]
// BPF's atomic add (the TCP trigger's claim): the BPF target has no `core::sync::atomic`.
#![feature(core_intrinsics)]
#![allow(
    internal_features,
    reason = "core::intrinsics::atomic_xadd, the one way to BPF's atomic add"
)]
#![expect(
    unsafe_code,
    reason = "an XDP program reads packet memory through raw pointers the verifier checks, and exports its maps and globals unmangled"
)]

mod book_trigger;
mod classify;
mod filter;
mod log;
mod maps;
mod packet;
mod redirect;
mod reflect;
mod segment;
mod timing;
mod trigger;

use crate::{
    book_trigger::book_trigger,
    classify::{Verdict, classify, source_pinned},
    filter::{Filtered, file_claim, filter},
    log::{log_allowed, log_malformed},
    maps::{COUNTERS, FILTER_ON, FIRED, FIRED_WAKEUP, MD_ACTION, TRIGGER_BOOK},
    redirect::{redirect, stamp},
    reflect::reflect,
    timing::Stamps,
    trigger::{Shot, trigger},
};
use aya_ebpf::{
    bindings::xdp_action::{XDP_DROP, XDP_PASS, XDP_TX},
    programs::XdpContext,
};
use aya_log_ebpf::warn;
use xdp_common::{Action, Counter, Fired, Mark, SOURCE_LINE_A};

/// How an object times its runs: compile-time constants, one type per object.
pub trait Timing {
    /// Clock reads compiled in at all.
    const TIMED: bool;
    /// A read at every mark of a run (`false`: its start and end only).
    const STAGE_MARKS: bool;
}

/// No timing: the program as it runs in every measurement but `--xdp-stages`.
#[derive(Debug)]
pub enum Untimed {}

impl Timing for Untimed {
    const TIMED: bool = false;
    const STAGE_MARKS: bool = false;
}

/// A clock read at every mark of a run (`xdp-ebpf-stages`, `trader --xdp-stages`).
#[derive(Debug)]
pub enum EachStage {}

impl Timing for EachStage {
    const TIMED: bool = true;
    const STAGE_MARKS: bool = true;
}

/// A clock read at each run's two ends only (`xdp-ebpf-run`, `trader --xdp-stages=run`): the
/// run's loads overlap as they do untimed.
#[derive(Debug)]
pub enum WholeRun {}

impl Timing for WholeRun {
    const TIMED: bool = true;
    const STAGE_MARKS: bool = false;
}

/// The program: each frame classified, the market data's handed to the path's action, every
/// decision counted. Each object's `#[xdp]` entry is this, with its [`Timing`].
#[inline(always)]
pub fn md_redirect<T: Timing>(ctx: XdpContext) -> u32 {
    let mut st = Stamps::<T>::start();
    let verdict = classify(&ctx);
    st.mark(Mark::Classified);
    let (counter, action) = match verdict {
        Ok(Verdict::MarketData(line)) => match Action::from_u8(read_global(&MD_ACTION)) {
            Action::Redirect if read_global(&FILTER_ON) != 0 && line == SOURCE_LINE_A => {
                // A packet of line A passed has the run it ends filed under its number.
                let verdict = if source_pinned() {
                    filter(&ctx)
                } else {
                    Filtered::Pass(xdp_common::filter::Claim { from: 0, to: 0 }, 0)
                };
                match verdict {
                    Filtered::Drop(messages) => {
                        count_by(Counter::FilteredMessages, messages);
                        (Counter::FilteredPackets, XDP_DROP)
                    }
                    Filtered::Pass(claim, first) => match file_claim(claim, first) {
                        Ok(()) => redirect(&ctx, &mut st),
                        Err(()) => (Counter::FilterUnclaimed, XDP_DROP),
                    },
                }
            }
            Action::Redirect => redirect(&ctx, &mut st),
            Action::RedirectStamped => {
                // Unstamped if the frame can't grow: the reader then falls back to its own
                // clock, which the stamp's missing magic tells it.
                let _ = stamp(&ctx);
                redirect(&ctx, &mut st)
            }
            Action::Pass => (Counter::PassedMarketData, XDP_PASS),
            Action::Trigger => match if read_global(&TRIGGER_BOOK) != 0 {
                book_trigger(&ctx, &mut st)
            } else {
                trigger(&ctx, &mut st)
            } {
                Shot::Fired(fired) => {
                    // The record's line holds what fired (`trigger` wrote it). A reader asleep
                    // must be woken as well: through the ring, whose wakeup raises an
                    // interrupt (irq_work) inside this run, before the order leaves (measured
                    // as this stage with `--wait block`). A spinning reader needs neither.
                    // A full ring loses the wakeup, never the order or its record.
                    if read_global(&FIRED_WAKEUP) != 0 {
                        let _ = FIRED.output::<Fired>(&fired, 0);
                    }
                    st.mark(Mark::Recorded);
                    (Counter::TriggerFired, XDP_TX)
                }
                Shot::Miss => redirect(&ctx, &mut st),
                Shot::NotInSet => {
                    count(Counter::TriggerNotInSet);
                    redirect(&ctx, &mut st)
                }
                Shot::Busy => {
                    count(Counter::TriggerArmBusy);
                    redirect(&ctx, &mut st)
                }
                Shot::NoSegment => {
                    count(Counter::TriggerNoSegment);
                    redirect(&ctx, &mut st)
                }
                // The frame may be half rewritten (addressed to the gateway, say): neither an
                // order nor the tick any more, so it goes nowhere. The trader sees the tick
                // missing and asks for it again.
                Shot::Failed => (Counter::ReflectFailed, XDP_DROP),
            },
            Action::Reflect => match reflect(&ctx, &mut st) {
                Ok(()) => (Counter::Reflected, XDP_TX),
                Err(()) => {
                    if log_allowed() {
                        let len = ctx.data_end() - ctx.data();
                        warn!(
                            &ctx,
                            "reflect failed: frame of {} bytes not turned into an order (no ITCH trade first, an IPv4 length past the frame, or the tail adjustment failed); passed to the kernel",
                            len
                        );
                    }
                    (Counter::ReflectFailed, XDP_PASS)
                }
            },
        },
        Ok(Verdict::Pass(counter)) => (counter, XDP_PASS),
        // Never the feed, never fired on; not passed either: nothing in the kernel listens on
        // the feed's port, so the forger would only get an ICMP error back.
        Ok(Verdict::Foreign(counter)) => (counter, XDP_DROP),
        Ok(Verdict::OrderSession) => match redirect(&ctx, &mut st) {
            (Counter::Redirected, action) => (Counter::OrderSegments, action),
            // Not to the kernel, which has no socket for it and would reset the connection:
            // dropped (counted), and TCP sends it again.
            (counter, _) => (counter, XDP_DROP),
        },
        Ok(Verdict::Recovery) => match Action::from_u8(read_global(&MD_ACTION)) {
            Action::Pass | Action::Reflect => (Counter::PassedMarketData, XDP_PASS),
            _ => redirect(&ctx, &mut st),
        },
        Err(why) => {
            if log_allowed() {
                log_malformed(&ctx, why);
            }
            (Counter::Malformed, XDP_PASS)
        }
    };
    count(counter);
    st.record(counter);
    action
}

/// Reads a load-time global. Volatile, so the compiler can't fold the initial value in: the
/// loader rewrites `.rodata` before the program is verified.
#[inline(always)]
pub(crate) fn read_global<T: Copy>(global: &'static T) -> T {
    // SAFETY: `global` is a valid, aligned reference to a static.
    unsafe { core::ptr::read_volatile(global) }
}

#[inline(always)]
pub(crate) fn count(counter: Counter) {
    count_by(counter, 1);
}

#[inline(always)]
pub(crate) fn count_by(counter: Counter, n: u64) {
    if let Some(slot) = COUNTERS.get_ptr_mut(counter.index()) {
        // SAFETY: the map returned a valid pointer to this CPU's slot; per-CPU, so no other
        // program instance writes it concurrently (XDP runs with preemption disabled).
        unsafe { *slot += n };
    }
}

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    // The verifier rejects any reachable panic path; this only satisfies the compiler.
    loop {}
}

#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 13] = *b"Dual MIT/GPL\0";
