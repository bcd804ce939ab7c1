//! The one text pass of blind mode: dates and times relative to day 0, weekdays dropped, the
//! traded symbols renamed, and — in free text — years and month names hidden.
//!
//! A hand-written scanner over the formats the workspace writes (`types::text`'s times and
//! chrono's RFC 3339 in tool results): `YYYY-MM-DDTHH:MM[:SS[.fff]][Z|±HH:MM]`,
//! `YYYY-MM-DD HH:MM`, `YYYY-MM-DD`, and a row's `MM-DDTHH:MM`; and over the dates people write
//! in headlines: numeric dates in any order with `.`, `/` or `-` and two- or four-digit years
//! (`04.05.2017`, `5/4/17`, `2017/05/04`, `05/12`), `'17`, `FY17`, `2017/18`, month and weekday
//! names and their abbreviations in any letter case, in English, German, French, Spanish,
//! Italian and Portuguese, and the day next to a month (`May 4th`, `4. Mai`, `7th of May`).

use chrono::{DateTime, Datelike, NaiveDate, NaiveTime, Timelike, Utc};

use types::text::WEEKDAYS;

use crate::Blind;

/// Month names and abbreviations, lower case (English, German, French, Spanish, Italian,
/// Portuguese). Abbreviations that are everyday English words (`set`, `out`, `ago`, `gen`) are
/// left out; those in [`AMBIGUOUS`] count only when written with a capital or next to a day.
const MONTHS: &[&str] = &[
    // English
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    // German
    "januar",
    "jänner",
    "februar",
    "märz",
    "maerz",
    "mai",
    "juni",
    "juli",
    "oktober",
    "dezember",
    "jän",
    "mär",
    "okt",
    "dez",
    // French
    "janvier",
    "février",
    "fevrier",
    "mars",
    "avril",
    "juin",
    "juillet",
    "août",
    "aout",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
    "decembre",
    "janv",
    "févr",
    "fevr",
    "avr",
    "juil",
    "déc",
    // Spanish
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "setiembre",
    "octubre",
    "noviembre",
    "diciembre",
    "ene",
    "dic",
    // Italian
    "gennaio",
    "febbraio",
    "aprile",
    "maggio",
    "giugno",
    "luglio",
    "settembre",
    "ottobre",
    "dicembre",
    "giu",
    "lug",
    "ott",
    // Portuguese
    "janeiro",
    "fevereiro",
    "março",
    "marco",
    "maio",
    "junho",
    "julho",
    "setembro",
    "outubro",
    "novembro",
    "dezembro",
    "fev",
];

/// Weekday names and abbreviations, lower case, in the same languages.
const WEEKDAY_NAMES: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mon",
    "tue",
    "tues",
    "wed",
    "thu",
    "thur",
    "thurs",
    "fri",
    "sat",
    "sun",
    "montag",
    "dienstag",
    "mittwoch",
    "donnerstag",
    "freitag",
    "samstag",
    "sonnabend",
    "sonntag",
    "lundi",
    "mardi",
    "mercredi",
    "jeudi",
    "vendredi",
    "samedi",
    "dimanche",
    "lunes",
    "martes",
    "miércoles",
    "miercoles",
    "jueves",
    "viernes",
    "sábado",
    "sabado",
    "domingo",
    "lunedì",
    "lunedi",
    "martedì",
    "martedi",
    "mercoledì",
    "mercoledi",
    "giovedì",
    "giovedi",
    "venerdì",
    "venerdi",
    "sabato",
    "domenica",
    "segunda-feira",
    "terça-feira",
    "terca-feira",
    "quarta-feira",
    "quinta-feira",
    "sexta-feira",
];

/// Names that are also everyday words in lower case (`prices may rise`, `march higher`, `mon
/// ami`): a date only when not all lower case, or right before or after a day number.
const AMBIGUOUS: &[&str] = &[
    "may", "march", "mar", "mars", "august", "sat", "sun", "wed", "mon", "marco",
];

/// Words after a number that make it a currency amount, so possibly a price.
const CURRENCY_WORDS: &[&str] = &[
    "dollars", "dollar", "usd", "usdt", "usdc", "euros", "euro", "eur", "cents", "points", "pips",
    "bucks",
];

/// See [`Blind::show`] (`now` given) and [`Blind::mask`] (`free`).
pub(crate) fn rewrite(blind: &Blind, text: &str, now: Option<DateTime<Utc>>, free: bool) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !b.is_ascii() {
            // Letters outside ASCII are passed one by one: a symbol or number may follow one
            // directly (CJK text has no spaces), a month or weekday name may not.
            i += text[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let inside = (b.is_ascii_uppercase() && !starts_here(text, i))
            .then(|| symbol_inside(blind, &bytes[i..]))
            .flatten();
        let replaced: Option<(String, usize)> = if inside.is_some() {
            inside
        } else if b == b'\'' {
            // `'17`, also right after a word (`Q3'17`).
            free.then(|| short_year(bytes, i)).flatten()
        } else if !starts_here(text, i) || !b.is_ascii_alphanumeric() {
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
        } else if b.is_ascii_digit() {
            date_time(blind, &bytes[i..], now)
                .or_else(|| numeric_date(&bytes[i..], free))
                .or_else(|| {
                    free.then(|| {
                        day_before_month(text, i)
                            .or_else(|| year(&bytes[i..]))
                            .or_else(|| price(blind, &bytes[i..]))
                    })
                    .flatten()
                })
        } else {
            symbol(blind, &bytes[i..])
                .or_else(|| free.then(|| fiscal_year(&bytes[i..])).flatten())
                .or_else(|| words(text, i, free))
        };
        match replaced {
            Some((with, len)) => {
                out.push_str(&text[copied..i]);
                out.push_str(&with);
                i += len;
                copied = i;
            }
            // Skip the rest of this word: nothing starts inside it.
            None if b == b'\'' => i += 1,
            // Skip the rest of this word up to a symbol written inside it in capitals.
            None => {
                i += 1;
                while bytes.get(i).is_some_and(|b| {
                    (b.is_ascii_alphanumeric() || *b == b'_')
                        && !(b.is_ascii_uppercase() && symbol_inside(blind, &bytes[i..]).is_some())
                }) {
                    i += 1;
                }
            }
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether a match may start at `i`: not inside an ASCII word or number, nor after a number's
/// decimal point or group separator (`1.2017`, `2,017`).
fn starts_here(text: &str, i: usize) -> bool {
    let bytes = text.as_bytes();
    match i.checked_sub(1).map(|p| bytes[p]) {
        None => true,
        Some(b'.' | b',') => !(i >= 2 && bytes[i - 2].is_ascii_digit()),
        Some(prev) => !(prev.is_ascii_alphanumeric() || prev == b'_'),
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

/// A year of free text (1900–2099, four digits standing alone), with a following two-digit
/// year (`2017/18`, `2017-18`) taken along.
fn year(bytes: &[u8]) -> Option<(String, usize)> {
    let y = digits(bytes, 0, 4)?;
    // `2017.5` or `2017,000` is a number, not a year.
    let next = bytes.get(4).copied();
    let number_goes_on =
        matches!(next, Some(b'.' | b',')) && bytes.get(5).is_some_and(u8::is_ascii_digit);
    if !(1900..=2099).contains(&y) || !ends(bytes, 4) || number_goes_on {
        return None;
    }
    let len =
        if matches!(next, Some(b'/' | b'-')) && digits(bytes, 5, 2).is_some() && ends(bytes, 7) {
            7
        } else {
            4
        };
    Some(("[year]".to_owned(), len))
}

/// `'17` at `i` (an apostrophe and two digits standing alone).
fn short_year(bytes: &[u8], i: usize) -> Option<(String, usize)> {
    (digits(bytes, i + 1, 2).is_some() && ends(bytes, i + 3)).then(|| ("[year]".to_owned(), 3))
}

/// `FY17`, `FY2017`.
fn fiscal_year(bytes: &[u8]) -> Option<(String, usize)> {
    if !bytes.get(..2)?.eq_ignore_ascii_case(b"fy") {
        return None;
    }
    [4, 2]
        .into_iter()
        .find(|&n| digits(bytes, 2, n).is_some() && ends(bytes, 2 + n))
        .map(|n| ("FY[year]".to_owned(), 2 + n))
}

/// A numeric date other than ISO's: three numbers with one separator (`.`, `/`, `-`) in any
/// order — `04.05.2017`, `5/4/17`, `2017/05/04` — or, in free text, a day and month with `/`
/// (`05/12`). Its length; the text says `[date]`.
fn numeric_date(bytes: &[u8], free: bool) -> Option<(String, usize)> {
    let group = |at: usize| -> Option<(u32, usize)> {
        let n = bytes[at..]
            .iter()
            .take(5)
            .take_while(|b| b.is_ascii_digit())
            .count();
        (1..=4)
            .contains(&n)
            .then(|| (digits(bytes, at, n).unwrap_or(0), n))
    };
    let (a, la) = group(0)?;
    let sep = *bytes.get(la).filter(|b| matches!(b, b'.' | b'/' | b'-'))?;
    let (b, lb) = group(la + 1)?;
    let day_month = |x: u32, lx: usize, y: u32, ly: usize| {
        lx <= 2 && ly <= 2 && (1..=31).contains(&x) && (1..=31).contains(&y) && x.min(y) <= 12
    };
    let after_two = la + 1 + lb;
    if byte_is(bytes, after_two, sep)
        && let Some((c, lc)) = group(after_two + 1)
    {
        let end = after_two + 1 + lc;
        if !ends(bytes, end) || (byte_is(bytes, end, sep) && digits(bytes, end + 1, 1).is_some()) {
            return None;
        }
        let year_first = la == 4
            && (1900..=2099).contains(&a)
            && (1..=12).contains(&b)
            && lb <= 2
            && lc <= 2
            && (1..=31).contains(&c);
        let year_last =
            day_month(a, la, b, lb) && (lc == 2 || (lc == 4 && (1900..=2099).contains(&c)));
        return (year_first || year_last).then(|| ("[date]".to_owned(), end));
    }
    // A day and a month alone: only `/`, only in free text (`1.08` is a price, `3-4` a range).
    (free
        && sep == b'/'
        && day_month(a, la, b, lb)
        && ends(bytes, after_two)
        && !byte_is(bytes, after_two, b'/'))
    .then(|| ("[date]".to_owned(), after_two))
}

/// A number of free text (`1,250.5` or `1.250,5`: digits, group separators, one point) that
/// could be a price of a traded symbol; a whole number below 100 is taken for a count, and so is a number
/// followed by `%`, a percentage word or a plural noun that is no currency (`12 banks`,
/// `first 100 days`).
fn price(blind: &Blind, bytes: &[u8]) -> Option<(String, usize)> {
    // The number as written: digits, with `.` and `,` between digits.
    let len = bytes
        .iter()
        .enumerate()
        .take_while(|&(i, b)| {
            b.is_ascii_digit()
                || (matches!(b, b'.' | b',') && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        })
        .count();
    if bytes.get(len).is_some_and(u8::is_ascii_alphabetic) || counts_something(&bytes[len..]) {
        return None;
    }
    let written = std::str::from_utf8(&bytes[..len]).ok()?;
    // Read the English way (`64,400.5`) and the European way (`64.400,5`, `1,0912`): a price
    // either way is a price.
    let reading = |group: char, point: char| -> Option<rust_decimal::Decimal> {
        // One point at most; groups of three digits after the first.
        let whole = written.split(point).next().unwrap_or_default();
        let mut groups = whole.split(group);
        let first = groups.next().unwrap_or_default();
        if written.matches(point).count() > 1
            || (whole.contains(group) && (first.len() > 3 || groups.any(|g| g.len() != 3)))
        {
            return None;
        }
        let plain: String = written
            .chars()
            .filter(|c| *c != group)
            .map(|c| if c == point { '.' } else { c })
            .collect();
        let n: rust_decimal::Decimal = plain.parse().ok()?;
        // A small whole number is a count (`4 banks`), not a price.
        (written.contains(point) || n >= rust_decimal::Decimal::ONE_HUNDRED).then_some(n)
    };
    [reading(',', '.'), reading('.', ',')]
        .into_iter()
        .flatten()
        .any(|n| blind.looks_like_a_price(n))
        .then(|| ("[price]".to_owned(), len))
}

/// Whether what follows a number makes it a percentage or a count.
fn counts_something(after: &[u8]) -> bool {
    let after = after.strip_prefix(b" ").unwrap_or(after);
    if after.first() == Some(&b'%') {
        return true;
    }
    let n = after.iter().take_while(|b| b.is_ascii_lowercase()).count();
    let word = std::str::from_utf8(&after[..n]).unwrap_or("");
    if after.get(n).is_some_and(u8::is_ascii_alphanumeric) {
        return false;
    }
    matches!(
        word,
        "percent"
            | "pct"
            | "bp"
            | "bps"
            | "basis"
            | "day"
            | "hour"
            | "week"
            | "month"
            | "year"
            | "minute"
            | "time"
    ) || (word.len() >= 3 && word.ends_with('s') && !CURRENCY_WORDS.contains(&word))
}

/// `4 `, `4th `, `4. `, `4th of `, `4 de ` before a month name, at `i`: the day (`[day]`).
fn day_before_month(text: &str, i: usize) -> Option<(String, usize)> {
    let bytes = text.as_bytes();
    let n = bytes[i..]
        .iter()
        .take(3)
        .take_while(|b| b.is_ascii_digit())
        .count();
    digits(bytes, i, n).filter(|d| (1..=2).contains(&n) && (1..=31).contains(d))?;
    let rest = &text[i + n..];
    let suffix = ["st", "nd", "rd", "th", "."]
        .into_iter()
        .find(|s| rest.starts_with(s))
        .map_or(0, str::len);
    let mut after = rest[suffix..].strip_prefix(' ')?;
    for joiner in ["of ", "de "] {
        after = after.strip_prefix(joiner).unwrap_or(after);
    }
    month_at(after)?;
    Some(("[day]".to_owned(), n + suffix))
}

/// ` 4`, ` 4th`, ` 4,`, `. 4` after a month name (`text` starts right after it): the length of the
/// space and the day.
fn day_after(text: &str) -> Option<usize> {
    let dot = usize::from(text.starts_with(". "));
    let rest = text[dot..].strip_prefix(' ')?.as_bytes();
    let n = rest
        .iter()
        .take(3)
        .take_while(|b| b.is_ascii_digit())
        .count();
    digits(rest, 0, n).filter(|d| (1..=2).contains(&n) && (1..=31).contains(d))?;
    let suffix = ["st", "nd", "rd", "th"]
        .into_iter()
        .find(|s| rest[n..].starts_with(s.as_bytes()))
        .map_or(0, str::len);
    ends(rest, n + suffix).then_some(dot + 1 + n + suffix)
}

/// The word at the start of `text` (letters, and `-feira` for Portuguese weekdays) and its
/// lower-case form.
fn word_at(text: &str) -> (&str, String) {
    let mut end = text
        .char_indices()
        .find(|&(_, c)| !c.is_alphabetic())
        .map_or(text.len(), |(n, _)| n);
    if text[end..]
        .get(..6)
        .is_some_and(|s| s.eq_ignore_ascii_case("-feira"))
    {
        end += 6;
    }
    (&text[..end], text[..end].to_lowercase())
}

/// A month name at the start of `text`: its length (any case; see [`AMBIGUOUS`] for the
/// everyday words, which the caller decides on).
fn month_at(text: &str) -> Option<usize> {
    let (word, lower) = word_at(text);
    MONTHS.contains(&lower.as_str()).then_some(word.len())
}

/// A weekday (always) or a month name (free text) at `i`, in any letter case; a month takes
/// the day written after it along (`May 4th` → `[month] [day]`).
fn words(text: &str, i: usize, free: bool) -> Option<(String, usize)> {
    if text[..i]
        .chars()
        .next_back()
        .is_some_and(char::is_alphabetic)
    {
        return None;
    }
    let rest = &text[i..];
    let (word, lower) = word_at(rest);
    if word.is_empty() || rest[word.len()..].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let weekday = WEEKDAY_NAMES.contains(&lower.as_str());
    let month = free && MONTHS.contains(&lower.as_str());
    if !weekday && !month {
        return None;
    }
    let day = day_after(&rest[word.len()..]);
    if AMBIGUOUS.contains(&lower.as_str()) && word == lower {
        let before = text[..i].trim_end_matches(' ');
        let day_before = text[..i].ends_with(' ')
            && before
                .trim_end_matches(['.'])
                .trim_end_matches(|c: char| c.is_ascii_lowercase())
                .ends_with(|c: char| c.is_ascii_digit());
        if day.is_none() && !day_before {
            return None;
        }
    }
    if weekday {
        return Some(("[weekday]".to_owned(), word.len()));
    }
    Some(match day {
        Some(len) => ("[month] [day]".to_owned(), word.len() + len),
        None => ("[month]".to_owned(), word.len()),
    })
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

/// A traded symbol written in capitals inside a word (`1BTC`, `xEURUSD`, `ETHBTC`'s `BTC`) at
/// the start of `bytes`, not followed by a capital or a digit (so `METHOD` keeps its `ETH`).
fn symbol_inside(blind: &Blind, bytes: &[u8]) -> Option<(String, usize)> {
    blind.assets.iter().find_map(|a| {
        let n = a.real.len();
        (bytes.starts_with(a.real.as_bytes())
            && !bytes
                .get(n)
                .is_some_and(|b| b.is_ascii_uppercase() || b.is_ascii_digit()))
        .then(|| (a.alias.clone(), n))
    })
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
        // Glued to a number or a word in capitals; an asset's common name; not inside a
        // capitalised word.
        assert_eq!(
            b.mask("1BTC, xEURUSD, 0.5BTC/EURUSD; Bitcoin and bitcoins' rally; ABTCD"),
            "1ASSET_B, xASSET_A, 0.5ASSET_B/ASSET_A; ASSET_B and ASSET_B' rally; ABTCD"
        );
    }

    #[test]
    fn free_text_hides_years_months_and_weekdays() {
        let b = blind();
        assert_eq!(
            b.mask("ECB holds rates on Thursday, May 4 2017 (2017-05-04); 2017.5 stays"),
            "ECB holds rates on [weekday], [month] [day] [year] (day 12); 2017.5 stays"
        );
        // A number near a traded symbol's first price is a price; others are left.
        assert_eq!(
            b.mask("EUR/USD at 1.0912, BTC tops $64,250.50; rates 0.25%, 12 banks"),
            "ASSET_A at [price], ASSET_B tops $[price]; rates 0.25%, 12 banks"
        );
        // Written the European way too; a point not followed by groups of three is a point.
        assert_eq!(
            b.mask("EURUSD bei 1,0912; BTC hasta 64.400 dólares (64.400,50); 2017.5 stays"),
            "ASSET_A bei [price]; ASSET_B hasta [price] dólares ([price]); 2017.5 stays"
        );
    }

    /// Headlines as wire services, central banks and foreign-language desks write them, with
    /// every date form blind mode must hide, and what must stay.
    #[test]
    fn headlines_hide_every_written_date() {
        let b = blind();
        let cases = [
            (
                "Fed minutes due 04.05.2017 at 18:00",
                "Fed minutes due [date] at 18:00",
            ),
            (
                "Payrolls on 5/4/17 beat; revised 05/12/2017",
                "Payrolls on [date] beat; revised [date]",
            ),
            ("BoJ, 2017/05/04: no change", "BoJ, [date]: no change"),
            (
                "Minutes of the 05/12 meeting",
                "Minutes of the [date] meeting",
            ),
            (
                "ECB meets Dec 14, rate path into mid-MAY",
                "ECB meets [month] [day], rate path into mid-[month]",
            ),
            (
                "JANUARY CPI HOT; tuesday selloff; Wed close",
                "[month] CPI HOT; [weekday] selloff; [weekday] close",
            ),
            (
                "Q3'17 earnings, FY17 guidance, the 2017/18 season",
                "Q3[year] earnings, FY[year] guidance, the [year] season",
            ),
            (
                "Powell speaks May 7th; the 7th of May; on 4 may",
                "Powell speaks [month] [day]; the [day] of [month]; on [day] [month]",
            ),
            (
                "EZB-Sitzung am Donnerstag, 4. Mai; im März",
                "EZB-Sitzung am [weekday], [day] [month]; im [month]",
            ),
            (
                "La BCE jeudi 4 mai; en février; le 14 décembre",
                "La BCE [weekday] [day] [month]; en [month]; le [day] [month]",
            ),
            (
                "El BCE el jueves 4 de mayo; sábado",
                "El BCE el [weekday] [day] de [month]; [weekday]",
            ),
            (
                "Copom na quarta-feira, 3 de maio",
                "Copom na [weekday], [day] de [month]",
            ),
            (
                "Sept. 12 and Sept 13 and SEP 14",
                "[month] [day] and [month] [day] and [month] [day]",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(b.mask(text), want, "{text}");
        }
    }

    /// Everyday words that are also month or weekday names stay; numbers that are counts or
    /// percentages are not prices.
    #[test]
    fn everyday_words_counts_and_percentages_stay() {
        let b = blind();
        let cases = [
            "prices may rise as stocks march higher; sat on the sidelines; mon ami",
            "EUR/USD up 2.5% and 1.25 %, 150 bps wider, first 100 days, 250 jobs",
            "it's 3-4 weeks out; 1.08. The pair rose",
        ];
        let want = [
            "prices may rise as stocks march higher; sat on the sidelines; mon ami",
            "ASSET_A up 2.5% and 1.25 %, 150 bps wider, first 100 days, 250 jobs",
            "it's 3-4 weeks out; [price]. The pair rose",
        ];
        for (text, want) in cases.into_iter().zip(want) {
            assert_eq!(b.mask(text), want, "{text}");
        }
        // A price stays a price when a currency word or nothing follows it.
        assert_eq!(
            b.mask("BTC at 60,000 dollars, then 61000 on the day"),
            "ASSET_B at [price] dollars, then [price] on the day"
        );
    }

    proptest::proptest! {
        // A failing case is printed, never written into the source tree.
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]
        /// Any text, hostile or not, is rewritten without a panic, in both passes, and a
        /// traded symbol standing as a word never comes through.
        #[test]
        fn any_text_is_rewritten_without_a_panic(text in "\\PC{0,120}", pick in 0usize..6) {
            let b = blind();
            let pieces = ["04.05.", "Sept. 1", "-feira", "'1", "EURUSD", "décembre 4"];
            let text = format!("{text} {}", pieces[pick]);
            let masked = b.mask(&text);
            let shown = b.show(&text, now());
            proptest::prop_assert!(!masked.contains("EURUSD") && !shown.contains("EURUSD"));
        }
    }
}
