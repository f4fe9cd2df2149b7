//! Packet memory: the one bounds-checked read and write the verifier accepts, and the fixed
//! offsets of the headers served (Ethernet II, IPv4 without options).

use aya_ebpf::programs::XdpContext;
use xdp_common::layout::{Field, ethernet, ipv4};

/// Where the IPv4 header starts: right after Ethernet II (no VLAN tag).
pub(crate) const IP: usize = ethernet::HEADER_LEN;
/// Where the UDP header starts, for an IPv4 header without options (the only kind served).
pub(crate) const UDP: usize = IP + ipv4::HEADER_LEN;

/// Reads the `N`-byte field at `field`. A field of another width is an error, not a short
/// read; the widths are constants, so the check compiles away.
#[inline(always)]
pub(crate) fn read_field<const N: usize>(ctx: &XdpContext, field: Field) -> Result<[u8; N], ()> {
    if field.end - field.start != N {
        return Err(());
    }
    read(ctx, field.start)
}

/// Writes the `N`-byte field at `field`, with the same width check as [`read_field`].
#[inline(always)]
pub(crate) fn write_field<const N: usize>(
    ctx: &XdpContext,
    field: Field,
    value: [u8; N],
) -> Result<(), ()> {
    if field.end - field.start != N {
        return Err(());
    }
    write(ctx, field.start, value)
}

/// Writes a `T` at `offset`, after the same bounds check as [`read`].
#[inline(always)]
pub(crate) fn write<T: Copy>(ctx: &XdpContext, offset: usize, value: T) -> Result<(), ()> {
    let start = ctx.data();
    let end = ctx.data_end();
    if start + offset + core::mem::size_of::<T>() > end {
        return Err(());
    }
    let ptr = (start + offset) as *mut T;
    // SAFETY: in bounds of the frame, checked just above; XDP frames are writable.
    unsafe { core::ptr::write_unaligned(ptr, value) };
    Ok(())
}

/// Reads a `T` at `offset` from the start of the frame, after the bounds check the verifier
/// requires. The only way this program reads packet memory itself (the UDP checksum hands a
/// bounds-checked range to `bpf_csum_diff`).
#[inline(always)]
pub(crate) fn read<T: Copy>(ctx: &XdpContext, offset: usize) -> Result<T, ()> {
    // Loaded afresh for every read: the compiler can't carry `end` into arithmetic of its own
    // (adding a value read from the packet to it, say), which the verifier refuses.
    // SAFETY: `ctx.ctx` is the kernel's xdp_md for this run.
    let (start, end) = unsafe {
        (
            core::ptr::read_volatile(core::ptr::addr_of!((*ctx.ctx).data)) as usize,
            core::ptr::read_volatile(core::ptr::addr_of!((*ctx.ctx).data_end)) as usize,
        )
    };
    if start + offset + core::mem::size_of::<T>() > end {
        return Err(());
    }
    let ptr = (start + offset) as *const T;
    // SAFETY: the range [ptr, ptr + size_of::<T>()) lies inside the frame, checked just above;
    // packet data has no alignment guarantee, hence read_unaligned.
    Ok(unsafe { core::ptr::read_unaligned(ptr) })
}
