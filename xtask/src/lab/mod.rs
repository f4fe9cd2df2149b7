//! The lab layer: what one lab run is, below `bench`, `matrix` and `zero-loss`. The bench's
//! options ([`Options`], also the defaults of a matrix or zero-loss trial, `options`), the
//! `--path` values and the report's rows, both read from the path table (`paths::PATHS`,
//! `rows`), what a run puts at each end of the veth ([`Ends`], `ends`), the session that
//! builds the binaries and the lab and runs the two ends in it (`session`), and the lab's own
//! commands (`netns-up`, `netns-down`, `netns-status`: `commands`).
pub(crate) mod commands;
mod ends;
mod options;
mod rows;
pub(crate) mod session;

pub(crate) use ends::Ends;
pub(crate) use options::{
    Cpus, LIES_PER_SECOND, LieStream, Options, RATE, check_cpus, gbm_for, trader_paths,
};
pub(crate) use rows::{PathChoice, Row};
