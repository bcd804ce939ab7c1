//! How the command lines of both binaries read a time and a duration: one parser each, used as
//! clap `value_parser` by every flag that takes one, so every command accepts the same forms.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use std::time::Duration;

/// The time forms every `--at`-like flag accepts, as its error message lists them.
pub const TIME_FORMS: &str = "2017-05-10, 2017-05-10 09:00[:00], 2017-05-10T09:00[:00] (all UTC) \
                              or RFC 3339 (2017-05-10T09:00:00Z, 2017-05-10T11:00:00+02:00)";

/// The duration forms every duration flag accepts, as its error message lists them.
pub const DURATION_FORMS: &str =
    "a whole number with a unit s, m, h or d (30s, 15m, 2h, 1h30m, 7d); a bare number is seconds";

/// Parses a time flag: RFC 3339 (an offset is converted to UTC), `YYYY-MM-DD HH:MM[:SS]`,
/// `YYYY-MM-DDTHH:MM[:SS]` (UTC) or `YYYY-MM-DD` (midnight UTC).
///
/// # Errors
/// A message quoting the text and listing [`TIME_FORMS`]; clap prefixes the flag's name.
pub fn parse_time(text: &str) -> Result<DateTime<Utc>, String> {
    let t = text.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return Ok(d.with_timezone(&Utc));
    }
    for fmt in [
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(n) = NaiveDateTime::parse_from_str(t, fmt) {
            return Ok(n.and_utc());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(t, "%Y-%m-%d")
        && let Some(n) = d.and_hms_opt(0, 0, 0)
    {
        return Ok(n.and_utc());
    }
    Err(format!("{text:?} is not a time; use {TIME_FORMS}"))
}

/// Parses a duration flag with humantime (`30s`, `15m`, `2h`, `1h30m`, `1.5h`, `7d`, `1w`). A bare
/// whole number is seconds, as the flags that once took seconds read it. Zero is refused.
///
/// # Errors
/// A message quoting the text and listing [`DURATION_FORMS`]; clap prefixes the flag's name.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let bad = || format!("{text:?} is not a duration; use {DURATION_FORMS}");
    if t.is_empty() {
        return Err(bad());
    }
    // A bare whole number is seconds; anything else is humantime's (`30s`, `15m`, `1h30m`, `7d`).
    let d = if t.bytes().all(|b| b.is_ascii_digit()) {
        Duration::from_secs(t.parse().map_err(|_| bad())?)
    } else {
        humantime::parse_duration(t).map_err(|_| bad())?
    };
    if d.is_zero() {
        return Err(format!("{text:?}: a duration must be longer than zero"));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_time_form_reads_the_same_instant() {
        let midnight = DateTime::parse_from_rfc3339("2017-05-10T00:00:00Z")
            .map(|d| d.with_timezone(&Utc))
            .ok();
        for form in [
            "2017-05-10",
            "2017-05-10 00:00",
            "2017-05-10 00:00:00",
            "2017-05-10T00:00",
            "2017-05-10T00:00:00",
            "2017-05-10T00:00:00Z",
            "2017-05-10T02:00:00+02:00",
            " 2017-05-10 ",
        ] {
            assert_eq!(parse_time(form).ok(), midnight, "{form}");
        }
        for bad in [
            "",
            "yesterday",
            "2017-13-01",
            "10/05/2017",
            "2017-05-10 25:00",
        ] {
            let e = parse_time(bad).unwrap_err();
            assert!(
                e.contains("RFC 3339") && e.contains(&format!("{bad:?}")),
                "{e}"
            );
        }
    }

    #[test]
    fn durations_take_units_and_bare_seconds() {
        for (text, secs) in [
            ("30s", 30),
            ("15m", 900),
            ("2h", 7_200),
            ("1h30m", 5_400),
            ("7d", 604_800),
            ("1w", 604_800),
            ("1.5h", 5_400),
            ("45", 45),
            (" 5s ", 5),
        ] {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_secs(secs)),
                "{text}"
            );
        }
        for bad in [
            "",
            "s",
            "0",
            "0s",
            "-1s",
            "h1",
            "1hh",
            "99999999999999999999d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
