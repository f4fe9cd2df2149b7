//! The time now in UTC, for report stamps and results folders (jiff's civil-date conversion).

use jiff::Timestamp;

/// `ts` as `YYYY-MM-DDTHH:MM:SSZ` (ISO 8601, whole seconds).
fn iso(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The time now as `YYYY-MM-DDTHH:MM:SSZ` (ISO 8601).
#[must_use]
pub fn now_iso() -> String {
    iso(Timestamp::now())
}

/// The time now as `YYYY-MM-DDTHH-MM-SSZ`: a results folder's name (no colons).
#[must_use]
pub fn now_for_file_names() -> String {
    now_iso().replace(':', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> String {
        iso(Timestamp::from_second(secs).unwrap())
    }

    #[test]
    fn civil_dates_are_right_across_leap_years_and_eras() {
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        // A leap day of a century leap year.
        assert_eq!(at(951_827_696), "2000-02-29T12:34:56Z");
        assert_eq!(at(1_796_395_680), "2026-12-04T14:48:00Z");
        // Fractions of a second are cut, not rounded.
        let ts = Timestamp::new(1_796_395_680, 999_999_999).unwrap();
        assert_eq!(iso(ts), "2026-12-04T14:48:00Z");
        let iso = now_iso();
        assert_eq!(iso.len(), 20, "{iso}");
        assert!(!now_for_file_names().contains(':'));
    }
}
