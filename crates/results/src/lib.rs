//! The lab's results, typed: what the `trader`, `replay` and `floor` binaries write as JSON, and
//! the UTC stamp reports and results folders carry (`utc`). Reports only: the option values they
//! record (path, mode, source, rate) are the `paths` crate's.
//!
//! The binaries serialize these structs; `xtask` and the tests deserialize the same structs, so
//! a renamed or missing field is a compile error or a parse error naming the file, never a
//! silent NaN or 0 in a table.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize, de::DeserializeOwned};

mod enums;
mod floor;
pub mod plot;
mod replay;
mod trader;
pub mod utc;

pub use enums::EndReason;
pub use floor::FloorReport;
pub use replay::{
    Arrival, LineSends, Parity, ParityVerdict, ReplayReport, RetransmitReport, SessionReport,
    StreamReport,
};
pub use trader::{
    Account, FeedSeen, ForeignSession, FrameCounts, Knobs, LineCounts, OrderSessionReport,
    OutcomeStages, Position, RUN_STAGE, StageMean, TraderCounters, TraderReport, TriggerReport,
    Unarmed, XdpCounters, XdpProgramStats, XskStats,
};

/// Percentiles of one latency histogram, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Values recorded.
    pub count: u64,
    /// Smallest value.
    pub min_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// 99.99th percentile.
    pub p9999_us: f64,
    /// Largest value.
    pub max_us: f64,
    /// Arithmetic mean.
    pub mean_us: f64,
    /// Standard deviation (the population's, as HdrHistogram gives it); 0 in a report written
    /// before it was (read back with its default).
    #[serde(default)]
    pub stdev_us: f64,
    /// Values above the histogram's range (clamped).
    pub saturated: u64,
}

/// Context switches of one thread over a span.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextSwitches {
    /// The thread gave up its CPU (slept, blocked).
    pub voluntary: u64,
    /// The thread was preempted.
    pub involuntary: u64,
}

/// Where a thread's wall-clock time went over a span: on a CPU (its CPU-time clock,
/// `CLOCK_THREAD_CPUTIME_ID`), waiting for one (the run-queue delay in
/// `/proc/thread-self/schedstat`), and the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadTime {
    /// Wall-clock time, ms.
    pub wall_ms: f64,
    /// Time on a CPU, ms. The kernel's task clock leaves out steal; it leaves out interrupt
    /// time only with CONFIG_IRQ_TIME_ACCOUNTING, so without it a softirq (a veth's NAPI poll)
    /// run on this thread's CPU while it ran counts here.
    pub ran_ms: f64,
    /// Time runnable but waiting for the CPU (another task had it), ms.
    pub waited_ms: f64,
    /// For a thread that never sleeps, the rest: time the hypervisor ran something else
    /// while this thread was on its CPU, ms. Seen where the kernel accounts paravirtual steal
    /// time (CONFIG_PARAVIRT_TIME_ACCOUNTING, as on KVM guests); elsewhere it reads about 0.
    /// `None` for a thread that slept: its sleep and the steal look the same.
    pub stolen_ms: Option<f64>,
    /// Minor page faults the thread took over the span (`getrusage(RUSAGE_THREAD)`): 0 when
    /// every page it touched was mapped before the span began. Each costs µs on the hot path.
    #[serde(default)]
    pub minor_faults: u64,
}

/// The machine a result was measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// The kernel release (`uname -r`).
    pub kernel: String,
    /// The CPU model (`/proc/cpuinfo`'s first "model name").
    pub cpu: String,
    /// CPUs this process may run on.
    pub cores: usize,
}

impl Machine {
    /// Reads this machine's; fields the system doesn't say are empty (or 0).
    pub fn read() -> Machine {
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_owned();
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .map(|s| cpu_model(&s).to_owned())
            .unwrap_or_default();
        let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
        Machine { kernel, cpu, cores }
    }
}

/// The first "model name" in `/proc/cpuinfo`'s text ("" if none, as on some ARM kernels).
pub fn cpu_model(cpuinfo: &str) -> &str {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map_or("", |(_, m)| m.trim())
}

/// Reading or writing a result file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be read or written.
    #[error("failed to {op} {}", path.display())]
    Io {
        /// `read` or `write`.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A result could not be turned into JSON (a float map key, a serializer that failed).
    #[error("failed to write a {what} as JSON")]
    Serialize {
        /// The type.
        what: &'static str,
        /// What serde said.
        #[source]
        source: serde_json::Error,
    },
    /// The file is not a result of the expected kind (a field missing or of the wrong type: a
    /// binary and its reader from different builds, or not a result at all).
    #[error("{} is not a valid {what}", path.display())]
    Parse {
        /// The type expected.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Where the JSON disagrees.
        #[source]
        source: serde_json::Error,
    },
}

/// Reads a result written by [`write`] (or by a binary's `--json-out`).
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<T, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        op: "read",
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| Error::Parse {
        what: type_name::<T>(),
        path: path.to_owned(),
        source,
    })
}

/// Writes a result as pretty JSON to `path`, or to stdout when `path` is `None`.
pub fn write<T: Serialize>(path: Option<&Path>, value: &T) -> Result<(), Error> {
    let json = serde_json::to_string_pretty(value).map_err(|source| Error::Serialize {
        what: type_name::<T>(),
        source,
    })?;
    match path {
        Some(p) => std::fs::write(p, json).map_err(|source| Error::Io {
            op: "write",
            path: p.to_owned(),
            source,
        }),
        None => {
            println!("{json}");
            Ok(())
        }
    }
}

/// `T`'s name without its path, for messages.
fn type_name<T>() -> &'static str {
    std::any::type_name::<T>()
        .rsplit("::")
        .next()
        .unwrap_or("result")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_round_trips_through_a_file() {
        let dir = std::env::temp_dir().join(format!("results-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.json");
        let s = Summary {
            count: 3,
            p50_us: 1.5,
            ..Summary::default()
        };
        write(Some(&p), &s).unwrap();
        let back: Summary = read(&p).unwrap();
        assert_eq!(back, s);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn cpu_model_is_the_first_model_name() {
        let text = "processor\t: 0\nmodel name\t: AMD EPYC 9B14\nflags\t: x\nmodel name\t: other\n";
        assert_eq!(cpu_model(text), "AMD EPYC 9B14");
        assert_eq!(cpu_model("processor : 0\n"), "");
    }

    #[test]
    fn a_missing_field_is_an_error_naming_file_and_type() {
        let dir = std::env::temp_dir().join(format!("results-test-m-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.json");
        std::fs::write(&p, r#"{"count": 1}"#).unwrap();
        let e = read::<Summary>(&p).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("t.json") && msg.contains("Summary"), "{msg}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
