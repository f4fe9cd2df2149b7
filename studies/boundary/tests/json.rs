//! The workspace builds serde_json with `float_roundtrip`, so the bench's JSON row compares two
//! encodings that return the same numbers. Without the feature this fails: 27,399 of these
//! 150,000 values come back different in the last bits.

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {
    affinity as _, anyhow as _, boundary as _, clap as _, hdrhistogram as _, paths as _,
    proptest as _, results as _, serde as _, signal_hook as _, thiserror as _, tokio as _,
};

#[test]
fn json_returns_every_value_of_the_series_exactly() {
    let close = engine::data::gbm(42, 150_000);
    let json = serde_json::to_vec(&close).expect("encode");
    let back: Vec<f64> = serde_json::from_slice(&json).expect("decode");
    assert_eq!(back.len(), close.len());
    let differ = back
        .iter()
        .zip(&close)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    assert_eq!(differ, 0, "{differ} values differ after a JSON round trip");
}
