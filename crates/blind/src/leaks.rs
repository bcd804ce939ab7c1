//! A leak scanner: what in a text a blind model could recognise the real market by.
//!
//! Independent of the rewriting in `text` (its own word lists and rules), so a test can hold
//! every request of a blind run against it: the real symbols in any written form (`BTC`,
//! `btc-perp`, `1BTC`, `xEURUSD`, `EUR/USD`) and the assets' common names (`Bitcoin`), years
//! 1990–2035 (also `'17`, `FY17`; not a table row's volume, `day 259 … 2022`), month and
//! weekday names and abbreviations in English, German, French, Spanish, Italian and
//! Portuguese, numeric dates (`04.05.2017`, `5/4`, `2017-05-04`), and the raw prices of the
//! data given to it (3 or more significant digits; not a dollar amount in cents, `$1.09`, nor a
//! percentage, `1.09%`).
//!
//! ```
//! use rust_decimal::Decimal;
//! let scanner = blind::LeakScanner::new(&["BTC".to_owned()])
//!     .with_prices([Decimal::new(644_005, 1)]);
//! let leaks = scanner.scan("Bitcoin at 64,400.5 on Tue 05/12, up 3% on day 4");
//! let found: Vec<&str> = leaks.iter().map(|l| l.found.as_str()).collect();
//! assert_eq!(found, ["Bitcoin", "64,400.5", "Tue", "05/12"]);
//! ```

use std::collections::BTreeSet;
use std::fmt;

use rust_decimal::Decimal;

use crate::ASSET_NAMES;

/// What a leak gives away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeakKind {
    /// A real symbol or an asset's common name.
    Symbol,
    /// A year.
    Year,
    /// A month name or abbreviation.
    Month,
    /// A weekday name or abbreviation.
    Weekday,
    /// A numeric date.
    Date,
    /// A raw price of the data.
    Price,
}

/// One leak: its kind, the text found and its byte offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    /// What it gives away.
    pub kind: LeakKind,
    /// The text as found.
    pub found: String,
    /// Where it starts (bytes).
    pub at: usize,
}

impl fmt::Display for Leak {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} `{}` at byte {}", self.kind, self.found, self.at)
    }
}

/// Month names in the six languages: flagged in any letter case.
const MONTH_NAMES: &[&str] = &[
    "january",
    "february",
    "april",
    "june",
    "july",
    "september",
    "october",
    "november",
    "december", // en ("may", "march", "august": see CAPITALISED)
    "januar",
    "jänner",
    "februar",
    "märz",
    "juni",
    "juli",
    "oktober",
    "dezember", // de
    "janvier",
    "février",
    "avril",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre", // fr
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
    "diciembre", // es
    "gennaio",
    "febbraio",
    "aprile",
    "maggio",
    "giugno",
    "luglio",
    "settembre",
    "ottobre",
    "dicembre", // it
    "janeiro",
    "fevereiro",
    "março",
    "maio",
    "junho",
    "julho",
    "setembro",
    "outubro",
    "dezembro",
];

/// Month abbreviations: flagged in any letter case.
const MONTH_ABBREVIATIONS: &[&str] = &[
    "jan", "feb", "apr", "jun", "jul", "aug", "sept", "oct", "nov", "dec", "okt", "dez", "févr",
    "janv", "avr", "juil", "déc", "ene", "dic", "giu", "lug", "ott", "fev",
];

/// Weekday names: flagged in any letter case.
const WEEKDAY_NAMES_ANY_CASE: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
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
    "jueves",
    "viernes",
    "sábado",
    "domingo",
    "lunedì",
    "martedì",
    "mercoledì",
    "giovedì",
    "venerdì",
    "sabato",
    "domenica",
    "tues",
    "thur",
    "thurs",
];

/// Words that are dates only when capitalised (`May`, `MARCH`), being everyday words in
/// lower case (`may`, `march`, `mon`, `sat`): (word, is a month).
const CAPITALISED: &[(&str, bool)] = &[
    ("may", true),
    ("march", true),
    ("august", true),
    ("mar", true),
    ("mars", true),
    ("mai", true),
    ("sep", true),
    ("mon", false),
    ("tue", false),
    ("wed", false),
    ("thu", false),
    ("fri", false),
    ("sat", false),
    ("sun", false),
];

/// Portuguese weekdays are `<ordinal>-feira`.
const FEIRA: &[&str] = &["segunda", "terça", "terca", "quarta", "quinta", "sexta"];

/// The scanner of a blind run (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct LeakScanner {
    /// Real symbols, upper case.
    symbols: Vec<String>,
    /// Common names of the real symbols, lower case.
    names: Vec<String>,
    /// Raw prices (normalised) with 3 or more significant digits.
    prices: BTreeSet<Decimal>,
}

impl LeakScanner {
    /// A scanner for a run of `symbols` (their common names included).
    #[must_use]
    pub fn new(symbols: &[String]) -> Self {
        let symbols: Vec<String> = symbols.iter().map(|s| s.to_uppercase()).collect();
        let names = ASSET_NAMES
            .iter()
            .filter(|(s, _)| symbols.iter().any(|x| x == s))
            .flat_map(|(_, n)| n.iter().map(|n| (*n).to_owned()))
            .collect();
        Self {
            symbols,
            names,
            prices: BTreeSet::new(),
        }
    }

    /// Also flags these prices (those of 3 or more significant digits).
    #[must_use]
    pub fn with_prices(mut self, prices: impl IntoIterator<Item = Decimal>) -> Self {
        self.prices.extend(
            prices
                .into_iter()
                .map(|p| p.abs().normalize())
                .filter(|p| significant_digits(*p) >= 3),
        );
        self
    }

    /// Every leak in `text`, in order.
    #[must_use]
    pub fn scan(&self, text: &str) -> Vec<Leak> {
        let mut leaks = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let rest = &text[at..];
            let c = rest.chars().next().unwrap_or(' ');
            if c.is_alphanumeric() || c == '\'' {
                let len = token_len(rest);
                let token = &rest[..len.max(c.len_utf8())];
                self.token(text, at, token, &mut leaks);
                at += token.len();
            } else {
                at += c.len_utf8();
            }
        }
        // Written pair forms: `EUR/USD`, `eur-usd`, `EUR USD`.
        let lower = text.to_lowercase();
        if lower.len() == text.len() {
            for s in self.symbols.iter().filter(|s| s.len() == 6) {
                let s = s.to_lowercase();
                let (a, b) = s.split_at(3);
                for sep in ['/', '-', ' '] {
                    let form = format!("{a}{sep}{b}");
                    for (i, _) in lower.match_indices(&form) {
                        leaks.push(leak(LeakKind::Symbol, &text[i..i + form.len()], i));
                    }
                }
            }
        }
        leaks.sort_by_key(|l| l.at);
        leaks
    }

    fn token(&self, text: &str, at: usize, token: &str, leaks: &mut Vec<Leak>) {
        let lower = token.to_lowercase();
        let starts_with_digit = token.starts_with(|c: char| c.is_ascii_digit());
        if let Some(rest) = token.strip_prefix('\'') {
            // `'17`; otherwise the word after the quote (`l'EUR`).
            if rest.len() == 2 && rest.bytes().all(|b| b.is_ascii_digit()) {
                leaks.push(leak(LeakKind::Year, token, at));
            } else if !rest.is_empty() {
                self.token(text, at + 1, rest, leaks);
            }
            return;
        }
        if starts_with_digit {
            self.number(text, at, leaks);
        }
        // Symbols: the token itself in any case; in upper case at its start (`BTCUSDT`) or
        // inside it where no capital follows (`1BTC`, `xEURUSD`, not `METHOD`).
        for s in &self.symbols {
            if lower == s.to_lowercase()
                || token.match_indices(s.as_str()).any(|(i, _)| {
                    i == 0 || !token[i + s.len()..].starts_with(|c: char| c.is_ascii_uppercase())
                })
            {
                leaks.push(leak(LeakKind::Symbol, token, at));
                return;
            }
        }
        let word = lower.trim_end_matches(|c: char| c.is_ascii_digit());
        if self.names.iter().any(|n| n == word) {
            leaks.push(leak(LeakKind::Symbol, token, at));
            return;
        }
        if token.len() == 4
            && lower.starts_with("fy")
            && token[2..].bytes().all(|b| b.is_ascii_digit())
        {
            leaks.push(leak(LeakKind::Year, token, at));
            return;
        }
        let capitalised = token.starts_with(|c: char| c.is_uppercase());
        if MONTH_NAMES.contains(&word) || MONTH_ABBREVIATIONS.contains(&word) {
            leaks.push(leak(LeakKind::Month, token, at));
        } else if WEEKDAY_NAMES_ANY_CASE.contains(&word)
            || (FEIRA.contains(&word) && text[at + token.len()..].starts_with("-feira"))
        {
            leaks.push(leak(LeakKind::Weekday, token, at));
        } else if let Some((_, month)) = CAPITALISED.iter().find(|(w, _)| *w == word)
            && capitalised
        {
            let kind = if *month {
                LeakKind::Month
            } else {
                LeakKind::Weekday
            };
            leaks.push(leak(kind, token, at));
        }
    }

    /// A number starting at `at`: its year, date or price, if it is one.
    fn number(&self, text: &str, at: usize, leaks: &mut Vec<Leak>) {
        let bytes = text.as_bytes();
        // The whole written number: digits with `.`, `,`, `/` and `-` between digits.
        let mut end = at;
        while end < bytes.len() {
            let b = bytes[end];
            let between = matches!(b, b'.' | b',' | b'/' | b'-')
                && end > at
                && bytes.get(end + 1).is_some_and(u8::is_ascii_digit);
            if b.is_ascii_digit() || between {
                end += 1;
            } else {
                break;
            }
        }
        // Inside a longer number (`1.2017`, `2,017`): not a number of its own.
        let digit_at = |i: Option<usize>| i.is_some_and(|i| bytes[i].is_ascii_digit());
        let inside = match at.checked_sub(1).map(|i| bytes[i]) {
            Some(b'.' | b',') => digit_at(at.checked_sub(2)),
            _ => digit_at(at.checked_sub(1)),
        };
        if inside {
            return;
        }
        let written = &text[at..end];
        let groups: Vec<&str> = written.split(['.', ',', '/', '-']).collect();
        let seps: Vec<char> = written.chars().filter(|c| !c.is_ascii_digit()).collect();
        let n = |g: &str| g.parse::<u32>().ok();
        let is_date = match groups.as_slice() {
            [a, b, c] => {
                seps[0] == seps[1]
                    && ((a.len() <= 2 && b.len() <= 2 && matches!(c.len(), 2 | 4))
                        || (a.len() == 4 && b.len() <= 2 && c.len() <= 2))
            }
            [a, b] if seps[0] == '/' => {
                a.len() <= 2
                    && (b.len() <= 2 || b.len() == 4)
                    && n(a).is_some_and(|x| (1..=31).contains(&x))
                    && n(b).is_some_and(|x| (1..=31).contains(&x) || (1990..=2035).contains(&x))
                    || (a.len() == 4 && b.len() == 2)
            }
            _ => false,
        };
        if is_date {
            leaks.push(leak(LeakKind::Date, written, at));
            return;
        }
        // A table row's numbers (`day 259 19.29 19.30 19.20 19.21 2022`) are data: a volume
        // of 2022 is no year.
        let line = text[..at].rsplit('\n').next().unwrap_or_default();
        let row = line.starts_with("day ")
            && line[4..]
                .trim_start_matches('-')
                .starts_with(|c: char| c.is_ascii_digit());
        for g in &groups {
            if g.len() == 4
                && n(g).is_some_and(|y| (1990..=2035).contains(&y))
                && seps.is_empty()
                && !row
            {
                leaks.push(leak(LeakKind::Year, written, at));
                return;
            }
        }
        // A price as written: `64,400.5`, `1.0912`, or the European way, `64.400` and `1,0912`.
        let english: String = written.chars().filter(|c| *c != ',').collect();
        let european: String = written
            .chars()
            .filter(|c| *c != '.')
            .map(|c| if c == ',' { '.' } else { c })
            .collect();
        let is_price = |s: &str| {
            s.parse::<Decimal>()
                .is_ok_and(|p| self.prices.contains(&p.normalize()))
        };
        // Money the prompt writes (`$1.19`: a dollar sign, cents) and percentages are not
        // prices.
        let money = at > 0
            && bytes[at - 1] == b'$'
            && written
                .split_once('.')
                .is_some_and(|(_, cents)| cents.len() == 2);
        let percentage = bytes.get(end) == Some(&b'%');
        if !written.contains(['/', '-'])
            && !money
            && !percentage
            && (is_price(&english) || is_price(&european))
        {
            leaks.push(leak(LeakKind::Price, written, at));
        }
    }
}

fn leak(kind: LeakKind, found: &str, at: usize) -> Leak {
    Leak {
        kind,
        found: found.to_owned(),
        at,
    }
}

/// The length of the word or number at the start of `text` (letters and digits; a `'` only
/// first).
fn token_len(text: &str) -> usize {
    let mut chars = text.char_indices();
    if text.starts_with('\'') {
        chars.next();
    }
    chars
        .find(|(_, c)| !c.is_alphanumeric())
        .map_or(text.len(), |(i, _)| i)
}

fn significant_digits(p: Decimal) -> usize {
    p.mantissa()
        .unsigned_abs()
        .to_string()
        .trim_end_matches('0')
        .len()
}

#[cfg(test)]
mod tests {
    use rust_decimal_macros::dec;

    use super::*;

    fn scanner() -> LeakScanner {
        LeakScanner::new(&["BTC".to_owned(), "ETH".to_owned(), "EURUSD".to_owned()]).with_prices([
            dec!(64250.5),
            dec!(1.0912),
            dec!(12),
        ])
    }

    fn found(text: &str) -> Vec<(LeakKind, String)> {
        scanner()
            .scan(text)
            .into_iter()
            .map(|l| (l.kind, l.found))
            .collect()
    }

    #[test]
    fn every_form_of_the_issue_is_found() {
        use LeakKind::{Date, Month, Price, Symbol, Weekday, Year};
        let cases: &[(&str, &[(LeakKind, &str)])] = &[
            ("([price].2017), 1.2017", &[(Year, "2017")]),
            ("04.05.2017", &[(Date, "04.05.2017")]),
            (
                "Dec lows, mid-MAY, JANUARY",
                &[(Month, "Dec"), (Month, "MAY"), (Month, "JANUARY")],
            ),
            ("tuesday and Wed", &[(Weekday, "tuesday"), (Weekday, "Wed")]),
            (
                "Q3'17 and FY17, 2017/18",
                &[(Year, "'17"), (Year, "FY17"), (Date, "2017/18")],
            ),
            (
                "05/12/[year], [month] 7th, 5/4",
                &[(Date, "05/12"), (Date, "5/4")],
            ),
            (
                "1BTC, xEURUSD, btc-perp, EUR/USD, Bitcoin",
                &[
                    (Symbol, "1BTC"),
                    (Symbol, "xEURUSD"),
                    (Symbol, "btc"),
                    (Symbol, "EUR/USD"),
                    (Symbol, "Bitcoin"),
                ],
            ),
            (
                "at 64,250.5 and $1.0912, 12 banks",
                &[(Price, "64,250.5"), (Price, "1.0912")],
            ),
            (
                "bei 1,0912, 64.250,5 dólares",
                &[(Price, "1,0912"), (Price, "64.250,5")],
            ),
            (
                "l'EUR/USD and l'BTC",
                &[(Symbol, "EUR/USD"), (Symbol, "BTC")],
            ),
            (
                "4. Mai, 4 maggio, 4 de março, terça-feira",
                &[
                    (Month, "Mai"),
                    (Month, "maggio"),
                    (Month, "março"),
                    (Weekday, "terça"),
                ],
            ),
            (
                "in 1999 and 2035, not 1989 or 2036 or 2017.5",
                &[(Year, "1999"), (Year, "2035")],
            ),
        ];
        for (text, want) in cases {
            let want: Vec<(LeakKind, String)> =
                want.iter().map(|(k, f)| (*k, (*f).to_owned())).collect();
            assert_eq!(found(text), want, "{text}");
        }
    }

    #[test]
    fn what_blind_mode_writes_is_clean() {
        for text in [
            "ASSET_A breaks [price] on [weekday], [month] [day] [year] (day -1); ASSET_B at [price]",
            "day 12 10:00 held ASSET_B long; prices may march higher; METHOD; up 3.5% in 12 days",
            "0.0000125 funding, 2.5x, open interest $1,234,567",
        ] {
            assert_eq!(found(text), vec![], "{text}");
        }
    }
}
