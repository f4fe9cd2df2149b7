//! Spans of time written with their unit (`10us`, `100ms`, `1s`), as `--pack-window` and
//! `--burst` take them.

/// A span with its unit (`100ms`, `1s`, `500us`, `250ns`), ns.
pub(crate) fn span_ns(s: &str) -> Option<u64> {
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let scale = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "" if num == "0" => 1,
        _ => return None,
    };
    num.parse::<u64>().ok()?.checked_mul(scale)
}

/// `n` ns in the largest unit that writes it exactly (what [`span_ns`] reads back; 0 as `0`).
pub(crate) fn span_text(n: u64) -> String {
    if n == 0 {
        return "0".into();
    }
    match n {
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}
