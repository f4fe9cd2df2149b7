//! The spec's data, reproduced without Python, and loaders for a user's own series.
//!
//! # How the GBM series is reproduced
//!
//! [`gbm`] reimplements NumPy's generator in Rust rather than shipping the 1.2 MB series: any
//! seed and length reproduce `numpy.random.default_rng(seed).normal(0.0, 0.0008, n)` bit for bit
//! (PCG64 seeded through `SeedSequence`, then the 256-layer ziggurat with NumPy's own tables),
//! so tests and tools need neither Python nor a data file. The draws were checked against NumPy
//! 2.4.6 for seeds 42 and 7 (all 150,000 draws equal as bits; see `tests/data.rs`).
//!
//! The closes are `100 * exp(cumsum(r))` with a strictly left-to-right cumulative sum and the
//! platform's `exp` (`f64::exp`, which on Linux is glibc's `exp`). That is what produced the
//! spec's checksum: on an AVX2-only CPU NumPy's `np.exp` calls the C library's `exp`. On a CPU
//! with AVX-512F (this lab's Zen 4 machines) NumPy uses its own vectorised `exp` instead, which
//! differs in the last bit for about 4% of these values (6,022 of 150,000 for seed 42), so
//! NumPy *there* gives sha256 `28970418…` rather than the spec's `b1bdd808…`; the spec's value
//! is the glibc one, and that is what this function reproduces. The fingerprint test pins the
//! checksum, so a platform whose `exp` differs (another libc) fails loudly rather than silently.

mod normal;
mod pcg64;
mod ziggurat;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use crate::Error;

/// The spec's seed.
pub const SPEC_SEED: u64 = 42;
/// The spec's series length.
pub const SPEC_BARS: usize = 150_000;
/// The spec's standard deviation of the log-returns.
pub const SPEC_SIGMA: f64 = 0.0008;
/// The spec's first price scale: `close = START * exp(cumsum(r))`.
pub const SPEC_START: f64 = 100.0;
/// sha256 of the spec's 150,000 closes as little-endian f64 (`ENGINE-SPEC.md`).
pub const SPEC_SHA256: &str = "b1bdd8083e41f520466707d981b1dde8e807c57d1e58ca27fd79c6c72200ff47";

/// `numpy.random.default_rng(seed).normal(loc, scale, n)`, bit for bit.
#[must_use]
pub fn normal(seed: u64, loc: f64, scale: f64, n: usize) -> Vec<f64> {
    let mut rng = pcg64::Pcg64::new(seed);
    normal::normal(&mut rng, loc, scale, n)
}

/// The spec's GBM closes: `100 * exp(cumsum(default_rng(seed).normal(0, 0.0008, n)))`.
///
/// `gbm(42, 150_000)` is the spec's series (sha256 [`SPEC_SHA256`]).
#[must_use]
pub fn gbm(seed: u64, n: usize) -> Vec<f64> {
    let mut r = normal(seed, 0.0, SPEC_SIGMA, n);
    let mut acc = 0.0;
    for v in &mut r {
        acc += *v;
        *v = SPEC_START * acc.exp();
    }
    r
}

/// The series as little-endian bytes, the layout the spec's checksum and the wire use.
#[must_use]
pub fn to_le_bytes(close: &[f64]) -> Vec<u8> {
    close.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Loads a file of little-endian f64 values (what `numpy.ndarray.tofile` writes on x86).
///
/// # Errors
/// [`Error::Io`] if the file cannot be read, [`Error::RaggedRaw`] if its length is not a
/// multiple of 8, [`Error::Empty`] if it holds no values.
pub fn load_raw_f64(path: impl AsRef<Path>) -> Result<Vec<f64>, Error> {
    let path = path.as_ref();
    let bytes = fs::read(path).map_err(|source| Error::Io {
        op: "read",
        path: path.to_path_buf(),
        source,
    })?;
    if bytes.len() % 8 != 0 {
        return Err(Error::RaggedRaw {
            path: path.to_path_buf(),
            len: bytes.len() as u64,
        });
    }
    if bytes.is_empty() {
        return Err(Error::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

/// The column [`load_csv`] reads when none is named.
pub const DEFAULT_CSV_COLUMN: &str = "close";

/// Loads one numeric column of a comma-separated file with a header line.
///
/// `column` defaults to `"close"`; the header match ignores surrounding whitespace and ASCII
/// case. Blank lines are skipped. Cells parse with Rust's `f64` grammar, so `NaN` is accepted
/// (and then handled by the kernel's NaN rules).
///
/// # Errors
/// [`Error::Io`], [`Error::Empty`] (no header or no rows), [`Error::NoSuchColumn`],
/// [`Error::ShortRow`], or [`Error::BadNumber`] with the 1-based line number.
pub fn load_csv(path: impl AsRef<Path>, column: Option<&str>) -> Result<Vec<f64>, Error> {
    let path = path.as_ref();
    let column = column.unwrap_or(DEFAULT_CSV_COLUMN);
    let pb = || -> PathBuf { path.to_path_buf() };
    let file = fs::File::open(path).map_err(|source| Error::Io {
        op: "open",
        path: pb(),
        source,
    })?;
    let mut lines = BufReader::new(file).lines();
    let header = match lines.next() {
        None => return Err(Error::Empty { path: pb() }),
        Some(h) => h.map_err(|source| Error::Io {
            op: "read",
            path: pb(),
            source,
        })?,
    };
    let header = header.trim_start_matches('\u{feff}').to_owned();
    let idx = header
        .split(',')
        .position(|h| h.trim().trim_matches('"').eq_ignore_ascii_case(column))
        .ok_or_else(|| Error::NoSuchColumn {
            path: pb(),
            column: column.to_owned(),
            header: header.clone(),
        })?;
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let line_no = i + 2;
        let line = line.map_err(|source| Error::Io {
            op: "read",
            path: pb(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let cell = line.split(',').nth(idx).ok_or_else(|| Error::ShortRow {
            path: pb(),
            line: line_no,
            column: column.to_owned(),
        })?;
        let cell = cell.trim().trim_matches('"');
        let v: f64 = cell.parse().map_err(|_| Error::BadNumber {
            path: pb(),
            line: line_no,
            column: column.to_owned(),
            value: cell.to_owned(),
        })?;
        out.push(v);
    }
    if out.is_empty() {
        return Err(Error::Empty { path: pb() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `numpy.random.SeedSequence(42).generate_state(4, numpy.uint64)`.
    #[test]
    fn seed_sequence_matches_numpy() {
        assert_eq!(
            pcg64::seed_sequence_state(42),
            [
                0x9f1e_2e6d_cd54_0ab7,
                0xd578_73dc_79fb_94b6,
                0x7d28_2a1b_64d4_20b7,
                0x3365_7971_4692_d5ff
            ]
        );
        // A seed above 2^32 is two entropy words.
        assert_eq!(
            pcg64::seed_sequence_state((1 << 40) + 5),
            [
                0xdae4_1755_e08a_170b,
                0x8415_abe8_7ecd_cb2c,
                0x2525_c5b4_4b91_18d0,
                0x42c2_793f_3392_bed3
            ]
        );
    }

    /// The first raw outputs of `numpy.random.PCG64(42).random_raw(3)`.
    #[test]
    fn pcg64_matches_numpy() {
        let mut rng = pcg64::Pcg64::new(42);
        let got = [rng.next_u64(), rng.next_u64(), rng.next_u64()];
        assert_eq!(
            got,
            [
                0xc621_fbcd_16d9_2688,
                0x705a_5661_a791_ffc1,
                0xdbcd_12c2_6eda_1624
            ]
        );
        let mut rng = pcg64::Pcg64::new((1 << 40) + 5);
        assert_eq!(
            [rng.next_u64(), rng.next_u64()],
            [0x0136_9aef_039f_edeb, 0x5f61_b404_7331_4316]
        );
    }

    #[test]
    fn spec_series_starts_and_ends_as_documented() {
        let c = gbm(SPEC_SEED, SPEC_BARS);
        assert_eq!(c.len(), SPEC_BARS);
        assert!((c[0] - 100.024_380_34).abs() < 5e-9, "{}", c[0]);
        assert!((c[1] - 99.941_195_93).abs() < 5e-9, "{}", c[1]);
        assert!((c[SPEC_BARS - 1] - 66.924_260_59).abs() < 5e-9);
    }
}
