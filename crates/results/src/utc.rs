//! The time now in UTC, for report stamps and results folders: the workspace's one civil-date
//! conversion (Howard Hinnant's days-to-civil).

/// The UTC date and time of `secs` since the Unix epoch: (year, month, day, hour, minute,
/// second).
#[must_use]
pub fn civil(secs: u64) -> (i64, u32, u32, u64, u64, u64) {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m as u32, d as u32, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Seconds since the Unix epoch, from the system clock (0 if it is before it).
fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The time now as `YYYY-MM-DDTHH:MM:SSZ` (ISO 8601).
#[must_use]
pub fn now_iso() -> String {
    let (y, m, d, hh, mm, ss) = civil(now_secs());
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// The time now as `YYYY-MM-DDTHH-MM-SSZ`: a results folder's name (no colons).
#[must_use]
pub fn now_for_file_names() -> String {
    now_iso().replace(':', "-")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates_are_right_across_leap_years_and_eras() {
        assert_eq!(civil(0), (1970, 1, 1, 0, 0, 0));
        // 2000-02-29T12:34:56Z, a leap day of a century leap year.
        assert_eq!(civil(951_827_696), (2000, 2, 29, 12, 34, 56));
        // 2026-12-04T14:48:00Z.
        assert_eq!(civil(1_796_395_680), (2026, 12, 4, 14, 48, 0));
        let iso = now_iso();
        assert_eq!(iso.len(), 20, "{iso}");
        assert!(!now_for_file_names().contains(':'));
    }
}
