//! `json-default SERIES.bin`: encodes the little-endian f64 series in the file to JSON and
//! decodes it back with serde_json's default float parsing (no `float_roundtrip`), and prints
//! one JSON object: bytes, median encode and decode seconds over `REPS` runs, and how many
//! values came back different. `boundary-bench` runs it beside its own exact figures.
#![forbid(unsafe_code)]

use std::time::Instant;

/// Timed runs of each direction; the median is reported.
const REPS: usize = 7;

fn median_secs(mut f: impl FnMut()) -> f64 {
    let mut s: Vec<f64> = (0..REPS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    s.sort_by(f64::total_cmp);
    s[REPS / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os()
        .nth(1)
        .ok_or("usage: json-default SERIES.bin (little-endian f64 values)")?;
    let raw = std::fs::read(&path)?;
    if raw.len() % 8 != 0 {
        return Err(format!("{} bytes is not a whole number of f64 values", raw.len()).into());
    }
    let series: Vec<f64> = raw
        .chunks_exact(8)
        .map(|c| {
            let mut w = [0; 8];
            w.copy_from_slice(c);
            f64::from_le_bytes(w)
        })
        .collect();
    let json = serde_json::to_vec(&series)?;
    let encode_s = median_secs(|| {
        std::hint::black_box(serde_json::to_vec(std::hint::black_box(&series)).ok());
    });
    let decode_s = median_secs(|| {
        std::hint::black_box(serde_json::from_slice::<Vec<f64>>(std::hint::black_box(&json)).ok());
    });
    let back: Vec<f64> = serde_json::from_slice(&json)?;
    let inexact = back
        .iter()
        .zip(&series)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    let report = serde_json::json!({
        "values": series.len(), "json_bytes": json.len(), "encode_s": encode_s,
        "decode_s": decode_s, "values_inexact": inexact,
    });
    println!("{report}");
    Ok(())
}
