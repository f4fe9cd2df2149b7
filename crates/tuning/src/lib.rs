//! Host tuning for low latency, apart from any experiment: [`doctor`] reads the machine's
//! readiness (CPUs, isolation, C-states, clocksource, IRQ affinity, THP, huge pages, the
//! kernel's XDP features) and says, for each finding, why it matters and what to set;
//! [`isolate`] moves every other movable task, unbound workqueues and IRQs off a measured CPU
//! at runtime and restores each setting exactly (after Ctrl-C and, from its saved state file,
//! after a crash). Used by `cargo xtask bench --isolate`, the matrix's `isolate` knob, the
//! hot-path suite and `cargo xtask doctor`; [`idle`] sets a KVM guest's idle settings (haltpoll's
//! poll window, the halt state) for a run and puts them back the same way.
#![forbid(unsafe_code)]

pub mod doctor;
pub mod idle;
pub mod isolate;
