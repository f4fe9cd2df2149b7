//! Stage timing (`--xdp-stages`): clock reads at a run's marks, compiled in by [`Timing`]
//! (`crate::Timing`) only.

use crate::{
    Timing,
    maps::{MD_ACTION, STAGE_CLOCKS, STAGES},
    read_global,
};
use aya_ebpf::helpers::bpf_ktime_get_ns;
use core::marker::PhantomData;
use xdp_common::{Action, Counter, Mark, Outcome};

/// Stage timing (`--xdp-stages`, the `xdp-ebpf-stages` object): the clock at each [`Mark`] of
/// the run in progress, kept in this CPU's slot of `STAGE_CLOCKS`. In the untimed object
/// [`Timing::TIMED`] is false and none of it is compiled. In `xdp-ebpf-run` (`--xdp-stages=run`)
/// [`Timing::STAGE_MARKS`] is false: only the run's start and end are read, so nothing between them
/// waits for a clock read (each is ordered: `LFENCE; RDTSC`), and the whole run lands in the
/// `End` mark's sum.
pub(crate) struct Stamps<T: Timing>(PhantomData<T>);

/// Where the calibrating clock read sits in a `STAGE_CLOCKS` entry (after the marks).
pub(crate) const CLOCK_CAL: usize = Mark::COUNT;

impl<T: Timing> Stamps<T> {
    /// Starts a run's timing: two marks back to back (the calibration, then `Start`), so the
    /// time between them is what one mark costs: a clock read and its store.
    #[inline(always)]
    pub(crate) fn start() -> Stamps<T> {
        if T::TIMED
            && let Some(at) = STAGE_CLOCKS.get_ptr_mut(0)
        {
            // SAFETY: this CPU's slot of a per-CPU map, which no other program instance
            // writes concurrently; helper calls without arguments.
            unsafe {
                *at = [0; Mark::COUNT + 1];
                (*at)[CLOCK_CAL] = bpf_ktime_get_ns();
                (*at)[Mark::Start as usize] = bpf_ktime_get_ns();
            }
        }
        Stamps(PhantomData)
    }

    #[inline(always)]
    pub(crate) fn mark(&mut self, m: Mark) {
        if T::TIMED
            && (T::STAGE_MARKS || matches!(m, Mark::End))
            && let Some(at) = STAGE_CLOCKS.get_ptr_mut(0)
        {
            // SAFETY: as in `start`.
            unsafe { (*at)[m as usize] = bpf_ktime_get_ns() };
        }
    }

    /// Ends the run's timing and adds its stages to `STAGES` under the outcome `counter` says.
    #[inline(always)]
    pub(crate) fn record(&mut self, counter: Counter) {
        if !T::TIMED {
            return;
        }
        self.mark(Mark::End);
        let outcome = match counter {
            Counter::Redirected if Action::from_u8(read_global(&MD_ACTION)) == Action::Trigger => {
                Outcome::TriggerRedirected
            }
            Counter::Redirected => Outcome::Redirected,
            Counter::Reflected => Outcome::Reflected,
            Counter::TriggerFired => Outcome::Fired,
            _ => Outcome::Other,
        };
        let Some(at) = STAGE_CLOCKS.get_ptr(0) else {
            return;
        };
        let Some(sums) = STAGES.get_ptr_mut(outcome as u32) else {
            return;
        };
        // SAFETY: this CPU's slots of per-CPU maps, which no other program instance writes
        // concurrently.
        let (at, sums) = unsafe { (&*at, &mut *sums) };
        sums[0] += 1;
        sums[1 + Mark::Start as usize] += at[Mark::Start as usize].wrapping_sub(at[CLOCK_CAL]);
        let mut prev = at[Mark::Start as usize];
        let mut i = 1;
        while i < Mark::COUNT {
            let t = at[i];
            if t != 0 {
                sums[1 + i] += t.wrapping_sub(prev);
                prev = t;
            }
            i += 1;
        }
    }
}
