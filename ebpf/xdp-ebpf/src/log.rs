//! Logging (aya-log): the record for a malformed frame, and each CPU's rate limit.

use crate::{
    count,
    maps::{LOG_LIMIT, XDP_LOG},
    read_global,
};
use aya_ebpf::{helpers::bpf_ktime_get_ns, programs::XdpContext};
use aya_log_ebpf::error;
use xdp_common::{Counter, LOG_BURST, LOG_WINDOW_NS};

/// Why a frame was counted as malformed, with the header fields at fault. A plain struct with
/// every field always written, not an enum with payloads: LLVM leaves a payload register the
/// variant lacks undefined, and the verifier refuses to read an uninitialised register.
#[derive(Clone, Copy)]
pub(crate) struct Malformed {
    reason: Reason,
    /// The field at fault (see [`Reason`]).
    field: u16,
    /// A second field, where the reason compares two.
    other: u16,
}

#[derive(Clone, Copy)]
pub(crate) enum Reason {
    /// The frame ends inside a header the checks had to read.
    Truncated,
    /// `field`: the IPv4 version/IHL byte (not version 4, or a header under 20 bytes).
    VersionIhl,
    /// `field`: IPv4 total length, shorter than `other`, the header's own length.
    TotalUnderHeader,
    /// `field`: IPv4 total length, too short to hold a UDP header.
    TotalUnderUdp,
    /// `field`: the UDP length field, under the UDP header's 8 bytes.
    UdpLength,
}

impl Malformed {
    pub(crate) const TRUNCATED: Self = Self::new(Reason::Truncated, 0, 0);

    pub(crate) const fn new(reason: Reason, field: u16, other: u16) -> Self {
        Self {
            reason,
            field,
            other,
        }
    }
}

/// Writes the record for a malformed frame (the caller checked [`log_allowed`]). Inlined: a
/// BPF subprogram can't take the context apart (the verifier forbids arithmetic on packet
/// pointers it receives as arguments).
#[inline(always)]
pub(crate) fn log_malformed(ctx: &XdpContext, why: Malformed) {
    let len = ctx.data_end() - ctx.data();
    let Malformed {
        reason,
        field,
        other,
    } = why;
    match reason {
        Reason::Truncated => {
            error!(
                ctx,
                "malformed frame: {} bytes end inside the Ethernet/IPv4/UDP headers", len
            );
        }
        Reason::VersionIhl => {
            error!(
                ctx,
                "malformed frame: IPv4 version/IHL byte {:x} (want version 4, IHL >= 5), frame {} bytes",
                field,
                len
            );
        }
        Reason::TotalUnderHeader => {
            error!(
                ctx,
                "malformed frame: IPv4 total length {} under its header length {}, frame {} bytes",
                field,
                other,
                len
            );
        }
        Reason::TotalUnderUdp => {
            error!(
                ctx,
                "malformed frame: IPv4 total length {} too short for a UDP header, frame {} bytes",
                field,
                len
            );
        }
        Reason::UdpLength => {
            error!(
                ctx,
                "malformed frame: UDP length {} under 8, frame {} bytes", field, len
            );
        }
    }
}

/// True when logging is on and this CPU is under its rate limit; counts the record as written
/// or suppressed. Reads the clock only here, on the rare paths that log.
#[inline(always)]
pub(crate) fn log_allowed() -> bool {
    if read_global(&XDP_LOG) == 0 {
        return false;
    }
    let Some(state) = LOG_LIMIT.get_ptr_mut(0) else {
        return false;
    };
    // SAFETY: a helper with no arguments; it only reads the clock.
    let now = unsafe { bpf_ktime_get_ns() };
    // SAFETY: the map returned a valid pointer to this CPU's slot; per-CPU, and XDP runs with
    // preemption disabled, so nothing else writes it meanwhile.
    let state = unsafe { &mut *state };
    if now.wrapping_sub(state[0]) >= LOG_WINDOW_NS {
        *state = [now, 0];
    }
    if state[1] >= LOG_BURST {
        count(Counter::LogSuppressed);
        return false;
    }
    state[1] += 1;
    count(Counter::Logged);
    true
}
