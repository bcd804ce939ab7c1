//! The one text pass of blind mode: dates and times relative to day 0, weekdays dropped, the
//! traded symbols renamed, and — in free text — years and month names hidden.
//!
//! A hand-written scanner over the formats the workspace writes (`types::text`'s times and
//! chrono's RFC 3339 in tool results): `YYYY-MM-DDTHH:MM[:SS[.fff]][Z|±HH:MM]`,
//! `YYYY-MM-DD HH:MM`, `YYYY-MM-DD`, and a row's `MM-DDTHH:MM`.

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, Timelike, Utc};

use types::text::WEEKDAYS;

use crate::Blind;

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

const MONTH_ABBREVIATIONS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov",
];

/// See [`Blind::show`] (`now` given) and [`Blind::mask`] (`free`).
pub(crate) fn rewrite(blind: &Blind, text: &str, now: Option<DateTime<Utc>>, free: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let at_start = starts_here(bytes, i);
        if !at_start || !(b.is_ascii_alphanumeric()) {
            // The Time line's ` (Thursday)`: dropped with its parentheses.
            if b == b' '
                && !free
                && let Some(len) = weekday_in_parens(&bytes[i..])
            {
                out.push_str(&text[copied..i]);
                i += len;
                copied = i;
                continue;
            }
            i += 1;
            continue;
        }
        let replaced: Option<(String, usize)> = if b.is_ascii_digit() {
            date_time(blind, &bytes[i..], now).or_else(|| {
                free.then(|| year(&bytes[i..]).or_else(|| price(blind, &bytes[i..])))
                    .flatten()
            })
        } else {
            symbol(blind, &bytes[i..]).or_else(|| words(&bytes[i..], free))
        };
        match replaced {
            Some((with, len)) => {
                out.push_str(&text[copied..i]);
                out.push_str(&with);
                i += len;
                copied = i;
            }
            None => {
                // Skip the rest of this word: nothing starts inside it.
                while i < bytes.len() && is_word(bytes[i]) {
                    i += 1;
                }
            }
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Part of a word or number: nothing is matched starting inside one.
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Whether a match may start at `i`: not inside a word, nor after a number's decimal point or
/// group separator (`1.2017`, `2,017`).
fn starts_here(bytes: &[u8], i: usize) -> bool {
    match i.checked_sub(1).map(|p| bytes[p]) {
        None => true,
        Some(b'.' | b',') => !(i >= 2 && bytes[i - 2].is_ascii_digit()),
        Some(prev) => !is_word(prev),
    }
}

fn digits(bytes: &[u8], at: usize, n: usize) -> Option<u32> {
    let part = bytes.get(at..at + n)?;
    if !part.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(part.iter().fold(0, |acc, d| acc * 10 + u32::from(d - b'0')))
}

fn byte_is(bytes: &[u8], at: usize, want: u8) -> bool {
    bytes.get(at) == Some(&want)
}

/// Not followed by another digit (or a letter: `2017abc` is no date).
fn ends(bytes: &[u8], at: usize) -> bool {
    bytes.get(at).is_none_or(|b| !b.is_ascii_alphanumeric())
}

/// `HH:MM` at `at`, with optional `:SS` and fraction; its length.
fn clock(bytes: &[u8], at: usize) -> Option<(NaiveTime, usize)> {
    let h = digits(bytes, at, 2)?;
    if !byte_is(bytes, at + 2, b':') {
        return None;
    }
    let m = digits(bytes, at + 3, 2)?;
    let mut len = 5;
    let mut s = 0;
    if byte_is(bytes, at + 5, b':')
        && let Some(sec) = digits(bytes, at + 6, 2)
    {
        s = sec;
        len = 8;
        if byte_is(bytes, at + 8, b'.') {
            let mut j = at + 9;
            while bytes.get(j).is_some_and(u8::is_ascii_digit) {
                j += 1;
            }
            if j > at + 9 {
                len = j - at;
            }
        }
    }
    let time = NaiveTime::from_hms_opt(h, m, s)?;
    Some((time, len))
}

/// A zone suffix (`Z`, `+00:00`); its length.
fn zone(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at) {
        Some(b'Z') => 1,
        Some(b'+' | b'-')
            if digits(bytes, at + 1, 2).is_some()
                && byte_is(bytes, at + 3, b':')
                && digits(bytes, at + 4, 2).is_some() =>
        {
            6
        }
        _ => 0,
    }
}

fn relative(blind: &Blind, date: NaiveDate, time: Option<NaiveTime>) -> String {
    let day = (date - blind.day0).num_days();
    match time {
        Some(t) if t.second() != 0 => {
            format!("day {day} {}", t.format("%H:%M:%S"))
        }
        Some(t) => format!("day {day} {}", t.format("%H:%M")),
        None => format!("day {day}"),
    }
}

/// A date (and time) at the start of `bytes`, relative to day 0.
fn date_time(blind: &Blind, bytes: &[u8], now: Option<DateTime<Utc>>) -> Option<(String, usize)> {
    // YYYY-MM-DD…
    if let (Some(y), true, Some(mo), true, Some(d)) = (
        digits(bytes, 0, 4),
        byte_is(bytes, 4, b'-'),
        digits(bytes, 5, 2),
        byte_is(bytes, 7, b'-'),
        digits(bytes, 8, 2),
    ) {
        let date = NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, mo, d)?;
        if (byte_is(bytes, 10, b'T') || byte_is(bytes, 10, b' '))
            && let Some((t, len)) = clock(bytes, 11)
        {
            let end = 11 + len;
            let end = end + zone(bytes, end);
            if ends(bytes, end) {
                return Some((relative(blind, date, Some(t)), end));
            }
        }
        if ends(bytes, 10) || byte_is(bytes, 10, b'T') || byte_is(bytes, 10, b' ') {
            return Some((relative(blind, date, None), 10));
        }
        return None;
    }
    // MM-DDTHH:MM (a row's or an event's time: the year is the one nearest `now`).
    let now = now?;
    let (mo, d) = (digits(bytes, 0, 2)?, digits(bytes, 3, 2)?);
    if !byte_is(bytes, 2, b'-') || !byte_is(bytes, 5, b'T') {
        return None;
    }
    let (t, len) = clock(bytes, 6)?;
    if !ends(bytes, 6 + len) {
        return None;
    }
    // The year that puts the date nearest `now`: a memory row's is past, an event's ahead.
    let today = now.date_naive();
    let date = [now.year() - 1, now.year(), now.year() + 1]
        .into_iter()
        .filter_map(|y| NaiveDate::from_ymd_opt(y, mo, d))
        .min_by_key(|date| (*date - today).num_days().abs())?;
    Some((relative(blind, date, Some(t)), 6 + len))
}

/// A year of free text (1900–2099, four digits standing alone).
fn year(bytes: &[u8]) -> Option<(String, usize)> {
    let y = digits(bytes, 0, 4)?;
    // `2017.5` or `2017,000` is a number, not a year.
    let next = bytes.get(4).copied();
    let number_goes_on =
        matches!(next, Some(b'.' | b',')) && bytes.get(5).is_some_and(u8::is_ascii_digit);
    ((1900..=2099).contains(&y) && ends(bytes, 4) && !number_goes_on)
        .then(|| ("[year]".to_owned(), 4))
}

/// A number of free text (`1,250.5`: digits, group separators, one point) that could be a
/// price of a traded symbol; a whole number below 100 is taken for a count.
fn price(blind: &Blind, bytes: &[u8]) -> Option<(String, usize)> {
    let mut len = 0;
    let mut plain = String::new();
    let mut point = false;
    while let Some(&b) = bytes.get(len) {
        let next_is_digit = bytes.get(len + 1).is_some_and(u8::is_ascii_digit);
        match b {
            b'0'..=b'9' => plain.push(char::from(b)),
            b',' if !point && next_is_digit => {}
            b'.' if !point && next_is_digit => {
                point = true;
                plain.push('.');
            }
            _ => break,
        }
        len += 1;
    }
    if bytes.get(len).is_some_and(u8::is_ascii_alphabetic) {
        return None;
    }
    let n: rust_decimal::Decimal = plain.parse().ok()?;
    // A small whole number is a count (`4 banks`), not a price.
    (point || n >= rust_decimal::Decimal::ONE_HUNDRED).then_some(())?;
    blind
        .looks_like_a_price(n)
        .then(|| ("[price]".to_owned(), len))
}

/// A traded symbol at the start of `bytes`, in any letter case, not followed by a
/// lower-case letter or a digit (so `BTCUSDT` is renamed, `ETHICS`… is too, `Ether` is not).
fn symbol(blind: &Blind, bytes: &[u8]) -> Option<(String, usize)> {
    for (real, alias) in &blind.names {
        let n = real.len();
        let Some(head) = bytes.get(..n) else {
            continue;
        };
        if !head.eq_ignore_ascii_case(real.as_bytes()) {
            continue;
        }
        let next = bytes.get(n).copied();
        if next.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
            continue;
        }
        return Some((alias.clone(), n));
    }
    None
}

/// A weekday (always) or a month name (free text) at the start of `bytes`.
fn words(bytes: &[u8], free: bool) -> Option<(String, usize)> {
    let whole = |w: &str| {
        bytes.get(..w.len()) == Some(w.as_bytes())
            && bytes.get(w.len()).is_none_or(|b| !b.is_ascii_alphabetic())
    };
    if let Some(w) = WEEKDAYS.iter().find(|w| whole(w)) {
        return Some(("[weekday]".to_owned(), w.len()));
    }
    if free && let Some(m) = MONTHS.iter().chain(&MONTH_ABBREVIATIONS).find(|m| whole(m)) {
        return Some(("[month]".to_owned(), m.len()));
    }
    None
}

/// ` (Thursday)` at the start of `bytes`: its length.
fn weekday_in_parens(bytes: &[u8]) -> Option<usize> {
    WEEKDAYS.iter().find_map(|w| {
        let n = w.len();
        (bytes.get(..2) == Some(b" (")
            && bytes.get(2..2 + n) == Some(w.as_bytes())
            && byte_is(bytes, 2 + n, b')'))
        .then_some(n + 3)
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::TimeZone;
    use rust_decimal_macros::dec;

    use super::*;

    fn blind() -> Blind {
        Blind::new(
            &["EURUSD".to_owned(), "BTC".to_owned()],
            &BTreeMap::from([
                ("EURUSD".to_owned(), dec!(1.08)),
                ("BTC".to_owned(), dec!(60000)),
            ]),
            NaiveDate::from_ymd_opt(2017, 4, 22).unwrap(),
            0,
        )
        .unwrap()
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2017, 5, 4, 11, 0, 0).unwrap()
    }

    #[test]
    fn times_become_days_from_the_start() {
        let b = blind();
        let cases = [
            (
                "## Time\n2017-05-04T11:00:00Z (Thursday). Execution timeframe 1h",
                "## Time\nday 12 11:00. Execution timeframe 1h",
            ),
            (
                "{\"time\":\"2017-05-04T10:00:00Z\"}",
                "{\"time\":\"day 12 10:00\"}",
            ),
            ("2017-04-21T23:00 2017-04-22", "day -1 23:00 day 0"),
            (
                "- 05-03T09:00 held EURUSD long",
                "- day 11 09:00 held ASSET_A long",
            ),
            // A row's date in the year is the nearest to `now`: last December, next week.
            ("12-31T09:00", "day -112 09:00"),
            ("05-06T13:45 (in 50h)", "day 14 13:45 (in 50h)"),
            ("2017-05-04T10:00:30.250+00:00", "day 12 10:00:30"),
            ("2017-05-04 12:45 UTC", "day 12 12:45 UTC"),
        ];
        for (text, want) in cases {
            assert_eq!(b.show(text, now()), want, "{text}");
        }
    }

    #[test]
    fn numbers_that_are_not_dates_are_left_alone() {
        let b = blind();
        for text in [
            "1.08512 1.2017 2017.5 $2,017.00 12-345 2017-13-45 10:00 v 2017",
            "price 64250.5, qty 0.25",
        ] {
            assert_eq!(b.show(text, now()), text);
        }
    }

    #[test]
    fn symbols_are_renamed_in_every_written_form() {
        let b = blind();
        assert_eq!(
            b.mask("EUR/USD and EURUSD, eurusd; BTCUSDT, BTC-PERP, btc. Not BTCx or Ether."),
            "ASSET_A and ASSET_A, ASSET_A; ASSET_BUSDT, ASSET_B-PERP, ASSET_B. Not BTCx or Ether."
        );
    }

    #[test]
    fn free_text_hides_years_months_and_weekdays() {
        let b = blind();
        assert_eq!(
            b.mask("ECB holds rates on Thursday, May 4 2017 (2017-05-04); 2017.5 stays"),
            "ECB holds rates on [weekday], [month] 4 [year] (day 12); 2017.5 stays"
        );
        // A number near a traded symbol's first price is a price; others are left.
        assert_eq!(
            b.mask("EUR/USD at 1.0912, BTC tops $64,250.50; rates 0.25%, 12 banks"),
            "ASSET_A at [price], ASSET_B tops $[price]; rates 0.25%, 12 banks"
        );
    }
}
