//! The data is NumPy's, bit for bit. Fixtures from NumPy 2.4.6:
//! `r = numpy.random.default_rng(seed).normal(0.0, 0.0008, 150_000)`, the closes from
//! `100 * math.exp(a)` over `numpy.cumsum(r)` (the C library's exp, which is what `np.exp`
//! calls on an AVX2 machine; see `engine::data`).

// What the package's other targets use (`unused_crate_dependencies` sees each target alone).
use {
    anyhow as _, clap as _, criterion as _, proptest as _, pulp as _, serde_json as _,
    thiserror as _,
};

use std::io::Write;

use engine::Error;
use engine::data::{self, SPEC_BARS, SPEC_SHA256};
use sha2::{Digest, Sha256};

fn sha256(xs: &[f64]) -> String {
    let digest = Sha256::digest(data::to_le_bytes(xs));
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn normal_draws_match_numpy() {
    let cases: [(u64, &str, [u64; 3]); 3] = [
        (
            42,
            "ec87e1bd3ed2e862bf1d866d6822c44af10fbca79d8ea737527fc78e9683ae75",
            [
                0x3f2f_f3af_d3cb_8c5c,
                0xbf4b_4337_1701_65fb,
                0x3f43_ac31_5658_d7b5,
            ],
        ),
        (
            7,
            "2c1a92060346afb2bad77f2af6834de534dbc64d52a1ebc61c778f395e415702",
            [
                0x3eb0_82c6_561e_4c78,
                0x3f2f_5363_b394_2ca3,
                0xbf2c_bed4_ff55_be36,
            ],
        ),
        (
            (1 << 40) + 5,
            "aaacff2641da4a3ee2fbac40cdc4087c77ad2ff8605518a651b2c2914b7c2129",
            [
                0xbf14_974b_882e_77b1,
                0xbf42_55cc_b121_9c10,
                0x3f4a_fa14_fd11_d92b,
            ],
        ),
    ];
    for (seed, sha, first) in cases {
        let r = data::normal(seed, 0.0, 0.0008, SPEC_BARS);
        assert_eq!(
            r[..3].iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            first,
            "seed {seed}: first draws"
        );
        assert_eq!(sha256(&r), sha, "seed {seed}: all draws");
    }
}

#[test]
fn spec_series_fingerprint() {
    let c = data::gbm(42, SPEC_BARS);
    assert_eq!(sha256(&c), SPEC_SHA256);
    assert_eq!(c[0], 100.024_380_337_901_77);
    assert_eq!(c[SPEC_BARS - 1], 66.924_260_587_894_7);
}

#[test]
fn other_seed_closes() {
    assert_eq!(
        sha256(&data::gbm(7, SPEC_BARS)),
        "efb642d1516567928b65dc25326278cbc6ea40c4255c3459f4a075f10dd793bb"
    );
}

fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("engine-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).expect("create temp file");
    f.write_all(bytes).expect("write temp file");
    path
}

#[test]
fn raw_round_trip_and_errors() {
    let c = data::gbm(42, 1000);
    let path = temp_file("series.f64", &data::to_le_bytes(&c));
    assert_eq!(data::load_raw_f64(&path).expect("load raw"), c);
    let ragged = temp_file("ragged.f64", &[0_u8; 12]);
    assert!(matches!(
        data::load_raw_f64(&ragged),
        Err(Error::RaggedRaw { len: 12, .. })
    ));
    let empty = temp_file("empty.f64", &[]);
    assert!(matches!(
        data::load_raw_f64(&empty),
        Err(Error::Empty { .. })
    ));
    assert!(matches!(
        data::load_raw_f64("/nonexistent/x.f64"),
        Err(Error::Io { op: "read", .. })
    ));
}

#[test]
fn csv_loading_and_errors() {
    let ok = temp_file(
        "ok.csv",
        b"time,Close,volume\n1,100.5,3\n2, 101.25 ,4\n\n3,NaN,5\n",
    );
    let v = data::load_csv(&ok, None).expect("load csv");
    assert_eq!(v[..2], [100.5, 101.25]);
    assert!(v[2].is_nan());
    assert_eq!(
        data::load_csv(&ok, Some("volume")).expect("volume column"),
        [3.0, 4.0, 5.0]
    );
    assert!(matches!(
        data::load_csv(&ok, Some("open")),
        Err(Error::NoSuchColumn { .. })
    ));

    let bad = temp_file("bad.csv", b"close\n1.0\n2.0\nx1\n");
    let err = data::load_csv(&bad, None).expect_err("bad number");
    assert!(
        matches!(&err, Error::BadNumber { line: 4, value, .. } if value == "x1"),
        "{err}"
    );
    assert!(err.to_string().contains(":4:"), "{err}");

    let short = temp_file("short.csv", b"a,close\n1,2\n3\n");
    assert!(matches!(
        data::load_csv(&short, None),
        Err(Error::ShortRow { line: 3, .. })
    ));
    let header_only = temp_file("header.csv", b"close\n");
    assert!(matches!(
        data::load_csv(&header_only, None),
        Err(Error::Empty { .. })
    ));
    let nothing = temp_file("nothing.csv", b"");
    assert!(matches!(
        data::load_csv(&nothing, None),
        Err(Error::Empty { .. })
    ));
    assert!(matches!(
        data::load_csv("/nonexistent/x.csv", None),
        Err(Error::Io { op: "open", .. })
    ));
}
