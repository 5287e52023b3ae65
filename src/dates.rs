//! Dates without a date library: RFC 3339 timestamps to and from Unix seconds, and the
//! `YYYY-MM-DD` ovmem shows next to a memory. Howard Hinnant's civil-calendar algorithms.

/// `2026-12-01T08:00:00Z` for unix seconds (UTC).
pub fn iso8601(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// Unix seconds for an RFC 3339 timestamp (`2026-12-01T08:00:00.123+00:00`, `...Z`); `None` if
/// it is not one.
pub fn parse_iso8601(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (num(0..4)?, num(5..7)?, num(8..10)?, num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[digits..];
    }
    let offset = match rest {
        "" | "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hh = rest.get(1..3)?.parse::<i64>().ok()?;
            let mm = rest.get(4..6).or_else(|| rest.get(3..5))?.parse::<i64>().ok()?;
            sign * (hh * 3600 + mm * 60)
        }
    };
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + se - offset)
}

pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub(crate) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `YYYY-MM-DD` (UTC) for Unix seconds.
pub fn date(unix: i64) -> String {
    let (y, m, d) = civil_from_days(unix.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(1_795_994_789), "2026-11-29");
        assert_eq!(date(951_782_400), "2000-02-29");
        assert_eq!(date(-1), "1969-12-31");
    }

    #[test]
    fn timestamps_round_trip() {
        for t in [0, 1, 951_782_400, 1_796_114_923, 4_102_444_800, -86_401] {
            assert_eq!(parse_iso8601(&iso8601(t)), Some(t), "{}", iso8601(t));
        }
        assert_eq!(iso8601(1_796_114_923), "2026-12-01T08:48:43Z");
        assert_eq!(parse_iso8601("2026-12-01T08:48:43.934260+00:00"), Some(1_796_114_923));
        assert_eq!(parse_iso8601("2026-12-01T10:48:43+02:00"), Some(1_796_114_923));
        assert_eq!(parse_iso8601("2026-12-01T03:48:43-0500"), Some(1_796_114_923));
        assert_eq!(parse_iso8601("yesterday"), None);
        assert_eq!(parse_iso8601("2026-13-01T00:00:00Z"), None);
        assert_eq!(parse_iso8601("2026-12-01T00:00:00+xx"), None);
    }

    #[test]
    fn timestamps_parse_in_every_rfc3339_form() {
        assert_eq!(parse_iso8601("2026-11-29T23:26:29.519Z"), Some(1_795_994_789));
        assert_eq!(parse_iso8601("2026-11-29T23:26:29"), Some(1_795_994_789));
        assert_eq!(parse_iso8601("2026-11-30T00:26:29+01:00"), Some(1_795_994_789));
        assert_eq!(parse_iso8601(&iso8601(1_795_994_789)), Some(1_795_994_789));
        assert_eq!(parse_iso8601("yesterday"), None);
    }
}
