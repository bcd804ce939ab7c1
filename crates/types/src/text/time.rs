//! Times (always UTC) and durations. Hand-formatted: chrono's strftime interpreter dominated
//! the bench on the hundreds of rows a tick prints. Read through the naive value: UTC has no
//! offset to apply. Years outside `0..=9999` fall back to chrono's own formatting.

use std::fmt::Write as _;

use chrono::{DateTime, Datelike, Duration, SecondsFormat, Timelike, Utc};

use super::number::push_uint;

/// The English weekday names, Monday first (`chrono::Weekday::num_days_from_monday` indexes
/// them): the Time section's `(Thursday)`, and what blind mode drops.
pub const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// The two digits of `n` (below 100).
fn two_digits(n: u32) -> [u8; 2] {
    let n = n % 100;
    // Both below 10: the casts cannot truncate.
    [b'0' + (n / 10) as u8, b'0' + (n % 10) as u8]
}

/// Appends ASCII bytes.
fn push_ascii(out: &mut String, bytes: &[u8]) {
    out.push_str(std::str::from_utf8(bytes).unwrap_or_default());
}

/// The year when it prints with four digits.
fn four_digit_year(year: i32) -> Option<u32> {
    u32::try_from(year).ok().filter(|&y| y <= 9999)
}

/// Appends `%Y-%m-%dT%H:%M:%SZ`, the time of a tick: `2024-06-05T10:15:00Z`.
pub fn push_timestamp(out: &mut String, t: DateTime<Utc>) {
    let naive = t.naive_utc();
    let date = naive.date();
    // strftime's own rules beyond four-digit years and for a leap second (`:60`).
    let year = match four_digit_year(date.year()) {
        Some(year) if naive.nanosecond() < 1_000_000_000 => year,
        _ => {
            let _ = write!(out, "{}", t.format("%Y-%m-%dT%H:%M:%SZ"));
            return;
        }
    };
    let [y0, y1] = two_digits(year / 100);
    let [y2, y3] = two_digits(year);
    let [m0, m1] = two_digits(date.month());
    let [d0, d1] = two_digits(date.day());
    let [h0, h1] = two_digits(naive.hour());
    let [i0, i1] = two_digits(naive.minute());
    let [s0, s1] = two_digits(naive.second());
    push_ascii(
        out,
        &[
            y0, y1, y2, y3, b'-', m0, m1, b'-', d0, d1, b'T', h0, h1, b':', i0, i1, b':', s0, s1,
            b'Z',
        ],
    );
}

/// Appends `t.to_rfc3339_opts(format, true)`: `2024-06-05T10:15:07.000000Z` with
/// [`SecondsFormat::Micros`], nine digits with [`SecondsFormat::Nanos`] (the fraction cut, not
/// rounded, as chrono cuts it). Written by hand for those two and years `0..=9999`: the store
/// writes every row's times so, the tick its ids' names; chrono itself for the rest (another
/// format, other years, a leap second).
pub fn push_rfc3339(out: &mut String, t: DateTime<Utc>, format: SecondsFormat) {
    let naive = t.naive_utc();
    let nanos = naive.nanosecond();
    let (digits, fraction) = match format {
        SecondsFormat::Micros => (6, nanos / 1_000),
        SecondsFormat::Nanos => (9, nanos),
        _ => (0, 0),
    };
    let year = match four_digit_year(naive.year()) {
        Some(year) if digits > 0 && nanos < 1_000_000_000 => year,
        _ => {
            out.push_str(&t.to_rfc3339_opts(format, true));
            return;
        }
    };
    let mut buf = *b"0000-00-00T00:00:00.000000000Z";
    let mut put = |at: usize, width: usize, mut v: u32| {
        for b in buf[at..at + width].iter_mut().rev() {
            // Below 10: the cast cannot truncate.
            *b = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, naive.month());
    put(8, 2, naive.day());
    put(11, 2, naive.hour());
    put(14, 2, naive.minute());
    put(17, 2, naive.second());
    put(20, digits, fraction);
    buf[20 + digits] = b'Z';
    push_ascii(out, &buf[..21 + digits]);
}

/// Appends `%Y-%m-%dT%H:%M` (`2024-06-05T10:15`), as chrono formats it.
pub fn push_date_minute(out: &mut String, t: DateTime<Utc>) {
    match four_digit_year(t.year()) {
        Some(year) => {
            let [y0, y1] = two_digits(year / 100);
            let [y2, y3] = two_digits(year);
            let [m0, m1] = two_digits(t.month());
            let [d0, d1] = two_digits(t.day());
            push_ascii(out, &[y0, y1, y2, y3, b'-', m0, m1, b'-', d0, d1, b'T']);
            push_clock(out, t);
        }
        // chrono signs and widens years outside 0..=9999.
        None => {
            let _ = write!(out, "{}", t.format("%Y-%m-%dT%H:%M"));
        }
    }
}

/// Appends `%H:%M` (`10:15`).
pub fn push_clock(out: &mut String, t: DateTime<Utc>) {
    let [h0, h1] = two_digits(t.hour());
    let [i0, i1] = two_digits(t.minute());
    push_ascii(out, &[h0, h1, b':', i0, i1]);
}

/// Compact UTC time for rows: `06-05T10:15`.
#[must_use]
pub fn short_time(t: DateTime<Utc>) -> String {
    let mut out = String::with_capacity(11);
    push_short_time(&mut out, t);
    out
}

/// Appends [`short_time`]`(t)`.
pub fn push_short_time(out: &mut String, t: DateTime<Utc>) {
    let t = t.naive_utc();
    let date = t.date();
    let [m0, m1] = two_digits(date.month());
    let [d0, d1] = two_digits(date.day());
    let [h0, h1] = two_digits(t.hour());
    let [i0, i1] = two_digits(t.minute());
    push_ascii(out, &[m0, m1, b'-', d0, d1, b'T', h0, h1, b':', i0, i1]);
}

/// Appends the date `2024-06-05` (daily and weekly bars).
pub fn push_date(out: &mut String, t: DateTime<Utc>) {
    let date = t.naive_utc().date();
    match four_digit_year(date.year()) {
        Some(year) => {
            let [y0, y1] = two_digits(year / 100);
            let [y2, y3] = two_digits(year);
            let [m0, m1] = two_digits(date.month());
            let [d0, d1] = two_digits(date.day());
            push_ascii(out, &[y0, y1, y2, y3, b'-', m0, m1, b'-', d0, d1]);
        }
        None => {
            let _ = write!(out, "{:04}-{:02}-{:02}", t.year(), t.month(), t.day());
        }
    }
}

/// Whole minutes as `45m` under a day, `1d 3h` from a day on (a holding time).
#[must_use]
pub fn duration_minutes(minutes: i64) -> String {
    let mut out = String::with_capacity(8);
    push_duration_minutes(&mut out, minutes);
    out
}

/// Appends [`duration_minutes`]`(minutes)`.
pub fn push_duration_minutes(out: &mut String, minutes: i64) {
    let m = minutes.max(0).unsigned_abs();
    if m < 1440 {
        push_uint(out, m);
        out.push('m');
    } else {
        push_uint(out, m / 1440);
        out.push_str("d ");
        push_uint(out, (m % 1440) / 60);
        out.push('h');
    }
}

/// Whole minutes as a person reads a holding time, in two units from an hour on: `45m`,
/// `23h 0m`, `6d 4h` (negative is `0m`). The prompts keep [`duration_minutes`]'s
/// token-frugal `1380m`; pages and command output use this one.
#[must_use]
pub fn span(minutes: i64) -> String {
    let mut out = String::with_capacity(8);
    push_span(&mut out, minutes);
    out
}

/// Appends [`span`]`(minutes)`.
pub fn push_span(out: &mut String, minutes: i64) {
    let m = minutes.max(0).unsigned_abs();
    if (60..1440).contains(&m) {
        push_uint(out, m / 60);
        out.push_str("h ");
        push_uint(out, m % 60);
        out.push('m');
    } else {
        push_duration_minutes(out, minutes);
    }
}

/// Appends a time until something: `6h`, `2h30m`, `45m` (negative is `0m`).
pub fn push_duration(out: &mut String, d: Duration) {
    let minutes = d.num_minutes().max(0).unsigned_abs();
    let (h, m) = (minutes / 60, minutes % 60);
    if h > 0 {
        push_uint(out, h);
        out.push('h');
    }
    if h == 0 || m > 0 {
        if h > 0 && m < 10 {
            out.push('0');
        }
        push_uint(out, m);
        out.push('m');
    }
}
