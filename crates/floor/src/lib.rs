//! The CPU floor: two threads pinned to two cores ping-pong a counter through one shared
//! cache line. The round trip is what moving one cache line between the two cores costs:
//! nothing that crosses between the replay's core and the trader's can be faster.
//!
//! Run for as long as a benchmark run (`--seconds`), its tail is the machine's own: every
//! interrupt, preemption or hypervisor pause of either core stalls one round trip, with no
//! network, kernel or trader in the way. A path's tail can't be lower than that.
use std::path::PathBuf;

use clap::Parser;
use paths::args::Args;

#[cfg(feature = "io")]
mod measure;
#[cfg(feature = "io")]
pub use measure::run;

/// Measures the inter-core round trip through shared memory.
#[derive(Debug, Clone, PartialEq, Parser)]
#[command(version)]
pub struct Options {
    /// The two CPUs (ping, pong).
    #[arg(long, value_delimiter = ',', default_value = "0,1")]
    pub cpus: Vec<usize>,
    /// Round trips to measure.
    #[arg(long, default_value_t = 200_000, conflicts_with = "seconds",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: u64,
    /// Measure for this long instead of a count (e.g. as long as a benchmark run, so the tail
    /// shows the machine's own jitter at that time scale).
    #[arg(long, value_parser = parse_seconds)]
    pub seconds: Option<f64>,
    /// Write the summary here as JSON (stdout if absent).
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// Write the histogram here (.hgrm, µs).
    #[arg(long)]
    pub hgrm_out: Option<PathBuf>,
}

impl Options {
    /// The command line that parses back into these options (what xtask runs `floor` with).
    pub fn to_args(&self) -> Vec<String> {
        let Options {
            cpus,
            iterations,
            seconds,
            json_out,
            hgrm_out,
        } = self;
        let mut a = Args::default();
        a.list("--cpus", cpus);
        match seconds {
            Some(s) => a.value("--seconds", s),
            None => a.value("--iterations", iterations),
        }
        a.some("--json-out", json_out.as_ref().map(|p| p.display()));
        a.some("--hgrm-out", hgrm_out.as_ref().map(|p| p.display()));
        a.into_vec()
    }
}

/// The longest `--seconds` (an hour: longer than any run it stands beside).
const MAX_SECONDS: f64 = 3600.0;

fn parse_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= MAX_SECONDS => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds in (0, {MAX_SECONDS}]"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(args: &[&str]) {
        let parsed = Options::try_parse_from(std::iter::once("floor").chain(args.iter().copied()))
            .expect("parses");
        let again =
            Options::try_parse_from(std::iter::once("floor".to_owned()).chain(parsed.to_args()))
                .expect("its own line parses");
        assert_eq!(parsed, again, "{args:?} -> {:?}", parsed.to_args());
    }

    #[test]
    fn to_args_parses_back_into_the_same_options() {
        round_trip(&[]);
        round_trip(&["--cpus", "1,0", "--iterations", "1000"]);
        round_trip(&[
            "--seconds",
            "2.5",
            "--json-out",
            "/tmp/f.json",
            "--hgrm-out",
            "/tmp/f.hgrm",
        ]);
    }

    #[test]
    fn bad_seconds_are_refused() {
        assert!(Options::try_parse_from(["floor", "--seconds", "0"]).is_err());
        assert!(Options::try_parse_from(["floor", "--seconds", "3601"]).is_err());
        assert!(Options::try_parse_from(["floor", "--seconds", "1", "--iterations", "5"]).is_err());
    }

    #[cfg(feature = "io")]
    #[test]
    fn one_cpu_twice_is_refused() {
        let o = Options::try_parse_from(["floor", "--cpus", "1,1"]).unwrap();
        assert!(
            run(o)
                .unwrap_err()
                .to_string()
                .contains("two different CPUs")
        );
    }
}
